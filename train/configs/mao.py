"""MAO network (Li et al. 2020), 19 layers, MAO width 40 x 4 candidates, trained on move prediction.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_agz --features agz --split train:2000-2014 \
        --split test:2015
    kifunet train --config train/configs/mao.py --workdir runs/mao --config.dataset=data/kgs_agz

Hardware assumed: one GPU. Published result to compare with: **none for move prediction** (the paper trains MAO
by self-play; docs/published.md has no MAO row).

Setup: the paper's RL optimiser settings (docs/architectures.md): SGD, rate 0.001, batch 128, no momentum; 100M
positions is our choice. The MAO masks draw from the model's RNG state, which checkpoints carry.
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(expect_features="agz", model=dict(name="mao"), batch_size=128, train_positions=100_000_000,
                          optimizer=dict(name="sgd", momentum=0.0), schedule=dict(name="constant", lr=0.001),
                          input=dict(symmetry="example"), **default.paper_cadence(5_000_000, 5_000_000, 500))
