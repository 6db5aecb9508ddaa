"""``kifunet match``: games between two GTP engines, refereed, saved as SGF, with a win-rate table; a line per
finished game with the running score as it ends, and on a terminal a live line of each game's move number."""

from __future__ import annotations

import argparse

from kifunet.errors import CommandError
from kifunet.play.gtp_client import PACHI_DEFAULT_PLAYOUTS, PACHI_MIN_PLAYOUTS  # standard library only

HELP = ("play N games between two GTP engines (colours alternate, --parallel, resumable), or the rank "
        "experiment (--rank-experiment 1d,5d,9d)")


# the same as kifunet.play.match's defaults; spelled out here so `kifunet --help` imports nothing heavy
DEFAULT_OPPONENT = "gnugo --mode gtp --level 10"
DEFAULT_REFEREE = "gnugo --mode gtp --chinese-rules"


def add_arguments(p) -> None:
    p.add_argument("--engine", required=True, metavar="CMD",
                   help='the engine under test, a GTP command line, e.g. "kifunet gtp --checkpoint runs/x"')
    p.add_argument("--opponent", default=DEFAULT_OPPONENT, metavar="CMD",
                   help=f'the opponent, a GTP command line (default "{DEFAULT_OPPONENT}"), or pachi[:PLAYOUTS]: '
                        'Pachi 11.99 as built by `python scripts/build_pachi.py`, PLAYOUTS a move (default '
                        f'{PACHI_DEFAULT_PLAYOUTS}, at least {PACHI_MIN_PLAYOUTS}), one thread, fixed seed, Chinese '
                        'rules; in a command line, `pachi` is that binary (e.g. "pachi -t =5000 threads=4")')
    p.add_argument("--games", type=int, default=10, help="games in the match (default 10); colours alternate, "
                   "the engine is black in even-numbered games")
    p.add_argument("--board-size", type=int, default=19, help="board size (default 19)")
    p.add_argument("--komi", type=float, default=7.5, help="komi (default 7.5)")
    p.add_argument("--max-moves", type=int, help="stop a game after this many moves and score it as it stands "
                   "(default 3*N*N)")
    p.add_argument("--referee", default=DEFAULT_REFEREE, metavar="CMD",
                   help=f'GTP program whose final_score decides games (default "{DEFAULT_REFEREE}", area '
                        'scoring); "none": Tromp-Taylor area score, every stone alive')
    p.add_argument("--parallel", type=int, default=1, help="games played at once (default 1)")
    p.add_argument("--out", required=True, metavar="DIR", help="match directory: games/*.sgf, match.json, "
                   "results.json, logs/; rerunning with the same DIR plays only the missing games")
    p.add_argument("--move-timeout", type=float, default=600.0, help="seconds a player may take for a move "
                   "(default 600)")
    p.add_argument("--seed", type=int, default=0, help="base of the per-game set_random_seed (default 0)")
    p.add_argument("--resign", action="store_true", help="let kifunet players resign lost games (they do by "
                   "default against people; in a match only with this flag)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a live line of each game's move number (default: when stderr is a terminal); a line per "
                        "finished game with the running score is printed either way")
    p.add_argument("--openings", nargs="+", metavar="SOURCE",
                   help="SGF files, folders or archives of held-out games (e.g. the test split's archive): game pair "
                        "i (colours swapped) starts from the first --opening-moves moves of the i-th usable game in "
                        "split-hash order, told to both players; unusable games are skipped with a reason")
    p.add_argument("--opening-moves", type=int, metavar="K", help="the openings' length in moves (with --openings)")
    p.add_argument("--rank-experiment", metavar="RANKS",
                   help="comma-separated ranks (e.g. 1d,5d,9d): one match per rank with --rank R appended to "
                        "the engine command, each in DIR/rank-R, and one table")


def _check_options(args) -> None:
    for flag, value, least in (("--games", args.games, 1), ("--parallel", args.parallel, 1),
                               ("--board-size", args.board_size, 2), ("--max-moves", args.max_moves, 1)):
        if value is not None and value < least:
            raise CommandError(f"{flag} must be at least {least}, not {value}")
    if args.board_size > 25:
        raise CommandError(f"--board-size must be at most 25 (GTP's largest board), not {args.board_size}")
    if not args.move_timeout > 0:
        raise CommandError(f"--move-timeout must be a positive number of seconds, not {args.move_timeout}")
    from kifunet.data_prep.rules.scoring import komi_problem

    problem = komi_problem(args.komi, args.board_size)
    if problem:
        raise CommandError(f"--komi: {problem}")
    if bool(args.openings) != (args.opening_moves is not None):
        raise CommandError("--openings and --opening-moves go together: --openings SOURCE... --opening-moves K")
    if args.opening_moves is not None and args.opening_moves < 1:
        raise CommandError(f"--opening-moves must be at least 1, not {args.opening_moves}")
    if args.rank_experiment is not None and not [r for r in args.rank_experiment.split(",") if r.strip()]:
        raise CommandError("--rank-experiment needs ranks separated by commas, e.g. 1d,5d,9d")


def run(args) -> int:
    """Exit status 0 when every game was played, 1 when some failed (a rerun plays them), 2 for bad input: an
    option, a program that cannot be found or does not start (its last stderr lines are shown), a directory of
    another match (reported by kifunet.cli)."""
    _check_options(args)
    from kifunet.play import match
    from kifunet.play.match_report import format_rank_table, format_summary

    referee = None if (args.referee or "").strip().lower() in ("", "none") else args.referee
    cfg = match.MatchConfig(engine=args.engine, opponent=args.opponent, games=args.games, board_size=args.board_size,
                            komi=args.komi, max_moves=args.max_moves, referee=referee, parallel=args.parallel,
                            out_dir=args.out, move_timeout=args.move_timeout, seed=args.seed,
                            resign=args.resign, openings=tuple(args.openings or ()),
                            opening_moves=args.opening_moves or 0)
    import sys

    from kifunet.play.match_report import LiveMoves

    def log(line: str) -> None:  # each line as it happens, also into a pipe or a file
        print(line, flush=True)

    progress = sys.stderr.isatty() if args.progress is None else args.progress
    if args.rank_experiment:
        ranks = [r.strip() for r in args.rank_experiment.split(",") if r.strip()]
        results = match.run_rank_experiment(cfg, ranks, log=log, live=LiveMoves if progress else None)
        print(format_rank_table(results, cfg))
        return 1 if any(s.failed for s in results.values()) else 0
    summary = match.run_match(cfg, log=log, live=LiveMoves() if progress else None)
    print(format_summary(summary, cfg))
    return 1 if summary.failed else 0
