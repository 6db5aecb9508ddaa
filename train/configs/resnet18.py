"""ResNet-18 in the AlphaGo Zero framework at MAO's size, trained exactly as ``mao``.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default, mao


def get_config():
    return default.derive(mao.get_config(), model=dict(name="resnet18"))
