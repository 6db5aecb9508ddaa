"""AlphaGo Zero architecture trained by supervised learning, 20 blocks x 256: the "AGZ SL 20 x 256" row.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_agz --features agz --split train:2000-2014 \
        --split test:2015
    kifunet train --config train/configs/agz20.py --workdir runs/agz20 --config.dataset=data/kgs_agz

Hardware assumed: a multi-GPU or multi-host job (batch 2048; the same command on every host). Compare with
(docs/published.md): **60.4% top-1** on KGS, 54.3% on professional games (22,837,864 parameters with the value
head, which this config trains: policy loss + 0.01 x value MSE, ``value_weight``).

Setup (the paper's Methods): SGD, momentum 0.9, weight decay 2e-4 (c = 1e-4 on c*||w||^2), batch 2,048, rate
1e-1 -> 1e-2 -> 1e-3 after 200k and 400k steps, 600k steps; BatchNorm synchronised over the global batch; no
history dropout.
"""

from __future__ import annotations

from kifunet.train.configs import default

BATCH = 2048


def get_config():
    c = default.get_config()
    c.expect_features = "agz"
    c.model.name = "agz_resnet20"
    c.model.kwargs.value_head = True
    c.value_weight = 0.01  # the paper's supervised setting
    c.batch_size = BATCH
    c.eval_batch_size = BATCH
    c.train_positions = 600_000 * BATCH
    c.batchnorm = "sync"
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.optimizer.weight_decay = 2e-4
    c.optimizer.decay_mask = "all"
    c.schedule.name = "step"
    c.schedule.lr = 0.1
    c.schedule.start_positions = 200_000 * BATCH
    c.schedule.every_positions = 200_000 * BATCH
    c.schedule.factor = 0.1
    c.input.symmetry = "example"
    c.input.window_blocks = 32
    c.eval_every_positions = 50_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 20_000_000
    c.log_every_steps = 100
    return c
