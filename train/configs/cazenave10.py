"""Cazenave 2017 residual network, 10 blocks x 256 filters, L2 loss.
Command, hardware and result: docs/training.md (Each config)."""

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
