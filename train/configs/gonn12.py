"""GoNN (lightvector, March 2018) residual net, 12 blocks x 192: the "GoNN 12 x 192, KGS" row.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_gonn --features gonn --preset gonn-kgs
    kifunet train --config train/configs/gonn12.py --workdir runs/gonn12 --config.dataset=data/kgs_gonn

Hardware assumed: one GPU. Compare with (docs/published.md), same KGS protocol as gonn5.py: **58.2%
top-1, 86.2% top-4, 1.378 nats** after 329M positions (8,250,720 parameters, checked by
tests/test_configs.py); GoGoD: 54.2% / 82.8% / 1.542. GoNN's README says part of the 12-block runs
switched to an L2 loss with a hand-tuned rate (about +0.2% top-1, -0.2% top-4, +0.005 nats against
cross-entropy); this config keeps the committed code's cross-entropy (``--config.loss=l2`` to try).

Training setup: as gonn5.py (docs/gonn.md section 5), for 329M positions.
"""

from __future__ import annotations

from kifunet.train.configs import gonn5


def get_config():
    c = gonn5.get_config()
    c.model.name = "gonn_resnet12"
    c.train_positions = 329_000_000
    return c
