"""Throughput of the policy networks: forward and forward+backward positions/s, FLOPs, achieved GFLOP/s.

    nice -n 10 python benchmarks/bench_models.py --out runs/bench_models_cpu.json

For each model (registry names, 19x19, the model's default planes, random 0/1 planes):

* forward: ``model.eval()`` logits (and values, for a net with a value head) for a batch of ``--batch``
  positions;
* forward+backward: ``model.train()`` softmax cross-entropy gradients for the same batch size, computed
  by one compiled gradient function per microbatch of ``--microbatch`` positions and summed (gradient
  accumulation, so that the activations of the large nets fit in memory); positions/s counts the whole
  batch. (A ``lax.scan`` over the microbatches was tried first: XLA's CPU convolutions inside the loop
  ran about 25x slower than outside, so the loop is in Python.)

Both are ``jax.jit``-compiled ahead of the timing (``lower().compile()``, reported separately as compile
seconds), then run ``--iters`` times (``--iters-big`` for nets above 4 GFLOP per position) with
``block_until_ready``; the median time is reported. FLOPs are analytical
(:func:`kifunet.models.count_macs`, 2 FLOPs per MAC, forward+backward = 3 forwards). For scale, the
GFLOP/s of a ``--matmul`` x ``--matmul`` float32 matmul on the same device is measured first.
Writes a Markdown table to stdout and everything to the JSON file ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from kifunet import models

DEFAULT_MODELS = ["maddison12", "alphago13_192", "cazenave_resnet10", "agz_resnet20", "gonn_resnet5",
                  "gonn_resnet12", "mao", "garb10"]
BIG_GFLOP = 4.0  # forward GFLOP per position above which --iters-big applies


def _timed(fn, *args, iters: int) -> list[float]:
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return times


def matmul_gflops(n: int, iters: int = 10, dtype=jnp.float32) -> dict:
    """GFLOP/s of an ``n x n @ n x n`` matmul (median of ``iters`` runs after compilation)."""
    key_a, key_b = jax.random.split(jax.random.key(0))
    a = jax.random.normal(key_a, (n, n), dtype)
    b = jax.random.normal(key_b, (n, n), dtype)
    f = jax.jit(jnp.matmul).lower(a, b).compile()
    jax.block_until_ready(f(a, b))
    t = statistics.median(_timed(f, a, b, iters=iters))
    return {"n": n, "dtype": jnp.dtype(dtype).name, "seconds": t, "gflops": 2 * n**3 / t / 1e9}


def bench_model(name: str, *, batch: int, microbatch: int, iters: int, iters_big: int, board_size: int = 19,
                dtype=jnp.float32, seed: int = 0) -> dict:
    """Benchmark one registry model; returns a dict of the measurements (see the module docstring)."""
    if batch % microbatch:
        raise ValueError(f"batch {batch} must be a multiple of microbatch {microbatch}")
    model = models.create(name, board_size=board_size, rngs=nnx.Rngs(seed), dtype=dtype)
    fwd_flops = models.forward_flops(model)
    n_iters = iters_big if fwd_flops / 1e9 > BIG_GFLOP else iters
    rng = np.random.default_rng(seed)
    n = board_size
    x = jnp.asarray((rng.random((batch, n, n, model.in_planes)) < 0.2).astype(np.float32))
    y = jnp.asarray(rng.integers(0, n * n, size=batch))

    model.eval()
    graphdef, state = nnx.split(model)

    def forward(state, x):
        return nnx.merge(graphdef, state)(x)

    t0 = time.perf_counter()
    fwd = jax.jit(forward).lower(state, x).compile()
    compile_fwd = time.perf_counter() - t0
    fwd_times = _timed(fwd, state, x, iters=n_iters)

    model.train()
    graphdef, state = nnx.split(model)
    chunks = [(x[i:i + microbatch], y[i:i + microbatch]) for i in range(0, batch, microbatch)]

    def gradients(state, x, y):
        m = nnx.merge(graphdef, state)

        def loss(m):
            logits = m(x).logits  # a two-headed net's value is computed, not trained
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).sum()

        return nnx.value_and_grad(loss)(m)

    t0 = time.perf_counter()
    grad_step = jax.jit(gradients).lower(state, *chunks[0]).compile()
    zero = jax.tree.map(jnp.zeros_like, nnx.state(model, nnx.Param))
    accumulate = jax.jit(lambda acc, g: jax.tree.map(jnp.add, acc, g)).lower(zero, zero).compile()
    compile_train = time.perf_counter() - t0

    def train(state):
        total, losses = zero, []
        for xc, yc in chunks:
            value, grads = grad_step(state, xc, yc)
            total = accumulate(total, grads)
            losses.append(value)
        return total, losses

    train_times = _timed(train, state, iters=n_iters)

    t_fwd, t_train = statistics.median(fwd_times), statistics.median(train_times)
    fwd_pos, train_pos = batch / t_fwd, batch / t_train
    return {
        "name": name,
        "params": models.count_params(model),
        "in_planes": model.in_planes,
        "fwd_gflop_per_pos": fwd_flops / 1e9,
        "fwd_pos_per_s": fwd_pos,
        "fwd_gflops": fwd_flops * fwd_pos / 1e9,
        "train_pos_per_s": train_pos,
        "train_gflops": models.train_flops(model) * train_pos / 1e9,
        "compile_fwd_s": compile_fwd,
        "compile_train_s": compile_train,
        "iters": n_iters,
        "fwd_times_s": fwd_times,
        "train_times_s": train_times,
    }


def device_info() -> dict:
    dev = jax.devices()[0]
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": dev.platform, "device": dev.device_kind, "cpu": cpu or platform.processor(),
            "cpu_count": os.cpu_count(), "jax": jax.__version__, "load_avg_start": os.getloadavg()}


def markdown(results: list[dict], matmul: dict, batch: int, microbatch: int) -> str:
    lines = [
        f"Batch {batch} (forward+backward in microbatches of {microbatch}); matmul {matmul['n']}x{matmul['n']} "
        f"{matmul['dtype']}: {matmul['gflops']:.1f} GFLOP/s.",
        "",
        "| model | params | fwd GFLOP/pos | fwd pos/s | fwd GFLOP/s | fwd+bwd pos/s | fwd+bwd GFLOP/s "
        "| compile fwd / fwd+bwd (s) | timed iters |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['name']} | {r['params']:,} | {r['fwd_gflop_per_pos']:.3f} | {r['fwd_pos_per_s']:.1f} | "
            f"{r['fwd_gflops']:.1f} | {r['train_pos_per_s']:.1f} | {r['train_gflops']:.1f} | "
            f"{r['compile_fwd_s']:.1f} / {r['compile_train_s']:.1f} | {r['iters']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--microbatch", type=int, default=64)
    ap.add_argument("--iters", type=int, default=2, help="timed iterations per model")
    ap.add_argument("--iters-big", type=int, default=1, help=f"timed iterations above {BIG_GFLOP} GFLOP/position")
    ap.add_argument("--board-size", type=int, default=19)
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32", help="compute dtype")
    ap.add_argument("--matmul", type=int, default=2048)
    ap.add_argument("--out", type=Path, required=True, help="JSON output path")
    args = ap.parse_args(argv)
    dtype = jnp.dtype(args.dtype)

    info = device_info()
    matmul = matmul_gflops(args.matmul)
    print(f"# device: {info['platform']} {info['device']} ({info['cpu']}, {info['cpu_count']} cores); "
          f"{args.matmul}^2 matmul {matmul['gflops']:.1f} GFLOP/s", flush=True)
    results = []
    for name in args.models:
        r = bench_model(name, batch=args.batch, microbatch=args.microbatch, iters=args.iters,
                        iters_big=args.iters_big, board_size=args.board_size, dtype=dtype)
        print(f"# {name}: fwd {r['fwd_pos_per_s']:.1f} pos/s, fwd+bwd {r['train_pos_per_s']:.1f} pos/s", flush=True)
        results.append(r)
    info["load_avg_end"] = os.getloadavg()
    table = markdown(results, matmul, args.batch, args.microbatch)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"device": info, "dtype": args.dtype, "batch": args.batch,
                                    "microbatch": args.microbatch, "board_size": args.board_size,
                                    "matmul": matmul, "models": results, "markdown": table}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
