"""ResNet-18 in the AlphaGo Zero framework at MAO's size, trained exactly as ``mao``.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import mao


def get_config():
    c = mao.get_config()
    c.model.name = "resnet18"
    return c
