"""A few minutes of two-headed training on 19x19 KGS games (``agz_tiny`` with its value head).
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    # value_weight 0.01: AlphaGo Zero's supervised setting
    return default.derive(
        expect_features="agz", model=dict(name="agz_tiny", kwargs=dict(value_head=True)), value_weight=0.01,
        batch_size=256, eval_batch_size=1024, train_positions=256 * 20_000, time_limit_s=300.0,
        optimizer=dict(name="adam"), schedule=dict(name="constant", lr=2e-3), input=dict(symmetry="example"),
        eval_every_positions=256 * 400, eval_positions=20_480, final_eval_positions=20_480,
        checkpoint_every_positions=0, log_every_steps=100)
