"""data_prep/paths.py: the packaged sample corpus, the packaged default net and the cwd's runs/."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kifunet.data_prep import paths
from kifunet.eval import runs
from kifunet.train import nets

REPO = Path(__file__).resolve().parents[1]


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
        assert runs.run_dirs_from_env() == [str(tmp_path / "runs" / "a"), str(paths.default_net())]
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
    assert runs.run_dirs_from_env() == [*want, str(paths.default_net())]  # the default net comes last
    assert runs.net_from_env() == made["a/b/c"]  # the net to study: the newest run with a checkpoint
    assert runs.find_run_dirs(root) == want
    os.utime(root / "x" / "config.json")  # touched now: the newest
    assert runs.run_dirs_from_env()[0] == made["x"]


def test_kifunet_run_names_the_runs_and_the_net(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "config.json").write_text("{}")
    monkeypatch.setenv("KIFUNET_RUN", os.pathsep.join([str(a), str(b)]))
    assert runs.run_dirs_from_env() == [str(a), str(b)] and runs.net_from_env() == str(a)
    monkeypatch.setenv("KIFUNET_RUN", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing"):
        runs.net_from_env()


def test_the_default_net_is_package_data_and_a_trained_run():
    """DEFAULT_NET names a kept run; pyproject ships its config, checkpoint, metrics and evaluations (and nothing
    of another run), so a wheel install plays it (tests/test_wheel_install.py installs one)."""
    import tomllib

    net = paths.default_net()
    assert net == REPO / "pretrained" / paths.DEFAULT_NET  # an editable install: the checkout's folder
    assert nets.is_run_dir(str(net)) and list((net / "checkpoints").glob("*/state"))
    shipped = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = shipped["kifunet.pretrained"]
    assert {g.split("/")[0] for g in globs} == {"README.md", paths.DEFAULT_NET}
    assert {f"{paths.DEFAULT_NET}/config.json", f"{paths.DEFAULT_NET}/checkpoints/**/*"} <= set(globs)
    assert nets.read_config(str(net))  # the config loads


def test_notebook_figures_of_the_default_net_go_to_runs(tmp_path, monkeypatch):
    """The default net's folder is package data: figures drawn for it go to runs/figures, a run's to its own."""
    monkeypatch.delenv("KIFUNET_FIGURES", raising=False)
    monkeypatch.chdir(tmp_path)
    assert runs.figures_dir([str(paths.default_net())]) == str(tmp_path / "runs" / "figures")
    run = tmp_path / "r"
    run.mkdir()
    assert runs.figures_dir([str(run)]) == str(run / "figures") and (run / "figures").is_dir()


def test_gtp_plays_the_default_net_when_none_is_named(monkeypatch, capsys):
    import io
    import sys

    from kifunet.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("name\nplay b Q16\ngenmove w\nquit\n"))
    assert main(["gtp"]) == 0
    replies = [r.strip() for r in capsys.readouterr().out.split("\n\n") if r.strip()]
    assert replies[:2] == ["= kifunet", "="] and replies[2].startswith("= ") and replies[2] != "= PASS", replies


# --------------------------------------------------------------------------- no path of one particular machine

#: roots of one machine's file system that code and docs must not cite (data sits in ``../shared/data/...`` beside
#: the repository, or is "a KGS archive"); ``/home/me/`` is the docs' placeholder for the reader's own home, and
#: ``/tmp`` is every POSIX machine's scratch
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|check)/|(?<![\w.~-])/home/(?!me/)[\w.-]+/")
#: code and docs (records of measurements -- JSON results, checkpoints -- keep the paths they were made with)
CODE_AND_DOCS = {".py", ".md", ".rst", ".toml", ".cfg", ".ini", ".ipynb", ".sh", ".yml", ".yaml", ".in"}


def machine_paths(rel_paths, root: Path) -> list[str]:
    """``FILE:LINE: text`` for each line of a code or docs file (or ``#!`` script) that cites a machine's path."""
    found = []
    for rel in rel_paths:
        p = root / rel
        if not p.is_file():
            continue
        data = p.read_bytes()
        if p.suffix not in CODE_AND_DOCS and not (p.suffix == "" and data.startswith(b"#!")):
            continue
        for i, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if MACHINE_PATH.search(line):
                found.append(f"{rel}:{i}: {line.strip()[:100]}")
    return found


def test_no_file_outside_tests_cites_a_path_of_one_machine():
    """Tracked files and new ones not ignored (what the next commit holds; :mod:`repo_files`, no virtual
    environment), tests/ excepted (they may write ``/tmp``-style fixtures); say ``../shared/data/kgs`` (relative
    to the repository) or "a KGS archive"."""
    from repo_files import repo_files

    files = [f for f in repo_files(REPO) if not f.startswith("tests/")]
    assert len(files) > 100  # the whole checkout, not an empty listing
    assert machine_paths(files, REPO) == []


def test_machine_paths_are_found_and_placeholders_are_not(tmp_path):
    bad = ["kifunet build /work/shared/data/kgs --out x", "python -m venv /root/beamenv", "`/check/x.sgf`",
           "see /home/alice/data/kgs"]
    good = ["kifunet build ../shared/data/kgs --out x", "--workdir /tmp/tiny", "`/home/me/kifunet/.venv/bin/kifunet`",
            "https://example.org/work/x", "data/root/x", "~/work/x"]
    (tmp_path / "a.py").write_text("\n".join(bad + good))
    (tmp_path / "b.json").write_text('{"path": "/work/main/data"}')  # a record: not checked
    (tmp_path / "run").write_text("#!/bin/sh\ncd /work/main\n")
    got = machine_paths(["a.py", "b.json", "run"], tmp_path)
    assert [g.split(":")[:2] for g in got] == [["a.py", "1"], ["a.py", "2"], ["a.py", "3"], ["a.py", "4"],
                                              ["run", "2"]]
