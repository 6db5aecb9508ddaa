"""AlphaGo Zero's net trained by supervised learning, 20 blocks x 256 with its value head.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default

BATCH = 2048


def get_config():
    c = default.get_config()
    c.expect_features = "agz"
    c.model.name = "agz_resnet20"
    c.model.kwargs.value_head = True
    c.value_weight = 0.01  # the paper's supervised setting
    c.batch_size = BATCH
    c.eval_batch_size = BATCH
    c.train_positions = 600_000 * BATCH
    c.batchnorm = "sync"
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.optimizer.weight_decay = 2e-4
    c.optimizer.decay_mask = "all"
    c.schedule.name = "step"
    c.schedule.lr = 0.1
    c.schedule.start_positions = 200_000 * BATCH
    c.schedule.every_positions = 200_000 * BATCH
    c.schedule.factor = 0.1
    c.input.symmetry = "example"
    c.input.window_blocks = 32
    c.eval_every_positions = 50_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 20_000_000
    c.log_every_steps = 100
    return c
