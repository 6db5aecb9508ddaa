"""Verified checkpoints (issue 29, item 2): every saved step records the size and sha256 of its files
(``kifunet_checksums.json``), and every path that loads a step checks them before reading a byte.

Faults: byte flips at several offsets of the state's biggest data file (OCDBT ``d/``), a truncated file, a
deleted file, a cut ``meta`` or ``data`` JSON, a cut sidecar. For each: :func:`verify_step` says damaged and
names the file; :func:`load_weights` and :meth:`Checkpointer.restore` refuse it with one line naming the intact
steps. Training resumes from the newest intact step saying so (ending with the uninterrupted run's state), and
``kifunet eval`` / ``gtp`` / ``export`` on a damaged step exit 2 with one line, no traceback (real subprocesses
for train and eval, ``cli.main`` in-process for gtp and export; the fault variants in-process). The shipped
pretrained nets verify and load.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kifunet.cli import main as cli_main
from kifunet.train import checkpointing, metric_writer, train
from test_train import TINY, _env, state_arrays, tiny
from test_train_data import ds_maddison  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
STEPS = (10, 20)  # the fixture run's checkpoints
SIDECAR = "kifunet_checksums.json"  # in each step directory


@pytest.fixture(scope="module")
def run(ds_maddison, tmp_path_factory) -> Path:
    """A finished tiny run with checkpoints at steps 10 and 20 (no evaluation split: quicker)."""
    wd = tmp_path_factory.mktemp("verify") / "run"
    train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 20, checkpoint_every_positions=32 * 10,
                                  keep_checkpoints=3, eval_split=""), str(wd))
    return wd


def _copy(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run, out)
    return out


def _biggest_state_file(step_dir: Path) -> Path:
    return max((p for p in (step_dir / "state").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


def _flip(path: Path, where: float) -> None:
    data = bytearray(path.read_bytes())
    i = min(int(where * len(data)), len(data) - 1)
    data[i] ^= 0x10
    path.write_bytes(bytes(data))


def _cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# fault name -> (damage a step directory, the file the report names; relative to the step, '' for the state's
# biggest file)
FAULTS = {
    "flip-first-byte": (lambda d: _flip(_biggest_state_file(d), 0.0), ""),
    "flip-middle": (lambda d: _flip(_biggest_state_file(d), 0.5), ""),
    "flip-last-byte": (lambda d: _flip(_biggest_state_file(d), 1.0), ""),
    "truncate": (lambda d: _cut(_biggest_state_file(d)), ""),
    "delete": (lambda d: _biggest_state_file(d).unlink(), ""),
    "cut-meta": (lambda d: _cut(d / "meta" / "metadata"), "meta/metadata"),
    "cut-data": (lambda d: _cut(d / "data" / "process_0-of-1.json"), "data/process_0-of-1.json"),
    "cut-sidecar": (lambda d: _cut(d / SIDECAR), SIDECAR),
}


def _damage(step_dir: Path, fault: str) -> str:
    """Apply ``fault`` to ``step_dir``; the file the report must name."""
    fn, named = FAULTS[fault]
    target = named or _biggest_state_file(step_dir).relative_to(step_dir).as_posix()
    fn(step_dir)
    return target


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


# ------------------------------------------------------------------------------------------------------------
# writing


@pytest.mark.slow
def test_every_step_records_the_checksums_of_all_its_files_once_committed(ds_maddison, run, tmp_path,
                                                                            monkeypatch):
    for step in STEPS:
        d = run / "checkpoints" / str(step)
        table = json.loads((d / SIDECAR).read_text())["files"]
        files = {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()} - {SIDECAR}
        assert set(table) == files and any(f.startswith("state/") and "/d/" in f for f in files)
        assert all(table[f]["size"] == (d / f).stat().st_size for f in files)
    checks = checkpointing.verify_checkpoints(str(run))
    assert [(c.step, c.status, c.reason) for c in checks] == [(s, "intact", "") for s in STEPS]

    # asynchronous saves: each sidecar is written once orbax has committed its step (the final name, no temporary
    # left), before max_to_keep deletes it, by a background thread (the save returns at once)
    calls = []

    def recording(step_dir):
        parent, name = os.path.split(step_dir)
        calls.append((name, os.path.isdir(step_dir), [d for d in os.listdir(parent) if d.startswith(f"{name}.")]))
        return write(step_dir)

    write = checkpointing.write_checksums
    monkeypatch.setattr(checkpointing, "write_checksums", recording)
    state = _template(ds_maddison)
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"), keep=1)
    ck.save(1, state, {"windows": {}, "taken": 0}, {"step": 1})
    deadline = time.monotonic() + 60
    while not (tmp_path / "ck" / "1" / SIDECAR).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "ck" / "1" / SIDECAR).exists()  # no later save or wait needed: a kill now leaves it verified
    for step in (2, 3):
        ck.save(step, state, {"windows": {}, "taken": 0}, {"step": step})
    ck.close()
    assert calls == [(str(s), True, []) for s in (1, 2, 3)], calls
    assert [(c.step, c.status) for c in checkpointing.verify_checkpoints(str(tmp_path / "ck"))] == [(3, "intact")]


def _template(dataset):
    """A fresh training state shaped like the fixture run's."""
    from kifunet.data_prep.datasets.dataset import describe
    from kifunet.train import parallel

    info = describe(dataset, "train")
    return train.setup(tiny(dataset), board_size=info["board_size"], in_planes=info["num_planes"],
                       mesh=parallel.make_mesh(1))[3]


# ------------------------------------------------------------------------------------------------------------
# loading a damaged step: in-process, every fault


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_damaged_step_is_refused_before_it_is_read(fault, ds_maddison, run, tmp_path):
    wd = _copy(run, tmp_path)
    step_dir = wd / "checkpoints" / "20"
    named = _damage(step_dir, fault)
    check = checkpointing.verify_step(str(step_dir))
    assert check.status == "damaged" and check.reason.startswith(f"{named}: "), check
    for load in (lambda: checkpointing.load_weights(str(step_dir)),  # eval, gtp, show, export, init_from
                 lambda: checkpointing.load_weights(str(wd)),  # a run directory: its newest step
                 lambda: _restore(wd, 20, ds_maddison)):  # training
        with pytest.raises(checkpointing.CheckpointError) as e:
            load()
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"{step_dir}: {named}: ") and "(damaged)" in msg, msg
        assert "intact steps: 10;" in msg and f"use {wd / 'checkpoints' / '10'} instead" in msg, msg
    w, meta = checkpointing.load_weights(str(wd / "checkpoints" / "10"))  # the intact step loads
    assert meta["step"] == 10 and w


def _restore(wd: Path, step: int, dataset):
    ck = checkpointing.Checkpointer(str(wd / "checkpoints"))
    try:
        return ck.restore(step, _template(dataset))
    finally:
        ck.close()


def test_an_unsealed_step_is_refused_unless_allowed_and_then_loads_with_one_warning(run, tmp_path, capsys,
                                                                                       monkeypatch):
    """A step without its sidecar (a kill between orbax's commit and the sidecar, or saved before checksums) is
    unsealed: nothing could tell a flipped byte in it. Loading it for use is refused in one line naming the intact
    steps, unless asked for (``allow_unsealed``, or the environment variable ``--allow-unsealed`` sets): then one
    warning line; a cut JSON in one is still damage."""
    monkeypatch.setenv(checkpointing.ALLOW_UNSEALED_ENV, "0")
    wd = _copy(run, tmp_path)
    (wd / "checkpoints" / "20" / SIDECAR).unlink()
    for path in (wd, wd / "checkpoints" / "20"):
        with pytest.raises(checkpointing.CheckpointError) as e:
            checkpointing.load_weights(str(path))
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"{wd / 'checkpoints' / '20'}: no {SIDECAR} "), msg
        assert "unsealed" in msg and "intact steps: 10;" in msg and "--allow-unsealed" in msg, msg
    capsys.readouterr()
    for allow in (True, None):
        if allow is None:
            monkeypatch.setenv(checkpointing.ALLOW_UNSEALED_ENV, "1")
        w, meta = checkpointing.load_weights(str(wd), allow_unsealed=allow)
        assert meta["step"] == 20 and w
    err = capsys.readouterr().err
    line = _one_line(err)  # once per step and process
    assert line.startswith(f"kifunet: warning: {wd / 'checkpoints' / '20'}: no {SIDECAR}"), err
    assert "unsealed, unchecked" in line
    (wd / "checkpoints" / "10" / SIDECAR).unlink()
    _cut(wd / "checkpoints" / "20" / "meta" / "metadata")
    check = checkpointing.verify_step(str(wd / "checkpoints" / "20"))
    assert check.status == "damaged" and check.reason.startswith("meta/metadata: not valid JSON"), check
    with pytest.raises(checkpointing.CheckpointError, match=r"intact steps: none \(unsealed: 10\)"):
        checkpointing.load_weights(str(wd))
    from kifunet.commands import unsealed

    assert unsealed.ENV == checkpointing.ALLOW_UNSEALED_ENV


@pytest.mark.slow
@pytest.mark.parametrize("command", ["eval", "gtp", "show", "export"])
def test_commands_refuse_an_unsealed_step_unless_allowed(command, ds_maddison, run, tmp_path, capsys, monkeypatch):
    """eval, gtp, show and export on an unsealed step: exit 2 with one line; with --allow-unsealed they load it
    (one warning line)."""
    monkeypatch.setenv(checkpointing.ALLOW_UNSEALED_ENV, "0")  # restored after the test (the option sets it)
    wd = _copy(run, tmp_path)
    step_dir = wd / "checkpoints" / "20"
    (step_dir / SIDECAR).unlink()
    sgf = next((Path(ds_maddison).parent / "sgf").rglob("*.sgf"))  # a game of the run's board size
    argv = {"eval": ["eval", "--checkpoint", step_dir, "--data", ds_maddison, "--split", "test", "--limit", "16",
                     "--out", "-", "--no-breakdowns", "--cpu-devices", "1"],
            "gtp": ["gtp", "--checkpoint", wd],
            "show": ["show", sgf, "--move", "3", "--checkpoint", wd, "--out", tmp_path / "x.svg"],
            "export": ["export", wd, "--step", "20", "--out", tmp_path / "x.onnx"]}[command]
    capsys.readouterr()
    rc, err = cli_main(list(map(str, argv))), capsys.readouterr().err
    line = _one_line(err)
    assert rc == 2 and line.startswith(f"kifunet {command}: error: {step_dir}: no {SIDECAR} "), err
    assert "unsealed" in line and "intact steps: 10;" in line and "--allow-unsealed" in line, line
    assert not (tmp_path / "x.onnx").exists() and not (tmp_path / "x.svg").exists()
    if command == "gtp":  # a session that answers (a subprocess: the session owns standard input and output)
        proc = subprocess.run([sys.executable, "-m", "kifunet.cli", *map(str, argv), "--allow-unsealed"],
                              input="name\ngenmove b\nquit\n", capture_output=True, text=True, env=_env(),
                              timeout=300)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
        assert out.startswith("= kifunet") and "\n= " in out.split("\n\n", 1)[1], out
    else:
        rc = cli_main(list(map(str, argv)) + ["--allow-unsealed"])
        out, err = capsys.readouterr()
    assert rc == 0, err[-2000:]
    assert f"kifunet: warning: {step_dir}: no {SIDECAR}" in err and "Traceback" not in err, err[-2000:]
    assert command not in ("show", "export") or (tmp_path / ("x.svg" if command == "show" else "x.onnx")).exists()


# ------------------------------------------------------------------------------------------------------------
# training resumes from the newest intact step


@pytest.mark.slow
def test_the_trainer_resumes_from_the_newest_intact_step_as_if_nothing_happened(ds_maddison, run, tmp_path):
    """The real program (a subprocess): a flipped byte in the newest step's state. The resumed run ends with the
    state of the uninterrupted run (the fixture's step 20: a resume is bit-identical, tests/test_train.py)."""
    wd = _copy(run, tmp_path)
    named = _damage(wd / "checkpoints" / "20", "flip-first-byte")
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "train", "--config", TINY, "--workdir", str(wd),
                           f"--config.dataset={ds_maddison}", "--config.train_positions=640",
                           "--config.checkpoint_every_positions=320", "--config.keep_checkpoints=3",
                           "--config.eval_split="], env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    out = proc.stdout.splitlines()
    aside = [d for d in os.listdir(wd / "checkpoints") if d.startswith("20.damaged-")]
    assert len(aside) == 1, os.listdir(wd / "checkpoints")  # kept for inspection, out of orbax's way
    assert out[0] == (f"kifunet train: checkpoint step 20 is damaged ({named}: sha256 mismatch (expected "
                      f"{out[0].split('(expected ')[1].split(')')[0]})); set aside as {aside[0]}; resuming from "
                      f"step 10, the newest intact one"), out[:3]
    assert out[1].startswith("kifunet train: resuming from step 10 "), out[:3]
    assert all(c.status == "intact" for c in checkpointing.verify_checkpoints(str(wd)))  # the new step 20 too
    a, b = state_arrays(str(wd), 20), state_arrays(str(run), 20)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_cut_meta_json_is_damage_not_another_config(ds_maddison, run, tmp_path, capsys):
    """In-process: a cut ``meta`` JSON in the newest step used to read as "does not match this config's model"."""
    wd = _copy(run, tmp_path)
    named = _damage(wd / "checkpoints" / "20", "cut-meta")
    capsys.readouterr()
    res = train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 20, checkpoint_every_positions=32 * 10,
                                        keep_checkpoints=3, eval_split=""), str(wd))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"kifunet train: checkpoint step 20 is damaged ({named}: size "), out[:3]
    assert out[0].endswith("resuming from step 10, the newest intact one"), out[:3]
    assert res["step"] == 20 and sorted(d.split(".")[0] for d in os.listdir(wd / "checkpoints")) == ["10", "20", "20"]


def test_training_with_no_intact_step_stops_with_one_line(ds_maddison, run, tmp_path, capsys):
    wd = _copy(run, tmp_path)
    for step in STEPS:
        _damage(wd / "checkpoints" / str(step), "flip-middle")
    capsys.readouterr()
    rc = cli_main(["train", "--config", TINY, "--workdir", str(wd), f"--config.dataset={ds_maddison}",
                   "--config.eval_split="])
    out, err = capsys.readouterr()
    line = _one_line(err)
    ck = wd / "checkpoints"
    assert rc == 2 and line.startswith(f"kifunet train: error: {ck}: no intact checkpoint (step 20: "), err
    assert "another --workdir" in line and f"delete {wd / 'checkpoints'}" in line, line
    assert sorted(os.listdir(wd / "checkpoints")) == ["10", "20"]  # nothing moved or deleted


def _save_unsealed(wd: Path, step: int, dataset, poison: bool) -> None:
    """Save ``step`` into ``wd``'s checkpoints as a kill after orbax's commit leaves it (no sidecar): the state of
    the run's step 20 (``poison``: with one NaN in a parameter)."""
    import jax

    template = _template(dataset)
    ck = checkpointing.Checkpointer(str(wd / "checkpoints"), keep=5)
    try:
        state, data_state, meta = ck.restore(20, template)
        if poison:
            k = jax.tree_util.tree_leaves(state["params"])[0]
            state["params"] = jax.tree.map(lambda x: x.at[(0,) * x.ndim].set(np.nan) if x is k else x,
                                           state["params"])
        state["step"] = state["step"] * 0 + step
        ck.save(step, state, data_state, {**meta, "step": step, "positions": step * 32})
        ck.wait()
    finally:
        ck.close()
    (wd / "checkpoints" / str(step) / SIDECAR).unlink()


def test_resume_checks_and_seals_an_unsealed_step(ds_maddison, run, tmp_path, capsys):
    """A kill between orbax's commit and the sidecar leaves the newest step unsealed: the resumed run restores it,
    checks it (shapes, every array finite, its step) and seals it, in one line; `verify` then says intact."""
    wd = _copy(run, tmp_path)
    (wd / "checkpoints" / "20" / SIDECAR).unlink()
    assert cli_main(["verify", str(wd)]) == 2
    capsys.readouterr()
    res = train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 30, checkpoint_every_positions=32 * 10,
                                        keep_checkpoints=5, eval_split=""), str(wd))
    out = capsys.readouterr().out.splitlines()
    assert res["step"] == 30, out
    assert out[0].startswith("kifunet train: checkpoint step 20 is unsealed (no kifunet_checksums.json"), out[:4]
    assert out[1].startswith("kifunet train: resuming from step 20 "), out[:4]
    assert out[2] == (f"kifunet train: checkpoint step 20 had no {SIDECAR}: restored and checked (this model's "
                      f"shapes, every array finite, step 20 in its state and metadata); sealed now"), out[:4]
    assert [(c.step, c.status) for c in checkpointing.verify_checkpoints(str(wd))] == \
        [(10, "intact"), (20, "intact"), (30, "intact")]


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["nan", "truncate"])
def test_resume_sets_aside_an_unsealed_step_that_fails_its_check(fault, ds_maddison, run, tmp_path, capsys):
    """An unsealed newest step with a NaN in its parameters, or one that does not read back (its biggest state file
    cut in half): set aside as damaged (never sealed), one line, and the run resumes from the step before it -- its
    metrics too: the lines the run that wrote step 30 logged after step 20 are dropped, not kept beside the new
    ones. Not a flipped byte: an unsealed step has no checksums yet, and a flip inside a raw float chunk of orbax's
    data file (which chunk the file starts with depends on the order of the asynchronous writes) reads back as
    another finite number; the test failed so once under load."""
    wd = _copy(run, tmp_path)
    _save_unsealed(wd, 30, ds_maddison, poison=fault == "nan")
    if fault != "nan":
        _damage(wd / "checkpoints" / "30", fault)
    with open(wd / "metrics_train.jsonl", "a", encoding="utf-8") as f:  # what that run logged up to its step 30
        f.writelines(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in (25, 30))
    capsys.readouterr()
    res = train.train_and_evaluate(tiny(ds_maddison, train_positions=32 * 30, checkpoint_every_positions=32 * 10,
                                        keep_checkpoints=5, eval_split=""), str(wd))
    out = capsys.readouterr().out.splitlines()
    aside = [d for d in os.listdir(wd / "checkpoints") if d.startswith("30.damaged-")]
    assert len(aside) == 1, os.listdir(wd / "checkpoints")
    line = next(ln for ln in out if "fails its check" in ln)
    why = "state/params/" if fault == "nan" else "does not read back"
    assert line.startswith("kifunet train: checkpoint step 30 is unsealed and fails its check (") and why in line
    assert line.endswith(f"set aside as {aside[0]}; resuming from step 20"), line
    assert res["step"] == 30 and not any("sealed now" in ln for ln in out), out
    steps = [r["step"] for r in metric_writer.read_jsonl(str(wd / "metrics_train.jsonl"))]
    assert steps == [5, 10, 15, 20, 25, 30], steps
    assert [(c.step, c.status) for c in checkpointing.verify_checkpoints(str(wd))] == \
        [(10, "intact"), (20, "intact"), (30, "intact")]


def test_an_unsealed_step_of_another_model_is_a_config_error_and_stays(ds_maddison, run, tmp_path, capsys):
    """Restoring an unsealed step into another model's state: the usual one line ("does not match this config"),
    and the step is neither set aside nor sealed."""
    wd = _copy(run, tmp_path)
    (wd / "checkpoints" / "20" / SIDECAR).unlink()
    capsys.readouterr()
    rc = cli_main(["train", "--config", TINY, "--workdir", str(wd), f"--config.dataset={ds_maddison}",
                   "--config.eval_split=", "--config.optimizer.name=sgd"])
    err = capsys.readouterr().err
    assert rc == 2 and "does not match this config's model" in _one_line(err), err
    assert sorted(os.listdir(wd / "checkpoints")) == ["10", "20"] and not (wd / "checkpoints" / "20" / SIDECAR).exists()


# ------------------------------------------------------------------------------------------------------------
# eval, gtp, export on a damaged step: exit 2, one line naming the intact steps


def _kifunet(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "kifunet.cli", *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, env=_env(), timeout=300, stdin=subprocess.DEVNULL)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["eval", "gtp", "export"])
def test_commands_refuse_a_damaged_step_in_one_line(command, ds_maddison, run, tmp_path, capsys):
    wd = _copy(run, tmp_path)
    step_dir = wd / "checkpoints" / "20"
    named = _damage(step_dir, "truncate")
    argv = {"eval": ["eval", "--checkpoint", step_dir, "--data", ds_maddison, "--split", "test"],
            "gtp": ["gtp", "--checkpoint", wd],
            "export": ["export", wd, "--step", "20", "--out", tmp_path / "x.onnx"]}[command]
    if command != "eval":  # in-process (what the program runs; a subprocess costs seconds of JAX import)
        capsys.readouterr()
        rc, err = cli_main(list(map(str, argv))), capsys.readouterr().err
    else:
        proc = _kifunet(*argv, cwd=tmp_path)
        rc, err = proc.returncode, proc.stderr
        assert "Traceback" not in proc.stdout + err, err
    line = _one_line(err)
    assert rc == 2 and line.startswith(f"kifunet {command}: error: {step_dir}: {named}: size "), err
    assert "(truncated) (damaged); intact steps: 10;" in line, line
    assert not (tmp_path / "x.onnx").exists()


# ------------------------------------------------------------------------------------------------------------
# the shipped nets


def test_the_pretrained_nets_ship_their_checksums_and_load(capsys):
    runs = sorted({p.parents[1] for p in (ROOT / "pretrained").rglob("checkpoints/*/state")})
    assert len(runs) >= 5, runs
    for wd in runs:
        checks = checkpointing.verify_checkpoints(str(wd))
        assert checks and all(c.status == "intact" for c in checks), checks
    w, meta = checkpointing.load_weights(str(ROOT / "pretrained" / "kgs_cpu_default"))
    assert w and meta["step"] == 11719
    assert capsys.readouterr().err == ""  # verified: no warning


def test_verify_command_reports_each_step_of_a_run(run, tmp_path, capsys):
    """``kifunet verify RUN``: one line per step; exit 0 while every step is loadable, 2 with one error line naming
    the damaged count and the loadable steps once one is damaged (a run, its checkpoints directory, one step)."""
    wd = _copy(run, tmp_path)
    capsys.readouterr()
    assert cli_main(["verify", str(wd)]) == 0
    out = capsys.readouterr().out
    assert "step 10: intact" in out and "step 20: intact" in out and "no damaged step (2 steps)" in out
    named = _damage(wd / "checkpoints" / "20", "flip-middle")
    for target in (wd, wd / "checkpoints"):
        assert cli_main(["verify", str(target)]) == 2
        cap = capsys.readouterr()
        line20 = next(ln for ln in cap.out.splitlines() if "step 20:" in ln)
        assert "step 20: damaged" in line20 and f"{named}: sha256 mismatch" in line20 and "step 10: intact" in cap.out
        assert _one_line(cap.err) == (f"kifunet verify: error: 1 of 2 checkpoint steps damaged in {target}; "
                                      f"loadable: 10")
    assert cli_main(["verify", str(wd / "checkpoints" / "10")]) == 0
    (wd / "checkpoints" / "10" / SIDECAR).unlink()  # unsealed: exit 2 too, said in the error line
    capsys.readouterr()
    assert cli_main(["verify", str(wd / "checkpoints" / "10")]) == 2
    cap = capsys.readouterr()
    assert "step 10: unsealed: no kifunet_checksums.json" in cap.out
    assert _one_line(cap.err).startswith(f"kifunet verify: error: 1 of 1 checkpoint steps unsealed (no {SIDECAR}: ")
    assert cli_main(["verify", str(wd)]) == 2
    assert _one_line(capsys.readouterr().err).startswith("kifunet verify: error: 1 of 2 checkpoint steps damaged, "
                                                          "1 unsealed (")
