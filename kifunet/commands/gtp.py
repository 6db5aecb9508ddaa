"""``kifunet gtp``: a GTP engine playing a policy net's raw moves (see :mod:`kifunet.play.gtp_engine`).

The net: a training run (``--checkpoint RUN``, JAX), a registered model with random weights (``--model NAME``), an
exported file (``--model FILE.onnx``: onnxruntime plays it and JAX is never imported), or by default the default
net. The engine answers as soon as the inputs are checked; a training run's net loads in a background thread
(:class:`kifunet.play.lazy_policy.LazyPolicy`) and the first command that needs it waits (docs/playing.md,
"Start-up"). ``--profile`` (checked before anything loads) is the game profile a profiled net plays with; an ONNX
file plays with the profile it was exported with unless ``--profile`` names another (docs/profiles.md)."""

from __future__ import annotations

from kifunet.commands import option_types, unsealed
from kifunet.errors import CommandError

HELP = ("GTP engine that plays a policy net's raw moves (the default net, --checkpoint RUN, --model FILE.onnx "
        "from `kifunet export`, or --model NAME with random weights)")


def add_arguments(p) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--checkpoint", metavar="RUN", help="training run directory (its config.json and "
                     "checkpoints); default, with no --model: the default net (kifunet.data_prep.paths.DEFAULT_NET)")
    src.add_argument("--model", metavar="NAME|FILE.onnx", help="an exported net (a .onnx file from `kifunet "
                     "export`: played with onnxruntime, without JAX; the file gives the board size and features), "
                     "or a registered model name, randomly initialised (--seed): a legitimate opponent for "
                     "protocol and match tests, not a player")
    p.add_argument("--step", type=int, help="with --checkpoint: this step instead of the latest")
    unsealed.add_option(p)
    p.add_argument("--board-size", type=option_types.board_size, help="board size: with --model NAME (default 19); with --checkpoint "
                   "only when the run records none")
    p.add_argument("--features", help="feature set (default: the run's, or the one matching the model's planes)")
    p.add_argument("--seed", type=int, default=0, help="model initialisation (--model) and sampling seed")
    p.add_argument("--rank", default="9d", type=option_types.rank, help="the rank the net imitates: 1d .. 9d, 3k, 9p, or unknown "
                   "(rank planes / rank embeddings; default 9d, Maddison's setting: the rank input at its maximum)")
    p.add_argument("--profile", default=None, metavar="KEY=VALUE,...", type=option_types.profile,
                   help="the game profile a net with a profile input is given: rank=7d,opponent_rank=5d,"
                        "year=2010 (or date=2010-05-01),source=kgs,time=fast,handicap=2,komi=6.5; unknown when left "
                        "out, except the ranks (--rank), komi and handicap (the game's); changed mid-game with the "
                        "GTP command kifunet-profile; a net without one ignores it")
    p.add_argument("--sample", action="store_true", help="sample with GoNN's move-number-dependent schedule "
                   "instead of playing the arg-max move")
    p.add_argument("--komi", type=float, default=7.5, help="komi until the controller sends one (default 7.5)")
    p.add_argument("--pass-threshold", type=float, default=None,
                   help="after an opponent pass, pass when the best move's probability is below this "
                        "(default 0.05)")
    p.add_argument("--max-moves", type=int, help="pass once this many moves are played (default 2*N*N)")
    p.add_argument("--resign-margin", type=float,
                   help="resign (after N*N/2 moves, when the dead-stone estimate is confident) when behind by more "
                        "than this many points (default N*N/10: 36 at 19x19)")
    p.add_argument("--no-resign", action="store_true", help="never resign (resigning is on by default; "
                   "`kifunet match` switches it off with the GTP command kifunet-resign off unless --resign)")
    p.add_argument("--rules", choices=("chinese", "tromp-taylor"), default="chinese",
                   help="chinese (default): area scoring, dead stones removed by agreement, so the engine passes "
                        "without capturing them; tromp-taylor: every stone on the board counts, so it captures "
                        "dead stones in its area before passing")
    p.add_argument("--symmetries", type=int, default=1, metavar="K",
                   help="average the policy over K of the 8 board symmetries each move when no time limit is set "
                        "(1..8, default 1; under time_settings the clock decides)")
    p.add_argument("--name", default="kifunet", help="the name the engine gives (default kifunet)")
    p.add_argument("--verbose", action="store_true", help="log each chosen move and why to stderr")


def is_onnx_file(model: str | None) -> bool:
    """``--model`` names an exported file (a path ending in ``.onnx``, or any existing file), not a model name."""
    import os

    return bool(model) and (model.lower().endswith(".onnx") or os.path.isfile(model))


def _check_inputs(args) -> None:
    """What can be checked before JAX and the net load (seconds): the run directory or the ONNX file, the
    numbers (``--rank``, ``--board-size`` and ``--profile`` were checked as the command line was read:
    :mod:`kifunet.commands.option_types`)."""
    import os

    if not args.checkpoint and not args.model:
        from kifunet.data_prep import paths

        args.checkpoint = str(paths.default_net())
    if args.checkpoint:
        from kifunet.train.nets import resolve_checkpoint

        resolve_checkpoint(args.checkpoint, args.step)  # FileNotFoundError: no run, no such step
    elif args.step is not None:
        raise CommandError("--step needs --checkpoint")
    if is_onnx_file(args.model):
        if not os.path.isfile(args.model):
            raise CommandError(f"{args.model}: no such file" if not os.path.exists(args.model)
                               else f"{args.model}: not a file")
        import importlib.util

        if importlib.util.find_spec("onnxruntime") is None:
            raise CommandError(f"{args.model}: playing an ONNX file needs onnxruntime: "
                               "pip install 'kifunet[export]'")
    if args.pass_threshold is not None and not 0 <= args.pass_threshold <= 1:
        raise CommandError(f"--pass-threshold is a probability (0..1), not {args.pass_threshold}")
    if args.max_moves is not None and args.max_moves < 1:
        raise CommandError(f"--max-moves must be at least 1, not {args.max_moves}")
    if not 1 <= args.symmetries <= 8:
        raise CommandError(f"--symmetries must be in 1..8 (the board's symmetries), not {args.symmetries}")
    if args.resign_margin is not None and not args.resign_margin >= 0:
        raise CommandError(f"--resign-margin must be a number of points >= 0, not {args.resign_margin}")


def _open_policy(args, error):
    """The policy ``args`` name: a training run's as a :class:`~kifunet.play.lazy_policy.LazyPolicy` (described
    and verified now, to be loaded in the background), an ONNX file's opened now (to be warmed up in the
    background), a registered model's built now. A lazy policy's thread is not started yet (``start()``)."""
    import sys

    from kifunet.play import lazy_policy
    from kifunet.play import policy as policy_mod

    if is_onnx_file(args.model):
        from kifunet.play.onnx_policy import load_onnx_policy

        pol = load_onnx_policy(args.model, rank=args.rank, feature_set=args.features, board_size=args.board_size)
        return lazy_policy.lazy_wrap(pol, error=error, start=False)
    if args.checkpoint:
        from kifunet.train.nets import step_dir
        from kifunet.train.checkpointing import require_loadable

        require_loadable(step_dir(args.checkpoint, args.step))  # CheckpointError: a damaged step, before answering
        return lazy_policy.lazy_run_policy(args.checkpoint, rank=args.rank, step=args.step,
                                           feature_set=args.features, board_size=args.board_size, error=error,
                                           start=False, compile_cache=lazy_policy.default_compile_cache(),
                                           log=(lambda m: print(m, file=sys.stderr, flush=True)) if args.verbose else None)
    return policy_mod.fresh_policy(args.model, args.board_size or 19, feature_set=args.features, seed=args.seed,
                                   rank=args.rank)


def run(args) -> int:
    unsealed.apply(args)  # --allow-unsealed: for the checkpoint loader
    import os
    import sys

    _check_inputs(args)
    from kifunet.data_prep._jit import announce_compile
    from kifunet.data_prep.rules import scoring
    from kifunet.play import gtp_engine, gtp_protocol, lazy_policy, move_choice

    # Everything but GTP responses goes to stderr, for the whole session: the net loads in a background thread,
    # and what JAX or a checkpoint library prints must not reach the controller.
    out, sys.stdout = sys.stdout, sys.stderr
    try:
        pol = _open_policy(args, gtp_protocol.GtpError)  # UnknownName, NotAnExport, InvalidValue: user errors
        problem = scoring.komi_problem(args.komi, pol.board_size)
        if problem:
            raise CommandError(f"--komi: {problem}")
        settings = move_choice.PlaySettings(sample=args.sample, seed=args.seed, max_moves=args.max_moves,
                                           resign_margin=args.resign_margin, resign=not args.no_resign,
                                           rules=args.rules,
                                           pass_threshold=(move_choice.DEFAULT_PASS_THRESHOLD
                                                           if args.pass_threshold is None
                                                           else args.pass_threshold))
        engine = gtp_engine.Engine(pol, settings=settings, komi=args.komi, name=args.name,
                                   log=sys.stderr if args.verbose else None, symmetries=args.symmetries,
                                   profile=args.profile)
        if args.profile and not pol.reads_profile:
            print(f"--profile {args.profile}: {pol.description} has no profile input, so the profile changes "
                  "nothing", file=sys.stderr, flush=True)
        announce_compile()  # the first move compiles the rules engine when its cache is cold (stderr)
        lazy = pol if isinstance(pol, lazy_policy.LazyPolicy) else None
        if lazy is not None:
            lazy.start()  # the engine is ready to answer: load the net while the controller talks
        rc = engine.serve(sys.stdin, out)
    finally:
        sys.stdout = out
    if (lazy is not None and lazy.loading) or engine.measuring():  # leave now, not after the import or compile
        out.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc
