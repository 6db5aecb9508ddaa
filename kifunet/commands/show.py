"""``kifunet show GAME.sgf --move N --checkpoint RUN --out board.png``: a position with the net's policy."""

from __future__ import annotations

import argparse
import sys

HELP = "draw a position of an SGF with the policy as a heatmap over legal points and the top-k moves (PNG/SVG)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sgf", metavar="GAME.sgf", help="an SGF file (main line)")
    p.add_argument("--move", type=int, required=True, metavar="N", help="draw the board before move N (1-based)")
    p.add_argument("--checkpoint", metavar="RUN", default=None,
                   help="training run directory; without it the board is drawn without a policy")
    p.add_argument("--out", required=True, metavar="FILE", help="image file; .png or .svg (format by extension)")
    p.add_argument("--top-k", type=int, default=5, metavar="K", help="label the K most likely legal moves (5)")
    p.add_argument("--rank", default=None, metavar="RANK",
                   help="predict as a player of this rank (e.g. 1d, 9d) instead of the SGF's rank")
    p.add_argument("--ensemble", action="store_true", help="average the 8 symmetric passes")


def run(args) -> int:
    import numpy as np

    from kifunet.data_prep import ranks
    from kifunet.data_prep.errors import KifunetInputError
    from kifunet.eval import board_image

    if not args.out.lower().endswith((".png", ".svg")):
        print("kifunet show: error: --out must end in .png or .svg", file=sys.stderr)
        return 2
    try:
        predictor = None
        if args.checkpoint:
            from kifunet.eval.runs import load_run

            predictor = load_run(args.checkpoint)
        pos = board_image.load_position(args.sgf, args.move, predictor.feature_set if predictor else None)
        logits = None
        title = None
        if predictor is not None:
            from kifunet.eval import metrics
            from kifunet.eval.evaluate import with_player_rank

            batch = {"planes": pos.planes[None], "player_rank": np.array([pos.player_rank]),
                     "to_move": np.array([pos.to_move])}
            rank = pos.player_rank
            if args.rank:
                rank = ranks.parse_rank(args.rank)
                if not ranks.is_known(rank):
                    raise ValueError(f"--rank {args.rank!r} is not a rank")
                batch = with_player_rank(batch, rank, predictor.feature_set)
            if args.ensemble:
                logits = metrics.ensemble_log_probs(predictor.predict_symmetries(batch))[0]
            else:
                logits = predictor.predict(batch)[0]
            who = "Black" if pos.to_move == 1 else "White"
            name = predictor.info.get("name") or predictor.info.get("model", "")
            title = (f"{args.sgf.rsplit('/', 1)[-1]}: before move {args.move}, {who} to play as "
                     f"{ranks.rank_to_text(rank) if ranks.is_known(rank) else 'unknown rank'}\n"
                     f"{name}{' (8-symmetry ensemble)' if args.ensemble else ''}")
        fig = board_image.draw_position(pos, logits, top_k=args.top_k, title=title)
        fig.savefig(args.out)
    except (FileNotFoundError, ValueError, KeyError, KifunetInputError) as e:
        print(f"kifunet show: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0
