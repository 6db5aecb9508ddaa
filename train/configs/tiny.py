"""Tests and smoke runs: a tiny Maddison-style CNN, a few steps, small batches, no worker processes.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.model.name = "maddison_tiny"
    c.batch_size = 32
    c.eval_batch_size = 64
    c.train_positions = 32 * 20
    c.optimizer.name = "adam"
    c.schedule.name = "constant"
    c.schedule.lr = 0.01
    c.input.window_blocks = 2
    c.input.block_rows = 64
    c.input.workers = 0
    c.log_every_steps = 5
    c.eval_every_positions = 32 * 10
    c.eval_positions = 256
    c.final_eval_positions = 256
    c.checkpoint_every_positions = 32 * 10
    c.keep_checkpoints = 2
    return c
