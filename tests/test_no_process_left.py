"""No process outlives the command that started it (issue 48, item 8): ``kifunet build`` with worker processes,
``kifunet train`` with input workers and ``kifunet match`` with its engines, each ended by SIGTERM, SIGINT or
SIGKILL of the command's own process (not of its process group: what a ``kill PID``, the OOM killer or a
crashed parent does). Every process the command started is found by a marker in its environment
(:mod:`proc_marks`), so one re-parented to PID 1 counts too.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

import pytest
from conftest import REPO, require, require_gnugo
from proc_marks import kifunet_argv, kill_and_wait, marked, reap, start_marked, wait_until

SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGKILL]
require(os.path.isdir("/proc/self"), "/proc (the processes are found there)", "Linux")


def _pool_workers(procs: dict[int, str]) -> int:
    """Pool workers among ``procs``: processes of the fork server but the server itself (the first)."""
    return sum("multiprocessing.forkserver" in c for c in procs.values()) - 1


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The sample games four times (140 records): a build of some seconds on two workers."""
    d = tmp_path_factory.mktemp("procs") / "in"
    for copy in "abcd":
        shutil.copytree(REPO / "samples" / "gnugo", d / copy)
    return d


@pytest.mark.parametrize("sig,group", [(s, False) for s in SIGNALS] + [(signal.SIGINT, True)],
                         ids=["SIGTERM", "SIGINT", "SIGKILL", "Ctrl-C"])
def test_build_leaves_no_process_when_killed(corpus, tmp_path, sig, group):
    """``kifunet build --workers 2`` killed while its workers run: its fork server, resource tracker and
    workers all end with it (they lived on, re-parented to PID 1, before each worker watched the build).
    Ctrl-C: SIGINT to the whole process group, as a terminal sends it."""
    with open(tmp_path / "build.log", "w") as log:
        p, mark = start_marked(kifunet_argv("build", corpus, "--out", tmp_path / "ds", "--workers", "2",
                                            "--no-progress"), log=log, cwd=tmp_path)
        try:
            before = wait_until(p, mark, lambda ps: _pool_workers(ps) >= 1, what="a pool worker ran")
            left = kill_and_wait(p, mark, sig, group=group)
            assert not left, f"alive 10 s after {signal.Signals(sig).name} of the build: {left} (were: {before})"
            assert p.returncode != 0
        finally:
            reap(p, mark)


# A GTP engine that thinks forever: at ``genmove`` it creates the file ARGV[1] and sleeps, reading nothing more
# (as a long search does), so only a signal ends it.
THINKER = r'''
import sys, time
for line in sys.stdin:
    cmd = (line.split() or [""])[0]
    if cmd == "genmove":
        open(sys.argv[1], "w").close()
        time.sleep(600)
    out = {"name": "thinker", "version": "1", "known_command": "false"}.get(cmd, "")
    print("= " + out + "\n", flush=True)
'''


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_match_leaves_no_engine_when_killed(tmp_path, sig):
    """``kifunet match`` killed while an engine thinks: both engines end with it (an engine busy in
    ``genmove`` does not read the end of its input, so it lived on until its search ended)."""
    engine = tmp_path / "thinker.py"
    engine.write_text(THINKER)
    flag = tmp_path / "thinking"
    cmd = f"{sys.executable} {engine} {flag}"
    with open(tmp_path / "match.log", "w") as log:
        p, mark = start_marked(kifunet_argv("match", "--engine", cmd, "--opponent", cmd, "--referee", "none",
                                            "--games", "2", "--board-size", "9", "--out", tmp_path / "m",
                                            "--no-progress"), log=log, cwd=tmp_path)
        try:
            before = wait_until(p, mark, lambda ps: flag.exists() and len(ps) >= 3, what="an engine thought")
            left = kill_and_wait(p, mark, sig)
            assert not left, f"alive 10 s after {signal.Signals(sig).name} of the match: {left} (were: {before})"
        finally:
            reap(p, mark)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A small dataset of the sample games, for the trainer."""
    import subprocess

    out = tmp_path_factory.mktemp("procs_ds") / "ds"
    proc = subprocess.run(kifunet_argv("build", REPO / "samples" / "gnugo", "--out", out, "--workers", "0",
                                       "--no-progress"), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_train_leaves_no_input_worker_when_stopped(dataset, tmp_path, sig):
    """``kifunet train --config.input.workers=1`` stopped by SIGTERM / SIGINT (a checkpoint, exit 143 / 130):
    its grain worker and resource tracker end with it (``kill -9``:
    tests/test_train_loop.py::test_kill_9_of_the_trainer_ends_its_loader_workers)."""
    wd = tmp_path / "wd"
    with open(tmp_path / "train.log", "w") as log:
        p, mark = start_marked(kifunet_argv(
            "train", "--config", REPO / "train" / "configs" / "tiny.py", "--workdir", wd,
            f"--config.dataset={dataset}", "--config.input.workers=1", "--config.train_positions=32000000",
            "--config.eval_split=", "--config.log_every_steps=1", "--config.checkpoint_every_positions=0"),
            log=log, cwd=tmp_path)
        try:
            before = wait_until(p, mark, lambda ps: (wd / "metrics_train.jsonl").is_file()
                                and any("spawn_main" in c for c in ps.values()), what="training with a worker")
            left = kill_and_wait(p, mark, sig, exit_s=120)
            assert not left, f"alive 10 s after {signal.Signals(sig).name} of train: {left} (were: {before})"
            assert p.returncode == 128 + sig, (tmp_path / "train.log").read_text()[-2000:]
        finally:
            reap(p, mark)


@pytest.mark.slow
def test_eval_leaves_no_process_when_killed(tmp_path):
    """``kifunet eval`` reads its batches in its own process (no input workers): killed by SIGKILL while it
    evaluates, nothing of it is left."""
    import subprocess

    ds = tmp_path / "ds"
    proc = subprocess.run(kifunet_argv("build", REPO / "samples" / "gnugo", "--out", ds, "--features", "gonn",
                                       "--workers", "0", "--no-progress"), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "eval.log", "w") as log:
        p, mark = start_marked(kifunet_argv("eval", "--data", ds, "--split", "train", "--ensemble",
                                            "--out", tmp_path / "e.json"), log=log, cwd=tmp_path)
        try:
            wait_until(p, mark, lambda ps: "net:" in (tmp_path / "eval.log").read_text(), what="eval loaded its net")
            time.sleep(3)  # into the evaluation (8 symmetries of 7,368 positions take longer)
            assert p.poll() is None, (tmp_path / "eval.log").read_text()
            before = marked(mark)
            left = kill_and_wait(p, mark, signal.SIGKILL)
            assert not left, f"alive 10 s after the eval's kill -9: {left} (were: {before})"
        finally:
            reap(p, mark)
