"""The ``qiqiao`` feature set (data_prep/planes/features.py): planes hand-checked on a short 9x9 game, and checked against
a re-implementation of its reference code's update rule on random games."""

import numpy as np
import pytest

from kifunet.data_prep.planes import features, replay
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE, GameRecord

N = 9
PASS = N * N


def rc(r, c):
    return r * N + c


def planes(record: GameRecord) -> np.ndarray:
    """Every plane of every position: uint8 [T, N, N, 10]."""
    fs = features.get("qiqiao")
    enc = replay.encode_game(record, fs)
    return fs.assemble(enc.planes, enc.columns())


def points(plane) -> set:
    return set(zip(*map(np.ndarray.tolist, np.nonzero(plane))))


# moves 0..8; move 2 captures the white stone of move 1; move 3 is white's pass
GAME = [(BLACK, rc(0, 1)), (WHITE, rc(0, 0)), (BLACK, rc(1, 0)), (WHITE, PASS), (BLACK, rc(4, 4)),
        (WHITE, rc(4, 5)), (BLACK, rc(3, 5)), (WHITE, rc(5, 5)), (BLACK, PASS)]
B0 = {(0, 1)}                      # black stones after black's move 0
B2 = {(0, 1), (1, 0)}              # ... after move 2 (white (0,0) captured)
B4 = B2 | {(4, 4)}
B6 = B4 | {(3, 5)}
W1 = {(0, 0)}                      # white stones after white's move 1
W3 = set()                         # after white's pass (move 3): the board has no white stone left
W5 = {(4, 5)}
W7 = {(4, 5), (5, 5)}
E = set()

# position t (before move t): black planes oldest..newest, white planes oldest..newest, white to move, previous move
EXPECTED = {
    # white to move; white's newest state is from before black's capture: (0,0) still shows
    3: ([E, E, B0, B2], [E, E, E, W1], 1, {(1, 0)}),
    # black to move after white's pass: white's planes shifted, newest = the board after the pass; no previous move
    4: ([E, E, B0, B2], [E, E, W1, W3], 0, E),
    7: ([B0, B2, B4, B6], [E, W1, W3, W5], 1, {(3, 5)}),  # white to move: 3 white moves, so 1 initial (empty) state
    8: ([B0, B2, B4, B6], [W1, W3, W5, W7], 0, {(5, 5)}),
}


@pytest.mark.parametrize("t", sorted(EXPECTED))
def test_planes_hand_checked_on_a_short_9x9_game(t):
    p = planes(GameRecord.from_moves(N, GAME))[t]
    black, white, to_move, previous = EXPECTED[t]
    assert [points(p[..., i]) for i in range(4)] == black
    assert [points(p[..., 4 + i]) for i in range(4)] == white
    assert (p[..., 8] == to_move).all()
    assert points(p[..., 9]) == previous


def test_empty_start_then_first_moves():
    p = planes(GameRecord.from_moves(N, GAME))
    assert p[0].sum() == 0  # black to move on the empty board: every plane 0, as in the reference
    assert [points(p[1][..., i]) for i in range(10)] == [E, E, E, B0] + [E] * 4 + [set(np.ndindex(N, N)), B0]


def test_handicap_stones_are_each_colours_state_before_its_first_move():
    handicap = [(BLACK, rc(2, 2)), (BLACK, rc(6, 6))]
    p = planes(GameRecord.from_moves(N, [(WHITE, rc(4, 4)), (BLACK, rc(2, 6)), (WHITE, rc(6, 2))], setup=handicap))
    hc = {(2, 2), (6, 6)}
    assert [points(p[0][..., i]) for i in range(8)] == [E, E, E, hc] + [E] * 4  # white to move first
    assert (p[0][..., 8] == 1).all() and p[0][..., 9].sum() == 0
    assert [points(p[2][..., i]) for i in range(8)] == [E, E, hc, hc | {(2, 6)}] + [E, E, E, {(4, 4)}]


def test_two_moves_of_one_colour_shift_only_its_planes_and_both_mark_the_previous_move():
    p = planes(GameRecord.from_moves(N, [(BLACK, rc(0, 0)), (BLACK, rc(8, 8)), (WHITE, PASS)]))
    assert [points(p[2][..., i]) for i in range(4)] == [E, E, {(0, 0)}, {(0, 0), (8, 8)}]
    assert p[2][..., 4:8].sum() == 0 and (p[2][..., 8] == 1).all() and points(p[2][..., 9]) == {(8, 8)}
    assert points(p[1][..., 9]) == {(0, 0)} and (p[1][..., 8] == 0).all()  # black again: the plane says black


def test_set_declarations():
    fs = features.get("qiqiao")
    assert fs.num_planes == 10 and fs.num_stored == 9 and fs.columns == ("to_move",)
    assert fs.history_channels() == ((2, 6), (1, 5), (0, 4))  # each colour's 2nd, 3rd, 4th newest state
    assert fs.legal_channels() is None
    agz = features.get("agz")
    cols = {"to_move": np.array([BLACK, WHITE])}
    stored = np.zeros((2, N, N, 9), np.uint8)
    assert fs.assemble(stored, cols)[:, 0, 0, 8].tolist() == [0, 1]  # the opposite of agz's plane
    assert agz.assemble(np.zeros((2, N, N, 16), np.uint8), cols)[:, 0, 0, 16].tolist() == [1, 0]


def reference_planes(moves) -> np.ndarray:
    """CleverGo's ``GoEngine._update_state_step`` ('separated', record_step 4, record_last) written again from
    its description: after each move the mover's 4 planes shift, the newest = its stones now; plane 8 = the next
    mover is white; plane 9 = the move's point. Returns the state before each move, [T, N, N, 10]."""
    state = np.zeros((10, N, N), np.uint8)
    board = Board(N)
    out = []
    for colour, p in moves:
        out.append(state.transpose(1, 2, 0).copy())
        if p != PASS:
            board.play(p, colour)
        lo = 0 if colour == BLACK else 4
        state[lo:lo + 3] = state[lo + 1:lo + 4]
        state[lo + 3] = board.stones == colour
        state[8] = colour == BLACK
        state[9] = 0
        if p != PASS:
            state[9].flat[p] = 1
    return np.stack(out)


def random_game(moves: int, seed: int) -> tuple[list, int]:
    """A legal random game, colours alternating from black, passes included; and the stones it captured."""
    rng = np.random.default_rng(seed)
    board, out, colour, captured = Board(N), [], BLACK, 0
    for _ in range(moves):
        legal = np.nonzero(board.legal_moves(colour)[:-1])[0]
        p = PASS if rng.random() < 0.08 or len(legal) == 0 else int(rng.choice(legal))
        if p != PASS:
            captured += board.play(p, colour)
        out.append((colour, p))
        colour = 3 - colour
    return out, captured


def test_matches_the_reference_update_rule_on_random_games():
    for seed in range(3):
        moves, captured = random_game(150, seed)
        assert captured > 0 and (PASS in [p for _, p in moves])  # captures and passes are exercised
        np.testing.assert_array_equal(planes(GameRecord.from_moves(N, moves)), reference_planes(moves))


def test_gtp_window_gives_the_full_replays_planes():
    """play/policy.py replays only the last moves (older ones become setup stones): enough for 4 per colour."""
    from kifunet.play.policy import position_record

    moves, _ = random_game(60, seed=7)
    colour = 3 - moves[-1][0]
    full = planes(GameRecord.from_moves(N, moves + [(colour, PASS)]))[-1]
    window = planes(position_record(N, moves, colour))[-1]
    np.testing.assert_array_equal(window, full)
