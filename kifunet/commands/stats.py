"""``kifunet stats DIR [--json]``: games and positions per split, by rank and year, rejects by reason."""

from __future__ import annotations

import argparse
import json

HELP = "summarise a built dataset: splits, ranks, years, filtered and rejected records by reason"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DIR", help="a directory written by `kifunet build`")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args) -> int:
    from kifunet.data_prep.datasets import stats

    st = stats.dataset_stats(args.dataset)  # not a dataset: reported by kifunet.cli (kifunet.errors)
    print(json.dumps(st, indent=2, ensure_ascii=False) if args.json else stats.format_stats(st))
    return 0
