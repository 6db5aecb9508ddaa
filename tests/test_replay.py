"""The replay entry point: illegal moves are named; real games replay exactly as sgfmill plays them."""

import numpy as np
import pytest
from sgfmill import boards as sgfmill_boards

from kifunet.data_prep import coords
from kifunet.data_prep.planes import replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.errors import IllegalMoveError
from kifunet.data_prep.game import BLACK, WHITE, GameRecord

from go_helpers import archive_records


def sgf(moves: str, size: int = 9, extra: str = "") -> bytes:
    return f"(;GM[1]FF[4]SZ[{size}]{extra}{moves})".encode()


def test_move_on_an_occupied_point_names_file_move_and_reason():
    rec = sgf_io.load_game(sgf(";B[ee];W[dd];B[dd]"), path="games/bad.sgf")
    with pytest.raises(IllegalMoveError) as e:
        replay.analyse_game(rec)
    err = e.value
    assert (err.path, err.move_number, err.move, err.colour, err.why) == ("games/bad.sgf", 3, "D6", "B", "occupied")
    assert "games/bad.sgf" in str(err) and "move 3" in str(err) and "D6" in str(err)
    assert err.reason == "illegal_move:occupied"


def test_encode_game_takes_the_feature_set_and_iter_positions_its_name_too():
    from kifunet.data_prep.planes import features

    rec = GameRecord.from_moves(5, [(BLACK, 0), (WHITE, 6)])
    with pytest.raises(TypeError, match="takes a FeatureSet, not its name"):
        replay.encode_game(rec, "maddison")
    enc = replay.encode_game(rec, features.get("maddison"))
    by_name = list(replay.iter_positions(rec, "maddison"))
    assert len(enc) == len(by_name) == 2 and [p.target for p in by_name] == enc.target.tolist()
    assert [p.planes.shape for p in replay.iter_positions(rec, features.get("agz"))] == [(5, 5, 17)] * 2


def test_suicide_is_illegal_unless_allowed():
    # white plays into the corner surrounded by black: suicide
    rec = sgf_io.load_game(sgf(";B[ba];W[ee];B[ab];W[aa]"), path="nz.sgf")
    with pytest.raises(IllegalMoveError, match="suicide"):
        replay.analyse_game(rec)
    a = replay.analyse_game(rec, allow_suicide=True)
    assert len(a) == 4


def test_ko_recapture_is_illegal():
    # black takes a ko at (1,2); white retakes at once at (1,1)
    moves = ";B[ba];W[ca];B[ab];W[bb];B[bc];W[cc];B[ee];W[db];B[cb];W[bb]"
    rec = sgf_io.load_game(sgf(moves), path="ko.sgf")
    with pytest.raises(IllegalMoveError) as e:
        replay.analyse_game(rec)
    assert e.value.why == "ko" and e.value.move_number == 10


def test_positional_superko_is_optional():
    # a ko retaken after two passes: legal under simple ko (a pass lifts the ban), but it repeats the
    # whole-board position of move 8, which positional superko forbids
    moves = ";B[ba];W[ca];B[ab];W[bb];B[bc];W[cc];B[ee];W[db];B[cb];W[];B[];W[bb]"
    rec = sgf_io.load_game(sgf(moves), path="superko.sgf")
    assert len(replay.analyse_game(rec)) == 12  # legal under simple ko (the pass cleared the ban)
    with pytest.raises(IllegalMoveError) as e:
        replay.analyse_game(rec, superko=True)
    assert e.value.why == "superko" and e.value.move_number == 12


def test_setup_stones_in_later_nodes():
    rec = sgf_io.load_game(sgf(";B[ee];AW[aa][ab];W[dd];AE[ee];B[ee]"), path="setup.sgf")
    a = replay.analyse_game(rec)
    assert len(a) == 3
    st = a.stones[2].reshape(9, 9)  # before the last move: white aa, ab, dd; black ee removed by AE
    assert st[0, 0] == WHITE and st[1, 0] == WHITE and st[3, 3] == WHITE and st[4, 4] == 0


def _sgfmill_stones(board, n):
    want = np.zeros(n * n, dtype=np.int8)
    for col, (r, c) in board.list_occupied_points():
        want[coords.to_flat(coords.from_sgfmill((r, c), n), n)] = BLACK if col == "b" else WHITE
    return want


def _check_against_sgfmill(records):
    positions = 0
    for rec in records:
        a = replay.analyse_game(rec)
        n = rec.size
        ref = sgfmill_boards.Board(n)
        t = 0
        moves = rec.moves()
        setup_b, setup_w = [], []
        for kind, col, p in zip(rec.kinds, rec.colours, rec.points):
            if kind == 1:  # setup
                pt = coords.to_sgfmill(coords.from_flat(int(p), n), n)
                ref.apply_setup([pt] if col == BLACK else [], [pt] if col == WHITE else [],
                                [pt] if col == 0 else [])
                continue
            np.testing.assert_array_equal(a.stones[t], _sgfmill_stones(ref, n), err_msg=f"{rec.info.path} move {t + 1}")
            if p != n * n:
                r, c = coords.to_sgfmill(coords.from_flat(int(p), n), n)
                ref.play(r, c, "b" if col == BLACK else "w")
            t += 1
            positions += 1
        assert t == len(moves)
    return positions


def test_real_games_replay_as_sgfmill_plays_them(kgs_2017_01):
    records = archive_records(kgs_2017_01, limit=60)
    assert _check_against_sgfmill(records) > 10_000


@pytest.mark.slow
def test_every_game_of_the_2017_01_archive_replays_like_sgfmill(kgs_2017_01):
    records = archive_records(kgs_2017_01)
    assert len(records) == 733
    assert _check_against_sgfmill(records) == 153_800 + sum(
        int(np.count_nonzero(r.points[r.kinds == 0] == r.size ** 2)) for r in records)


@pytest.mark.slow
def test_every_real_archive_replays_without_an_error(kgs_dir):
    games = errors = 0
    for path in sorted(kgs_dir.glob("*.tar.gz")):
        for rec in archive_records(path):
            games += 1
            try:
                replay.analyse_game(rec)
            except IllegalMoveError:
                errors += 1
    assert games > 30_000 and errors == 0
