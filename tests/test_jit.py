"""The compiled-kernel cache and its notice (data_prep/_jit.py).

With a fresh ``KIFUNET_CACHE_DIR`` the first process compiles the numba kernels, says so once on stderr (the main
process, not each worker) and writes them under ``$KIFUNET_CACHE_DIR/numba/<numba version>-<hash of the kernel
sources>``; later processes load every kernel from there (numba's own cache statistics: all hits, no misses),
write nothing new and say nothing. One cold compile (about 30 s) is shared by the tests of this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kifunet.data_prep import _jit

ROOT = Path(__file__).resolve().parents[1]
GAME = str(ROOT / "samples" / "gnugo" / "gnugo-0000.sgf")
#: the build's feature set and the child's: every kernel (board, ladders, analysis, features) runs for it
FEATURES = "gonn+nogo_liberties"

# Replays one game and reports numba's cache statistics of every kifunet dispatcher that ran.
CHILD = textwrap.dedent(f"""
    import json, sys, time
    t0 = time.perf_counter()
    from numba.core.registry import CPUDispatcher
    from kifunet.data_prep import _jit
    from kifunet.data_prep.planes import features, replay
    from kifunet.data_prep.sgf import sgf_io
    path = sys.argv[1]
    rec = sgf_io.load_game(open(path, "rb").read(), path=path)
    replay.encode_game(rec, features.get({FEATURES!r}), path=path)
    seconds = time.perf_counter() - t0
    kernels = {{}}  # name -> [signatures, cache hits, cache misses]
    for name, mod in list(sys.modules.items()):
        if not name.startswith("kifunet."):
            continue
        for attr, f in vars(mod).items():
            if isinstance(f, CPUDispatcher) and f.signatures and f.__module__ == name:
                st = f.stats
                kernels[f"{{name}}.{{attr}}"] = [len(f.signatures), sum(st.cache_hits.values()),
                                               sum(st.cache_misses.values())]
    print("RESULT " + json.dumps({{"cache_dir": str(_jit.CACHE_DIR), "kernels": kernels, "seconds": seconds}}))
""")


def _env(cache: Path) -> dict:
    env = dict(os.environ, KIFUNET_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    return env


def kifunet(*argv, cwd, cache: Path):
    return subprocess.run([sys.executable, "-m", "kifunet.cli", *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, timeout=600, env=_env(cache))


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """``kifunet build`` with two workers on a fresh cache: (work dir, cache, the process, its seconds)."""
    work = tmp_path_factory.mktemp("jit")
    cache = work / "cache"
    t0 = time.monotonic()
    proc = kifunet("build", GAME, "--out", work / "a", "--features", FEATURES, "--workers", "2", "--no-progress",
                   cwd=work, cache=cache)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    return work, cache, proc, seconds


def test_announce_compile_only_when_the_cache_lacks_the_kernels(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_jit, "CACHE_DIR", tmp_path / "numba" / "hash")
    monkeypatch.setattr(_jit, "_announced", False)
    assert not _jit.kernels_cached()
    assert _jit.announce_compile() and not _jit.announce_compile()  # once per process
    assert capsys.readouterr().err == _jit.COMPILE_MESSAGE + "\n"
    # what numba writes for the entry kernel, in its folder for this source directory
    here = os.path.join(os.path.dirname(os.path.abspath(_jit.__file__)), "rules")  # where the entry kernel is
    sub = tmp_path / "numba" / "hash" / f"{os.path.basename(here)}_{hashlib.sha1(here.encode()).hexdigest()}"
    sub.mkdir(parents=True)
    (sub / f"{_jit.ENTRY_KERNEL}-194.py311.nbi").write_bytes(b"")
    monkeypatch.setattr(_jit, "_announced", False)
    assert _jit.kernels_cached() and not _jit.announce_compile()
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # the cold compile (about 30 s, more on a loaded machine)
def test_first_run_says_it_compiles_once_and_later_runs_do_not(cold):
    work, cache, first, _ = cold
    assert first.stderr.count(_jit.COMPILE_MESSAGE) == 1, first.stderr  # the main process says it, not each worker
    lines = [ln for ln in first.stderr.splitlines() if not ln.startswith("spill: ")]  # the build's space estimate
    assert lines[0] == _jit.COMPILE_MESSAGE, first.stderr  # before any work is reported
    assert list(cache.rglob(f"{_jit.ENTRY_KERNEL}-*.nbi"))
    for argv in (["build", GAME, "--out", work / "b", "--features", FEATURES, "--workers", "0", "--no-progress"],
                 ["features", "maddison", "--sgf", GAME, "--move", "10"]):
        again = kifunet(*argv, cwd=work, cache=cache)
        assert again.returncode == 0, again.stderr
        assert _jit.COMPILE_MESSAGE not in again.stderr, again.stderr


@pytest.mark.slow
def test_a_second_process_loads_the_kernels_instead_of_compiling(cold):
    import numba

    _, cache, _, cold_seconds = cold
    p = subprocess.run([sys.executable, "-c", CHILD, GAME], env=_env(cache), capture_output=True, text=True,
                       timeout=600)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and line, p.stdout[-3000:] + p.stderr[-3000:]
    second = json.loads(line[0][len("RESULT "):])
    cache_dir = Path(second["cache_dir"])
    assert cache_dir.parent == cache / "numba" and cache_dir.name.startswith(numba.__version__ + "-")
    files = _files(cache)
    assert [f for f in files if f.endswith(".nbi")] and [f for f in files if f.endswith(".nbc")]
    assert all(cache_dir in Path(cache, f).parents for f in files), sorted(files)[:10]
    k2 = second["kernels"]
    print(f"cold build {cold_seconds:.1f} s; second process {second['seconds']:.1f} s, "
          f"{sum(v[1] for v in k2.values())} kernel signatures loaded from the cache, "
          f"{sum(v[2] for v in k2.values())} compiled")
    # the kernels called from Python load whole from the cache (the kernels they call are inside them, so those
    # never need their own dispatchers in the second process): every signature a cache hit, none compiled
    assert "kifunet.data_prep.rules.analysis.replay_game" in k2, k2
    assert all(misses == 0 and hits == sigs for sigs, hits, misses in k2.values()), k2
    assert _files(cache) == files  # nothing rewritten, nothing added
    assert second["seconds"] < cold_seconds / 3, (cold_seconds, second["seconds"])
