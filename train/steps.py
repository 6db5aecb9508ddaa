"""The loss and the per-device training and evaluation steps, over the named axis :data:`AXIS`.

Every step here sees this device's rows and the replicated state and reduces with explicit ``pmean`` / ``psum``;
:func:`kifunet.train.parallel.data_parallel` maps it. State: ``{'params', 'extra', 'opt_state', 'step'}``;
batch: :func:`kifunet.train.batches.window_batch`'s. A two-headed net's loss adds ``value_weight`` x the value MSE
over the global batch's known rows; a policy-only net's step is unchanged by it (docs/training.md, Nets with a
value head). The ownership and score heads add ``ownership_weight`` / ``score_weight`` x their masked losses
(0 by default: nothing added); a head trained (:func:`trained_heads`) adds its loss's sums to the training
metrics and its :mod:`kifunet.eval.head_metrics` figures' sums to the evaluation's.
``ModelDef(..., fused_norm_act=False)`` keeps flax's BatchNorm and autodiff for
:func:`kifunet.models.norm_act.norm_act` (what TPUs run: docs/accelerators.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from kifunet.models.aux_heads import ownership_counts, score_errors
from kifunet.models.base import NO_PASS_LOGIT, constant_predictor_mse, played_move_rank, value_outcome_stats
from kifunet.train.configs import ConfigError

#: the named axis the steps reduce over (the mesh of :mod:`kifunet.train.parallel` has this one axis)
AXIS = "data"
BATCHNORM_MODES = ("per_device", "sync")
LOSSES = ("cross_entropy", "l2")
#: the config's ``matmul_precision``: ``'default'`` leaves the backend's own (float32 convolutions and matmuls in
#: TF32 on recent NVIDIA GPUs, in one bfloat16 pass on TPUs); ``'high'`` and ``'highest'`` are
#: :func:`jax.default_matmul_precision`'s (``'highest'``: full float32 on both)
MATMUL_PRECISIONS = ("default", "high", "highest")

# ------------------------------------------------------------------------------------------------------------
# the model as pure functions


class ModelDef:
    """Graph definitions (training and evaluation mode) of an NNX model; :meth:`apply` is
    :func:`kifunet.models.forward.forward` over ``(params, extra)``, also returning the mutated ``extra``."""

    def __init__(self, model: nnx.Module, batchnorm: str = "per_device", *, fused_norm_act: bool = True):
        if batchnorm not in BATCHNORM_MODES:
            raise ConfigError(f"batchnorm must be one of {BATCHNORM_MODES}, got {batchnorm!r}")
        self.batchnorm = batchnorm
        self.bn_paths = [tuple(p) for p, m in nnx.iter_modules(model) if isinstance(m, nnx.BatchNorm)]
        self.has_value = model.facts.has_value
        for _, m in nnx.iter_modules(model):
            if isinstance(m, nnx.BatchNorm):
                if batchnorm == "sync":
                    m.axis_name = AXIS
                if not fused_norm_act:  # flax's layer and autodiff (kifunet.models.norm_act.fusable)
                    m.fused_norm_act = False
        model.train()
        self.graph_train, params, extra = nnx.split(model, nnx.Param, ...)
        model.eval()
        self.graph_eval, _, _ = nnx.split(model, nnx.Param, ...)
        model.train()
        self.params, self.extra = params, extra

    def apply(self, params, extra, batch, *, train: bool):
        """``(logits [B, N*N + 1], value [B] or None, the model's non-parameter state after the call)``; the value
        is None for a policy-only net."""
        out, new_extra = self.apply_outputs(params, extra, batch, train=train)
        return out.logits, out.value, new_extra

    def apply_outputs(self, params, extra, batch, *, train: bool):
        """``(Outputs, the model's non-parameter state after the call)``: every head's output."""
        # fresh Variable objects at the current trace level (BatchNorm and RNG counters are mutated in the call)
        extra = jax.tree.map(lambda x: x, extra)
        model = nnx.merge(self.graph_train if train else self.graph_eval, params, extra)
        # the profile only when the batch has one (a profiled net's): any other net keeps the 3-argument call
        extra = {"profile": batch["profile"]} if "profile" in batch else {}
        out = model(batch["planes"], batch["rank"], batch["to_move"], **extra)
        _, new_extra = nnx.state(model, nnx.Param, ...)
        return out, new_extra


def path_tuple(path) -> tuple:
    out = []
    for k in path:
        if isinstance(k, jax.tree_util.DictKey):
            out.append(k.key)
        elif isinstance(k, jax.tree_util.SequenceKey):
            out.append(k.idx)
        elif isinstance(k, jax.tree_util.GetAttrKey):
            out.append(k.name)
        else:
            out.append(str(k))
    return tuple(out)


# ------------------------------------------------------------------------------------------------------------
# losses and metrics (per example)


def cross_entropy(logits, target):
    """Nats of the played move: ``logsumexp(logits) - logits[target]``, per example."""
    lse = jax.nn.logsumexp(logits, axis=-1)
    return lse - jnp.take_along_axis(logits, target[:, None], axis=-1)[:, 0]


def l2_loss(logits, target):
    """Squared distance between the softmax and the one-hot target, per example (Cazenave's / GoNN's L2)."""
    p = jax.nn.softmax(logits, axis=-1)
    onehot = jax.nn.one_hot(target, logits.shape[-1], dtype=p.dtype)
    return jnp.sum(jnp.square(p - onehot), axis=-1)


def topk_correct(logits, target, k: int):
    """1.0 where the played move is in the top ``k``: :func:`kifunet.models.base.played_move_rank` ``< k``
    (fewer than ``k`` *other* moves have a logit >= the played move's; ties count against), per example."""
    return (played_move_rank(logits, target) < k).astype(jnp.float32)


def _sums(logits, batch, loss_vec, value=None):
    w = batch["weight"]
    nats = cross_entropy(logits, batch["target"])
    out = {"loss_sum": jnp.sum(loss_vec * w), "nats_sum": jnp.sum(nats * w),
           "top1_sum": jnp.sum(topk_correct(logits, batch["target"], 1) * w),
           "top4_sum": jnp.sum(topk_correct(logits, batch["target"], 4) * w),
           "count": jnp.sum(w)}
    if value is not None:
        out.update(value_sums(value, batch))
    return out


def value_sums(value, batch) -> dict:
    """Value-head sums (:data:`VALUE_SUM_METRICS`) of the rows with weight, by
    :func:`kifunet.models.base.value_outcome_stats`: ``value_sq_sum`` and ``value_known`` (MSE = their ratio),
    ``winner_decided``, ``winner_correct``, ``outcome_sum``; a batch without ``outcome`` has no known rows."""
    w = batch["weight"]
    v = value.astype(jnp.float32)
    if "outcome" not in batch:
        zero = jnp.sum(jnp.zeros_like(w))
        return {k: zero for k in VALUE_SUM_METRICS}
    o = batch["outcome"]
    known, sq, decided, correct = value_outcome_stats(v, o)
    f = lambda b: w * b.astype(w.dtype)  # noqa: E731 - weight 0 masks padding rows
    return {"value_sq_sum": jnp.sum(w * sq), "value_known": jnp.sum(f(known)),
            "winner_decided": jnp.sum(f(decided)), "winner_correct": jnp.sum(f(correct)),
            "outcome_sum": jnp.sum(f(known) * jnp.where(known, o, 0).astype(w.dtype))}


def value_metrics(sums: dict) -> dict:
    """``value_mse``, ``winner_acc``, ``value_baseline_mse`` (the constant predictor's MSE over the same rows),
    ``value_known`` and ``winner_decided`` from :data:`VALUE_SUM_METRICS` sums (NaN where nothing is known /
    decided); empty for sums without them (a policy-only net)."""
    if "value_known" not in sums:
        return {}
    k, d = float(sums["value_known"]), float(sums["winner_decided"])
    nan = float("nan")
    return {"value_mse": float(sums["value_sq_sum"]) / k if k > 0 else nan,
            "winner_acc": float(sums["winner_correct"]) / d if d > 0 else nan,
            "value_baseline_mse": constant_predictor_mse(k, d, float(sums["outcome_sum"])),
            "value_known": k, "winner_decided": d}


def with_matmul_precision(fn, precision: str = "default"):
    """``fn`` traced under :func:`jax.default_matmul_precision` ``(precision)`` (:data:`MATMUL_PRECISIONS`): every
    convolution and matmul of its forward and backward pass gets that precision; ``'default'`` returns ``fn``."""
    if precision not in MATMUL_PRECISIONS:
        raise ConfigError(f"matmul_precision must be one of {MATMUL_PRECISIONS}, got {precision!r}")
    if precision == "default":
        return fn

    def traced(*args):
        with jax.default_matmul_precision(precision):
            return fn(*args)

    return traced


def train_step(model_def: ModelDef, tx: optax.GradientTransformation, schedule, *, loss: str = "cross_entropy",
               value_weight: float = 0.01, matmul_precision: str = "default", fused_norms: bool = True,
               ownership_weight: float = 0.0, score_weight: float = 0.0):
    r"""The per-device step ``(state, local_batch) -> (state, metrics)``: gradients ``pmean``\ ed over ``'data'``,
    metrics ``psum``\ s plus gradient / parameter / update norms and ``logit_abs``. ``matmul_precision``:
    :func:`with_matmul_precision`; ``fused_norms``: norms by :func:`global_norm` (same parameters either way).
    ``ownership_weight`` / ``score_weight`` > 0 add :func:`ownership_loss` / :func:`score_loss` (the net must
    have the head) and the head's :data:`HEAD_LOSS_SUMS` to the metrics; at 0, the default, nothing is added."""
    if loss not in LOSSES:
        raise ConfigError(f"loss must be one of {LOSSES}, got {loss!r}")
    _check_weights(value_weight=value_weight, ownership_weight=ownership_weight, score_weight=score_weight)
    loss_fn_vec = cross_entropy if loss == "cross_entropy" else l2_loss
    trained = trained_heads(ownership_weight, score_weight)

    def step(state, batch):
        params, extra = state["params"], state["extra"]

        def loss_fn(p):
            out, new_extra = model_def.apply_outputs(p, extra, batch, train=True)
            logits, value = out.logits, out.value
            vec = loss_fn_vec(logits, batch["target"])
            w = batch["weight"]
            total = jnp.sum(vec * w) / jnp.maximum(jnp.sum(w), 1.0)
            if value is not None:
                total = total + value_weight * value_loss(value, batch)
            heads = {}
            if ownership_weight > 0 or score_weight > 0:
                total = total + head_losses(out, batch, ownership_weight, score_weight)
                heads = head_loss_sums(jax.lax.stop_gradient(out), batch, trained)
            return total, (logits, value, new_extra, vec, heads)

        # pmap semantics: each device differentiates its own loss with respect to its own copy of the
        # parameters (marked device-varying). Differentiating with respect to the replicated (invariant)
        # parameters instead would make JAX sum the per-device gradients itself (replication transposes to
        # a reduction), and the pmean below would be a no-op on an 8x too large gradient.
        local_params = jax.lax.pcast(params, AXIS, to="varying")
        (_, (logits, value, new_extra, vec, heads)), grads = jax.value_and_grad(loss_fn, has_aux=True)(local_params)
        grads = jax.lax.pmean(grads, AXIS)
        if model_def.batchnorm == "per_device":
            new_extra = jax.tree.map(
                lambda x: jax.lax.pmean(x, AXIS) if jnp.issubdtype(x.dtype, jnp.floating) else x, new_extra)
        updates, opt_state = tx.update(grads, state["opt_state"], params)
        new_params = optax.apply_updates(params, updates)
        value = None if value is None else jax.lax.stop_gradient(value)
        sums = _sums(jax.lax.stop_gradient(logits), batch, vec, value)
        if heads:
            sums.update(heads)
        metrics = jax.lax.psum(sums, AXIS)
        norm = global_norm if fused_norms else optax.tree.norm
        metrics.update(grad_norm=norm(grads), param_norm=norm(new_params),
                       update_norm=norm(updates), lr=jnp.asarray(schedule(state["step"]), jnp.float32),
                       logit_abs=jax.lax.pmax(logit_abs_max(jax.lax.stop_gradient(logits), batch["weight"]), AXIS))
        new_state = {"params": new_params, "extra": new_extra, "opt_state": opt_state, "step": state["step"] + 1}
        return new_state, metrics

    return with_matmul_precision(step, matmul_precision)


def global_norm(tree) -> jax.Array:
    """The L2 norm of all of ``tree``'s arrays together, in float32: one concatenation and one reduction, where
    ``optax.tree.norm`` makes a reduction per array. Fewer kernels, but the concatenation is written and read again:
    more memory traffic per parameter (docs/accelerators.md has both costs per backend)."""
    leaves = [jnp.ravel(x).astype(jnp.float32) for x in jax.tree.leaves(tree)]
    if not leaves:
        return jnp.zeros((), jnp.float32)
    flat = jnp.concatenate(leaves)
    return jnp.sqrt(jnp.sum(flat * flat))


def logit_abs_max(logits, weight):
    """The largest ``|logit|`` of the rows with weight (padding rows and a policy-only net's fixed pass logit,
    :data:`~kifunet.models.base.NO_PASS_LOGIT`, left out), float32; NaN if any counted logit is NaN."""
    a = jnp.abs(logits.astype(jnp.float32))
    keep = (weight[:, None] > 0) & (logits != NO_PASS_LOGIT)
    return jnp.max(jnp.where(keep, a, 0.0))


def value_loss(value, batch):
    """This device's share of the value MSE over the global batch's known rows,
    ``n_devices x sum_local known (value - outcome)^2 / max(K, 1)``; its ``pmean`` is the global masked mean."""
    w = batch["weight"]
    if "outcome" not in batch:
        return jnp.zeros((), jnp.float32)
    known, sq, _, _ = value_outcome_stats(value.astype(jnp.float32), batch["outcome"])
    k = jax.lax.psum(jnp.sum(w * known.astype(w.dtype)), AXIS)
    n = jax.lax.psum(1, AXIS)
    return n * jnp.sum(w * sq) / jnp.maximum(k, 1.0)


def _check_weights(**weights) -> None:
    for name, wt in weights.items():
        if not wt >= 0.0:
            raise ConfigError(f"{name} must be >= 0, got {wt!r}")


def head_losses(out, batch, ownership_weight: float, score_weight: float):
    """``ownership_weight`` x :func:`ownership_loss` + ``score_weight`` x :func:`score_loss` of the outputs ``out``;
    a weight of 0 adds no term."""
    total = 0.0
    if ownership_weight > 0:
        total = total + ownership_weight * ownership_loss(out.ownership, batch)
    if score_weight > 0:
        total = total + score_weight * score_loss(out.score, batch)
    return total


def trained_heads(ownership_weight: float, score_weight: float) -> tuple:
    """The heads a run trains, in :data:`HEADS` order: those whose weight is above 0."""
    return tuple(h for h, wt in zip(HEADS, (ownership_weight, score_weight)) if wt > 0)


def _row_weights(known, batch):
    return batch["weight"] * known.astype(batch["weight"].dtype)


def _masked_mean(per_row, known, batch):
    """This device's share of the global batch's mean of ``per_row`` over the rows with weight and ``known``
    (``n_devices x sum_local / max(K, 1)``, K their ``psum``): as :func:`value_loss` masks."""
    w = _row_weights(known, batch)
    k = jax.lax.psum(jnp.sum(w), AXIS)
    n = jax.lax.psum(1, AXIS)
    return n * jnp.sum(w * per_row) / jnp.maximum(k, 1.0)


def ownership_loss(ownership, batch):
    """Mean over the rows with an ownership target (``ownership_source`` > 0) of the points' mean squared error
    of ``ownership [B, N, N]`` against ``batch['ownership']`` (+1 / -1 / 0, the mover's view)."""
    if ownership is None:
        raise ConfigError("ownership_weight > 0 needs a net with an ownership head (model ownership_head=True)")
    return _masked_mean(*_ownership_rows(ownership, batch), batch)


def _ownership_rows(ownership, batch):
    """(per-row mean squared error of the points, rows with a target) of :func:`ownership_loss`."""
    target = batch["ownership"].astype(jnp.float32)
    per_row = jnp.mean(jnp.square(ownership.astype(jnp.float32) - target), axis=(1, 2))
    return per_row, batch["ownership_source"] > 0


def score_loss(score, batch):
    """Mean over the rows with a score target (finite ``batch['score']``) of ``((score - target) / N)^2``, N the
    board side (a margin of N points costs 1)."""
    if score is None:
        raise ConfigError("score_weight > 0 needs a net with a score head (model score_head=True)")
    return _masked_mean(*_score_rows(score, batch), batch)


def _score_rows(score, batch):
    """(per-row squared error over the board side, rows with a target) of :func:`score_loss`."""
    target = batch["score"].astype(jnp.float32)
    known = jnp.isfinite(target)
    n = batch["planes"].shape[1]
    err = jnp.where(known, (score.astype(jnp.float32) - jnp.where(known, target, 0.0)) / n, 0.0)
    return jnp.square(err), known


def head_loss_sums(out, batch, heads: tuple) -> dict:
    """This device's :data:`HEAD_LOSS_SUMS` of the ``heads`` trained: each loss's numerator (the rows' weighted
    terms) and its rows with a target; their ratio over a window is :func:`ownership_loss` / :func:`score_loss`."""
    sums = {}
    for h in heads:
        per_row, known = (_ownership_rows(out.ownership, batch) if h == "ownership" else _score_rows(out.score, batch))
        w = _row_weights(known, batch)
        term, rows = HEAD_LOSS_SUMS[h]
        sums[term], sums[rows] = jnp.sum(w * per_row), jnp.sum(w)
    return sums


def head_eval_sums(out, batch, heads: tuple) -> dict:
    """This device's :data:`HEAD_EVAL_SUMS` of the ``heads``: :func:`kifunet.models.aux_heads.ownership_counts`'
    owned points and points right, :func:`~kifunet.models.aux_heads.score_errors`' rows and absolute errors (the
    rules of :mod:`kifunet.eval.head_metrics`)."""
    sums = {}
    if "ownership" in heads:
        _, points, right = ownership_counts(out.ownership, batch, xp=jnp)
        sums["ownership_points"], sums["ownership_correct"] = points.astype(jnp.float32), right.astype(jnp.float32)
    if "score" in heads:
        rows, abs_sum = score_errors(out.score.astype(jnp.float32), batch, xp=jnp)
        sums["score_rows"], sums["score_abs_sum"] = rows.astype(jnp.float32), abs_sum
    return sums


def head_metrics_of(sums: dict) -> dict:
    """The heads' figures of fetched sums (NaN where no row has the target): ``ownership_loss`` and ``score_loss``
    (the losses' values over a training window) from :data:`HEAD_LOSS_SUMS`; ``ownership_acc`` (with
    ``ownership_points``) and ``score_mae`` in points (with ``score_rows``) from :data:`HEAD_EVAL_SUMS`."""
    nan = float("nan")
    ratio = lambda a, b: float(sums[a]) / float(sums[b]) if float(sums[b]) > 0 else nan  # noqa: E731
    out = {}
    for h, (term, rows) in HEAD_LOSS_SUMS.items():
        if term in sums:
            out[f"{h}_loss"] = ratio(term, rows)
    if "ownership_points" in sums:
        out.update(ownership_acc=ratio("ownership_correct", "ownership_points"),
                   ownership_points=float(sums["ownership_points"]))
    if "score_abs_sum" in sums:
        out.update(score_mae=ratio("score_abs_sum", "score_rows"), score_rows=float(sums["score_rows"]))
    return out


def eval_step(model_def: ModelDef, *, loss: str = "cross_entropy", matmul_precision: str = "default",
              heads: tuple = ()):
    """The per-device evaluation step ``(state, local_batch) -> sums`` (weights mask padding rows);
    ``matmul_precision``: :func:`with_matmul_precision`; ``heads`` (:func:`trained_heads`) add their
    :func:`head_eval_sums` (the batches then carry the targets)."""
    loss_fn_vec = cross_entropy if loss == "cross_entropy" else l2_loss

    def step(state, batch):
        if not heads:
            logits, value, _ = model_def.apply(state["params"], state["extra"], batch, train=False)
            return jax.lax.psum(_sums(logits, batch, loss_fn_vec(logits, batch["target"]), value), AXIS)
        out, _ = model_def.apply_outputs(state["params"], state["extra"], batch, train=False)
        sums = _sums(out.logits, batch, loss_fn_vec(out.logits, batch["target"]), out.value)
        sums.update(head_eval_sums(out, batch, heads))
        return jax.lax.psum(sums, AXIS)

    return with_matmul_precision(step, matmul_precision)


# ------------------------------------------------------------------------------------------------------------
# metrics: what a step sums, and the carries that keep them on the devices between fetches

#: per-step metrics that a window sums (divided by ``count`` when fetched)
SUM_METRICS = ("loss_sum", "nats_sum", "top1_sum", "top4_sum", "count")
#: the sums a two-headed net adds (:func:`value_sums`; :func:`value_metrics` divides them)
VALUE_SUM_METRICS = ("value_sq_sum", "value_known", "winner_decided", "winner_correct", "outcome_sum")
#: the heads a run may train (:func:`trained_heads`)
HEADS = ("ownership", "score")
#: per head trained, the sums a training step adds (:func:`head_loss_sums`): the loss's numerator, its rows
HEAD_LOSS_SUMS = {"ownership": ("ownership_sq_sum", "ownership_rows"), "score": ("score_sq_sum", "score_rows")}
#: per head trained, the sums an evaluation step adds (:func:`head_eval_sums`)
HEAD_EVAL_SUMS = {"ownership": ("ownership_points", "ownership_correct"), "score": ("score_rows", "score_abs_sum")}
#: per-step metrics of which a window keeps the last value
LAST_METRICS = ("grad_norm", "param_norm", "update_norm", "lr", "logit_abs")
#: per-step metrics of which a window also keeps the maximum, as ``<name>_max`` (:data:`MAX_METRICS`): a run-up
#: to a divergence within the window shows there even when the last step looks calm
MAXED_METRICS = ("grad_norm", "logit_abs")
#: the window's maxima of :data:`MAXED_METRICS`
MAX_METRICS = tuple(f"{k}_max" for k in MAXED_METRICS)


def sum_keys(value: bool) -> tuple:
    """The summed metrics of a step: :data:`SUM_METRICS`, plus :data:`VALUE_SUM_METRICS` when ``value``."""
    return SUM_METRICS + (VALUE_SUM_METRICS if value else ())


def zeros_window(value: bool = False, heads: tuple = ()) -> dict:
    """A zeroed metric window on the host, the carry of a :func:`windowed` step (``value``: a two-headed net's;
    ``heads``: the heads trained, :data:`HEAD_LOSS_SUMS`); :func:`kifunet.train.parallel.empty_window` puts it on
    the devices."""
    keys = sum_keys(value) + tuple(k for h in heads for k in HEAD_LOSS_SUMS[h])
    w = {k: np.zeros((), np.float32) for k in keys + LAST_METRICS + MAX_METRICS}
    w.update(steps=np.zeros((), np.int32), first_bad=np.zeros((), np.int32), bad_loss=np.zeros((), np.float32))
    return w


def zeros_sums(value: bool = False, heads: tuple = ()) -> dict:
    """Zeroed evaluation sums on the host, the carry of a :func:`summed` step (``heads``: :data:`HEAD_EVAL_SUMS`;
    :func:`kifunet.train.parallel.empty_sums` puts them on the devices)."""
    keys = sum_keys(value) + tuple(k for h in heads for k in HEAD_EVAL_SUMS[h])
    return {k: np.zeros((), np.float32) for k in keys}


def windowed(step_fn):
    """Per-device ``(state, batch, window) -> (state, window')``: ``step_fn`` with its metrics added to a window on
    the devices (:data:`SUM_METRICS` summed, :data:`LAST_METRICS` last, :data:`MAX_METRICS` largest, ``steps``,
    ``first_bad`` / ``bad_loss``: the first non-finite loss); the step's parameters are unchanged to the bit."""

    def step(state, batch, window):
        number = state["step"] + 1
        state, m = step_fn(state, batch)
        out = {k: window[k] + m[k].astype(jnp.float32) for k in m if k not in LAST_METRICS}
        out.update({k: m[k].astype(jnp.float32) for k in LAST_METRICS})
        out.update({f"{k}_max": jnp.maximum(window[f"{k}_max"], m[k].astype(jnp.float32)) for k in MAXED_METRICS})
        loss = m["loss_sum"].astype(jnp.float32) / jnp.maximum(m["count"].astype(jnp.float32), 1.0)
        if "value_sq_sum" in m:
            loss = loss + m["value_sq_sum"].astype(jnp.float32) / jnp.maximum(m["value_known"].astype(jnp.float32),
                                                                             1.0)
        for term, rows in HEAD_LOSS_SUMS.values():  # a head's non-finite loss stops the run as the policy's does
            if term in m:
                loss = loss + m[term].astype(jnp.float32) / jnp.maximum(m[rows].astype(jnp.float32), 1.0)
        first = (window["first_bad"] == 0) & ~jnp.isfinite(loss)
        out["first_bad"] = jnp.where(first, number.astype(jnp.int32), window["first_bad"])
        out["bad_loss"] = jnp.where(first, loss, window["bad_loss"])
        out["steps"] = window["steps"] + 1
        return state, out

    return step


def summed(step_fn):
    """Per-device ``(state, batch, sums) -> sums'``: an evaluation step (:func:`eval_step`) whose sums are added
    on the devices, so an evaluation fetches one set of sums at its end."""

    def step(state, batch, sums):
        m = step_fn(state, batch)
        return {k: sums[k] + m[k].astype(jnp.float32) for k in m}

    return step
