"""benchmarks/suite_profile.py: the per-test records it writes as a pytest plugin, and its per-file summary."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("suite_profile", REPO / "benchmarks" / "suite_profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_summary_adds_cpu_and_wall_per_file(tmp_path):
    rows = [{"id": "tests/a.py::t1", "worker": "gw0", "start": 100.0, "wall": 2.0, "self": 1.0, "children": 3.0},
            {"id": "tests/a.py::t2", "worker": "gw0", "start": 102.0, "wall": 1.0, "self": 0.5, "children": 0.0},
            {"id": "tests/b.py::t[x]", "worker": "gw1", "start": 100.5, "wall": 9.5, "self": 2.0, "children": 0.0}]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = _module().summary(str(path))
    lines = text.splitlines()
    assert lines[1].split() == ["4.5", "3.0", "2", "tests/a.py"]  # the most CPU first
    assert lines[2].split() == ["2.0", "9.5", "1", "tests/b.py"]
    assert lines[-1] == "3 tests: 0.1 CPU-minutes recorded, first start to last end 10 s"


@pytest.mark.slow
def test_the_plugin_records_the_cpu_of_a_test_and_of_the_process_it_waits_for(tmp_path):
    test = tmp_path / "test_spin.py"
    test.write_text("import subprocess, sys\n\ndef test_child():\n"
                    "    subprocess.run([sys.executable, '-c', 'x = 0\\nfor i in range(3_000_000): x += i'])\n")
    out = tmp_path / "p.jsonl"
    # the worker's name as pytest-xdist exports it (this test may itself run in a worker: the variable is set)
    env = dict(os.environ, SUITE_PROFILE_OUT=str(out), PYTHONPATH=str(REPO / "benchmarks"), PYTEST_XDIST_WORKER="gw7")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "suite_profile", "-p", "no:cacheprovider",
                        "-n", "0", "-c", os.devnull, str(test)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["id"].endswith("test_spin.py::test_child") and rec["worker"] == "gw7"
    assert rec["children"] > 0.05 and rec["wall"] >= rec["children"] * 0.5
