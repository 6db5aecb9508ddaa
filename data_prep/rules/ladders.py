"""Ladder reading, to the end of the ladder.

:func:`ladder_captured`: the chain is in atari and the defender to move; is it captured? The defender tries
capturing each adjacent attacker chain in atari and extending at the liberty; after its move 3+ liberties is an
escape, 2 passes the turn to the attacker, who tries both liberties (:func:`ladder_attack_works`), 1 or 0 fails.
No depth limit; ``LADDER_BUDGET`` board positions per query guard pathological positions and count as "not
captured". As in the GoNN writer (docs/gonn.md section 3), the ko ban is lifted for the defender at the root and
an attacker move that leaves a simple-ko point counts as a defender win.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .board import H, KO_POINT, L, M, S, X, libs_after, play, two_liberties

LADDER_BUDGET = 4000


def scratch(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Scratch for the search: one board per ply, up to N*N + 2 plies, and per-ply option lists."""
    from .board import ROWS

    depth = n * n + 2
    return np.zeros((depth, ROWS, n * n + 1), dtype=np.int32), np.zeros((depth, 3 + MAX_OPTIONS), dtype=np.int32)


MAX_OPTIONS = 16


@njit(cache=True)
def _copy_position(dst, src):
    """Copy rows S..Z (the position). Marks need no copy, only a stamp above every mark in ``dst``'s row."""
    nn = src.shape[1] - 1
    dst[:M, :] = src[:M, :]
    if dst[M, nn] < src[M, nn]:
        dst[M, nn] = src[M, nn]


@njit(cache=True)
def _atari_neighbour_heads(B, nb, h, colour, out):
    """Heads of distinct ``colour`` chains in atari that touch chain ``h``; returns their count."""
    n = 0
    q = h
    while True:
        for k in range(4):
            r = nb[q, k]
            if r >= 0 and B[S, r] == colour:
                hr = B[H, r]
                if B[L, hr] == 1:
                    dup = False
                    for j in range(n):
                        if out[j] == hr:
                            dup = True
                    if not dup and n < out.shape[0]:
                        out[n] = hr
                        n += 1
        q = B[X, q]
        if q == h:
            break
    return n


@njit(cache=True)
def _options(B, nb, stone, attacker, defender_to_move, opts):
    """Candidate moves of a node: the defender's captures then its extension; or the attacker's two ataris."""
    h = B[H, stone]
    l0, l1 = two_liberties(B, nb, h)
    if not defender_to_move:
        opts[0] = l0
        opts[1] = l1
        return 2
    n = _atari_neighbour_heads(B, nb, h, attacker, opts[:MAX_OPTIONS - 1])
    for i in range(n):  # heads -> the liberty that captures them
        opts[i] = two_liberties(B, nb, opts[i])[0]
    opts[n] = l0  # extending comes last: captures usually decide faster
    n += 1
    return n


# what playing an option leads to (_play_option)
_FAILS, _ESCAPED, _PUSH = 0, 1, 2


@njit(cache=True, inline="always")
def _play_option(child, nb, move, stone, attacker, defender_moves):
    """Play ``move`` on ``child`` (a copy of the node's board) for the defender (``defender_moves``) or the
    attacker: ``_ESCAPED`` (the defender has 3+ liberties), ``_PUSH`` (the ladder goes on: the defender has 2
    liberties, or the attacker's atari is not escaped by extending at once) or ``_FAILS`` (illegal, the defender
    left with 1 liberty, the attacker's move leaves a ko, which the defender wins, or gives no atari)."""
    nn = child.shape[1] - 1
    defender = 3 - attacker
    if defender_moves:
        if play(child, nb, move, defender, False) < 0:
            return _FAILS
        nl = child[L, child[H, stone]]
        return _ESCAPED if nl >= 3 else (_PUSH if nl == 2 else _FAILS)
    if play(child, nb, move, attacker, False) < 0 or child[KO_POINT, nn] >= 0:
        return _FAILS
    if child[S, stone] == defender and child[L, child[H, stone]] == 1:
        if libs_after(child, nb, two_liberties(child, nb, child[H, stone])[0], defender, 3)[0] >= 3:
            return _FAILS  # the defender escapes by extending: no need to push the node
        return _PUSH
    return _FAILS


@njit(cache=True)
def _search(nb, stone, attacker, defender_to_move, budget, boards, meta):
    """Depth-first ladder search from ``boards[0]``: True if the chain at ``stone`` is captured (a defender node
    when every option fails, an attacker node when any works). ``boards``, ``meta``: :func:`scratch`."""
    depth_max = boards.shape[0]
    kind = meta[:, 0]  # 1: defender to move
    opt = meta[:, 1]
    nopt = meta[:, 2]
    opts = meta[:, 3:]
    kind[0] = defender_to_move
    nopt[0] = _options(boards[0], nb, stone, attacker, defender_to_move, opts[0])
    opt[0] = 0
    d = 0
    result = False
    have_result = False
    while True:
        if have_result:  # a child of node d finished with `result` (True = captured)
            have_result = False
            if (kind[d] == 1 and not result) or (kind[d] == 0 and result):
                # defender found an escape / attacker found a capture: node d is decided
                if d == 0:
                    return result
                d -= 1
                have_result = True
                continue
        if opt[d] >= nopt[d]:
            result = kind[d] == 1  # defender: every option failed; attacker: no atari worked
            if d == 0:
                return result
            d -= 1
            have_result = True
            continue
        move = opts[d, opt[d]]
        opt[d] += 1
        budget -= 1
        if budget < 0 or d + 1 >= depth_max:
            return False  # out of budget: count as not captured
        child = boards[d + 1]
        _copy_position(child, boards[d])
        step = _play_option(child, nb, move, stone, attacker, kind[d] == 1)
        if step == _ESCAPED:  # report it as if a child of node d had found an escape
            result = False
            have_result = True
        elif step == _PUSH:
            defender_next = kind[d] == 0
            d += 1
            kind[d] = 1 if defender_next else 0
            opt[d] = 0
            nopt[d] = _options(child, nb, stone, attacker, defender_next, opts[d])


@njit(cache=True)
def ladder_captured(B, nb, stone, budget_nodes, boards, meta):
    """Chain at ``stone`` has 1 liberty, its owner to move (ko ban lifted): is it captured in a ladder?"""
    nn = B.shape[1] - 1
    defender = B[S, stone]
    if libs_after(B, nb, two_liberties(B, nb, B[H, stone])[0], defender, 3)[0] >= 3:
        return False  # extending escapes at once (exact shortcut: no board copy)
    _copy_position(boards[0], B)
    boards[0, KO_POINT, nn] = -1
    return _search(nb, stone, 3 - defender, 1, budget_nodes, boards, meta)


@njit(cache=True)
def ladder_attack_works(B, nb, stone, lib, budget_nodes, boards, meta):
    """Chain at ``stone`` has 2 liberties; the attacker plays first at ``lib``. Is the chain then captured?"""
    nn = B.shape[1] - 1
    defender = B[S, stone]
    attacker = 3 - defender
    l0, l1 = two_liberties(B, nb, B[H, stone])
    other = l1 if l0 == lib else l0
    # Shortcut (no board copy): if the atari at `lib` captures nothing, extending at `other` afterwards gets
    # every liberty it would get now except `lib` itself: the atari removes no stone, and an attacker chain the
    # extension captures now has `other` as its only liberty, so it does not touch `lib` and is still captured
    # (an atari that connects an attacker chain in atari changes nothing here: that chain's last liberty was
    # `lib`). 4+ now means 3+ then: an escape. An atari that captures defender stones can rescue such a chain
    # (the captured stones' points become its liberties) and so take its points from the extension's
    # liberties: then the atari is played and read like any other.
    captures = False
    for k in range(4):
        r = nb[lib, k]
        if r >= 0 and B[S, r] == defender and B[L, B[H, r]] == 1:
            captures = True
    if not captures and libs_after(B, nb, other, defender, 4)[0] >= 4:
        return False
    root = boards[0]
    _copy_position(root, B)
    root[KO_POINT, nn] = -1
    if play(root, nb, lib, attacker, False) < 0:
        return False
    if root[KO_POINT, nn] >= 0:
        return False
    if root[S, stone] == 0 or root[L, root[H, stone]] != 1:
        return False
    return _search(nb, stone, attacker, 1, budget_nodes, boards, meta)


@njit(cache=True)
def ladder_escape_works(B, nb, stone, budget_nodes, boards, meta):
    """Chain at ``stone`` is in atari, its owner to move: does extending at the liberty escape the ladder (3+
    liberties, or 2 that the attacker cannot ladder-capture)? False if illegal or left with 1 liberty."""
    owner = B[S, stone]
    lib = two_liberties(B, nb, B[H, stone])[0]
    nl = libs_after(B, nb, lib, owner, 3)[0]
    if nl >= 3:
        return True
    if nl <= 1:
        return False
    root = boards[0]
    _copy_position(root, B)
    if play(root, nb, lib, owner, False) < 0:
        return False
    return not _search(nb, stone, 3 - owner, 0, budget_nodes, boards, meta)
