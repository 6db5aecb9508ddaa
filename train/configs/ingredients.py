"""The baseline of the ingredient table: a small GoNN ResNet for 600,000 positions on 2 cores.
Command, hardware and result: docs/training.md (Each config).

``ingredients.py:ARCH`` (ARCH a key of :data:`ARCHS`) is the same recipe with another net: the rows that set the
papers' claims against each other (issue 51; docs/runs.md, "What the papers claim").
"""

from __future__ import annotations

import ml_collections

from kifunet.train.configs import default

#: the nets of ``ingredients.py:ARCH``: registered model name and constructor arguments, replacing the baseline's
ARCHS = {
    # MAO (Li et al. 2020) at its paper's size against its paper's baseline ResNet-18 (models/catalog.py
    # ``resnet18``), as registered: on the 26 ``gonn`` planes 489,802 and 491,949 parameters (-0.44%). Narrower
    # pairs at equal parameters do not train faster enough to be worth the change: docs/runs.md
    "mao": ("mao", {}),
    "resnet18": ("resnet18", {}),
    # NoGoZero+'s 5-block net (GARB blocks 2 and 4) and the same net with plain residual blocks only
    "garb": ("garb5", {"plain": False}),
    "garb_plain": ("garb5", {"plain": True}),
}


def get_config(arch: str | None = None):
    # expect_features "": the table's feature-set rows train this net on maddison and alphago planes too. The kwargs
    # from head_global_pool on are keys the table's rows switch (an override cannot add a key); wide_blocks,
    # chain_blocks and chain_channels (issue 34's rows, added later) and ownership_head and score_head (issue 51's)
    # are the model's defaults, so the earlier rows ran with them.
    c = default.derive(
        expect_features="", model=dict(name="gonn_resnet5", kwargs=dict(
            channels=32, blocks=4, dilated_channels=8, dilation_rates=(2, 3), global_blocks=(2,), global_channels=8,
            head_features=16, head_pooled=8, head_global_pool=True, activation="prelu", wide_blocks=(),
            chain_blocks=(), chain_channels=0, ownership_head=False, score_head=False)),
        batch_size=128, eval_batch_size=1000, train_positions=600_000, optimizer=dict(name="adam"),
        schedule=dict(name="cosine", lr=0.002), input=dict(symmetry="example", history_dropout="cascade", workers=1),
        cpu_devices=2, log_every_steps=200, eval_every_positions=250_000, eval_positions=10_000,
        final_eval_positions=100_000, checkpoint_every_positions=250_000, keep_checkpoints=1)
    if arch is None:
        return c
    if arch not in ARCHS:
        raise ValueError(f"ingredients.py: no net {arch!r}; known: {', '.join(ARCHS)}")
    c.model.name, kwargs = ARCHS[arch]
    c.model.kwargs = ml_collections.ConfigDict(dict(kwargs))
    return c
