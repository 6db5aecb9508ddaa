"""Background prefetch (train/prefetch.py)."""

from __future__ import annotations

import numpy as np

from kifunet.train.prefetch import Prefetcher


def test_prefetcher_reads_plain_generators_too():
    """Evaluation batches (a generator, no ``get_state``) go through the same background prefetch."""
    pre = Prefetcher((dict(x=np.full(2, i)) for i in range(5)), fn=lambda b: {k: v * 10 for k, v in b.items()})
    try:
        assert [int(b["x"][0]) for b in pre] == [0, 10, 20, 30, 40] and pre.state is None
    finally:
        pre.close()
