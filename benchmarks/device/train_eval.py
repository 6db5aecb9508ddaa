"""Train one config for a fixed number of minutes, then evaluate it on the 2015 test split.

    python benchmarks/device/train_eval.py --config maddison12 --minutes 5 --out OUT          # GPU machine
    python benchmarks/device/train_eval.py --config maddison12 --minutes 5 --out OUT --resume # 5 minutes more
    JAX_PLATFORMS=cpu python benchmarks/device/train_eval.py --config maddison12 --minutes 0.1 --out OUT \\
        --quick --no-install                                                                  # CPU smoke run

1. install (as ``measure.py``; skipped when the packages already import, or with ``--no-install``);
2. ``kifunet build`` with all cores of the KGS archives (``.device/kgs``, ``--kgs``, ``../shared/data/kgs``) on the
   GoNN protocol (test: 2015) with the config's feature set (reused when ``--work`` already holds it);
   ``--quick``: the sample corpus (test: its 2015 games);
3. ``kifunet train --config train/configs/NAME.py`` with ``--config.time_limit_s`` = the minutes (``--resume``:
   the minutes are added to the training time the run's last checkpoint holds; otherwise the work directory's
   run is started afresh), compute in ``--dtype`` (bf16 by default), the final in-training evaluation cut to
   10,000 positions (the real one is next); ``--quick``: the family's ``*_tiny`` model and ``tiny.py``'s sizes;
   ``--debug-nans`` trains under ``JAX_DEBUG_NANS`` (``train.nan_report``: the lines that made the first NaN);
4. ``kifunet eval`` of the run on the test split (all of it, or ``--eval-limit`` rows; ``--ensemble`` adds the
   8-symmetry pass).

Writes ``OUT/train_eval.json`` (the commands, wall times, the run's positions/s and data wait, the evaluation's
headline numbers), ``OUT/train_eval_eval.json`` (the whole ``kifunet eval`` result) and ``OUT/train_eval.log``.
The run and datasets stay in ``--work`` (default ``$TMPDIR/kifunet_device``), so ``--resume`` continues on the
same machine.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--config", required=True, help="a name in train/configs (maddison12, gonn5, ...) or a file")
    ap.add_argument("--minutes", type=float, required=True, help="training time (compilation included)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--resume", action="store_true", help="continue the run in --work for --minutes more")
    ap.add_argument("--work", default=common.DEFAULT_WORK)
    ap.add_argument("--quick", action="store_true", help="tiny model, the sample corpus (CPU tests)")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--kgs", default=None)
    ap.add_argument("--train-archives", nargs="*", default=None, metavar="PREFIX")
    ap.add_argument("--data", default=None, help="a built dataset (with the config's features) instead of building")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="build workers (default: all cores)")
    ap.add_argument("--dtype", default="bfloat16", help="compute dtype (--config.model.dtype)")
    ap.add_argument("--batch", type=int, default=None, help="global batch (default: the config's)")
    ap.add_argument("--input-workers", type=int, default=None,
                    help="grain workers of the run (default: min(8, cores-2) on a full run; the config's with --quick)")
    ap.add_argument("--eval-limit", type=int, default=None, help="evaluate the first N test rows (default: all)")
    ap.add_argument("--ensemble", action="store_true")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="more --config.KEY=VALUE overrides")
    ap.add_argument("--debug-nans", action="store_true",
                    help="train under JAX_DEBUG_NANS: a NaN stops the run, and train.nan_report names the line")
    return ap.parse_args(argv)


def last_checkpoint_meta(workdir: str) -> dict:
    steps = [int(os.path.basename(p)) for p in glob.glob(os.path.join(workdir, "checkpoints", "*"))
             if os.path.basename(p).isdigit()]
    if not steps:
        return {}
    return common.read_json(os.path.join(workdir, "checkpoints", str(max(steps)), "meta", "metadata")) or {}


def main(argv=None) -> int:
    a = parse_args(argv)
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    log = common.Log(os.path.join(a.out, "train_eval.log"))
    res_path = os.path.join(a.out, "train_eval.json")
    res = common.Record(res_path, "benchmarks/device/train_eval.py", argv, a.quick)
    save = res.save

    try:
        # 1. install
        res["install"] = common.install_step(log, skip=a.no_install)
        save()
        # 2. dataset
        name = a.config
        cfg_path = common.config_path(name)
        name = os.path.splitext(os.path.basename(cfg_path))[0]
        info = common.config_info(cfg_path)
        features = info["expect_features"] or "maddison"
        if a.data:
            data = os.path.abspath(a.data)
            res["build"] = {"status": "given", "dataset": data}
        else:
            b = common.build(log, work=a.work, features=features, quick=a.quick, kgs=a.kgs, workers=a.workers,
                             timeout=900, train_archives=a.train_archives)
            res["build"] = b
            save()
            if b["status"] != "ok":
                log(f"build {b['status']}: stopping")
                return 1
            data = b["dataset"]
        # 3. train
        workdir = os.path.join(a.work, f"train_eval_{name}")
        before = {}
        if a.resume:
            before = last_checkpoint_meta(workdir)
            log(f"resuming {workdir}: {before.get('positions', 0):,} positions, "
                f"{before.get('train_seconds', 0.0):.0f} s trained so far" if before else
                f"--resume: no checkpoint in {workdir}: starting a new run")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        limit = float(before.get("train_seconds", 0.0)) + 60.0 * a.minutes
        cmd = [common.PY, "-m", "kifunet.cli", "train", "--config", cfg_path, "--workdir", workdir,
               f"--config.dataset={data}", f"--config.time_limit_s={limit}", f"--config.model.dtype={a.dtype}",
               "--config.final_eval_positions=10000"]
        if a.quick:
            cmd += [f"--config.model.name={common.tiny_model(info['model'])}", *common.QUICK_TRAIN]
        workers = a.input_workers
        if workers is None and not a.quick:
            workers = max(1, min(8, (os.cpu_count() or 1) - 2))
        if workers is not None:
            cmd.append(f"--config.input.workers={workers}")
        if a.batch:
            cmd.append(f"--config.batch_size={a.batch}")
        cmd += [f"--config.{kv}" for kv in a.set]
        r = common.run(cmd, log, timeout=60.0 * a.minutes + 300, env=common.DEBUG_NANS_ENV if a.debug_nans else None)
        cfg = common.read_json(os.path.join(workdir, "config.json")) or {}
        after = last_checkpoint_meta(workdir)
        res["train"] = {"config": name, "model": cfg.get("model", {}).get("name"), "dtype": a.dtype,
                        "features": features, "batch": cfg.get("batch_size"), "dataset": data, "workdir": workdir,
                        "command": cmd, "rc": r["rc"], "wall_s": r["seconds"], "timed_out": r["timed_out"],
                        "debug_nans": a.debug_nans, "nan_report": common.nan_report(r["tail"]),
                        "resumed_from_positions": before.get("positions"), "positions": after.get("positions"),
                        "train_seconds": after.get("train_seconds"),
                        **common.summarize_train_metrics(workdir, int(cfg.get("batch_size") or 1))}
        save()
        if r["rc"] != 0 or not after:
            log(f"training failed (rc {r['rc']}): no evaluation")
            return 1
        # 4. evaluate the test split
        ev_out = os.path.join(a.out, "train_eval_eval.json")
        cmd = [common.PY, "-m", "kifunet.cli", "eval", "--checkpoint", workdir, "--data", data, "--split", "test",
               "--batch-size", "1024", "--out", ev_out, "--no-progress"]
        if a.eval_limit:
            cmd += ["--limit", str(a.eval_limit)]
        if a.ensemble:
            cmd.append("--ensemble")
        r = common.run(cmd, log, timeout=1800)
        ev = common.read_json(ev_out) or {}
        res["eval"] = {"command": cmd, "rc": r["rc"], "wall_s": r["seconds"], "result_file": os.path.basename(ev_out),
                       "positions": (ev.get("dataset") or {}).get("evaluated"),
                       "split_rows": (ev.get("dataset") or {}).get("rows"),
                       "positions_per_s": ev.get("positions_per_second"), "seconds": ev.get("seconds")}
        for mode, block in (ev.get("results") or {}).items():
            res["eval"][mode] = {"top1": block["accuracy"]["1"], "top4": block["accuracy"]["4"],
                                 "top10": block["accuracy"].get("10"),
                                 "cross_entropy_nats": block["cross_entropy_nats"], "perplexity": block["perplexity"]}
        save()
        return 0 if r["rc"] == 0 and ev else 1
    finally:
        res.finish()
        tr, ev = res.get("train", {}), res.get("eval", {})
        if tr:
            log(f"train {tr.get('config')} ({tr.get('model')}, {tr.get('dtype')}, batch {tr.get('batch')}): "
                f"{int(tr.get('positions') or 0):,} positions in {tr.get('train_seconds') or 0:.0f} s, "
                f"{tr.get('positions_per_s_timed') or 0:,.0f} positions/s, data wait "
                f"{100 * (tr.get('data_wait_fraction') or 0):.2f}%")
        if ev.get("single"):
            log(f"eval {ev.get('positions') or 0:,} test positions: top-1 {100 * ev['single']['top1']:.2f}%, "
                f"{ev['single']['cross_entropy_nats']:.4f} nats ({ev.get('positions_per_s') or 0:,.0f} positions/s)")
        log(f"wrote {res_path} ({time.time() - t0:.0f} s)")
        log.close()


if __name__ == "__main__":
    raise SystemExit(main())
