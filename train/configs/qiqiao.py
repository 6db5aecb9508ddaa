"""Qiqiao (CleverGo) 9x9 policy-value net trained on 9x9 games, both heads at once.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    # value_weight 0.01: AlphaGo Zero's supervised setting (Qiqiao's trainer used 1: module docstring); batch 128:
    # Qiqiao's trainer's; input workers 0: small 9x9 windows built in a thread keep up (data wait 0.5%)
    return default.derive(
        expect_features="qiqiao", model=dict(name="qiqiao"), value_weight=0.01, batch_size=128, eval_batch_size=1024,
        train_positions=500_000, optimizer=dict(name="adam"), schedule=dict(name="constant", lr=1e-3),
        input=dict(symmetry="example", window_blocks=16, workers=0), eval_every_positions=100_000, eval_positions=0,
        final_eval_positions=0, checkpoint_every_positions=250_000, log_every_steps=200)
