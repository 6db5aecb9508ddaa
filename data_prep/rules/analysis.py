"""Board analysis: for every position of a game, the per-point facts that feature planes are made from.

:func:`replay_game` (compiled) plays a game's events in one call and fills :class:`GameAnalysis`'s arrays,
``[T, N*N]``, one row per ``MOVE`` event: the board *before* the move, "pla" to move; ``flags`` chooses which are
filled. ``replay.analyse_game`` makes one, :mod:`kifunet.data_prep.planes.features` reads it; nothing here reads
records or raises errors. The arrays, dtypes and sentinels: docs/positions.md ("Rules engine").
"""

from __future__ import annotations

import dataclasses

import numpy as np
from .._jit import njit

from .board import H, KO_COLOUR, KO_POINT, L, S, T, X, libs_after, new_board, play, rebuild, set_point, two_liberties
from ..game import MOVE
from .ladders import LADDER_BUDGET, ladder_attack_works, ladder_captured, ladder_escape_works

LIBS_CAP = 8  # liberties-after-move are counted up to libs_cap <= LIBS_CAP (a feature set asks for what it uses)

F_LIBS_AFTER_PLA = 1
F_LIBS_AFTER_OPP = 2
F_LADDER_PLA = 4
F_LADDER_CHAINS = 8
F_EYE = 16

ARRAYS = {  # name -> (dtype, flag that fills it; 0 = always)
    "stones": (np.int8, 0),
    "libs": (np.int8, 0),
    "placed": (np.int16, 0),
    "legal": (np.uint8, F_LIBS_AFTER_PLA),
    "libs_after_pla": (np.int8, F_LIBS_AFTER_PLA),
    "capture_pla": (np.int16, F_LIBS_AFTER_PLA),
    "self_atari_pla": (np.int16, F_LIBS_AFTER_PLA),
    "libs_after_opp": (np.int8, F_LIBS_AFTER_OPP),
    "eye_pla": (np.uint8, F_EYE),
    "ladder_capture": (np.uint8, F_LADDER_PLA),
    "ladder_escape": (np.uint8, F_LADDER_PLA),
    "ladder_atari_dead": (np.uint8, F_LADDER_CHAINS),
    "ladder_2lib_dead": (np.uint8, F_LADDER_CHAINS),
    "ladder_2lib_move": (np.uint8, F_LADDER_CHAINS),
}

# status codes of replay_game
OK, ILLEGAL, SUPERKO = 0, 1, 2


@dataclasses.dataclass
class GameAnalysis:
    """Per-position arrays of one game: ``[T]`` columns and the ``[T, N*N]`` :data:`ARRAYS` (read as attributes)."""

    size: int
    to_move: np.ndarray  # int8 [T]
    target: np.ndarray  # int16 [T]
    move_number: np.ndarray  # int16 [T], 1-based
    ko: np.ndarray  # int16 [T]: flat ko point banned for the mover, -1 none
    arrays: dict[str, np.ndarray]

    def __getattr__(self, name):
        try:
            return self.__dict__["arrays"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __len__(self) -> int:
        return int(self.to_move.shape[0])


@njit(cache=True)
def is_eye(B, nb, n, p, c):
    for k in range(4):
        r = nb[p, k]
        if r >= 0 and B[S, r] != c:
            return False
    row, col = p // n, p % n
    opp = 3 - c
    bad = 0
    edge = False
    for dr in (-1, 1):
        for dc in (-1, 1):
            rr, cc = row + dr, col + dc
            if rr < 0 or rr >= n or cc < 0 or cc >= n:
                edge = True
            elif B[S, rr * n + cc] == opp:
                bad += 1
    return bad == 0 if edge else bad <= 1


@njit(cache=True)
def _analyse(B, nb, n, t, pla, flags, libs_cap, allow_suicide, legal, libs_after_pla, capture_pla, self_atari_pla,
             libs_after_opp, eye_pla, ladder_capture, ladder_escape, ladder_atari_dead, ladder_2lib_dead,
             ladder_2lib_move, boards, meta):
    nn = n * n
    opp = 3 - pla
    ko = B[KO_POINT, nn] if B[KO_COLOUR, nn] == pla else -1
    for p in range(nn):
        if B[S, p] != 0:
            if flags & 1:
                capture_pla[t, p] = -1
            continue
        if flags & 1:
            la, cap, size = libs_after(B, nb, p, pla, libs_cap)
            libs_after_pla[t, p] = la
            ok = (la > 0 or allow_suicide) and p != ko
            legal[t, p] = ok
            capture_pla[t, p] = cap if ok else -1
            self_atari_pla[t, p] = size if (ok and la == 1) else 0
        if flags & 2:
            la, cap, size = libs_after(B, nb, p, opp, libs_cap)
            libs_after_opp[t, p] = la
        if flags & 16:
            eye_pla[t, p] = is_eye(B, nb, n, p, pla)
    if flags & (4 | 8):
        done = np.zeros(nn, dtype=np.bool_)  # chain heads already handled at this position
        for p in range(nn):
            c = B[S, p]
            if c == 0:
                continue
            h = B[H, p]
            if done[h]:
                continue
            done[h] = True
            nl = B[L, h]
            if nl == 1:
                if flags & 8 and ladder_captured(B, nb, h, LADDER_BUDGET, boards, meta):
                    _mark_chain(B, h, ladder_atari_dead[t])
                if (flags & 4) and c == pla:
                    lib = two_liberties(B, nb, h)[0]
                    if lib >= 0 and legal[t, lib] and ladder_escape_works(B, nb, h, LADDER_BUDGET, boards, meta):
                        ladder_escape[t, lib] = 1
            elif nl == 2 and ((flags & 8) or ((flags & 4) and c == opp)):
                l0, l1 = two_liberties(B, nb, h)
                any_works = False
                for j in range(2):
                    lib = l0 if j == 0 else l1
                    if ladder_attack_works(B, nb, h, lib, LADDER_BUDGET, boards, meta):
                        any_works = True
                        if flags & 8:
                            ladder_2lib_move[t, lib] = 1
                        if (flags & 4) and c == opp and legal[t, lib]:
                            ladder_capture[t, lib] = 1
                if any_works and (flags & 8):
                    _mark_chain(B, h, ladder_2lib_dead[t])


@njit(cache=True)
def _mark_chain(B, h, out):
    q = h
    while True:
        out[q] = 1
        q = B[X, q]
        if q == h:
            break


@njit(cache=True)
def _zobrist_hash(B, zob, nn):
    h = np.int64(0)
    for p in range(nn):
        c = B[S, p]
        if c != 0:
            h ^= zob[c, p]
    return h


@njit(cache=True)
def replay_game(n, nb, kinds, colours, points, flags, libs_cap, allow_suicide, superko, zob, stones, libs, placed, ko,
                legal, libs_after_pla, capture_pla, self_atari_pla, libs_after_opp, eye_pla, ladder_capture,
                ladder_escape, ladder_atari_dead, ladder_2lib_dead, ladder_2lib_move, boards, meta):
    """Replay all events; fill position arrays. Returns (status, bad move index (0-based), play code)."""
    nn = n * n
    B = new_board(n)
    dirty = False
    t = 0
    nhist = 0
    hist = np.empty(kinds.shape[0] + 1, dtype=np.int64)
    for e in range(kinds.shape[0]):
        c = colours[e]
        p = points[e]
        if kinds[e] != MOVE:
            set_point(B, p, c)
            dirty = True
            continue
        if dirty:
            rebuild(B, nb)
            dirty = False
            if superko:
                hist[nhist] = _zobrist_hash(B, zob, nn)
                nhist += 1
        elif superko and nhist == 0:
            hist[0] = 0
            nhist = 1
        for q in range(nn):
            v = B[S, q]
            stones[t, q] = v
            if v != 0:
                libs[t, q] = min(B[L, B[H, q]], 127)
                placed[t, q] = B[T, q]
        ko[t] = B[KO_POINT, nn] if B[KO_COLOUR, nn] == c else -1
        if flags:
            _analyse(B, nb, n, t, c, flags, libs_cap, allow_suicide, legal, libs_after_pla, capture_pla, self_atari_pla,
                     libs_after_opp, eye_pla, ladder_capture, ladder_escape, ladder_atari_dead,
                     ladder_2lib_dead, ladder_2lib_move, boards, meta)
        code = play(B, nb, p, c, allow_suicide)
        if code < 0:
            return ILLEGAL, t, code
        if superko and p != nn:
            hz = _zobrist_hash(B, zob, nn)
            for j in range(nhist):
                if hist[j] == hz:
                    return SUPERKO, t, 0
            hist[nhist] = hz
            nhist += 1
        t += 1
    return OK, t, 0
