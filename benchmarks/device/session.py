"""A device session's whole run in one command: the bf16 question, the train steps the last run left out, then a
GPU-trained net, each part skipped when its time is gone.

    python benchmarks/device/session.py --out OUT                      # GPU machine: about 9 minutes (--budget-s)
    python benchmarks/device/session.py --out OUT --parts train --budget-s 300   # a part again, on a warm machine
    JAX_PLATFORMS=cpu python benchmarks/device/session.py --out OUT --quick --no-install   # CPU smoke run

Parts, in this order (``--parts``), each a script of this folder in a child process under a timeout:

1. ``bf16``: ``bf16_runs.py`` (Maddison's CNN in bf16 and TF32 with the paper's recipe, in bf16 with clipping,
   and GoNN's 5-block ResNet in bf16; several seeds, logged every 10 steps), at most ``--bf16-s`` seconds;
   it builds the KGS datasets (``maddison``, then ``gonn`` beside the first runs) that the third part reuses;
2. ``steps``: ``measure.py --items`` (:data:`STEP_ITEMS`: ``agz20``, ``mao``, ``garb10`` at batch 256 and
   ``gonn5``, ``gonn12``, ``cazenave10`` at 1024, after the bf16 matmul peak) with each compiled step's op count
   (on a GPU: its kernels) and ``gonn5``'s optimised HLO kept, at most ``--steps-s`` seconds;
3. ``train``: ``train_eval.py --config gonn5`` for what is left less ``--eval-s``, evaluated on the whole 2015
   test split; in bfloat16, unless a ``gonn5`` bf16 run of the first part (of this call, or of an earlier call
   on this machine: its record is kept in ``--work``) ended on a non-finite loss (then float32: TF32 on NVIDIA
   GPUs; ``--train-dtype`` decides instead). ``--resume`` continues the run that an earlier call left in
   ``--work``.

Writes ``OUT/session.json`` (each part: command, exit status, seconds, or why it was skipped; the dtype chosen
and why) and ``OUT/session.log``; the parts write their own files beside them (``bf16_runs.*``,
``steps/device.json``, ``train/train_eval*.json``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

PARTS = ("bf16", "steps", "train")
#: the train steps the 2026-11-27 H200 run left out, at the batches this session measures them
STEP_ITEMS = ["agz20@256", "mao@256", "garb10@256", "gonn5@1024", "gonn12@1024", "cazenave10@1024"]
QUICK_STEP_ITEMS = ["gonn5@16", "mao@16"]
BF16_JSON = "bf16_runs.json"
MIN_TRAIN_S = 60  # less than this left for the third part's training: skipped (quick: 6)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=common.DEFAULT_WORK)
    ap.add_argument("--parts", nargs="*", default=list(PARTS), choices=PARTS)
    ap.add_argument("--budget-s", type=float, default=540.0, help="whole-session budget (default %(default)s)")
    ap.add_argument("--bf16-s", type=float, default=330.0, help="the first part's most (default %(default)s)")
    ap.add_argument("--steps-s", type=float, default=170.0, help="the second part's most (default %(default)s)")
    ap.add_argument("--train-s", type=float, default=None, help="the third part's most (default: what is left)")
    ap.add_argument("--eval-s", type=float, default=120.0,
                    help="seconds kept for the third part's evaluation and start (default %(default)s)")
    ap.add_argument("--resume", action="store_true", help="the third part continues the run in --work")
    ap.add_argument("--train-dtype", default="auto", choices=["auto", "bfloat16", "float32"],
                    help="the third part's dtype (auto: from the bf16 runs, this call's or an earlier one's)")
    ap.add_argument("--quick", action="store_true", help="tiny models, the sample corpus (CPU tests)")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--kgs", default=None)
    return ap.parse_args(argv)


def part_commands(a, left: float, train_dtype: str) -> dict:
    """Each part's command for ``left`` seconds of it."""
    here = common.HERE
    shared = ["--work", a.work, "--no-install"] + (["--quick"] if a.quick else []) + \
        (["--kgs", a.kgs] if a.kgs else [])
    items = QUICK_STEP_ITEMS if a.quick else STEP_ITEMS
    minutes = max(0.0, left - a.eval_s) / 60.0
    return {
        "bf16": [common.PY, os.path.join(here, "bf16_runs.py"), "--out", a.out, "--budget-s", f"{left:.0f}",
                 *shared],
        "steps": [common.PY, os.path.join(here, "measure.py"), "--out", os.path.join(a.out, "steps"),
                  "--budget-s", f"{left:.0f}", "--items", *items, "--hlo", "gonn5",
                  "--skip", "build", "loader", "real_run", "eval_forward", "eval", *shared],
        "train": [common.PY, os.path.join(here, "train_eval.py"), "--config", "gonn5", "--minutes", f"{minutes:.2f}",
                  "--dtype", train_dtype, "--out", os.path.join(a.out, "train"), *shared]
                 + (["--resume"] if a.resume else []),
    }


def choose_train_dtype(bf16_json: dict | None) -> tuple[str, str]:
    """(dtype, why) for the third part from the first part's record: float32 if a gonn5 bf16 run went non-finite."""
    runs = [r for r in (bf16_json or {}).get("runs", []) if r.get("arm") == "gonn5_bf16"]
    bad = [r for r in runs if r.get("non_finite")]
    if bad:
        return "float32", f"{len(bad)} of {len(runs)} gonn5 bf16 runs ended on a non-finite loss"
    if runs:
        return "bfloat16", f"none of {len(runs)} gonn5 bf16 runs ended on a non-finite loss"
    return "bfloat16", "no gonn5 bf16 run in this session: the shipped recipe's dtype"


def train_dtype(a) -> tuple[str, str]:
    """(dtype, why) of the third part: ``--train-dtype``, else :func:`choose_train_dtype` of this session's bf16
    record, else of the one an earlier call left in ``--work`` (a second call on a warm machine has a new OUT)."""
    if a.train_dtype != "auto":
        return a.train_dtype, "--train-dtype"
    for path, where in ((os.path.join(a.out, BF16_JSON), "this call"),
                        (os.path.join(a.work, BF16_JSON), "an earlier call on this machine")):
        rec = common.read_json(path)
        if rec is not None:
            dtype, why = choose_train_dtype(rec)
            return dtype, f"{why} ({where})"
    return choose_train_dtype(None)


def main(argv=None) -> int:
    a = parse_args(argv)
    a.out, a.work = os.path.abspath(a.out), os.path.abspath(a.work)
    t0 = time.time()
    deadline = t0 + a.budget_s
    os.makedirs(a.out, exist_ok=True)
    log = common.Log(os.path.join(a.out, "session.log"))
    res_path = os.path.join(a.out, "session.json")
    res = common.Record(res_path, "benchmarks/device/session.py", argv, a.quick, budget_s=a.budget_s, parts={})
    save = res.save

    try:
        res["install"] = common.install_step(log, skip=a.no_install, timeout=min(180.0, a.budget_s))
        save()
        caps = {"bf16": a.bf16_s, "steps": a.steps_s, "train": a.train_s or float("inf")}
        for part in PARTS:
            if part not in a.parts:
                res["parts"][part] = {"status": "skipped", "why": "not in --parts"}
                continue
            dtype, why = train_dtype(a)
            left = min(caps[part], deadline - time.time())
            need = a.eval_s + (6 if a.quick else MIN_TRAIN_S) if part == "train" else (10.0 if a.quick else 30.0)
            if left < need:
                res["parts"][part] = {"status": "skipped", "why": f"time budget ({left:.0f} s left, {need:.0f} needed)"}
                log(f"== {part}: skipped ({left:.0f} s left)")
                save()
                continue
            cmd = part_commands(a, left, dtype)[part]
            rec = {"command": cmd, "budget_s": round(left, 1)}
            if part == "train":
                rec.update(dtype=dtype, dtype_why=why)
            res["parts"][part] = rec
            save()
            log(f"== {part}: {left:.0f} s")
            r = common.run(cmd, log, timeout=left + 30, tag=f"[{part}]")
            rec.update(rc=r["rc"], seconds=round(r["seconds"], 1), timed_out=r["timed_out"],
                       status="ok" if r["rc"] == 0 else ("timeout" if r["timed_out"] else "failed"))
            if part == "bf16" and os.path.isfile(os.path.join(a.out, BF16_JSON)):  # for a later call's third part
                shutil.copyfile(os.path.join(a.out, BF16_JSON), os.path.join(a.work, BF16_JSON))
            save()
        return 0 if all(p["status"] in ("ok", "skipped") for p in res["parts"].values()) else 1
    finally:
        res.finish()
        for part, p in res["parts"].items():
            p.setdefault("status", "interrupted")
            log(f"{part}: {p['status']}" + (f" in {p['seconds']:.0f} s" if "seconds" in p else f" ({p.get('why')})"))
        log(f"wrote {res_path} ({time.time() - t0:.0f} s)")
        log.close()


if __name__ == "__main__":
    raise SystemExit(main())
