"""MAO network (Li et al. 2020), 19 layers, MAO width 40 x 4 candidates, on move prediction.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(expect_features="agz", model=dict(name="mao"), batch_size=128, train_positions=100_000_000,
                          optimizer=dict(name="sgd", momentum=0.0), schedule=dict(name="constant", lr=0.001),
                          input=dict(symmetry="example"), **default.paper_cadence(5_000_000, 5_000_000, 500))
