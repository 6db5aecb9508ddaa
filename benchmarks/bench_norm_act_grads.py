"""How far a net's gradients with the fused BatchNorm and activation are from autodiff's of flax's layer
(docs/accelerators.md, "Fewer kernels in a step").

Builds a config's model, and computes the training loss (cross-entropy on random targets) and its gradient for
one random batch twice under ``jax.jit`` on this CPU: with :func:`kifunet.models.norm_act.norm_act` fused (what
CPUs and GPUs train with) and with every BatchNorm on flax's layer (``ModelDef(..., fused_norm_act=False)``, what
TPUs train with). Prints both losses, the relative distance of the whole gradients and the three arrays that
differ most.

Command: ``python benchmarks/bench_norm_act_grads.py cpu_default`` (under a minute).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp

from kifunet import models
from kifunet.data_prep.planes import features
from kifunet.train import configs, model_config, steps

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", default="cpu_default")
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    config = configs.load_file(str(ROOT / "train" / "configs" / f"{args.config}.py"))
    planes = features.get(config.expect_features or "maddison").num_planes
    board = models.default_board_size(config.model.name)
    k = jax.random.split(jax.random.key(3), 2)
    batch = {"planes": (jax.random.uniform(k[0], (args.batch, board, board, planes)) < 0.3).astype(jnp.float32),
             "rank": None, "to_move": jnp.zeros((args.batch,), jnp.int32)}
    target = jax.random.randint(k[1], (args.batch,), 0, board * board)
    out = {}
    for fused in (False, True):
        model = model_config.build_model(config.model, seed=config.seed, board_size=board, in_planes=planes)
        md = steps.ModelDef(model, fused_norm_act=fused)

        def loss(params, md=md):
            logits, _, _ = md.apply(params, md.extra, batch, train=True)
            return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(args.batch), target])

        out[fused] = jax.jit(jax.value_and_grad(loss))(md.params)
    (l0, g0), (l1, g1) = out[False], out[True]
    a, b = jax.tree.leaves(g0), jax.tree.leaves(g1)
    whole = float(jnp.sqrt(sum(jnp.sum((x - y) ** 2) for x, y in zip(a, b)) / sum(jnp.sum(x ** 2) for x in a)))
    worst = sorted((float(jnp.linalg.norm(x - y) / jnp.linalg.norm(x)), jax.tree_util.keystr(p))
                   for (p, x), y in zip(jax.tree_util.tree_leaves_with_path(g0), b) if float(jnp.linalg.norm(x)) > 0)
    print(f"{args.config}, batch {args.batch}: loss {float(l0):.7f} (flax's BatchNorm) {float(l1):.7f} (fused)")
    print(f"gradient: |fused - flax's| / |flax's| = {whole:.1e} over all parameters")
    for rel, path in worst[-3:][::-1]:
        print(f"  {path}: {rel:.1e}")


if __name__ == "__main__":
    main()
