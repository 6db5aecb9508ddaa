"""Forward passes per second of a trained run's net, on 1 or N JAX devices (the evaluator's data-parallel path).

    python benchmarks/bench_eval_forward.py --checkpoint runs/kgs_cpu_small --data data/kgs_maddison --devices 1
    python benchmarks/bench_eval_forward.py --checkpoint runs/kgs_cpu_small --data data/kgs_maddison --devices 2

Each run is its own process (JAX's CPU device count is fixed when its backend starts). The batch (``--batch``
rows of the test split, full planes) and the replicated weights are placed as :class:`kifunet.eval.evaluate.Predictor`
places them (batch split along a 1-D ``'data'`` mesh); after one compiling call, ``--iters`` calls are timed
with ``block_until_ready``. It measures the forward pass alone: reading, symmetries and metrics are not included.
On the idle 2-core machine (cpu_small trained 60 minutes on KGS, batch 512): 1 device 1,873 positions/s,
2 devices 3,981 (benchmarks/results/eval_forward_cpu_small_*dev.json).
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--devices", type=int, default=1, help="JAX CPU devices (jax_num_cpu_devices)")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", default=None, help="JSON output file")
    args = ap.parse_args(argv)

    from kifunet.train.parallel import use_cpu_devices

    use_cpu_devices(args.devices)
    import jax
    import numpy as np

    from kifunet.data_prep.datasets.reader import Reader
    from kifunet.eval.runs import load_run

    pred = load_run(args.checkpoint, dataset=args.data)
    rows = Reader(args.data, args.split).read_range(0, args.batch)
    x = jax.device_put((rows["planes"], rows["player_rank"].astype(np.int32), rows["to_move"].astype(np.int32)),
                       pred._batch_sharding)
    # the nets benchmarked here have no profile input
    pred.net(*x).logits.block_until_ready()
    t = time.perf_counter()
    for _ in range(args.iters):
        pred.net(*x).logits.block_until_ready()
    dt = time.perf_counter() - t
    res = {"checkpoint": args.checkpoint, "devices": jax.device_count(), "batch": args.batch, "iters": args.iters,
           "positions_per_s": args.iters * args.batch / dt}
    print(json.dumps(res))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
