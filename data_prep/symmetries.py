"""The 8 symmetries of the square board (the dihedral group D4), on planes and on move indices.

A symmetry ``s`` (0..7) is a 3-bit code applied in order: bit 0 reverses the rows, bit 1 the columns, bit 2
transposes; :data:`NAMES` names them (docs/positions.md, "Symmetries", has each as a NumPy operation).
``apply_planes(apply_planes(x, b), a) == apply_planes(x, COMPOSE[a, b])``; ``COMPOSE[INVERSE[s], s] == 0``.
Planes are ``(..., N, N, C)``; moves are flat indices with pass ``N*N`` fixed, and
``apply_planes(onehot(p), s) == onehot(apply_index(p, s, N))``. :func:`apply_policy` satisfies
``apply_policy(p, s, n)[apply_index(k, s, n)] == p[k]``; ``apply_policy(out, INVERSE[s], n)`` maps a net's output
on a transformed position back. The ``*_jax`` functions take a traced per-example ``s[B]`` under ``jax.jit`` and
import JAX only when called.
"""

from __future__ import annotations

import functools

import numpy as np

NAMES = ("identity", "flip_ud", "flip_lr", "rot180", "transpose", "rot270", "rot90", "anti_transpose")
FLIP_ROWS, FLIP_COLS, TRANSPOSE = 1, 2, 4
NUM_SYMMETRIES = 8

INVERSE = np.array([0, 1, 2, 3, 4, 6, 5, 7], dtype=np.int8)
INVERSE.setflags(write=False)

# COMPOSE[a, b] = apply b first, then a.
COMPOSE = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [1, 0, 3, 2, 6, 7, 4, 5],
        [2, 3, 0, 1, 5, 4, 7, 6],
        [3, 2, 1, 0, 7, 6, 5, 4],
        [4, 5, 6, 7, 0, 1, 2, 3],
        [5, 4, 7, 6, 2, 3, 0, 1],
        [6, 7, 4, 5, 1, 0, 3, 2],
        [7, 6, 5, 4, 3, 2, 1, 0],
    ],
    dtype=np.int8,
)
COMPOSE.setflags(write=False)


def _check_s(s) -> int:
    s = int(s)
    if not 0 <= s < NUM_SYMMETRIES:
        raise ValueError(f"symmetry {s} is not in 0..7")
    return s


def _check_s_array(s) -> np.ndarray:
    s = np.asarray(s)
    if s.size and (s.min() < 0 or s.max() >= NUM_SYMMETRIES):
        raise ValueError("symmetries must be in 0..7")
    return s.astype(np.intp)


def transform_point(rc: tuple[int, int] | None, s: int, n: int) -> tuple[int, int] | None:
    """Where symmetry ``s`` moves the point ``(row, col)`` on an ``n`` x ``n`` board (``None`` = pass stays)."""
    s = _check_s(s)
    if rc is None:
        return None
    r, c = rc
    if not (0 <= r < n and 0 <= c < n):
        raise ValueError(f"point {rc} is off a {n}x{n} board")
    if s & FLIP_ROWS:
        r = n - 1 - r
    if s & FLIP_COLS:
        c = n - 1 - c
    return (c, r) if s & TRANSPOSE else (r, c)


def apply_planes(planes: np.ndarray, s: int) -> np.ndarray:
    """Apply symmetry ``s`` to the board axes of ``planes[..., N, N, C]``.

    Returns a view of ``planes`` (like ``np.flip``): copy it before writing into it."""
    s = _check_s(s)
    x = np.asarray(planes)
    if x.ndim < 3 or x.shape[-3] != x.shape[-2]:
        raise ValueError(f"planes must be (..., N, N, C); got shape {x.shape}")
    if s & FLIP_ROWS:
        x = x[..., ::-1, :, :]
    if s & FLIP_COLS:
        x = x[..., :, ::-1, :]
    if s & TRANSPOSE:
        x = np.swapaxes(x, -3, -2)
    return x


@functools.lru_cache(maxsize=None)
def index_table(n: int) -> np.ndarray:
    """``(8, n*n + 1)`` int16 table, read-only, cached per ``n``: ``index_table(n)[s, flat]`` is the image of
    ``flat`` under ``s``; the last column (pass) maps to itself."""
    if not 1 <= n <= 255:
        raise ValueError(f"bad board size {n}")
    grid = np.arange(n * n, dtype=np.int16).reshape(n, n, 1)
    table = np.empty((NUM_SYMMETRIES, n * n + 1), dtype=np.int16)
    for s in range(NUM_SYMMETRIES):
        # The transformed board holds, at each target point, the flat index of the source point; invert it.
        src = apply_planes(grid, s).reshape(-1)
        table[s, src] = np.arange(n * n, dtype=np.int16)
        table[s, n * n] = n * n
    table.setflags(write=False)
    return table


@functools.lru_cache(maxsize=None)
def source_table(n: int) -> np.ndarray:
    """``(8, n*n + 1)`` int16, read-only: ``source_table(n)[s, t]`` is the flat point whose content lands on
    ``t`` under ``s`` (the gather table for planes and policies); equals ``index_table(n)[INVERSE[s]]``."""
    table = np.ascontiguousarray(index_table(n)[INVERSE.astype(np.intp)])
    table.setflags(write=False)
    return table


def _check_flat(flat: np.ndarray, n: int) -> None:
    if flat.size and (flat.min() < 0 or flat.max() > n * n):
        raise ValueError(f"move indices must be in 0..{n * n} (pass = {n * n}) on a {n}x{n} board")


def apply_index(flat, s: int, n: int):
    """Image of flat move index (int or array of any shape) ``flat`` under ``s``; pass ``n*n`` is fixed."""
    s = _check_s(s)
    f = np.asarray(flat)
    _check_flat(f, n)
    out = index_table(n)[s, f.astype(np.intp)]
    return int(out) if out.ndim == 0 else out.astype(np.int64)


def apply_index_batch(flat, s, n: int) -> np.ndarray:
    """``flat[B]`` mapped by per-example symmetries ``s[B]`` (or shapes that broadcast together)."""
    f = np.asarray(flat)
    _check_flat(f, n)
    s = _check_s_array(s)
    return index_table(n)[s, f.astype(np.intp)].astype(np.int64)


def apply_planes_batch(planes: np.ndarray, s) -> np.ndarray:
    """``planes[B, N, N, ...]`` with per-example symmetries ``s[B]``, in one gather (a new array)."""
    x = np.asarray(planes)
    if x.ndim < 3 or x.shape[1] != x.shape[2]:
        raise ValueError(f"planes must be (B, N, N, ...); got shape {x.shape}")
    b, n = x.shape[0], x.shape[1]
    s = _check_s_array(s)
    if s.shape != (b,):
        raise ValueError(f"need one symmetry per example: s has shape {s.shape}, batch is {b}")
    src = source_table(n)[:, : n * n].astype(np.intp)[s]  # (B, N*N)
    flat = x.reshape(b, n * n, -1)
    out = flat[np.arange(b)[:, None], src]
    return out.reshape(x.shape)


def apply_policy(logits: np.ndarray, s: int, n: int) -> np.ndarray:
    """Remap ``logits[..., n*n + 1]`` (pass last) for symmetry ``s``: ``out[..., apply_index(k)] = in[..., k]``."""
    s = _check_s(s)
    x = np.asarray(logits)
    if x.shape[-1] != n * n + 1:
        raise ValueError(f"policy must have {n * n + 1} entries on the last axis; got shape {x.shape}")
    return x[..., source_table(n)[s].astype(np.intp)]


def apply_policy_batch(logits: np.ndarray, s, n: int) -> np.ndarray:
    """``logits[B, n*n + 1]`` remapped by per-example symmetries ``s[B]``."""
    x = np.asarray(logits)
    if x.ndim != 2 or x.shape[1] != n * n + 1:
        raise ValueError(f"policy batch must be (B, {n * n + 1}); got shape {x.shape}")
    s = _check_s_array(s)
    if s.shape != (x.shape[0],):
        raise ValueError(f"need one symmetry per example: s has shape {s.shape}, batch is {x.shape[0]}")
    return np.take_along_axis(x, source_table(n).astype(np.intp)[s], axis=1)


# --------------------------------------------------------------------------------------------------- JAX


def apply_planes_jax(planes, s):
    """JAX: ``planes[B, N, N, ...]`` with per-example symmetries ``s[B]`` (int array, may be traced); agrees with
    :func:`apply_planes_batch`."""
    import jax.numpy as jnp

    x = jnp.asarray(planes)
    if x.ndim < 3 or x.shape[1] != x.shape[2]:
        raise ValueError(f"planes must be (B, N, N, ...); got shape {x.shape}")
    s = jnp.asarray(s).astype(jnp.int32)
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)

    def bit(k):
        return jnp.broadcast_to(((s & k) != 0).reshape(-1), (x.shape[0],)).reshape(shape)

    x = jnp.where(bit(FLIP_ROWS), jnp.flip(x, axis=1), x)
    x = jnp.where(bit(FLIP_COLS), jnp.flip(x, axis=2), x)
    x = jnp.where(bit(TRANSPOSE), jnp.swapaxes(x, 1, 2), x)
    return x


def apply_index_jax(flat, s, n: int):
    """JAX: flat move indices mapped by symmetries ``s`` (broadcastable); pass ``n*n`` fixed; ``n`` a Python int."""
    import jax.numpy as jnp

    flat = jnp.asarray(flat).astype(jnp.int32)
    s = jnp.asarray(s).astype(jnp.int32)
    r, c = flat // n, flat % n
    r = jnp.where((s & FLIP_ROWS) != 0, n - 1 - r, r)
    c = jnp.where((s & FLIP_COLS) != 0, n - 1 - c, c)
    t = (s & TRANSPOSE) != 0
    r, c = jnp.where(t, c, r), jnp.where(t, r, c)
    return jnp.where(flat == n * n, flat, r * n + c)


def apply_policy_jax(logits, s, n: int):
    """JAX: ``logits[B, n*n + 1]`` remapped by per-example ``s[B]`` (agrees with :func:`apply_policy_batch`)."""
    import jax.numpy as jnp

    x = jnp.asarray(logits)
    if x.ndim != 2 or x.shape[1] != n * n + 1:
        raise ValueError(f"policy batch must be (B, {n * n + 1}); got shape {x.shape}")
    src = jnp.asarray(source_table(n).astype(np.int32))[jnp.asarray(s).astype(jnp.int32)]
    return jnp.take_along_axis(x, src, axis=1)
