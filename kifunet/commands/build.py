"""``kifunet build INPUT... --out DIR``: SGF files, directories and archives -> sharded HDF5 + manifest.json.

Exit status: 0 when the dataset holds positions; 2 for a bad option, an unusable output directory (one line,
:mod:`kifunet.errors`), too little free space (``--no-space-check`` builds anyway), or no position in any split
(the accounting printed, then ``kifunet build: error: no positions written (...)``; the manifest and
``rejects.jsonl`` are still written; ``--allow-empty`` accepts it). docs/building.md has the rest.
"""

from __future__ import annotations

import argparse
import errno
import os

from kifunet import errors
from kifunet.errors import CommandError

from .dataset_options import add_dataset_options, dataset_options, report

HELP = "build a dataset: SGF files, directories and archives -> shuffled HDF5 shards and a manifest"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help=".sgf files, directories (recursive), .zip/.tar/.tar.gz/.tgz/.tar.bz2 archives")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="output directory")
    # feature set, preset, options file (--config FILE), filters, splits, --allow-empty: shared with `kifunet tfds`
    add_dataset_options(p, options_file_flags=("--config", "--options-file"))

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
    o.add_argument("--no-targets", dest="targets", action="store_false",
                   help="leave out the ownership targets (the dead-stone estimate of each counted game); training "
                        "an ownership head on the dataset is then refused")

    r = p.add_argument_group("running")
    r.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: all cores); 0 runs in this process")
    r.add_argument("--unit-games", type=int, default=256, metavar="N", help="records per work unit (256)")
    r.add_argument("--overwrite", action="store_true", help="replace a different dataset or unfinished build in DIR")
    r.add_argument("--keep-work", action="store_true", help="keep DIR/.work (spill files) after the build")
    r.add_argument("--no-space-check", dest="space_check", action="store_false",
                   help="build even when the estimated disk space needed exceeds the free space")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")


def config_from_args(args):
    from kifunet.data_prep.building import build
    from kifunet.data_prep.datasets import shards

    d = dataset_options(args)
    storage = shards.Storage(planes=args.planes, compression=args.compression, level=args.compression_level,
                             chunk_rows=args.chunk_rows)
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    return build.BuildConfig(
        inputs=list(args.inputs), out=args.out, features=d.features, filters=d.filters, splits=d.splits,
        seed=args.seed, storage=storage, shard_rows=args.shard_size, unit_games=args.unit_games,
        symmetries=args.symmetries, targets=args.targets, workers=workers, preset=d.preset, source=d.source,
        options=d.options, overwrite=args.overwrite,
        keep_work=args.keep_work, progress=args.progress, space_check=args.space_check)


def run(args) -> int:
    from kifunet.data_prep.building import build
    from kifunet.data_prep.datasets.manifest import MANIFEST, REJECTS

    try:
        manifest = build.build(config_from_args(args))  # InvalidValue, BuildError, Busy: reported by the CLI
    except OSError as e:
        if errors.fault_errno(e) not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise CommandError(f"{errors.describe(e)}; then rerun the same command: the build resumes where it "
                           "stopped") from e
    return report("kifunet build", args.out, manifest,
                  (os.path.join(args.out, MANIFEST), os.path.join(args.out, REJECTS)), allow_empty=args.allow_empty)
