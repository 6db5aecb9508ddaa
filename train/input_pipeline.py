"""Input pipeline: a built dataset split -> shuffled, augmented, device-ready batches (grain).

Pipeline (training)
-------------------
::

    TrainData.train (train.data)                 grain source over HDF5 or tfds (data_prep.datasets):
                                                 element i = block i, ``block_rows`` consecutive rows of one shard
      -> [process_index::process_count]          per-host split (disjoint blocks per host)
      -> .shuffle(seed).repeat()                 global block order, a new permutation every epoch
      -> .batch(window_blocks, batch_fn=list)    a *window*: W random blocks (the shuffle buffer)
      -> .random_map(WindowBuilder)              rows of the window permuted, a symmetry per row (target
                                                 remapped, pass fixed), history dropout, constant planes
      -> .to_iter_dataset() [.mp_prefetch(workers)]   windows built in worker processes (each ends when the
                                                 trainer does, whatever killed it: exit_with_parent)
      -> BatchIterator                           cuts windows into batches (main process); checkpointable

Several datasets (``config.dataset`` = ``"A,B"``): each one's blocks are split between hosts, shuffled and repeated with its own
seed, then mixed by weight before ``.batch`` (:mod:`kifunet.train.mixture`), so every window holds rows of each.

Every row is seen once per epoch, except the rows of a window that do not fill a last batch (none when the batch
divides ``window_blocks * block_rows``). The same seed gives the same batches with or without worker processes,
and :class:`~kifunet.train.batches.BatchIterator`'s state resumes exactly. Why blocks and not rows, and the
determinism argument: ``docs/training.md`` (Input pipeline).
"""

from __future__ import annotations

import functools
import os

import grain

from kifunet.train import mixture
from kifunet.train.batches import BatchIterator
from kifunet.train.data import TrainData
from kifunet.train.windows import WindowBuilder
from kifunet.train.workers import exit_with_parent, mark_absl_flags_parsed
from kifunet.train.configs import ConfigError


def window_dataset(data: TrainData, input_config, *, batch_size: int, seed: int, process_index: int = 0,
                   process_count: int = 1) -> grain.MapDataset:
    """The infinite grain ``MapDataset`` of this host's training windows (element ``i`` = window ``i``) of
    ``data``'s training splits (:class:`kifunet.train.data.TrainData`), built as ``input_config`` (``config.input``)
    says. Several datasets: their blocks mixed with ``data.weights`` (:mod:`kifunet.train.mixture`; windows then
    carry a ``dataset`` column, the row's dataset in ``data.roots``' order)."""
    srcs = data.train
    for r, src in zip(data.roots, srcs):
        if process_count > 1 and len(src) < process_count:
            raise ConfigError(f"{r}: {len(src)} blocks cannot be split over {process_count} hosts; use smaller "
                             f"block_rows")
    window_blocks = input_config.window_blocks
    low = min(s.block_rows for s in srcs)
    if window_blocks * low < batch_size:
        raise ConfigError(f"a window ({window_blocks} blocks x {low} rows) must hold at least one "
                         f"batch of {batch_size}")
    if data.mixed:
        ds = mixture.mixed_blocks(srcs, data.weights, seed=seed, process_index=process_index,
                                  process_count=process_count)
    else:  # one dataset: the pipeline of the module docstring, unchanged
        ds = grain.MapDataset.source(srcs[0])
        if process_count > 1:
            ds = ds[process_index::process_count]
        ds = ds.shuffle(seed=seed % (1 << 32)).repeat(None)
    ds = ds.batch(window_blocks, drop_remainder=True, batch_fn=list)
    builder = WindowBuilder.for_training(srcs[0].feature_name, srcs[0].board_size, batch_size, input_config,
                                         profile=data.profile)
    return ds.random_map(builder, seed=(seed + 1) % (1 << 32))


def train_iterator(data: TrainData, input_config, *, batch_size: int, seed: int, process_index: int = 0,
                   process_count: int = 1, worker_buffer: int = 2) -> BatchIterator:
    """The training batches of this host (``batch_size`` = rows per host): infinite, shuffled, augmented
    (:func:`window_dataset`).

    ``input_config.workers`` > 0 builds windows in that many grain worker processes (``mp_prefetch``; the sequence
    of batches does not depend on the number of workers); 0 builds them in a thread of this process.
    """
    ds = window_dataset(data, input_config, batch_size=batch_size, seed=seed, process_index=process_index,
                        process_count=process_count)
    workers = input_config.workers
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

    return BatchIterator(make_windows, batch_size, input_config.host_dtype, workers)
