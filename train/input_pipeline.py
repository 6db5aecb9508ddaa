"""Input pipeline: a built dataset split -> shuffled, augmented, device-ready batches (grain).

Pipeline (training)
-------------------
::

    open_split(root, split).blocks()             grain source over HDF5 or tfds (data_prep.datasets):
                                                 element i = block i, ``block_rows`` consecutive rows of one shard
      -> [process_index::process_count]          per-host split (disjoint blocks per host)
      -> .shuffle(seed).repeat()                 global block order, a new permutation every epoch
      -> .batch(window_blocks, batch_fn=list)    a *window*: W random blocks (the shuffle buffer)
      -> .random_map(WindowBuilder)              rows of the window permuted, a symmetry per row (target
                                                 remapped, pass fixed), history dropout, constant planes
      -> .to_iter_dataset() [.mp_prefetch(workers)]   windows built in worker processes (each ends when the
                                                 trainer does, whatever killed it: exit_with_parent)
      -> BatchIterator                           cuts windows into batches (main process); checkpointable

Several datasets (``root`` = ``"A,B"``): each one's blocks are split between hosts, shuffled and repeated with its own
seed, then mixed by weight before ``.batch`` (:mod:`kifunet.train.mixture`), so every window holds rows of each.

Why blocks, not rows: grain's textbook path -- ``MapDataset.source(Reader).shuffle().batch()``, one
``Reader.__getitem__`` per row -- gave 1,197 positions/s here (benchmarks/bench_loader.py, 2 cores): a
random row costs the gzip decode of its whole 256-row HDF5 chunk. The build already shuffled the rows
across games and shards, so a block of consecutive rows is a random sample; reading whole chunks and
shuffling at two levels -- blocks globally per epoch through grain, rows inside a window of W blocks --
gives a global shuffle at chunk speed: 94,000 device-ready positions/s with no worker process, 119,000
with one, 145,000 with two (``maddison``, batch 256, KGS 2017-02; the benchmark's numbers). Every row is
seen once per epoch (the rows of a window that do not fill a last batch are dropped: none when the batch
divides ``window_blocks * block_rows``, plus short tail blocks of shards).

Modules: :mod:`kifunet.train.windows` (which rows a window holds, symmetries, history dropout),
:mod:`kifunet.train.batches` (a window's rows as a batch; :class:`~kifunet.train.batches.BatchIterator`),
:mod:`kifunet.train.workers` (the worker processes' lifecycle), :mod:`kifunet.train.eval_batches` (evaluation
batches), :mod:`kifunet.train.prefetch` (host -> device prefetch). This module assembles the training pipeline.

Determinism: the block order comes from grain's shuffle (seeded, reseeded per epoch), the window's row
permutation, symmetries and dropout from the ``np.random.Generator`` grain derives from the seed and the
window's index. The same seed gives the same batches, with or without worker processes, and
:meth:`BatchIterator.get_state` / :meth:`BatchIterator.set_state` resume exactly: the state is the index
of the current window, the batches already taken from it and grain's iterator state at its start (used
when the resumed run has the same number of workers; otherwise a new grain iterator starts at the
window, since element ``i`` of the window ``MapDataset`` is a pure function of the seed and ``i``).
"""

from __future__ import annotations

import functools
import os

import grain

from kifunet.data_prep.datasets import dataset as dataset_mod
from kifunet.train import mixture
from kifunet.train.batches import BatchIterator
from kifunet.train.windows import GONN_KEEP_PROBS, WindowBuilder
from kifunet.train.workers import exit_with_parent, mark_absl_flags_parsed


def block_source(root: str, split: str, block_rows: int = 0, add_planes: str = ""):
    """The blocks of a dataset split (HDF5 or ``tfds:``; :func:`kifunet.data_prep.datasets.dataset.open_split`) as a
    grain source: :class:`kifunet.data_prep.datasets.dataset_base.Blocks` (blocks, ``read_rows``, ``num_rows``)."""
    return dataset_mod.open_split(root, split, assemble=False, add_planes=add_planes).blocks(block_rows)


def window_dataset(root: str, split: str, *, batch_size: int, seed: int, process_index: int = 0,
                   process_count: int = 1, symmetry: str = "example", history: str = "none",
                   history_p: float = 0.0, keep_probs=GONN_KEEP_PROBS, window_blocks: int = 16,
                   block_rows: int = 0, add_planes: str = "", profile: bool = False,
                   profile_dropout: float = 0.0, mix_weights: str = "") -> grain.MapDataset:
    """The infinite grain ``MapDataset`` of this host's training windows (element ``i`` = window ``i``);
    ``add_planes``: constant-only feature sets added to the dataset's (:func:`dataset_mod.open_split`);
    ``profile``: windows carry each row's profile (``profile_dropout``: :class:`WindowBuilder`).
    ``root`` naming several datasets (``A,B``): their blocks mixed with ``mix_weights``
    (:mod:`kifunet.train.mixture`; windows then carry a ``dataset`` column, the row's dataset in ``root``'s order)."""
    roots = mixture.split_datasets(root)
    srcs = [dataset_mod.open_split(r, split, assemble=False, require_rows=True,
                                   add_planes=add_planes, profile=profile).blocks(block_rows)
            for r in (roots if len(roots) > 1 else [root])]
    for r, src in zip(roots, srcs):
        if process_count > 1 and len(src) < process_count:
            raise ValueError(f"{r}: {len(src)} blocks cannot be split over {process_count} hosts; use smaller "
                             f"block_rows")
    src = srcs[0]
    low = min(s.block_rows for s in srcs)
    if window_blocks * low < batch_size:
        raise ValueError(f"a window ({window_blocks} blocks x {low} rows) must hold at least one "
                         f"batch of {batch_size}")
    if len(srcs) > 1:
        mixture.check_compatible(roots, split, add_planes)
        weights = mixture.row_weights(mix_weights, [s.num_rows() for s in srcs])
        ds = mixture.mixed_blocks(srcs, weights, seed=seed, process_index=process_index,
                                  process_count=process_count)
    else:  # one dataset: the pipeline of the module docstring, unchanged
        ds = grain.MapDataset.source(src)
        if process_count > 1:
            ds = ds[process_index::process_count]
        ds = ds.shuffle(seed=seed % (1 << 32)).repeat(None)
    ds = ds.batch(window_blocks, drop_remainder=True, batch_fn=list)
    builder = WindowBuilder(src.feature_name, src.board_size, batch_size, symmetry=symmetry, history=history,
                            history_p=history_p, keep_probs=keep_probs, profile=profile,
                            profile_dropout=profile_dropout)
    return ds.random_map(builder, seed=(seed + 1) % (1 << 32))


def train_iterator(root: str, split: str, *, batch_size: int, seed: int, process_index: int = 0,
                   process_count: int = 1, symmetry: str = "example", history: str = "none",
                   history_p: float = 0.0, keep_probs=GONN_KEEP_PROBS, window_blocks: int = 16,
                   block_rows: int = 0, workers: int = 1, worker_buffer: int = 2,
                   host_dtype: str = "uint8", add_planes: str = "", profile: bool = False,
                   profile_dropout: float = 0.0, mix_weights: str = "") -> BatchIterator:
    """The training batches of this host (``batch_size`` = rows per host): infinite, shuffled, augmented.

    ``workers`` > 0 builds windows in that many grain worker processes (``mp_prefetch``; the sequence of
    batches does not depend on the number of workers); 0 builds them in a thread of this process.
    """
    ds = window_dataset(root, split, batch_size=batch_size, seed=seed, process_index=process_index,
                        process_count=process_count, symmetry=symmetry, history=history, history_p=history_p,
                        keep_probs=keep_probs, window_blocks=window_blocks, block_rows=block_rows,
                        add_planes=add_planes, profile=profile, profile_dropout=profile_dropout,
                        mix_weights=mix_weights)
    if workers > 0:
        mark_absl_flags_parsed()
    watch = functools.partial(exit_with_parent, os.getpid())

    def make_windows(start: int):
        it_ds = ds[start:].to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=2))
        if workers > 0:
            it_ds = it_ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers,
                                                                   per_worker_buffer_size=worker_buffer),
                                      worker_init_fn=watch)
        return iter(it_ds)

    return BatchIterator(make_windows, batch_size, host_dtype, workers)


def describe(root: str, split: str, add_planes: str = "") -> dict:
    """Shape facts of a built split: rows, board size, feature set, plane count and shards
    (:meth:`kifunet.data_prep.datasets.dataset_base.DatasetSplit.describe`), read with ``add_planes``."""
    return dataset_mod.describe(root, split, add_planes)
