"""cpu_default: the default net (issue 16): the ingredient table's recipe, 60 minutes on both cores of a 2-core CPU.

Build and train (the GoNN KGS protocol: train 2000-2014, test 2015)::

    kifunet build ../shared/data/kgs/*.tar.gz --out data/kgs_gonn --features gonn --preset gonn-kgs
    kifunet train --config train/configs/cpu_default.py --workdir runs/kgs_cpu_default \
        --config.dataset=data/kgs_gonn

Expect (the kept run, ``pretrained/kgs_cpu_default``, 2026-11-26): 3,422 s, 1,500,032 positions (11,719 steps),
438 positions/s; ``kifunet eval`` single pass on the whole 2015 test split (954,190 positions) 44.27% top-1,
2.0560 nats; 8-symmetry ensemble on its first 100,000 rows 45.62%, 1.9919 nats; Fox professionals (whole
``--preset fox-pro`` test split) 40.67%, 2.2788 nats. The README ("The default net: the table's recipe for an
hour") has the curve and the commands. Compare with ``cpu_small`` (the previous default, 41.08% and 2.2853 nats
on the same split after 60 minutes on one device) and GoNN's 5 x 192 net (56.8% after 205M positions).

The recipe is what the ingredient table (``train/configs/ingredients.py``, README "What each ingredient is
worth") says: the ``gonn`` feature set, every GoNN ingredient (PReLU, dilated channels, a global-pooling block,
a globally pooled policy head, history dropout), Adam 2e-3 at batch 128 decayed to 0 by a cosine over the whole
run, and width before depth (48 x 2 beat 32 x 4 at the same positions; 24 x 6 lost to it). Shape: 3 blocks of
48 channels (12 dilated, rates 2 and 3), block 2 a global-pooling block. Shapes probed for speed before the run
(50 s each, 2 JAX devices, 2026-11-26): 48 x 3 437-447 positions/s, 48 x 4 359-363, 64 x 2 420; 32 x 4 (the
table's baseline) trains 627-640. 48 x 3 gets the most width and depth that still sees 1.5M positions in an hour.

Budget: 1,500,000 positions, the length the cosine needs, which is about 60 minutes at the probe's speed on the
idle machine. Hardware assumed: the project's 2-core x86 CPU, both cores as two JAX devices (``cpu_devices=2``).
"""

from __future__ import annotations

from kifunet.train.configs import ingredients


def get_config():
    c = ingredients.get_config()
    c.expect_features = "gonn"
    k = c.model.kwargs
    k.channels = 48
    k.blocks = 3
    k.dilated_channels = 12
    k.global_blocks = (1,)
    c.train_positions = 1_500_000  # evaluation and checkpoint cadence: the ingredient runs'
    return c
