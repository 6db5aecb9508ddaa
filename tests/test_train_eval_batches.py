"""Evaluation batches (train/eval_batches.py): every row of a split once over the hosts, in order, padded."""

from __future__ import annotations

import numpy as np

from kifunet.data_prep.datasets.reader import Reader
from kifunet.train.data import open_blocks
from kifunet.train.eval_batches import eval_batches
from test_train_data import ds_maddison  # noqa: F401 (fixture)


def test_eval_batches_cover_split_once_over_hosts(ds_maddison):
    r = Reader(ds_maddison, "test")
    n = len(r)
    per_host = []
    counts = []
    for p in range(3):
        bs = list(eval_batches(open_blocks(ds_maddison, "test"), batch_size=24, process_index=p, process_count=3))
        counts.append(len(bs))
        for b in bs:
            assert b["planes"].shape[0] == 24
        per_host.append(sum(float(b["weight"].sum()) for b in bs))
        whole = r.read_range(p * n // 3, (p + 1) * n // 3)
        planes = np.concatenate([b["planes"] for b in bs])[: int(per_host[-1])]
        assert np.array_equal(planes, whole["planes"])
    assert len(set(counts)) == 1 and sum(per_host) == n
    lim = list(eval_batches(open_blocks(ds_maddison, "test"), batch_size=24, limit=50))
    assert sum(float(b["weight"].sum()) for b in lim) == 50
