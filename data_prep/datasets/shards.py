"""HDF5 shard files: layout, writer (atomic, byte-reproducible) and low-level reader.

A shard ``DIR/<split>/shard-00000.h5`` holds R shuffled rows: the stored planes in one of the layouts of
``Storage.planes`` (``codes``, ``packbits``, ``uint8``) and one value per row of each column of
:data:`COLUMN_DTYPES`; a column the file lacks reads as :data:`COLUMN_DEFAULTS`. Equal content gives equal bytes;
a shard is written to ``NAME.h5.tmp`` and renamed once complete. The layouts and attributes: docs/building.md
("File formats").
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import h5py
import numpy as np
from numba import njit

from kifunet.data_prep.fileio.atomic import atomic_path

from .. import profiles
from ..errors import InvalidValue
from ..results import KINDS as RESULT_KINDS
from ..results import OUTCOME_UNKNOWN

FORMAT = "kifunet-shard"
FORMAT_VERSION = 1
GAMES_FORMAT = "kifunet-games"
LAYOUTS = ("codes", "packbits", "uint8")
CODECS = ("gzip", "lzf", "none")
MAX_CODES = 65536  # codes are uint16

COLUMN_DTYPES: dict[str, np.dtype] = {
    "target": np.dtype(np.int16),
    "to_move": np.dtype(np.int8),
    "move_number": np.dtype(np.int16),
    "player_rank": np.dtype(np.int8),
    "opponent_rank": np.dtype(np.int8),
    "game_index": np.dtype(np.int32),
    "outcome": np.dtype(np.int8),
    "symmetry": np.dtype(np.int8),
}
#: columns a shard written before they existed lacks -> the value every row of such a shard reads as
COLUMN_DEFAULTS: dict[str, int] = {"outcome": OUTCOME_UNKNOWN}


@dataclasses.dataclass(frozen=True)
class Storage:
    """How planes are laid out and compressed. Recorded in the manifest."""

    planes: str = "codes"  # one of LAYOUTS
    compression: str = "gzip"  # one of CODECS
    level: int = 4  # gzip level 1-9 (ignored for lzf/none)
    chunk_rows: int = 256

    def __post_init__(self):
        if self.planes not in LAYOUTS:
            raise InvalidValue(f"planes layout must be one of {LAYOUTS}, got {self.planes!r}")
        if self.compression not in CODECS:
            raise InvalidValue(f"compression must be one of {CODECS}, got {self.compression!r}")
        if self.compression == "gzip" and not 1 <= self.level <= 9:
            raise InvalidValue(f"gzip level must be 1..9, got {self.level}")
        if self.chunk_rows < 1:
            raise InvalidValue("chunk_rows must be positive")

    def h5_kwargs(self) -> dict:
        if self.compression == "gzip":
            return {"compression": "gzip", "compression_opts": int(self.level)}
        if self.compression == "lzf":
            return {"compression": "lzf"}
        return {}

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["bit_order"] = "big"
        return d


# ------------------------------------------------------------------------------------------------------------
# plane packing

def point_width(num_stored: int) -> int:
    """Bytes per point when a point's planes are packed: ceil(Cs / 8)."""
    return (num_stored + 7) // 8


def packed_width(n: int, num_stored: int) -> int:
    """Bytes per row of the ``packbits`` layout: ceil(N*N*Cs / 8)."""
    return (n * n * num_stored + 7) // 8


@njit(cache=True)
def _pack_points(x, w):
    m, c = x.shape
    out = np.zeros((m, w), np.uint8)
    for i in range(m):
        for j in range(c):
            out[i, j >> 3] |= np.uint8((x[i, j] & 1) << (7 - (j & 7)))
    return out


@njit(cache=True)
def _unpack_points(p, c):
    m = p.shape[0]
    out = np.empty((m, c), np.uint8)
    for i in range(m):
        for j in range(c):
            out[i, j] = (p[i, j >> 3] >> (7 - (j & 7))) & 1
    return out


def pack_points(planes: np.ndarray) -> np.ndarray:
    """uint8 [..., C] of 0/1 -> uint8 [..., ceil(C/8)]: each point's channel bits, as ``np.packbits(axis=-1)``."""
    c = planes.shape[-1]
    flat = np.ascontiguousarray(planes).reshape(-1, c)
    return _pack_points(flat, point_width(c)).reshape(planes.shape[:-1] + (point_width(c),))


def unpack_points(points: np.ndarray, num_stored: int) -> np.ndarray:
    """Inverse of :func:`pack_points` (``np.unpackbits(axis=-1, count=num_stored)``)."""
    w = points.shape[-1]
    flat = np.ascontiguousarray(points).reshape(-1, w)
    return _unpack_points(flat, num_stored).reshape(points.shape[:-1] + (num_stored,))


def pack_planes(planes: np.ndarray) -> np.ndarray:
    """uint8 [B, N, N, C] of 0/1 -> uint8 [B, ceil(N*N*C/8)] (C-order flatten, then np.packbits)."""
    b = planes.shape[0]
    return np.packbits(np.ascontiguousarray(planes).reshape(b, -1), axis=1)


def unpack_planes(packed: np.ndarray, n: int, num_stored: int) -> np.ndarray:
    """Inverse of :func:`pack_planes`: uint8 [B, bytes] -> uint8 [B, N, N, C] of 0/1."""
    b = packed.shape[0]
    return np.unpackbits(packed, axis=1, count=n * n * num_stored).reshape(b, n, n, num_stored)


@njit(cache=True)
def _dict_encode(points, max_codes):
    """points uint8 [M, W] (W <= 8) -> (codes uint16 [M], table uint8 [K, W], K); K = -1 if > max_codes."""
    m, w = points.shape
    size = 1
    while size < 4 * max_codes:
        size *= 2
    mask = size - 1
    keys = np.zeros(size, np.uint64)
    used = np.zeros(size, np.bool_)
    slot_code = np.zeros(size, np.int32)
    table = np.zeros((max_codes, w), np.uint8)
    codes = np.empty(m, np.uint16)
    k = 0
    for i in range(m):
        key = np.uint64(0)
        for j in range(w):
            key = (key << np.uint64(8)) | np.uint64(points[i, j])
        h = (key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
        s = np.int64(h) & mask
        while used[s] and keys[s] != key:
            s = (s + 1) & mask
        if not used[s]:
            if k == max_codes:
                return codes, table, -1
            used[s] = True
            keys[s] = key
            slot_code[s] = k
            for j in range(w):
                table[k, j] = points[i, j]
            k += 1
        codes[i] = slot_code[s]
    return codes, table, k


def dict_encode(points: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """uint8 [B, N, N, W] packed points -> (codes uint8|uint16 [B, N, N], table uint8 [K, W]), or None when
    the points hold more than MAX_CODES distinct values or W > 8."""
    b, n, _, w = points.shape
    if w > 8:
        return None
    codes, table, k = _dict_encode(np.ascontiguousarray(points).reshape(-1, w), MAX_CODES)
    if k < 0:
        return None
    if k <= 256:
        codes = codes.astype(np.uint8)
    return codes.reshape(b, n, n), table[:k].copy()


def dict_decode(codes: np.ndarray, table: np.ndarray, num_stored: int) -> np.ndarray:
    """codes [B, N, N] + table [K, W] -> uint8 [B, N, N, Cs] of 0/1 (one gather from the unpacked table)."""
    return np.take(unpack_points(table, num_stored), codes, axis=0)


def decode_planes(raw: np.ndarray, layout: str, n: int, num_stored: int, table: np.ndarray | None = None):
    """Stored ``planes`` rows of any layout -> uint8 [B, N, N, Cs] of 0/1."""
    if layout == "codes":
        return dict_decode(raw, table, num_stored)
    if layout == "packbits":
        return unpack_planes(raw, n, num_stored)
    return np.asarray(raw)


# ------------------------------------------------------------------------------------------------------------
# files

def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def write_shard(path: str, points: np.ndarray, columns: dict[str, np.ndarray], *, num_stored: int,
                storage: Storage, attrs: dict | None = None) -> str:
    """Write one shard atomically from its rows' packed points (uint8 [R, N, N, W], see :func:`pack_points`)
    and columns. Returns the layout used (``codes`` may fall back to ``packbits``)."""
    rows, n = points.shape[0], points.shape[1]
    layout = storage.planes
    coded = dict_encode(points) if layout == "codes" and rows else None
    if layout == "codes" and rows and coded is None:
        layout = "packbits"
    chunk = max(1, min(storage.chunk_rows, rows))
    kw = storage.h5_kwargs() if rows else {}
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            a = f.attrs
            a["format"] = FORMAT
            a["format_version"] = FORMAT_VERSION
            a["planes_layout"] = layout
            a["board_size"] = n
            a["num_stored"] = num_stored
            a["rows"] = rows
            for k, v in (attrs or {}).items():
                a[k] = v
            if layout == "codes":
                codes, table = coded if coded is not None else (np.zeros((0, n, n), np.uint8),
                                                               np.zeros((0, points.shape[3]), np.uint8))
                f.create_dataset("planes", data=codes, chunks=(chunk, n, n) if rows else None,
                                 track_times=False, **kw)
                f.create_dataset("plane_codes", data=table, track_times=False)
            elif layout == "packbits":
                width = packed_width(n, num_stored)
                ds = f.create_dataset("planes", shape=(rows, width), dtype=np.uint8,
                                      chunks=(chunk, width) if rows else None, track_times=False, **kw)
                step = chunk * 32
                for s in range(0, rows, step):
                    ds[s:s + step] = pack_planes(unpack_points(points[s:s + step], num_stored))
            else:
                ds = f.create_dataset("planes", shape=(rows, n, n, num_stored), dtype=np.uint8,
                                      chunks=(chunk, n, n, num_stored) if rows else None, track_times=False, **kw)
                step = chunk * 8
                for s in range(0, rows, step):
                    ds[s:s + step] = unpack_points(points[s:s + step], num_stored)
            for name, values in columns.items():
                f.create_dataset(name, data=np.asarray(values, dtype=COLUMN_DTYPES[name]),
                                 chunks=(chunk,) if rows else None, track_times=False, **kw)
    return layout


def shard_layout(path: str) -> str:
    with h5py.File(path, "r") as f:
        v = f.attrs["planes_layout"]
    return v.decode() if isinstance(v, bytes) else str(v)


class ShardFile:
    """Read access to one shard; the HDF5 file opens on first use, and again after a fork, reading the per-row
    columns whole. ``expect`` (the manifest entry: ``sha256``, ``rows``): the file is checked against it before it
    first opens in a process; a damaged, cut or missing file raises
    :class:`~kifunet.data_prep.datasets.dataset_base.CorruptDatasetError` naming it."""

    def __init__(self, path: str, *, cache_bytes: int = 16 << 20, expect: dict | None = None):
        self.path = path
        self.cache_bytes = cache_bytes
        self.expect = expect
        self._f = self._pid = self._meta = None  # the open file, the process that opened it, its metadata

    def __getstate__(self):
        return {"path": self.path, "cache_bytes": self.cache_bytes, "expect": self.expect}

    def __setstate__(self, state):
        self.__init__(state["path"], cache_bytes=state["cache_bytes"], expect=state.get("expect"))

    def _damaged(self, e: BaseException):
        from .dataset_base import CorruptDatasetError

        why = (str(e).splitlines() or [type(e).__name__])[0]
        return CorruptDatasetError.at(self.path, f"HDF5 cannot read it ({why}); the file is damaged or cut")

    @property
    def file(self) -> h5py.File:
        if self._f is None or self._pid != os.getpid():
            if self.expect is not None:
                from . import verify

                verify.check_shard(self.path, self.expect)
            try:
                self._open()
            except FileNotFoundError:
                from .dataset_base import CorruptDatasetError

                raise CorruptDatasetError.at(self.path, "missing") from None
            except (OSError, KeyError) as e:
                raise self._damaged(e) from None
        return self._f

    def _open(self) -> None:
        f = h5py.File(self.path, "r", rdcc_nbytes=self.cache_bytes)
        a = f.attrs
        layout = a["planes_layout"]
        ds = f["planes"]
        cs = int(a["num_stored"])
        columns = {k: f[k][()] for k in f.keys() if k not in ("planes", "plane_codes")}
        for k, v in COLUMN_DEFAULTS.items():
            if k not in columns:
                columns[k] = np.full(ds.shape[0], v, COLUMN_DTYPES[k])
        self._meta = {
            "layout": layout.decode() if isinstance(layout, bytes) else str(layout),
            "n": int(a["board_size"]), "cs": cs, "planes": ds,
            "table": unpack_points(f["plane_codes"][()], cs) if "plane_codes" in f else None,
            "chunk": (ds.chunks or (max(1, ds.shape[0]),))[0],
            "columns": columns,
        }
        self._f, self._pid = f, os.getpid()

    def close(self) -> None:
        if self._f is not None and self._pid == os.getpid():
            self._f.close()
        self._f = None
        self._meta = None

    @property
    def attrs(self) -> dict:
        out = {}
        for k, v in self.file.attrs.items():
            out[k] = v.item() if hasattr(v, "item") else v
        return out

    def __len__(self) -> int:
        self.file  # noqa: B018 - opens the file
        return int(self._meta["planes"].shape[0])

    @property
    def layout(self) -> str:
        self.file  # noqa: B018
        return self._meta["layout"]

    def column_names(self) -> list[str]:
        self.file  # noqa: B018
        return list(self._meta["columns"])

    @property
    def code_table(self) -> np.ndarray | None:
        """The ``codes`` layout's table: the stored planes of each distinct point, uint8 [K, Cs] (else None)."""
        self.file  # noqa: B018
        return self._meta["table"]

    def read_columns(self, start: int, stop: int, columns=None) -> dict[str, np.ndarray]:
        """Columns of rows start..stop (in memory since the file opened; no plane is read)."""
        self.file  # noqa: B018
        cols = self._meta["columns"]
        return {k: cols[k][start:stop] for k in (list(cols) if columns is None else columns)}

    def read_raw(self, start: int, stop: int, columns=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Rows start..stop undecoded (the ``planes`` values as stored: point codes [r, N, N] in the ``codes``
        layout; :meth:`decode` unpacks them) and the columns."""
        self.file  # noqa: B018
        return self._planes(slice(start, stop)), self.read_columns(start, stop, columns)

    def _planes(self, rows: slice) -> np.ndarray:
        """``planes`` rows as stored (a chunk that cannot be read or decoded: :class:`CorruptDatasetError`)."""
        try:
            return self._meta["planes"][rows]
        except OSError as e:
            raise self._damaged(e) from None

    def decode(self, raw: np.ndarray) -> np.ndarray:
        m = self._meta
        if m["layout"] == "codes":
            return np.take(m["table"], raw, axis=0)
        return decode_planes(raw, m["layout"], m["n"], m["cs"])

    def read_range(self, start: int, stop: int, columns=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Unpacked stored planes uint8 [B, N, N, Cs] and columns of rows start..stop."""
        self.file  # noqa: B018
        cols = self._meta["columns"]
        names = list(cols) if columns is None else columns
        return self.decode(self._planes(slice(start, stop))), {k: cols[k][start:stop] for k in names}

    def read_rows(self, rows, columns=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Rows by index (any order, repeats allowed), reading each touched chunk once."""
        self.file  # noqa: B018
        m = self._meta
        ds, cols = m["planes"], m["columns"]
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        names = list(cols) if columns is None else columns
        if rows.size and (rows.min() < 0 or rows.max() >= ds.shape[0]):
            raise IndexError(f"{self.path}: row out of range 0..{ds.shape[0] - 1}")
        raw = np.empty((rows.size,) + ds.shape[1:], ds.dtype)
        if rows.size:
            chunk = m["chunk"]
            order = np.argsort(rows, kind="stable")
            srt = rows[order]
            cuts = np.flatnonzero(np.diff(srt // chunk)) + 1
            for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [srt.size]])):
                lo, hi = int(srt[a]), int(srt[b - 1]) + 1
                raw[order[a:b]] = self._planes(slice(lo, hi))[srt[a:b] - lo]
        return self.decode(raw), {k: cols[k][rows] for k in names}


# ------------------------------------------------------------------------------------------------------------
# games table

GAME_STR_COLUMNS = ("path", "black", "white", "black_rank_text", "white_rank_text", "result", "date", "rules",
                    "content_hash", "moves_hash", "game_id")  # game_id: GameRecord.game_id, the dedupe key
# result_kind: a code of kifunet.data_prep.results.KINDS (the table's ``result_kinds`` attribute lists them),
# winner: BLACK/WHITE (0: none), margin: points for kind ``score`` (NaN otherwise); days, source, time_control:
# the game's profile codes (kifunet.data_prep.profiles.game_codes; a table written before them lacks them);
# ownership_source, estimate_agreement: kifunet.data_prep.rules.final_ownership (a table written before them lacks
# them, and the 2-D ``ownership`` int8 [games, N*N] beside them)
GAME_NUM_COLUMNS = {"black_rank": np.int8, "white_rank": np.int8, "komi": np.float32, "handicap": np.int8,
                    "year": np.int16, "size": np.int8, "num_moves": np.int16, "positions": np.int32,
                    "result_kind": np.int8, "winner": np.int8, "margin": np.float32,
                    "ownership_source": np.int8, "estimate_agreement": np.int16,
                    **{k: dt for k, (dt, _) in profiles.GAME_TABLE_COLUMNS.items()}}
#: the value a games-table numeric column stores for a game that lacks it (the rest: NaN for floats, else 0)
GAME_MISSING = {**{k: v for k, (_, v) in profiles.GAME_TABLE_COLUMNS.items()}, "estimate_agreement": -1}
#: the games table's per-game ownership: int8 [games, N*N], +1 black, -1 white, 0 nobody or unknown
GAME_OWNERSHIP = "ownership"


def _utf8(v) -> str:
    """Text that encodes as UTF-8 (file names may carry undecodable bytes as surrogates: replaced)."""
    return str(v or "").encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def write_games_table(path: str, games: list[dict], attrs: dict | None = None, board_size: int | None = None) -> None:
    """The split's games, one row per game (its ``game_index``), as 1-D datasets; written atomically.

    Numeric columns GAME_NUM_COLUMNS (unknown: komi and margin NaN, year 0, result_kind 0, winner 0, and
    :data:`GAME_MISSING` for ``days``, ``source``, ``time_control``, ``estimate_agreement``); string columns
    GAME_STR_COLUMNS (UTF-8); the attributes ``result_kinds`` and ``ownership_sources`` (JSON). With
    ``board_size``, :data:`GAME_OWNERSHIP` from each game's ``ownership`` text. Values must fit (the encode
    stage checks them)."""
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = GAMES_FORMAT
        f.attrs["rows"] = len(games)
        f.attrs["result_kinds"] = json.dumps(RESULT_KINDS)
        for k, v in (attrs or {}).items():
            f.attrs[k] = v
        kw = {"compression": "gzip", "compression_opts": 4} if games else {}
        for name in GAME_STR_COLUMNS:
            data = np.array([_utf8(g.get(name)) for g in games], dtype=object)
            f.create_dataset(name, data=data, dtype=h5py.string_dtype("utf-8"), track_times=False, **kw)
        for name, dt in GAME_NUM_COLUMNS.items():
            vals = []
            for g in games:
                v = g.get(name)
                if v is None:
                    v = GAME_MISSING.get(name, np.nan if dt is np.float32 else 0)
                vals.append(v)
            f.create_dataset(name, data=np.array(vals, dtype=dt), track_times=False, **kw)
        if board_size is not None:
            from ..rules import final_ownership

            f.attrs["ownership_sources"] = json.dumps(final_ownership.SOURCES)
            nn = int(board_size) ** 2
            own = np.zeros((len(games), nn), np.int8)
            for i, g in enumerate(games):
                own[i] = final_ownership.decode(g.get(GAME_OWNERSHIP) or "", nn)
            f.create_dataset(GAME_OWNERSHIP, data=own, chunks=(max(1, min(len(games), 256)), nn) if games else None,
                             track_times=False, **kw)


def read_games_table(path: str) -> dict[str, np.ndarray]:
    """All columns of a games table (strings decoded to ``str``)."""
    out = {}
    with h5py.File(path, "r") as f:
        for k in f.keys():
            ds = f[k]
            if h5py.check_string_dtype(ds.dtype) is not None:
                out[k] = np.array(ds.asstr()[()], dtype=object)
            else:
                out[k] = ds[()]
    return out
