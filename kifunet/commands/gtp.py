"""``kifunet gtp``: a GTP engine playing a policy net's raw moves (see :mod:`kifunet.eval.gtp`)."""

from __future__ import annotations

HELP = "GTP engine that plays a policy net's raw moves (--checkpoint RUN, or --model NAME with random weights)"


def add_arguments(p) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", metavar="RUN", help="training run directory (its config.json and checkpoints)")
    src.add_argument("--model", metavar="NAME", help="a registered model name, randomly initialised (--seed): "
                     "a legitimate opponent for protocol and match tests, not a player")
    p.add_argument("--step", type=int, help="with --checkpoint: this step instead of the latest")
    p.add_argument("--board-size", type=int, help="board size: with --model (default 19); with --checkpoint only "
                   "when the run records none")
    p.add_argument("--features", help="feature set (default: the run's, or the one matching the model's planes)")
    p.add_argument("--seed", type=int, default=0, help="model initialisation (--model) and sampling seed")
    p.add_argument("--rank", default="9d", help="the rank the net imitates: 1d .. 9d, 3k, 9p, or unknown "
                   "(rank planes / rank embeddings; default 9d, Maddison's setting: the rank input at its maximum)")
    p.add_argument("--sample", action="store_true", help="sample with GoNN's move-number-dependent schedule "
                   "instead of playing the arg-max move")
    p.add_argument("--komi", type=float, default=7.5, help="komi until the controller sends one (default 7.5)")
    p.add_argument("--pass-threshold", type=float, default=None,
                   help="after an opponent pass, pass when the best move's probability is below this "
                        "(default 0.05)")
    p.add_argument("--max-moves", type=int, help="pass once this many moves are played (default 2*N*N)")
    p.add_argument("--resign-margin", type=float,
                   help="resign (after N*N/2 moves) when behind by more than this many points of area score "
                        "(default: never resign)")
    p.add_argument("--name", default="kifunet", help="the name the engine gives (default kifunet)")
    p.add_argument("--verbose", action="store_true", help="log each chosen move and why to stderr")


def run(args) -> int:
    import contextlib
    import sys

    from kifunet.eval import gtp, policy as policy_mod

    # Everything but GTP responses goes to stderr: loading JAX or a checkpoint must not write on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        try:
            if args.checkpoint:
                pol = policy_mod.load_policy(args.checkpoint, rank=args.rank, step=args.step,
                                             feature_set=args.features, board_size=args.board_size)
            else:
                pol = policy_mod.fresh_policy(args.model, args.board_size or 19, feature_set=args.features,
                                              seed=args.seed, rank=args.rank)
        except (KeyError, ValueError, FileNotFoundError) as e:
            print(f"kifunet gtp: error: {e.args[0] if e.args else e}", file=sys.stderr)
            return 2
        settings = gtp.PlaySettings(sample=args.sample, seed=args.seed, max_moves=args.max_moves,
                                    resign_margin=args.resign_margin,
                                    pass_threshold=(gtp.DEFAULT_PASS_THRESHOLD if args.pass_threshold is None
                                                    else args.pass_threshold))
        engine = gtp.Engine(pol, settings=settings, komi=args.komi, name=args.name,
                            log=sys.stderr if args.verbose else None)
    return engine.serve(sys.stdin, sys.stdout)
