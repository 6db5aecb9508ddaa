"""kifunet.models.norm_act: BatchNorm + activation with a hand-written backward pass, against flax's layer."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from kifunet.models import layers as L
from kifunet.models.norm_act import norm_act

from model_helpers import _fast_compiles, rngs  # noqa: F401  (autouse fixture)


class _Pair(nnx.Module):
    """BatchNorm then an activation, through :func:`norm_act` (``fused``) or flax's layer and autodiff."""

    def __init__(self, kind: str, dtype, fused: bool, channels: int = 6):
        self.bn = L.batch_norm(channels, dtype=dtype, param_dtype=jnp.float32, rngs=rngs(0))
        self.prelu = L.PReLU(channels, init=0.25)
        self.kind, self.fused = kind, fused
        k = jax.random.split(jax.random.key(1), 2)
        self.bn.scale[...] = 1 + 0.3 * jax.random.normal(k[0], (channels,))
        self.bn.bias[...] = 0.2 * jax.random.normal(k[1], (channels,))

    def __call__(self, x):
        act = {"prelu": self.prelu, "relu": jax.nn.relu, "none": None}[self.kind]
        if self.fused:
            return norm_act(self.bn, x, self.kind, self.prelu.alpha if self.kind == "prelu" else None, act=act)
        y = self.bn(x)
        return y if act is None else act(y)


def _run(kind, dtype, fused, x, cot, *, train=True):
    """(output, BatchNorm statistics after the call, gradients of sum(output * cot) for the parameters and x)."""
    pair = _Pair(kind, dtype, fused, x.shape[-1])
    pair.train() if train else pair.eval()
    graph, params, rest = nnx.split(pair, nnx.Param, ...)

    @jax.jit
    def f(params, x, rest):
        m = nnx.merge(graph, params, jax.tree.map(lambda v: v, rest))
        y = m(x)
        return jnp.sum(y.astype(jnp.float32) * cot), (y, nnx.state(m, nnx.BatchStat))

    (_, (y, stats)), grads = jax.value_and_grad(f, argnums=(0, 1), has_aux=True)(params, x, rest)
    flat = lambda t: {jax.tree_util.keystr(k): np.asarray(v, np.float64) for k, v in jax.tree_util.tree_leaves_with_path(t)}
    return np.asarray(y, np.float64), flat(stats), flat(grads)


def _batch(dtype, shape=(4, 5, 5, 6)):
    k = jax.random.split(jax.random.key(2), 2)
    return (2 + 3 * jax.random.normal(k[0], shape)).astype(dtype), jax.random.normal(k[1], shape)


@pytest.mark.parametrize("kind", ["prelu", "relu", "none"])
def test_the_forward_pass_and_statistics_are_flaxs_and_the_gradients_autodiffs(kind):
    x, cot = _batch(jnp.float32)
    y0, s0, g0 = _run(kind, jnp.float32, False, x, cot)
    y1, s1, g1 = _run(kind, jnp.float32, True, x, cot)
    np.testing.assert_array_equal(y1, y0)  # the same arithmetic, bit for bit
    assert s1.keys() == s0.keys() and all(np.array_equal(s1[k], s0[k]) for k in s0)
    assert g1.keys() == g0.keys()
    for k in g0:  # the same gradients to float32 rounding (another summation order)
        scale = np.max(np.abs(g0[k])) or 1.0
        assert np.max(np.abs(g1[k] - g0[k])) <= 2e-6 * scale, (k, np.max(np.abs(g1[k] - g0[k])) / scale)
    if kind == "prelu":
        assert np.max(np.abs(g0["[0]['prelu']['alpha'].value"])) > 0


def test_a_clipped_variance_drops_its_term_as_autodiff_does():
    # a channel at 1000 +- 0.003: mean(x^2) - mean(x)^2 rounds below zero in float32 and is clipped to zero (the
    # running variance moves to exactly 0.99), and autodiff passes no gradient through the clipped variance;
    # keeping that term would move x's gradient by ~1.6e-2 of ~110
    x, cot = _batch(jnp.float32)
    x = x.at[..., 0].set(1000 + 1e-3 * x[..., 0])
    _, s0, g0 = _run("none", jnp.float32, False, x, cot)
    _, _, g1 = _run("none", jnp.float32, True, x, cot)
    assert s0["['bn']['var'].value"][0] == np.float32(0.99)
    assert np.max(np.abs(g1["[1]"] - g0["[1]"])) <= 1e-6 * np.max(np.abs(g0["[1]"]))


def test_bfloat16_computes_in_float32_and_returns_bfloat16():
    x, cot = _batch(jnp.bfloat16, (8, 19, 19, 6))
    y0, s0, g0 = _run("prelu", jnp.bfloat16, False, x, cot)
    y1, s1, g1 = _run("prelu", jnp.bfloat16, True, x, cot)
    assert all(np.array_equal(s1[k], s0[k]) for k in s0)
    np.testing.assert_allclose(y1, y0, rtol=1e-2, atol=1e-2)  # one bfloat16 rounding apart at most
    for k in g0:
        err = np.linalg.norm(g1[k] - g0[k]) / np.linalg.norm(g0[k])
        assert err < 0.01, (k, err)


def test_eval_mode_and_a_named_axis_are_flaxs_layer_unchanged():
    x, cot = _batch(jnp.float32)
    y0, s0, g0 = _run("prelu", jnp.float32, False, x, cot, train=False)
    y1, s1, g1 = _run("prelu", jnp.float32, True, x, cot, train=False)
    np.testing.assert_array_equal(y1, y0)
    assert all(np.array_equal(g1[k], g0[k]) for k in g0)
    pair = _Pair("prelu", jnp.float32, True)
    pair.bn.axis_name = "data"
    from kifunet.models.norm_act import fusable

    assert not fusable(pair.bn)


def test_an_unknown_activation_is_refused():
    pair = _Pair("prelu", jnp.float32, True)
    with pytest.raises(ValueError, match="kind must be one of"):
        norm_act(pair.bn, jnp.ones((1, 2, 2, 6)), "gelu")


def test_a_model_def_for_a_tpu_keeps_flaxs_layer():
    from kifunet import models
    from kifunet.models.norm_act import fusable
    from kifunet.train.steps import ModelDef

    def bns(md):
        model = nnx.merge(md.graph_train, md.params, md.extra)
        return [m for _, m in nnx.iter_modules(model) if isinstance(m, nnx.BatchNorm)]

    make = lambda: models.create("gonn_resnet5", board_size=9, channels=8, dilated_channels=4, head_features=4,
                                 head_pooled=4, rngs=rngs(0))
    assert all(fusable(bn) for bn in bns(ModelDef(make())))
    assert not any(fusable(bn) for bn in bns(ModelDef(make(), fused_norm_act=False)))
