"""Throughput of the training step of each config: positions/s of the real data-parallel step.

    nice -n 10 python benchmarks/bench_train_step.py --out runs/bench_train_step_cpu.json
    nice -n 10 python benchmarks/bench_train_step.py --configs cpu_small gonn5 --batch 64

For each config in ``train/configs/`` (or ``--configs``): the config's model (19x19, the planes of its
feature set), optimizer and loss, compiled as in training (``parallel.data_parallel`` of
``steps.train_step`` over all local devices, state donated), fed random 0/1 ``uint8`` planes and random
targets already on the device -- so it measures the step alone, not the input pipeline. ``--batch``
replaces the config's global batch (default: the config's, capped at ``--max-batch`` on CPU, where the
published batch sizes of the big nets take minutes per step). After ``--warmup`` steps, ``--steps`` steps
are timed with ``block_until_ready``; reported: compile seconds, median seconds per step, positions/s,
and the positions/s of the config's ``train_positions`` as an ETA. Writes a Markdown table to stdout and
all numbers to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import time

import jax
import numpy as np

from kifunet.data_prep.planes import features
from kifunet.train import configs as configs_mod
from kifunet.train import parallel, train
from kifunet.train import steps as train_steps

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_DIR = os.path.join(os.path.dirname(HERE), "train", "configs")
SKIP = {"default", "__init__"}


def config_names() -> list[str]:
    return sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(CONFIG_DIR, "*.py"))
                  if os.path.splitext(os.path.basename(p))[0] not in SKIP)


def prepare(cfg, planes: int, mesh):
    """``(step, state, batch)``: ``cfg``'s data-parallel training step (state donated), a fresh state and one
    random batch of ``cfg.batch_size`` 19x19 positions with ``planes`` planes, already on the devices."""
    b = cfg.batch_size
    model_def, tx, schedule, state, model = train.setup(cfg, board_size=19, in_planes=planes, mesh=mesh)
    step = parallel.data_parallel(train_steps.train_step(model_def, tx, schedule, loss=cfg.loss), mesh,
                                  donate_state=True)
    rng = np.random.default_rng(0)
    host = {"planes": rng.integers(0, 2, (b, 19, 19, planes), dtype=np.uint8),
            "target": rng.integers(0, 361, b).astype(np.int32), "to_move": rng.integers(1, 3, b).astype(np.int32),
            "rank": rng.integers(0, 9, b).astype(np.int32), "weight": np.ones(b, np.float32)}
    return step, state, parallel.shard_batch(host, mesh)


def bench(name: str, *, batch: int | None, max_batch: int, steps: int, warmup: int) -> dict:
    cfg = configs_mod.load_file(os.path.join(CONFIG_DIR, f"{name}.py"))
    planes = features.get(cfg.expect_features or "maddison").num_planes
    mesh = parallel.make_mesh(cfg.num_devices)
    b = batch or min(cfg.batch_size, max_batch)
    b -= b % mesh.size
    cfg.batch_size = b
    step, state, batch_dev = prepare(cfg, planes, mesh)
    t0 = time.perf_counter()
    state, m = step(state, batch_dev)
    jax.block_until_ready(m)
    compile_s = time.perf_counter() - t0
    for _ in range(warmup):
        state, m = step(state, batch_dev)
    jax.block_until_ready(m)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        state, m = step(state, batch_dev)
        jax.block_until_ready(m)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return {"config": name, "model": cfg.model.name, "dtype": cfg.model.dtype, "planes": planes, "batch": b,
            "devices": mesh.size, "compile_s": compile_s, "step_s": med, "positions_per_s": b / med,
            "config_batch": configs_mod.load_file(os.path.join(CONFIG_DIR, f"{name}.py")).batch_size,
            "train_positions": cfg.train_positions,
            "eta_hours_at_this_rate": cfg.train_positions / (b / med) / 3600,
            "loss_finite": bool(np.isfinite(float(m["loss_sum"])))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="*", default=None, help="config names (default: all in train/configs)")
    ap.add_argument("--batch", type=int, default=None, help="global batch (default: the config's, capped)")
    ap.add_argument("--max-batch", type=int, default=256, help="cap on the config's batch (default 256)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", default=None, help="JSON output file")
    a = ap.parse_args()
    rows = []
    for name in a.configs or config_names():
        r = bench(name, batch=a.batch, max_batch=a.max_batch, steps=a.steps, warmup=a.warmup)
        rows.append(r)
        print(json.dumps(r), flush=True)
    dev = jax.devices()[0]
    print(f"\ndevice: {dev.device_kind} x {len(jax.devices())} ({platform.processor() or platform.machine()})\n")
    print("| config | model | batch | step (s) | positions/s | compile (s) | config's run at this rate (h) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['config']} | {r['model']} | {r['batch']} | {r['step_s']:.3f} | {r['positions_per_s']:,.1f} | "
              f"{r['compile_s']:.1f} | {r['eta_hours_at_this_rate']:,.1f} |")
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"device": str(dev.device_kind), "devices": len(jax.devices()), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
