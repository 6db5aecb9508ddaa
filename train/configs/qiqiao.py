"""Qiqiao (CleverGo) 9x9 policy-value net trained on 9x9 games, both heads at once.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "qiqiao"
    c.model.name = "qiqiao"
    c.value_weight = 0.01  # AlphaGo Zero's supervised setting; Qiqiao's trainer used 1 (module docstring)
    c.batch_size = 128  # Qiqiao's trainer
    c.eval_batch_size = 1024
    c.train_positions = 500_000
    c.optimizer.name = "adam"
    c.schedule.name = "constant"
    c.schedule.lr = 1e-3
    c.input.symmetry = "example"
    c.input.window_blocks = 16
    c.input.workers = 0  # small 9x9 windows: building them in a thread keeps up (data wait 0.5%)
    c.eval_every_positions = 100_000
    c.eval_positions = 0
    c.final_eval_positions = 0
    c.checkpoint_every_positions = 250_000
    c.log_every_steps = 200
    return c
