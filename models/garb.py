"""NoGoZero+ residual net with global attention residual blocks (Gao & Wu 2021, 3.2.1; structure:
docs/architectures.md). ``value_head=True`` (ours) adds a
:class:`~kifunet.models.layers.PooledValueHead`; ``ownership_head``, ``score_head``:
:mod:`kifunet.models.aux_heads`. ``plain=True`` makes every block a plain pre-activation residual block (no GARB):
the same net without its global attention, the ablation the paper measures GARB by. Any board size."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from kifunet.models.base import PolicyNet
from kifunet.models.layers import GPS, Conv, PooledValueHead, batch_norm


class PreActBlock(nnx.Module):
    """``x + conv(relu(BN(conv(relu(BN(x))))))`` with 3x3 convs."""

    def __init__(self, features: int, *, dtype, param_dtype, rngs: nnx.Rngs):
        kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.bn1 = batch_norm(features, **kw)
        self.conv1 = Conv(features, features, 3, **kw)
        self.bn2 = batch_norm(features, **kw)
        self.conv2 = Conv(features, features, 3, **kw)

    def __call__(self, x):
        h = self.conv1(jax.nn.relu(self.bn1(x)))
        return x + self.conv2(jax.nn.relu(self.bn2(h)))


class GARBBlock(nnx.Module):
    """Global attention residual block: pre-activation, X/G split convs, GPS, conv back, skip."""

    def __init__(self, features: int, c3: int, *, dtype, param_dtype, rngs: nnx.Rngs):
        kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.bn1 = batch_norm(features, **kw)
        self.conv_x = Conv(features, 2 * c3, 3, **kw)
        self.conv_g = Conv(features, c3, 3, **kw)
        self.gps = GPS(2 * c3, c3, **kw)
        self.bn2 = batch_norm(2 * c3, **kw)
        self.conv2 = Conv(2 * c3, features, 3, **kw)

    def __call__(self, x):
        h = jax.nn.relu(self.bn1(x))
        h = self.gps(self.conv_x(h), self.conv_g(h))
        return x + self.conv2(jax.nn.relu(self.bn2(h)))


class GARBNet(PolicyNet):
    """Alternating standard / GARB residual tower (every block standard with ``plain``) with an AlphaGo Zero
    policy head."""

    has_pass = True

    def __init__(self, *, board_size: int = 19, in_planes: int = 21, channels: int = 64, blocks: int = 10,
                 garb_channels: int | None = None, value_head: bool = False, value_channels: int = 32,
                 value_hidden: int = 64, rank_embedding: bool = False, profile_embedding: int = 0,
                 ownership_head: bool = False, score_head: bool = False, plain: bool = False, dtype=jnp.float32,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=channels,
                    rngs=rngs, value_head=value_head)
        kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        c3 = garb_channels or channels // 2
        self.stem = Conv(in_planes, channels, 3, **kw)
        self.blocks = nnx.List([GARBBlock(channels, c3, **kw) if i % 2 and not plain else PreActBlock(channels, **kw)
                                for i in range(blocks)])
        self.final_bn = batch_norm(channels, **kw)
        self.policy_conv = Conv(channels, 2, 1, use_bias=True, **kw)
        self.policy_bn = batch_norm(2, **kw)
        self.policy_dense = nnx.Linear(2 * board_size * board_size, board_size * board_size + 1, **kw)
        self.value = (PooledValueHead(channels, channels=value_channels, hidden=value_hidden, **kw)
                      if value_head else None)
        self._setup_aux(channels, ownership_head=ownership_head, score_head=score_head, **kw)

    def heads(self, x, cond, to_move):
        h = self.add_condition(self.stem(x), cond)
        for block in self.blocks:
            h = block(h)
        h = jax.nn.relu(self.final_bn(h))
        p = jax.nn.relu(self.policy_bn(self.policy_conv(h)))
        logits = self.policy_dense(p.reshape(p.shape[0], -1))
        return logits, None if self.value is None else self.value(h), self.aux(h)
