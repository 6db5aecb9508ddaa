"""ResNet-18 in the AlphaGo Zero framework, MAO's baseline (Li et al. 2020), at MAO's parameter count, trained
exactly as ``mao``: the other half of the MAO against ResNet-18 pair.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_agz --features agz --split train:2000-2014 \
        --split test:2015
    kifunet train --config train/configs/resnet18.py --workdir runs/resnet18 --config.dataset=data/kgs_agz

Hardware assumed: one GPU, as for ``mao``. Compare with ``train/configs/mao.py`` run on the same dataset
(``runs/mao``): the paper's claim is that MAO beat this net (eight games of ten, by self-play RL); it published no
move-prediction figure for either (docs/published.md has no row).

Setup: ``mao``'s config with only the model changed (``resnet18``: a stem and 8 AlphaGo Zero residual blocks of
39 channels, AlphaGo Zero's policy head; 488,790 parameters against MAO's 483,322; docs/architectures.md).
"""

from __future__ import annotations

from kifunet.train.configs import default, mao


def get_config():
    return default.derive(mao.get_config(), model=dict(name="resnet18"))
