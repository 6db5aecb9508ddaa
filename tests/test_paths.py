"""kifunet/paths.py: the packaged sample corpus and the cwd's runs/."""

from __future__ import annotations

import os

from kifunet import paths
from kifunet.eval import runs


def test_sample_corpus_is_found_as_package_data():
    games = paths.sample_games()
    assert games == paths.samples_dir() / "gnugo" and (paths.samples_dir() / "README.md").is_file()
    assert len(list(games.glob("*.sgf"))) >= 16 and runs.sample_sgf() == str(games / "gnugo-0000.sgf")


def test_runs_dir_is_the_cwd_s_or_the_nearest_parent_s(tmp_path, monkeypatch):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "config.json").write_text("{}")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.delenv("KIFUNET_RUN", raising=False)
    for cwd in (tmp_path, tmp_path / "notebooks"):  # a notebook's kernel starts in notebooks/
        monkeypatch.chdir(cwd)
        assert paths.runs_dir() == tmp_path / "runs"
        assert runs.run_dirs_from_env() == [str(tmp_path / "runs" / "a")]
    assert paths.runs_dir(tmp_path / "notebooks") == tmp_path / "runs"
    elsewhere = tmp_path / "x" / "y"
    elsewhere.mkdir(parents=True)
    assert paths.runs_dir(elsewhere) == tmp_path / "runs"


def test_runs_are_found_at_any_depth_newest_first(tmp_path, monkeypatch):
    """runs/x, the quickstart's runs/quickstart/run and runs/a/b/c are all runs; a run's own folders are not
    searched, nor are folders without a config.json (datasets, match directories)."""
    root = tmp_path / "runs"
    made = {}
    for rel in ("a/b/c", "quickstart/run", "x"):
        d = root / rel
        (d / "checkpoints" / "6").mkdir(parents=True)
        (d / "config.json").write_text("{}")
        (d / "eval").mkdir()
        made[rel] = str(d)
    (root / "quickstart" / "run" / "eval" / "config.json").write_text("{}")  # inside a run: not a run of its own
    (root / "quickstart" / "data" / "train").mkdir(parents=True)  # a dataset beside the run
    (root / "match" / "m1" / "games").mkdir(parents=True)
    (root / "match" / "m1" / "match.json").write_text("{}")
    for age, rel in enumerate(("a/b/c", "quickstart/run", "x")):  # age 0 is the newest
        t = 1_700_000_000 - 1000 * age
        d = root / rel
        for p in (d, d / "config.json", d / "checkpoints", d / "eval"):
            os.utime(p, (t, t))
    monkeypatch.delenv("KIFUNET_RUN", raising=False)
    monkeypatch.chdir(tmp_path / "runs" / "quickstart")  # any folder below the checkout finds its runs/
    want = [made["a/b/c"], made["quickstart/run"], made["x"]]
    assert runs.run_dirs_from_env() == want
    assert runs.run_dirs_from_env(newest_only=True) == want[:1]
    assert runs.find_run_dirs(root) == want
    os.utime(root / "x" / "config.json")  # touched now: the newest
    assert runs.run_dirs_from_env()[0] == made["x"]
