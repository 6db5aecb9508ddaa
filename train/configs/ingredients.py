"""ingredients: the baseline of the ingredient table (issue 16): a small GoNN ResNet for 15 minutes on 2 cores.

Every row of the table is this config with one change (``scripts/ingredients.py`` holds the rows and runs
them; the README's "What each ingredient is worth" has the table)::

    kifunet build ../shared/data/kgs/*.tar.gz --out data/kgs_gonn --features gonn --preset gonn-kgs
    python scripts/ingredients.py list            # the 14 rows and their commands
    python scripts/ingredients.py run base base_seed1 relu   # any rows; 15-19 min each
    python scripts/ingredients.py table

The baseline row alone is ``kifunet train --config train/configs/ingredients.py --workdir runs/ingredients/base
--config.dataset=data/kgs_gonn``. Result (2026-11-26, idle 2-core machine): 600,064 positions at 627-640
positions/s, top-1 41.16% and 41.70% (seeds 0 and 1), 2.2468 and 2.2285 nats on the first 100,000 test rows.

The baseline has every GoNN ingredient on: the ``gonn`` feature set (ladder planes), PReLU, dilated channels in
the trunk, a global-pooling block and a globally pooled policy head, history dropout (GoNN's cascade). It is
``gonn_resnet5`` shrunk to what 15 minutes of a 2-core CPU trains: 4 blocks of 32 channels (8 of them dilated,
rates 2 and 3), block 3 a global-pooling block with 8 pooled channels, a head of 16 channels with 8 pooled.
Adam at 2e-3 decayed to 0 by a cosine over the run, batch 128 (``cpu_small``'s optimizer: GoNN's own SGD recipe
is tuned for 200M positions, not half a million). Both cores run as two JAX devices (``cpu_devices=2``).

Budget: 600,000 positions, about 15 minutes of the baseline on the idle 2-core machine (it trains 650-670
positions/s); the run then evaluates the first 100,000 rows of the pre-shuffled 2015 test split (the same
positions whatever the feature set: the build's order depends on the games and the seed, not on the planes).
The table prints each row's speed beside its accuracy, so an ingredient that slows the step shows what it
costs. Why positions and not a time limit: the first two runs (the ``constant`` rows, kept) trained at a
constant rate for 900 s each and their two seeds ended 0.92 points of top-1 apart, more than most effects the
table looks for; a rate that decays to 0 at the end of a known length gives a calmer final snapshot, and a
cosine needs that length in positions.

Compare with GoNN's own ablations (docs/published.md): global pooling in the trunk about 0.02 nats at 60M
positions, PReLU 0.010-0.015 nats at 15M, on its 192-channel nets; no published row trains this small a net.

Hardware assumed: the project's 2-core x86 CPU, idle apart from the run (the script records the load average).
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = ""  # the table's feature-set rows train this net on maddison and alphago planes too
    c.model.name = "gonn_resnet5"
    k = c.model.kwargs
    k.channels = 32
    k.blocks = 4
    k.dilated_channels = 8
    k.dilation_rates = (2, 3)
    k.global_blocks = (2,)
    k.global_channels = 8
    k.head_features = 16
    k.head_pooled = 8
    k.head_global_pool = True  # the keys the table's rows switch (an override cannot add a key)
    k.activation = "prelu"
    k.wide_blocks = ()  # issue 34's rows (added later: the model's defaults, so the earlier rows ran with them)
    k.chain_blocks = ()
    k.chain_channels = 0
    c.batch_size = 128
    c.eval_batch_size = 1000
    c.train_positions = 600_000
    c.optimizer.name = "adam"
    c.schedule.name = "cosine"
    c.schedule.lr = 0.002
    c.input.symmetry = "example"
    c.input.history_dropout = "cascade"
    c.input.workers = 1
    c.cpu_devices = 2
    c.log_every_steps = 200
    c.eval_every_positions = 250_000
    c.eval_positions = 10_000
    c.final_eval_positions = 100_000
    c.checkpoint_every_positions = 250_000
    c.keep_checkpoints = 1
    return c
