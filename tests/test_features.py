"""Feature planes hand-checked on small positions, and the feature-set contracts."""

import re
from pathlib import Path

import numpy as np
import pytest

from kifunet.data_prep.planes import features, replay
from kifunet.data_prep.game import BLACK, WHITE, GameRecord

from go_helpers import position


def planes_of(record: GameRecord, set_name: str, *, rank: int = -128, t: int = -1):
    fs = features.get(set_name)
    record.info.black_rank = record.info.white_rank = rank
    enc = replay.encode_game(record, fs)
    return fs, fs.assemble(enc.planes, enc.columns())[t]


def group(fs, planes, name):
    """The (N, N, k) planes of feature ``name`` inside a full (N, N, C) stack."""
    off = 0
    for f in fs.features:
        if f.name == name:
            return planes[..., off:off + f.planes]
        off += f.planes
    raise KeyError(name)


def idx(g, r, c):
    """The single plane set at (r, c), or None; fails if more than one is set."""
    on = np.flatnonzero(g[r, c])
    assert len(on) <= 1, f"planes {on} all set at {(r, c)}"
    return int(on[0]) if len(on) else None


# Chains (hand-counted):  A black {(1,1),(1,2),(2,2)}: 6 liberties.  C white {(2,1),(3,1)}: (2,0),(3,0),(4,1),
# (3,2) = 4.  B black {(5,5)}: only (6,5) = 1.  D white {(4,5)}: 3.  E white {(5,4)}: 3.  F white {(5,6)}: 2.
BOARD = """
    . . . . . . .
    . X X . . . .
    . O X . . . .
    . O . . . . .
    . . . . . O .
    . . . . O X O
    . . . . . . .
"""


def test_plane_counts_and_registry():
    built = (Path(__file__).resolve().parents[1] / "docs" / "features.md").read_text().split(
        "## The sets as built")[1]
    tabled = {name: int(n) for name, n in re.findall(r"^\| `(\w+)` \| (\d+) \|", built, re.M)}
    tabled.update({name: int(n) for name, n in re.findall(r"`(\w+)` \((\d+) planes", built)})
    tabled.update({name: int(n) for name, n in re.findall(r"`(\w+)` \(Maddison's (\d+) constant", built)})
    assert tabled == features.PLANE_COUNTS
    for name, count in features.PLANE_COUNTS.items():
        assert features.get(name).num_planes == count
    assert features.get("agz+nogo_liberties").num_planes == 21
    assert features.get("maddison").num_stored == 27  # the 9 rank planes are constant
    assert features.get("alphago").num_stored == 46  # ones and zeros are constant
    assert features.get("gonn").num_stored == 25  # on-board is constant
    assert features.get("agz").columns == ("to_move",)
    assert features.get("qiqiao").num_stored == 9  # the side-to-move plane is constant
    with pytest.raises(KeyError, match="unknown feature set"):
        features.get("nope")


@pytest.mark.parametrize("to_move", [BLACK, WHITE])
def test_stone_colour_is_relative_to_the_player_to_move(to_move):
    fs, p = planes_of(position(BOARD, to_move), "maddison")
    g = group(fs, p, "stone_colour")
    black_plane = 0 if to_move == BLACK else 1
    assert idx(g, 1, 1) == black_plane and idx(g, 2, 1) == 1 - black_plane and idx(g, 0, 0) == 2


def test_chain_liberties_maddison_and_alphago():
    fs, p = planes_of(position(BOARD, WHITE), "maddison")
    g = group(fs, p, "liberties_4")  # 1, 2, 3, >=4
    assert [idx(g, *rc) for rc in [(1, 1), (2, 1), (5, 5), (4, 5), (5, 6), (0, 0)]] == [3, 3, 0, 2, 1, None]
    fs, p = planes_of(position(BOARD, WHITE), "alphago")
    g = group(fs, p, "liberties_8")  # 1..7, >=8
    assert [idx(g, *rc) for rc in [(1, 1), (2, 1), (5, 5), (4, 5), (5, 6)]] == [5, 3, 0, 2, 1]


def test_capture_liberties_after_and_legality():
    fs, p = planes_of(position(BOARD, WHITE), "maddison")
    cap, la, legal = group(fs, p, "capture_size_7"), group(fs, p, "liberties_after_6"), group(fs, p, "legal")[..., 0]
    # white (6,5) captures B: 1 stone; its liberties then: (5,5), (6,4), (6,6) = 3
    assert idx(cap, 6, 5) == 0 and idx(la, 6, 5) == 2 and legal[6, 5] == 1
    # white (3,2) joins C: (2,0),(3,0),(4,1) + (4,2),(3,3) = 5 liberties, captures nothing
    assert idx(cap, 3, 2) is None and idx(la, 3, 2) == 4
    assert legal[1, 1] == 0 and idx(la, 1, 1) is None  # occupied
    assert legal.sum() == 49 - 9  # every empty point is legal here
    fs, p = planes_of(position(BOARD, WHITE), "alphago")
    cap8 = group(fs, p, "capture_size_8")  # 0..6, >=7 over legal moves
    assert idx(cap8, 6, 5) == 1 and idx(cap8, 3, 2) == 0 and idx(cap8, 1, 1) is None


def test_self_atari_and_liberties_after_for_black():
    fs, p = planes_of(position(BOARD, BLACK), "alphago")
    sa, la = group(fs, p, "self_atari_8"), group(fs, p, "liberties_after_8")
    # black (6,6): neighbours (5,6) white, (6,5) empty -> one liberty: self-atari of 1 stone
    assert idx(sa, 6, 6) == 0 and idx(la, 6, 6) == 0
    # black (6,5) joins B: {(5,5),(6,5)} with (6,4),(6,6) = 2 liberties: no self-atari
    assert idx(sa, 6, 5) is None and idx(la, 6, 5) == 1


def test_turns_since_and_setup_stones():
    n = 5
    moves = [(BLACK, 0), (WHITE, 24), (BLACK, 12)]
    rec = GameRecord.from_moves(n, moves + [(WHITE, 25)], setup=[(BLACK, 6)])
    fs, p = planes_of(rec, "maddison")
    g = group(fs, p, "turns_since_5")  # 1..4, >=5
    assert idx(g, 2, 2) == 0 and idx(g, 4, 4) == 1 and idx(g, 0, 0) == 2
    assert idx(g, 1, 1) == 4  # a setup stone counts as played long ago
    assert idx(g, 3, 3) is None


def test_agz_history_planes():
    n = 5
    rec = GameRecord.from_moves(n, [(BLACK, 0), (WHITE, 24), (BLACK, 12), (WHITE, 25)])
    fs, p = planes_of(rec, "agz")  # position before move 4: white (pla) to move
    pla, opp, black = p[..., 0:8], p[..., 8:16], p[..., 16]
    assert pla[4, 4].tolist() == [1, 1, 0, 0, 0, 0, 0, 0]  # white stone exists at t and t-1
    assert opp[0, 0].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]  # black (0,0) since the first move
    assert opp[2, 2].tolist() == [1, 0, 0, 0, 0, 0, 0, 0]
    assert black.sum() == 0
    fs, p = planes_of(rec, "agz", t=0)
    assert p[..., :16].sum() == 0 and p[..., 16].min() == 1  # empty board, black to move


def test_gonn_planes():
    fs, p = planes_of(position(BOARD, WHITE), "gonn")
    assert group(fs, p, "ones").min() == 1
    libs = group(fs, p, "gonn_liberties")  # pla exactly 1..4, then opp exactly 1..4
    assert [idx(libs, *rc) for rc in [(2, 1), (4, 5), (5, 6), (5, 5), (1, 1)]] == [3, 2, 1, 4, None]
    la = group(fs, p, "gonn_liberties_after")  # pla exactly 1..3, then opp exactly 1..3
    assert idx(la, 3, 2) is None  # white there: 5 liberties; black there: 7 -> no 'exactly' plane
    assert la[6, 5].tolist() == [0, 0, 1, 0, 1, 0]  # white: 3 liberties; black joining B: 2
    nogo = features.get("nogo_liberties")
    enc = replay.encode_game(position(BOARD, WHITE), nogo)
    q = enc.planes[0]  # pla 1-lib, pla 2-lib, opp 1-lib, opp 2-lib liberty points
    assert set(zip(*np.nonzero(q[..., 1]))) == {(4, 6), (6, 6)}
    assert set(zip(*np.nonzero(q[..., 2]))) == {(6, 5)}
    assert q[..., 0].sum() == 0 and q[..., 3].sum() == 0


KO = """
    . X O . .
    X O . O .
    . X O . .
    . . . . .
    . . . . .
"""


def test_ko_ban_and_legality():
    rec = position(KO, WHITE, history=[(BLACK, 7)])  # black takes at (1,2) -> white may not retake at (1,1)
    fs, p = planes_of(rec, "gonn")
    assert group(fs, p, "ko_ban")[..., 0].sum() == 1 and group(fs, p, "ko_ban")[1, 1, 0] == 1
    fs, p = planes_of(rec, "maddison")
    assert group(fs, p, "legal")[1, 1, 0] == 0


def test_previous_moves_need_alternating_colours():
    n = 5
    a, b, c = 0, 24, 12
    fs, p = planes_of(GameRecord.from_moves(n, [(BLACK, a), (WHITE, b), (BLACK, c), (WHITE, 25)]), "gonn")
    g = group(fs, p, "previous_moves_5")
    assert (idx(g, 2, 2), idx(g, 4, 4), idx(g, 0, 0)) == (0, 1, 2)
    fs, p = planes_of(GameRecord.from_moves(n, [(BLACK, a), (WHITE, 25), (BLACK, c), (WHITE, 25)]), "gonn")
    g = group(fs, p, "previous_moves_5")
    assert (idx(g, 2, 2), idx(g, 0, 0)) == (0, 2) and g[..., 1].sum() == 0  # the pass sets no point
    fs, p = planes_of(GameRecord.from_moves(n, [(BLACK, a), (BLACK, c), (WHITE, 25)]), "gonn")
    g = group(fs, p, "previous_moves_5")
    assert idx(g, 2, 2) == 0 and g[..., 1:].sum() == 0  # two black moves in a row: history stops


EYE = """
    . . . . .
    . O X . .
    . X . X .
    . . X . .
    . . . . .
"""


@pytest.mark.parametrize("extra, sensible", [((), 0), (((3, 3),), 1)])
def test_sensibleness_keeps_true_eyes_and_allows_false_ones(extra, sensible):
    # (2,2): all four neighbours black; one white diagonal is still an eye, two make it false
    text = EYE
    rows = [ln.split() for ln in text.strip().splitlines()]
    for r, c in extra:
        rows[r][c] = "O"
    fs, p = planes_of(position("\n".join(" ".join(r) for r in rows), BLACK), "alphago")
    s = group(fs, p, "sensibleness")[..., 0]
    assert s[2, 2] == sensible
    assert s[0, 0] == 1 and s[1, 1] == 0  # an open point is sensible; an occupied one is not legal


@pytest.mark.parametrize("white_diagonal, sensible", [(False, 0), (True, 1)])
def test_edge_eye_allows_no_opponent_diagonal(white_diagonal, sensible):
    text = """
        . X . X .
        . O X . .
        . . . . .
        . . . . .
        . . . . .
    """ if white_diagonal else """
        . X . X .
        . . X . .
        . . . . .
        . . . . .
        . . . . .
    """
    fs, p = planes_of(position(text, BLACK), "alphago")
    assert group(fs, p, "sensibleness")[0, 2, 0] == sensible


@pytest.mark.parametrize("rank, plane", [(5, 5), (0, 0), (8, 8), (12, 8), (-3, None), (-128, None)])
def test_rank_planes_are_constant_one_hot(rank, plane):
    fs, p = planes_of(position(BOARD, BLACK), "maddison", rank=rank)
    g = group(fs, p, "rank_dan_9")
    assert (g == g[0, 0]).all()  # constant over the board
    assert idx(g, 0, 0) == plane


def test_assemble_puts_constant_planes_in_order():
    fs = features.get("alphago")
    enc = replay.encode_game(position(BOARD, WHITE), fs)
    full = fs.assemble(enc.planes, enc.columns())
    assert full.shape == (1, 7, 7, 48)
    assert (full[..., 3] == 1).all() and (full[..., 47] == 0).all()
    stored = np.delete(full, [3, 47], axis=-1)
    np.testing.assert_array_equal(stored, enc.planes)


def test_iter_positions_entry_point_yields_every_move():
    rec = GameRecord.from_moves(9, [(BLACK, 40), (WHITE, 41), (BLACK, 81), (WHITE, 30)])
    pos = list(replay.iter_positions(rec, "maddison"))
    assert [p.target for p in pos] == [40, 41, 81, 30]
    assert [p.move_number for p in pos] == [1, 2, 3, 4] and [p.to_move for p in pos] == [1, 2, 1, 2]
    assert pos[0].planes.shape == (9, 9, 36) and pos[0].planes.dtype == np.uint8


def _history_by_name(fs):
    """The input pipeline's history groups as it found them by feature name before features declared them."""
    out, off = [], 0
    for f in fs.features:
        if not f.constant:
            if f.name == "previous_moves_5":
                out += [(off + d,) for d in range(5)]
            if f.name == "history_8":
                out += [(off + d, off + 8 + d) for d in range(1, 8)]
        off += f.planes
    return tuple(out)


def _legality_by_name(fs):
    """eval's legality planes as it found them by feature name before features declared them."""
    names = [f.name for f in fs.features]
    offsets = np.cumsum([0] + [f.planes for f in fs.features])
    if "legal" in names:
        return (int(offsets[names.index("legal")]),)
    lib = [i for i, nm in enumerate(names) if nm.startswith("liberties_after_")]
    return tuple(range(int(offsets[lib[0]]), int(offsets[lib[0] + 1]))) if lib else None


@pytest.mark.parametrize("name", ["maddison", "alphago", "agz", "gonn", "nogo_liberties", "agz+nogo_liberties",
                                  "rank_planes", "gonn+rank_planes"])
def test_declared_history_and_legality_match_the_old_name_rules(name):
    from kifunet.train import windows

    fs = features.get(name)
    assert fs.history_channels() == _history_by_name(fs)
    assert windows.layout_for(fs).history == _history_by_name(fs)
    assert fs.legal_channels() == _legality_by_name(fs)
    expected = {"maddison": (False, True), "alphago": (False, True), "agz": (True, False), "gonn": (True, False)}
    has_history, has_legality = expected.get(name.split("+")[0], (False, False))
    assert bool(fs.history_channels()) == has_history and (fs.legal_channels() is not None) == has_legality


def test_every_registered_set_is_covered_by_the_declaration_test():
    # qiqiao came after the name rules: tests/test_features_qiqiao.py::test_set_declarations checks its declarations
    assert set(features.names()) <= {"maddison", "alphago", "agz", "gonn", "nogo_liberties", "qiqiao", "rank_planes"}


def test_feature_declarations_are_checked():
    with pytest.raises(ValueError, match="legality"):
        features.Feature("x", 2, "", fn=None, legality="union")
    with pytest.raises(ValueError, match="history"):
        features.Feature("x", 2, "", fn=None, history=((2,),))
