"""The registered models as data, without importing JAX or flax: each name's family, constructor arguments, note
and board, and each family's value-head rule. :mod:`kifunet.models.registry` builds the models from this table,
:class:`kifunet.models.base.PolicyNet` sets ``has_value`` (so ``model.facts.has_value``) by :func:`family_has_value`,
and :func:`config_has_value` answers the same from a run's config before flax loads (``kifunet gtp``);
:func:`config_heads` does so for the ownership and score heads, an option of the families in :data:`AUX_HEADS`.

=====================  ==========================================================================================
value-head rule        families
=====================  ==========================================================================================
``"always"``           ``QiqiaoNet``
``"option"``           ``AGZResNet``, ``GoNNResNet``, ``GARBNet``: with ``value_head=True`` (off by default)
``"never"``            the others (the CNNs, ``CazenaveResNet``, ``MAONet``)
=====================  ==========================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One registered name: its family's class name, constructor arguments, a note, the board it is built for."""

    family: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    board_size: int = 19


MODELS: dict[str, Entry] = {
    "clark_storkey8": Entry("ClarkStorkey", {}, "8 layers <=64 filters, tied symmetric kernels"),
    "clark_storkey_tiny": Entry("ClarkStorkey", dict(layers=((5, 8), (3, 8)), out_kernel=3)),
    **{f"maddison{n}": Entry("Maddison", dict(layers=n), f"{n} layers x 128") for n in (3, 6, 10, 12)},
    "maddison_tiny": Entry("Maddison", dict(layers=2, filters=8)),
    **{f"alphago13_{k}": Entry("AlphaGoSL", dict(filters=k), f"13 layers x {k}") for k in (128, 192, 256)},
    "alphago_tiny": Entry("AlphaGoSL", dict(filters=8, layers=4)),
    "darkforest12": Entry("Darkforest", {}, "12 layers, 3 next-move heads"),
    "darkforest_tiny": Entry("Darkforest", dict(first=8, filters=8, layers=4)),
    "cazenave_resnet10": Entry("CazenaveResNet", dict(blocks=10), "10 blocks x 256"),
    "cazenave_resnet14": Entry("CazenaveResNet", dict(blocks=14), "14 blocks x 256"),
    "cazenave_tiny": Entry("CazenaveResNet", dict(filters=8, blocks=1)),
    "agz_resnet20": Entry("AGZResNet", dict(blocks=19), "stem + 19 blocks x 256 (value head off; "
                          "value_head=True adds it)"),
    "agz_tiny": Entry("AGZResNet", dict(filters=8, blocks=1, value_hidden=8)),
    "resnet18": Entry("AGZResNet", dict(blocks=8, filters=39), "MAO's ResNet-18 baseline: stem + 8 AlphaGo Zero "
                      "blocks x 39, MAO's parameter count"),
    "resnet18_tiny": Entry("AGZResNet", dict(filters=4, blocks=8, value_hidden=8)),
    "gonn_resnet5": Entry("GoNNResNet", dict(blocks=5, dilation_rates=(2, 3)), "README 5 blocks x 192"),
    "gonn_resnet12": Entry("GoNNResNet", dict(blocks=12), "README 12 blocks x 192"),
    "gonn_resnet12_global": Entry("GoNNResNet", dict(blocks=12, global_blocks=(5, 9)),
                                  "a201e46: 12 blocks, global blocks 6 and 10"),
    "gonn_tiny": Entry("GoNNResNet", dict(channels=8, blocks=3, dilated_channels=2, global_blocks=(2,),
                                          global_channels=4, head_features=8, head_pooled=4, value_channels=4,
                                          value_hidden=8)),
    "mao": Entry("MAONet", {}, "19 layers, MAO width 40 x 4 candidates"),
    "mao_tiny": Entry("MAONet", dict(stem_width=8, width=8, candidates=2, blocks=1)),
    **{f"garb{b}": Entry("GARBNet", dict(blocks=b, channels=c), f"{b} blocks x {c}")
       for b, c in ((5, 32), (10, 64), (20, 128))},
    "garb_tiny": Entry("GARBNet", dict(blocks=2, channels=8, value_channels=4, value_hidden=8)),
    "qiqiao": Entry("QiqiaoNet", {}, "Qiqiao 9x9 policy-value net: 3 convs 32/64/128, two dense heads",
                    board_size=9),
    "qiqiao_tiny": Entry("QiqiaoNet", dict(channels=(8, 8, 8), policy_channels=2, policy_hidden=16,
                                           value_channels=2, value_hidden=(8, 8)), board_size=9),
}

#: each family's value-head rule (module table); a family not named here is ``"never"``
VALUE_HEADS: dict[str, str] = {"QiqiaoNet": "always", "AGZResNet": "option", "GoNNResNet": "option",
                               "GARBNet": "option"}


def family_has_value(family: str, value_head: bool = False) -> bool:
    """Whether a net of the family named ``family`` built with ``value_head`` has a value head (module table)."""
    rule = VALUE_HEADS.get(family, "never")
    return rule == "always" or (rule == "option" and bool(value_head))


def config_has_value(model: str, kwargs: dict | None = None) -> bool:
    """Whether the registered model ``model`` built with ``kwargs`` (a run's ``model.kwargs``) has a value head,
    without building it; a name not registered follows the ``"option"`` rule."""
    entry = MODELS.get(model)
    value_head = bool({**(entry.kwargs if entry else {}), **(kwargs or {})}.get("value_head", False))
    return family_has_value(entry.family, value_head) if entry else value_head


#: the families with the ownership and score heads as options (``ownership_head=True``, ``score_head=True``:
#: :mod:`kifunet.models.aux_heads`); the others refuse them
AUX_HEADS: tuple[str, ...] = ("AGZResNet", "GoNNResNet", "GARBNet")


def config_heads(model: str, kwargs: dict | None = None) -> tuple[bool, bool]:
    """``(has_ownership, has_score)`` of the registered model ``model`` built with ``kwargs`` (a run's
    ``model.kwargs``), without building it; a name not registered takes ``kwargs`` at their word."""
    entry = MODELS.get(model)
    merged = {**(entry.kwargs if entry else {}), **(kwargs or {})}
    allowed = entry is None or entry.family in AUX_HEADS
    return (allowed and bool(merged.get("ownership_head", False)), allowed and bool(merged.get("score_head", False)))
