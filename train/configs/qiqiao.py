"""Qiqiao (CleverGo) 9x9 policy-value net trained by supervised learning on 9x9 games: both heads at once.

Model ``qiqiao`` (333,951 parameters at 9x9) on the 10 ``qiqiao`` planes; loss: policy cross-entropy +
``value_weight`` x the value MSE over positions with a known result (train/steps.py).

Build, train, evaluate (``corpora/engine9x9``: GNU Go and Pachi games, komi 7)::

    kifunet build corpora/engine9x9/engine9x9.tar.xz --out data/engine9x9_qiqiao --features qiqiao \\
        --board-size 9 --hash-split test:0.2
    kifunet train --config train/configs/qiqiao.py --workdir runs/qiqiao --config.dataset=data/engine9x9_qiqiao
    kifunet eval --checkpoint runs/qiqiao --data data/engine9x9_qiqiao --split test --ensemble

Hardware assumed: a CPU (500,096 positions in about 5.5 minutes on 2 shared cores). Setup: ``value_weight`` 0.01
and Adam 1e-3 at batch 128 (chosen against Qiqiao's weight 1 and Momentum: docs/training.md, "Qiqiao 9x9").

Result we got on the whole test split (``pretrained/qiqiao9x9/eval/engine9x9_test.json``): top-1 37.16%, top-4
69.23%, 2.2654 nats (ensemble 40.41%, 72.72%, 2.0930); value MSE 0.7658 against the constant predictor's 0.9372,
winner 66.30% (ensemble 0.7338, 68.00%). Compare with: no published figure for these games.
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "qiqiao"
    c.model.name = "qiqiao"
    c.value_weight = 0.01  # AlphaGo Zero's supervised setting; Qiqiao's trainer used 1 (module docstring)
    c.batch_size = 128  # Qiqiao's trainer
    c.eval_batch_size = 1024
    c.train_positions = 500_000
    c.optimizer.name = "adam"
    c.schedule.name = "constant"
    c.schedule.lr = 1e-3
    c.input.symmetry = "example"
    c.input.window_blocks = 16
    c.input.workers = 0  # small 9x9 windows: building them in a thread keeps up (data wait 0.5%)
    c.eval_every_positions = 100_000
    c.eval_positions = 0
    c.final_eval_positions = 0
    c.checkpoint_every_positions = 250_000
    c.log_every_steps = 200
    return c
