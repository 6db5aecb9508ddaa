"""Maddison's rank experiment on a 2-core CPU: one net without the rank input, one told the rank.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import cpu_small


def get_config():
    c = cpu_small.get_config()
    c.expect_features = "gonn"
    c.train_positions = 1_024_000
    c.schedule.start_positions = 512_000
    c.schedule.every_positions = 128_000
    c.cpu_devices = 2
    c.eval_every_positions = 256_000
    c.checkpoint_every_positions = 256_000
    c.final_eval_positions = 50_000
    c.time_limit_s = 0.0
    return c
