"""GoNN (lightvector, 2018) residual net, 5 blocks x 192.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    return default.derive(
        expect_features="gonn", model=dict(name="gonn_resnet5"), batch_size=200, eval_batch_size=1000,
        train_positions=205_000_000, loss="cross_entropy",
        optimizer=dict(name="sgd", momentum=0.9, nesterov=True, weight_decay=1.88e-7, decay_mask="no_bn",
                       lr_multipliers=True),
        schedule=dict(name="gonn", lr=0.064, every_positions=4_000_000, offset=8.0, power=2.0),
        input=dict(symmetry="batch", history_dropout="cascade", history_keep_probs=(0.90, 0.95, 0.95, 0.98, 0.98)),
        eval_every_positions=4_000_000, eval_positions=0, checkpoint_every_positions=4_000_000, log_every_steps=500)
