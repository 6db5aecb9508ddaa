"""benchmarks/bench_models.py: its arithmetic, checked against hand-computed figures.

The timer is replaced by one that still runs the compiled step once but reports chosen times, so
positions/s and GFLOP/s have known answers. The model is ``alphago_tiny`` on 9x9: 871,560 forward MACs per
position (tests/test_models_flops.py), i.e. 1,743,120 forward FLOPs and 5,229,360 forward+backward FLOPs.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jax
import pytest

from model_helpers import _fast_compiles  # noqa: F401  (autouse fixture)

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_models.py"
# three runs whose median (1.0 s, 2.0 s), mean and minimum all differ
FWD_TIMES, TRAIN_TIMES = [0.5, 4.0, 1.0], [2.0, 0.25, 8.0]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_models", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def timer(bench, monkeypatch):
    """``_timed`` that runs ``fn`` once and returns the next list of ``times``; records the iters asked."""
    state = {"times": [], "iters": []}

    def fake(fn, *args, iters):
        jax.block_until_ready(fn(*args))
        state["iters"].append(iters)
        return list(state["times"].pop(0))

    monkeypatch.setattr(bench, "_timed", fake)
    return state


def test_bench_model_figures(bench, timer):
    timer["times"] = [FWD_TIMES, TRAIN_TIMES]
    r = bench.bench_model("alphago_tiny", batch=4, microbatch=2, iters=3, iters_big=5, board_size=9)
    assert r["params"] == 10_841 and r["in_planes"] == 48
    assert r["fwd_gflop_per_pos"] == pytest.approx(0.00174312)
    assert r["fwd_pos_per_s"] == pytest.approx(4.0)        # 4 positions in the median 1.0 s
    assert r["fwd_gflops"] == pytest.approx(0.00697248)    # 1,743,120 FLOPs x 4 positions/s
    assert r["train_pos_per_s"] == pytest.approx(2.0)      # 4 positions (2 microbatches) in the median 2.0 s
    assert r["train_gflops"] == pytest.approx(0.01045872)  # 5,229,360 FLOPs x 2 positions/s
    assert r["fwd_times_s"] == FWD_TIMES and r["train_times_s"] == TRAIN_TIMES
    assert r["iters"] == 3 and timer["iters"] == [3, 3]     # a small net: --iters, not --iters-big


def test_big_nets_use_iters_big(bench, timer, monkeypatch):
    monkeypatch.setattr(bench, "BIG_GFLOP", 0.001)  # alphago_tiny's 0.0017 GFLOP/position is now "big"
    timer["times"] = [FWD_TIMES, TRAIN_TIMES]
    r = bench.bench_model("alphago_tiny", batch=4, microbatch=4, iters=3, iters_big=5, board_size=9)
    assert r["iters"] == 5 and timer["iters"] == [5, 5]
    with pytest.raises(ValueError):
        bench.bench_model("alphago_tiny", batch=5, microbatch=2, iters=1, iters_big=1, board_size=9)


def test_main_writes_the_figures(bench, timer, tmp_path, capsys):
    timer["times"] = [[1.0, 0.5, 2.0], FWD_TIMES, TRAIN_TIMES]  # the matmul first, then the model
    out = tmp_path / "bench.json"
    assert bench.main(["--models", "alphago_tiny", "--batch", "4", "--microbatch", "2", "--iters", "3",
                       "--board-size", "9", "--matmul", "64", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["matmul"]["gflops"] == pytest.approx(0.000524288)  # 2 x 64^3 FLOPs in the median 1.0 s
    (m,) = data["models"]
    assert m["name"] == "alphago_tiny" and m["fwd_pos_per_s"] == pytest.approx(4.0)
    assert m["train_gflops"] == pytest.approx(0.01045872)
    assert "| alphago_tiny | 10,841 | 0.002 | 4.0 | 0.0 | 2.0 | 0.0 |" in capsys.readouterr().out
