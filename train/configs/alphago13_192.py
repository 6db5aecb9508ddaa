"""AlphaGo SL policy network, 13 layers x 192 filters ("AlphaGo Fan").
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "alphago"
    c.model.name = "alphago13_192"
    c.batch_size = 16
    c.eval_batch_size = 1024
    c.train_positions = 340_000_000
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.0
    c.schedule.name = "step"
    c.schedule.lr = 0.003
    c.schedule.start_positions = 80_000_000
    c.schedule.every_positions = 80_000_000
    c.schedule.factor = 0.5
    c.input.symmetry = "example"
    c.eval_every_positions = 10_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 5_000_000
    c.log_every_steps = 2000
    return c
