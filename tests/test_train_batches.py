"""Batches (train/batches.py): the host dtypes of a batch's planes, and a bad one refused."""

from __future__ import annotations

import numpy as np
import pytest

from kifunet.train import input_pipeline as ip
from test_train_data import ds_maddison, pipeline  # noqa: F401 (fixture)


def test_host_dtypes(ds_maddison):
    it = ip.train_iterator(*pipeline(ds_maddison, window_blocks=1, workers=0, host_dtype="float32"), batch_size=16,
                           seed=0)
    b = next(it)
    it.close()
    assert b["planes"].dtype == np.float32 and set(np.unique(b["planes"]).tolist()) <= {0.0, 1.0}
    with pytest.raises(ValueError):
        ip.train_iterator(*pipeline(ds_maddison, host_dtype="int8", workers=0), batch_size=16, seed=0)
