"""``kifunet build INPUT... --out DIR``: SGF files, directories and archives -> sharded HDF5 + manifest.json."""

from __future__ import annotations

import argparse
import os
import sys

HELP = "build a dataset: SGF files, directories and archives -> shuffled HDF5 shards and a manifest"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help=".sgf files, directories (recursive), .zip/.tar/.tar.gz/.tgz/.tar.bz2 archives")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="output directory")
    p.add_argument("--features", default="maddison", metavar="NAME",
                   help="feature set (see `kifunet features`; default maddison)")
    p.add_argument("--preset", metavar="NAME", help="filter/split preset: gonn-kgs")
    p.add_argument("--config", metavar="FILE",
                   help="JSON or TOML file of filter/split options (preset < config < flags)")

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
    f.add_argument("--dedupe", action=argparse.BooleanOptionalAction, default=None,
                   help="drop games whose moves repeat an earlier game (default on)")

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

    o = p.add_argument_group("output")
    o.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    o.add_argument("--shard-size", type=int, default=65536, metavar="ROWS", help="rows per shard at most (65536)")
    o.add_argument("--planes", choices=("codes", "packbits", "uint8"), default="codes",
                   help="plane layout: per-shard point codes (default), flat np.packbits, or uint8")
    o.add_argument("--compression", choices=("gzip", "lzf", "none"), default="gzip", help="codec (default gzip)")
    o.add_argument("--compression-level", type=int, default=4, metavar="L", help="gzip level 1-9 (default 4)")
    o.add_argument("--chunk-rows", type=int, default=256, metavar="ROWS", help="HDF5 chunk rows (default 256)")
    o.add_argument("--symmetries", choices=("none", "all"), default="none",
                   help="none: store each position once (augment at load time); all: store the 8 copies")

    r = p.add_argument_group("running")
    r.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: all cores); 0 runs in this process")
    r.add_argument("--unit-games", type=int, default=256, metavar="N", help="records per work unit (256)")
    r.add_argument("--overwrite", action="store_true", help="replace a different dataset or unfinished build in DIR")
    r.add_argument("--keep-work", action="store_true", help="keep DIR/.work (spill files) after the build")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")


def config_from_args(args):
    from kifunet.data_prep import build, filters, shards, splits

    config = filters.load_config_file(args.config) if args.config else {}
    overrides = {k: getattr(args, k) for k in filters.FILTER_KEYS if getattr(args, k, None) is not None}
    if args.preset:
        overrides["preset"] = args.preset
    if args.split:
        overrides["splits"] = list(args.split)
    if args.val_fraction is not None:
        overrides["val_fraction"] = args.val_fraction
    opts = filters.resolve(config=config, overrides=overrides)
    filt = filters.filters_from_options(opts)
    rule = splits.make_rule(opts.get("splits"), args.hash_split, opts.get("val_fraction"))
    storage = shards.Storage(planes=args.planes, compression=args.compression, level=args.compression_level,
                             chunk_rows=args.chunk_rows)
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    opts_json = dict(opts)
    if args.hash_split:
        opts_json["hash_splits"] = list(args.hash_split)
    return build.BuildConfig(
        inputs=list(args.inputs), out=args.out, features=args.features, filters=filt, splits=rule, seed=args.seed,
        storage=storage, shard_rows=args.shard_size, unit_games=args.unit_games, symmetries=args.symmetries,
        workers=workers, preset=opts.get("preset"), options=opts_json, overwrite=args.overwrite,
        keep_work=args.keep_work, progress=args.progress)


def run(args) -> int:
    from kifunet.data_prep import build

    try:
        cfg = config_from_args(args)
        manifest = build.build(cfg)
    except (build.BuildError, ValueError, KeyError, FileNotFoundError) as e:
        print(f"kifunet build: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    c = manifest["counts"]
    print(f"{args.out}: {c['seen']} records seen = {c['used']} used + {sum(c['filtered'].values())} filtered "
          f"+ {sum(c['rejected'].values())} rejected")
    for name, s in manifest["splits"].items():
        print(f"  {name}: {s['games']} games, {s['positions']} positions, {len(s['shards'])} shards")
    for reason, n in sorted({**{f"filtered {k}": v for k, v in c["filtered"].items()},
                             **{f"rejected {k}": v for k, v in c["rejected"].items()}}.items()):
        print(f"  {reason}: {n}")
    errs = [e for i in manifest["inputs"] for e in i["errors"]]
    for e in errs:
        print(f"  input error {e['reason']}: {e['path']} ({e['detail']})")
    print(f"  details: {os.path.join(args.out, build.MANIFEST)}, {os.path.join(args.out, build.REJECTS)}")
    return 0
