"""The default net: the ingredient table's recipe for 60 minutes on both cores of a 2-core CPU.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import ingredients


def get_config():
    c = ingredients.get_config()
    c.expect_features = "gonn"
    k = c.model.kwargs
    k.channels = 48
    k.blocks = 3
    k.dilated_channels = 12
    k.global_blocks = (1,)
    c.train_positions = 1_500_000  # evaluation and checkpoint cadence: the ingredient runs'
    return c
