"""Evaluation batches: a split read in order, unaugmented, each host's share padded to whole batches."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from kifunet.train.batches import window_batch
from kifunet.train.windows import WindowBuilder


def eval_batches(src, *, batch_size: int, process_index: int = 0, process_count: int = 1, limit: int = 0,
                 host_dtype: str = "uint8", profile_fields: dict | None = None) -> Iterator[dict[str, np.ndarray]]:
    """:func:`kifunet.train.batches.window_batch` batches over the host's share of the first ``limit`` rows (0:
    all) of ``src``, in order, unaugmented; every host yields the same number of batches, padding rows with
    ``weight`` 0, so sums over all hosts count each row once. Profiles: each row's, ``profile_fields`` forced."""
    total = num_eval_rows(src, limit)
    lo = process_index * total // process_count
    hi = (process_index + 1) * total // process_count
    per_host = -(-total // process_count)
    steps = -(-per_host // batch_size)
    builder = WindowBuilder(src.feature_name, src.board_size, batch_size, symmetry="none", history="none",
                            shuffle=False, profile=src.split.profile_columns, profile_fields=profile_fields)
    for i in range(steps):
        a, b = lo + i * batch_size, min(hi, lo + (i + 1) * batch_size)
        if b > a:
            win = builder.build(src.read_rows(a, b), None, pad_to=batch_size)
        else:  # this host has no rows left: a batch of padding
            win = builder.build(src.read_rows(lo, lo + 1) if hi > lo else src.read_rows(0, 1), None,
                                pad_to=batch_size)
            win["weight"][:] = 0
        yield window_batch(win, 0, batch_size, host_dtype)


def num_eval_rows(src, limit: int = 0) -> int:
    """The rows :func:`eval_batches` scores over all hosts: the first ``limit`` rows (0: all) of ``src``."""
    n = src.num_rows()
    return n if not limit else min(limit, n)
