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
    # value_weight 0.01: the paper's supervised setting
    return default.derive(
        expect_features="agz", model=dict(name="agz_resnet20", kwargs=dict(value_head=True)), value_weight=0.01,
        batch_size=BATCH, eval_batch_size=BATCH, train_positions=600_000 * BATCH, batchnorm="sync",
        optimizer=dict(name="sgd", momentum=0.9, weight_decay=2e-4, decay_mask="all"),
        schedule=dict(name="step", lr=0.1, start_positions=200_000 * BATCH, every_positions=200_000 * BATCH,
                      factor=0.1),
        input=dict(symmetry="example", window_blocks=32), **default.paper_cadence(50_000_000, 20_000_000, 100))
