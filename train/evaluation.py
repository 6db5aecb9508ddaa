"""The evaluation of a training run: top-1, top-4, nats, loss, value metrics and the trained heads' figures over
each dataset's evaluation split, summed on the devices and fetched once. A mixture's record keeps the first
dataset's metrics under the usual keys and adds ``by_dataset``."""

from __future__ import annotations

import math
import time

import jax

from kifunet.train import parallel
from kifunet.train.dispatch import InFlight, fetch
from kifunet.train.eval_batches import eval_batches
from kifunet.train.prefetch import Prefetcher
from kifunet.train.steps import head_metrics_of, value_metrics


def finite(metrics: dict) -> dict:
    """The metrics that are numbers (a value MSE over no known row is NaN: left out of the records)."""
    return {k: v for k, v in metrics.items() if math.isfinite(v)}


def evaluate(eval_fn, state, config, mesh, source, *, limit: int, value: bool = False, heads: tuple = (),
             stop=None) -> dict:
    """Top-1, top-4, nats and loss (and a two-headed net's value metrics, the ``heads``' ownership accuracy and
    score MAE: :func:`kifunet.train.steps.head_metrics_of`) over the first ``limit`` rows (0: all) of ``source``.
    ``eval_fn``: ``data_parallel(summed(eval_step(...)), mesh, carry=True)`` (the same ``heads``); batches
    prefetched, the last one padded; ``stop``: read after every batch, true ends it at once with ``{}``."""
    pc = jax.process_count()
    t0 = time.perf_counter()
    batches = eval_batches(source, batch_size=config.eval_batch_size // pc, process_index=jax.process_index(),
                           process_count=pc, limit=limit, host_dtype=config.input.host_dtype)
    prefetch = Prefetcher(batches, fn=lambda b: parallel.shard_batch(b, mesh), depth=config.input.prefetch)
    sums = parallel.empty_sums(mesh, value=value, heads=heads)
    inflight = InFlight(config.max_steps_ahead)
    try:
        for batch in prefetch:
            sums = eval_fn(state, batch, sums)
            inflight.push(sums)
            if stop is not None and pc == 1 and stop():
                return {}
    finally:
        prefetch.close()
    sums = {k: float(v) for k, v in fetch(sums).items()}
    n = sums.get("count", 0.0)
    if n <= 0:
        return {}
    return {"loss": sums["loss_sum"] / n, "nats": sums["nats_sum"] / n, "top1": sums["top1_sum"] / n,
            "top4": sums["top4_sum"] / n, "eval_positions": n, **finite(value_metrics(sums)),
            **finite(head_metrics_of(sums)), "seconds": time.perf_counter() - t0}


def evaluate_datasets(eval_fn, state, config, mesh, data, *, limit: int, value: bool = False, heads: tuple = (),
                      stop=None) -> dict:
    """:func:`evaluate` on the evaluation split of every dataset of ``data``; a ``stop`` between two
    datasets gives ``{}``."""
    if not data.mixed:
        return evaluate(eval_fn, state, config, mesh, data.evals[0], limit=limit, value=value, heads=heads,
                        stop=stop)
    by = {}
    for root, source in zip(data.roots, data.evals):
        one = evaluate(eval_fn, state, config, mesh, source, limit=limit, value=value, heads=heads, stop=stop)
        if not one and stop is not None and stop():
            return {}
        by[root] = one
    return {**by[data.roots[0]], "by_dataset": by} if by[data.roots[0]] else {}


def seconds(record: dict) -> float:
    """The wall time of an evaluation record (a mixture's: all its datasets')."""
    if "by_dataset" in record:
        return sum(one.get("seconds", 0.0) for one in record["by_dataset"].values())
    return record.get("seconds", 0.0)


__all__ = ["evaluate", "evaluate_datasets", "finite", "seconds"]
