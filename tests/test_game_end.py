"""The end of a game as a GUI plays it (issue 48 items 12-14, and ``final_score`` mid-game): cleanup saves its own
chains before it removes dead stones, a killable eye space is not passed over, a game lost far beyond what the
unsettled points could change is resigned, and an open board is scored as the dead-stone estimate sees it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kifunet.data_prep import coords
from kifunet.data_prep.game import BLACK, MOVE, WHITE
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.sgf import sgf_io
from kifunet.play import life_death, scoring
from go_helpers import BIG_DEAD, DEAD_STONES, SEKI
from kifunet.play.gtp_engine import Engine
from kifunet.play.move_choice import PlaySettings, choose_move

REPO = Path(__file__).resolve().parents[1]
ENDGAME = REPO / "pretrained" / "kgs_cpu_default" / "match-gnugo10-endgame" / "games" / "game-0000.sgf"
# issue 48 item 12: played after the game above was loaded; the last, W C2, puts black A1-B1-B2 in atari
ITEM12_MOVES = "W A8, B M7, W A10, B L6, W B11, B R9, W O3, B Q9, W L8, B L7, W pass, B K16, W H17, B J17, " \
               "W pass, B H18, W C2"


def flat(vertex: str, n: int = 19) -> int:
    return coords.to_flat(coords.from_gtp(vertex, n), n)


def choose(board: Board, probs, colour, **kw):
    p = np.asarray(probs, dtype=np.float64)
    settings = PlaySettings(**{"resign": False, **kw.pop("settings", {})})
    kw.setdefault("moves_played", 200)
    kw.setdefault("opponent_passed", False)
    kw.setdefault("komi", 7.5)
    return choose_move(p / p.sum(), board, colour, settings=settings, rng=np.random.default_rng(0),
                       has_pass=False, **kw)


def item12_board() -> Board:
    record = sgf_io.load_game(str(ENDGAME))
    n = record.size
    board = Board(n)
    for kind, colour, point in zip(record.kinds.tolist(), record.colours.tolist(), record.points.tolist()):
        assert kind == MOVE  # the file has no setup stones
        if point != n * n:
            board.play(point, colour)
    for move in ITEM12_MOVES.split(", "):
        letter, vertex = move.split()
        if vertex != "pass":
            board.play(flat(vertex), BLACK if letter == "B" else WHITE)
    return board


def test_cleanup_saves_its_own_chain_in_atari_before_removing_dead_stones():
    board = item12_board()
    a1, c1, l15 = flat("A1"), flat("C1"), flat("L15")
    assert board.liberties(a1) == 1 and board.chain(a1) == sorted([a1, flat("B1"), flat("B2")])
    probs = np.full(19 * 19 + 1, 1e-4)
    probs[l15] = 0.5  # the net's favourite: a liberty of dead white stones, as in the issue
    probs[c1] = 0.01
    c = choose(board, probs, BLACK, cleanup=True, opponent_passed=False)
    assert (c.move, c.reason) == (c1, "save chain")  # C1 captures white C2: A1-B1-B2 has two liberties again
    board.play(c1, BLACK)
    assert board.liberties(a1) >= 2
    # nothing of its own in atari any more: back to removing the dead stones
    assert choose(board, probs, BLACK, cleanup=True).reason == "remove dead"


class UniformPolicy:
    """A 19x19 policy with equal probabilities everywhere (final_score does not read it)."""

    board_size = 19
    has_pass = False
    description = "uniform"

    def probabilities(self, moves, colour, setup=()):
        return np.full(19 * 19 + 1, 1.0 / (19 * 19 + 1))


def test_final_score_after_one_move_is_the_estimate_not_the_whole_board():
    e = Engine(UniformPolicy(), komi=7.5)
    assert e.handle("play b Q16") == "= \n\n"
    answer = e.handle("final_score").strip()
    assert answer != "= B+353.5"  # Tromp-Taylor: the one stone's colour owns the empty board
    margin = float(answer[4:]) * (1 if answer[2] == "B" else -1)
    assert abs(margin - (1 - 7.5)) <= 10, answer  # nothing is owned yet but the stone: about W+6.5
    # the estimate's own view agrees with the answer
    est = life_death.estimate(Board(19).stones, WHITE)
    assert est.score(0) == 0  # an empty board counts for nobody


def test_score_of_a_finished_board_is_the_area_count_without_the_dead_stones():
    for text in (BIG_DEAD, DEAD_STONES, SEKI):
        stones = Board.from_ascii(text).stones
        est = life_death.estimate(stones, BLACK)
        assert est.score(7) == scoring.score_without(stones, est.dead(), 7)


def test_an_open_region_counts_where_the_estimate_owns_it():
    b = Board(9)
    b.play(flat("C3", 9), BLACK)
    est = life_death.estimate(b.stones, WHITE, playouts=64)
    owner = est.point_owner()
    assert owner[6, 2] == 1  # the stone
    strong = np.abs(est.ownership) >= life_death.CONFIDENT
    assert (owner[(b.stones == 0) & ~strong] == 0).all()
    assert (owner[(b.stones == 0) & strong] == np.sign(est.ownership[(b.stones == 0) & strong])).all()
