"""How the GTP engine chooses a move from the net's probabilities: candidates, arg-max or GoNN sampling, when
to pass and when to resign (:func:`choose_move`, :class:`PlaySettings`). The rules (numbered as the code's
comments cite them) are in docs/playing.md, The rules of the end of a game."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kifunet.data_prep.rules.analysis import is_eye
from kifunet.data_prep.rules.board import Board, libs_after
from kifunet.data_prep.game import BLACK, EMPTY

from kifunet.data_prep.rules import eye_space, life_death

DEFAULT_PASS_THRESHOLD = 0.05
DEFAULT_SETTLED = 0.8
DEFAULT_PLAYOUTS = 64
RULES = ("chinese", "tromp-taylor")


def own_eyes(board: Board, colour: int) -> np.ndarray:
    """bool [N*N]: empty points that are ``colour``'s own eyes (see :func:`is_eye`)."""
    n = board.size
    st = board.B[0, :-1]
    out = np.zeros(n * n, dtype=bool)
    for p in np.nonzero(st == EMPTY)[0]:
        out[p] = is_eye(board.B, board.nb, n, int(p), colour)
    return out


def dead_stone_liberties(board: Board, est: life_death.Estimate, colour: int) -> np.ndarray:
    """bool [N*N]: empty points next to dead stones of ``colour``'s opponent (where capturing them starts)."""
    return _empty_neighbours(board, (est.dead() & (est.stones == 3 - colour)).reshape(-1))


def atari_rescues(board: Board, est: life_death.Estimate, colour: int) -> np.ndarray:
    """bool [N*N]: legal moves that take one of ``colour``'s chains out of atari (one liberty, not dead by the
    estimate): capturing an opponent chain in atari next to it, or playing its liberty when the chain then has
    two liberties or more."""
    n = board.size
    st = board.B[0, :-1]
    dead = est.dead().reshape(-1)
    out = np.zeros(n * n, dtype=bool)
    seen: set[int] = set()
    for p in np.nonzero((st == colour) & ~dead)[0]:
        if int(p) in seen or board.liberties(int(p)) != 1:
            continue
        chain = board.chain(int(p))
        seen.update(chain)
        for q in {int(r) for c in chain for r in board.nb[c] if r >= 0}:
            if st[q] == EMPTY:
                libs, captured, _ = libs_after(board.B, board.nb, q, colour, 2)
                out[q] |= (libs >= 2 or captured > 0) and board.is_legal(q, colour)
            elif st[q] == 3 - colour and board.liberties(q) == 1:
                for r in board.chain(q):
                    for t in board.nb[r]:
                        if t >= 0 and st[t] == EMPTY and board.is_legal(int(t), colour):
                            out[t] = True
    return out


def vital_move(board: Board, est: life_death.Estimate, colour: int) -> int | None:
    """The vital point of a killable eye space (:func:`kifunet.data_prep.rules.eye_space.killable_eyes`, walls not dead by
    the estimate) that ``colour`` may play: its own group's to live, the opponent's to kill; ``None`` if none."""
    dead = est.dead().reshape(-1)
    stones = board.stones
    flat = stones.reshape(-1)
    for k in eye_space.killable_eyes(stones, est.dead()):
        if any(flat[q] == 3 - k.colour and dead[q] for q in k.outside(board.nb)):
            continue
        if board.is_legal(k.vital, colour):
            return k.vital
    return None


def seki_liberties(board: Board, est: life_death.Estimate) -> np.ndarray:
    """bool [N*N]: empty points next to stones in seki (playing there would break the seki)."""
    return _empty_neighbours(board, est.seki().reshape(-1))


def _empty_neighbours(board: Board, points: np.ndarray) -> np.ndarray:
    """bool [N*N]: the empty points next to any of ``points`` (bool [N*N])."""
    out = np.zeros(board.size * board.size, dtype=bool)
    if points.any():
        empty = board.B[0, :-1] == EMPTY
        for p in np.nonzero(points)[0]:
            for q in board.nb[p]:
                if q >= 0 and empty[q]:
                    out[q] = True
    return out


def sample_index(sorted_probs: np.ndarray, moves_played: int, rng: np.random.Generator) -> int:
    """GoNN's draw: ``r ~ Beta(1, 1 + sqrt(max(0, m - 20)))``, the index of the first candidate (sorted by
    decreasing probability) whose cumulative probability exceeds ``r``."""
    beta = 1.0 + math.sqrt(max(0, moves_played - 20))
    r = rng.beta(1.0, beta)
    cum = np.cumsum(sorted_probs)
    i = int(np.searchsorted(cum, r, side="right"))
    return min(i, len(sorted_probs) - 1)


@dataclass
class MoveChoice:
    move: int | str  # flat index (N*N = pass) or "resign"
    # why: "policy", "sampled", "no candidate", "net passes", "move cap", "opponent passed", "settled",
    # "save chain", "vital point", "remove dead", "resign"
    reason: str
    probability: float = 0.0  # the chosen move's renormalised probability (0 for rule passes)


@dataclass
class PlaySettings:
    sample: bool = False
    pass_threshold: float = DEFAULT_PASS_THRESHOLD
    max_moves: int | None = None  # None: 2 * N * N
    resign: bool = True  # resign clearly lost games (rule 4)
    resign_margin: float | None = None  # points behind on the estimate; None: N * N / 10
    resign_from: int | None = None  # None: N * N // 2 moves
    resign_confidence: float = 0.8  # share of settled points the estimate needs before resigning
    seed: int = 0
    rules: str = "chinese"  # or "tromp-taylor": capture dead stones before passing (rule 3c)
    settled: float = DEFAULT_SETTLED  # ownership size from which a point is settled
    end_from: int | None = None  # rule 3e from this move; None: N * N // 2
    end_unsettled: int | None = None  # rule 3e once at most this many empty points are unsettled; None: N
    playouts: int = DEFAULT_PLAYOUTS  # playouts of the estimate behind rules 3 and 4

    def __post_init__(self):
        if self.rules not in RULES:
            raise ValueError(f"rules must be one of {', '.join(RULES)}, not {self.rules!r}")


def end_unsettled(settings: PlaySettings, n: int) -> int:
    """Rule 3e applies once at most this many empty points are unsettled."""
    return settings.end_unsettled if settings.end_unsettled is not None else n


def open_points(board: Board, est: life_death.Estimate, settings: PlaySettings) -> int:
    """Empty points that the estimate leaves unsettled (seki liberties excluded)."""
    empty = board.B[0, :-1] == EMPTY
    return int(np.count_nonzero(empty & est.unsettled(settings.settled).reshape(-1) & ~seki_liberties(board, est)))


def resign_margin(settings: PlaySettings, n: int) -> float:
    """The resign threshold in points (rule 4)."""
    return settings.resign_margin if settings.resign_margin is not None else max(5.0, n * n / 10)


def best_case(est: life_death.Estimate, colour: int, komi: float, settled: float) -> float:
    """``colour``'s score (its points minus the opponent's, komi counted) if it won every point that the
    estimate's :attr:`~kifunet.data_prep.rules.life_death.Estimate.ownership` leaves unsettled (below ``settled`` in size)
    and the settled points went as the estimate says."""
    own = est.ownership * (1.0 if colour == BLACK else -1.0)
    firm = np.abs(own) >= settled
    return float(np.sign(own[firm]).sum()) + float(np.count_nonzero(~firm)) + (-komi if colour == BLACK else komi)


def should_resign(est: life_death.Estimate, colour: int, komi: float, settings: PlaySettings) -> bool:
    """Rule 4: the expected score is worse than the margin, and the estimate is confident or the unsettled
    points could not change the winner (:func:`best_case` below 0)."""
    own = est.raw if est.raw is not None else est.ownership
    expected = float(own.sum()) - komi
    mine = expected if colour == BLACK else -expected
    if mine >= -resign_margin(settings, est.stones.shape[0]):
        return False
    confident = float(np.mean(np.abs(own) >= settings.settled)) >= settings.resign_confidence
    return confident or best_case(est, colour, komi, settings.settled) < 0


def choose_move(probs: np.ndarray, board: Board, colour: int, *, moves_played: int, opponent_passed: bool,
                komi: float, settings: PlaySettings, rng: np.random.Generator, has_pass: bool,
                cleanup: bool = False, estimate: life_death.Estimate | None = None) -> MoveChoice:
    """Apply the rules to the net's ``probs`` [N*N+1] for ``colour`` on ``board``. ``estimate``: a dead-stone
    estimate of this position already made (else made here when a rule needs it)."""
    n = board.size
    nn = n * n
    max_moves = settings.max_moves if settings.max_moves is not None else 2 * nn
    est = estimate

    def get_estimate() -> life_death.Estimate:
        nonlocal est
        if est is None:
            est = life_death.estimate(board.stones, colour, playouts=settings.playouts,
                                      seed=settings.seed + moves_played, method="playouts")
        return est

    def passing(reason: str, probability: float = 0.0) -> MoveChoice:  # rule 3g: never pass over a vital point
        vital = vital_move(board, get_estimate(), colour)
        if vital is not None:
            return MoveChoice(vital, "vital point", float(probs[vital]))
        return MoveChoice(nn, reason, probability)

    resign_from = settings.resign_from if settings.resign_from is not None else nn // 2
    if settings.resign and moves_played >= resign_from and should_resign(get_estimate(), colour, komi, settings):
        return MoveChoice("resign", "resign")
    if moves_played >= max_moves:
        return MoveChoice(nn, "move cap")
    legal = board.legal_moves(colour)
    cand = np.zeros(nn + 1, dtype=bool)
    cand[:nn] = legal[:nn] & ~own_eyes(board, colour)
    if not cand[:nn].any():
        return MoveChoice(nn, "no candidate")
    end_from = settings.end_from if settings.end_from is not None else nn // 2
    if cleanup or opponent_passed or moves_played >= end_from:
        e = get_estimate()
        if cleanup or (opponent_passed and settings.rules == "tromp-taylor"):  # rule 3c
            choice = _cleanup_move(probs, board, e, colour, cand[:nn])
            if choice is not None:
                return choice
        useful = cand[:nn] & e.unsettled(settings.settled).reshape(-1) & ~seki_liberties(board, e)
        best = float(np.max(np.where(useful, probs[:nn], 0.0)))
        if opponent_passed:  # rule 3d
            if not useful.any() or best < settings.pass_threshold:
                return passing("opponent passed")
            cand[:nn] = useful
        elif moves_played >= end_from and open_points(board, e, settings) <= end_unsettled(settings, n):  # 3e
            top = int(np.argmax(np.where(cand[:nn], probs[:nn], -1.0)))  # the net's choice without the rule
            if not useful.any() or (best < settings.pass_threshold and not useful[top]):
                return passing("settled")
            cand[:nn] = useful
    cand[nn] = has_pass
    k, reason, p = _pick(probs, cand, settings, moves_played, rng)
    if k == nn:
        return passing("net passes", p)
    return MoveChoice(k, reason, p)


def _cleanup_move(probs, board: Board, e: life_death.Estimate, colour: int, cand: np.ndarray) -> MoveChoice | None:
    """Rule 3c among the candidate points ``cand`` [N*N]: save a chain in atari, else the vital point, else
    take a liberty of dead stones; None when none applies."""
    save = cand & atari_rescues(board, e, colour)
    if save.any():
        k = int(np.argmax(np.where(save, probs[:cand.size], -1.0)))
        return MoveChoice(k, "save chain", float(probs[k]))
    vital = vital_move(board, e, colour)
    if vital is not None:
        return MoveChoice(vital, "vital point", float(probs[vital]))
    must = cand & dead_stone_liberties(board, e, colour)
    if must.any():
        k = int(np.argmax(np.where(must, probs[:cand.size], -1.0)))
        return MoveChoice(k, "remove dead", float(probs[k]))
    return None


def _pick(probs: np.ndarray, cand: np.ndarray, settings: PlaySettings, moves_played: int,
          rng: np.random.Generator) -> tuple[int, str, float]:
    """(move, reason, its probability renormalised over ``cand`` [N*N+1]): sampled (``settings.sample``) or the
    arg-max."""
    p = np.where(cand, probs, 0.0)
    total = p.sum()
    p = p / total if total > 0 else cand / cand.sum()
    order = np.argsort(-p, kind="stable")
    order = order[p[order] > 0] if (p > 0).any() else order
    if settings.sample:
        k = int(order[sample_index(p[order], moves_played, rng)])
        return k, "sampled", float(p[k])
    k = int(order[0])
    return k, "policy", float(p[k])
