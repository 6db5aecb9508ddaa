"""A few minutes of two-headed training on 19x19 KGS games: ``agz_tiny`` (AlphaGo Zero's layout, 2 blocks x 32,
with its value head) learning the policy and the game result at once, to see the value loss fall.

Build and train (KGS 2001-2003, 13,526 records; 5% of the games, by hash, held out)::

    kifunet build ../shared/data/kgs/KGS-2001-19-2298-.tar.gz ../shared/data/kgs/KGS-2002-19-3646-.tar.gz \\
        ../shared/data/kgs/KGS-2003-19-7582-.tar.gz --out data/kgs0103_agz --features agz --hash-split test:0.05
    kifunet train --config train/configs/agz_tiny_value.py --workdir runs/agz_tiny_value \\
        --config.dataset=data/kgs0103_agz

Hardware assumed: a CPU; the run stops after 5 minutes (``time_limit_s``). The loss is AlphaGo Zero's supervised
one: policy cross-entropy + 0.01 x value MSE over positions whose game result is known.

Result we got (run here on the shared 2-core machine, load average about 4, beside the 9x9 corpus's engines;
5 minutes = 3,275 steps, 838,400 positions, one third of an epoch). Training windows of 100 steps, test on the
same 20,480 positions at every evaluation, then ``kifunet eval`` on the whole test split (127,163 positions,
125,659 with a known result; the constant predictor's MSE is 1.0000: the results are balanced):

==================  ==========================  ==================================  =======================
value_weight        training value MSE          test value MSE at 102k ... 838k     whole test split
==================  ==========================  ==================================  =======================
0.01 (this)         0.9951 -> 0.9802            0.9864 ... 0.9890                   0.9863, winner 54.54%
1 (an override)     0.9841 -> 0.9655            0.9916 ... 0.9798 ... 1.0036        0.9962, winner 55.86%
==================  ==========================  ==================================  =======================

The value loss falls, and the test MSE goes below the constant predictor's, but only just: in a few minutes the
2-block net learns the policy (18.6% top-1, 3.84 nats) far faster than it learns to read who is ahead. By move
number (weight 0.01) its test MSE is 0.979 for moves 1-20 and 0.988 for 151-200, and above the constant's 1.000
from move 201 (1.003, 1.014): what it has found is a bias of the opening (handicap games are kept), not the
count of a finished board. The 9x9 Qiqiao net (``train/configs/qiqiao.py``) is where the value head is shown
to learn. Compare with: no published figure for a net this small; AlphaGo Zero's supervised 20 x 256 net, trained with
this loss, reached 60.4% top-1 on KGS (``agz20``).
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    c = default.get_config()
    c.expect_features = "agz"
    c.model.name = "agz_tiny"
    c.model.kwargs.value_head = True
    c.value_weight = 0.01  # AlphaGo Zero's supervised setting
    c.batch_size = 256
    c.eval_batch_size = 1024
    c.train_positions = 256 * 20_000
    c.time_limit_s = 300.0
    c.optimizer.name = "adam"
    c.schedule.name = "constant"
    c.schedule.lr = 2e-3
    c.input.symmetry = "example"
    c.eval_every_positions = 256 * 400
    c.eval_positions = 20_480
    c.final_eval_positions = 20_480
    c.checkpoint_every_positions = 0
    c.log_every_steps = 100
    return c
