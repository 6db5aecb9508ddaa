"""A training run in a Cloud Storage bucket (``--workdir gs://BUCKET/run``), end to end against a local emulator.

The emulator is ``gcp-storage-emulator`` (PyPI, the ``test`` extra), started as a process on a free port, with the
generation headers of downloads added (``tests/gcs_emulator.py`` says why). Each
layer is pointed at it by the environment (:func:`bucket_env`): ``gcsfs`` (``etils.epath``, orbax's metadata, the
checksum sidecars, config and metrics files) by ``STORAGE_EMULATOR_HOST``; tensorstore (orbax's arrays) by
``TENSORSTORE_GCS_HTTP_URL`` with ``GOOGLE_AUTH_TOKEN_FOR_TESTING``; tensorboardX (``google-cloud-storage``) by
``STORAGE_EMULATOR_HOST`` and ``GOOGLE_CLOUD_PROJECT``.

A tiny run trains into the bucket, is stopped by SIGTERM (143, a checkpoint), resumes to the end and ends with the
arrays of the same run trained uninterrupted into a local folder; ``verify``, ``eval``, ``gtp genmove``, ``show``
and ``export`` read it from the bucket and answer as they do for the local run; a byte flipped in the bucket is
found by the checksum sidecar and set aside by a resume. Without the emulator or ``gcsfs`` the test skips saying
so (fails in CI).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import require
from kifunet.cli import main as cli_main
from kifunet.train import checkpointing, run_lock
from test_preemption import LINE, _segment
from test_train import TINY, _env
from test_train_data import ds_maddison  # noqa: F401 (fixture)

HERE = Path(__file__).resolve().parent
BUCKET = "kifunet-test"
ARGS = ["--config", TINY, "--config.eval_split=", "--config.log_every_steps=1", "--config.train_positions=960",
        "--config.checkpoint_every_positions=320", "--config.keep_checkpoints=5"]


def _require_emulator() -> None:
    """Skip (locally) or fail (in CI, which installs the test extra) when the emulator or gcsfs is missing."""
    for module, package in (("gcp_storage_emulator", "gcp-storage-emulator"), ("gcsfs", "gcsfs")):
        require(importlib.util.find_spec(module) is not None, f"{package} (the Cloud Storage emulator's test needs it)",
                "pip install -e '.[test]'")


def bucket_env(url: str) -> dict[str, str]:
    """The variables that point every layer at the emulator at ``url`` (module docstring)."""
    return {"STORAGE_EMULATOR_HOST": url, "TENSORSTORE_GCS_HTTP_URL": url, "GOOGLE_AUTH_TOKEN_FOR_TESTING": "emulator",
            "GOOGLE_CLOUD_PROJECT": "kifunet-test", "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}


@pytest.fixture(scope="module")
def emulator():
    """The emulator's URL, with a bucket :data:`BUCKET`; stopped after the module."""
    _require_emulator()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(HERE / "gcs_emulator.py"), "start", "--host", "127.0.0.1", "--port",
                             str(port), "--in-memory", "--default-bucket", BUCKET, "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the storage emulator did not start (exit {proc.poll()})")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _objects(prefix: str) -> dict[str, int]:
    import fsspec

    fs = fsspec.filesystem("gs", skip_instance_cache=True)
    return {p[len(prefix.removeprefix("gs://")) + 1:]: fs.size(p) for p in fs.find(prefix.removeprefix("gs://"))}


def _weights(workdir: str) -> dict[str, np.ndarray]:
    return checkpointing.load_weights(workdir)[0]


def _gtp(run: str, env: dict) -> str:
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "gtp", "--checkpoint", run],
                          input="clear_board\nplay b E5\ngenmove w\nquit\n", capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers = [ln for ln in proc.stdout.splitlines() if ln.startswith(("=", "?"))]
    assert len(answers) == 4 and all(a.startswith("=") for a in answers), proc.stdout
    return answers[2]


@pytest.mark.slow
def test_a_run_in_a_bucket_trains_stops_resumes_and_serves_every_command(emulator, ds_maddison, tmp_path,
                                                                         monkeypatch, capsys):
    for k, v in bucket_env(emulator).items():
        monkeypatch.setenv(k, v)  # for this process (load_weights, cli_main) and, through _env(), its children
    run = f"gs://{BUCKET}/runs/tiny"
    args = [*ARGS, f"--config.dataset={ds_maddison}"]
    base = [sys.executable, "-m", "kifunet.cli", "train"]
    local = tmp_path / "local"
    ref = subprocess.Popen([*base, "--workdir", str(local), *args], env=_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)  # the uninterrupted reference, alongside

    rc, lines, _, _ = _segment([*base, "--workdir", run, *args], 5)
    said = [ln for ln in lines if "SIGTERM" in ln]
    assert rc == 143 and len(said) == 1 and LINE.match(said[0]), "\n".join(lines[-80:])
    saved = int(LINE.match(said[0]).group(2))
    objects = _objects(run)
    assert {"config.json", f"checkpoints/{saved}/kifunet_checksums.json", "metrics_train.jsonl"} <= set(objects)
    assert any(o.startswith("tensorboard/events.out.tfevents.") for o in objects), sorted(objects)
    assert not any(o.startswith(("gs:", "/")) for o in objects) and not os.path.exists("gs:")

    done = subprocess.run([*base, "--workdir", run, *args], env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"kifunet train: resuming from step {saved} " in done.stdout, done.stdout[:2000]
    out, _ = ref.communicate(timeout=600)
    assert ref.returncode == 0, out[-3000:]
    got, want = _weights(run), _weights(str(local))
    assert sorted(got) == sorted(want) and all(np.array_equal(got[k], want[k]) for k in want)
    from kifunet.train.metric_writer import read_jsonl

    assert [r["step"] for r in read_jsonl(f"{run}/metrics_train.jsonl")] == list(range(1, 31))

    capsys.readouterr()
    assert cli_main(["verify", run]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{run}: no damaged step ({len({saved, 10, 20, 30})} steps)"
    evals = {}
    for name, where in (("bucket", run), ("local", str(local))):
        assert cli_main(["eval", "--checkpoint", where, "--data", ds_maddison, "--limit", "128", "--no-breakdowns",
                         "--cpu-devices", "1"]) == 0, capsys.readouterr().err[-2000:]
        evals[name] = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("single pass")]
    assert len(evals["bucket"]) == 1 and evals["bucket"] == evals["local"], evals
    name = f"eval/{os.path.basename(ds_maddison)}_test_first128.json"  # the default --out: in the run
    written, local_json = json.loads(_read(f"{run}/{name}")), json.loads((local / name).read_text())
    assert written["results"] == local_json["results"]
    assert _gtp(run, _env()) == _gtp(str(local), _env())

    sgf = next((Path(ds_maddison).parent / "sgf").rglob("*.sgf"))
    assert cli_main(["show", str(sgf), "--move", "3", "--checkpoint", run, "--out", str(tmp_path / "b.svg")]) == 0
    assert (tmp_path / "b.svg").read_text().startswith("<?xml")
    if importlib.util.find_spec("onnx") is not None:
        assert cli_main(["export", run, "--out", str(tmp_path / "b.onnx")]) == 0, capsys.readouterr().err[-2000:]
        assert (tmp_path / "b.onnx").stat().st_size > 10_000

    # a byte flipped in the bucket: the sidecar finds it, every reader refuses it in one line
    step_dir = f"{run}/checkpoints/30"
    big = max((k for k in _objects(step_dir) if k.startswith("state/")), key=_objects(step_dir).get)
    data = bytearray(_read(f"{step_dir}/{big}", "rb"))
    data[len(data) // 2] ^= 0x10
    _write(f"{step_dir}/{big}", bytes(data))
    check = checkpointing.verify_step(step_dir)
    assert check.status == "damaged" and check.reason.startswith(f"{big}: sha256 mismatch"), check
    capsys.readouterr()
    assert cli_main(["verify", run]) == 2
    out, err = capsys.readouterr()
    assert "  step 30: damaged (" in out and f": {big}: sha256 mismatch" in out, out
    assert err.startswith(f"kifunet verify: error: 1 of ") and err.count("\n") == 1, err
    ck, said = checkpointing.Checkpointer(f"{run}/checkpoints"), []  # a resume sets the damaged step aside
    try:
        assert ck.newest_intact_step(log=said.append) == 20
    finally:
        ck.close()
    assert len(said) == 1 and said[0].startswith(f"checkpoint step 30 is damaged ({big}: sha256 mismatch"), said
    steps = {o.split("/")[0] for o in _objects(f"{run}/checkpoints")}
    assert "30" not in steps and any(s.startswith("30.damaged-") for s in steps), steps


def _read(url: str, mode: str = "r"):
    from etils import epath

    with epath.Path(url).open(mode) as f:
        return f.read()


def _write(url: str, data: bytes) -> None:
    from etils import epath

    epath.Path(url).write_bytes(data)


# ------------------------------------------------------------------------------------------------------------
# without the emulator


def test_other_url_schemes_and_a_missing_gcsfs_are_one_line_refusals(monkeypatch, capsys):
    assert cli_main(["train", "--config", "tiny", "--workdir", "s3://b/run"]) == 2
    assert capsys.readouterr().err.strip() == ("kifunet train: error: s3://b/run: a s3:// workdir is not supported "
                                               "(gs:// is); train into a local directory, or mount the store and "
                                               "name the mount point")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gcsfs" else real(name, *a))
    assert cli_main(["train", "--config", "tiny", "--workdir", "gs://b/run"]) == 2
    assert capsys.readouterr().err.strip() == ("kifunet train: error: gs://b/run: a gs:// workdir needs gcsfs: pip "
                                               "install gcsfs (or kifunet[gcs])")


def test_a_bucket_workdir_is_locked_on_this_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(run_lock.tempfile, "gettempdir", lambda: str(tmp_path))
    path = run_lock.lock_path("gs://b/run/")
    assert path == run_lock.lock_path("gs://b/run") and path.startswith(str(tmp_path / "kifunet-locks"))
    assert run_lock.lock_path("gs://b/run", 1) != path
    with run_lock.RunLock("gs://b/run"):
        with pytest.raises(run_lock.RunInUse, match=r"^gs://b/run is in use by another kifunet train \(pid \d+\)"):
            with run_lock.RunLock("gs://b/run"):
                pass
    assert not os.path.exists("gs:") and sorted(os.listdir(tmp_path)) == ["kifunet-locks"]
