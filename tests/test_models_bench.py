"""Smoke test of benchmarks/bench_models.py on a tiny model (a few positions, one timed iteration)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_models.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_models", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_model_measures_consistent_figures(bench, tmp_path):
    r = bench.bench_model("alphago_tiny", batch=4, microbatch=2, iters=1, iters_big=1, board_size=9)
    assert r["params"] == 10_841 and r["in_planes"] == 48
    assert r["fwd_pos_per_s"] > 0 and r["train_pos_per_s"] > 0
    assert r["fwd_gflops"] == pytest.approx(r["fwd_gflop_per_pos"] * r["fwd_pos_per_s"])
    assert r["train_gflops"] == pytest.approx(3 * r["fwd_gflop_per_pos"] * r["train_pos_per_s"])
    assert len(r["fwd_times_s"]) == len(r["train_times_s"]) == 1
    with pytest.raises(ValueError):
        bench.bench_model("alphago_tiny", batch=5, microbatch=2, iters=1, iters_big=1, board_size=9)


def test_bench_main_writes_json_and_table(bench, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--models", "alphago_tiny", "--batch", "4", "--microbatch", "4", "--iters", "1",
                       "--board-size", "9", "--matmul", "64", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["matmul"]["gflops"] > 0 and data["models"][0]["name"] == "alphago_tiny"
    assert "| alphago_tiny | 10,841 |" in capsys.readouterr().out
