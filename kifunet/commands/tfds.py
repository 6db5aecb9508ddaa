"""``kifunet tfds --config kgs_maddison --manual-dir ARCHIVES --data-dir DIR [--workers N] [--beam BEAM_OPTIONS...]``:
build the TFDS ``go_moves`` dataset (array_record; :mod:`kifunet.data_prep.tfds_go_moves`)."""

from __future__ import annotations

import argparse
import itertools

HELP = "build the TFDS go_moves dataset (array_record) from SGF archives; --beam for an Apache Beam pipeline"
ACCEPTS_EXTRA_ARGS = True  # with --beam: Apache Beam pipeline options (--runner=..., --direct_num_workers=...)

# Kept here (not imported from the builder) so that `kifunet --help` does not import tensorflow_datasets; a test
# checks they equal GoMoves.BUILDER_CONFIGS.
CONFIGS = tuple(f"{p}_{f}" for p, f in itertools.product(("kgs", "gogod"), ("maddison", "alphago", "agz", "gonn")))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="kgs_maddison", choices=CONFIGS,
                   help="PROTOCOL_FEATURES: kgs = preset gonn-kgs, gogod = preset gonn-gogod (default kgs_maddison)")
    p.add_argument("--manual-dir", required=True, help="the SGF archives, .sgf files or directories of them")
    p.add_argument("--data-dir", required=True,
                   help="TFDS data directory (the dataset goes to DATA_DIR/go_moves/CONFIG/VERSION)")
    p.add_argument("--workers", type=int, default=0, help="encode processes without Beam (default 0: this process)")
    p.add_argument("--beam", action="store_true",
                   help="build with an Apache Beam pipeline; the arguments this command does not know are its "
                        "pipeline options (default --runner=DirectRunner); needs `pip install 'kifunet[beam]'`")


def run(args) -> int:
    if args.extra and not args.beam:
        raise SystemExit(f"kifunet tfds: error: unrecognized arguments: {' '.join(args.extra)} "
                         "(Beam pipeline options need --beam)")
    from kifunet.data_prep import tfds_go_moves

    b = tfds_go_moves.build_dataset(args.config, args.manual_dir, args.data_dir, workers=args.workers,
                                    beam=args.beam, beam_args=args.extra)
    print(tfds_go_moves.summary_text(b))
    return 0
