"""The CI switch (tests/conftest.py, .ci/run): locally a missing tool skips; in CI (``CI=true``) it fails, and so
does any skip not marked ``manual``; ``.ci/run`` exports ``CI=true`` and stops when GNU Go cannot be installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PROBE = '''
import pytest
from conftest import require, require_module

def test_ok():
    pass

def test_missing_tool():
    require(False, "a tool", "install it")

def test_plain_skip():
    pytest.skip("some reason")

@pytest.mark.manual("run by hand in its own environment")
def test_manual():
    pytest.skip("manual: its own environment")

@pytest.mark.skipif(True, reason="condition")
def test_skipif():
    pass
'''

PROBE_MODULE = '''
from conftest import require_module
require_module("no_such_module_kifunet_probe")

def test_never_runs():
    pass
'''


def _outcomes(tmp_path: Path, ci: str | None, probe: str = PROBE) -> dict[str, str]:
    """Outcome per test name ('passed', 'skipped', 'failure', 'error') of a probe file run with this conftest."""
    d = tmp_path / f"probe-{ci}-{len(probe)}"
    d.mkdir()
    shutil.copy(REPO / "tests" / "conftest.py", d / "conftest.py")
    (d / "test_probe.py").write_text(probe)
    # the probe runs with this conftest alone: not with plugins the outer run was given (PYTEST_ADDOPTS="-p
    # suite_profile", benchmarks/suite_profile.py's way, whose relative PYTHONPATH the probe's folder cannot see)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    if ci is not None:
        env["CI"] = ci
    xml = d / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(d),
                    f"--junitxml={xml}", str(d)], cwd=d, env=env, capture_output=True, text=True, timeout=300)
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        out[case.get("name") or case.get("classname")] = kinds[0] if kinds else "passed"
    return out


@pytest.mark.slow
def test_locally_missing_tools_skip(tmp_path):
    got = _outcomes(tmp_path, None)
    assert got["test_ok"] == "passed"
    for name in ("test_missing_tool", "test_plain_skip", "test_manual", "test_skipif"):
        assert got[name] == "skipped", (name, got)
    assert list(_outcomes(tmp_path, None, PROBE_MODULE).values()) == ["skipped"]  # the whole module


@pytest.mark.slow
@pytest.mark.parametrize("ci", ["true", "1"])
def test_in_ci_every_skip_but_manual_fails(tmp_path, ci):
    got = _outcomes(tmp_path, ci)
    assert got["test_ok"] == "passed" and got["test_manual"] == "skipped", got
    for name in ("test_missing_tool", "test_plain_skip"):
        assert got[name] == "failure", (name, got)
    assert got["test_skipif"] == "error", got  # a skipif decides at set-up: a failed set-up is an error
    # a module-level require_module: a collection error (which stops the run), not a skipped module
    assert list(_outcomes(tmp_path, ci, PROBE_MODULE).values()) == ["error"]


def test_ci_run_exports_ci_and_stops_without_gnugo(tmp_path):
    """A copy of .ci/run where GNU Go is nowhere and apt-get fails: it exits non-zero before pip or pytest run."""
    root = tmp_path / "repo"
    (root / ".ci").mkdir(parents=True)
    script = (REPO / ".ci" / "run").read_text()
    assert "export CI=true" in script
    (root / ".ci" / "run").write_text(script.replace("/usr/games/gnugo", str(tmp_path / "no" / "gnugo")))
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "calls.log"
    # `python -m venv DIR` makes DIR/bin/python (a copy of venv_python, which logs as venv-python): the README's
    # commands must run with that one
    venv_python = tmp_path / "venv_python"
    venv_python.write_text(f'#!/bin/sh\necho "venv-python CI=$CI VIRTUAL_ENV=$VIRTUAL_ENV $*" >> {log}\n')
    fake_python = (f'echo "python CI=$CI $*" >> {log}\nif [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && '
                   f'cp {venv_python} "$3/bin/python" && chmod +x "$3/bin/python"; fi')
    for name, body in (("apt-get", "exit 100"), ("python", fake_python),
                       ("node", "exit 0"), ("npm", f'echo "npm $*" >> {log}')):
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(tmp_path)}
    assert shutil.which("gnugo", path=env["PATH"]) is None
    p = subprocess.run(["bash", str(root / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "could not install gnugo" in p.stderr, (p.returncode, p.stdout, p.stderr)
    assert not log.exists()  # neither the install nor the tests ran

    # with GNU Go present the same script goes on: a fresh venv (.venv in the checkout, where a user makes one; an old one is removed first), and in it
    # pip, the Beam environment and pytest, with CI=true
    (bin_ / "gnugo").write_text("#!/bin/sh\nexit 0\n")
    (bin_ / "gnugo").chmod(0o755)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "stale").write_text("from an earlier run\n")
    p = subprocess.run(["bash", str(root / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.stdout, p.stderr)
    calls = log.read_text().splitlines()
    in_venv = f"venv-python CI=true VIRTUAL_ENV={root / '.venv'}"
    assert calls == ["npm ci --prefix tests/sabaki_client --no-audit --no-fund --loglevel=error",
                     "python CI=true -m venv .venv", f"{in_venv} -m pip install -q -e .[dev]",
                     f"{in_venv} tests/beam_env.py", f"{in_venv} -m pytest -q"], calls
    assert not (root / ".venv" / "stale").exists()  # made afresh

    # the Sabaki client's packages cannot be installed: the script stops before pip and pytest
    log.unlink()
    (bin_ / "npm").write_text(f'#!/bin/sh\necho "npm $*" >> {log}\nexit 1\n')
    p = subprocess.run(["bash", str(root / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "npm ci in tests/sabaki_client failed" in p.stderr, p.stderr
    assert [c.split()[0] for c in log.read_text().splitlines()] == ["npm"]
    (bin_ / "npm").write_text(f'#!/bin/sh\necho "npm $*" >> {log}\n')

    # the Beam environment (tests/beam_env.py) cannot be made: the script stops before pytest
    log.unlink()
    venv_python.write_text(venv_python.read_text() + '[ "$1" != tests/beam_env.py ]\n')
    p = subprocess.run(["bash", str(root / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and log.read_text().splitlines()[-1] == f"{in_venv} tests/beam_env.py", p.stderr
