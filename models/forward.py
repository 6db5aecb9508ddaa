"""The one way to run a net: its output (:class:`Outputs`), its facts (:class:`NetFacts`) and the pure forward
function (:func:`forward`) that every wrapper -- training's ``ModelDef``, eval's ``Predictor``, play's ``Policy``
and the exported and ONNX policies -- runs or mirrors.

==================  =============================================================================================
name                contract
==================  =============================================================================================
:class:`Outputs`    what a model's call returns (every family): ``logits`` float32 ``[B, N*N + 1]`` (index
                    ``N*N`` = pass), ``value`` float32 ``[B]`` in [-1, 1] or None (a net without a value head).
                    ``ownership`` float32 ``[B, N, N]`` and ``score`` float32 ``[B]``, or None
                    (:mod:`kifunet.models.aux_heads`). A NamedTuple, so a pytree that ``jax.jit`` returns;
                    read its fields by name
:class:`NetFacts`   what a net is, known without running it: board size, input planes, ``has_value``,
                    ``has_pass``, ``reads_rank``, ``reads_profile`` and ``resizable`` (plays other board sizes
                    with the same weights); ``model.facts`` (:class:`kifunet.models.base.PolicyNet`) gives them
                    from the family's declarations and the constructor's arguments
:func:`forward`     ``(graphdef, state, planes, rank, to_move, profile) -> Outputs``: the model merged from its
                    split and called; pure, so it is what ``jax.jit`` and ``jax.export`` take
:class:`Forward`    a model split once, its weights on the devices (``state_sharding``) and :func:`forward`
                    jitted: ``Forward(model)(planes, rank, to_move, profile) -> Outputs``
==================  =============================================================================================

A model here is any ``nnx.Module`` with ``facts`` and a call ``(planes, rank=, to_move=, profile=) -> Outputs``:
every :class:`kifunet.models.base.PolicyNet`, and the small stand-ins tests build. Importing this module loads
neither JAX nor flax (they load at first use), so a policy over an exported program keeps flax unloaded.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import jax


class Outputs(NamedTuple):
    """A net's outputs for a batch of B positions (module table)."""

    logits: jax.Array
    value: jax.Array | None = None
    ownership: jax.Array | None = None
    score: jax.Array | None = None


@dataclasses.dataclass(frozen=True)
class NetFacts:
    """What a net is, declared by its family and fixed at construction (module table).

    ``has_pass``: the net has a pass output (else pass is :data:`kifunet.models.base.NO_PASS_LOGIT`);
    ``reads_rank``: a rank embedding reads the ``rank`` argument; ``reads_profile``: a profile embedding reads
    ``profile``; ``resizable``: the same weights play any board size (no per-point weights or dense layers over
    the board).
    """

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
    """``model`` in eval mode, split once, as a jitted :func:`forward` over its weights.

    ``state_sharding``: where the weights live (default: the default device); ``facts``, ``graphdef`` and
    ``state`` are public for wrappers that resize or export the net. ``profile`` is given to the net only when it
    reads one (``facts.reads_profile``), so a net without a profile input compiles one program whatever the
    caller passes.
    """

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
