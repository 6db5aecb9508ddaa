"""``train_and_evaluate(config, workdir)``: the training loop (one host or many, one device or many), in the
order of big_vision's trainer: processes and mesh, run lock and signals, data, model and memory check, resume,
input, loop. Files in ``WORKDIR``: ``config.json``, ``checkpoints/``, ``metrics_*.jsonl``, ``tensorboard/``,
``train.lock``; docs/training.md describes them."""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import time

import jax
import jax.numpy as jnp
import ml_collections
from kifunet.train.configs import ConfigError

from kifunet import models
from kifunet.data_prep.fileio import atomic, store
from kifunet.train import (checkpointing, evaluation, input_pipeline, memory, metric_writer, mixture, model_config,
                           optim, parallel, preemption, run_dataset, run_lock)
from kifunet.train.data import TrainData
from kifunet.train.dispatch import InFlight, fetch
from kifunet.train.prefetch import Prefetcher
from kifunet.train.steps import (LAST_METRICS, MAX_METRICS, ModelDef, eval_step, head_metrics_of, summed, train_step,
                                 trained_heads, value_metrics, windowed)


class NonFiniteLoss(FloatingPointError):
    """The training loss became NaN or infinite; ``step`` is the 1-based step that produced it."""

    def __init__(self, step: int, value: float):
        super().__init__(f"non-finite training loss ({value}) at step {step}: stopping; the last checkpoint "
                         f"precedes this step")
        self.step, self.value = step, value


def _log(msg: str) -> None:
    if jax.process_index() == 0:
        print(msg, flush=True)


def setup(config, *, board_size: int, in_planes: int, mesh, flat_optimizer: bool | None = None,
          fused_norm_act: bool | None = None):
    """(model_def, optimizer, schedule, replicated initial state, model) for a config and data shape. The optimizer
    runs on the concatenated parameters (``flat_optimizer``) and GoNN's BatchNorms and activations have their
    hand-written backward pass (``fused_norm_act``; :mod:`kifunet.models.norm_act`); both by default unless
    ``mesh`` is a TPU's (see :func:`on_tpu`)."""
    model = model_config.build_model(config.model, seed=config.seed, board_size=board_size, in_planes=in_planes)
    for key, has, head in (("ownership_weight", model.facts.has_ownership, "ownership_head"),
                           ("score_weight", model.facts.has_score, "score_head")):
        if float(config.get(key, 0.0)) > 0 and not has:
            raise ConfigError(f"{key} {config.get(key)} needs a net with the head: a config that sets "
                             f"c.model.kwargs.{head} = True (AlphaGo Zero ResNets, GoNN and GARB have it)")
    model_def = ModelDef(model, config.batchnorm,
                         fused_norm_act=not on_tpu(mesh) if fused_norm_act is None else fused_norm_act)
    schedule = optim.make_schedule(config.schedule, config.batch_size, config.train_positions)
    tx = optim.make_optimizer(config.optimizer, schedule, params=model_def.params, model=model,
                              bn_paths=model_def.bn_paths,
                              flat=not on_tpu(mesh) if flat_optimizer is None else flat_optimizer)
    state = {"params": model_def.params, "extra": model_def.extra, "opt_state": tx.init(model_def.params),
             "step": jnp.zeros((), jnp.int32)}
    return model_def, tx, schedule, parallel.replicate(state, mesh), model


def on_tpu(mesh) -> bool:
    """Whether ``mesh`` is a TPU's (then norms and optimizer updates stay per array and BatchNorm is flax's:
    docs/accelerators.md)."""
    return mesh.devices.flat[0].platform == "tpu"


def train_function(config, model_def, tx, schedule, mesh):
    """The training loop's compiled step ``(state, batch, window) -> (state, window')``: the per-device
    :func:`~kifunet.train.steps.train_step` inside :func:`~kifunet.train.steps.windowed`, mapped over ``mesh`` with the
    state donated (what :mod:`kifunet.train.aot` compiles for other targets). Logged norms fused except on TPUs.
    """
    fused_norms = not on_tpu(mesh)
    return parallel.data_parallel(
        windowed(train_step(model_def, tx, schedule, loss=config.loss, value_weight=config.value_weight,
                            matmul_precision=config.get("matmul_precision", "default"), fused_norms=fused_norms,
                            ownership_weight=config.get("ownership_weight", 0.0),
                            score_weight=config.get("score_weight", 0.0))),
        mesh, donate_state=True, carry=True)


def _every(positions: int, batch: int) -> int:
    return max(1, math.ceil(positions / batch)) if positions > 0 else 0


def _apply_init_from(state, path: str, mesh):
    weights, meta = checkpointing.load_weights(path)
    flat = checkpointing.flatten_state({"params": state["params"], "extra": state["extra"]})
    missing = [k for k in flat if k not in weights]
    bad = [k for k in flat if k in weights and tuple(weights[k].shape) != tuple(flat[k].shape)]
    if missing or bad:
        raise checkpointing.CheckpointMismatch(f"init_from {path}: checkpoint does not fit this model "
                                               f"(missing {missing[:5]}, "
                         f"shape mismatch {bad[:5]})")
    part = checkpointing.unflatten_state({"params": state["params"], "extra": state["extra"]},
                                         {k: weights[k] for k in flat})
    part = parallel.replicate(part, mesh)
    return {**state, "params": part["params"], "extra": part["extra"]}, meta


def _check_config(config, mesh) -> None:
    if not config.dataset:
        raise ConfigError("config.dataset is empty: give a dataset built by `kifunet build` "
                         "(--config.dataset=DIR)")
    roots = mixture.split_datasets(config.dataset)
    if len(roots) > 1 or config.input.get("mix_weights", ""):  # the weights' count and signs, before any reading
        mixture.row_weights(config.input.get("mix_weights", ""), [1] * len(roots))
    n, pc = mesh.size, jax.process_count()
    for name in ("batch_size", "eval_batch_size"):
        b = config[name]
        if b % n or b % pc:
            raise ConfigError(f"{name}={b} must divide by the device count {n} and the process count {pc}")
    if config.train_positions <= 0:
        raise ConfigError("train_positions must be positive")


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
    """Train (resuming from ``workdir``), evaluate, checkpoint; returns the final evaluation metrics plus
    ``step`` and ``positions``. ``config.json`` is written with the run's first checkpoint. Raises
    :class:`kifunet.train.run_lock.RunInUse`, :class:`kifunet.train.memory.DoesNotFit` and
    :class:`kifunet.train.preemption.Preempted` (its checkpoint on disk)."""
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
    data = TrainData.open(config)  # every dataset and split the run reads, opened (and checked) once, here
    try:
        info = data.facts()
        if config.expect_features and info["features"] != config.expect_features:
            raise ConfigError(f"config expects a dataset built with --features {config.expect_features}; "
                             f"{config.dataset} has {info['features']}")
        net, state = _build(config, mesh, data)  # the initial state is not kept: a restored one replaces it
        latest, state, data_state, elapsed_before = _restore(config, ckpt, latest, state, mesh)
        return _feed_and_loop(config, workdir, mesh, ckpt, data, net, state, data_state,
                              Resume(latest, int(fetch(state["step"])), elapsed_before, history), signals)
    finally:
        data.close()


@dataclasses.dataclass(frozen=True, eq=False)
class Net:
    """The model of a run (:func:`setup`), its compiled steps and memory estimate (:func:`_build`), the heads it
    trains (:func:`~kifunet.train.steps.trained_heads`: their figures in the records)."""

    model_def: ModelDef
    train_fn: object
    eval_fn: object
    nparams: int
    memory: dict
    heads: tuple = ()


@dataclasses.dataclass(frozen=True)
class Resume:
    """Where a run starts: the checkpoint resumed (``None``: none), its step, the training time before it, the
    ``dataset_history`` to record (:mod:`kifunet.train.run_dataset`)."""

    latest: int | None
    start: int
    elapsed_before: float
    history: list


def _build(config, mesh, data: TrainData) -> tuple[Net, dict]:
    """The model, optimizer and initial replicated state for ``data``'s planes and board size, the compiled train
    and eval steps, and the memory estimate (a run that cannot fit is refused here: :func:`_fit_memory`)."""
    info = data.facts()
    model_def, tx, schedule, state, model = setup(config, board_size=info["board_size"],
                                                  in_planes=info["num_planes"], mesh=mesh)
    nparams = models.count_params(model)
    del model
    heads = trained_heads(config.get("ownership_weight", 0.0), config.get("score_weight", 0.0))
    train_fn = train_function(config, model_def, tx, schedule, mesh)
    eval_fn = parallel.data_parallel(
        summed(eval_step(model_def, loss=config.loss, matmul_precision=config.get("matmul_precision", "default"),
                         heads=heads)),
        mesh, carry=True)
    mem = _fit_memory(train_fn, state, config, mesh, data, value=model_def.has_value, heads=heads)
    return Net(model_def, train_fn, eval_fn, nparams, mem, heads), state


def _restore(config, ckpt, latest: int | None, state, mesh):
    """(step restored or None, state, input pipeline state or None, training seconds before) from the newest intact
    checkpoint (``latest``, or the one before it when ``latest`` fails its check and is set aside), else
    ``config.init_from`` (weights only), else the initial ``state``."""
    restored = None
    while latest is not None and restored is None:  # an unsealed step is checked as it is restored, then sealed
        try:
            restored = ckpt.restore(latest, state, log=lambda msg: _log(f"kifunet train: {msg}"))
        except checkpointing.UnsealedStepFailed as e:  # set aside; the step before it, or CheckpointError
            latest = ckpt.set_aside_failed(e, log=lambda msg: _log(f"kifunet train: {msg}"))
        except (ValueError, KeyError) as e:
            why = (str(e).splitlines() or [""])[0][:160]
            raise checkpointing.CheckpointMismatch(f"{ckpt.directory}/{latest} does not match this config's "
                                                   f"model and optimizer state "
                             f"({type(e).__name__}: {why}); resume with the config that wrote it, or start a new "
                             f"workdir (--config.init_from takes the weights only)") from e
    if restored is not None:
        state, data_state, meta = restored
        saved, pc = (meta.get("batch_size"), meta.get("processes")), jax.process_count()
        if saved != (config.batch_size, pc):
            raise checkpointing.CheckpointMismatch(f"{ckpt.directory}/{latest} was written with batch_size "
                                                   f"{saved[0]} on {saved[1]} "
                             f"process(es); resuming needs the same (this run: {config.batch_size} on {pc}). To "
                             f"start a new run from its weights, use another workdir and --config.init_from")
        return latest, state, data_state, float(meta.get("train_seconds", 0.0))
    if config.init_from:
        state, meta = _apply_init_from(state, config.init_from, mesh)
        _log(f"initial weights from {config.init_from} (step {meta.get('step', '?')})")
    return latest, state, None, 0.0


def _feed_and_loop(config, workdir, mesh, ckpt, data, net: Net, state, data_state, resume: Resume, signals) -> dict:
    """Start the input pipeline (at the checkpoint's position), the metric writer and the prefetch to the devices,
    run :func:`_loop`, and stop them all whatever happens."""
    pc = jax.process_count()
    train_iter = input_pipeline.train_iterator(data, config.input, batch_size=config.batch_size // pc,
                                               seed=config.seed, process_index=jax.process_index(),
                                               process_count=pc)
    prefetch = writer = None
    try:
        if data_state is not None:
            train_iter.set_state(data_state)
        writer = metric_writer.MetricWriter(workdir, enabled=jax.process_index() == 0)
        if resume.latest is not None:
            writer.truncate_after(resume.latest)
        _log(_headline(config, mesh, data, net))
        prefetch = Prefetcher(train_iter, fn=lambda b: parallel.shard_batch(b, mesh), depth=config.input.prefetch)
        run = Run.create(config, workdir, mesh, ckpt, writer, prefetch, data, net, resume, signals)
        return _loop(run, LoopState(state, resume.start, run.zero_window, time.perf_counter(), 0.0))
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


def _headline(config, mesh, data: TrainData, net: Net) -> str:
    """The run's first line: the model, its planes, the devices, the batch, the data, the steps, the memory."""
    info, B = data.facts(), config.batch_size
    total_steps = math.ceil(config.train_positions / B)
    default_planes = models.default_in_planes(config.model.name)
    head = f", value head: weight {config.value_weight:g}" if net.model_def.has_value else ""
    return (f"kifunet train: model {config.model.name} ({net.nparams:,} parameters, {info['num_planes']} planes"
            f"{'' if default_planes == info['num_planes'] else f'; its default is {default_planes}'}{head}), "
            f"{mesh.size} device(s) x {jax.process_count()} process(es), batch {B}, {info['rows']:,} training rows"
            f"{data.mix_text()}, {total_steps:,} steps = {total_steps * B:,} positions, {memory.text(net.memory)}")


def _fit_memory(train_fn, state, config, mesh, data: TrainData, *, value: bool, heads: tuple = ()) -> dict:
    """Compile the train step for the global batch's shapes (the loop's first step reuses this compilation),
    estimate this process's memory from it, and refuse a run that cannot fit (:mod:`kifunet.train.memory`)."""
    info = data.facts()
    batch = memory.abstract_batch(config, mesh, board_size=info["board_size"], num_planes=info["num_planes"])
    compiled = train_fn.lower(state, batch, parallel.empty_window(mesh, value=value, heads=heads)).compile()
    est = memory.estimate(compiled, config, mesh, board_size=info["board_size"], num_planes=info["num_planes"],
                          block_rows=data.block_rows())
    memory.check(est, config, model=config.model.name)
    return est


@dataclasses.dataclass(frozen=True, eq=False)
class Run:
    """What the training loop reads and never changes: the config and the intervals in steps derived from it, the
    run's objects (checkpointer, metric writer, prefetched input, compiled steps, datasets, stop clock, signals)
    and what each checkpoint records about the data."""

    config: ml_collections.ConfigDict
    workdir: str
    mesh: object
    ckpt: object
    writer: metric_writer.MetricWriter
    prefetch: Prefetcher
    net: Net
    data: TrainData
    clock: preemption.StopClock
    signals: preemption.Signals | None
    history: list
    dataset_ids: list
    start: int
    total_steps: int
    log_every: int
    eval_every: int
    ckpt_every: int
    zero_window: dict  # never donated: reused at every window start

    @classmethod
    def create(cls, config, workdir, mesh, ckpt, writer, prefetch, data, net, resume: Resume, signals) -> "Run":
        B = config.batch_size
        clock = preemption.StopClock(config.time_limit_s, resume.elapsed_before, process_count=jax.process_count(),
                                     signals=signals, save_every_s=60.0 * config.checkpoint_every_minutes)
        return cls(config, workdir, mesh, ckpt, writer, prefetch, net, data, clock, signals, resume.history,
                   run_dataset.identities(config.dataset, config.train_split), resume.start,
                   math.ceil(config.train_positions / B), max(1, config.log_every_steps),
                   _every(config.eval_every_positions, B) if config.eval_split else 0,
                   _every(config.checkpoint_every_positions, B),
                   parallel.empty_window(mesh, value=net.model_def.has_value, heads=net.heads))

    def eval_stop(self):
        """What ends an evaluation at once: a signal (one process; several would have to agree), else None."""
        signals = self.signals
        return (lambda: bool(signals.signum)) if signals is not None and jax.process_count() == 1 else None


@dataclasses.dataclass
class LoopState:
    """What the training loop changes on the host: the replicated train state (donated at every step), the step,
    the metric window on the devices, and the host side of the log window (when it started, the prefetch's wait
    then, its steps and how many of them are not timed: the compiling first step)."""

    state: dict
    step: int
    window: dict
    log_t: float
    log_wait: float
    log_steps: int = 0
    log_skip: int = 0
    config_written: bool = False
    last_eval: dict = dataclasses.field(default_factory=dict)


class Due(collections.namedtuple("Due", "log eval save stop signum")):
    """What is due after a step: a log line, an evaluation, a checkpoint, a stop ('time', 'signal' or None) and
    the stopping signal (0 for none)."""


def _loop(run: Run, st: LoopState) -> dict:
    """The training loop proper: dispatch steps, fetch a metric window once per interval, evaluate, save; stop at
    the end, the time limit or a signal (then raising :class:`kifunet.train.preemption.Preempted` once the
    checkpoint is saved)."""
    if run.clock.used_up() and st.step < run.total_steps:
        _log(f"time limit {run.clock.limit:.0f} s already used ({run.clock.before:.0f} s trained): no more steps; "
             f"raise --config.time_limit_s to continue this run")
    else:
        inflight = InFlight(run.config.max_steps_ahead)
        while st.step < run.total_steps:
            _dispatch(run, st, inflight)
            due = _due(run, st.step)
            if due is None:
                continue
            m = fetch(st.window)  # the one copy of this interval; no checkpoint may hold a non-finite step
            if int(m["first_bad"]):
                raise NonFiniteLoss(int(m["first_bad"]), float(m["bad_loss"]))
            if due.log or due.stop:
                _log_window(run, st, m)
            if due.eval and not due.stop:
                st.last_eval = _evaluate(run, st, run.config.eval_positions)
            if due.save:
                _save(run, st)
            if due.stop == "signal":  # saved (train_and_evaluate waits for it to be on disk); no final evaluation
                raise preemption.preempted(run.signals, due.signum, st.step)
            if due.stop == "time":
                _log(f"time limit {run.clock.limit:.0f} s reached at step {st.step:,}")
                break
    return _finish(run, st)


def _dispatch(run: Run, st: LoopState, inflight: InFlight) -> None:
    """One step: the next batch (already on the devices) through the train step; the state is donated, the window
    stays on the devices, and the host waits only when ``max_steps_ahead`` steps are queued."""
    batch = next(run.prefetch)
    st.state, st.window = run.net.train_fn(st.state, batch, st.window)
    st.step += 1
    if run.signals is not None:
        run.signals.step = st.step  # a signal's line names the step it came at
    st.log_steps += 1
    if st.step == run.start + 1:  # the first step compiles: keep it out of the throughput figures
        jax.block_until_ready(st.window)
        st.log_t, st.log_wait, st.log_skip = time.perf_counter(), run.prefetch.wait_s, 1
    inflight.push(st.window)


def _due(run: Run, step: int) -> Due | None:
    """What ``step`` calls for, from the step count, the host clock and the signal flag (no device copy); None when
    nothing."""
    boundary = step == run.total_steps
    log = step % run.log_every == 0 or boundary
    ev = bool(run.eval_every) and step % run.eval_every == 0 and not boundary
    decided = run.clock.decide(step) if not boundary else preemption.CARRY_ON
    save = (bool(run.ckpt_every) and step % run.ckpt_every == 0) or boundary or decided.save or bool(decided.stop)
    if not (log or ev or save):
        return None
    return Due(log, ev, save, decided.stop, decided.signum)


def _log_window(run: Run, st: LoopState, m: dict) -> None:
    """The log window's record (JSON line, TensorBoard, stdout line); a new window starts."""
    now = time.perf_counter()
    rec = _train_record(run, st, m, now - st.log_t)
    run.writer.write("train", st.step, rec)
    _log(metric_writer.progress_line(st.step, run.total_steps, run.config.batch_size, rec, _eta(run, st.step, rec)))
    st.log_t, st.log_wait, st.log_steps, st.log_skip = now, run.prefetch.wait_s, 0, 0
    st.window = run.zero_window


def _train_record(run: Run, st: LoopState, m: dict, dt: float) -> dict:
    """The training record of a fetched metric window ``m`` that took ``dt`` seconds of wall time."""
    B = run.config.batch_size
    n = max(float(m["count"]), 1.0)
    wait = run.prefetch.wait_s - st.log_wait
    timed = st.log_steps - st.log_skip
    rec = {"positions": st.step * B, "loss": float(m["loss_sum"]) / n, "nats": float(m["nats_sum"]) / n,
           "top1": float(m["top1_sum"]) / n, "top4": float(m["top4_sum"]) / n,
           **{k: float(m[k]) for k in LAST_METRICS + MAX_METRICS}}
    train_value = evaluation.finite(value_metrics(m))
    train_value.pop("value_baseline_mse", None)  # the baseline is the evaluation split's (docs/training.md: value heads)
    rec.update(train_value)
    rec.update(evaluation.finite(head_metrics_of(m)))
    if timed > 0 and dt > 0:  # (a window holding only the compiling first step has no rate)
        rec["positions_per_s"] = timed * B / dt
        rec["data_wait_fraction"] = wait / dt
    return rec


def _eta(run: Run, step: int, rec: dict) -> float:
    """Seconds to the end of the run at the window's rate, or to the time limit if sooner (NaN: unknown)."""
    rate = rec.get("positions_per_s", 0.0)
    eta = (run.total_steps - step) * run.config.batch_size / rate if rate > 0 else float("nan")
    if run.clock.limit:  # the run stops at the time limit if that comes first
        left = run.clock.limit - run.clock.elapsed()
        eta = min(eta, max(left, 0.0)) if math.isfinite(eta) else max(left, 0.0)
    return eta


def _evaluate(run: Run, st: LoopState, limit: int) -> dict:
    """Evaluate every dataset of the run (:func:`kifunet.train.evaluation.evaluate_datasets`), write and print the
    record; a signal ends it at once (one process) and gives ``{}``."""
    res = evaluation.evaluate_datasets(run.net.eval_fn, st.state, run.config, run.mesh, run.data, limit=limit,
                                       value=run.net.model_def.has_value, heads=run.net.heads,
                                       stop=run.eval_stop())
    if res:
        run.writer.write("eval", st.step, {"positions": st.step * run.config.batch_size, **res})
        for root, one in (res["by_dataset"].items() if "by_dataset" in res else [(None, res)]):
            if one:
                _log(metric_writer.eval_line(st.step, run.config.eval_split, one, root))
        st.log_t += evaluation.seconds(res)  # the evaluation's time is not training time: not in the window's rate
    return res


def _save(run: Run, st: LoopState) -> None:
    """A checkpoint at this step (state, input position, metadata); the run's first also writes ``config.json``."""
    run.ckpt.save(st.step, st.state, run.prefetch.state, _meta(run, st.step))
    run.clock.saved()
    if not st.config_written:  # this run's first checkpoint: on disk before config.json names the run
        run.ckpt.wait()
        if jax.process_index() == 0:
            _write_config(run.config, run.workdir,
                          {"dataset_history": run.history} if len(run.history) > 1 else None)
        st.config_written = True


def _meta(run: Run, step: int) -> dict:
    """What a checkpoint at ``step`` records besides the state (:mod:`kifunet.train.run_dataset`)."""
    config, info = run.config, run.data.facts()
    return {"step": step, "positions": step * config.batch_size, "train_seconds": run.clock.elapsed(),
            "model": config.model.name, "dataset": config.dataset, "dataset_ids": run.dataset_ids,
            "dataset_history": run.history, "feature_set": info["features"], "board_size": int(info["board_size"]),
            "batch_size": config.batch_size, "processes": jax.process_count(), "devices": run.mesh.size}


def _finish(run: Run, st: LoopState) -> dict:
    """After the last step: the final evaluation and the result (a signal that cut it short: ``Preempted``)."""
    if st.step == run.start and run.start > 0 and not run.clock.used_up():
        _log(f"nothing to do: the checkpoint is at step {run.start:,} of {run.total_steps:,}")
    if run.config.eval_split:
        st.last_eval = _evaluate(run, st, run.config.final_eval_positions)
        stop = run.eval_stop()
        if stop is not None and stop():  # cut short by the signal: the last checkpoint is on disk, a rerun evaluates
            raise preemption.Preempted(run.signals.signum, st.step, run.signals.signal_step, run.signals.at)
    return {"step": st.step, "positions": st.step * run.config.batch_size, **st.last_eval}


__all__ = ["NonFiniteLoss", "setup", "train_and_evaluate", "train_function"]
