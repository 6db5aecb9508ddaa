"""Windows (train/windows.py) against the Reader: the rows a window holds, their symmetries and planes, history
dropout, the feature sets' history groups, and the ``outcome`` column through symmetries."""

from __future__ import annotations

import numpy as np
import pytest

from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.datasets.reader import Reader
from kifunet.data_prep.planes import features
from kifunet.train import batches, eval_batches, windows
from kifunet.train import input_pipeline as ip
from kifunet.train.data import open_blocks
from test_train_data import ds_gonn, ds_maddison, ds_maddison_packbits, ds_qiqiao, pipeline  # noqa: F401


def _window_planes(w):
    return batches.window_batch(w, 0, len(w["target"]))["planes"]


@pytest.mark.parametrize("layout", ["codes", "packbits"])
@pytest.mark.parametrize("symmetry", ["example", "batch", "none"])
def test_windows_equal_reader_rows_with_their_symmetries(ds_maddison, ds_maddison_packbits, layout, symmetry):
    root = ds_maddison if layout == "codes" else ds_maddison_packbits
    ds = ip.window_dataset(*pipeline(root, symmetry=symmetry, window_blocks=3), batch_size=16, seed=4)
    r = Reader(root, "train")
    seen_syms = set()
    for i in range(3):
        w = ds[i]
        assert ("idx" in w) == (layout == "codes")
        ref = r.batch(w["index"], symmetries=w["symmetry"])
        assert np.array_equal(_window_planes(w), ref["planes"])
        assert np.array_equal(w["target"], ref["target"])
        assert np.array_equal(w["player_rank"], ref["player_rank"]) and np.array_equal(w["to_move"], ref["to_move"])
        assert len(w["target"]) % 16 == 0
        s = w["symmetry"].reshape(-1, 16)
        if symmetry == "batch":
            assert (s == s[:, :1]).all()
        if symmetry == "none":
            assert (s == 0).all()
        seen_syms |= set(np.unique(s).tolist())
    if symmetry == "example":
        assert seen_syms == set(range(8))


def test_pass_target_stays_pass_under_symmetries(ds_maddison):
    # the remapping rule the pipeline calls; tests/test_pass_symmetries.py checks real pass rows of
    # --include-passes datasets (HDF5 and TFDS) through the reader, the windows and the iterators
    n = 9
    t = np.array([n * n] * 8 + [0] * 8)
    s = np.tile(np.arange(8), 2)
    out = sym.apply_index_batch(t, s, n)
    assert (out[:8] == n * n).all() and sorted(set(out[8:].tolist())) == [0, 8, 72, 80]


def test_history_dropout_gonn_cascade(ds_gonn):
    fs = features.get("gonn")
    lay = windows.layout_for(fs)
    assert lay.history_depth == 5
    prev = [i for i, n in enumerate(fs.plane_names()) if n.startswith("previous_moves_5")]
    assert [c for g in lay.history for c in g] == prev
    ds = ip.window_dataset(*pipeline(ds_gonn, window_blocks=4, history_dropout="cascade",
                                     history_keep_probs=windows.GONN_KEEP_PROBS), batch_size=8, seed=2)
    r = Reader(ds_gonn, "train")
    levels = []
    for i in range(6):
        w = ds[i]
        planes = _window_planes(w)
        ref = r.batch(w["index"], symmetries=w["symmetry"])["planes"]
        lv = w["history_level"]
        levels.append(lv)
        other = [c for c in range(fs.num_planes) if c not in prev]
        assert np.array_equal(planes[..., other], ref[..., other])  # only history planes change
        for d, c in enumerate(prev):
            kept = lv > d
            assert np.array_equal(planes[kept][..., c], ref[kept][..., c])
            assert not planes[~kept][..., c].any()
    # the cascade's probabilities, on many draws of the same function the windows use
    lv = windows.history_levels(np.random.default_rng(0), 200_000, 5, "cascade", 0.0, windows.GONN_KEEP_PROBS)
    cum = [np.mean(lv > d) for d in range(5)]
    assert np.allclose(cum, np.cumprod(windows.GONN_KEEP_PROBS), atol=0.005)
    allp = windows.history_levels(np.random.default_rng(1), 100_000, 5, "all", 0.07, ())
    assert abs(np.mean(allp == 0) - 0.07) < 0.005 and set(np.unique(allp).tolist()) == {0, 5}
    assert windows.history_levels(np.random.default_rng(0), 10, 0, "cascade", 0.0, windows.GONN_KEEP_PROBS) is None


def test_agz_history_groups():
    fs = features.get("agz")
    lay = windows.layout_for(fs)
    names = fs.plane_names()
    assert lay.history_depth == 7
    assert [names[c] for c in lay.history[0]] == ["history_8[1]", "history_8[9]"]  # t-1, both colours
    assert all("history_8[0]" != names[c] and "history_8[8]" != names[c] for g in lay.history for c in g)


def test_the_pipeline_carries_the_outcome_through_symmetries(ds_qiqiao):
    from kifunet.data_prep.datasets.dataset import open_split

    reader = open_split(ds_qiqiao, "train")
    ds = ip.window_dataset(*pipeline(ds_qiqiao, window_blocks=4), batch_size=32, seed=0)
    window = ds[0]
    rows = reader.batch(np.asarray(window["index"]))
    assert window["outcome"].dtype == np.int8 and len(set(window["symmetry"].tolist())) > 1
    np.testing.assert_array_equal(window["outcome"], rows["outcome"])  # the row's own, whatever its symmetry
    assert {-128, -1, 0, 1} <= set(window["outcome"].tolist())
    batch = batches.window_batch(window, 0, 32)
    assert batch["outcome"].dtype == np.int8
    np.testing.assert_array_equal(batch["outcome"], window["outcome"][:32])
    ev = next(eval_batches.eval_batches(open_blocks(ds_qiqiao, "test"), batch_size=64))
    np.testing.assert_array_equal(ev["outcome"], open_split(ds_qiqiao, "test").batch(np.arange(64))["outcome"])
