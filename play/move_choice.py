"""How the GTP engine chooses a move from the net's probabilities: candidates, arg-max or GoNN sampling, when to
pass and when to resign (:func:`choose_move`, :class:`PlaySettings`). The rules are written here and nowhere else.

1. Candidates: legal points that do not fill the mover's own eye (:func:`kifunet.data_prep.rules.analysis.is_eye`:
   all neighbours own stones, at most one opponent diagonal in the centre and none on the edge), plus pass
   when the net has a pass output. Their probabilities are renormalised to sum to 1.
2. Arg-max, or with ``sample=True`` GoNN's move-number-dependent sampling: with ``m`` moves played, draw
   ``r ~ Beta(1, 1 + sqrt(max(0, m - 20)))`` and take the first candidate, in decreasing probability, at which
   the cumulative probability exceeds ``r``. For the first 20 moves ``r`` is uniform, which is exact
   sampling from the policy; afterwards ``r`` shrinks (mean 1/(2+sqrt(m-20))) towards the top move.
3. The end of the game rests on the dead-stone estimate (:func:`kifunet.data_prep.rules.life_death.estimate` of the
   position, the mover to play, its ``"playouts"`` method with ``playouts`` playouts (default 64), seed
   ``seed + m``; the caller may pass one in as ``estimate``), computed only when a rule below needs it (after
   an opponent's pass, in cleanup, from move ``end_from`` on, and before any pass; never otherwise). A point
   is *settled* when the size of its ownership is at least ``settled`` (default 0.8): a move there (inside
   either side's territory, or on a dead stone's point) does not change the outcome; dame, seki liberties and
   contested points are *unsettled*. Pass rules, in order:

   a. ``m >= max_moves`` (default ``2*N*N``): pass ("move cap").
   b. No candidate: pass ("no candidate").
   c. Dead stones that must be removed. Under ``rules="tromp-taylor"`` (no removal by agreement: every stone
      on the board counts) after an opponent's pass, and in cleanup (``kgs-genmove_cleanup``: KGS's genmove
      that must not pass while dead opponent stones are on the board) whatever the opponent did, the
      candidates are the liberties of the opponent's dead chains while any are left: the engine captures them
      before it passes ("remove dead"). Before that, a chain of its own in atari that the estimate does not
      call dead is saved first (:func:`atari_rescues`: capture an opponent chain in atari next to it, or
      extend to two liberties or more; the net's favourite of those moves, "save chain"): removing stones that
      are dead anyway must not cost a live chain. Once no dead stone is left, cleanup follows the other rules.
      Under ``rules="chinese"`` (the default: area scoring, dead stones removed by agreement, as GNU Go's
      ``final_score`` referees) nothing needs to be captured.
   d. After an opponent's pass the candidates shrink to the unsettled points that are not liberties of stones
      in seki (playing one would break the seki); the engine passes if none is left or if the net's
      probability of the best one (softmax over all points, not renormalised: a net unsure of every move
      passes) is below ``pass_threshold`` (default 0.05) ("opponent passed").
   e. From move ``end_from`` (default ``N*N/2``) on, once at most ``end_unsettled`` (default N) empty points
      are unsettled, the same shrinking applies without an opponent's pass: the engine plays only unsettled
      points and passes ("settled") when none is left, or when the net's best among them is below
      ``pass_threshold`` while the move the net would have played without the rule lies in settled territory
      (every move the net wants changes nothing).
   f. The chosen candidate is pass (nets with a pass output): "net passes".
   g. Before any pass of rules d-f, and in rule c after saving its own chains and before removing dead stones:
      while a sealed group has one eye space of a killable shape with its vital point empty
      (:func:`kifunet.data_prep.rules.eye_space.killable_eyes`; the walls not dead by the estimate), the engine plays
      the vital point ("vital point"): to live when the group is its own, to kill when it is the opponent's.
4. Resign (``resign=True``, the default; the match runner turns it off unless asked): from move ``N*N/2`` on
   (``resign_from`` when set), resign when the estimate is confident (at least ``resign_confidence``, default
   0.8, of the board's points have a playout ownership, :attr:`Estimate.raw`, of size ``settled`` or more)
   and the expected score for the mover (the sum of that ownership minus komi, seen from the mover) is worse
   than ``-resign_margin`` points (default ``N*N/10``, at least 5: 36.1 at 19x19, 8.1 at 9x9). A game lost
   far beyond what the open points could change is resigned without that confidence: when, even if the mover
   won every point whose :attr:`Estimate.ownership` (the territory rule applied: dead stones inside a
   territory are settled there) is below ``settled`` in size, the settled points would still leave it behind
   (:func:`best_case` below 0).

Why each rule exists, its cost and the measurements: ``docs/playing.md`` (The end of a game).
"""

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
    dead = (est.dead() & (est.stones == 3 - colour)).reshape(-1)
    out = np.zeros(board.size * board.size, dtype=bool)
    if dead.any():
        empty = board.B[0, :-1] == EMPTY
        for p in np.nonzero(dead)[0]:
            for q in board.nb[p]:
                if q >= 0 and empty[q]:
                    out[q] = True
    return out


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
    seki = est.seki().reshape(-1)
    out = np.zeros(board.size * board.size, dtype=bool)
    if seki.any():
        empty = board.B[0, :-1] == EMPTY
        for p in np.nonzero(seki)[0]:
            for q in board.nb[p]:
                if q >= 0 and empty[q]:
                    out[q] = True
    return out


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
    """Apply the rules of the module docstring to the net's ``probs`` [N*N+1] for ``colour`` on ``board``.

    ``estimate``: a dead-stone estimate of this position already made (else made here when a rule needs it)."""
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
