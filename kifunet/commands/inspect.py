"""``kifunet inspect DIR --split S --index I``: one position as an ASCII board, its move and its planes."""

from __future__ import annotations

import argparse
import sys

HELP = "show one position of a built dataset: ASCII board, the move played, a summary of its planes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DIR", help="a directory written by `kifunet build`")
    p.add_argument("--split", default="train", help="split name (default train)")
    p.add_argument("--index", type=int, default=0, metavar="I", help="row index within the split (default 0)")


def run(args) -> int:
    from kifunet.data_prep import stats
    from kifunet.data_prep.reader import Reader

    try:
        with Reader(args.dataset, args.split) as r:
            print(stats.render_position(r, args.index))
    except (FileNotFoundError, KeyError, IndexError) as e:
        print(f"kifunet inspect: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    return 0
