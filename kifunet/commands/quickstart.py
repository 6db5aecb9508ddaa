"""``kifunet quickstart``: the whole path on a CPU in a few minutes: build → train ``cpu_small`` → eval.

Each stage is the ordinary command, printed before it runs and timed after; :func:`summary` gives the eval figures
beside the training steps and positions they came from. The input is the shipped sample corpus, or ``--sgf
PATH...`` (a deterministic 5% of games by hash as the test split); output goes under ``--out``. A rerun continues
the run in ``OUT/run``, ``--minutes`` counting all of its training; ``--fresh`` deletes ``OUT/run`` first and
reuses the dataset (docs/getting_started.md).
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from pathlib import Path

from kifunet.errors import CommandError

HELP = "build -> train cpu_small -> eval on the sample corpus (or --sgf PATH...) and print top-k and nats"


def add_arguments(p) -> None:
    p.add_argument("--out", default="runs/quickstart", help="working directory (default runs/quickstart)")
    p.add_argument("--sgf", nargs="+", metavar="PATH", help="SGF files, directories or archives instead of the samples")
    p.add_argument("--minutes", type=float, default=3.0, help="training time limit in minutes, counted across reruns (default 3)")
    p.add_argument("--workers", type=int, default=None, help="build worker processes (default: all cores)")
    p.add_argument("--fresh", action="store_true",
                   help="delete OUT/run and train a new net (default: a rerun resumes the run in OUT/run)")


#: what a ``kifunet train`` workdir may hold (``--fresh`` deletes nothing else; ``train.lock`` is the run lock,
#: train/run_lock.py)
_RUN_ENTRIES = {"checkpoints", "config.json", "metrics_train.jsonl", "metrics_eval.jsonl", "tensorboard", "eval",
                "figures", "train.lock"}


def previous_run(workdir: Path) -> dict | None:
    """``{'step', 'train_seconds'}`` of the newest finished checkpoint in ``workdir``, or None."""
    ck = workdir / "checkpoints"
    steps = sorted((int(d.name) for d in ck.iterdir() if d.is_dir() and d.name.isdigit()), reverse=True) \
        if ck.is_dir() else []
    if not steps:
        return None
    try:
        meta = json.loads((ck / str(steps[0]) / "meta" / "metadata").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):  # no readable metadata: the step alone
        meta = {}
    return {"step": steps[0], "train_seconds": meta.get("train_seconds")}


def _run(argv: list[str], note: str = "") -> None:
    """Run one stage as ``kifunet ARGV``, printing the command before and ``[stage: N s{note}]`` after."""
    from kifunet import cli

    print(f"\n$ kifunet {shlex.join(argv)}", flush=True)
    t0 = time.perf_counter()
    rc = cli.main(argv)
    if rc:
        raise CommandError(f"`kifunet {argv[0]}` failed with exit code {rc}")
    print(f"[{argv[0]}: {time.perf_counter() - t0:.0f} s{note}]", flush=True)


#: what the build's timing says when the rules engine was not compiled yet (data_prep/_jit.py)
COMPILE_NOTE = (", including the one-time compile of the rules engine (about 30 s; later builds load it in "
                "about a second)")


def further(limit_s: int) -> str:
    """How to train the run further: a larger ``--minutes`` (it counts all of the run's training, across reruns;
    the train stage's ``--config.time_limit_s``), with a value to try."""
    return (f"to train further, rerun with a larger --minutes, e.g. --minutes {max(2 * limit_s, 60) / 60:g} (it "
            "counts all of the run's training: the run resumes)")


def summary(result: dict, limit_s: int) -> str:
    """The closing lines: the eval figures beside the training they came from (steps, positions, seconds), that
    the figures depend on how far the time limit let training go, and how to train further (:func:`further`)."""
    run, single = result["run"], result["results"]["single"]
    trained = run.get("train_seconds")
    return (f"\nquickstart: top-1 {100 * single['accuracy']['1']:.2f}%, {single['cross_entropy_nats']:.4f} nats on "
            f"{result['dataset']['evaluated']:,} test positions, after {run['step']:,} training steps "
            f"({run['positions']:,} positions"
            + (f", {trained:.0f} s of training" if trained is not None else "") + ")\n"
            f"These figures depend on the steps reached: --minutes {limit_s / 60:g} is a time limit, and a slower "
            f"or busier machine trains fewer steps in it (and gets a lower top-1 and more nats); {further(limit_s)}.")


def run(args) -> int:
    from kifunet.data_prep import paths
    from kifunet.train import configs

    out = Path(args.out)
    data, workdir = out / "data", out / "run"
    limit_s = int(args.minutes * 60)
    if args.fresh and workdir.exists():
        strange = sorted(p.name for p in workdir.iterdir() if p.name not in _RUN_ENTRIES)
        if strange:
            raise CommandError(f"--fresh would delete {workdir}, which holds more than a training run "
                               f"({', '.join(strange[:5])}); move those away or choose another --out")
        shutil.rmtree(workdir)
        print(f"quickstart: --fresh: deleted the previous run in {workdir}; training a new net", flush=True)
    elif (prev := previous_run(workdir)) is not None:
        done = prev["train_seconds"]
        more = (f"its --minutes {args.minutes:g} is used up, so it trains no further and evaluates again; "
                f"{further(limit_s)}" if done is not None and 0 < limit_s <= done
                else f"training until {limit_s} s in all (--minutes {args.minutes:g})")
        print(f"quickstart: {workdir} already holds a run (step {prev['step']:,}"
              f"{f', {done:.0f} s trained' if done is not None else ''}): resuming it, {more}; "
              f"--fresh starts a new run", flush=True)
    if args.sgf:
        inputs, splits = list(args.sgf), ["--split", "train:rest", "--hash-split", "test:0.05"]
    else:
        samples = paths.sample_games()
        if not samples.is_dir():
            raise CommandError(f"sample corpus not found at {samples}; pass --sgf PATH")
        inputs, splits = [str(samples)], ["--split", "test:2015", "--split", "train:rest"]
    build = ["build", *inputs, "--out", str(data), "--features", "maddison", *splits]
    if args.workers:
        build += ["--workers", str(args.workers)]
    from kifunet.data_prep._jit import kernels_cached

    _run(build, "" if kernels_cached() else COMPILE_NOTE)
    config = Path(configs.__file__).parent / "cpu_small.py"
    _run(["train", "--config", str(config), "--workdir", str(workdir), f"--config.dataset={data}",
          f"--config.time_limit_s={limit_s}"])
    from kifunet.commands.eval import default_out

    _run(["eval", "--checkpoint", str(workdir), "--data", str(data), "--split", "test", "--no-breakdowns"])
    result = json.loads(Path(default_out(str(workdir), str(data), "test", False)).read_text())
    print(summary(result, limit_s), flush=True)
    return 0
