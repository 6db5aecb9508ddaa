"""Maximum-average-out (MAO) network (Li et al. 2020), fully convolutional, 19 conv layers, read from the
paper's prose (docs/architectures.md). No value head."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from kifunet.models.base import PolicyNet
from kifunet.models.layers import Conv, MAOLayer


class MLPConv(nnx.Module):
    """``kernel_size`` conv + ``ones`` 1x1 convs, all ``features`` wide, with bias and ReLU."""

    def __init__(self, in_features: int, features: int, *, ones: int, kernel_size: int = 3, dtype, param_dtype,
                 rngs: nnx.Rngs):
        conv = dict(use_bias=True, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        layers = [Conv(in_features, features, kernel_size, **conv)]
        layers += [Conv(features, features, 1, **conv) for _ in range(ones)]
        self.layers = nnx.List(layers)

    def __call__(self, x):
        for conv in self.layers:
            x = jax.nn.relu(conv(x))
        return x


class MAOBlock(nnx.Module):
    """MAO layer (``width`` units x ``candidates``) followed by two mlpconv layers (3x3 + 1x1)."""

    def __init__(self, in_features: int, width: int, candidates: int, *, mask_rate: float, dtype, param_dtype,
                 rngs: nnx.Rngs):
        self.mao = MAOLayer(in_features, width, candidates, mask_rate=mask_rate, dtype=dtype,
                            param_dtype=param_dtype, rngs=rngs)
        self.mlp = nnx.List([MLPConv(width, width, ones=1, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
                             for _ in range(2)])

    def __call__(self, x):
        x = self.mao(x)
        for m in self.mlp:
            x = m(x)
        return x


class MAONet(PolicyNet):
    """The MAO policy network."""

    has_pass = True

    def __init__(self, *, board_size: int = 19, in_planes: int = 17, stem_width: int = 80, width: int = 40,
                 candidates: int = 4, blocks: int = 3, out_candidates: int = 1, mask_rate: float = 0.5,
                 rank_embedding: bool = False, profile_embedding: int = 0, dtype=jnp.float32, param_dtype=jnp.float32,
                 rngs: nnx.Rngs):
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=stem_width,
                    rngs=rngs)
        kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        self.stem = MLPConv(in_planes, stem_width, ones=2, **kw)
        self.blocks = nnx.List([MAOBlock(stem_width if i == 0 else width, width, candidates, mask_rate=mask_rate, **kw)
                                for i in range(blocks)])
        self.out = MAOLayer(width, board_size * board_size + 1, out_candidates, mask_rate=mask_rate, **kw)

    def logits(self, x, cond, to_move):
        h = self.stem(x)
        h = self.add_condition(h, cond)
        for block in self.blocks:
            h = block(h)
        return jnp.mean(self.out(h).astype(jnp.float32), axis=(1, 2))
