"""SGF reading: events of the main line, metadata, every bad input a named SgfError, real KGS data (the codec
choice is tests/test_charsets.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import random
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
from sgfmill import sgf

from kifunet.data_prep import coords, ranks
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.errors import SgfError
from kifunet.data_prep.game import BLACK, EMPTY, MOVE, SETUP, WHITE
from kifunet.data_prep.sgf.sgf_io import REASONS, load_game

FIXTURES = Path(__file__).parent / "fixtures" / "bad_inputs"
KGS = Path(__file__).parents[1] / ".." / "shared" / "data" / "kgs"
KGS_2017_01 = KGS / "KGS-2017_01-19-733-.tar.gz"
FOX = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fox" / "fox-pro-2012-2019.tar.gz"


def _generator():
    spec = importlib.util.spec_from_file_location("bad_inputs_generate", FIXTURES / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def flat(sgf_point: str, n: int = 19) -> int:
    return coords.to_flat(coords.from_sgf(sgf_point, n), n)


def events(g):
    return list(zip(g.kinds.tolist(), g.colours.tolist(), g.points.tolist()))


# ------------------------------------------------------------------------------------------ fixtures


def test_fixture_files_are_what_the_generator_writes():
    made = GEN.fixtures()
    on_disk = {p.name for p in FIXTURES.iterdir() if p.is_file() and p.suffix != ".py"}
    assert on_disk == set(made) == set(GEN.MANIFEST)
    for name, data in made.items():
        assert (FIXTURES / name).read_bytes() == data, name
    assert sum(len(d) for d in made.values()) < 4096


@pytest.mark.parametrize("name", sorted(GEN.MANIFEST))
def test_bad_inputs(name):
    reason = GEN.MANIFEST[name]
    path = FIXTURES / name
    display = f"archive.tar.gz:{name}"
    if reason is None:
        g = load_game(path)
        assert g.info.path == str(path)
        assert load_game(path.read_bytes(), path=display).info.path == display
        return
    assert reason in REASONS
    with pytest.raises(SgfError) as e:
        load_game(path)
    assert e.value.reason == reason and e.value.path == str(path)
    assert str(e.value).startswith(f"{path}: ")
    with pytest.raises(SgfError) as e:
        load_game(path.read_bytes(), path=display)
    assert e.value.reason == reason and e.value.path == display and display in str(e.value)


def test_error_messages_name_the_move():
    with pytest.raises(SgfError, match=r"move 3 \(B \[zz\]\) is malformed or off the 19x19 board"):
        load_game(FIXTURES / "move_off_board.sgf")
    with pytest.raises(SgfError, match=r"move 2 \(W \[jj\]\) .* 9x9"):
        load_game(FIXTURES / "move_off_9x9.sgf")
    with pytest.raises(SgfError, match=r"node 0: setup AB\[cc\]\[zz\]"):
        load_game(FIXTURES / "setup_off_board.sgf")
    with pytest.raises(SgfError, match=r"move 2 \(node 2\) has both B and W"):
        load_game(FIXTURES / "both_colours.sgf")
    with pytest.raises(SgfError, match=r"19:13"):
        load_game(FIXTURES / "size_19x13.sgf")


def test_games_without_moves_and_bad_ha_km_load():
    g = load_game(FIXTURES / "no_moves.sgf")
    assert g.num_moves == 0 and len(g.kinds) == 0 and g.size == 9 and g.info.komi == 7.5
    g = load_game(FIXTURES / "bad_ha_km.sgf")
    assert g.info.handicap == 0 and g.info.komi is None and g.info.year == 1846 and g.num_moves == 1


# ------------------------------------------------------------------------------------------ events


def test_main_line_setup_moves_and_passes():
    text = (
        "(;GM[1]FF[4]SZ[19]HA[2]AB[pd][dp]AW[aa:ab]"
        ";W[qp];B[]"
        "(;W[tt]AE[pd]AB[ss];B[dd]"
        "(;W[cc])(;W[ee]))"
        "(;W[jj]))"
    )
    g = load_game(text.encode())
    assert events(g) == [
        (SETUP, BLACK, flat("pd")), (SETUP, BLACK, flat("dp")),
        (SETUP, WHITE, flat("aa")), (SETUP, WHITE, flat("ab")),
        (MOVE, WHITE, flat("qp")),
        (MOVE, BLACK, 361),
        (SETUP, EMPTY, flat("pd")), (SETUP, BLACK, flat("ss")),
        (MOVE, WHITE, 361),
        (MOVE, BLACK, flat("dd")),
        (MOVE, WHITE, flat("cc")),
    ]
    assert g.kinds.dtype == np.int8 and g.colours.dtype == np.int8 and g.points.dtype == np.int16
    assert g.num_moves == 5 and g.info.handicap == 2
    # orientation: SGF 'pd' is the upper-right star point, row 3 from the top, column 15
    assert flat("pd") == 3 * 19 + 15 == coords.to_flat(coords.from_sgfmill((15, 15), 19), 19)


def test_setup_order_within_a_node_is_ae_ab_aw_sorted():
    g = load_game(b"(;SZ[9];B[ee];AW[ia][aa]AB[ii][bb]AE[ee])")
    assert events(g) == [
        (MOVE, BLACK, flat("ee", 9)),
        (SETUP, EMPTY, flat("ee", 9)),
        (SETUP, BLACK, flat("bb", 9)), (SETUP, BLACK, flat("ii", 9)),
        (SETUP, WHITE, flat("aa", 9)), (SETUP, WHITE, flat("ia", 9)),
    ]


@pytest.mark.parametrize(
    "sz,n", [("", 19), ("SZ[9]", 9), ("SZ[13]", 13), ("SZ[19:19]", 19), ("SZ[ 2 ]", 2)])
def test_board_sizes(sz, n):
    g = load_game(f"(;GM[1]{sz};B[aa];W[tt])".encode())
    assert g.size == n == g.info.size
    assert g.moves() == [(BLACK, 0), (WHITE, n * n)]  # 'tt' is pass on every board up to 19


def test_metadata():
    raw = ("(;GM[1]FF[4]CA[UTF-8]SZ[19]PB[Alice]PW[Bob]BR[6d]WR[9d?]KM[6.50]HA[0]RE[W+Resign]"
           "DT[2015-01-31]RU[Japanese];B[pd])").encode()
    g = load_game(raw, path="x.tar.gz:2015/01/31/a.sgf")
    i = g.info
    assert (i.black, i.white, i.black_rank_text, i.white_rank_text) == ("Alice", "Bob", "6d", "9d?")
    assert (i.black_rank, i.white_rank) == (5, 8)
    assert (i.komi, i.handicap, i.result, i.date, i.year, i.rules) == (6.5, 0, "W+Resign", "2015-01-31", 2015,
                                                                      "Japanese")
    assert (i.size, i.path, i.encoding) == (19, "x.tar.gz:2015/01/31/a.sgf", "utf-8")
    assert i.content_hash == hashlib.sha256(raw).hexdigest()
    bare = load_game(b"(;B[pd])").info
    assert (bare.black, bare.black_rank, bare.komi, bare.handicap, bare.year, bare.date, bare.path) == (
        "", ranks.UNKNOWN, None, 0, None, "", "<bytes>")
    assert load_game(b"(;PB[  Alice \n ]RE[ B+R ];B[pd])").info.black == "Alice"


@pytest.mark.parametrize(
    "props,komi,handicap,year",
    [("KM[7.5]HA[3]DT[1846]", 7.5, 3, 1846), ("KM[-3]HA[ 4 ]DT[15-01-01]", -3.0, 4, None),
     ("KM[6,5]HA[-2]DT[2003-01-01,02]", None, 0, 2003), ("KM[nan]HA[9999]DT[about 1700?]", None, 0, 1700),
     ("KM[inf]HA[2.5]DT[20150131]", None, 0, None),
     # Fox: hundredths of a point, and of a stone under Chinese rules (3.75 stones = 7.5 points); KM[0] as written
     ("KM[650]HA[0]DT[2017-11-12]", 6.5, 0, 2017), ("KM[450]HA[4]", 4.5, 4, None),
     ("KM[375]HA[0]RU[Chinese]", 7.5, 0, None), ("KM[0]HA[3]RU[Japanese]", 0.0, 3, None)])
def test_komi_handicap_year_parsing(props, komi, handicap, year):
    i = load_game(f"(;SZ[19]{props};B[pd])".encode()).info
    assert (i.komi, i.handicap, i.year) == (komi, handicap, year)


@pytest.mark.parametrize(
    "prop", ["CP[Copyright GoGoD 2010]", "SO[GoGoD]", "GC[From the gogod encyclopaedia]", "US[GoGoD95]",
             "AN[GoGoD team]"])
def test_gogod_records_read_bare_dan_as_professional(prop):
    i = load_game(f"(;SZ[19]{prop}BR[9d]WR[7d ama];B[pd])".encode()).info
    assert (i.black_rank, i.white_rank) == (17, 6)
    i = load_game(b"(;SZ[19]CP[Kiseido]BR[9d]WR[7d ama];B[pd])").info
    assert (i.black_rank, i.white_rank) == (8, 6)


# ------------------------------------------------------------------------------------------ robustness


def test_paths_that_cannot_be_read(tmp_path):
    for p in (tmp_path / "missing.sgf", tmp_path):
        with pytest.raises(SgfError) as e:
            load_game(p)
        assert e.value.reason == "unreadable" and e.value.path == str(p)
    with pytest.raises(TypeError):
        load_game(12345)


def test_unexpected_exceptions_become_internal_error(monkeypatch):
    def boom(_bb):
        raise RuntimeError("boom")

    monkeypatch.setattr(sgf_io.sgf_grammar, "parse_sgf_game", boom)
    with pytest.raises(SgfError) as e:
        load_game(b"(;B[pd])", path="p.sgf")
    assert e.value.reason == "internal_error" and isinstance(e.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    "raw", [b"(B[aa];W[bb])", b"(;B[aa]", b"(;B[aa](;W[bb])B[cc])", b"(;B[aa]W)", b"(;[aa])", b"();"])
def test_parse_errors(raw):
    with pytest.raises(SgfError) as e:
        load_game(raw)
    assert e.value.reason == "parse_error"


def test_collections_yield_the_first_game():
    g = load_game(b"(;SZ[9];B[aa])(;SZ[19];B[pd];W[dd])")
    assert g.size == 9 and g.moves() == [(BLACK, 0)]


def test_deep_variations_do_not_recurse_or_hang():
    depth = 5000
    raw = b"(;SZ[19]" + b"(;B[aa]" * depth + b")" * (depth + 1)
    t = time.perf_counter()
    assert load_game(raw).num_moves == depth
    with pytest.raises(SgfError) as e:
        load_game(b"(;SZ[19]" + b"(;B[aa]" * depth)  # never closed
    assert e.value.reason == "parse_error"
    assert time.perf_counter() - t < 5


def test_mutated_records_load_or_raise_sgf_error():
    """Fuzz: truncations and random byte edits of a real-looking record never raise anything but SgfError."""
    base = ("(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[6.5]HA[2]PB[黒]PW[w]BR[3d]WR[2k]AB[dd][pp]C[a \\] b]"
            ";W[qd];B[dc](;W[ce]AE[dd];B[])(;W[tt]))").encode()
    rng = random.Random(7)
    alphabet = b"()[];\\:ABWSZtzaq19 \xff\x82\x00"
    inputs = [base[:k] for k in range(len(base))]
    for _ in range(1500):
        b = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            op, pos = rng.randrange(3), rng.randrange(len(b))
            if op == 0:
                b[pos] = rng.choice(alphabet)
            elif op == 1:
                b.insert(pos, rng.choice(alphabet))
            else:
                del b[pos]
        inputs.append(bytes(b))
    outcomes = {}
    for raw in inputs:
        try:
            g = load_game(raw, path="fuzz.sgf")
            assert len(g.kinds) == len(g.colours) == len(g.points)
            assert ((g.points >= 0) & (g.points <= g.size * g.size)).all()
            outcomes["ok"] = outcomes.get("ok", 0) + 1
        except SgfError as e:
            assert e.reason in REASONS and e.reason != "internal_error", e
            assert e.path == "fuzz.sgf"
            outcomes[e.reason] = outcomes.get(e.reason, 0) + 1
    assert outcomes["ok"] > 100 and outcomes["parse_error"] > 100 and outcomes.get("bad_point", 0) > 10


# ------------------------------------------------------------------------------------------ real data


@pytest.mark.slow
def test_every_game_of_the_kgs_2017_01_archive_loads(kgs_2017_01):
    """733 games; moves and setup equal what sgfmill itself reads; 153,800 non-pass moves (issue 2)."""
    games = moves = non_pass = 0
    with tarfile.open(KGS_2017_01) as tf:
        for member in tf:
            if not (member.isfile() and member.name.endswith(".sgf")):
                continue
            raw = tf.extractfile(member).read()
            name = f"{KGS_2017_01.name}:{member.name}"
            g = load_game(raw, path=name)
            games += 1
            assert g.info.path == name and g.info.encoding == "utf-8" and g.size == 19
            assert g.info.content_hash == hashlib.sha256(raw).hexdigest()
            ref = sgf.Sgf_game.from_bytes(raw)
            ref_moves, ref_setup = [], []
            for node in ref.get_main_sequence():
                colour, move = node.get_move()
                ab, aw, ae = node.get_setup_stones()
                for pts, c in ((ae, EMPTY), (ab, BLACK), (aw, WHITE)):
                    ref_setup += sorted((c, coords.to_flat(coords.from_sgfmill(p, 19), 19)) for p in pts)
                if colour is not None:
                    ref_moves.append((BLACK if colour == "b" else WHITE,
                                      coords.to_flat(coords.from_sgfmill(move, 19), 19)))
            assert g.moves() == ref_moves, name
            setup = g.kinds == SETUP
            assert list(zip(g.colours[setup].tolist(), g.points[setup].tolist())) == ref_setup, name
            moves += g.num_moves
            non_pass += int(np.count_nonzero((g.kinds == MOVE) & (g.points != 361)))
            for text, value in ((g.info.black_rank_text, g.info.black_rank),
                                (g.info.white_rank_text, g.info.white_rank)):
                assert ranks.is_known(value) == (text not in ("", "?", "-")), (name, text)
            assert g.info.year == 2017 and g.info.komi is not None
    print(f"KGS 2017-01: {games} games, {moves} moves, {non_pass} non-pass")
    assert games == 733
    assert non_pass == 153_800
