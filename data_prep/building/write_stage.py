"""Build stage 3, write: each shard's rows gathered from the spill files -> ``DIR/<split>/shard-NNNNN.h5``.

:func:`write_one_shard` (in a worker) gathers one shard task's rows from the spill, memory-mapped one unit at a
time (so a worker holds one shard's rows), and writes the shard atomically once
:func:`kifunet.data_prep.building.build_space.ensure_free` finds room. :func:`write_shards` writes a build's shards,
reusing those an interrupted run finished.
"""

from __future__ import annotations

import os

import numpy as np

from kifunet.data_prep.fileio import atomic

from . import build_space
from ..datasets import shards as shards_mod
from .encode_stage import unit_arrays
from ..datasets.manifest import BASE_COLUMNS
from .progress import Progress
from ..datasets.shards import Storage
from .worker_pool import WorkerPool


def write_one_shard(task: dict) -> dict:
    """Gather the shard's rows from the spill files (one unit mapped at a time) and write it atomically.

    Returns the shard's manifest entry."""
    storage = Storage(**task["storage"])
    n, cs = task["board_size"], task["num_stored"]
    w = shards_mod.point_width(cs)
    width = n * n * w
    src_unit, src_row, game_index = task["src_unit"], task["src_row"], task["game_index"]
    rows = len(src_unit)
    names = list(BASE_COLUMNS) + (["symmetry"] if task["symmetries"] == "all" else [])
    points = np.empty((rows, width), np.uint8)
    cols = {k: np.empty(rows, shards_mod.COLUMN_DTYPES[k]) for k in names}
    for u in np.unique(src_unit):
        sel = np.flatnonzero(src_unit == u)
        r = src_row[sel]
        planes, spill = unit_arrays(task["work"], int(u), width)
        points[sel] = planes[r]
        c = spill[r]
        del planes, spill
        for k in names:
            cols[k][sel] = game_index[str(int(u))][c["game"]] if k == "game_index" else c[k]
    build_space.ensure_free(atomic.tmp_path(task["path"]), rows * build_space.raw_row_bytes(storage, n, cs))
    layout = shards_mod.write_shard(task["path"], points.reshape(rows, n, n, w), cols, num_stored=cs,
                                    storage=storage, attrs=task["attrs"])
    return {"file": task["rel"], "rows": rows, "layout": layout, "sha256": shards_mod.sha256_file(task["path"])}


def write_shards(tasks: list[dict], *, pool: WorkerPool | None, progress: bool | None) -> dict[str, dict]:
    """Stage 3 over all shard tasks: {shard file: manifest entry}. A shard that exists is complete (written under
    a temporary name, then renamed) and is reused; the others are written in ``pool``'s workers (None: in this
    process)."""
    results: dict[str, dict] = {}
    todo = []
    for t in tasks:
        if os.path.exists(t["path"]):
            results[t["rel"]] = {"file": t["rel"], "rows": len(t["src_unit"]),
                                 "layout": shards_mod.shard_layout(t["path"]),
                                 "sha256": shards_mod.sha256_file(t["path"])}
        else:
            todo.append(t)
    prog = Progress(progress, len(tasks), "write", unit="shard")
    prog.update(len(tasks) - len(todo), 0)
    try:
        if pool is None or pool.workers == 1 or len(todo) <= 1:
            for t in todo:
                r = write_one_shard(t)
                results[r["file"]] = r
                prog.update(1, r["rows"])
        else:
            for r in pool.map(write_one_shard, todo):
                results[r["file"]] = r
                prog.update(1, r["rows"])
    finally:
        prog.close()
    return results
