"""The option surface of a dataset build, shared by ``kifunet build`` and ``kifunet tfds``: one set of argparse
definitions (:func:`add_dataset_options`), one resolution (:func:`dataset_options`) and one console report
(:func:`report`). Precedence, lowest first: the preset's values < a named base's options < the options file < the
flags. The preset is ``--preset``, else the options file's, else the base's; ``--features`` replaces the base's
feature set, ``--split`` the preset's splits and ``--hash-split`` the base's hash splits. Imports nothing heavy
(``kifunet --help`` builds every command's parser).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

SOURCES = ("kgs", "fox", "ogs", "tygem", "gogod", "go4go", "other")  # = kifunet.data_prep.profiles.SOURCES


def add_dataset_options(p: argparse.ArgumentParser, *, options_file_flags=("--options-file",)) -> None:
    """The feature set, preset, options file, declared source, game and move filters, splits and ``--allow-empty``.
    ``options_file_flags``: the option-file flag spellings (``kifunet build`` also takes ``--config FILE``;
    ``kifunet tfds`` keeps ``--config`` for its named configs)."""
    p.add_argument("--features", default=None, metavar="NAME",
                   help="feature set (see `kifunet features`; default maddison, or the named config's)")
    p.add_argument("--preset", metavar="NAME", help="filter/split preset: gonn-kgs, gonn-gogod, fox-pro")
    p.add_argument(*options_file_flags, dest="options_file", metavar="FILE",
                   help="JSON or TOML file of filter/split options (preset < file < flags)")
    # the choices are kifunet.data_prep.profiles.SOURCES (not imported here: see the module docstring;
    # tests/test_dataset_profiles.py checks they agree)
    p.add_argument("--source", choices=SOURCES, default=None, metavar="NAME",
                   help="the games' source, which wins over what each record says (PC, AP, path): "
                        f"{', '.join(SOURCES)} (presets gonn-kgs, gonn-gogod, fox-pro declare kgs, gogod, fox)")
    p.add_argument("--allow-empty", action="store_true",
                   help="exit 0 when no position is written (default: exit 2 with the accounting printed)")

    f = p.add_argument_group("game filters")
    f.add_argument("--board-size", type=int, metavar="N", help="keep games of this size (default 19)")
    f.add_argument("--no-handicap", dest="no_handicap", action="store_const", const=True,
                   help="drop handicap games (HA >= 2)")
    f.add_argument("--allow-handicap", dest="no_handicap", action="store_const", const=False,
                   help="keep handicap games (undoes a preset's --no-handicap)")
    f.add_argument("--min-both-rank", metavar="RANK", help="game rule: both players at least RANK (e.g. 6d)")
    f.add_argument("--min-either-rank", metavar="RANK",
                   help="game rule: one player at least RANK; with --min-both-rank either rule suffices")
    f.add_argument("--date-from", metavar="DATE", help="first date kept (YYYY, YYYY-MM or YYYY-MM-DD)")
    f.add_argument("--date-to", metavar="DATE", help="last date kept (inclusive; YYYY covers the whole year)")
    f.add_argument("--min-moves", type=int, metavar="N", help="drop games with fewer than N moves")
    # the choices and kinds are kifunet.data_prep.building.filters.RESULT_CHOICES and results.KINDS (not imported here:
    # see the module docstring; tests/test_results.py checks they agree)
    f.add_argument("--result", choices=("any", "known"), default=None,
                   help="known: drop games whose result is unknown or void (no RE, RE[?], Void, unreadable), "
                        "so every position has a value target (default any)")
    f.add_argument("--ended", metavar="KINDS",
                   help="keep games that ended one of these ways, comma-separated: resign, score, time, forfeit, "
                        "win (a winner, how not said), draw, void, unknown")
    f.add_argument("--dedupe", action=argparse.BooleanOptionalAction, default=None,
                   help="drop later copies of a game: same moves, players, date, result and time settings "
                        "(default on)")

    m = p.add_argument_group("move filters")
    m.add_argument("--min-rank", metavar="RANK", help="keep moves by players of at least RANK (e.g. 6d)")
    m.add_argument("--min-opponent-rank", metavar="RANK", help="keep moves whose opponent is at least RANK")
    m.add_argument("--skip-first", type=int, metavar="N", help="drop the first N moves of every game")
    m.add_argument("--include-passes", action=argparse.BooleanOptionalAction, default=None,
                   help="keep pass moves as positions (default off)")

    s = p.add_argument_group("splits")
    s.add_argument("--split", action="append", metavar="NAME:RANGES",
                   help="date split, repeatable: train:2000-2014, test:2015, train:2001-2003,2006, "
                        "test:2015-01..2015-06, train:rest (replaces the preset's splits)")
    s.add_argument("--val-fraction", type=float, metavar="F",
                   help="move a deterministic game-hash fraction F of train to a 'val' split")
    s.add_argument("--hash-split", action="append", metavar="NAME:F[:FROM]",
                   help="move a game-hash fraction F of split FROM (default train) to NAME")


@dataclasses.dataclass
class DatasetOptions:
    """The resolved options: what the positions of a build depend on, besides its inputs."""

    features: str
    preset: str | None
    filters: object  # kifunet.data_prep.building.filters.Filters
    splits: object  # kifunet.data_prep.building.splits.SplitRule
    options: dict  # the resolved option dict, as recorded in the manifest / TFDS metadata (hash_splits included)
    allow_empty: bool = False
    source: str | None = None  # the declared source (--source, or the preset's), None when none is declared


def dataset_options(args, *, preset: str | None = None, features: str | None = None,
                    options: dict | None = None) -> DatasetOptions:
    """Resolve the flags of :func:`add_dataset_options` over a base (``preset``, ``features``, ``options``: a
    named config's; see the module docstring). Raises :class:`~kifunet.data_prep.errors.InvalidValue` for a bad
    value."""
    from kifunet.data_prep.building import filters, splits

    base = dict(options or {})
    base_hash = base.pop("hash_splits", None)
    config = dict(base)
    if getattr(args, "options_file", None):
        config.update(filters.load_config_file(args.options_file))
    overrides = {k: getattr(args, k) for k in filters.FILTER_KEYS if getattr(args, k, None) is not None}
    if args.preset:
        overrides["preset"] = args.preset
    if args.split:
        overrides["splits"] = list(args.split)
    if args.val_fraction is not None:
        overrides["val_fraction"] = args.val_fraction
    if getattr(args, "source", None) is not None:
        overrides["source"] = args.source
    opts = filters.resolve(preset=preset, config=config, overrides=overrides)
    hash_splits = list(args.hash_split) if args.hash_split else (list(base_hash) if base_hash else None)
    filt = filters.filters_from_options(opts)
    rule = splits.make_rule(opts.get("splits"), hash_splits, opts.get("val_fraction"))
    recorded = dict(opts)
    if hash_splits:
        recorded["hash_splits"] = hash_splits
    return DatasetOptions(features=args.features or features or "maddison", preset=opts.get("preset"),
                          filters=filt, splits=rule, options=recorded,
                          allow_empty=bool(getattr(args, "allow_empty", False)),
                          source=filters.source_from_options(opts))


def report(prog: str, out: str, meta: dict, details: tuple[str, str], *, allow_empty: bool) -> int:
    """Print a finished build's accounting (:func:`kifunet.data_prep.datasets.manifest.summary_lines`: counts, splits,
    filters, rejects and input errors by reason) and return the exit status: 2 with ``PROG: error: no
    positions written (...)`` on stderr when no split received a position, unless ``allow_empty``.
    ``meta``: the HDF5 manifest or the TFDS ``kifunet`` metadata; ``details``: (its path, rejects.jsonl)."""
    from kifunet.data_prep.datasets.manifest import summary_lines

    for line in summary_lines(out, meta, details):
        print(line)
    if any(s["positions"] for s in meta["splits"].values()) or allow_empty:
        return 0
    c = meta["counts"]
    errs = [e for i in meta["inputs"] for e in i["errors"]]
    why = (f"{c['seen']} records seen, {c['used']} used, {sum(c['filtered'].values())} filtered, "
           f"{sum(c['rejected'].values())} rejected" if c["seen"] else "the inputs hold no SGF record")
    if errs:
        why += f", {len(errs)} input errors"
    print(f"{prog}: error: no positions written ({why}); see {os.fspath(details[1])}, "
          "or pass --allow-empty to accept an empty dataset", file=sys.stderr)
    return 2
