"""Post-activation residual policy nets: Cazenave (2017), AlphaGo Zero (2017) and the ResNet-18 MAO (2020)
was measured against (structures and counts: docs/architectures.md, docs/models.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from kifunet.models.base import PolicyNet, board_logits_without_pass
from kifunet.models.layers import Conv, batch_norm


class PostActBlock(nnx.Module):
    """``relu(x + BN(conv(relu(BN(conv(x))))))`` with 3x3 convs of ``features`` channels."""

    def __init__(self, features: int, *, conv_bias: bool, bn_affine: bool, dtype, param_dtype, rngs: nnx.Rngs):
        conv = dict(use_bias=conv_bias, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        bn = dict(affine=bn_affine, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.conv1 = Conv(features, features, 3, **conv)
        self.bn1 = batch_norm(features, **bn)
        self.conv2 = Conv(features, features, 3, **conv)
        self.bn2 = batch_norm(features, **bn)

    def __call__(self, x):
        h = jax.nn.relu(self.bn1(self.conv1(x)))
        return jax.nn.relu(x + self.bn2(self.conv2(h)))


class CazenaveResNet(PolicyNet):
    """Cazenave's residual policy net; BatchNorm without scale and offset unless ``bn_affine=True``."""

    resizable = True

    def __init__(self, *, board_size: int = 19, in_planes: int = 45, filters: int = 256, blocks: int = 10,
                 bn_affine: bool = False, rank_embedding: bool = False, profile_embedding: int = 0, dtype=jnp.float32,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=filters,
                    rngs=rngs)
        conv = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.stem5 = Conv(in_planes, filters, 5, **conv)
        self.stem1 = Conv(in_planes, filters, 1, **conv)
        self.stem_bn = batch_norm(filters, affine=bn_affine, **conv)
        self.blocks = nnx.List([PostActBlock(filters, conv_bias=False, bn_affine=bn_affine, **conv)
                                for _ in range(blocks)])
        self.out_conv = Conv(filters, 1, 3, **conv)

    def logits(self, x, cond, to_move):
        h = self.add_condition(self.stem5(x) + self.stem1(x), cond)
        h = jax.nn.relu(self.stem_bn(h))
        for block in self.blocks:
            h = block(h)
        return board_logits_without_pass(self.out_conv(h)[..., 0])


class AGZResNet(PolicyNet):
    """AlphaGo Zero residual net; policy logits over N*N points + pass; a value head with ``value_head=True``."""

    has_pass = True

    def __init__(self, *, board_size: int = 19, in_planes: int = 17, filters: int = 256, blocks: int = 19,
                 value_head: bool = False, value_hidden: int = 256, rank_embedding: bool = False,
                 profile_embedding: int = 0, ownership_head: bool = False, score_head: bool = False,
                 dtype=jnp.float32, param_dtype=jnp.float32, rngs: nnx.Rngs):
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=filters,
                    rngs=rngs, value_head=value_head)
        conv = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        points = board_size * board_size
        self.stem = Conv(in_planes, filters, 3, use_bias=True, **conv)
        self.stem_bn = batch_norm(filters, **conv)
        self.blocks = nnx.List([PostActBlock(filters, conv_bias=True, bn_affine=True, **conv)
                                for _ in range(blocks)])
        self.policy_conv = Conv(filters, 2, 1, use_bias=True, **conv)
        self.policy_bn = batch_norm(2, **conv)
        self.policy_dense = nnx.Linear(2 * points, points + 1, **conv)
        if value_head:
            self.value_conv = Conv(filters, 1, 1, use_bias=True, **conv)
            self.value_bn = batch_norm(1, **conv)
            self.value_hidden = nnx.Linear(points, value_hidden, **conv)
            self.value_out = nnx.Linear(value_hidden, 1, **conv)
        else:
            self.value_conv = self.value_bn = self.value_hidden = self.value_out = None
        self._setup_aux(filters, ownership_head=ownership_head, score_head=score_head, **conv)

    def heads(self, x, cond, to_move):
        h = jax.nn.relu(self.add_condition(self.stem_bn(self.stem(x)), cond))
        for block in self.blocks:
            h = block(h)
        p = jax.nn.relu(self.policy_bn(self.policy_conv(h)))
        logits = self.policy_dense(p.reshape(p.shape[0], -1))
        if self.value_conv is None:
            return logits, None, self.aux(h)
        v = jax.nn.relu(self.value_bn(self.value_conv(h)))
        v = jax.nn.relu(self.value_hidden(v.reshape(v.shape[0], -1)))
        return logits, jnp.tanh(self.value_out(v)[:, 0]), self.aux(h)
