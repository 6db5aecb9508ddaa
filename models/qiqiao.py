"""Qiqiao (CleverGo) policy-value net for 9x9, the reference code's ``PolicyValueNet`` layer for layer
(layers and the hand count of its 333,951 parameters: docs/architectures.md). Always returns a value."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from kifunet.models.base import PolicyNet
from kifunet.models.layers import Conv


class QiqiaoNet(PolicyNet):
    """Three 3x3 conv layers, then a policy head and a value head."""

    has_pass = True

    def __init__(self, *, board_size: int = 9, in_planes: int = 10, channels: Sequence[int] = (32, 64, 128),
                 policy_channels: int = 8, policy_hidden: int = 256, value_channels: int = 4,
                 value_hidden: Sequence[int] = (128, 64), rank_embedding: bool = False, profile_embedding: int = 0,
                 dtype=jnp.float32,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        channels = tuple(int(c) for c in channels)
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=channels[0],
                    rngs=rngs)
        kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        points = board_size * board_size
        widths = (in_planes,) + channels
        self.body = nnx.List([Conv(a, b, 3, use_bias=True, **kw) for a, b in zip(widths, widths[1:])])
        self.policy_conv = Conv(channels[-1], policy_channels, 1, use_bias=True, **kw)
        self.policy_hidden = nnx.Linear(policy_channels * points, policy_hidden, **kw)
        self.policy_out = nnx.Linear(policy_hidden, points + 1, **kw)
        self.value_conv = Conv(channels[-1], value_channels, 1, use_bias=True, **kw)
        dims = (value_channels * points,) + tuple(int(v) for v in value_hidden)
        self.value_hidden = nnx.List([nnx.Linear(a, b, **kw) for a, b in zip(dims, dims[1:])])
        self.value_out = nnx.Linear(dims[-1], 1, **kw)

    def heads(self, x, cond, to_move):
        h = x
        for i, conv in enumerate(self.body):
            h = conv(h)
            h = jax.nn.relu(self.add_condition(h, cond) if i == 0 else h)
        p = jax.nn.relu(self.policy_conv(h))
        p = jax.nn.relu(self.policy_hidden(p.reshape(p.shape[0], -1)))
        v = jax.nn.relu(self.value_conv(h)).reshape(h.shape[0], -1)
        for dense in self.value_hidden:
            v = jax.nn.relu(dense(v))
        return self.policy_out(p), jnp.tanh(self.value_out(v)[:, 0])
