"""GoNN sandbox (2018) pre-activation ResNet, with each of its ideas switchable for ablations.

Structure (docs/gonn.md section 4), C = ``channels`` = 192 by default:

* stem: 5x5 conv ``in_planes -> C``, no bias, plus a separate 1x1 "centre" weight folded into the centre
  tap (init 0.3 x He(fan_in=in_planes)); no BN, no activation (pre-activation net).
* block 0, *ordinary*: BN -> act -> conv3x3 C->C -> BN -> act -> conv3x3 C->C, added to the trunk.
* other blocks, *dilated*: as ordinary, but the first conv's last ``dilated_channels`` (64) outputs come
  from a 3x3 conv of rate ``dilation_rates[i % len]`` (2 at a201e46; 2, 3, 2, 3 in the 5-block net).
* blocks listed in ``global_blocks``, *global*: the first conv gives C-64 channels ``a`` and 64 channels
  ``b``; ``b`` -> BN -> act -> mean and max over the board -> matmul (no bias, init x0.5) -> bias on ``a``;
  then BN -> act -> conv3x3 (C-64)->C.
* blocks listed in ``wide_blocks``, *wide low-rank* (docs/gonn.md section 7; not in GoNN's nets): a
  1x9 -> 9x1 path and, with the same kernels transposed, a 9x1 -> 1x9 path (:class:`GoNNWideBlock`); as many
  parameters as an ordinary block, twice its MACs.
* blocks listed in ``chain_blocks``, *chain pooling* (docs/gonn.md section 7; not in GoNN's nets): BN -> act ->
  conv3x3 C->P (P = ``chain_channels``, C by default) -> each of the P channels max-pooled over every chain of
  stones (:mod:`kifunet.models.chain_pool`; empty points keep their values) -> BN -> act -> conv3x3 P->C, added
  to the trunk (:class:`GoNNChainBlock`). ``18 C P + 3 C + 3 P`` parameters: an ordinary block's at P = C. The
  chains come from the input's stone planes ``chain_stone_planes`` (pla, opp: planes 1 and 2 of the ``gonn`` set)
  and are labelled once per forward pass.
* end of trunk: BN -> act.
* policy head: p1 = conv3x3 C->48, biased by g1 = conv3x3 C->32 -> BN -> act -> mean and max -> matmul
  64->48 (init x0.5, i.e. fan-in x4); BN -> CReLU (96 channels) -> conv5x5 96->1 (init x0.5) -> N*N logits.
  No pass output (pass gets :data:`~kifunet.models.base.NO_PASS_LOGIT`).
* value head (ours, off by default; GoNN had none): ``value_head=True`` adds a
  :class:`~kifunet.models.layers.PooledValueHead` on the end of the trunk, KataGo's shape: 1x1 conv
  C->``value_channels`` (32) -> BN -> act -> mean and max over the board (plus the stdev / board-scaled mean
  when ``pool_stdev`` / ``pool_board_scaling``) -> dense to ``value_hidden`` (64) -> ReLU -> dense to 1 -> tanh;
  the net then returns ``(logits, value)`` (:mod:`kifunet.models.base`). 10,465 parameters at C = 192 with
  PReLU: conv 6,144, BN 64, PReLU 32, dense 64*64 + 64 = 4,160, dense 65; any board size.
* act = PReLU with one slope per channel, init 0 (``activation="relu"`` for the ablation).
* BN: momentum 0.99, eps 1e-3, scale and offset; no conv has a bias.
* centre-weight emphasis (``center_emphasis=True``) on every residual-block conv: +0.3 x He(fan_in=C_in)
  on the centre tap at init and a learning-rate multiplier 1.5 on that tap; multiplier 0.25 on the p1 BN
  and the final 5x5 conv; read them with :func:`kifunet.models.params.lr_multipliers`.

Trainable parameters (26 planes, 19x19; tests/test_models.py checks them against docs/gonn.md section 4.2):

========================================================  ======================  ==========
config                                                    registry name           params
========================================================  ======================  ==========
5 blocks, dilation 2, 3, 2, 3 (README "ResNet 5 Blocks")  gonn_resnet5            3,597,792
12 blocks, no global block (README "ResNet 12 Blocks")    gonn_resnet12           8,250,720
12 blocks, global blocks 6 and 10 (a201e46 as committed)  gonn_resnet12_global    8,062,304
========================================================  ======================  ==========

Per component: stem 129,792; ordinary or dilated block 664,704; global block 570,496; final BN+PReLU
576; policy head 143,904. ``rank_embedding=True`` (not in GoNN at that date, where rank only filtered
the data) adds a learned C-vector per rank to the stem output.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

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


class _Act(nnx.Module):
    """PReLU (per-channel slope, init ``prelu_init``) or plain ReLU."""

    def __init__(self, features: int, *, activation: str, prelu_init: float, param_dtype):
        if activation not in ("prelu", "relu"):
            raise ValueError(f"activation must be 'prelu' or 'relu', got {activation!r}")
        self.prelu = PReLU(features, init=prelu_init, param_dtype=param_dtype) if activation == "prelu" else None

    def __call__(self, x):
        return jax.nn.relu(x) if self.prelu is None else self.prelu(x)


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
        h = self.conv1(self.act1(self.bn1(x)))
        return x + self.conv2(self.act2(self.bn2(h)))


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
        h = self.conv1(self.act1(self.bn1(x)))
        a, b = h[..., : -self.pooled], h[..., -self.pooled:]
        a = self.pool_bias(a, self.act_g(self.bn_g(b)))
        return x + self.conv2(self.act2(self.bn2(a)))


class GoNNWideBlock(nnx.Module):
    """Wide low-rank pre-activation residual block (docs/gonn.md section 7), symmetric under transposition.

    BN -> act -> two paths from one pair of kernels (:class:`~kifunet.models.layers.LinePairConv`): path A a
    1 x ``length`` conv to ``mid`` channels, path B the same kernel transposed (``length`` x 1); both paths ->
    one BN over the two as one batch (so its statistics do not depend on the orientation) -> act -> path A a
    ``length`` x 1 conv back to C, path B that kernel transposed; the sum of the paths is added to the trunk.
    ``block(transpose(x)) == transpose(block(x))``. Parameters ``2 * length * C * mid + 3 * C + 3 * mid`` (PReLU):
    with ``mid = C`` and ``length = 9`` exactly an ordinary block's ``18 C^2 + 6 C``, at twice its MACs. No centre
    emphasis (a line has no centre tap in GoNN's sense).
    """

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
        h = self.act1(self.bn1(x))
        a, b = self.conv1(h, h)
        ab = self.act2(self.bn2(jnp.concatenate([a, b], axis=0)))
        a, b = jnp.split(ab, 2, axis=0)
        a, b = self.conv2(a, b)
        return x + a + b


class GoNNChainBlock(nnx.Module):
    """Chain-pooling pre-activation residual block (docs/gonn.md section 7): BN -> act -> conv3x3 C->``pooled``
    -> max over each chain of stones (:func:`~kifunet.models.chain_pool.pool_chains`) -> BN -> act -> conv3x3
    ``pooled``->C, added to the trunk. Called with the chain labels of the position (computed once per forward
    pass). ``18 C P + 3 C + 3 P`` parameters with PReLU (P = ``pooled``): an ordinary block's ``18 C^2 + 6 C`` at
    P = C. Equivariant under the 8 symmetries, like a convolution with symmetric inputs (tested)."""

    def __init__(self, features: int, *, pooled: int, act: dict, conv: dict, bn: dict, rngs):
        self.bn1 = batch_norm(features, rngs=rngs, **bn)
        self.act1 = _Act(features, **act)
        self.conv1 = Conv(features, pooled, 3, rngs=rngs, **conv)
        self.bn2 = batch_norm(pooled, rngs=rngs, **bn)
        self.act2 = _Act(pooled, **act)
        self.conv2 = Conv(pooled, features, 3, rngs=rngs, **conv)

    def __call__(self, x, labels):
        h = pool_chains(self.conv1(self.act1(self.bn1(x))), labels)
        return x + self.conv2(self.act2(self.bn2(h)))


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
            p = self.pool_bias(p, self.g_act(self.g_bn(self.g1(h))))
        return self.p2(crelu(self.p_bn(p)))[..., 0]


class GoNNResNet(PolicyNet):
    """GoNN pre-activation ResNet; every GoNN feature has a switch (see the module docstring).

    Switches: ``dilated_channels=0`` (no dilation), ``global_blocks=()`` (no global trunk blocks),
    ``head_global_pool=False``, ``activation="relu"``, ``center_emphasis=False``; ``pool_stdev`` and
    ``pool_board_scaling`` add the standard deviation and KataGo's board-size-scaled mean to every pooling;
    ``value_head=True`` adds the value head (``value_channels``, ``value_hidden``). ``wide_blocks`` lists the
    blocks that are wide low-rank blocks (:class:`GoNNWideBlock`, ``wide_channels`` in the middle, 0 = C, lines of
    ``wide_length``) instead of ordinary or dilated ones; ``chain_blocks`` likewise lists chain-pooling blocks
    (:class:`GoNNChainBlock`, ``chain_channels`` pooled, 0 = C), whose chains come from the input planes
    ``chain_stone_planes`` (the two stone planes, either colour order).
    """

    resizable = True

    def __init__(self, *, board_size: int = 19, in_planes: int = 26, channels: int = 192, blocks: int = 12,
                 dilated_channels: int = 64, dilation_rates: Sequence[int] = (2,),
                 global_blocks: Sequence[int] = (), global_channels: int = 64, head_features: int = 48,
                 head_pooled: int = 32, head_global_pool: bool = True, activation: str = "prelu",
                 prelu_init: float = 0.0, center_emphasis: bool = True, pool_stdev: bool = False,
                 pool_board_scaling: bool = False, value_head: bool = False, value_channels: int = 32,
                 value_hidden: int = 64, rank_embedding: bool = False, profile_embedding: int = 0,
                 wide_blocks: Sequence[int] = (),
                 wide_channels: int = 0, wide_length: int = 9, chain_blocks: Sequence[int] = (),
                 chain_channels: int = 0, chain_stone_planes: Sequence[int] = (1, 2), dtype=jnp.float32, param_dtype=jnp.float32,
                 rngs: nnx.Rngs):
        global_blocks = tuple(int(i) for i in global_blocks)
        if any(not 0 < i < blocks for i in global_blocks):
            raise ValueError(f"global_blocks {global_blocks} must be block indices in [1, {blocks})")
        wide_blocks = tuple(int(i) for i in wide_blocks)
        if any(not 0 <= i < blocks for i in wide_blocks) or set(wide_blocks) & set(global_blocks):
            raise ValueError(f"wide_blocks {wide_blocks} must be block indices in [0, {blocks}) that are not "
                             f"global blocks {global_blocks}")
        chain_blocks = tuple(int(i) for i in chain_blocks)
        if any(not 0 <= i < blocks for i in chain_blocks) or set(chain_blocks) & (set(global_blocks) | set(wide_blocks)):
            raise ValueError(f"chain_blocks {chain_blocks} must be block indices in [0, {blocks}) that are neither "
                             f"global blocks {global_blocks} nor wide blocks {wide_blocks}")
        self.chain_stone_planes = tuple(int(i) for i in chain_stone_planes)
        if chain_blocks and (len(self.chain_stone_planes) != 2
                             or any(not 0 <= i < in_planes for i in self.chain_stone_planes)):
            raise ValueError(f"chain_stone_planes {tuple(chain_stone_planes)} must be two input planes in "
                             f"[0, {in_planes}) (the stone planes)")
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=channels,
                    rngs=rngs, has_value=value_head)
        act = dict(activation=activation, prelu_init=prelu_init, param_dtype=param_dtype)
        bn = dict(dtype=dtype, param_dtype=param_dtype)
        pool = dict(stdev=pool_stdev, board_scaling=pool_board_scaling)
        emphasis = dict(center_emphasis=0.3, center_lr=1.5) if center_emphasis else {}
        conv = dict(dtype=dtype, param_dtype=param_dtype, **emphasis)
        self.stem = Conv(in_planes, channels, 5, center_param=center_emphasis, center_emphasis=0.3 if center_emphasis else 0.0,
                         dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        blocks_list, n_dilated = [], 0
        for i in range(blocks):
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
        h = self.final_act(self.final_bn(h))
        return board_logits_without_pass(self.head(h)), None if self.value is None else self.value(h)
