"""GoNN (lightvector, 2018) residual net, 5 blocks x 192.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "gonn"
    c.model.name = "gonn_resnet5"
    c.batch_size = 200
    c.eval_batch_size = 1000
    c.train_positions = 205_000_000
    c.loss = "cross_entropy"
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.optimizer.nesterov = True
    c.optimizer.weight_decay = 1.88e-7
    c.optimizer.decay_mask = "no_bn"
    c.optimizer.lr_multipliers = True
    c.schedule.name = "gonn"
    c.schedule.lr = 0.064
    c.schedule.every_positions = 4_000_000
    c.schedule.offset = 8.0
    c.schedule.power = 2.0
    c.input.symmetry = "batch"
    c.input.history_dropout = "cascade"
    c.input.history_keep_probs = (0.90, 0.95, 0.95, 0.98, 0.98)
    c.eval_every_positions = 4_000_000
    c.eval_positions = 0
    c.checkpoint_every_positions = 4_000_000
    c.log_every_steps = 500
    return c
