"""Throughput, data wait and learning curve of a training run, from its metrics files.

    python benchmarks/run_summary.py pretrained/kgs_cpu_small

Reads ``metrics_train.jsonl`` (one record per log window: ``positions_per_s``, ``data_wait_fraction``) and
``metrics_eval.jsonl`` (the periodic evaluations) and the newest checkpoint's metadata (positions, training
seconds); prints the overall and median positions/s, the mean and worst data-wait fraction and the curve.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    args = ap.parse_args(argv)
    from kifunet.eval.plots import read_jsonl
    from kifunet.train.checkpointing import load_weights

    train = read_jsonl(os.path.join(args.run, "metrics_train.jsonl"))
    evals = read_jsonl(os.path.join(args.run, "metrics_eval.jsonl"))
    _, meta = load_weights(args.run)
    rates = [r["positions_per_s"] for r in train if "positions_per_s" in r]
    waits = [r["data_wait_fraction"] for r in train if "data_wait_fraction" in r]
    out = {"positions": meta["positions"], "train_seconds": meta["train_seconds"],
           "positions_per_s_overall": meta["positions"] / meta["train_seconds"],
           "positions_per_s_median_window": statistics.median(rates),
           "data_wait_mean": sum(waits) / len(waits), "data_wait_max": max(waits),
           "curve": [{k: e[k] for k in ("positions", "top1", "top4", "nats", "eval_positions")} for e in evals]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
