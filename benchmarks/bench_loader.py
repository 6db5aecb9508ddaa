"""Input-pipeline throughput: device-ready training batches per second, against the per-row grain baseline.

    nice -n 10 python benchmarks/bench_loader.py --out runs/bench_loader.json
    nice -n 10 python benchmarks/bench_loader.py --dataset data/kgs_maddison --batch 256

Dataset: ``--dataset DIR`` (built by ``kifunet build``), else one is built into a temporary directory from
``--archive`` (default: the KGS 2017-02 archive of ../shared/data/kgs, ``maddison`` features, 10% test).

Measured, after ``--warmup`` batches, over ``--batches`` batches of ``--batch`` positions:

* ``pipeline``: :func:`kifunet.train.input_pipeline.train_iterator` (shuffle windows, a random symmetry
  per position, constant planes) with 0, 1 and 2 grain worker processes, planes as ``uint8`` (the
  training default: the device casts) and, for comparison, ``float32`` built on the host; each batch is
  made a device array with ``parallel.shard_batch`` (``jax.make_array_from_process_local_data``) and
  waited for (``block_until_ready``): "device-ready";
* ``grain per-row``: the textbook pipeline, ``grain.MapDataset.source(Reader).shuffle().batch()``, one
  ``Reader.__getitem__`` per row (random access; symmetry omitted, so it is an upper bound), no workers.

Writes a Markdown table to stdout and the numbers to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

import jax
import numpy as np

ARCHIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "shared", "data", "kgs",
                       "KGS-2017_02-19-525-.tar.gz")  # ../shared/data/kgs beside the repository


def build(archive: str, out: str) -> str:
    from kifunet.cli import main as cli_main

    rc = cli_main(["build", archive, "--out", out, "--features", "maddison", "--split", "train:rest",
                   "--hash-split", "test:0.1", "--no-progress"])
    if rc:
        raise SystemExit(f"build failed ({rc})")
    return out


def time_pipeline(root: str, *, batch: int, workers: int, host_dtype: str, warmup: int, batches: int) -> dict:
    from kifunet.train import input_pipeline as ip
    from kifunet.train import parallel
    from kifunet.train.configs import default
    from kifunet.train.data import TrainData

    mesh = parallel.make_mesh()
    inp = default.get_config().input
    inp.workers, inp.host_dtype = workers, host_dtype
    it = ip.train_iterator(TrainData.open_datasets(root, "train", inp), inp, batch_size=batch, seed=0)
    try:
        t0 = time.perf_counter()
        jax.block_until_ready(parallel.shard_batch(next(it), mesh))
        first = time.perf_counter() - t0
        for _ in range(warmup):
            jax.block_until_ready(parallel.shard_batch(next(it), mesh))
        t0 = time.perf_counter()
        for _ in range(batches):
            jax.block_until_ready(parallel.shard_batch(next(it), mesh))
        dt = time.perf_counter() - t0
    finally:
        it.close()
    return {"what": "pipeline", "workers": workers, "host_dtype": host_dtype, "batch": batch,
            "positions_per_s": batches * batch / dt, "first_batch_s": first}


def time_grain_per_row(root: str, *, batch: int, batches: int) -> dict:
    import grain

    from kifunet.data_prep.datasets.reader import Reader

    r = Reader(root, "train")
    ds = grain.MapDataset.source(r).shuffle(seed=0).batch(batch, drop_remainder=True)
    ds[0]
    t0 = time.perf_counter()
    for i in range(1, batches + 1):
        b = ds[i]
        b["planes"].astype(np.uint8)
    dt = time.perf_counter() - t0
    return {"what": "grain per-row (Reader.__getitem__)", "workers": 0, "host_dtype": "uint8", "batch": batch,
            "positions_per_s": batches * batch / dt, "first_batch_s": float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=None, help="a built dataset (default: build one from --archive)")
    ap.add_argument("--archive", default=ARCHIVE)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--batches", type=int, default=1000)
    ap.add_argument("--workers", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = a.dataset or build(a.archive, os.path.join(tmp, "ds"))
        from kifunet.train import input_pipeline as ip

        info = ip.describe(root, "train")
        rows = []
        for w in a.workers:
            rows.append(time_pipeline(root, batch=a.batch, workers=w, host_dtype="uint8", warmup=a.warmup,
                                      batches=a.batches))
            print(json.dumps(rows[-1]), flush=True)
        rows.append(time_pipeline(root, batch=a.batch, workers=max(a.workers), host_dtype="float32",
                                  warmup=a.warmup // 2, batches=a.batches // 4))
        print(json.dumps(rows[-1]), flush=True)
        rows.append(time_grain_per_row(root, batch=a.batch, batches=max(4, a.batches // 50)))
        print(json.dumps(rows[-1]), flush=True)
    print(f"\ndataset: {info['rows']:,} rows, {info['features']} ({info['num_planes']} planes), "
          f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| pipeline | workers | planes on the host | positions/s (device-ready) | first batch (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['what']} | {r['workers']} | {r['host_dtype']} | {r['positions_per_s']:,.0f} | "
              f"{r['first_batch_s']:.1f} |")
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"dataset": info, "cpus": os.cpu_count(), "load_average": os.getloadavg()[0], "rows": rows},
                      f, indent=2)


if __name__ == "__main__":
    main()
