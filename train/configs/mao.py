"""MAO network (Li et al. 2020), 19 layers, MAO width 40 x 4 candidates, trained on move prediction.

Build and train::

    kifunet build ../shared/data/kgs --out data/kgs_agz --features agz --split train:2000-2014 \
        --split test:2015
    kifunet train --config train/configs/mao.py --workdir runs/mao --config.dataset=data/kgs_agz

Hardware assumed: one GPU (the net is small: about 2 MB of weights in the paper). Published result to
compare with: **none for move prediction** -- the paper trains MAO by self-play reinforcement learning and
reports games against a ResNet18 (docs/published.md has no MAO row); this run gives the project's own
number for the architecture on the KGS protocol above.

Training setup: the paper's optimiser settings for its RL training (docs/architectures.md): SGD,
learning rate 0.001, minibatch 128 -- kept as given (no momentum); 100M positions is our choice. The
channel masks of the MAO layers draw from the model's RNG state, which checkpoints carry.
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "agz"
    c.model.name = "mao"
    c.batch_size = 128
    c.train_positions = 100_000_000
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.0
    c.schedule.name = "constant"
    c.schedule.lr = 0.001
    c.input.symmetry = "example"
    c.eval_every_positions = 5_000_000
    c.eval_positions = 200_000
    c.checkpoint_every_positions = 5_000_000
    c.log_every_steps = 500
    return c
