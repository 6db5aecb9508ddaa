"""The contract of a dataset container: what one split of a built dataset offers, whatever holds it.

The HDF5 shards (:class:`kifunet.data_prep.datasets.reader.Reader`) and the TFDS ``go_moves`` files
(:class:`kifunet.data_prep.datasets.tfds_reader.TfdsReader`) subclass :class:`DatasetSplit`, read by rows (``len``,
``[i]``, ``batch``, ``read_range``, ``iter_batches``: dicts of NumPy arrays) or by blocks (``block_spans``,
``read_blocks``: stored planes, never assembled nor transformed; :class:`Blocks` is a grain
``RandomAccessDataSource`` of them). ``outcome`` is -128 on every row of a dataset built without it;
:meth:`DatasetSplit.with_targets` adds the ownership and score targets. A split opens its files lazily in each
process and pickles as its description only. Both containers raise :class:`NotADatasetError` (a
``FileNotFoundError``), :class:`UnknownSplitError` (``KeyError``), :class:`EmptySplitError` (``ValueError``) and
:class:`CorruptDatasetError`. The batch and piece layouts: docs/building.md ("Reading a dataset")."""

from __future__ import annotations

import abc
from typing import Callable, Iterator

import numpy as np

from ..errors import InvalidValue, UserError

#: rows per block when neither the caller nor the dataset says otherwise
DEFAULT_BLOCK_ROWS = 256


class DatasetError(UserError):
    """Base of the errors of opening or reading a dataset split."""


class NotADatasetError(DatasetError, FileNotFoundError):
    """The spec names no finished dataset."""

    @classmethod
    def at(cls, spec: str, why: str) -> "NotADatasetError":
        return cls(f"{spec}: {why}; not a finished kifunet dataset")


class UnknownSplitError(DatasetError, KeyError):
    """The dataset has no split of that name."""

    @classmethod
    def at(cls, spec: str, split: str, splits) -> "UnknownSplitError":
        return cls(f"{spec}: no split {split!r}; splits: {', '.join(splits)}")

    def __str__(self) -> str:  # the message, not KeyError's repr of it
        return str(self.args[0]) if self.args else ""


class DatasetMismatch(DatasetError, ValueError):
    """A dataset that does not fit its use: built with another feature set or version, lacking the columns or
    planes asked for, or not mixable with another."""


class EmptySplitError(DatasetError, ValueError):
    """The split exists but holds no rows."""

    @classmethod
    def at(cls, spec: str, split: str) -> "EmptySplitError":
        return cls(f"{spec}: split {split!r} has no rows")


class CorruptDatasetError(DatasetError):
    """A file of the dataset is damaged (bytes or rows differ from the manifest, missing, unreadable) or the
    manifest is not valid. The message is one line: the file, what was expected and found, and the fix."""

    #: the fix, for an HDF5 build and a TFDS dataset
    REBUILD = "rebuild the dataset (kifunet build ... --overwrite) or copy it again"
    REBUILD_TFDS = "rebuild the dataset (kifunet tfds ...) or copy it again"

    @classmethod
    def at(cls, path: str, what: str, fix: str = REBUILD) -> "CorruptDatasetError":
        """``PATH: WHAT; FIX`` on one line."""
        return cls(" ".join(f"{path}: {what}; {fix}".splitlines()))


class DatasetSplit(abc.ABC):
    """One split of a built dataset, read by rows and by blocks (see the module docstring).

    Attributes every container sets: ``root``, ``split``, ``manifest`` (HDF5's ``manifest.json``, TFDS's
    ``kifunet`` metadata), ``feature_name``, ``feature_version``, ``num_planes``, ``num_stored``, ``board_size``,
    ``columns``, ``assemble``, ``block_rows`` (default rows per block) and ``num_shards``."""

    root: str
    split: str
    manifest: dict
    feature_name: str
    feature_version: int
    num_planes: int
    num_stored: int
    board_size: int
    columns: list
    assemble: bool
    block_rows: int
    num_shards: int
    check_version: bool = True
    _fs = None

    # -- what a container implements -------------------------------------------------------------------
    @abc.abstractmethod
    def __len__(self) -> int:
        """Rows of the split."""

    @abc.abstractmethod
    def read_stored(self, indices: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Rows ``indices`` (valid, non-negative, any order): stored planes ``[B, N, N, Cs]`` and a dict of the
        :attr:`columns` (plus any extra keys of the container)."""

    @abc.abstractmethod
    def block_spans(self, block_rows: int = 0) -> np.ndarray:
        """int64 ``[K, 2]``: global start and stop of each block of ``block_rows`` (0: :attr:`block_rows`)."""

    @abc.abstractmethod
    def read_blocks(self, start: int, stop: int) -> list[dict]:
        """Global rows start..stop as pieces (see the module docstring)."""

    @abc.abstractmethod
    def file_checks(self) -> list[tuple[str, Callable[[], None] | None, str]]:
        """``(path, check, note)`` for every file of the split: ``check()`` raises :class:`CorruptDatasetError`
        when the file differs from the sha256 and row count the dataset recorded (None: nothing was recorded to
        check it against); ``note`` says what is not checked ("" when everything is)."""

    def verify(self) -> None:
        """Check every file of the split now (each is also checked when it first opens); raises
        :class:`CorruptDatasetError`. Repeats in a process are cheap (:mod:`kifunet.data_prep.datasets.verify`)."""
        for _, check, _ in self.file_checks():
            if check is not None:
                check()

    def read_stored_range(self, start: int, stop: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """As :meth:`read_stored` for consecutive rows start..stop (a container may do it faster)."""
        return self.read_stored(np.arange(start, stop, dtype=np.int64))

    def close(self) -> None:
        """Close open files (they reopen on the next read)."""

    # -- shared ------------------------------------------------------------------------------------------
    added_planes: str = ""
    profile_columns: bool = False
    targets: bool = False

    def with_targets(self, on: bool = True) -> "DatasetSplit":
        """Give every batch and block piece's ``columns`` the rows' ownership and score targets
        (:mod:`kifunet.data_prep.datasets.game_targets`). Kept through pickling. Returns ``self``."""
        self.targets = bool(on)
        return self

    def with_profile(self, on: bool = True) -> "DatasetSplit":
        """Give every batch and block piece's ``columns`` the game fields of the rows' profiles
        (:data:`kifunet.data_prep.profiles.GAME_FIELDS`), so :func:`kifunet.data_prep.profiles.encode_rows` of them
        and the two rank columns is each row's profile vector; fields a dataset lacks read as unknown. Kept
        through pickling. Returns ``self``."""
        self.profile_columns = bool(on)
        return self

    def add_constant_planes(self, extra: str) -> "DatasetSplit":
        """Read the split as its feature set plus the constant-only sets ``extra``
        (:func:`kifunet.data_prep.planes.features.with_constant_planes`); ``feature_name`` and ``num_planes``
        change, the stored planes do not. Returns ``self``."""
        if not extra:
            return self
        from ..planes import features

        name = features.with_constant_planes(self.feature_name, extra)
        missing = sorted({f.column for f in features.get(extra).features} - set(self.columns))
        if missing:
            raise DatasetMismatch(f"{self.root}: cannot add {extra} planes: no column {', '.join(missing)}")
        self.feature_name, self.added_planes = name, extra
        self.num_planes += features.get(extra).num_planes
        self._fs = None
        return self

    @property
    def feature_set(self):
        """The feature set the split was built with (checked against this code's version and planes)."""
        if self._fs is None:
            from ..planes import features

            fs = features.get(self.feature_name)
            if self.check_version and fs.version != self.feature_version:
                raise DatasetMismatch(f"{self.root}: built with feature set {self.feature_name} v{self.feature_version}, "
                                 f"this code has v{fs.version}; rebuild the dataset")
            if fs.num_stored != self.num_stored:
                raise DatasetMismatch(f"{self.root}: {fs.num_stored} stored planes expected, dataset has {self.num_stored}")
            self._fs = fs
        return self._fs

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getitem__(self, index: int) -> dict:
        b = self.batch([index])
        return {k: v[0] for k, v in b.items()}

    def batch(self, indices, symmetries=None) -> dict[str, np.ndarray]:
        """Rows ``indices`` (any order, repeats and negative indices allowed) as a batch."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        total = len(self)
        idx = np.where(idx < 0, idx + total, idx)
        if idx.size and (idx.min() < 0 or idx.max() >= total):
            raise IndexError(f"row index out of range for {total} rows")
        stored, cols = self.read_stored(idx)
        return self.finish(stored, cols, idx, symmetries)

    def read_range(self, start: int, stop: int, symmetries=None) -> dict[str, np.ndarray]:
        """Consecutive rows start..stop (clipped to the split) as a batch."""
        start, stop = max(0, int(start)), min(len(self), int(stop))
        stored, cols = self.read_stored_range(start, max(start, stop))
        return self.finish(stored, cols, np.arange(start, max(start, stop), dtype=np.int64), symmetries)

    def iter_batches(self, batch_size: int, *, start: int = 0, stop: int | None = None,
                     drop_remainder: bool = False, augment: bool = False, seed: int = 0) -> Iterator[dict]:
        """Batches of consecutive rows (already shuffled across games); ``augment`` draws a symmetry per row
        from ``seed``."""
        stop = len(self) if stop is None else min(stop, len(self))
        rng = np.random.default_rng(seed)
        for a in range(start, stop, batch_size):
            b = min(stop, a + batch_size)
            if drop_remainder and b - a < batch_size:
                return
            sym = rng.integers(0, 8, size=b - a) if augment else None
            yield self.read_range(a, b, symmetries=sym)

    def finish(self, stored: np.ndarray, cols: dict, idx: np.ndarray, symmetries=None) -> dict[str, np.ndarray]:
        """Stored planes + columns of rows ``idx`` -> a batch: symmetries applied, ``index`` added, planes
        assembled (or ``stored`` kept when :attr:`assemble` is false)."""
        if symmetries is not None:
            from .. import symmetries as sym

            s = np.asarray(symmetries, dtype=np.int64).reshape(-1)
            if s.shape[0] != stored.shape[0]:
                raise ValueError("one symmetry per row")
            stored = sym.apply_planes_batch(stored, s)
            cols["target"] = sym.apply_index_batch(cols["target"].astype(np.int64), s,
                                                   self.board_size).astype(np.int16)
            if "ownership" in cols:
                cols["ownership"] = sym.apply_planes_batch(cols["ownership"], s)
        out = dict(cols)
        out["index"] = idx
        if self.assemble:
            out["planes"] = self.feature_set.assemble(stored, cols)
        else:
            out["stored"] = stored
        return out

    def blocks(self, block_rows: int = 0) -> "Blocks":
        """This split as a grain source of blocks of ``block_rows`` rows (0: :attr:`block_rows`)."""
        return Blocks(self, block_rows)

    def describe(self) -> dict:
        """Shape facts: rows, board size, feature set, plane count and storage units."""
        return {"rows": len(self), "board_size": self.board_size, "features": self.feature_name,
                "num_planes": self.num_planes, "shards": self.num_shards}


class Blocks:
    """grain ``RandomAccessDataSource`` over a split: element ``i`` is block ``i`` as one piece. Pickles as the
    split and the block size. Creating it checks every file of the split (:meth:`DatasetSplit.verify`), before
    grain starts workers."""

    def __init__(self, split: DatasetSplit, block_rows: int = 0):
        split.verify()
        self.split = split
        self.block_rows = int(block_rows) if block_rows else int(split.block_rows)
        if self.block_rows < 1:
            raise InvalidValue("block_rows must be positive")
        self.spans = np.asarray(split.block_spans(self.block_rows), np.int64).reshape(-1, 2)
        self.feature_name, self.board_size = split.feature_name, split.board_size

    def __getstate__(self):
        return {"split": self.split, "block_rows": self.block_rows}

    def __setstate__(self, st):
        self.__init__(st["split"], st["block_rows"])

    @property
    def feature_set(self):
        return self.split.feature_set

    def __len__(self) -> int:
        return len(self.spans)

    def __repr__(self) -> str:
        return (f"Blocks({type(self.split).__name__}({self.split.root!r}, {self.split.split!r}), "
                f"block_rows={self.block_rows}, blocks={len(self)})")

    def num_rows(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> dict:
        a, b = (int(v) for v in self.spans[int(index)])
        (piece,) = self.split.read_blocks(a, b)
        return piece

    def read_rows(self, start: int, stop: int) -> list[dict]:
        """Global rows start..stop as pieces (:meth:`DatasetSplit.read_blocks`)."""
        return self.split.read_blocks(start, stop)
