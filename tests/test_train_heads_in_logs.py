"""The trained heads in a run's logs (train/steps.py, train/evaluation.py, train/metric_writer.py): their loss
terms in the training records and lines, and the evaluation's ownership accuracy and score MAE by
eval/head_metrics.py's rules, the same figures as ``kifunet eval`` gives for the same net and data."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import pytest
from model_helpers import _fast_compiles  # noqa: F401 (fixture: unoptimised compiles)
from test_ownership_targets import _build, game

from kifunet.train.metric_writer import eval_line, head_text, progress_line

TINY = Path(__file__).resolve().parents[1] / "train" / "configs" / "tiny.py"


def _run(tmp_path, weights=("1.0", "0.1")):
    from kifunet.train import configs
    from kifunet.train.train import train_and_evaluate

    d = tmp_path / "in"
    d.mkdir()
    for i, (res, marks) in enumerate([("W+0.5", "TB[aa:ci]TW[ga:ii]"), ("B+R", ""), ("B+3.5", "")]):
        (d / f"g{i}.sgf").write_bytes(game(res, marks, f"h{i}"))
    data = _build(d, tmp_path / "ds")
    cfg = configs.load(str(TINY), [("dataset", str(data)), ("model.name", "gonn_tiny"), ("batch_size", "8"),
                                   ("eval_batch_size", "8"), ("train_positions", "32"),
                                   ("ownership_weight", weights[0]), ("score_weight", weights[1]),
                                   ("eval_split", "train"), ("eval_every_positions", "16"), ("eval_positions", "24"),
                                   ("final_eval_positions", "0"), ("log_every_steps", "2"),
                                   ("checkpoint_every_positions", "0"), ("async_checkpoints", "false")])
    with cfg.unlocked():
        cfg.model.kwargs.ownership_head = True
        cfg.model.kwargs.score_head = True
        cfg.input.window_blocks = 1
    run = tmp_path / "run"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        final = train_and_evaluate(cfg, str(run))
    return data, run, final, out.getvalue()


@pytest.mark.slow
def test_a_run_with_both_heads_logs_their_losses_and_scores_them_as_kifunet_eval_does(tmp_path):
    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval import plots
    from kifunet.eval.evaluate import evaluate
    from kifunet.eval.runs import load_run

    data, run, final, printed = _run(tmp_path)
    assert final["step"] == 4
    metrics = plots.run_metrics(str(run))  # what `kifunet tables` and the notebooks read back
    assert len(metrics["train"]) == 2 and len(metrics["eval"]) == 2
    for rec in metrics["train"]:
        assert rec["ownership_loss"] > 0 and math.isfinite(rec["ownership_loss"])
        assert rec["score_loss"] > 0 and math.isfinite(rec["score_loss"])
    for rec in metrics["eval"]:
        assert 0 <= rec["ownership_acc"] <= 1 and rec["ownership_points"] > 0
        assert math.isfinite(rec["score_mae"]) and rec["score_rows"] > 0
    last = metrics["eval"][-1]
    assert last["eval_positions"] > 24  # the final evaluation: the whole split

    heads = evaluate(load_run(str(run)), open_split(str(data), "train"), batch_size=16, progress=False)["heads"]
    assert last["ownership_points"] == heads["ownership"]["points"]
    assert last["ownership_acc"] == heads["ownership"]["accuracy"]
    assert last["score_rows"] == heads["score"]["rows"]
    assert last["score_mae"] == pytest.approx(heads["score"]["mae"], rel=1e-5)

    lines = printed.splitlines()
    assert sum(" ownership loss " in ln and " score loss " in ln for ln in lines if ln.startswith("step ")) == 2
    evals = [ln for ln in lines if ln.startswith("eval at step")]
    assert len(evals) == 2 and all(" owned points score MAE " in ln for ln in evals)
    fig = plots.learning_curves(metrics)
    drawn = {ln.get_label() for ax in fig.axes for ln in ax.get_lines()}
    assert any("ownership_acc" in label for label in drawn) and any("ownership_loss" in label for label in drawn)


@pytest.mark.slow
def test_a_head_weighted_0_is_not_in_the_logs(tmp_path):
    _, run, _, printed = _run(tmp_path, weights=("1.0", "0.0"))
    from kifunet.eval import plots

    metrics = plots.run_metrics(str(run))
    assert all("ownership_loss" in r and "score_loss" not in r for r in metrics["train"])
    assert all("ownership_acc" in r and "score_mae" not in r for r in metrics["eval"])
    assert "score" not in printed


def test_the_head_figures_join_the_lines_only_when_a_run_trains_heads():
    rec = {"loss": 2.5, "top1": 0.25, "top4": 0.5, "grad_norm": 1.0, "grad_norm_max": 2.0, "logit_abs_max": 3.0,
           "positions_per_s": 100.0, "data_wait_fraction": 0.1}
    assert head_text(rec) == ""
    heads = {**rec, "ownership_loss": 0.41234, "score_loss": 0.0872}
    assert progress_line(4, 8, 8, heads, 10.0) == progress_line(4, 8, 8, rec, 10.0).replace(
        "top4 50.00% |", "top4 50.00% ownership loss 0.4123 score loss 0.0872 |")
    ev = {"eval_positions": 64, "top1": 0.5, "top4": 0.75, "nats": 2.0, "seconds": 1.0}
    ev_heads = {**ev, "ownership_acc": 0.76424, "ownership_points": 6875.0, "score_mae": 8.336, "score_rows": 40.0}
    assert eval_line(2, "test", ev_heads) == eval_line(2, "test", ev).replace(
        "nats 2.0000 (", "nats 2.0000 ownership 76.42% of 6,875 owned points score MAE 8.34 points (")


@pytest.mark.parametrize("head", ["ownership", "score"])
def test_a_heads_non_finite_loss_stops_the_run_at_its_step(head):
    import jax.numpy as jnp

    from kifunet.train import steps

    term, rows = steps.HEAD_LOSS_SUMS[head]
    m = {k: jnp.float32(1.0) for k in steps.SUM_METRICS + steps.LAST_METRICS}
    for bad in (False, True):
        m.update({term: jnp.float32("nan" if bad else 0.5), rows: jnp.float32(2.0)})
        _, out = steps.windowed(lambda s, b: (s, m))({"step": jnp.int32(6)}, None, steps.zeros_window(False, (head,)))
        assert int(out["first_bad"]) == (7 if bad else 0)  # the window's step 7 (state step 6 + 1)
        assert bad or float(out[term]) == 0.5  # a finite one is summed
