"""eval/runs.py and the `kifunet eval` / `kifunet show` commands on a real (tiny) training run (loading a net from
its run directory: tests/test_train_nets.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kifunet.cli import main
from kifunet.data_prep.datasets.reader import Reader
from kifunet.eval.evaluate import evaluate, load_result
from kifunet.eval.runs import load_run

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "gnugo"
TINY = Path(__file__).resolve().parents[1] / "train" / "configs" / "tiny.py"


def make_tiny_run(root: Path) -> tuple[Path, Path, dict]:
    """A maddison dataset of 5 sample games and 6 steps of `maddison_tiny` on it (checkpoints at 3 and 6)."""
    from kifunet.train import configs
    from kifunet.train.train import train_and_evaluate

    ds = root / "ds"
    files = [str(SAMPLES / f"gnugo-{i:04d}.sgf") for i in range(5)]
    assert main(["build", *files, "--out", str(ds), "--hash-split", "test:0.4", "--workers", "0",
                 "--no-progress"]) == 0
    cfg = configs.load(str(TINY), [("dataset", str(ds)), ("train_positions", "192"), ("log_every_steps", "3"),
                                   ("eval_every_positions", "0"), ("final_eval_positions", "128"),
                                   ("checkpoint_every_positions", "96"), ("async_checkpoints", "false")])
    run = root / "run"
    final = train_and_evaluate(cfg, str(run))
    return run, ds, final


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    return make_tiny_run(tmp_path_factory.mktemp("tiny_run"))


def test_load_run_reproduces_the_training_evaluation(tiny_run):
    run, ds, final = tiny_run
    pred = load_run(str(run))
    assert pred.info["step"] == final["step"] == 6 and pred.info["positions"] == 192
    assert pred.info["model"] == "maddison_tiny" and pred.feature_set == "maddison" and pred.board_size == 19
    res = evaluate(pred, Reader(str(ds), "test"), batch_size=64, limit=128, progress=False)
    s = res["results"]["single"]
    assert s["count"] == final["eval_positions"] == 128
    assert s["cross_entropy_nats"] == pytest.approx(final["nats"], rel=1e-5)
    # training and eval count top-k with the same rule (kifunet.models.base.played_move_rank): the same positions
    assert s["topk_correct"][0] == round(final["top1"] * 128) and s["accuracy"]["1"] == pytest.approx(final["top1"])
    assert s["topk_correct"][3] == round(final["top4"] * 128) and s["accuracy"]["4"] == pytest.approx(final["top4"])


def test_eval_command_writes_json_and_tables_reads_it(tiny_run, capsys):
    run, ds, _ = tiny_run
    assert main(["eval", "--checkpoint", str(run), "--data", str(ds), "--split", "test", "--ensemble",
                 "--legal-mask", "--limit", "64", "--batch-size", "32", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "8-symmetry ensemble" in out and "single pass" in out and "legal mask: on (planes)" in out
    path = run / "eval" / "ds_test_legal_first64.json"
    res = load_result(str(path))
    assert set(res["results"]) == {"single", "ensemble"} and res["results"]["single"]["count"] == 64
    assert res["run"]["step"] == 6 and res["dataset"]["spec"]["positions"] == len(Reader(str(ds), "test"))
    assert main(["tables", str(run)]) == 0
    table = capsys.readouterr().out
    assert "**ours: run @ step 6**" in table and "8-symmetry ensemble, legal mask" in table
    assert main(["eval", "--checkpoint", str(run), "--data", str(ds), "--split", "nope", "--out", "-"]) == 2
    assert "no split 'nope'" in capsys.readouterr().err
    # the split in two parts (--start/--limit), merged (--merge): the same numbers as the first 64 rows at once
    for start in (0, 40):
        assert main(["eval", "--checkpoint", str(run), "--data", str(ds), "--ensemble", "--legal-mask",
                     "--start", str(start), "--limit", "40" if start == 0 else "24", "--no-progress"]) == 0
    parts = [str(run / "eval" / "ds_test_legal_first40.json"), str(run / "eval" / "ds_test_legal_rows40-63.json")]
    merged = str(run / "eval" / "merged.json")
    assert main(["eval", "--merge", *parts, "--out", merged]) == 0
    m = load_result(merged)
    assert m["dataset"]["ranges"] == [[0, 64]] and m["merged_from"] == 2
    for mode in ("single", "ensemble"):
        assert m["results"][mode]["topk_correct"] == res["results"][mode]["topk_correct"]
        assert m["results"][mode]["nll_sum"] == pytest.approx(res["results"][mode]["nll_sum"], rel=1e-9)
    assert main(["eval", "--split", "test"]) == 2 and "--merge" in capsys.readouterr().err


def test_show_command_with_a_checkpoint(tiny_run, tmp_path, capsys):
    run, _, _ = tiny_run
    sgf = str(SAMPLES / "gnugo-0000.sgf")
    for name, extra in (("a.png", []), ("b.svg", ["--rank", "9d", "--ensemble"])):
        assert main(["show", sgf, "--move", "40", "--checkpoint", str(run), "--out", str(tmp_path / name),
                     *extra]) == 0
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    svg = (tmp_path / "b.svg").read_text()
    assert "<svg" in svg
    assert main(["show", sgf, "--move", "40", "--checkpoint", str(run), "--out", str(tmp_path / "c.png"),
                 "--rank", "strong"]) == 2
    assert "is not a rank" in capsys.readouterr().err


@pytest.mark.slow
def test_eval_and_train_split_over_cpu_devices(tiny_run, tmp_path):
    """`--cpu-devices 2` (eval) and `cpu_devices=2` (train) make two JAX CPU devices in a fresh process; eval's
    data-parallel forward pass gives the same numbers as one device (the ragged last batch padded per device)."""
    import subprocess
    import sys

    run, ds, _ = tiny_run
    cli = [sys.executable, "-m", "kifunet.cli"]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    outs = {}
    for n in (0, 2):
        outs[n] = tmp_path / f"dev{n}.json"
        p = subprocess.run(cli + ["eval", "--checkpoint", str(run), "--data", str(ds), "--ensemble", "--limit", "45",
                                  "--batch-size", "16", "--cpu-devices", str(n), "--out", str(outs[n])],
                           capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stderr[-2000:]
    a, b = load_result(str(outs[0])), load_result(str(outs[2]))
    assert (a["devices"], b["devices"]) == (1, 2)
    for mode in ("single", "ensemble"):
        assert a["results"][mode]["topk_correct"] == b["results"][mode]["topk_correct"]
        assert a["results"][mode]["nll_sum"] == pytest.approx(b["results"][mode]["nll_sum"], rel=1e-6)
    t = subprocess.run(cli + ["train", "--config", str(TINY), "--workdir", str(tmp_path / "w"), f"--config.dataset={ds}",
                              "--config.cpu_devices=2", "--config.train_positions=64", "--config.eval_split=",
                              "--config.async_checkpoints=false"],
                       capture_output=True, text=True, timeout=600, env=env)
    assert t.returncode == 0, t.stdout[-2000:] + t.stderr[-2000:]
    assert "2 device(s)" in t.stdout + t.stderr
