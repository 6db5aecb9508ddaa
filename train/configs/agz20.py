"""AlphaGo Zero's net trained by supervised learning, 20 blocks x 256 with its value head.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default

BATCH = 2048


def get_config():
    # value_weight 0.01: the paper's supervised setting
    return default.derive(
        expect_features="agz", model=dict(name="agz_resnet20", kwargs=dict(value_head=True)), value_weight=0.01,
        batch_size=BATCH, eval_batch_size=BATCH, train_positions=600_000 * BATCH, batchnorm="sync",
        optimizer=dict(name="sgd", momentum=0.9, weight_decay=2e-4, decay_mask="all"),
        schedule=dict(name="step", lr=0.1, start_positions=200_000 * BATCH, every_positions=200_000 * BATCH,
                      factor=0.1),
        input=dict(symmetry="example", window_blocks=32), **default.paper_cadence(50_000_000, 20_000_000, 100))
