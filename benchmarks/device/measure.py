"""Every speed figure of one machine in one run of under ~9 minutes: ``OUT/device.json`` and ``OUT/device.log``.

    python benchmarks/device/measure.py --out OUT                 # on a GPU machine (install, build, measure)
    JAX_PLATFORMS=cpu python benchmarks/device/measure.py --out OUT --quick --no-install   # the CPU smoke run

In order, each in a child process under a timeout taken from a global time budget (``--budget-s``, 530 s by
default; what does not fit is skipped and recorded under ``skipped``), the JSON rewritten after every step:

1. **install** (unless ``--no-install``): ``pip install --no-index --no-deps`` of ``.device/wheels/*.whl`` (made
   by ``fetch_wheels.sh``), then ``pip install --no-deps --no-build-isolation -e .``;
2. **build**: ``kifunet build`` with all cores of the KGS archives in ``.device/kgs`` (else ``--kgs``, else
   ``../shared/data/kgs``) on the GoNN protocol (train 2000-2014 and 2016-2017, test 2015), ``maddison``
   features; ``--quick``: the sample corpus (test: its 2015 games);
3. **peak**: the bf16 matrix-product rate measured now (``jnp.dot``, sizes ``--matmul``, best of several), the
   denominator of every MFU figure, with the datasheet's dense bf16 peak of the device beside it;
4. **train_step**: each config's training step (``--configs``) in bf16 at each batch of ``--batches`` (the
   first batch for every config before the next batch for any), and in f32 for ``--f32-configs``, or the
   ``--items`` given (``gonn5@1024``): compile seconds apart, the compiled step's ops (on a GPU: its kernels;
   ``--hlo CONFIG`` keeps the HLO text, gzipped, in ``OUT/hlo/``), step seconds, positions/s, achieved TFLOP/s
   (analytical FLOPs, ``kifunet.models.train_flops``), MFU = achieved / measured bf16 peak (``mfu``) and /
   datasheet peak (``mfu_datasheet``); both ``null`` on a CPU. ``--quick``: the family's ``*_tiny`` model for
   each config, small batches;
5. **loader**: device-ready positions/s of the training pipeline (``bench_loader.time_pipeline``) for worker
   counts up to the machine's cores;
6. **real_run**: ``kifunet train`` of ``--real-config`` (``maddison12`` in bf16; ``--quick``: ``tiny``) for
   ``--real-seconds``, and its ``metrics_train.jsonl`` read back: positions/s and the data-wait fraction
   (``--real-set KEY=VALUE`` adds config overrides; ``--real-debug-nans`` runs it under ``JAX_DEBUG_NANS``, and
   ``real_run.nan_report`` names the repository's lines where the first NaN was made);
7. **eval_forward**: ``benchmarks/bench_eval_forward.py`` on that run's checkpoint (forward positions/s);
8. **eval**: ``kifunet eval`` of that run on the first ``--eval-limit`` rows of the 2015 test split
   (end-to-end evaluator positions/s: reading, forward, metrics).

Scratch (datasets, runs, section files) goes to ``--work`` (default ``$TMPDIR/kifunet_device``), never under
OUT, which receives only the two files and the real run's ``metrics_train.jsonl`` (as
``real_run_metrics_train.jsonl``: its losses and gradient / parameter norms, kept when the run fails too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

CONFIGS = ["maddison12", "alphago13_192", "cazenave10", "gonn5", "gonn12", "agz20", "mao", "garb10"]

# seconds held back for the sections after train_step: loader, real run (+ its seconds), eval forward, eval
RESERVE_LOADER, RESERVE_REAL_EXTRA, RESERVE_EVAL_FWD, RESERVE_EVAL = 45, 45, 35, 40
NON_FINITE_RC = 3  # kifunet train's exit status for a non-finite loss (train/train.py): no retry without workers


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True, help="folder for device.json and device.log")
    ap.add_argument("--work", default=common.DEFAULT_WORK, help="scratch folder (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="tiny models, the sample corpus, a few steps (CPU tests)")
    ap.add_argument("--no-install", action="store_true", help="skip the pip install step")
    ap.add_argument("--budget-s", type=float, default=None, help="whole-run time budget (default 530; quick 900)")
    ap.add_argument("--kgs", default=None, help="folder of KGS-*.tar.gz (default .device/kgs, ../shared/data/kgs)")
    ap.add_argument("--train-archives", nargs="*", default=None, metavar="PREFIX",
                    help="only the training archives whose names start with these (default: all found)")
    ap.add_argument("--data", default=None, help="a built maddison dataset to use instead of building one")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="build workers (default: all cores)")
    ap.add_argument("--configs", nargs="*", default=CONFIGS)
    ap.add_argument("--batches", type=int, nargs="*", default=None,
                    help="train-step batch sizes in order of priority (default 256 1024 512 2048; quick 16)")
    ap.add_argument("--f32-configs", nargs="*", default=["maddison12"])
    ap.add_argument("--items", nargs="*", default=None, metavar="CONFIG@BATCH[@DTYPE]",
                    help="the train-step items, in this order, instead of --configs x --batches and --f32-configs "
                         "(dtype bfloat16 unless given)")
    ap.add_argument("--hlo", nargs="*", default=[], metavar="CONFIG",
                    help="also write these configs' compiled training steps (optimised HLO text, gzipped) to OUT/hlo/")
    ap.add_argument("--matmul", type=int, nargs="*", default=None, help="bf16 matmul sizes (default 4096 8192 16384)")
    ap.add_argument("--loader-workers", type=int, nargs="*", default=None,
                    help="grain worker counts (default 0 1 2 4 8 and cores-1)")
    ap.add_argument("--loader-batch", type=int, default=None, help="default 512 (quick 32)")
    ap.add_argument("--real-config", default=None, help="config of the real run (default maddison12; quick tiny)")
    ap.add_argument("--real-seconds", type=float, default=None, help="its time limit (default 60)")
    ap.add_argument("--real-workers", type=int, default=None, help="its input workers (default min(8, cores-2))")
    ap.add_argument("--real-dtype", default="bfloat16")
    ap.add_argument("--real-set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="more --config.KEY=VALUE overrides of the real run")
    ap.add_argument("--real-debug-nans", action="store_true",
                    help="run it under JAX_DEBUG_NANS: a NaN stops it, and real_run.nan_report names the line")
    ap.add_argument("--eval-limit", type=int, default=None, help="rows of the test split for `kifunet eval` "
                    "(default 100000; quick: all)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["build", "peak", "train_step", "loader", "real_run",
                                                              "eval_forward", "eval"])
    return ap.parse_args(argv)


class Runner:
    def __init__(self, a):
        self.a = a
        self.t0 = time.time()
        self.budget = a.budget_s or (900.0 if a.quick else 530.0)
        self.deadline = self.t0 + self.budget
        os.makedirs(a.out, exist_ok=True)
        os.makedirs(a.work, exist_ok=True)
        self.parts = os.path.join(a.work, "parts")
        shutil.rmtree(self.parts, ignore_errors=True)
        os.makedirs(self.parts)
        self.log = common.Log(os.path.join(a.out, "device.log"))
        self.json_path = os.path.join(a.out, "device.json")
        self.res = common.Record(self.json_path, "benchmarks/device/measure.py", None, a.quick, budget_s=self.budget,
                                 sections={}, skipped=[])

    # --- bookkeeping
    def left(self) -> float:
        return self.deadline - time.time()

    def save(self) -> None:
        self.res.save()

    def section(self, name: str, status: str, seconds: float, **extra) -> None:
        self.res["sections"][name] = {"status": status, "seconds": round(seconds, 2), **extra}
        self.log(f"== {name}: {status} ({seconds:.1f} s; {self.left():.0f} s of the budget left)")
        self.save()

    def skip(self, what: str, why: str) -> None:
        self.res["skipped"].append({"what": what, "why": why})
        self.log(f"skipped {what}: {why}")

    def child(self, section: str, spec: dict, timeout: float, tag: str = "") -> tuple[list[dict], dict]:
        """Run one section of sections.py in a child process; its JSON-line records and run status."""
        name = section + tag
        path = os.path.join(self.parts, f"{name}.jsonl")
        spec = {**spec, "result": path}
        spec_path = os.path.join(self.parts, f"{name}_spec.json")
        common.write_json(spec_path, spec)
        r = common.run([common.PY, os.path.join(common.HERE, "sections.py"), section, spec_path], self.log,
                       timeout=timeout)
        return common.read_jsonl(path), r

    # --- steps
    def install(self) -> None:
        if self.a.no_install:
            self.skip("install", "--no-install")
            return
        r = common.install(self.log, timeout=min(180.0, self.left()))
        self.res["install"] = r
        self.section("install", r["status"], r["seconds"])

    def build(self) -> str | None:
        if self.a.data:
            self.res["build"] = {"status": "given", "dataset": os.path.abspath(self.a.data)}
            self.skip("build", f"--data {self.a.data}")
            return os.path.abspath(self.a.data)
        if "build" in self.a.skip:
            self.skip("build", "--skip build")
            return None
        timeout = min(300.0, max(0.4 * self.left(), self.left() - 300))  # the rest needs the dataset
        r = common.build(self.log, work=self.a.work, features="maddison", quick=self.a.quick, kgs=self.a.kgs,
                         workers=self.a.workers, timeout=timeout, train_archives=self.a.train_archives)
        self.res["build"] = r
        self.section("build", r["status"], r["seconds"])
        return r["dataset"] if r["status"] == "ok" else None

    def peak(self) -> None:
        if "peak" in self.a.skip:
            self.skip("peak", "--skip peak")
            return
        q = self.a.quick
        spec = {"bf16_sizes": self.a.matmul or ([256] if q else [4096, 8192, 16384]),
                "f32_sizes": [256] if q else [8192], "reps": 3 if q else 5, "calls": 3 if q else 10,
                "deadline": time.time() + min(60.0, self.left())}
        t0 = time.time()
        recs, r = self.child("peak", spec, timeout=min(90.0, self.left()))
        jaxi = next((x for x in recs if x["kind"] == "jax"), {})
        self.res["jax"] = {k: v for k, v in jaxi.items() if k != "kind"}
        mm = [x for x in recs if x["kind"] == "matmul"]
        best = {}
        for x in mm:
            if x["dtype"] not in best or x["tflops"] > best[x["dtype"]]["tflops"]:
                best[x["dtype"]] = x
        sheet = common.datasheet_peak(jaxi.get("device_kind", ""), jaxi.get("platform", ""))
        bf16 = best.get("bfloat16", {}).get("tflops")
        self.res["peak"] = {
            "bf16_tflops": bf16, "bf16_n": best.get("bfloat16", {}).get("n"),
            "f32_default_precision_tflops": best.get("float32", {}).get("tflops"),
            "datasheet": sheet,
            "measured_over_datasheet": bf16 / sheet["bf16_tflops"] if bf16 and sheet["bf16_tflops"] else None,
            "matmuls": [{k: v for k, v in x.items() if k != "kind"} for x in mm],
            "errors": [x for x in recs if x["kind"] in ("error", "skipped")]}
        self.section("peak", "ok" if bf16 else _status(r), time.time() - t0)

    def train_steps(self) -> None:
        if "train_step" in self.a.skip:
            self.skip("train_step", "--skip train_step")
            return
        q = self.a.quick
        items = train_step_items(self.a)
        order = list(dict.fromkeys(x["config"] for x in items))
        reserve = self.reserve_after_train_step()
        t0 = time.time()
        rows, failed, not_run, pending = [], [], [], list(items)
        attempt = 0
        while pending:
            budget = self.left() - reserve
            if budget < 10:
                break
            attempt += 1
            spec = {"items": pending, "quick": q, "deadline": time.time() + budget - 5,
                    "first_guess_s": 3.0 if q else 25.0, "round_s": 0.05 if q else 1.0, "rounds": 2 if q else 3,
                    "max_steps": 5 if q else 500, "hlo_configs": self.a.hlo, "hlo_dir": os.path.join(self.a.out, "hlo")}
            recs, r = self.child("train_step", spec, timeout=budget, tag=f"_{attempt}")
            if not recs:  # nothing measured and nothing started: do not try again
                failed.append({"config": None, "dtype": None, "batch": None,
                               "error": f"the section process ended with rc {r['rc']} before any item"})
                break
            started = None
            for x in recs:
                kind = x.pop("kind")
                item = {k: x[k] for k in ("config", "dtype", "batch")} if "config" in x else None
                if kind == "start":
                    started = item
                    continue
                if kind == "row":
                    rows.append(x)
                elif kind == "failed":
                    failed.append(x)
                elif kind == "not_run":
                    not_run.append(x)
                if _same(started, item) if started is not None else False:
                    started = None
                pending = [p for p in pending if not _same(p, item)]
            if r["rc"] == 0:
                break
            if started is not None:  # the process died (or ran out of time) in this item
                why = "timed out" if r["timed_out"] else f"process died (rc {r['rc']})"
                failed.append({**started, "error": why})
                self.log(f"train_step: {started} {why}")
                pending = [p for p in pending if not _same(p, started)]
            if r["timed_out"]:
                break
        for p in pending:
            not_run.append({**p, "why": "time budget"})
        add_mfu(rows, self.res.get("peak", {}), self.res.get("jax", {}).get("platform"))
        rows.sort(key=lambda x: (order.index(x["config"]) if x["config"] in order else 99, x["dtype"], x["batch"]))
        self.res["train_step"] = {"rows": rows, "failed": failed, "not_run": not_run,
                                  "mfu_denominator": "peak.bf16_tflops (bf16 jnp.dot measured in this run)",
                                  "mfu_datasheet_denominator": "peak.datasheet.bf16_tflops",
                                  "flops": "analytical: kifunet.models.train_flops (3 x forward, 2 per MAC)"}
        for x in not_run:
            self.skip(f"train_step {x['config']} {x['dtype']} batch {x['batch']}", x.get("why", "?"))
        status = "ok" if rows else ("failed" if failed else "skipped")
        self.section("train_step", status, time.time() - t0, measured=len(rows),
                     failed=len(failed), not_run=len(not_run))
        self.log(_table(rows))

    def reserve_after_train_step(self) -> float:
        s = 0.0
        if "loader" not in self.a.skip:
            s += RESERVE_LOADER
        if "real_run" not in self.a.skip:
            s += self.real_seconds() + RESERVE_REAL_EXTRA
        if "eval_forward" not in self.a.skip:
            s += RESERVE_EVAL_FWD
        if "eval" not in self.a.skip:
            s += RESERVE_EVAL
        return s if not self.a.quick else min(s, 60.0)

    def real_seconds(self) -> float:
        return self.a.real_seconds if self.a.real_seconds is not None else (0.0 if self.a.quick else 60.0)

    def loader(self, data: str | None) -> None:
        if "loader" in self.a.skip:
            self.skip("loader", "--skip loader")
            return
        if not data:
            self.skip("loader", "no dataset")
            return
        q = self.a.quick
        cores = os.cpu_count() or 1
        workers = self.a.loader_workers
        if workers is None:
            # in order of interest (what is left when time runs out): in-process, the real run's count, all cores
            workers = [0, 1] if q else list(dict.fromkeys(
                w for w in (0, self.real_workers(), cores - 1, 4, 2, 1) if 0 <= w <= max(cores - 1, 0)))
        budget = min(RESERVE_LOADER + (30 if q else 0), self.left() - (self.reserve_after_train_step() - RESERVE_LOADER))
        if budget < 10:
            self.skip("loader", "time budget")
            return
        spec = {"dataset": data, "batch": self.a.loader_batch or (32 if q else 512), "workers": workers,
                "warmup": 5 if q else 20, "batches": 20 if q else 200, "deadline": time.time() + budget - 3,
                "min_s": 2 if q else 6}
        t0 = time.time()
        recs, r = self.child("loader", spec, timeout=budget + 15)
        rows = sorted(({k: v for k, v in x.items() if k != "kind"} for x in recs if x["kind"] == "row"),
                      key=lambda x: x["workers"])
        best = max(rows, key=lambda x: x["positions_per_s"]) if rows else None
        self.res["loader"] = {"cores": cores, "dataset": data, "batch": spec["batch"], "rows": rows,
                              "best_positions_per_s": best["positions_per_s"] if best else None,
                              "best_workers": best["workers"] if best else None,
                              "not_run": [x for x in recs if x["kind"] in ("not_run", "failed")]}
        for x in self.res["loader"]["not_run"]:
            self.skip(f"loader workers {x['workers']}", x.get("why") or x.get("error", "?"))
        self.section("loader", "ok" if rows else _status(r), time.time() - t0)

    def real_run(self, data: str | None) -> str | None:
        if "real_run" in self.a.skip:
            self.skip("real_run", "--skip real_run")
            return None
        if not data:
            self.skip("real_run", "no dataset")
            return None
        q = self.a.quick
        name = self.a.real_config or ("tiny" if q else "maddison12")
        cfg_path = os.path.join(common.REPO, "train", "configs", f"{name}.py")
        workdir = os.path.join(self.a.work, f"run_{name}")
        shutil.rmtree(workdir, ignore_errors=True)
        workers = self.real_workers()
        secs = self.real_seconds()
        r, cmd, summary, batch = self._train_run(name, cfg_path, workdir, data, workers, secs)
        nans = common.nan_report(r.get("tail", []))
        if r["rc"] not in (0, None, NON_FINITE_RC) and not nans and not r["timed_out"] and workers > 0 and \
                self.left() > secs + 60 + RESERVE_EVAL_FWD + RESERVE_EVAL:
            # the input workers are the likeliest culprit on a new machine: record the failure, then without them
            self.res["real_run_failed"] = {"input_workers": workers, "rc": r["rc"], "command": cmd}
            self.log(f"real_run failed with {workers} input workers (rc {r['rc']}): again with 0")
            workers = 0
            shutil.rmtree(workdir, ignore_errors=True)
            r, cmd, summary, batch = self._train_run(name, cfg_path, workdir, data, workers, secs)
            nans = common.nan_report(r.get("tail", []))
        if r["rc"] is None:
            self.skip("real_run", "time budget")
            return None
        metrics = os.path.join(workdir, "metrics_train.jsonl")
        if os.path.isfile(metrics):  # the per-interval losses and gradient / parameter norms, NaN runs included
            shutil.copyfile(metrics, os.path.join(self.a.out, "real_run_metrics_train.jsonl"))
        self.res["real_run"] = {"config": name, "dtype": self.a.real_dtype, "batch": batch, "input_workers": workers,
                                "time_limit_s": secs if not q else None, "command": cmd, "rc": r["rc"],
                                "wall_s": r["seconds"], "debug_nans": self.a.real_debug_nans, "nan_report": nans,
                                **summary}
        ok = r["rc"] == 0 and os.path.isdir(os.path.join(workdir, "checkpoints"))
        self.section("real_run", "ok" if ok else _status(r), r["seconds"])
        return workdir if ok else None

    def real_workers(self) -> int:
        if self.a.real_workers is not None:
            return self.a.real_workers
        return 0 if self.a.quick else max(1, min(8, (os.cpu_count() or 1) - 2))

    def _train_run(self, name, cfg_path, workdir, data, workers, secs):
        q = self.a.quick
        cmd = [common.PY, "-m", "kifunet.cli", "train", "--config", cfg_path, "--workdir", workdir,
               f"--config.dataset={data}", f"--config.model.dtype={self.a.real_dtype}",
               f"--config.input.workers={workers}"]
        if not q:
            cmd += [f"--config.time_limit_s={secs}", "--config.log_every_steps=100", "--config.eval_every_positions=0",
                    "--config.final_eval_positions=10000", "--config.checkpoint_every_positions=1000000000000"]
        cmd += [f"--config.{kv}" for kv in self.a.real_set]
        timeout = min(secs + 90 if not q else 240, self.left() - (RESERVE_EVAL_FWD + RESERVE_EVAL) * (0.2 if q else 1))
        if timeout < secs + 20:
            return {"rc": None, "timed_out": False, "seconds": 0.0}, cmd, {}, 0
        r = common.run(cmd, self.log, timeout=timeout, env=common.DEBUG_NANS_ENV if self.a.real_debug_nans else None)
        cfg = common.read_json(os.path.join(workdir, "config.json")) or {}
        batch = int(cfg.get("batch_size") or 0)
        summary = common.summarize_train_metrics(workdir, batch) if batch else {}
        return r, cmd, summary, batch

    def eval_forward(self, run_dir: str | None, data: str | None) -> None:
        if "eval_forward" in self.a.skip:
            self.skip("eval_forward", "--skip eval_forward")
            return
        if not run_dir or not data:
            self.skip("eval_forward", "no trained run")
            return
        q = self.a.quick
        cpu = self.res.get("jax", {}).get("platform") == "cpu"
        out = os.path.join(self.parts, "eval_forward.json")
        batch, iters = (64, 3) if q else (1024, 30)
        cmd = [common.PY, os.path.join(common.REPO, "benchmarks", "bench_eval_forward.py"), "--checkpoint", run_dir,
               "--data", data, "--batch", str(batch), "--iters", str(iters), "--out", out,
               "--devices", str((os.cpu_count() or 1) if cpu else 1)]
        timeout = min(60.0, self.left() - (RESERVE_EVAL if not q else 0))
        if timeout < 10:
            self.skip("eval_forward", "time budget")
            return
        r = common.run(cmd, self.log, timeout=timeout)
        res = common.read_json(out) or {}
        self.res["eval_forward"] = {**res, "model": self.res.get("real_run", {}).get("config"), "rc": r["rc"]}
        self.section("eval_forward", "ok" if res.get("positions_per_s") else _status(r), r["seconds"])

    def eval(self, run_dir: str | None, data: str | None) -> None:
        if "eval" in self.a.skip:
            self.skip("eval", "--skip eval")
            return
        if not run_dir or not data:
            self.skip("eval", "no trained run")
            return
        out = os.path.join(self.parts, "eval.json")
        limit = self.a.eval_limit if self.a.eval_limit is not None else (None if self.a.quick else 100_000)
        cmd = [common.PY, "-m", "kifunet.cli", "eval", "--checkpoint", run_dir, "--data", data, "--split", "test",
               "--batch-size", "1024", "--out", out, "--no-breakdowns", "--no-progress"]
        if limit:
            cmd += ["--limit", str(limit)]
        timeout = min(90.0, self.left())
        if timeout < 10:
            self.skip("eval", "time budget")
            return
        r = common.run(cmd, self.log, timeout=timeout)
        res = common.read_json(out) or {}
        single = (res.get("results") or {}).get("single", {})
        self.res["eval"] = {"rc": r["rc"], "wall_s": r["seconds"], "positions": (res.get("dataset") or {}).get("evaluated"),
                            "seconds": res.get("seconds"), "positions_per_s": res.get("positions_per_second"),
                            "devices": res.get("devices"), "batch": 1024,
                            "top1": (single.get("accuracy") or {}).get("1"),
                            "cross_entropy_nats": single.get("cross_entropy_nats")}
        self.section("eval", "ok" if res else _status(r), r["seconds"])

    def main(self) -> int:
        a = self.a
        self.log(f"measure.py: out {os.path.abspath(a.out)}, work {os.path.abspath(a.work)}, budget {self.budget:.0f} s, "
                 f"{'quick' if a.quick else 'full'}; machine: {self.res['machine']}")
        self.save()
        try:
            self.install()
            data = self.build()
            self.peak()
            self.train_steps()
            self.loader(data)
            run_dir = self.real_run(data)
            self.eval_forward(run_dir, data)
            self.eval(run_dir, data)
        finally:
            self.res.finish()
            self.log(summary(self.res))
            self.log(f"wrote {self.json_path} ({time.time() - self.t0:.0f} s)")
            self.log.close()
        return 0


def train_step_items(a) -> list[dict]:
    """The train-step items of the parsed arguments ``a``, in order: ``--items``, else the first of ``--batches``
    for every config (and the f32 configs) before the next batch for any."""
    if a.items is not None:
        out = []
        for text in a.items:
            parts = text.split("@")
            if len(parts) not in (2, 3) or not parts[1].isdigit():
                raise SystemExit(f"measure.py: --items {text!r}: expected CONFIG@BATCH or CONFIG@BATCH@DTYPE")
            out.append({"config": parts[0], "dtype": parts[2] if len(parts) == 3 else "bfloat16",
                        "batch": int(parts[1])})
        return out
    batches = a.batches or ([16] if a.quick else [256, 1024, 512, 2048])
    items = [{"config": c, "dtype": "bfloat16", "batch": batches[0]} for c in a.configs]
    items += [{"config": c, "dtype": "float32", "batch": batches[0]} for c in a.f32_configs]
    for b in batches[1:]:
        items += [{"config": c, "dtype": "bfloat16", "batch": b} for c in a.configs]
    return items


def add_mfu(rows: list[dict], peak: dict, platform_name: str | None) -> None:
    """``mfu`` = achieved / the bf16 matmul peak measured in this run, ``mfu_datasheet`` = achieved / the
    datasheet's dense bf16 peak (and ``mfu_datasheet_tf32`` for f32 rows); ``None`` on a CPU or where the peak
    is unknown."""
    measured = peak.get("bf16_tflops") if platform_name not in (None, "cpu") else None
    sheet = (peak.get("datasheet") or {}).get("bf16_tflops")
    tf32 = (peak.get("datasheet") or {}).get("tf32_tflops")
    for x in rows:
        x["mfu"] = x["achieved_tflops"] / measured if measured else None
        x["mfu_datasheet"] = x["achieved_tflops"] / sheet if sheet else None
        if x["dtype"] == "float32":
            x["mfu_datasheet_tf32"] = x["achieved_tflops"] / tf32 if tf32 else None


def _same(a: dict, b: dict | None) -> bool:
    return b is not None and all(a[k] == b[k] for k in ("config", "dtype", "batch"))


def _status(r: dict) -> str:
    return "timeout" if r.get("timed_out") else ("failed" if r.get("rc") else "empty")


def _f(x, fmt="{:,.1f}"):
    return "-" if x is None else fmt.format(x)


def _table(rows: list[dict]) -> str:
    lines = ["| config | model | dtype | batch | compile s | step ms | positions/s | TFLOP/s | MFU | MFU (datasheet) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for x in rows:
        lines.append(f"| {x['config']} | {x['model']} | {x['dtype']} | {x['batch']} | {x['compile_s']:.1f} | "
                     f"{1000 * x['step_s']:.2f} | {x['positions_per_s']:,.0f} | {x['achieved_tflops']:.2f} | "
                     f"{_f(x.get('mfu'), '{:.1%}')} | {_f(x.get('mfu_datasheet'), '{:.1%}')} |")
    return "\n".join(lines)


def summary(res: dict) -> str:
    """A few lines of the headline numbers."""
    j, p = res.get("jax", {}), res.get("peak", {})
    out = [f"device: {j.get('device_kind')} x {j.get('devices')} ({j.get('platform')}), jax {j.get('jax')}; "
           f"{res['machine'].get('cpu_count')} cores"]
    if p:
        out.append(f"bf16 matmul peak {_f(p.get('bf16_tflops'), '{:.3g}')} TFLOP/s measured, datasheet "
                   f"{_f((p.get('datasheet') or {}).get('bf16_tflops'), '{:.1f}')}")
    b = res.get("build", {})
    if b.get("positions"):
        out.append(f"build: {b['positions']} positions in {b['seconds']:.1f} s with {b['workers']} workers")
    ts = res.get("train_step", {})
    if ts:
        out.append(f"train_step: {len(ts['rows'])} measured, {len(ts['failed'])} failed, {len(ts['not_run'])} not run")
    ld = res.get("loader", {})
    if ld.get("best_positions_per_s"):
        out.append(f"loader: {ld['best_positions_per_s']:,.0f} device-ready positions/s ({ld['best_workers']} workers)")
    rr = res.get("real_run", {})
    if rr.get("data_wait_fraction") is not None:
        out.append(f"real run {rr['config']}: {rr.get('positions_per_s_timed', 0):,.0f} positions/s, data wait "
                   f"{100 * rr['data_wait_fraction']:.2f}%")
    ef = res.get("eval_forward", {})
    if ef.get("positions_per_s"):
        out.append(f"eval forward: {ef['positions_per_s']:,.0f} positions/s (batch {ef.get('batch')})")
    ev = res.get("eval", {})
    if ev.get("positions_per_s"):
        out.append(f"kifunet eval: {ev['positions']:,} positions at {ev['positions_per_s']:,.0f}/s")
    out.append(f"skipped: {len(res.get('skipped', []))}; total {res.get('total_s', 0):.0f} s")
    return "\n".join(out)


def main(argv=None) -> int:
    return Runner(parse_args(argv)).main()


if __name__ == "__main__":
    raise SystemExit(main())
