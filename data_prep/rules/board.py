"""The Go rules engine: a board as one small int32 array, and numba kernels that play on it.

Board state ``B`` is ``int32[ROWS, N*N + 1]``: rows ``S, H, X, L, Z, M, T`` (colour, chain head, next stone of the
chain's ring, liberties, stones, scratch marks, move number) per point ``p < N*N``, scalars (ko point and colour,
size, moves, captures, mark stamp) in the last column; the layout is tabled in docs/positions.md ("Rules engine").
Every chain's liberty count is current after each move. ``nb`` is the ``(N*N, 4)`` neighbour table (-1 off board)
from :func:`neighbours`. Rules: simple ko; suicide is illegal unless ``allow_suicide``, which removes the suicided
chain; pass clears the ko. Positional superko is the replay kernel's job (:mod:`kifunet.data_prep.planes.replay`).
"""

from __future__ import annotations

import numpy as np
from .._jit import njit

from .. import coords
from ..game import BLACK, EMPTY, WHITE

S, H, X, L, Z, M, T = 0, 1, 2, 3, 4, 5, 6
ROWS = 7
KO_POINT, KO_COLOUR, SIZE, MOVES, CAPS_B, STAMP, CAPS_W = S, H, X, L, Z, M, T  # rows of the last column

# play() return codes (>= 0 is the number of stones captured)
OCCUPIED, SUICIDE, KO = -1, -2, -3
ILLEGAL_REASONS = {OCCUPIED: "occupied", SUICIDE: "suicide", KO: "ko"}


def neighbours(n: int) -> np.ndarray:
    nb = np.full((n * n, 4), -1, dtype=np.int32)
    for r in range(n):
        for c in range(n):
            p = r * n + c
            for k, (dr, dc) in enumerate(((-1, 0), (1, 0), (0, -1), (0, 1))):
                rr, cc = r + dr, c + dc
                if 0 <= rr < n and 0 <= cc < n:
                    nb[p, k] = rr * n + cc
    return nb


_NB_CACHE: dict[int, np.ndarray] = {}


def neighbours_cached(n: int) -> np.ndarray:
    if n not in _NB_CACHE:
        nb = neighbours(n)
        nb.flags.writeable = False
        _NB_CACHE[n] = nb
    return _NB_CACHE[n]


@njit(cache=True)
def new_board(n):
    nn = n * n
    B = np.zeros((ROWS, nn + 1), dtype=np.int32)
    B[H, :nn] = -1
    B[KO_POINT, nn] = -1
    B[SIZE, nn] = n
    return B


@njit(cache=True)
def _stamp(B):
    nn = B.shape[1] - 1
    B[STAMP, nn] += 1
    return B[STAMP, nn]


@njit(cache=True)
def count_liberties(B, nb, h):
    """Liberties of the chain whose head is ``h`` (counted from scratch)."""
    s = _stamp(B)
    cnt = 0
    q = h
    while True:
        for k in range(4):
            r = nb[q, k]
            if r >= 0 and B[S, r] == 0 and B[M, r] != s:
                B[M, r] = s
                cnt += 1
        q = B[X, q]
        if q == h:
            break
    return cnt


@njit(cache=True)
def two_liberties(B, nb, h):
    """The first two distinct liberties of chain ``h`` found walking it (-1 where there are fewer)."""
    l0 = -1
    q = h
    while True:
        for k in range(4):
            r = nb[q, k]
            if r >= 0 and B[S, r] == 0 and r != l0:
                if l0 < 0:
                    l0 = r
                else:
                    return l0, r
        q = B[X, q]
        if q == h:
            return l0, -1


@njit(cache=True)
def _remove_chain(B, nb, h):
    """Take chain ``h`` off the board; give a liberty to each distinct neighbouring chain per freed point."""
    size = B[Z, h]
    pts = np.empty(size, dtype=np.int32)
    q = h
    for i in range(size):
        pts[i] = q
        q = B[X, q]
    for i in range(size):
        q = pts[i]
        B[S, q] = 0
        B[H, q] = -1
        B[X, q] = 0
    heads = np.empty(4, dtype=np.int32)
    for i in range(size):
        q = pts[i]
        nh = 0
        for k in range(4):
            r = nb[q, k]
            if r >= 0 and B[S, r] != 0:
                hr = B[H, r]
                dup = False
                for j in range(nh):
                    if heads[j] == hr:
                        dup = True
                if not dup:
                    heads[nh] = hr
                    nh += 1
                    B[L, hr] += 1
    return size


@njit(cache=True)
def _merge(B, a, b):
    """Merge chain ``b`` into chain ``a`` (the larger keeps its head); return the surviving head."""
    if B[Z, a] < B[Z, b]:
        a, b = b, a
    q = b
    while True:
        B[H, q] = a
        q = B[X, q]
        if q == b:
            break
    t = B[X, a]
    B[X, a] = B[X, b]
    B[X, b] = t
    B[Z, a] += B[Z, b]
    return a


@njit(cache=True)
def is_suicide(B, nb, p, c):
    """Would ``c`` at empty ``p`` leave its chain with no liberty (after captures)?"""
    opp = 3 - c
    for k in range(4):
        r = nb[p, k]
        if r < 0:
            continue
        v = B[S, r]
        if v == 0:
            return False
        if v == c and B[L, B[H, r]] >= 2:
            return False
        if v == opp and B[L, B[H, r]] == 1:
            return False
    return True


@njit(cache=True, inline="always")
def _put4(a0, a1, a2, a3, i, v):
    """Four scalars used as a tiny array (no allocation): set slot ``i`` to ``v``."""
    if i == 0:
        return v, a1, a2, a3
    if i == 1:
        return a0, v, a2, a3
    if i == 2:
        return a0, a1, v, a3
    return a0, a1, a2, v


@njit(cache=True)
def libs_after(B, nb, p, c, cap):
    """(liberties capped at ``cap``, stones captured, stones in the new chain) if ``c`` plays empty ``p``; ko is
    not checked."""
    opp = 3 - c
    s = _stamp(B)
    B[M, p] = s
    libs = 0
    captured = 0
    size = 1
    c0 = c1 = c2 = c3 = -1  # heads of opp chains this move captures
    ncap = 0
    f0 = f1 = f2 = f3 = -1  # heads of own chains it joins
    nf = 0
    for k in range(4):
        r = nb[p, k]
        if r < 0:
            continue
        v = B[S, r]
        if v == 0:
            if B[M, r] != s:
                B[M, r] = s
                libs += 1
            continue
        h = B[H, r]
        if v == c:
            if h != f0 and h != f1 and h != f2:
                f0, f1, f2, f3 = _put4(f0, f1, f2, f3, nf, h)
                nf += 1
                size += B[Z, h]
        elif B[L, h] == 1 and h != c0 and h != c1 and h != c2:
            c0, c1, c2, c3 = _put4(c0, c1, c2, c3, ncap, h)
            ncap += 1
            captured += B[Z, h]
    if ncap > 0:  # captured stones next to p become liberties
        for k in range(4):
            r = nb[p, k]
            if r >= 0 and B[S, r] == opp and B[M, r] != s:
                h = B[H, r]
                if h == c0 or h == c1 or h == c2 or h == c3:
                    B[M, r] = s
                    libs += 1
    for i in range(nf):
        if libs >= cap:
            break
        h = f0 if i == 0 else (f1 if i == 1 else (f2 if i == 2 else f3))
        libs = _joined_liberties(B, nb, h, s, opp, cap, libs, ncap, c0, c1, c2, c3)
    return min(libs, cap), captured, size


@njit(cache=True, inline="always")
def _joined_liberties(B, nb, h, s, opp, cap, libs, ncap, c0, c1, c2, c3):
    """``libs`` plus the liberties of own chain ``h`` not yet marked with stamp ``s`` (marked now), the stones of
    the ``ncap`` captured ``opp`` chains ``c0``..``c3`` counting as liberties; stops once ``cap`` is reached."""
    q = h
    while True:
        for k in range(4):
            r = nb[q, k]
            if r < 0 or B[M, r] == s:
                continue
            v = B[S, r]
            if v == 0:
                B[M, r] = s
                libs += 1
            elif v == opp and ncap > 0:
                hr = B[H, r]
                if hr == c0 or hr == c1 or hr == c2 or hr == c3:
                    B[M, r] = s
                    libs += 1
        q = B[X, q]
        if q == h or libs >= cap:
            return libs


@njit(cache=True)
def play(B, nb, p, c, allow_suicide):
    """Play colour ``c`` at flat ``p`` (``N*N`` = pass): stones captured, or a negative code (``OCCUPIED``,
    ``SUICIDE``, ``KO``) with the board unchanged."""
    nn = B.shape[1] - 1
    if p == nn:
        B[KO_POINT, nn] = -1
        B[MOVES, nn] += 1
        return 0
    if B[S, p] != 0:
        return OCCUPIED
    if p == B[KO_POINT, nn] and c == B[KO_COLOUR, nn]:
        return KO
    suicide = is_suicide(B, nb, p, c)
    if suicide and not allow_suicide:
        return SUICIDE
    opp = 3 - c
    B[MOVES, nn] += 1
    B[S, p] = c
    B[H, p] = p
    B[X, p] = p
    B[Z, p] = 1
    B[T, p] = B[MOVES, nn]
    hp = p
    for k in range(4):
        r = nb[p, k]
        if r >= 0 and B[S, r] == c and B[H, r] != hp:
            hp = _merge(B, hp, B[H, r])
    captured = 0
    cap_point = -1
    seen = np.empty(4, dtype=np.int32)
    ns = 0
    for k in range(4):
        r = nb[p, k]
        if r >= 0 and B[S, r] == opp:
            h = B[H, r]
            dup = False
            for j in range(ns):
                if seen[j] == h:
                    dup = True
            if dup:
                continue
            seen[ns] = h
            ns += 1
            B[L, h] -= 1
            if B[L, h] <= 0:
                if B[Z, h] == 1:
                    cap_point = h
                captured += _remove_chain(B, nb, h)
    hp = B[H, p]
    B[L, hp] = count_liberties(B, nb, hp)
    B[KO_POINT, nn] = -1
    if B[L, hp] == 0:  # allowed suicide: the chain dies
        lost = _remove_chain(B, nb, hp)
        B[CAPS_B if opp == 1 else CAPS_W, nn] += lost
        return 0
    B[CAPS_B if c == 1 else CAPS_W, nn] += captured
    if captured == 1 and B[Z, hp] == 1 and B[L, hp] == 1:
        B[KO_POINT, nn] = cap_point
        B[KO_COLOUR, nn] = opp
    return captured


@njit(cache=True)
def set_point(B, p, c):
    """Setup (AB/AW/AE): put colour ``c`` (0 clears) at ``p`` without rules. Call :func:`rebuild` after."""
    B[S, p] = c
    B[T, p] = -1000


@njit(cache=True)
def rebuild(B, nb):
    """Recompute chains and liberties from the stones row (after setup). Clears the ko."""
    nn = B.shape[1] - 1
    B[H, :nn] = -1
    stack = np.empty(nn, dtype=np.int32)
    for p in range(nn):
        c = B[S, p]
        if c == 0 or B[H, p] >= 0:
            continue
        B[H, p] = p
        B[X, p] = p
        B[Z, p] = 1
        top = 0
        stack[0] = p
        top = 1
        while top > 0:
            top -= 1
            q = stack[top]
            for k in range(4):
                r = nb[q, k]
                if r >= 0 and B[S, r] == c and B[H, r] < 0:
                    B[H, r] = p
                    B[X, r] = B[X, p]
                    B[X, p] = r
                    B[Z, p] += 1
                    stack[top] = r
                    top += 1
        B[L, p] = count_liberties(B, nb, p)
    for p in range(nn):
        if B[S, p] == 0:
            B[X, p] = 0
    B[KO_POINT, nn] = -1


def from_stones(stones: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The board array ``B`` and neighbour table of a position (int8 [N, N] of EMPTY/BLACK/WHITE), its chains
    and liberties rebuilt (every stone marked as set up; no ko)."""
    n = stones.shape[0]
    nb = neighbours_cached(n)
    B = new_board(n)
    flat = stones.reshape(-1)
    B[S, :n * n] = flat
    B[T, :n * n] = np.where(flat != 0, -1000, 0)  # as set_point marks setup stones
    rebuild(B, nb)
    return B, nb


def chains(B: np.ndarray) -> dict[int, list[int]]:
    """Every chain of ``B``: its head (its smallest point after :func:`rebuild`) -> its points, ascending; the
    chains in the order of their smallest point."""
    nn = B.shape[1] - 1
    heads = B[H, :nn]
    out: dict[int, list[int]] = {}
    for p in np.nonzero(B[S, :nn])[0]:
        out.setdefault(int(heads[p]), []).append(int(p))
    return out


class Board:
    """A convenient Python face on the kernels, for GTP, tests and fixtures (not for the hot loop)."""

    def __init__(self, size: int = 19, *, allow_suicide: bool = False):
        if not 2 <= size <= coords.MAX_SIZE:
            raise ValueError(f"board size {size} is outside 2..{coords.MAX_SIZE}")
        self.size = size
        self.nb = neighbours_cached(size)
        self.B = new_board(size)
        self.allow_suicide = allow_suicide

    # --- state -------------------------------------------------------------------------------------------
    @property
    def stones(self) -> np.ndarray:
        """(N, N) int8 colours, rows from the top."""
        return self.B[S, :-1].reshape(self.size, self.size).astype(np.int8)

    @property
    def ko(self) -> int | None:
        k = int(self.B[KO_POINT, -1])
        return None if k < 0 else k

    def copy(self) -> "Board":
        b = Board.__new__(Board)
        b.size, b.nb, b.allow_suicide = self.size, self.nb, self.allow_suicide
        b.B = self.B.copy()
        return b

    def liberties(self, p: int) -> int:
        """Liberties of the chain at flat ``p`` (0 for an empty point)."""
        if self.B[S, p] == EMPTY:
            return 0
        return int(self.B[L, self.B[H, p]])

    def chain(self, p: int) -> list[int]:
        if self.B[S, p] == EMPTY:
            return []
        h = int(self.B[H, p])
        out, q = [], h
        while True:
            out.append(q)
            q = int(self.B[X, q])
            if q == h:
                return sorted(out)

    def captures(self, colour: int) -> int:
        return int(self.B[CAPS_B if colour == BLACK else CAPS_W, -1])

    # --- moves -------------------------------------------------------------------------------------------
    def play(self, p: int, colour: int) -> int:
        """Play and return stones captured; raise ValueError naming the reason on an illegal move."""
        code = play(self.B, self.nb, p, colour, self.allow_suicide)
        if code < 0:
            raise ValueError(f"illegal move {coords.to_gtp(coords.from_flat(p, self.size), self.size)}: "
                             f"{ILLEGAL_REASONS[code]}")
        return code

    def is_legal(self, p: int, colour: int) -> bool:
        nn = self.size * self.size
        if p == nn:
            return True
        if self.B[S, p] != EMPTY:
            return False
        if p == self.B[KO_POINT, nn] and colour == self.B[KO_COLOUR, nn]:
            return False
        return self.allow_suicide or not is_suicide(self.B, self.nb, p, colour)

    def legal_moves(self, colour: int) -> np.ndarray:
        """Boolean [N*N + 1] mask of legal moves for ``colour`` (pass always legal)."""
        nn = self.size * self.size
        return np.array([self.is_legal(p, colour) for p in range(nn + 1)], dtype=bool)

    def setup(self, points, colour: int) -> None:
        for p in points:
            set_point(self.B, p, colour)
        rebuild(self.B, self.nb)

    # --- ASCII -------------------------------------------------------------------------------------------
    @classmethod
    def from_ascii(cls, text: str, **kw) -> "Board":
        """Board from rows of ``X`` (black), ``O`` (white), ``.`` (empty); spaces ignored; first row on top."""
        rows = [ln.replace(" ", "") for ln in text.strip().splitlines() if ln.strip()]
        n = len(rows)
        if any(len(r) != n for r in rows):
            raise ValueError("ASCII board must be square")
        b = cls(n, **kw)
        chars = {".": EMPTY, "X": BLACK, "O": WHITE}
        for r, row in enumerate(rows):
            for c, ch in enumerate(row):
                set_point(b.B, r * n + c, chars[ch])
        rebuild(b.B, b.nb)
        return b

    def to_ascii(self) -> str:
        chars = {EMPTY: ".", BLACK: "X", WHITE: "O"}
        st = self.stones
        return "\n".join("".join(chars[int(v)] for v in row) for row in st)

    def __str__(self) -> str:
        return self.to_ascii()
