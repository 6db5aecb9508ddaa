"""A small Maddison-style CNN (4 layers x 32 filters) that learns on a 2-core CPU in minutes.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "maddison"
    c.model.name = "maddison3"
    c.model.kwargs.layers = 4
    c.model.kwargs.filters = 32
    c.batch_size = 128
    c.eval_batch_size = 512
    c.train_positions = 20_000_000
    c.optimizer.name = "adam"
    c.schedule.name = "step"
    c.schedule.lr = 0.002
    c.schedule.start_positions = 1_500_000
    c.schedule.every_positions = 500_000
    c.schedule.factor = 0.5
    c.input.symmetry = "example"
    c.input.workers = 1
    c.log_every_steps = 100
    c.eval_every_positions = 250_000
    c.eval_positions = 10_000
    c.final_eval_positions = 100_000
    c.checkpoint_every_positions = 250_000
    c.keep_checkpoints = 3
    return c
