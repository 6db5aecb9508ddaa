"""GoNN (lightvector, 2018) residual net, 12 blocks x 192.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import gonn5


def get_config():
    c = gonn5.get_config()
    c.model.name = "gonn_resnet12"
    c.train_positions = 329_000_000
    return c
