"""Qiqiao (CleverGo) 9x9 policy-value net trained by supervised learning on 9x9 games: both heads at once.

The network is the seed's (model ``qiqiao``: three 3x3 convs of 32, 64 and 128 channels, a policy head to
N*N + 1 = 82 logits and a value head to a tanh; 333,951 parameters at 9x9) on the ``qiqiao`` planes (10: each
colour's stones after its last 4 moves, the side to move, the previous move), board 9x9. The loss is the policy
cross-entropy + ``value_weight`` x the value MSE over the positions whose game result is known
(:mod:`kifunet.train.parallel`).

Build, train, evaluate (the corpus: ``scripts/make_engine9x9_corpus.py``, GNU Go and Pachi games, komi 7)::

    python scripts/make_engine9x9_corpus.py --work runs/engine9x9 --games-per-weight 100 --pack corpora/engine9x9
    kifunet build corpora/engine9x9/engine9x9.tar.xz --out data/engine9x9_qiqiao --features qiqiao \\
        --board-size 9 --hash-split test:0.2
    kifunet train --config train/configs/qiqiao.py --workdir runs/qiqiao --config.dataset=data/engine9x9_qiqiao
    kifunet eval --checkpoint runs/qiqiao --data data/engine9x9_qiqiao --split test --ensemble

Hardware assumed: a CPU; 2 shared cores run it at about 1,450 positions/s (150,000 positions in 2 min 8 s of wall
clock, 1.1 GB of memory). ``train_positions`` is about 10 passes over 14,500 training positions: scale it with a
larger corpus.

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

Result we got (test split, single pass; ``kifunet eval --ensemble`` beside). The 9x9 engine corpus was not
finished when this was measured (115 of the 1,400 games its run was making), so the run used what its script
made here: the first 300 games of two of its pairings, ``gnugo1-gnugo1`` and ``gnugo1-gnugo6`` (GNU Go 3.8 level 1
against level 1 and against level 6, komi 7; ``--games-per-weight 150 --only gnugo1-gnugo1 gnugo1-gnugo6
--parallel 2``: 8.9 and 7.8 minutes on the shared 2-core machine). ``kifunet build`` kept 433 of the 600 games
(167 were duplicates: GNU Go at level 1 repeats itself): 342 training games (14,500 positions), 91 test games
(3,816 positions; 87 with a winner, 4 drawn).

* policy: top-1 36.14%, top-4 65.59%, 2.3967 nats (ensemble: 40.70%, 72.17%, 2.1038);
* value: MSE 0.9168 against the constant predictor's 0.9484, winner 59.49% of 3,619 positions of decided games
  (ensemble: MSE 0.8286, winner 64.55%); by move number (single pass): moves 1-20 MSE 0.9708 (constant 0.9560,
  winner 57.30%), 21-50 0.8913 (0.9449, 60.41%), 51-100 0.6298 (0.9061, 73.17%).

Compare with: no published figure exists for these games. A few hundred games of weak engines give a weak value
signal: the head beats the constant predictor, most clearly late in the game, and trails it in the opening.
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
    c.train_positions = 150_000
    c.optimizer.name = "adam"
    c.schedule.name = "constant"
    c.schedule.lr = 1e-3
    c.input.symmetry = "example"
    c.input.window_blocks = 16
    c.input.workers = 0  # small 9x9 windows: building them in a thread keeps up (data wait 0.5%)
    c.eval_every_positions = 12_800
    c.eval_positions = 0
    c.final_eval_positions = 0
    c.checkpoint_every_positions = 50_000
    c.log_every_steps = 50
    return c
