"""One dataset-access layer (data_prep/datasets/dataset.py): the HDF5 and TFDS containers of the same small build behind one
protocol -- the same rows by index and by blocks, the same shape facts and the same errors.

The archive is the one of tests/test_tfds_go_moves.py, built both ways with a third date split (``val:1990``)
that receives no game. The containers store the rows in different orders (the HDF5 build's seeded shuffle, TFDS's
hash-of-key order), so rows are matched by their position key (game moves hash, move number).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from conftest import require_module

require_module("tensorflow_datasets")
require_module("array_record")

from kifunet.cli import main as cli_main  # noqa: E402
from kifunet.data_prep.datasets import shards  # noqa: E402
from kifunet.data_prep.datasets.dataset import (DatasetSplit, EmptySplitError, NotADatasetError,  # noqa: E402
                                                UnknownSplitError, describe, open_split)
from kifunet.data_prep.datasets.reader import Reader  # noqa: E402
from test_tfds_go_moves import make_inputs  # noqa: E402

SPLITS = ["train:2000-2014", "val:1990", "test:2015"]
COLUMNS = ("target", "to_move", "move_number", "player_rank", "opponent_rank", "outcome")


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    """(HDF5 spec, TFDS spec) of the same archive, same filters and splits."""
    import tensorflow_datasets as tfds

    from kifunet.data_prep.building import tfds_go_moves as T

    root = tmp_path_factory.mktemp("dataset")
    manual = make_inputs(root)
    h5 = root / "hdf5"
    args = ["build", str(manual), "--out", str(h5), "--preset", "gonn-kgs", "--features", "maddison", "--workers",
            "0", "--shard-size", "64", "--chunk-rows", "32", "--no-progress"]
    assert cli_main(args + [x for s in SPLITS for x in ("--split", s)]) == 0
    cfg = T.GoMovesConfig(name="kgs_maddison_val", features="maddison", preset="gonn-kgs", options={"splits": SPLITS})
    b = T.GoMoves(config=cfg, data_dir=str(root / "tfds"))
    b.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(manual)))
    return str(h5), f"tfds:{b.data_dir}"


def _keys(r, batch) -> list[tuple[str, int]]:
    """(game_id, move number) of each row of a batch."""
    games = r.games()["game_id"][batch["game_index"]].astype(str) if "game_index" in batch else batch["game"]
    return [(str(g), int(m)) for g, m in zip(games, batch["move_number"])]


def _pieces_rows(pieces: list[dict]) -> tuple[np.ndarray, dict]:
    """Stored planes and columns of a list of pieces, in order."""
    stored = np.concatenate([np.take(p["table"], p["codes"], axis=0) if "codes" in p else p["stored"]
                             for p in pieces])
    cols = {k: np.concatenate([p["columns"][k] for p in pieces]) for k in pieces[0]["columns"]}
    return stored, cols


def test_both_containers_are_one_protocol(specs):
    h5, tf = specs
    a, b = open_split(h5, "train"), open_split(tf, "train")
    assert type(a).__name__ == "Reader" and type(b).__name__ == "TfdsReader"
    for r in (a, b):
        assert isinstance(r, DatasetSplit)
        assert (r.feature_name, r.feature_version, r.num_planes, r.num_stored, r.board_size) == ("maddison", 1, 36,
                                                                                                   27, 19)
        assert set(COLUMNS) <= set(r.columns) and r.feature_set.name == "maddison"
        assert list(r.manifest["splits"]) == ["train", "val", "test"]
    assert describe(h5, "train") | {"shards": 0} == describe(tf, "train") | {"shards": 0}
    assert describe(h5, "train")["shards"] == 2 and describe(tf, "train")["shards"] == 1
    for split in ("train", "val", "test"):
        assert len(open_split(h5, split)) == len(open_split(tf, split)) == a.manifest["splits"][split]["positions"]


@pytest.mark.parametrize("split", ["train", "test"])
def test_same_rows_by_index(specs, split):
    h5, tf = specs
    a, b = open_split(h5, split), open_split(tf, split)
    n = len(a)
    wa, wb = a.batch(np.arange(n)), b.batch(np.arange(n))
    where_b = {k: i for i, k in enumerate(_keys(b, wb))}
    ka = _keys(a, wa)
    assert sorted(ka) == sorted(where_b)
    ib = np.array([where_b[k] for k in ka])  # TFDS index of each HDF5 row
    sym = np.random.default_rng(0).integers(0, 8, n)
    for assemble in (True, False):
        a, b = open_split(h5, split, assemble=assemble), open_split(tf, split, assemble=assemble)
        for s in (None, sym):
            x, y = a.batch(np.arange(n), symmetries=s), b.batch(ib, symmetries=s)
            for k in ("planes" if assemble else "stored",) + COLUMNS:
                assert x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]), (k, assemble, s is None)
            assert np.array_equal(x["index"], np.arange(n)) and np.array_equal(y["index"], ib)
    # one row, a range, sequential batches: the same rows as the batch of all
    for r, w in ((open_split(h5, split), wa), (open_split(tf, split), wb)):
        assert np.array_equal(r[-1]["planes"], w["planes"][-1])
        assert np.array_equal(r.read_range(3, n + 5)["planes"], w["planes"][3:])
        parts = list(r.iter_batches(20, start=1))
        assert np.array_equal(np.concatenate([p["target"] for p in parts]), w["target"][1:])


@pytest.mark.parametrize("split", ["train", "test"])
def test_same_rows_by_blocks(specs, split):
    h5, tf = specs
    got = {}
    for spec in specs:
        r = open_split(spec, split, assemble=False)
        n = len(r)
        whole = r.batch(np.arange(n))
        for block_rows in (0, 8):
            src = r.blocks(block_rows)
            spans = r.block_spans(block_rows)
            assert len(src) == len(spans) and src.num_rows() == n and src.block_rows == (block_rows or r.block_rows)
            assert spans[0, 0] == 0 and spans[-1, 1] == n and np.array_equal(spans[1:, 0], spans[:-1, 1])
            assert (spans[:, 1] - spans[:, 0] <= src.block_rows).all()
            stored, cols = _pieces_rows([src[i] for i in range(len(src))])
            assert np.array_equal(cols["index"], np.arange(n))  # every row once, in order
            assert np.array_equal(stored, whole["stored"])
            for k in r.columns:
                assert cols[k].dtype == shards.COLUMN_DTYPES[k] and np.array_equal(cols[k], whole[k]), k
        stored, cols = _pieces_rows(r.read_blocks(2, n - 1))  # rows across blocks (and HDF5 shards)
        assert np.array_equal(stored, whole["stored"][2: n - 1]) and np.array_equal(cols["index"], np.arange(2, n - 1))
        # pickled to a worker: the description travels, the same blocks come out
        src = r.blocks(8)
        clone = pickle.loads(pickle.dumps(src))
        assert np.array_equal(_pieces_rows([clone[len(clone) - 1]])[0], _pieces_rows([src[len(src) - 1]])[0])
        keys = _keys(r, whole)
        order = sorted(range(n), key=lambda i: keys[i])
        stored, cols = _pieces_rows(r.read_blocks(0, n))
        got[spec] = (stored[order], {k: cols[k][order] for k in COLUMNS})
    (sa, ca), (sb, cb) = got[h5], got[tf]
    assert np.array_equal(sa, sb)
    for k in COLUMNS:
        assert np.array_equal(ca[k], cb[k]), k
    blocks = open_split(h5, split, assemble=False).blocks(8)
    assert all(len(open_split(h5, split).read_blocks(*blocks.spans[i])) == 1 for i in range(len(blocks)))


def test_same_errors(specs, tmp_path):
    from kifunet.train import eval_batches as eb
    from kifunet.train.data import open_blocks
    from test_train_data import pipeline

    h5, tf = specs
    where = {h5: h5, tf: tf[len("tfds:"):]}
    for spec in specs:
        with pytest.raises(UnknownSplitError) as e:
            open_split(spec, "nosuch")
        assert isinstance(e.value, KeyError)
        assert str(e.value).replace(where[spec], "DS") == "DS: no split 'nosuch'; splits: train, val, test"
        # a split of the build that received no game: there, with no rows (TFDS did not write it)
        empty = open_split(spec, "val")
        assert len(empty) == 0 and len(empty.blocks()) == 0 and empty.batch([])["target"].shape == (0,)
        empty_blocks = open_blocks(spec, "val")
        assert eb.num_eval_rows(empty_blocks) == 0 and list(eb.eval_batches(empty_blocks, batch_size=4)) == []
        for call in (lambda: open_split(spec, "val", require_rows=True),
                     lambda: pipeline(spec, "val")):
            with pytest.raises(EmptySplitError) as e:
                call()
            assert isinstance(e.value, ValueError) and str(e.value) == f"{spec}: split 'val' has no rows"
    (tmp_path / "empty").mkdir()
    for spec in (str(tmp_path / "empty"), str(tmp_path / "missing"), f"tfds:{tmp_path / 'empty'}",
                 "tfds:go_moves/no_such_config@" + str(tmp_path), "tfds:go_moves/kgs_gonn@" + str(tmp_path)):
        with pytest.raises(NotADatasetError, match="not a finished kifunet dataset"):
            open_split(spec, "train")
    with pytest.raises(FileNotFoundError):  # what callers catch
        Reader(str(tmp_path / "empty"), "train")


def test_tfds_directory_without_prefix_and_legal_mask(specs):
    from kifunet.eval.legality import LegalMasker

    _, tf = specs
    r = open_split(tf[len("tfds:"):], "test")
    assert type(r).__name__ == "TfdsReader"
    b = r.batch(np.arange(4))
    assert LegalMasker(r)(b).shape == (4, 19 * 19 + 1)  # maddison has a legal plane: no games table needed


def test_evaluation_reads_either_container(specs):
    pytest.importorskip("jax")
    from kifunet.eval.evaluate import Predictor, evaluate
    from test_eval_evaluate import PlaneNet

    res = {}
    for spec in specs:
        with open_split(spec, "test") as r:
            pred = Predictor(PlaneNet(r.board_size, r.num_planes), r.feature_name, info={"params": 0})
            res[spec] = evaluate(pred, r, batch_size=16, ensemble=True, legal_mask=True, progress=False)
    a, b = (res[s] for s in specs)
    assert a["dataset"]["rows"] == b["dataset"]["rows"] == a["results"]["single"]["count"] > 0
    assert b["dataset"]["spec"]["features"] == a["dataset"]["spec"]["features"]
    for mode in ("single", "ensemble"):  # the same positions in another order: the same sums
        x, y = a["results"][mode], b["results"][mode]
        assert x["count"] == y["count"] and x["topk_correct"] == y["topk_correct"]
        assert x["nll_sum"] == pytest.approx(y["nll_sum"], rel=1e-5)
