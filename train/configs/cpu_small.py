"""A small Maddison-style CNN (4 layers x 32 filters) that learns on a 2-core CPU in minutes.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(
        expect_features="maddison", model=dict(name="maddison3", kwargs=dict(layers=4, filters=32)), batch_size=128,
        eval_batch_size=512, train_positions=20_000_000, optimizer=dict(name="adam"),
        schedule=dict(name="step", lr=0.002, start_positions=1_500_000, every_positions=500_000, factor=0.5),
        input=dict(symmetry="example", workers=1), log_every_steps=100, eval_every_positions=250_000,
        eval_positions=10_000, final_eval_positions=100_000, checkpoint_every_positions=250_000, keep_checkpoints=3)
