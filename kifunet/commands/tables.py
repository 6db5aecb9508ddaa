"""``kifunet tables RUN...``: our eval results beside the published rows, with the dataset spec of each; results of
nets with a value head add a table of their value MSE, the constant predictor's and the winner accuracy.
``--learning-figure FILE`` also draws a RUN directory's learning curve beside the published end points
(:func:`kifunet.eval.plots.learning_vs_published`). ``--by year|source|rank|time_control`` prints per-profile accuracy
tables of the results instead (:func:`kifunet.eval.tables.render_profiles`); a result without that breakdown (eval
JSON before version 3) gets one line naming its file on standard error, and none with it is an error."""

from __future__ import annotations

import argparse
import sys

from kifunet.errors import CommandError, UserError

HELP = "print our eval results beside the published move-prediction tables (Markdown or HTML)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="*", metavar="RUN",
                   help="run directories (their eval/*.json) or eval JSON files; none prints the published rows only")
    p.add_argument("--format", choices=("markdown", "html"), default="markdown", help="output format (markdown)")
    p.add_argument("--published", default="all", metavar="WHICH",
                   help="published rows to show: all (default), kgs, gogod, or a dataset id of eval/published.toml")
    p.add_argument("--by", default=None, choices=("year", "source", "rank", "time_control"),
                   help="instead of the comparison: per-profile accuracy tables, one row per year of the game, source, "
                        "mover's rank or time control (positions, top-1 %%, top-5 %%, nats) for each result")
    p.add_argument("--out", default=None, metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument("--learning-figure", default=None, metavar="FILE",
                   help="also draw the first RUN directory's test top-1 (metrics_eval.jsonl) against positions seen, "
                        "with its eval/*.json results as stars, beside the published rows' end points (log axis) "
                        "into FILE (.png or .svg)")


def run(args) -> int:
    from kifunet.eval import tables

    if args.learning_figure and not args.learning_figure.lower().endswith((".png", ".svg")):
        raise CommandError(f"{args.learning_figure}: --learning-figure must end in .png or .svg")
    # a file that is not an eval result (ResultError), an unknown --published (InvalidValue): reported by the CLI
    if args.by:
        if not args.runs:
            raise CommandError("--by needs RUN directories or eval JSON files")
        text, skipped = tables.render_profiles(tables.find_results(args.runs), args.by, args.format)
        if not text:
            raise CommandError("; ".join(skipped))
        for line in skipped:
            print(line, file=sys.stderr)
    else:
        text = tables.render(tables.find_results(args.runs), args.format, args.published)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    if args.learning_figure:
        learning_figure(args.runs, args.learning_figure)
    return 0


def learning_figure(runs: list[str], out: str) -> None:
    """Draw the first of ``runs`` that is a run directory with ``metrics_eval.jsonl`` (and its eval results) into
    ``out``."""
    import os

    from kifunet.eval import plots, tables

    run = next((r for r in runs if os.path.isfile(os.path.join(r, "metrics_eval.jsonl"))), None)
    if run is None:
        raise CommandError("--learning-figure needs a RUN directory holding metrics_eval.jsonl")
    finals = []
    for path, res in tables.find_results([run]):
        positions, single = res.get("run", {}).get("positions"), res["results"].get("single")
        if positions and single:  # labelled with the data and how much of it was evaluated
            finals.append((f"{tables.dataset_label(res)}, single pass", positions, single["accuracy"]["1"]))
    metrics = os.path.join(run, "metrics_eval.jsonl")
    try:
        fig = plots.learning_vs_published(plots.read_jsonl(metrics), finals=finals,
                                          label=os.path.basename(os.path.normpath(run)))
    except UserError as e:  # InvalidValue: records without positions or top1
        raise CommandError(f"{metrics}: {e}") from e
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out)
    print(f"wrote {out}", file=sys.stderr)
