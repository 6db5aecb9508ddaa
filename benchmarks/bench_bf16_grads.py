"""bfloat16 against float32 compute on one batch: the loss and every parameter's gradient of a freshly initialised
net (same parameters, same batch), on the default JAX device.

    python benchmarks/bench_bf16_grads.py [--model maddison12] [--batch 32] [--seed 0] [--out FILE.json]

The batch is random: planes 1 with probability 0.2, random targets, colours and ranks (an accuracy check of the
arithmetic, not of learning). Per parameter: the gradient's norm in each dtype and the relative error
``|g16 - g32| / |g32|``. Prints one JSON object (and writes it to ``--out``). Note that XLA's CPU convolutions and
a GPU's tensor cores accumulate bfloat16 products differently, so the per-element errors measured on the CPU say
little about a GPU.
"""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from kifunet import models


def loss_and_grads(name: str, dtype, batch: dict, seed: int):
    """(loss, gradient state) of the net ``name`` built with compute ``dtype``; batch norm in training mode."""
    net = models.create(name, dtype=dtype, rngs=nnx.Rngs(seed))
    rows = jnp.arange(batch["target"].shape[0])

    def loss(m):
        logits = m(batch["planes"], batch["rank"], batch["to_move"]).logits
        return -jnp.mean(jax.nn.log_softmax(logits)[rows, batch["target"]])

    return nnx.value_and_grad(loss)(net)


def compare(name: str, batch_size: int, seed: int) -> dict:
    net = models.create(name, rngs=nnx.Rngs(seed))
    n, c = net.board_size, net.in_planes
    rng = np.random.default_rng(seed)
    batch = {"planes": jnp.asarray(rng.random((batch_size, n, n, c)) < 0.2, jnp.float32),
             "target": jnp.asarray(rng.integers(0, n * n, batch_size)),
             "to_move": jnp.asarray(rng.integers(1, 3, batch_size)),
             "rank": jnp.asarray(rng.integers(0, 9, batch_size))}
    l32, g32 = loss_and_grads(name, jnp.float32, batch, seed)
    l16, g16 = loss_and_grads(name, jnp.bfloat16, batch, seed)
    params = []
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(g32), jax.tree_util.tree_leaves(g16)):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        na = float(np.linalg.norm(a))
        params.append({"param": jax.tree_util.keystr(path), "norm_f32": na, "norm_bf16": float(np.linalg.norm(b)),
                       "rel_error": float(np.linalg.norm(a - b) / na) if na > 0 else None})
    errs = [p["rel_error"] for p in params if p["rel_error"] is not None]
    ratios = [p["norm_bf16"] / p["norm_f32"] for p in params if p["norm_f32"] > 0]
    return {"model": name, "batch": batch_size, "seed": seed, "device": jax.devices()[0].device_kind,
            "loss_f32": float(l32), "loss_bf16": float(l16), "rel_error_min": min(errs), "rel_error_max": max(errs),
            "norm_ratio_min": min(ratios), "norm_ratio_max": max(ratios), "params": params}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="maddison12")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    res = compare(a.model, a.batch, a.seed)
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
