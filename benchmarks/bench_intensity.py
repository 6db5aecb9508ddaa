"""Arithmetic intensity of each config's training step in XLA's cost model: FLOPs and bytes accessed of the
compiled step (``compiled.cost_analysis()``), their ratio, and the analytical FLOPs beside them.

    nice -n 5 python benchmarks/bench_intensity.py --configs gonn5 cazenave10 --out FILE.json

The step is the real data-parallel one on one device at ``--batch`` (default 256, as the device table), compiled
for the default backend (here the CPU). A GPU compile fuses differently, so the bytes are the CPU compiler's
estimate, not a GPU's traffic: compare configs with each other, not with a GPU's bandwidth. Prints one JSON line
per config and writes them all to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_train_step as bts  # noqa: E402


def measure(name: str, batch: int) -> dict:
    from kifunet import models
    from kifunet.data_prep.planes import features
    from kifunet.train import configs, parallel

    cfg = configs.load_file(os.path.join(bts.CONFIG_DIR, f"{name}.py"))
    cfg.batch_size = batch
    planes = features.get(cfg.expect_features or "maddison").num_planes
    step, state, b = bts.prepare(cfg, planes, parallel.make_mesh(1))
    t0 = time.perf_counter()
    cost = step.lower(state, b).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    flops, nbytes = float(cost["flops"]), float(cost["bytes accessed"])
    analytical = float(models.train_flops(models.create(cfg.model.name, in_planes=planes, **dict(cfg.model.kwargs))))
    return {"config": name, "model": cfg.model.name, "batch": batch, "backend": jax.default_backend(),
            "compile_s": round(time.perf_counter() - t0, 1), "flops": flops, "bytes_accessed": nbytes,
            "flops_per_byte": flops / nbytes, "flops_per_position": flops / batch,
            "analytical_train_flops_per_position": analytical}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=["maddison12", "alphago13_192", "cazenave10", "gonn5", "gonn12"])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    rows = []
    for name in a.configs:
        rows.append(measure(name, a.batch))
        print(json.dumps(rows[-1]), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"script": "benchmarks/bench_intensity.py", "argv": sys.argv[1:],
                       "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "rows": rows}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
