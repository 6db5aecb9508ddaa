"""Maddison et al. 2015, 12-layer CNN of 128 filters.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default

EPOCH = 29_400_000


def get_config():
    # init "uniform": the paper's ("he" / "lecun", models/cnn.py MADDISON_INITS, are ours); clip_norm 1.0: ours, not
    # the paper's (module docstring; 0 = the paper's recipe)
    return default.derive(
        expect_features="maddison", model=dict(name="maddison12", kwargs=dict(init="uniform")), batch_size=128,
        train_positions=28 * EPOCH, optimizer=dict(name="sgd", momentum=0.0, clip_norm=1.0),
        schedule=dict(name="step", lr=0.128, start_positions=25 * EPOCH, every_positions=EPOCH, factor=0.5),
        input=dict(symmetry="example"), **default.paper_cadence(10_000_000, 10_000_000, 500))
