"""The call contract every policy net shares (:class:`PolicyNet`; arguments: docs/models.md), the value head's
part of it, and the two shared scoring rules: :func:`played_move_rank` (top-k with ties, for training and eval)
and :func:`value_outcome_stats` (value error and winner prediction).

Value contract: ``model.has_value`` is fixed at construction; when True the output's ``value`` is float32 ``[B]``
in [-1, 1], the expected result for the side to move (+1 a win, -1 a loss, 0 a draw); otherwise it is None.
Which families have one: :mod:`kifunet.models.catalog`."""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from kifunet.data_prep.errors import InvalidValue
from kifunet.models import catalog
from kifunet.models.forward import NetFacts, Outputs
from kifunet.models.layers import ProfileEmbedding, RankEmbedding, add_param

#: logit given to pass by networks without a pass output (softmax probability exp(-1e9) = 0)
NO_PASS_LOGIT = -1e9
BLACK, WHITE = 1, 2


class PolicyNet(nnx.Module):
    """Base class: input checks, compute-dtype cast, float32 outputs.

    Subclasses call :meth:`_setup` in their constructor and implement :meth:`logits`
    ``(x [B, N, N, C] in the compute dtype, rank, to_move) -> [B, N*N + 1]`` or :meth:`heads`
    ``-> (logits, value [B] or None)``, and declare ``has_pass`` and ``resizable`` (reported by :attr:`facts`)."""

    board_size: int
    in_planes: int
    has_value: bool = False
    has_pass: ClassVar[bool] = False
    resizable: bool = False
    has_ownership: bool = False
    has_score: bool = False
    ownership_head = None
    score_head = None

    def _setup(self, *, board_size: int, in_planes: int, dtype, param_dtype, rank_embedding: bool,
               trunk_features: int, rngs: nnx.Rngs, value_head: bool = False, profile_embedding: int = 0) -> None:
        if board_size < 2:
            raise InvalidValue(f"board_size must be >= 2, got {board_size}")
        self.board_size = board_size
        self.in_planes = in_planes
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.has_value = catalog.family_has_value(type(self).__name__, value_head)  # the family's rule
        self.rank_embedding = (RankEmbedding(trunk_features, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
                               if rank_embedding else None)
        if int(profile_embedding) < 0:
            raise InvalidValue(f"profile_embedding must be a hidden width >= 0 (0: none), got {profile_embedding}")
        self.profile_embedding = (ProfileEmbedding(trunk_features, int(profile_embedding), dtype=dtype,
                                                   param_dtype=param_dtype, rngs=rngs)
                                  if profile_embedding else None)

    def __call__(self, planes: jax.Array, rank: jax.Array | None = None, to_move: jax.Array | None = None,
                 profile: jax.Array | None = None) -> Outputs:
        expected = (self.board_size, self.board_size, self.in_planes)
        if planes.ndim != 4 or tuple(planes.shape[1:]) != expected:
            raise ValueError(f"planes must be [B, {expected[0]}, {expected[1]}, {expected[2]}], got {planes.shape}")
        cond = Condition(rank, profile)
        out = self.heads(jnp.asarray(planes).astype(self.dtype), cond, to_move)
        logits, value = out[0], out[1]
        ownership, score = out[2] if len(out) > 2 else (None, None)
        if (value is not None) != self.has_value:
            raise RuntimeError(f"{type(self).__name__}: has_value is {self.has_value} but heads() gave "
                               f"{'a' if value is not None else 'no'} value")
        return Outputs(logits.astype(jnp.float32), _f32(value), _f32(ownership), _f32(score))

    def _setup_aux(self, features: int, *, ownership_head: bool, score_head: bool, dtype, param_dtype,
                   rngs: nnx.Rngs) -> None:
        """Build the ownership and score heads asked for (:mod:`kifunet.models.aux_heads`) over ``features``
        trunk channels; call it after every other layer, so a net without them draws the same weights."""
        from kifunet.models import aux_heads

        self.ownership_head, self.score_head = aux_heads.make(features, ownership_head=ownership_head,
                                                              score_head=score_head, dtype=dtype,
                                                              param_dtype=param_dtype, rngs=rngs)
        self.has_ownership, self.has_score = bool(ownership_head), bool(score_head)

    def aux(self, h: jax.Array) -> tuple[jax.Array | None, jax.Array | None]:
        """``(ownership [B, N, N] or None, score [B] or None)`` of the trunk's last features ``h``, which a
        family's :meth:`heads` returns third."""
        return (None if self.ownership_head is None else self.ownership_head(h),
                None if self.score_head is None else self.score_head(h))

    @property
    def facts(self) -> NetFacts:
        """What this net is (:class:`~kifunet.models.forward.NetFacts`), without running it."""
        return NetFacts(board_size=int(self.board_size), in_planes=int(self.in_planes), has_value=bool(self.has_value),
                        has_pass=bool(self.has_pass), reads_rank=self.rank_embedding is not None,
                        reads_profile=self.profile_embedding is not None, resizable=bool(self.resizable),
                        has_ownership=bool(self.has_ownership), has_score=bool(self.has_score))

    def heads(self, x: jax.Array, cond: "Condition",
              to_move: jax.Array | None) -> tuple[jax.Array, jax.Array | None]:
        """``(logits [B, N*N + 1], value [B] in [-1, 1] or None)``; policy-only families keep this default."""
        return self.logits(x, cond, to_move), None

    def logits(self, x: jax.Array, cond: "Condition", to_move: jax.Array | None) -> jax.Array:
        raise NotImplementedError

    def add_condition(self, h: jax.Array, cond: "Condition") -> jax.Array:
        """Add the rank embedding and the profile embedding to the trunk features ``h``, those the model has
        (families call this once, where their trunk starts); a net without either ignores ``cond``."""
        if self.rank_embedding is not None:
            h = add_param(h, self.rank_embedding(cond.rank, h.shape[0]))
        if self.profile_embedding is not None:
            h = add_param(h, self.profile_embedding(cond.profile, h.shape[0]))
        return h


def _f32(a):
    return None if a is None else a.astype(jnp.float32)


class Condition(NamedTuple):
    """What a net is told besides the planes, passed from :meth:`PolicyNet.__call__` to the family's trunk:
    ``rank`` int ``[B]`` (or None: unknown) and ``profile`` float32 ``[B, 46]`` (or None: all unknown)."""

    rank: jax.Array | None = None
    profile: jax.Array | None = None


def board_logits_without_pass(board: jax.Array) -> jax.Array:
    """``[B, N, N]`` point logits -> float32 ``[B, N*N + 1]`` with pass fixed at :data:`NO_PASS_LOGIT`."""
    flat = board.reshape(board.shape[0], -1).astype(jnp.float32)
    # full_like, not full((B, 1)): the ONNX exporter (jax2onnx) traces with a symbolic batch B, which jnp.full's
    # shape argument cannot take
    return jnp.concatenate([flat, jnp.full_like(flat[:, :1], NO_PASS_LOGIT)], axis=-1)


def value_outcome_stats(value, outcome):
    """Per row, a value output against the row's ``outcome`` (+1 the mover won, -1 lost, 0 draw,
    :data:`kifunet.data_prep.results.OUTCOME_UNKNOWN`): ``(known, squared_error, decided, correct)``.
    ``squared_error`` is ``(value - outcome)^2`` where known, else 0; ``decided``: known and not a draw;
    ``correct``: decided and ``value * outcome > 0``. NumPy or JAX arrays, traced ones included."""
    from kifunet.data_prep.results import OUTCOME_UNKNOWN

    xp = value.__array_namespace__() if hasattr(value, "__array_namespace__") else np
    known = outcome != OUTCOME_UNKNOWN
    z = xp.where(known, outcome, 0).astype(value.dtype)
    squared_error = xp.where(known, xp.square(value - z), xp.zeros_like(value))
    decided = known & (z != 0)
    return known, squared_error, decided, decided & (value * z > 0)


def constant_predictor_mse(known, decided, outcome_sum) -> float:
    """The value MSE of the best constant over rows with these counts, ``decided / known - (outcome_sum /
    known)^2``; NaN when no row is known."""
    known = float(known)
    if known <= 0:
        return float("nan")
    m = float(outcome_sum) / known
    return float(decided) / known - m * m


def played_move_rank(logits, target):
    """``[B]``: the number of *other* moves whose logit is >= the played move's (ties count against it);
    the move is in the top ``k`` when this is ``< k``. ``logits [B, M]``, ``target [B]``: NumPy or JAX arrays,
    unchecked (:func:`kifunet.eval.metrics.target_ranks` checks)."""
    xp = logits.__array_namespace__() if hasattr(logits, "__array_namespace__") else np
    played = xp.take_along_axis(logits, target[:, None], axis=-1)
    return xp.sum(logits >= played, axis=-1) - 1
