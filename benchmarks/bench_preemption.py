"""SIGTERM to exit of a real ``kifunet train``, and its memory estimate against the peak resident memory.

    nice -n 10 python benchmarks/bench_preemption.py                   # writes benchmarks/results/preemption.json
    python benchmarks/bench_preemption.py --configs cpu_default --steps 30

For each config (default: ``cpu_default``, the default net; ``agz_tiny_value``, the CPU config with the most
parameters on 19x19 boards; ``qiqiao``, the CPU config with the most parameters, on 9x9 boards): a small dataset built
with the features the config expects (``samples/gnugo``, or ``corpora/engine9x9`` at 9x9 for ``qiqiao``; cached in
``--data``), then ``kifunet train`` with the config as shipped (its devices, batch, input workers) plus
``log_every_steps=1`` and no evaluation, in a session of its own. After ``--steps`` progress lines past the first
(compiling) step it sends SIGTERM and records: the seconds from the signal to the process's exit, its exit status and
line, whether its process group was empty after it, the median seconds between progress lines (the step time), the
1-minute load average at the signal, the start line's memory estimate and the trainer's peak resident memory
(``VmHWM``) just before the signal, plus its input workers' resident memory (which the estimate leaves out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CONFIGS = ("cpu_default", "agz_tiny_value", "qiqiao")
#: config -> (games, build options)
SOURCES = {"qiqiao": (os.path.join(REPO, "corpora", "engine9x9"), ["--board-size", "9"])}
DEFAULT_SOURCE = (os.path.join(REPO, "samples", "gnugo"), [])
STEP = re.compile(r"^step (\d+)/")
ESTIMATE = re.compile(r"memory estimate ([\d.]+) GB")


def _status(pid: int, key: str) -> int:
    """``key`` (kB) of /proc/PID/status, in bytes (0 when gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _group(pgid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                out.append(int(name))
    return out


def dataset(name: str, expect: str, data_dir: str) -> str:
    games, opts = SOURCES.get(name, DEFAULT_SOURCE)
    out = os.path.join(data_dir, f"{os.path.basename(games)}-{expect}")
    if not os.path.exists(os.path.join(out, "manifest.json")):
        subprocess.run([sys.executable, "-m", "kifunet.cli", "build", games, "--out", out, "--features", expect,
                        "--workers", "0", "--no-progress", *opts], check=True, stdout=subprocess.DEVNULL)
    return out


def run(name: str, *, steps: int, data_dir: str) -> dict:
    from kifunet.train import configs

    cfg = configs.load_file(os.path.join(REPO, "train", "configs", f"{name}.py"))
    ds = dataset(name, cfg.expect_features or "maddison", data_dir)
    wd = tempfile.mkdtemp(prefix=f"preempt-{name}-")
    config = os.path.join(REPO, "train", "configs", f"{name}.py")
    cmd = [sys.executable, "-m", "kifunet.cli", "train", "--config", config, "--workdir", wd, f"--config.dataset={ds}", "--config.eval_split=", "--config.log_every_steps=1"]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    lines, arrivals, rec = [], [], {"config": name, "model": cfg.model.name, "batch_size": cfg.batch_size,
                                    "cpu_devices": cfg.cpu_devices, "input_workers": cfg.input.workers}
    t_sig = None
    for line in p.stdout:
        lines.append(line.rstrip("\n"))
        m = STEP.match(line)
        if m and t_sig is None:
            arrivals.append(time.monotonic())
            if len(arrivals) > steps:
                rec["peak_rss_bytes"] = _status(p.pid, "VmHWM")
                rec["worker_rss_bytes"] = sum(_status(q, "VmRSS") for q in _group(p.pid) if q != p.pid)
                rec["load_avg_1min"] = os.getloadavg()[0]
                rec["signal_at_line_step"] = int(m.group(1))
                os.kill(p.pid, signal.SIGTERM)
                t_sig = time.monotonic()
    p.wait()
    rec["signal_to_exit_s"] = round(time.monotonic() - t_sig, 3) if t_sig else None
    time.sleep(1.0)
    rec["group_left_1s_after_exit"] = _group(p.pid)
    rec["exit_status"] = p.returncode
    rec["line"] = next((ln for ln in lines if "SIGTERM" in ln), None)
    est = next((ESTIMATE.search(ln) for ln in lines if ESTIMATE.search(ln)), None)
    rec["memory_estimate_bytes"] = float(est.group(1)) * 1e9 if est else None
    if est and rec.get("peak_rss_bytes"):
        rec["estimate_over_peak"] = round(rec["memory_estimate_bytes"] / rec["peak_rss_bytes"], 3)
    gaps = [b - a for a, b in zip(arrivals[2:], arrivals[3:])]  # past the compiling first steps
    rec["step_s_median"] = round(statistics.median(gaps), 4) if gaps else None
    rec["start_line"] = lines[0] if lines else None
    if p.returncode != 143:
        rec["output_tail"] = lines[-20:]
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS))
    ap.add_argument("--steps", type=int, default=20, help="progress lines past the first before the signal")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "kifunet-bench-preemption"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "preemption.json"))
    args = ap.parse_args(argv)
    os.makedirs(args.data, exist_ok=True)
    results = []
    for name in args.configs:
        rec = run(name, steps=args.steps, data_dir=args.data)
        print(json.dumps({k: v for k, v in rec.items() if k not in ("output_tail", "start_line")}), flush=True)
        results.append(rec)
    out = {"benchmark": "bench_preemption", "date": time.strftime("%Y-%m-%d %H:%M:%S"), "host": platform.node(),
           "cpus": os.cpu_count(), "python": platform.python_version(), "results": results}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
