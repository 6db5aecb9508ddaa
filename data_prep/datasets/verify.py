"""Integrity of a built dataset: each file is checked against the sha256 and row count its manifest recorded
before any of its rows is used; a difference raises
:class:`~kifunet.data_prep.datasets.dataset_base.CorruptDatasetError` with a one-line message.

:func:`check_shard` checks an HDF5 shard (sha256, then its rows: the ``rows`` attribute and the length of every
dataset agree; a missing or unreadable file likewise), a split's ``games.h5`` is checked where the manifest records
its sha256, and :func:`check_tfds_file` checks an array_record file (its sha256 where the metadata records one, its
records against ``dataset_info.json``). A file's bytes are hashed at most once per process, keyed by (realpath,
size, mtime_ns); a pickled split carries what was found to workers (:func:`found_entries`, :func:`adopt`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os

from kifunet.data_prep.fileio import store

from .dataset_base import CorruptDatasetError

#: (realpath, size, mtime_ns) -> {"sha256": hex, "rows": int} found in that file by this process (or adopted)
_FOUND: dict[tuple, dict] = {}

_HASH_BLOCK = 1 << 20


def file_key(path: str) -> tuple:
    """(realpath, size, mtime_ns) of ``path``: what the cache of checked files is keyed by."""
    st = os.stat(path)
    return os.path.realpath(path), st.st_size, st.st_mtime_ns


def _key_or_missing(path: str, fix: str) -> tuple:
    try:
        return file_key(path)
    except FileNotFoundError:
        raise CorruptDatasetError.at(path, "missing (the manifest lists it)", fix) from None
    except OSError as e:
        raise CorruptDatasetError.at(path, f"cannot be read ({e.strerror or e})", fix) from None


def file_sha256(path: str) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (``OSError`` as the system raises it); the one file hash
    of the project's checks (datasets here, checkpoints in :mod:`kifunet.train.checkpointing`)."""
    h = hashlib.sha256()
    with store.open(path, "rb") as f:  # a local file, or an object (a checkpoint in a bucket)
        while block := f.read(_HASH_BLOCK):
            h.update(block)
    return h.hexdigest()


def sha256(path: str, fix: str = CorruptDatasetError.REBUILD) -> str:
    """The sha256 of the file's bytes (hashed once per process while its size and mtime stay the same)."""
    key = _key_or_missing(path, fix)
    found = _FOUND.get(key)
    if found is not None and "sha256" in found:
        return found["sha256"]
    try:
        digest = file_sha256(path)
    except OSError as e:
        raise CorruptDatasetError.at(path, f"cannot be read ({e.strerror or e})", fix) from None
    if file_key(path) == key:  # not rewritten while it was read
        _FOUND.setdefault(key, {})["sha256"] = digest
    return digest


def check_bytes(path: str, expected: str, fix: str = CorruptDatasetError.REBUILD, what: str = "manifest") -> None:
    """Raise :class:`CorruptDatasetError` unless the file's sha256 is ``expected``."""
    found = sha256(path, fix)
    if found != expected:
        raise CorruptDatasetError.at(path, f"sha256 {found[:16]}... != {what}'s {str(expected)[:16]}...; the file "
                                           "is damaged", fix)


def check_rows(path: str, found: int, expected: int, fix: str = CorruptDatasetError.REBUILD,
               what: str = "manifest") -> None:
    if int(found) != int(expected):
        raise CorruptDatasetError.at(path, f"the file holds {int(found):,} rows, the {what} says {int(expected):,}; "
                                           f"the {what} or the file was changed", fix)


def hdf5_rows(path: str, fix: str = CorruptDatasetError.REBUILD) -> int:
    """The rows an HDF5 shard holds: its ``rows`` attribute, which ``planes`` and every column must match."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            stated = int(f.attrs["rows"]) if "rows" in f.attrs else None
            lengths = {k: int(f[k].shape[0]) for k in f.keys() if k != "plane_codes"}
    except FileNotFoundError:
        raise CorruptDatasetError.at(path, "missing (the manifest lists it)", fix) from None
    except (OSError, KeyError, ValueError) as e:
        why = (str(e).splitlines() or [type(e).__name__])[0]
        raise CorruptDatasetError.at(path, f"HDF5 cannot read it ({why}); the file is damaged or cut", fix) from None
    if "planes" not in lengths:
        raise CorruptDatasetError.at(path, "no 'planes' dataset; not a kifunet shard", fix)
    rows = lengths["planes"] if stated is None else stated
    bad = {k: n for k, n in lengths.items() if n != rows}
    if bad:
        k, n = sorted(bad.items())[0]
        raise CorruptDatasetError.at(path, f"{k!r} has {n:,} rows, the file says {rows:,}; the file is damaged", fix)
    return rows


def check_shard(path: str, entry: dict, fix: str = CorruptDatasetError.REBUILD) -> None:
    """An HDF5 shard against its manifest entry (``sha256``, ``rows``): bytes first, then rows (see the module
    docstring). Cached per process by :func:`file_key`."""
    if "sha256" in entry:
        check_bytes(path, entry["sha256"], fix)
    key = _key_or_missing(path, fix)
    found = _FOUND.get(key, {})
    rows = found.get("rows")
    if rows is None:
        rows = hdf5_rows(path, fix)
        if file_key(path) == key:
            _FOUND.setdefault(key, {})["rows"] = rows
    check_rows(path, rows, entry["rows"], fix)


def array_record_rows(path: str, fix: str = CorruptDatasetError.REBUILD_TFDS) -> int:
    """The records an array_record file holds."""
    from array_record.python.array_record_module import ArrayRecordReader

    try:
        r = ArrayRecordReader(os.fspath(path))
        try:
            return int(r.num_records())
        finally:
            r.close()
    except (OSError, RuntimeError, ValueError) as e:
        why = (str(e).splitlines() or [type(e).__name__])[0][:200]
        raise CorruptDatasetError.at(path, f"array_record cannot read it ({why}); the file is damaged or cut",
                                     fix) from None


def check_tfds_file(path: str, rows: int, sha: str | None) -> None:
    """A TFDS array_record file: its bytes against ``sha`` (None: no checksum recorded, not checked), then the
    records it holds against ``rows`` (``dataset_info.json``'s shard length). Cached per process."""
    fix = CorruptDatasetError.REBUILD_TFDS
    if sha is not None:
        check_bytes(path, sha, fix, what="metadata")
    key = _key_or_missing(path, fix)
    found = _FOUND.get(key, {}).get("rows")
    if found is None:
        found = array_record_rows(path, fix)
        if file_key(path) == key:
            _FOUND.setdefault(key, {})["rows"] = found
    check_rows(path, found, rows, fix, what="dataset_info.json")


def found_entries(paths) -> list:
    """The cache entries of ``paths`` (those checked in this process and unchanged since), for :func:`adopt` in
    another process."""
    out = []
    for p in paths:
        try:
            key = file_key(p)
        except OSError:
            continue
        if key in _FOUND:
            out.append((key, dict(_FOUND[key])))
    return out


def adopt(entries) -> None:
    """Take over what another process found (:func:`found_entries`); an entry counts only while the file keeps
    that realpath, size and mtime."""
    for key, found in entries or ():
        _FOUND.setdefault(tuple(key), {}).update(found)


def forget() -> None:
    """Empty the cache (tests, benchmarks)."""
    _FOUND.clear()


# ------------------------------------------------------------------------------------------------------------
# reports (kifunet verify)

@dataclasses.dataclass
class SplitReport:
    """What checking one split found (:func:`kifunet.data_prep.datasets.dataset.verify_dataset`): ``files`` checked,
    ``problems`` (one line each), ``rows`` (as recorded), ``bytes`` read, ``seconds`` taken, ``notes`` (what could
    not be checked)."""

    name: str
    files: int = 0
    rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    problems: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)

    @property
    def damaged(self) -> int:
        return len(self.problems)
