"""Ladders, read to the end: hand-traced positions, and a cross-check of every ladder plane against an
independent reference search (written here on sgfmill's board) over real KGS positions."""

import numpy as np
import pytest
from sgfmill import boards as sgfmill_boards

from kifunet.data_prep.rules import analysis
from kifunet.data_prep import coords
from kifunet.data_prep.planes import replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.rules.board import Board, libs_after
from kifunet.data_prep.game import BLACK
from kifunet.data_prep.rules.ladders import ladder_attack_works, ladder_captured, ladder_escape_works, scratch

from go_helpers import analyse_last, archive_records, parse_ascii, plane

# White (4,3) is in atari (liberty (4,4)); extending gives 2 liberties each time, and the ladder runs
# down-right: W (4,4), B (4,5), W (5,4), B (6,4), W (5,5), B (5,6), W (6,5), B (7,5), W (6,6), B (6,7),
# W (7,6), B (7,7), W (8,6), B (8,5) or (8,7): captured at the bottom edge (traced by hand).
LADDER = """
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . X X . . . .
    . . X O . . . . .
    . . . X . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
"""
W = 4 * 9 + 3


def _set(text, *cells):
    rows = [ln.split() for ln in text.strip().splitlines()]
    for r, c, ch in cells:
        rows[r][c] = ch
    return "\n".join(" ".join(row) for row in rows)


def _captured(text, stone=W):
    b = Board.from_ascii(text)
    return bool(ladder_captured(b.B, b.nb, stone, 4000, *scratch(b.size)))


def _escapes(text, stone=W):
    b = Board.from_ascii(text)
    return bool(ladder_escape_works(b.B, b.nb, stone, 4000, *scratch(b.size)))


def test_working_ladder_runs_to_the_edge():
    b = Board.from_ascii(LADDER)
    assert b.liberties(W) == 1
    assert _captured(LADDER)
    assert not _escapes(LADDER)


@pytest.mark.parametrize("breaker", [(7, 7), (6, 7), (8, 6), (5, 6)])
def test_a_white_stone_on_the_path_breaks_the_ladder(breaker):
    text = _set(LADDER, (*breaker, "O"))
    assert not _captured(text)
    assert _escapes(text)


def test_a_black_stone_on_the_path_keeps_it_working():
    assert _captured(_set(LADDER, (7, 7, "X")))


def test_ladder_that_captures_along_the_way():
    # white stones at (4,6) and (5,7) leave black's atari stone at (5,6) with one liberty when it is played:
    # white captures it at (6,6) (or connects out) and the ladder fails; far from the path they do nothing
    assert not _captured(_set(LADDER, (4, 6, "O"), (5, 7, "O")))
    assert _captured(_set(LADDER, (0, 8, "O"), (1, 8, "O")))


def test_capturing_an_adjacent_stone_in_atari_at_once():
    # black (5,3) is itself in atari: white captures it at (5,4) instead of extending, and lives
    assert not _captured(_set(LADDER, (6, 3, "O"), (5, 2, "O")))


def test_two_liberty_chain_attacked_from_each_side():
    # without black (3,3), white (4,3) has liberties (3,3) and (4,4); white (2,2) guards the upper-left
    text = _set(LADDER, (3, 3, "."), (2, 2, "O"))
    b = Board.from_ascii(text)
    assert b.liberties(W) == 2
    works = {lib: bool(ladder_attack_works(b.B, b.nb, W, lib, 4000, *scratch(9))) for lib in (3 * 9 + 3, 4 * 9 + 4)}
    # atari at (3,3) recreates the hand-traced ladder; atari at (4,4) lets white connect to (2,2)
    assert works == {3 * 9 + 3: True, 4 * 9 + 4: False}


def test_ladder_along_the_first_line():
    # white (1,0) on the edge, black (0,0)... white extends along column 0 and dies at the corner
    text = """
        . . . . .
        O X . . .
        X . . . .
        . . . . .
        . . . . .
    """
    b = Board.from_ascii(text)
    assert b.liberties(5) == 1  # white (1,0): liberty (0,0)
    # extending to (0,0) gives the chain no liberty at all: captured
    assert _captured(text, stone=5)


def test_node_budget_does_not_bite_on_long_ladders():
    # the hand-traced ladder on 19x19 runs 14 rows: far below the budget, still read to the end
    rows = ["." * 19] * 19
    grid = [list(r) for r in rows]
    for r, c, ch in [(3, 3, "X"), (3, 4, "X"), (4, 2, "X"), (5, 3, "X"), (4, 3, "O")]:
        grid[r][c] = ch
    text = "\n".join("".join(r) for r in grid)
    assert _captured(text, stone=4 * 19 + 3)
    grid[16][16] = "O"  # a breaker far away on the diagonal
    assert not _captured("\n".join("".join(r) for r in grid), stone=4 * 19 + 3)


# ---------------------------------------------------------------------------------------------------------
# independent reference: plain recursion on sgfmill boards, same conventions as kifunet.data_prep.rules.ladders


class Ref:
    def __init__(self, stones: np.ndarray):
        n = stones.shape[0]
        self.n = n
        self.b = sgfmill_boards.Board(n)
        for p, c in enumerate(stones.reshape(-1)):
            if c:
                r, cc = coords.to_sgfmill(divmod(p, n), n)
                self.b.play(r, cc, "b" if c == 1 else "w")

    def nbrs(self, r, c):
        return [(rr, cc) for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)) if 0 <= rr < self.n and 0 <= cc < self.n]

    def group(self, b, pt):
        col = b.get(*pt)
        seen, stack, libs = {pt}, [pt], set()
        while stack:
            q = stack.pop()
            for r in self.nbrs(*q):
                v = b.get(*r)
                if v is None:
                    libs.add(r)
                elif v == col and r not in seen:
                    seen.add(r)
                    stack.append(r)
        return seen, libs

    def play(self, b, pt, col, ko):
        """Copy and play; None if illegal (occupied, ko, suicide); else (board, new ko or None)."""
        if b.get(*pt) is not None or pt == ko:
            return None
        b2 = b.copy()
        newko = b2.play(pt[0], pt[1], col)
        if b2.get(*pt) is None or not self.group(b2, pt)[1]:
            return None  # suicide
        return b2, newko

    def captured(self, b, stone, ko=None):
        col = b.get(*stone)
        att = "b" if col == "w" else "w"
        grp, libs = self.group(b, stone)
        opts = []
        for q in grp:
            for r in self.nbrs(*q):
                if b.get(*r) == att:
                    g2, l2 = self.group(b, r)
                    if len(l2) == 1:
                        opts.append(next(iter(l2)))
        opts.append(next(iter(libs)))
        for mv in dict.fromkeys(opts):
            res = self.play(b, mv, col, ko)
            if res is None:
                continue
            b2, newko = res
            nl = len(self.group(b2, stone)[1])
            if nl >= 3:
                return False
            if nl == 2 and not self.attack(b2, stone, att, newko):
                return False
        return True

    def attack(self, b, stone, att, ko):
        for mv in sorted(self.group(b, stone)[1]):
            res = self.play(b, mv, att, ko)
            if res is None:
                continue
            b2, newko = res
            if newko is not None:
                continue
            if b2.get(*stone) is not None and len(self.group(b2, stone)[1]) == 1 and self.captured(b2, stone):
                return True
        return False


def _reference_planes(stones, pla, legal):
    """ladder_capture, ladder_escape (for pla) and the three GoNN ladder planes, from the reference."""
    n = stones.shape[0]
    ref = Ref(stones)
    out = {k: np.zeros(n * n, np.uint8) for k in
           ("ladder_capture", "ladder_escape", "ladder_atari_dead", "ladder_2lib_dead", "ladder_2lib_move")}
    done = set()
    for p in range(n * n):
        if not stones.reshape(-1)[p] or p in done:
            continue
        pt = coords.to_sgfmill(divmod(p, n), n)
        grp, libs = ref.group(ref.b, pt)
        flat = [coords.to_flat(coords.from_sgfmill(q, n), n) for q in grp]
        done.update(flat)
        col = stones.reshape(-1)[p]
        att = "b" if col == 2 else "w"
        if len(libs) == 1:
            if ref.captured(ref.b, pt):
                out["ladder_atari_dead"][flat] = 1
            lib = coords.to_flat(coords.from_sgfmill(next(iter(libs)), n), n)
            if col == pla and legal[lib]:
                res = ref.play(ref.b, next(iter(libs)), "b" if col == 1 else "w", None)
                if res is not None:
                    nl = len(ref.group(res[0], pt)[1])
                    if nl >= 3 or (nl == 2 and not ref.attack(res[0], pt, att, res[1])):
                        out["ladder_escape"][lib] = 1
        elif len(libs) == 2:
            any_works = False
            for l in libs:
                res = ref.play(ref.b, l, att, None)
                works = (res is not None and res[1] is None and res[0].get(*pt) is not None
                         and len(ref.group(res[0], pt)[1]) == 1 and ref.captured(res[0], pt))
                lf = coords.to_flat(coords.from_sgfmill(l, n), n)
                if works:
                    any_works = True
                    out["ladder_2lib_move"][lf] = 1
                    if col != pla and legal[lf]:
                        out["ladder_capture"][lf] = 1
            if any_works:
                out["ladder_2lib_dead"][flat] = 1
    return out


@pytest.mark.slow
def test_ladder_planes_match_the_reference_on_real_positions(kgs_2017_01):
    flags = analysis.F_LIBS_AFTER_PLA | analysis.F_LADDER_PLA | analysis.F_LADDER_CHAINS
    records = archive_records(kgs_2017_01, limit=12)
    checked = nonzero = 0
    for rec in records:
        a = replay.analyse_game(rec, flags)
        for t in range(0, len(a), 3):
            stones = a.stones[t].reshape(a.size, a.size)
            want = _reference_planes(stones, int(a.to_move[t]), a.legal[t])
            for name, plane in want.items():
                np.testing.assert_array_equal(a.arrays[name][t], plane, err_msg=f"{rec.info.path} t={t} {name}")
                nonzero += int(plane.any())
            checked += 1
    assert checked > 400 and nonzero > 100


# ---------------------------------------------------------------------------------------------------------
# the attacker's first atari on a 2-liberty chain (issue 13, item 10). ladder_attack_works skips the search
# when extending at the other liberty has 4+ liberties *now*. That is exact only if the atari captures nothing:
# an atari that captures defender stones can rescue an attacker chain that the extension would capture now
# (the captured stones' points become its liberties), and the extension then gets far fewer liberties.
# An atari that only connects an attacker chain in atari cannot do that: that chain's last liberty is the
# atari point, so the extension at the other liberty never captured it. Every fixture is also read by the
# reference above (every move played on sgfmill boards, no shortcut).

# white (7,6) has liberties (7,5) and (7,7). Extending at (7,5) now captures black (8,5)-(8,6) (in atari
# there): 4+ liberties. Black's atari at (7,7) captures white (8,7), which gives (8,5)-(8,6) a liberty, so
# the extension gets only (6,5) and (7,4) and white is read out in a ladder towards the upper left.
ATARI_CAPTURES = """
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . X . .
    . . . . . . O . .
    . . . X O X X O X
"""
# (black's atari at (7,5) works as well: white's extension at (7,7) gets 2 liberties.) The same, and black's
# atari at (7,7) also connects black (7,8)-(8,8), in atari at (7,7), to safety; here black's atari at (7,5)
# fails (white's extension at (7,7) captures (7,8)-(8,8))
ATARI_CAPTURES_AND_CONNECTS = """
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . X . O
    . . . . . . O . X
    . . . X O X X O X
"""
# white (4,3) has liberties (3,3) and (4,4); black (3,2)-(4,2) is in atari at (3,3). Black's atari at (3,3)
# connects it to (3,4) and the hand-traced LADDER follows; black's atari at (4,4) captures nothing and white
# escapes by extending at (3,3), capturing (3,2)-(4,2) (the shortcut's case: 4 liberties now, 3 after)
ATARI_CONNECTS = """
    . . . . . . . . .
    . . . . . . . . .
    . . O . . . . . .
    . O X . X . . . .
    . O X O . . . . .
    . . O X . . . . .
    . . . X . . . . .
    . . . . . . . . .
    . . . . . . . . .
"""


def _attack_works(text, stone, lib):
    b = Board.from_ascii(text)
    n = b.size
    return bool(ladder_attack_works(b.B, b.nb, stone[0] * n + stone[1], lib[0] * n + lib[1], 4000, *scratch(n)))


def _reference_attack_works(text, stone, lib):
    stones = parse_ascii(text)
    n = stones.shape[0]
    ref = Ref(stones)
    pt, lp = coords.to_sgfmill(stone, n), coords.to_sgfmill(lib, n)
    res = ref.play(ref.b, lp, "b" if ref.b.get(*pt) == "w" else "w", None)
    return (res is not None and res[1] is None and res[0].get(*pt) is not None
            and len(ref.group(res[0], pt)[1]) == 1 and ref.captured(res[0], pt))


def _extension_liberties_now(text, stone, other):
    b = Board.from_ascii(text)
    n = b.size
    return int(libs_after(b.B, b.nb, other[0] * n + other[1], int(b.B[0, stone[0] * n + stone[1]]), 9)[0])


@pytest.mark.parametrize("text, stone, lib, other, works", [
    (ATARI_CAPTURES, (7, 6), (7, 7), (7, 5), True),
    (ATARI_CAPTURES, (7, 6), (7, 5), (7, 7), True),
    (ATARI_CAPTURES_AND_CONNECTS, (7, 6), (7, 7), (7, 5), True),
    (ATARI_CAPTURES_AND_CONNECTS, (7, 6), (7, 5), (7, 7), False),
    (ATARI_CONNECTS, (4, 3), (3, 3), (4, 4), True),
    (ATARI_CONNECTS, (4, 3), (4, 4), (3, 3), False),
], ids=["captures", "captures-other-side", "captures-and-connects", "captures-and-connects-other-side",
        "connects", "connects-other-side"])
def test_first_atari_that_captures_or_connects(text, stone, lib, other, works):
    assert _reference_attack_works(text, stone, lib) == works
    assert _attack_works(text, stone, lib) == works
    if text is not ATARI_CONNECTS and lib == (7, 7):
        assert _extension_liberties_now(text, stone, other) >= 4  # the shape the old shortcut got wrong


@pytest.mark.parametrize("text", [ATARI_CAPTURES, ATARI_CAPTURES_AND_CONNECTS],
                         ids=["captures", "captures-and-connects"])
def test_first_atari_that_captures_in_the_planes(text):
    # through the replay kernel, black to move: the atari at (7,7) is a ladder capture of white (7,6)
    flags = analysis.F_LIBS_AFTER_PLA | analysis.F_LADDER_PLA | analysis.F_LADDER_CHAINS
    a = analyse_last(text, BLACK, flags)
    want = _reference_planes(parse_ascii(text), BLACK, a.legal[0])
    for name, p in want.items():
        np.testing.assert_array_equal(a.arrays[name][0], p, err_msg=name)
    assert plane(a, "ladder_capture")[7, 7] == 1 and plane(a, "ladder_2lib_move")[7, 7] == 1
    assert plane(a, "ladder_2lib_dead")[7, 6] == 1


# Real KGS positions of that shape (KGS-2015-19-8133-.tar.gz; the moves up to the position, and the next
# one, so that the position is a row of the replay): (game, position index, defender stone, atari point).
# 2015-01-30-24, black to move: black's atari at S8 captures white S8's neighbour R8 (row 11, col 17), which
# gives black's four stones in atari at T10 (row 9, col 18) a liberty; the plane missed this ladder capture.
# 2015-09-08-11, white to move: black's atari at A3 captures three white stones and so rescues black B2.
REAL = [
    ("2015-01-30-24", "KM[6.50]", ";B[pd];W[dd];B[qp];W[dp];B[fq];W[cn];B[lq];W[qj];B[qh];W[qm];B[pn];W[ro];B[pm]"
     ";W[rp];B[ql];W[qq];B[pq];W[pp];B[op];W[qo];B[pr];W[rl];B[rm];W[oo];B[po];W[qn];B[rk];W[np];B[qp];W[pl]"
     ";B[qk];W[pp];B[oq];W[pk];B[rj];W[ri];B[qi];W[om];B[qp];W[sk];B[pj]", 40, (10, 18), (11, 18)),
    ("2015-09-08-11", "KM[0.50]", ";B[pd];W[ec];B[pp];W[do];B[dq];W[fp];B[co];W[cp];B[dp];W[bp];B[bo];W[cr];B[eo]"
     ";W[dn];B[cq];W[bq];B[br];W[ar];B[bs];W[cs];B[ap];W[as];B[br];W[bs]", 23, (17, 0), (16, 0)),
]


@pytest.mark.parametrize("game, km, moves, t, stone, lib", REAL, ids=[r[0] for r in REAL])
def test_first_atari_that_captures_in_real_games(game, km, moves, t, stone, lib):
    rec = sgf_io.load_game(f"(;GM[1]FF[4]SZ[19]{km}RU[Japanese]{moves})".encode(), path=game)
    flags = analysis.F_LIBS_AFTER_PLA | analysis.F_LADDER_PLA | analysis.F_LADDER_CHAINS
    a = replay.analyse_game(rec, flags)
    stones = a.stones[t].reshape(19, 19)
    want = _reference_planes(stones, int(a.to_move[t]), a.legal[t])
    for name, p in want.items():
        np.testing.assert_array_equal(a.arrays[name][t], p, err_msg=name)
    flat_lib = lib[0] * 19 + lib[1]
    assert a.arrays["ladder_2lib_move"][t][flat_lib] == 1
    assert a.arrays["ladder_2lib_dead"][t][stone[0] * 19 + stone[1]] == 1
    if int(a.to_move[t]) != int(stones[stone]):  # the side to move is the attacker
        assert a.arrays["ladder_capture"][t][flat_lib] == 1
