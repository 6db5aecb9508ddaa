"""``train_and_evaluate(config, workdir)``: the training loop (one host or many, one device or many).

Order of business, as in big_vision's trainer:

1. **Processes and mesh**: :func:`kifunet.train.parallel.initialize_distributed` (multi-host launchers), a
   1-D ``('data',)`` mesh over all devices; the global ``batch_size`` must divide by the device count and
   by the process count (each host feeds ``batch_size / hosts`` rows).
2. **Input**: :func:`kifunet.train.input_pipeline.train_iterator` on this host's share of the dataset,
   prefetched and put on the devices in a background thread.
3. **Model and optimizer**: ``kifunet.models.create`` with the dataset's planes and board size;
   :mod:`kifunet.train.optim`. State = ``{params, extra (BatchNorm statistics, RNG state), opt_state,
   step}``, replicated on every device.
4. **Resume** (big_vision's priority order): a checkpoint in ``WORKDIR/checkpoints`` (state, optimizer,
   step, positions, RNG and the input pipeline's position), else ``config.init_from`` (weights only), else
   from scratch.
5. **Loop**: the per-device step mapped by :func:`kifunet.train.parallel.data_parallel`; metrics of step
   *k* are read while step *k+1* runs. A non-finite loss stops the run with ``NonFiniteLoss`` naming the
   step (no checkpoint holds it). Every ``log_every_steps``: a JSON line and TensorBoard scalars (loss,
   nats, top-1, top-4, positions/s, fraction of wall time waiting for data, gradient / parameter / update
   norms, learning rate) and a progress line with ETA on stdout. Every ``eval_every_positions``: sums and
   counts over the evaluation split. Every ``checkpoint_every_positions`` and at the end: a checkpoint.
   ``time_limit_s`` ends the run early (checkpoint and final evaluation) after that much training time,
   counted across restarts.

Files in ``WORKDIR``: ``config.json`` (resolved config), ``checkpoints/``, ``metrics_train.jsonl``,
``metrics_eval.jsonl``, ``tensorboard/``. Only process 0 writes them (orbax coordinates the checkpoint).
"""

from __future__ import annotations

import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from flax import nnx

from kifunet import models
from kifunet.train import checkpointing, input_pipeline, metric_writer, optim, parallel


class NonFiniteLoss(FloatingPointError):
    """The training loss became NaN or infinite; ``step`` is the 1-based step that produced it."""

    def __init__(self, step: int, value: float):
        super().__init__(f"non-finite training loss ({value}) at step {step}: stopping; the last checkpoint "
                         f"precedes this step")
        self.step, self.value = step, value


DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def _log(msg: str) -> None:
    if jax.process_index() == 0:
        print(msg, flush=True)


def build_model(config, *, board_size: int, in_planes: int) -> nnx.Module:
    name = config.model.name
    if config.model.dtype not in DTYPES:
        raise ValueError(f"model.dtype must be one of {tuple(DTYPES)}, got {config.model.dtype!r}")
    kwargs = {}
    if config.model.dtype != "float32":
        kwargs["dtype"] = DTYPES[config.model.dtype]
    if config.model.rank_embedding:
        kwargs["rank_embedding"] = True
    overrides = config.model.get("kwargs")
    if overrides is not None:
        kwargs.update(overrides.to_dict())
    return models.create(name, board_size=board_size, in_planes=in_planes, rngs=nnx.Rngs(config.seed), **kwargs)


def setup(config, *, board_size: int, in_planes: int, mesh):
    """(model_def, optimizer, schedule, replicated initial state, model) for a config and data shape."""
    model = build_model(config, board_size=board_size, in_planes=in_planes)
    model_def = parallel.ModelDef(model, config.batchnorm)
    schedule = optim.make_schedule(config.schedule, config.batch_size, config.train_positions)
    tx = optim.make_optimizer(config.optimizer, schedule, params=model_def.params, model=model,
                              bn_paths=model_def.bn_paths)
    state = {"params": model_def.params, "extra": model_def.extra, "opt_state": tx.init(model_def.params),
             "step": jnp.zeros((), jnp.int32)}
    return model_def, tx, schedule, parallel.replicate(state, mesh), model


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


def evaluate(eval_fn, state, config, mesh, *, limit: int) -> dict:
    """Top-1, top-4, nats and loss over the evaluation split: sums and counts, divided once."""
    pc = jax.process_count()
    local = config.eval_batch_size // pc
    sums: dict[str, float] = {}
    t0 = time.perf_counter()
    for batch in input_pipeline.eval_batches(config.dataset, config.eval_split, batch_size=local,
                                             process_index=jax.process_index(), process_count=pc, limit=limit,
                                             host_dtype=config.input.host_dtype):
        out = jax.device_get(eval_fn(state, parallel.shard_batch(batch, mesh)))
        for k, v in out.items():
            sums[k] = sums.get(k, 0.0) + float(v)
    n = sums.get("count", 0.0)
    if n <= 0:
        return {}
    return {"loss": sums["loss_sum"] / n, "nats": sums["nats_sum"] / n, "top1": sums["top1_sum"] / n,
            "top4": sums["top4_sum"] / n, "eval_positions": n, "seconds": time.perf_counter() - t0}


def _check_config(config, mesh) -> None:
    if not config.dataset:
        raise ValueError("config.dataset is empty: give a dataset built by `kifunet build` "
                         "(--config.dataset=DIR)")
    n, pc = mesh.size, jax.process_count()
    for name in ("batch_size", "eval_batch_size"):
        b = config[name]
        if b % n or b % pc:
            raise ValueError(f"{name}={b} must divide by the device count {n} and the process count {pc}")
    if config.train_positions <= 0:
        raise ValueError("train_positions must be positive")


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
    """Train (resuming from ``workdir`` if it holds a checkpoint), evaluate, checkpoint. Returns the final
    evaluation metrics (empty without an evaluation split) plus ``step`` and ``positions``."""
    parallel.initialize_distributed()
    pidx, pc = jax.process_index(), jax.process_count()
    mesh = parallel.make_mesh(config.num_devices)
    _check_config(config, mesh)
    workdir = os.path.abspath(workdir)
    if pidx == 0:
        os.makedirs(workdir, exist_ok=True)
        with open(os.path.join(workdir, "config.json"), "w", encoding="utf-8") as f:
            f.write(config.to_json_best_effort(indent=2, sort_keys=True) + "\n")

    info = input_pipeline.describe(config.dataset, config.train_split)
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

    train_iter = input_pipeline.train_iterator(
        config.dataset, config.train_split, batch_size=B // pc, seed=config.seed, process_index=pidx,
        process_count=pc, symmetry=config.input.symmetry, history=config.input.history_dropout,
        history_p=config.input.history_p, keep_probs=tuple(config.input.history_keep_probs),
        window_blocks=config.input.window_blocks, block_rows=config.input.block_rows,
        workers=config.input.workers, host_dtype=config.input.host_dtype)

    ckpt = checkpointing.Checkpointer(os.path.join(workdir, "checkpoints"), keep=config.keep_checkpoints,
                                      async_save=config.async_checkpoints)
    writer = metric_writer.MetricWriter(workdir, enabled=pidx == 0)
    elapsed_before = 0.0
    latest = ckpt.latest_step()
    if latest is not None:
        try:
            state, data_state, meta = ckpt.restore(latest, state)
        except (ValueError, KeyError) as e:
            why = (str(e).splitlines() or [""])[0][:160]
            raise ValueError(f"{ckpt.directory}/{latest} does not match this config's model and optimizer state "
                             f"({type(e).__name__}: {why}); resume with the config that wrote it, or start a new "
                             f"workdir (--config.init_from takes the weights only)") from e
        saved = (meta.get("batch_size"), meta.get("processes"))
        if saved != (B, pc):
            raise ValueError(f"{ckpt.directory}/{latest} was written with batch_size {saved[0]} on {saved[1]} "
                             f"process(es); resuming needs the same (this run: {B} on {pc}). To start a new run "
                             f"from its weights, use another workdir and --config.init_from")
        train_iter.set_state(data_state)
        elapsed_before = float(meta.get("train_seconds", 0.0))
        writer.truncate_after(latest)
        _log(f"resumed from {ckpt.directory}/{latest}: step {latest}, {latest * B:,} positions")
    elif config.init_from:
        state, meta = _apply_init_from(state, config.init_from, mesh)
        _log(f"initial weights from {config.init_from} (step {meta.get('step', '?')})")
    start = int(jax.device_get(state["step"]))

    _log(f"kifunet train: model {config.model.name} ({nparams:,} parameters, {info['num_planes']} planes"
         f"{'' if default_planes == info['num_planes'] else f'; its default is {default_planes}'}), "
         f"{mesh.size} device(s) x {pc} process(es), batch {B}, {info['rows']:,} training rows, "
         f"{total_steps:,} steps = {total_steps * B:,} positions")

    train_fn = parallel.data_parallel(parallel.train_step(model_def, tx, schedule, loss=config.loss), mesh,
                                      donate_state=True)
    eval_fn = parallel.data_parallel(parallel.eval_step(model_def, loss=config.loss), mesh)
    prefetch = input_pipeline.Prefetcher(train_iter, fn=lambda b: parallel.shard_batch(b, mesh),
                                         depth=config.input.prefetch)

    def meta_for(step: int, train_s: float) -> dict:
        return {"step": step, "positions": step * B, "train_seconds": train_s, "model": config.model.name,
                "dataset": config.dataset, "feature_set": info["features"], "board_size": int(info["board_size"]),
                "batch_size": B, "processes": pc, "devices": mesh.size}

    window = {"t": time.perf_counter(), "wait": 0.0, "steps": 0, "skip": 0, "sums": {}}
    run_t0 = time.perf_counter()
    pending = None  # (step, metrics) of the last dispatched step, checked after the next dispatch
    step = start
    last_eval = {}

    def check(item) -> dict:
        s, m = item
        m = jax.device_get(m)
        loss = float(m["loss_sum"]) / max(float(m["count"]), 1.0)
        if not math.isfinite(loss):
            raise NonFiniteLoss(s, loss)
        for k in ("loss_sum", "nats_sum", "top1_sum", "top4_sum", "count"):
            window["sums"][k] = window["sums"].get(k, 0.0) + float(m[k])
        for k in ("grad_norm", "param_norm", "update_norm", "lr"):
            window["sums"][k] = float(m[k])
        window["steps"] += 1
        return m

    def flush_log(s: int) -> None:
        now = time.perf_counter()
        dt = now - window["t"]
        sums = window["sums"]
        n = max(sums.get("count", 0.0), 1.0)
        wait = prefetch.wait_s - window["wait"]
        timed = window["steps"] - window["skip"]
        rec = {"positions": s * B, "loss": sums["loss_sum"] / n, "nats": sums["nats_sum"] / n,
               "top1": sums["top1_sum"] / n, "top4": sums["top4_sum"] / n, "grad_norm": sums["grad_norm"],
               "param_norm": sums["param_norm"], "update_norm": sums["update_norm"], "lr": sums["lr"]}
        if timed > 0 and dt > 0:  # (a window holding only the compiling first step has no rate)
            rec["positions_per_s"] = timed * B / dt
            rec["data_wait_fraction"] = wait / dt
        writer.write("train", s, rec)
        rate = rec.get("positions_per_s", 0.0)
        eta = (total_steps - s) * B / rate if rate > 0 else float("nan")
        if config.time_limit_s:  # the run stops at the time limit if that comes first
            left = config.time_limit_s - elapsed_before - (now - run_t0)
            eta = min(eta, max(left, 0.0)) if math.isfinite(eta) else max(left, 0.0)
        speed = (f"{rate:,.0f} pos/s, data wait {100 * rec['data_wait_fraction']:.1f}%" if rate > 0
                 else "compiling")
        _log(f"step {s:,}/{total_steps:,} ({s * B:,} positions, {100 * s / total_steps:.1f}%) "
             f"loss {rec['loss']:.4f} top1 {100 * rec['top1']:.2f}% top4 {100 * rec['top4']:.2f}% "
             f"| {speed} | ETA {_fmt_time(eta) if math.isfinite(eta) else '?'}")
        window.update(t=now, wait=prefetch.wait_s, steps=0, skip=0, sums={})

    def do_eval(s: int, limit: int) -> dict:
        res = evaluate(eval_fn, state, config, mesh, limit=limit)
        if res:
            writer.write("eval", s, {"positions": s * B, **res})
            _log(f"eval at step {s:,} on {int(res['eval_positions']):,} {config.eval_split} positions: "
                 f"top1 {100 * res['top1']:.2f}% top4 {100 * res['top4']:.2f}% nats {res['nats']:.4f} "
                 f"({res['seconds']:.1f} s)")
        # the evaluation's time is not training time: do not charge it to the log window's rate
        window["t"] += res.get("seconds", 0.0) if res else 0.0
        return res

    def stop_for_time() -> bool:
        if not config.time_limit_s:
            return False
        over = elapsed_before + (time.perf_counter() - run_t0) >= config.time_limit_s
        if pc > 1:
            from jax.experimental import multihost_utils

            over = bool(multihost_utils.broadcast_one_to_all(np.asarray(over)))
        return over

    try:
        while step < total_steps:
            batch = next(prefetch)
            state, metrics = train_fn(state, batch)
            step += 1
            if step == start + 1:  # the first step compiles: keep it out of the throughput figures
                jax.block_until_ready(metrics)
                window.update(t=time.perf_counter(), wait=prefetch.wait_s, skip=1)
            if pending is not None:
                check(pending)
            pending = (step, metrics)
            boundary = step == total_steps
            if step % log_every == 0 or boundary or (eval_every and step % eval_every == 0) or \
                    (ckpt_every and step % ckpt_every == 0):
                check(pending)
                pending = None
                if step % log_every == 0 or boundary:
                    flush_log(step)
                if eval_every and step % eval_every == 0 and not boundary:
                    last_eval = do_eval(step, config.eval_positions)
                timed_out = step % log_every == 0 and stop_for_time()
                if (ckpt_every and step % ckpt_every == 0) or boundary or timed_out:
                    train_s = elapsed_before + time.perf_counter() - run_t0
                    ckpt.save(step, state, prefetch.state, meta_for(step, train_s))
                if timed_out and not boundary:
                    _log(f"time limit {config.time_limit_s:.0f} s reached at step {step:,}")
                    if window["steps"]:
                        flush_log(step)
                    break
        if pending is not None:
            check(pending)
            pending = None
        if step == start and start > 0:
            _log(f"nothing to do: the checkpoint is at step {start:,} of {total_steps:,}")
        if config.eval_split:
            last_eval = do_eval(step, config.final_eval_positions)
    finally:
        prefetch.close()
        train_iter.close()
        ckpt.close()
        writer.close()
        del prefetch, train_iter
    return {"step": step, "positions": step * B, **last_eval}


def main(argv=None) -> int:  # pragma: no cover - `kifunet train` is the entry point
    from kifunet.cli import main as cli_main

    return cli_main(["train", *(sys.argv[1:] if argv is None else argv)])


__all__ = ["NonFiniteLoss", "build_model", "evaluate", "setup", "train_and_evaluate"]
