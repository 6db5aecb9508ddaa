"""rank_experiment: Maddison's rank experiment on a 2-core CPU: one net without the rank input, one told the rank.

The two runs differ only in ``model.rank_embedding`` (the ``gonn`` planes have no rank): same data, order, seed and
positions. The data keeps every move of KGS 2006 (train) and 2015 (test), weaker players' included::

    kifunet build ../shared/data/kgs/KGS-2006-19-10388-.tar.gz ../shared/data/kgs/KGS-2015-19-8133-.tar.gz \\
        --out data/kgs_rank_gonn --features gonn --no-handicap --split train:2006 --split test:2015
    kifunet train --config train/configs/rank_experiment.py --workdir runs/rank_base \\
        --config.dataset=data/kgs_rank_gonn
    kifunet train --config train/configs/rank_experiment.py --workdir runs/rank_cond \\
        --config.dataset=data/kgs_rank_gonn --config.model.rank_embedding=True
    kifunet match --engine "kifunet gtp --checkpoint runs/rank_cond --sample" \\
        --opponent "kifunet gtp --checkpoint runs/rank_base --sample" --rank-experiment 1d,5d,9d \\
        --games 100 --parallel 2 --out runs/rank_match

Compare with Maddison et al. (2015): told 1d / 5d / 9d, their 12-layer net won 49.2% / 60.1% / 67.9% against a
fixed 10-layer net without rank (docs/published.md). Result of these commands: 41.5% / 52.0% / 49.5% of 200 games
each; top-1 on the first 50,000 test rows 40.93% (baseline) and 40.67% (conditioned). Hardware assumed: the
project's 2-core CPU as two JAX devices (``cpu_devices=2``); the run is kept in ``pretrained/rank_experiment/``.
"""

from __future__ import annotations

from kifunet.train.configs import cpu_small, default


def get_config():
    return default.derive(
        cpu_small.get_config(), expect_features="gonn", train_positions=1_024_000,
        schedule=dict(start_positions=512_000, every_positions=128_000), cpu_devices=2, eval_every_positions=256_000,
        checkpoint_every_positions=256_000, final_eval_positions=50_000, time_limit_s=0.0)
