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
    # value_weight 0.01: AlphaGo Zero's supervised setting (Qiqiao's trainer used 1: module docstring); batch 128:
    # Qiqiao's trainer's; input workers 0: small 9x9 windows built in a thread keep up (data wait 0.5%)
    return default.derive(
        expect_features="qiqiao", model=dict(name="qiqiao"), value_weight=0.01, batch_size=128, eval_batch_size=1024,
        train_positions=500_000, optimizer=dict(name="adam"), schedule=dict(name="constant", lr=1e-3),
        input=dict(symmetry="example", window_blocks=16, workers=0), eval_every_positions=100_000, eval_positions=0,
        final_eval_positions=0, checkpoint_every_positions=250_000, log_every_steps=200)
