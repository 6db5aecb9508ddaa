"""Plain convolutional policy nets: Clark & Storkey, Maddison, AlphaGo SL, Darkforest (structures and parameter
counts: docs/architectures.md). Pass gets :data:`~kifunet.models.base.NO_PASS_LOGIT`."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from kifunet.data_prep.errors import InvalidValue
from kifunet.models.base import WHITE, PolicyNet, board_logits_without_pass
from kifunet.models.layers import Conv, PositionBias, he_normal

CLARK_STORKEY_LAYERS = ((7, 64), (5, 64), (5, 64), (5, 48), (5, 48), (5, 32), (5, 32))


class ConvNet(PolicyNet):
    """Generic plain CNN: ``hidden`` is a list of ``(kernel_size, filters)`` conv+ReLU layers. ``select``:
    ``"first"`` takes output plane 0; ``"to_move"`` plane 0 for black, 1 for white (``None`` means black)."""

    def __init__(self, *, board_size: int, in_planes: int, hidden: Sequence[tuple[int, int]], out_kernel: int,
                 out_planes: int = 1, conv_bias: bool = False, hidden_position_bias: bool = False,
                 out_position_bias: bool = False, symmetric: bool = False, kernel_init=he_normal,
                 select: str = "first", rank_embedding: bool = False, profile_embedding: int = 0, dtype=jnp.float32,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        if select not in ("first", "to_move"):
            raise InvalidValue(f"select must be 'first' or 'to_move', got {select!r}")
        if select == "to_move" and out_planes != 2:
            raise InvalidValue("select='to_move' needs out_planes=2")
        hidden = tuple((int(k), int(f)) for k, f in hidden)
        self._setup(board_size=board_size, in_planes=in_planes, dtype=dtype, param_dtype=param_dtype,
                    rank_embedding=rank_embedding, profile_embedding=profile_embedding, trunk_features=hidden[0][1],
                    rngs=rngs)
        self.select = select
        self.resizable = not (hidden_position_bias or out_position_bias)  # per-point biases fix the board
        conv = dict(symmetric=symmetric, kernel_init=kernel_init, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        convs, biases = [], []
        c_in = in_planes
        for k, f in hidden:
            convs.append(Conv(c_in, f, k, use_bias=conv_bias and not hidden_position_bias, **conv))
            biases.append(PositionBias(board_size, f, param_dtype=param_dtype) if hidden_position_bias else None)
            c_in = f
        self.convs = nnx.List(convs)
        self.position_biases = nnx.List(biases)
        self.out_conv = Conv(c_in, out_planes, out_kernel, **conv)
        self.out_bias = PositionBias(board_size, out_planes, param_dtype=param_dtype) if out_position_bias else None

    def logits(self, x, cond, to_move):
        h = x
        for i, (conv, pb) in enumerate(zip(self.convs, self.position_biases)):
            h = conv(h)
            if pb is not None:
                h = pb(h)
            if i == 0:
                h = self.add_condition(h, cond)
            h = jax.nn.relu(h)
        y = self.out_conv(h)
        if self.out_bias is not None:
            y = self.out_bias(y)
        if self.select == "first" or to_move is None:
            board = y[..., 0]
        else:
            white = (jnp.asarray(to_move) == WHITE)[:, None, None]
            board = jnp.where(white, y[..., 1], y[..., 0])
        return board_logits_without_pass(board)


class ClarkStorkey(ConvNet):
    """Clark & Storkey (2015) 8-layer CNN with symmetric (tied) kernels."""

    def __init__(self, *, board_size: int = 19, in_planes: int = 48,
                 layers: Sequence[tuple[int, int]] = CLARK_STORKEY_LAYERS, out_kernel: int = 5,
                 symmetric: bool = True, rank_embedding: bool = False, profile_embedding: int = 0, dtype=jnp.float32,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        super().__init__(board_size=board_size, in_planes=in_planes, hidden=layers, out_kernel=out_kernel,
                         conv_bias=True, out_position_bias=True, symmetric=symmetric,
                         rank_embedding=rank_embedding, profile_embedding=profile_embedding, dtype=dtype,
                         param_dtype=param_dtype, rngs=rngs)


class Maddison(ConvNet):
    """Maddison et al. (2015): ``layers`` hidden convs (5x5 then 3x3) with position-dependent biases and
    two output planes (black / white to move). ``symmetric=True`` ties the kernels as in his 3/6-layer test.
    ``init``: the conv kernels' initialiser, a :data:`MADDISON_INITS` name (``"uniform"``: the paper's)."""

    def __init__(self, *, board_size: int = 19, in_planes: int = 36, layers: int = 12, filters: int = 128,
                 out_kernel: int = 3, symmetric: bool = False, init: str = "uniform", rank_embedding: bool = False,
                 profile_embedding: int = 0, dtype=jnp.float32, param_dtype=jnp.float32, rngs: nnx.Rngs):
        if init not in MADDISON_INITS:
            raise InvalidValue(f"init must be one of {tuple(MADDISON_INITS)}, got {init!r}")
        hidden = [(5, filters)] + [(3, filters)] * (layers - 1)
        super().__init__(board_size=board_size, in_planes=in_planes, hidden=hidden, out_kernel=out_kernel,
                         out_planes=2, hidden_position_bias=True, out_position_bias=True, symmetric=symmetric,
                         kernel_init=MADDISON_INITS[init],
                         select="to_move", rank_embedding=rank_embedding, profile_embedding=profile_embedding,
                         dtype=dtype,
                         param_dtype=param_dtype, rngs=rngs)


class AlphaGoSL(ConvNet):
    """AlphaGo SL policy (Silver et al. 2016): ``layers`` = 1 (5x5) + layers-2 (3x3) + 1 (1x1 output)."""

    def __init__(self, *, board_size: int = 19, in_planes: int = 48, filters: int = 192, layers: int = 13,
                 rank_embedding: bool = False, profile_embedding: int = 0, dtype=jnp.float32, param_dtype=jnp.float32,
                 rngs: nnx.Rngs):
        hidden = [(5, filters)] + [(3, filters)] * (layers - 2)
        super().__init__(board_size=board_size, in_planes=in_planes, hidden=hidden, out_kernel=1,
                         out_position_bias=True, rank_embedding=rank_embedding, profile_embedding=profile_embedding,
                         dtype=dtype,
                         param_dtype=param_dtype, rngs=rngs)


class Darkforest(ConvNet):
    """Darkforest (Tian & Zhu 2016) 12-layer CNN, three next-move heads; the logits are the first head."""

    def __init__(self, *, board_size: int = 19, in_planes: int = 25, first: int = 92, filters: int = 384,
                 layers: int = 12, heads: int = 3, rank_embedding: bool = False, profile_embedding: int = 0,
                 dtype=jnp.float32,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        hidden = [(5, first)] + [(3, filters)] * (layers - 2)
        super().__init__(board_size=board_size, in_planes=in_planes, hidden=hidden, out_kernel=3,
                         out_planes=heads, rank_embedding=rank_embedding, profile_embedding=profile_embedding,
                         dtype=dtype,
                         param_dtype=param_dtype, rngs=rngs)


def _uniform(limit: float):
    """Initialiser drawing uniformly from ``[-limit, limit]``."""

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -limit, limit)

    return init


#: :class:`Maddison`'s ``init`` choices: the paper's uniform [-0.05, 0.05], He normal and LeCun normal (fan-in)
MADDISON_INITS = {"uniform": _uniform(0.05), "he": he_normal, "lecun": nnx.initializers.lecun_normal()}
