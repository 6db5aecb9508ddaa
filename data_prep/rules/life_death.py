"""Life and death: which stones are dead or in seki, and the score without the dead ones.

:func:`estimate` of ``stones`` (int8 [N, N], N in 2..25) gives an :class:`Estimate` (ownership in [-1, 1], +1
black; a status per stone) by ``"playouts"``, ``"benson"`` or ``"combined"`` (default); the same position,
``to_move``, ``playouts`` and ``seed`` give the same estimate. The methods, the territory, seki and killable-eye
rules and the scoring: docs/playing.md (The rules of the end of a game)."""

from __future__ import annotations

import dataclasses

import numpy as np

from kifunet.data_prep._jit import njit
from kifunet.data_prep.rules.analysis import is_eye
from kifunet.data_prep.rules.board import (H, KO_COLOUR, KO_POINT, S, chains, from_stones, is_suicide,
                                           libs_after, neighbours_cached, play)
from kifunet.data_prep.game import BLACK, EMPTY, WHITE

from . import eye_space, scoring
from .eye_space import components

ALIVE, DEAD, SEKI = 1, 2, 3
METHODS = ("combined", "playouts", "benson")
DEFAULT_PLAYOUTS = 256
CONFIDENT = 0.4  # the territory rule needs walls and dead stones owned this clearly by the region's colour
CRITICAL = 0.5  # ownership of a killable group and its eye space: the side to move's, below any settled threshold
MIN_SIZE, MAX_SIZE = 2, 25


@dataclasses.dataclass(frozen=True)
class Estimate:
    """The verdict on one position: ``ownership`` float32 [N, N] in [-1, 1] (+1 black), ``status`` int8 [N, N]
    (0 on empty points, else :data:`ALIVE` / :data:`DEAD` / :data:`SEKI`), and the ``stones`` it is about."""

    ownership: np.ndarray
    status: np.ndarray
    stones: np.ndarray
    method: str = "combined"
    playouts: int = 0
    raw: np.ndarray | None = None  # float32 [N, N]: the playouts' mean ownership alone (None without playouts)

    def dead(self) -> np.ndarray:
        """bool [N, N]: dead stones."""
        return self.status == DEAD

    def seki(self) -> np.ndarray:
        """bool [N, N]: stones in seki."""
        return self.status == SEKI

    def alive(self) -> np.ndarray:
        """bool [N, N]: stones that are alive (not dead, not in seki)."""
        return self.status == ALIVE

    def final_stones(self) -> np.ndarray:
        """int8 [N, N]: the position with the dead stones taken off."""
        return scoring.remove_stones(self.stones, self.dead())

    def score(self, komi: float) -> float:
        """Area score with the dead stones removed, minus ``komi`` (positive: black ahead): on a finished board
        Tromp-Taylor's territory, on an open board the estimate's confident ownership."""
        return float(self.point_owner().sum()) - float(komi)

    def point_owner(self) -> np.ndarray:
        """float [N, N]: +1 / -1 / 0, whom each point counts for in :meth:`score`."""
        final = self.final_stones()
        n = final.shape[0]
        flat = final.reshape(-1)
        own = self.ownership.reshape(-1)
        nb = neighbours_cached(n)
        out = np.where(flat == BLACK, 1.0, np.where(flat == WHITE, -1.0, 0.0))
        for region in components(flat == EMPTY, nb):
            touches = {int(flat[q]) for p in region for q in nb[p] if q >= 0 and flat[q] != EMPTY}
            if len(touches) == 1:
                c = touches.pop()
                if len(region) <= n * n // 2 and stone_sign(c) * own[region].mean() > 0:  # territory
                    out[region] = stone_sign(c)
                    continue
            elif len(touches) == 2 and all(any(q >= 0 and flat[q] != EMPTY for q in nb[p]) for p in region):
                continue  # dame: every point next to a stone
            r = np.asarray(region)
            out[r] = np.where(np.abs(own[r]) >= CONFIDENT, np.sign(own[r]), 0.0)  # open: the estimate's owner
        return out.reshape(n, n)

    def unsettled(self, threshold: float) -> np.ndarray:
        """bool [N, N]: points whose ownership is below ``threshold`` in size (contested, dame, seki)."""
        return np.abs(self.ownership) < threshold


def check_to_move(to_move: int) -> None:
    """``ValueError`` unless ``to_move`` is BLACK or WHITE."""
    if to_move not in (BLACK, WHITE):
        raise ValueError(f"to_move must be BLACK (1) or WHITE (2), not {to_move}")


def check_stones(stones) -> np.ndarray:
    """``stones`` as a square int8 array of EMPTY/BLACK/WHITE with a side of 2 to 25, or ``ValueError``."""
    st = np.asarray(stones)
    if st.ndim != 2 or st.shape[0] != st.shape[1]:
        raise ValueError(f"stones must be a square [N, N] array, not shape {st.shape}")
    if not MIN_SIZE <= st.shape[0] <= MAX_SIZE:
        raise ValueError(f"board size {st.shape[0]} is outside {MIN_SIZE}..{MAX_SIZE}")
    if not np.isin(st, (EMPTY, BLACK, WHITE)).all():
        raise ValueError("stones must hold only EMPTY (0), BLACK (1) and WHITE (2)")
    return st.astype(np.int8)


# --- playouts -------------------------------------------------------------------------------------------------
@njit(cache=True)
def _playout_move_ok(B, nb, n, p, c):
    nn = B.shape[1] - 1
    if p == B[KO_POINT, nn] and c == B[KO_COLOUR, nn]:
        return False
    if is_eye(B, nb, n, p, c):
        return False
    if is_suicide(B, nb, p, c):
        return False
    libs, captured, size = libs_after(B, nb, p, c, 2)
    if libs <= 1 and size >= 2 and captured == 0:
        return False
    return True


@njit(cache=True)
def _run_playouts(B0, nb, n, to_move, count, seed, own):
    """Add each playout's area ownership (+1 black, -1 white, 0 neither) to ``own`` [N*N]; return moves played."""
    np.random.seed(seed)
    nn = n * n
    empties = np.empty(nn, dtype=np.int32)
    total_moves = 0
    for _ in range(count):
        B = B0.copy()
        c = to_move
        passes = 0
        moves = 0
        ne = _list_empties(B, nn, empties)  # empties[:ne]: the empty points (order shuffled by the tries)
        while passes < 2 and moves < 3 * nn:
            played = False
            k = ne  # untried points: empties[:k]
            while k > 0:
                i = np.random.randint(k)
                p = empties[i]
                k -= 1
                empties[i] = empties[k]
                empties[k] = p
                if _playout_move_ok(B, nb, n, p, c):
                    captured = play(B, nb, p, c, False)
                    played = True
                    ne -= 1
                    empties[k] = empties[ne]
                    if captured > 0:
                        ne = _list_empties(B, nn, empties)
                    break
            if played:
                passes = 0
            else:
                passes += 1
                B[KO_POINT, nn] = -1
            c = 3 - c
            moves += 1
        total_moves += moves
        _add_area(B, nb, nn, own)
    return total_moves


@njit(cache=True)
def _list_empties(B, nn, empties):
    """Write the empty points of ``B`` into ``empties`` in order; return how many."""
    ne = 0
    for q in range(nn):
        if B[S, q] == 0:
            empties[ne] = q
            ne += 1
    return ne


@njit(cache=True)
def _add_area(B, nb, nn, own):
    """Add the area ownership of ``B`` to ``own``: +1 black stone or black-only neighbours, -1 white's."""
    for p in range(nn):
        v = B[S, p]
        if v == 1:
            own[p] += 1.0
        elif v == 2:
            own[p] -= 1.0
        else:
            b = False
            w = False
            for k in range(4):
                r = nb[p, k]
                if r >= 0:
                    if B[S, r] == 1:
                        b = True
                    elif B[S, r] == 2:
                        w = True
            if b and not w:
                own[p] += 1.0
            elif w and not b:
                own[p] -= 1.0


def playout_ownership(stones: np.ndarray, to_move: int, playouts: int, seed: int = 0) -> np.ndarray:
    """float32 [N, N]: mean area ownership over ``playouts`` random playouts."""
    check_to_move(to_move)
    st = check_stones(stones)
    n = st.shape[0]
    B, nb = from_stones(st)
    own = np.zeros(n * n, dtype=np.float64)
    if playouts > 0:
        _run_playouts(B, nb, n, int(to_move), int(playouts), int(seed) % (2**32), own)
        own /= playouts
    return own.reshape(n, n).astype(np.float32)


# --- chains, regions, Benson ------------------------------------------------------------------------------------
def benson_alive(stones: np.ndarray, colour: int) -> np.ndarray:
    """bool [N, N]: ``colour``'s stones that are unconditionally alive (Benson's algorithm)."""
    st = check_stones(stones)
    n = st.shape[0]
    nn = n * n
    B, nb = from_stones(st)
    flat = B[S, :nn]
    heads = B[H, :nn]
    mine = {h: pts for h, pts in chains(B).items() if flat[h] == colour}
    regions = components(flat != colour, nb)
    # per region: the chains bordering it, and the chains it is vital to
    border: list[set[int]] = []
    vital: list[set[int]] = []
    for reg in regions:
        bs: set[int] = set()
        for p in reg:
            for q in nb[p]:
                if q >= 0 and flat[q] == colour:
                    bs.add(int(heads[q]))
        border.append(bs)
        empties = [p for p in reg if flat[p] == EMPTY]
        vs = set()
        for h in bs:
            if all(any(q >= 0 and flat[q] == colour and heads[q] == h for q in nb[p]) for p in empties):
                vs.add(h)
        vital.append(vs)
    live = set(mine)
    live_regions = set(range(len(regions)))
    while True:
        counts = {h: 0 for h in live}
        for r in live_regions:
            for h in vital[r]:
                if h in counts:
                    counts[h] += 1
        dropped = {h for h, k in counts.items() if k < 2}
        if not dropped:
            break
        live -= dropped
        live_regions = {r for r in live_regions if border[r] <= live}
    out = np.zeros(nn, dtype=bool)
    for h in live:
        out[mine[h]] = True
    return out.reshape(n, n)


def benson_verdict(stones: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alive, dead, owner): bool [N, N] unconditionally alive stones (Benson), the stones inside regions
    that such stones of the other colour enclose (every empty point touching them), and int8 [N, N] owner of
    those regions (EMPTY elsewhere)."""
    st = check_stones(stones)
    n = st.shape[0]
    nb = neighbours_cached(n)
    flat = st.reshape(-1)
    alive = np.zeros(n * n, dtype=bool)
    safe = {}
    for c in (BLACK, WHITE):
        safe[c] = benson_alive(st, c).reshape(-1)
        alive |= safe[c]
    dead = np.zeros(n * n, dtype=bool)
    owner = np.zeros(n * n, dtype=np.int8)
    for c in (BLACK, WHITE):
        if not safe[c].any():
            continue
        for comp in components(flat != c, nb):
            border = {int(q) for p in comp for q in nb[p] if q >= 0 and flat[q] == c}
            if not border or not all(safe[c][q] for q in border):
                continue
            if not all(any(q >= 0 and safe[c][q] for q in nb[p]) for p in comp if flat[p] == EMPTY):
                continue
            comp_arr = np.asarray(comp)
            dead[comp_arr[flat[comp_arr] == 3 - c]] = True
            owner[comp_arr] = c
    return alive.reshape(n, n), dead.reshape(n, n), owner.reshape(n, n)


def shared_points(stones: np.ndarray, dead: np.ndarray) -> np.ndarray:
    """bool [N, N]: empty points that touch non-dead chains of both colours and that neither colour can play
    without self-atari (liberties after the move at most 1, no capture) or illegally (the seki rule)."""
    st = check_stones(stones)
    n = st.shape[0]
    live = scoring.remove_stones(st, dead)
    B, nb = from_stones(live)
    flat = B[S, :n * n]
    out = np.zeros(n * n, dtype=bool)
    for p in np.nonzero(flat == EMPTY)[0]:
        p = int(p)
        cols = {int(flat[q]) for q in nb[p] if q >= 0}
        if BLACK not in cols or WHITE not in cols:
            continue
        ok = True
        for c in (BLACK, WHITE):
            if is_suicide(B, nb, p, c):
                continue
            libs, captured, _ = libs_after(B, nb, p, c, 2)
            if libs >= 2 or captured > 0:
                ok = False
                break
        out[p] = ok
    return out.reshape(n, n)


def stone_sign(colour: int) -> float:
    """+1.0 for BLACK, -1.0 for WHITE (the ownership scale)."""
    return 1.0 if colour == BLACK else -1.0


def _chain_masks(st: np.ndarray) -> list[np.ndarray]:
    n = st.shape[0]
    B, _ = from_stones(st)
    return [np.asarray(pts) for pts in chains(B).values()]


def _critical_groups(st: np.ndarray, to_move: int, dead: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(stones, eye space) flat index arrays of the groups whose fate the side to move decides
    (:func:`kifunet.data_prep.rules.eye_space.killable_eyes`) and whose walls are not ``dead``."""
    nb = neighbours_cached(st.shape[0])
    flat = st.reshape(-1)
    out = []
    for k in eye_space.killable_eyes(st, dead.reshape(st.shape)):
        if any(flat[q] == 3 - k.colour and dead[q] for q in k.outside(nb)):
            continue  # the walls die first: no kill
        out.append((np.asarray(k.stones), np.asarray(k.space)))
    return out


def _territory_rule(st: np.ndarray, dead: np.ndarray, own: np.ndarray, chain_own: np.ndarray) -> None:
    """The territory rule: an empty region of one colour after the removal of ``dead`` [N*N] (at most half the
    board, leaning that colour's way in ``own``) is its own in ``own`` [N*N] when its walls and the dead stones
    in it are owned at least :data:`CONFIDENT` by that colour (``chain_own``: each stone's chain's mean)."""
    n = st.shape[0]
    flat = st.reshape(-1)
    final = scoring.remove_stones(st, dead.reshape(n, n)).reshape(-1)
    area = scoring.area_owner(final.reshape(n, n)).reshape(-1)
    nb = neighbours_cached(n)
    for region in components(final == EMPTY, nb):
        c = area[region[0]]
        if c == EMPTY or len(region) > n * n // 2 or stone_sign(c) * own[region].mean() <= 0:
            continue
        stones_involved = [p for p in region if flat[p] != EMPTY]  # the dead stones taken off
        stones_involved += [int(q) for p in region for q in nb[p] if q >= 0 and final[q] != EMPTY]  # walls
        if all(stone_sign(c) * chain_own[p] >= CONFIDENT for p in stones_involved):
            own[region] = stone_sign(c)


def estimate(stones, to_move: int, *, playouts: int = DEFAULT_PLAYOUTS, seed: int = 0,
             method: str = "combined") -> Estimate:
    """Which stones of ``stones`` are dead or in seki, with ``to_move`` to play."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    if playouts < 0:
        raise ValueError(f"playouts must be >= 0, not {playouts}")
    check_to_move(to_move)
    st = check_stones(stones)
    raw = playout_ownership(st, to_move, playouts, seed) if method != "benson" else None
    return judge(st, to_move, raw, method=method, playouts=playouts)


def judge(stones, to_move: int, raw: np.ndarray | None, *, method: str = "combined", playouts: int = 0,
          verdict: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> Estimate:
    """:func:`estimate` from the playouts' mean ownership ``raw`` float [N, N] (:func:`playout_ownership`; None for
    ``benson``); ``playouts`` only labels the result. ``verdict``: :func:`benson_verdict` of ``stones`` when the
    caller has it (it depends on the stones alone)."""
    check_to_move(to_move)
    st = check_stones(stones)
    n = st.shape[0]
    flat = st.reshape(-1)
    sign = np.where(flat == BLACK, 1.0, np.where(flat == WHITE, -1.0, 0.0))
    dead = np.zeros(n * n, dtype=bool)
    chain_own = np.zeros(n * n, dtype=np.float64)  # each stone: its chain's mean playout ownership
    if method in ("playouts", "combined"):
        own = np.asarray(raw, dtype=np.float64).reshape(-1).copy()
        for pts in _chain_masks(st):
            chain_own[pts] = np.mean(own[pts])
            if np.mean(sign[pts] * own[pts]) < 0:
                dead[pts] = True
    else:
        own = np.zeros(n * n, dtype=np.float64)
    safe = np.zeros(n * n, dtype=bool)
    if method in ("benson", "combined"):
        alive_b, dead_b, owner_b = (a.reshape(-1) for a in (verdict or benson_verdict(st)))
        safe = alive_b
        dead = (dead & ~alive_b) | dead_b
        enclosed = owner_b != EMPTY
        own[enclosed] = np.where(owner_b[enclosed] == BLACK, 1.0, -1.0)
        own[alive_b] = sign[alive_b]
        if method == "benson":  # elsewhere: area ownership after the removal
            rest = ~enclosed & ~alive_b
            area = scoring.area_owner(scoring.remove_stones(st, dead.reshape(n, n))).reshape(-1)
            own[rest] = np.where(area[rest] == BLACK, 1.0, np.where(area[rest] == WHITE, -1.0, 0.0))
    critical = _critical_groups(st, to_move, dead)
    for stones, _space in critical:
        dead[stones] = st.reshape(-1)[stones[0]] != to_move  # the side to move plays the vital point
    if method != "benson":
        _territory_rule(st, dead, own, chain_own)
    shared = shared_points(st, dead.reshape(n, n)).reshape(-1)
    status = np.where(flat == EMPTY, 0, np.where(dead, DEAD, ALIVE)).astype(np.int8)
    if shared.any():
        nb = neighbours_cached(n)
        for pts in _chain_masks(st):
            if dead[pts[0]] or safe[pts[0]]:
                continue
            if any(q >= 0 and shared[q] for p in pts for q in nb[p]):
                status[pts] = SEKI
        own[shared] = 0.0
    for stones, space in critical:  # owned by the side to move, not settled
        own[np.concatenate([stones, space])] = stone_sign(to_move) * CRITICAL
    return Estimate(ownership=np.clip(own, -1, 1).reshape(n, n).astype(np.float32),
                    status=status.reshape(n, n), stones=st, method=method, playouts=int(playouts), raw=raw)
