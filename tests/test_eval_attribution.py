"""kifunet.eval.attribution ("who played this"): a game's NLL under each candidate profile adds up to what
``evaluate`` reports with that profile forced, hidden fields change it, and the n-game guess is scored right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kifunet.data_prep import profiles
from kifunet.eval import attribution as A

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "gnugo"


def test_accuracy_of_a_separating_likelihood_and_of_a_noisy_one():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 40)
    clean = np.where(np.eye(3)[labels] > 0, 0.0, 5.0)  # the true candidate always the least NLL
    assert A.accuracy(clean, labels, 1, trials=200)["accuracy"] == 1.0
    noisy = clean + rng.normal(0, 8.0, clean.shape)  # one game says little, ten say more
    one, ten = (A.accuracy(noisy, labels, n, trials=2000, seed=1)["accuracy"] for n in (1, 10))
    assert 0.3 < one < 0.8 and ten > one + 0.1
    assert A.accuracy(noisy, np.array([0] * 5 + [1] * 50 + [-1] * 65), 10, trials=50)["labels"] == [1]
    assert A.accuracy(noisy[:3], np.array([0, 1, 2]), 2)["trials"] == 0
    tie = np.zeros((4, 2))
    assert A.accuracy(tie, np.array([0, 0, 1, 1]), 1, trials=100)["by_label"] == {"0": 1.0, "1": 0.0}


def test_labels_of_sources_and_years():
    cands = [{"source": "kgs"}, {"source": "fox"}]
    codes = np.array([profiles.SOURCES.index("fox"), -1, profiles.SOURCES.index("kgs"), profiles.SOURCES.index("ogs")])
    assert A.source_labels(codes, cands).tolist() == [1, -1, 0, -1]
    years = [profiles.parse_fields(f"year={y}") for y in (2005, 2017)]
    days = np.array([profiles.days_since_epoch("2004-01-01"), profiles.days_since_epoch("2016-12-01"),
                     profiles.UNKNOWN_DAYS])
    assert A.year_labels(days, years).tolist() == [0, 1, -1]
    picked = A.pick_games(np.array([0, 0, 0, 1, -1, 1]), 2, seed=3)
    assert len(picked) == 4 and set(picked) <= {0, 1, 2, 3, 5} and {3, 5} <= set(picked)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """(predictor of a 19x19 profiled agz_tiny whose profile MLP output is perturbed, the test split of 4 sample
    games)."""
    from kifunet.cli import main
    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval.runs import load_run
    from model_helpers import profiled_agz_tiny
    from test_play_profile import _save

    if not SAMPLES.is_dir():
        pytest.skip("samples/gnugo is absent")
    root = tmp_path_factory.mktemp("attribution")
    ds = root / "ds"
    assert main(["build", *(str(SAMPLES / f"gnugo-{i:04d}.sgf") for i in range(4)), "--out", str(ds), "--features",
                 "agz", "--hash-split", "test:0.5", "--workers", "0", "--no-progress"]) == 0
    net = profiled_agz_tiny(19, 2.0)
    _save(root / "run", net, {"model": {"name": "agz_tiny", "profile_embedding": 8}}, board_size=19)
    return load_run(str(root / "run")), open_split(str(ds), "test")


def test_game_nll_adds_up_to_the_forced_evaluation(profiled):
    from kifunet.eval.evaluate import evaluate

    pred, reader = profiled
    games = np.unique(reader.column("game_index"))
    assert len(games) >= 1
    cands = [profiles.parse_fields("source=kgs"), profiles.parse_fields("source=fox,year=2005")]
    nll = A.game_nll(pred, reader, games, cands, batch_size=32)
    assert nll.shape == (len(games), 2) and np.all(nll > 0)
    for k, text in enumerate(("source=kgs", "source=fox,year=2005")):
        res = evaluate(pred, reader, batch_size=32, profile=text, progress=False)
        assert nll[:, k].sum() == pytest.approx(res["results"]["single"]["nll_sum"], rel=1e-6)
    assert abs(nll[:, 0].sum() - nll[:, 1].sum()) > 1e-3  # the net reads the profile
    hidden = A.game_nll(pred, reader, games, cands[:1], hide=("date", "time_control"), batch_size=32)
    assert abs(hidden[:, 0].sum() - nll[:, 0].sum()) > 1e-3
    one = A.game_nll(pred, reader, games[:1], cands[:1], batch_size=32)  # only that game's rows
    assert one[0, 0] == pytest.approx(nll[0, 0], rel=1e-6)


def test_a_net_without_profile_is_refused(profiled):
    pred, reader = profiled

    class Plain:
        reads_profile = False

    with pytest.raises(ValueError, match="no profile input"):
        A.game_nll(Plain(), reader, np.array([0]), [{"source": "kgs"}])
