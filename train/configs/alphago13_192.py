"""AlphaGo SL policy network, 13 layers x 192 filters ("AlphaGo Fan"): the 13 x 192 row.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_alphago --features alphago \
        --min-both-rank 6d --split train:2000-2014 --split test:2015
    kifunet train --config train/configs/alphago13_192.py --workdir runs/alphago13_192 \
        --config.dataset=data/kgs_alphago

Hardware assumed: GPUs (the paper: 50 GPUs, about 3 weeks). Compare with (docs/published.md): **55.4% top-1**,
single pass, KGS 6-9d (3,880,489 parameters); the 256-filter net's 8-symmetry ensemble reached 57.0%: report
single pass and ensemble apart.

Setup (the paper's Methods): batch 16, step size 0.003 on the minibatch mean, halved every 80 million training
steps, no momentum, 340 million steps, a random symmetry per position. Steps are counted as positions here; if the
paper's are minibatch updates, multiply ``train_positions`` and ``every_positions`` by 16.
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "alphago"
    c.model.name = "alphago13_192"
    c.batch_size = 16
    c.eval_batch_size = 1024
    c.train_positions = 340_000_000
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.0
    c.schedule.name = "step"
    c.schedule.lr = 0.003
    c.schedule.start_positions = 80_000_000
    c.schedule.every_positions = 80_000_000
    c.schedule.factor = 0.5
    c.input.symmetry = "example"
    c.eval_every_positions = 10_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 5_000_000
    c.log_every_steps = 2000
    return c
