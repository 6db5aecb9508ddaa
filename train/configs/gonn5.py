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
    return default.derive(
        expect_features="gonn", model=dict(name="gonn_resnet5"), batch_size=200, eval_batch_size=1000,
        train_positions=205_000_000, loss="cross_entropy",
        optimizer=dict(name="sgd", momentum=0.9, nesterov=True, weight_decay=1.88e-7, decay_mask="no_bn",
                       lr_multipliers=True),
        schedule=dict(name="gonn", lr=0.064, every_positions=4_000_000, offset=8.0, power=2.0),
        input=dict(symmetry="batch", history_dropout="cascade", history_keep_probs=(0.90, 0.95, 0.95, 0.98, 0.98)),
        eval_every_positions=4_000_000, eval_positions=0, checkpoint_every_positions=4_000_000, log_every_steps=500)
