"""Input pipeline: a run's opened training splits -> shuffled, augmented, device-ready batches (grain).

Every row is seen once per epoch (but a window's rows that do not fill a last batch); the same seed gives the same
batches with or without worker processes, and the iterator's state resumes exactly. The stages and why:
docs/training.md (Input pipeline)."""

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
    ``data``'s training splits, built as ``input_config`` says; a mixture's windows carry a ``dataset`` column."""
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
    """The training batches of this host (``batch_size`` = rows per host): infinite, shuffled, augmented;
    ``input_config.workers`` > 0 builds windows in that many grain worker processes (the batches do not depend
    on it)."""
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
