"""A config's real training step compiled ahead of time for a target whose hardware is not here.

:func:`compile_step` ``(path, target, batch) -> row`` compiles :func:`kifunet.train.train.train_function` with the
config's state and global batch as ``jax.ShapeDtypeStruct`` s sharded over the target's devices (:data:`TARGETS`:
Cloud TPU slices from libtpu's compile-only topologies, or ``cpu``); nothing runs. The row's fields (cost, memory,
ops, roofline): docs/accelerators.md."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import re
import time

import numpy as np

from kifunet.data_prep.errors import InvalidValue, UserError

#: JAX's mesh axis name for data parallelism (kifunet.train.steps.AXIS, repeated to keep JAX out of imports)
_AXIS = "data"


@dataclasses.dataclass(frozen=True)
class Chip:
    """A TPU generation's datasheet figures, per chip (``source``: where they are published)."""

    name: str
    peak_bf16_flops: float
    hbm_bytes: float
    hbm_bytes_per_s: float
    source: str


@dataclasses.dataclass(frozen=True)
class Target:
    """A slice: ``topology`` (libtpu's name), chips per host, number of slices; ``chip`` None for the CPU."""

    name: str
    chip: Chip | None
    topology: str = ""
    chips_per_host: tuple = (2, 2, 1)
    slices: int = 1
    what: str = ""


CHIPS = {
    "v5e": Chip("v5e", 197e12, 16e9, 819e9, "https://cloud.google.com/tpu/docs/v5e"),
    "v5p": Chip("v5p", 459e12, 95e9, 2765e9, "https://cloud.google.com/tpu/docs/v5p"),
    "v6e": Chip("v6e", 918e12, 32e9, 1640e9, "https://cloud.google.com/tpu/docs/v6e"),
}

TARGETS = {t.name: t for t in (
    Target("cpu", None, what="this machine's CPU, one device"),
    Target("v5e-4", CHIPS["v5e"], "v5e:2x2", (2, 2, 1), 1, "4 chips, 1 host"),
    Target("v5e-8", CHIPS["v5e"], "v5e:2x4", (2, 4, 1), 1, "8 chips, 1 host"),
    Target("v5p-8", CHIPS["v5p"], "v5p:2x2x1", (2, 2, 1), 1, "4 chips (8 TensorCores), 1 host"),
    Target("v6e-8", CHIPS["v6e"], "v6e:2x4", (2, 4, 1), 1, "8 chips, 1 host"),
    Target("v5e-16", CHIPS["v5e"], "v5e:4x4", (2, 2, 1), 1, "16 chips, 4 hosts of 4"),
    Target("2xv5e-8", CHIPS["v5e"], "v5e:2x4", (2, 4, 1), 2, "2 slices of 8 chips (multi-slice, over DCN)"),
)}

_SKIP_OPS = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\([^=]*?\)|\S+)\s+([a-z][a-z0-9\-]*)[(.]")


class NoLibtpu(UserError, RuntimeError):
    """A TPU target was asked for and libtpu cannot be found (reported as bad input)."""


class BatchError(InvalidValue):
    """A global batch the target's devices cannot share equally."""


def libtpu_requirement() -> str:
    """The libtpu pin of the installed JAX's ``tpu`` extra (``libtpu==0.0.42.*`` for JAX 0.10.2)."""
    for req in importlib.metadata.requires("jax") or ():
        if req.startswith("libtpu") and "tpu" in req.split(";")[-1]:
            return req.split(";")[0].strip()
    return "libtpu"


def find_libtpu(path: str | None = None) -> str:
    """The ``libtpu.so`` to load: ``path`` (the file, or a ``pip install --target`` folder), else
    ``TPU_LIBRARY_PATH``, else the importable ``libtpu`` package; :class:`NoLibtpu` naming the install command."""
    candidates = []
    if path:
        candidates += [path, os.path.join(path, "libtpu", "libtpu.so"), os.path.join(path, "libtpu.so")]
    elif os.environ.get("TPU_LIBRARY_PATH"):
        candidates.append(os.environ["TPU_LIBRARY_PATH"])
    for c in candidates:
        if os.path.isfile(c):
            return os.path.abspath(c)
    if not path:
        try:
            import libtpu  # type: ignore[import-not-found]

            return libtpu.get_library_path()
        except ImportError:
            pass
    where = f"{path} holds no libtpu.so" if path else "libtpu is not installed"
    raise NoLibtpu(f"{where}: compiling for a TPU needs it; install it beside, not into, this environment: "
                   f"python -m pip install --no-deps --target .libtpu '{libtpu_requirement()}' and pass "
                   f"--libtpu .libtpu")


def quiet_libtpu_env(target: Target) -> None:
    """Environment that keeps libtpu from looking for TPU hardware or a metadata server, and lets several
    processes load it (compiling needs no exclusive chip; set before loading it)."""
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
    os.environ.setdefault("TPU_ACCELERATOR_TYPE", f"{target.chip.name}-{_chips(target)}" if target.chip else "")


def _libtpu_version() -> str | None:
    """The version of the libtpu loaded (its ``dist-info`` beside ``TPU_LIBRARY_PATH``), or None."""
    import glob

    here = os.path.dirname(os.path.dirname(os.environ.get("TPU_LIBRARY_PATH", "")))
    found = sorted(glob.glob(os.path.join(here, "libtpu-*.dist-info")))
    return os.path.basename(found[-1])[len("libtpu-"):-len(".dist-info")] if found else None


def _chips(target: Target) -> int:
    dims = [int(d) for d in target.topology.split(":")[1].split("x")]
    return int(np.prod(dims)) * target.slices


def target_devices(target: Target, libtpu: str | None = None) -> list:
    """The target's devices: compile-only TPU devices from libtpu's topology, or this machine's first CPU."""
    import jax

    if target.chip is None:
        return jax.devices("cpu")[:1]
    os.environ["TPU_LIBRARY_PATH"] = find_libtpu(libtpu)
    quiet_libtpu_env(target)
    from jax.experimental import topologies

    topo = topologies.get_topology_desc(platform="tpu", topology_name=target.topology, chip_config_name="default",
                                        chips_per_host_bounds=target.chips_per_host, num_slices=target.slices)
    return list(topo.devices)


def count_ops(hlo_text: str) -> int:
    """Instructions of the entry computation of a compiled HLO module, without parameters, constants, tuples and
    bitcasts (on a TPU: its kernels)."""
    n, inside = 0, False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY "):
            inside = True
            continue
        if inside:
            if line.startswith("}"):
                break
            m = _INSTRUCTION.match(line)
            if m and m.group(1) not in _SKIP_OPS:
                n += 1
    return n


def _abstract(tree, sharding):
    import jax

    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=sharding), tree)


def _compile(config, mesh, *, board_size: int, planes: int):
    """``(compiled, compile seconds, model)`` of the config's training step over ``mesh``."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from kifunet.train import memory, parallel, steps, train

    model_def, tx, schedule, state, model = train.setup(config, board_size=board_size, in_planes=planes,
                                                        mesh=parallel.make_mesh(1),
                                                        flat_optimizer=not train.on_tpu(mesh),
                                                        fused_norm_act=not train.on_tpu(mesh))
    rep = NamedSharding(mesh, P())
    heads = steps.trained_heads(config.get("ownership_weight", 0.0), config.get("score_weight", 0.0))
    window = {k: np.asarray(v) for k, v in steps.zeros_window(model_def.has_value, heads).items()}
    args = (_abstract(state, rep), memory.abstract_batch(config, mesh, board_size=board_size, num_planes=planes),
            _abstract(window, rep))
    fn = train.train_function(config, model_def, tx, schedule, mesh)
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    del state
    jax.clear_caches()
    return compiled, time.perf_counter() - t0, model


def _memory_bytes(compiled) -> int | None:
    try:
        ma = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError, AttributeError):
        return None
    if ma is None:
        return None
    return int(ma.argument_size_in_bytes + max(ma.output_size_in_bytes - ma.alias_size_in_bytes, 0)
               + ma.temp_size_in_bytes + ma.generated_code_size_in_bytes)


def load_config(path: str, *, batch: int, dtype: str | None = None):
    """The config file ``path`` at global batch ``batch`` (and model dtype ``dtype`` when given)."""
    from kifunet.train import configs

    config = configs.load_file(path)
    config.batch_size = int(batch)
    if dtype:
        config.model.dtype = dtype
    return config


def compile_step(path: str, target: Target, *, batch: int, dtype: str | None = None, libtpu: str | None = None
                 ) -> dict:
    """One row for the config file ``path`` on ``target`` at global ``batch`` (a multiple of its devices); a step
    that needs more memory than a chip has is a row with ``fits`` False, the memory asked for, and ``largest_batch``."""
    import jax

    from kifunet import models
    from kifunet.data_prep.planes import features
    from kifunet.train import model_config, parallel

    devices = target_devices(target, libtpu)
    n = len(devices)
    if batch % n:
        raise BatchError(f"batch {batch} is not a multiple of {target.name}'s {n} devices")
    mesh = parallel.mesh_over(devices)
    config = load_config(path, batch=batch, dtype=dtype)
    planes = features.get(config.expect_features or "maddison").num_planes
    board_size = models.default_board_size(config.model.name)
    model = model_config.build_model(config.model, seed=config.seed, board_size=board_size, in_planes=planes)
    row = {"config": os.path.splitext(os.path.basename(path))[0], "model": config.model.name, "target": target.name,
           "devices": n, "board": board_size, "jax": jax.__version__,
           "libtpu": _libtpu_version() if target.chip else None, "dtype": config.model.dtype, "batch": batch,
           "params": int(models.count_params(model)), "model_flops": float(models.train_flops(model)) * batch / n}
    if target.chip is not None:
        row["hbm_bytes"] = target.chip.hbm_bytes
    t0 = time.perf_counter()
    try:
        compiled, seconds, _ = _compile(config, mesh, board_size=board_size, planes=planes)
    except Exception as e:  # noqa: BLE001 -- only the compiler's out-of-memory refusal is a result
        needed = _out_of_memory(e)
        if needed is None:
            raise
        row.update(compile_s=round(time.perf_counter() - t0, 1), xla_flops=None, xla_bytes=None, ops=None,
                   memory_bytes=needed, fits=False,
                   largest_batch=_largest_batch(config, mesh, target.chip, batch, board_size, planes))
        return row
    cost = compiled.cost_analysis()
    cost = (cost[0] if isinstance(cost, (list, tuple)) else cost) or {}
    row.update(compile_s=round(seconds, 1), xla_flops=float(cost.get("flops", 0.0)),
               xla_bytes=float(cost.get("bytes accessed", 0.0)), memory_bytes=_memory_bytes(compiled),
               ops=count_ops(compiled.as_text()))
    row.update(roofline(row, target.chip))
    if target.chip is not None and row["memory_bytes"] is not None:
        row["fits"] = row["memory_bytes"] <= target.chip.hbm_bytes
        if not row["fits"]:
            row["largest_batch"] = _largest_batch(config, mesh, target.chip, batch, board_size, planes)
    return row


_OOM = re.compile(r"RESOURCE_EXHAUSTED: Ran out of memory.*?\(([\d.]+)([KMGT])\)", re.S)


def _out_of_memory(error: Exception) -> int | None:
    """The bytes a step needs when ``error`` is the TPU compiler's refusal of a step larger than the chip's
    memory (``RESOURCE_EXHAUSTED: Ran out of memory ... (70.78G)``), else None."""
    m = _OOM.search(str(error))
    if m is None:
        return None
    return int(float(m.group(1)) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[m.group(2)])


def _largest_batch(config, mesh, chip: Chip, batch: int, board_size: int, planes: int) -> int:
    """The batch halved (a multiple of the devices) until the step's memory fits the chip; 0 when none does."""
    n = mesh.size
    b = batch // 2 // n * n
    while b >= n:
        config.batch_size = b
        try:
            compiled, _, _ = _compile(config, mesh, board_size=board_size, planes=planes)
        except Exception as e:  # noqa: BLE001
            if _out_of_memory(e) is None:
                raise
        else:
            if (_memory_bytes(compiled) or 0) <= chip.hbm_bytes:
                return b
        b = b // 2 // n * n
    return 0


def roofline(row: dict, chip: Chip | None) -> dict:
    """``predicted_step_s`` = max(FLOPs / peak, bytes / HBM bandwidth), ``predicted_mfu`` and the ``bound`` of a
    row on ``chip``'s datasheet; empty for the CPU."""
    if chip is None or not row["xla_flops"]:
        return {}
    compute = row["xla_flops"] / chip.peak_bf16_flops
    traffic = row["xla_bytes"] / chip.hbm_bytes_per_s
    step = max(compute, traffic)
    return {"predicted_step_s": step, "predicted_mfu": row["xla_flops"] / (step * chip.peak_bf16_flops),
            "bound": "compute" if compute >= traffic else "memory"}


def row_key(row: dict) -> tuple:
    """What identifies a row of the compile table: config, target, batch and dtype."""
    return row["config"], row["target"], int(row["batch"]), row["dtype"]


def _si(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.2f} {prefix}{unit}"
    return f"{x:.0f} {unit}".strip()


def table(rows: list[dict]) -> str:
    """The compile table in Markdown, one line per row in the order given (what :data:`TABLE_HEAD` names)."""
    lines = [TABLE_HEAD, "|" + "---|" * 4 + "---:|" * 9]
    for r in rows:
        ratio = f"{r['xla_flops'] / r['model_flops']:.2f}" if r["xla_flops"] and r["model_flops"] else "-"
        mem = _si(r["memory_bytes"], "B")
        if "hbm_bytes" in r:
            mem += f" of {r['hbm_bytes'] / 1e9:.0f} GB" + ("" if r["fits"] else
                                                          f": does not fit, largest batch {r['largest_batch']:,}")
        step = f"{r['predicted_step_s'] * 1e3:.2f}" if "predicted_step_s" in r else "-"
        mfu = f"{r['predicted_mfu']:.0%} ({r['bound']})" if "predicted_mfu" in r else "-"
        lines.append(f"| `{r['config']}` | {r['target']} | {r['dtype']} | {r['batch']:,} | {r['devices']} | "
                     f"{r['compile_s']:.0f} | {_si(r['xla_flops'])} | {_si(r['model_flops'])} | {ratio} | "
                     f"{mem} | {'-' if r['ops'] is None else format(r['ops'], ',')} | {step} | {mfu} |")
    return "\n".join(lines)


TABLE_HEAD = ("| config | target | dtype | batch | chips | compile s | XLA FLOPs / chip | model FLOPs / chip | "
              "XLA / model | memory / chip | ops | roofline step ms | roofline MFU |")
