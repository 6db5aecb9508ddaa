"""Named model sizes: ``create(name, ...)`` builds one, ``names()`` lists them; ``*_tiny`` names are
small variants for tests. The table and each family's value-head rule: :mod:`kifunet.models.catalog`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import inspect

from flax import nnx

from kifunet.data_prep.errors import UnknownName
from kifunet.models import catalog
from kifunet.models.base import PolicyNet
from kifunet.models.cnn import AlphaGoSL, ClarkStorkey, Darkforest, Maddison
from kifunet.models.garb import GARBNet
from kifunet.models.gonn import GoNNResNet
from kifunet.models.mao import MAONet
from kifunet.models.qiqiao import QiqiaoNet
from kifunet.models.resnet import AGZResNet, CazenaveResNet


@dataclass(frozen=True)
class ModelSpec:
    family: type[PolicyNet]
    kwargs: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    board_size: int = 19  # the board it is built for unless create() is told another


_FAMILIES: dict[str, type[PolicyNet]] = {cls.__name__: cls for cls in (
    AlphaGoSL, ClarkStorkey, Darkforest, Maddison, CazenaveResNet, AGZResNet, GoNNResNet, MAONet, GARBNet, QiqiaoNet)}
_SPECS: dict[str, ModelSpec] = {name: ModelSpec(_FAMILIES[e.family], e.kwargs, e.note, e.board_size)
                                for name, e in catalog.MODELS.items()}


def names() -> list[str]:
    """All registered model names, sorted."""
    return sorted(_SPECS)


def spec(name: str) -> ModelSpec:
    try:
        return _SPECS[name]
    except KeyError:
        raise UnknownName(f"unknown model {name!r}; known: {', '.join(names())}") from None


def default_in_planes(name: str) -> int:
    """Input planes the named model expects unless told otherwise (its family's default)."""
    s = spec(name)
    return s.kwargs.get("in_planes", inspect.signature(s.family.__init__).parameters["in_planes"].default)


def default_board_size(name: str) -> int:
    """The board the named model is built for unless told otherwise (19; 9 for ``qiqiao``)."""
    return spec(name).board_size


def create(name: str, *, board_size: int | None = None, in_planes: int | None = None,
           rngs: nnx.Rngs | None = None, **overrides: Any) -> PolicyNet:
    """Build the named model (on :func:`default_board_size` when ``board_size`` is None); ``overrides`` replace any
    constructor argument (``dtype``, ``rank_embedding``, ``value_head``...)."""
    s = spec(name)
    kwargs = {**s.kwargs, **overrides}
    if in_planes is not None:
        kwargs["in_planes"] = in_planes
    return s.family(board_size=s.board_size if board_size is None else board_size,
                    rngs=rngs if rngs is not None else nnx.Rngs(0), **kwargs)
