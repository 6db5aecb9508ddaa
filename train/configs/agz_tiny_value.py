"""A few minutes of two-headed training on 19x19 KGS games: ``agz_tiny`` (AlphaGo Zero's layout, 2 blocks x 32,
with its value head) learning the policy and the game result at once.

Build and train (KGS 2001-2003; 5% of the games, by hash, held out)::

    kifunet build ../shared/data/kgs/KGS-2001-19-2298-.tar.gz ../shared/data/kgs/KGS-2002-19-3646-.tar.gz \\
        ../shared/data/kgs/KGS-2003-19-7582-.tar.gz --out data/kgs0103_agz --features agz --hash-split test:0.05
    kifunet train --config train/configs/agz_tiny_value.py --workdir runs/agz_tiny_value \\
        --config.dataset=data/kgs0103_agz

Hardware assumed: a CPU; the run stops after 5 minutes (``time_limit_s``). Loss: policy cross-entropy + 0.01 x
value MSE over positions whose result is known.

Result we got (2 shared cores, 3,275 steps, 838,400 positions): the training value MSE falls 0.9951 -> 0.9802; on
the whole test split (127,163 positions) value MSE 0.9863 against the constant predictor's 1.0000, winner 54.54%,
18.6% top-1, 3.84 nats (docs/training.md, "Value heads on 19x19"). Compare with: no published figure for a net
this small; AlphaGo Zero's supervised 20 x 256 net, trained with this loss, reached 60.4% top-1 (``agz20``).
"""

from __future__ import annotations

from kifunet.train.configs import default


def get_config():
    # value_weight 0.01: AlphaGo Zero's supervised setting
    return default.derive(
        expect_features="agz", model=dict(name="agz_tiny", kwargs=dict(value_head=True)), value_weight=0.01,
        batch_size=256, eval_batch_size=1024, train_positions=256 * 20_000, time_limit_s=300.0,
        optimizer=dict(name="adam"), schedule=dict(name="constant", lr=2e-3), input=dict(symmetry="example"),
        eval_every_positions=256 * 400, eval_positions=20_480, final_eval_positions=20_480,
        checkpoint_every_positions=0, log_every_steps=100)
