"""Named model sizes: ``create(name, ...)`` builds one, ``names()`` lists them; ``*_tiny`` names are
small variants for tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import inspect

from flax import nnx

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


_SPECS: dict[str, ModelSpec] = {
    "clark_storkey8": ModelSpec(ClarkStorkey, {}, "8 layers <=64 filters, tied symmetric kernels"),
    "clark_storkey_tiny": ModelSpec(ClarkStorkey, dict(layers=((5, 8), (3, 8)), out_kernel=3)),
    **{f"maddison{n}": ModelSpec(Maddison, dict(layers=n), f"{n} layers x 128") for n in (3, 6, 10, 12)},
    "maddison_tiny": ModelSpec(Maddison, dict(layers=2, filters=8)),
    **{f"alphago13_{k}": ModelSpec(AlphaGoSL, dict(filters=k), f"13 layers x {k}") for k in (128, 192, 256)},
    "alphago_tiny": ModelSpec(AlphaGoSL, dict(filters=8, layers=4)),
    "darkforest12": ModelSpec(Darkforest, {}, "12 layers, 3 next-move heads"),
    "darkforest_tiny": ModelSpec(Darkforest, dict(first=8, filters=8, layers=4)),
    "cazenave_resnet10": ModelSpec(CazenaveResNet, dict(blocks=10), "10 blocks x 256"),
    "cazenave_resnet14": ModelSpec(CazenaveResNet, dict(blocks=14), "14 blocks x 256"),
    "cazenave_tiny": ModelSpec(CazenaveResNet, dict(filters=8, blocks=1)),
    "agz_resnet20": ModelSpec(AGZResNet, dict(blocks=19), "stem + 19 blocks x 256 (value head off; "
                              "value_head=True adds it)"),
    "agz_tiny": ModelSpec(AGZResNet, dict(filters=8, blocks=1, value_hidden=8)),
    "resnet18": ModelSpec(AGZResNet, dict(blocks=8, filters=39), "MAO's ResNet-18 baseline: stem + 8 AlphaGo Zero "
                          "blocks x 39, MAO's parameter count"),
    "resnet18_tiny": ModelSpec(AGZResNet, dict(filters=4, blocks=8, value_hidden=8)),
    "gonn_resnet5": ModelSpec(GoNNResNet, dict(blocks=5, dilation_rates=(2, 3)), "README 5 blocks x 192"),
    "gonn_resnet12": ModelSpec(GoNNResNet, dict(blocks=12), "README 12 blocks x 192"),
    "gonn_resnet12_global": ModelSpec(GoNNResNet, dict(blocks=12, global_blocks=(5, 9)),
                                      "a201e46: 12 blocks, global blocks 6 and 10"),
    "gonn_tiny": ModelSpec(GoNNResNet, dict(channels=8, blocks=3, dilated_channels=2, global_blocks=(2,),
                                            global_channels=4, head_features=8, head_pooled=4, value_channels=4,
                                            value_hidden=8)),
    "mao": ModelSpec(MAONet, {}, "19 layers, MAO width 40 x 4 candidates"),
    "mao_tiny": ModelSpec(MAONet, dict(stem_width=8, width=8, candidates=2, blocks=1)),
    **{f"garb{b}": ModelSpec(GARBNet, dict(blocks=b, channels=c), f"{b} blocks x {c}")
       for b, c in ((5, 32), (10, 64), (20, 128))},
    "garb_tiny": ModelSpec(GARBNet, dict(blocks=2, channels=8, value_channels=4, value_hidden=8)),
    "qiqiao": ModelSpec(QiqiaoNet, {}, "Qiqiao 9x9 policy-value net: 3 convs 32/64/128, two dense heads",
                        board_size=9),
    "qiqiao_tiny": ModelSpec(QiqiaoNet, dict(channels=(8, 8, 8), policy_channels=2, policy_hidden=16,
                                             value_channels=2, value_hidden=(8, 8)), board_size=9),
}


def names() -> list[str]:
    """All registered model names, sorted."""
    return sorted(_SPECS)


def spec(name: str) -> ModelSpec:
    try:
        return _SPECS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(names())}") from None


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
