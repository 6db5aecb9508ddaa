"""NoGoZero+ GARB residual net (Gao & Wu 2021), 10 blocks x 64 channels, on move prediction.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "agz+nogo_liberties"
    c.model.name = "garb10"
    c.batch_size = 256
    c.train_positions = 100_000_000
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.8
    c.schedule.name = "constant"
    c.schedule.lr = 0.001
    c.input.symmetry = "example"
    c.eval_every_positions = 5_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 5_000_000
    c.log_every_steps = 500
    return c
