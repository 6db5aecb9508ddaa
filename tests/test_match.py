"""The match runner: real games against GNU Go, SGFs that replay, resuming, forfeits, failures, the rank experiment."""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_gnugo

from kifunet.data_prep.planes import replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.data_prep.rules import scoring
from kifunet.play import match
from kifunet.play.match_report import format_rank_table, format_summary
from kifunet.play.match_sgf import finished_games, game_path, read_game

# A few-line GTP program for testing the runner without a net: argv = mode [stones] [--rank R].
# modes: first (the first empty points in order, `stones` of them, then pass), pass, illegal (always A1),
# garbage (an unreadable move), crash-once FILE (exits on its first genmove if FILE is absent; creates it),
# resigner (knows kifunet-resign like kifunet gtp: resigns at its first genmove while allowed, else passes).
FAKE_ENGINE = r'''
import os, sys
args = sys.argv[1:]
rank = ""
if "--rank" in args:
    i = args.index("--rank"); rank = args[i + 1]; del args[i:i + 2]
mode = args[0]
stones = int(args[1]) if len(args) > 1 and args[1].isdigit() else 3
n, occupied, mine, may_resign = 9, set(), 0, True
cols = "ABCDEFGHJKLMNOPQRST"
for line in sys.stdin:
    parts = line.split()
    if not parts:
        continue
    cid = parts.pop(0) if parts[0].isdigit() else ""
    cmd, a = parts[0], parts[1:]
    ok, out = True, ""
    if cmd == "name":
        out = f"fake-{mode}" + (f"-{rank}" if rank else "")
    elif cmd == "version":
        out = "1"
    elif cmd == "known_command":
        out = "true" if mode == "resigner" and a == ["kifunet-resign"] else "false"
    elif cmd == "kifunet-resign" and mode == "resigner":
        may_resign = a == ["on"]
    elif cmd == "boardsize":
        n = int(a[0])
    elif cmd == "clear_board":
        occupied, mine = set(), 0
    elif cmd == "komi":
        pass
    elif cmd == "play":
        if a[1].lower() != "pass":
            occupied.add(a[1].upper())
    elif cmd == "genmove":
        if mode == "crash-once" and not os.path.exists(args[1]):
            open(args[1], "w").close()
            sys.exit(3)
        if mode == "garbage":
            out = "hello"
        elif mode == "illegal":
            out = "A1"
        elif mode == "resigner":
            out = "resign" if may_resign else "pass"
        elif mode in ("first", "crash-once") and mine < stones:
            out = next(f"{c}{r}" for r in range(n, 0, -1) for c in cols[:n] if f"{c}{r}" not in occupied)
            occupied.add(out)
            mine += 1
        else:
            out = "pass"
    elif cmd == "quit":
        print("=\n", flush=True)
        break
    else:
        ok = False
        out = "unknown command"
    print(("=" if ok else "?") + cid + (" " + out if out else "") + "\n", flush=True)
'''


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "fake_gtp.py"
    path.write_text(FAKE_ENGINE)
    return lambda *a: " ".join([sys.executable, str(path), *a])


def gnugo_or_skip() -> str:
    require_gnugo()  # skips locally, fails in CI
    return "gnugo"


@pytest.mark.parametrize("allow", [False, True])
def test_kifunet_players_resign_in_a_match_only_when_allowed(tmp_path, fake, allow):
    cfg = match.MatchConfig(engine=fake("resigner"), opponent=fake("pass"), games=2, board_size=9, referee=None,
                            out_dir=str(tmp_path / "m"), resign=allow)
    summary = match.run_match(cfg, log=lambda s: None)
    assert summary.ended == ({"resignation": 2} if allow else {"two passes": 2})
    assert json.loads((tmp_path / "m" / "match.json").read_text())["resign"] is allow


def test_fake_engines_in_parallel_alternate_colours_and_score_tromp_taylor(tmp_path, fake):
    cfg = match.MatchConfig(engine=fake("first", "3"), opponent=fake("first", "2"), games=4, board_size=9,
                            komi=0.5, referee=None, parallel=2, out_dir=str(tmp_path / "m"))
    s = match.run_match(cfg, log=lambda m: None)
    assert s.games == 4 and s.failed == []
    for i in range(4):
        rec = sgf_io.load_game(game_path(cfg.out_dir, i))
        replay.analyse_game(rec)
        moves = rec.moves()
        # black moves first; the engine takes 3 points, the opponent 2; both then pass
        eng = BLACK if i % 2 == 0 else WHITE
        assert sum(1 for c, p in moves if c == eng and p != 81) == 3
        assert sum(1 for c, p in moves if c != eng and p != 81) == 2
        assert moves[-2][1] == 81 and moves[-1][1] == 81
        b = Board(9)
        for c, p in moves:
            if p != 81:
                b.play(p, c)
        assert rec.info.result == scoring.format_score(scoring.area_score(b.stones, 0.5))
    # 5 stones on the top row: the whole board touches both colours, so the score is stones and komi
    # engine black (games 0, 2): B 3 - W 2 - 0.5 = B+0.5 -> engine wins; engine white: B 2 ... also W 3 -> W+1.5
    rs = finished_games(cfg.out_dir)
    assert [rs[i].result for i in range(4)] == ["B+0.5", "W+1.5", "B+0.5", "W+1.5"]
    assert s.engine_wins == 4 and s.as_black == (2, 2) and s.as_white == (2, 2) and s.ended == {"two passes": 4}
    saved = json.loads((Path(cfg.out_dir) / "results.json").read_text())
    assert saved["engine_wins"] == 4 and saved["games"] == 4
    table = format_summary(s, cfg)
    assert "| 4 | 4 | 100.0% | 51.0-100.0% | 2/2 | 2/2 |" in table


def test_a_line_per_finished_game_with_the_running_score_and_a_live_move_counter(tmp_path, fake):
    """A line once the programs are up; each game's line ends with the running score; the live line (here into a string,
    redrawn on every move) shows each game's move number and is cleared before every logged line."""
    import io

    from kifunet.play.match_report import LiveMoves

    cfg = match.MatchConfig(engine=fake("first", "3"), opponent=fake("first", "2"), games=3, board_size=9,
                            komi=0.5, referee=None, out_dir=str(tmp_path / "m"))
    screen = io.StringIO()
    lines = []

    def log(line):
        lines.append((line, screen.getvalue()))

    match.run_match(cfg, log=log, live=LiveMoves(file=screen, interval=0))
    assert lines[0][0] == "playing 3 games of 9x9: a line as each one ends"
    # the engine (3 stones) beats the opponent (2) with komi 0.5 as black, and as white by 1.5
    assert [ln.split("[")[-1] for ln, _ in lines[1:]] == [
        "1/3 played; engine 1 of 1]", "2/3 played; engine 2 of 2]", "3/3 played; engine 3 of 3]"]
    drawn = screen.getvalue()
    for i in range(3):
        assert all(f"game {i}: move {m}" in drawn for m in range(1, 8)), drawn[-500:]  # 5 stones, 2 passes
    assert "match: 3/3 games finished" in drawn
    # before each logged game line the live line was wiped (tqdm's clear: back to the line's start, blanked)
    for _, before in lines[1:]:
        assert before.endswith("\r") and not before.rsplit("\r", 2)[-2].strip(), repr(before[-80:])


def test_illegal_and_unreadable_moves_forfeit(tmp_path, fake):
    cfg = match.MatchConfig(engine=fake("illegal"), opponent=fake("first", "5"), games=2, board_size=9, komi=7.5,
                            referee=None, out_dir=str(tmp_path / "ill"))
    s = match.run_match(cfg, log=lambda m: None)
    rs = finished_games(cfg.out_dir)
    assert rs[0].result == "W+F" and rs[1].result == "B+F"
    assert rs[0].ended.startswith("forfeit: B played illegal move") and s.engine_wins == 0
    assert s.ended == {"forfeit": 2}
    cfg2 = match.MatchConfig(engine=fake("garbage"), opponent=fake("pass"), games=1, board_size=9, referee=None,
                             out_dir=str(tmp_path / "garb"))
    match.run_match(cfg2, log=lambda m: None)
    g = finished_games(cfg2.out_dir)[0]
    assert g.result == "W+F" and "unreadable" in g.ended


def test_a_crashed_game_is_not_saved_and_a_rerun_plays_it(tmp_path, fake):
    flag = tmp_path / "crashed"
    cfg = match.MatchConfig(engine=fake("crash-once", str(flag)), opponent=fake("first", "2"), games=2,
                            board_size=9, komi=0.5, referee=None, out_dir=str(tmp_path / "c"))
    msgs = []
    s = match.run_match(cfg, log=msgs.append)
    assert s.failed == [0] and s.games == 1 and flag.exists()
    assert any("FAILED" in m and "exited" in m for m in msgs)
    assert not game_path(cfg.out_dir, 0).exists() and game_path(cfg.out_dir, 1).exists()
    before = game_path(cfg.out_dir, 1).read_bytes()
    msgs.clear()
    s = match.run_match(cfg, log=msgs.append)
    assert s.failed == [] and s.games == 2
    assert msgs[0].endswith("1 of 2 games already played; playing 1")
    assert msgs[1] == "playing 1 game of 9x9: a line as each one ends"
    assert sum(m.startswith("game ") for m in msgs) == 1 and "game    0" in msgs[2]
    assert msgs[2].endswith("[2/2 played; engine 2 of 2]")  # game 1, played before, counts in the score
    assert game_path(cfg.out_dir, 1).read_bytes() == before  # finished games are kept as they were
    # a different match in the same directory is refused
    other = match.MatchConfig(engine=cfg.engine, opponent=cfg.opponent, games=2, board_size=9, komi=6.5,
                              referee=None, out_dir=cfg.out_dir)
    with pytest.raises(match.MatchConfigError, match="komi"):
        match.run_match(other, log=lambda m: None)


def test_rank_experiment_appends_the_rank_and_tabulates(tmp_path, fake):
    cfg = match.MatchConfig(engine=fake("first", "3"), opponent=fake("first", "2"), games=2, board_size=9, komi=0.5,
                            referee=None, out_dir=str(tmp_path / "rx"))
    res = match.run_rank_experiment(cfg, ["1d", "9d"], log=lambda m: None)
    assert list(res) == ["1d", "9d"]
    for r in ("1d", "9d"):
        rec = sgf_io.load_game(game_path(tmp_path / "rx" / f"rank-{r}", 0))
        assert rec.info.black == f"fake-first-{r} 1"  # the engine (black in game 0) was told its rank
    table = format_rank_table(res, cfg)
    assert "| 1d | 2 | 2 | 100.0% |" in table and "| 9d | 2 | 2 | 100.0% |" in table
    assert set(json.loads((tmp_path / "rx" / "rank_experiment.json").read_text())) == {"1d", "9d"}


@pytest.mark.slow
def test_two_real_9x9_games_against_gnugo_resumed_and_replayable(tmp_path):
    gnugo_or_skip()
    out = tmp_path / "gg"
    base = [sys.executable, "-m", "kifunet.cli", "match", "--engine",
            f"{sys.executable} -m kifunet.cli gtp --model maddison_tiny --board-size 9 --seed 1",
            "--opponent", "nice gnugo --mode gtp --level 0", "--board-size", "9", "--komi", "7.5", "--out", str(out)]
    if shutil.which("nice") is None:
        base[base.index("--opponent") + 1] = "gnugo --mode gtp --level 0"
    first = subprocess.run(base + ["--games", "1"], capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    g0 = game_path(out, 0)
    assert g0.exists() and not game_path(out, 1).exists()
    saved0 = g0.read_bytes()
    second = subprocess.run(base + ["--games", "2"], capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "1 of 2 games already played; playing 1" in second.stdout
    assert g0.read_bytes() == saved0
    results = json.loads((out / "results.json").read_text())
    assert results["games"] == 2 and results["failed"] == []
    engine_wins = 0.0
    for i in range(2):
        path = game_path(out, i)
        rec = sgf_io.load_game(path)
        a = replay.analyse_game(rec)  # raises on any illegal move
        assert len(a) == rec.num_moves > 10
        engine_is_black = i % 2 == 0
        assert ("kifunet" in rec.info.black) == engine_is_black and ("GNU Go" in rec.info.white) == engine_is_black
        winner, text = scoring.parse_result(rec.info.result)
        assert text[2:] != "" and rec.info.komi == 7.5
        engine_wins += (winner == BLACK) == engine_is_black
        g = read_game(path)
        assert g.ended in ("two passes", "move cap", "resignation") and g.moves == rec.num_moves
        assert set(g.think) == {"engine", "opponent"} and g.seconds >= g.think["engine"] + g.think["opponent"] - 0.2
        assert "referee final_score" in path.read_text() or g.ended == "resignation"
    assert results["engine_wins"] == engine_wins
    assert "| 2 |" in second.stdout and "95% CI" in second.stdout


def test_match_cli_refuses_bad_arguments(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "match", "--engine", "no-such-go-program",
                           "--referee", "none", "--games", "1", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("kifunet match: error: --engine: program not found")
    assert not (tmp_path / "x").exists()  # checked before the match directory is made


def test_an_engine_that_cannot_start_stops_the_match(tmp_path, fake):
    """Its last stderr lines are in the error (not only in a log), no game is tried twice, and once the command
    is corrected the same directory plays the match (no game was played under the old settings)."""
    dying = shlex.join([sys.executable, "-c", "import sys; print('loading net...', file=sys.stderr); "
                        "sys.exit('cannot load /no/net: no such run')"])
    cfg = match.MatchConfig(engine=dying, opponent=fake("pass"), games=3, board_size=9, referee=None, parallel=2,
                            out_dir=str(tmp_path / "m"))
    lines = []
    with pytest.raises(match.EngineStartError) as info:
        match.run_match(cfg, log=lines.append)
    msg = str(info.value)
    assert msg.startswith(f"the engine failed to start ({dying}): engine exited (code 1)")
    assert "    loading net...\n    cannot load /no/net: no such run" in msg
    assert lines == [] and finished_games(tmp_path / "m") == {}
    fixed = match.run_match(dataclasses.replace(cfg, engine=fake("first")), log=lines.append)
    assert fixed.games == 3 and fixed.failed == []


OPENINGS = Path(__file__).parent / "fixtures" / "openings" / "held_out_9x9.sgf"


def test_held_out_openings_are_chosen_in_split_hash_order_and_the_unusable_skipped_with_a_reason():
    """``play/openings.py``: the fixture's 11 games hold 5 that open with 4 legal alternating moves, two of them
    alike; the rest are skipped, each for its reason, and too few usable games are refused in one line."""
    from kifunet.data_prep.building.splits import hash_fraction
    from kifunet.play import openings

    chosen, skipped = openings.choose([str(OPENINGS)], 4, 4, 9)
    assert skipped == {"ends before move 4": 1, "illegal move 2": 1, "a 19x19 game": 1, "setup stones": 1,
                       "a pass at move 2": 1, "moves do not alternate from black": 1,
                       "the same first 4 moves as an earlier game": 1}
    assert len({o.moves for o in chosen}) == 4 and all(len(o.moves) == 4 for o in chosen)
    assert [o.fraction for o in chosen] == sorted(o.fraction for o in chosen)
    rec = sgf_io.load_game(OPENINGS.read_bytes().split(b"\n")[1])  # the second game of the file
    assert chosen[0].path.endswith("held_out_9x9.sgf#2") and chosen[0].fraction == hash_fraction(rec.moves_hash())
    assert chosen[0].moves == tuple(rec.moves()[:4])
    with pytest.raises(openings.OpeningsError, match=r"^--openings: 4 usable games of at least 4 moves in .*"
                       r"held_out_9x9.sgf, 5 needed \(skipped: 1 a 19x19 game, 1 a pass at move 2, "):
        openings.choose([str(OPENINGS)], 4, 5, 9)
    with pytest.raises(openings.OpeningsError, match="--openings: /no/such.sgf: no such file or directory"):
        openings.choose(["/no/such.sgf"], 4, 1, 9)


def test_a_match_from_held_out_openings_plays_a_different_game_in_each_pair(tmp_path, fake):
    """Two deterministic players (the fake's first empty points) would play one game over and over; from the
    openings, each pair of games starts from its own opening, told to both players and kept in the SGF, with the
    colours swapped within the pair. A rerun plays nothing; other openings are another match."""
    from kifunet.play import openings

    cfg = match.MatchConfig(engine=fake("first", "3"), opponent=fake("first", "2"), games=4, board_size=9, komi=0.5,
                            referee=None, out_dir=str(tmp_path / "m"), openings=(str(OPENINGS),), opening_moves=4)
    lines = []
    s = match.run_match(cfg, log=lines.append)
    assert s.games == 4 and s.failed == [] and s.ended == {"two passes": 4}
    chosen, _ = openings.choose([str(OPENINGS)], 4, 2, 9)
    assert lines[0].startswith(f"openings: the first 4 moves of 2 games of {OPENINGS} (split-hash fractions ")
    games = [sgf_io.load_game(game_path(cfg.out_dir, i)) for i in range(4)]
    for i, rec in enumerate(games):
        moves = rec.moves()
        assert tuple(moves[:4]) == chosen[i // 2].moves  # the opening, then the players' own moves
        eng = BLACK if i % 2 == 0 else WHITE
        assert sum(1 for c, p in moves[4:] if c == eng and p != 81) == 3
        assert sum(1 for c, p in moves[4:] if c != eng and p != 81) == 2
        assert f"opening: the first 4 moves of {chosen[i // 2].path}" in game_path(cfg.out_dir, i).read_text()
    assert rec.info.black == games[2].info.white  # colours alternate
    assert len({tuple(g.moves()) for g in games}) == 4  # every game differs
    saved = json.loads((Path(cfg.out_dir) / "results.json").read_text())
    assert saved["openings"]["games"] == [o.path for o in chosen] and saved["openings"]["moves"] == 4
    assert json.loads((Path(cfg.out_dir) / "openings.json").read_text())["openings"][1]["moves"] == [
        list(m) for m in chosen[1].moves]
    assert "openings: the first 4 moves of held-out games of" in format_summary(s, cfg)
    again = []
    assert match.run_match(cfg, log=again.append).games == 4 and "playing 0" in again[1]
    with pytest.raises(match.MatchConfigError, match="opening_moves: 4 there, 3 now"):
        match.run_match(dataclasses.replace(cfg, opening_moves=3), log=lambda m: None)


def test_match_cli_refuses_openings_without_their_length_and_a_missing_source(tmp_path, fake):
    base = [sys.executable, "-m", "kifunet.cli", "match", "--engine", fake("first"), "--opponent", fake("pass"),
            "--referee", "none", "--games", "2", "--board-size", "9", "--out", str(tmp_path / "x")]
    for extra, msg in ((["--openings", str(OPENINGS)], "--openings and --opening-moves go together: "
                                                         "--openings SOURCE... --opening-moves K"),
                       (["--openings", "/no/such.sgf", "--opening-moves", "4"],
                        "--openings: /no/such.sgf: no such file or directory")):
        proc = subprocess.run(base + extra, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [f"kifunet match: error: {msg}"], (
            proc.stderr)
        assert not (tmp_path / "x").exists()  # refused before the match directory is made
