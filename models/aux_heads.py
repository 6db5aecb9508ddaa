"""The ownership and score heads (NoGoZero+'s dominion and score heads), a model option of the ResNets and GARB.

Both read the trunk's last features ``h`` ``[B, N, N, C]`` (after its final activation), beside the policy head:

=======================  ========================================================================================
head                     layers and output
=======================  ========================================================================================
:class:`OwnershipHead`   1x1 conv ``C -> 1`` with bias, tanh: ``[B, N, N]`` in [-1, 1], +1 the player to move
                         owns the point at the game's end (the targets of
                         :mod:`kifunet.data_prep.datasets.game_targets`); ``C + 1`` parameters, any board size
:class:`ScoreHead`       1x1 conv ``C -> channels`` (no bias), BN, ReLU, channel means and maxes, dense to
                         ``hidden``, ReLU, dense to 1: ``[B]``, the final margin in points for the player to move
                         (no squashing); the same size on every board
=======================  ========================================================================================

:func:`make` builds the pair a family asks for (None for a head that is off); :func:`ownership_counts` and
:func:`score_errors` are the rules that score them (NumPy or jax.numpy).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from kifunet.models.layers import Conv, batch_norm, pooled_features


class OwnershipHead(nnx.Module):
    """``tanh(conv1x1(h))``: trunk ``[B, N, N, C]`` -> ownership ``[B, N, N]`` (module table)."""

    def __init__(self, features: int, *, dtype=jnp.float32, param_dtype=jnp.float32, rngs: nnx.Rngs):
        self.conv = Conv(features, 1, 1, use_bias=True, dtype=dtype, param_dtype=param_dtype, rngs=rngs)

    def __call__(self, h: jax.Array) -> jax.Array:
        return jnp.tanh(self.conv(h)[..., 0])


def board_max(x: jax.Array) -> jax.Array:
    """``jnp.max(x, axis=(1, 2))``, ``[B, H, W, C] -> [B, C]``, whose gradient goes whole to the first point holding
    the max (``jnp.argmax``'s) instead of by JAX's rule, which splits it over the points equal to the max and divides
    by their count: on the CPU backend with unoptimised compiles that count comes out 0 for some channels and the
    gradient NaN (docs/training.md, "The score head's NaN"). The same values forward; the same gradient wherever
    one point holds the max."""
    return _board_max(x, x.shape[1:3])


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _board_max(x, board):
    return jnp.max(x, axis=(1, 2))


def _board_max_fwd(x, board):
    flat = x.reshape(x.shape[0], board[0] * board[1], x.shape[3])
    return jnp.max(x, axis=(1, 2)), jnp.argmax(flat, axis=1)


def _board_max_bwd(board, first, g):
    one_hot = jax.nn.one_hot(first, board[0] * board[1], dtype=g.dtype, axis=1)  # [B, H * W, C]
    return ((one_hot * g[:, None, :]).reshape(g.shape[0], *board, g.shape[1]),)


_board_max.defvjp(_board_max_fwd, _board_max_bwd)


def mean_max_pool(g: jax.Array) -> jax.Array:
    """:func:`kifunet.models.layers.global_pool` (channel means, then maxes; float32 inside, ``g``'s dtype out) with
    the maxes by :func:`board_max`: the same values."""
    g32 = g.astype(jnp.float32)
    return jnp.concatenate([jnp.mean(g32, axis=(1, 2)), board_max(g32)],
                           axis=-1).astype(g.dtype)


class ScoreHead(nnx.Module):
    """``dense(relu(dense(global_pool(relu(BN(conv1x1(h)))))))``: trunk -> score ``[B]`` in points (module table)."""

    def __init__(self, features: int, *, channels: int = 32, hidden: int = 64, dtype=jnp.float32,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.conv = Conv(features, channels, 1, **kw)
        self.bn = batch_norm(channels, **kw)
        self.hidden = nnx.Linear(pooled_features(channels), hidden, **kw)
        self.out = nnx.Linear(hidden, 1, **kw)

    def __call__(self, h: jax.Array) -> jax.Array:
        v = jax.nn.relu(self.bn(self.conv(h)))
        return self.out(jax.nn.relu(self.hidden(mean_max_pool(v))))[:, 0]


def _rows_with_weight(known, batch: dict, xp):
    """``known`` and, where the batch has a ``weight`` (padding rows 0), weight > 0."""
    return known & (xp.asarray(batch["weight"]) > 0) if "weight" in batch else known


def ownership_counts(ownership, batch: dict, xp=np) -> tuple:
    """``(rows, owned points, points right)`` of one batch, :mod:`kifunet.eval.head_metrics`' ownership accuracy:
    the owned points (target +1 or -1; dame and seki left out) of the rows with a target, right where the predicted
    ownership has the target's sign (0 is wrong). ``ownership`` [B, N, N] predicted, ``batch['ownership']``
    (+1 / -1 / 0) and ``batch['ownership_source']`` (> 0: the row has a target); rows of ``weight`` 0 left out.
    ``xp``: ``numpy``, or ``jax.numpy`` on a device."""
    rows = _rows_with_weight(xp.asarray(batch["ownership_source"]) > 0, batch, xp)
    target = xp.asarray(batch["ownership"]).astype(xp.float32)
    owned = (target != 0) & rows[:, None, None]
    right = owned & (xp.sign(xp.asarray(ownership)) == target)
    return rows.sum(), owned.sum(), right.sum()


def score_errors(score, batch: dict, xp=np) -> tuple:
    """``(rows, sum of |score - target|)`` of one batch, :mod:`kifunet.eval.head_metrics`' score MAE's sums, over
    the rows with a finite ``batch['score']`` (rows of ``weight`` 0 left out), in the target's dtype; ``xp`` as in
    :func:`ownership_counts`."""
    target = xp.asarray(batch["score"])
    known = _rows_with_weight(xp.isfinite(target), batch, xp)
    err = xp.abs(xp.asarray(score).astype(target.dtype) - xp.where(known, target, 0))
    return known.sum(), xp.where(known, err, 0).sum()


def make(features: int, *, ownership_head: bool, score_head: bool, **kw):
    """``(OwnershipHead or None, ScoreHead or None)`` over a trunk of ``features`` channels."""
    return (OwnershipHead(features, **kw) if ownership_head else None,
            ScoreHead(features, **kw) if score_head else None)
