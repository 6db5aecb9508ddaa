"""The bf16 question: real `kifunet train` runs of the published recipes in bfloat16, in TF32 and with clipping,
several seeds each, logged every few steps, to tell a bfloat16 blow-up from a recipe's.

    python benchmarks/device/bf16_runs.py --out OUT                       # GPU machine: the grid below, 300 s
    JAX_PLATFORMS=cpu python benchmarks/device/bf16_runs.py --out OUT --quick --no-install   # CPU smoke run

The arms (:data:`ARMS`, ``--arms``), each run for every seed of ``--seeds`` to ``--steps`` steps:

* ``maddison12_bf16_paper``: Maddison's 12-layer CNN in bfloat16 with the paper's plain SGD (no clipping);
* ``maddison12_tf32_paper``: the same in float32 at the backend's default precision (TF32 on NVIDIA GPUs);
* ``maddison12_bf16_clip``: bfloat16 with the shipped recipe (``train/configs/maddison12.py``: ``clip_norm`` 1.0);
* ``gonn5_bf16``: GoNN's 5-block ResNet in bfloat16 with its shipped recipe (BatchNorm, momentum).

Every run logs a window every ``--log-every`` steps: its loss, the last and the largest gradient norm and
|logit| of the window (``grad_norm_max``, ``logit_abs_max``); a non-finite loss stops it (``kifunet train``'s
exit status 3) and its step is recorded. Up to ``--parallel`` runs share the device at once (each with a
share of its memory: ``XLA_PYTHON_CLIENT_MEM_FRACTION``), in the order of the arms, seed by seed; a run not
started when the ``--budget-s`` is spent is listed under ``skipped``, and a started one is stopped at the
budget's end (its windows so far are kept).

Datasets: ``kifunet build`` of the KGS archives on the GoNN protocol with each arm's feature set, into
``--work`` (reused there), as ``measure.py`` builds: the first with all cores, the next beside the first arms'
runs on half of them; ``--data FEATURES=DIR`` gives one instead. ``--quick``: the sample corpus, the family's
``*_tiny`` models at tiny.py's sizes.

Writes ``OUT/bf16_runs.json`` (per run: the command, exit status and the last line of a failed run's output,
steps reached, the step of the first non-finite loss, the largest gradient norm and |logit|, the last window's
loss, the final evaluation's top-1 on 10,000 test positions; per arm, a ``verdict``),
``OUT/bf16_runs/<arm>_s<seed>.jsonl`` (the run's ``metrics_train.jsonl``) and ``OUT/bf16_runs.log``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

#: arm -> (config, compute dtype, config overrides): the published recipe in two precisions, then the fixes
ARMS = {
    "maddison12_bf16_paper": ("maddison12", "bfloat16", ["optimizer.clip_norm=0.0"]),
    "maddison12_tf32_paper": ("maddison12", "float32", ["optimizer.clip_norm=0.0", "matmul_precision=default"]),
    "maddison12_bf16_clip": ("maddison12", "bfloat16", []),
    "gonn5_bf16": ("gonn5", "bfloat16", []),
}
QUICK_ARMS = ["maddison12_bf16_paper", "gonn5_bf16"]  # both feature sets, an override and none
NON_FINITE_RC = 3  # kifunet train's exit status for a non-finite loss (train/train.py)
_NON_FINITE = re.compile(r"non-finite training loss \(([^)]*)\) at step (\d+)")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=common.DEFAULT_WORK)
    ap.add_argument("--arms", nargs="*", default=None, choices=list(ARMS),
                    help="default: all, in this order (quick: maddison12_bf16_paper gonn5_bf16)")
    ap.add_argument("--seeds", type=int, nargs="*", default=None, help="default 0 1 2 (quick: 0)")
    ap.add_argument("--steps", type=int, default=None, help="steps per run (default 4000; quick 10)")
    ap.add_argument("--log-every", type=int, default=None, help="steps per logged window (default 10; quick 5)")
    ap.add_argument("--parallel", type=int, default=None, help="runs at once (default 3; quick 2)")
    ap.add_argument("--budget-s", type=float, default=300.0, help="whole-script time budget (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="tiny models, the sample corpus (CPU tests)")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--kgs", default=None)
    ap.add_argument("--train-archives", nargs="*", default=None, metavar="PREFIX")
    ap.add_argument("--data", nargs="*", default=[], metavar="FEATURES=DIR", help="built datasets to use")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="build workers (default: all cores)")
    return ap.parse_args(argv)


def run_command(a, arm: str, seed: int, *, data: str, workdir: str, batch: int, model: str, input_workers: int,
                time_limit_s: float) -> list[str]:
    """The `kifunet train` command of one run of ``arm``."""
    config, dtype, overrides = ARMS[arm]
    cmd = [common.PY, "-m", "kifunet.cli", "train", "--config", common.config_path(config), "--workdir", workdir,
           f"--config.dataset={data}", f"--config.seed={seed}", f"--config.model.dtype={dtype}"]
    if a.quick:
        cmd += [f"--config.model.name={common.tiny_model(model)}", *common.QUICK_TRAIN]
        batch = 32
    cmd += [f"--config.train_positions={a.steps * batch}", f"--config.log_every_steps={a.log_every}",
            "--config.eval_every_positions=0", f"--config.final_eval_positions={256 if a.quick else 10_000}",
            "--config.checkpoint_every_positions=1000000000000", "--config.checkpoint_every_minutes=0",
            f"--config.input.workers={input_workers}", f"--config.time_limit_s={time_limit_s:.0f}"]
    return cmd + [f"--config.{kv}" for kv in overrides]


def summarize(arm: str, seed: int, r: dict, metrics: list[dict], evals: list[dict]) -> dict:
    """One run's record from its exit, its logged windows and its evaluations."""
    windows = [m for m in metrics if "grad_norm_max" in m]
    bad = next((_NON_FINITE.search(line) for line in reversed(r.get("tail") or []) if _NON_FINITE.search(line)),
               None)
    config, dtype, overrides = ARMS[arm]
    return {"arm": arm, "config": config, "dtype": dtype, "overrides": overrides, "seed": seed, "rc": r.get("rc"),
            "timed_out": r.get("timed_out"), "wall_s": r.get("seconds"),
            "error": (r.get("tail") or [""])[-1] if r.get("rc") not in (0, None) else None,
            "steps": windows[-1]["step"] if windows else 0,
            "non_finite": bad is not None or r.get("rc") == NON_FINITE_RC,
            "non_finite_step": int(bad.group(2)) if bad else None, "non_finite_loss": bad.group(1) if bad else None,
            "finished": r.get("rc") == 0,
            "grad_norm_max": max((m["grad_norm_max"] for m in windows), default=None),
            "logit_abs_max": max((m["logit_abs_max"] for m in windows), default=None),
            "last_loss": windows[-1].get("loss") if windows else None,
            "last_windows": [{k: m.get(k) for k in ("step", "loss", "grad_norm_max", "logit_abs_max")}
                             for m in windows[-5:]],
            "top1": evals[-1].get("top1") if evals else None,
            "eval_positions": evals[-1].get("eval_positions") if evals else None}


def main(argv=None) -> int:
    a = parse_args(argv)
    a.arms = a.arms or (QUICK_ARMS if a.quick else list(ARMS))
    a.seeds = a.seeds if a.seeds is not None else ([0] if a.quick else [0, 1, 2])
    a.steps = a.steps or (10 if a.quick else 4000)
    a.log_every = a.log_every or (5 if a.quick else 10)
    a.parallel = max(1, a.parallel or (2 if a.quick else 3))
    t0 = time.time()
    deadline = t0 + a.budget_s
    os.makedirs(os.path.join(a.out, "bf16_runs"), exist_ok=True)
    log = common.Log(os.path.join(a.out, "bf16_runs.log"))
    res_path = os.path.join(a.out, "bf16_runs.json")
    res = common.Record(res_path, "benchmarks/device/bf16_runs.py", argv, a.quick, budget_s=a.budget_s,
                        steps=a.steps, log_every=a.log_every, seeds=a.seeds, parallel=a.parallel,
                        arms={k: ARMS[k] for k in a.arms}, builds={}, runs=[], skipped=[])
    save = res.save

    try:
        res["install"] = common.install_step(log, skip=a.no_install, timeout=min(180.0, a.budget_s))
        save()
        given = dict(kv.split("=", 1) for kv in a.data)
        infos = {c: common.config_info(common.config_path(c)) for c in dict.fromkeys(ARMS[k][0] for k in a.arms)}
        builds = concurrent.futures.ThreadPoolExecutor(max_workers=1)  # one build at a time, beside the runs
        datasets = {}
        for i, features in enumerate(dict.fromkeys(i["expect_features"] for i in infos.values())):
            if features in given:
                datasets[features] = concurrent.futures.Future()
                datasets[features].set_result({"status": "given", "dataset": os.path.abspath(given[features])})
                continue
            # the first build has the machine; a later one runs beside the first arms' runs, on half the cores
            datasets[features] = builds.submit(build, a, log, features, deadline,
                                               a.workers if i == 0 else max(1, a.workers // 2))
        queue = [(arm, seed) for arm in a.arms for seed in a.seeds]
        workers = max(0, min(8, ((os.cpu_count() or 1) - 2) // a.parallel)) if not a.quick else 0
        env = {"XLA_PYTHON_CLIENT_MEM_FRACTION": f"{0.9 / a.parallel:.2f}"}

        def one(arm: str, seed: int) -> dict:
            config = ARMS[arm][0]
            info = infos[config]
            b = datasets[info["expect_features"]].result()
            data = b["dataset"] if b["status"] in ("ok", "given") else None
            left = deadline - time.time()
            if data is None or left < 30:
                why = "no dataset" if data is None else f"time budget ({left:.0f} s left)"
                res["skipped"].append({"arm": arm, "seed": seed, "why": why})
                log(f"skipped {arm} seed {seed}: {why}")
                return {}
            workdir = os.path.join(a.work, "bf16_runs", f"{arm}_s{seed}")
            shutil.rmtree(workdir, ignore_errors=True)
            cmd = run_command(a, arm, seed, data=data, workdir=workdir, batch=info["batch_size"],
                              model=info["model"], input_workers=workers, time_limit_s=max(10.0, left - 25))
            r = common.run(cmd, log, timeout=left, env=env, tag=f"[{arm} s{seed}]")
            metrics_path = os.path.join(workdir, "metrics_train.jsonl")
            if os.path.isfile(metrics_path):
                shutil.copyfile(metrics_path, os.path.join(a.out, "bf16_runs", f"{arm}_s{seed}.jsonl"))
            rec = {**summarize(arm, seed, r, common.read_jsonl(metrics_path),
                                common.read_jsonl(os.path.join(workdir, "metrics_eval.jsonl"))), "command": cmd}
            log(f"[{arm} s{seed}] rc {rec['rc']}, {rec['steps']} steps, non-finite at {rec['non_finite_step']}, "
                f"max grad norm {rec['grad_norm_max']}, max |logit| {rec['logit_abs_max']}")
            return rec

        with builds, concurrent.futures.ThreadPoolExecutor(max_workers=a.parallel) as pool:
            for rec in pool.map(lambda job: one(*job), queue):
                if rec:
                    res["runs"].append(rec)
                    save()
        res["builds"] = {f: fut.result() for f, fut in datasets.items()}
        res["verdict"] = verdict(res["runs"])
        return 0 if res["runs"] else 1
    finally:
        res.finish()
        for line in table(res["runs"]).splitlines():
            log(line)
        log(f"wrote {res_path} ({time.time() - t0:.0f} s)")
        log.close()


def build(a, log, features: str, deadline: float, workers: int) -> dict:
    """``common.build`` of ``features`` (a finished build in ``--work`` is reused), with what is left of the budget."""
    return common.build(log, work=a.work, features=features, quick=a.quick, kgs=a.kgs, workers=workers,
                        timeout=max(1.0, deadline - time.time()), train_archives=a.train_archives)


def verdict(runs: list[dict]) -> dict:
    """Per arm: runs, runs that reached their last step, runs stopped by a non-finite loss, and the steps of those."""
    out = {}
    for r in runs:
        v = out.setdefault(r["arm"], {"runs": 0, "finished": 0, "non_finite": 0, "non_finite_steps": []})
        v["runs"] += 1
        v["finished"] += bool(r["finished"])
        if r["non_finite"]:
            v["non_finite"] += 1
            v["non_finite_steps"].append(r["non_finite_step"])
    return out


def table(runs: list[dict]) -> str:
    """The runs as a Markdown table."""
    lines = ["| arm | seed | rc | steps | non-finite at | max grad norm | max abs logit | last loss | top-1 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        cells = [r["arm"], r["seed"], r["rc"], r["steps"], r["non_finite_step"] or "-", _g(r["grad_norm_max"]),
                 _g(r["logit_abs_max"]), _g(r["last_loss"]), "-" if r["top1"] is None else f"{r['top1']:.2%}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def _g(x) -> str:
    return "-" if x is None else f"{x:.4g}"


if __name__ == "__main__":
    raise SystemExit(main())
