"""Tests and smoke runs: a tiny Maddison-style CNN, a few steps, small batches, no worker processes.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(
        model=dict(name="maddison_tiny"), batch_size=32, eval_batch_size=64, train_positions=32 * 20,
        optimizer=dict(name="adam"), schedule=dict(name="constant", lr=0.01),
        input=dict(window_blocks=2, block_rows=64, workers=0), log_every_steps=5, eval_every_positions=32 * 10,
        eval_positions=256, final_eval_positions=256, checkpoint_every_positions=32 * 10, keep_checkpoints=2)
