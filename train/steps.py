"""The loss and the per-device training and evaluation steps, over the named axis ``'data'``.

Contract: every step here is a *per-device* function, as under ``jax.pmap``: it sees this device's rows of the
batch (``batch_size / n_devices``) and the whole replicated state, and reduces over :data:`AXIS` with explicit
``jax.lax.pmean`` / ``jax.lax.psum`` (gradients, BatchNorm statistics in mode ``'per_device'``, metric sums).
:func:`kifunet.train.parallel.data_parallel` maps it over the mesh once; nothing here knows the mesh.

* state: ``{'params', 'extra', 'opt_state', 'step'}`` (:class:`ModelDef` splits a model into params / extra);
* batch: ``planes``, ``target``, ``to_move``, ``rank``, ``weight`` and optionally ``outcome``
  (:func:`kifunet.train.batches.window_batch`); ``weight`` 0 masks padding rows;
* :func:`train_step` -> ``(state', metrics)``, :func:`eval_step` -> metric sums; :func:`windowed` and
  :func:`summed` add them to a carry that stays on the devices (:data:`SUM_METRICS`, :data:`LAST_METRICS`).

Each device differentiates its local loss with respect to its own copy of the parameters
(``jax.lax.pcast(params, 'data', to='varying')``): differentiating with respect to the replicated value would
make JAX insert the cross-device sum itself (replication transposes to a reduction) and the explicit ``pmean``
would then see an 8x gradient on 8 devices.

Two-headed nets (``model.has_value``; the contract is in :mod:`kifunet.models.base`): the loss is

    policy loss  +  ``value_weight`` x value MSE over the rows with a known outcome

=====================  ===========================================================================================
term                   definition
=====================  ===========================================================================================
policy loss            mean over the rows (``weight``) of ``cross_entropy`` or ``l2``: exactly the policy-only loss
known rows             ``weight`` x (``outcome`` known): a row whose game result is known (``outcome`` +1 the mover
                       won, -1 lost, 0 draw, -128 unknown: :mod:`kifunet.data_prep.results`)
value MSE              ``sum_known (value - outcome)^2 / K``, K = the known rows of the *global* batch (``psum``
                       over ``'data'``): each device contributes ``n_devices x sum_local / K``, so the ``pmean``
                       of the gradients is the gradient of the global masked mean however the known rows fall
                       on the devices; 0 (and no gradient) when no row is known (an old dataset, unknown results)
``value_weight``       the config's ``value_weight`` (0.01 by default: AlphaGo Zero's supervised setting)
=====================  ===========================================================================================

A policy-only net (``has_value`` False) skips every value term: its step is the same computation as before
value heads existed (bit-identical parameters and metrics). A batch without an ``outcome`` column (a hand-made
benchmark batch) has no known rows. Metric sums of a two-headed step add :data:`VALUE_SUM_METRICS`
(:func:`value_sums`; the per-row rule, shared with eval, is :func:`kifunet.models.base.value_outcome_stats`).

BatchNorm (``batchnorm`` option): ``'per_device'`` normalises with each device's own batch statistics
(pmap's default) and averages the running statistics over devices after the step (the Flax ImageNet
example's ``sync_batch_stats``); ``'sync'`` sets ``axis_name='data'`` on every ``nnx.BatchNorm``, which then
``pmean``\\ s its batch statistics: the same numbers as one device on the whole batch.
``ModelDef(..., fused_norm_act=False)`` keeps every BatchNorm that a model passes through
:func:`kifunet.models.norm_act.norm_act` on flax's layer and autodiff (what TPUs run: docs/accelerators.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from kifunet.models.base import NO_PASS_LOGIT, constant_predictor_mse, played_move_rank, value_outcome_stats

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
    """Graph definitions (training and evaluation mode) of an NNX model, for ``nnx.merge`` inside steps.

    :meth:`apply` is :func:`kifunet.models.forward.forward` over the state split in two (``params``, ``extra``)
    that also returns the ``extra`` the call mutated (BatchNorm statistics in training mode)."""

    def __init__(self, model: nnx.Module, batchnorm: str = "per_device", *, fused_norm_act: bool = True):
        if batchnorm not in BATCHNORM_MODES:
            raise ValueError(f"batchnorm must be one of {BATCHNORM_MODES}, got {batchnorm!r}")
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
        # fresh Variable objects at the current trace level (BatchNorm and RNG counters are mutated in the call)
        extra = jax.tree.map(lambda x: x, extra)
        model = nnx.merge(self.graph_train if train else self.graph_eval, params, extra)
        # the profile only when the batch has one (a profiled net's): any other net keeps the 3-argument call
        extra = {"profile": batch["profile"]} if "profile" in batch else {}
        logits, value = model(batch["planes"], batch["rank"], batch["to_move"], **extra)
        _, new_extra = nnx.state(model, nnx.Param, ...)
        return logits, value, new_extra


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
    """Value-head sums of a batch (:data:`VALUE_SUM_METRICS`) over its rows with weight, scored by
    :func:`kifunet.models.base.value_outcome_stats` (the rule eval uses too):

    * ``value_sq_sum``: ``sum (value - outcome)^2`` over the known rows (MSE = ``value_sq_sum / value_known``);
    * ``value_known``: the rows with a known outcome (draws included);
    * ``winner_decided``: known rows of games with a winner (draws left out: no winner to predict);
    * ``winner_correct``: decided rows where the value's sign names the winner;
    * ``outcome_sum``: ``sum outcome`` over the known rows (the constant predictor's MSE:
      :func:`kifunet.models.base.constant_predictor_mse`).

    A batch without an ``outcome`` column (a hand-made benchmark batch) has no known rows.
    """
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
        raise ValueError(f"matmul_precision must be one of {MATMUL_PRECISIONS}, got {precision!r}")
    if precision == "default":
        return fn

    def traced(*args):
        with jax.default_matmul_precision(precision):
            return fn(*args)

    return traced


def train_step(model_def: ModelDef, tx: optax.GradientTransformation, schedule, *, loss: str = "cross_entropy",
               value_weight: float = 0.01, matmul_precision: str = "default", fused_norms: bool = True):
    """The per-device training step ``(state, local_batch) -> (state, metrics)``; map it with
    :func:`kifunet.train.parallel.data_parallel`.

    ``state``: ``{'params', 'extra', 'opt_state', 'step'}``. The policy loss is the mean over the local rows;
    gradients are ``pmean``\\ ed over ``'data'`` (= the gradient of the global-batch mean when shards are
    equal); metrics are ``psum``\\ s of per-example sums plus global gradient / parameter / update norms and
    ``logit_abs`` (:func:`logit_abs_max`). A
    two-headed net adds ``value_weight`` x the value MSE over the global batch's known rows (module docstring).
    ``matmul_precision``: :func:`with_matmul_precision`. ``fused_norms``: the three norms by :func:`global_norm`
    (one reduction each) instead of ``optax.tree.norm`` (one per array); the parameters are the same either way.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if not value_weight >= 0.0:
        raise ValueError(f"value_weight must be >= 0, got {value_weight!r}")
    loss_fn_vec = cross_entropy if loss == "cross_entropy" else l2_loss

    def step(state, batch):
        params, extra = state["params"], state["extra"]

        def loss_fn(p):
            logits, value, new_extra = model_def.apply(p, extra, batch, train=True)
            vec = loss_fn_vec(logits, batch["target"])
            w = batch["weight"]
            total = jnp.sum(vec * w) / jnp.maximum(jnp.sum(w), 1.0)
            if value is not None:
                total = total + value_weight * value_loss(value, batch)
            return total, (logits, value, new_extra, vec)

        # pmap semantics: each device differentiates its own loss with respect to its own copy of the
        # parameters (marked device-varying). Differentiating with respect to the replicated (invariant)
        # parameters instead would make JAX sum the per-device gradients itself (replication transposes to
        # a reduction), and the pmean below would be a no-op on an 8x too large gradient.
        local_params = jax.lax.pcast(params, AXIS, to="varying")
        (_, (logits, value, new_extra, vec)), grads = jax.value_and_grad(loss_fn, has_aux=True)(local_params)
        grads = jax.lax.pmean(grads, AXIS)
        if model_def.batchnorm == "per_device":
            new_extra = jax.tree.map(
                lambda x: jax.lax.pmean(x, AXIS) if jnp.issubdtype(x.dtype, jnp.floating) else x, new_extra)
        updates, opt_state = tx.update(grads, state["opt_state"], params)
        new_params = optax.apply_updates(params, updates)
        value = None if value is None else jax.lax.stop_gradient(value)
        metrics = jax.lax.psum(_sums(jax.lax.stop_gradient(logits), batch, vec, value), AXIS)
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
    """This device's share of the value MSE over the global batch's known rows (see the module docstring):
    ``n_devices x sum_local known (value - outcome)^2 / max(K, 1)``, K = ``psum`` of the known rows; its ``pmean``
    over ``'data'`` is the global masked mean (0 when K = 0)."""
    w = batch["weight"]
    if "outcome" not in batch:
        return jnp.zeros((), jnp.float32)
    known, sq, _, _ = value_outcome_stats(value.astype(jnp.float32), batch["outcome"])
    k = jax.lax.psum(jnp.sum(w * known.astype(w.dtype)), AXIS)
    n = jax.lax.psum(1, AXIS)
    return n * jnp.sum(w * sq) / jnp.maximum(k, 1.0)


def eval_step(model_def: ModelDef, *, loss: str = "cross_entropy", matmul_precision: str = "default"):
    """The per-device evaluation step ``(state, local_batch) -> sums`` (weights mask padding rows);
    ``matmul_precision``: :func:`with_matmul_precision`. ``fused_norms``: the three norms by :func:`global_norm`
    (one reduction each) instead of ``optax.tree.norm`` (one per array); the parameters are the same either way."""
    loss_fn_vec = cross_entropy if loss == "cross_entropy" else l2_loss

    def step(state, batch):
        logits, value, _ = model_def.apply(state["params"], state["extra"], batch, train=False)
        return jax.lax.psum(_sums(logits, batch, loss_fn_vec(logits, batch["target"]), value), AXIS)

    return with_matmul_precision(step, matmul_precision)


# ------------------------------------------------------------------------------------------------------------
# metrics: what a step sums, and the carries that keep them on the devices between fetches

#: per-step metrics that a window sums (divided by ``count`` when fetched)
SUM_METRICS = ("loss_sum", "nats_sum", "top1_sum", "top4_sum", "count")
#: the sums a two-headed net adds (:func:`value_sums`; :func:`value_metrics` divides them)
VALUE_SUM_METRICS = ("value_sq_sum", "value_known", "winner_decided", "winner_correct", "outcome_sum")
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


def zeros_window(value: bool = False) -> dict:
    """A zeroed metric window on the host, the carry of a :func:`windowed` step (``value``: a two-headed net's);
    :func:`kifunet.train.parallel.empty_window` puts it on the devices."""
    w = {k: np.zeros((), np.float32) for k in sum_keys(value) + LAST_METRICS + MAX_METRICS}
    w.update(steps=np.zeros((), np.int32), first_bad=np.zeros((), np.int32), bad_loss=np.zeros((), np.float32))
    return w


def zeros_sums(value: bool = False) -> dict:
    """Zeroed evaluation sums on the host, the carry of a :func:`summed` step
    (:func:`kifunet.train.parallel.empty_sums` puts them on the devices)."""
    return {k: np.zeros((), np.float32) for k in sum_keys(value)}


def windowed(step_fn):
    """Per-device ``(state, batch, window) -> (state, window')``: ``step_fn`` (:func:`train_step`) with its
    metrics added to a window that stays on the devices, so the training loop fetches metrics once per logging
    interval instead of once per step (a device-to-host copy and a host wait per step).

    ``window``: :data:`SUM_METRICS` (and a two-headed net's :data:`VALUE_SUM_METRICS`) summed,
    :data:`LAST_METRICS` of the last step, :data:`MAX_METRICS` the largest of their step's values in the window
    (NaN once one was NaN), ``steps`` in the window, ``first_bad``: the 1-based step of the first
    non-finite loss in the window (0: none) and ``bad_loss`` its value (a two-headed net: policy loss + value
    MSE, so a non-finite value counts too). The step's own computation is unchanged (the same parameters to the
    bit).
    """

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
