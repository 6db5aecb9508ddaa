"""Cazenave 2017 residual network, 10 blocks x 256 filters, L2 loss.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(
        expect_features="alphago", model=dict(name="cazenave_resnet10"), loss="l2", batch_size=256,
        train_positions=200_000_000, optimizer=dict(name="sgd", momentum=0.9, nesterov=True, weight_decay=1e-5),
        schedule=dict(name="cosine", lr=1.0, warmup_positions=1_000_000, end_fraction=0.01),
        input=dict(symmetry="example"), **default.paper_cadence(10_000_000, 5_000_000, 500))
