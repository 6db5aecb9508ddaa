"""Open a split of a built dataset, whatever its container: :func:`open_split` (the one entry point).

Specs: ``DIR`` (a ``kifunet build`` output, HDF5: :class:`kifunet.data_prep.datasets.reader.Reader`); ``tfds:DIR``
or a ``DIR`` holding ``dataset_info.json`` (a prepared TFDS ``go_moves`` directory:
:class:`kifunet.data_prep.datasets.tfds_reader.TfdsReader`); ``tfds:go_moves/CONFIG[:VERSION]@DATA_DIR``; and
``tfds:go_moves/CONFIG`` under ``$TFDS_DATA_DIR`` (else ``~/tensorflow_datasets``). TFDS is imported only for a
TFDS spec. Both readers implement :class:`kifunet.data_prep.datasets.dataset_base.DatasetSplit` and raise its
errors, re-exported here. :func:`verify_dataset` checks every file of a dataset (``kifunet verify``).
"""

from __future__ import annotations

import os
import time

from .dataset_base import (CorruptDatasetError, DatasetError, DatasetSplit, EmptySplitError, NotADatasetError,
                           UnknownSplitError)
from .manifest import MANIFEST, check_manifest, quiet_unsealed, read_manifest
from .reader import Reader

TFDS_PREFIX = "tfds:"

__all__ = ["CorruptDatasetError", "DatasetError", "DatasetSplit", "EmptySplitError", "NotADatasetError",
           "TFDS_PREFIX", "UnknownSplitError", "describe", "is_tfds", "open_split", "parse_tfds", "verify_dataset"]


def is_tfds(spec) -> bool:
    """Whether ``spec`` names a TFDS dataset (``tfds:`` prefix, or a directory holding ``dataset_info.json``)."""
    if not isinstance(spec, (str, os.PathLike)):
        return False
    spec = os.fspath(spec)
    return spec.startswith(TFDS_PREFIX) or (not os.path.isfile(os.path.join(spec, MANIFEST))
                                            and os.path.isfile(os.path.join(spec, "dataset_info.json")))


def parse_tfds(spec: str) -> tuple[str, str | None]:
    """``tfds:DIR`` / ``tfds:NAME@DATA_DIR`` / ``tfds:NAME`` -> (dataset directory or name, data_dir)."""
    spec = os.fspath(spec)
    spec = spec[len(TFDS_PREFIX):] if spec.startswith(TFDS_PREFIX) else spec
    if os.path.isfile(os.path.join(spec, "dataset_info.json")):
        return spec, None
    name, sep, data_dir = spec.partition("@")
    return name, (data_dir if sep else os.environ.get("TFDS_DATA_DIR") or None)


def open_split(spec, split: str = "train", *, assemble: bool = True, require_rows: bool = False,
               add_planes: str = "", profile: bool = False, targets: bool = False) -> DatasetSplit:
    """The split ``split`` of the dataset ``spec`` (the specs of the module docstring), files not yet open.

    ``add_planes``: constant-only feature sets added to its own (:meth:`DatasetSplit.add_constant_planes`).
    ``profile``: batches carry the rows' game fields (:meth:`DatasetSplit.with_profile`); ``targets``: their
    ownership and score targets (:meth:`DatasetSplit.with_targets`; HDF5 builds only). ``assemble=False``:
    batches hold ``stored`` instead of ``planes``. Raises :class:`NotADatasetError`, :class:`UnknownSplitError`,
    and with ``require_rows`` :class:`EmptySplitError`."""
    if is_tfds(spec):
        from .tfds_reader import TfdsReader

        name, data_dir = parse_tfds(spec)
        out = TfdsReader(name, split, data_dir=data_dir, assemble=assemble)
    else:
        out = Reader(os.fspath(spec), split, assemble=assemble)
    if require_rows and len(out) == 0:
        raise EmptySplitError.at(os.fspath(spec), split)
    return out.add_constant_planes(add_planes).with_profile(profile).with_targets(targets)


def verify_dataset(spec) -> list:
    """Check every file of every split of ``spec`` afresh: one :class:`~kifunet.data_prep.datasets.verify.SplitReport`
    per split, a damaged file being a problem of its report. Raises :class:`NotADatasetError`, and
    :class:`CorruptDatasetError` for a manifest that is not whole."""
    from . import verify

    verify.forget()
    if is_tfds(spec):
        from .tfds_reader import TfdsReader, kifunet_metadata, open_builder

        name, data_dir = parse_tfds(spec)
        builder = open_builder(name, data_dir)
        names = list(kifunet_metadata(builder).get("splits") or builder.info.splits)
        splits = (TfdsReader(os.fspath(builder.data_dir), s) for s in names)
    else:
        root = os.fspath(spec)
        if not os.path.isfile(os.path.join(root, MANIFEST)):
            raise NotADatasetError.at(root, f"no {MANIFEST}")
        m = read_manifest(root)
        check_manifest(m, root, warn=False)  # kifunet verify reports a manifest without its seal
        quiet_unsealed(root)
        splits = (Reader(root, s) for s in m["splits"])
    out = []
    for r in splits:
        t0 = time.perf_counter()
        rep = verify.SplitReport(r.split, rows=len(r))
        for path, check, note in r.file_checks():
            if note and note not in rep.notes:
                rep.notes.append(note)
            if check is None:
                continue
            rep.files += 1
            rep.bytes += os.path.getsize(path) if os.path.isfile(path) else 0
            try:
                check()
            except CorruptDatasetError as e:
                rep.problems.append(str(e))
        rep.seconds = time.perf_counter() - t0
        out.append(rep)
    return out


def describe(spec, split: str, add_planes: str = "") -> dict:
    """Shape facts of a split: ``rows``, ``board_size``, ``features``, ``num_planes``, ``shards``, after checking
    its files (:meth:`DatasetSplit.verify`)."""
    with open_split(spec, split, add_planes=add_planes) as s:
        s.verify()
        return s.describe()
