"""The one way to run a net: its output (:class:`Outputs`), its facts (:class:`NetFacts`) and the pure
:func:`forward` that every wrapper (training, eval, play, the exported and ONNX policies) runs or mirrors.

A model here is any ``nnx.Module`` with ``facts`` and a call ``(planes, rank=, to_move=, profile=) -> Outputs``.
Importing this module loads neither JAX nor flax (they load at first use)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import jax


class Outputs(NamedTuple):
    """A net's outputs for B positions: ``logits`` float32 ``[B, N*N + 1]`` (index ``N*N`` = pass), ``value``
    float32 ``[B]`` in [-1, 1] or None; a pytree that ``jax.jit`` returns."""

    logits: jax.Array
    value: jax.Array | None = None
    ownership: jax.Array | None = None
    score: jax.Array | None = None


@dataclasses.dataclass(frozen=True)
class NetFacts:
    """What a net is, declared by its family and fixed at construction. ``has_pass``: a pass output (else
    :data:`kifunet.models.base.NO_PASS_LOGIT`); ``reads_rank`` / ``reads_profile``: an embedding reads that
    argument; ``resizable``: the same weights play any board size."""

    board_size: int
    in_planes: int
    has_value: bool
    has_pass: bool
    reads_rank: bool
    reads_profile: bool
    resizable: bool
    has_ownership: bool = False
    has_score: bool = False

    def accepts(self, n: int) -> bool:
        """Whether the net plays an n x n board: its own, or any from 2 up when it is resizable."""
        return int(n) == self.board_size or (self.resizable and int(n) >= 2)


def forward(graphdef, state, planes, rank=None, to_move=None, profile=None) -> Outputs:
    """:class:`Outputs` of the model ``nnx.merge(graphdef, state)`` (arguments: :mod:`kifunet.models`)."""
    from flax import nnx

    return nnx.merge(graphdef, state)(planes, rank=rank, to_move=to_move, profile=profile)


class Forward:
    """``model`` in eval mode, split once, as a jitted :func:`forward` over its weights (on ``state_sharding``,
    default: the default device); ``facts``, ``graphdef`` and ``state`` are public. ``profile`` reaches the net
    only when ``facts.reads_profile``."""

    def __init__(self, model, *, state_sharding=None):
        import jax
        from flax import nnx

        model.eval()
        self.facts: NetFacts = model.facts
        self.graphdef, state = nnx.split(model)
        # the weights on the device once (a checkpoint gives host NumPy arrays; a jit call would copy them each time)
        self.state = jax.device_put(state, state_sharding)
        self._jitted = jax.jit(lambda state, *args: forward(self.graphdef, state, *args))

    def __call__(self, planes, rank=None, to_move=None, profile=None) -> Outputs:
        return self._jitted(self.state, planes, rank, to_move, profile if self.facts.reads_profile else None)
