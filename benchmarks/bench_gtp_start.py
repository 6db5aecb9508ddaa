"""How long ``kifunet gtp`` takes to start: spawn -> ``name`` answered, and spawn -> the first ``genmove``.

    python benchmarks/bench_gtp_start.py                      # every shipped net, JAX and ONNX, 5 repetitions
    python benchmarks/bench_gtp_start.py --nets kgs_cpu_default --reps 3 --paths jax

For each shipped net (``pretrained/kgs_cpu_default``, ``kgs_cpu_small``, ``qiqiao9x9``,
``rank_experiment/base``, ``rank_experiment/cond``) and each path -- ``jax``: ``kifunet gtp --checkpoint RUN``;
``onnx``: ``kifunet gtp --model FILE.onnx``, the file exported first into a temporary directory by ``kifunet
export`` (not timed) -- the benchmark spawns the command (``kifunet`` on PATH, else ``python -m kifunet.cli``) and
times, from just before the spawn:

* ``name_s``: until the reply to ``name`` (sent at once) has been read;
* ``genmove_s``: until the reply to ``genmove b`` (sent right after that reply) has been read;
* ``exit_s``: until the process has exited after ``quit``;
* ``quit_while_loading_s`` (one run per net and path): ``quit`` sent at once, until the process has exited.

``--cache`` says what ``kifunet gtp``'s caches (the compiled forward pass in ``KIFUNET_JAX_CACHE`` and the exported
one next to it, :mod:`kifunet.play.forward_cache`) hold when the JAX path starts: ``warm`` (default; one untimed
start per net fills a temporary cache first, so each timed start imports JAX but not flax or orbax), ``cold`` (an
empty temporary cache at every start: the first start of a net, which loads it with flax and orbax and writes the
cache) or ``off`` (``KIFUNET_JAX_CACHE=off``, also ``--no-compile-cache``: no cache at all). The median and every
repetition are written to ``--out`` (default ``benchmarks/results/gtp_start.json``) with ``uptime``'s load averages before and after (other work on the machine slows every figure) and the CPU count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETS = ("kgs_cpu_default", "kgs_cpu_small", "qiqiao9x9", "rank_experiment/base", "rank_experiment/cond")
PATHS = ("jax", "onnx")


def kifunet_command() -> list[str]:
    exe = shutil.which("kifunet")
    return [exe] if exe else [sys.executable, "-m", "kifunet.cli"]


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def read_reply(proc) -> str:
    """One GTP reply (lines up to the blank line)."""
    lines = []
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the engine closed its output; stderr: {proc.stderr.read()[-500:]}")
        if line.strip() == "" and lines:
            return "".join(lines)
        if line.strip():
            lines.append(line)


ENV = dict(os.environ)


def one_start(argv: list[str], cwd: str) -> dict:
    """spawn -> name, -> first genmove, -> exit after quit."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, bufsize=1, cwd=cwd, env=ENV)
    try:
        proc.stdin.write("name\n")
        proc.stdin.flush()
        name = read_reply(proc)
        t_name = time.perf_counter() - t0
        proc.stdin.write("genmove b\n")
        proc.stdin.flush()
        move = read_reply(proc)
        t_move = time.perf_counter() - t0
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        proc.wait(timeout=120)
        t_exit = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not name.startswith("=") or not move.startswith("="):
        raise RuntimeError(f"{argv}: {name!r} / {move!r}")
    return {"name_s": round(t_name, 3), "genmove_s": round(t_move, 3), "exit_s": round(t_exit, 3),
            "move": move.strip()[1:].strip(), "rc": proc.returncode}


def forward_cache_filled(compile_cache: str, timeout: float = 10.0) -> bool:
    """Whether the exported forward pass is next to ``compile_cache`` within ``timeout`` s (the first start
    writes it before its first move)."""
    forward = os.path.normpath(compile_cache) + "-forward"
    end = time.time() + timeout
    while time.time() < end:
        if os.path.isdir(forward) and any(not e.name.startswith(".") for e in os.scandir(forward)):
            return True
        time.sleep(0.2)
    return False


def quit_while_loading(argv: list[str], cwd: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, input="quit\n", capture_output=True, text=True, timeout=120, cwd=cwd, env=ENV)
    if proc.returncode != 0 or not proc.stdout.startswith("="):
        raise RuntimeError(f"{argv}: quit gave rc {proc.returncode}, {proc.stdout!r} {proc.stderr[-300:]!r}")
    return round(time.perf_counter() - t0, 3)


def export(net: str, out: str) -> None:
    proc = subprocess.run([*kifunet_command(), "export", os.path.join(ROOT, "pretrained", net), "--out", out],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"export of {net} failed: {proc.stderr[-500:]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nets", nargs="+", default=list(NETS), help="pretrained/ runs (default: every shipped net)")
    p.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    p.add_argument("--reps", type=int, default=5, help="repetitions per net and path (default 5)")
    p.add_argument("--cache", choices=("warm", "cold", "off"), default="warm",
                   help="the JAX path's caches at each start (module docstring; default warm)")
    p.add_argument("--no-compile-cache", action="store_true", help="the same as --cache off")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "gtp_start.json"))
    args = p.parse_args(argv)
    if args.no_compile_cache:
        args.cache = "off"

    base = kifunet_command()
    load_before = uptime()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_gtp_start_") as tmp:
        for net in args.nets:
            for path in args.paths:
                if path == "jax":
                    cmd = [*base, "gtp", "--checkpoint", os.path.join(ROOT, "pretrained", net)]
                else:
                    onnx = os.path.join(tmp, net.replace("/", "_") + ".onnx")
                    export(net, onnx)
                    cmd = [*base, "gtp", "--model", onnx]
                runs = []
                for i in range(args.reps + (path == "jax" and args.cache == "warm")):
                    if args.cache == "off":
                        ENV["KIFUNET_JAX_CACHE"] = "off"
                    elif args.cache == "cold" or i == 0:
                        ENV["KIFUNET_JAX_CACHE"] = tempfile.mkdtemp(prefix="jax-", dir=tmp)
                    run = one_start(cmd, tmp)
                    if path == "jax" and args.cache == "warm" and i == 0:
                        if not forward_cache_filled(ENV["KIFUNET_JAX_CACHE"]):
                            raise RuntimeError(f"{net}: kifunet gtp wrote no forward cache entry")
                        continue  # the untimed start that fills the cache
                    runs.append(run)
                q = quit_while_loading(cmd, tmp)
                row = {"net": net, "path": path, "command": " ".join(cmd[len(base):]),
                       "name_s_median": statistics.median(r["name_s"] for r in runs),
                       "genmove_s_median": statistics.median(r["genmove_s"] for r in runs),
                       "exit_s_median": statistics.median(r["exit_s"] for r in runs),
                       "quit_while_loading_s": q, "runs": runs}
                results.append(row)
                print(f"{net:22s} {path:4s}  name {row['name_s_median']:5.2f} s  first genmove "
                      f"{row['genmove_s_median']:5.2f} s  (median of {args.reps}; quit while loading {q:.2f} s)",
                      flush=True)
    doc = {"benchmark": "bench_gtp_start", "reps": args.reps, "cache": args.cache,
           "cpus": os.cpu_count(), "python": platform.python_version(), "machine": platform.machine(),
           "uptime_before": load_before, "uptime_after": uptime(),
           "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"load before: {load_before}\nload after:  {doc['uptime_after']}\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
