"""Training on several datasets at once (train/mixture.py): ``config.dataset = "A,B"`` mixes their blocks in every
window with ``config.input.mix_weights``; each keeps its own evaluation split; one dataset is the pipeline of before.

Datasets: ``ds_maddison`` (tests/test_train_data.py: 60 random 9x9 games) and ``ds_other`` (30 other games,
the same build options), ``ds_gonn`` (another feature set, for the refusal)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import grain
import numpy as np
import pytest

from kifunet.cli import main as cli_main
from kifunet.data_prep.datasets import dataset as dataset_mod
from kifunet.train import batches, input_pipeline as ip, mixture, nets, train
from kifunet.train.windows import WindowBuilder
from test_build import write_corpus
from test_train import tiny
from test_train_data import build_dataset, ds_gonn, ds_maddison, pipeline  # noqa: F401 (fixtures)

#: sha256 of the first 10 batches of ``train_iterator(ds_maddison, batch 32, seed 11, 2 blocks a window)``, computed
#: with the single-dataset pipeline as it was before mixtures existed (:func:`_fingerprint`); it changes when the
#: dataset build or the single-dataset pipeline changes
SINGLE_FINGERPRINT = "8510a63e4fdf3fc6f9d57401e5af3ed8bb11a67e47b784a783875a637c908ea7"


@pytest.fixture(scope="session")
def ds_other(tmp_path_factory):
    root = tmp_path_factory.mktemp("train_ds_other")
    write_corpus(root / "sgf", 30, start=1000)  # games other than ds_maddison's (seeds 0..59)
    return build_dataset(root, games=30)


def _rows(root: str, split: str = "train") -> int:
    return len(dataset_mod.open_split(root, split))


def _shares(spec: str, windows: int, **kw) -> tuple[np.ndarray, float]:
    """Rows of each dataset over the first ``windows`` windows (normalised), and the fraction of windows that
    hold rows of both."""
    ds = ip.window_dataset(*pipeline(spec, window_blocks=4, symmetry="none", **kw), batch_size=32, seed=5)
    counts, both = np.zeros(2), 0
    for i in range(windows):
        c = np.bincount(ds[i]["dataset"], minlength=2)
        counts += c
        both += bool(c.all())
    return counts / counts.sum(), both / windows


def test_row_shares_follow_the_weights(ds_maddison, ds_other):
    spec = f"{ds_maddison},{ds_other}"
    n1, n2 = _rows(ds_maddison), _rows(ds_other)
    share, both = _shares(spec, 150)  # default: in proportion to the training rows
    assert share[0] == pytest.approx(n1 / (n1 + n2), abs=0.01)
    assert both > 0.9  # mixed at the block level: windows (so batches) hold rows of both
    share, both = _shares(spec, 150, mix_weights="1,3")
    assert share[0] == pytest.approx(0.25, abs=0.01)
    assert both > 0.9


def test_mixed_rows_are_each_datasets_own(ds_maddison, ds_other):
    """Both datasets' shard 0 in one window: each row's planes and target are its own dataset's (the code tables
    are kept apart per dataset)."""
    spec = f"{ds_maddison},{ds_other}"
    ds = ip.window_dataset(*pipeline(spec, window_blocks=4, symmetry="none"), batch_size=32, seed=2)
    for i in range(3):
        w = ds[i]
        b = batches.window_batch(w, 0, len(w["target"]))
        for k, root in enumerate([ds_maddison, ds_other]):
            sel = np.flatnonzero(w["dataset"] == k)
            assert sel.size
            with dataset_mod.open_split(root, "train") as s:
                ref = s.batch(w["index"][sel])
            assert np.array_equal(ref["planes"], b["planes"][sel]), (i, root)
            assert np.array_equal(ref["target"], b["target"][sel])


def _same(xs, ys) -> bool:
    return all(np.array_equal(x[k], y[k]) for x, y in zip(xs, ys) for k in x)


@pytest.mark.slow
def test_same_seed_same_batches_and_exact_resume(ds_maddison, ds_other):
    spec = f"{ds_maddison},{ds_other}"
    kw = dict(batch_size=32, seed=7)
    inp = dict(window_blocks=2, mix_weights="2,1")
    a = ip.train_iterator(*pipeline(spec, workers=0, **inp), **kw)
    b = ip.train_iterator(*pipeline(spec, workers=1, **inp), **kw)
    c = ip.train_iterator(*pipeline(spec, workers=0, **inp), **{**kw, "seed": 8})
    try:
        ba, bb, bc = [[next(it) for _ in range(10)] for it in (a, b, c)]
        assert _same(ba, bb)
        assert not _same(ba, bc)
        for _ in range(3):  # mid-window
            next(a)
        state = json.loads(json.dumps(a.get_state()))
        ref = [next(a) for _ in range(6)]
    finally:
        for it in (a, b, c):
            it.close()
    for workers in (0, 1):
        it = ip.train_iterator(*pipeline(spec, workers=workers, **inp), **kw)
        try:
            it.set_state(state)
            assert _same(ref, [next(it) for _ in range(6)]), workers
        finally:
            it.close()


def test_hosts_split_each_dataset(ds_maddison, ds_other):
    spec = f"{ds_maddison},{ds_other}"
    seen = []
    for p in range(2):
        ds = ip.window_dataset(*pipeline(spec, window_blocks=1, symmetry="none"), batch_size=1, seed=4,
                               process_index=p, process_count=2)
        got = set()
        for i in range(120):
            w = ds[i]
            got |= set(zip(w["dataset"].tolist(), w["index"].tolist()))
        seen.append(got)
    assert seen[0] and seen[1] and not (seen[0] & seen[1])
    assert {k for k, _ in seen[0]} == {k for k, _ in seen[1]} == {0, 1}


def test_mismatched_datasets_and_weights_are_one_line_errors(ds_maddison, ds_gonn):
    with pytest.raises(ValueError) as e:
        pipeline(f"{ds_maddison},{ds_gonn}")
    msg = str(e.value)
    assert "\n" not in msg and ds_maddison in msg and ds_gonn in msg and "feature set" in msg
    assert "maddison" in msg and "gonn" in msg
    for bad, what in (("1", r"1 weight\(s\) for 2 datasets"), ("1,0", "positive"), ("1,x", "numbers")):
        with pytest.raises(ValueError, match=what):
            pipeline(f"{ds_maddison},{ds_maddison}", mix_weights=bad)


def _old_window_dataset(root, split, *, batch_size, seed, window_blocks, block_rows=0, symmetry="example"):
    """The single-dataset window pipeline as it was before mixtures (input_pipeline.window_dataset, one host)."""
    src = dataset_mod.open_split(root, split, assemble=False, require_rows=True).blocks(block_rows)
    ds = grain.MapDataset.source(src).shuffle(seed=seed % (1 << 32)).repeat(None)
    ds = ds.batch(window_blocks, drop_remainder=True, batch_fn=list)
    builder = WindowBuilder(src.feature_name, src.board_size, batch_size, symmetry=symmetry)
    return ds.random_map(builder, seed=(seed + 1) % (1 << 32))


def _fingerprint(items) -> str:
    h = hashlib.sha256()
    for x in items:
        for k in sorted(x):
            h.update(k.encode())
            h.update(np.ascontiguousarray(x[k]).tobytes())
    return h.hexdigest()


def test_one_dataset_is_the_pipeline_of_before(ds_maddison):
    it = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=0), batch_size=32, seed=11)
    try:
        got = _fingerprint(next(it) for _ in range(10))
    finally:
        it.close()
    assert got == SINGLE_FINGERPRINT, "the single-dataset batches changed (or the test datasets' build did)"
    new = ip.window_dataset(*pipeline(ds_maddison, window_blocks=2), batch_size=32, seed=11)
    old = _old_window_dataset(ds_maddison, "train", batch_size=32, seed=11, window_blocks=2)
    assert _fingerprint(new[i] for i in range(6)) == _fingerprint(old[i] for i in range(6))
    assert "dataset" not in new[0]


@pytest.mark.slow
def test_training_on_two_datasets_evaluates_each(ds_maddison, ds_other, tmp_path, capsys):
    spec = f"{ds_maddison},{ds_other}"
    run = tmp_path / "run"
    cfg = tiny(spec, train_positions=32 * 6, eval_every_positions=32 * 3, log_every_steps=3, eval_positions=64,
               final_eval_positions=64)
    res = train.train_and_evaluate(cfg, str(run))
    out = capsys.readouterr().out
    n1, n2 = _rows(ds_maddison), _rows(ds_other)
    assert f"{n1 + n2:,} training rows ({ds_maddison}: {n1:,} rows, weight {n1 / (n1 + n2):.3f}; " in out
    assert f"eval at step 6 on 64 test positions of {ds_other}:" in out
    recs = [json.loads(ln) for ln in (run / "metrics_eval.jsonl").read_text().splitlines()]
    assert [r["step"] for r in recs] == [3, 6]
    for r in recs:
        assert set(r["by_dataset"]) == {ds_maddison, ds_other}
        first = r["by_dataset"][ds_maddison]
        assert {k: r[k] for k in first} == first  # the record's own keys: the first dataset's, as before
        assert r["by_dataset"][ds_other]["eval_positions"] == 64
    assert res["by_dataset"][ds_other]["nats"] == pytest.approx(recs[-1]["by_dataset"][ds_other]["nats"])
    assert json.loads((run / "config.json").read_text())["dataset"] == spec
    # the run's net loads (feature set from the first dataset) and `kifunet eval` on the second dataset gives the
    # training's evaluation of it
    net = nets.load_net(str(run))
    assert (net.feature_set, net.board_size, net.info["train_dataset"]) == ("maddison", 9, spec)
    assert nets._data_shape({"dataset": spec}, {}, None, None, None) == ("maddison", 9)  # the first's manifest
    out_json = tmp_path / "eval.json"
    assert cli_main(["eval", "--checkpoint", str(run), "--data", ds_other, "--split", "test", "--limit", "64",
                     "--batch-size", "32", "--no-progress", "--out", str(out_json)]) == 0
    single = json.loads(out_json.read_text())["results"]["single"]
    assert single["count"] == 64
    assert single["cross_entropy_nats"] == pytest.approx(res["by_dataset"][ds_other]["nats"], rel=1e-4)


@pytest.mark.slow
def test_a_run_opens_each_split_once(ds_maddison, ds_other, tmp_path, monkeypatch):
    """A run on a mixture with evaluations on the way opens each dataset's training and evaluation split once
    (kifunet.train.data.TrainData) and checks the datasets' compatibility once: the trainer, the memory estimate,
    the input pipeline and every evaluation read the same opened splits."""
    opened, checks = Counter(), []
    real_open, real_check = dataset_mod.open_split, mixture.check_compatible

    def counting_open(spec, split="train", **kw):
        opened[(str(spec), split)] += 1
        return real_open(spec, split, **kw)

    monkeypatch.setattr(dataset_mod, "open_split", counting_open)
    monkeypatch.setattr(mixture, "check_compatible", lambda *a, **kw: checks.append(1) or real_check(*a, **kw))
    cfg = tiny(f"{ds_maddison},{ds_other}", train_positions=32 * 4, eval_every_positions=32 * 2, log_every_steps=2,
               eval_positions=64, final_eval_positions=64)
    res = train.train_and_evaluate(cfg, str(tmp_path / "run"))
    assert res["step"] == 4 and set(res["by_dataset"]) == {ds_maddison, ds_other}
    assert opened == {(r, s): 1 for r in (ds_maddison, ds_other) for s in ("train", "test")}, opened
    assert len(checks) == 1


@pytest.mark.parametrize("mixed", [False, True])
def test_a_dataset_without_the_eval_split_is_refused_at_the_start(ds_maddison, ds_other, tmp_path, capsys, mixed):
    spec = f"{ds_maddison},{ds_other}" if mixed else ds_maddison
    with pytest.raises(KeyError, match="nope"):
        train.train_and_evaluate(tiny(spec, eval_split="nope"), str(tmp_path))
    assert "kifunet train: model" not in capsys.readouterr().out  # before the model, not at the first evaluation
    assert not (tmp_path / "checkpoints").exists()



@pytest.mark.slow
def test_one_dataset_eval_record_has_no_by_dataset(ds_maddison, tmp_path):
    cfg = tiny(ds_maddison, train_positions=32 * 2, eval_every_positions=0, eval_positions=64,
               final_eval_positions=64)
    res = train.train_and_evaluate(cfg, str(tmp_path))
    (rec,) = [json.loads(ln) for ln in (tmp_path / "metrics_eval.jsonl").read_text().splitlines()]
    assert "by_dataset" not in rec and "by_dataset" not in res and rec["eval_positions"] == 64


def test_split_and_seed_helpers():
    assert mixture.split_datasets(" a, b ,,c") == ["a", "b", "c"] and mixture.split_datasets("") == []
    assert mixture.dataset_seed(1, 0) != mixture.dataset_seed(1, 1) == mixture.dataset_seed(1, 1)
    assert np.allclose(mixture.row_weights("", [100, 300]), [0.25, 0.75])
    assert np.allclose(mixture.row_weights("3, 1", [100, 300]), [0.75, 0.25])
