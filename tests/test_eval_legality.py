"""kifunet.eval.legality.top_moves: the top-k legal moves of a policy output (no JAX)."""

from __future__ import annotations

import numpy as np
import pytest

from kifunet.eval.legality import top_moves


def test_most_probable_first_and_illegal_moves_left_out():
    probs = np.array([0.1, 0.4, 0.05, 0.3, 0.15])
    allowed = np.array([True, False, True, True, True])
    assert top_moves(probs, allowed, 3) == [3, 4, 0]  # 1 is the most probable but not allowed


def test_ties_go_to_the_lower_flat_index():
    probs = np.array([0.2, 0.3, 0.2, 0.3, 0.0])
    assert top_moves(probs, np.ones(5, bool), 4) == [1, 3, 0, 2]
    assert top_moves(probs[::-1].copy(), np.ones(5, bool), 2) == [1, 3]
    flat = np.full(19 * 19 + 1, 1 / 362, np.float32)  # a uniform policy on a full board: the board's order
    assert top_moves(flat, np.ones(362, bool), 5) == [0, 1, 2, 3, 4]


def test_pass_is_listed_only_when_allowed():
    n = 3
    probs = np.full(n * n + 1, 0.05)
    probs[n * n] = 0.5  # pass, last, the most probable
    allowed = np.ones(n * n + 1, bool)
    assert top_moves(probs, allowed, 2) == [n * n, 0]
    allowed[n * n] = False
    assert top_moves(probs, allowed, 2) == [0, 1]
    assert top_moves(probs[: n * n], allowed[: n * n], 1) == [0]  # the points only: no pass index


def test_k_larger_than_the_legal_moves_and_k_zero():
    probs = np.array([0.5, 0.2, 0.3])
    assert top_moves(probs, np.array([False, True, True]), 10) == [2, 1]
    assert top_moves(probs, np.zeros(3, bool), 5) == []
    assert top_moves(probs, np.ones(3, bool), 0) == []
    assert all(type(m) is int for m in top_moves(probs.astype(np.float32), np.ones(3, bool), 3))


def test_shapes_must_agree():
    with pytest.raises(ValueError, match="one shape"):
        top_moves(np.zeros(10), np.ones(9, bool), 3)


def test_the_engine_and_the_board_picture_use_it():
    """One function: the GTP engine's candidates and ``policy`` command, and the picture's numbered moves."""
    from kifunet.eval import board_image
    from kifunet.play import gtp_analysis, gtp_analyze, gtp_moves

    assert gtp_moves.top_moves is top_moves and gtp_analyze.top_moves is top_moves
    assert board_image.top_moves is top_moves
    assert not hasattr(gtp_analysis, "top_moves")
