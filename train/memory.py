"""The memory a training run needs, estimated from its compiled step before the first one, and the check that it
fits (CPU backend): :func:`estimate`, :func:`check` (:class:`DoesNotFit`). The terms: docs/training.md (The
memory estimate)."""

from __future__ import annotations

import os

import jax
import numpy as np

from kifunet.data_prep.errors import UserError
from kifunet.train import batches, parallel

GB = 1e9


class DoesNotFit(UserError, ValueError):
    """The run's estimated memory exceeds the memory available (reported as bad input)."""


def resident_bytes() -> int:
    """Resident memory of this process (``/proc/self/statm``; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 writes "max" for no limit


def available_bytes() -> tuple[int | None, str]:
    """(bytes this process may still allocate, where that figure comes from): ``MemAvailable``, or the cgroup's
    limit less its usage (v2 ``memory.max`` - ``memory.current``, v1 ``memory.limit_in_bytes`` -
    ``memory.usage_in_bytes``) when lower; (None, '') where neither is known."""
    best: tuple[int | None, str] = (None, "")
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    best = (int(line.split()[1]) * 1024, "MemAvailable")
    except (OSError, ValueError):
        pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        lim, use = _read_int(limit), _read_int(usage)
        if lim is not None and use is not None and lim < (1 << 60):
            free = max(lim - use, 0)
            if best[0] is None or free < best[0]:
                best = (free, "cgroup memory limit")
    return best


def abstract_batch(config, mesh, *, board_size: int, num_planes: int) -> dict:
    """The global training batch as ``jax.ShapeDtypeStruct`` sharded like :func:`kifunet.train.parallel.shard_batch`
    puts it, to compile the step ahead."""
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(parallel.AXIS))
    spec = batches.batch_spec(config.batch_size, board_size, num_planes, config.input.host_dtype,
                              profile=bool(config.model.get("profile_embedding")),
                              targets=batches.wants_targets(config))
    return {k: jax.ShapeDtypeStruct(shape, dtype, sharding=sharding) for k, (shape, dtype) in spec.items()}


def estimate(compiled, config, mesh, *, board_size: int, num_planes: int, block_rows: int) -> dict:
    """``{resident, step, input, total}`` in bytes for this process (``block_rows``: the rows of the pipeline's
    blocks); ``step`` is None when the backend reports no memory analysis."""
    local_devices = sum(1 for d in mesh.devices.flat if d.process_index == jax.process_index())
    step = None
    try:
        ma = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError, AttributeError):
        ma = None
    if ma is not None:
        step = (ma.temp_size_in_bytes + max(ma.output_size_in_bytes - ma.alias_size_in_bytes, 0)) * local_devices
    pc = jax.process_count()
    spec = batches.batch_spec(config.batch_size // pc, board_size, num_planes, config.input.host_dtype,
                              profile=bool(config.model.get("profile_embedding")),
                              targets=batches.wants_targets(config))
    batch = sum(int(np.prod(shape)) * dtype.itemsize for shape, dtype in spec.values())
    in_flight = config.input.prefetch + config.max_steps_ahead + 2
    rows = config.input.window_blocks * int(block_rows)
    windows = 3 + 3 * max(int(config.input.workers), 0)
    inp = in_flight * batch + windows * rows * (board_size * board_size * 2 + 16)
    resident = resident_bytes()
    return {"resident": resident, "step": step, "input": inp, "total": resident + (step or 0) + inp}


def text(est: dict) -> str:
    """``memory estimate 1.23 GB`` for the start line."""
    return f"memory estimate {est['total'] / GB:.2f} GB" + ("" if est["step"] is not None else " (no step analysis)")


def check(est: dict, config, *, model: str) -> None:
    """Raise :class:`DoesNotFit` when, on a CPU backend, the estimate less what is resident exceeds
    :func:`available_bytes`."""
    if jax.default_backend() != "cpu" or est["step"] is None:
        return
    avail, source = available_bytes()
    need = est["total"] - est["resident"]
    if avail is not None and need > avail:
        raise DoesNotFit(f"batch {config.batch_size:,} of {model} needs about {est['total'] / GB:,.1f} GB of memory "
                         f"(train step {est['step'] / GB:,.1f} GB, input {est['input'] / GB:,.1f} GB, process "
                         f"{est['resident'] / GB:,.1f} GB) but {avail / GB:,.1f} GB is available ({source}); lower "
                         f"--config.batch_size")


__all__ = ["DoesNotFit", "abstract_batch", "available_bytes", "check", "estimate", "resident_bytes", "text"]
