"""Parameter accounting and per-parameter learning-rate multipliers.

* :func:`count_params`: trainable parameters only (``nnx.Param``: kernels, biases, BN scale and offset,
  PReLU slopes, embeddings); BatchNorm running statistics (``nnx.BatchStat``) and RNG state are not
  counted, the same definition as the published counts. Works on ``nnx.eval_shape`` models (no memory).
* :func:`lr_multipliers`: an ``nnx.State`` with the structure of ``nnx.state(model, nnx.Param)`` whose
  leaves are float32 arrays broadcastable to each parameter: ``1.0`` for most, the ``lr_multiplier``
  metadata where a layer set one, and an array ``[k, k, 1, 1]`` for kernels with a
  ``center_lr_multiplier`` (the centre tap multiplied by it). :func:`scale_by_lr_multipliers` is the optax
  transformation that applies them; put it first in the chain so it scales the gradients, e.g.
  ``nnx.Optimizer(model, optax.chain(scale_by_lr_multipliers(lr_multipliers(model)), optax.sgd(lr)),
  wrt=nnx.Param)``.
"""

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
