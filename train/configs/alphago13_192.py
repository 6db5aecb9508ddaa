"""AlphaGo SL policy network, 13 layers x 192 filters ("AlphaGo Fan").
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(
        expect_features="alphago", model=dict(name="alphago13_192"), batch_size=16, eval_batch_size=1024,
        train_positions=340_000_000, optimizer=dict(name="sgd", momentum=0.0),
        schedule=dict(name="step", lr=0.003, start_positions=80_000_000, every_positions=80_000_000, factor=0.5),
        input=dict(symmetry="example"), **default.paper_cadence(10_000_000, 5_000_000, 2000))
