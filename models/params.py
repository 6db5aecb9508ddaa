"""Parameter accounting (:func:`count_params`: ``nnx.Param`` only, the published counts' definition) and
per-parameter learning-rate multipliers, applied first in the optax chain by :func:`scale_by_lr_multipliers`."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


def count_params(model: nnx.Module) -> int:
    """Number of trainable scalars (``nnx.Param``) in ``model``."""
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(nnx.state(model, nnx.Param)))


def _multiplier(var: nnx.Variable) -> jax.Array:
    meta = var.get_metadata()
    base = float(meta.get("lr_multiplier", 1.0))
    center = meta.get("center_lr_multiplier")
    if center is None:
        return jnp.asarray(base, jnp.float32)
    kh, kw = var.shape[:2]
    m = np.full((kh, kw) + (1,) * (len(var.shape) - 2), base, np.float32)
    m[kh // 2, kw // 2] = base * float(center)
    return jnp.asarray(m)


def lr_multipliers(model: nnx.Module) -> nnx.State:
    """Learning-rate multiplier per parameter, structured like ``nnx.state(model, nnx.Param)``."""
    return jax.tree.map(_multiplier, nnx.state(model, nnx.Param), is_leaf=lambda x: isinstance(x, nnx.Variable))


def scale_by_lr_multipliers(multipliers) -> optax.GradientTransformation:
    """Optax transformation multiplying each update (gradient) leaf by its multiplier leaf."""

    def init_fn(params):
        del params
        return optax.EmptyState()

    def update_fn(updates, state, params=None):
        del params
        scaled = jax.tree.map(lambda u, m: u * m.astype(u.dtype), updates, multipliers)
        return scaled, state

    return optax.GradientTransformation(init_fn, update_fn)
