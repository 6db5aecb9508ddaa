"""The TFDS builder ``go_moves`` both ways -- one machine (generator) and Apache Beam (DirectRunner) -- and
``kifunet build`` (HDF5) on the same input: same examples, same accounting; speed and size of each.

``apache-beam`` pins ``protobuf`` below 7 (apache-beam 2.77 wants protobuf 6.33), so it lives in its own virtual
environment next to the project's (``pip install --dry-run apache-beam`` in the main environment would downgrade
protobuf 7.36 -> 6.33, pillow 13 -> 12 and pyarrow 26 -> 25). The quick way: ``python tests/beam_env.py`` makes
the tests' Beam environment ``.ci-beam-venv`` (a venv over the project's environment with apache-beam and what it
pins on top; ``.ci/run`` makes it too), then run this script with ``.ci-beam-venv/bin/python``. Or a separate
environment of its own; commands, from the repository root::

    python -m venv ../beamenv
    ../beamenv/bin/pip install "apache-beam>=2.60,<3" "tensorflow-datasets==4.9.10" "array-record==0.8.6" \\
        "numpy==2.4.6" "numba==0.68.1" "sgfmill==1.1.1" "h5py==3.16.0" tqdm pytest
    ../beamenv/bin/pip install --no-deps -e .          # kifunet itself (data_prep needs no JAX)

    # the small archive of tests/test_tfds_go_moves.py (8 records: 5 used, a duplicate, a weak game, a damaged
    # record; a README), preset gonn-kgs:
    ../beamenv/bin/python benchmarks/bench_tfds_beam.py --hdf5

    # a real archive: KGS 2017-01 (733 games), gonn-kgs filters, every year in train, 10% of the games in val:
    ../beamenv/bin/python benchmarks/bench_tfds_beam.py --archive ../shared/data/kgs/KGS-2017_01-19-733-.tar.gz \\
        --preset gonn-kgs --split train:rest --val-fraction 0.1 --hdf5 --workers 2

Each build runs in this process, one after the other: (1) ``GoMoves(...).download_and_prepare()`` without Beam
(the build's encode and plan stages, ``--workers`` processes); (2) the same with ``DownloadConfig(beam_options=
PipelineOptions(["--runner=DirectRunner", ...]))`` (``--direct-workers``, ``--direct-mode``); (3) with ``--hdf5``,
``kifunet build`` of the same directory with the same options. Checks: the same splits and example counts; the
same ``metadata.json`` (``kifunet``: counts, splits, inputs, filters; all but the ``builder`` field) and
``rejects.jsonl``; the same decoded examples record by record (TFDS orders records by a hash of their keys, so
both builds write the same order) and as multisets; with ``--hdf5``, the decoded full
planes and columns equal the HDF5 build's rows, sorted by (game_id, move number). Reports wall seconds,
positions/s, positions per CPU-second (this process and its waited-for workers) and array_record
bytes/position. Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))



def _cpu() -> float:
    """CPU seconds (user + system) of this process and of its waited-for children so far. The build's worker
    pool (``--workers`` >= 1) runs under a forkserver whose processes are not this process's children: their CPU
    is not counted, so per-CPU-second figures are meaningful with ``--workers 0`` only."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

def _dir_bytes(path: str, suffix: str = "") -> int:
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if suffix in f)
    return total


def make_manual(args, tmp: str) -> str:
    manual = os.path.join(tmp, "manual")
    if args.manual_dir:
        return os.path.abspath(args.manual_dir)
    if args.archive:
        os.makedirs(manual)
        for a in args.archive:
            os.symlink(os.path.abspath(a), os.path.join(manual, os.path.basename(a)))
        return manual
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from pathlib import Path

    from test_tfds_go_moves import make_inputs

    return str(make_inputs(Path(tmp)))


def builder_config(args):
    from kifunet.data_prep.building import tfds_go_moves as T

    if args.config:
        return args.config
    opts = {}
    if args.split:
        opts["splits"] = list(args.split)
    if args.val_fraction:
        opts["val_fraction"] = args.val_fraction
    return T.GoMovesConfig(name="bench_" + args.features, features=args.features, preset=args.preset, options=opts)


def build_tfds(cfg, manual: str, data_dir: str, beam_args: list[str] | None, workers: int):
    import tensorflow_datasets as tfds

    from kifunet.data_prep.building import tfds_go_moves as T

    kw = {"manual_dir": manual}
    if beam_args is not None:
        from apache_beam.options.pipeline_options import PipelineOptions

        kw["beam_options"] = PipelineOptions(beam_args)
    b = T.GoMoves(config=cfg, data_dir=data_dir, workers=workers)
    t0, c0 = time.time(), _cpu()
    b.download_and_prepare(download_config=tfds.download.DownloadConfig(**kw))
    return b, time.time() - t0, _cpu() - c0


def read_split(builder, split: str) -> tuple[list[tuple], list[dict]]:
    """(comparable tuples, decoded records) of a split, in record order. Records are compared decoded: the
    serialized bytes may order the proto's feature map differently from one process to the next."""
    dec = builder.as_data_source(split)
    recs = [dec[i] for i in range(len(dec))]
    canon = [(r["game"], *(int(r[k]) for k in ("move_number", "target", "to_move", "player_rank", "opponent_rank")),
              r["planes"].tobytes()) for r in recs]
    return canon, recs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--manual-dir", help="directory of SGF archives (default: the test's small archive)")
    p.add_argument("--archive", action="append", help="archive(s) to put in a temporary manual_dir")
    p.add_argument("--config", help="a GoMoves config name (kgs_maddison, ...); else --preset/--split/--features")
    p.add_argument("--preset", default="gonn-kgs")
    p.add_argument("--features", default="maddison")
    p.add_argument("--split", action="append", help="date split(s), as kifunet build --split")
    p.add_argument("--val-fraction", type=float, default=0.0)
    p.add_argument("--workers", type=int, default=0, help="encode processes of the one-machine path")
    p.add_argument("--direct-workers", type=int, default=1, help="DirectRunner --direct_num_workers")
    p.add_argument("--direct-mode", default="in_memory", choices=("in_memory", "multi_threading", "multi_processing"))
    p.add_argument("--hdf5", action="store_true", help="also run kifunet build and compare with it")
    p.add_argument("--keep", help="keep the built datasets in this directory (default: a temporary one)")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    if not args.config and not args.split and not args.archive and not args.manual_dir:
        args.config = "kgs_maddison"

    tmp = args.keep or tempfile.mkdtemp(prefix="bench-tfds-beam-")
    os.makedirs(tmp, exist_ok=True)
    from kifunet.data_prep.planes import features
    from kifunet.data_prep.building import tfds_go_moves as T
    from kifunet.data_prep.datasets import tfds_reader as R

    manual = make_manual(args, tmp)
    cfg = builder_config(args)
    res = {"manual_dir": manual, "config": cfg if isinstance(cfg, str) else dataclasses.asdict(cfg),
           "load_before": os.getloadavg(), "checks": {}}
    ok = True

    def check(name: str, cond: bool) -> None:
        nonlocal ok
        res["checks"][name] = bool(cond)
        ok &= bool(cond)
        print(f"  {'ok  ' if cond else 'FAIL'} {name}", flush=True)

    gen, t_gen, c_gen = build_tfds(cfg, manual, os.path.join(tmp, "generator"), None, args.workers)
    beam_args = ["--runner=DirectRunner", f"--direct_num_workers={args.direct_workers}",
                 f"--direct_running_mode={args.direct_mode}"]
    beam, t_beam, c_beam = build_tfds(cfg, manual, os.path.join(tmp, "beam"), beam_args, 0)
    mg, mb = R.kifunet_metadata(gen), R.kifunet_metadata(beam)
    positions = sum(s.num_examples for s in gen.info.splits.values())
    ar_bytes = _dir_bytes(os.fspath(gen.data_dir), ".array_record")
    res["generator"] = {"seconds": t_gen, "positions_per_s": positions / t_gen, "cpu_seconds": c_gen,
                        "positions_per_cpu_s": positions / c_gen, "workers": args.workers}
    res["beam"] = {"seconds": t_beam, "positions_per_s": positions / t_beam, "cpu_seconds": c_beam,
                   "positions_per_cpu_s": positions / c_beam, "runner": beam_args}
    res["positions"] = positions
    res["array_record_bytes"] = ar_bytes
    res["bytes_per_position"] = ar_bytes / max(positions, 1)
    res["counts"] = mg["counts"]
    res["splits"] = mg["splits"]
    print(f"{positions:,} positions ({json.dumps(mg['splits'])}); counts {json.dumps(mg['counts'])[:300]}")
    per_cpu = f" ({positions / c_gen:,.0f} per CPU-second)" if args.workers == 0 else ""
    print(f"one machine: {t_gen:.1f} s, {positions / t_gen:,.0f} positions/s{per_cpu}; Beam DirectRunner: "
          f"{t_beam:.1f} s, {positions / t_beam:,.0f} positions/s; {ar_bytes / max(positions, 1):.0f} array_record "
          f"bytes/position")

    check("same splits and example counts",
          {s: v.num_examples for s, v in gen.info.splits.items()} ==
          {s: v.num_examples for s, v in beam.info.splits.items()})
    check("same metadata (counts, splits, inputs, filters)",
          {k: v for k, v in mg.items() if k != "builder"} == {k: v for k, v in mb.items() if k != "builder"})
    rg = open(os.path.join(os.fspath(gen.data_dir), T.REJECTS), "rb").read()
    rb = open(os.path.join(os.fspath(beam.data_dir), T.REJECTS), "rb").read()
    check("same rejects.jsonl", rg == rb)
    fs = features.get(mg["features"]["name"])
    decoded = {}
    for split in gen.info.splits:
        raw_g, dec_g = read_split(gen, split)
        raw_b, dec_b = read_split(beam, split)
        check(f"{split}: same records in the same order", raw_g == raw_b)
        check(f"{split}: same records as a multiset", sorted(raw_g) == sorted(raw_b))
        decoded[split] = R.decode(dec_g, fs)

    if args.hdf5:
        from kifunet.cli import main as cli_main
        from kifunet.data_prep.datasets.reader import Reader

        out = os.path.join(tmp, "hdf5")
        argv_b = [manual, "--out", out, "--features", mg["features"]["name"], "--no-progress",
                  "--workers", str(max(args.workers, 0))]
        preset = cfg if isinstance(cfg, str) else None
        if preset:
            c = next(c for c in T.GoMoves.BUILDER_CONFIGS if c.name == cfg)
            argv_b += ["--preset", c.preset]
        else:
            if cfg.preset:
                argv_b += ["--preset", cfg.preset]
            for s in args.split or ():
                argv_b += ["--split", s]
            if args.val_fraction:
                argv_b += ["--val-fraction", str(args.val_fraction)]
        t0, c0 = time.time(), _cpu()
        assert cli_main(["build", *argv_b]) == 0
        t_h5, c_h5 = time.time() - t0, _cpu() - c0
        man = json.load(open(os.path.join(out, "manifest.json")))
        res["hdf5"] = {"seconds": t_h5, "positions_per_s": positions / t_h5, "cpu_seconds": c_h5,
                       "positions_per_cpu_s": positions / c_h5, "workers": args.workers,
                       "bytes": _dir_bytes(out, ".h5"), "bytes_per_position": _dir_bytes(out, "shard-") / positions}
        per_cpu = f" ({positions / c_h5:,.0f} per CPU-second)" if args.workers == 0 else ""
        print(f"kifunet build (HDF5): {t_h5:.1f} s, {positions / t_h5:,.0f} positions/s{per_cpu}, "
              f"{res['hdf5']['bytes_per_position']:.0f} shard bytes/position")
        check("HDF5: same counts", man["counts"] == mg["counts"])
        check("HDF5: same non-empty splits",
              [s for s, v in man["splits"].items() if v["positions"]] == list(gen.info.splits))
        for split in gen.info.splits:
            r = Reader(out, split)
            want = r.batch(np.arange(len(r)))
            wg = r.games()["game_id"][want["game_index"]].astype(str)
            got = decoded[split]
            gg = got["game"].astype(str)
            ow, og = np.lexsort((want["move_number"], wg)), np.lexsort((got["move_number"], gg))
            same = len(ow) == len(og) and np.array_equal(wg[ow], gg[og]) and np.array_equal(
                want["planes"][ow], got["planes"][og]) and all(
                np.array_equal(want[k][ow], got[k][og]) for k in R.COLUMNS)
            check(f"HDF5 {split}: same {len(ow)} positions (full planes and columns)", same)
    res["load_after"] = os.getloadavg()
    res["ok"] = ok
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2, default=str)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
