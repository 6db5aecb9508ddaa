"""Maddison et al. 2015, 12-layer CNN of 128 filters.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default

EPOCH = 29_400_000


def get_config():
    c = default.get_config()
    c.expect_features = "maddison"
    c.model.name = "maddison12"
    c.model.kwargs.init = "uniform"  # the paper's; "he" / "lecun" (models/cnn.py MADDISON_INITS) are ours
    c.batch_size = 128
    c.train_positions = 28 * EPOCH
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.0
    c.optimizer.clip_norm = 1.0  # ours, not the paper's (module docstring); 0 = the paper's recipe
    c.schedule.name = "step"
    c.schedule.lr = 0.128
    c.schedule.start_positions = 25 * EPOCH
    c.schedule.every_positions = EPOCH
    c.schedule.factor = 0.5
    c.input.symmetry = "example"
    c.eval_every_positions = 10_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 10_000_000
    c.log_every_steps = 500
    return c
