"""``kifunet tfds --config kgs_maddison --manual-dir ARCHIVES --data-dir DIR [options] [--beam BEAM_OPTIONS...]``:
build the TFDS ``go_moves`` dataset (array_record; :mod:`kifunet.data_prep.building.tfds_go_moves`).

The options, their resolution and the summary are ``kifunet build``'s (:mod:`kifunet.commands.dataset_options`);
options that change a named config's positions make a custom config (``--name``, default ``CONFIG_`` + 8 hex
digits of the options' hash). Exit status as ``kifunet build``'s: 2 for a bad option, and 2 when no split
received a position unless ``--allow-empty`` (the empty dataset is still written). An empty ``--manual-dir`` is
an error even with ``--allow-empty``. docs/tfds.md has the rest.
"""

from __future__ import annotations

import argparse
import itertools
import os

from kifunet.errors import CommandError

from .dataset_options import add_dataset_options, dataset_options, report

HELP = "build the TFDS go_moves dataset (array_record) from SGF archives; --beam for an Apache Beam pipeline"
ACCEPTS_EXTRA_ARGS = True  # with --beam: Apache Beam pipeline options (--runner=..., --direct_num_workers=...)

# Kept here (not imported from the builder) so that `kifunet --help` does not import tensorflow_datasets; a test
# checks they equal GoMoves.BUILDER_CONFIGS.
CONFIGS = tuple(f"{p}_{f}" for p, f in itertools.product(("kgs", "gogod"), ("maddison", "alphago", "agz", "gonn")))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="kgs_maddison", choices=CONFIGS,
                   help="named config PROTOCOL_FEATURES: kgs = preset gonn-kgs, gogod = preset gonn-gogod "
                        "(default kgs_maddison); the options below override it")
    p.add_argument("--name", metavar="NAME",
                   help="TFDS config name of a dataset whose options differ from --config's (default "
                        "CONFIG_<hash of the options>)")
    p.add_argument("--manual-dir", required=True, help="the SGF archives, .sgf files or directories of them")
    p.add_argument("--data-dir", required=True,
                   help="TFDS data directory (the dataset goes to DATA_DIR/go_moves/NAME/VERSION)")
    p.add_argument("--workers", type=int, default=0, help="encode processes without Beam (default 0: this process)")
    p.add_argument("--beam", action="store_true",
                   help="build with an Apache Beam pipeline; the arguments this command does not know are its "
                        "pipeline options (default --runner=DirectRunner); needs `pip install 'kifunet[beam]'`")
    # feature set, preset, options file, filters, splits, --allow-empty: the same definitions as `kifunet build`
    add_dataset_options(p, options_file_flags=("--options-file",))


def run(args) -> int:
    if args.extra and not args.beam:
        raise CommandError(f"unrecognized arguments: {' '.join(args.extra)} (Beam pipeline options need --beam)")
    from etils import epath

    from kifunet.data_prep.building import tfds_go_moves
    from kifunet.data_prep.datasets.tfds_reader import METADATA, kifunet_metadata

    # a bad option value, a dataset of other options there (InvalidValue, UnknownName): reported by the CLI
    base = tfds_go_moves.named_config(args.config)
    opts = dataset_options(args, preset=base.preset, features=base.features, options=base.options)
    config = tfds_go_moves.config_from_options(args.config, opts, name=args.name)
    b = tfds_go_moves.build_dataset(config, args.manual_dir, args.data_dir, workers=args.workers,
                                    beam=args.beam, beam_args=args.extra)
    d = epath.Path(b.data_dir)
    return report("kifunet tfds", os.fspath(d), kifunet_metadata(b), (d / METADATA, d / tfds_go_moves.REJECTS),
                  allow_empty=opts.allow_empty)
