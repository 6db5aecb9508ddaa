"""Rules engine: captures, ko, snapback, suicide, edges and corners, from ASCII boards; random games vs sgfmill."""

import numpy as np
import pytest
from sgfmill import boards as sgfmill_boards

from kifunet.data_prep import coords
from kifunet.data_prep.rules.board import Board, count_liberties
from kifunet.data_prep.game import BLACK, WHITE

from go_helpers import parse_ascii


def at(b: Board, r: int, c: int) -> int:
    return r * b.size + c


def test_single_capture_and_liberties():
    b = Board.from_ascii("""
        . . . . .
        . . X . .
        . X O X .
        . . . . .
        . . . . .
    """)
    assert b.liberties(at(b, 2, 2)) == 1
    assert b.liberties(at(b, 1, 2)) == 3
    assert b.play(at(b, 3, 2), BLACK) == 1
    assert b.to_ascii().splitlines()[2] == ".X.X."
    assert b.captures(BLACK) == 1
    assert b.liberties(at(b, 1, 2)) == 4


def test_multi_chain_capture_with_one_move():
    b2 = Board.from_ascii("""
        X O . O X
        X O X O X
        . X . X .
        . . . . .
        . . . . .
    """)
    # black at (0,2) captures the two white chains {(0,1),(1,1)} and {(0,3),(1,3)} at once
    assert b2.play(at(b2, 0, 2), BLACK) == 4
    assert b2.to_ascii().splitlines()[:2] == ["X.X.X", "X.X.X"]


def test_corner_and_edge_captures():
    b = Board.from_ascii("""
        O . . . .
        X . . . .
        . . . . .
        . . . . O
        . . . . X
    """)
    assert b.liberties(at(b, 0, 0)) == 1
    assert b.play(at(b, 0, 1), BLACK) == 1  # corner stone captured
    assert b.liberties(at(b, 4, 4)) == 1
    assert b.play(at(b, 4, 3), WHITE) == 1  # corner stone captured from the other side
    assert b.stones[4, 4] == 0 and b.stones[0, 0] == 0


def test_simple_ko_and_its_end_after_another_move():
    b = Board.from_ascii("""
        . X O . .
        X O . O .
        . X O . .
        . . . . .
        . . . . .
    """)
    assert b.play(at(b, 1, 2), BLACK) == 1  # black takes the ko at (1,1)
    assert b.ko == at(b, 1, 1)
    with pytest.raises(ValueError, match="ko"):
        b.play(at(b, 1, 1), WHITE)
    assert not b.is_legal(at(b, 1, 1), WHITE)
    assert b.is_legal(at(b, 1, 1), BLACK)  # the ban is for white only
    b.play(at(b, 4, 4), WHITE)  # ko threat elsewhere
    b.play(at(b, 4, 0), BLACK)
    assert b.ko is None
    assert b.play(at(b, 1, 1), WHITE) == 1  # now white may retake


def test_pass_clears_ko():
    b = Board.from_ascii("""
        . X O . .
        X O . O .
        . X O . .
        . . . . .
        . . . . .
    """)
    b.play(at(b, 1, 2), BLACK)
    b.play(25, WHITE)  # pass
    assert b.ko is None


def test_snapback():
    b = Board.from_ascii("""
        . . O X .
        O O O X .
        X X X X .
        . . . . .
        . . . . .
    """)
    w = at(b, 1, 1)
    assert b.liberties(w) == 2  # (0,0) and (0,1)
    assert b.play(at(b, 0, 0), BLACK) == 0  # throw-in with one liberty, (0,1)
    assert b.liberties(at(b, 0, 0)) == 1 and b.liberties(w) == 1
    assert b.play(at(b, 0, 1), WHITE) == 1  # white takes the stone...
    assert b.ko is None  # ...with a 5-stone chain: not a ko
    assert b.liberties(w) == 1  # ...and is left in atari at (0,0)
    assert b.play(at(b, 0, 0), BLACK) == 5  # snapback
    assert b.to_ascii().splitlines()[:2] == ["X..X.", "...X."]


def test_suicide_illegal_by_default_and_allowed_on_request():
    text = """
        . X . . .
        X . . . .
        . . . . .
        . . . . .
        . . . . .
    """
    b = Board.from_ascii(text)
    with pytest.raises(ValueError, match="suicide"):
        b.play(0, WHITE)
    assert b.stones[0, 0] == 0
    nz = Board.from_ascii(text, allow_suicide=True)
    assert nz.play(0, WHITE) == 0
    assert nz.stones[0, 0] == 0  # the suicided stone is removed
    assert nz.captures(BLACK) == 1


def test_multi_stone_suicide_allowed():
    b = Board.from_ascii("""
        . O X . .
        O X X . .
        X X . . .
        . . . . .
        . . . . .
    """, allow_suicide=True)
    # white at (0,0): joins nothing white... white (0,1) and (1,0) are separate chains with 1 liberty (0,0)
    assert b.play(0, WHITE) == 0
    assert b.stones[0, 0] == 0 and b.stones[0, 1] == 0 and b.stones[1, 0] == 0


def test_capture_is_not_suicide():
    b = Board.from_ascii("""
        . X O . .
        X O . . .
        O . . . .
        . . . . .
        . . . . .
    """)
    # white at (0,0) has no empty neighbour but captures black (0,1)? black (0,1) libs: (0,0)... and (1,0)?
    assert b.is_legal(0, WHITE)
    assert b.play(0, WHITE) == 2  # captures both black stones, each with only liberty (0,0)


def test_occupied_point_rejected():
    b = Board(9)
    b.play(40, BLACK)
    with pytest.raises(ValueError, match="occupied"):
        b.play(40, WHITE)


def test_setup_and_removal_rebuild_chains():
    b = Board(9)
    b.setup([0, 1, 2], BLACK)
    assert b.chain(0) == [0, 1, 2] and b.liberties(0) == 4
    b.setup([1], 0)  # AE
    assert b.chain(0) == [0] and b.liberties(0) == 2


@pytest.mark.parametrize("n", [5, 9, 13, 19])
def test_random_games_match_sgfmill(n):
    rng = np.random.default_rng(n)
    for game in range(6):
        ours = Board(n)
        ref = sgfmill_boards.Board(n)
        colour = BLACK
        for move in range(int(n * n * 1.5)):
            legal = np.flatnonzero(ours.legal_moves(colour)[:-1])
            if len(legal) == 0:
                break
            p = int(rng.choice(legal))
            ours.play(p, colour)
            r, c = coords.to_sgfmill(coords.from_flat(p, n), n)
            ref.play(r, c, "b" if colour == BLACK else "w")
            want = np.zeros((n, n), dtype=np.int8)
            for col, (rr, cc) in ref.list_occupied_points():
                rr2, cc2 = coords.from_sgfmill((rr, cc), n)
                want[rr2, cc2] = BLACK if col == "b" else WHITE
            np.testing.assert_array_equal(ours.stones, want, err_msg=f"game {game} move {move}")
            # incremental liberty counts equal a recount from scratch
            B = ours.B
            for q in np.flatnonzero(ours.stones.reshape(-1)):
                h = B[1, q]
                assert B[3, h] == count_liberties(B, ours.nb, h)
            colour = 3 - colour


def test_board_sizes():
    for n in (2, 9, 13, 19):
        assert Board(n).stones.shape == (n, n)
    with pytest.raises(ValueError):
        Board(20)
