"""NoGoZero+ GARB residual net (Gao & Wu 2021), 10 blocks x 64 channels, trained on move prediction.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_agz_nogo --features agz+nogo_liberties \
        --split train:2000-2014 --split test:2015
    kifunet train --config train/configs/garb10.py --workdir runs/garb10 --config.dataset=data/kgs_agz_nogo

Hardware assumed: one GPU (the paper: one V100). Published result to compare with: **none for move
prediction** -- GARB comes from a NoGo self-play program (9x9) and the paper reports Elo ablations, not
move-prediction accuracy (docs/published.md has no GARB row); this run gives the project's own number.

Training setup: the paper's optimiser (docs/architectures.md): SGD, learning rate 0.001,
momentum 0.8, all 8 symmetries as augmentation (here a random one per position); batch 256 and 100M
positions are our choice. Input: the 17 AlphaGo Zero planes plus the 4 NoGoZero+ liberty planes (21).
"""

from __future__ import annotations

from kifunet.train.configs import default, mao


def get_config():
    # mao's recipe (SGD at a constant 0.001, 100M positions, one random symmetry per position, the same cadence)
    # with the paper's momentum and our batch
    return default.derive(mao.get_config(), expect_features="agz+nogo_liberties", model=dict(name="garb10"),
                          batch_size=256, optimizer=dict(momentum=0.8))
