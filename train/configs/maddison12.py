"""Maddison et al. 2015, 12-layer CNN (128 filters): the "12 layers" row of the move-prediction table.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_maddison --features maddison \
        --split train:2000-2014 --split test:2015
    kifunet train --config train/configs/maddison12.py --workdir runs/maddison12 \
        --config.dataset=data/kgs_maddison

Hardware assumed: one or more GPUs, one synchronous data-parallel run (the paper: 50 asynchronous replicas), batch
128. Compare with (docs/published.md): **55.2% top-1** on KGS (2.3M parameters; top-10 ~94%; the paper splits
29.4M positions by game, ours by date).

Setup from the paper (docs/architectures.md): rate 0.128 on the mean loss, no momentum, 25 epochs, then 3 epochs
from half the rate, halving each (735M positions at 0.128, then 0.064, 0.032, 0.016: 823.2M in all); init uniform
[-0.05, 0.05]; a random symmetry per position. Ours: gradient clipping at global norm 1.0
(``--config.optimizer.clip_norm=0`` is the paper's recipe; docs/training.md, "A bf16 path that cannot blow up").
"""

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
