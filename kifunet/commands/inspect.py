"""``kifunet inspect DIR --split S --index I``: one position as an ASCII board, its move and its planes."""

from __future__ import annotations

import argparse

from kifunet.errors import CommandError

HELP = "show one position of a built dataset: ASCII board, the move played, a summary of its planes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DIR", help="a directory written by `kifunet build` (or tfds:DIR, a TFDS "
                   "go_moves dataset)")
    p.add_argument("--split", default="train", help="split name (default train)")
    p.add_argument("--index", type=int, default=0, metavar="I", help="row index within the split (default 0)")


def run(args) -> int:
    from kifunet.data_prep.datasets import stats
    from kifunet.data_prep.datasets.dataset import open_split

    with open_split(args.dataset, args.split) as r:  # no dataset, no such split: reported by kifunet.cli
        if not 0 <= args.index < len(r):
            rows = f"has rows 0..{len(r) - 1}" if len(r) else "has no rows"
            raise CommandError(f"--index {args.index}: split {args.split!r} of {args.dataset} {rows}")
        text = stats.render_position(r, args.index)
    print(text)
    return 0
