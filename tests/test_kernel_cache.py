"""The compiled-kernel cache (data_prep/_jit.py): with a fresh ``KIFUNET_CACHE_DIR`` the first process compiles
the numba kernels and writes them under ``$KIFUNET_CACHE_DIR/numba/<numba version>-<hash of the kernel sources>``;
a second process loads every one of them from there and compiles none (numba's own cache statistics), writing
nothing new."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the first process compiles every kernel (about 30 s)

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "gnugo" / "gnugo-0000.sgf"

# Replays one game with every feature set (all the kernels: board, ladders, analysis, features) and reports
# numba's cache statistics of every kifunet dispatcher that ran.
CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    from numba.core.registry import CPUDispatcher
    from kifunet.data_prep import _jit, replay, sgf_io
    path = sys.argv[1]
    rec = sgf_io.load_game(open(path, "rb").read(), path=path)
    for fs in ("maddison", "alphago", "agz", "gonn+nogo_liberties"):
        replay.encode_game(rec, fs, path=path)
    seconds = time.perf_counter() - t0
    kernels = {}  # name -> [signatures, cache hits, cache misses]
    for name, mod in list(sys.modules.items()):
        if not name.startswith("kifunet."):
            continue
        for attr, f in vars(mod).items():
            if isinstance(f, CPUDispatcher) and f.signatures and f.__module__ == name:
                st = f.stats
                kernels[f"{name}.{attr}"] = [len(f.signatures), sum(st.cache_hits.values()),
                                             sum(st.cache_misses.values())]
    print("RESULT " + json.dumps({"cache_dir": str(_jit.CACHE_DIR), "kernels": kernels, "seconds": seconds}))
""")


def _run(cache: Path) -> dict:
    env = dict(os.environ, KIFUNET_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    p = subprocess.run([sys.executable, "-c", CHILD, str(SAMPLE)], env=env, capture_output=True, text=True,
                       timeout=600)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and line, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(line[0][len("RESULT "):])


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_a_second_process_loads_the_kernels_instead_of_compiling(tmp_path):
    import numba

    cache = tmp_path / "kcache"
    first = _run(cache)
    cache_dir = Path(first["cache_dir"])
    assert cache_dir.parent == cache / "numba" and cache_dir.name.startswith(numba.__version__ + "-")
    files = _files(cache)
    index = [f for f in files if f.endswith(".nbi")]
    data = [f for f in files if f.endswith(".nbc")]
    assert index and data and all(cache_dir in Path(cache, f).parents for f in files), sorted(files)[:10]
    # the first process compiled (and saved) every kernel it ran: a fresh cache has nothing to load
    k1 = first["kernels"]
    assert len(k1) >= 10 and all(hits == 0 and misses >= sigs for sigs, hits, misses in k1.values()), k1

    second = _run(cache)
    k2 = second["kernels"]
    print(f"first process {first['seconds']:.1f} s, {sum(v[2] for v in k1.values())} kernel signatures compiled; "
          f"second {second['seconds']:.1f} s, {sum(v[1] for v in k2.values())} loaded from the cache, "
          f"{sum(v[2] for v in k2.values())} compiled")
    assert second["cache_dir"] == first["cache_dir"]
    # the kernels called from Python load whole from the cache (the kernels they call are inside them, so those
    # never need their own dispatchers in the second process): every signature a cache hit, none compiled
    assert k2 and set(k2) <= set(k1) and "kifunet.data_prep.analysis.replay_game" in k2, k2
    assert all(misses == 0 and hits == sigs for sigs, hits, misses in k2.values()), k2
    assert _files(cache) == files  # nothing rewritten, nothing added
    assert second["seconds"] < first["seconds"] / 3, (first["seconds"], second["seconds"])
