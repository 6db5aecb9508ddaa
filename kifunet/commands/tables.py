"""``kifunet tables RUN...``: our eval results beside the published rows, with the dataset spec of each; results of
nets with a value head add a table of their value MSE, the constant predictor's and the winner accuracy."""

from __future__ import annotations

import argparse

from kifunet.errors import CommandError

HELP = "print our eval results beside the published move-prediction tables (Markdown or HTML)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="*", metavar="RUN",
                   help="run directories (their eval/*.json) or eval JSON files; none prints the published rows only")
    p.add_argument("--format", choices=("markdown", "html"), default="markdown", help="output format (markdown)")
    p.add_argument("--published", default="all", metavar="WHICH",
                   help="published rows to show: all (default), kgs, gogod, or a dataset id of eval/published.toml")
    p.add_argument("--out", default=None, metavar="FILE", help="write to FILE instead of standard output")


def run(args) -> int:
    from kifunet.eval import tables

    try:
        text = tables.render(tables.find_results(args.runs), args.format, args.published)
    except ValueError as e:  # a file that is not an eval result, an unknown --published
        raise CommandError(e) from e
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0
