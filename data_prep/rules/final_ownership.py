"""A game's final ownership and score margin: the targets of the ownership and score heads.

:func:`game_targets` gives, for a game that ended on the board (result kind ``score``, :mod:`kifunet.data_prep.results`),
the owner of every point of its final position, from black's view: +1 black, -1 white, 0 nobody (dame, the shared
liberties of a seki, or unknown). Where the record's last node carries territory marks (``TB``/``TW``, what KGS
writes after counting; ``GameRecord.territory``) they decide: a marked point belongs to the marking colour (the
points of dead stones are marked as the other colour's), an unmarked stone to its colour, any other point to
nobody. Else the dead-stone estimate of the final position decides (:func:`estimate_ownership`: two halves of 32
playouts, or 256 where they disagree; ``combined``), by :meth:`~kifunet.data_prep.rules.life_death.Estimate.point_owner`.
Any other result (resignation, time, forfeit, a bare win, draw, void, unknown) has no ownership: source ``none``.

:data:`SOURCES` names the source codes (the games tables' ``ownership_source``): 0 ``none`` (masked),
1 ``marks``, 2 ``estimate``. ``estimate_agreement`` is, for a game with marks, the number of points where the
estimate's owner equals the marks' (all N*N: the estimate agrees exactly), and -1 for any other game.

The score margin is the result's (:func:`score_margin`): points from black's view (black's margin positive,
white's negative), NaN for every result kind but ``score``.
"""

from __future__ import annotations

import math

import numpy as np

from ..game import BLACK, MOVE, WHITE
from . import life_death
from .board import Board, rebuild, set_point

SOURCES = ("none", "marks", "estimate")
NONE, MARKS, ESTIMATE = 0, 1, 2
#: playouts and seed of the estimate (fixed: a build is byte-reproducible)
PLAYOUTS, SEED = life_death.DEFAULT_PLAYOUTS, 0
#: playouts and seeds of the two halves judged first (:func:`estimate_ownership`)
HALF, HALF_SEEDS = 32, (1, 2)


def final_position(record) -> tuple[np.ndarray, int]:
    """(stones int8 [N, N], colour to move) after every event of ``record`` (setup after the last move
    included). Raises ``ValueError`` on an illegal move."""
    n = record.size
    b = Board(n)
    to_move = BLACK
    setup = False
    for kind, colour, point in zip(record.kinds.tolist(), record.colours.tolist(), record.points.tolist()):
        if kind != MOVE:
            set_point(b.B, point, colour)
            setup = True
            continue
        if setup:
            rebuild(b.B, b.nb)
            setup = False
        if point != n * n:
            b.play(point, colour)
        to_move = 3 - colour
    if setup:
        rebuild(b.B, b.nb)
    return b.stones, to_move


def marks_ownership(stones: np.ndarray, territory: np.ndarray) -> np.ndarray:
    """int8 [N*N] from black's view: a marked point is the marking colour's, an unmarked stone its colour's."""
    st = np.asarray(stones).reshape(-1)
    t = np.asarray(territory).reshape(-1)
    who = np.where(t != 0, t, st)
    return np.where(who == BLACK, 1, np.where(who == WHITE, -1, 0)).astype(np.int8)


def estimate_ownership(stones: np.ndarray, to_move: int) -> np.ndarray:
    """int8 [N*N] from black's view: the dead-stone estimate's owner of each point. Two independent halves of
    :data:`HALF` playouts (seeds :data:`HALF_SEEDS`) are judged first; where their owners agree on every point that
    owner is the answer, else the full :data:`PLAYOUTS`-playout estimate (seed :data:`SEED`) is."""
    st = life_death.check_stones(stones)
    verdict = life_death.benson_verdict(st)  # the stones' alone: shared by every judgement below
    owners = [life_death.judge(st, to_move, life_death.playout_ownership(st, to_move, HALF, seed), playouts=HALF,
                               verdict=verdict).point_owner() for seed in HALF_SEEDS]
    if not np.array_equal(*owners):
        raw = life_death.playout_ownership(st, to_move, PLAYOUTS, SEED)
        owners[0] = life_death.judge(st, to_move, raw, playouts=PLAYOUTS, verdict=verdict).point_owner()
    return owners[0].reshape(-1).astype(np.int8)


def score_margin(result_kind: str, winner: int, margin: float) -> float:
    """The result's margin from black's view (points), NaN unless ``result_kind`` is ``score``."""
    if result_kind != "score" or not math.isfinite(margin):
        return math.nan
    return float(margin) if winner == BLACK else -float(margin)


def game_targets(record) -> tuple[np.ndarray, int, int]:
    """(ownership int8 [N*N] from black's view, source code, estimate_agreement) of ``record`` (module
    docstring); zeros, :data:`NONE` and -1 for a game that did not end by counting."""
    n = record.size
    if record.info.result_kind != "score":
        return np.zeros(n * n, np.int8), NONE, -1
    stones, to_move = final_position(record)
    est = estimate_ownership(stones, to_move)
    if record.territory is None:
        return est, ESTIMATE, -1
    marks = marks_ownership(stones, record.territory)
    return marks, MARKS, int(np.count_nonzero(marks == est))


def encode(ownership: np.ndarray) -> str:
    """int8 ownership [N*N] -> text of one digit a point (``0`` nobody, ``1`` black, ``2`` white)."""
    return "".join("012"[int(v)] for v in np.where(np.asarray(ownership) < 0, 2, ownership).tolist())


def decode(text: str, points: int) -> np.ndarray:
    """:func:`encode`'s text -> int8 [points] (+1 black, -1 white); zeros for an empty text."""
    if not text:
        return np.zeros(points, np.int8)
    v = np.frombuffer(text.encode("ascii"), np.uint8).astype(np.int8) - ord("0")
    return np.where(v == 2, -1, v).astype(np.int8)
