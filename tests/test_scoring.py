"""Area scoring (Tromp-Taylor) and result text: the engine's final_score and the match runner's fallback referee."""

from __future__ import annotations

import numpy as np
import pytest

from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.data_prep.rules import scoring


def test_area_scoring_helpers():
    st = Board.from_ascii("""
        . X O .
        X X O .
        . X O O
        X X O .
        """).stones
    owner = scoring.area_owner(st)
    assert owner.tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [1, 1, 2, 2], [1, 1, 2, 2]]
    assert scoring.area_score(st, 0.5) == -0.5 and scoring.format_score(-0.5) == "W+0.5"
    assert scoring.area_score(np.zeros((3, 3), np.int8), 0) == 0 and scoring.format_score(0.0) == "0"
    assert scoring.format_score(3.0) == "B+3"
    assert scoring.parse_result("W+R") == (WHITE, "W+R") and scoring.parse_result("b+12.5") == (BLACK, "B+12.5")
    assert scoring.parse_result("Jigo") == (None, "0")
    with pytest.raises(ValueError):
        scoring.parse_result("?")


def test_score_with_dead_stones_removed():
    st = Board.from_ascii("""
        . O X O .
        . . X O .
        X X X O .
        . . X O .
        . . X O X
        """).stones
    assert scoring.area_score(st, 0) == 6.0  # B5 and E1 count as alive: A5-B4 and E2-E5 are dame
    dead = np.zeros((5, 5), bool)
    dead[0, 1] = dead[4, 4] = True
    removed = scoring.remove_stones(st, dead)
    assert removed[0, 1] == 0 and removed[4, 4] == 0 and st[0, 1] == WHITE  # a copy
    assert scoring.score_without(st, dead, 0.5) == 15 - 10 - 0.5  # black: A-C, white: D-E
    assert scoring.format_score(scoring.score_without(st, dead, 0.5)) == "B+4.5"
