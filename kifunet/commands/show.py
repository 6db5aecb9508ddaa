"""``kifunet show GAME.sgf --move N [--checkpoint RUN] --out board.png``: a position with the net's policy.

Without ``--checkpoint`` the default net draws the policy; ``--no-net`` draws the board alone. Every input is
checked before the net loads: the SGF replays to move N, the output's folder exists, ``--rank`` is a rank,
``--checkpoint`` is a run directory. The stones come from the game's replay, whatever the net's feature set. The
title names the rank only when the net reads one, and adds a value head's value for the side to move.
``--profile KEY=VALUE,...`` replaces those fields of the SGF's own profile for a profiled net (docs/profiles.md);
a net without a profile input draws the same policy, and a note on stderr says so. A net with an ownership or
score head prints what they read of the position (points per side, margin for the side to move)."""

from __future__ import annotations

import argparse

from kifunet.commands import option_types, unsealed
from kifunet.errors import CommandError

HELP = "draw a position of an SGF with the policy as a heatmap over legal points and the top-k moves (PNG/SVG)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sgf", metavar="GAME.sgf", help="an SGF file (main line)")
    p.add_argument("--move", type=int, required=True, metavar="N", help="draw the board before move N (1-based)")
    net = p.add_mutually_exclusive_group()
    net.add_argument("--checkpoint", metavar="RUN", default=None,
                     help="training run directory (default: the default net, kifunet.data_prep.paths.DEFAULT_NET; "
                          "a game on another board size is then drawn without a policy)")
    net.add_argument("--no-net", action="store_true", help="draw the board without a policy")
    unsealed.add_option(p)
    p.add_argument("--out", required=True, metavar="FILE", type=option_types.image_file, help="image file; .png or .svg (format by extension)")
    p.add_argument("--top-k", type=int, default=5, metavar="K", help="label the K most likely legal moves (5)")
    p.add_argument("--rank", default=None, metavar="RANK", type=option_types.known_rank,
                   help="predict as a player of this rank (e.g. 1d, 9d) instead of the SGF's rank")
    p.add_argument("--ensemble", action="store_true", help="average the 8 symmetric passes")
    p.add_argument("--profile", default=None, metavar="KEY=VALUE,...", type=option_types.profile,
                   help="for a net with a profile input: replace these fields of the game's own profile "
                        "(rank=7d,opponent_rank=5d,year=2010 or date=2010-05-01,source=kgs,time=fast,handicap=2,"
                        "komi=6.5)")


def run(args) -> int:
    unsealed.apply(args)  # --allow-unsealed: for the checkpoint loader
    rank, fields = _check_options(args)
    named = bool(args.checkpoint)
    from kifunet.data_prep._jit import announce_compile
    from kifunet.data_prep.planes.replay import load
    from kifunet.eval import board_image

    record = load(args.sgf)  # an unreadable SGF is reported now (SgfError)
    if not args.no_net and not named:
        from kifunet.data_prep import paths

        args.checkpoint = str(paths.default_net())
    announce_compile()
    board_image.load_position(args.sgf, args.move, None)  # the move number is checked by replaying (InvalidValue)
    predictor = _load_predictor(args, record, named) if args.checkpoint else None
    pos = board_image.load_position(args.sgf, args.move, predictor.feature_set if predictor else None)
    logits = value = title = None
    heads = {}
    if predictor is not None:
        logits, value, heads = _predict(predictor, record, pos, args.ensemble, rank, fields)
        title = _title(args, predictor, pos, value, rank if rank is not None else pos.player_rank, fields)
    fig = board_image.draw_position(pos, logits, top_k=args.top_k, title=title)
    fig.savefig(args.out)
    if predictor is not None and value is not None:
        who = "Black" if pos.to_move == 1 else "White"
        print(f"value of the position for {who} (the side to move; +1 a win, -1 a loss): {value:+.3f}")
    for line in _head_lines(heads, pos.to_move):
        print(line)
    print(f"wrote {args.out}")
    return 0


def _check_options(args) -> tuple[int | None, dict]:
    """Check the inputs before anything slow loads (the net takes seconds): the SGF path, ``--move``,
    ``--top-k``, ``--checkpoint`` (--out, --rank and --profile were checked as the command line was read:
    :mod:`kifunet.commands.option_types`). Returns (the ``--rank`` asked for or None, the ``--profile`` fields)."""
    import os

    from kifunet.data_prep import ranks

    if not os.path.isfile(args.sgf):
        raise CommandError(f"{args.sgf}: no such file" if not os.path.exists(args.sgf) else f"{args.sgf}: not a file")
    if args.move < 1:
        raise CommandError(f"--move must be at least 1, not {args.move}")
    if args.top_k < 0:
        raise CommandError(f"--top-k must be at least 0, not {args.top_k}")
    rank = ranks.parse_rank(args.rank) if args.rank else None
    fields = {}
    if args.profile is not None:
        from kifunet.data_prep import profiles

        fields = profiles.parse_fields(args.profile)
    if args.checkpoint:
        from kifunet.train.nets import find_workdir

        find_workdir(args.checkpoint)  # FileNotFoundError: not a run directory
    return rank, fields


def _load_predictor(args, record, named: bool):
    """The net of ``args.checkpoint``; None (with a note on stderr) when the default net (not ``named``) plays
    another board size than the game's."""
    import sys

    from kifunet.eval.runs import load_run

    predictor = load_run(args.checkpoint)  # CheckpointMismatch, UnknownName: user errors, reported by the CLI
    if not named and predictor.board_size != record.size:
        print(f"{args.sgf}: a {record.size}x{record.size} game; the default net plays "
              f"{predictor.board_size}x{predictor.board_size}, so the board is drawn without a policy "
              "(--checkpoint RUN names a net of this size)", file=sys.stderr)
        return None
    return predictor


def _predict(predictor, record, pos, ensemble: bool, rank: int | None, fields: dict):
    """(logits [N*N + 1], value for the side to move or None, the ownership and score heads' single-pass outputs
    ``{"ownership": [N, N], "score": float}`` for those the net has) of the net at ``pos``, as a player of ``rank``
    (None: the SGF's), with the profile ``fields`` forced; ``ensemble``: the 8 symmetric passes averaged."""
    import numpy as np

    from kifunet.eval import metrics
    from kifunet.eval.evaluate import with_player_rank

    batch = {"planes": pos.planes[None], "player_rank": np.array([pos.player_rank]),
             "to_move": np.array([pos.to_move])}
    if rank is None:
        rank = pos.player_rank
    else:
        batch = with_player_rank(batch, rank, predictor.feature_set)
    if predictor.reads_profile:
        batch["profile"] = _position_profile(record, pos.to_move, fields, rank)[None]
    out = predictor.predict_outputs(batch)
    heads = {k: (out[k][0] if k == "ownership" else float(out[k][0])) for k in ("ownership", "score")
             if out[k] is not None}
    if ensemble:
        passes, values = predictor.predict_symmetries_with_value(batch)
        value = None if values is None else float(np.mean([v[0] for v in values]))
        return metrics.ensemble_log_probs(passes)[0], value, heads
    v = out["value"]
    return out["logits"][0], (None if v is None else float(v[0])), heads


def _head_lines(heads: dict, to_move: int) -> list[str]:
    """Report lines of the ownership and score heads (single pass; the side to move's view turned into colours by
    :mod:`kifunet.play.head_view`, as ``kifunet gtp``'s GoGui commands turn them)."""
    from kifunet.play import head_view

    who, other = ("Black", "White") if to_move == 1 else ("White", "Black")
    lines = []
    if "ownership" in heads:
        mine, theirs = head_view.owned_points(heads["ownership"])
        lines.append(f"ownership head: {who} (to move) owns {mine:.1f} points, {other} {theirs:.1f} (each point's "
                     f"expected owner, summed)")
    if "score" in heads:
        result = head_view.margin_text(head_view.black_view(heads["score"], to_move))
        lines.append(f"score head: {heads['score']:+.1f} points for {who} (the side to move) at the end: {result}")
    return lines


def _title(args, predictor, pos, value: float | None, rank: int, fields: dict) -> str:
    """The picture's title: the game, the move, the side to play (as ``rank`` when the net reads one), the net,
    the profile fields forced and the value; a note on stderr for a ``--rank`` or ``--profile`` the net ignores."""
    import os
    import sys

    from kifunet.data_prep import ranks

    who = "Black" if pos.to_move == 1 else "White"
    name = predictor.info.get("name") or predictor.info.get("model", "")
    as_rank = ""  # a net without rank input predicts the same for every rank: its title names none
    if predictor.reads_rank:
        as_rank = f" as {ranks.rank_to_text(rank)}" if ranks.is_known(rank) else " (rank unknown)"
    elif args.rank:
        print(f"--rank {args.rank}: {name} has no rank input, so the rank changes nothing", file=sys.stderr)
    forced = ""
    if predictor.reads_profile and fields:
        from kifunet.play.policy import profile_text

        forced = f"; profile {profile_text(fields)}"
    elif args.profile:
        print(f"--profile {args.profile}: {name} has no profile input, so the profile changes nothing",
              file=sys.stderr)
    return (f"{os.path.basename(args.sgf)}: before move {args.move}, {who} to play{as_rank}\n"
            f"{name}{' (8-symmetry ensemble)' if args.ensemble else ''}{forced}"
            + ("" if value is None else f"; value {value:+.3f} for {who}"))


def _position_profile(record, to_move: int, fields: dict, rank: int):
    """float32 [46]: the profile of ``to_move``'s move in ``record`` (its SGF's), ``fields`` replacing theirs and
    ``rank`` (the rank the net predicts for) the mover's when ``fields`` sets none."""
    import dataclasses

    from kifunet.data_prep import profiles, ranks

    own = profiles.profile_of(record.info, int(to_move))
    forced = dict(fields)
    if "rank" not in forced and ranks.is_known(int(rank)):
        forced["rank"] = int(rank)
    return profiles.encode(dataclasses.replace(own, **forced))
