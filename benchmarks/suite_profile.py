"""Where the test suite's CPU time goes: a pytest plugin that records each test's CPU and wall time, and a summary.

    PYTHONPATH=benchmarks PYTEST_ADDOPTS="-p suite_profile" SUITE_PROFILE_OUT=runs/suite.jsonl python -m pytest -q
    python benchmarks/suite_profile.py runs/suite.jsonl            # CPU and wall time per file, the longest first

Each test (setup, call and teardown; a module fixture counts in the first test that uses it) appends one JSON line
to ``$SUITE_PROFILE_OUT``: its node id, the pytest-xdist worker, its start, its wall seconds, and the CPU seconds of
the worker process itself (``self``) and of the processes it started and waited for (``children``: a `kifunet`
command, a training run; not the workers of a pool that outlives the test). On a 2-core machine the suite is bound
by CPU time, so ``self + children`` summed over all tests is what a change to the suite must lower.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import sys
import time

OUT_ENV = "SUITE_PROFILE_OUT"


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


try:
    import pytest
except ImportError:  # the summary needs no pytest
    pytest = None

if pytest is not None:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        own0, kids0 = _cpu()
        t0 = time.time()
        yield
        own1, kids1 = _cpu()
        rec = {"id": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", ""), "start": round(t0, 3),
               "wall": round(time.time() - t0, 3), "self": round(own1 - own0, 3), "children": round(kids1 - kids0, 3)}
        with open(os.environ.get(OUT_ENV, "suite_profile.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")


def summary(path: str, top: int = 30) -> str:
    """Per test file: CPU seconds (self + children), wall seconds summed over its tests, and tests; then totals."""
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    cpu, wall, count = collections.Counter(), collections.Counter(), collections.Counter()
    for r in rows:
        name = r["id"].split("::")[0]
        cpu[name] += r["self"] + r["children"]
        wall[name] += r["wall"]
        count[name] += 1
    lines = [f"{'CPU s':>8} {'wall s':>8} {'tests':>6}  file"]
    lines += [f"{c:8.1f} {wall[n]:8.1f} {count[n]:6d}  {n}" for n, c in cpu.most_common(top)]
    end = max((r["start"] + r["wall"] for r in rows), default=0.0)
    first = min((r["start"] for r in rows), default=0.0)
    lines.append(f"{len(rows)} tests: {sum(cpu.values()) / 60:.1f} CPU-minutes recorded, first start to last end "
                 f"{end - first:.0f} s")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", help="the file $SUITE_PROFILE_OUT named")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    print(summary(args.jsonl, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
