"""A GTP engine under a memory limit, timing each answer: ``python tests/gtp_bounded.py LIMIT_BYTES SIZE``.

Reads GTP lines on stdin and answers each with one JSON line on stdout: ``{"s": seconds the engine took,
"answer": the response (long ones cut to 2,000 characters), "rss_mb": peak resident memory so far, ``VmHWM``}``. The
address space is limited to LIMIT_BYTES (``RLIMIT_AS``), so an engine that reads or keeps without bound fails
here (``MemoryError``) instead of taking the machine. The policy is a fixed table on SIZE x SIZE (no net).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np
from gtp_fakes import FakePolicy


class TablePolicy(FakePolicy):
    """The same probabilities for every position."""

    def __init__(self, n: int):
        p = np.linspace(1.0, 2.0, n * n + 1)
        self.probs = p / p.sum()
        self.board_size, self.has_pass, self.description = n, False, "table"

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        return self.probs


def peak_rss_mb() -> float:
    """Peak resident memory of this program (``VmHWM``): unlike ``getrusage``'s ``ru_maxrss``, which keeps the
    peak of the process before ``exec`` (a forked copy of a large test runner), it counts this program only."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    limit, size = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from kifunet.play.gtp_engine import Engine

    engine = Engine(TablePolicy(size))
    for line in sys.stdin:
        t0 = time.perf_counter()
        try:
            answer = engine.handle(line)
        except MemoryError:
            answer = "MemoryError"
        seconds = time.perf_counter() - t0
        rss = peak_rss_mb()
        print(json.dumps({"s": seconds, "answer": (answer or "")[:2000], "rss_mb": rss}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
