"""kifunet.train.nets: a trained net rebuilt from its run directory (checkpoints written here, no training)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kifunet.train import nets


def _save_run(run: Path, steps=(3, 6), meta_extra=None, config=None) -> None:
    """A 9x9 ``maddison_tiny`` run: a checkpoint per step (other weights each), ``config.json``."""
    from flax import nnx

    from kifunet import models
    from kifunet.train import checkpointing

    ck = checkpointing.Checkpointer(str(run / "checkpoints"), async_save=False)
    for s in steps:
        net = models.create("maddison_tiny", board_size=9, rngs=nnx.Rngs(s))
        _, params, extra = nnx.split(net, nnx.Param, ...)
        meta = {"step": s, "positions": 32 * s, **(meta_extra if meta_extra is not None else
                                                   {"feature_set": "maddison", "board_size": 9})}
        ck.save(s, {"params": params, "extra": extra, "opt_state": {}, "step": np.int32(s)}, {"position": s}, meta)
    ck.close()
    cfg = config if config is not None else {"model": {"name": "maddison_tiny"}, "seed": 0}
    (run / "config.json").write_text(json.dumps(cfg))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    r = tmp_path_factory.mktemp("nets") / "run"
    r.mkdir()
    _save_run(r)
    return r


def _logits(net, seed=0):

    x = (np.random.default_rng(seed).random((2, 9, 9, 36)) < 0.3).astype(np.float32)
    return np.asarray(net.model(x).logits)


def test_run_directory_lookups(run, tmp_path):
    step3 = run / "checkpoints" / "3"
    assert nets.is_run_dir(str(run)) and not nets.is_run_dir(str(step3))
    for p in (run, run / "checkpoints", step3):
        assert nets.find_workdir(str(p)) == str(run)
    with pytest.raises(FileNotFoundError, match="not a training run"):
        nets.find_workdir(str(tmp_path))
    assert nets.read_config(str(run)).model.name == "maddison_tiny"
    assert nets.resolve_checkpoint(str(run)) == (str(run), str(run))
    assert nets.resolve_checkpoint(str(run), step=3) == (str(run), str(step3))
    with pytest.raises(FileNotFoundError, match="no checkpoint for step 4 \\(have: 3, 6\\)"):
        nets.resolve_checkpoint(str(run), step=4)
    assert nets.step_dir(str(run)) == str(run / "checkpoints" / "6")  # the newest
    assert nets.step_dir(str(run / "checkpoints")) == str(run / "checkpoints" / "6")
    assert nets.step_dir(str(step3)) == nets.step_dir(str(run), step=3) == str(step3)


def test_describe_net_says_what_load_net_loads_without_jax(run):
    code = ("import sys, json; from kifunet.train.nets import describe_net; d = describe_net(sys.argv[1]); "
            "print(json.dumps(d)); print(sorted(m for m in ('jax', 'flax', 'orbax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, check=True,
                         timeout=120).stdout.splitlines()
    d = json.loads(out[0])
    assert out[1] == "[]"
    assert (d["model"], d["step"], d["feature_set"], d["board_size"]) == ("maddison_tiny", 6, "maddison", 9)
    assert d["description"] == "maddison_tiny from run step 6" and d["step_dir"].endswith(os.path.join("checkpoints",
                                                                                                        "6"))
    net = nets.load_net(str(run))
    assert (net.info["step"], net.feature_set, net.board_size, net.info["model"]) == (6, "maddison", 9,
                                                                                      "maddison_tiny")


def test_load_net_from_a_step_directory(run):
    early, late = nets.load_net(str(run / "checkpoints" / "3")), nets.load_net(str(run))
    assert early.info["step"] == 3 and late.info["step"] == 6 and early.info["positions"] == 96
    assert nets.load_net(str(run), step=3).info["checkpoint"] == early.info["checkpoint"]
    assert not np.allclose(_logits(early), _logits(late))


@pytest.mark.slow
def test_load_net_builds_the_model_without_the_training_loop(run):
    """The net is rebuilt with kifunet.train.model_config (the function training uses), not kifunet.train.train."""
    code = ("import sys; from kifunet.train.nets import load_net; net = load_net(sys.argv[1]); "
            "print(net.info['model'], sorted(m for m in sys.modules if m.startswith('kifunet.')))")
    out = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, check=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"}, timeout=300).stdout.split("\n")[-2]
    assert out.startswith("maddison_tiny ") and "kifunet.train.model_config" in out
    assert "kifunet.train.train'" not in out and "input_pipeline" not in out
    assert "kifunet.eval" not in out and "kifunet.play" not in out  # below both


def test_load_net_reads_the_data_shape_from_the_metadata_or_a_manifest(run, tmp_path):
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "config.json").write_text(json.dumps({"model": {"name": "maddison_tiny"},
                                                   "dataset": str(tmp_path / "gone")}))
    os.symlink(run / "checkpoints", moved / "checkpoints")
    # the checkpoint's metadata records the data shape, so the run loads without its dataset (a fresh clone)
    net = nets.load_net(str(moved))
    assert (net.info["step"], net.feature_set, net.board_size) == (6, "maddison", 9)


def test_load_net_without_any_record_of_the_data_shape(tmp_path):
    run = tmp_path / "run"
    _save_run(run, steps=(1,), meta_extra={}, config={"model": {"name": "maddison_tiny"},
                                                      "dataset": str(tmp_path / "gone")})
    with pytest.raises(FileNotFoundError, match="feature set and board size"):
        nets.load_net(str(run))
    with pytest.raises(FileNotFoundError, match="feature set and board size"):
        nets.describe_net(str(run))
    assert nets.load_net(str(run), feature_set="maddison", board_size=9).board_size == 9
    ds = tmp_path / "ds"  # the dataset it was trained on names them in its manifest
    ds.mkdir()
    (ds / "manifest.json").write_text(json.dumps({"features": {"name": "maddison"}, "board_size": 9}))
    net = nets.load_net(str(run), dataset=str(ds))
    assert (net.feature_set, net.board_size) == ("maddison", 9)
    assert nets.describe_net(str(run), dataset=str(ds))["feature_set"] == "maddison"
    with pytest.raises(ValueError, match="does not fit"):
        nets.load_net(str(run), feature_set="agz", board_size=9)  # 17 planes: another first layer
