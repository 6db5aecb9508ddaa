"""cpu_default: the default net, the ingredient table's recipe for 60 minutes on both cores of a 2-core CPU.

Build and train (the GoNN KGS protocol: train 2000-2014, test 2015)::

    kifunet build ../shared/data/kgs/*.tar.gz --out data/kgs_gonn --features gonn --preset gonn-kgs
    kifunet train --config train/configs/cpu_default.py --workdir runs/kgs_cpu_default \
        --config.dataset=data/kgs_gonn

Expect (the kept run, ``pretrained/kgs_cpu_default``): 1,500,032 positions in 3,422 s; ``kifunet eval`` single
pass on the whole 2015 test split 44.27% top-1, 2.0560 nats; Fox professionals (``--preset fox-pro``) 40.67%,
2.2788 nats (docs/runs.md, "The default net"). Compare with ``cpu_small`` (41.08%, 2.2853 nats on the same split)
and GoNN's 5 x 192 net (56.8% after 205M positions).

Recipe: ``gonn`` planes, 3 blocks of 48 channels (12 dilated, rates 2 and 3; block 2 global pooling), globally
pooled policy head, history dropout, Adam 2e-3 at batch 128 decayed to 0 by a cosine over 1,500,000 positions.
Hardware assumed: the project's 2-core x86 CPU as two JAX devices (``cpu_devices=2``).
"""

from __future__ import annotations

from kifunet.train.configs import default, ingredients


def get_config():
    # train_positions: the evaluation and checkpoint cadence are the ingredient runs'
    return default.derive(ingredients.get_config(), expect_features="gonn", model=dict(kwargs=dict(
        channels=48, blocks=3, dilated_channels=12, global_blocks=(1,))), train_positions=1_500_000)
