"""Speed and size of the TFDS ``go_moves`` build (one machine, no Beam) and of reading it back, next to
``kifunet build`` (HDF5) on the same input.

    python benchmarks/bench_tfds_build.py --archive ../shared/data/kgs/KGS-2017_01-19-733-.tar.gz \\
        --preset gonn-kgs --split train:rest --val-fraction 0.1 --workers 2 [--json FILE]

Runs in the project's environment (TensorFlow not needed). Puts the archive(s) in a temporary ``manual_dir``
(symbolic links), then: (1) ``GoMoves(config, workers=N).download_and_prepare()``; (2) ``kifunet build`` of the
same directory with the same options and workers; (3) reads the TFDS train split back: ``TfdsReader.batch`` of
256 consecutive records (full planes assembled) and the training pipeline from a ``tfds:`` dataset
(``kifunet.train.input_pipeline.train_iterator``, batches of 256, symmetries, ``--loader-workers`` grain
processes), against the same two readers on the HDF5 build. Reports wall seconds, positions/s, positions per
CPU-second (this process and its waited-for workers), bytes/position (array_record files; HDF5 shards) and the
machine's load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

import numpy as np



def _cpu() -> float:
    """CPU seconds (user + system) of this process and of its waited-for children so far. The build's worker
    pool (``--workers`` >= 1) runs under a forkserver whose processes are not this process's children: their CPU
    is not counted, so per-CPU-second figures are meaningful with ``--workers 0`` only."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

def _bytes(path: str, part: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs if part in f)


def _rate(fn, rows_per_call: int, seconds: float = 10.0) -> float:
    fn()  # warm-up (opens files, compiles)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += rows_per_call
    return n / (time.perf_counter() - t0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--archive", action="append", required=True)
    p.add_argument("--preset", default="gonn-kgs")
    p.add_argument("--features", default="maddison")
    p.add_argument("--split", action="append")
    p.add_argument("--val-fraction", type=float, default=0.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--loader-workers", type=int, nargs="*", default=[0, 1])
    p.add_argument("--seconds", type=float, default=10.0, help="time per reader measurement")
    p.add_argument("--json")
    args = p.parse_args(argv)

    import tensorflow_datasets as tfds

    from kifunet.cli import main as cli_main
    from kifunet.data_prep.building import tfds_go_moves as T
    from kifunet.data_prep.datasets.reader import Reader
    from kifunet.data_prep.datasets.tfds_reader import TfdsReader
    from kifunet.train import input_pipeline
    from kifunet.train.configs import default
    from kifunet.train.data import TrainData

    tmp = tempfile.mkdtemp(prefix="bench-tfds-build-")
    res = {"archives": args.archive, "load_before": os.getloadavg(), "workers": args.workers}
    try:
        manual = os.path.join(tmp, "manual")
        os.makedirs(manual)
        for a in args.archive:
            os.symlink(os.path.abspath(a), os.path.join(manual, os.path.basename(a)))
        opts = {}
        if args.split:
            opts["splits"] = list(args.split)
        if args.val_fraction:
            opts["val_fraction"] = args.val_fraction
        cfg = T.GoMovesConfig(name="bench_" + args.features, features=args.features, preset=args.preset,
                              options=opts)
        b = T.GoMoves(config=cfg, data_dir=os.path.join(tmp, "tfds"), workers=args.workers)
        t0, c0 = time.time(), _cpu()
        b.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual))
        t_tfds, c_tfds = time.time() - t0, _cpu() - c0
        positions = sum(s.num_examples for s in b.info.splits.values())
        ar = _bytes(os.fspath(b.data_dir), ".array_record")
        res["tfds"] = {"seconds": t_tfds, "positions": positions, "positions_per_s": positions / t_tfds,
                       "cpu_seconds": c_tfds, "positions_per_cpu_s": positions / c_tfds,
                       "bytes": ar, "bytes_per_position": ar / positions,
                       "splits": {s: v.num_examples for s, v in b.info.splits.items()}}

        out = os.path.join(tmp, "hdf5")
        argv_b = ["build", manual, "--out", out, "--features", args.features, "--workers", str(args.workers),
                  "--no-progress"]
        if args.preset:
            argv_b += ["--preset", args.preset]
        for s in args.split or ():
            argv_b += ["--split", s]
        if args.val_fraction:
            argv_b += ["--val-fraction", str(args.val_fraction)]
        t0, c0 = time.time(), _cpu()
        assert cli_main(argv_b) == 0
        t_h5, c_h5 = time.time() - t0, _cpu() - c0
        h5 = _bytes(out, "shard-")
        res["hdf5"] = {"seconds": t_h5, "positions_per_s": positions / t_h5, "cpu_seconds": c_h5,
                       "positions_per_cpu_s": positions / c_h5, "bytes": h5,
                       "bytes_per_position": h5 / positions}
        print(f"{positions:,} positions {res['tfds']['splits']}")
        cpu_t = f", {positions / c_tfds:,.0f} per CPU-second" if args.workers == 0 else ""
        cpu_h = f", {positions / c_h5:,.0f} per CPU-second" if args.workers == 0 else ""
        print(f"TFDS build: {t_tfds:.1f} s, {positions / t_tfds:,.0f} positions/s{cpu_t}, {ar / positions:.0f} "
              f"B/position; kifunet build: {t_h5:.1f} s, {positions / t_h5:,.0f} positions/s{cpu_h}, "
              f"{h5 / positions:.0f} B/position", flush=True)

        tfds_dir = os.fspath(b.data_dir)
        tr = TfdsReader(tfds_dir, "train")
        hr = Reader(out, "train")
        rng = np.random.default_rng(0)
        n = min(len(tr), len(hr))
        k = min(256, n)
        starts = rng.integers(0, n - k + 1, size=100_000)
        it = iter(starts)
        res["reader_tfds_rows_per_s"] = _rate(lambda: tr.batch(np.arange(s := next(it), s + k)), k, args.seconds)
        it = iter(starts)
        res["reader_hdf5_rows_per_s"] = _rate(lambda: hr.read_range(s := next(it), s + k), k, args.seconds)
        print(f"reader, 256 consecutive rows with full planes: TFDS {res['reader_tfds_rows_per_s']:,.0f} rows/s, "
              f"HDF5 {res['reader_hdf5_rows_per_s']:,.0f} rows/s", flush=True)
        for w in args.loader_workers:
            for name, ds in (("tfds", f"tfds:{tfds_dir}"), ("hdf5", out)):
                inp = default.get_config().input
                inp.workers, inp.window_blocks, inp.block_rows = w, 8, 256
                bi = input_pipeline.train_iterator(TrainData.open_datasets(ds, "train", inp), inp, batch_size=256,
                                                   seed=0)
                try:
                    rate = _rate(lambda: next(bi), 256, args.seconds)
                finally:
                    bi.close()
                res[f"pipeline_{name}_workers{w}_positions_per_s"] = rate
                print(f"train_iterator ({name}, {w} worker process(es)): {rate:,.0f} positions/s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["load_after"] = os.getloadavg()
    print(f"load average before {res['load_before']}, after {res['load_after']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
