"""``train_and_evaluate(config, workdir)``: the training loop (one host or many, one device or many).

Order of business, as in big_vision's trainer:

1. **Processes and mesh**: :func:`kifunet.train.parallel.initialize_distributed` (multi-host launchers), a
   1-D ``('data',)`` mesh over all devices; the global ``batch_size`` must divide by the device count and
   by the process count (each host feeds ``batch_size / hosts`` rows).
2. **The run directory and signals**: an exclusive lock on ``WORKDIR`` (:mod:`kifunet.train.run_lock`: a second
   trainer there is refused at once), then SIGTERM / SIGINT handlers for the rest of the call
   (:mod:`kifunet.train.preemption`).
3. **Model, optimizer, memory**: :func:`kifunet.train.model_config.build_model` (the config's ``model`` section
   and ``seed``) with the dataset's planes and board size; :mod:`kifunet.train.optim`. State = ``{params, extra
   (BatchNorm statistics, RNG state), opt_state, step}``, replicated on every device. The train step is compiled
   for the global batch's shapes (the first step reuses it) and the memory of the run estimated from it; on a CPU
   backend a run that cannot fit is refused before its first step (:mod:`kifunet.train.memory`).
4. **Resume** (big_vision's priority order): a checkpoint in ``WORKDIR/checkpoints`` (state, optimizer,
   step, positions, RNG and the input pipeline's position), else ``config.init_from`` (weights only), else
   from scratch.
5. **Input**: :func:`kifunet.train.input_pipeline.train_iterator` on this host's share of the dataset,
   prefetched and put on the devices in a background thread. ``config.dataset`` may name several datasets
   (``A,B``): mixed in every batch by ``config.input.mix_weights`` (:mod:`kifunet.train.mixture`), each evaluated
   on its own ``eval_split``; the evaluation record keeps the first one's metrics under the usual keys and adds
   ``by_dataset`` (``{path: metrics}``).
6. **Loop**: the per-device step mapped by :func:`kifunet.train.parallel.data_parallel`, wrapped by
   :func:`kifunet.train.steps.windowed` so each step also adds its metrics to a *window* that stays on the
   devices. Nothing goes from device to host per step: batches arrive already on the devices (the prefetch
   thread), the state is donated, and the host reads the window once per interval (:func:`_fetch`), so it can
   run ahead of the device -- by at most ``max_steps_ahead`` steps (it then waits for the device, without a
   copy). A non-finite loss stops the run with ``NonFiniteLoss`` naming the first bad step (the window records
   it; it is checked before every checkpoint, so none holds it). Every ``log_every_steps``: a JSON line and
   TensorBoard scalars (loss, nats, top-1, top-4, positions/s, fraction of wall time waiting for data,
   gradient / parameter / update norms, learning rate; a two-headed net adds the value metrics below) and a
   progress line with ETA on stdout. Every ``eval_every_positions``: sums and counts over the evaluation split
   (prefetched to the devices, summed there, fetched once). Every ``checkpoint_every_positions``, every
   ``checkpoint_every_minutes`` of wall time and at the end: a checkpoint (with the input pipeline's position, so
   any of them resumes bit-identically). ``time_limit_s`` ends the run (checkpoint and final evaluation) after
   that much training time, counted across restarts. SIGTERM or SIGINT ends it after the step in progress: a
   checkpoint, the metrics flushed, the input workers stopped, no final evaluation, then
   :class:`kifunet.train.preemption.Preempted` (``kifunet train`` prints one line and exits 143 or 130; a second
   signal kills the process at once). The clock and the signal flag are read on the host after every step
   (:class:`StopClock`), so the run stops within a few step times whatever the logging interval; several
   processes agree on the step in one small collective every ``sync_s`` seconds (a signal to any of them stops
   all of them there, each saving its share of the checkpoint).

Exit statuses of ``kifunet train`` (``--help`` lists them; :data:`kifunet.commands.train.EXIT_STATUSES`): 0 done
(``train_positions`` or ``time_limit_s``), 2 bad input (config, dataset, a workdir in use, a batch that cannot fit),
3 non-finite loss, 143 / 130 stopped by SIGTERM / SIGINT with a checkpoint (rerun the same command to resume; not 0,
so a scheduler reruns the job: :func:`kifunet.train.preemption.exit_status`), killed by a second signal (-15 / -2 to a
parent, 143 / 130 in a shell; no new checkpoint).

Value metrics (nets with a value head, ``model.has_value``; the loss is in :mod:`kifunet.train.parallel`), in
the training records (over the log window's rows) and the evaluation records (over the evaluated rows):

======================  ==================================================================================
field                   meaning
======================  ==================================================================================
``loss``                the *policy* loss, as for a policy-only net (the value term is logged apart)
``value_mse``           mean of ``(value - outcome)^2`` over the rows with a known game result (draws: 0)
``winner_acc``          fraction of known, non-drawn rows where the value's sign names the winner
                        (:func:`kifunet.models.base.value_outcome_stats`); draws are left out
``value_known``         the rows with a known result; ``winner_decided``: those of them not drawn
``value_baseline_mse``  evaluation only: the MSE of the constant predictor, the evaluated rows' mean outcome
                        (:func:`kifunet.models.base.constant_predictor_mse`): the head learnt something only
                        below it
======================  ==================================================================================

``value_mse`` and ``winner_acc`` are left out of a record with no known (decided) row: a dataset built before
game results were read trains the policy only.

Files in ``WORKDIR``: ``config.json`` (resolved config; written when the run's first checkpoint is on disk, so a
run that failed before it leaves none; with ``dataset_history`` beside it once a resume changed datasets: a resume
on other datasets is refused unless ``allow_dataset_change``, :mod:`kifunet.train.run_dataset`),
``checkpoints/``, ``metrics_train.jsonl``, ``metrics_eval.jsonl``, ``tensorboard/``, ``train.lock`` (the run lock;
process i > 0: ``train.lock.<i>``). Only process 0 writes the others (orbax coordinates the checkpoint). A resumed
run says so on its first line (``kifunet train: resuming from step N ...``).
"""

from __future__ import annotations

import collections
import math
import os
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from kifunet import models
from kifunet.fileio import atomic, store
from kifunet.train import (checkpointing, input_pipeline, memory, metric_writer, mixture, model_config, optim,
                           parallel, preemption, run_dataset, run_lock)
from kifunet.train.eval_batches import eval_batches
from kifunet.train.prefetch import Prefetcher
from kifunet.train.steps import (LAST_METRICS, MAX_METRICS, ModelDef, eval_step, summed, train_step, value_metrics,
                                 windowed)


class NonFiniteLoss(FloatingPointError):
    """The training loss became NaN or infinite; ``step`` is the 1-based step that produced it."""

    def __init__(self, step: int, value: float):
        super().__init__(f"non-finite training loss ({value}) at step {step}: stopping; the last checkpoint "
                         f"precedes this step")
        self.step, self.value = step, value


def _log(msg: str) -> None:
    if jax.process_index() == 0:
        print(msg, flush=True)


def setup(config, *, board_size: int, in_planes: int, mesh):
    """(model_def, optimizer, schedule, replicated initial state, model) for a config and data shape."""
    model = model_config.build_model(config.model, seed=config.seed, board_size=board_size, in_planes=in_planes)
    model_def = ModelDef(model, config.batchnorm)
    schedule = optim.make_schedule(config.schedule, config.batch_size, config.train_positions)
    tx = optim.make_optimizer(config.optimizer, schedule, params=model_def.params, model=model,
                              bn_paths=model_def.bn_paths)
    state = {"params": model_def.params, "extra": model_def.extra, "opt_state": tx.init(model_def.params),
             "step": jnp.zeros((), jnp.int32)}
    return model_def, tx, schedule, parallel.replicate(state, mesh), model


def train_function(config, model_def, tx, schedule, mesh):
    """The training loop's compiled step ``(state, batch, window) -> (state, window')``: the per-device
    :func:`~kifunet.train.steps.train_step` inside :func:`~kifunet.train.steps.windowed`, mapped over ``mesh``
    with the state donated (what :mod:`kifunet.train.aot` compiles for other targets). The logged norms are fused
    (:func:`~kifunet.train.steps.global_norm`) except on TPUs, where the compiler already fuses the per-array
    reductions and the concatenation would only add memory traffic (docs/accelerators.md)."""
    fused_norms = mesh.devices.flat[0].platform != "tpu"  # the TPU compiler fuses per-array reductions itself
    return parallel.data_parallel(
        windowed(train_step(model_def, tx, schedule, loss=config.loss, value_weight=config.value_weight,
                            matmul_precision=config.get("matmul_precision", "default"), fused_norms=fused_norms)),
        mesh, donate_state=True, carry=True)


def _every(positions: int, batch: int) -> int:
    return max(1, math.ceil(positions / batch)) if positions > 0 else 0


def _apply_init_from(state, path: str, mesh):
    weights, meta = checkpointing.load_weights(path)
    flat = checkpointing.flatten_state({"params": state["params"], "extra": state["extra"]})
    missing = [k for k in flat if k not in weights]
    bad = [k for k in flat if k in weights and tuple(weights[k].shape) != tuple(flat[k].shape)]
    if missing or bad:
        raise ValueError(f"init_from {path}: checkpoint does not fit this model (missing {missing[:5]}, "
                         f"shape mismatch {bad[:5]})")
    part = checkpointing.unflatten_state({"params": state["params"], "extra": state["extra"]},
                                         {k: weights[k] for k in flat})
    part = parallel.replicate(part, mesh)
    return {**state, "params": part["params"], "extra": part["extra"]}, meta


def _fmt_time(s: float) -> str:
    s = int(max(0, s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _fetch(tree):
    """The training loop's device-to-host copies, all explicit and all here: a metric window once per logging
    interval (and at evaluations and checkpoints, for the non-finite-loss check), evaluation sums once per
    evaluation. Nothing is copied per step (tests/test_train_loop.py counts these calls)."""
    return jax.device_get(tree)


class _InFlight:
    """At most ``depth`` dispatched steps not yet finished on the device: pushing a step's (undonated) output
    waits -- without a copy -- for the step ``depth`` back. This bounds the device memory held by queued input
    batches and keeps the host clock within ``depth`` steps of the device (the time limit reads it)."""

    def __init__(self, depth: int):
        self.depth = max(1, int(depth))
        self._q: collections.deque = collections.deque()

    def push(self, token) -> None:
        self._q.append(token)
        while len(self._q) > self.depth:
            jax.block_until_ready(self._q.popleft())


class Decision(collections.namedtuple("Decision", "stop save signum")):
    """What :meth:`StopClock.decide` says after a step: ``stop`` ('time', 'signal' or None), ``save`` (a checkpoint
    is due by time), ``signum`` (the signal that stops the run, 0 for none)."""


#: the decision of a step that decides nothing
CARRY_ON = Decision(None, False, 0)


class StopClock:
    """The loop's host-side decisions after a step, from the host's wall clock and signal flag only -- never a
    device value, so checking them adds no device-to-host copy or wait:

    * stop at ``limit_s`` of training time (``train_seconds``, counted across restarts; ``time_limit_s``);
    * stop on SIGTERM / SIGINT (``signals``: a :class:`kifunet.train.preemption.Signals`, whose ``signum`` its
      handler sets);
    * save every ``save_every_s`` seconds of wall time since the last save (``checkpoint_every_minutes``;
      :meth:`saved` restarts the count).

    One process: :meth:`decide` reads them after every step (the loop keeps at most ``max_steps_ahead`` steps
    queued, so the run stops within about that many step times of the limit or the signal). Several processes must
    act at the same step (a checkpoint is collective), so they decide at agreed steps only, in one collective
    (``broadcast``, default ``multihost_utils.process_allgather``): each process sends ``[limit reached, next step
    to check, signal number, save due]``; the limit, the save and the next step are process 0's (its clock), the
    signal is any process's (a signal to one host stops them all, each with a checkpoint, at the same step). The
    next step is about ``sync_s`` seconds of process 0's measured step time ahead (sooner when less time is left
    before the limit), so a signal is acted on within about ``sync_s`` plus a step. (``broadcast`` may return one
    row, process 0's message, as ``broadcast_one_to_all`` does.)
    """

    def __init__(self, limit_s: float, elapsed_before: float = 0.0, *, process_count: int = 1, sync_s: float = 2.0,
                 broadcast=None, clock=time.perf_counter, signals=None, save_every_s: float = 0.0):
        self.limit = float(limit_s or 0.0)
        self.before = float(elapsed_before)
        self.process_count = int(process_count)
        self.sync_s = float(sync_s)
        self.save_every = float(save_every_s or 0.0)
        self._signals = signals
        self._broadcast = broadcast
        self._clock = clock
        self._t0 = self._saved = clock()
        self._next = None  # next step at which the processes agree (None: the first step checked)
        self._last = None  # (step, clock) of the last agreement

    def elapsed(self) -> float:
        return self.before + self._clock() - self._t0

    def used_up(self) -> bool:
        """The limit was reached by earlier runs (every process reads the same ``elapsed_before``)."""
        return self.limit > 0 and self.before >= self.limit

    def saved(self) -> None:
        """A checkpoint was saved now: the time-based interval starts again."""
        self._saved = self._clock()

    def over(self, step: int) -> bool:
        """Whether the run stops after ``step`` (:meth:`decide`)."""
        return self.decide(step).stop is not None

    def decide(self, step: int) -> Decision:
        if self.limit <= 0 and self._signals is None and self.save_every <= 0:
            return CARRY_ON
        now = self._clock()
        local = self.limit > 0 and self.before + now - self._t0 >= self.limit
        signum = int(self._signals.signum) if self._signals is not None else 0
        save = self.save_every > 0 and now - self._saved >= self.save_every
        if self.process_count > 1:
            if self._next is not None and step < self._next:
                return CARRY_ON
            step_s = (now - self._last[1]) / (step - self._last[0]) if self._last and step > self._last[0] else 0.0
            left = max(self.limit - (self.before + now - self._t0), 0.0) if self.limit > 0 else math.inf
            ahead = max(1, int(min(self.sync_s, left) / step_s)) if step_s > 0 else 1
            broadcast = self._broadcast
            if broadcast is None:
                from jax.experimental import multihost_utils

                broadcast = multihost_utils.process_allgather
            rows = np.atleast_2d(np.asarray(_fetch(broadcast(np.asarray([int(local), step + ahead, signum, int(save)],
                                                                        np.int64)))))
            self._last = (step, now)
            self._next = int(rows[0, 1])
            local, save = bool(rows[0, 0]), bool(rows[0, 3]) if rows.shape[1] > 3 else False
            signum = int(rows[:, 2].max()) if rows.shape[1] > 2 else 0
        stop = "signal" if signum else ("time" if local else None)
        return Decision(stop, bool(save), signum)


def evaluate(eval_fn, state, config, mesh, *, limit: int, value: bool = False, stop=None, root=None) -> dict:
    """Top-1, top-4, nats and loss over the evaluation split of ``root`` (default ``config.dataset``; one dataset
    of a mixture) (``value``: and the value metrics of a two-headed net, module docstring): sums and counts,
    divided once.

    ``eval_fn``: ``data_parallel(summed(eval_step(...)), mesh, carry=True)``. Batches are read and put on the
    devices in a background thread (``config.input.prefetch`` ahead), the sums stay on the devices, and one copy
    brings them back at the end; a last partial batch is padded to the batch size (weight 0), so every batch has
    the same shape and the step compiles once. ``stop``: a callable read after every batch; when true the
    evaluation ends at once and returns ``{}`` (one process only: several would have to agree).
    """
    pc = jax.process_count()
    local = config.eval_batch_size // pc
    t0 = time.perf_counter()
    root = config.dataset if root is None else root
    batches = eval_batches(root, config.eval_split, batch_size=local, process_index=jax.process_index(),
                           process_count=pc, limit=limit, host_dtype=config.input.host_dtype,
                           add_planes=config.input.add_planes, profile=bool(config.model.get("profile_embedding")))
    prefetch = Prefetcher(batches, fn=lambda b: parallel.shard_batch(b, mesh), depth=config.input.prefetch)
    sums = parallel.empty_sums(mesh, value=value)
    inflight = _InFlight(config.max_steps_ahead)
    try:
        for batch in prefetch:
            sums = eval_fn(state, batch, sums)
            inflight.push(sums)
            if stop is not None and pc == 1 and stop():
                return {}
    finally:
        prefetch.close()
    sums = {k: float(v) for k, v in _fetch(sums).items()}
    n = sums.get("count", 0.0)
    if n <= 0:
        return {}
    return {"loss": sums["loss_sum"] / n, "nats": sums["nats_sum"] / n, "top1": sums["top1_sum"] / n,
            "top4": sums["top4_sum"] / n, "eval_positions": n, **_finite(value_metrics(sums)),
            "seconds": time.perf_counter() - t0}


def _finite(metrics: dict) -> dict:
    """The metrics that are numbers (a value MSE over no known row is NaN: left out of the records)."""
    return {k: v for k, v in metrics.items() if math.isfinite(v)}


def _value_text(rec: dict) -> str:
    """`` value mse 0.8123 (baseline 0.9900) winner 61.20%`` for a record with value metrics, else ``''``."""
    if "value_known" not in rec:
        return ""
    if "value_mse" not in rec:
        return " value: no known results"
    base = f" (constant {rec['value_baseline_mse']:.4f})" if "value_baseline_mse" in rec else ""
    win = f" winner {100 * rec['winner_acc']:.2f}%" if "winner_acc" in rec else ""
    return f" value mse {rec['value_mse']:.4f}{base}{win}"


def _check_config(config, mesh) -> None:
    if not config.dataset:
        raise ValueError("config.dataset is empty: give a dataset built by `kifunet build` "
                         "(--config.dataset=DIR)")
    roots = mixture.split_datasets(config.dataset)
    if len(roots) > 1 or config.input.get("mix_weights", ""):  # the weights' count and signs, before any reading
        mixture.row_weights(config.input.get("mix_weights", ""), [1] * len(roots))
    n, pc = mesh.size, jax.process_count()
    for name in ("batch_size", "eval_batch_size"):
        b = config[name]
        if b % n or b % pc:
            raise ValueError(f"{name}={b} must divide by the device count {n} and the process count {pc}")
    if config.train_positions <= 0:
        raise ValueError("train_positions must be positive")


def _write_config(config, workdir: str, extra: dict | None = None) -> None:
    """``config.json``, atomically (a reader never sees half a file); ``extra`` keys added beside the config's
    (``dataset_history`` once a run changed datasets: :mod:`kifunet.train.run_dataset`)."""
    import json

    path = os.path.join(workdir, "config.json")
    text = config.to_json_best_effort(indent=2, sort_keys=True)
    if extra:
        text = json.dumps({**json.loads(text), **extra}, indent=2, sort_keys=True)
    atomic.write_text_atomic(path, text + "\n", suffix=f".tmp-{os.getpid()}")


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
    """Train (resuming from ``workdir`` if it holds a checkpoint), evaluate, checkpoint. Returns the final
    evaluation metrics (empty without an evaluation split) plus ``step`` and ``positions``.

    ``workdir/config.json`` is written once this run's first checkpoint is on disk: a run that fails before
    it leaves no ``config.json``, so it is not taken for a run (:func:`kifunet.train.nets.is_run_dir`), and a
    resume that fails (another config) leaves the run's own ``config.json`` as it was.

    Raises :class:`kifunet.train.run_lock.RunInUse` when another trainer holds ``workdir``,
    :class:`kifunet.train.memory.DoesNotFit` when the batch and model cannot fit in memory (CPU), and
    :class:`kifunet.train.preemption.Preempted` after SIGTERM or SIGINT stopped the run (its checkpoint on disk;
    signal handlers are installed for the duration of this call only, in the main thread)."""
    parallel.initialize_distributed()
    mesh = parallel.make_mesh(config.num_devices)
    _check_config(config, mesh)
    workdir = store.resolve(workdir)  # a local folder or a bucket URL (gs://...)
    # the lock before the checkpoint manager, which deletes the unfinished temporaries of whoever else writes there
    with run_lock.RunLock(workdir, jax.process_index(), log=_log), preemption.Signals() as signals:
        return _open_and_train(config, workdir, mesh, signals)


def _open_and_train(config, workdir: str, mesh, signals) -> dict:
    B = config.batch_size
    ckpt_dir = os.path.join(workdir, "checkpoints")
    made_dir = not store.isdir(ckpt_dir)  # orbax makes it now; a run that fails before its first save removes it
    ckpt = checkpointing.Checkpointer(ckpt_dir, keep=config.keep_checkpoints, async_save=config.async_checkpoints)
    try:
        # verified newest first; a damaged step is set aside, in a line of its own (kifunet.train.checkpointing)
        latest = ckpt.newest_intact_step(log=lambda msg: _log(f"kifunet train: {msg}"))
        history = [{"step": 0, "dataset": config.dataset}]
        if latest is not None:  # the same datasets as the run's, or refused (kifunet.train.run_dataset)
            history = run_dataset.check_resume(config, run_dataset.read_meta(ckpt.step_dir(latest)), workdir=workdir,
                                               step=latest, log=_log)
        if latest is not None:  # the first line says so: rerunning a command on a workdir continues its run
            _log(f"kifunet train: resuming from step {latest:,} ({latest * B:,} positions) in {workdir}; "
                 f"another --workdir starts a new run")
        result = _train(config, workdir, mesh, ckpt, latest, signals, history)
    except BaseException as e:
        if checkpointing.storage_fault(e) is None:
            ckpt.close()  # the pending save finishes (a preempted run's checkpoint); its failure is the one reported
            raise
        try:  # a failed save, already reported by this error: orbax raises it once more on closing
            ckpt.close()
        except Exception:  # noqa: BLE001
            pass
        raise
    else:
        ckpt.close()  # the last save and its sidecar: a storage fault raises here, in one line
        return result
    finally:
        if made_dir:
            try:
                os.rmdir(ckpt_dir)  # only when empty: no checkpoint was written (another host may be first)
            except OSError:
                pass


def _train(config, workdir: str, mesh, ckpt, latest: int | None, signals, history: list[dict]) -> dict:
    pidx, pc = jax.process_index(), jax.process_count()
    roots = mixture.split_datasets(config.dataset)
    if len(roots) > 1:  # a mixture (kifunet.train.mixture): facts of the first, rows of all, one layout
        mixture.check_compatible(roots, config.train_split, config.input.add_planes)
        infos = [input_pipeline.describe(r, config.train_split, config.input.add_planes) for r in roots]
        if config.eval_split:  # each dataset keeps its own evaluation split: a missing one fails now, not later
            for r in roots:
                input_pipeline.describe(r, config.eval_split, config.input.add_planes)
        info = {**infos[0], "rows": sum(i["rows"] for i in infos)}
        mix = mixture.row_weights(config.input.get("mix_weights", ""), [i["rows"] for i in infos])
        mix_text = " (" + "; ".join(f"{r}: {i['rows']:,} rows, weight {w:.3f}"
                                    for r, i, w in zip(roots, infos, mix)) + ")"
    else:
        info = input_pipeline.describe(config.dataset, config.train_split, config.input.add_planes)
        mix_text = ""
    if config.expect_features and info["features"] != config.expect_features:
        raise ValueError(f"config expects a dataset built with --features {config.expect_features}; "
                         f"{config.dataset} has {info['features']}")
    model_def, tx, schedule, state, model = setup(config, board_size=info["board_size"],
                                                  in_planes=info["num_planes"], mesh=mesh)
    default_planes = models.default_in_planes(config.model.name)
    nparams = models.count_params(model)
    del model
    B = config.batch_size
    total_steps = math.ceil(config.train_positions / B)
    log_every = max(1, config.log_every_steps)
    eval_every = _every(config.eval_every_positions, B) if config.eval_split else 0
    ckpt_every = _every(config.checkpoint_every_positions, B)
    train_fn = train_function(config, model_def, tx, schedule, mesh)
    eval_fn = parallel.data_parallel(
        summed(eval_step(model_def, loss=config.loss, matmul_precision=config.get("matmul_precision", "default"))),
        mesh, carry=True)
    mem = _fit_memory(train_fn, state, config, mesh, info, value=model_def.has_value)

    elapsed_before = 0.0
    data_state = None
    restored = None
    while latest is not None and restored is None:  # an unsealed step is checked as it is restored, then sealed
        try:
            restored = ckpt.restore(latest, state, log=lambda msg: _log(f"kifunet train: {msg}"))
        except checkpointing.UnsealedStepFailed as e:  # set aside; the step before it, or CheckpointError
            latest = ckpt.set_aside_failed(e, log=lambda msg: _log(f"kifunet train: {msg}"))
        except (ValueError, KeyError) as e:
            why = (str(e).splitlines() or [""])[0][:160]
            raise ValueError(f"{ckpt.directory}/{latest} does not match this config's model and optimizer state "
                             f"({type(e).__name__}: {why}); resume with the config that wrote it, or start a new "
                             f"workdir (--config.init_from takes the weights only)") from e
    if restored is not None:
        state, data_state, meta = restored
        saved = (meta.get("batch_size"), meta.get("processes"))
        if saved != (B, pc):
            raise ValueError(f"{ckpt.directory}/{latest} was written with batch_size {saved[0]} on {saved[1]} "
                             f"process(es); resuming needs the same (this run: {B} on {pc}). To start a new run "
                             f"from its weights, use another workdir and --config.init_from")
        elapsed_before = float(meta.get("train_seconds", 0.0))
    elif config.init_from:
        state, meta = _apply_init_from(state, config.init_from, mesh)
        _log(f"initial weights from {config.init_from} (step {meta.get('step', '?')})")
    start = int(_fetch(state["step"]))

    train_iter = input_pipeline.train_iterator(
        config.dataset, config.train_split, batch_size=B // pc, seed=config.seed, process_index=pidx,
        process_count=pc, symmetry=config.input.symmetry, history=config.input.history_dropout,
        history_p=config.input.history_p, keep_probs=tuple(config.input.history_keep_probs),
        window_blocks=config.input.window_blocks, block_rows=config.input.block_rows,
        workers=config.input.workers, host_dtype=config.input.host_dtype, add_planes=config.input.add_planes,
        profile=bool(config.model.get("profile_embedding")), profile_dropout=config.input.get("profile_dropout", 0.0),
        mix_weights=config.input.get("mix_weights", ""))
    prefetch = writer = None
    try:
        if data_state is not None:
            train_iter.set_state(data_state)
        writer = metric_writer.MetricWriter(workdir, enabled=pidx == 0)
        if latest is not None:
            writer.truncate_after(latest)
        head = f", value head: weight {config.value_weight:g}" if model_def.has_value else ""
        _log(f"kifunet train: model {config.model.name} ({nparams:,} parameters, {info['num_planes']} planes"
             f"{'' if default_planes == info['num_planes'] else f'; its default is {default_planes}'}{head}), "
             f"{mesh.size} device(s) x {pc} process(es), batch {B}, {info['rows']:,} training rows{mix_text}, "
             f"{total_steps:,} steps = {total_steps * B:,} positions, {memory.text(mem)}")
        prefetch = Prefetcher(train_iter, fn=lambda b: parallel.shard_batch(b, mesh), depth=config.input.prefetch)
        return _loop(config, workdir, mesh, ckpt, writer, prefetch, train_fn, eval_fn, state, start=start,
                     total_steps=total_steps, log_every=log_every, eval_every=eval_every, ckpt_every=ckpt_every,
                     elapsed_before=elapsed_before, info=info, value=model_def.has_value, signals=signals,
                     history=history)
    except BaseException:
        if writer is not None:  # a full disk fails here too: the error already raised is the one reported
            try:
                writer.close()
            except OSError:
                pass
            writer = None
        raise
    finally:
        if prefetch is not None:
            prefetch.close()
        train_iter.close()
        if writer is not None:
            writer.close()


def _fit_memory(train_fn, state, config, mesh, info, *, value: bool) -> dict:
    """Compile the train step for the global batch's shapes (the loop's first step reuses this compilation),
    estimate this process's memory from it, and refuse a run that cannot fit (:mod:`kifunet.train.memory`)."""
    batch = memory.abstract_batch(config, mesh, board_size=info["board_size"], num_planes=info["num_planes"])
    compiled = train_fn.lower(state, batch, parallel.empty_window(mesh, value=value)).compile()
    rows = max(input_pipeline.block_source(r, config.train_split, config.input.block_rows,
                                           config.input.add_planes).block_rows
               for r in (mixture.split_datasets(config.dataset) or [config.dataset]))
    est = memory.estimate(compiled, config, mesh, board_size=info["board_size"], num_planes=info["num_planes"],
                          block_rows=rows)
    memory.check(est, config, model=config.model.name)
    return est


def _loop(config, workdir, mesh, ckpt, writer, prefetch, train_fn, eval_fn, state, *, start, total_steps,
          log_every, eval_every, ckpt_every, elapsed_before, info, value=False, signals=None, history=None) -> dict:
    """The training loop proper: dispatch steps, fetch a metric window once per interval, evaluate, save; stop at
    the end, the time limit or a signal (``signals``: :class:`kifunet.train.preemption.Signals`, then raising
    :class:`kifunet.train.preemption.Preempted` once the checkpoint is saved)."""
    pidx, pc = jax.process_index(), jax.process_count()
    B = config.batch_size
    history = history or [{"step": 0, "dataset": config.dataset}]
    dataset_ids = run_dataset.identities(config.dataset, config.train_split)

    def meta_for(step: int, train_s: float) -> dict:
        return {"step": step, "positions": step * B, "train_seconds": train_s, "model": config.model.name,
                "dataset": config.dataset, "dataset_ids": dataset_ids, "dataset_history": history,
                "feature_set": info["features"], "board_size": int(info["board_size"]),
                "batch_size": B, "processes": pc, "devices": mesh.size}

    zero_window = parallel.empty_window(mesh, value=value)  # never donated: reused at every window start
    window = zero_window
    host = {"t": time.perf_counter(), "wait": 0.0, "steps": 0, "skip": 0}  # this log window, host side
    inflight = _InFlight(config.max_steps_ahead)
    clock = StopClock(config.time_limit_s, elapsed_before, process_count=pc, signals=signals,
                      save_every_s=60.0 * config.checkpoint_every_minutes)
    config_written = False
    step = start
    last_eval = {}

    def flush_log(s: int, m: dict) -> None:
        now = time.perf_counter()
        dt = now - host["t"]
        n = max(float(m["count"]), 1.0)
        wait = prefetch.wait_s - host["wait"]
        timed = host["steps"] - host["skip"]
        rec = {"positions": s * B, "loss": float(m["loss_sum"]) / n, "nats": float(m["nats_sum"]) / n,
               "top1": float(m["top1_sum"]) / n, "top4": float(m["top4_sum"]) / n,
               **{k: float(m[k]) for k in LAST_METRICS + MAX_METRICS}}
        train_value = _finite(value_metrics(m))
        train_value.pop("value_baseline_mse", None)  # the baseline is the evaluation split's (module docstring)
        rec.update(train_value)
        if timed > 0 and dt > 0:  # (a window holding only the compiling first step has no rate)
            rec["positions_per_s"] = timed * B / dt
            rec["data_wait_fraction"] = wait / dt
        writer.write("train", s, rec)
        rate = rec.get("positions_per_s", 0.0)
        eta = (total_steps - s) * B / rate if rate > 0 else float("nan")
        if clock.limit:  # the run stops at the time limit if that comes first
            left = clock.limit - clock.elapsed()
            eta = min(eta, max(left, 0.0)) if math.isfinite(eta) else max(left, 0.0)
        speed = (f"{rate:,.0f} pos/s, data wait {100 * rec['data_wait_fraction']:.1f}%" if rate > 0
                 else "compiling")
        _log(f"step {s:,}/{total_steps:,} ({s * B:,} positions, {100 * s / total_steps:.1f}%) "
             f"loss {rec['loss']:.4f} top1 {100 * rec['top1']:.2f}% top4 {100 * rec['top4']:.2f}%"
             f"{_value_text(rec)} | grad {rec['grad_norm']:.3g} (max {rec['grad_norm_max']:.3g}) "
             f"|logit| max {rec['logit_abs_max']:.3g} | {speed} | "
             f"ETA {_fmt_time(eta) if math.isfinite(eta) else '?'}")
        host.update(t=now, wait=prefetch.wait_s, steps=0, skip=0)

    # a signal ends an evaluation at once (one process); the loop then stops at the next step, or after the final
    # evaluation (its checkpoint is saved) raises Preempted all the same
    signalled = (lambda: bool(signals.signum)) if signals is not None and pc == 1 else None

    roots = mixture.split_datasets(config.dataset)

    def do_eval(s: int, limit: int) -> dict:
        if len(roots) > 1:  # a mixture: each dataset's own split; the record's keys are the first one's
            by = {}
            for r in roots:
                one = evaluate(eval_fn, state, config, mesh, limit=limit, value=value, stop=signalled, root=r)
                if not one and signalled is not None and signalled():
                    by = {}
                    break
                by[r] = one
            res = {**by[roots[0]], "by_dataset": by} if by and by[roots[0]] else {}
        else:
            res = evaluate(eval_fn, state, config, mesh, limit=limit, value=value, stop=signalled)
        if res:
            writer.write("eval", s, {"positions": s * B, **res})
            for r, one in (res["by_dataset"].items() if "by_dataset" in res else [(None, res)]):
                if not one:
                    continue
                _log(f"eval at step {s:,} on {int(one['eval_positions']):,} {config.eval_split} positions"
                     f"{f' of {r}' if r else ''}: top1 {100 * one['top1']:.2f}% top4 {100 * one['top4']:.2f}% "
                     f"nats {one['nats']:.4f}{_value_text(one)} ({one['seconds']:.1f} s)")
        # the evaluation's time is not training time: do not charge it to the log window's rate
        if res:
            host["t"] += sum(one.get("seconds", 0.0) for one in res["by_dataset"].values()) \
                if "by_dataset" in res else res.get("seconds", 0.0)
        return res

    def save(s: int) -> None:
        nonlocal config_written
        ckpt.save(s, state, prefetch.state, meta_for(s, clock.elapsed()))
        clock.saved()
        if not config_written:  # this run's first checkpoint: on disk before config.json names the run
            ckpt.wait()
            if pidx == 0:
                _write_config(config, workdir, {"dataset_history": history} if len(history) > 1 else None)
            config_written = True

    if clock.used_up() and step < total_steps:
        _log(f"time limit {clock.limit:.0f} s already used ({elapsed_before:.0f} s trained): no more steps; "
             f"raise --config.time_limit_s to continue this run")
    else:
        while step < total_steps:
            batch = next(prefetch)  # already on the devices (the prefetch thread put it there)
            state, window = train_fn(state, batch, window)  # state donated; the window stays on the devices
            step += 1
            if signals is not None:
                signals.step = step  # a signal's line names the step it came at
            host["steps"] += 1
            if step == start + 1:  # the first step compiles: keep it out of the throughput figures
                jax.block_until_ready(window)
                host.update(t=time.perf_counter(), wait=prefetch.wait_s, skip=1)
            inflight.push(window)
            boundary = step == total_steps
            log_now = step % log_every == 0 or boundary
            eval_now = bool(eval_every) and step % eval_every == 0 and not boundary
            decided = clock.decide(step) if not boundary else CARRY_ON  # host clock and signal flag: no copy
            stop = decided.stop
            ckpt_now = (bool(ckpt_every) and step % ckpt_every == 0) or boundary or decided.save or bool(stop)
            if not (log_now or eval_now or ckpt_now):
                continue
            m = _fetch(window)  # the one copy of this interval; no checkpoint may hold a non-finite step
            if int(m["first_bad"]):
                raise NonFiniteLoss(int(m["first_bad"]), float(m["bad_loss"]))
            if log_now or stop:
                flush_log(step, m)
                window = zero_window
            if eval_now and not stop:
                last_eval = do_eval(step, config.eval_positions)
            if ckpt_now:
                save(step)
            if stop == "signal":  # saved (train_and_evaluate waits for it to be on disk); no final evaluation
                at = signals.at if signals is not None and signals.at is not None else time.monotonic()
                raise preemption.Preempted(decided.signum, step, signals.signal_step if signals else None, at)
            if stop == "time":
                _log(f"time limit {clock.limit:.0f} s reached at step {step:,}")
                break
    if step == start and start > 0 and not clock.used_up():
        _log(f"nothing to do: the checkpoint is at step {start:,} of {total_steps:,}")
    if config.eval_split:
        last_eval = do_eval(step, config.final_eval_positions)
    if config.eval_split and signalled is not None and signalled():
        # the signal cut the final evaluation short: the last checkpoint is on disk, and a rerun evaluates
        raise preemption.Preempted(signals.signum, step, signals.signal_step, signals.at)
    return {"step": step, "positions": step * B, **last_eval}


__all__ = ["NonFiniteLoss", "StopClock", "evaluate", "setup", "train_and_evaluate"]
