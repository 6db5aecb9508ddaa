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
    return default.derive(
        expect_features="alphago", model=dict(name="alphago13_192"), batch_size=16, eval_batch_size=1024,
        train_positions=340_000_000, optimizer=dict(name="sgd", momentum=0.0),
        schedule=dict(name="step", lr=0.003, start_positions=80_000_000, every_positions=80_000_000, factor=0.5),
        input=dict(symmetry="example"), **default.paper_cadence(10_000_000, 5_000_000, 2000))
