"""The end-of-game rules of choose_move (play/move_choice.py, rules 3 and 4): passing, removing dead stones,
resigning. The rules of candidates, sampling and the move cap are tested in tests/test_gtp_engine.py."""

from __future__ import annotations

import numpy as np
import pytest

from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.data_prep.rules import life_death
from kifunet.play.move_choice import PlaySettings, choose_move
from go_helpers import BIG_DEAD, DEAD_STONES, SEKI


# The same walls without dead stones, and one dame point: E9.
DAME = """
. . . X . O . . .
. . . X O O . . .
. . . X O . . . .
. . . X O . . . .
. . . X O . . . .
. . . X O . . . .
. . . X O . . . .
. . . X O . . . .
. . . X O . . . .
"""




def choose(text_or_board, probs, colour=BLACK, *, moves_played=60, opponent_passed=False, komi=7.5,
           cleanup=False, estimate=None, **kw):
    b = Board.from_ascii(text_or_board) if isinstance(text_or_board, str) else text_or_board
    kw.setdefault("resign", False)  # resigning is tested on its own
    p = np.asarray(probs, dtype=np.float64)
    return choose_move(p / p.sum(), b, colour, moves_played=moves_played, opponent_passed=opponent_passed,
                       komi=komi, settings=PlaySettings(**kw), rng=np.random.default_rng(0), has_pass=False,
                       cleanup=cleanup, estimate=estimate)


def probs_with(values: dict[int, float], rest: float = 1e-4) -> np.ndarray:
    p = np.full(82, rest)
    for k, v in values.items():
        p[k] = v
    return p


A9, B9, E9 = 0, 1, 4
DEAD_WHITE_LIBERTIES = {1, 9, 11, 19}  # around B8 (flat 10)
DEAD_BLACK_LIBERTIES = {59, 61, 69}  # around G3 (flat 60)


def test_after_a_pass_a_region_with_dead_stones_is_not_dame():
    b = Board.from_ascii(DEAD_STONES)
    p = probs_with({A9: 0.6, B9: 0.3})
    c = choose(b, p, opponent_passed=True, moves_played=30)
    assert c.move == 81 and c.reason == "opponent passed"
    assert choose(b, p, opponent_passed=False, moves_played=30).move == A9  # before move N*N/2: no rule


def test_tromp_taylor_rules_and_cleanup_capture_dead_stones_first():
    p = probs_with({A9: 0.6, B9: 0.3})
    c = choose(DEAD_STONES, p, opponent_passed=True, rules="tromp-taylor")
    assert c.move == B9 and c.reason == "remove dead"  # the net's favourite among the liberties
    assert choose(DEAD_STONES, probs_with({A9: 0.9}), opponent_passed=True,
                  rules="tromp-taylor").move in DEAD_WHITE_LIBERTIES
    assert choose(DEAD_STONES, p, WHITE, opponent_passed=True, rules="tromp-taylor").move in DEAD_BLACK_LIBERTIES
    # kgs-genmove_cleanup: the same whatever the opponent did and whatever the rules
    assert choose(DEAD_STONES, p, cleanup=True).reason == "remove dead"
    # once the dead stones are off the board, pass
    b = Board.from_ascii(DEAD_STONES)
    b.setup([10, 60], 0)
    assert choose(b, p, opponent_passed=True, rules="tromp-taylor").reason == "opponent passed"
    assert choose(b, p, cleanup=True, opponent_passed=True).reason == "opponent passed"
    assert choose(b, p, cleanup=True, moves_played=10).move == A9  # early, no dead stones: the net's move
    with pytest.raises(ValueError, match="rules"):
        PlaySettings(rules="japanese")


def test_dame_is_played_after_a_pass_when_the_net_wants_it():
    assert choose(DAME, probs_with({A9: 0.5, E9: 0.4}), opponent_passed=True).move == E9
    c = choose(DAME, probs_with({A9: 0.9, E9: 0.01}), opponent_passed=True)
    assert c.reason == "opponent passed"  # the net is unsure of the only useful move


def test_seki_liberties_are_not_filled():
    a3, b3 = 54, 55
    e = life_death.estimate(Board.from_ascii(SEKI).stones, BLACK, playouts=64)
    assert e.seki().sum() == 10
    assert choose(SEKI, probs_with({a3: 0.9, b3: 0.05}), opponent_passed=True).reason == "opponent passed"
    assert choose(SEKI, probs_with({a3: 0.9}), moves_played=60).reason == "settled"
    assert choose(SEKI, probs_with({a3: 0.9}), moves_played=10).move == a3  # no rule this early


def test_games_end_without_passes_once_every_wanted_move_is_settled():
    # every point settled: from move N*N/2 on, pass even though the opponent did not
    c = choose(DEAD_STONES, probs_with({A9: 0.9}), moves_played=40)
    assert c.move == 81 and c.reason == "settled"
    assert choose(DEAD_STONES, probs_with({A9: 0.9}), moves_played=39).move == A9
    assert choose(DEAD_STONES, probs_with({A9: 0.9}), moves_played=60, end_from=100).move == A9
    # one dame left: the net wants its own territory and hardly the dame -> pass; wants the dame -> play it
    assert choose(DAME, probs_with({A9: 0.9, E9: 0.01})).reason == "settled"
    assert choose(DAME, probs_with({A9: 0.6, E9: 0.3})).move == E9
    assert choose(DAME, probs_with({A9: 0.9, E9: 0.01}), end_unsettled=0).move == A9  # board counted as open
    # an open board: the rule waits
    b = Board(9)
    b.play(40, BLACK)
    assert choose(b, probs_with({A9: 0.9}), moves_played=60).move == A9


def test_the_estimate_given_by_the_caller_is_used():
    b = Board.from_ascii(DEAD_STONES)
    unsure = life_death.Estimate(ownership=np.zeros((9, 9), np.float32), status=np.where(b.stones > 0, 1, 0)
                                 .astype(np.int8), stones=b.stones)
    c = choose(b, probs_with({A9: 0.9}), opponent_passed=True, estimate=unsure)
    assert c.move == A9  # every point unsettled by this estimate


def test_resign_when_clearly_lost():
    p = np.ones(82)
    assert PlaySettings().resign  # on by default
    assert choose(BIG_DEAD, p, WHITE, komi=7, resign=True).move == "resign"
    assert choose(BIG_DEAD, p, BLACK, komi=7, resign=True).move != "resign"
    assert choose(BIG_DEAD, p, WHITE, komi=7, resign=False).move != "resign"
    assert choose(BIG_DEAD, p, WHITE, komi=7, moves_played=39, resign=True).move != "resign"  # too early
    assert choose(BIG_DEAD, p, WHITE, komi=7, moves_played=39, resign_from=30, resign=True).move == "resign"
    assert choose(BIG_DEAD, p, WHITE, komi=7, resign_margin=80, resign=True).move != "resign"  # B+74 < 80
    # behind on an open board, where the estimate is not confident: play on
    b = Board(9)
    for q in (20, 24, 56, 60):
        b.play(q, WHITE)
    assert choose(b, p, BLACK, moves_played=60, resign=True).move != "resign"
