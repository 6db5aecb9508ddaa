"""GoNN (lightvector, 2018) residual net, 12 blocks x 192.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default, gonn5


def get_config():
    return default.derive(gonn5.get_config(), model=dict(name="gonn_resnet12"), train_positions=329_000_000)
