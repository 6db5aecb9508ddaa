"""Area scoring (Tromp-Taylor) and result text: the engine's final_score and the match runner's fallback referee."""

from __future__ import annotations

import numpy as np
import pytest

from kifunet.data_prep.board import Board
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import scoring


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
