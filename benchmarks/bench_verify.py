"""What checking a dataset against its manifest costs, against reading one epoch of the split.

    nice -n 10 python benchmarks/bench_verify.py --data data/kgs2015 --split train
    python benchmarks/bench_verify.py            # builds samples/gnugo into a temporary directory

Dataset: ``--data DIR`` (built by ``kifunet build``), else one built from ``samples/gnugo`` (``maddison``, shards of
1,000 rows). Measured on ``--split``:

* ``verify``: :func:`kifunet.data_prep.datasets.verify.check_shard` on every shard, the process cache emptied first: the
  sha256 of the bytes and the rows the file holds, what a reader does once per process per shard. Seconds and
  MB/s per shard (and the row count's share, timed apart); the first pass may read from disk, ``--passes``
  more show the page-cache speed.
* ``epoch``: one pass over every block of the split through the training pipeline's block reader
  (``Reader(..., assemble=False).blocks()``, what grain's workers read: raw point codes, undecoded), and one
  through ``Reader.iter_batches(256)`` (decoded, planes assembled: what ``kifunet eval`` reads). The training
  pipeline does more per block than the block reader (windows, symmetries, device transfer), so
  ``verify / block epoch`` is an upper bound of verification's share of an epoch.

Prints a summary with the 1-minute load average (``os.getloadavg()``; other work on the machine slows both
sides) and writes JSON to ``--out`` (default ``benchmarks/results/verify.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_sample(out: str) -> str:
    from kifunet.cli import main as cli_main

    rc = cli_main(["build", os.path.join(ROOT, "samples", "gnugo"), "--out", out, "--features", "maddison",
                   "--workers", "0", "--no-progress", "--shard-size", "1000"])
    if rc:
        raise SystemExit(f"build failed ({rc})")
    return out


def time_verify(root: str, split: str) -> list[dict]:
    import h5py  # noqa: F401 - imported before the clock starts (a reader has it already)

    from kifunet.data_prep.datasets import verify
    from kifunet.data_prep.datasets.manifest import read_manifest

    verify.forget()
    out = []
    for e in read_manifest(root)["splits"][split]["shards"]:
        path = os.path.join(root, e["file"])
        t0 = time.perf_counter()
        verify.check_shard(path, e)
        s = time.perf_counter() - t0
        t0 = time.perf_counter()
        verify.hdf5_rows(path)  # the row count alone (opens the file, reads its shapes)
        rows_s = time.perf_counter() - t0
        mb = os.path.getsize(path) / 1e6
        out.append({"file": e["file"], "rows": int(e["rows"]), "mb": round(mb, 3), "seconds": round(s, 4),
                    "mb_per_s": round(mb / s, 1), "row_count_seconds": round(rows_s, 4)})
    return out


def time_block_epoch(root: str, split: str) -> dict:
    from kifunet.data_prep.datasets.reader import Reader

    with Reader(root, split, assemble=False) as r:
        src = r.blocks()  # checks the shards: free here, time_verify checked them in this process
        t0 = time.perf_counter()
        rows = 0
        for i in range(len(src)):
            piece = src[i]
            rows += len(piece["columns"]["index"])
        s = time.perf_counter() - t0
    return {"rows": rows, "seconds": round(s, 3), "rows_per_s": round(rows / s)}


def time_batch_epoch(root: str, split: str, batch: int = 256) -> dict:
    from kifunet.data_prep.datasets.reader import Reader

    with Reader(root, split) as r:
        t0 = time.perf_counter()
        rows = sum(len(b["target"]) for b in r.iter_batches(batch))
        s = time.perf_counter() - t0
    return {"rows": rows, "batch": batch, "seconds": round(s, 3), "rows_per_s": round(rows / s)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="a kifunet build directory (default: build samples/gnugo)")
    p.add_argument("--split", default="train")
    p.add_argument("--passes", type=int, default=1, help="verification passes after the first (page cache)")
    p.add_argument("--no-batches", action="store_true", help="skip the Reader.iter_batches epoch (slow)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "verify.json"))
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        root = args.data or build_sample(os.path.join(tmp, "ds"))
        load_before = os.getloadavg()[0]
        passes = [time_verify(root, args.split) for _ in range(1 + args.passes)]
        blocks = time_block_epoch(root, args.split)
        batches = None if args.no_batches else time_batch_epoch(root, args.split)
        load_after = os.getloadavg()[0]
        from kifunet.data_prep.datasets.manifest import read_manifest

        features = read_manifest(root)["features"]["name"]

    def total(shards):
        s = sum(x["seconds"] for x in shards)
        mb = sum(x["mb"] for x in shards)
        return {"shards": len(shards), "mb": round(mb, 2), "seconds": round(s, 3), "mb_per_s": round(mb / s, 1),
                "s_per_shard": round(s / len(shards), 4)}

    first, last = total(passes[0]), total(passes[-1])
    result = {
        "dataset": args.data or "samples/gnugo (maddison, 1,000-row shards)", "features": features,
        "split": args.split, "rows": blocks["rows"],
        "verify_first_pass": first, "verify_last_pass": last, "verify_per_shard": passes[0],
        "epoch_block_reader": blocks, "epoch_iter_batches": batches,
        "ratio_verify_to_block_epoch": round(first["seconds"] / blocks["seconds"], 4),
        "ratio_verify_to_batch_epoch": round(first["seconds"] / batches["seconds"], 4) if batches else None,
        "loadavg_1min": [round(load_before, 2), round(load_after, 2)],
        "cpus": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version(),
    }
    print(f"{result['dataset']} [{args.split}]: {blocks['rows']:,} rows, {first['shards']} shards, {first['mb']:,} MB")
    print(f"  verify: {first['seconds']:.2f} s ({first['mb_per_s']:,} MB/s, {first['s_per_shard']:.3f} s a shard); "
          f"again: {last['seconds']:.2f} s ({last['mb_per_s']:,} MB/s)")
    print(f"  epoch, block reader: {blocks['seconds']:.2f} s ({blocks['rows_per_s']:,} rows/s); verify / epoch "
          f"= {result['ratio_verify_to_block_epoch']:.3f}")
    if batches:
        print(f"  epoch, iter_batches({batches['batch']}): {batches['seconds']:.2f} s ({batches['rows_per_s']:,} "
              f"rows/s); verify / epoch = {result['ratio_verify_to_batch_epoch']:.3f}")
    print(f"  load average (1 min): {load_before:.2f} before, {load_after:.2f} after, {os.cpu_count()} CPUs")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
