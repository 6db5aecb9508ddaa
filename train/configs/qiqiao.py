"""Qiqiao (CleverGo) 9x9 policy-value net trained by supervised learning on 9x9 games: both heads at once.

The network is the seed's (model ``qiqiao``: three 3x3 convs of 32, 64 and 128 channels, a policy head to
N*N + 1 = 82 logits and a value head to a tanh; 333,951 parameters at 9x9) on the ``qiqiao`` planes (10: each
colour's stones after its last 4 moves, the side to move, the previous move), board 9x9. The loss is the policy
cross-entropy + ``value_weight`` x the value MSE over the positions whose game result is known
(:mod:`kifunet.train.parallel`).

Build, train, evaluate (the corpus: ``corpora/engine9x9``, made by ``scripts/make_engine9x9_corpus.py``: GNU Go
and Pachi games, komi 7)::

    kifunet build corpora/engine9x9/engine9x9.tar.xz --out data/engine9x9_qiqiao --features qiqiao \\
        --board-size 9 --hash-split test:0.2
    kifunet train --config train/configs/qiqiao.py --workdir runs/qiqiao --config.dataset=data/engine9x9_qiqiao
    kifunet eval --checkpoint runs/qiqiao --data data/engine9x9_qiqiao --split test --ensemble

Hardware assumed: a CPU; 2 shared cores run it at 1,450-1,850 positions/s (500,096 positions, 4 passes over the
corpus's 125,372 training positions, in 5 min 30 s).

Value weight and optimizer. Qiqiao's own trainer (QPT-Family/QPT-CleverGo, ``trainer.py``,
``Trainer.update_network``) minimises cross-entropy + MSE, a value weight of 1, with Paddle's ``Momentum``
optimizer (learning rate 1e-3, its default momentum 0.9), batches of 128, on its self-play data (MCTS visit counts
as soft policy targets, each position stored in 8 symmetries). AlphaGo Zero's supervised net weighted the value
MSE by 0.01, so that the value head does not overfit the many positions of one game that share its result. Chosen
here: 0.01, and Adam at 1e-3 with Qiqiao's batch of 128; measured on the run below (same data, same 150,000
positions, only the named setting changed):

======================================  ======  =========  =============  ========
setting                                 top-1   value MSE  constant MSE   winner
======================================  ======  =========  =============  ========
value_weight 0.01, Adam 1e-3 (this)     36.14%  0.9168     0.9484         59.49%
value_weight 1, Adam 1e-3               35.72%  1.0373     0.9484         59.88%
value_weight 1, SGD momentum 0.9 1e-3   3.46%   0.9441     0.9484         54.21%
======================================  ======  =========  =============  ========

With weight 1 the value head overfits (its training windows reach MSE 0.535 while the test MSE rises above the
constant predictor's); Qiqiao's optimizer, made for a stream of fresh self-play games, has barely started learning
after 150,000 positions.

Result we got on ``corpora/engine9x9`` (3,047 games; test: 613 games, 31,482 positions, 29,510 of decided
games), ``kifunet eval --ensemble`` on the whole test split (``pretrained/qiqiao9x9/eval/engine9x9_test.json``):

* policy: top-1 37.16%, top-4 69.23%, 2.2654 nats (ensemble: 40.41%, 72.72%, 2.0930);
* value: MSE 0.7658 against the constant predictor's 0.9372, winner 66.30% (ensemble: MSE 0.7338, winner
  68.00%); by move number (single pass): moves 1-20 MSE 0.9126 (constant 0.9380, winner 55.92%), 21-50 0.7721
  (0.9375, 68.24%), 51-100 0.4433 (0.9532, 84.45%), 101-150 0.0579 (0.7931, 98.68%).

The value table above (weight and optimizer) was measured earlier on 600 GNU Go games made by the same script
(433 after duplicates), 150,000 positions each. Compare with: no published figure exists for these games (Pyaq's
9x9 net, 57.3% top-1 and value MSE 0.351 on 34,572 games of its own, is context, not a target).
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
