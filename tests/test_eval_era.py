"""kifunet.eval.era (issue 33's era): a row's own date forced back on it changes nothing, the per-row likelihoods
add up to what ``evaluate`` reports with and without a forced year, and the summary, the most shifted rows, the
openings test and the 3-3 probability are the arithmetic of the per-row arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kifunet.data_prep import profiles
from kifunet.eval import era as E
from kifunet.eval import metrics as M

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "gnugo"
GAMES = 6  # gnugo-0000..0005: dated 2013, 2014, 2015, 2016, 2013, 2014


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """(predictor of a 19x19 profiled agz_tiny whose profile MLP output is perturbed, the test split of 6 sample
    games, all of them in it)."""
    from kifunet.cli import main
    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval.runs import load_run
    from model_helpers import profiled_agz_tiny
    from test_play_profile import _save

    if not SAMPLES.is_dir():
        pytest.skip("samples/gnugo is absent")
    root = tmp_path_factory.mktemp("era")
    ds = root / "ds"
    assert main(["build", *(str(SAMPLES / f"gnugo-{i:04d}.sgf") for i in range(GAMES)), "--out", str(ds),
                 "--features", "agz", "--split", "test:2000-2030", "--workers", "0", "--no-progress"]) == 0
    net = profiled_agz_tiny(19, 2.0)
    _save(root / "run", net, {"model": {"name": "agz_tiny", "profile_embedding": 8}}, board_size=19)
    return load_run(str(root / "run")), open_split(str(ds), "test")


def _years(reader, rows):
    return M.year_keys(reader.profile_games()["game_days"])[reader.column("game_index")[rows]]


def test_rows_of_years_bounds_and_limit(profiled):
    _, reader = profiled
    every = E.rows_of_years(reader)
    assert every.tolist() == list(range(len(reader)))
    years = _years(reader, every)
    assert set(years.tolist()) == {2013, 2014, 2015, 2016}
    some = E.rows_of_years(reader, 2014, 2015)
    assert set(_years(reader, some).tolist()) == {2014, 2015}
    assert len(some) == int(np.sum((years >= 2014) & (years <= 2015))) and np.all(np.diff(some) > 0)
    assert E.rows_of_years(reader, 2014, 2015, limit=7).tolist() == some[:7].tolist()
    assert set(_years(reader, E.rows_of_years(reader, first=2016)).tolist()) == {2016}
    assert len(E.rows_of_years(reader, 2020, 2030)) == 0


def test_own_date_forced_back_changes_nothing(profiled):
    pred, reader = profiled
    games = reader.column("game_index")
    days = reader.profile_games()["game_days"]
    for g in np.unique(games)[:2]:
        rows = np.flatnonzero(games == g)
        res = E.compare(pred, reader, rows, int(days[g]), batch_size=64)
        assert res["row"].tolist() == rows.tolist() and np.all(res["game_index"] == g)
        assert np.max(res["shift"]) < 1e-6
        np.testing.assert_allclose(res["forced_nll"], res["own_nll"], atol=1e-6)
        assert res["forced_correct"].tolist() == res["own_correct"].tolist()
        s = E.summary(res)
        assert s["d_top1"] == 0.0 and abs(s["d_nats"]) < 1e-6
    other = E.compare(pred, reader, rows, profiles.parse_fields("year=2005")["date"], batch_size=64)
    assert np.mean(other["shift"]) > 1e-3  # the net reads the date: another one moves the prediction


def test_likelihoods_add_up_to_the_evaluation_with_and_without_a_forced_year(profiled):
    from kifunet.eval.evaluate import evaluate

    pred, reader = profiled
    rows = E.rows_of_years(reader)
    res = E.compare(pred, reader, rows, profiles.parse_fields("year=2005")["date"], batch_size=64)
    assert len(res["own_nll"]) == len(reader)
    for key, profile in (("own", None), ("forced", "year=2005")):
        single = evaluate(pred, reader, batch_size=64, profile=profile, progress=False)["results"]["single"]
        assert res[f"{key}_nll"].sum() == pytest.approx(single["nll_sum"], rel=1e-6)
        assert int(res[f"{key}_correct"].sum()) == single["topk_correct"][0]
        assert np.all((res[f"{key}_p33"] >= 0) & (res[f"{key}_p33"] <= 1))
    assert np.all((res["shift"] >= 0) & (res["shift"] <= 1))
    assert res["move_number"].min() == 1 and res["move_number"].max() > 100


def test_a_net_without_profile_is_refused(profiled):
    _, reader = profiled

    class Plain:
        reads_profile = False
        board_size = 19

    with pytest.raises(ValueError, match="no profile input"):
        E.compare(Plain(), reader, np.array([0]), 0)


def _res(shift, moves, own_correct=None, forced_correct=None):
    n = len(shift)
    return {"row": np.arange(n), "game_index": np.zeros(n, np.int64), "move_number": np.asarray(moves, np.int64),
            "own_nll": np.linspace(1.0, 3.0, n), "forced_nll": np.linspace(1.0, 3.0, n) + 0.5,
            "own_correct": np.asarray(own_correct if own_correct is not None else [True] * n),
            "forced_correct": np.asarray(forced_correct if forced_correct is not None else [False] * n),
            "shift": np.asarray(shift, np.float64), "own_p33": np.full(n, 0.01), "forced_p33": np.full(n, 0.03)}


def test_summary_is_the_arithmetic_of_the_rows():
    res = _res([0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4], [True, False, True, True], [False, False, True, False])
    s = E.summary(res)
    assert s["rows"] == 4
    assert s["top1_own"] == pytest.approx(75.0) and s["top1_forced"] == pytest.approx(25.0)
    assert s["d_top1"] == pytest.approx(-50.0)
    assert s["nats_own"] == pytest.approx(2.0) and s["nats_forced"] == pytest.approx(2.5)
    assert s["d_nats"] == pytest.approx(0.5) and s["mean_shift"] == pytest.approx(0.25)
    empty = E.summary({k: v[:0] for k, v in res.items()})
    assert empty["rows"] == 0 and empty["top1_own"] is None and empty["d_nats"] is None


def test_most_shifted_openings_and_three_three():
    shift = [0.1, 0.9, 0.5, 0.9, 0.0, 0.3] + [0.05] * 194  # 200 rows: the top 1% is 2 rows
    moves = [100, 12, 5, 200, 1, 30] + list(range(31, 225))
    res = _res(shift, moves)
    assert E.most_shifted(res, 3).tolist() == [1, 3, 2]  # ties: row order
    assert E.most_shifted(res, 0).tolist() == []
    o = E.openings(res)
    assert o["top_rows"] == 2 and o["share_top"] == 0.5  # moves 12 and 200
    assert o["share_all"] == pytest.approx(4 / 200)  # moves 12, 5, 1, 30
    assert E.openings(res, top_share=0.02)["share_top"] == pytest.approx(3 / 4)  # + row 2 (move 5), row 5 (30)
    assert E.openings(res, top_share=0.0)["top_rows"] == 1  # at least one
    res["own_p33"][:] = np.arange(200) / 1000
    t = E.three_three(res)
    early = [i for i, m in enumerate(moves) if m <= 40]
    assert t["rows"] == len(early) and t["own"] == pytest.approx(np.mean(np.array(early) / 1000))
    assert t["forced"] == pytest.approx(0.03)
    assert E.three_three(res, first_moves=0)["own"] is None
    no_moves = dict(res, move_number=np.full(200, -1))
    assert E.openings(no_moves)["share_top"] is None


def test_three_three_points_are_the_four_corners_3_3():
    from kifunet.eval.board_image import gtp

    assert sorted(gtp(i, 19) for i in E.three_three_points(19)) == ["C17", "C3", "R17", "R3"]
    assert sorted(gtp(i, 9) for i in E.three_three_points(9)) == ["C3", "C7", "G3", "G7"]
