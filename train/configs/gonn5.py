"""GoNN (lightvector, March 2018) residual net, 5 blocks x 192: the "GoNN 5 x 192, KGS" row.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_gonn --features gonn --preset gonn-kgs
    kifunet train --config train/configs/gonn5.py --workdir runs/gonn5 --config.dataset=data/kgs_gonn

Hardware assumed: one GPU (GoNN trained on one). Compare with (docs/published.md), the ``gonn-kgs`` protocol:
**56.8% top-1, 85.4% top-4, 1.429 nats** after 205M positions (3,597,792 parameters); GoGoD: 52.5% / 81.6% /
1.609.

Training setup, GoNN train.py at a201e46 (docs/gonn.md section 5): batch 200, Nesterov momentum 0.9,
cross-entropy, rate 0.064 on the mean divided by ((k + 8) / 8)^2 with k = floor(positions / 4M); L2 0.3 /
max(1000, training rows) on all weights and PReLU slopes, not BatchNorm (set ``--config.optimizer.weight_decay``
from your row count); the model's ``lr_multipliers``; one random symmetry per batch; GoNN's history-dropout
cascade, redrawn every epoch at load time.
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "gonn"
    c.model.name = "gonn_resnet5"
    c.batch_size = 200
    c.eval_batch_size = 1000
    c.train_positions = 205_000_000
    c.loss = "cross_entropy"
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.optimizer.nesterov = True
    c.optimizer.weight_decay = 1.88e-7
    c.optimizer.decay_mask = "no_bn"
    c.optimizer.lr_multipliers = True
    c.schedule.name = "gonn"
    c.schedule.lr = 0.064
    c.schedule.every_positions = 4_000_000
    c.schedule.offset = 8.0
    c.schedule.power = 2.0
    c.input.symmetry = "batch"
    c.input.history_dropout = "cascade"
    c.input.history_keep_probs = (0.90, 0.95, 0.95, 0.98, 0.98)
    c.eval_every_positions = 4_000_000
    c.eval_positions = 0
    c.checkpoint_every_positions = 4_000_000
    c.log_every_steps = 500
    return c
