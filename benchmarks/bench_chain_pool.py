"""The cost of chain pooling (models/chain_pool.py) beside a 3x3 convolution of the same width: the forward pass,
and the gradient with respect to the input (``backward``), on the default JAX device (here the CPU).

    python benchmarks/bench_chain_pool.py [--batch 128] [--channels 32,64] [--repeats 20] [--out FILE.json]

Boards: random 19x19 positions with 45% of the points stones (half each colour), the density of a middle game;
the inputs are random normal channels. Each timing is the median of ``--repeats`` calls of the jitted function
after one warm-up call (compile excluded), with ``block_until_ready``. Prints one JSON object (and writes it to
``--out``): per channel count, seconds per call and the ratio chain pooling / convolution, with the load
average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from kifunet.models.chain_pool import chain_max
from kifunet.models.layers import Conv


def _median_seconds(fn, *args, repeats: int) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--channels", default="32,64")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    colour = rng.choice([0, 1, 2], size=(a.batch, 19, 19), p=[0.55, 0.225, 0.225])
    black, white = jnp.asarray(colour == 1), jnp.asarray(colour == 2)
    load_before = os.getloadavg()
    rows = []
    for c in (int(x) for x in a.channels.split(",")):
        x = jnp.asarray(rng.normal(size=(a.batch, 19, 19, c)).astype(np.float32))
        conv = Conv(c, c, 3, rngs=nnx.Rngs(0))
        conv_fwd = nnx.jit(lambda m, v: m(v))
        pool_fwd = jax.jit(chain_max)
        conv_grad = nnx.jit(nnx.grad(lambda m, v: m(v).sum(), argnums=1))
        pool_grad = jax.jit(jax.grad(lambda v, b, w: chain_max(v, b, w).sum()))
        row = {"channels": c,
               "conv3x3_forward_s": _median_seconds(conv_fwd, conv, x, repeats=a.repeats),
               "chain_pool_forward_s": _median_seconds(pool_fwd, x, black, white, repeats=a.repeats),
               "conv3x3_backward_s": _median_seconds(conv_grad, conv, x, repeats=a.repeats),
               "chain_pool_backward_s": _median_seconds(pool_grad, x, black, white, repeats=a.repeats)}
        row["forward_ratio"] = row["chain_pool_forward_s"] / row["conv3x3_forward_s"]
        row["backward_ratio"] = row["chain_pool_backward_s"] / row["conv3x3_backward_s"]
        rows.append(row)
    out = {"device": str(jax.devices()[0]), "jax": jax.__version__, "batch": a.batch, "board": 19,
           "stone_density": 0.45, "repeats": a.repeats, "load_before": load_before, "load_after": os.getloadavg(),
           "rows": rows}
    text = json.dumps(out, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
