"""Input pipeline: a built dataset split -> shuffled, augmented, device-ready batches (grain).

Pipeline (training)
-------------------
::

    open_split(root, split).blocks()             grain source over HDF5 or tfds: (data_prep.dataset):
                                                 element i = block i, ``block_rows`` consecutive rows of one shard
      -> [process_index::process_count]          per-host split (disjoint blocks per host)
      -> .shuffle(seed).repeat()                 global block order, a new permutation every epoch
      -> .batch(window_blocks, batch_fn=list)    a *window*: W random blocks (the shuffle buffer)
      -> .random_map(WindowBuilder)              rows of the window permuted, a symmetry per row (target
                                                 remapped, pass fixed), history dropout, constant planes
      -> .to_iter_dataset() [.mp_prefetch(workers)]   windows built in worker processes (each ends when the
                                                 trainer does, whatever killed it: exit_with_parent)
      -> BatchIterator                           cuts windows into batches (main process); checkpointable

Why blocks, not rows: grain's textbook path -- ``MapDataset.source(Reader).shuffle().batch()``, one
``Reader.__getitem__`` per row -- gave 1,197 positions/s here (benchmarks/bench_loader.py, 2 cores): a
random row costs the gzip decode of its whole 256-row HDF5 chunk. The build already shuffled the rows
across games and shards, so a block of consecutive rows is a random sample; reading whole chunks and
shuffling at two levels -- blocks globally per epoch through grain, rows inside a window of W blocks --
gives a global shuffle at chunk speed: 94,000 device-ready positions/s with no worker process, 119,000
with one, 145,000 with two (``maddison``, batch 256, KGS 2017-02; the benchmark's numbers). Every row is
seen once per epoch (the rows of a window that do not fill a last batch are dropped: none when the batch
divides ``window_blocks * block_rows``, plus short tail blocks of shards).

Why uint8 planes: every plane is 0/1, so batches leave the host as ``uint8 [B, N, N, C]`` and the model
casts them to its compute dtype on the device (``PolicyNet.__call__``). Building float32 planes on the host
is 4x the memory traffic (52 KB a position for ``maddison``): 40,000 positions/s with two workers instead
of 145,000 (``host_dtype='float32'``, same benchmark).

How a window is encoded: shards of the default ``codes`` layout store one code per point and a table of
the distinct point patterns. The worker applies the symmetry to the ``[R, N, N]`` codes (one byte a point
instead of one per stored plane: 27 for ``maddison``), then builds one table ``[V, C]`` of full plane
vectors, one per (point code, row variant) pair, where a row variant is the row's constant planes (rank,
colour, ones) and its history-dropout level. The window travels to the main process as ``idx``
(``uint16`` when V < 65,536) and the table; a batch is one ``np.take(table, idx)``. Other layouts (and
shards with more than 65,536 codes) use a slower path that decodes the planes in the worker.

History dropout (``history`` argument, for feature sets with history planes):

* ``'none'``: planes as stored.
* ``'all'`` with probability ``p``: the row loses all its history planes, the groups its features declare
  (``Feature.history``, :mod:`kifunet.data_prep.planes.features`): GoNN ``previous_moves_5``: the 5 previous-move
  planes; AGZ ``history_8``: the stones at t-1..t-7 of both colours, the stones at t kept.
* ``'cascade'`` with conditional keep probabilities ``keep_probs``: history depth d is kept only if depth
  d-1 was, with probability ``keep_probs[d-1]``. GoNN's write.exe (docs/gonn.md section 3) used
  ``GONN_KEEP_PROBS`` = (0.90, 0.95, 0.95, 0.98, 0.98): 10% of positions show no history, 22% miss at
  least the 5th move back (cumulative keep 0.90, 0.855, 0.812, 0.796, 0.780).

Determinism: the block order comes from grain's shuffle (seeded, reseeded per epoch), the window's row
permutation, symmetries and dropout from the ``np.random.Generator`` grain derives from the seed and the
window's index. The same seed gives the same batches, with or without worker processes, and
:meth:`BatchIterator.get_state` / :meth:`BatchIterator.set_state` resume exactly: the state is the index
of the current window, the batches already taken from it and grain's iterator state at its start (used
when the resumed run has the same number of workers; otherwise a new grain iterator starts at the
window, since element ``i`` of the window ``MapDataset`` is a pure function of the seed and ``i``).

Evaluation: :func:`eval_batches` reads a split in order (no symmetry, no dropout), the host's contiguous
share of rows, padded to whole batches with ``weight`` 0 so sums over the split count every row once.

Batches (:func:`window_batch`) carry ``planes``, ``target``, ``to_move``, ``rank``, ``weight`` and the value
target ``outcome`` (int8, the dataset's column: the game's result for the player to move, -128 unknown; a
dataset built before results were read gives -128 on every row). A symmetry moves the target, never the
outcome.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import queue
import threading
import time
from typing import Any, Iterator

import grain
import numpy as np
from numba import njit

from kifunet.data_prep.datasets import dataset as dataset_mod
from kifunet.data_prep import symmetries as sym_mod
from kifunet.data_prep.results import OUTCOME_UNKNOWN

#: GoNN write.exe's conditional keep probabilities of the previous-move planes 1..5 back.
GONN_KEEP_PROBS = (0.90, 0.95, 0.95, 0.98, 0.98)
SYMMETRY_MODES = ("example", "batch", "none")
HISTORY_MODES = ("none", "all", "cascade")
HOST_DTYPES = ("uint8", "float32", "bfloat16")
#: per-row columns carried into batches (besides the planes)
BATCH_COLUMNS = ("target", "to_move", "player_rank", "outcome")


# ------------------------------------------------------------------------------------------------------------
# feature-set layout


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where each output channel of a feature set comes from."""

    num_planes: int
    num_stored: int
    stored_out: np.ndarray  # [num_stored] output channel of each stored channel
    const_out: np.ndarray  # [num_const] output channels of the constant planes, in feature order
    const_features: tuple  # (Feature, ...) constant features in order
    history: tuple  # ((channels of depth 1), (depth 2), ...): the features' declared history groups

    @property
    def history_depth(self) -> int:
        return len(self.history)


def layout_for(fs) -> Layout:
    """The :class:`Layout` of a feature set; history groups are what its features declare
    (:meth:`kifunet.data_prep.planes.features.FeatureSet.history_channels`)."""
    stored_out, const_out, consts = [], [], []
    for f, dst in zip(fs.features, fs.offsets()):
        if f.constant:
            const_out.extend(range(dst, dst + f.planes))
            consts.append(f)
        else:
            stored_out.extend(range(dst, dst + f.planes))
    return Layout(num_planes=fs.num_planes, num_stored=fs.num_stored,
                  stored_out=np.asarray(stored_out, np.intp), const_out=np.asarray(const_out, np.intp),
                  const_features=tuple(consts), history=fs.history_channels())


# ------------------------------------------------------------------------------------------------------------
# windows


def _apply_symmetries(x: np.ndarray, s: np.ndarray | None) -> np.ndarray:
    """Rows of ``x[R, N, N, ...]`` transformed by per-row symmetries ``s[R]`` (grouped by symmetry)."""
    if s is None:
        return x
    codes = x.ndim == 3  # [R, N, N] point codes: give them a channel axis
    out = np.empty_like(x)
    for k in range(sym_mod.NUM_SYMMETRIES):
        rows = np.flatnonzero(s == k)
        if rows.size:
            part = x[rows]
            if k:
                part = sym_mod.apply_planes(part[..., None], k)[..., 0] if codes else sym_mod.apply_planes(part, k)
            out[rows] = part
    return out


@njit(cache=True)
def _gather_codes(codes, order, s, table, inv, nv, out):
    """out[i, p] = codes[order[i], table[s[i], p]] * nv + inv[i]: row permutation, symmetry (a gather over
    the points with ``symmetries.source_table``) and row variant, in one pass."""
    r, npts = out.shape
    for i in range(r):
        src = order[i]
        t = s[i]
        base = inv[i]
        for p in range(npts):
            out[i, p] = codes[src, table[t, p]] * nv + base


def history_levels(rng: np.random.Generator, rows: int, depth: int, mode: str, p: float,
                   keep_probs) -> np.ndarray | None:
    """Per-row number of history depths kept (0..depth), or None when nothing is dropped."""
    if depth == 0 or mode == "none":
        return None
    if mode == "all":
        if p <= 0.0:
            return None
        return np.where(rng.random(rows) < p, 0, depth).astype(np.int8)
    if mode == "cascade":
        probs = np.ones(depth)
        kp = np.asarray(keep_probs, np.float64)[:depth]
        probs[: len(kp)] = kp
        kept = np.cumprod(rng.random((rows, depth)) < probs[None, :], axis=1)
        return kept.sum(axis=1).astype(np.int8)
    raise ValueError(f"history dropout mode must be one of {HISTORY_MODES}, got {mode!r}")


class WindowBuilder:
    """grain ``random_map`` transform: a list of blocks -> one shuffled, augmented window (see module doc).

    ``shuffle=False``, ``symmetry='none'``, ``history='none'`` and ``pad_to`` give evaluation windows.
    """

    def __init__(self, feature_name: str, board_size: int, batch_size: int, *, symmetry: str = "example",
                 history: str = "none", history_p: float = 0.0, keep_probs=GONN_KEEP_PROBS,
                 shuffle: bool = True):
        if symmetry not in SYMMETRY_MODES:
            raise ValueError(f"symmetry must be one of {SYMMETRY_MODES}, got {symmetry!r}")
        if history not in HISTORY_MODES:
            raise ValueError(f"history dropout must be one of {HISTORY_MODES}, got {history!r}")
        self.feature_name, self.n, self.batch_size = feature_name, int(board_size), int(batch_size)
        self.symmetry, self.history, self.history_p = symmetry, history, float(history_p)
        self.keep_probs = tuple(float(x) for x in keep_probs)
        self.shuffle = shuffle
        self._fs = None
        self._layout = None

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_fs"] = d["_layout"] = None
        return d

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            from kifunet.data_prep.planes import features

            self._fs = features.get(self.feature_name)
            self._layout = layout_for(self._fs)
        return self._layout

    def __call__(self, blocks: list[dict], rng: np.random.Generator) -> dict:
        return self.build(blocks, rng)

    def build(self, blocks: list[dict], rng: np.random.Generator | None, pad_to: int = 0) -> dict:
        lay, n, bsz = self.layout, self.n, self.batch_size
        total = sum(len(b["columns"]["target"]) for b in blocks)
        if self.shuffle:
            keep = (total // bsz) * bsz
            order = rng.permutation(total)[:keep]
        else:
            keep = total
            order = None
        rows_out = max(keep, pad_to)
        cols = {k: np.concatenate([b["columns"][k] for b in blocks]) for k in blocks[0]["columns"]}
        if order is not None:
            cols = {k: v[order] for k, v in cols.items()}
        if self.symmetry == "example":
            s = rng.integers(0, 8, keep)
        elif self.symmetry == "batch":
            s = np.repeat(rng.integers(0, 8, max(1, keep // bsz)), bsz)[:keep]
        else:
            s = None
        level = history_levels(rng, keep, lay.history_depth, self.history, self.history_p, self.keep_probs)
        target = cols["target"].astype(np.int64)
        if s is not None:
            target = sym_mod.apply_index_batch(target, s, n)
        # the game's result for the mover: a symmetry changes neither the game nor the mover
        outcome = cols["outcome"] if "outcome" in cols else np.full(keep, OUTCOME_UNKNOWN, np.int8)
        out = {"target": target.astype(np.int16), "to_move": cols["to_move"].astype(np.int8),
               "player_rank": cols["player_rank"].astype(np.int8), "outcome": outcome.astype(np.int8),
               "weight": np.ones(keep, np.uint8),
               # for inspection and tests: the row of the split, its symmetry and history depth kept
               "index": cols["index"], "symmetry": np.zeros(keep, np.int8) if s is None else s.astype(np.int8),
               "history_level": (np.full(keep, lay.history_depth, np.int8) if level is None else level)}
        if all("codes" in b for b in blocks):
            self._encode_codes(blocks, order, s, level, cols, out)
        else:
            self._encode_planes(blocks, order, s, level, cols, out)
        if rows_out > keep:  # padding rows (evaluation): weight 0
            for k, v in out.items():
                if k == "table":
                    continue
                pad = np.zeros((rows_out - keep,) + v.shape[1:], v.dtype)
                out[k] = np.concatenate([v, pad])
        return out

    def _variants(self, cols: dict, level: np.ndarray | None, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct row variants (constant planes + history level) ``[V, Cc + 1]`` and each row's variant."""
        lay = self.layout
        parts = [np.asarray(f.fn(cols[f.column]), np.uint8).reshape(rows, f.planes) for f in lay.const_features]
        parts.append((np.full(rows, lay.history_depth, np.uint8) if level is None else level.astype(np.uint8))[:, None])
        keys = np.concatenate(parts, axis=1)
        if keys.shape[1] <= 7:  # one int64 per row: a 1-D unique (a structured-row unique sorts 5x slower)
            code = np.zeros(rows, np.int64)
            for j in range(keys.shape[1]):
                code = (code << 8) | keys[:, j]
            _, first, inv = np.unique(code, return_index=True, return_inverse=True)
            return keys[first], inv.reshape(-1)
        packed = np.packbits(keys[:, :-1], axis=1)
        if packed.shape[1] <= 7:
            code = np.zeros(rows, np.int64)
            for j in range(packed.shape[1]):
                code = (code << 8) | packed[:, j]
            code = (code << 8) | keys[:, -1]
            _, first, inv = np.unique(code, return_index=True, return_inverse=True)
            return keys[first], inv.reshape(-1)
        variants, inv = np.unique(keys, axis=0, return_inverse=True)
        return variants, inv.reshape(-1)

    def _encode_codes(self, blocks, order, s, level, cols, out) -> None:
        lay = self.layout
        tables, shard_off = [], {}
        k_tot = 0
        for b in blocks:
            if b["shard"] not in shard_off:
                shard_off[b["shard"]] = k_tot
                tables.append(b["table"])
                k_tot += len(b["table"])
        rows = len(cols["target"])
        variants, inv = self._variants(cols, level, rows)
        nv = len(variants)
        dtype = np.uint16 if k_tot * nv <= 65536 else np.int32
        total = sum(len(b["codes"]) for b in blocks)
        codes = np.empty((total,) + blocks[0]["codes"].shape[1:], dtype)
        a = 0
        for b in blocks:
            c = codes[a:a + len(b["codes"])]
            c[...] = b["codes"]
            if shard_off[b["shard"]]:
                c += dtype(shard_off[b["shard"]])
            a += len(b["codes"])
        n = self.n
        r = len(inv)
        out_codes = np.empty((r, n * n), dtype)
        _gather_codes(codes.reshape(total, n * n), np.arange(r) if order is None else order,
                      np.zeros(r, np.int64) if s is None else s.astype(np.int64),
                      sym_mod.source_table(n)[:, : n * n].astype(np.int64), inv.astype(np.int64), nv, out_codes)
        codes = out_codes.reshape(r, n, n)
        table = np.zeros((k_tot, nv, lay.num_planes), np.uint8)
        stored = np.concatenate(tables) if tables else np.zeros((0, lay.num_stored), np.uint8)
        table[:, :, lay.stored_out] = stored[:, None, :]
        if len(lay.const_out):
            table[:, :, lay.const_out] = variants[None, :, :-1]
        for v in range(nv):
            for d in range(int(variants[v, -1]), lay.history_depth):
                table[:, v, list(lay.history[d])] = 0
        out["idx"] = codes
        out["table"] = table.reshape(k_tot * nv, lay.num_planes)

    def _encode_planes(self, blocks, order, s, level, cols, out) -> None:
        lay = self.layout
        parts = []
        for b in blocks:
            if "codes" in b:
                parts.append(np.take(b["table"], b["codes"], axis=0))
            else:
                parts.append(b["stored"])
        stored = np.concatenate(parts)
        if order is not None:
            stored = stored[order]
        stored = _apply_symmetries(stored, s)
        planes = self._fs.assemble(stored, cols)
        if level is not None:
            for d in range(lay.history_depth):
                rows = np.flatnonzero(level <= d)
                for c in lay.history[d] if rows.size else ():
                    planes[rows, :, :, c] = 0
        out["planes"] = planes


# ------------------------------------------------------------------------------------------------------------
# batches


def _host_cast(planes: np.ndarray, host_dtype: str) -> np.ndarray:
    if host_dtype == "uint8":
        return planes
    if host_dtype == "float32":
        return planes.astype(np.float32)
    import ml_dtypes

    return planes.astype(ml_dtypes.bfloat16)


def window_batch(window: dict, a: int, b: int, host_dtype: str = "uint8") -> dict[str, np.ndarray]:
    """Rows a..b of a window as a batch: planes [B, N, N, C] (``host_dtype``), int32 target / to_move / rank,
    int8 outcome (the value target: +1 the mover won, -1 lost, 0 draw, -128 unknown), float32 weight."""
    if "idx" in window:
        planes = np.take(window["table"], window["idx"][a:b], axis=0)
    else:  # a copy: windows from worker processes live in shared memory, freed with the window
        planes = np.array(window["planes"][a:b])
    return {"planes": _host_cast(planes, host_dtype),
            "target": window["target"][a:b].astype(np.int32),
            "to_move": window["to_move"][a:b].astype(np.int32),
            "rank": window["player_rank"][a:b].astype(np.int32),
            "outcome": window["outcome"][a:b].astype(np.int8),
            "weight": window["weight"][a:b].astype(np.float32)}


def batch_spec(batch_size: int, board_size: int, num_planes: int, host_dtype: str = "uint8") -> dict[str, tuple]:
    """``{name: (shape, numpy dtype)}`` of a :func:`window_batch` batch, without reading data (for compiling the
    train step ahead and estimating its memory, :mod:`kifunet.train.memory`)."""
    dtype = {"uint8": np.uint8, "float32": np.float32}.get(host_dtype)
    if dtype is None:
        import ml_dtypes

        dtype = ml_dtypes.bfloat16
    b, n = int(batch_size), int(board_size)
    return {"planes": ((b, n, n, int(num_planes)), np.dtype(dtype)), "target": ((b,), np.dtype(np.int32)),
            "to_move": ((b,), np.dtype(np.int32)), "rank": ((b,), np.dtype(np.int32)),
            "outcome": ((b,), np.dtype(np.int8)), "weight": ((b,), np.dtype(np.float32))}


class BatchIterator(grain.DatasetIterator):
    """Batches of ``batch_size`` rows cut from a grain iterator over windows; checkpointable.

    ``make_windows(start)`` returns a grain iterator over windows ``start, start + 1, ...`` (a slice of the
    window ``MapDataset``). ``get_state()`` is JSON-serialisable::

        {"window": <index of the window the next batch comes from>, "taken": <its batches already returned>,
         "base": <first window of the current grain iterator>, "grain": <its state at that window's start>,
         "workers": <worker processes>}

    ``set_state`` restores with grain's own ``set_state`` when the iterator layout is the same (same number
    of worker processes), else it starts a new grain iterator at ``window`` (a resumed run may use another
    number of workers). Either way the next batch is the one the saved iterator would have returned.
    """

    def __init__(self, make_windows, batch_size: int, host_dtype: str = "uint8", workers: int = 0):
        if host_dtype not in HOST_DTYPES:
            raise ValueError(f"host_dtype must be one of {HOST_DTYPES}, got {host_dtype!r}")
        windows = make_windows(0)
        super().__init__(windows)
        self._make_windows = make_windows
        self._windows = windows
        self.batch_size = int(batch_size)
        self.host_dtype = host_dtype
        self.workers = int(workers)
        self._base = 0  # absolute index of the grain iterator's first window
        self._fetched = 0  # windows taken from the grain iterator
        self._window = None
        self._window_state = windows.get_state()
        self._taken = 0

    def _rows(self) -> int:
        return 0 if self._window is None else len(self._window["target"])

    def _fetch(self) -> None:
        self._window_state = self._windows.get_state()
        self._window = next(self._windows)
        self._fetched += 1
        self._taken = 0

    def __next__(self) -> dict[str, np.ndarray]:
        b = self.batch_size
        while self._window is None or (self._taken + 1) * b > self._rows():
            self._fetch()
        a = self._taken * b
        self._taken += 1
        return window_batch(self._window, a, a + b, self.host_dtype)

    def get_state(self) -> dict[str, Any]:
        current = self._base + self._fetched - (1 if self._window is not None else 0)
        return {"window": int(current), "taken": int(self._taken if self._window is not None else 0),
                "base": int(self._base), "grain": self._window_state, "workers": self.workers}

    def _restart(self, base: int) -> None:
        self._windows.close()
        self._windows = self._make_windows(base)
        self._parents = (self._windows,)
        self._base = base

    def set_state(self, state: dict[str, Any]) -> None:
        window, taken = int(state["window"]), int(state["taken"])
        self._window = None
        self._taken = 0
        if int(state.get("workers", -1)) == self.workers:
            if int(state["base"]) != self._base:
                self._restart(int(state["base"]))
            self._windows.set_state(state["grain"])
            self._fetched = window - self._base
        else:  # another layout: a new grain iterator starting at the saved window
            self._restart(window)
            self._fetched = 0
        self._window_state = self._windows.get_state()
        if taken > 0:
            self._fetch()
            self._taken = taken

    def close(self) -> None:
        self._window = None  # worker windows live in shared memory, released when no longer referenced
        windows = getattr(self, "_windows", None)  # None when __init__ failed
        if windows is not None:
            windows.close()


def block_source(root: str, split: str, block_rows: int = 0):
    """The blocks of a dataset split (HDF5 or ``tfds:``; :func:`kifunet.data_prep.datasets.dataset.open_split`) as a grain
    source: :class:`kifunet.data_prep.datasets.dataset_base.Blocks` (blocks, ``read_rows``, ``num_rows``)."""
    return dataset_mod.open_split(root, split, assemble=False).blocks(block_rows)


def window_dataset(root: str, split: str, *, batch_size: int, seed: int, process_index: int = 0,
                   process_count: int = 1, symmetry: str = "example", history: str = "none",
                   history_p: float = 0.0, keep_probs=GONN_KEEP_PROBS, window_blocks: int = 16,
                   block_rows: int = 0) -> grain.MapDataset:
    """The infinite grain ``MapDataset`` of this host's training windows (element ``i`` = window ``i``)."""
    src = dataset_mod.open_split(root, split, assemble=False, require_rows=True).blocks(block_rows)
    ds = grain.MapDataset.source(src)
    if process_count > 1:
        if len(src) < process_count:
            raise ValueError(f"{len(src)} blocks cannot be split over {process_count} hosts; use smaller block_rows")
        ds = ds[process_index::process_count]
    if window_blocks * src.block_rows < batch_size:
        raise ValueError(f"a window ({window_blocks} blocks x {src.block_rows} rows) must hold at least one "
                         f"batch of {batch_size}")
    ds = ds.shuffle(seed=seed % (1 << 32)).repeat(None)
    ds = ds.batch(window_blocks, drop_remainder=True, batch_fn=list)
    builder = WindowBuilder(src.feature_name, src.board_size, batch_size, symmetry=symmetry, history=history,
                            history_p=history_p, keep_probs=keep_probs)
    return ds.random_map(builder, seed=(seed + 1) % (1 << 32))


def train_iterator(root: str, split: str, *, batch_size: int, seed: int, process_index: int = 0,
                   process_count: int = 1, symmetry: str = "example", history: str = "none",
                   history_p: float = 0.0, keep_probs=GONN_KEEP_PROBS, window_blocks: int = 16,
                   block_rows: int = 0, workers: int = 1, worker_buffer: int = 2,
                   host_dtype: str = "uint8") -> BatchIterator:
    """The training batches of this host (``batch_size`` = rows per host): infinite, shuffled, augmented.

    ``workers`` > 0 builds windows in that many grain worker processes (``mp_prefetch``; the sequence of
    batches does not depend on the number of workers); 0 builds them in a thread of this process.
    """
    ds = window_dataset(root, split, batch_size=batch_size, seed=seed, process_index=process_index,
                        process_count=process_count, symmetry=symmetry, history=history, history_p=history_p,
                        keep_probs=keep_probs, window_blocks=window_blocks, block_rows=block_rows)
    if workers > 0:
        _absl_flags_parsed()
    watch = functools.partial(exit_with_parent, os.getpid())

    def make_windows(start: int):
        it_ds = ds[start:].to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=2))
        if workers > 0:
            it_ds = it_ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers,
                                                                   per_worker_buffer_size=worker_buffer),
                                      worker_init_fn=watch)
        return iter(it_ds)

    return BatchIterator(make_windows, batch_size, host_dtype, workers)


#: how often a worker process looks for its parent (seconds)
PARENT_POLL_S = 0.2


def exit_with_parent(parent_pid: int, worker_index: int = 0, worker_count: int = 1) -> None:
    """grain ``worker_init_fn``: end this worker process as soon as ``parent_pid`` (the trainer) is gone.

    A worker started by ``mp_prefetch`` (``multiprocessing`` spawn) holds a window buffer and the dataset, about
    340 MB; when the trainer dies without closing the iterator (``kill -9``, the OOM killer, a segfault), nothing
    else stops it: it is re-parented to PID 1 and waits forever, keeping ``multiprocessing``'s resource tracker
    (the second process left behind) alive too, since the tracker exits when the last process holding its pipe
    does. So each worker runs a daemon thread that polls its parent every :data:`PARENT_POLL_S` and calls
    ``os._exit`` when it was re-parented (``os.getppid()`` changed) or ``parent_pid`` no longer exists; the
    tracker then sees its pipe close, removes what the worker leaked, and exits.

    Not ``prctl(PR_SET_PDEATHSIG)``: on Linux that signal fires when the *thread* that forked the worker ends,
    and grain starts its workers from its own iterator threads, so a worker could be killed while the trainer
    is alive; it is Linux-only as well. The poll works for any signal and any POSIX system.

    The worker also ignores SIGINT and SIGTERM: sent to the whole process group (Ctrl-C in a terminal, systemd,
    Slurm), they would end the worker before the trainer, which stops after its step and checkpoint
    (:mod:`kifunet.train.preemption`) -- with a traceback on the terminal and the worker's shared memory left to
    multiprocessing's resource tracker. The trainer closes its workers itself, or they follow it out as above.
    """
    import signal
    import threading

    for s in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(s, signal.SIG_IGN)
        except ValueError:  # not the worker's main thread: keep the default
            pass
    first = os.getppid()

    def gone() -> bool:
        if os.getppid() != first:
            return True
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # exists, owned by someone else: cannot tell, keep working
            return False
        return False

    if first != parent_pid and gone():
        os._exit(1)

    def watch() -> None:
        while not gone():
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="kifunet-parent-watch", daemon=True).start()


def _absl_flags_parsed() -> None:
    """grain's worker processes read absl flags; outside an absl app nothing parsed them."""
    from absl import flags

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()


def eval_batches(root: str, split: str, *, batch_size: int, process_index: int = 0, process_count: int = 1,
                 limit: int = 0, host_dtype: str = "uint8") -> Iterator[dict[str, np.ndarray]]:
    """Batches over the host's share of the split's first ``limit`` rows (0: all), in order, unaugmented.

    Every host yields the same number of batches (``ceil(ceil(rows / hosts) / batch_size)``); rows past the
    host's share are padding with ``weight`` 0.
    """
    src = block_source(root, split)
    total = src.num_rows() if not limit else min(limit, src.num_rows())
    lo = process_index * total // process_count
    hi = (process_index + 1) * total // process_count
    per_host = -(-total // process_count)
    steps = -(-per_host // batch_size)
    builder = WindowBuilder(src.feature_name, src.board_size, batch_size, symmetry="none", history="none",
                            shuffle=False)
    for i in range(steps):
        a, b = lo + i * batch_size, min(hi, lo + (i + 1) * batch_size)
        if b > a:
            win = builder.build(src.read_rows(a, b), None, pad_to=batch_size)
        else:  # this host has no rows left: a batch of padding
            win = builder.build(src.read_rows(lo, lo + 1) if hi > lo else src.read_rows(0, 1), None,
                                pad_to=batch_size)
            win["weight"][:] = 0
        yield window_batch(win, 0, batch_size, host_dtype)


def num_eval_rows(root: str, split: str, limit: int = 0) -> int:
    n = len(dataset_mod.open_split(root, split))
    return n if not limit else min(limit, n)


# ------------------------------------------------------------------------------------------------------------
# background prefetch (host -> device)


class Prefetcher:
    """Runs ``fn(next(iterator))`` in a background thread, ``depth`` batches ahead.

    Each item carries the iterator's state *after* it was produced, so :attr:`state` (the state after the
    last item handed out) resumes exactly after that item (``None`` for an iterator without ``get_state``, such
    as :func:`eval_batches`). ``wait_s`` accumulates the time the consumer spent blocked waiting for data.
    With ``fn`` putting batches on the devices (``parallel.shard_batch``), the host-to-device copies happen in
    this thread, ``depth`` batches ahead of the step that reads them.
    """

    _DONE = object()

    def __init__(self, iterator, fn=lambda x: x, depth: int = 2):
        self._it, self._fn = iterator, fn
        self._q: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._stateful = hasattr(iterator, "get_state")
        self.state = iterator.get_state() if self._stateful else None
        self.wait_s = 0.0
        self._thread = threading.Thread(target=self._run, name="kifunet-prefetch", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                item = next(self._it)
                st = self._it.get_state() if self._stateful else None
                out = self._fn(item)
                while not self._stop.is_set():
                    try:
                        self._q.put((out, st), timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            self._q.put((self._DONE, e))

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        out, st = self._q.get()
        self.wait_s += time.perf_counter() - t0
        if out is self._DONE:
            raise st if isinstance(st, BaseException) else StopIteration
        self.state = st
        return out

    def close(self):
        self._stop.set()
        try:
            while True:
                self._q.get_nowait()
        except queue.Empty:
            pass
        self._thread.join(timeout=5)


def describe(root: str, split: str) -> dict:
    """Shape facts of a built split: rows, board size, feature set, plane count and shards
    (:meth:`kifunet.data_prep.datasets.dataset_base.DatasetSplit.describe`)."""
    return dataset_mod.describe(root, split)
