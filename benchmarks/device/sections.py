"""The JAX side of ``measure.py``: one section per process, ``python sections.py SECTION SPEC.json``.

``measure.py`` writes the spec (what to measure, an absolute ``deadline`` in Unix seconds, a ``result`` path)
and starts this script under a timeout; results are appended to ``result`` as JSON lines as they come, so a
section stopped by its timeout or killed by a crash keeps what it measured.

* ``peak``: JAX's view of the machine, and the matrix-product rate: ``jnp.dot`` of two random ``n x n``
  matrices (bf16, and f32 at JAX's default precision), compiled ahead, each timing ``calls`` products issued
  back to back and waited for once, the best of ``reps`` timings; 2 n^3 FLOPs per product.
* ``train_step``: the project's training step, as ``benchmarks/bench_train_step.py`` builds it (the config's
  model, optimizer and loss from ``kifunet.train.train.setup``, ``parallel.data_parallel`` of
  ``steps.train_step`` over all local devices, state donated, random 0/1 planes and targets already on
  the devices), for each (config, dtype, batch) item in the order given, while time is left: compile seconds
  (``lower().compile()``), the compiled step's ops (:func:`kifunet.train.aot.count_ops` of its optimised HLO:
  on a GPU, its kernels; the HLO text itself, gzipped into ``hlo_dir``, for the configs in ``hlo_configs``),
  the first step, then ``rounds`` rounds of back-to-back steps; step seconds = the median round's time per step; FLOPs
  from :func:`kifunet.models.train_flops`.
* ``loader``: :func:`bench_loader.time_pipeline` (device-ready batches of the training pipeline) for each
  worker count.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
CONFIG_DIR = os.path.join(REPO, "train", "configs")
sys.path.insert(0, BENCH)
sys.path.insert(0, HERE)

from common import tiny_model  # noqa: E402


def emit(path: str, rec: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec, default=float) + "\n")


def jax_info() -> dict:
    import flax
    import jax
    import jaxlib
    import optax

    dev = jax.devices()[0]
    info = {"platform": dev.platform, "device_kind": dev.device_kind, "devices": jax.device_count(),
            "local_devices": jax.local_device_count(), "processes": jax.process_count(), "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "flax": flax.__version__, "optax": optax.__version__}
    try:
        stats = dev.memory_stats() or {}
        if "bytes_limit" in stats:
            info["device_memory_gib"] = round(stats["bytes_limit"] / 2**30, 2)
    except Exception:  # noqa: BLE001 - not every backend has memory stats
        pass
    return info


def matmul_rate(n: int, dtype_name: str, *, reps: int, calls: int) -> dict:
    import jax
    import jax.numpy as jnp

    dtype = jnp.dtype(dtype_name)
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (n, n), jnp.float32).astype(dtype)
    b = jax.random.normal(kb, (n, n), jnp.float32).astype(dtype)
    t0 = time.perf_counter()
    f = jax.jit(jnp.dot).lower(a, b).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(f(a, b))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        outs = [f(a, b) for _ in range(calls)]
        jax.block_until_ready(outs)
        times.append((time.perf_counter() - t0) / calls)
        del outs
    best, med = min(times), statistics.median(times)
    return {"n": n, "dtype": dtype.name, "calls_per_timing": calls, "reps": reps, "compile_s": compile_s,
            "best_s": best, "median_s": med, "tflops": 2 * n**3 / best / 1e12, "tflops_median": 2 * n**3 / med / 1e12}


def section_peak(spec: dict) -> None:
    out = spec["result"]
    emit(out, {"kind": "jax", **jax_info()})
    for dtype_name, sizes in (("bfloat16", spec["bf16_sizes"]), ("float32", spec["f32_sizes"])):
        for n in sizes:
            if time.time() > spec["deadline"]:
                emit(out, {"kind": "skipped", "dtype": dtype_name, "n": n, "why": "time budget"})
                continue
            try:
                emit(out, {"kind": "matmul", **matmul_rate(n, dtype_name, reps=spec["reps"], calls=spec["calls"])})
            except Exception as e:  # noqa: BLE001 - recorded, and the next size still runs
                emit(out, {"kind": "error", "dtype": dtype_name, "n": n, "error": _short(e)})


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) < 600 else text[:600] + " ..."


def is_oom(e: BaseException) -> bool:
    t = str(e)
    return "RESOURCE_EXHAUSTED" in t or "out of memory" in t.lower() or "Out of memory" in t


def time_train_step(name: str, *, dtype: str, batch: int, quick: bool, round_s: float, rounds: int,
                    max_steps: int, hlo_path: str | None = None) -> dict:
    import jax
    import numpy as np

    from kifunet import models
    from kifunet.data_prep.planes import features
    from kifunet.train import configs as configs_mod
    from kifunet.train import aot, parallel, steps, train

    t_setup = time.perf_counter()
    cfg = configs_mod.load_file(os.path.join(CONFIG_DIR, f"{name}.py"))
    config_batch = cfg.batch_size
    if quick:
        cfg.model.name = tiny_model(cfg.model.name)
    cfg.model.dtype = dtype
    planes = features.get(cfg.expect_features or "maddison").num_planes
    mesh = parallel.make_mesh(cfg.num_devices)
    b = max(mesh.size, batch - batch % mesh.size)
    cfg.batch_size = b
    model_def, tx, schedule, state, model = train.setup(cfg, board_size=19, in_planes=planes, mesh=mesh)
    flops = models.train_flops(model)
    params = models.count_params(model)
    del model
    step = parallel.data_parallel(steps.train_step(model_def, tx, schedule, loss=cfg.loss), mesh,
                                  donate_state=True)
    rng = np.random.default_rng(0)
    host = {"planes": rng.integers(0, 2, (b, 19, 19, planes), dtype=np.uint8),
            "target": rng.integers(0, 361, b).astype(np.int32), "to_move": rng.integers(1, 3, b).astype(np.int32),
            "rank": rng.integers(0, 9, b).astype(np.int32), "weight": np.ones(b, np.float32)}
    batch_dev = parallel.shard_batch(host, mesh)
    jax.block_until_ready((state, batch_dev))
    setup_s = time.perf_counter() - t_setup
    t0 = time.perf_counter()
    compiled = step.lower(state, batch_dev).compile()
    compile_s = time.perf_counter() - t0
    hlo = compiled.as_text()
    ops = aot.count_ops(hlo)
    if hlo_path:
        with gzip.open(hlo_path, "wt", encoding="utf-8") as f:
            f.write(hlo)
    mem = None
    try:
        ma = compiled.memory_analysis()
        if ma is not None:
            mem = (ma.temp_size_in_bytes + ma.argument_size_in_bytes + ma.output_size_in_bytes
                   - ma.alias_size_in_bytes) / 2**30
    except Exception:  # noqa: BLE001 - optional
        pass
    t0 = time.perf_counter()
    state, m = compiled(state, batch_dev)
    jax.block_until_ready((state, m))
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, m = compiled(state, batch_dev)
    jax.block_until_ready((state, m))
    est = max(time.perf_counter() - t0, 1e-6)
    n = int(min(max(3, round_s / est), max_steps))
    per_step = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            state, m = compiled(state, batch_dev)
        jax.block_until_ready((state, m))
        per_step.append((time.perf_counter() - t0) / n)
    step_s = statistics.median(per_step)
    loss = float(m["loss_sum"]) / max(float(m["count"]), 1.0)
    pps = b / step_s
    return {"config": name, "model": cfg.model.name, "dtype": dtype, "batch": b, "config_batch": config_batch,
            "devices": mesh.size, "planes": planes, "params": params, "loss": cfg.loss,
            "train_flops_per_position": flops, "ops": ops, "setup_s": setup_s, "compile_s": compile_s,
            "first_step_s": first_s,
            "step_s": step_s, "step_s_rounds": per_step, "steps_per_round": n, "positions_per_s": pps,
            "achieved_tflops": flops * pps / 1e12, "memory_gib": mem, "loss_finite": bool(np.isfinite(loss))}


def section_train_step(spec: dict) -> None:
    import jax

    out = spec["result"]
    done_cost: dict[str, float] = {}
    oom: dict[tuple, int] = {}
    for item in spec["items"]:
        key = (item["config"], item["dtype"])
        if key in oom and item["batch"] >= oom[key]:
            emit(out, {"kind": "not_run", **item, "why": f"out of memory at batch {oom[key]}"})
            continue
        guess = done_cost.get(item["config"]) or (statistics.mean(done_cost.values()) if done_cost
                                                   else spec["first_guess_s"])
        left = spec["deadline"] - time.time()
        if left < guess:
            emit(out, {"kind": "not_run", **item, "why": f"time budget ({left:.0f} s left, about {guess:.0f} s "
                                                        f"needed)"})
            continue
        emit(out, {"kind": "start", **item})
        t0 = time.perf_counter()
        try:
            hlo = None
            if item["config"] in spec.get("hlo_configs", ()):
                os.makedirs(spec["hlo_dir"], exist_ok=True)
                hlo = os.path.join(spec["hlo_dir"], f"{item['config']}_{item['dtype']}_b{item['batch']}.hlo.txt.gz")
            row = time_train_step(item["config"], dtype=item["dtype"], batch=item["batch"], quick=spec["quick"],
                                  round_s=spec["round_s"], rounds=spec["rounds"], max_steps=spec["max_steps"],
                                  hlo_path=hlo)
            if hlo:
                row["hlo"] = os.path.basename(hlo)
            row["wall_s"] = time.perf_counter() - t0
            emit(out, {"kind": "row", **row})
            done_cost[item["config"]] = row["wall_s"] * (1.3 if item["batch"] < 1024 else 1.0)
        except Exception as e:  # noqa: BLE001 - recorded; the next item still runs
            if is_oom(e):
                oom[key] = min(oom.get(key, 1 << 30), item["batch"])
            emit(out, {"kind": "failed", **item, "oom": is_oom(e), "error": _short(e),
                       "wall_s": time.perf_counter() - t0})
            traceback.print_exc()
        gc.collect()
        jax.clear_caches()


def section_loader(spec: dict) -> None:
    import bench_loader

    out = spec["result"]
    for w in spec["workers"]:
        if time.time() > spec["deadline"] - spec.get("min_s", 5):
            emit(out, {"kind": "not_run", "workers": w, "why": "time budget"})
            continue
        t0 = time.perf_counter()
        try:
            r = bench_loader.time_pipeline(spec["dataset"], batch=spec["batch"], workers=w, host_dtype="uint8",
                                           warmup=spec["warmup"], batches=spec["batches"])
            r["wall_s"] = time.perf_counter() - t0
            emit(out, {"kind": "row", **r})
        except Exception as e:  # noqa: BLE001
            emit(out, {"kind": "failed", "workers": w, "error": _short(e)})
            traceback.print_exc()


SECTIONS = {"peak": section_peak, "train_step": section_train_step, "loader": section_loader}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in SECTIONS:
        print(f"usage: sections.py {{{','.join(SECTIONS)}}} SPEC.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    SECTIONS[argv[0]](spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
