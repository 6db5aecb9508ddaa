"""benchmarks/device/: the GPU-machine scripts, run here on the CPU in quick mode so that they cannot rot.

``measure.py --quick`` (the train step of one config per family with its ``*_tiny`` model, the loader, a real
``kifunet train`` run, the evaluator) and ``train_eval.py --quick`` on the sample corpus, each in its own
process with ``JAX_PLATFORMS=cpu`` and unoptimised XLA compiles (the numbers are not the point, the plumbing
and the JSON are), without the install step. The helpers' arithmetic is checked without JAX.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEVICE = REPO / "benchmarks" / "device"
sys.path.insert(0, str(DEVICE))

import bf16_runs  # noqa: E402
import common  # noqa: E402
import measure  # noqa: E402
import session  # noqa: E402

#: the configs the quick run times: one per family of step code (plain CNN, GoNN ResNet with global pooling and
#: dilations, AGZ ResNet, MAO); every config's name -> tiny model mapping is checked by test_tiny_models, and
#: every family's train step by tests/test_models.py and tests/test_train.py
CONFIGS = ["maddison12", "gonn5", "agz20", "mao"]
ENV = {"JAX_PLATFORMS": "cpu", "JAX_DISABLE_MOST_OPTIMIZATIONS": "1", "PYTHONUNBUFFERED": "1"}


def _run(args: list[str], timeout: int = 900) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, *args], cwd=REPO, env={**os.environ, **ENV}, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, f"{args[0]} failed (rc {p.returncode}):\n{p.stdout[-6000:]}\n{p.stderr[-3000:]}"
    return p


# --- helpers, no JAX


def test_datasheet_peaks():
    h100 = common.datasheet_peak("NVIDIA H100 80GB HBM3", "gpu")
    assert (h100["name"], h100["bf16_tflops"], h100["tf32_tflops"]) == ("H100 SXM", 989.4, 494.7)
    assert common.datasheet_peak("NVIDIA H100 PCIe", "gpu")["bf16_tflops"] == 756.0
    assert common.datasheet_peak("NVIDIA H100 NVL", "gpu")["bf16_tflops"] == 835.0
    assert common.datasheet_peak("NVIDIA H200", "gpu")["bf16_tflops"] == 989.4
    assert common.datasheet_peak("NVIDIA A100-SXM4-80GB", "gpu")["bf16_tflops"] == 312.0
    for kind, plat in (("cpu", "cpu"), ("Some Future GPU", "gpu")):
        assert common.datasheet_peak(kind, plat)["bf16_tflops"] is None


def test_tiny_models():
    """The quick run's stand-in for the model of each config it can time (``measure.CONFIGS``, models read from
    train/configs; and ``resnet18``'s) is the registered tiny net of that model's family, which stands for itself."""
    from kifunet.models import registry
    from kifunet.train import configs

    for c in [*measure.CONFIGS, "resnet18"]:  # and MAO's baseline, which the quick run does not time
        model = configs.load_file(str(REPO / "train" / "configs" / f"{c}.py")).model.name
        tiny = common.tiny_model(model)
        assert tiny.endswith("_tiny") and registry.spec(tiny).family is registry.spec(model).family, (c, model, tiny)
        assert common.tiny_model(tiny) == tiny


def test_mfu_arithmetic():
    peak = {"bf16_tflops": 800.0, "datasheet": {"bf16_tflops": 1000.0, "tf32_tflops": 500.0}}
    rows = [{"dtype": "bfloat16", "achieved_tflops": 200.0}, {"dtype": "float32", "achieved_tflops": 100.0}]
    measure.add_mfu(rows, peak, "gpu")
    assert rows[0]["mfu"] == pytest.approx(0.25) and rows[0]["mfu_datasheet"] == pytest.approx(0.2)
    assert rows[1]["mfu"] == pytest.approx(0.125) and rows[1]["mfu_datasheet_tf32"] == pytest.approx(0.2)
    cpu = [{"dtype": "bfloat16", "achieved_tflops": 0.01}]
    measure.add_mfu(cpu, {"bf16_tflops": 0.1, "datasheet": {"bf16_tflops": None}}, "cpu")
    assert cpu[0]["mfu"] is None and cpu[0]["mfu_datasheet"] is None


def test_train_metrics_summary(tmp_path):
    # batch 10; window 1 (steps 1-4, the first compiled: 3 timed steps = 30 positions in 1 s, 10% waiting),
    # window 2 (steps 5-8: 40 positions in 2 s, 40% waiting); the wait is averaged over the 3 s
    lines = [{"step": 4, "positions": 40, "positions_per_s": 30.0, "data_wait_fraction": 0.1},
             {"step": 8, "positions": 80, "positions_per_s": 20.0, "data_wait_fraction": 0.4}]
    (tmp_path / "metrics_train.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    s = common.summarize_train_metrics(str(tmp_path), 10)
    assert s["windows"] == 2 and s["steps"] == 8 and s["positions"] == 80
    assert s["timed_seconds"] == pytest.approx(3.0)
    assert s["data_wait_fraction"] == pytest.approx((0.1 * 1 + 0.4 * 2) / 3)
    assert s["data_wait_fraction_max"] == pytest.approx(0.4)
    assert s["positions_per_s_timed"] == pytest.approx(70 / 3)


def test_nan_report_names_the_repository_lines_of_the_first_nan():
    """The traceback JAX_DEBUG_NANS prints, read back: the repository's frames (not the venv's, not JAX's), the
    innermost last, each with its source line; nothing when the output has no FloatingPointError."""
    repo = common.REPO
    tail = ["step 100 loss 5.8", "Invalid nan value encountered in the output of a jax.jit function.",
            "Traceback (most recent call last):",
            f'  File "{repo}/.venv/bin/kifunet", line 8, in <module>', "    sys.exit(console_main())",
            f'  File "{repo}/train/steps.py", line 221, in step', "    grads = jax.grad(loss_fn)(params)",
            '  File "/usr/lib/python3/site-packages/jax/_src/api.py", line 5, in grad', "    return f(x)",
            f'  File "{repo}/models/cnn.py", line 95, in logits', "    y = self.out_conv(h)",
            f'  File "{repo}/models/layers.py", line 138, in __call__',
            "FloatingPointError: Invalid value (nan) encountered in sharded computation.", "-" * 20]
    rep = common.nan_report(tail)
    assert rep["error"].startswith("FloatingPointError: Invalid value (nan)")
    assert rep["where"] == [
        {"file": "train/steps.py", "line": 221, "function": "step", "source": "grads = jax.grad(loss_fn)(params)"},
        {"file": "models/cnn.py", "line": 95, "function": "logits", "source": "y = self.out_conv(h)"},
        {"file": "models/layers.py", "line": 138, "function": "__call__", "source": ""}]
    assert common.nan_report(tail[:2]) is None


def test_train_step_items_in_order():
    """``--items`` names the steps in their order (bf16 unless a dtype is given); without it, the first batch for
    every config (and the f32 configs) comes before the next batch for any; a malformed item is one line."""
    a = measure.parse_args(["--out", "x", "--configs", "gonn5", "mao", "--batches", "256", "1024"])
    assert [(i["config"], i["dtype"], i["batch"]) for i in measure.train_step_items(a)] == [
        ("gonn5", "bfloat16", 256), ("mao", "bfloat16", 256), ("maddison12", "float32", 256),
        ("gonn5", "bfloat16", 1024), ("mao", "bfloat16", 1024)]
    a = measure.parse_args(["--out", "x", "--items", *session.STEP_ITEMS[:4], "maddison12@256@float32"])
    assert [(i["config"], i["dtype"], i["batch"]) for i in measure.train_step_items(a)] == [
        ("agz20", "bfloat16", 256), ("mao", "bfloat16", 256), ("garb10", "bfloat16", 256),
        ("gonn5", "bfloat16", 1024), ("maddison12", "float32", 256)]
    with pytest.raises(SystemExit, match="'gonn5:1024': expected CONFIG@BATCH"):
        measure.train_step_items(measure.parse_args(["--out", "x", "--items", "gonn5:1024"]))


def test_a_bf16_run_is_read_back_from_its_exit_and_windows():
    """A run stopped by a non-finite loss: its step and loss from the trainer's message, the window maxima over the
    run, the final evaluation's top-1; the verdict counts it per arm, and the third part of a session then trains
    in float32."""
    windows = [{"step": 10, "loss": 5.8, "grad_norm_max": 2.0, "logit_abs_max": 9.0},
               {"step": 20, "loss": 5.7, "grad_norm_max": 40.0, "logit_abs_max": 3.0},
               {"step": 30, "loss": 5.9, "grad_norm_max": 7.0, "logit_abs_max": 120.0}]
    tail = ["step 30/4000 ...", "kifunet: error: non-finite training loss (nan) at step 37: stopping; the last "
            "checkpoint is kept"]
    bad = bf16_runs.summarize("gonn5_bf16", 1, {"rc": 3, "seconds": 12.0, "tail": tail}, windows, [])
    assert (bad["non_finite"], bad["non_finite_step"], bad["non_finite_loss"], bad["steps"]) == (True, 37, "nan", 30)
    assert (bad["grad_norm_max"], bad["logit_abs_max"], bad["last_loss"], bad["top1"]) == (40.0, 120.0, 5.9, None)
    assert bad["error"] == tail[-1]
    good = bf16_runs.summarize("gonn5_bf16", 0, {"rc": 0, "seconds": 30.0, "tail": ["done"]}, windows,
                               [{"step": 4000, "top1": 0.31, "eval_positions": 10000}])
    assert (good["non_finite"], good["finished"], good["top1"], good["error"]) == (False, True, 0.31, None)
    assert bf16_runs.verdict([good, bad]) == {
        "gonn5_bf16": {"runs": 2, "finished": 1, "non_finite": 1, "non_finite_steps": [37]}}
    assert session.choose_train_dtype({"runs": [good, bad]})[0] == "float32"
    assert session.choose_train_dtype({"runs": [good]})[0] == "bfloat16"
    assert "| gonn5_bf16 | 1 | 3 | 30 | 37 | 40 | 120 | 5.9 | - |" in bf16_runs.table([bad])


def test_the_third_part_takes_its_dtype_from_this_call_or_an_earlier_one(tmp_path):
    """A second call on a warm machine (a new OUT, the same --work) still trains in float32 when the first call's
    gonn5 bf16 runs went non-finite; this call's record wins over an earlier one, and --train-dtype over both."""
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir(), work.mkdir()
    args = ["--out", str(out), "--work", str(work)]
    assert session.train_dtype(session.parse_args(args))[0] == "bfloat16"
    bad = {"runs": [{"arm": "gonn5_bf16", "non_finite": True}]}
    (work / session.BF16_JSON).write_text(json.dumps(bad))
    dtype, why = session.train_dtype(session.parse_args(args))
    assert dtype == "float32" and why.endswith("(an earlier call on this machine)"), why
    (out / session.BF16_JSON).write_text(json.dumps({"runs": [{"arm": "gonn5_bf16", "non_finite": False}]}))
    assert session.train_dtype(session.parse_args(args)) == (
        "bfloat16", "none of 1 gonn5 bf16 runs ended on a non-finite loss (this call)")
    assert session.train_dtype(session.parse_args([*args, "--train-dtype", "float32"])) == (
        "float32", "--train-dtype")


# --- the scripts, end to end on the CPU


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("device")
    out, work = root / "out", root / "work"
    _run([str(DEVICE / "measure.py"), "--out", str(out), "--work", str(work), "--quick", "--no-install",
          "--configs", *CONFIGS, "--hlo", "gonn5"])
    return out, work


@pytest.mark.slow
def test_measure_quick_cpu(quick_run):
    out, _ = quick_run
    assert sorted(p.name for p in out.iterdir()) == ["device.json", "device.log", "hlo", "real_run_metrics_train.jsonl"]
    from kifunet.train import aot

    with gzip.open(out / "hlo" / "gonn5_bfloat16_b16.hlo.txt.gz", "rt") as f:  # the compiled step, whose ops count
        hlo_ops = aot.count_ops(f.read())
    norms = [json.loads(ln) for ln in (out / "real_run_metrics_train.jsonl").read_text().splitlines()]
    assert norms and all("grad_norm" in m and "param_norm" in m for m in norms)
    assert "train_step" in (out / "device.log").read_text()
    d = json.loads((out / "device.json").read_text())
    assert d["quick"] is True and d["total_s"] > 0 and d["machine"]["cpu_count"] >= 1
    assert d["skipped"] == [{"what": "install", "why": "--no-install"}]
    for name in ("build", "peak", "train_step", "loader", "real_run", "eval_forward", "eval"):
        assert d["sections"][name]["status"] == "ok", (name, d["sections"][name])
    assert d["build"]["positions"] == {"test": 2036, "train": 5332} and d["build"]["workers"] >= 1
    assert d["jax"]["platform"] == "cpu"

    p = d["peak"]
    assert p["bf16_tflops"] > 0 and p["f32_default_precision_tflops"] > 0
    assert p["datasheet"]["bf16_tflops"] is None and p["measured_over_datasheet"] is None

    ts = d["train_step"]
    assert ts["failed"] == [] and ts["not_run"] == []
    got = {(r["config"], r["dtype"]) for r in ts["rows"]}
    assert got == {(c, "bfloat16") for c in CONFIGS} | {("maddison12", "float32")}
    for r in ts["rows"]:
        assert r["model"].endswith("_tiny") and r["batch"] == 16 and r["loss_finite"], r
        assert r["positions_per_s"] > 0 and r["step_s"] > 0 and r["achieved_tflops"] > 0
        assert r["train_flops_per_position"] > 0 and r["params"] > 0
        assert r["compile_s"] > 0 and r["first_step_s"] > 0 and r["setup_s"] > 0  # compile kept apart
        assert r["positions_per_s"] == pytest.approx(r["batch"] / r["step_s"])
        assert r["ops"] > 50 and (r.get("hlo") is not None) == (r["config"] == "gonn5" and r["dtype"] == "bfloat16")
        assert r["achieved_tflops"] == pytest.approx(r["train_flops_per_position"] * r["positions_per_s"] / 1e12)
        assert r["mfu"] is None and r["mfu_datasheet"] is None  # a CPU: no datasheet peak
    assert next(r for r in ts["rows"] if r["dtype"] == "float32")["mfu_datasheet_tf32"] is None
    assert next(r for r in ts["rows"] if r.get("hlo"))["ops"] == hlo_ops

    ld = d["loader"]
    assert [r["workers"] for r in ld["rows"]] == [0, 1] and all(r["positions_per_s"] > 0 for r in ld["rows"])
    assert ld["best_positions_per_s"] == max(r["positions_per_s"] for r in ld["rows"])

    rr = d["real_run"]
    assert rr["rc"] == 0 and rr["config"] == "tiny" and rr["steps"] == 20 and rr["positions"] == 640
    assert 0 <= rr["data_wait_fraction"] <= 1 and rr["positions_per_s_timed"] > 0 and rr["windows"] >= 1

    assert d["eval_forward"]["positions_per_s"] > 0 and d["eval_forward"]["batch"] == 64
    ev = d["eval"]
    assert ev["positions"] == 2036 and ev["positions_per_s"] > 0 and 0 <= ev["top1"] <= 1


@pytest.mark.slow
def test_session_quick_cpu_then_train_eval_resumes(quick_run):
    """``session.py --quick``: the bf16 runs (both feature sets' datasets built, each run's windows kept), then
    ``train_eval.py`` of gonn5 in the dtype the bf16 runs chose, evaluated on the test split; the train-step part
    is ``measure.py --items``, which test_measure_quick_cpu runs. Then ``train_eval.py --resume``."""
    _, work = quick_run  # its maddison dataset is reused
    root = work.parent / "out_session"
    _run([str(DEVICE / "session.py"), "--out", str(root), "--work", str(work), "--quick", "--no-install",
          "--parts", "bf16", "train", "--train-s", "32", "--eval-s", "25"])
    s = json.loads((root / "session.json").read_text())
    assert s["parts"]["steps"] == {"status": "skipped", "why": "not in --parts"}
    assert s["parts"]["bf16"]["status"] == "ok" and s["parts"]["train"]["status"] == "ok", s["parts"]
    assert s["parts"]["train"]["dtype"] == "bfloat16" and s["parts"]["train"]["budget_s"] <= 32
    b = json.loads((root / "bf16_runs.json").read_text())
    assert set(b["builds"]) == {"maddison", "gonn"} and all(x["status"] == "ok" for x in b["builds"].values())
    assert [(r["arm"], r["seed"], r["rc"], r["steps"], r["non_finite"]) for r in b["runs"]] == [
        ("maddison12_bf16_paper", 0, 0, 10, False), ("gonn5_bf16", 0, 0, 10, False)]
    assert "--config.optimizer.clip_norm=0.0" in b["runs"][0]["command"]
    assert b["verdict"]["gonn5_bf16"] == {"runs": 1, "finished": 1, "non_finite": 0, "non_finite_steps": []}
    for r in b["runs"]:
        windows = [json.loads(x) for x in (root / "bf16_runs" / f"{r['arm']}_s0.jsonl").read_text().splitlines()]
        assert [w["step"] for w in windows] == [5, 10] and r["grad_norm_max"] == max(
            w["grad_norm_max"] for w in windows) > 0
        assert 0 <= r["top1"] <= 1 and r["eval_positions"] == 256

    out = root / "train"
    assert sorted(p.name for p in out.iterdir()) == ["train_eval.json", "train_eval.log", "train_eval_eval.json"]
    d = json.loads((out / "train_eval.json").read_text())
    assert d["build"]["status"] == "ok" and d["build"]["features"] == "gonn"
    tr = d["train"]
    assert tr["rc"] == 0 and tr["model"] == "gonn_tiny" and tr["dtype"] == "bfloat16" and tr["positions"] > 0
    ev = json.loads((out / "train_eval_eval.json").read_text())
    assert ev["dataset"]["split"] == "test" and ev["dataset"]["evaluated"] == ev["dataset"]["rows"] > 0
    assert d["eval"]["rc"] == 0 and d["eval"]["positions"] == ev["dataset"]["evaluated"]
    assert 0 <= d["eval"]["single"]["top1"] <= 1 and d["eval"]["single"]["cross_entropy_nats"] > 0

    # --resume continues the same run for a little longer
    _run([str(DEVICE / "train_eval.py"), "--config", "gonn5", "--minutes", "0.1", "--out", str(out),
          "--work", str(work), "--quick", "--no-install", "--resume", "--eval-limit", "100"])
    d2 = json.loads((out / "train_eval.json").read_text())
    assert d2["train"]["resumed_from_positions"] == tr["positions"]
    assert d2["train"]["positions"] >= tr["positions"] and d2["eval"]["positions"] == 100


@pytest.mark.slow
def test_a_real_run_under_debug_nans_names_the_line_of_its_first_nan(quick_run):
    """``--real-debug-nans``: the real run stops on its first NaN (forced here by a learning rate of 1e30) and
    ``real_run.nan_report`` names the model's or the step's line that made it; a NaN is not retried."""
    _, work = quick_run
    data = next((work / "data").glob("maddison_*"))
    out = work.parent / "out_nans"
    _run([str(DEVICE / "measure.py"), "--out", str(out), "--work", str(work), "--quick", "--no-install",
          "--data", str(data), "--skip", "peak", "train_step", "loader", "eval_forward", "eval",
          "--real-set", "schedule.lr=1e30", "--real-debug-nans"])
    rr = json.loads((out / "device.json").read_text())["real_run"]
    assert rr["rc"] != 0 and rr["debug_nans"] and "--config.schedule.lr=1e30" in rr["command"]
    rep = rr["nan_report"]
    assert "(nan)" in rep["error"] and rep["where"], rep
    assert rep["where"][-1]["file"].split("/")[0] in ("models", "train") and rep["where"][-1]["line"] > 0, rep
    assert "real_run_failed" not in json.loads((out / "device.json").read_text())

    # without JAX_DEBUG_NANS the trainer's own check stops it (exit status 3), with input workers too: a NaN is the
    # model's, so it is not run again without them
    _run([str(DEVICE / "measure.py"), "--out", str(out), "--work", str(work), "--quick", "--no-install",
          "--data", str(data), "--skip", "peak", "train_step", "loader", "eval_forward", "eval",
          "--real-set", "schedule.lr=1e30", "--real-workers", "1"])
    d = json.loads((out / "device.json").read_text())
    assert (d["real_run"]["rc"], d["real_run"]["nan_report"], d["real_run"]["input_workers"]) == (3, None, 1)
    assert "real_run_failed" not in d
