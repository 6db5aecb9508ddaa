"""Value metrics in eval (eval/metrics.py, eval/evaluate.py, eval/tables.py, eval/plots.py) and the commands on a
tiny two-headed 9x9 run: hand computations, the JSON round trip, merging parts, version-1 files, `kifunet eval`,
`kifunet show` and `kifunet tables` on a ``qiqiao_tiny`` net."""

from __future__ import annotations

import json

import numpy as np
import pytest
from flax import nnx

from kifunet.cli import main
from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.datasets.dataset import open_split
from kifunet.eval import plots, tables
from kifunet.eval.evaluate import Predictor, evaluate, format_result, load_result, merge_results, save_result
from kifunet.models.forward import NetFacts, Outputs
from test_train_data import ds_qiqiao, qiqiao_run  # noqa: F401 (fixtures)


class ValueNet(nnx.Module):
    """Two-headed, testing only: logits = a plane weighting per point, value = tanh(sum of a per-point weight over
    the points of planes 3 and 7, the newest stones of each colour in ``qiqiao``): not symmetric, so the 8
    passes of the ensemble give 8 values."""

    has_value = True

    def __init__(self, board_size, in_planes, seed=0):
        rng = np.random.default_rng(seed)
        self.board_size, self.in_planes = board_size, in_planes
        self.w = nnx.Param(np.asarray(rng.normal(size=in_planes), np.float32))
        self.u = nnx.Param(np.asarray(rng.normal(size=(board_size, board_size)) * 0.3, np.float32))
        self.facts = NetFacts(board_size=board_size, in_planes=in_planes, has_value=True, has_pass=True,
                              reads_rank=False, reads_profile=False, resizable=False)

    def __call__(self, planes, rank=None, to_move=None, profile=None):
        import jax.numpy as jnp

        x = jnp.asarray(planes).astype(jnp.float32)
        b = x.shape[0]
        z = jnp.einsum("bhwc,c->bhw", x, self.w[...]).reshape(b, -1)
        value = jnp.tanh(jnp.einsum("bhw,hw->b", x[..., 3] - x[..., 7], self.u[...]))
        return Outputs(jnp.concatenate([z, jnp.zeros((b, 1), jnp.float32)], axis=1), value)


def _hand(value, outcome) -> dict:
    """The value block by hand, from its definition (eval/metrics.py's table)."""
    known = outcome != -128
    v, z = value[known].astype(np.float64), outcome[known].astype(np.float64)
    dec = z != 0
    return {"known": int(known.sum()), "mse": float(np.mean((v - z) ** 2)), "decided": int(dec.sum()),
            "winner_accuracy": float(np.mean(np.sign(v[dec]) == z[dec])),
            "baseline_mse": float(np.mean((z - z.mean()) ** 2))}


def _close(block: dict, hand: dict):
    assert block["known"] == hand["known"] and block["decided"] == hand["decided"]
    for k in ("mse", "winner_accuracy", "baseline_mse"):
        assert block[k] == pytest.approx(hand[k], rel=1e-9, abs=1e-12), k


@pytest.fixture(scope="module")
def value_eval(ds_qiqiao):
    r = open_split(ds_qiqiao, "test")
    pred = Predictor(ValueNet(r.board_size, r.feature_set.num_planes), r.feature_name,
                     info={"name": "valuenet", "model": "ValueNet", "params": 0})
    res = evaluate(pred, r, batch_size=100, ensemble=True, progress=False)  # a ragged last batch
    return r, pred, res


def test_value_metrics_equal_a_hand_computation(value_eval):
    r, pred, res = value_eval
    rows = r.batch(np.arange(len(r)))
    outcome = rows["outcome"].astype(np.int64)
    assert set(outcome.tolist()) == {-128, -1, 0, 1}  # unknown, lost, drawn and won games
    _, value = pred.predict_with_value(rows)
    single = res["results"]["single"]
    _close(single["value"], _hand(value, outcome))
    # by game phase: the same rule on each bucket's rows; the buckets add up to the whole
    mn = rows["move_number"]
    early = (mn >= 1) & (mn <= 20)
    _close(single["by_phase"]["1-20"]["value"], _hand(value[early], outcome[early]))
    assert sum(b["value"]["known"] for b in single["by_phase"].values()) == single["value"]["known"]
    # the ensemble's value is the mean of the 8 passes' (the planes moved, the value not mapped back)
    passes = [pred.predict_with_value(dict(rows, planes=sym.apply_planes_batch(rows["planes"], np.full(len(r), s))))[1]
              for s in range(8)]
    mean = np.mean(np.stack(passes).astype(np.float64), axis=0)
    assert not np.allclose(passes[0], passes[5])
    _close(res["results"]["ensemble"]["value"], _hand(mean, outcome))
    assert "value_rule" in res["settings"] and res["format_version"] == 3
    text = format_result(res)
    assert "value head" in text and "constant MSE" in text and "value head by move number" in text
    assert f"{single['value']['mse']:.4f}" in text


def test_value_json_round_trip_merge_and_version_1(value_eval, tmp_path):
    r, pred, res = value_eval
    path = tmp_path / "res.json"
    save_result(res, str(path))
    back = load_result(str(path))
    assert json.dumps(back, sort_keys=True) == json.dumps(json.loads(json.dumps(res)), sort_keys=True)
    assert format_result(back) == format_result(res)
    # parts evaluated apart add up to the whole, value sums included (the same batches: the same float32 values)
    parts = [evaluate(pred, r, batch_size=100, ensemble=True, progress=False, start=a, limit=b - a)
             for a, b in ((0, 200), (200, len(r)))]
    merged = merge_results(parts)
    for mode in ("single", "ensemble"):
        whole, m = res["results"][mode], merged["results"][mode]
        for k in ("known", "decided", "winner_correct", "outcome_sum"):
            assert m["value"][k] == whole["value"][k]
        assert m["value"]["mse"] == pytest.approx(whole["value"]["mse"], rel=1e-12)
        assert m["by_phase"]["21-50"]["value"]["known"] == whole["by_phase"]["21-50"]["value"]["known"]
    # a version-1 file (before value blocks) still loads and prints, without a value table
    old = json.loads(json.dumps(res))
    old["format_version"] = 1
    del old["settings"]["value_rule"]
    for block in old["results"].values():
        block.pop("value")
        for part in ("by_phase", "by_rank", "by_colour"):
            for g in block[part].values():
                g.pop("value")
    (tmp_path / "v1.json").write_text(json.dumps(old))
    text = format_result(load_result(str(tmp_path / "v1.json")))
    assert "single pass" in text and "value head" not in text
    assert "Value head" not in tables.render([(str(tmp_path / "v1.json"), old)])
    newer = dict(old, format_version=99)
    (tmp_path / "v99.json").write_text(json.dumps(newer))
    with pytest.raises(ValueError, match="newer"):
        load_result(str(tmp_path / "v99.json"))


def test_tables_and_plots_show_the_value_head(value_eval, tmp_path):
    _, _, res = value_eval
    md = tables.render([("valuenet.json", res)])
    assert "## Value head (ours)" in md
    row = [ln for ln in md.splitlines() if ln.startswith("| **ours: valuenet**") and "constant" not in ln]
    v = res["results"]["single"]["value"]
    assert any(f"| {v['known']:,} | {v['mse']:.4f} | {v['baseline_mse']:.4f} |" in ln for ln in row)
    assert "Value head" in tables.render([("valuenet.json", res)], "html")
    bd = tables.breakdown_markdown(res)
    assert "value MSE" in bd and "constant MSE" in bd
    recs = {"train": [{"step": 1, "positions": 32, "loss": 4.0, "value_mse": 1.1, "winner_acc": 0.5}],
            "eval": [{"step": 1, "positions": 32, "nats": 4.1, "value_mse": 1.0, "value_baseline_mse": 0.99}]}
    fig = plots.learning_curves(recs)
    assert len(fig.axes) == 3
    labels = {ln.get_label() for ln in fig.axes[2].get_lines()}
    assert labels == {"train value_mse", "eval value_mse", "eval value_baseline_mse"}
    assert "train winner_acc" in {ln.get_label() for ln in fig.axes[1].get_lines()}
    assert len(plots.learning_curves({"train": [{"step": 1, "loss": 3.0}]}).axes) == 2
    single = res["results"]["single"]
    fig = plots.value_by_phase({"v": single})
    phases = [k for k, g in single["by_phase"].items() if g["value"]["known"]]
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["v"].get_ydata(), [single["by_phase"][k]["value"]["mse"] for k in phases])
    np.testing.assert_allclose(lines["v: constant predictor"].get_ydata(),
                               [single["by_phase"][k]["value"]["baseline_mse"] for k in phases])


def test_eval_show_and_tables_commands_on_a_9x9_two_headed_run(qiqiao_run, tmp_path, capsys):
    run, ds, final, _ = qiqiao_run
    out = tmp_path / "eval.json"
    assert main(["eval", "--checkpoint", str(run), "--data", ds, "--split", "test", "--out", str(out),
                 "--no-progress", "--cpu-devices", "0"]) == 0
    text = capsys.readouterr().out
    res = load_result(str(out))
    v = res["results"]["single"]["value"]
    assert res["run"]["model"] == "qiqiao_tiny" and res["run"]["board_size"] == 9
    assert "value head" in text and f"{v['mse']:.4f}" in text
    # the same rows and rule as the run's own final evaluation (float32 sums on the device there)
    assert v["known"] == final["value_known"] and v["decided"] == final["winner_decided"]
    assert v["mse"] == pytest.approx(final["value_mse"], rel=1e-4)
    assert v["winner_accuracy"] == pytest.approx(final["winner_acc"], abs=1e-9)
    assert v["baseline_mse"] == pytest.approx(final["value_baseline_mse"], rel=1e-5)
    from pathlib import Path

    game = sorted((Path(ds).parent / "sgf").glob("*.sgf"))[0]
    png = tmp_path / "board.png"
    assert main(["show", str(game), "--move", "12", "--checkpoint", str(run), "--out", str(png)]) == 0
    shown = capsys.readouterr().out
    assert png.stat().st_size > 1000 and "value of the position for" in shown
    assert main(["tables", str(out)]) == 0
    assert "## Value head (ours)" in capsys.readouterr().out


def test_gtp_plays_a_9x9_two_headed_net_and_reports_its_value(qiqiao_run):
    """The trained 9x9 run as a GTP engine: 9x9 only, legal moves, an analysis winrate from its value head."""
    from kifunet.play.gtp_engine import Engine
    from kifunet.play.policy import load_policy

    run = qiqiao_run[0]
    policy = load_policy(run)
    assert policy.board_size == 9
    e = Engine(policy, komi=7.0)
    assert e.handle("boardsize 19").startswith("? unacceptable size")
    assert e.handle("boardsize 9") == "= \n\n" and e.handle("play B E5") == "= \n\n"
    reply = e.handle("genmove W")
    vertex = reply[2:].strip()
    assert reply.startswith("= ") and vertex != "E5" and (vertex == "pass" or (vertex[0] in "ABCDEFGHJ" and 1 <= int(vertex[1:]) <= 9))
    analysis = e.handle("lz-genmove_analyze B 0")
    rates = [float(t.split()[0]) for t in analysis.split(" winrate ")[1:]]
    assert rates and len(set(rates)) > 1  # the value head's estimates, not the 0.5 of a policy-only net
