"""The call contract shared by every policy network (see :mod:`kifunet.models`), and the tie rule for reading its
output (:func:`played_move_rank`: the one definition of top-k, used by training and by eval)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from kifunet.models.layers import RankEmbedding

#: logit given to pass by networks without a pass output (softmax probability exp(-1e9) = 0)
NO_PASS_LOGIT = -1e9
BLACK, WHITE = 1, 2


class PolicyNet(nnx.Module):
    """Base class: input checks, compute-dtype cast, float32 ``[B, N*N + 1]`` output.

    Subclasses call :meth:`_setup` in their constructor and implement :meth:`logits`
    ``(x [B, N, N, C] in the compute dtype, rank, to_move) -> [B, N*N + 1]``.
    """

    board_size: int
    in_planes: int

    def _setup(self, *, board_size: int, in_planes: int, dtype, param_dtype, rank_embedding: bool,
               trunk_features: int, rngs: nnx.Rngs) -> None:
        if board_size < 2:
            raise ValueError(f"board_size must be >= 2, got {board_size}")
        self.board_size = board_size
        self.in_planes = in_planes
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.rank_embedding = (RankEmbedding(trunk_features, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
                               if rank_embedding else None)

    def __call__(self, planes: jax.Array, rank: jax.Array | None = None,
                 to_move: jax.Array | None = None) -> jax.Array:
        expected = (self.board_size, self.board_size, self.in_planes)
        if planes.ndim != 4 or tuple(planes.shape[1:]) != expected:
            raise ValueError(f"planes must be [B, {expected[0]}, {expected[1]}, {expected[2]}], got {planes.shape}")
        return self.logits(jnp.asarray(planes).astype(self.dtype), rank, to_move).astype(jnp.float32)

    def logits(self, x: jax.Array, rank: jax.Array | None, to_move: jax.Array | None) -> jax.Array:
        raise NotImplementedError

    def add_rank(self, h: jax.Array, rank: jax.Array | None) -> jax.Array:
        """Add the rank embedding to the trunk features ``h`` when the model has one."""
        if self.rank_embedding is None:
            return h
        return h + self.rank_embedding(rank, h.shape[0]).astype(h.dtype)


def board_logits_without_pass(board: jax.Array) -> jax.Array:
    """``[B, N, N]`` point logits -> float32 ``[B, N*N + 1]`` with pass fixed at :data:`NO_PASS_LOGIT`."""
    flat = board.reshape(board.shape[0], -1).astype(jnp.float32)
    return jnp.concatenate([flat, jnp.full((flat.shape[0], 1), NO_PASS_LOGIT, jnp.float32)], axis=-1)


def played_move_rank(logits, target):
    """``[B]``: the number of *other* moves whose logit is >= the played move's.

    The tie rule of every top-k figure (training and eval): the played move is in the top ``k`` when this is
    ``< k``, so ties count against the prediction (see :mod:`kifunet.eval.metrics`).

    ``logits [B, M]`` and ``target [B]`` are NumPy or JAX arrays (traced ones included: the array's own
    namespace computes it, so it runs inside ``jax.jit``); no checks, see :func:`target_ranks` for those.
    """
    xp = logits.__array_namespace__() if hasattr(logits, "__array_namespace__") else np
    played = xp.take_along_axis(logits, target[:, None], axis=-1)
    return xp.sum(logits >= played, axis=-1) - 1
