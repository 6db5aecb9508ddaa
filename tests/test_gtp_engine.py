"""The GTP engine: a scripted conversation, the move-choice rules, and the real `kifunet gtp` process."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from kifunet.data_prep import coords
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import move_choice
from kifunet.play.gtp_engine import Engine
from kifunet.play.move_choice import PlaySettings, choose_move
from kifunet.play.policy import fresh_policy
from gtp_fakes import FakePolicy


def flat(v: str, n: int = 9) -> int:
    return coords.to_flat(coords.from_gtp(v, n), n)


@pytest.fixture(scope="module")
def tiny_policy():
    return fresh_policy("maddison_tiny", 9, seed=0, rank="9d")


class TablePolicy(FakePolicy):
    """A policy whose probabilities are a fixed table (for testing the rules on top of a net)."""

    def __init__(self, probs, board_size=9, has_pass=False):
        self.board_size = board_size
        self.has_pass = has_pass
        self.probs = np.asarray(probs, dtype=np.float64)
        self.description = "table"
        self.calls = []

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        self.calls.append((list(moves), colour, list(setup)))
        return self.probs / self.probs.sum()


def talk(engine: Engine, script: str) -> list[str]:
    """Send each line; return the responses (None lines skipped)."""
    out = []
    for line in script.strip().splitlines():
        r = engine.handle(line)
        if r is not None:
            assert r.endswith("\n\n") and not r.endswith("\n\n\n"), repr(r)
            out.append(r)
    return out


def test_scripted_conversation(tiny_policy):
    e = Engine(tiny_policy, komi=7.5)
    r = talk(e, """
        protocol_version
        1 name
        2 version
        known_command genmove
        known_command fly
        # a comment line is ignored
        boardsize 9
        3 boardsize 13
        clear_board
        10 komi 6.5
        play b E5
        11 play w E5
        play w Z9
        play purple D4
        frobnicate
        12 frobnicate
        """)
    assert r[0] == "= 2\n\n"
    assert r[1] == "=1 kifunet\n\n"
    assert r[2].startswith("=2 ") and "maddison_tiny" in r[2]
    assert r[3] == "= true\n\n" and r[4] == "= false\n\n"
    assert r[5] == "= \n\n"
    assert r[6] == "?3 unacceptable size\n\n"
    assert r[7] == "= \n\n" and r[8] == "=10 \n\n" and e.komi == 6.5
    assert r[9] == "= \n\n"
    assert r[10] == "?11 illegal move\n\n"  # occupied
    assert r[11] == "? syntax error\n\n" and r[12] == "? syntax error\n\n"
    assert r[13] == "? unknown command\n\n" and r[14] == "?12 unknown command\n\n"

    listed = e.handle("list_commands")[2:].split()
    for cmd in ("protocol_version", "name", "version", "known_command", "list_commands", "boardsize", "clear_board",
                "komi", "play", "genmove", "undo", "showboard", "final_score", "quit", "time_settings", "time_left"):
        assert cmd in listed

    # genmove plays a legal move for white and puts it on the board
    reply = e.handle("20 genmove w")
    assert reply.startswith("=20 ")
    v = reply[4:].strip()
    p = flat(v)
    assert p != 81 and p != flat("E5")
    assert e.state.board.stones.reshape(-1)[p] == WHITE and e.state.moves == [(BLACK, flat("E5")), (WHITE, p)]
    board = e.handle("showboard")
    assert board.startswith("= \n") and "X" in board and "O" in board and f"last move {v}" in board

    # undo takes back genmove, then play; a third undo has nothing to take back
    assert e.handle("undo") == "= \n\n" and e.state.moves == [(BLACK, flat("E5"))]
    assert e.state.board.stones.reshape(-1)[p] == 0
    assert e.handle("undo") == "= \n\n" and not e.state.board.stones.any()
    assert e.handle("21 undo") == "?21 cannot undo\n\n"

    # the same move is legal again after undo; clear_board empties; time commands are accepted
    assert e.handle("play b E5") == "= \n\n"
    assert e.handle("time_settings 300 30 5") == "= \n\n" and e.handle("time_left b 290 0") == "= \n\n"
    assert e.handle("clear_board") == "= \n\n" and not e.state.board.stones.any() and e.state.moves == []
    assert e.handle("30 quit") == "=30 \n\n" and e.quit


@pytest.mark.parametrize("line, reply", [
    ("komi nan", "? syntax error: komi must be a finite number, not nan"),
    ("7 komi inf", "?7 syntax error: komi must be a finite number, not inf"),
    ("komi -inf", "? syntax error: komi must be a finite number, not -inf"),
    ("komi 1e9", "? komi 1e+09 is out of range: at most 81 in size on 9x9"),
    ("komi -81.5", "? komi -81.5 is out of range: at most 81 in size on 9x9"),
    ("komi", "? syntax error"),
    ("komi 6.5 7", "? syntax error"),
    ("undo 3", "? syntax error"),
])
def test_komi_and_undo_reject_bad_arguments(tiny_policy, line, reply):
    """Issue 29 item 6: a komi that is no finite number or no possible score, and ``undo`` with arguments, are
    errors; the engine's komi and position stay as they were."""
    e = Engine(tiny_policy, komi=6.5)
    assert e.handle("play b E5") == "= \n\n"
    assert e.handle(line) == reply + "\n\n"
    assert e.komi == 6.5 and e.state.moves == [(BLACK, flat("E5"))]
    assert e.handle("komi 81") == "= \n\n" and e.komi == 81.0  # the largest komi 9x9 admits


@pytest.mark.parametrize("argv", [["gtp", "--model", "maddison_tiny", "--board-size", "9", "--komi", "nan"],
                                  ["match", "--engine", "gnugo --mode gtp", "--komi", "inf", "--out", "unused"],
                                  ["match", "--engine", "gnugo --mode gtp", "--komi", "400", "--board-size", "19",
                                   "--out", "unused"]])
def test_commands_reject_a_komi_that_is_no_score(argv, capsys):
    from kifunet.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"kifunet {argv[0]}: error: --komi: ") and len(err.splitlines()) == 1, err


def test_final_score_on_a_known_position(tiny_policy):
    # black wall on column D plus E5, white wall on column F, and one white stone at B2 inside black's side: dead,
    # so A-C are black's (27) with D and E5: 37; E1-E4, E6-E9 are dame; white 9 + 27 = 36 + 6.5 komi -> W+5.5
    # (Tromp-Taylor, B2 alive, would make A-C dame: W+33.5)
    e = Engine(tiny_policy)
    script = ["komi 6.5"]
    for row in range(1, 10):
        script += [f"play b D{row}", f"play w F{row}"]
    script += ["play b E5", "play w B2", "final_score"]
    r = talk(e, "\n".join(script))
    assert all(x == "= \n\n" for x in r[:-1])
    assert r[-1] == "= W+5.5\n\n"
    # without the white stone in black's area: black 9 + 1 + 27 = 37, white 36 -> B+0.5 with komi 0.5
    e2 = Engine(tiny_policy)
    talk(e2, "\n".join(["komi 0.5"] + [f"play b D{k}" for k in range(1, 10)] + [f"play w F{k}" for k in range(1, 10)]
                      + ["play b E5"]))
    assert e2.handle("final_score") == "= B+0.5\n\n"
    e2.handle("komi 1")
    assert e2.handle("final_score") == "= 0\n\n"


def test_ko_is_enforced_and_undo_restores_it(tiny_policy):
    e = Engine(tiny_policy)
    # an edge ko: white D9 captures black E9; black may not retake at E9 at once
    r = talk(e, """
        play b C9
        play w F9
        play b D8
        play w E8
        play b E9
        play w D9
        play b E9
        """)
    assert r[:6] == ["= \n\n"] * 6
    assert r[6] == "? illegal move\n\n"
    assert e.handle("play b A1") == "= \n\n" and e.handle("play w A9") == "= \n\n"
    assert e.handle("play b E9") == "= \n\n"  # after a move elsewhere the ko may be taken
    assert e.handle("undo") == "= \n\n" and e.handle("undo") == "= \n\n" and e.handle("undo") == "= \n\n"
    assert e.handle("play b E9") == "? illegal move\n\n"  # undo brought the ko ban back


def test_fixed_handicap_and_its_setup_reaches_the_policy():
    pol = TablePolicy(np.ones(82))
    e = Engine(pol)
    assert e.handle("fixed_handicap 4") == "= C3 G7 C7 G3\n\n"
    assert e.handle("fixed_handicap 2") == "? board not empty\n\n"
    e.handle("genmove w")
    moves, colour, setup = pol.calls[-1]
    assert colour == WHITE and moves == [] and sorted(p for _, p in setup) == sorted(flat(v) for v in
                                                                                     ("C3", "G7", "C7", "G3"))
    e19 = Engine(TablePolicy(np.ones(362), board_size=19))
    assert e19.handle("fixed_handicap 9") == "= D4 Q16 D16 Q4 K10 D10 Q10 K4 K16\n\n"
    assert e19.handle("clear_board") == "= \n\n" and e19.handle("set_free_handicap D4 Q16") == "= \n\n"
    assert e19.handle("fixed_handicap 10") == "? board not empty\n\n"


# --- the rules of choose_move ----------------------------------------------------------------------------------
def _choose(probs, board, colour=BLACK, *, moves_played=10, opponent_passed=False, komi=7.5, has_pass=False, **kw):
    settings = PlaySettings(**kw)
    probs = np.asarray(probs, dtype=np.float64)
    return choose_move(probs / probs.sum(), board, colour, moves_played=moves_played,
                       opponent_passed=opponent_passed, komi=komi, settings=settings,
                       rng=np.random.default_rng(0), has_pass=has_pass)


EYE_BOARD = """
. X . . .
X X . . .
. . . . .
. . . . O
. . . O .
"""


def test_never_fills_its_own_eye_and_plays_only_legal_moves():
    b = Board.from_ascii(EYE_BOARD)
    n, nn = 5, 25
    probs = np.full(nn + 1, 1e-3)
    probs[0] = 0.9  # A5: black's own eye
    probs[1] = 0.5  # B5: occupied
    probs[24] = 0.4  # E1: white's eye, suicide for black
    probs[2] = 0.1
    c = _choose(probs, b, BLACK)
    assert c.move == 2 and c.reason == "policy"
    assert move_choice.own_eyes(b, BLACK)[0] and not move_choice.own_eyes(b, WHITE)[0]
    assert move_choice.own_eyes(b, WHITE)[24] and not b.is_legal(24, BLACK)
    # for white, A5 is suicide and E1 its own eye: the same choice
    assert _choose(probs, b, WHITE).move == 2
    probs[2] = 1e-4
    assert _choose(probs, b, BLACK).probability < 0.1  # renormalised over candidates only


def test_passes_when_only_own_eyes_are_left():
    b = Board.from_ascii("""
        . X X
        X X X
        X X .
        """)
    c = _choose(np.ones(10), b, BLACK)
    assert c.move == 9 and c.reason == "no candidate"
    # white has no legal move at all (both points are suicide)
    assert _choose(np.ones(10), b, WHITE).reason == "no candidate"


def test_pass_after_the_opponent_passes():
    b = Board.from_ascii("""
        . . X O .
        . . X O .
        . . X O .
        . . X O .
        . . X O .
        """)
    probs = np.full(26, 1e-4)
    probs[0] = 0.9  # inside black's own area: nothing to gain under area scoring
    # no dame left after the opponent's pass: pass
    assert _choose(probs, b, opponent_passed=True).reason == "opponent passed"
    assert _choose(probs, b, opponent_passed=False).move == 0  # without the pass it plays on
    # with a dame point, play it when the net is sure enough, pass when unsure
    b2 = Board.from_ascii("""
        . . X . O
        . . X O .
        . . X O .
        . . X O .
        . . X O .
        """)
    sure = probs.copy()
    sure[3] = 0.5
    c = _choose(sure, b2, opponent_passed=True)
    assert c.move == 3
    unsure = np.full(26, 1.0)  # 1/26 each < 0.05
    assert _choose(unsure, b2, opponent_passed=True).reason == "opponent passed"
    assert _choose(unsure, b2, opponent_passed=True, pass_threshold=0.01).move != 25
    # cleanup mode (kgs-genmove_cleanup) must not pass while dead opponent stones are on the board: none here,
    # so it passes like genmove; with a dead white stone (B4) in black's area it plays one of its liberties
    settings = PlaySettings()
    c = choose_move(probs, b, BLACK, moves_played=10, opponent_passed=True, komi=7.5, settings=settings,
                    rng=np.random.default_rng(0), has_pass=False, cleanup=True)
    assert c.move == 25 and c.reason == "opponent passed"
    dead = Board.from_ascii("""
        . . X O .
        . O X O .
        . . X O .
        . . X O .
        . . X O .
        """)
    c = choose_move(probs, dead, BLACK, moves_played=10, opponent_passed=True, komi=7.5, settings=settings,
                    rng=np.random.default_rng(0), has_pass=False, cleanup=True)
    assert c.reason == "remove dead" and c.move in (1, 5, 7, 11)


def test_net_pass_output_move_cap_and_resign():
    b = Board(5)
    probs = np.full(26, 0.01)
    probs[25] = 0.9
    assert _choose(probs, b, has_pass=True).reason == "net passes"
    assert _choose(probs, b, has_pass=False).move != 25  # a net without a pass output never chooses pass
    assert _choose(np.ones(26), b, moves_played=50).reason == "move cap"  # default cap 2*N*N = 50
    assert _choose(np.ones(26), b, moves_played=50, max_moves=60).move != 25
    # black's three stones are dead and white owns the board: with a 5-point margin black resigns (the
    # estimate is confident), white does not; resigning is on by default and switched off by resign=False
    lost = Board.from_ascii("""
        . X O . O
        X X O O .
        O O O . O
        . O . O O
        O . O O .
        """)
    assert _choose(np.ones(26), lost, BLACK, moves_played=12, resign_margin=5).move == "resign"
    assert _choose(np.ones(26), lost, WHITE, moves_played=12, resign_margin=5).move != "resign"
    assert _choose(np.ones(26), lost, BLACK, moves_played=12).move == "resign"  # on by default
    assert _choose(np.ones(26), lost, BLACK, moves_played=12, resign=False).move != "resign"
    assert _choose(np.ones(26), lost, BLACK, moves_played=5, resign_margin=5).move != "resign"  # too early


def test_sampling_follows_the_policy_early_and_the_top_move_late():
    b = Board(5)
    probs = np.full(26, 1e-12)
    probs[[6, 12, 18]] = [0.6, 0.3, 0.1]
    rng = np.random.default_rng(1)
    settings = PlaySettings(sample=True, max_moves=1000, resign=False, end_from=10**6)  # sampling only: no estimate

    def draws(moves_played, k=3000):
        out = [choose_move(probs, b, BLACK, moves_played=moves_played, opponent_passed=False, komi=7.5,
                           settings=settings, rng=rng, has_pass=False).move for _ in range(k)]
        return np.bincount(out, minlength=26)[[6, 12, 18]] / k

    early = draws(5)
    np.testing.assert_allclose(early, [0.6, 0.3, 0.1], atol=0.04)  # r ~ U(0,1): exact sampling
    late = draws(300)  # beta = 1 + sqrt(280) ~ 17.7: P(r > 0.6) = 0.4^17.7, essentially always the top move
    assert late[0] > 0.99
    mid = draws(24)  # beta = 3: P(top) = 1 - 0.4^3 = 0.936
    assert abs(mid[0] - 0.936) < 0.03
    # arg-max never varies
    assert _choose(probs, b).move == 6


# The real `kifunet gtp` process (protocol_version, boardsize, play, genmove, final_score, an unknown command, quit,
# clean stdout) is driven in tests/test_gtp_analysis.py::test_kifunet_gtp_process_analysis_session, together with
# the analysis commands, so that the suite starts the program and its net once.


@pytest.mark.slow
def test_kifunet_gtp_reports_a_bad_model_name():
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "gtp", "--model", "no_such_net"], input="quit\n",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "unknown model" in proc.stderr and proc.stdout == ""


# --- board sizes, the clock and the symmetries (issue 30) -----------------------------------------------------
class SizedPolicy(FakePolicy):
    """A fully convolutional net's policy, trained at 19x19, that plays sizes without a ``size_problem``."""

    def __init__(self, n=19, refuse=(4, 17), log=None):
        self.board_size, self.trained_size, self.has_pass, self.refuse = n, 19, False, refuse
        self.description = "sized"
        self.log = [] if log is None else log  # (size, symmetries) of each probabilities call, and resizes

    def size_problem(self, n):
        return f"{n}x{n} is refused" if n in self.refuse else None

    def resized(self, n):
        self.log.append(("resized", n))
        return SizedPolicy(n, self.refuse, self.log)

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        self.log.append((self.board_size, symmetries))
        p = np.linspace(1.0, 2.0, self.board_size ** 2 + 1)
        p[-1] = 0
        return p / p.sum()


def test_boardsize_switches_to_any_size_the_net_can_play():
    pol = SizedPolicy()
    e = Engine(pol, komi=6.5)
    assert e.handle("version").endswith("(sized; no value head: analysis winrate 0.5 is not an estimate)\n\n")
    assert e.handle("play b D4") == "= \n\n"
    assert e.handle("1 boardsize 9") == "=1 \n\n" and e.size == 9 and e.policy.board_size == 9
    assert e.state.moves == [] and e.state.board.size == 9 and e.komi == 6.5  # cleared; komi kept
    assert "trained on 19x19)" in e.handle("version")
    assert e.handle("genmove b").startswith("= ") and pol.log[-1] == (9, 1)
    assert e.handle("boardsize 13") == "= \n\n" and e.handle("play w N13") == "= \n\n"
    assert e.handle("boardsize 9") == "= \n\n" and e.handle("boardsize 19") == "= \n\n" and e.policy is pol
    assert [x for x in pol.log if x[0] == "resized"] == [("resized", 9), ("resized", 13)]  # once per size
    assert "trained on" not in e.handle("version")
    for n in (4, 17, 1, 0, 20, 25, 26, 99):  # the net's refusals; GTP's 2..25; the rules engine's 2..19
        assert e.handle(f"7 boardsize {n}") == "?7 unacceptable size\n\n", n
        assert e.size == 19
    for bad in ("boardsize", "boardsize 9 9", "boardsize -9", "boardsize nine"):
        assert e.handle(bad) == "? syntax error\n\n"
    listed = e.handle("list_commands")[2:].split()
    for cmd in ("cputime", "loadsgf", "printsgf", "gogui-analyze_commands", "kgs-time_settings", "time_left"):
        assert cmd in listed


def test_a_policy_without_size_problem_plays_only_its_own_size():
    e = Engine(TablePolicy(np.ones(82)))
    assert e.handle("boardsize 9") == "= \n\n"
    assert e.handle("boardsize 19") == "? unacceptable size\n\n" and e.size == 9


def test_genmove_averages_the_symmetries_the_clock_affords():
    log = []
    e = Engine(SizedPolicy(9, log=log))
    e.handle("genmove b")
    assert log[-1] == (9, 1) and e.clock.warm_thread is None  # no time limit: one evaluation, as before
    assert e.handle("time_settings 0 5 1") == "= \n\n"  # 5 s a move: 8 symmetries measured in the background
    e.clock.warm_thread.join(timeout=30)
    assert log[-2:] == [(9, 8), (9, 8)] and 8 in e.clock.time.costs
    e.handle("genmove w")
    assert log[-1] == (9, 8)
    assert e.handle("time_left b 0.05 1") == "= \n\n"  # 50 ms left for black's move: under the lag
    e.handle("genmove b")
    assert log[-1] == (9, 1)
    e.clock.time.costs[8] = 0.2  # a slow net: (0.4 - 0.1) / 2 = 0.15 s does not fit 8 symmetries...
    e.handle("time_left w 0.4 1")
    e.handle("genmove w")
    assert log[-1] == (9, 1)
    e.clock.time.costs[8] = 0.2
    e.handle("time_left b 0.6 1")  # ...0.25 s does
    e.handle("genmove b")
    assert log[-1] == (9, 8)
    assert e.handle("kgs-time_settings none") == "= \n\n"
    e.handle("genmove w")
    assert log[-1] == (9, 1)
    assert e.handle("boardsize 13") == "= \n\n" and e.clock.time.costs == {}  # another board: measured again
    assert e.handle("kgs-time_settings absolute 600") == "= \n\n"
    e.clock.warm_thread.join(timeout=30)
    assert log[-1] == (13, 8) and 8 in e.clock.time.costs
    # configured for an unlimited clock (every policy takes the argument: kifunet.play.gtp_policy.GtpPolicy)
    e8 = Engine(SizedPolicy(9, log=log), symmetries=8)
    e8.handle("genmove b")
    assert log[-1] == (9, 8)
    table = TablePolicy(np.ones(82))
    with pytest.raises(ValueError, match="symmetries"):
        Engine(table, symmetries=9)


@pytest.mark.parametrize("line, reply", [
    ("time_settings 300 30", "? syntax error: time_settings takes main_time byo_yomi_time byo_yomi_stones"),
    ("time_settings 300 30 x", "? syntax error: byo-yomi stones must be a whole number >= 0, not 'x'"),
    ("kgs-time_settings fischer 300 10", "? syntax error: unknown time system 'fischer' (none, absolute, byoyomi, "
                                         "canadian)"),
    ("time_left purple 30 0", "? syntax error"),
    ("time_left b 30", "? syntax error: time_left takes colour time stones"),
])
def test_time_commands_reject_bad_arguments(line, reply):
    e = Engine(TablePolicy(np.ones(82)))
    assert e.handle("time_settings 300 30 5") == "= \n\n"
    assert e.handle(line) == reply + "\n\n"
    assert e.clock.time.settings.main == 300  # unchanged


def test_cputime_is_the_process_cpu_time():
    import time

    e = Engine(TablePolicy(np.ones(82)))
    first = float(e.handle("cputime")[2:])
    t = time.process_time()
    while time.process_time() - t < 0.05:
        pass
    second = e.handle("1 cputime")
    assert re.fullmatch(r"=1 \d+\.\d{3}\n\n", second) and float(second[3:]) >= first + 0.049  # both rounded to ms


def test_final_score_and_status_remove_the_dead_stones():
    """Black's wall on column E, white's on F, a white stone at B2 inside black's area: dead. Black 45 points,
    white 36 + komi 6.5: B+2.5 (Tromp-Taylor, every stone alive, would leave the B2 region to nobody)."""
    e = Engine(fresh_policy("maddison_tiny", 9, seed=0))
    assert e.handle("komi 6.5") == "= \n\n"
    for colour, wall in (("b", "E"), ("w", "F")):
        for row in range(1, 10):
            e.handle(f"play {colour} {wall}{row}")
    e.handle("play w B2")
    assert e.handle("final_score") == "= B+2.5\n\n"
    assert e.handle("final_status_list dead") == "= B2\n\n"
    alive = e.handle("final_status_list alive")[2:-2].split("\n")
    assert sorted(alive) == ["E9 E8 E7 E6 E5 E4 E3 E2 E1", "F9 F8 F7 F6 F5 F4 F3 F2 F1"]
    assert e.handle("final_status_list seki") == "= \n\n"
    for bad in ("final_status_list", "final_status_list dame", "final_status_list dead alive"):
        assert e.handle(bad) == "? syntax error\n\n"
    e.handle("undo")
    assert e.handle("final_score") == "= B+2.5\n\n" and e.handle("final_status_list dead") == "= \n\n"


def test_resigning_is_switched_by_kifunet_resign():
    e = Engine(fresh_policy("maddison_tiny", 5, seed=0))
    assert e.settings.resign
    assert e.handle("kifunet-resign off") == "= \n\n" and not e.settings.resign
    assert e.handle("kifunet-resign on") == "= \n\n" and e.settings.resign
    for bad in ("kifunet-resign", "kifunet-resign maybe", "kifunet-resign on off"):
        assert e.handle(bad) == "? syntax error\n\n"
