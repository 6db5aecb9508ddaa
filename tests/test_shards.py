"""Shard files: packing, the point-code layout, bit-exact round trips, byte-reproducible HDF5."""

from __future__ import annotations

import hashlib
import json
import os

import h5py
import numpy as np
import pytest

from kifunet.data_prep.datasets import shards
from kifunet.data_prep.datasets.shards import Storage


def _planes(rows=300, n=9, c=27, seed=0, density=0.08):
    rng = np.random.default_rng(seed)
    # structured like real planes: few distinct point patterns, plus some random noise points
    patterns = (rng.random((40, c)) < density).astype(np.uint8)
    idx = rng.integers(0, len(patterns), size=(rows, n, n))
    out = patterns[idx]
    noise = rng.random((rows, n, n)) < 0.01
    out[noise] = (rng.random((int(noise.sum()), c)) < 0.5)
    return out


def _columns(rows, seed=1):
    rng = np.random.default_rng(seed)
    return {"target": rng.integers(0, 82, rows).astype(np.int16), "to_move": rng.integers(1, 3, rows).astype(np.int8),
            "move_number": rng.integers(1, 300, rows).astype(np.int16),
            "player_rank": rng.integers(-30, 18, rows).astype(np.int8),
            "opponent_rank": rng.integers(-30, 18, rows).astype(np.int8),
            "game_index": rng.integers(0, 1000, rows).astype(np.int32),
            "outcome": rng.choice(np.array([1, -1, 0, -128], np.int8), rows)}


def _sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


@pytest.mark.parametrize("c", [1, 7, 8, 9, 27, 46, 64])
def test_pack_points_matches_numpy(c):
    p = _planes(rows=20, c=c, seed=c)
    packed = shards.pack_points(p)
    assert np.array_equal(packed, np.packbits(p, axis=-1))
    assert np.array_equal(shards.unpack_points(packed, c), p)
    flat = shards.pack_planes(p)
    assert flat.shape == (20, shards.packed_width(9, c))
    assert np.array_equal(shards.unpack_planes(flat, 9, c), p)


def test_dict_codes_round_trip_and_dtypes():
    p = _planes(rows=200)
    codes, table = shards.dict_encode(shards.pack_points(p))
    assert codes.dtype == np.uint8 and codes.shape == (200, 9, 9)
    assert len(table) == len(np.unique(shards.pack_points(p).reshape(-1, 4), axis=0))
    assert np.array_equal(shards.dict_decode(codes, table, 27), p)
    # more than 256 distinct points -> uint16 codes
    rng = np.random.default_rng(5)
    wide = (rng.random((50, 9, 9, 20)) < 0.5).astype(np.uint8)
    codes, table = shards.dict_encode(shards.pack_points(wide))
    assert codes.dtype == np.uint16 and len(table) > 256
    assert np.array_equal(shards.dict_decode(codes, table, 20), wide)


@pytest.mark.parametrize("layout", shards.LAYOUTS)
@pytest.mark.parametrize("codec,level", [("gzip", 4), ("gzip", 1), ("lzf", 4), ("none", 4)])
def test_write_read_round_trip_bit_exact(tmp_path, layout, codec, level):
    p, cols = _planes(), _columns(300)
    path = str(tmp_path / "s.h5")
    st = Storage(planes=layout, compression=codec, level=level, chunk_rows=64)
    used = shards.write_shard(path, shards.pack_points(p), cols, num_stored=27, storage=st,
                              attrs={"split": "train", "shard": 3})
    assert used == layout and not os.path.exists(path + ".tmp")
    sf = shards.ShardFile(path)
    assert len(sf) == 300 and sf.layout == layout
    a = sf.attrs
    assert a["format"] == shards.FORMAT and a["split"] == "train" and a["shard"] == 3 and a["num_stored"] == 27
    planes, got = sf.read_range(0, 300)
    assert np.array_equal(planes, p)
    for k, v in cols.items():
        assert np.array_equal(got[k], v) and got[k].dtype == shards.COLUMN_DTYPES[k]
    rows = np.array([299, 0, 64, 63, 5, 5, 200])
    planes, got = sf.read_rows(rows)
    assert np.array_equal(planes, p[rows])
    assert np.array_equal(got["target"], cols["target"][rows])
    with h5py.File(path, "r") as f:
        if codec != "none":
            assert f["planes"].compression == ("gzip" if codec == "gzip" else "lzf")
        assert f["planes"].chunks[0] == 64 and f["target"].chunks == (64,)
    sf.close()


def test_codes_fall_back_to_packbits_when_too_many(tmp_path, monkeypatch):
    monkeypatch.setattr(shards, "MAX_CODES", 10)
    p = _planes(rows=50)
    path = str(tmp_path / "s.h5")
    used = shards.write_shard(path, shards.pack_points(p), _columns(50), num_stored=27, storage=Storage())
    assert used == "packbits"
    assert np.array_equal(shards.ShardFile(path).read_range(0, 50)[0], p)


def test_equal_content_gives_equal_bytes(tmp_path):
    p, cols = _planes(), _columns(300)
    shas = []
    for i in range(2):
        path = str(tmp_path / f"s{i}.h5")
        shards.write_shard(path, shards.pack_points(p), cols, num_stored=27, storage=Storage(chunk_rows=32),
                           attrs={"split": "train"})
        shas.append(_sha(path))
        os.utime(path, (1, 1))
    assert shas[0] == shas[1]
    # and different content differs
    cols2 = dict(cols, target=cols["target"][::-1].copy())
    path = str(tmp_path / "s2.h5")
    shards.write_shard(path, shards.pack_points(p), cols2, num_stored=27, storage=Storage(chunk_rows=32),
                       attrs={"split": "train"})
    assert _sha(path) != shas[0]


def test_empty_shard_and_failed_write_leave_no_file(tmp_path):
    path = str(tmp_path / "e.h5")
    shards.write_shard(path, np.zeros((0, 9, 9, 4), np.uint8), {k: v[:0] for k, v in _columns(1).items()},
                       num_stored=27, storage=Storage())
    assert len(shards.ShardFile(path)) == 0
    bad = str(tmp_path / "bad.h5")
    with pytest.raises(KeyError):
        shards.write_shard(bad, shards.pack_points(_planes(rows=5)), {"nonsense": np.zeros(5)}, num_stored=27,
                           storage=Storage())
    assert not os.path.exists(bad) and not os.path.exists(bad + ".tmp")


def test_shard_file_pickles_closed_and_reopens_after_fork(tmp_path):
    import pickle

    path = str(tmp_path / "s.h5")
    p = _planes(rows=40)
    shards.write_shard(path, shards.pack_points(p), _columns(40), num_stored=27, storage=Storage())
    sf = shards.ShardFile(path)
    assert sf._f is None  # nothing opened yet
    sf.read_rows([3])
    clone = pickle.loads(pickle.dumps(sf))
    assert clone._f is None
    assert np.array_equal(clone.read_rows([3, 4])[0], p[[3, 4]])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: the parent's handle must not be reused
        ok = np.array_equal(sf.read_rows([7])[0], p[[7]]) and sf._pid == os.getpid()
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 1) == b"1"


def test_games_table_round_trip(tmp_path):
    from kifunet.data_prep import results

    games = [{"path": "a.tar.gz!x/1.sgf", "black": "Bé", "white": "W", "black_rank": 5, "white_rank": -128,
              "komi": 6.5, "handicap": 0, "year": 2015, "size": 19, "num_moves": 200, "positions": 180,
              "date": "2015-01-02", "moves_hash": "ab" * 16, "result": "W+12.5", "result_kind": 2, "winner": 2,
              "margin": 12.5},
             {"path": "b.sgf", "komi": None, "year": None, "margin": None}]
    path = str(tmp_path / "games.h5")
    shards.write_games_table(path, games, attrs={"split": "test"})
    t = shards.read_games_table(path)
    assert list(t["path"]) == ["a.tar.gz!x/1.sgf", "b.sgf"] and t["black"][0] == "Bé"
    assert t["komi"][0] == np.float32(6.5) and np.isnan(t["komi"][1])
    assert t["year"].tolist() == [2015, 0] and t["positions"].tolist() == [180, 0]
    assert t["white_rank"][0] == -128
    # the result: kind code (missing: 0, unknown), winner (missing: 0, none), margin (missing: NaN)
    assert list(t["result"]) == ["W+12.5", ""] and t["result_kind"].tolist() == [2, 0]
    assert t["winner"].tolist() == [2, 0] and t["margin"][0] == np.float32(12.5) and np.isnan(t["margin"][1])
    assert t["result_kind"].dtype == np.int8 and t["margin"].dtype == np.float32
    with h5py.File(path, "r") as f:
        assert json.loads(f.attrs["result_kinds"]) == list(results.KINDS)


def test_a_shard_written_before_the_outcome_column_reads_it_as_unknown(tmp_path):
    p, cols = _planes(rows=40), _columns(40)
    old = {k: v for k, v in cols.items() if k != "outcome"}
    path = str(tmp_path / "old.h5")
    shards.write_shard(path, shards.pack_points(p), old, num_stored=27, storage=Storage(chunk_rows=16))
    sf = shards.ShardFile(path)
    assert "outcome" in sf.column_names()
    for got in (sf.read_columns(0, 40), sf.read_range(3, 9)[1], sf.read_rows([5, 0, 39])[1]):
        assert got["outcome"].dtype == np.int8 and (got["outcome"] == shards.COLUMN_DEFAULTS["outcome"]).all()
        assert len(got["outcome"]) == len(got["target"])
    assert shards.COLUMN_DEFAULTS["outcome"] == -128
    assert np.array_equal(sf.read_columns(0, 40)["target"], cols["target"])  # the other columns as written
