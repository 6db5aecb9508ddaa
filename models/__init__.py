"""Policy networks in Flax NNX: the paper architectures and the GoNN experiments, and value heads.

Call contract (every model; training, evaluation and GTP rely on it)
--------------------------------------------------------------------
``out = model(planes, rank=None, to_move=None, profile=None)``: an :class:`Outputs` whose ``value`` is None
unless ``model.has_value`` (the value contract: :mod:`kifunet.models.base`); ``model.facts`` (:class:`NetFacts`) says
what the net is without running it, and :func:`forward` / :class:`Forward` run a split model
(:mod:`kifunet.models.forward`: the one way every wrapper runs a net)

==========  ==========================  ===============================================================
argument    type                        meaning
==========  ==========================  ===============================================================
planes      float ``[B, N, N, C]``      NHWC, channels last, rows from the top (data_prep/coords.py);
                                        N = ``model.board_size``, C = ``model.in_planes``
rank        int32 ``[B]`` or ``None``   1d..9d = 0..8, k kyu = -k, 1p..9p = 9..17, unknown = -128; used
                                        by models built with ``rank_embedding=True`` (clipped to
                                        [-30, 17]; -128 and ``None`` use a dedicated 'unknown' row),
                                        ignored otherwise (Maddison's rank comes in as input planes)
to_move     int32 ``[B]`` or ``None``   1 = black, 2 = white; selects Maddison's black/white output
                                        plane (``None`` = black); ignored by the other families
profile     float32 ``[B, 46]`` or      the game profile (:mod:`kifunet.data_prep.profiles`: ranks,
            ``None``                    date, source, time control, handicap, komi); used by models
                                        built with ``profile_embedding=H`` (an MLP with H hidden units
                                        added where the rank vector is), ``None`` = all unknown;
                                        ignored otherwise
logits      float32 ``[B, N*N + 1]``    move logits; index ``N*N`` is pass. Nets without a pass output
                                        (Clark & Storkey, Maddison, AlphaGo SL, Darkforest, Cazenave,
                                        GoNN) give pass the constant -1e9; AGZ, GARB, MAO and Qiqiao
                                        learn it
value       float32 ``[B]`` or          None unless ``model.has_value``: in [-1, 1], the expected result
            ``None``                    for the side to move (+1 win); :mod:`kifunet.models.base`
ownership   float32 ``[B, N, N]`` or    None unless ``model.has_ownership`` (AGZ, GoNN, GARB with
            ``None``                    ``ownership_head=True``): in [-1, 1], +1 the side to move owns
                                        the point at the end (:mod:`kifunet.models.aux_heads`)
score       float32 ``[B]`` or          None unless ``model.has_score`` (``score_head=True``): the
            ``None``                    final margin in points for the side to move
==========  ==========================  ===============================================================

Modes: ``model.train()`` (BatchNorm uses and updates batch statistics, MAO masks input channels) and
``model.eval()`` (running statistics, no masks, deterministic). Models are built in training mode.

Constructors: ``Family(*, board_size=19 (QiqiaoNet: 9), in_planes=<family default>, rngs: nnx.Rngs,
dtype=jnp.float32 (compute), param_dtype=jnp.float32, rank_embedding=False, profile_embedding=0, ...)``. Parameters stay in
``param_dtype``; ``dtype=jnp.bfloat16`` computes in bfloat16; logits and values are always float32. MAO draws its
masks from the ``dropout`` stream of the ``rngs`` given at construction (the default stream if absent).

Named sizes: :func:`create`, :func:`names`, :func:`default_in_planes` and :func:`default_board_size`
(:mod:`kifunet.models.registry`). Accounting:
:func:`count_params` (trainable only), :func:`count_macs` (analytic forward MACs per position),
:func:`lr_multipliers` + :func:`scale_by_lr_multipliers` (GoNN's per-parameter gradient multipliers).
"""

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
