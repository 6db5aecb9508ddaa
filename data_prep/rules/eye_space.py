"""Killable eye spaces: a sealed group whose only eye space is a nakade shape with an empty vital point (the
shapes and vital points: docs/playing.md, The rules of the end of a game). Whether the walls can be captured is
the caller's to check."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kifunet.data_prep._jit import njit
from kifunet.data_prep.game import EMPTY
from kifunet.data_prep.rules.board import chains as board_chains
from kifunet.data_prep.rules.board import from_stones, neighbours_cached

OUTER_ROOM = 3  # a sealed group's outer liberties lie in empty regions of at most this many points (dame)


@dataclass(frozen=True)
class KillableEye:
    """A group of ``colour`` living by one nakade-shaped eye space: its ``stones``, the ``space`` (empty
    points) and the ``vital`` point, all flat indices."""

    colour: int
    stones: tuple[int, ...]
    space: tuple[int, ...]
    vital: int

    def outside(self, nb: np.ndarray) -> set[int]:
        """Flat points next to the group's stones, outside it and outside its eye space (its walls and outer
        liberties)."""
        inside = set(self.stones) | set(self.space)
        return {int(q) for p in self.stones for q in nb[p] if q >= 0 and int(q) not in inside}


def sealed(k: KillableEye, flat: np.ndarray, nb: np.ndarray) -> bool:
    """Whether the group cannot reach more room: each empty region next to it outside its eye space holds at
    most :data:`OUTER_ROOM` points and touches no stone of its colour but the group's."""
    mine = set(k.stones)
    for region in components(flat == EMPTY, nb):
        if not set(region) & k.outside(nb):
            continue
        if len(region) > OUTER_ROOM:
            return False
        if any(q >= 0 and flat[q] == k.colour and int(q) not in mine for p in region for q in nb[p]):
            return False
    return True


def components(mask: np.ndarray, nb: np.ndarray) -> list[list[int]]:
    """Connected components (through neighbours) of the flat points where ``mask`` is true, in the order of their
    first point; each lists its points in depth-first order from that point."""
    order, ends = _components(np.ascontiguousarray(mask, dtype=np.bool_), nb)
    flat = order.tolist()
    out, start = [], 0
    for end in ends.tolist():
        out.append(flat[start:end])
        start = end
    return out


@njit(cache=True)
def _components(mask, nb):
    """(points of every component one after another, the end of each component in that array)."""
    n = mask.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    k = 0
    m = 0
    for start in range(n):
        if not mask[start] or seen[start]:
            continue
        seen[start] = True
        top = 0
        stack[top] = start
        top += 1
        while top > 0:
            top -= 1
            p = stack[top]
            order[k] = p
            k += 1
            for j in range(nb.shape[1]):
                q = nb[p, j]
                if q >= 0 and mask[q] and not seen[q]:
                    seen[q] = True
                    stack[top] = q
                    top += 1
        ends[m] = k
        m += 1
    return order[:k], ends[:m]


def vital_point(space: list[int], nb: np.ndarray) -> int | None:
    """The vital point of a nakade-shaped eye space, or ``None`` for any other shape."""
    cells = set(space)
    degree = {p: sum(1 for q in nb[p] if q >= 0 and int(q) in cells) for p in space}
    by_degree = {d: p for p, d in sorted(degree.items())}
    edges = sum(degree.values()) // 2
    k = len(space)
    if k == 3:
        return by_degree.get(2)
    if k == 4 and 3 in by_degree:
        return by_degree[3]
    if k == 5:
        if 4 in by_degree:
            return by_degree[4]
        if edges == 5 and 3 in by_degree:
            return by_degree[3]
    if k == 6 and edges == 6 and 4 in by_degree:
        return by_degree[4]
    return None


def killable_eyes(stones: np.ndarray, dead: np.ndarray | None = None) -> list[KillableEye]:
    """Every group of ``stones`` (int8 [N, N]) that has exactly one eye space, of a nakade shape and empty, and is
    sealed (:func:`sealed`: no room outside to make another eye), largest group first. ``dead`` (bool [N, N]):
    stones known to be dead; an eye space of a colour may hold dead stones of the other colour (it counts as
    an eye, never as the nakade shape)."""
    st = np.asarray(stones)
    n = st.shape[0]
    nb = neighbours_cached(n)
    flat = st.reshape(-1)
    gone = np.zeros(n * n, dtype=bool) if dead is None else np.asarray(dead, dtype=bool).reshape(-1)
    chains = list(board_chains(from_stones(st.astype(np.int8))[0]).values())  # the rules engine's
    out = []
    for colour in (1, 2):
        view = np.where(gone & (flat == 3 - colour), EMPTY, flat)
        out += _killable_of(colour, [c for c in chains if flat[c[0]] == colour], view, flat, nb)
    return sorted(out, key=lambda k: -(len(k.stones) + len(k.space)))


def _killable_of(colour: int, chains: list[list[int]], view: np.ndarray, flat: np.ndarray,
                 nb: np.ndarray) -> list[KillableEye]:
    """:func:`killable_eyes` for the groups of ``colour`` (its ``chains``, ordered by their first point), eye
    spaces read on ``view`` (the board with the other colour's dead stones taken off)."""
    chain_of = np.full(flat.shape[0], -1)
    for i, comp in enumerate(chains):
        chain_of[comp] = i
    parent = list(range(len(chains)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    spaces = []  # (chains bordering it, points)
    for region in components(view == EMPTY, nb):
        border = {int(view[q]) for p in region for q in nb[p] if q >= 0 and view[q] != EMPTY}
        if border != {colour}:
            continue
        around = sorted({int(chain_of[q]) for p in region for q in nb[p] if q >= 0 and view[q] == colour})
        for c in around[1:]:
            parent[find(c)] = find(around[0])
        spaces.append((around, region))
    per_group: dict[int, list[list[int]]] = {}
    for around, region in spaces:
        per_group.setdefault(find(around[0]), []).append(region)
    out = []
    for g, regions in per_group.items():
        if len(regions) != 1 or (flat[regions[0]] != EMPTY).any():
            continue
        vital = vital_point(regions[0], nb)
        if vital is None:
            continue
        group = sorted(p for i, pts in enumerate(chains) if find(i) == g for p in pts)
        k = KillableEye(colour=colour, stones=tuple(group), space=tuple(sorted(regions[0])), vital=int(vital))
        if sealed(k, flat, nb):
            out.append(k)
    return out
