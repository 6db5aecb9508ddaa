"""``kifunet quickstart``: the whole path on a CPU in a few minutes: build → train ``cpu_small`` → eval.

Each stage is the ordinary command, printed before it runs, so the output shows what to type to do the same
by hand. By default it uses the project's sample corpus (``samples/gnugo``, GNU Go self-play, test split: the
2015 games); ``--sgf PATH...`` runs it on real archives (a deterministic 5% of games by hash is the test split).
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

HELP = "build -> train cpu_small -> eval on the sample corpus (or --sgf PATH...) and print top-k and nats"

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "gnugo"


def add_arguments(p) -> None:
    p.add_argument("--out", default="runs/quickstart", help="working directory (default runs/quickstart)")
    p.add_argument("--sgf", nargs="+", metavar="PATH", help="SGF files, directories or archives instead of the samples")
    p.add_argument("--minutes", type=float, default=3.0, help="training time limit in minutes (default 3)")
    p.add_argument("--workers", type=int, default=None, help="build worker processes (default: all cores)")


def _run(argv: list[str]) -> None:
    from kifunet import cli

    print(f"\n$ kifunet {shlex.join(argv)}", flush=True)
    t0 = time.perf_counter()
    rc = cli.main(argv)
    if rc:
        raise SystemExit(f"quickstart: `kifunet {argv[0]}` failed with exit code {rc}")
    print(f"[{argv[0]}: {time.perf_counter() - t0:.0f} s]", flush=True)


def run(args) -> int:
    from kifunet.train import configs

    out = Path(args.out)
    data, workdir = out / "data", out / "run"
    if args.sgf:
        inputs, splits = list(args.sgf), ["--split", "train:rest", "--hash-split", "test:0.05"]
    else:
        if not SAMPLES.is_dir():
            print(f"error: sample corpus not found at {SAMPLES}; pass --sgf PATH")
            return 2
        inputs, splits = [str(SAMPLES)], ["--split", "test:2015", "--split", "train:rest"]
    build = ["build", *inputs, "--out", str(data), "--features", "maddison", *splits]
    if args.workers:
        build += ["--workers", str(args.workers)]
    _run(build)
    config = Path(configs.__file__).parent / "cpu_small.py"
    _run(["train", "--config", str(config), "--workdir", str(workdir), f"--config.dataset={data}",
          f"--config.time_limit_s={int(args.minutes * 60)}"])
    _run(["eval", "--checkpoint", str(workdir), "--data", str(data), "--split", "test", "--no-breakdowns"])
    return 0
