"""The HDF5 container of a split: read ``kifunet build``'s shards by rows and by blocks (:class:`Reader`).

The HDF5 :class:`~kifunet.data_prep.datasets.dataset_base.DatasetSplit` (batches, pieces and errors are described
there). Keys: ``planes``, every shard column (``game_index`` and ``symmetry`` included) and ``index``. Random
access works on any row, decoding whole ``chunk_rows`` chunks; reading in order is the fast path. Blocks are
``chunk_rows`` consecutive rows of one shard, as point codes plus the shard's code table. Profile fields and the
ownership and score targets come from the games table through ``game_index``. Files open lazily in each process
(again after a fork); each shard is checked against the manifest when it first opens
(:mod:`kifunet.data_prep.datasets.verify`), and a pickled Reader carries those checks to workers.
"""

from __future__ import annotations

import bisect
import functools
import os

import numpy as np

from ..errors import InvalidValue, UnknownName
from . import game_targets, profile_columns
from . import shards as shards_mod
from . import verify as verify_mod
from .dataset_base import CorruptDatasetError, DatasetSplit, NotADatasetError, UnknownSplitError
from .manifest import MANIFEST, check_manifest, quiet_unsealed, read_manifest

#: HDF5 chunk cache of the block handles: a block read touches each chunk once
BLOCK_CACHE_BYTES = 4 << 20


class Reader(DatasetSplit):
    """One split of an HDF5 dataset built by ``kifunet build`` (see the module docstring)."""

    def __init__(self, root: str, split: str = "train", *, assemble: bool = True, cache_bytes: int = 16 << 20,
                 check_version: bool = True):
        self.root, self.split, self.assemble = root, split, assemble
        self.cache_bytes = cache_bytes
        if not os.path.isfile(os.path.join(root, MANIFEST)):
            raise NotADatasetError.at(root, f"no {MANIFEST}")
        self.manifest = read_manifest(root)
        check_manifest(self.manifest, root)
        if split not in self.manifest["splits"]:
            raise UnknownSplitError.at(root, split, self.manifest["splits"])
        feats = self.manifest["features"]
        self.feature_name, self.feature_version = feats["name"], int(feats["version"])
        self.num_stored, self.num_planes = int(feats["num_stored"]), int(feats["num_planes"])
        self.board_size = int(self.manifest["board_size"])
        self.check_version = check_version
        self._fs = None
        info = self.manifest["splits"][split]
        self.shard_paths = [os.path.join(root, s["file"]) for s in info["shards"]]
        self.shard_rows = [int(s["rows"]) for s in info["shards"]]
        self.offsets = np.concatenate([[0], np.cumsum(self.shard_rows)]).astype(np.int64)
        self.columns = list(self.manifest["columns"])
        self.columns += [k for k in shards_mod.COLUMN_DEFAULTS if k not in self.columns]  # built before them
        self.block_rows = int(self.manifest.get("storage", {}).get("chunk_rows", 256))
        entries = info["shards"]
        self._shards = [shards_mod.ShardFile(p, cache_bytes=cache_bytes, expect=e)
                        for p, e in zip(self.shard_paths, entries)]
        self._block_shards = [shards_mod.ShardFile(p, cache_bytes=BLOCK_CACHE_BYTES, expect=e)
                              for p, e in zip(self.shard_paths, entries)]
        self.games_path = os.path.join(root, info["games_table"])
        self._games = None
        self._profile_games = None  # the game fields of every game (profile_columns.games_table_fields), cached
        self._target_games = None  # the targets of every game (game_targets.games_table_targets), cached

    # -- pickling: no open files travel (what this process verified does) ----------------------------------
    def __getstate__(self):
        return {"root": self.root, "split": self.split, "assemble": self.assemble, "cache_bytes": self.cache_bytes,
                "check_version": self.check_version, "added_planes": self.added_planes,
                "profile_columns": self.profile_columns, "targets": self.targets,
                "verified": verify_mod.found_entries(self.shard_paths + [self.games_path])}

    def __setstate__(self, st):
        verify_mod.adopt(st.get("verified"))
        quiet_unsealed(st["root"])  # the process that pickled it has warned
        self.__init__(st["root"], st["split"], assemble=st["assemble"], cache_bytes=st["cache_bytes"],
                      check_version=st["check_version"])
        self.add_constant_planes(st.get("added_planes", ""))
        self.with_profile(st.get("profile_columns", False))
        self.with_targets(st.get("targets", False))

    def file_checks(self) -> list:
        """Every shard against its manifest entry (sha256, rows) and the games table against its sha256 (when
        the manifest records one)."""
        info = self.manifest["splits"][self.split]
        out = [(p, functools.partial(verify_mod.check_shard, p, e), "")
               for p, e in zip(self.shard_paths, info["shards"])]
        if info.get("games_table_sha256"):
            out.append((self.games_path, functools.partial(verify_mod.check_bytes, self.games_path,
                                                           info["games_table_sha256"]), ""))
        else:
            out.append((self.games_path, None, "no sha256 recorded for the games table (built before kifunet "
                                               "recorded it); not checked"))
        return out

    def _check_games_table(self) -> None:
        check = self.file_checks()[-1][1]
        if check is not None:
            check()

    def close(self) -> None:
        for s in self._shards + self._block_shards:
            s.close()

    # -- shape -----------------------------------------------------------------------------------------------
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

    # -- rows --------------------------------------------------------------------------------------------------
    def read_stored(self, indices: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
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
        return stored, self._with_profile(cols)

    def read_stored_range(self, start: int, stop: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Consecutive rows start..stop (valid), read shard slice by shard slice."""
        parts_p, parts_c = [], []
        for s, lo, hi in self._shard_slices(start, stop):
            p, c = self._shards[s].read_range(lo, hi, self.columns)
            parts_p.append(p)
            parts_c.append(c)
        n, cs = self.board_size, self.num_stored
        stored = np.concatenate(parts_p) if parts_p else np.zeros((0, n, n, cs), np.uint8)
        cols = {k: (np.concatenate([c[k] for c in parts_c]) if parts_c
                    else np.zeros(0, shards_mod.COLUMN_DTYPES[k])) for k in self.columns}
        return stored, self._with_profile(cols)

    def _shard_slices(self, start: int, stop: int):
        """(shard, first row, stop row) in that shard of the global rows start..stop."""
        pos = int(start)
        while pos < stop:
            s = int(np.searchsorted(self.offsets, pos, side="right") - 1)
            hi = min(int(stop), int(self.offsets[s + 1]))
            yield s, pos - int(self.offsets[s]), hi - int(self.offsets[s])
            pos = hi

    # -- blocks ------------------------------------------------------------------------------------------------
    def block_spans(self, block_rows: int = 0) -> np.ndarray:
        """Blocks of ``block_rows`` consecutive rows of one shard (a shard's last block may be shorter)."""
        br = int(block_rows) if block_rows else self.block_rows
        if br < 1:
            raise InvalidValue("block_rows must be positive")
        spans = [(int(off) + a, int(off) + min(a + br, n)) for off, n in zip(self.offsets, self.shard_rows)
                 for a in range(0, n, br)]
        return np.asarray(spans, np.int64).reshape(-1, 2)

    def read_blocks(self, start: int, stop: int) -> list[dict]:
        out = []
        for s, lo, hi in self._shard_slices(start, stop):
            sf = self._block_shards[s]
            raw, cols = sf.read_raw(lo, hi, self.columns)
            piece = {"shard": s, "columns": self._with_profile(dict(cols))}
            piece["columns"]["index"] = np.arange(lo, hi, dtype=np.int64) + self.offsets[s]
            if sf.layout == "codes":
                piece["codes"], piece["table"] = raw, sf.code_table
            else:
                piece["stored"] = sf.decode(raw)
            out.append(piece)
        return out

    def column(self, name: str) -> np.ndarray:
        """One per-row column of the whole split, in row order (no plane is read)."""
        if name not in self.columns:
            raise UnknownName(f"{self.root}: no column {name!r}; columns: {', '.join(self.columns)}")
        parts = [sf.read_columns(0, n, [name])[name] for sf, n in zip(self._block_shards, self.shard_rows)]
        return np.concatenate(parts) if parts else np.zeros(0, shards_mod.COLUMN_DTYPES[name])

    # -- games ---------------------------------------------------------------------------------------------
    def _with_profile(self, cols: dict) -> dict:
        """``cols`` plus the game fields of its rows' games when :attr:`profile_columns` is set, and their
        targets when :attr:`targets` is."""
        if self.profile_columns:
            cols.update(profile_columns.rows_of(self.profile_games(), cols["game_index"]))
        if self.targets:
            cols.update(game_targets.rows_of(self.target_games(), cols, self.board_size))
        return cols

    def target_games(self) -> dict[str, np.ndarray]:
        """The ownership and score targets of every game of the split (black's view), indexed by ``game_index``,
        read once per process (:func:`kifunet.data_prep.datasets.game_targets.games_table_targets`)."""
        if self._target_games is None:
            self._target_games = self._read_games_table(
                lambda path: game_targets.games_table_targets(path, self.board_size))
        return self._target_games

    def profile_games(self) -> dict[str, np.ndarray]:
        """The game fields (:data:`kifunet.data_prep.profiles.GAME_FIELDS`) of every game of the split, indexed by
        ``game_index``, read once per process."""
        if self._profile_games is None:
            self._profile_games = self._read_games_table(profile_columns.games_table_fields)
        return self._profile_games

    def _read_games_table(self, read):
        """``read(games_path)``, the table checked first; a missing or unreadable file is a
        :class:`CorruptDatasetError` naming it."""
        self._check_games_table()
        try:
            return read(self.games_path)
        except FileNotFoundError:
            raise CorruptDatasetError.at(self.games_path, "missing (the manifest lists it)") from None
        except (OSError, KeyError) as e:
            why = (str(e).splitlines() or [type(e).__name__])[0]
            raise CorruptDatasetError.at(self.games_path, f"HDF5 cannot read it ({why}); the file is damaged "
                                                          "or cut") from None

    def games(self) -> dict[str, np.ndarray]:
        """The split's games table (all columns); ``game_index`` of a row indexes it."""
        if self._games is None:
            self._games = self._read_games_table(shards_mod.read_games_table)
        return self._games

    def game(self, game_index: int) -> dict:
        g = self.games()
        i = int(game_index)
        return {k: (v[i].item() if v.ndim == 1 and hasattr(v[i], "item") else v[i]) for k, v in g.items()}
