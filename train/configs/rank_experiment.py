"""Maddison's rank experiment on a 2-core CPU: one net without the rank input, one told the rank.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import cpu_small, default


def get_config():
    return default.derive(
        cpu_small.get_config(), expect_features="gonn", train_positions=1_024_000,
        schedule=dict(start_positions=512_000, every_positions=128_000), cpu_devices=2, eval_every_positions=256_000,
        checkpoint_every_positions=256_000, final_eval_positions=50_000, time_limit_s=0.0)
