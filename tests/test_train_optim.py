"""Optimizer chain: per-parameter lr multipliers, weight-decay masks, clipping, schedules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

from kifunet import models
from kifunet.train import optim, steps


def _opt(**kw):
    base = dict(name="sgd", momentum=0.0, nesterov=False, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0,
                decay_mask="no_bn", clip_norm=0.0, lr_multipliers=True)
    base.update(kw)
    return ml_collections.ConfigDict(base)


def _sched(**kw):
    base = dict(name="constant", lr=1.0, warmup_positions=0, start_positions=0, every_positions=100, factor=0.5,
                offset=8.0, power=2.0, end_fraction=0.0)
    base.update(kw)
    return ml_collections.ConfigDict(base)


def _gonn():
    model = models.create("gonn_tiny", board_size=9, rngs=nnx.Rngs(0))
    md = steps.ModelDef(model)
    return model, md


def _flat(tree):
    return {"/".join(str(p) for p in steps.path_tuple(k) if p != "value"): np.asarray(v)
            for k, v in jax.tree_util.tree_flatten_with_path(tree)[0]}


@pytest.mark.slow
def test_lr_multipliers_scale_the_update():
    model, md = _gonn()
    tx = optim.make_optimizer(_opt(), optim.make_schedule(_sched(), 1, 1), params=md.params, model=model,
                              bn_paths=md.bn_paths)
    ones = jax.tree.map(jnp.ones_like, md.params)
    upd, _ = jax.jit(tx.update)(ones, jax.jit(tx.init)(md.params), md.params)
    mult = _flat(optim.multipliers_like(md.params, model))
    got = _flat(upd)
    assert got.keys() == mult.keys()
    for k in got:
        assert np.allclose(got[k], -np.broadcast_to(mult[k], got[k].shape)), k
    values = set(np.unique(np.concatenate([np.ravel(v) for v in mult.values()])).round(4).tolist())
    assert {1.0, 1.5}.issubset(values)  # centre taps x1.5
    assert 0.25 in values  # GoNN's x0.25 on the policy head
    # switched off: every update is -lr * gradient
    tx = optim.make_optimizer(_opt(lr_multipliers=False), optim.make_schedule(_sched(), 1, 1), params=md.params,
                              model=model, bn_paths=md.bn_paths)
    upd, _ = jax.jit(tx.update)(ones, jax.jit(tx.init)(md.params), md.params)
    assert all(np.allclose(v, -1.0) for v in _flat(upd).values())


def test_weight_decay_masks():
    model, md = _gonn()
    flat_mask = _flat(optim.decay_mask(md.params, md.bn_paths, "no_bn"))
    bn = [k for k in flat_mask if any(k.startswith("/".join(map(str, p)) + "/") for p in md.bn_paths)]
    assert bn and not any(flat_mask[k] for k in bn)
    assert all(flat_mask[k] for k in flat_mask if k not in bn)
    assert any("alpha" in k and flat_mask[k] for k in flat_mask)  # PReLU slopes decay (GoNN)
    kern = _flat(optim.decay_mask(md.params, md.bn_paths, "kernels"))
    params = _flat(md.params)
    assert all(bool(kern[k]) == (params[k].ndim >= 2) for k in kern)
    # wd * w is added to the gradient of the masked parameters only
    tx = optim.make_optimizer(_opt(weight_decay=0.5, lr_multipliers=False), optim.make_schedule(_sched(), 1, 1),
                              params=md.params, model=model, bn_paths=md.bn_paths)
    zeros = jax.tree.map(jnp.zeros_like, md.params)
    upd = _flat(jax.jit(tx.update)(zeros, jax.jit(tx.init)(md.params), md.params)[0])
    for k in upd:
        assert np.allclose(upd[k], -0.5 * params[k] if flat_mask[k] else 0.0), k


@pytest.mark.slow
def test_clipping_and_adam_and_momentum():
    model, md = _gonn()
    big = jax.tree.map(lambda p: jnp.full_like(p, 100.0), md.params)
    tx = optim.make_optimizer(_opt(clip_norm=1.0, lr_multipliers=False), optim.make_schedule(_sched(), 1, 1),
                              params=md.params, model=model, bn_paths=md.bn_paths)
    upd, _ = jax.jit(tx.update)(big, jax.jit(tx.init)(md.params), md.params)
    assert float(optax_norm(upd)) == pytest.approx(1.0, rel=1e-5)
    tx = optim.make_optimizer(_opt(name="adam", lr_multipliers=False), optim.make_schedule(_sched(lr=0.1), 1, 1),
                              params=md.params, model=model, bn_paths=md.bn_paths)
    upd, _ = jax.jit(tx.update)(big, jax.jit(tx.init)(md.params), md.params)
    assert all(np.allclose(v, -0.1, rtol=1e-4) for v in _flat(upd).values())  # first Adam step = -lr*sign
    tx = optim.make_optimizer(_opt(momentum=0.9, nesterov=True, lr_multipliers=False),
                              optim.make_schedule(_sched(), 1, 1), params=md.params, model=model,
                              bn_paths=md.bn_paths)
    ones = jax.tree.map(jnp.ones_like, md.params)
    st = jax.jit(tx.init)(md.params)
    u1, st = jax.jit(tx.update)(ones, st, md.params)
    u2, st = jax.jit(tx.update)(ones, st, md.params)
    v = next(iter(_flat(u1).values())).ravel()[0], next(iter(_flat(u2).values())).ravel()[0]
    assert v == pytest.approx((-1.9, -(0.9 * 1.9 + 1.0)))  # Nesterov: g + m*(m*v + g)


def optax_norm(tree):
    import optax

    return optax.tree.norm(tree)


def test_schedule_shapes():
    s = optim.make_schedule(_sched(name="step", lr=1.0, start_positions=400, every_positions=200, factor=0.1), 100,
                            10_000)
    assert [round(float(s(k)), 6) for k in (0, 3, 4, 5, 6, 8)] == [1.0, 1.0, 0.1, 0.1, 0.01, 0.001]
    w = optim.make_schedule(_sched(warmup_positions=1000), 100, 10_000)
    assert [round(float(w(k)), 3) for k in (0, 5, 10, 50)] == [0.0, 0.5, 1.0, 1.0]
    c = optim.make_schedule(_sched(name="cosine", end_fraction=0.1), 10, 1000)
    assert float(c(0)) == 1.0 and float(c(50)) == pytest.approx(0.55) and float(c(100)) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        optim.make_schedule(_sched(name="linear"), 1, 1)
