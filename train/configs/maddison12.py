"""Maddison et al. 2015, 12-layer CNN (128 filters): the "12 layers" row of the move-prediction table.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_maddison --features maddison \
        --split train:2000-2014 --split test:2015
    kifunet train --config train/configs/maddison12.py --workdir runs/maddison12 \
        --config.dataset=data/kgs_maddison

Hardware assumed: one or more GPUs (the paper trained 50 asynchronous replicas on 50 GPUs). This config is
one synchronous data-parallel run, so add devices rather than replicas: the batch stays 128 positions.
Compare with (docs/published.md): **55.2% top-1** on KGS (2.3M parameters; top-10 ~94%). The paper's
data: 160k KGS games, 29.4M positions, a 2M-position test set held out by game; ours splits by date.

Training setup from the paper (docs/architectures.md): batch 128, learning rate 0.128 "normalized by
batchsize" (= 0.128 on the mean loss), no momentum, 25 epochs; then 3 epochs of fine-tuning starting at
half the rate and halving every epoch. With an epoch of 29.4M positions: constant 0.128 for 735M
positions, then 0.064, 0.032, 0.016 for one epoch each (823.2M positions in all). Weights init uniform
[-0.05, 0.05] (the model's default, ``model.kwargs.init='uniform'``). Input: the 36 Maddison planes (rank
included), a random symmetry per position ("sampling uniformly from one of the 8 symmetric boards as we filled
minibatches").

Ours, not the paper's: gradient clipping at global norm 1.0 (``optimizer.clip_norm``). Plain SGD at 0.128
without it diverges once the hidden kernels have grown (tests/test_train_divergence.py: a narrow analogue goes
NaN within 5 steps in float32 and bfloat16 alike, and stays finite clipped). On the plateau the logged gradient
norm was 0.12-1.88, 3 of 29 logged values above 1 (a CPU bfloat16 run's first 2,819 steps,
benchmarks/results/device/bf16_vs_f32/), so the clip acts on the larger steps only. The paper's recipe is one
override away: ``--config.optimizer.clip_norm=0``. ``--config.model.kwargs.init=he`` (or ``lecun``) leaves the paper's
initialisation and its plateau (docs/architectures.md).
"""

from __future__ import annotations

from kifunet.train.configs import default

EPOCH = 29_400_000


def get_config():
    c = default.get_config()
    c.expect_features = "maddison"
    c.model.name = "maddison12"
    c.model.kwargs.init = "uniform"  # the paper's; "he" / "lecun" (models/cnn.py MADDISON_INITS) are ours
    c.batch_size = 128
    c.train_positions = 28 * EPOCH
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.0
    c.optimizer.clip_norm = 1.0  # ours, not the paper's (module docstring); 0 = the paper's recipe
    c.schedule.name = "step"
    c.schedule.lr = 0.128
    c.schedule.start_positions = 25 * EPOCH
    c.schedule.every_positions = EPOCH
    c.schedule.factor = 0.5
    c.input.symmetry = "example"
    c.eval_every_positions = 10_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 10_000_000
    c.log_every_steps = 500
    return c
