"""The second default net (now the base of ``cpu_default_ownership``): the ingredient table's recipe for 60
minutes on both cores of a 2-core CPU. Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default, ingredients


def get_config():
    # train_positions: the evaluation and checkpoint cadence are the ingredient runs'
    return default.derive(ingredients.get_config(), expect_features="gonn", model=dict(kwargs=dict(
        channels=48, blocks=3, dilated_channels=12, global_blocks=(1,))), train_positions=1_500_000)
