"""How the GTP engine chooses a move from the net's probabilities: candidates, arg-max or GoNN sampling, when to
pass and when to resign (:func:`choose_move`, :class:`PlaySettings`).

1. Candidates: legal points that do not fill the mover's own eye (:func:`kifunet.data_prep.analysis.is_eye`:
   all neighbours own stones, at most one opponent diagonal in the centre and none on the edge), plus pass
   when the net has a pass output. Their probabilities are renormalised to sum to 1.
2. Arg-max, or with ``sample=True`` GoNN's move-number-dependent sampling: with ``m`` moves played, draw
   ``r ~ Beta(1, 1 + sqrt(max(0, m - 20)))`` and take the first candidate, in decreasing probability, at which
   the cumulative probability exceeds ``r``. For the first 20 moves ``r`` is uniform, which is exact
   sampling from the policy (diverse openings); afterwards ``r`` shrinks (mean 1/(2+sqrt(m-20)): 0.08 at move
   120, 0.06 at move 250), so the choice is almost always the top move or one of the next few. GoNN's README
   describes its play against GNU Go and Pachi this way ("sorting the predictions by probability then
   selecting from a biased distribution ... early on favoring diversity and later becoming more
   deterministic (see play.py)"); the formula is the one in ``python/play.py`` of KataGo, GoNN's successor
   repository (GoNN's own ``play.py`` was not available to compare).
3. Pass rules: (a) ``m >= max_moves`` (default ``2*N*N``); (b) no candidate; (c) after an opponent's pass,
   the candidates shrink to points in *dame* regions (empty regions touching both colours, or an empty
   board: a move inside either side's area changes nothing under area scoring, and the opponent has just
   said it sees nothing left to play), and the engine passes if none is left or if the net's probability of
   the best one (softmax over all points, not renormalised: a net unsure of every move passes) is below
   ``pass_threshold`` (default 0.05); rule (c) is off for ``kgs-genmove_cleanup``; (d) the chosen candidate
   is pass (nets with a pass output).
4. Resign (off unless ``resign_margin`` is set): after ``N*N/2`` moves, resign when the area score
   (Tromp-Taylor, every stone alive, komi included) is worse than ``-resign_margin`` points for the mover.

"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kifunet.data_prep.analysis import is_eye
from kifunet.data_prep.board import Board
from kifunet.data_prep.game import BLACK, EMPTY

from . import scoring

DEFAULT_PASS_THRESHOLD = 0.05


def own_eyes(board: Board, colour: int) -> np.ndarray:
    """bool [N*N]: empty points that are ``colour``'s own eyes (see :func:`is_eye`)."""
    n = board.size
    st = board.B[0, :-1]
    out = np.zeros(n * n, dtype=bool)
    for p in np.nonzero(st == EMPTY)[0]:
        out[p] = is_eye(board.B, board.nb, n, int(p), colour)
    return out


def dame_points(board: Board) -> np.ndarray:
    """bool [N*N]: empty points whose empty region is not one colour's area (touches both colours or none)."""
    owner = scoring.area_owner(board.stones).reshape(-1)
    return (board.B[0, :-1] == EMPTY) & (owner == EMPTY)


def sample_index(sorted_probs: np.ndarray, moves_played: int, rng: np.random.Generator) -> int:
    """GoNN's draw: index into probabilities sorted in decreasing order (see the module docstring)."""
    beta = 1.0 + math.sqrt(max(0, moves_played - 20))
    r = rng.beta(1.0, beta)
    cum = np.cumsum(sorted_probs)
    i = int(np.searchsorted(cum, r, side="right"))
    return min(i, len(sorted_probs) - 1)


@dataclass
class MoveChoice:
    move: int | str  # flat index (N*N = pass) or "resign"
    reason: str  # why: "policy", "sampled", "no candidate", "net passes", "move cap", "opponent passed", "resign"
    probability: float = 0.0  # the chosen move's renormalised probability (0 for rule passes)


@dataclass
class PlaySettings:
    sample: bool = False
    pass_threshold: float = DEFAULT_PASS_THRESHOLD
    max_moves: int | None = None  # None: 2 * N * N
    resign_margin: float | None = None  # None: never resign
    seed: int = 0


def choose_move(probs: np.ndarray, board: Board, colour: int, *, moves_played: int, opponent_passed: bool,
                komi: float, settings: PlaySettings, rng: np.random.Generator, has_pass: bool,
                cleanup: bool = False) -> MoveChoice:
    """Apply the rules of the module docstring to the net's ``probs`` [N*N+1] for ``colour`` on ``board``."""
    n = board.size
    nn = n * n
    max_moves = settings.max_moves if settings.max_moves is not None else 2 * nn
    if settings.resign_margin is not None and moves_played >= nn // 2:
        score = scoring.area_score(board.stones, komi)
        mine = score if colour == BLACK else -score
        if mine < -settings.resign_margin:
            return MoveChoice("resign", "resign")
    if moves_played >= max_moves:
        return MoveChoice(nn, "move cap")
    legal = board.legal_moves(colour)
    cand = np.zeros(nn + 1, dtype=bool)
    cand[:nn] = legal[:nn] & ~own_eyes(board, colour)
    if not cand[:nn].any():
        return MoveChoice(nn, "no candidate")
    if opponent_passed and not cleanup:
        cand[:nn] &= dame_points(board)
        if not cand[:nn].any() or float(np.max(np.where(cand, probs, 0.0))) < settings.pass_threshold:
            return MoveChoice(nn, "opponent passed")
    cand[nn] = has_pass
    p = np.where(cand, probs, 0.0)
    total = p.sum()
    p = p / total if total > 0 else cand / cand.sum()
    order = np.argsort(-p, kind="stable")
    order = order[p[order] > 0] if (p > 0).any() else order
    if settings.sample:
        k = order[sample_index(p[order], moves_played, rng)]
        reason = "sampled"
    else:
        k = order[0]
        reason = "policy"
    k = int(k)
    if k == nn:
        return MoveChoice(nn, "net passes", float(p[nn]))
    return MoveChoice(k, reason, float(p[k]))


