"""How far the flat optimizer's updates are from the per-array ones, on the same gradients (docs/accelerators.md,
"Fewer kernels in a step").

Builds a config's model and both forms of its optimizer chain (``make_optimizer(flat=True)``, what CPUs and GPUs
run, and ``flat=False``, what TPUs run), applies three updates of the same random gradients to the same
parameters under ``jax.jit`` on this CPU, and prints how many parameter elements differ and by how much.

Command: ``python benchmarks/bench_flat_optimizer_bits.py cpu_default`` (a few seconds).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import numpy as np
import optax

from kifunet import models
from kifunet.data_prep.planes import features
from kifunet.train import configs, optim, parallel, train

ROOT = Path(__file__).resolve().parent.parent


def _updated(tx, params, grads, steps: int):
    @jax.jit
    def step(p, s):
        u, s = tx.update(grads, s, p)
        return optax.apply_updates(p, u), s

    p, s = params, tx.init(params)
    for _ in range(steps):
        p, s = step(p, s)
    return p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", default="cpu_default")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    config = configs.load_file(str(ROOT / "train" / "configs" / f"{args.config}.py"))
    planes = features.get(config.expect_features or "maddison").num_planes
    model_def, _, schedule, _, model = train.setup(config, board_size=models.default_board_size(config.model.name),
                                                   in_planes=planes, mesh=parallel.make_mesh(1))
    params = model_def.params
    leaves, tree = jax.tree.flatten(params)
    key = jax.random.PRNGKey(0)
    grads = jax.tree.unflatten(tree, [0.01 * jax.random.normal(jax.random.fold_in(key, i), np.shape(x))
                                      for i, x in enumerate(leaves)])
    out = {}
    for flat in (False, True):
        tx = optim.make_optimizer(config.optimizer, schedule, params=params, model=model,
                                  bn_paths=model_def.bn_paths, flat=flat)
        out[flat] = [np.asarray(x) for x in jax.tree.leaves(_updated(tx, params, grads, args.steps))]
    total = sum(a.size for a in out[False])
    differ = sum(int((a != b).sum()) for a, b in zip(out[False], out[True]))
    worst = max(float(np.abs(a - b).max()) for a, b in zip(out[False], out[True]))
    print(f"{args.config}: after {args.steps} updates {differ:,} of {total:,} parameter elements differ "
          f"({differ / total:.1%}), by at most {worst:.2e}")


if __name__ == "__main__":
    main()
