"""The disk space a build needs: an estimate made before it starts, and checks before each HDF5 write.

:func:`estimate` gives the spill, the shards and the peak (their sum) from every record's moves, the share kept as
positions on at most :data:`SAMPLE` sampled records, and per-row and per-record sizes; the sampled share is a
measurement, not a bound (calibration: docs/building.md). :func:`shortfall` says why the free space of ``DIR``'s
file system is less than the estimated peak (less what an interrupted run left); :func:`ensure_free` raises a plain
``OSError(ENOSPC)`` naming the file before an HDF5 write that may not fit.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import shutil

import numpy as np

from ..sgf import inputs as inputs_mod
from ..datasets import shards as shards_mod

MB = 1_000_000
#: bytes of a record's ``games.json`` entry in the spill, measured: 1,042 a record (samples/gnugo, every game
#: counted: its ownership text is N*N bytes), 881 (KGS-2017_01, 149 of 733 counted)
GAME_BYTES = 1100
#: final gzip ``codes`` shards / spill, measured: 0.1032 (samples/gnugo), 0.1027 (KGS-2017_01), 0.1029 (KGS-2001)
SHARD_RATIO_GZIP_CODES = 0.105
#: bytes a record adds to the final files besides the shards (its ``rejects.jsonl`` line or games-table row),
#: measured: 187 (KGS-2017_01 with ``--preset gonn-kgs``, which filters every record)
RECORD_BYTES = 190
#: what an HDF5 file adds to its data (superblock, object headers, chunk index): slack of :func:`ensure_free`
HDF5_SLACK = 1 << 20

#: at most this many records are loaded and filtered to measure the share of moves the build keeps
SAMPLE = 400

_MOVE = re.compile(rb";\s*[BW]\[")


@dataclasses.dataclass(frozen=True)
class Scan:
    """What the build read of its inputs before it starts: ``records``, ``moves`` (:func:`count_moves`), and
    ``kept``, the share of moves kept as positions, measured on ``sampled`` records; None when the sample could
    not be measured (every move then counts as kept)."""
    records: int
    moves: int
    kept: float | None
    sampled: int


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A build's disk needs, in bytes: ``spill`` in ``DIR/.work``, ``shards`` in ``DIR/<split>/``; ``scan``: what
    they were estimated from."""
    scan: Scan
    spill: int
    shards: int

    @property
    def peak(self) -> int:
        return self.spill + self.shards


def count_moves(inputs: list[str]) -> list[int]:
    """The moves of every record of ``inputs`` (:func:`count_moves_in`), in order: one read, bytes only."""
    return [count_moves_in(src.data) for src in inputs_mod.iter_sources(inputs)]


def sample_step(records: int) -> int:
    """Every how many records the sample takes one: at most :data:`SAMPLE` records, spread evenly."""
    return max(1, -(-records // SAMPLE))


def count_moves_in(data: bytes | None) -> int:
    """The moves of one record's text (each ``;B[`` or ``;W[``)."""
    return len(_MOVE.findall(data)) if data is not None else 0


def raw_row_bytes(storage, n: int, num_stored: int) -> int:
    """A row's uncompressed bytes in a shard of ``storage``'s layout (``codes``: a code a point; ``packbits``: the
    packed planes; ``uint8``: a byte a plane) with its per-row columns: what a shard holds at most, about."""
    planes = {"codes": n * n, "packbits": -(-n * n * num_stored // 8), "uint8": n * n * num_stored}[storage.planes]
    return planes + sum(np.dtype(dt).itemsize for dt in shards_mod.COLUMN_DTYPES.values())


def shard_row_bytes(storage, n: int, num_stored: int, spill_row: int) -> float:
    """Estimated bytes a row takes in the shards: :data:`SHARD_RATIO_GZIP_CODES` of its spill row for gzip
    ``codes``, else :func:`raw_row_bytes`."""
    if storage.planes == "codes" and storage.compression == "gzip":
        return spill_row * SHARD_RATIO_GZIP_CODES
    return raw_row_bytes(storage, n, num_stored)


def estimate(cfg, fs, seen: Scan, spill_row: int) -> Estimate:
    """The disk needs of the build ``cfg`` with feature set ``fs``, from ``seen`` and ``spill_row`` (the bytes of a
    position in the spill). Rows: the moves times the share kept (eight each with ``--symmetries all``); spill:
    rows times ``spill_row`` plus :data:`GAME_BYTES` a record; shards: rows times :data:`SHARD_RATIO_GZIP_CODES` of
    ``spill_row`` for gzip ``codes``, else a row's uncompressed size, plus :data:`RECORD_BYTES` a record."""
    kept = 1.0 if seen.kept is None else seen.kept
    rows = round(seen.moves * kept) * (8 if cfg.symmetries == "all" else 1)
    spill = rows * spill_row + seen.records * GAME_BYTES
    shards = int(rows * shard_row_bytes(cfg.storage, cfg.filters.board_size, fs.num_stored, spill_row))
    shards += seen.records * RECORD_BYTES
    return Estimate(scan=seen, spill=spill, shards=shards)


def used_bytes(path: str) -> int:
    """Bytes of the files under ``path`` (0 if it does not exist)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                pass
    return total


def free_bytes(path: str) -> int:
    """Free bytes for this user on ``path``'s file system."""
    return shutil.disk_usage(path).free


def summary(est: Estimate, out: str, work: str, free: int) -> str:
    """The line the build prints before it starts."""
    sc = est.scan
    return (f"spill: about {est.spill / MB:,.1f} MB needed in {work} and {est.shards / MB:,.1f} MB for the shards "
            f"({free / MB:,.1f} MB free in {out}; {sc.records:,} records, {sc.moves:,} moves, "
            + ("all counted as kept)" if sc.kept is None else
               f"{sc.kept:.0%} of them kept by the filters in {sc.sampled:,} records sampled)"))


def shortfall(est: Estimate, out: str, free: int) -> str | None:
    """Why ``free`` bytes are not enough for ``est`` in ``out`` (what an interrupted run left there counts as
    written), or None when they are."""
    need = max(0, est.peak - used_bytes(out))
    if need <= free:
        return None
    return (f"{out}: not enough space for this build: it needs about {need / MB:,.1f} MB more (spill "
            f"{est.spill / MB:,.1f} MB, shards {est.shards / MB:,.1f} MB) and {free / MB:,.1f} MB are free; free "
            "space, or choose another --out (--no-space-check builds anyway)")


def ensure_free(path: str, need: int) -> None:
    """Raise ``OSError(ENOSPC)`` naming ``path`` unless its directory's file system has ``need`` +
    :data:`HDF5_SLACK` bytes free (called before HDF5 writes ``path``; see the module docstring)."""
    if free_bytes(os.path.dirname(path) or ".") < need + HDF5_SLACK:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
