"""The probe set (eval/probes.sgf, scripts/make_probes.py), its scorer (eval/probes.py) and `kifunet eval --probes`."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from conftest import load_script
from kifunet.cli import main
from kifunet.data_prep.game import MOVE
from kifunet.data_prep.planes import features, replay
from kifunet.data_prep.rules import analysis
from kifunet.eval.probes import default_path, load_probes, score

mp = load_script("make_probes")


@pytest.fixture(scope="module")
def probes():
    return load_probes()


def _before_answer(p):
    """The rules engine's board of the probe position (before the final move) and the opponent's last move."""
    a = replay.analyse_game(p.record, analysis.F_LIBS_AFTER_PLA)
    stones = a.stones[-1].reshape(-1)
    b = mp.board_of({q: int(c) for q, c in enumerate(stones) if c})
    return a, b, int(a.target[-2])


def test_the_set_has_every_category(probes):
    counts = Counter(p.category for p in probes)
    assert set(counts) == set(mp.CATEGORIES) and min(counts.values()) >= 8 and 40 <= len(probes) <= 100
    assert len({p.name for p in probes}) == len(probes)


def test_every_probe_replays_and_every_answer_is_legal(probes):
    for p in probes:
        a = replay.analyse_game(p.record, analysis.F_LIBS_AFTER_PLA)  # raises on any illegal move
        colours = p.record.colours[p.record.kinds == MOVE]
        assert len(colours) == 5 and list(colours[-2:]) == [3 - p.mover, p.mover], p.name
        assert all(colours[i] != colours[i + 1] for i in range(4)), p.name
        assert int(a.target[-1]) in p.answers
        for q in p.answers:
            assert a.legal[-1][q], f"{p.name}: answer {q} illegal"


def test_the_category_checks_hold(probes):
    for p in probes:
        _, b, last = _before_answer(p)
        assert mp.accepted(p.category, b, p.mover, list(p.keys), last) == sorted(p.answers), p.name


def test_the_checks_reject_a_position_without_the_problem(probes):
    """Take the opponent's problem move off the board: every category's check then fails."""
    for cat in mp.CATEGORIES:
        p = next(x for x in probes if x.category == cat)
        _, b, last = _before_answer(p)
        stones = {q: int(c) for q, c in enumerate(b.stones.reshape(-1)) if c and q != last}
        with pytest.raises(mp.ProbeError):
            mp.accepted(cat, mp.board_of(stones), p.mover, list(p.keys), last)


def test_the_generator_reproduces_the_committed_file():
    with open(default_path(), encoding="utf-8") as f:
        assert mp.render(mp.probes()) == f.read()


def test_a_bad_probe_file_is_named(tmp_path):
    bad = tmp_path / "bad.sgf"
    bad.write_text("(;SZ[19]XC[ladder]XA[aa]XT[bb];B[cc];W[dd])")
    with pytest.raises(ValueError, match=r"bad\.sgf#0: the final move is not one of the accepted answers"):
        load_probes(bad)
    with pytest.raises(ValueError, match="missing.sgf: cannot read"):
        load_probes(tmp_path / "missing.sgf")


class _Oracle:
    """A fake predictor whose best move is the first accepted answer (or, with ``wrong``, a legal non-answer); it
    keeps the batch it was given."""

    def __init__(self, probes, feature_set, wrong=False):
        self.fs, self.board_size, self.info = features.get(feature_set), 19, {"name": "oracle"}
        self.probes, self.wrong = probes, wrong

    def predict(self, batch):
        self.batch = batch
        z = np.zeros((len(self.probes), 362), np.float32)
        for i, p in enumerate(self.probes):
            if self.wrong:
                legal = np.flatnonzero(batch["legal"][i][:361])
                z[i, [q for q in legal if q not in p.answers][:6]] = 10.0
            else:
                z[i, p.answers[0]] = 10.0
        return z


@pytest.mark.parametrize("feature_set", ["maddison", "gonn"])
def test_score_counts_hits_on_the_planes_training_sees(probes, feature_set):
    right = _Oracle(probes, feature_set)
    res = score(right, probes)
    assert res["overall"]["top1"] == 1.0 and res["overall"]["top5"] == 1.0
    assert all(c["count"] >= 8 and c["top1"] == 1.0 for c in res["categories"].values())
    p = probes[7]
    want = list(replay.iter_positions(p.record, feature_set))[-1]
    np.testing.assert_array_equal(right.batch["planes"][7], want.planes)
    assert right.batch["player_rank"][7] == want.player_rank and right.batch["to_move"][7] == want.to_move
    wrong = score(_Oracle(probes, feature_set, wrong=True), probes)
    assert wrong["overall"]["top1"] == 0.0 and wrong["overall"]["top5"] == 0.0
    a = replay.analyse_game(p.record, analysis.F_LIBS_AFTER_PLA)
    legal = int(a.legal[-1].sum()) + 1  # and pass
    assert res["probes"][7]["uniform_top1"] == pytest.approx(len(p.answers) / legal)


def test_score_of_a_tiny_untrained_net(probes):
    from flax import nnx

    from kifunet import models
    from kifunet.eval.evaluate import Predictor

    pred = Predictor(models.create("maddison_tiny", board_size=19, rngs=nnx.Rngs(0)), "maddison")
    res = score(pred, probes)
    assert res["overall"]["count"] == len(probes) and set(res["categories"]) == set(mp.CATEGORIES)
    for s in [*res["categories"].values(), res["overall"]]:
        assert 0 <= s["top1"] <= s["top5"] <= 1 and 0 < s["uniform_top1"] < s["uniform_top5"] < 0.1
    assert all(len(r["top"]) == 5 for r in res["probes"])
    json.dumps(res)


def test_eval_probes_command(tmp_path, capsys):
    out = tmp_path / "probes.json"
    assert main(["eval", "--probes", "--out", str(out)]) == 0  # the default net
    text = capsys.readouterr().out
    assert "default net" in text and "second_eye" in text and "overall" in text
    res = json.loads(out.read_text())
    assert res["format"] == "kifunet-probes" and res["overall"]["count"] == len(load_probes())
    assert main(["eval", "--probes", str(tmp_path / "none.sgf"), "--out", "-"]) == 2
    assert "none.sgf" in capsys.readouterr().err
    assert main(["eval", "--probes", "--ensemble", "--out", "-"]) == 2
    assert "drop --ensemble" in capsys.readouterr().err


def test_the_manual_table_is_the_kept_results():
    """docs/evaluation.md's probe table: each shipped net's row is its kept JSON (benchmarks/results/probes/)."""
    from pathlib import Path

    from docs_pages import page

    text = page("evaluation")
    kept = sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "probes").glob("*.json"))
    assert len(kept) >= 4
    cats = ("ladder", "semeai", "far_defence", "second_eye")
    for f in kept:
        res = json.loads(f.read_text())
        name = f.stem.replace("rank_experiment_", "rank_experiment/")
        line = next((ln for ln in text.splitlines() if ln.startswith(f"| `{name}` ")), None)
        assert line is not None, name
        got = [c.strip() for c in line.strip("|").split("|")][1:]
        want = [f"{100 * res['categories'][c]['top1']:.1f} / {100 * res['categories'][c]['top5']:.1f}" for c in cats]
        want.append(f"{100 * res['overall']['top1']:.1f} / {100 * res['overall']['top5']:.1f}")
        assert got == want, (name, got, want)
        assert "/work/" not in f.read_text()  # no machine paths in kept results
