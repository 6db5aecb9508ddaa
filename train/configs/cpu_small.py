"""cpu_small: a small Maddison-style CNN (4 layers x 32 filters) that learns on a 2-core CPU in minutes.

Build and train (the GoNN KGS protocol, train 2000-2014, test 2015)::

    kifunet build ../shared/data/kgs/*.tar.gz --out data/kgs_maddison --features maddison --preset gonn-kgs
    kifunet train --config train/configs/cpu_small.py --workdir runs/kgs_cpu_small \
        --config.dataset=data/kgs_maddison --config.time_limit_s=3600

Result of exactly these commands (one JAX device; kept in ``pretrained/kgs_cpu_small``): 2,444,800 positions in
3,605 s, top-1 41.21%, top-4 69.08%, 2.2885 nats on the first 100,000 rows of the 2015 test split (docs/runs.md).

On the sample corpus (a smoke run of the whole path)::

    kifunet build samples/gnugo --out /tmp/gnugo_ds --features maddison --split train:rest --hash-split test:0.2
    kifunet train --config train/configs/cpu_small.py --workdir /tmp/cpu_small \
        --config.dataset=/tmp/gnugo_ds --config.time_limit_s=180

Hardware assumed: the project's 2-core x86 CPU. Published results to compare with (docs/published.md): Maddison's
3-layer 16-filter CNN reached **37.5%** top-1 on KGS fully trained (his 3 x 128: 48.0%).

Setup: Adam 2e-3, batch 128, the rate halving every 500k positions after 1.5M (shape and optimizer chosen by
5-minute runs: docs/runs.md). ``time_limit_s`` counts training seconds across restarts (raise it to continue);
the final evaluation reads the first 100k test rows (``--config.final_eval_positions=0``: all).
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(
        expect_features="maddison", model=dict(name="maddison3", kwargs=dict(layers=4, filters=32)), batch_size=128,
        eval_batch_size=512, train_positions=20_000_000, optimizer=dict(name="adam"),
        schedule=dict(name="step", lr=0.002, start_positions=1_500_000, every_positions=500_000, factor=0.5),
        input=dict(symmetry="example", workers=1), log_every_steps=100, eval_every_positions=250_000,
        eval_positions=10_000, final_eval_positions=100_000, checkpoint_every_positions=250_000, keep_checkpoints=3)
