"""Reader API: random access, ranges, batches, symmetries, pickling and forks, grain."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle

import numpy as np
import pytest

from kifunet.data_prep.building import build, splits
from kifunet.data_prep.planes import features
from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.datasets.reader import Reader
from test_build import cfg_for, quiet, write_corpus


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("reader")
    write_corpus(root / "in", 14, moves=30)
    rule = splits.make_rule(None, val_fraction=0.3)
    build.build(cfg_for([root / "in"], root / "out", splits=rule, shard_rows=90), log=quiet)
    return str(root / "out")


def test_lengths_and_shards(dataset):
    m = json.load(open(os.path.join(dataset, "manifest.json")))
    r = Reader(dataset, "train")
    assert len(r) == m["splits"]["train"]["rows"] and r.num_shards == len(m["splits"]["train"]["shards"]) >= 3
    assert r.locate(0) == (0, 0) and r.locate(len(r) - 1)[0] == r.num_shards - 1
    with pytest.raises(IndexError):
        r[len(r)]
    with pytest.raises(KeyError):
        Reader(dataset, "nosuch")


def test_getitem_batch_range_and_iter_agree(dataset):
    r = Reader(dataset, "train")
    n = len(r)
    whole = r.read_range(0, n)
    assert whole["planes"].shape == (n, 9, 9, features.get("maddison").num_planes)
    assert np.array_equal(whole["index"], np.arange(n))
    idx = np.array([n - 1, 0, 89, 90, 91, 5, 5, n // 2])  # across shard boundaries, repeats, any order
    b = r.batch(idx)
    for k in ("planes", "target", "to_move", "move_number", "player_rank", "opponent_rank", "game_index"):
        assert np.array_equal(b[k], whole[k][idx]), k
    one = r[-1]
    assert np.array_equal(one["planes"], whole["planes"][n - 1]) and one["target"] == whole["target"][n - 1]
    parts = list(r.iter_batches(64))
    assert [len(p["target"]) for p in parts] == [64] * (n // 64) + ([n % 64] if n % 64 else [])
    assert np.array_equal(np.concatenate([p["planes"] for p in parts]), whole["planes"])
    assert sum(1 for _ in r.iter_batches(64, drop_remainder=True)) == n // 64


def test_symmetries_at_load_time(dataset):
    r = Reader(dataset, "train")
    idx = np.arange(16)
    s = np.arange(16) % 8
    plain, aug = r.batch(idx), r.batch(idx, symmetries=s)
    assert np.array_equal(aug["planes"], sym.apply_planes_batch(plain["planes"], s))
    assert np.array_equal(aug["target"], sym.apply_index_batch(plain["target"].astype(np.int64), s, 9))
    a = [b["target"] for b in r.iter_batches(32, augment=True, seed=5)]
    c = [b["target"] for b in r.iter_batches(32, augment=True, seed=5)]
    assert all(np.array_equal(x, y) for x, y in zip(a, c))  # deterministic from the seed


def test_stored_planes_and_games_table(dataset):
    r = Reader(dataset, "val", assemble=False)
    b = r.batch([0, 1])
    assert "planes" not in b and b["stored"].shape[-1] == features.get("maddison").num_stored
    g = r.game(int(b["game_index"][0]))
    assert g["path"].endswith(".sgf") and g["size"] == 9 and g["positions"] > 0


def _read_in_child(reader, idx):
    return reader.batch(idx)["target"].tolist()


def test_pickle_and_fork_safety(dataset):
    r = Reader(dataset, "train")
    assert all(s._f is None for s in r._shards)  # nothing open before first use
    want = r.batch([3, 100, 7])["target"].tolist()  # opens files in the parent
    clone = pickle.loads(pickle.dumps(r))
    assert all(s._f is None for s in clone._shards) and clone.batch([3, 100, 7])["target"].tolist() == want
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.starmap(_read_in_child, [(r, [3, 100, 7])] * 4)
    assert got == [want] * 4


def test_a_dataset_built_before_the_outcome_column_still_loads(dataset, tmp_path):
    """A build from before results were read: no ``outcome`` in its shards nor its manifest, no result columns in
    its games tables. It opens, every way of reading gives ``outcome`` -128 (unknown) and the other columns as
    before, and ``kifunet stats`` counts its results from the ``RE`` text."""
    import shutil

    import h5py

    from kifunet.data_prep.datasets import stats

    copy = tmp_path / "old"
    shutil.copytree(dataset, copy)
    from kifunet.data_prep.datasets.shards import sha256_file

    m = json.load(open(copy / "manifest.json"))
    m["columns"].remove("outcome")
    for split, info in m["splits"].items():
        for sh in info["shards"]:
            with h5py.File(copy / sh["file"], "r+") as f:
                del f["outcome"]
            sh["sha256"] = sha256_file(copy / sh["file"])  # the old build's own, consistent, checksums
        with h5py.File(copy / info["games_table"], "r+") as f:
            for k in ("result_kind", "winner", "margin"):
                del f[k]
        info.pop("games_table_sha256", None)  # not recorded then
    m.pop("manifest_sha256")  # nor the manifest's own checksum
    json.dump(m, open(copy / "manifest.json", "w"))
    new, old = Reader(dataset, "train"), Reader(str(copy), "train")
    assert old.columns == new.columns and "outcome" in old.columns
    n = len(old)
    a, b = new.batch(np.arange(n)), old.batch(np.arange(n))
    assert set(np.unique(a["outcome"]).tolist()) == {-1, 1}  # RE[B+R]: the new build knows the winner
    assert b["outcome"].dtype == np.int8 and (b["outcome"] == -128).all()
    for k in a:
        if k != "outcome":
            assert np.array_equal(a[k], b[k]), k
    assert (old.column("outcome") == -128).all() and len(old.column("outcome")) == n
    pieces = [p for i in range(len(old.blocks())) for p in old.read_blocks(*old.block_spans()[i])]
    assert sum(len(p["columns"]["outcome"]) for p in pieces) == n
    assert all((p["columns"]["outcome"] == -128).all() for p in pieces)
    st_new, st_old = stats.dataset_stats(dataset), stats.dataset_stats(str(copy))
    assert st_old["splits"]["train"]["games_by_result"] == st_new["splits"]["train"]["games_by_result"] == {
        "resign": m["splits"]["train"]["games"]}


def test_feature_version_checked(dataset, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    m = json.load(open(copy / "manifest.json"))
    m["features"]["version"] += 1
    m.pop("manifest_sha256")  # as a build of that version would have written it (before the manifest's checksum)
    json.dump(m, open(copy / "manifest.json", "w"))
    with pytest.raises(ValueError, match="rebuild"):
        Reader(str(copy), "train").batch([0])


def test_grain_random_access_source(dataset):
    grain = pytest.importorskip("grain")
    r = Reader(dataset, "train")
    ds = grain.MapDataset.source(r).shuffle(seed=3).batch(8)
    first = next(iter(ds))
    order = list(grain.MapDataset.range(len(r)).shuffle(seed=3))[:8]
    assert np.array_equal(first["target"], r.batch(order)["target"])
    assert first["planes"].shape == (8, 9, 9, features.get("maddison").num_planes)
