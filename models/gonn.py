"""GoNN sandbox (2018) pre-activation ResNet with each of its ideas switchable for ablations (structure and
counts: docs/gonn.md section 4), plus our wide low-rank, chain-pooling and value-head blocks (section 7). Each
BatchNorm and the activation after it run as :func:`~kifunet.models.norm_act.norm_act` (one hand-written backward
pass in training)."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from kifunet.data_prep.errors import InvalidValue
from kifunet.models.base import PolicyNet, board_logits_without_pass
from kifunet.models.chain_pool import chain_labels, pool_chains
from kifunet.models.layers import (
    Conv,
    DilatedGroupConv,
    GlobalPoolBias,
    LinePairConv,
    PooledValueHead,
    PReLU,
    batch_norm,
    crelu,
)
from kifunet.models.norm_act import norm_act


class _Act(nnx.Module):
    """PReLU (per-channel slope, init ``prelu_init``) or plain ReLU."""

    def __init__(self, features: int, *, activation: str, prelu_init: float, param_dtype):
        if activation not in ("prelu", "relu"):
            raise InvalidValue(f"activation must be 'prelu' or 'relu', got {activation!r}")
        self.prelu = PReLU(features, init=prelu_init, param_dtype=param_dtype) if activation == "prelu" else None

    def __call__(self, x):
        return jax.nn.relu(x) if self.prelu is None else self.prelu(x)

    def after(self, bn: nnx.BatchNorm, x):
        """``self(bn(x))``, BatchNorm and activation fused in training mode (:func:`~kifunet.models.norm_act.norm_act`)."""
        if self.prelu is None:
            return norm_act(bn, x, "relu", act=self)
        return norm_act(bn, x, "prelu", self.prelu.alpha, act=self)


class GoNNBlock(nnx.Module):
    """Ordinary (``dilated=0``) or dilated pre-activation residual block."""

    def __init__(self, features: int, *, dilated: int, rate: int, act: dict, conv: dict, bn: dict, rngs):
        self.bn1 = batch_norm(features, rngs=rngs, **bn)
        self.act1 = _Act(features, **act)
        self.conv1 = DilatedGroupConv(features, features, 3, dilated=dilated, rate=rate, rngs=rngs, **conv)
        self.bn2 = batch_norm(features, rngs=rngs, **bn)
        self.act2 = _Act(features, **act)
        self.conv2 = Conv(features, features, 3, rngs=rngs, **conv)

    def __call__(self, x):
        h = self.conv1(self.act1.after(self.bn1, x))
        return x + self.conv2(self.act2.after(self.bn2, h))


class GoNNGlobalBlock(nnx.Module):
    """Pre-activation residual block whose first conv's last ``pooled`` channels bias the others globally."""

    def __init__(self, features: int, *, pooled: int, pool: dict, act: dict, conv: dict, bn: dict, rngs):
        self.pooled = pooled
        kept = features - pooled
        self.bn1 = batch_norm(features, rngs=rngs, **bn)
        self.act1 = _Act(features, **act)
        self.conv1 = Conv(features, features, 3, rngs=rngs, **conv)
        self.bn_g = batch_norm(pooled, rngs=rngs, **bn)
        self.act_g = _Act(pooled, **act)
        self.pool_bias = GlobalPoolBias(pooled, kept, init_scale=0.5, rngs=rngs, **pool)
        self.bn2 = batch_norm(kept, rngs=rngs, **bn)
        self.act2 = _Act(kept, **act)
        self.conv2 = Conv(kept, features, 3, rngs=rngs, **conv)

    def __call__(self, x):
        h = self.conv1(self.act1.after(self.bn1, x))
        a, b = h[..., : -self.pooled], h[..., -self.pooled:]
        a = self.pool_bias(a, self.act_g.after(self.bn_g, b))
        return x + self.conv2(self.act2.after(self.bn2, a))


class GoNNWideBlock(nnx.Module):
    """Wide low-rank pre-activation residual block (1 x ``length`` and ``length`` x 1 convs through
    ``mid`` channels, paths A and B transposed: :class:`~kifunet.models.layers.LinePairConv`);
    ``block(transpose(x)) == transpose(block(x))``."""

    def __init__(self, features: int, *, mid: int, length: int, act: dict, dtype, param_dtype, rngs):
        bn = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        conv = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.bn1 = batch_norm(features, **bn)
        self.act1 = _Act(features, **act)
        self.conv1 = LinePairConv(features, mid, length, horizontal=True, **conv)
        self.bn2 = batch_norm(mid, **bn)
        self.act2 = _Act(mid, **act)
        self.conv2 = LinePairConv(mid, features, length, horizontal=False, **conv)

    def __call__(self, x):
        h = self.act1.after(self.bn1, x)
        a, b = self.conv1(h, h)
        ab = self.act2.after(self.bn2, jnp.concatenate([a, b], axis=0))
        a, b = jnp.split(ab, 2, axis=0)
        a, b = self.conv2(a, b)
        return x + a + b


class GoNNChainBlock(nnx.Module):
    """Chain-pooling pre-activation residual block: conv3x3 C->``pooled``, max over each chain
    (:func:`~kifunet.models.chain_pool.pool_chains`, labels given per call), conv3x3 back to C; equivariant under the 8
    symmetries."""

    def __init__(self, features: int, *, pooled: int, act: dict, conv: dict, bn: dict, rngs):
        self.bn1 = batch_norm(features, rngs=rngs, **bn)
        self.act1 = _Act(features, **act)
        self.conv1 = Conv(features, pooled, 3, rngs=rngs, **conv)
        self.bn2 = batch_norm(pooled, rngs=rngs, **bn)
        self.act2 = _Act(pooled, **act)
        self.conv2 = Conv(pooled, features, 3, rngs=rngs, **conv)

    def __call__(self, x, labels):
        h = pool_chains(self.conv1(self.act1.after(self.bn1, x)), labels)
        return x + self.conv2(self.act2.after(self.bn2, h))


class GoNNPolicyHead(nnx.Module):
    """p1 (+ global bias from g1) -> BN -> CReLU -> 5x5 conv to one plane."""

    def __init__(self, features: int, *, head_features: int, head_pooled: int, global_pool: bool, pool: dict,
                 act: dict, dtype, param_dtype, rngs):
        conv = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        bn = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.p1 = Conv(features, head_features, 3, **conv)
        if global_pool:
            self.g1 = Conv(features, head_pooled, 3, **conv)
            self.g_bn = batch_norm(head_pooled, **bn)
            self.g_act = _Act(head_pooled, **act)
            self.pool_bias = GlobalPoolBias(head_pooled, head_features, init_scale=0.5, dtype=dtype,
                                            param_dtype=param_dtype, rngs=rngs, **pool)
        else:
            self.g1 = self.g_bn = self.g_act = self.pool_bias = None
        self.p_bn = batch_norm(head_features, lr_multiplier=0.25, **bn)
        half_he = nnx.initializers.variance_scaling(0.5, "fan_in", "truncated_normal")  # He x 0.5
        self.p2 = Conv(2 * head_features, 1, 5, kernel_init=half_he, lr_multiplier=0.25, **conv)

    def __call__(self, h):
        p = self.p1(h)
        if self.g1 is not None:
            p = self.pool_bias(p, self.g_act.after(self.g_bn, self.g1(h)))
        return self.p2(crelu(norm_act(self.p_bn, p, "none")))[..., 0]


def _block_kinds(blocks: int, global_blocks, wide_blocks, chain_blocks) -> tuple[tuple[int, ...], ...]:
    """(global, wide, chain) block indices as int tuples; ValueError unless they are indices of the ``blocks``
    trunk blocks (global ones not block 0), each block of one kind at most."""
    global_blocks = tuple(int(i) for i in global_blocks)
    if any(not 0 < i < blocks for i in global_blocks):
        raise InvalidValue(f"global_blocks {global_blocks} must be block indices in [1, {blocks})")
    wide_blocks = tuple(int(i) for i in wide_blocks)
    if any(not 0 <= i < blocks for i in wide_blocks) or set(wide_blocks) & set(global_blocks):
        raise InvalidValue(f"wide_blocks {wide_blocks} must be block indices in [0, {blocks}) that are not "
                         f"global blocks {global_blocks}")
    chain_blocks = tuple(int(i) for i in chain_blocks)
    if any(not 0 <= i < blocks for i in chain_blocks) or set(chain_blocks) & (set(global_blocks) | set(wide_blocks)):
        raise InvalidValue(f"chain_blocks {chain_blocks} must be block indices in [0, {blocks}) that are neither "
                         f"global blocks {global_blocks} nor wide blocks {wide_blocks}")
    return global_blocks, wide_blocks, chain_blocks


class GoNNResNet(PolicyNet):
    """GoNN pre-activation ResNet; every GoNN feature has a switch (``dilated_channels=0``, ``global_blocks=()``,
    ``head_global_pool=False``, ``activation="relu"``, ``center_emphasis=False`` turn them off); ``value_head``,
    ``wide_blocks`` and ``chain_blocks`` add ours."""

    resizable = True

    def __init__(self, *, board_size: int = 19, in_planes: int = 26, channels: int = 192, blocks: int = 12,
                 dilated_channels: int = 64, dilation_rates: Sequence[int] = (2,),
                 global_blocks: Sequence[int] = (), global_channels: int = 64, head_features: int = 48,
                 head_pooled: int = 32, head_global_pool: bool = True, activation: str = "prelu",
                 prelu_init: float = 0.0, center_emphasis: bool = True, pool_stdev: bool = False,
                 pool_board_scaling: bool = False, value_head: bool = False, value_channels: int = 32,
                 value_hidden: int = 64, rank_embedding: bool = False, profile_embedding: int = 0,
                 ownership_head: bool = False, score_head: bool = False, wide_blocks: Sequence[int] = (),
                 wide_channels: int = 0, wide_length: int = 9, chain_blocks: Sequence[int] = (),
                 chain_channels: int = 0, chain_stone_planes: Sequence[int] = (1, 2), dtype=jnp.float32, param_dtype=jnp.float32,
                 rngs: nnx.Rngs):
        global_blocks, wide_blocks, chain_blocks = _block_kinds(blocks, global_blocks, wide_blocks, chain_blocks)
        self.chain_stone_planes = tuple(int(i) for i in chain_stone_planes)
        if chain_blocks and (len(self.chain_stone_planes) != 2
                             or any(not 0 <= i < in_planes for i in self.chain_stone_planes)):
            raise InvalidValue(f"chain_stone_planes {tuple(chain_stone_planes)} must be two input planes in "
                             f"[0, {in_planes}) (the stone planes)")
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=channels,
                    rngs=rngs, value_head=value_head)
        act = dict(activation=activation, prelu_init=prelu_init, param_dtype=param_dtype)
        bn = dict(dtype=dtype, param_dtype=param_dtype)
        pool = dict(stdev=pool_stdev, board_scaling=pool_board_scaling)
        emphasis = dict(center_emphasis=0.3, center_lr=1.5) if center_emphasis else {}
        conv = dict(dtype=dtype, param_dtype=param_dtype, **emphasis)
        self.stem = Conv(in_planes, channels, 5, center_param=center_emphasis, center_emphasis=0.3 if center_emphasis else 0.0,
                         dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        blocks_list, n_dilated = [], 0
        for i in range(blocks):  # built in order: each block draws its initial weights from rngs in turn
            if i in chain_blocks:
                blocks_list.append(GoNNChainBlock(channels, pooled=chain_channels or channels, act=act, conv=conv,
                                                  bn=bn, rngs=rngs))
            elif i in wide_blocks:
                blocks_list.append(GoNNWideBlock(channels, mid=wide_channels or channels, length=wide_length,
                                                 act=act, dtype=dtype, param_dtype=param_dtype, rngs=rngs))
            elif i in global_blocks:
                blocks_list.append(GoNNGlobalBlock(channels, pooled=global_channels, act=act, conv=conv, bn=bn,
                                                   pool=dict(pool, dtype=dtype, param_dtype=param_dtype), rngs=rngs))
            else:
                dilated = dilated_channels if i > 0 else 0
                rate = dilation_rates[n_dilated % len(dilation_rates)] if dilated else 1
                n_dilated += bool(dilated)
                blocks_list.append(GoNNBlock(channels, dilated=dilated, rate=rate, act=act, conv=conv, bn=bn,
                                             rngs=rngs))
        self.blocks = nnx.List(blocks_list)
        self.final_bn = batch_norm(channels, rngs=rngs, **bn)
        self.final_act = _Act(channels, **act)
        self.head = GoNNPolicyHead(channels, head_features=head_features, head_pooled=head_pooled,
                                   global_pool=head_global_pool, pool=pool, act=act, dtype=dtype,
                                   param_dtype=param_dtype, rngs=rngs)
        self.value = (PooledValueHead(channels, channels=value_channels, hidden=value_hidden,
                                      act=_Act(value_channels, **act), stdev=pool_stdev,
                                      board_scaling=pool_board_scaling, dtype=dtype, param_dtype=param_dtype,
                                      rngs=rngs)
                      if value_head else None)
        self._setup_aux(channels, ownership_head=ownership_head, score_head=score_head, dtype=dtype,
                        param_dtype=param_dtype, rngs=rngs)

    def heads(self, x, cond, to_move):
        h = self.add_condition(self.stem(x), cond)
        labels = None
        for block in self.blocks:
            if isinstance(block, GoNNChainBlock):
                if labels is None:
                    a, b = self.chain_stone_planes
                    labels = chain_labels(x[..., a], x[..., b])
                h = block(h, labels)
            else:
                h = block(h)
        h = self.final_act.after(self.final_bn, h)
        return board_logits_without_pass(self.head(h)), None if self.value is None else self.value(h), self.aux(h)
