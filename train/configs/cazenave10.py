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
    c = default.get_config()
    c.expect_features = "alphago"
    c.model.name = "cazenave_resnet10"
    c.loss = "l2"
    c.batch_size = 256
    c.train_positions = 200_000_000
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.optimizer.nesterov = True
    c.optimizer.weight_decay = 1e-5
    c.schedule.name = "cosine"
    c.schedule.lr = 1.0
    c.schedule.warmup_positions = 1_000_000
    c.schedule.end_fraction = 0.01
    c.input.symmetry = "example"
    c.eval_every_positions = 10_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 5_000_000
    c.log_every_steps = 500
    return c
