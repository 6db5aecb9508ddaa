"""Read a built dataset: NumPy batches of full input planes, targets and per-row columns.

>>> from kifunet.data_prep.reader import Reader
>>> r = Reader("data/kgs", "train")                     # doctest: +SKIP
>>> len(r)                                               # rows of the split
>>> b = r.batch([0, 5, 17])                              # dict of NumPy arrays, B = 3
>>> b["planes"].shape, b["planes"].dtype                 # (3, 19, 19, C) uint8: every plane of the feature set
>>> b["target"]                                          # int16 flat move index (pass = N*N)
>>> for b in r.iter_batches(256): ...                    # sequential, chunk-friendly (rows are pre-shuffled)

``planes`` are the feature set's full planes in its order: the stored planes unpacked, with the constant planes
(rank, colour to move, ones...) made from the per-row columns by ``FeatureSet.assemble``. Other keys: every
column of the shards (``target``, ``to_move``, ``move_number``, ``player_rank``, ``opponent_rank``,
``game_index``, ``symmetry`` when materialised) and ``index`` (the global row index). ``assemble=False``
returns the stored planes only (``stored`` [B, N, N, Cs]).

Random access (``r[i]``, ``r.batch(indices)``) works on any global row index of the split, which is what
``grain.RandomAccessDataSource`` needs (``__len__`` and ``__getitem__(int)``). It decodes whole HDF5 chunks
(``chunk_rows`` rows, 256 by default) and keeps recently used ones in HDF5's chunk cache, so scattered single
rows cost about one chunk decode each; the rows are already shuffled across games at build time, so reading
in order (``iter_batches``, or a grain sampler without its own shuffle) is the fast path.

Files open lazily, on first access in each process: a Reader can be built, pickled and sent to worker
processes (grain, multiprocessing) before any file is opened, and one opened before a fork is reopened in
the child.

Symmetries: ``symmetries`` arrays (ints 0-7 per example, see :mod:`kifunet.data_prep.symmetries`) passed to
``batch`` apply to planes and targets together; ``iter_batches(augment=True, seed=...)`` draws them
deterministically. Datasets built with ``--symmetries all`` already hold the 8 copies.
"""

from __future__ import annotations

import bisect
import os

import numpy as np

from . import shards as shards_mod


def load_manifest(root: str) -> dict:
    from .build import read_manifest

    return read_manifest(root)


class Reader:
    def __init__(self, root: str, split: str = "train", *, assemble: bool = True, cache_bytes: int = 16 << 20,
                 check_version: bool = True):
        self.root, self.split, self.assemble = root, split, assemble
        self.cache_bytes = cache_bytes
        self.manifest = load_manifest(root)
        if split not in self.manifest["splits"]:
            raise KeyError(f"{root}: no split {split!r}; splits: {', '.join(self.manifest['splits'])}")
        feats = self.manifest["features"]
        self.feature_name, self.feature_version = feats["name"], int(feats["version"])
        self.num_stored, self.num_planes = int(feats["num_stored"]), int(feats["num_planes"])
        self.board_size = int(self.manifest["board_size"])
        self._check_version = check_version
        self._fs = None
        info = self.manifest["splits"][split]
        self.shard_paths = [os.path.join(root, s["file"]) for s in info["shards"]]
        self.shard_rows = [int(s["rows"]) for s in info["shards"]]
        self.offsets = np.concatenate([[0], np.cumsum(self.shard_rows)]).astype(np.int64)
        self.columns = list(self.manifest["columns"])
        self._shards = [shards_mod.ShardFile(p, cache_bytes=cache_bytes) for p in self.shard_paths]
        self._games = None

    # -- pickling: no open files travel -------------------------------------------------------------------
    def __getstate__(self):
        return {"root": self.root, "split": self.split, "assemble": self.assemble, "cache_bytes": self.cache_bytes,
                "check_version": self._check_version}

    def __setstate__(self, st):
        self.__init__(st["root"], st["split"], assemble=st["assemble"], cache_bytes=st["cache_bytes"],
                      check_version=st["check_version"])

    def close(self) -> None:
        for s in self._shards:
            s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- shape and feature set ----------------------------------------------------------------------------
    @property
    def feature_set(self):
        if self._fs is None:
            from . import features

            fs = features.get(self.feature_name)
            if self._check_version and fs.version != self.feature_version:
                raise ValueError(f"{self.root}: built with feature set {self.feature_name} v{self.feature_version}, "
                                 f"this code has v{fs.version}; rebuild the dataset")
            if fs.num_stored != self.num_stored:
                raise ValueError(f"{self.root}: {fs.num_stored} stored planes expected, dataset has {self.num_stored}")
            self._fs = fs
        return self._fs

    def __len__(self) -> int:
        return int(self.offsets[-1])

    @property
    def num_shards(self) -> int:
        return len(self.shard_paths)

    def locate(self, index: int) -> tuple[int, int]:
        """Global row index -> (shard, row in shard)."""
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"row {index} out of range for {len(self)} rows")
        s = bisect.bisect_right(self.offsets, i) - 1
        return s, i - int(self.offsets[s])

    # -- reading -------------------------------------------------------------------------------------------
    def __getitem__(self, index: int) -> dict:
        b = self.batch([index])
        return {k: v[0] for k, v in b.items()}

    def batch(self, indices, symmetries=None) -> dict[str, np.ndarray]:
        """Rows ``indices`` (global, any order) as a dict of arrays; see the module docstring."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        total = len(self)
        idx = np.where(idx < 0, idx + total, idx)
        if idx.size and (idx.min() < 0 or idx.max() >= total):
            raise IndexError(f"row index out of range for {total} rows")
        n, cs = self.board_size, self.num_stored
        stored = np.empty((idx.size, n, n, cs), np.uint8)
        cols = {k: np.empty(idx.size, shards_mod.COLUMN_DTYPES[k]) for k in self.columns}
        shard_of = np.searchsorted(self.offsets, idx, side="right") - 1
        for s in np.unique(shard_of):
            sel = np.flatnonzero(shard_of == s)
            planes, c = self._shards[int(s)].read_rows(idx[sel] - self.offsets[s], self.columns)
            stored[sel] = planes
            for k in self.columns:
                cols[k][sel] = c[k]
        return self._finish(stored, cols, idx, symmetries)

    def read_range(self, start: int, stop: int, symmetries=None) -> dict[str, np.ndarray]:
        """Consecutive rows start..stop (global), read shard slice by shard slice."""
        start, stop = max(0, int(start)), min(len(self), int(stop))
        parts_p, parts_c = [], []
        s = max(0, bisect.bisect_right(self.offsets, start) - 1)
        pos = start
        while pos < stop:
            lo = pos - int(self.offsets[s])
            hi = min(stop, int(self.offsets[s + 1])) - int(self.offsets[s])
            p, c = self._shards[s].read_range(lo, hi, self.columns)
            parts_p.append(p)
            parts_c.append(c)
            pos = int(self.offsets[s]) + hi
            s += 1
        n, cs = self.board_size, self.num_stored
        stored = np.concatenate(parts_p) if parts_p else np.zeros((0, n, n, cs), np.uint8)
        cols = {k: (np.concatenate([c[k] for c in parts_c]) if parts_c
                    else np.zeros(0, shards_mod.COLUMN_DTYPES[k])) for k in self.columns}
        return self._finish(stored, cols, np.arange(start, max(start, stop), dtype=np.int64), symmetries)

    def iter_batches(self, batch_size: int, *, start: int = 0, stop: int | None = None,
                     drop_remainder: bool = False, augment: bool = False, seed: int = 0):
        """Batches of consecutive rows (the build shuffled them); ``augment`` draws a symmetry per row."""
        stop = len(self) if stop is None else min(stop, len(self))
        rng = np.random.default_rng(seed)
        for a in range(start, stop, batch_size):
            b = min(stop, a + batch_size)
            if drop_remainder and b - a < batch_size:
                return
            sym = rng.integers(0, 8, size=b - a) if augment else None
            yield self.read_range(a, b, symmetries=sym)

    def _finish(self, stored, cols, idx, symmetries) -> dict[str, np.ndarray]:
        if symmetries is not None:
            from . import symmetries as sym

            s = np.asarray(symmetries, dtype=np.int64).reshape(-1)
            if s.shape[0] != stored.shape[0]:
                raise ValueError("one symmetry per row")
            stored = sym.apply_planes_batch(stored, s)
            cols["target"] = sym.apply_index_batch(cols["target"].astype(np.int64), s,
                                                   self.board_size).astype(np.int16)
        out = dict(cols)
        out["index"] = idx
        if self.assemble:
            out["planes"] = self.feature_set.assemble(stored, cols)
        else:
            out["stored"] = stored
        return out

    # -- games ---------------------------------------------------------------------------------------------
    def games(self) -> dict[str, np.ndarray]:
        """The split's games table (all columns); ``game_index`` of a row indexes it."""
        if self._games is None:
            info = self.manifest["splits"][self.split]
            self._games = shards_mod.read_games_table(os.path.join(self.root, info["games_table"]))
        return self._games

    def game(self, game_index: int) -> dict:
        g = self.games()
        return {k: (v[int(game_index)].item() if hasattr(v[int(game_index)], "item") else v[int(game_index)])
                for k, v in g.items()}
