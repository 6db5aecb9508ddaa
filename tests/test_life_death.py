"""The dead-stone estimate (data_prep/rules/life_death.py): hand-made end positions and two real ones, every method."""

from __future__ import annotations

import numpy as np
import pytest

from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.data_prep.rules import life_death as ld
from kifunet.data_prep.rules import scoring
from go_helpers import BIG_DEAD, DEAD_STONES, SEKI


# A black group with two eyes (G5, I5) inside white's side: alive.
TWO_EYES = """
. . . X O . . . .
. . . X O . . . .
. . . X O O O O O
. . . X O X X X X
. . . X O X . X .
. . . X O X X X X
. . . X O O O O O
. . . X O . . . .
. . . X O . . . .
"""




def stones(text: str) -> np.ndarray:
    return Board.from_ascii(text).stones


@pytest.mark.parametrize("method", ["combined", "playouts"])
def test_dead_stones_inside_territory(method):
    st = stones(DEAD_STONES)
    e = ld.estimate(st, BLACK, method=method)
    assert e.dead().tolist() == ((np.arange(81).reshape(9, 9) == 10) | (np.arange(81).reshape(9, 9) == 60)).tolist()
    assert e.status[1, 1] == ld.DEAD and e.status[6, 6] == ld.DEAD and e.status[0, 3] == ld.ALIVE
    # black: 36 points, white: 45; Tromp-Taylor (every stone alive) makes both areas with a dead stone dame
    assert e.score(0) == -9.0 and e.score(7.5) == -16.5
    owner = scoring.area_owner(st)
    assert owner[0, 0] == owner[8, 8] == 0 and owner[8, 0] == BLACK and owner[0, 8] == WHITE
    own, empty = e.ownership, st == 0
    assert (own[:, :4][empty[:, :4]] == 1).all() and (own[:, 4:][empty[:, 4:]] == -1).all()  # territory
    sign = np.where(st == BLACK, 1, -1) * np.where(e.dead(), -1, 1)
    assert (own[st > 0] * sign[st > 0] > 0).all()  # stones: their owner's sign, the dead ones the other's
    assert e.ownership.dtype == np.float32 and e.status.dtype == np.int8
    assert (e.status[st == 0] == 0).all()


def test_benson_alone_misses_dead_stones_in_large_territory():
    e = ld.estimate(stones(DEAD_STONES), BLACK, method="benson")
    assert not e.dead().any() and e.ownership[0, 0] == 0 and e.ownership[8, 8] == 0  # dame, as Tromp-Taylor


@pytest.mark.parametrize("method", ld.METHODS)
def test_a_live_group_with_two_eyes(method):
    st = stones(TWO_EYES)
    e = ld.estimate(st, WHITE, method=method)
    assert not e.dead().any() and not e.seki().any()
    assert e.score(0) == 15.0  # black 36 + 12, white 33
    inner = np.zeros((9, 9), bool)
    inner[3:6, 5:] = st[3:6, 5:] == BLACK
    assert (ld.benson_alive(st, BLACK) == inner).all()  # the left wall lives by area, not by two small eyes


@pytest.mark.parametrize("method", ld.METHODS)
def test_seki(method):
    st = stones(SEKI)
    e = ld.estimate(st, BLACK, method=method)
    seki = np.zeros((9, 9), bool)
    seki[5, :3] = seki[6, 2] = seki[7:, :3] = True
    assert e.seki().tolist() == seki.tolist()
    assert not e.dead().any()
    shared = ld.shared_points(st, e.dead())
    assert np.argwhere(shared).tolist() == [[6, 0], [6, 1]]
    assert e.ownership[6, 0] == 0 and e.ownership[6, 1] == 0
    # black 20 + 4 + 4 = 28, white 9 + 36 + 6 = 51, the two shared liberties count for nobody
    assert e.score(0) == -23.0


def test_a_big_dead_group_as_gnu_go_scored_it():
    st = stones(BIG_DEAD)
    e = ld.estimate(st, BLACK)
    assert int(e.dead().sum()) == 26 and (st[e.dead()] == WHITE).all()
    assert e.status[7, 4] == ld.DEAD and e.status[0, 8] == ld.DEAD and e.status[0, 0] == ld.DEAD
    assert scoring.format_score(e.score(7)) == "B+74"  # GNU Go's final_score
    assert scoring.format_score(scoring.area_score(st, 7)) == "B+17"  # the old count
    assert int(ld.estimate(st, BLACK, method="benson").dead().sum()) < 26  # Benson finds only some


def test_benson_one_eye_is_not_enough():
    two = stones("""
        . X . X O
        X X X X O
        O O O O O
        . . . . .
        . . . . .
        """)
    assert ld.benson_alive(two, BLACK)[0].tolist() == [False, True, False, True, False]
    one = stones("""
        . X X X O
        X X X X O
        O O O O O
        . . . . .
        . . . . .
        """)
    assert not ld.benson_alive(one, BLACK).any()


def test_deterministic_for_a_seed():
    st = np.zeros((9, 9), np.int8)
    st[2, 2], st[6, 6], st[2, 6] = BLACK, WHITE, WHITE
    a = ld.estimate(st, BLACK, playouts=64, seed=3)
    b = ld.estimate(st, BLACK, playouts=64, seed=3)
    c = ld.estimate(st, BLACK, playouts=64, seed=4)
    assert (a.ownership == b.ownership).all() and (a.status == b.status).all()
    assert not (a.ownership == c.ownership).all()


def test_board_sizes_and_bad_input():
    st = np.zeros((25, 25), np.int8)
    st[3, 3], st[20, 20] = BLACK, WHITE
    e = ld.estimate(st, WHITE, playouts=8)
    assert e.ownership.shape == (25, 25) and e.status[3, 3] in (ld.ALIVE, ld.DEAD)
    with pytest.raises(ValueError, match="outside"):
        ld.estimate(np.zeros((26, 26), np.int8), BLACK)
    with pytest.raises(ValueError, match="square"):
        ld.estimate(np.zeros((5, 6), np.int8), BLACK)
    with pytest.raises(ValueError, match="EMPTY"):
        ld.estimate(np.full((5, 5), 3, np.int8), BLACK)
    with pytest.raises(ValueError, match="to_move"):
        ld.estimate(np.zeros((5, 5), np.int8), 0)
    with pytest.raises(ValueError, match="method"):
        ld.estimate(np.zeros((5, 5), np.int8), BLACK, method="oracle")


def test_benson_flood_fill_finds_a_stone_in_an_eye():
    st = stones("""
        . X O . X . X
        X X X X X X X
        O O O O O O O
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        """)
    alive, dead, owner = ld.benson_verdict(st)
    assert alive[:2].sum() == 10 and np.argwhere(dead).tolist() == [[0, 2]]
    assert owner[0].tolist() == [BLACK, 0, BLACK, BLACK, 0, BLACK, 0]
    e = ld.estimate(st, WHITE, method="benson")
    assert e.status[0, 2] == ld.DEAD and e.score(0) == 14 - 35  # black 10 stones + 4 points, white 7 + 28


def test_territory_rule_waits_for_confident_walls_and_dead_stones(monkeypatch):
    st = stones(DEAD_STONES)
    raw = np.where(np.arange(9) < 4, 0.6, -0.6)[None, :].repeat(9, 0).astype(np.float32)  # left black, right white
    monkeypatch.setattr(ld, "playout_ownership", lambda *a, **k: raw.copy())
    e = ld.estimate(st, BLACK, method="playouts")
    assert e.dead()[1, 1] and e.dead()[6, 6]
    assert e.ownership[0, 0] == 1 and e.ownership[8, 8] == -1  # closed regions: settled
    raw[1, 1] = 0.2  # the white stone in black's area is dead, but not clearly
    e = ld.estimate(st, BLACK, method="playouts")
    assert e.dead()[1, 1] and e.ownership[0, 0] == pytest.approx(0.6) and e.ownership[8, 8] == -1
    assert (e.raw == raw).all()


def test_the_rules_engine_s_chains_are_the_connected_stones_of_each_colour():
    """life_death and eye_space group stones with the rules engine's chains (``rules.board.chains``): the
    connected components of each colour's stones, ordered by their first point."""
    from kifunet.data_prep.rules.board import chains, from_stones, neighbours_cached
    from kifunet.data_prep.rules.eye_space import components

    rng = np.random.default_rng(3)
    for n in (5, 9, 19, 25):
        st = rng.choice(np.array([0, 1, 2], dtype=np.int8), size=(n, n), p=[0.4, 0.3, 0.3])
        got = list(chains(from_stones(st)[0]).values())
        flat, nb = st.reshape(-1), neighbours_cached(n)
        want = sorted((sorted(c) for colour in (1, 2) for c in components(flat == colour, nb)), key=lambda c: c[0])
        assert got == want


def _components_reference(mask, nb):
    """Depth-first components in plain Python: the order :func:`eye_space.components` promises."""
    seen, out = set(), []
    for start in np.nonzero(mask)[0].tolist():
        if start in seen:
            continue
        seen.add(start)
        comp, stack = [], [start]
        while stack:
            p = stack.pop()
            comp.append(p)
            for q in nb[p].tolist():
                if q >= 0 and mask[q] and q not in seen:
                    seen.add(q)
                    stack.append(q)
        out.append(comp)
    return out


def test_components_are_depth_first_from_each_first_point():
    from kifunet.data_prep.rules.board import neighbours_cached
    from kifunet.data_prep.rules.eye_space import components

    rng = np.random.default_rng(7)
    for n in (2, 5, 9, 19, 25):
        nb = neighbours_cached(n)
        for p in (0.0, 0.3, 0.6, 1.0):
            mask = rng.random(n * n) < p
            assert components(mask, nb) == _components_reference(mask, nb)
