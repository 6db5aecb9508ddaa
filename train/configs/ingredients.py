"""ingredients: the baseline of the ingredient table: a small GoNN ResNet for 600,000 positions on 2 cores.

Every row of the table is this config with one change (``scripts/ingredients.py`` holds the rows and runs them;
docs/runs.md, "What each ingredient is worth", has the table)::

    kifunet build ../shared/data/kgs/*.tar.gz --out data/kgs_gonn --features gonn --preset gonn-kgs
    python scripts/ingredients.py list            # the rows and their commands
    python scripts/ingredients.py run base base_seed1 relu   # any rows; 15-19 min each
    python scripts/ingredients.py table

The baseline alone is ``kifunet train --config train/configs/ingredients.py --workdir runs/ingredients/base
--config.dataset=data/kgs_gonn``. Result: 600,064 positions at 627-640 positions/s, top-1 41.16% and 41.70%
(seeds 0 and 1), 2.2468 and 2.2285 nats on the first 100,000 test rows.

Baseline: every GoNN ingredient on (``gonn`` planes, PReLU, dilated channels, a global-pooling block, a globally
pooled policy head, history dropout) in 4 blocks of 32 channels; Adam 2e-3 at batch 128 decayed to 0 by a cosine
over the run; two JAX devices. Compare with GoNN's own ablations (docs/published.md): global pooling about 0.02
nats at 60M positions, PReLU 0.010-0.015 nats at 15M. Hardware assumed: the project's 2-core x86 CPU, idle.
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    # expect_features "": the table's feature-set rows train this net on maddison and alphago planes too. The kwargs
    # from head_global_pool on are keys the table's rows switch (an override cannot add a key); wide_blocks,
    # chain_blocks and chain_channels (issue 34's rows, added later) are the model's defaults, so the earlier rows
    # ran with them.
    return default.derive(
        expect_features="", model=dict(name="gonn_resnet5", kwargs=dict(
            channels=32, blocks=4, dilated_channels=8, dilation_rates=(2, 3), global_blocks=(2,), global_channels=8,
            head_features=16, head_pooled=8, head_global_pool=True, activation="prelu", wide_blocks=(),
            chain_blocks=(), chain_channels=0)),
        batch_size=128, eval_batch_size=1000, train_positions=600_000, optimizer=dict(name="adam"),
        schedule=dict(name="cosine", lr=0.002), input=dict(symmetry="example", history_dropout="cascade", workers=1),
        cpu_devices=2, log_every_steps=200, eval_every_positions=250_000, eval_positions=10_000,
        final_eval_positions=100_000, checkpoint_every_positions=250_000, keep_checkpoints=1)
