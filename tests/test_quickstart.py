"""The README's first command: `kifunet quickstart` builds, trains and evaluates on the sample corpus, and prints
the training steps reached beside the figures and whether the build's time included the one-time compile."""

import json
from pathlib import Path

import pytest

from kifunet import cli
from kifunet.commands import quickstart


@pytest.mark.slow
def test_quickstart_runs_build_train_eval(tmp_path, capsys):
    out = tmp_path / "qs"
    assert cli.main(["quickstart", "--out", str(out), "--minutes", "0.25", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    for stage in ("$ kifunet build", "$ kifunet train", "$ kifunet eval"):
        assert stage in printed
    manifest = json.loads((out / "data" / "manifest.json").read_text())
    assert manifest["counts"]["seen"] == manifest["counts"]["used"] >= 30
    result = json.loads(next((out / "run" / "eval").glob("*.json")).read_text())
    assert result["results"]["single"]["count"] == manifest["splits"]["test"]["positions"] > 0
    assert "quickstart: top-1 " in printed and "These figures depend on the steps reached" in printed
    run = result["run"]
    assert f"after {run['step']:,} training steps ({run['positions']:,} positions" in printed


def _fake_result(step=6, positions=768, seconds=18.2) -> dict:
    return {"run": {"step": step, "positions": positions, "train_seconds": seconds},
            "dataset": {"evaluated": 2036},
            "results": {"single": {"accuracy": {"1": 0.2603}, "cross_entropy_nats": 3.34781}}}


def test_summary_puts_the_steps_reached_beside_the_figures():
    text = quickstart.summary(_fake_result(1_234, 157_952), 180)
    assert ("quickstart: top-1 26.03%, 3.3478 nats on 2,036 test positions, after 1,234 training steps "
            "(157,952 positions, 18 s of training)") in text
    assert "--minutes 3 is a time limit, and a slower or busier machine trains fewer steps" in text
    # a rerun with the same --minutes trains no further: the hint names a larger one
    assert "to train further, rerun with a larger --minutes, e.g. --minutes 6" in text
    assert "Rerun to train further" not in text


def _finished_run(run: Path, step: int, seconds: float) -> None:
    """A checkpoint as `kifunet train` leaves it: ``checkpoints/STEP/meta/metadata`` with ``train_seconds``."""
    meta = run / "checkpoints" / str(step) / "meta"
    meta.mkdir(parents=True)
    (meta / "metadata").write_text(json.dumps({"train_seconds": seconds}))


@pytest.mark.parametrize("minutes, trains", [("3", False), ("6", True)])
def test_a_rerun_says_how_to_train_further_and_a_larger_minutes_does(tmp_path, monkeypatch, capsys, minutes, trains):
    """A run whose 180 s are used up: a rerun with the same --minutes says it only evaluates and names a larger
    --minutes (the quickstart's own option, not the train stage's --config.time_limit_s); one with a larger
    --minutes hands train the larger limit, which the resumed run trains up to."""
    from kifunet.commands.eval import default_out

    out = tmp_path / "qs"
    _finished_run(out / "run", 224, 183.0)
    stages = []

    def stage(argv, note=""):
        stages.append(argv)
        if argv[0] == "eval":
            result = Path(default_out(str(out / "run"), str(out / "data"), "test", False))
            result.parent.mkdir(parents=True, exist_ok=True)
            result.write_text(json.dumps(_fake_result()))

    monkeypatch.setattr(quickstart, "_run", stage)
    assert cli.main(["quickstart", "--out", str(out), "--minutes", minutes]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"quickstart: {out / 'run'} already holds a run (step 224, 183 s trained): resuming it")
    assert "time_limit_s" not in first
    if trains:
        assert "training until 360 s in all (--minutes 6)" in first
    else:
        assert "its --minutes 3 is used up, so it trains no further and evaluates again" in first
        assert "rerun with a larger --minutes, e.g. --minutes 6" in first
    assert f"--config.time_limit_s={int(float(minutes) * 60)}" in stages[1]


@pytest.mark.parametrize("cached", [True, False])
def test_the_build_time_says_when_it_included_the_compile(tmp_path, monkeypatch, capsys, cached):
    """The stages stubbed: the build's timing line names the one-time compile only when the rules engine was not
    compiled yet; the summary reads the eval result the eval stage wrote."""
    from kifunet.commands.eval import default_out
    from kifunet.data_prep import _jit

    out = tmp_path / "qs"
    stages = []
    monkeypatch.setattr(_jit, "kernels_cached", lambda: cached)
    monkeypatch.setattr(quickstart, "_run", lambda argv, note="": stages.append((argv[0], note)))
    result = Path(default_out(str(out / "run"), str(out / "data"), "test", False))
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps(_fake_result()))
    assert cli.main(["quickstart", "--out", str(out)]) == 0
    assert stages == [("build", "" if cached else quickstart.COMPILE_NOTE), ("train", ""), ("eval", "")]
    assert "after 6 training steps (768 positions, 18 s of training)" in capsys.readouterr().out



def test_fresh_deletes_a_finished_run_with_its_lock_file(tmp_path, monkeypatch, capsys):
    """A run that `kifunet train` left (its run lock included) is deleted by --fresh; a stranger file is not."""
    from kifunet.commands.eval import default_out

    out = tmp_path / "qs"
    run = out / "run"
    (run / "checkpoints" / "6").mkdir(parents=True)
    for name in ("config.json", "metrics_train.jsonl", "train.lock"):
        (run / name).write_text("{}")
    result = Path(default_out(str(run), str(out / "data"), "test", False))

    def stage(argv, note=""):
        assert not (run / "train.lock").exists()  # deleted before the first stage
        if argv[0] == "eval":
            result.parent.mkdir(parents=True)
            result.write_text(json.dumps(_fake_result()))

    monkeypatch.setattr(quickstart, "_run", stage)
    assert cli.main(["quickstart", "--out", str(out), "--fresh"]) == 0
    assert "--fresh: deleted the previous run" in capsys.readouterr().out
    (run / "notes.txt").write_text("mine")
    assert cli.main(["quickstart", "--out", str(out), "--fresh"]) == 2
    assert "holds more than a training run (notes.txt)" in capsys.readouterr().err
