"""Shared plumbing of the device scripts (``measure.py``, ``train_eval.py``): standard library only.

The scripts' own processes never import JAX or kifunet: every measurement runs in a child process (this
module's :func:`run` with a timeout, the whole process group killed when it runs out), so that a freshly
installed package is importable there, GPU memory is given back between sections, and an out-of-memory
crash or a hung compile costs one section, not the run.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
WHEELS = os.path.join(REPO, ".device", "wheels")
KGS_CARRIED = os.path.join(REPO, ".device", "kgs")
KGS_SHARED = os.path.join(os.path.dirname(REPO), "shared", "data", "kgs")
SAMPLES = os.path.join(REPO, "samples", "gnugo")
DEFAULT_WORK = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kifunet_device")
TAIL_LINES = 120  # the last lines of a child's output that run() returns

# Dense (no structured sparsity) tensor-core peaks from the vendors' datasheets, TFLOP/s per device.
# Matched in order against jax's device_kind, lower-cased; the first match wins.
DATASHEET = [
    # (substring of device_kind, name, bf16, tf32, source)
    ("h100 pcie", "H100 PCIe", 756.0, 378.0, "NVIDIA H100 datasheet: 1,513 TFLOP/s bf16 with sparsity"),
    ("h100 nvl", "H100 NVL", 835.0, 417.5, "NVIDIA H100 datasheet: 1,671 TFLOP/s bf16 with sparsity"),
    ("h100", "H100 SXM", 989.4, 494.7, "NVIDIA H100 datasheet: 1,979 TFLOP/s bf16 with sparsity"),
    ("h200 nvl", "H200 NVL", 835.0, 417.5, "NVIDIA H200 datasheet: 1,671 TFLOP/s bf16 with sparsity"),
    ("gh200", "GH200", 989.4, 494.7, "NVIDIA GH200 datasheet (H100/H200 SXM tensor cores)"),
    ("h200", "H200 SXM", 989.4, 494.7, "NVIDIA H200 datasheet: 1,979 TFLOP/s bf16 with sparsity"),
    ("a100", "A100", 312.0, 156.0, "NVIDIA A100 datasheet: 624 TFLOP/s bf16 with sparsity"),
    ("l40s", "L40S", 362.05, 183.0, "NVIDIA L40S datasheet: 733 TFLOP/s bf16 with sparsity"),
    ("l4", "L4", 121.0, 60.0, "NVIDIA L4 datasheet: 242 TFLOP/s bf16 with sparsity"),
    ("tpu v6", "TPU v6e", 918.0, None, "Google Cloud TPU v6e documentation"),
    ("tpu v5p", "TPU v5p", 459.0, None, "Google Cloud TPU v5p documentation"),
    ("tpu v5", "TPU v5e", 197.0, None, "Google Cloud TPU v5e documentation"),
    ("tpu v4", "TPU v4", 275.0, None, "Google Cloud TPU v4 documentation"),
]


# tiny.py's sizes: the `kifunet train` overrides of a quick (CPU) run, beside the family's *_tiny model
QUICK_TRAIN = ["--config.batch_size=32", "--config.eval_batch_size=64", "--config.input.window_blocks=2",
               "--config.input.block_rows=64", "--config.input.workers=0", "--config.log_every_steps=5",
               "--config.eval_every_positions=320", "--config.eval_positions=256", "--config.final_eval_positions=256",
               "--config.checkpoint_every_positions=320"]

# the family's *_tiny model in the registry, for quick (CPU) runs
TINY = {"qiqiao": "qiqiao_tiny", "maddison": "maddison_tiny", "alphago": "alphago_tiny", "cazenave": "cazenave_tiny",
        "gonn": "gonn_tiny", "agz": "agz_tiny", "mao": "mao_tiny", "garb": "garb_tiny", "clark": "clark_storkey_tiny",
        "darkforest": "darkforest_tiny", "resnet": "resnet18_tiny"}


def tiny_model(name: str) -> str:
    """``maddison12`` -> ``maddison_tiny``, ``gonn_resnet5`` -> ``gonn_tiny``, ...; ``*_tiny`` stays."""
    head = re.match(r"[a-z]*", name).group(0)
    return TINY.get(head, "maddison_tiny")


def datasheet_peak(device_kind: str, platform_name: str = "") -> dict:
    """The datasheet's dense bf16 (and tf32) peak for a device kind; all ``None`` for a CPU or an unknown kind."""
    kind = (device_kind or "").lower()
    if platform_name != "cpu":
        for key, name, bf16, tf32, source in DATASHEET:
            if key in kind:
                return {"name": name, "bf16_tflops": bf16, "tf32_tflops": tf32, "source": source}
    return {"name": None, "bf16_tflops": None, "tf32_tflops": None,
            "source": "no datasheet peak for this device (a CPU has none here)"}


class Log:
    """Lines to stdout and to a log file, each with the seconds since the start."""

    def __init__(self, path: str):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self.t0 = time.time()
        self._f = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def __call__(self, msg: str, *, raw: bool = False) -> None:
        line = msg if raw else f"[{time.time() - self.t0:7.1f}s] {msg}"
        with self._lock:
            print(line, flush=True)
            self._f.write(line + "\n")
            self._f.flush()

    def close(self) -> None:
        self._f.close()


def run(cmd: list[str], log: Log, *, timeout: float, cwd: str = REPO, env: dict | None = None, tag: str = "") -> dict:
    """Run ``cmd``, its output copied line by line into ``log`` (after ``tag``, which tells apart the lines of
    runs made at once); after ``timeout`` seconds its whole process group (it and the worker processes it
    started) is stopped. Returns ``{rc, seconds, timed_out, tail}``, ``tail`` its last :data:`TAIL_LINES` lines
    of output."""
    e = dict(os.environ, PYTHONUNBUFFERED="1")
    if env:
        e.update(env)
    log(f"{tag}$ {' '.join(cmd)}  (timeout {timeout:.0f} s)")
    t0 = time.perf_counter()
    if timeout <= 0:
        return {"rc": None, "seconds": 0.0, "timed_out": True}
    p = subprocess.Popen(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", start_new_session=True)

    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)

    def pump():
        for line in p.stdout:
            tail.append(line.rstrip("\n"))
            log(f"  |{tag} " + tail[-1], raw=True)

    th = threading.Thread(target=pump, daemon=True)
    th.start()
    timed_out = False
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        log(f"{tag}timeout after {timeout:.0f} s: stopping process group {p.pid}")
        _kill_group(p)
    except BaseException:
        _kill_group(p)
        raise
    th.join(timeout=10)
    return {"rc": p.returncode, "seconds": time.perf_counter() - t0, "timed_out": timed_out, "tail": list(tail)}


def _kill_group(p: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def config_path(name: str) -> str:
    """``maddison12`` -> ``REPO/train/configs/maddison12.py``; a path ending in ``.py`` stays."""
    return name if name.endswith(".py") else os.path.join(REPO, "train", "configs", f"{name}.py")


def config_info(cfg_path: str) -> dict:
    """A config file's feature set, model name and global batch, read in a child process (no JAX here)."""
    code = ("import json, sys; from kifunet.train import configs; c = configs.load_file(sys.argv[1]); "
            "print(json.dumps({'expect_features': c.expect_features, 'model': c.model.name, "
            "'batch_size': c.batch_size}))")
    out = subprocess.run([PY, "-c", code, cfg_path], capture_output=True, text=True, timeout=120,
                         cwd=REPO)
    if out.returncode:
        raise SystemExit(f"cannot read {cfg_path}: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def installed() -> bool:
    """Whether the project and the packages the GPU image lacks import (then the install step is skipped)."""
    code = "import kifunet.cli, grain, sgfmill, ml_collections, tensorboardX"
    return subprocess.run([PY, "-c", code], capture_output=True, timeout=120, cwd="/").returncode == 0


def install_step(log: Log, *, skip: bool, timeout: float = 180) -> dict:
    """The scripts' install step: skipped (``--no-install``), already done, or :func:`install`."""
    if skip:
        return {"status": "skipped (--no-install)"}
    if installed():
        return {"status": "already installed"}
    return install(log, timeout=timeout)


class Record(dict):
    """A script's result JSON, rewritten whole at each :meth:`save`: its first fields (schema, script, arguments,
    quick, start time, machine) and what the script adds; ``total_s`` and, at :meth:`finish`, ``finished``."""

    def __init__(self, path: str, script: str, argv: list[str] | None, quick: bool, **fields):
        super().__init__(schema=1, script=script, argv=sys.argv[1:] if argv is None else argv, quick=quick,
                         started=_now(), machine=machine_info(), **fields)
        self.path = path
        self.t0 = time.time()

    def save(self) -> None:
        self["total_s"] = time.time() - self.t0
        write_json(self.path, clean_floats(dict(self)))

    def finish(self) -> None:
        self["finished"] = _now()
        self.save()


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def install(log: Log, *, wheels: str = WHEELS, timeout: float = 180) -> dict:
    """``pip install --no-index --no-deps`` of the carried wheels, then ``pip install --no-deps -e .`` (no build
    isolation: there is no network to fetch setuptools into an isolated environment)."""
    whl = sorted(glob.glob(os.path.join(wheels, "*.whl")))
    res = {"wheels": [os.path.basename(w) for w in whl], "python": PY}
    t0 = time.perf_counter()
    if whl:
        r = run([PY, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-cache-dir", *whl], log,
                timeout=timeout)
        res["wheels_rc"] = r["rc"]
    else:
        log(f"no wheels in {wheels}: installing none (run benchmarks/device/fetch_wheels.sh where pip has network)")
    r = run([PY, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-cache-dir", "-e", REPO],
            log, timeout=max(30.0, timeout - (time.perf_counter() - t0)))
    res["project_rc"] = r["rc"]
    res["seconds"] = time.perf_counter() - t0
    res["status"] = "ok" if r["rc"] == 0 and res.get("wheels_rc", 0) == 0 else "failed"
    return res


DEBUG_NANS_ENV = {"JAX_DEBUG_NANS": "True"}  # the environment of a run that names the operation making a NaN
REPORT_FRAMES = 8
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')


def nan_report(tail: list[str]) -> dict | None:
    """Where a run under :data:`DEBUG_NANS_ENV` first made a NaN, from the traceback in its output's ``tail``:
    ``{error, where: [{file, line, function, source}, ...]}``, the innermost :data:`REPORT_FRAMES` frames of the
    repository's code, innermost last;
    ``None`` when the output has no ``FloatingPointError``. JAX re-runs the failing jitted step op by op (without
    donating its arguments), so the innermost frame is the line whose operation made the NaN; when the op-by-op
    run makes none (XLA's fused code did), ``error`` says so and the innermost frame is the jitted call."""
    err = next((i for i in range(len(tail) - 1, -1, -1) if tail[i].startswith("FloatingPointError")), None)
    if err is None:
        return None
    start = max((i for i in range(err) if tail[i].startswith("Traceback")), default=0)
    where = []
    for i in range(start, err):
        m = _FRAME.match(tail[i])
        path = os.path.abspath(m["path"]) if m else ""
        if path.startswith(REPO + os.sep) and os.sep + ".venv" + os.sep not in path:
            src = tail[i + 1].strip() if i + 1 < err and not _FRAME.match(tail[i + 1]) else ""
            where.append({"file": os.path.relpath(path, REPO), "line": int(m["line"]), "function": m["fn"],
                          "source": src})
    return {"error": tail[err], "where": where[-REPORT_FRAMES:]}


def kgs_archives(kgs: str | None) -> tuple[str | None, list[str]]:
    """(folder, archives): ``kgs`` if given, else ``.device/kgs`` (carried), else ``../shared/data/kgs``."""
    for d in ([kgs] if kgs else [KGS_CARRIED, KGS_SHARED]):
        files = sorted(glob.glob(os.path.join(d, "KGS-*.tar.gz"))) if d else []
        if files:
            return d, files
    return None, []


def dataset_inputs(*, quick: bool, kgs: str | None, train_archives: list[str] | None = None) -> dict:
    """The build's inputs and split flags: the KGS archives on the GoNN protocol (``--preset gonn-kgs``, train
    2000-2014 and 2016-2017, test 2015), or in quick mode (or without archives) the sample corpus
    (test: its 9 games dated 2015)."""
    folder, files = (None, []) if quick else kgs_archives(kgs)
    if not files:
        return {"source": "samples/gnugo", "inputs": [SAMPLES], "flags": ["--split", "test:2015", "--split", "train:rest"],
                "tag": "samples"}
    test = [f for f in files if os.path.basename(f).startswith("KGS-2015")]
    train = [f for f in files if f not in test]
    if train_archives:
        train = [f for f in train if any(os.path.basename(f).startswith(p) for p in train_archives)]
    return {"source": folder, "inputs": test + train,
            "flags": ["--preset", "gonn-kgs", "--split", "train:2000-2014,2016-2017", "--split", "test:2015"],
            "tag": "kgs" + ("" if not train_archives else "_" + "_".join(sorted(train_archives)))}


def build(log: Log, *, work: str, features: str, quick: bool, kgs: str | None, workers: int, timeout: float,
          train_archives: list[str] | None = None) -> dict:
    """``kifunet build`` of the inputs of :func:`dataset_inputs` with ``workers`` processes into
    ``work/data/<features>_<tag>`` (a finished build there is reused: the build command returns at once)."""
    src = dataset_inputs(quick=quick, kgs=kgs, train_archives=train_archives)
    out = os.path.join(work, "data", f"{features.replace('+', '_')}_{src['tag']}")
    cmd = [PY, "-m", "kifunet.cli", "build", *src["inputs"], "--out", out, "--features", features, *src["flags"],
           "--workers", str(workers), "--no-progress"]
    r = run(cmd, log, timeout=timeout)
    res = {"status": "ok" if r["rc"] == 0 else ("timeout" if r["timed_out"] else "failed"), "seconds": r["seconds"],
           "rc": r["rc"], "dataset": out, "features": features, "workers": workers, "source": src["source"],
           "inputs": [os.path.basename(i) for i in src["inputs"]], "command": cmd}
    man = os.path.join(out, "manifest.json")
    if r["rc"] == 0 and os.path.exists(man):
        with open(man, encoding="utf-8") as f:
            m = json.load(f)
        pos = {k: v.get("positions", v.get("rows")) for k, v in m.get("splits", {}).items()}
        res["positions"] = pos
        res["games"] = {k: v.get("games") for k, v in m.get("splits", {}).items()}
        res["records_seen"] = m.get("counts", {}).get("seen")
        total = sum(int(v or 0) for v in pos.values())
        res["positions_per_s"] = total / r["seconds"] if r["seconds"] > 0 else None
    return res


def machine_info() -> dict:
    """What the standard library and nvidia-smi tell about this machine (JAX's view comes from a child)."""
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {"hostname": platform.node(), "python": platform.python_version(), "executable": PY,
            "cpu": cpu or platform.processor(), "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "memory_gib": _mem_gib(), "load_average": list(os.getloadavg()),
            "jax_platforms_env": os.environ.get("JAX_PLATFORMS")}
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
            info["nvidia_smi"] = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
        except (OSError, subprocess.SubprocessError) as e:
            info["nvidia_smi"] = [f"failed: {e}"]
    return info


def _mem_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def write_json(path: str, obj) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, allow_nan=False, default=_jsonable)
        f.write("\n")
    os.replace(tmp, path)


def _jsonable(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def clean_floats(obj):
    """NaN and infinities become ``None`` (JSON has neither)."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: clean_floats(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_floats(v) for v in obj]
    return obj


def read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_jsonl(path: str) -> list[dict]:
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def summarize_train_metrics(workdir: str, batch: int) -> dict:
    """Throughput and data wait of a `kifunet train` run from its ``metrics_train.jsonl``: each logged window's
    rate and data-wait fraction, the wait averaged over the windows' wall time."""
    recs = [r for r in read_jsonl(os.path.join(workdir, "metrics_train.jsonl")) if "positions_per_s" in r]
    allrecs = read_jsonl(os.path.join(workdir, "metrics_train.jsonl"))
    out = {"windows": len(recs), "steps": allrecs[-1]["step"] if allrecs else 0,
           "positions": allrecs[-1].get("positions") if allrecs else 0}
    if not recs:
        return out
    prev = {r["step"]: p["step"] for p, r in zip(allrecs, allrecs[1:])}
    dts, waits, rates = [], [], []
    for r in recs:
        steps = r["step"] - prev.get(r["step"], 0)
        if r["step"] not in prev:  # the first window: its first step compiled and is not in the rate
            steps -= 1
        rate = float(r["positions_per_s"])
        dt = steps * batch / rate if rate > 0 else 0.0
        dts.append(dt)
        waits.append(float(r.get("data_wait_fraction", 0.0)) * dt)
        rates.append(rate)
    total = sum(dts)
    rates_sorted = sorted(rates)
    out.update(positions_per_s_median=rates_sorted[len(rates) // 2], positions_per_s_max=rates_sorted[-1],
               timed_seconds=total, data_wait_fraction=sum(waits) / total if total > 0 else None,
               data_wait_fraction_max=max(float(r.get("data_wait_fraction", 0.0)) for r in recs),
               positions_per_s_timed=sum(d * x for d, x in zip(dts, rates)) / total if total > 0 else None)
    ev = read_jsonl(os.path.join(workdir, "metrics_eval.jsonl"))
    if ev:
        out["last_eval"] = {k: ev[-1].get(k) for k in ("step", "positions", "top1", "top4", "nats", "eval_positions")}
    return out
