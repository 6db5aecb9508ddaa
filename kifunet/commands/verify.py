"""``kifunet verify DATASET|RUN``: check every file of a built dataset against the sha256 and row counts its manifest
recorded (:func:`kifunet.data_prep.datasets.dataset.verify_dataset`), or every checkpoint step of a training run against
the checksums recorded when it was saved (:func:`kifunet.train.checkpointing.verify_checkpoints`).

Prints a line per step (intact, unsealed or damaged), or the manifest's line and one per split, then each problem
on its own line; exits 0 when everything is intact, else 2 with ``kifunet verify: error: N of M ... damaged``. A
damaged manifest or a path that is no dataset is one error line (exit 2). An HDF5 dataset needs neither JAX nor
TensorFlow.
"""

from __future__ import annotations

import argparse
import os

from kifunet.errors import CommandError

HELP = ("check a built dataset's files against the sha256 and row counts its manifest recorded, or a training "
        "run's checkpoints against their checksums")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DATASET|RUN", help="a directory written by `kifunet build` (or tfds:DIR, a "
                   "TFDS go_moves dataset), or a training run (its workdir, its checkpoints directory or one step)")


def report_lines(reports) -> list[str]:
    """One line per split, then one per note and per problem."""
    lines = []
    for r in reports:
        mb_s = f", {r.bytes / 1e6 / r.seconds:,.0f} MB/s" if r.seconds > 0 and r.bytes else ""
        lines.append(f"  {r.name}: {r.files - r.damaged} of {r.files} files ok, {r.damaged} damaged; {r.rows:,} rows, "
                     f"{r.bytes / 1e6:,.1f} MB, {r.seconds:.2f} s{mb_s}")
    for r in reports:
        lines += [f"  {r.name}: note: {n}" for n in r.notes]
    for r in reports:
        lines += [f"  {p}" for p in r.problems]
    return lines


def is_run(path: str) -> bool:
    """Whether ``path`` names checkpoints: a workdir holding ``checkpoints/``, that directory, or one step."""
    from kifunet.data_prep.fileio import store  # a local folder or a bucket URL

    return (store.isdir(os.path.join(path, "checkpoints"))
            or os.path.basename(os.path.normpath(path)) == "checkpoints"
            or store.isdir(os.path.join(path, "state")))


def verify_run(path: str) -> int:
    from kifunet.train.checkpointing import CHECKSUMS, DAMAGED, INTACT, UNSEALED, verify_checkpoints

    checks = verify_checkpoints(path)
    if not checks:
        raise CommandError(f"{path}: no checkpoint to verify")
    print(f"{path}:")
    for c in checks:
        size = f" ({c.files} files, {c.bytes / 1e6:,.1f} MB)" if c.files else ""
        why = f": {c.reason}" if c.reason else (": saved without checksums" if c.status != "intact" else "")
        print(f"  step {c.step}: {c.status}{size}{why}")
    damaged = [c for c in checks if c.status == DAMAGED]
    unsealed = [c for c in checks if c.status == UNSEALED]
    if damaged or unsealed:
        ok = ", ".join(str(c.step) for c in checks if c.status == INTACT) or "none"
        what = [f"{len(damaged)} of {len(checks)} checkpoint steps damaged"] if damaged else []
        if unsealed:
            what.append(f"{len(unsealed)}{'' if damaged else f' of {len(checks)} checkpoint steps'} unsealed (no "
                        f"{CHECKSUMS}: resuming the run's training checks and seals the step it resumes from)")
        raise CommandError(f"{', '.join(what)} in {path}; loadable: {ok}")
    print(f"{path}: no damaged step ({len(checks)} steps)")
    return 0


def run(args) -> int:
    if is_run(args.dataset) and not os.path.isfile(os.path.join(args.dataset, "manifest.json")):
        return verify_run(args.dataset)
    from kifunet.data_prep.datasets.dataset import is_tfds, verify_dataset

    reports = verify_dataset(args.dataset)  # no dataset, a damaged manifest: reported by kifunet.cli
    print(f"{args.dataset}:")
    if not is_tfds(args.dataset):
        from kifunet.data_prep.datasets.manifest import read_manifest, seal_line

        print(f"  {seal_line(read_manifest(args.dataset))}")
    for line in report_lines(reports):
        print(line)
    damaged, files = sum(r.damaged for r in reports), sum(r.files for r in reports)
    if damaged:
        raise CommandError(f"{damaged} of {files} files damaged in {args.dataset}")
    print(f"{args.dataset}: intact ({files} files)")
    return 0
