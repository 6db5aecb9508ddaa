"""A pass stays a pass under every symmetry, through the real dataset layer and the training pipeline.

Datasets built with ``--include-passes`` (9x9 random games with many passes), in both containers: the HDF5
build (``kifunet build``) and the TFDS builder ``go_moves`` with the same options. Through
``data_prep.dataset.open_split`` (``batch(..., symmetries=s)`` for each of the 8 symmetries), the training
pipeline's windows (``train.input_pipeline.window_dataset``, symmetry per example and per batch), its
evaluation batches and ``train_iterator``'s batches, a pass target is index ``N*N`` and every other target is
its point moved by the symmetry. (``test_symmetries.py`` checks the index rule itself; this checks that the
pipeline applies it to the rows it serves.)
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kifunet.cli import main as cli_main
from kifunet.data_prep.planes import features, replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.datasets.dataset import open_split
from kifunet.train import batches, eval_batches
from kifunet.train import input_pipeline as ip
from kifunet.train.data import open_blocks
from test_build import write_corpus
from test_train_data import pipeline

N = 9
PASS = N * N
GAMES = 12


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(corpus dir, multiset of targets over its positions, number of passes)."""
    root = tmp_path_factory.mktemp("passes")
    paths = write_corpus(root / "sgf", GAMES, n=N, moves=40, pass_prob=0.25)
    targets = Counter()
    for p in paths:
        rec = sgf_io.load_game(open(p, "rb").read(), path=p)
        targets.update(replay.encode_game(rec, features.get("maddison"), path=p).target.tolist())
    assert targets[PASS] >= 50  # enough passes for every symmetry to meet several of them
    return root, targets


@pytest.fixture(scope="module")
def hdf5(corpus):
    root, _ = corpus
    out = root / "hdf5"
    assert cli_main(["build", str(root / "sgf"), "--out", str(out), "--features", "maddison", "--board-size", str(N),
                     "--include-passes", "--split", "train:rest", "--chunk-rows", "32", "--shard-size", "200",
                     "--workers", "0", "--no-progress"]) == 0
    return str(out)


@pytest.fixture(scope="module")
def tfds_spec(corpus):
    from conftest import require_module

    tfds = require_module("tensorflow_datasets")
    require_module("array_record")
    from kifunet.data_prep.building import tfds_go_moves as T

    root, _ = corpus
    cfg = T.GoMovesConfig(name="passes_maddison", features="maddison",
                          options={"board_size": N, "include_passes": True, "splits": ["train:rest"]})
    b = T.GoMoves(config=cfg, data_dir=str(root / "tfds"))
    b.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(root / "sgf")))
    return f"tfds:{b.data_dir}"


@pytest.fixture(params=["hdf5", "tfds"])
def spec(request):
    return request.getfixturevalue("hdf5" if request.param == "hdf5" else "tfds_spec")


def _moved(target: np.ndarray, s) -> np.ndarray:
    """The rule: a point moves with the symmetry, a pass stays the pass."""
    s = np.broadcast_to(np.asarray(s), target.shape)
    return np.array([PASS if t == PASS else sym.apply_index(int(t), int(k), N) for t, k in zip(target, s)])


def test_the_datasets_hold_every_pass(spec, corpus):
    _, targets = corpus
    r = open_split(spec, "train")
    got = r.batch(np.arange(len(r)))["target"]
    assert Counter(got.tolist()) == targets  # every position, passes included, none turned into a point


def test_reader_batches_keep_the_pass_under_all_8_symmetries(spec):
    r = open_split(spec, "train")
    idx = np.arange(len(r))
    base = r.batch(idx)
    passes = np.flatnonzero(base["target"] == PASS)
    assert passes.size >= 50 and (base["target"] != PASS).any()
    for s in range(8):
        b = r.batch(idx, symmetries=np.full(len(idx), s))
        assert (b["target"][passes] == PASS).all(), s
        assert np.array_equal(b["target"], _moved(base["target"], s)), s
        # the planes of the pass rows were transformed too (the symmetry reached those rows)
        want = sym.apply_planes_batch(base["planes"][passes], np.full(len(passes), s))
        assert np.array_equal(b["planes"][passes], want)
    mixed = np.arange(len(idx)) % 8
    b = r.batch(idx, symmetries=mixed)
    assert np.array_equal(b["target"], _moved(base["target"], mixed))


@pytest.mark.parametrize("mode", ["example", "batch"])
def test_training_windows_keep_the_pass_under_every_symmetry(spec, mode):
    """The training pipeline's windows, two epochs: each pass row's target is the pass, whatever the symmetry
    drawn (all 8 are drawn for pass rows), and the served planes are the Reader's under that symmetry."""
    r = open_split(spec, "train")
    target = r.batch(np.arange(len(r)))["target"]
    ds = ip.window_dataset(*pipeline(spec, symmetry=mode, window_blocks=2, block_rows=32), batch_size=8, seed=3)
    windows = -(-2 * len(r) // (2 * 32))
    syms_at_pass = Counter()
    served_passes = 0
    for i in range(windows):
        w = ds[i]
        rows, s = w["index"], w["symmetry"]
        assert np.array_equal(w["target"], _moved(target[rows], s))
        at_pass = target[rows] == PASS
        assert (w["target"][at_pass] == PASS).all()
        syms_at_pass.update(s[at_pass].tolist())
        served_passes += int(at_pass.sum())
        if i == 0:
            ref = r.batch(rows, symmetries=s)
            assert np.array_equal(batches.window_batch(w, 0, len(rows))["planes"], ref["planes"])
    assert set(syms_at_pass) == set(range(8)), syms_at_pass
    assert served_passes >= (target == PASS).sum()  # about two epochs' worth (windows drop a few rows)


def test_train_iterator_and_eval_batches_serve_the_passes(spec):
    r = open_split(spec, "train")
    target = r.batch(np.arange(len(r)))["target"]
    n_pass = int((target == PASS).sum())
    # one epoch of training batches (one block a window, a batch of one row: no row dropped)
    it = ip.train_iterator(*pipeline(spec, window_blocks=1, block_rows=32, workers=0), batch_size=1, seed=5)
    blocks = open_blocks(spec, "train", block_rows=32)
    rows = sum(len(blocks[i]["columns"]["target"]) for i in range(len(blocks)))
    got = np.concatenate([next(it)["target"] for _ in range(rows)])
    it.close()
    assert rows == len(r) and int((got == PASS).sum()) == n_pass
    assert Counter(got[got != PASS].tolist()) != Counter(target[target != PASS].tolist())  # symmetries applied
    ev = list(eval_batches.eval_batches(open_blocks(spec, "train"), batch_size=16))
    t = np.concatenate([b["target"] for b in ev])[np.concatenate([b["weight"] for b in ev]) > 0]
    assert np.array_equal(t, target)
