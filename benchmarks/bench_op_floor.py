"""The op floor of a training step: its ops with the config's optimizer and with none (docs/accelerators.md,
"Fewer kernels in a step").

For each config, compiles the training step ``kifunet compile --target cpu`` compiles (``kifunet.train.aot``) at
a small batch twice: with the config's optimizer chain, and with ``optax.identity()`` in its place (the update is
the gradient, added to the parameters: what is left is the forward and backward passes, the logged norms and
one update per parameter array). Prints one row per config: both op counts and their difference, the ops the
optimizer costs.

Command: ``python benchmarks/bench_op_floor.py gonn5 gonn12 cpu_default`` (about a minute per config here).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import optax

from kifunet.train import aot, optim

ROOT = Path(__file__).resolve().parent.parent


def ops(config: str, batch: int, *, identity: bool) -> int:
    """Ops of ``config``'s CPU training step at ``batch``, with ``optax.identity()`` as its optimizer if asked."""
    real = optim.make_optimizer
    if identity:
        optim.make_optimizer = lambda *a, **k: optax.identity()
    try:
        row = aot.compile_step(str(ROOT / "train" / "configs" / f"{config}.py"), aot.TARGETS["cpu"], batch=batch)
    finally:
        optim.make_optimizer = real
    return row["ops"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="*", default=["gonn5", "gonn12", "cpu_default"])
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    print(f"| config | ops | ops with optax.identity | the optimizer's ops |  (CPU, batch {args.batch})")
    print("|---|---:|---:|---:|")
    for name in args.config:
        full, floor = ops(name, args.batch, identity=False), ops(name, args.batch, identity=True)
        print(f"| `{name}` | {full:,} | {floor:,} | {full - floor:,} |", flush=True)


if __name__ == "__main__":
    main()
