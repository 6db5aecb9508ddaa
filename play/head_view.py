"""What the ownership and score heads say, turned from the side to move's view into colours: the one home of
that arithmetic for ``kifunet gtp``'s GoGui commands (:mod:`kifunet.play.gtp_gogui`) and ``kifunet show``.

The heads' contract (:mod:`kifunet.models.aux_heads`): ownership ``[N, N]`` in [-1, 1], +1 where the side to move
owns the point at the game's end; score, the final margin in points for the side to move, as the training games'
results count it (with their komi; the net is not told the komi unless it reads a game profile)."""

from __future__ import annotations

import numpy as np

from kifunet.data_prep.game import BLACK

#: margins smaller than this (in size) are written as ``0``: the text has one decimal
ZERO_MARGIN = 0.05


def black_view(values, to_move: int):
    """Ownership (an array) or a score (a float) of the side ``to_move`` from Black's view (+1 / positive: Black)."""
    sign = 1.0 if int(to_move) == BLACK else -1.0
    return sign * np.asarray(values, dtype=np.float64) if np.ndim(values) else sign * float(values)


def owned_points(ownership) -> tuple[float, float]:
    """``(owner's points, other's points)`` of an ownership map (+1: the first side): each point's expected owner,
    ``(1 + o) / 2`` and ``(1 - o) / 2``, summed; the two add up to the board's points."""
    o = np.asarray(ownership, dtype=np.float64)
    return float(((1 + o) / 2).sum()), float(((1 - o) / 2).sum())


def margin_text(black_margin: float) -> str:
    """A margin from Black's view as a result: ``B+3.2``, ``W+0.5``, ``0`` (below :data:`ZERO_MARGIN`)."""
    m = float(black_margin)
    if abs(m) < ZERO_MARGIN:
        return "0"
    return f"{'B' if m > 0 else 'W'}+{abs(m):.1f}"
