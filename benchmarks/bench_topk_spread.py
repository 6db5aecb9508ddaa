"""How far the pretrained nets' recorded slice figures move under other float orderings, against a real change.

    nice -n 10 python benchmarks/bench_topk_spread.py --archive ../shared/data/kgs/KGS-2015-19-8133-.tar.gz

Holds the measurement behind ``tests/test_pretrained.py``'s ``TOPK_TOLERANCE`` and ``NATS_TOLERANCE``. For each
net (``--nets``, default the two hour-long KGS nets) it builds the test's slice (every position of the archive's
games dated 2015-01-01 kept by the GoNN protocol, the net's feature set) once, then runs the test's
``kifunet eval`` on it once per variant:

* ``default``: the test's command as it is;
* ``isa_avx2``, ``isa_sse4_2``: ``XLA_FLAGS=--xla_cpu_max_isa=...`` (XLA:CPU codegen limited to that instruction
  set: other vector widths and FMA use, what another x86-64 CPU model gets);
* ``vector_128``: ``XLA_FLAGS=--xla_cpu_prefer_vector_width=128``;
* ``batch_64``: ``--batch-size 64`` (other shapes: other tilings of the convolutions);
* ``skip_symmetry``: the real change the test must catch: the ensemble averages 7 of its 8 symmetries (a
  ``sitecustomize`` on ``PYTHONPATH`` drops the last pass; the single pass is unchanged).

Output (``--out``, default ``benchmarks/results/topk_spread.json``): per net and variant the top-1..10 counts and the
nats of the single pass and the ensemble minus the net's recorded figures (``pretrained/NET/eval/
kgs2015_0101_slice.json``), the seconds, and per net the largest count and nats moves of the float variants
(``spread``) beside the skipped symmetry's (``mutation``); the 1-minute load average of each run. An existing
``--out`` from the same CPU model keeps the nets this run does not measure.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDED = "kgs2015_0101_slice.json"
NETS = ("kgs_cpu_small", "kgs_cpu_default")
# the test's build and eval options (tests/test_pretrained.py SLICE_BUILD, SLICE_EVAL)
SLICE_BUILD = ["--preset", "gonn-kgs", "--split", "test:2015", "--date-from", "2015-01-01",
               "--date-to", "2015-01-01", "--workers", "0", "--no-progress"]
SLICE_EVAL = ["--split", "test", "--ensemble", "--cpu-devices", "1", "--no-breakdowns", "--no-progress"]
#: variant -> (XLA_FLAGS, batch size, ensemble of 7 symmetries)
VARIANTS = {
    "default": ("", 256, False),
    "isa_avx2": ("--xla_cpu_max_isa=AVX2", 256, False),
    "isa_sse4_2": ("--xla_cpu_max_isa=SSE4_2", 256, False),
    "vector_128": ("--xla_cpu_prefer_vector_width=128", 256, False),
    "batch_64": ("", 64, False),
    "skip_symmetry": ("", 256, True),
}
SKIP_SYMMETRY = '''
from kifunet.eval import evaluate as _evaluate

_eight = _evaluate.Predictor.predict_symmetries_with_value


def _seven(self, batch, *, pad_to=None):
    outs, values = _eight(self, batch, pad_to=pad_to)
    return outs[:7], (None if values is None else values[:7])


_evaluate.Predictor.predict_symmetries_with_value = _seven
'''


def _kifunet(args: list[str], env: dict) -> None:
    p = subprocess.run([sys.executable, "-m", "kifunet.cli", *args], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"kifunet {' '.join(args[:1])} failed ({p.returncode}):\n{p.stderr[-3000:]}")


def _moves(got: dict, want: dict) -> dict:
    out = {}
    for kind in ("single", "ensemble"):
        g, w = got["results"][kind], want[kind]
        out[kind] = {"topk": [a - b for a, b in zip(g["topk_correct"], w["topk_correct"])],
                     "nats": g["cross_entropy_nats"] - w["cross_entropy_nats"]}
    return out


def measure(net: str, archive: str, variants: list[str], tmp: str) -> dict:
    run = os.path.join(ROOT, "pretrained", net)
    want = json.load(open(os.path.join(run, "eval", RECORDED)))
    features = json.load(open(os.path.join(run, "config.json")))["expect_features"]
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PYTHONPATH")}
    env["JAX_PLATFORMS"] = "cpu"
    ds = os.path.join(tmp, f"slice_{features}")
    if not os.path.isdir(ds):
        _kifunet(["build", archive, "--out", ds, "--features", features, *SLICE_BUILD], env)
    shim = os.path.join(tmp, "skip_symmetry")
    os.makedirs(shim, exist_ok=True)
    with open(os.path.join(shim, "sitecustomize.py"), "w") as f:
        f.write(SKIP_SYMMETRY)
    rows = {}
    for name in variants:
        flags, batch, seven = VARIANTS[name]
        venv = dict(env, **({"XLA_FLAGS": flags} if flags else {}), **({"PYTHONPATH": shim} if seven else {}))
        out = os.path.join(tmp, f"{net}_{name}.json")
        t0 = time.monotonic()
        reused = os.path.isfile(out)  # --work of an interrupted run: its finished evaluations count
        if not reused:
            _kifunet(["eval", "--checkpoint", run, "--data", ds, *SLICE_EVAL, "--batch-size", str(batch),
                      "--out", out], venv)
        rows[name] = {"xla_flags": flags, "batch_size": batch, "symmetries": 7 if seven else 8,
                      "seconds": None if reused else round(time.monotonic() - t0, 1),
                      "load_1min": None if reused else round(os.getloadavg()[0], 2),
                      "minus_recorded": _moves(json.load(open(out)), want)}
        print(f"{net} {name}: {json.dumps(rows[name]['minus_recorded'])} ({rows[name]['seconds']} s)", flush=True)
    floats = [r["minus_recorded"] for n, r in rows.items() if n != "skip_symmetry"]
    summary = {"rows": rows, "positions": want["positions"]}
    if floats:
        summary["spread"] = {"max_abs_topk": max(abs(x) for r in floats for k in r.values() for x in k["topk"]),
                             "max_abs_nats": max(abs(k["nats"]) for r in floats for k in r.values())}
    if "skip_symmetry" in rows:
        m = rows["skip_symmetry"]["minus_recorded"]["ensemble"]
        summary["mutation"] = {"max_abs_topk": max(map(abs, m["topk"])), "abs_nats": abs(m["nats"])}
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archive", required=True, help="the KGS 2015 archive (KGS-2015-19-8133-.tar.gz)")
    ap.add_argument("--nets", nargs="+", default=list(NETS), choices=NETS)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "topk_spread.json"))
    ap.add_argument("--work", default=None, metavar="DIR",
                    help="keep the slices and eval outputs here (a rerun reuses both; default: a temporary dir)")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.archive):
        print(f"bench_topk_spread: error: {args.archive}: no such file", file=sys.stderr)
        return 2
    result = {"what": __doc__.split("\n\n")[0], "command": " ".join(["python", *sys.argv]),
              "machine": {"cpu": _cpu(), "cores": os.cpu_count(), "python": platform.python_version(),
                          "jax": importlib.metadata.version("jax"), "jaxlib": importlib.metadata.version("jaxlib")},
              "nets": {}}
    try:  # the nets measured before on this machine stay (--nets measures some of them again)
        with open(args.out) as f:
            before = json.load(f)
        if before.get("machine", {}).get("cpu") == result["machine"]["cpu"]:
            result["nets"] = {n: r for n, r in before.get("nets", {}).items() if n not in args.nets}
            result["earlier_commands"] = [*before.get("earlier_commands", []), before.get("command")]
    except (OSError, ValueError):
        pass
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        for net in args.nets:
            result["nets"][net] = measure(net, args.archive, args.variants, work)
            with open(args.out, "w") as f:  # after each net: a long run keeps what it measured
                f.write(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        return platform.processor()


if __name__ == "__main__":
    sys.exit(main())
