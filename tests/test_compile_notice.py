"""Slow first runs say why (issue 13, item 16): compiling the rules engine is announced once, on stderr, and
``kifunet show`` checks its inputs before it loads the net."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kifunet.data_prep import _jit

ROOT = Path(__file__).resolve().parents[1]
GAME = str(ROOT / "samples" / "gnugo" / "gnugo-0000.sgf")
PRETRAINED = str(ROOT / "pretrained" / "kgs_cpu_small")


def kifunet(*argv, cwd, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "kifunet.cli", *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})})


def test_announce_compile_only_when_the_cache_lacks_the_kernels(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_jit, "CACHE_DIR", tmp_path / "numba" / "hash")
    monkeypatch.setattr(_jit, "_announced", False)
    assert not _jit.kernels_cached()
    assert _jit.announce_compile() and not _jit.announce_compile()  # once per process
    assert capsys.readouterr().err == _jit.COMPILE_MESSAGE + "\n"
    # what numba writes for the entry kernel, in its folder for this source directory
    here = os.path.dirname(os.path.abspath(_jit.__file__))
    sub = tmp_path / "numba" / "hash" / f"{os.path.basename(here)}_{hashlib.sha1(here.encode()).hexdigest()}"
    sub.mkdir(parents=True)
    (sub / f"{_jit.ENTRY_KERNEL}-194.py311.nbi").write_bytes(b"")
    monkeypatch.setattr(_jit, "_announced", False)
    assert _jit.kernels_cached() and not _jit.announce_compile()
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # compiles every kernel once (about 30 s, more on a loaded machine)
def test_first_run_says_it_compiles_once_and_later_runs_do_not(tmp_path):
    env = {"KIFUNET_CACHE_DIR": str(tmp_path / "cache")}
    first = kifunet("build", GAME, "--out", tmp_path / "a", "--workers", "2", "--no-progress", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(_jit.COMPILE_MESSAGE) == 1, first.stderr  # the main process says it, not each worker
    assert first.stderr.startswith(_jit.COMPILE_MESSAGE)
    assert list((tmp_path / "cache").rglob(f"{_jit.ENTRY_KERNEL}-*.nbi"))
    for argv in (["build", GAME, "--out", tmp_path / "b", "--workers", "0", "--no-progress"],
                 ["features", "maddison", "--sgf", GAME, "--move", "10"]):
        again = kifunet(*argv, cwd=tmp_path, env=env)
        assert again.returncode == 0, again.stderr
        assert _jit.COMPILE_MESSAGE not in again.stderr, again.stderr


@pytest.mark.parametrize("args", [
    ["/no/such.sgf", "--move", "3", "--out", "x.png", "--checkpoint", PRETRAINED],
    [GAME, "--move", "3", "--out", "x.png", "--checkpoint", "/no/such/run"],
    [GAME, "--move", "3", "--out", "/no/such/dir/x.png", "--checkpoint", PRETRAINED],
    [GAME, "--move", "3", "--out", "x.png", "--rank", "strong", "--checkpoint", PRETRAINED],
], ids=["missing-sgf", "missing-run", "missing-out-dir", "bad-rank"])
def test_show_reports_bad_inputs_before_loading_the_net(args, tmp_path):
    # a jax that cannot be imported: the inputs must be reported before anything loads the net (or JAX)
    fake = tmp_path / "no_jax"
    (fake / "jax").mkdir(parents=True)
    (fake / "jax" / "__init__.py").write_text("raise ImportError('jax imported before the inputs were checked')\n")
    path = os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    t0 = time.monotonic()
    proc = kifunet("show", *args, cwd=tmp_path, env={"PYTHONPATH": path})
    seconds = time.monotonic() - t0
    assert proc.returncode == 2 and proc.stderr.startswith("kifunet show: error: "), proc.stderr
    assert "jax imported" not in proc.stderr, proc.stderr
    # loading JAX and the checkpoint took 6-9 s here; the inputs are checked in well under 2 s (slack for load)
    assert seconds < 5.0, f"{seconds:.1f} s: {proc.stderr}"
