"""kifunet.train.aot and `kifunet compile`: the training step compiled for targets whose hardware is not here.

The slow test compiles the tiny config for a TPU v5e 2x2 slice with libtpu from PyPI (installed once into
``.libtpu/`` beside the checkout, kept out of the project's environment: docs/accelerators.md), so a change
that breaks TPU lowering fails CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kifunet.commands.compile import END, START
from kifunet.train import aot

ROOT = Path(__file__).resolve().parents[1]
LIBTPU = ROOT / ".libtpu"
KEPT = ROOT / "benchmarks" / "results" / "aot" / "compile.json"
PAGE = ROOT / "docs" / "accelerators.md"

HLO = """\
HloModule jit_step, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

%fused_computation (param_0: f32[8]) -> f32[8] {
  %param_0 = f32[8]{0} parameter(0)
  ROOT %negate = f32[8]{0} negate(f32[8]{0} %param_0)
}

ENTRY %main.3 (Arg_0.1: f32[8]) -> (f32[8], s32[]) {
  %Arg_0.1 = f32[8]{0} parameter(0)
  %constant.2 = s32[] constant(0)
  %fusion = f32[8]{0} fusion(f32[8]{0} %Arg_0.1), kind=kLoop, calls=%fused_computation
  %all-reduce = f32[8]{0} all-reduce(f32[8]{0} %fusion), replica_groups={}, to_apply=%add
  %convolution.4 = f32[8]{0} convolution(f32[8]{0} %all-reduce, f32[8]{0} %fusion), dim_labels=b0f_0io->b0f
  %bitcast.1 = f32[8]{0} bitcast(f32[8]{0} %convolution.4)
  %get-tuple-element.7 = f32[8]{0} get-tuple-element((f32[8]{0}, s32[]) %t), index=0
  ROOT %tuple = (f32[8]{0}, s32[]) tuple(f32[8]{0} %bitcast.1, s32[] %constant.2)
}
"""


def test_count_ops_counts_the_entry_computations_kernels_only():
    # fusion, all-reduce, convolution; not the parameter, constant, bitcast, get-tuple-element, tuple, nor the
    # negate inside the fused computation
    assert aot.count_ops(HLO) == 3


def test_roofline_takes_the_slower_of_compute_and_memory():
    chip = aot.CHIPS["v5e"]
    row = {"xla_flops": chip.peak_bf16_flops * 2e-3, "xla_bytes": chip.hbm_bytes_per_s * 1e-3,
           "model_flops": chip.peak_bf16_flops * 1e-3}
    r = aot.roofline(row, chip)
    assert r["bound"] == "compute" and r["predicted_step_s"] == pytest.approx(2e-3)
    assert r["predicted_mfu"] == pytest.approx(1.0)
    row["xla_bytes"] = chip.hbm_bytes_per_s * 4e-3
    r = aot.roofline(row, chip)
    assert r["bound"] == "memory" and r["predicted_mfu"] == pytest.approx(0.5)
    assert aot.roofline(row, None) == {}


def test_targets_name_their_chips_slices_and_hosts():
    assert {"v5e-8", "v5p-8", "v6e-8", "v5e-16", "2xv5e-8", "cpu"} <= set(aot.TARGETS)
    assert aot.TARGETS["2xv5e-8"].slices == 2 and aot.TARGETS["cpu"].chip is None
    for chip in aot.CHIPS.values():
        assert chip.source.startswith("https://") and chip.peak_bf16_flops > 1e14


def test_a_missing_libtpu_is_one_line_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.delenv("TPU_LIBRARY_PATH", raising=False)
    with pytest.raises(aot.NoLibtpu, match=r"pip install --no-deps --target .libtpu 'libtpu"):
        aot.find_libtpu(str(tmp_path))


@pytest.mark.slow
def test_the_cpu_row_of_a_tiny_config():
    row = aot.compile_step(str(ROOT / "train" / "configs" / "tiny.py"), aot.TARGETS["cpu"], batch=8)
    assert row["config"] == "tiny" and row["devices"] == 1 and row["board"] == 19
    assert row["xla_flops"] > 0 and row["model_flops"] > 0 and row["ops"] > 20
    assert row["memory_bytes"] > 0 and "predicted_mfu" not in row
    assert "| `tiny` | cpu | float32 | 8 | 1 |" in aot.table([row])


def _libtpu() -> Path:
    """libtpu at the pin of the installed JAX, in ``.libtpu/`` (installed from PyPI on first use)."""
    if not (LIBTPU / "libtpu" / "libtpu.so").is_file():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(LIBTPU),
                        aot.libtpu_requirement()], check=True, timeout=900)
    return LIBTPU


@pytest.mark.slow
def test_the_tiny_config_compiles_for_a_tpu_slice_and_for_two_slices(tmp_path):
    out = tmp_path / "compile.json"
    p = subprocess.run([sys.executable, "-m", "kifunet.cli", "compile", "--config", "tiny", "--target", "v5e-4",
                        "2xv5e-8", "--batch", "32", "--libtpu", str(_libtpu()), "--out", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path,
                       env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert p.returncode == 0, p.stderr[-3000:]
    one, two = json.loads(out.read_text())["rows"]
    assert (one["target"], one["devices"], two["target"], two["devices"]) == ("v5e-4", 4, "2xv5e-8", 16)
    for row in (one, two):
        assert row["dtype"] == "bfloat16" and row["fits"] and 0 < row["memory_bytes"] < row["hbm_bytes"]
        assert row["xla_flops"] > 0.5 * row["model_flops"] and row["ops"] > 20
        assert 0 < row["predicted_mfu"] <= 1
    assert "| `tiny` | v5e-4 | bfloat16 | 32 | 4 |" in p.stdout
    assert "| `tiny` | 2xv5e-8 | bfloat16 | 32 | 16 |" in p.stdout
    assert one["ops"] <= TPU_OP_BUDGET["tiny"], one["ops"]


#: ops of the training step compiled for a TPU v5e 2x2 slice at batch 32 in bfloat16 (195 for `tiny`, 645 for
#: GONN_TINY) and a few more: the fused norms on a TPU make `tiny`'s 213, the fused BatchNorm GONN_TINY's 655
TPU_OP_BUDGET = {"tiny": 200, "gonn_tiny": 650}

#: `gonn5`'s recipe and block types (an ordinary block, dilated blocks at rates 2 and 3, the globally pooled
#: policy head, PReLU) at 16 channels and 3 blocks: `gonn5` itself takes minutes to compile for a TPU here
GONN_TINY = """\
from kifunet.train.configs import gonn5


def get_config():
    c = gonn5.get_config()
    c.model.kwargs.update(dict(channels=16, blocks=3, dilated_channels=8, head_features=8, head_pooled=8))
    return c
"""


@pytest.mark.slow
def test_a_gonn_shaped_step_stays_within_its_tpu_op_budget(tmp_path):
    config = tmp_path / "gonn_tiny.py"
    config.write_text(GONN_TINY)
    out = tmp_path / "compile.json"
    p = subprocess.run([sys.executable, "-m", "kifunet.cli", "compile", "--config", str(config), "--target", "v5e-4",
                        "--batch", "32", "--libtpu", str(_libtpu()), "--out", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path,
                       env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert p.returncode == 0, p.stderr[-3000:]
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["config"], row["target"], row["dtype"]) == ("gonn_tiny", "v5e-4", "bfloat16")
    assert row["ops"] <= TPU_OP_BUDGET["gonn_tiny"], row["ops"]


def test_the_manuals_compile_table_is_the_kept_json():
    rows = json.loads(KEPT.read_text())["rows"]
    text = PAGE.read_text()
    block = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert block == aot.table(rows)
    assert len(rows) >= 1


#: ops of the compiled CPU training step at batch 8 (benchmarks/results/aot/op_counts_*.json: 975, 2,018, 780 and
#: 328 before the fused norms, the centre pad and the flat optimizer; 497, 980, 387 and 207 after them; 432, 845
#: and 337 for the GoNN nets with the fused BatchNorm and activation), with headroom for another CPU's fusions
OP_BUDGET = {"gonn5": 466, "gonn12": 912, "cpu_default": 364, "maddison12": 230}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OP_BUDGET))
def test_the_training_step_stays_within_its_op_budget(name):
    row = aot.compile_step(str(ROOT / "train" / "configs" / f"{name}.py"), aot.TARGETS["cpu"], batch=8)
    assert row["ops"] <= OP_BUDGET[name], row["ops"]


#: configs whose XLA FLOPs ``counted_train_flops`` does not predict (docs/accelerators.md): `ingredients` (GoNN at
#: 32 channels, dilation rates 2 and 3, 36 input planes), where XLA counts 3.1% less than predicted
UNEXPLAINED_FLOPS = {"ingredients"}


@pytest.mark.slow
def test_xla_counts_the_models_flops_less_the_padding_and_the_planes_gradient():
    """Every CPU row of the kept table: XLA's FLOPs / ``train_flops`` (0.62 for `tiny` to 0.94) is what
    ``counted_train_flops`` predicts (the model's count less the padding taps and the first layer's input
    gradient) plus the elementwise work that XLA counts and the model's count leaves out: 0.000-0.024 of it for
    every net but `mao` (0.070, its max and average over the unit's maps) and `resnet18` (0.046: 39 channels, so
    its BatchNorms and ReLUs weigh more against its convolutions); `ingredients` aside (UNEXPLAINED_FLOPS)."""
    from flax import nnx

    from kifunet import models
    from kifunet.data_prep.planes import features
    from kifunet.train import model_config

    rows = [r for r in json.loads(KEPT.read_text())["rows"] if r["target"] == "cpu"]
    assert len(rows) >= 10
    for r in rows:
        cfg = aot.load_config(str(ROOT / "train" / "configs" / f"{r['config']}.py"), batch=r["batch"])
        planes = features.get(cfg.expect_features or "maddison").num_planes
        # structure only (flops count layers): an abstract model, no initialiser compiled
        model = nnx.eval_shape(lambda: model_config.build_model(cfg.model, seed=0, board_size=r["board"],
                                                                in_planes=planes))
        predicted = models.counted_train_flops(model) / models.train_flops(model)
        extra = r["xla_flops"] / r["model_flops"] - predicted
        if r["config"] in UNEXPLAINED_FLOPS:  # within the 15% of the model's count, not predicted
            assert 0.85 < r["xla_flops"] / r["model_flops"] < 1.0 and abs(extra) < 0.04, (r["config"], predicted)
            continue
        assert -0.01 < extra < (0.08 if r["model"] in ("mao", "resnet18") else 0.03), (r["config"], predicted)


def test_a_step_the_tpu_compiler_refuses_for_memory_is_a_row_that_does_not_fit():
    error = RuntimeError("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries "
                         "(70.78G) exceeds available HBM (15.75G).")
    assert aot._out_of_memory(error) == int(70.78 * 2**30)
    assert aot._out_of_memory(ValueError("something else")) is None
    row = {"config": "agz20", "target": "v5e-8", "dtype": "bfloat16", "batch": 65536, "devices": 8, "compile_s": 90,
           "xla_flops": None, "model_flops": 4e14, "memory_bytes": int(70.78 * 2**30), "hbm_bytes": 16e9,
           "fits": False, "largest_batch": 8192, "ops": None}
    assert "| 76.00 GB of 16 GB: does not fit, largest batch 8,192 | - | - | - |" in aot.table([row])
