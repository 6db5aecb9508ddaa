"""GoNN (lightvector, March 2018) residual net, 12 blocks x 192: the "GoNN 12 x 192, KGS" row.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_gonn --features gonn --preset gonn-kgs
    kifunet train --config train/configs/gonn12.py --workdir runs/gonn12 --config.dataset=data/kgs_gonn

Hardware assumed: one GPU. Compare with (docs/published.md), the protocol of gonn5.py: **58.2% top-1, 86.2%
top-4, 1.378 nats** after 329M positions (8,250,720 parameters); GoGoD: 54.2% / 82.8% / 1.542. Cross-entropy as
the committed code (part of GoNN's 12-block runs used L2: ``--config.loss=l2``).

Training setup: as gonn5.py (docs/gonn.md section 5), for 329M positions.
"""

from __future__ import annotations

from kifunet.train.configs import default, gonn5


def get_config():
    return default.derive(gonn5.get_config(), model=dict(name="gonn_resnet12"), train_positions=329_000_000)
