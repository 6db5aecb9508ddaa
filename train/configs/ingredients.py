"""The baseline of the ingredient table: a small GoNN ResNet for 600,000 positions on 2 cores.
Command, hardware and result: docs/training.md (Each config)."""

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
