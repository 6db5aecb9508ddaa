"""Both notebooks run top to bottom (nbclient) against tiny runs made here, and are committed without outputs.

The run: 5 sample games built with `kifunet build`, 6 steps of the `tiny` training config, then
`kifunet eval --ensemble` on its test split. ``reproduce_tables`` also reads a two-headed run (the 9x9
``qiqiao_tiny`` run of tests/test_train_data.py, evaluated here) and shows its value-head section;
``explore_predictions`` runs on the policy-only run. The notebooks find the runs through ``KIFUNET_RUN`` and write
their PNGs to ``KIFUNET_FIGURES``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from kifunet.cli import main
from test_train_data import ds_qiqiao, qiqiao_run  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("reproduce_tables.ipynb", "explore_predictions.ipynb")
SAMPLES = ROOT / "samples" / "gnugo"


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory) -> Path:
    from kifunet.train import configs
    from kifunet.train.train import train_and_evaluate

    root = tmp_path_factory.mktemp("nb_run")
    ds = root / "ds"
    files = [str(SAMPLES / f"gnugo-{i:04d}.sgf") for i in range(5)]
    assert main(["build", *files, "--out", str(ds), "--hash-split", "test:0.4", "--workers", "0",
                 "--no-progress"]) == 0
    cfg = configs.load(str(ROOT / "train" / "configs" / "tiny.py"),
                       [("dataset", str(ds)), ("train_positions", "192"), ("log_every_steps", "2"),
                        ("eval_every_positions", "64"), ("eval_positions", "64"), ("final_eval_positions", "64"),
                        ("checkpoint_every_positions", "192"), ("async_checkpoints", "false")])
    run = root / "run"
    train_and_evaluate(cfg, str(run))
    assert main(["eval", "--checkpoint", str(run), "--data", str(ds), "--split", "test", "--ensemble",
                 "--limit", "96", "--batch-size", "48", "--no-progress"]) == 0
    return run


@pytest.fixture(scope="module")
def value_run(qiqiao_run) -> Path:
    run, ds, _, _ = qiqiao_run
    assert main(["eval", "--checkpoint", str(run), "--data", ds, "--split", "test", "--no-progress",
                 "--no-breakdowns"]) == 0
    return run


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_committed_without_outputs(name):
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: outputs not stripped"


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes(name, evaluated_run, value_run, tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    both = name == "reproduce_tables.ipynb"  # the tables read a policy-only run and a two-headed one
    monkeypatch.setenv("KIFUNET_RUN", os.pathsep.join([str(evaluated_run)] + ([str(value_run)] if both else [])))
    monkeypatch.setenv("KIFUNET_FIGURES", str(figures))
    monkeypatch.setenv("KIFUNET_MOVE", "40")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    text = json.dumps([o.get("text", "") or o.get("data", {}).get("text/markdown", "") for o in outputs])
    pngs = sorted(p.name for p in figures.glob("*.png"))
    if name == "reproduce_tables.ipynb":
        # both runs' directories are named run: one learning-curves file, drawn twice
        assert pngs == ["accuracy_vs_nats.png", "learning_curves_run.png", "topn_accuracy.png", "value_by_phase.png"]
        assert len(images) == 5
        assert "ours: run @ step 6" in text and "8-symmetry ensemble" in text and "Maddison et al. 2015" in text
        assert "by move number" in text and "gnugo-0000.sgf" in text
        assert "## Value head (ours)" in text and "constant predictor" in text and "run @ step 8" in text
    else:
        assert pngs == ["played_move_probability.png", "position_move40.png", "position_move40_1d.png",
                        "position_move40_9d.png", "position_move40_ensemble.png"]
        assert len(images) == 5
        assert "| 1d |" in text and "| 9d |" in text and "total variation distance" in text


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_reaches_for_the_default_net(name, tmp_path, monkeypatch):
    """KIFUNET_RUN unset and no runs/ here: explore_predictions studies the default net that ships with the
    package and reproduce_tables reads its evaluations; the figures go to runs/figures, not into the net's
    folder (package data)."""
    from kifunet.data_prep import paths

    monkeypatch.delenv("KIFUNET_RUN", raising=False)
    monkeypatch.delenv("KIFUNET_FIGURES", raising=False)
    monkeypatch.setenv("KIFUNET_MOVE", "30")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.chdir(tmp_path)
    net = paths.default_net()
    before = sorted(p.name for p in (net / "figures").glob("*.png"))
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = json.dumps([o.get("text", "") or o.get("data", {}).get("text/markdown", "") for o in outputs])
    if name == "reproduce_tables.ipynb":  # the net's whole-split evaluations, both passes
        assert f"**{paths.DEFAULT_NET}**, single pass" in text and f"**{paths.DEFAULT_NET}**, 8-symmetry" in text
    else:
        assert str(net) in text, text[:2000]
    assert list((tmp_path / "runs" / "figures").glob("*.png"))
    assert sorted(p.name for p in (net / "figures").glob("*.png")) == before


@pytest.mark.slow
def test_explore_predictions_studies_the_quickstart_run(evaluated_run, tmp_path, monkeypatch):
    """KIFUNET_RUN unset after `kifunet quickstart`: the notebook studies runs/quickstart/run (found as
    reproduce_tables finds runs), not the default net, and writes its figures into that run."""
    import shutil

    run = tmp_path / "runs" / "quickstart" / "run"
    shutil.copytree(evaluated_run, run)
    (tmp_path / "runs" / "stopped").mkdir()  # a newer run that never reached a checkpoint is passed over
    (tmp_path / "runs" / "stopped" / "config.json").write_text("{}")
    monkeypatch.delenv("KIFUNET_RUN", raising=False)
    monkeypatch.delenv("KIFUNET_FIGURES", raising=False)
    monkeypatch.setenv("KIFUNET_MOVE", "40")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.chdir(tmp_path)
    nb = nbformat.read(ROOT / "notebooks" / "explore_predictions.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    first = outputs[0].get("text", "")
    assert first.startswith(str(run)), first
    assert sorted(p.name for p in (run / "figures").glob("*.png")) == [
        "played_move_probability.png", "position_move40.png", "position_move40_1d.png", "position_move40_9d.png",
        "position_move40_ensemble.png"]
