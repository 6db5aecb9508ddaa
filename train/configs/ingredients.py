"""The baseline of the ingredient table: a small GoNN ResNet for 600,000 positions on 2 cores.
Command, hardware and result: docs/training.md (Each config)."""

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
