"""NoGoZero+ GARB residual net (Gao & Wu 2021), 10 blocks x 64 channels, on move prediction.
Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import default, mao


def get_config():
    # mao's recipe (SGD at a constant 0.001, 100M positions, one random symmetry per position, the same cadence)
    # with the paper's momentum and our batch
    return default.derive(mao.get_config(), expect_features="agz+nogo_liberties", model=dict(name="garb10"),
                          batch_size=256, optimizer=dict(momentum=0.8))
