"""The training input pipeline against the Reader: planes, symmetries, shuffling, dropout, resume, hosts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kifunet.data_prep.planes import features
from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.datasets.reader import Reader
from kifunet.train import input_pipeline as ip
from test_train_data import ds_gonn, ds_maddison, ds_maddison_packbits  # noqa: F401 (fixtures)


def _window_planes(w):
    return ip.window_batch(w, 0, len(w["target"]))["planes"]


@pytest.mark.parametrize("layout", ["codes", "packbits"])
@pytest.mark.parametrize("symmetry", ["example", "batch", "none"])
def test_windows_equal_reader_rows_with_their_symmetries(ds_maddison, ds_maddison_packbits, layout, symmetry):
    root = ds_maddison if layout == "codes" else ds_maddison_packbits
    ds = ip.window_dataset(root, "train", batch_size=16, seed=4, symmetry=symmetry, window_blocks=3)
    r = Reader(root, "train")
    seen_syms = set()
    for i in range(3):
        w = ds[i]
        assert ("idx" in w) == (layout == "codes")
        ref = r.batch(w["index"], symmetries=w["symmetry"])
        assert np.array_equal(_window_planes(w), ref["planes"])
        assert np.array_equal(w["target"], ref["target"])
        assert np.array_equal(w["player_rank"], ref["player_rank"]) and np.array_equal(w["to_move"], ref["to_move"])
        assert len(w["target"]) % 16 == 0
        s = w["symmetry"].reshape(-1, 16)
        if symmetry == "batch":
            assert (s == s[:, :1]).all()
        if symmetry == "none":
            assert (s == 0).all()
        seen_syms |= set(np.unique(s).tolist())
    if symmetry == "example":
        assert seen_syms == set(range(8))


def test_pass_target_stays_pass_under_symmetries(ds_maddison):
    # the remapping rule the pipeline calls; tests/test_pass_symmetries.py checks real pass rows of
    # --include-passes datasets (HDF5 and TFDS) through the reader, the windows and the iterators
    n = 9
    t = np.array([n * n] * 8 + [0] * 8)
    s = np.tile(np.arange(8), 2)
    out = sym.apply_index_batch(t, s, n)
    assert (out[:8] == n * n).all() and sorted(set(out[8:].tolist())) == [0, 8, 72, 80]


def test_every_row_once_per_epoch_and_epochs_differ(ds_maddison):
    src = ip.block_source(ds_maddison, "train")
    rows = src.num_rows()
    # one block per window and a batch of one row: every row of the epoch is kept
    ds = ip.window_dataset(ds_maddison, "train", batch_size=1, seed=1, window_blocks=1, symmetry="none")
    nb = len(src)
    epoch0 = np.concatenate([ds[i]["index"] for i in range(nb)])
    epoch1 = np.concatenate([ds[i]["index"] for i in range(nb, 2 * nb)])
    assert sorted(epoch0.tolist()) == list(range(rows)) == sorted(epoch1.tolist())
    assert not np.array_equal(epoch0, epoch1)
    # windows of several blocks with a batch that does not divide them drop only the remainders
    ds = ip.window_dataset(ds_maddison, "train", batch_size=20, seed=1, window_blocks=4, symmetry="none")
    got = np.concatenate([ds[i]["index"] for i in range(nb // 4)])
    assert len(np.unique(got)) == len(got) and len(got) >= (nb // 4) * 4 * 32 - (nb // 4) * 20 - 32 * 4


def test_same_seed_same_batches_and_worker_processes_agree(ds_maddison):
    kw = dict(batch_size=32, seed=7, window_blocks=2)
    a = ip.train_iterator(ds_maddison, "train", workers=0, **kw)
    b = ip.train_iterator(ds_maddison, "train", workers=1, **kw)
    c = ip.train_iterator(ds_maddison, "train", workers=0, **{**kw, "seed": 8})
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


@pytest.mark.parametrize("save_workers,load_workers", [(0, 0), (1, 1), (0, 1)])
def test_state_resumes_exactly(ds_maddison, save_workers, load_workers):
    kw = dict(batch_size=32, seed=3, window_blocks=2)
    it = ip.train_iterator(ds_maddison, "train", workers=save_workers, **kw)
    for _ in range(5):  # mid-window (2 blocks x 32 rows = 2 batches a window)
        next(it)
    state = json.loads(json.dumps(it.get_state()))  # must survive JSON (checkpoints)
    assert state["window"] == 2 and state["taken"] == 1
    ref = [next(it) for _ in range(7)]
    it.close()
    it2 = ip.train_iterator(ds_maddison, "train", workers=load_workers, **kw)
    it2.set_state(state)
    got = [next(it2) for _ in range(7)]
    again = json.loads(json.dumps(it2.get_state()))
    it2.close()
    for x, y in zip(ref, got):
        assert np.array_equal(x["planes"], y["planes"]) and np.array_equal(x["target"], y["target"])
    # and a state taken after a restore resumes exactly too (its grain iterator may start mid-way)
    it3 = ip.train_iterator(ds_maddison, "train", workers=load_workers, **kw)
    it3.set_state(again)
    it4 = ip.train_iterator(ds_maddison, "train", workers=0, **kw)
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
    src = ip.block_source(ds_maddison, "train")
    nb = len(src)
    per_host = []
    for p in range(2):
        ds = ip.window_dataset(ds_maddison, "train", batch_size=1, seed=5, window_blocks=1, symmetry="none",
                               process_index=p, process_count=2)
        per_host.append(set(np.concatenate([ds[i]["index"] for i in range(len(range(p, nb, 2)))]).tolist()))
    assert not (per_host[0] & per_host[1])
    assert per_host[0] | per_host[1] == set(range(src.num_rows()))


def test_history_dropout_gonn_cascade(ds_gonn):
    fs = features.get("gonn")
    lay = ip.layout_for(fs)
    assert lay.history_depth == 5
    prev = [i for i, n in enumerate(fs.plane_names()) if n.startswith("previous_moves_5")]
    assert [c for g in lay.history for c in g] == prev
    ds = ip.window_dataset(ds_gonn, "train", batch_size=8, seed=2, window_blocks=4, history="cascade",
                           keep_probs=ip.GONN_KEEP_PROBS)
    r = Reader(ds_gonn, "train")
    levels = []
    for i in range(6):
        w = ds[i]
        planes = _window_planes(w)
        ref = r.batch(w["index"], symmetries=w["symmetry"])["planes"]
        lv = w["history_level"]
        levels.append(lv)
        other = [c for c in range(fs.num_planes) if c not in prev]
        assert np.array_equal(planes[..., other], ref[..., other])  # only history planes change
        for d, c in enumerate(prev):
            kept = lv > d
            assert np.array_equal(planes[kept][..., c], ref[kept][..., c])
            assert not planes[~kept][..., c].any()
    # the cascade's probabilities, on many draws of the same function the windows use
    lv = ip.history_levels(np.random.default_rng(0), 200_000, 5, "cascade", 0.0, ip.GONN_KEEP_PROBS)
    cum = [np.mean(lv > d) for d in range(5)]
    assert np.allclose(cum, np.cumprod(ip.GONN_KEEP_PROBS), atol=0.005)
    allp = ip.history_levels(np.random.default_rng(1), 100_000, 5, "all", 0.07, ())
    assert abs(np.mean(allp == 0) - 0.07) < 0.005 and set(np.unique(allp).tolist()) == {0, 5}
    assert ip.history_levels(np.random.default_rng(0), 10, 0, "cascade", 0.0, ip.GONN_KEEP_PROBS) is None


def test_agz_history_groups():
    fs = features.get("agz")
    lay = ip.layout_for(fs)
    names = fs.plane_names()
    assert lay.history_depth == 7
    assert [names[c] for c in lay.history[0]] == ["history_8[1]", "history_8[9]"]  # t-1, both colours
    assert all("history_8[0]" != names[c] and "history_8[8]" != names[c] for g in lay.history for c in g)


def test_eval_batches_cover_split_once_over_hosts(ds_maddison):
    r = Reader(ds_maddison, "test")
    n = len(r)
    per_host = []
    counts = []
    for p in range(3):
        bs = list(ip.eval_batches(ds_maddison, "test", batch_size=24, process_index=p, process_count=3))
        counts.append(len(bs))
        for b in bs:
            assert b["planes"].shape[0] == 24
        per_host.append(sum(float(b["weight"].sum()) for b in bs))
        whole = r.read_range(p * n // 3, (p + 1) * n // 3)
        planes = np.concatenate([b["planes"] for b in bs])[: int(per_host[-1])]
        assert np.array_equal(planes, whole["planes"])
    assert len(set(counts)) == 1 and sum(per_host) == n
    lim = list(ip.eval_batches(ds_maddison, "test", batch_size=24, limit=50))
    assert sum(float(b["weight"].sum()) for b in lim) == 50


def test_host_dtypes(ds_maddison):
    it = ip.train_iterator(ds_maddison, "train", batch_size=16, seed=0, window_blocks=1, workers=0,
                           host_dtype="float32")
    b = next(it)
    it.close()
    assert b["planes"].dtype == np.float32 and set(np.unique(b["planes"]).tolist()) <= {0.0, 1.0}
    with pytest.raises(ValueError):
        ip.train_iterator(ds_maddison, "train", batch_size=16, seed=0, host_dtype="int8", workers=0)


def test_prefetcher_reads_plain_generators_too():
    """Evaluation batches (a generator, no ``get_state``) go through the same background prefetch."""
    pre = ip.Prefetcher((dict(x=np.full(2, i)) for i in range(5)), fn=lambda b: {k: v * 10 for k, v in b.items()})
    try:
        assert [int(b["x"][0]) for b in pre] == [0, 10, 20, 30, 40] and pre.state is None
    finally:
        pre.close()


WATCHED_CHILD = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", (
    "import os, sys, time\\n"
    "from kifunet.train.input_pipeline import exit_with_parent\\n"
    "exit_with_parent(os.getppid())\\n"
    "print('ready', flush=True)\\n"
    "time.sleep(120)\\n")], stdout=sys.stdout)
print(child.pid, flush=True)
time.sleep(30)
"""


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="reads /proc (Linux)")
def test_exit_with_parent_ends_a_worker_whose_parent_is_killed(tmp_path):
    """The grain workers' init (``exit_with_parent``): a process watching its parent ends within a second of the
    parent's ``kill -9`` (tests/test_train_loop.py does the same with the trainer and its real worker)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    p = subprocess.Popen([sys.executable, "-c", WATCHED_CHILD], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        child = int(p.stdout.readline())
        assert p.stdout.readline().strip() == "ready"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        deadline = time.time() + 5
        alive = True
        while alive and time.time() < deadline:
            try:
                with open(f"/proc/{child}/stat") as f:
                    alive = f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
            except FileNotFoundError:
                alive = False
            time.sleep(0.05)
        assert not alive, "the watched process outlived its parent by 5 s"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
