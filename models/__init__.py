"""Policy networks in Flax NNX: the paper architectures, the GoNN experiments, and value heads.

Every model: ``model(planes, rank=None, to_move=None, profile=None) ->`` :class:`Outputs` ``(logits, value)``,
``value`` None unless ``model.has_value`` (``ownership`` and ``score`` likewise: :mod:`kifunet.models.aux_heads`);
``model.facts`` (:class:`NetFacts`) says what the net is without running it; :func:`forward` / :class:`Forward` run a
split model. The arguments, modes and constructor options are tabled in docs/models.md. Names: :func:`create`,
:func:`names`, :func:`default_in_planes`, :func:`default_board_size`; accounting: :func:`count_params`,
:func:`count_macs`, :func:`lr_multipliers`, :func:`scale_by_lr_multipliers`."""

import importlib

#: where each public name lives; a submodule is imported when one of its names is first asked for, so that
#: ``kifunet.models.forward`` (:class:`Outputs`, :class:`NetFacts`) loads without flax: a policy played from an
#: exported forward pass (:mod:`kifunet.play.forward_cache`) imports JAX only
_HOMES = {
    "base": ("NO_PASS_LOGIT", "PolicyNet"),
    "forward": ("Forward", "NetFacts", "Outputs", "forward"),
    "cnn": ("AlphaGoSL", "ClarkStorkey", "ConvNet", "Darkforest", "Maddison"),
    "flops": ("count_macs", "counted_train_flops", "forward_flops", "train_flops"),
    "garb": ("GARBNet",),
    "gonn": ("GoNNResNet",),
    "mao": ("MAONet",),
    "params": ("count_params", "lr_multipliers", "scale_by_lr_multipliers"),
    "qiqiao": ("QiqiaoNet",),
    "registry": ("create", "default_board_size", "default_in_planes", "names"),
    "resnet": ("AGZResNet", "CazenaveResNet"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str):
    if name in _HOME_OF:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME_OF[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOME_OF))


__all__ = [
    "AGZResNet",
    "AlphaGoSL",
    "CazenaveResNet",
    "ClarkStorkey",
    "ConvNet",
    "Darkforest",
    "Forward",
    "GARBNet",
    "GoNNResNet",
    "MAONet",
    "Maddison",
    "NO_PASS_LOGIT",
    "NetFacts",
    "Outputs",
    "PolicyNet",
    "QiqiaoNet",
    "count_macs",
    "count_params",
    "create",
    "default_board_size",
    "default_in_planes",
    "counted_train_flops",
    "forward",
    "forward_flops",
    "lr_multipliers",
    "names",
    "scale_by_lr_multipliers",
    "train_flops",
]
