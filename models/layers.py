"""Building blocks shared by the policy-net families (Flax NNX, NHWC). Parameters stay in ``param_dtype``;
``dtype`` is the compute and output dtype; a broadcast parameter meets a lower-precision activation in float32
(:func:`add_param`, :func:`batch_norm`). Learning-rate multipliers are parameter metadata
(``lr_multiplier``, ``center_lr_multiplier``) read by :func:`kifunet.models.params.lr_multipliers`."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from kifunet.data_prep.errors import InvalidValue
from kifunet.data_prep.ranks import MAX as MAX_RANK
from kifunet.data_prep.ranks import MIN as MIN_RANK
from kifunet.data_prep.ranks import UNKNOWN as UNKNOWN_RANK

Dtype = jnp.dtype

#: initialiser of all conv kernels unless a family says otherwise: He truncated normal, fan-in k*k*C_in
he_normal = nnx.initializers.he_normal()

# Ranks use the scale of kifunet.data_prep.ranks: 1d..9d = 0..8, k kyu = -k, 1p..9p = 9..17, unknown = -128;
# MIN_RANK = -30 (30 kyu; weaker values are clipped to it), MAX_RANK = 17 (9 pro).
#: embedding rows: one per rank in [MIN_RANK, MAX_RANK] plus a last row for unknown
NUM_RANK_ROWS = MAX_RANK - MIN_RANK + 2


def add_param(x: jax.Array, p: jax.Array) -> jax.Array:
    """``x + p`` (``p`` broadcast to ``x``) in ``x``'s dtype, added in float32 when ``x`` is lower precision (so
    ``p``'s gradient sums in float32); exactly ``x + p.astype(x.dtype)`` for float32."""
    if jnp.finfo(x.dtype).bits >= 32:
        return x + p.astype(x.dtype)
    return (x.astype(jnp.float32) + p.astype(jnp.float32)).astype(x.dtype)


def _promote_float32(args, /, *, dtype=None, inexact=True):
    """``promote_dtype`` for ``nnx.BatchNorm`` in low precision: every array (input, statistics, scale, offset) in
    float32; the layer casts its output to its ``dtype``."""
    return tuple(None if a is None else jnp.asarray(a, jnp.float32) for a in args)


def symmetrize(kernel: jax.Array) -> jax.Array:
    """Average a ``[k, k, C_in, C_out]`` kernel over the 8 rotations/reflections of its spatial axes."""
    total = jnp.zeros_like(kernel)
    for base in (kernel, jnp.swapaxes(kernel, 0, 1)):
        for r in range(4):
            total = total + jnp.rot90(base, r, axes=(0, 1))
    return total / 8.0


class Conv(nnx.Module):
    """Same-padded, stride-1 convolution ``[B, H, W, C_in] -> [B, H, W, C_out]``. ``dilation``: atrous rate;
    ``symmetric``: convolve :func:`symmetrize` of the kernel; ``center_emphasis`` > 0: a He-scaled boost of the centre
    tap at init, marked ``center_lr_multiplier=center_lr`` (a separate weight with ``center_param``)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        kernel_size: int,
        *,
        dilation: int = 1,
        use_bias: bool = False,
        symmetric: bool = False,
        center_emphasis: float = 0.0,
        center_lr: float = 1.0,
        center_param: bool = False,
        lr_multiplier: float = 1.0,
        kernel_init=he_normal,
        dtype: Dtype = jnp.float32,
        param_dtype: Dtype = jnp.float32,
        rngs: nnx.Rngs,
    ):
        if kernel_size % 2 != 1:
            raise InvalidValue(f"kernel_size must be odd for same padding, got {kernel_size}")
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.symmetric = symmetric
        self.dtype = dtype
        shape = (kernel_size, kernel_size, in_features, out_features)
        kernel = kernel_init(rngs.params(), shape, param_dtype)
        center_init = (nnx.initializers.variance_scaling(2.0 * center_emphasis**2, "fan_in", "truncated_normal")
                       if center_emphasis > 0.0 else nnx.initializers.zeros)
        c = kernel_size // 2
        meta = {}
        if lr_multiplier != 1.0:
            meta["lr_multiplier"] = float(lr_multiplier)
        center = None
        if center_param:
            center_meta = {"lr_multiplier": float(lr_multiplier * center_lr)} if lr_multiplier * center_lr != 1.0 else {}
            center = nnx.Param(center_init(rngs.params(), (in_features, out_features), param_dtype), **center_meta)
        elif center_emphasis > 0.0:
            kernel = kernel.at[c, c].add(center_init(rngs.params(), (in_features, out_features), param_dtype))
            if center_lr != 1.0:
                meta["center_lr_multiplier"] = float(center_lr)
        self.kernel = nnx.Param(kernel, **meta)
        self.center = center
        self.bias = nnx.Param(jnp.zeros((out_features,), param_dtype)) if use_bias else None

    def effective_kernel(self) -> jax.Array:
        """The kernel actually convolved (after the centre weight and the symmetrisation)."""
        k = jnp.asarray(self.kernel[...])  # weights restored as NumPy arrays (export, gtp) have no ``.at``
        if self.center is not None:
            c = self.kernel_size // 2  # the centre weight padded to the kernel's shape: an add, not a scatter
            k = k + jnp.pad(jnp.asarray(self.center[...])[None, None], ((c, c), (c, c), (0, 0), (0, 0)))
        if self.symmetric:
            k = symmetrize(k)
        return k

    def __call__(self, x: jax.Array, kernel_mask: jax.Array | None = None) -> jax.Array:
        """``kernel_mask`` (broadcastable to ``[1, 1, C_in, C_out]``) multiplies the kernel (MAO masks)."""
        k = self.effective_kernel()
        if kernel_mask is not None:
            k = k * kernel_mask
        y = jax.lax.conv_general_dilated(
            x.astype(self.dtype),
            k.astype(self.dtype),
            window_strides=(1, 1),
            padding="SAME",
            rhs_dilation=(self.dilation, self.dilation),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )
        if self.bias is not None:
            y = add_param(y, self.bias[...])
        return y

    def macs_per_point(self) -> int:
        """Multiply-accumulates per output board point (zero padding counted, as is usual)."""
        return self.kernel_size * self.kernel_size * self.in_features * self.out_features


class LinePairConv(nnx.Module):
    """One line-shaped kernel ``K`` convolved two ways: ``(a, b) -> (conv(a, K), conv(b, K^T))``, same-padded,
    stride 1, no bias; with ``b`` the transpose of ``a`` the second output is the transpose of the first."""

    def __init__(self, in_features: int, out_features: int, length: int, *, horizontal: bool,
                 kernel_init=he_normal, dtype: Dtype = jnp.float32, param_dtype: Dtype = jnp.float32,
                 rngs: nnx.Rngs):
        if length % 2 != 1:
            raise InvalidValue(f"length must be odd for same padding, got {length}")
        self.in_features, self.out_features, self.length = in_features, out_features, length
        self.dtype = dtype
        shape = (1, length, in_features, out_features) if horizontal else (length, 1, in_features, out_features)
        self.kernel = nnx.Param(kernel_init(rngs.params(), shape, param_dtype))

    def _conv(self, x: jax.Array, k: jax.Array) -> jax.Array:
        return jax.lax.conv_general_dilated(x.astype(self.dtype), k.astype(self.dtype), window_strides=(1, 1),
                                            padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def __call__(self, a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
        k = jnp.asarray(self.kernel[...])
        return self._conv(a, k), self._conv(b, jnp.swapaxes(k, 0, 1))

    def macs_per_point(self) -> int:
        """Multiply-accumulates per output board point of both convolutions (zero padding counted)."""
        return 2 * self.length * self.in_features * self.out_features

class DilatedGroupConv(nnx.Module):
    """``out - dilated`` ordinary output channels followed by ``dilated`` channels of a dilated conv, both over the
    whole input (``conv_kwargs`` to both); ``dilated == 0`` is an ordinary :class:`Conv`."""

    def __init__(self, in_features: int, out_features: int, kernel_size: int, *, dilated: int, rate: int,
                 rngs: nnx.Rngs, **conv_kwargs):
        if not 0 <= dilated <= out_features:
            raise InvalidValue(f"dilated={dilated} must be in [0, {out_features}]")
        self.plain = Conv(in_features, out_features - dilated, kernel_size, rngs=rngs, **conv_kwargs) \
            if dilated < out_features else None
        self.atrous = Conv(in_features, dilated, kernel_size, dilation=rate, rngs=rngs, **conv_kwargs) \
            if dilated > 0 else None

    def __call__(self, x: jax.Array) -> jax.Array:
        parts = [m(x) for m in (self.plain, self.atrous) if m is not None]
        return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=-1)


class PositionBias(nnx.Module):
    """A learned bias for every board point and channel: ``x + b``, ``b`` of shape ``[N, N, C]``."""

    def __init__(self, board_size: int, features: int, *, param_dtype: Dtype = jnp.float32):
        self.bias = nnx.Param(jnp.zeros((board_size, board_size, features), param_dtype))

    def __call__(self, x: jax.Array) -> jax.Array:
        return add_param(x, self.bias[...])


class PReLU(nnx.Module):
    """``max(x, 0) + alpha * min(x, 0)`` with one ``alpha`` per channel; the product is formed in float32 for a
    lower-precision ``x``."""

    def __init__(self, features: int, *, init: float = 0.0, param_dtype: Dtype = jnp.float32):
        self.alpha = nnx.Param(jnp.full((features,), init, param_dtype))

    def __call__(self, x: jax.Array) -> jax.Array:
        if jnp.finfo(x.dtype).bits >= 32:
            a = self.alpha[...].astype(x.dtype)
            return jnp.maximum(x, 0) + a * jnp.minimum(x, 0)
        neg = (self.alpha[...].astype(jnp.float32) * jnp.minimum(x, 0).astype(jnp.float32)).astype(x.dtype)
        return jnp.maximum(x, 0) + neg


def crelu(x: jax.Array) -> jax.Array:
    """Concatenated ReLU: ``[relu(x), relu(-x)]`` on the channel axis (doubles the channels)."""
    return jnp.concatenate([jax.nn.relu(x), jax.nn.relu(-x)], axis=-1)


def pooled_features(channels: int, *, stdev: bool = False, board_scaling: bool = False) -> int:
    """Length of the :func:`global_pool` vector for ``channels`` input channels."""
    return channels * (2 + int(stdev) + int(board_scaling))


def global_pool(g: jax.Array, *, stdev: bool = False, board_scaling: bool = False) -> jax.Array:
    """``[B, H, W, C] -> [B, k*C]``: channel means, [``board_scaling``: ``mean * (sqrt(H*W) - 14) / 10``], channel
    maxes, [``stdev``]; computed in float32, returned in ``g``'s dtype."""
    g32 = g.astype(jnp.float32)
    mean = jnp.mean(g32, axis=(1, 2))
    parts = [mean]
    if board_scaling:
        parts.append(mean * ((math.sqrt(g.shape[1] * g.shape[2]) - 14.0) / 10.0))
    parts.append(jnp.max(g32, axis=(1, 2)))
    if stdev:
        parts.append(jnp.std(g32, axis=(1, 2)))
    return jnp.concatenate(parts, axis=-1).astype(g.dtype)


class GlobalPoolBias(nnx.Module):
    """``x + dense(global_pool(g))`` broadcast over the board; ``g`` has ``pool_features`` channels, ``x``
    ``out_features``; ``init_scale`` multiplies the He-normal init's standard deviation."""

    def __init__(self, pool_features: int, out_features: int, *, stdev: bool = False,
                 board_scaling: bool = False, use_bias: bool = False, init_scale: float = 1.0,
                 dtype: Dtype = jnp.float32, param_dtype: Dtype = jnp.float32, rngs: nnx.Rngs):
        self.stdev = stdev
        self.board_scaling = board_scaling
        n_in = pooled_features(pool_features, stdev=stdev, board_scaling=board_scaling)
        init = nnx.initializers.variance_scaling(2.0 * init_scale**2, "fan_in", "truncated_normal")
        self.dense = nnx.Linear(n_in, out_features, use_bias=use_bias, kernel_init=init, dtype=dtype,
                                param_dtype=param_dtype, rngs=rngs)

    def __call__(self, x: jax.Array, g: jax.Array) -> jax.Array:
        bias = self.dense(global_pool(g, stdev=self.stdev, board_scaling=self.board_scaling))
        return add_param(x, bias[:, None, None, :])


def batch_norm(features: int, *, dtype: Dtype, param_dtype: Dtype, rngs: nnx.Rngs, affine: bool = True,
               momentum: float = 0.99, epsilon: float = 1e-3, lr_multiplier: float = 1.0) -> nnx.BatchNorm:
    """``nnx.BatchNorm`` over channels; TF/GoNN defaults (momentum 0.99, eps 1e-3). With a lower-precision
    ``dtype`` it normalises in float32 and casts its output to ``dtype`` (scale and offset gradients summed in
    float32); with float32 it is flax's layer unchanged."""
    meta = {"lr_multiplier": float(lr_multiplier)} if lr_multiplier != 1.0 else {}
    low = jnp.finfo(jnp.dtype(dtype)).bits < 32
    promote = {"promote_dtype": _promote_float32} if low else {}
    return nnx.BatchNorm(features, momentum=momentum, epsilon=epsilon, use_bias=affine, use_scale=affine,
                         dtype=dtype, param_dtype=param_dtype, rngs=rngs, scale_metadata=meta, bias_metadata=meta,
                         **promote)


class GPS(nnx.Module):
    """Global pooling structure of NoGoZero+: ``X + FC(pool(relu(BN(G))))``, ``X`` of ``x_features`` channels,
    ``G`` of ``g_features``; ``pool`` gives the channel means and maxes, the FC (with bias) maps them to a bias per
    channel of ``X``."""

    def __init__(self, x_features: int, g_features: int, *, dtype: Dtype = jnp.float32,
                 param_dtype: Dtype = jnp.float32, rngs: nnx.Rngs):
        self.bn = batch_norm(g_features, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.pool_bias = GlobalPoolBias(g_features, x_features, use_bias=True, dtype=dtype,
                                        param_dtype=param_dtype, rngs=rngs)

    def __call__(self, x: jax.Array, g: jax.Array) -> jax.Array:
        return self.pool_bias(x, jax.nn.relu(self.bn(g)))


class PooledValueHead(nnx.Module):
    """``tanh(dense(relu(dense(global_pool(act(BN(conv1x1(h))))))))``: trunk ``[B, N, N, C]`` -> value
    ``[B]``; the same size on every board."""

    def __init__(self, features: int, *, channels: int, hidden: int, act: nnx.Module | None = None,
                 stdev: bool = False, board_scaling: bool = False, dtype: Dtype = jnp.float32,
                 param_dtype: Dtype = jnp.float32, rngs: nnx.Rngs):
        kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.stdev, self.board_scaling = stdev, board_scaling
        self.conv = Conv(features, channels, 1, **kw)
        self.bn = batch_norm(channels, **kw)
        self.act = act
        self.hidden = nnx.Linear(pooled_features(channels, stdev=stdev, board_scaling=board_scaling), hidden, **kw)
        self.out = nnx.Linear(hidden, 1, **kw)

    def __call__(self, h: jax.Array) -> jax.Array:
        v = self.bn(self.conv(h))
        v = jax.nn.relu(v) if self.act is None else self.act(v)
        v = jax.nn.relu(self.hidden(global_pool(v, stdev=self.stdev, board_scaling=self.board_scaling)))
        return jnp.tanh(self.out(v)[:, 0])


def select_by_mean(maps: jax.Array) -> tuple[jax.Array, jax.Array]:
    """MAO selection: ``maps`` ``[B, H, W, U, K]`` -> (``[B, H, W, U]``, ``winners [B, U]``): per example and
    unit the candidate map with the largest spatial mean (the first on ties)."""
    means = jnp.mean(maps.astype(jnp.float32), axis=(1, 2))  # [B, U, K]
    winners = jnp.argmax(means, axis=-1)
    one_hot = jax.nn.one_hot(winners, maps.shape[-1], dtype=maps.dtype)  # [B, U, K]
    return jnp.sum(maps * one_hot[:, None, None, :, :], axis=-1), winners


class MAOLayer(nnx.Module):
    """Maximum-average-out layer: ``units`` outputs, each the best of ``candidates`` convs (:func:`select_by_mean`).
    In training mode each candidate sees its own Bernoulli(``1 - mask_rate``) input-channel mask from the
    ``dropout`` stream; at inference all channels pass."""

    def __init__(self, in_features: int, units: int, candidates: int, *, kernel_size: int = 3,
                 mask_rate: float = 0.5, deterministic: bool = False, dtype: Dtype = jnp.float32,
                 param_dtype: Dtype = jnp.float32, rngs: nnx.Rngs):
        if not 0.0 <= mask_rate < 1.0:
            raise InvalidValue(f"mask_rate must be in [0, 1), got {mask_rate}")
        self.units = units
        self.candidates = candidates
        self.mask_rate = mask_rate
        self.deterministic = deterministic
        self.conv = Conv(in_features, units * candidates, kernel_size, use_bias=True, dtype=dtype,
                         param_dtype=param_dtype, rngs=rngs)
        self.rngs = rngs["dropout"].fork()

    def candidate_maps(self, x: jax.Array) -> jax.Array:
        """``[B, H, W, units, candidates]`` candidate maps (masked in training mode)."""
        mask = None
        if not self.deterministic and self.mask_rate > 0.0:
            keep = 1.0 - self.mask_rate
            shape = (1, 1, self.conv.in_features, self.conv.out_features)
            mask = jax.random.bernoulli(self.rngs(), keep, shape).astype(jnp.float32) / keep
        y = self.conv(x, kernel_mask=mask)
        return y.reshape(*y.shape[:-1], self.units, self.candidates)

    def __call__(self, x: jax.Array) -> jax.Array:
        return select_by_mean(self.candidate_maps(x))[0]


def rank_index(rank: jax.Array) -> jax.Array:
    """Rank -> embedding row: clipped to ``[MIN_RANK, MAX_RANK]`` and shifted to rows ``0..47``;
    ``UNKNOWN_RANK`` is the last row, ``NUM_RANK_ROWS - 1``."""
    rank = jnp.asarray(rank, jnp.int32)
    known = jnp.clip(rank, MIN_RANK, MAX_RANK) - MIN_RANK
    return jnp.where(rank == UNKNOWN_RANK, NUM_RANK_ROWS - 1, known)


class RankEmbedding(nnx.Module):
    """A learned ``features``-vector per rank (:func:`rank_index`) as a ``[B, 1, 1, F]`` bias; ``rank=None`` is
    unknown for the whole batch. Init N(0, 0.1^2)."""

    def __init__(self, features: int, *, dtype: Dtype = jnp.float32, param_dtype: Dtype = jnp.float32,
                 rngs: nnx.Rngs):
        self.embed = nnx.Embed(NUM_RANK_ROWS, features, embedding_init=nnx.initializers.normal(0.1),
                               dtype=dtype, param_dtype=param_dtype, rngs=rngs)

    def __call__(self, rank: jax.Array | None, batch: int) -> jax.Array:
        if rank is None:
            rank = jnp.full((batch,), UNKNOWN_RANK, jnp.int32)
        return self.embed(rank_index(rank))[:, None, None, :]


class ProfileEmbedding(nnx.Module):
    """An MLP of a game profile (46 numbers) as a ``[B, 1, 1, F]`` bias; ``profile=None`` is all-unknown.
    The output layer starts at zero."""

    def __init__(self, features: int, hidden: int, *, dtype: Dtype = jnp.float32, param_dtype: Dtype = jnp.float32,
                 rngs: nnx.Rngs):
        from kifunet.data_prep import profiles

        self.size = profiles.SIZE
        self._unknown = tuple(float(v) for v in profiles.encode(profiles.UNKNOWN_PROFILE))  # static, not state
        self.hidden = nnx.Linear(self.size, hidden, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.out = nnx.Linear(hidden, features, kernel_init=nnx.initializers.zeros, dtype=dtype,
                              param_dtype=param_dtype, rngs=rngs)

    def __call__(self, profile: jax.Array | None, batch: int) -> jax.Array:
        if profile is None:
            profile = jnp.broadcast_to(jnp.asarray(self._unknown, jnp.float32), (batch, self.size))
        profile = jnp.asarray(profile)
        if profile.ndim != 2 or profile.shape[1] != self.size:
            raise ValueError(f"profile must be [B, {self.size}] (kifunet.data_prep.profiles), got {profile.shape}")
        return self.out(jax.nn.relu(self.hidden(profile.astype(self.hidden.dtype or jnp.float32))))[:, None, None, :]

