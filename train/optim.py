"""Optimizers and learning-rate schedules (optax); durations in positions. The chain, the schedules and the flat
layout: docs/training.md (The optimizer chain and schedules)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from kifunet.models import scale_by_lr_multipliers
from kifunet.train.configs import ConfigError

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("constant", "step", "gonn", "cosine")
DECAY_MASKS = ("no_bn", "all", "kernels")


def make_schedule(cfg, batch_size: int, total_positions: int):
    """``cfg``: the ``schedule`` ConfigDict. Returns ``step -> learning rate`` (jit-compatible)."""
    name = cfg.name
    if name not in SCHEDULES:
        raise ConfigError(f"schedule must be one of {SCHEDULES}, got {name!r}")
    lr = float(cfg.lr)
    b = float(batch_size)
    warm = float(cfg.get("warmup_positions", 0)) / b

    def base(step):
        s = jnp.asarray(step, jnp.float32)
        if name == "constant":
            return jnp.full((), lr, jnp.float32)
        if name == "step":
            start, every = float(cfg.start_positions) / b, float(cfg.every_positions) / b
            k = jnp.floor((s - start) / every) + 1.0
            return jnp.where(s < start, lr, lr * jnp.power(float(cfg.factor), k))
        if name == "gonn":
            k = jnp.floor(s / (float(cfg.every_positions) / b))
            off = float(cfg.offset)
            return lr / jnp.power((k + off) / off, float(cfg.power))
        total = max(1.0, float(total_positions) / b)
        frac = jnp.clip(s / total, 0.0, 1.0)
        end = float(cfg.get("end_fraction", 0.0))
        return lr * (end + (1.0 - end) * 0.5 * (1.0 + jnp.cos(jnp.pi * frac)))

    def schedule(step):
        v = base(step)
        if warm > 0:
            v = v * jnp.minimum(1.0, jnp.asarray(step, jnp.float32) / warm)
        return v

    return schedule


def decay_mask(params, bn_paths, mode: str):
    """Pytree of bools like ``params``: which parameters get weight decay."""
    from kifunet.train.steps import path_tuple

    if mode not in DECAY_MASKS:
        raise ConfigError(f"decay_mask must be one of {DECAY_MASKS}, got {mode!r}")
    bn = [tuple(p) for p in bn_paths]

    def pick(path, x):
        t = path_tuple(path)
        if mode == "all":
            return True
        if mode == "kernels":
            return np.ndim(x) >= 2
        return not any(t[: len(p)] == p for p in bn)

    return jax.tree_util.tree_map_with_path(pick, params)


def multipliers_like(params, model):
    """The model's lr multipliers with the exact tree structure of ``params`` (Variables included)."""
    from flax import nnx

    from kifunet.models import lr_multipliers

    mult = lr_multipliers(model)
    return jax.tree.map(lambda v, m: v.replace(jnp.asarray(m)), params, mult,
                        is_leaf=lambda x: isinstance(x, nnx.Variable))


def _per_element(values, params, dtype) -> np.ndarray | None:
    """``values`` (a tree like ``params`` whose leaves broadcast to each parameter) as one vector in the order
    :func:`optax.flatten` concatenates ``params``; None when every element is 1 (or True)."""
    flat = np.concatenate([np.broadcast_to(np.asarray(v, dtype), np.shape(p)).reshape(-1)
                           for v, p in zip(jax.tree.leaves(values), jax.tree.leaves(params), strict=True)])
    return None if bool(np.all(flat)) and bool(np.all(flat == 1)) else flat


def _scale_flat(values, params) -> optax.GradientTransformation:
    """Multiply the flat update by each parameter's multiplier (``values``: a tree like ``params`` of arrays
    that broadcast to each parameter)."""
    scale = _per_element(values, params, np.float32)

    def update(updates, state, _params=None):
        return (updates if scale is None else updates * jnp.asarray(scale, updates.dtype)), state

    return optax.GradientTransformation(lambda _: optax.EmptyState(), update)


def _decay_flat(wd: float, mask, params) -> optax.GradientTransformation:
    """``optax.add_decayed_weights(wd, mask)`` on the flat vectors: ``u + wd * w`` where ``mask``."""
    where = _per_element(mask, params, bool)

    def update(updates, state, flat_params):
        decayed = updates + wd * flat_params
        return (decayed if where is None else jnp.where(where, decayed, updates)), state

    return optax.GradientTransformation(lambda _: optax.EmptyState(), update)


def make_optimizer(cfg, schedule, *, params, model, bn_paths, flat: bool = True) -> optax.GradientTransformation:
    """``cfg``: the ``optimizer`` ConfigDict. ``flat``: the chain runs on the parameters concatenated into one
    vector (its state one array per slot), else per parameter array; the same arithmetic per element either way."""
    name = cfg.name
    if name not in OPTIMIZERS:
        raise ConfigError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")
    chain = []
    if float(cfg.get("clip_norm", 0.0)) > 0:
        chain.append(optax.clip_by_global_norm(float(cfg.clip_norm)))
    wd = float(cfg.get("weight_decay", 0.0))
    mask = decay_mask(params, bn_paths, cfg.get("decay_mask", "no_bn")) if wd > 0 else None
    decay = (_decay_flat(wd, mask, params) if flat else optax.add_decayed_weights(wd, mask)) if wd > 0 else None
    if wd > 0 and name != "adamw":
        chain.append(decay)
    if name == "sgd":
        if float(cfg.momentum) > 0:
            chain.append(optax.trace(decay=float(cfg.momentum), nesterov=bool(cfg.nesterov)))
    else:
        chain.append(optax.scale_by_adam(b1=float(cfg.b1), b2=float(cfg.b2), eps=float(cfg.eps)))
        if name == "adamw" and wd > 0:
            chain.append(decay)
    if bool(cfg.get("lr_multipliers", True)):
        mult = multipliers_like(params, model)
        chain.append(_scale_flat(mult, params) if flat else scale_by_lr_multipliers(mult))
    chain.append(optax.scale_by_learning_rate(schedule))
    return optax.flatten(optax.chain(*chain)) if flat else optax.chain(*chain)
