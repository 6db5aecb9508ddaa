"""The training loop's hardening (issue 13, items 11-14) and its hot loop (issue 17.3).

* a ``kill -9`` of the trainer ends its grain worker and multiprocessing's helper;
* ``time_limit_s`` is honoured within seconds, whatever the logging interval, and a rerun whose time is used up
  trains no further;
* a ``train`` that fails before its first checkpoint leaves no ``config.json`` (no run), and a failed resume
  leaves the run's own;
* a resumed ``train`` says so on its first line; the quickstart says so too and ``--fresh`` starts over;
* no device-to-host copy per step (``jax.transfer_guard`` plus a count of explicit fetches), batches already on
  the devices, the state donated, nothing compiled after the first steps (a ragged last evaluation batch
  included); parameters are bit-identical however often metrics are fetched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from kifunet.cli import main as cli_main
from kifunet.train import metric_writer, nets, parallel, preemption, train
from test_train import TINY, _env, state_arrays, tiny
from test_train_data import ds_maddison, pipeline  # noqa: F401 (fixture)

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax._src.dispatch.BACKEND_COMPILE_EVENT


# ------------------------------------------------------------------------------------------------------------
# item 11: a killed trainer takes its loader workers with it


def _group(pgid: int) -> dict[int, str]:
    """Live (non-zombie) processes of process group ``pgid``: pid -> command line (read from /proc)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            out[int(name)] = cmd
    return out


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")
def test_kill_9_of_the_trainer_ends_its_loader_workers(ds_maddison, tmp_path):
    wd = tmp_path / "wd"
    log = open(tmp_path / "train.log", "w")
    p = subprocess.Popen([sys.executable, "-m", "kifunet.cli", "train", "--config", TINY, "--workdir", str(wd),
                          f"--config.dataset={ds_maddison}", "--config.input.workers=1",
                          "--config.train_positions=32000000", "--config.eval_split=", "--config.log_every_steps=1",
                          "--config.checkpoint_every_positions=0"],
                         env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 300
        workers = {}
        while time.time() < deadline and p.poll() is None:  # training (so the worker is up), and its worker
            workers = {q: c for q, c in _group(p.pid).items() if q != p.pid}
            if (wd / "metrics_train.jsonl").is_file() and any("spawn_main" in c for c in workers.values()):
                break
            time.sleep(0.2)
        assert p.poll() is None and any("spawn_main" in c for c in workers.values()), \
            (tmp_path / "train.log").read_text()[-3000:]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        deadline = time.time() + 10
        while _group(p.pid) and time.time() < deadline:
            time.sleep(0.1)
        left = _group(p.pid)
        assert not left, f"still alive 10 s after the trainer's kill -9: {left} (were: {workers})"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # this test's own process group
        except ProcessLookupError:
            pass
        p.wait()
        log.close()


# ------------------------------------------------------------------------------------------------------------
# item 12: time limits


def _meta(wd) -> dict:
    ck = Path(wd) / "checkpoints"
    step = max(int(d) for d in os.listdir(ck) if d.isdigit())
    return json.loads((ck / str(step) / "meta" / "metadata").read_text())


@pytest.mark.slow
def test_time_limit_is_honoured_within_seconds_whatever_the_log_interval(ds_maddison, tmp_path):
    limit, steps = 8.0, 20_000  # well above the first step's compilation, which counts as training time
    cfg = tiny(ds_maddison, train_positions=32 * steps, log_every_steps=10 * steps, eval_split="",
               checkpoint_every_positions=0, time_limit_s=limit)
    res = train.train_and_evaluate(cfg, str(tmp_path / "wd"))
    meta = _meta(tmp_path / "wd")
    assert 1 < res["step"] < steps and meta["step"] == res["step"]
    assert limit <= meta["train_seconds"] < limit + 2.0, meta
    tr = metric_writer.read_jsonl(str(tmp_path / "wd" / "metrics_train.jsonl"))
    assert [r["step"] for r in tr] == [res["step"]]  # the stop logs its (partial) window

    # the rerun of a run whose time is used up trains no further (it used to run up to a log interval more)
    res2 = train.train_and_evaluate(cfg, str(tmp_path / "wd"))
    assert res2["step"] == res["step"]


def test_stop_clock_agrees_across_processes_from_the_host_clock():
    """Several processes: process 0's decision is broadcast at agreed steps only, spaced by its step time."""
    now = [0.0]
    sent = []

    def broadcast(x):
        sent.append(np.asarray(x).tolist())
        return x

    clock = preemption.StopClock(10.0, 4.0, process_count=2, sync_s=1.0, broadcast=broadcast, clock=lambda: now[0])
    decisions = []
    for step in range(1, 200):
        now[0] += 0.1  # 0.1 s a step: agree about every 10 steps (1 s), more often in the last second
        decisions.append(clock.over(step))
        if decisions[-1]:
            break
    assert decisions[-1] and not any(decisions[:-1])
    assert 10.0 <= 4.0 + now[0] <= 10.25  # 6 s to go when it started: stops at the limit, within 2 steps
    assert sent[0][1] == 2 and sent[1][1] in (11, 12)  # then about 1 s of steps ahead
    assert len(sent) < len(decisions) / 3  # not a broadcast (a device round trip) per step
    single = preemption.StopClock(1.0, 0.0, clock=lambda: now[0])
    now[0] += 0.5
    assert not single.over(1)
    now[0] += 0.6
    assert single.over(2) and not preemption.StopClock(0.0).over(1)


# ------------------------------------------------------------------------------------------------------------
# item 13: a failed train is not a run


def test_a_train_that_fails_before_its_first_checkpoint_leaves_no_run(ds_maddison, tmp_path):
    wd = tmp_path / "wd"
    cfg = tiny(ds_maddison, train_positions=32 * 20, optimizer__name="sgd", schedule__lr=1e4, log_every_steps=1,
               eval_split="", checkpoint_every_positions=32 * 100)
    with pytest.raises(train.NonFiniteLoss):
        train.train_and_evaluate(cfg, str(wd))
    assert not (wd / "config.json").exists() and not nets.is_run_dir(str(wd))
    with pytest.raises(FileNotFoundError, match="not a training run"):
        nets.find_workdir(str(wd))


@pytest.mark.slow
def test_a_failed_resume_keeps_the_run_s_config(ds_maddison, tmp_path):
    wd = tmp_path / "wd"
    train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 2, eval_split=""), str(wd))
    before = (wd / "config.json").read_text()
    assert nets.is_run_dir(str(wd)) and json.loads(before)["model"]["name"] == "maddison_tiny"
    with pytest.raises(ValueError, match="does not match"):
        train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 4, eval_split="", model__name="gonn_tiny"),
                                 str(wd))
    assert (wd / "config.json").read_text() == before


# ------------------------------------------------------------------------------------------------------------
# item 14: a resumed run says so first; the quickstart's --fresh


def test_a_resumed_train_says_so_on_its_first_line(ds_maddison, tmp_path, capsys):
    args = ["train", "--config", TINY, "--workdir", str(tmp_path / "wd"), f"--config.dataset={ds_maddison}",
            "--config.eval_split="]
    assert cli_main([*args, "--config.train_positions=64"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("kifunet train: model")
    assert cli_main([*args, "--config.train_positions=128"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("kifunet train: resuming from step 2 "), out[:3]


def test_quickstart_rerun_says_it_resumes_and_fresh_starts_over(tmp_path, monkeypatch, capsys):
    from kifunet.commands import quickstart

    from kifunet.commands.eval import default_out

    calls = []

    def fake_run(argv, note=""):
        calls.append(argv)
        if argv[0] == "eval":  # the result file the summary reads (its lines: tests/test_quickstart.py)
            result = Path(default_out(argv[argv.index("--checkpoint") + 1], argv[argv.index("--data") + 1], "test",
                                      False))
            result.parent.mkdir(parents=True, exist_ok=True)
            result.write_text("{}")

    monkeypatch.setattr(quickstart, "_run", fake_run)
    monkeypatch.setattr(quickstart, "summary", lambda result, limit_s: "")
    out = tmp_path / "qs"
    assert cli_main(["quickstart", "--out", str(out), "--minutes", "1"]) == 0
    assert not capsys.readouterr().out.strip()  # a first run: nothing to say
    first_calls = list(calls)
    meta = out / "run" / "checkpoints" / "412" / "meta"  # what a finished run leaves
    meta.mkdir(parents=True)
    (meta / "metadata").write_text(json.dumps({"step": 412, "train_seconds": 61.0}))
    (out / "run" / "config.json").write_text("{}")
    calls.clear()
    assert cli_main(["quickstart", "--out", str(out), "--minutes", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "resuming" in first and "step 412" in first and "--fresh" in first and "trains no further" in first
    assert calls == first_calls  # the same commands: `kifunet train` resumes the workdir
    calls.clear()
    assert cli_main(["quickstart", "--out", str(out), "--minutes", "2"]) == 0
    assert "training until 120 s in all" in capsys.readouterr().out.splitlines()[0]
    assert cli_main(["quickstart", "--out", str(out), "--minutes", "1", "--fresh"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "--fresh" in first and "deleted" in first and not (out / "run").exists()
    (out / "run").mkdir()
    (out / "run" / "notes.txt").write_text("mine")
    assert cli_main(["quickstart", "--out", str(out), "--fresh"]) == 2  # never deletes what is not a run's
    assert "notes.txt" in capsys.readouterr().err and (out / "run" / "notes.txt").exists()


# ------------------------------------------------------------------------------------------------------------
# issue 17.3: the hot loop


def test_no_device_to_host_copy_per_step_and_no_recompilation(ds_maddison, tmp_path, monkeypatch):
    """40 steps, a log every 10, an evaluation at step 20 (64 rows: one batch) and a final one on 100 rows (a
    ragged last batch of 36, padded). Under ``jax.transfer_guard_device_to_host('disallow')`` any implicit
    device-to-host transfer raises (``float(x)``, ``np.asarray(x)``, ``bool(x)`` of a device value); the explicit
    ones (``jax.device_get``) are counted: one per log interval and one per evaluation, none per step.
    Compilations are counted with JAX's monitoring events: none after the first evaluation."""
    events = []

    def on_event(event, duration, **kw):
        if event == BACKEND_COMPILE_EVENT:
            events.append(kw.get("fun_name", "?"))

    jax.monitoring.register_event_duration_secs_listener(on_event)
    fetches = []  # (number of compilations so far) at each explicit device-to-host copy
    real_get = jax.device_get

    def counting_get(x):
        fetches.append(len(events))
        return real_get(x)

    monkeypatch.setattr(jax, "device_get", counting_get)
    cfg = tiny(ds_maddison, train_positions=32 * 40, log_every_steps=10, eval_every_positions=32 * 20,
               eval_positions=64, final_eval_positions=100, checkpoint_every_positions=0, eval_batch_size=64)
    try:
        with jax.transfer_guard_device_to_host("disallow"):
            res = train.train_and_evaluate(cfg, str(tmp_path / "wd"))
    finally:
        jax.monitoring.unregister_event_duration_listener(on_event)
    assert res["step"] == 40 and res["eval_positions"] == 100
    # 1 (the start step) + 4 log intervals + 2 evaluations; the per-step loop used to fetch every step
    assert len(fetches) == 7, fetches
    assert events, "no compilation seen: the monitoring event name changed?"
    after_first_eval = fetches[3:]  # start, step 10, step 20, [eval 20], 30, 40, [final eval]
    assert len(set(after_first_eval)) == 1, (fetches, events)  # the ragged final batch did not recompile
    tr = metric_writer.read_jsonl(str(tmp_path / "wd" / "metrics_train.jsonl"))
    assert [r["step"] for r in tr] == [10, 20, 30, 40] and all(np.isfinite(r["loss"]) for r in tr)


def test_windowed_step_donates_the_state_and_takes_device_batches(ds_maddison):
    from kifunet.train import input_pipeline, prefetch, steps

    cfg = tiny(ds_maddison)
    mesh = parallel.make_mesh(1)
    model_def, tx, schedule, state, _ = train.setup(cfg, board_size=9, in_planes=36, mesh=mesh)
    fn = parallel.data_parallel(steps.windowed(steps.train_step(model_def, tx, schedule)), mesh,
                                donate_state=True, carry=True)
    it = input_pipeline.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=0), batch_size=32, seed=0)
    pre = prefetch.Prefetcher(it, fn=lambda b: parallel.shard_batch(b, mesh))
    try:
        batch = next(pre)
        assert all(isinstance(v, jax.Array) for v in batch.values())  # put on the devices by the prefetch thread
        old = jax.tree.leaves(state)
        window = parallel.empty_window(mesh)
        with jax.transfer_guard("disallow"):
            state, window = fn(state, batch, window)
            state, window = fn(state, next(pre), window)
        assert all(x.is_deleted() for x in old)  # donated
        w = jax.device_get(window)
        assert int(w["steps"]) == 2 and float(w["count"]) == 64 and int(w["first_bad"]) == 0
    finally:
        pre.close()
        it.close()


def test_parameters_do_not_depend_on_how_often_metrics_are_fetched(ds_maddison, tmp_path):
    """The window adds to the step's outputs only: logging every step (a fetch per step) and every 12 steps
    give the same parameters and optimizer state to the bit."""
    finals = []
    for every in (1, 12):
        wd = tmp_path / f"log{every}"
        train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 12, log_every_steps=every, eval_split=""),
                                 str(wd))
        finals.append(state_arrays(str(wd)))
    a, b = finals
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
