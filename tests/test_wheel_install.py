"""A wheel install works outside the source tree: quickstart on the packaged samples, then `kifunet gtp` with the
quickstart run and with the default net (package data).

The wheel is built from a copy of the packaged folders (so the checkout gets no ``build/``), installed into a fresh
venv that sees the system site-packages (the dependencies; or, when pytest runs in a venv, that venv's
site-packages: ``beam_env.see_this_environment``) but imports its own ``kifunet``, not the editable one, and run
from a temporary directory: the samples come from the package data, ``runs/`` from the cwd.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import beam_env

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _sh(args, *, cwd, env, timeout=300, stdin=None) -> str:
    r = subprocess.run([str(a) for a in args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{args} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, venv bin directory, environment) with the wheel of this checkout installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for folder in sorted({d.split("/")[0] for d in project["tool"]["setuptools"]["package-dir"].values()}):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["JAX_PLATFORMS"] = "cpu"
    _sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", src], cwd=tmp, env=env)
    (whl,) = (tmp / "dist").glob("kifunet-*.whl")
    venv = tmp / "venv"
    _sh([sys.executable, "-m", "venv", "--system-site-packages", venv], cwd=tmp, env=env)
    py, bin_dir = venv / "bin" / "python", venv / "bin"
    beam_env.see_this_environment(venv)  # pytest itself in a venv: "system" site-packages are not its packages
    _sh([py, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", "--no-index", whl], cwd=tmp, env=env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return py, bin_dir, env


def test_wheel_runs_quickstart_and_gtp_from_any_directory(installed, tmp_path):
    py, bin_dir, env = installed
    work = tmp_path / "work"
    work.mkdir()
    where = _sh([py, "-c", "import kifunet; from kifunet.data_prep import paths; "
                 "print(kifunet.__file__); print(paths.sample_games())"], cwd=work, env=env).split()
    site = Path(_sh([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=work, env=env).strip())
    assert all(Path(p).resolve().is_relative_to(site.resolve()) for p in where), (where, site)  # not the checkout
    assert len(list(Path(where[1]).glob("*.sgf"))) >= 16

    out = _sh([bin_dir / "kifunet", "quickstart", "--minutes", "0.02", "--workers", "1"], cwd=work, env=env,
              timeout=400)
    assert f"$ kifunet build {where[1]}" in out and "single pass" in out
    run = work / "runs" / "quickstart" / "run"
    assert (run / "config.json").is_file() and list((run / "eval").glob("*.json"))
    # runs/ is the cwd's (the notebooks' default), and a run loads from there
    found = _sh([py, "-c", "from kifunet.data_prep import paths; from kifunet.train import nets; print(paths.runs_dir()); "
                 "print(nets.find_workdir('runs/quickstart/run/checkpoints'))"], cwd=work, env=env).split()
    assert [Path(p).resolve() for p in found] == [(work / "runs").resolve(), run.resolve()]

    gtp = _sh([bin_dir / "kifunet", "gtp", "--checkpoint", run], cwd=work, env=env, stdin="genmove b\nquit\n")
    replies = [r for r in gtp.split("\n\n") if r.strip()]
    assert len(replies) == 2 and replies[1].strip() == "=", gtp
    move = replies[0].removeprefix("= ").strip()
    assert replies[0].startswith("= ") and (move.lower() == "pass" or (move[0] in "ABCDEFGHJKLMNOPQRST"
                                                                       and 1 <= int(move[1:]) <= 19)), gtp

    # the default net ships in the wheel (package data) and plays when no net is named
    net = Path(_sh([py, "-c", "from kifunet.data_prep import paths; print(paths.default_net())"], cwd=work, env=env).strip())
    assert net.resolve().is_relative_to(site.resolve()) and (net / "config.json").is_file(), net
    assert list((net / "checkpoints").glob("*/state")) and list((net / "eval").glob("*.json")), net
    assert not (net / "match-gnugo10").exists()  # its match games stay in the checkout
    gtp = _sh([bin_dir / "kifunet", "gtp"], cwd=work, env=env, stdin="play b D4\ngenmove w\nquit\n")
    replies = [r.strip() for r in gtp.split("\n\n") if r.strip()]
    assert replies[0] == "=" and replies[1].startswith("= ") and replies[1] != "= PASS", gtp

