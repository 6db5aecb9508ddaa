"""The training pipeline (train/input_pipeline.py): every row once an epoch, the same batches for a seed with or
without worker processes, exact resume from the iterator state, disjoint hosts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kifunet.train import input_pipeline as ip
from test_train_data import ds_maddison, pipeline  # noqa: F401 (fixture)


def test_every_row_once_per_epoch_and_epochs_differ(ds_maddison):
    data, inp = pipeline(ds_maddison, window_blocks=1, symmetry="none")
    src = data.train[0]
    rows = src.num_rows()
    # one block per window and a batch of one row: every row of the epoch is kept
    ds = ip.window_dataset(data, inp, batch_size=1, seed=1)
    nb = len(src)
    epoch0 = np.concatenate([ds[i]["index"] for i in range(nb)])
    epoch1 = np.concatenate([ds[i]["index"] for i in range(nb, 2 * nb)])
    assert sorted(epoch0.tolist()) == list(range(rows)) == sorted(epoch1.tolist())
    assert not np.array_equal(epoch0, epoch1)
    # windows of several blocks with a batch that does not divide them drop only the remainders
    ds = ip.window_dataset(*pipeline(ds_maddison, window_blocks=4, symmetry="none"), batch_size=20, seed=1)
    got = np.concatenate([ds[i]["index"] for i in range(nb // 4)])
    assert len(np.unique(got)) == len(got) and len(got) >= (nb // 4) * 4 * 32 - (nb // 4) * 20 - 32 * 4


def test_same_seed_same_batches_and_worker_processes_agree(ds_maddison):
    kw = dict(batch_size=32, seed=7)
    a = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=0), **kw)
    b = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=1), **kw)
    c = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=0), **{**kw, "seed": 8})
    try:
        ba, bb, bc = [[next(it) for _ in range(12)] for it in (a, b, c)]
    finally:
        for it in (a, b, c):
            it.close()
    for x, y in zip(ba, bb):
        for k in ("planes", "target", "to_move", "rank", "weight"):
            assert np.array_equal(x[k], y[k]), k
    assert not all(np.array_equal(x["target"], z["target"]) for x, z in zip(ba, bc))
    assert ba[0]["planes"].dtype == np.uint8 and ba[0]["planes"].shape == (32, 9, 9, 36)
    assert ba[0]["target"].dtype == np.int32 and ba[0]["weight"].dtype == np.float32


@pytest.mark.slow
@pytest.mark.parametrize("save_workers,load_workers", [(0, 0), (1, 1), (0, 1)])
def test_state_resumes_exactly(ds_maddison, save_workers, load_workers):
    kw = dict(batch_size=32, seed=3)
    it = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=save_workers), **kw)
    for _ in range(5):  # mid-window (2 blocks x 32 rows = 2 batches a window)
        next(it)
    state = json.loads(json.dumps(it.get_state()))  # must survive JSON (checkpoints)
    assert state["window"] == 2 and state["taken"] == 1
    ref = [next(it) for _ in range(7)]
    it.close()
    it2 = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=load_workers), **kw)
    it2.set_state(state)
    got = [next(it2) for _ in range(7)]
    again = json.loads(json.dumps(it2.get_state()))
    it2.close()
    for x, y in zip(ref, got):
        assert np.array_equal(x["planes"], y["planes"]) and np.array_equal(x["target"], y["target"])
    # and a state taken after a restore resumes exactly too (its grain iterator may start mid-way)
    it3 = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=load_workers), **kw)
    it3.set_state(again)
    it4 = ip.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=0), **kw)
    for _ in range(5 + 7):
        next(it4)
    try:
        for _ in range(3):
            a, b = next(it3), next(it4)
            assert np.array_equal(a["planes"], b["planes"]) and np.array_equal(a["target"], b["target"])
    finally:
        it3.close()
        it4.close()


def test_hosts_read_disjoint_blocks(ds_maddison):
    data, inp = pipeline(ds_maddison, window_blocks=1, symmetry="none")
    src = data.train[0]
    nb = len(src)
    per_host = []
    for p in range(2):
        ds = ip.window_dataset(data, inp, batch_size=1, seed=5, process_index=p, process_count=2)
        per_host.append(set(np.concatenate([ds[i]["index"] for i in range(len(range(p, nb, 2)))]).tolist()))
    assert not (per_host[0] & per_host[1])
    assert per_host[0] | per_host[1] == set(range(src.num_rows()))
