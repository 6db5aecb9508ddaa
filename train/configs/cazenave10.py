"""Cazenave 2017 residual network, 10 blocks x 256 filters, L2 loss: the "Cazenave 10 x 256" row.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_gonn_alphago --features alphago --preset gonn-kgs
    kifunet train --config train/configs/cazenave10.py --workdir runs/cazenave10 \
        --config.dataset=data/kgs_gonn_alphago

Hardware assumed: GPUs. Compare with (docs/published.md, a secondary source): **58.2% top-1** on the ``gonn-kgs``
protocol, 12,098,304 parameters on his 45 planes; this config reads the 48 AlphaGo planes (12,118,272).

Setup: L2 loss (GoNN's README); the optimiser is our choice, not in the sources: SGD with Nesterov momentum 0.9,
batch 256, a 1M-position warmup, then cosine decay over 200M positions from 1.0 (L2's gradients are about 1/N of
cross-entropy's while the policy is flat).
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(
        expect_features="alphago", model=dict(name="cazenave_resnet10"), loss="l2", batch_size=256,
        train_positions=200_000_000, optimizer=dict(name="sgd", momentum=0.9, nesterov=True, weight_decay=1e-5),
        schedule=dict(name="cosine", lr=1.0, warmup_positions=1_000_000, end_fraction=0.01),
        input=dict(symmetry="example"), **default.paper_cadence(10_000_000, 5_000_000, 500))
