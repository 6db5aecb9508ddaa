"""Faults of a TFDS ``go_moves`` dataset and of its build (issue 48, item 10): a flipped byte in the metadata
TFDS writes (``features.json``, ``dataset_info.json``) is one line naming the file, exit 2, in ``verify``,
``eval`` and the reader; ``kill -9`` of ``kifunet tfds`` leaves an ``incomplete.*`` folder and a spill directory
that the rerun removes, saying so in one line; a second build of the same config at once is refused.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import require_module

require_module("tensorflow_datasets")
require_module("array_record")

from test_tfds_go_moves import CONFIG, _dataset_dir, make_inputs  # noqa: E402

from kifunet.data_prep.building import tfds_go_moves  # noqa: E402
from kifunet.data_prep.datasets.dataset_base import CorruptDatasetError  # noqa: E402
from kifunet.data_prep.datasets.tfds_reader import TfdsReader  # noqa: E402

METADATA_FILES = ("features.json", "dataset_info.json")


def tfds_argv(manual: Path, data_dir: Path) -> list[str]:
    return [sys.executable, "-m", "kifunet.cli", "tfds", "--config", CONFIG, "--manual-dir", str(manual),
            "--data-dir", str(data_dir)]


def _env(tmp: Path) -> dict:
    """The command's environment: its own temporary directory (where the spill goes)."""
    tmp.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "JAX_PLATFORMS": "cpu", "TMPDIR": str(tmp)}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """(manual dir, the prepared dataset's directory): ``kifunet tfds`` on the small inputs."""
    root = tmp_path_factory.mktemp("tfds_faults")
    manual = make_inputs(root)
    p = subprocess.run(tfds_argv(manual, root / "data"), env=_env(root / "tmp"), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return manual, _dataset_dir(root / "data")


def _one_line(p: subprocess.CompletedProcess, command: str) -> str:
    both = p.stdout + p.stderr
    assert p.returncode == 2 and "Traceback" not in both, both[-3000:]
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kifunet {command}: error: "), both[-3000:]
    return last


@pytest.mark.slow
def test_every_flipped_byte_of_the_tfds_metadata_is_caught_or_harmless(dataset, tmp_path):
    """One byte flipped (xor 1) at every 7th offset of ``features.json`` and ``dataset_info.json``: the reader
    either refuses with a :class:`CorruptDatasetError` naming that file or reads the same rows (a flip in free
    text such as the description); it raised JSON, protobuf or format errors before."""
    _, src = dataset
    d = tmp_path / "ds"
    shutil.copytree(src, d)
    ref = TfdsReader(str(d), "train")
    want = ref.batch([0, len(ref) - 1])
    caught = {}
    for name in METADATA_FILES:
        orig = (src / name).read_bytes()
        caught[name] = 0
        for pos in range(0, len(orig), 7):
            b = bytearray(orig)
            b[pos] ^= 1
            (d / name).write_bytes(bytes(b))
            try:
                r = TfdsReader(str(d), "train")
                got = r.batch([0, len(r) - 1])
            except CorruptDatasetError as e:
                assert str(e).startswith(f"{d / name}: ") and "\n" not in str(e), (pos, str(e))
                caught[name] += 1
                continue
            assert len(r) == len(ref) and all((got[k] == want[k]).all() for k in ("planes", "target")), pos
        (d / name).write_bytes(orig)
    assert all(n > 50 for n in caught.values()), caught


@pytest.mark.slow
@pytest.mark.parametrize("name,pos", [("features.json", 0), ("features.json", 40), ("dataset_info.json", 0)])
def test_verify_and_eval_name_the_damaged_tfds_metadata_file_in_one_line(dataset, tmp_path, name, pos):
    _, src = dataset
    d = tmp_path / "ds"
    shutil.copytree(src, d)
    b = bytearray((d / name).read_bytes())
    b[pos] ^= 1
    (d / name).write_bytes(bytes(b))
    env = _env(tmp_path / "tmp")
    for command, args in (("verify", [f"tfds:{d}"]), ("eval", ["--data", f"tfds:{d}", "--split", "train",
                                                               "--out", str(tmp_path / "e.json")])):
        p = subprocess.run([sys.executable, "-m", "kifunet.cli", command, *args], env=env, capture_output=True,
                           text=True, timeout=300)
        assert f"error: {d / name}: " in _one_line(p, command)


@pytest.mark.slow
def test_kill_9_of_kifunet_tfds_is_cleared_by_the_rerun_in_one_line(dataset, tmp_path):
    """``kill -9`` once TFDS's ``incomplete.*`` folder and the spill directory exist; the rerun removes both (one
    line naming them) and writes the same dataset as an uninterrupted build."""
    manual, ref = dataset
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    env = _env(tmp)
    config_dir = data / "go_moves" / CONFIG
    p = subprocess.Popen(tfds_argv(manual, data), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and p.poll() is None:
            if list(tmp.glob("kifunet-tfds-*")) and list(config_dir.glob("incomplete.*")):
                break
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait()
    assert p.returncode == -signal.SIGKILL
    left = sorted(config_dir.glob("incomplete.*")) + sorted(tmp.glob("kifunet-tfds-*"))
    assert len(left) == 2 or (left and "incomplete." in left[0].name), left  # the spill may be gone already

    rerun = subprocess.run(tfds_argv(manual, data), env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    said = [ln for ln in rerun.stderr.splitlines() if "interrupted build" in ln]
    assert len(said) == 1 and all(str(x) in said[0] for x in left), rerun.stderr[-3000:]
    assert not list(config_dir.glob("incomplete.*")) and not list(tmp.glob("kifunet-tfds-*"))
    got = _dataset_dir(data)
    for f in sorted(ref.iterdir()):
        assert (got / f.name).read_bytes() == f.read_bytes(), f.name


def test_a_second_build_of_the_same_config_is_refused_naming_the_first(dataset, tmp_path):
    manual, _ = dataset
    data = tmp_path / "data"
    folder = data / "go_moves" / CONFIG
    folder.mkdir(parents=True)
    with open(folder / tfds_go_moves.LOCK, "w") as held:  # what a running build holds
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242\n")
        held.flush()
        p = subprocess.run(tfds_argv(manual, data), env=_env(tmp_path / "tmp"), capture_output=True, text=True,
                           timeout=300)
    assert "another kifunet tfds (pid 4242)" in _one_line(p, "tfds")
    assert not list(folder.glob("incomplete.*"))
