"""The training-step speed of the ingredient table's rows, side by side: each row's config
(``train/configs/ingredients.py`` with the row's overrides, ``scripts/ingredients.py``), timed in turns.

    nice -n 5 python benchmarks/bench_ingredient_speed.py --out benchmarks/results/ingredients/speed.json
    python benchmarks/bench_ingredient_speed.py --rows base extra_block chain_1x32 --rounds 3 --steps 5

Every row's step is compiled first (the real data-parallel step over the config's ``cpu_devices``, state donated,
one random batch of the config's size on the devices: :func:`bench_train_step.prepare`), then ``--rounds`` rounds
each time ``--steps`` steps of every row in turn, so a change in the machine's load falls on all rows alike. A row's
figure is the median over its rounds of positions/s; its ratio to ``base`` is the median of the per-round ratios.
Rows that differ from another only in the seed or the schedule (``*_seed1``, ``constant*``) run the same step and
are left out; issue 51's claim rows (``scripts/ingredients.py`` ``CLAIM_ROWS``) are timed when named in ``--rows``. Prints a Markdown table and writes the JSON (with the load average before and after) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "scripts"))

import ingredients as ing  # noqa: E402

SAME_STEP = ("base_seed1", "constant", "constant_seed1")  # the base's step: only the seed or schedule differs


def rows_to_time(names=None) -> list[str]:
    """The rows ``names`` (default: the ingredient table's, issue 51's claim rows left out) that have a step of
    their own."""
    names = list(names or (n for n in ing.ROWS if n not in ing.CLAIM_ROWS))
    return [n for n in names if n not in SAME_STEP and not n.endswith("_seed1")]


def table(res: dict) -> str:
    """Markdown: each timed row's positions/s (median of its rounds) and its ratio to ``base``."""
    out = ["| row | change | positions/s (median of rounds) | / base |", "|---|---|---:|---:|"]
    out += [f"| `{r['row']}` | {r['change']} | {r['positions_per_s']:,.0f} | {r['ratio_to_base']:.2f} |"
            for r in res["rows"]]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="*", default=None, help="rows (default: every row with a step of its own)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5, help="timed steps per row per round")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    names = rows_to_time(a.rows)
    if "base" not in names:
        names.insert(0, "base")

    from kifunet.data_prep.planes import features
    from kifunet.train import parallel

    cfgs = {n: ing.row_config(ing.ROWS[n]) for n in names}
    parallel.use_cpu_devices(int(cfgs["base"].cpu_devices))  # as `kifunet train` does, before JAX starts
    import jax

    import bench_train_step as bts

    load_before, prepared, compile_s = os.getloadavg(), {}, {}
    for n in names:
        cfg = cfgs[n]
        planes = features.get(features.with_constant_planes(ing.ROWS[n].features, cfg.input.add_planes)).num_planes
        mesh = parallel.make_mesh(cfg.num_devices)
        step, state, batch = bts.prepare(cfg, planes, mesh)
        t0 = time.perf_counter()
        state, m = step(state, batch)
        jax.block_until_ready(m)
        compile_s[n] = time.perf_counter() - t0
        prepared[n] = [step, state, batch, cfg.batch_size]
        print(f"compiled {n} ({compile_s[n]:.1f} s)", file=sys.stderr, flush=True)
    rates = {n: [] for n in names}
    for r in range(a.rounds):
        for n in names:
            step, state, batch, b = prepared[n]
            state, m = step(state, batch)  # one untimed step: this row's arrays back in the caches
            jax.block_until_ready(m)
            t0 = time.perf_counter()
            for _ in range(a.steps):
                state, m = step(state, batch)
            jax.block_until_ready(m)
            rates[n].append(a.steps * b / (time.perf_counter() - t0))
            prepared[n][1] = state
        print(f"round {r + 1}/{a.rounds}: " + ", ".join(f"{n} {rates[n][-1]:.0f}" for n in names), file=sys.stderr,
              flush=True)
    rows = [{"row": n, "change": ing.ROWS[n].change, "batch": prepared[n][3], "compile_s": round(compile_s[n], 2),
             "positions_per_s": statistics.median(rates[n]), "rounds": rates[n],
             "ratio_to_base": statistics.median(x / y for x, y in zip(rates[n], rates["base"]))} for n in names]
    res = {"script": "benchmarks/bench_ingredient_speed.py", "argv": sys.argv[1:], "device": jax.devices()[0].device_kind,
           "devices": len(jax.devices()), "rounds": a.rounds, "steps": a.steps,
           "loadavg_before": [round(x, 2) for x in load_before],
           "loadavg_after": [round(x, 2) for x in os.getloadavg()],
           "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "rows": rows}
    print(table(res))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
