"""Chain pooling (docs/gonn.md section 7): each channel max-pooled over a chain of stones; gradients reach
the stones that hold each maximum."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _shift(a: jax.Array, dr: int, dc: int, fill) -> jax.Array:
    """``out[:, r, c] = a[:, r + dr, c + dc]``, ``fill`` off the board (``a`` is ``[B, N, N]``)."""
    n = a.shape[1]
    pad = jnp.pad(a, ((0, 0), (1, 1), (1, 1)), constant_values=fill)
    return pad[:, 1 + dr:1 + dr + n, 1 + dc:1 + dc + n]


def chain_labels(black: jax.Array, white: jax.Array) -> jax.Array:
    """``[B, N, N]`` int32 chain labels of two ``[B, N, N]`` 0/1 stone planes (either colour convention): a stone's
    label is the smallest row-major flat index in its chain, an empty point's is ``N*N``."""
    b, n, _ = black.shape
    colour = jnp.where(black > 0, 1, jnp.where(white > 0, 2, 0)).astype(jnp.int32)
    empty = n * n
    start = jnp.where(colour > 0, jnp.arange(n * n, dtype=jnp.int32).reshape(1, n, n), empty)
    start = jnp.broadcast_to(start, (b, n, n))
    moves = ((-1, 0), (1, 0), (0, -1), (0, 1))
    same = [(_shift(colour, dr, dc, 0) == colour) & (colour > 0) for dr, dc in moves]

    def step(lab):
        out = lab
        for (dr, dc), s in zip(moves, same):
            out = jnp.minimum(out, jnp.where(s, _shift(lab, dr, dc, empty), empty))
        return out

    def cond(state):
        return state[1]

    def body(state):
        lab, _ = state
        new = step(lab)
        return new, jnp.any(new != lab)

    # the loop flag starts from the data (always True) rather than a constant: inside shard_map (the data-parallel
    # step) a carry must vary over the mesh axis as the body's output does
    lab, _ = jax.lax.while_loop(cond, body, (start, jnp.any(colour >= 0)))
    return lab


def pool_chains(x: jax.Array, labels: jax.Array) -> jax.Array:
    """``x`` ``[B, N, N, C]`` with every stone's channels replaced by their maximum over its chain, the chains given
    by :func:`chain_labels` (compute them once per position and pool as many tensors as needed); empty points keep
    their own values."""
    b, n, _, c = x.shape
    seg = (labels + (n * n + 1) * jnp.arange(b, dtype=jnp.int32)[:, None, None]).reshape(-1)
    pooled = jax.ops.segment_max(x.reshape(-1, c), seg, num_segments=b * (n * n + 1))
    out = pooled[seg].reshape(b, n, n, c)
    return jnp.where((labels < n * n)[..., None], out, x)


def chain_max(x: jax.Array, black: jax.Array, white: jax.Array) -> jax.Array:
    """``x`` ``[B, N, N, C]`` with every stone's channels replaced by their maximum over its chain (empty points
    keep their own values); ``black`` and ``white`` are the ``[B, N, N]`` stone planes."""
    return pool_chains(x, chain_labels(black, white))
