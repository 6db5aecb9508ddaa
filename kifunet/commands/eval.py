"""``kifunet eval [--checkpoint RUN] --data DATASET --split test``: top-k, nats and perplexity of a trained net;
for a net with a value head also its value MSE (beside the constant predictor's) and winner accuracy, overall and
by game phase (the rules: :mod:`kifunet.eval.metrics`). Without ``--checkpoint`` it evaluates the default net
(:func:`kifunet.data_prep.paths.default_net`), says so on its first line, and writes its result under
``runs/DEFAULT_NET/eval/`` (never into the shipped net's folder).

``kifunet eval --probes [FILE] [--checkpoint RUN]`` scores the net on the probe set instead (:mod:`kifunet.eval.probes`;
default the shipped ``eval/probes.sgf``): top-1 and top-5 per category beside a uniform legal choice's, JSON with
``--out`` (default ``RUN/eval/probes.json``, for the default net under ``runs/``)."""

from __future__ import annotations

import argparse
import os
import sys

from kifunet.commands import option_types, unsealed
from kifunet.data_prep.fileio import store
from kifunet.errors import CommandError

HELP = ("evaluate a training run on a dataset split: top-1..10, nats, perplexity (value MSE and winner accuracy "
        "for a net with a value head); single pass and ensemble")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", metavar="RUN",
                   help="training run directory (its latest checkpoint) or a checkpoint step directory in it "
                        "(default: the default net, kifunet.data_prep.paths.DEFAULT_NET)")
    unsealed.add_option(p)
    p.add_argument("--probes", nargs="?", const="", default=None, metavar="FILE",
                   help="score the net on the probe positions (default file: the shipped eval/probes.sgf) instead of "
                        "a dataset split: top-1 / top-5 per category")
    p.add_argument("--data", metavar="DATASET", help="a directory written by `kifunet build` (or tfds:DIR, a TFDS "
                   "go_moves dataset)")
    p.add_argument("--split", default="test", help="split name (default test)")
    p.add_argument("--ensemble", action="store_true",
                   help="also evaluate the 8-symmetry ensemble (reported separately from the single pass)")
    p.add_argument("--legal-mask", action="store_true",
                   help="renormalise over legal moves (from the planes, or by replaying the games)")
    p.add_argument("--batch-size", type=int, default=256, metavar="B", help="positions per forward pass (256)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="evaluate N positions only (from --start)")
    p.add_argument("--start", type=int, default=0, metavar="ROW",
                   help="first row to evaluate (default 0): with --limit, one part of a split; parts evaluated "
                        "apart (here or on other machines) add up with --merge")
    p.add_argument("--merge", nargs="+", default=None, metavar="PART.json",
                   help="instead of evaluating: merge results of disjoint parts of one split (same run and "
                        "settings) into one, printed and written to --out")
    p.add_argument("--phase-starts", default=None, metavar="A,B,...", type=option_types.phase_starts,
                   help="first move number of each game-phase bucket (default 1,21,51,101,151,201,251)")
    p.add_argument("--out", default=None, metavar="FILE.json",
                   help="result JSON (default RUN/eval/<dataset>_<split>[_legal][_firstN][_asRANK].json; '-' writes "
                        "none)")
    p.add_argument("--cpu-devices", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="on a CPU, split batches over N JAX devices (default: one per core; 0 leaves JAX's default)")
    p.add_argument("--as-rank", default=None, metavar="RANK", type=option_types.as_rank,
                   help="tell the net every mover has this rank (1d, 5d, 9d, 3k, 9p, unknown): rank planes and rank "
                        "embeddings see it; the by-rank breakdown keeps the movers' real ranks")
    p.add_argument("--profile", default=None, metavar="KEY=VALUE,...", type=option_types.profile,
                   help="for a net with a profile input: force these profile fields on every position "
                        "(rank=7d,opponent_rank=5d,year=2010 or date=2010-05-01,source=kgs,time=fast,handicap=2,"
                        "komi=6.5), each position keeping its own for the others")
    p.add_argument("--no-breakdowns", action="store_true", help="print the overall table only")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")


def default_out(run: str, data: str, split: str, legal: bool, limit: int | None = None, start: int = 0,
                as_rank: str | None = None, profile: str | None = None) -> str:
    from kifunet.train.nets import find_workdir

    try:
        run_dir = find_workdir(run)
    except FileNotFoundError:
        run_dir = run if store.isdir(run) else os.path.dirname(run)
    name = os.path.basename(os.path.normpath(data)) or "data"
    part = (f"_rows{start}-{start + limit - 1}" if start else f"_first{limit}") if limit is not None else \
        (f"_from{start}" if start else "")
    tail = ("_legal" if legal else "") + part + (f"_as{as_rank}" if as_rank else "") + _profile_tail(profile)
    return os.path.join(run_dir, "eval", f"{name}_{split}{tail}.json")


def _profile_tail(profile: str | None) -> str:
    """``_profile_year-2005_source-kgs`` for ``--profile year=2005,source=kgs`` (its normal form), ``""`` without."""
    if not profile:
        return ""
    from kifunet.data_prep import profiles

    from kifunet.play.policy import profile_text

    text = profile_text(profiles.parse_fields(profile))
    return "_profile_" + "".join(c if c.isalnum() or c in ".-" else "_" if c == "," else "-" for c in text)


def _check_profile(text: str | None, run: str) -> None:
    """``--profile`` checked before the net loads: a profile for a net whose ``config.json`` has no profile
    input is a :class:`CommandError` (one line). (Its text was checked as the command line was read:
    :func:`kifunet.commands.option_types.profile`.)"""
    if text is None:
        return
    import json

    from kifunet.play.lazy_policy import config_reads_profile
    from kifunet.train.nets import find_workdir

    try:
        reads = config_reads_profile(find_workdir(run))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return  # no readable config.json: the net's own check (evaluate) decides
    if not reads:
        raise CommandError(f"--profile {text}: {run} has no profile input (trained with model.profile_embedding "
                           "0), so the profile would change nothing")


def _check_options(args) -> tuple[int, ...] | None:
    """Option values that cannot work, before anything loads; returns the phase starts (None: the default)."""
    if args.batch_size < 1:
        raise CommandError(f"--batch-size must be at least 1, not {args.batch_size}")
    if args.limit is not None and args.limit < 1:
        raise CommandError(f"--limit must be at least 1, not {args.limit}")
    if args.start < 0:
        raise CommandError(f"--start must be at least 0, not {args.start}")
    if args.cpu_devices < 0:
        raise CommandError(f"--cpu-devices must be at least 0, not {args.cpu_devices}")
    # --phase-starts was checked as the command line was read (kifunet.commands.option_types.phase_starts)
    return tuple(int(x) for x in args.phase_starts.split(",")) if args.phase_starts else None


def _as_rank(text: str | None) -> int | None:
    """``--as-rank`` on the ranks scale (None when not given; its text was checked as the command line was read:
    :func:`kifunet.commands.option_types.as_rank`)."""
    if text is None:
        return None
    from kifunet.data_prep import ranks

    return ranks.parse_rank(text)


def run(args) -> int:
    unsealed.apply(args)
    if args.merge:
        return _run_merge(args)
    if args.probes is not None:
        return _run_probes(args)
    if not args.data:  # before JAX is imported: a usage error answers at once
        raise CommandError("--data is required (or --merge PART.json ..., or --probes)")
    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval import metrics
    from kifunet.eval.evaluate import evaluate
    from kifunet.eval.runs import load_run
    from kifunet.train.nets import find_workdir

    phases = _check_options(args) or metrics.PHASE_STARTS
    default_net = not args.checkpoint
    if default_net:
        from kifunet.data_prep import paths

        args.checkpoint = str(paths.default_net())
    # the inputs before the net (loading JAX and a checkpoint takes seconds): the run, the dataset and its split
    find_workdir(args.checkpoint)
    _check_profile(args.profile, args.checkpoint)
    with open_split(args.data, args.split) as split:
        split.verify()  # a damaged file is reported now, not after the net has loaded
    if default_net:
        print(f"net: the default net {args.checkpoint} (no --checkpoint)", flush=True)
    from kifunet.train.parallel import use_cpu_devices

    use_cpu_devices(args.cpu_devices)

    progress = sys.stderr.isatty() if args.progress is None else args.progress
    predictor = load_run(args.checkpoint)  # CheckpointMismatch, ...: user errors, reported by the CLI
    with open_split(args.data, args.split) as reader:
        res = evaluate(predictor, reader, batch_size=args.batch_size, ensemble=args.ensemble,
                       legal_mask=args.legal_mask, limit=args.limit, start=args.start, phase_starts=phases,
                       progress=progress, as_rank=_as_rank(args.as_rank), profile=args.profile)
    _report(args, res, default_net)
    return 0


def _run_merge(args) -> int:
    """``--merge PART.json ...``: print the merged result and write it to ``--out`` (unless ``-`` or not given)."""
    from kifunet.eval.evaluate import format_result, load_result, merge_results, save_result

    res = merge_results([load_result(f) for f in args.merge])  # ResultError: not a result, parts that differ
    print(format_result(res, breakdowns=not args.no_breakdowns))
    if args.out and args.out != "-":
        save_result(res, args.out)
        print(f"\nwrote {args.out}")
    return 0


def _report(args, res: dict, default_net: bool) -> None:
    """Print the result ``res`` (and the profile it was scored with) and save it to ``--out``, by default a file
    named after the run, data and options (the default net's under ``runs/``); ``-`` saves nothing."""
    from kifunet.eval.evaluate import format_result, save_result

    print(format_result(res, breakdowns=not args.no_breakdowns))
    if "profile" in res["settings"]:
        from kifunet.data_prep import profiles
        from kifunet.play.policy import profile_text

        forced = profile_text(profiles.parse_fields(res["settings"]["profile"]))
        print(f"profile: {'forced ' + forced + ' on every position, the other fields' if forced else 'every field'}"
              " each position's own")
    out = args.out or default_out(args.checkpoint, args.data, args.split, args.legal_mask, args.limit, args.start,
                                  args.as_rank, args.profile)
    if default_net and not args.out:  # the shipped net's folder is package data: its results go to runs/
        from kifunet.data_prep import paths

        out = os.path.join(paths.runs_dir(), paths.DEFAULT_NET, "eval", os.path.basename(out))
    if out != "-":
        save_result(res, out)
        print(f"\nwrote {out}")


def _run_probes(args) -> int:
    from kifunet.data_prep import paths
    from kifunet.eval import probes as P
    from kifunet.eval.runs import load_run
    from kifunet.train.nets import find_workdir

    other = [flag for flag, given in (("--data", args.data), ("--merge", args.merge), ("--ensemble", args.ensemble),
                                      ("--limit", args.limit is not None), ("--start", args.start),
                                      ("--phase-starts", args.phase_starts)) if given]
    if other:
        raise CommandError(f"--probes scores the probe set (single pass, legal moves only): drop {', '.join(other)}")
    if args.cpu_devices < 0:
        raise CommandError(f"--cpu-devices must be at least 0, not {args.cpu_devices}")
    as_rank = _as_rank(args.as_rank)
    probes = P.load_probes(args.probes or None)  # ProbeError
    default_net = not args.checkpoint
    if default_net:
        args.checkpoint = str(paths.default_net())
        print(f"net: the default net {args.checkpoint} (no --checkpoint)", flush=True)
    run_dir = find_workdir(args.checkpoint)
    from kifunet.train.parallel import use_cpu_devices

    use_cpu_devices(args.cpu_devices)
    res = P.score(load_run(args.checkpoint), probes, as_rank=as_rank)  # ProbeError: a net for another board
    res["probes_file"] = os.path.abspath(args.probes) if args.probes else "eval/probes.sgf (shipped)"
    print(P.format_score(res))
    out = args.out or os.path.join(str(run_dir), "eval", "probes.json")
    if default_net and not args.out:  # the shipped net's folder is package data: its results go to runs/
        out = os.path.join(paths.runs_dir(), paths.DEFAULT_NET, "eval", "probes.json")
    if out != "-":
        import json

        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
        print(f"\nwrote {out}")
    return 0
