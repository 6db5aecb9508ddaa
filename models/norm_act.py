"""BatchNorm in training mode followed by an activation, as one function with a hand-written backward pass.

:func:`norm_act` is ``act(bn(x))`` for an ``nnx.BatchNorm`` with scale and offset over the last axis, in training
mode, followed by PReLU, ReLU or nothing. The forward pass is flax's arithmetic (statistics ``mean(x)`` and
``max(0, mean(x^2) - mean(x)^2)``, ``(x - mean) * (rsqrt(var + eps) * scale) + offset``; the running averages
updated as flax updates them) followed by the activation, in float32. The backward pass keeps only ``x`` and the
per-channel statistics and recomputes the normalised ``x`` from them: three per-channel sums (the offset's,
the scale's and the PReLU slope's gradients) and one elementwise pass for ``x``'s gradient,
``scale * r * (g - mean(g) - xhat * mean(g * xhat))`` (the second mean dropped where the variance was clipped to
zero), where autodiff of the same forward keeps the normalised ``x`` and the activation's input as well and sums
the mean's and the variance's paths separately. The gradients are the same to rounding, not bit for bit.

In eval mode, without scale or offset, with statistics over other axes or a named axis, or for a TPU
(:func:`fusable`), ``norm_act`` is ``act(bn(x))`` unchanged. With a lower-precision ``x`` (bfloat16) the whole layer is computed in float32 and its
output cast to ``bn.dtype``; its parameter gradients are float32 sums.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import nnx

#: activations :func:`norm_act` fuses: PReLU (one slope per channel), ReLU, none
ACTIVATIONS = ("prelu", "relu", "none")


def _normalise(x, mean, mul, bias):
    """flax's ``_normalize`` with ``mul = rsqrt(var + eps) * scale`` already formed."""
    return (x - mean) * mul + bias


def _activate(y, alpha, kind: str):
    if kind == "prelu":
        return jnp.maximum(y, 0) + alpha * jnp.minimum(y, 0)
    if kind == "relu":
        return jax.nn.relu(y)
    return y


@partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def _bn_act(x, scale, bias, alpha, epsilon: float, kind: str):
    """``(act(bn(x)), batch mean, batch variance)`` over every axis but the last; float32 arguments."""
    return _bn_act_fwd(x, scale, bias, alpha, epsilon, kind)[0]


def _bn_act_fwd(x, scale, bias, alpha, epsilon, kind):
    axes = tuple(range(x.ndim - 1))
    mean = jnp.mean(x, axes)
    mean2 = jnp.mean(jax.lax.square(x), axes)
    var = jnp.maximum(0.0, mean2 - jax.lax.square(mean))
    r = jax.lax.rsqrt(var + epsilon)
    out = _activate(_normalise(x, mean, r * scale, bias), alpha, kind)
    return (out, mean, var), (x, mean, r, var > 0.0, scale, bias, alpha)


def _bn_act_bwd(epsilon, kind, res, cts):
    x, mean, r, positive, scale, bias, alpha = res
    g = cts[0]  # the statistics' cotangents are zero: callers only keep them through stop_gradient
    axes = tuple(range(x.ndim - 1))
    n = x.size // x.shape[-1]
    xhat = (x - mean) * r
    d_alpha = None
    if kind != "none":
        y = _normalise(x, mean, r * scale, bias)
        if kind == "prelu":
            d_alpha = jnp.sum(g * jnp.minimum(y, 0), axes)
            g = jnp.where(y > 0, g, alpha * g)
        else:
            g = jnp.where(y > 0, g, 0.0)
    d_bias = jnp.sum(g, axes)
    d_scale = jnp.sum(g * xhat, axes)
    dx = (scale * r) * (g - d_bias / n - jnp.where(positive, d_scale / n, 0.0) * xhat)
    return dx, d_scale, d_bias, d_alpha


_bn_act.defvjp(_bn_act_fwd, _bn_act_bwd)


def fusable(bn: nnx.BatchNorm) -> bool:
    """Whether :func:`norm_act` takes its fused path for ``bn``: training mode, scale and offset, the last axis, no
    named axis, and no ``fused_norm_act = False`` attribute (set by :class:`kifunet.train.steps.ModelDef` for
    TPUs, whose compiler fuses flax's layer into fewer kernels than this one)."""
    return (not bn.use_running_average and bn.scale is not None and bn.bias is not None
            and bn.axis in (-1,) and bn.axis_name is None and getattr(bn, "fused_norm_act", True))


def norm_act(bn: nnx.BatchNorm, x: jax.Array, kind: str, alpha: nnx.Param | None = None,
             act=None) -> jax.Array:
    """``act(bn(x))`` (module docstring); ``kind`` one of :data:`ACTIVATIONS`, ``alpha`` the PReLU slopes for
    ``"prelu"``, ``act`` the callable applied on the unfused path (identity when None). Updates ``bn``'s running
    averages in training mode."""
    if kind not in ACTIVATIONS:
        raise ValueError(f"kind must be one of {ACTIVATIONS}, got {kind!r}")
    if not fusable(bn):
        y = bn(x)
        return y if act is None else act(y)
    f32 = jnp.float32
    a = jnp.asarray(alpha[...], f32) if kind == "prelu" else None
    out, mean, var = _bn_act(jnp.asarray(x, f32), jnp.asarray(bn.scale[...], f32), jnp.asarray(bn.bias[...], f32),
                             a, float(bn.epsilon), kind)
    mean, var = jax.lax.stop_gradient(mean), jax.lax.stop_gradient(var)
    bn.mean[...] = jax.lax.stop_gradient(bn.momentum * bn.mean[...] + (1 - bn.momentum) * mean)
    bn.var[...] = jax.lax.stop_gradient(bn.momentum * bn.var[...] + (1 - bn.momentum) * var)
    return out.astype(bn.dtype or x.dtype)
