"""A few minutes of two-headed training on 19x19 KGS games (``agz_tiny`` with its value head).
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "agz"
    c.model.name = "agz_tiny"
    c.model.kwargs.value_head = True
    c.value_weight = 0.01  # AlphaGo Zero's supervised setting
    c.batch_size = 256
    c.eval_batch_size = 1024
    c.train_positions = 256 * 20_000
    c.time_limit_s = 300.0
    c.optimizer.name = "adam"
    c.schedule.name = "constant"
    c.schedule.lr = 2e-3
    c.input.symmetry = "example"
    c.eval_every_positions = 256 * 400
    c.eval_positions = 20_480
    c.final_eval_positions = 20_480
    c.checkpoint_every_positions = 0
    c.log_every_steps = 100
    return c
