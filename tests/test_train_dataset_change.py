"""Resuming a run on another dataset (issue 48, item 4): refused in one line naming both datasets, unless
``--config.allow_dataset_change``, which records both (``dataset_history`` in config.json and the checkpoints). The
same dataset reached by another path resumes as before (train/run_dataset.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kifunet.cli import main as cli_main
from kifunet.train import checkpointing, run_dataset, train
from test_train import TINY, tiny
from test_train_data import build_dataset, ds_maddison  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def other(tmp_path_factory) -> str:
    """A second dataset of the same shape (other games)."""
    return build_dataset(tmp_path_factory.mktemp("other_ds"), games=20)


@pytest.fixture(scope="module")
def run10(ds_maddison, tmp_path_factory) -> Path:
    """A tiny run stopped at step 10 (one checkpoint), no evaluation split."""
    wd = tmp_path_factory.mktemp("dschange") / "run"
    train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 10, eval_split=""), str(wd))
    return wd


def _resume(wd: Path, dataset: str, *extra: str) -> int:
    return cli_main(["train", "--config", TINY, "--workdir", str(wd), f"--config.dataset={dataset}",
                     "--config.train_positions=640", "--config.eval_split=", *extra])


def _meta(wd: Path, step: int) -> dict:
    return json.loads((wd / "checkpoints" / str(step) / "meta" / "metadata").read_text())


def test_resuming_on_another_dataset_is_refused_in_one_line(ds_maddison, other, run10, tmp_path, capsys):
    wd = tmp_path / "run"
    shutil.copytree(run10, wd)
    config_before = (wd / "config.json").read_text()
    capsys.readouterr()
    assert _resume(wd, other) == 2
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"kifunet train: error: {wd} was trained on {ds_maddison} (to step 10); this config "
                               f"names {other} (another dataset): resume with --config.dataset={ds_maddison}"), err
    assert "--config.allow_dataset_change=true" in lines[0]
    assert (wd / "config.json").read_text() == config_before  # the run's config still names its dataset
    assert sorted(p.name for p in (wd / "checkpoints").iterdir()) == ["10"]


def test_the_same_dataset_by_another_path_resumes(ds_maddison, run10, tmp_path, capsys):
    """A copy (or a move) of the run's dataset has its identity: the run resumes."""
    wd = tmp_path / "run"
    shutil.copytree(run10, wd)
    moved = tmp_path / "moved"
    shutil.copytree(ds_maddison, moved)
    capsys.readouterr()
    assert _resume(wd, str(moved)) == 0
    out = capsys.readouterr().out
    assert "resuming from step 10" in out and "dataset changed" not in out
    assert _meta(wd, 20)["dataset_history"] == [{"step": 0, "dataset": ds_maddison}]


def test_allow_dataset_change_goes_on_and_records_both(ds_maddison, other, run10, tmp_path, capsys):
    wd = tmp_path / "run"
    shutil.copytree(run10, wd)
    capsys.readouterr()
    assert _resume(wd, other, "--config.allow_dataset_change=true") == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "dataset changed" in ln)
    assert line.startswith(f"kifunet train: dataset changed at step 10: {ds_maddison} -> {other} (another dataset)")
    history = [{"step": 0, "dataset": ds_maddison}, {"step": 10, "dataset": other}]
    assert _meta(wd, 20)["dataset_history"] == history
    cfg = json.loads((wd / "config.json").read_text())
    assert cfg["dataset"] == other and cfg["dataset_history"] == history
    assert [c.status for c in checkpointing.verify_checkpoints(str(wd))] == ["intact", "intact"]


def test_mixtures_and_rebuilt_datasets_are_compared_dataset_by_dataset(ds_maddison, other, tmp_path):
    """Mixtures: the same datasets in the same order (the order sets the weights and the pipeline's position); a
    dataset rebuilt in place (another shard table in its manifest) is another dataset."""
    a, b = ds_maddison, other
    same = run_dataset._differences
    ids = lambda spec: run_dataset.identities(spec, "train")  # noqa: E731
    assert same(f"{a},{b}", ids(f"{a},{b}"), f"{a},{b}", ids(f"{a},{b}")) is None
    assert same(f"{a},{b}", ids(f"{a},{b}"), f"{b},{a}", ids(f"{b},{a}")) == "dataset 1 of the mixture: another dataset"
    assert same(f"{a},{b}", ids(f"{a},{b}"), a, ids(a)) == "2 dataset(s) then, 1 now"
    assert same(a, None, a, ids(a)) is None  # a checkpoint written before identities: the path decides
    assert same(a, None, b, ids(b)) == "another dataset"
    rebuilt = tmp_path / "rebuilt"
    shutil.copytree(a, rebuilt)
    saved = ids(str(rebuilt))
    m = json.loads((rebuilt / "manifest.json").read_text())
    m["splits"]["train"]["shards"] = m["splits"]["train"]["shards"][:-1]
    (rebuilt / "manifest.json").write_text(json.dumps(m))
    assert same(str(rebuilt), saved, str(rebuilt), ids(str(rebuilt))) == \
        "its training split's shards differ (rebuilt since?)"
    assert run_dataset.identity("tfds:/nowhere", "train")["id"] is None
