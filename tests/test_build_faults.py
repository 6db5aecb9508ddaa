"""Faults of the place a build writes (issue 29, items 4 and 5): the build lock, a full disk, a read-only
``--out``, a file in the way, no permission, and the space estimate. Each is one line on stderr, exit 2, no
traceback; a build a full disk stopped resumes, byte-identical, once there is space.

The faults are real, not simulated: a small ``tmpfs`` mounted for the test fills up (ENOSPC where the build
writes: Python's writes in the encode stage, HDF5's in the write stage) and is remounted read-only (EROFS) or
larger (the rerun); EACCES comes from a directory without write permission, the command run as root without
the capabilities that let root ignore permissions (``setpriv``). Mounting needs root with CAP_SYS_ADMIN, as
here and in CI; elsewhere these tests skip (and fail in CI, :func:`conftest.require`). Injecting errors into
``os.write`` instead would miss the writes HDF5 makes in C, whose failure on a full disk is what crashed
builds (a segmentation fault in h5py 3.16 / HDF5 2.0); ``RLIMIT_FSIZE`` gives EFBIG and a signal, not ENOSPC.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import require

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples" / "gnugo"
MB = 1 << 20
# the options of every build here: two worker processes (faults cross the pool), three shards
OPTIONS = ["--workers", "2", "--no-progress", "--shard-size", "2500"]


def kifunet(*argv, cwd, prefix=(), timeout=180, **kw):
    return subprocess.run([*prefix, sys.executable, "-m", "kifunet.cli", *map(str, argv)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, env={**os.environ, "JAX_PLATFORMS": "cpu"}, **kw)


def one_line_error(proc, command: str = "build") -> str:
    """The error line of a command that failed as bad input (exit 2, no traceback); returns it."""
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both and proc.returncode == 2, both
    last = proc.stderr.splitlines()[-1]
    assert last.startswith(f"kifunet {command}: error: "), both
    return last


def h5_hashes(out: Path) -> dict[str, str]:
    """sha256 of every ``.h5`` file (shards and games tables) under ``out``."""
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*.h5")) if ".work" not in p.parts}


def allocated(path: Path) -> int:
    """Bytes the files under ``path`` take on disk (what a tmpfs counts)."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


class Tmpfs:
    """A tmpfs at ``path``, mounted with :meth:`mount`, remounted with :meth:`remount`, unmounted at the end."""

    def __init__(self, path: Path):
        self.path = path
        self.mounted = False

    def mount(self, size: int) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.path)], check=True,
                       capture_output=True)
        self.mounted = True
        return self.path

    def remount(self, opts: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{opts}", str(self.path)], check=True, capture_output=True)

    def umount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False, capture_output=True)
            self.mounted = False


def _can_mount(where: Path) -> bool:
    fs = Tmpfs(where / "probe")
    try:
        fs.mount(MB)
    except (subprocess.CalledProcessError, OSError):
        return False
    fs.umount()
    return True


@pytest.fixture
def tmpfs(tmp_path):
    require(_can_mount(tmp_path), "mounting a tmpfs", "run as root with CAP_SYS_ADMIN, as CI does")
    fs = Tmpfs(tmp_path / "fs")
    yield fs
    fs.umount()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The sample games twice (70 records, the second copy dropped as duplicates): slow enough to race."""
    d = tmp_path_factory.mktemp("faults") / "in"
    for copy in ("a", "b"):
        shutil.copytree(SAMPLES, d / copy)
    return d


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> dict:
    """A clean build of the corpus: its files' hashes and the bytes its spill takes on disk."""
    out = tmp_path_factory.mktemp("reference") / "ds"
    proc = kifunet("build", corpus, "--out", out, *OPTIONS, "--keep-work", cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    return {"hashes": h5_hashes(out), "spill": allocated(out / ".work"), "shards": allocated(out) -
            allocated(out / ".work")}


# ------------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_overwrite_is_refused_while_another_build_holds_the_lock(corpus, reference, tmp_path):
    """The second build (``--overwrite``) exits 2 at once, touching nothing; the first completes correctly."""
    out = tmp_path / "ds"
    first = subprocess.Popen([sys.executable, "-m", "kifunet.cli", "build", corpus, "--out", out, *OPTIONS[2:],
                              "--workers", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=tmp_path, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    lock = out / ".lock"
    deadline = time.monotonic() + 120
    while not (out / ".work" / "units").is_dir():  # the first build is encoding
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    second = kifunet("build", corpus, "--out", out, *OPTIONS, "--overwrite", cwd=tmp_path)
    assert one_line_error(second) == (f"kifunet build: error: {out} is being built by another kifunet build (pid "
                                      f"{first.pid}); wait for it, or stop it first")
    # refused at once, not after waiting for the first build
    assert first.poll() is None, "the first build ended before the second was refused: the race was not run"
    stdout, stderr = first.communicate(timeout=180)
    assert first.returncode == 0, stderr
    assert (out / "manifest.json").exists() and not (out / ".work").exists() and not lock.exists()
    assert h5_hashes(out) == reference["hashes"]


@pytest.mark.slow
def test_full_disk_is_one_line_and_the_rerun_resumes_byte_identical(corpus, reference, tmpfs):
    """Full during the encode stage (workers' writes), then during the write stage (HDF5's), then room."""
    fs = tmpfs.mount(reference["spill"] // 2)
    out = fs / "ds"
    build = ("build", corpus, "--out", out, *OPTIONS, "--no-space-check")
    line = one_line_error(kifunet(*build, cwd=fs.parent))
    assert "No space left on device; free space there, or write somewhere else; then rerun the same command" in line
    assert f"{out}/.work/units/" in line, line  # names the file it could not write

    tmpfs.remount(f"size={reference['spill'] + 300 * 1024}")  # the spill fits, a shard does not
    line = one_line_error(kifunet(*build, cwd=fs.parent))
    assert f"{out}/train/shard-" in line and "No space left on device" in line, line
    assert not list(out.rglob("*.tmp")), "a partial shard was left behind"

    tmpfs.remount(f"size={reference['spill'] + reference['shards'] + 8 * MB}")
    proc = kifunet(*build, cwd=fs.parent)
    assert proc.returncode == 0, proc.stderr
    assert h5_hashes(out) == reference["hashes"]


@pytest.mark.slow
def test_space_estimate_refuses_a_build_that_cannot_fit(corpus, reference, tmpfs):
    fs = tmpfs.mount(4 * MB)
    out = fs / "ds"
    proc = kifunet("build", corpus, "--out", out, *OPTIONS, cwd=fs.parent)
    line = one_line_error(proc)
    assert f"error: {out}: not enough space for this build: it needs about " in line, line
    assert "--no-space-check" in line
    assert proc.stderr.startswith("spill: about "), proc.stderr  # the estimate, printed before it starts
    assert sorted(os.listdir(out)) == [], "a refused build leaves nothing behind"
    # the estimate is close: 2 x 7,368 positions spilled (the reference's spill, in whole pages on disk)
    est = float(proc.stderr.split("spill: about ")[1].split(" MB")[0].replace(",", ""))
    assert 0.97 <= est * 1e6 / reference["spill"] <= 1.03, (est, reference["spill"])


@pytest.mark.slow
def test_read_only_out(corpus, reference, tmpfs):
    fs = tmpfs.mount(reference["spill"] + reference["shards"] + 8 * MB)
    (fs / "there").mkdir()
    done = kifunet("build", corpus, "--out", fs / "done", *OPTIONS, cwd=fs.parent)
    assert done.returncode == 0, done.stderr
    tmpfs.remount("ro")
    for out in (fs / "new", fs / "there"):  # a directory to create, an existing one
        line = one_line_error(kifunet("build", corpus, "--out", out, *OPTIONS, cwd=fs.parent))
        assert line == f"kifunet build: error: {out}: Read-only file system; write somewhere else: that file " \
                       "system is read-only", line
    again = kifunet("build", corpus, "--out", fs / "done", *OPTIONS, cwd=fs.parent)  # finished: nothing to write
    assert again.returncode == 0 and "already built with these settings" in again.stderr, again.stderr


def test_out_that_is_a_file_or_a_dangling_link(corpus, tmp_path):
    f = tmp_path / "afile"
    f.write_text("not a dataset\n")
    line = one_line_error(kifunet("build", corpus, "--out", f, *OPTIONS, cwd=tmp_path))
    assert line == f"kifunet build: error: {f}: Not a directory; a file is in the way of a directory: remove it, " \
                   "or choose another path", line
    assert f.read_text() == "not a dataset\n"
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")  # exists as a name, not as a directory: EEXIST on creating it
    line = one_line_error(kifunet("build", corpus, "--out", link, *OPTIONS, cwd=tmp_path))
    assert line == f"kifunet build: error: {link}: File exists; a file is in the way: remove it, or choose " \
                   "another path", line


def test_out_without_permission(corpus, tmp_path):
    """Root ignores permissions; run as root without CAP_DAC_OVERRIDE (``setpriv``), as a user would."""
    setpriv = shutil.which("setpriv")
    require(setpriv is not None, "setpriv", "Debian: apt-get install util-linux")
    caps = "-dac_override,-dac_read_search"
    prefix = (setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "ds").mkdir()
    locked.chmod(0o555)
    (locked / "ds").chmod(0o555)
    try:
        for out in (locked / "new", locked / "ds"):
            line = one_line_error(kifunet("build", corpus, "--out", out, *OPTIONS, cwd=tmp_path, prefix=prefix))
            assert line == f"kifunet build: error: {out}: Permission denied; check its permissions, or write " \
                           "somewhere else", line
    finally:
        (locked / "ds").chmod(0o755)
        locked.chmod(0o755)


# ------------------------------------------------------------------------------------------------------------
# the same faults in other commands that write (kifunet.errors reports them for every command)

@pytest.mark.slow
def test_train_workdir_on_a_read_only_file_system(tmpfs):
    fs = tmpfs.mount(MB)
    tmpfs.remount("ro")
    work = fs / "run"
    line = one_line_error(kifunet("train", "--config", ROOT / "train" / "configs" / "tiny.py", "--workdir", work,
                                  "--config.dataset=/no/dataset/needed/first", cwd=fs.parent), "train")
    assert line == f"kifunet train: error: {work}: Read-only file system; write somewhere else: that file system " \
                   "is read-only", line


@pytest.mark.slow
def test_eval_out_on_a_full_file_system(tmpfs):
    """The write fails as the file closes, an error that names no file: the line names the file, gives the reason
    and the fix, and no temporary is left behind."""
    part = ROOT / "pretrained" / "kgs_cpu_small" / "eval" / "fox_pro_test.json"
    fs = tmpfs.mount(MB)
    (fs / "fill").write_bytes(b"\0" * MB)  # the file system is full
    line = one_line_error(kifunet("eval", "--merge", part, "--out", fs / "r.json", cwd=fs.parent), "eval")
    assert f"{fs / 'r.json.tmp'}: No space left on device; free space there, or write somewhere else" in line, line
    assert sorted(p.name for p in fs.iterdir()) == ["fill"]


def test_h5py_errors_name_their_file_and_errno_in_the_message():
    """h5py's ENOSPC: errno set, no file name attribute; an older h5py's may carry the errno in the text only."""
    from kifunet import errors

    text = ("Can't synchronously write data (file write failed: time = Fri Nov 27 06:25:36 2026\n, filename = "
            "'/d/shard-00000.h5.tmp', file descriptor = 3, errno = 28, error message = 'No space left on device')")
    for exc in (OSError(28, text), OSError(text)):
        assert errors.is_user_error(exc)
        assert errors.describe(exc) == ("/d/shard-00000.h5.tmp: No space left on device; free space there, or write "
                                        "somewhere else")


# ------------------------------------------------------------------------------------------------------------
# a damaged spill (issue 48, item 2)

def _spill_build(out: Path, log) -> dict:
    from kifunet.data_prep.building import build

    cfg = build.BuildConfig(inputs=[str(SAMPLES)], out=str(out), unit_games=8, shard_rows=2500, workers=0,
                            progress=False, keep_work=True)
    return build.build(cfg, log=log)


@pytest.fixture(scope="module")
def spilled(tmp_path_factory) -> Path:
    """A finished in-process build of the samples (5 units of 8 records) with its spill kept."""
    out = tmp_path_factory.mktemp("spill") / "ds"
    _spill_build(out, log=lambda msg: None)
    return out


def _flip_byte(path: Path, at: float) -> None:
    b = bytearray(path.read_bytes())
    b[int(len(b) * at)] ^= 0x40
    path.write_bytes(bytes(b))


def _zero_tail(path: Path, n: int) -> None:
    with open(path, "r+b") as f:
        f.seek(max(0, os.path.getsize(path) - n))
        f.write(bytes(min(n, os.path.getsize(path))))


SPILL_FAULTS = {  # what is done to unit 0, the reason the rerun gives
    "planes-one-byte": (lambda d: _flip_byte(d / "planes.bin", 0.5), "planes.bin has sha256"),
    "cols-one-byte": (lambda d: _flip_byte(d / "cols.npy", 0.7), "cols.npy has sha256"),
    "planes-last-64k-zeroed": (lambda d: _zero_tail(d / "planes.bin", 64 << 10), "planes.bin has sha256"),
    "planes-cut-short": (lambda d: os.truncate(d / "planes.bin", os.path.getsize(d / "planes.bin") // 3),
                         "planes.bin has sha256"),
    "games-json-one-byte": (lambda d: _flip_byte(d / "games.json", 0.5), "games.json has sha256"),
    "cols-missing": (lambda d: os.remove(d / "cols.npy"), "cols.npy is missing"),
    "checksums-missing": (lambda d: os.remove(d / "sha256.json"), "no sha256.json"),
    "checksums-cut": (lambda d: os.truncate(d / "sha256.json", 10), "sha256.json cannot be read"),
}


@pytest.mark.parametrize("fault", SPILL_FAULTS)
def test_a_damaged_spill_unit_is_encoded_again_byte_identical(spilled, tmp_path, fault):
    """The spill of a build stopped after its encode stage, one unit damaged, then the same build again: the unit is
    checked before it is reused, found damaged, said so in one line naming it, and encoded again; the dataset is
    byte-identical to the uninterrupted build's. (Before, the damaged unit was trusted: exit 0, other rows; a cut
    ``planes.bin`` was numpy's ``mmap length is greater than file size``, naming no file.)"""
    out = tmp_path / "ds"
    shutil.copytree(spilled, out)
    for name in os.listdir(out):  # as if killed after the encode stage: no shard, no manifest
        if name != ".work":
            shutil.rmtree(out / name) if (out / name).is_dir() else os.remove(out / name)
    unit = out / ".work" / "units" / "unit-00000"
    inject, why = SPILL_FAULTS[fault]
    inject(unit)
    msgs: list[str] = []
    _spill_build(out, log=msgs.append)
    said = [m for m in msgs if "unit-" in m]
    assert len(said) == 1 and said[0].startswith(f"{unit}: {why}") and said[0].endswith("; encoding the unit "
                                                                                         "again"), msgs
    assert h5_hashes(out) == h5_hashes(spilled) and len(h5_hashes(out)) >= 4
    assert json.loads((out / "manifest.json").read_text())["splits"] == json.loads(
        (spilled / "manifest.json").read_text())["splits"]
    # the unit encoded again is sealed: a second rerun finds every unit intact and says nothing of them
    for name in os.listdir(out):
        if name != ".work":
            shutil.rmtree(out / name) if (out / name).is_dir() else os.remove(out / name)
    msgs.clear()
    _spill_build(out, log=msgs.append)
    assert not [m for m in msgs if "unit-" in m] and h5_hashes(out) == h5_hashes(spilled)


@pytest.mark.slow
def test_train_disk_full_while_saving_a_checkpoint_is_one_line_and_resumes(tmpfs, tmp_path):
    """A full disk while `train` saves a checkpoint (issue 48, item 9): orbax's threads used to log 413 lines of
    tracebacks, then `No space left on device` without a path, then tensorboardX's atexit and thread tracebacks.
    Now: one error line naming the step's directory, exit 2, nothing else on stderr; after freeing space the same
    command resumes from the last checkpoint and ends as an uninterrupted run."""
    from test_train import state_arrays
    from test_train_data import build_dataset

    from kifunet.train import checkpointing

    data = build_dataset(tmp_path / "ds", games=60)
    fs = tmpfs.mount(250 * 1024)  # one checkpoint of the tiny net (about 190 KB) fits, the second does not
    work = fs / "run"
    argv = ("train", "--config", ROOT / "train" / "configs" / "tiny.py", "--workdir", work, f"--config.dataset={data}",
            "--config.train_positions=960", "--config.checkpoint_every_positions=320", "--config.keep_checkpoints=5",
            "--config.eval_split=")
    proc = kifunet(*argv, cwd=tmp_path, timeout=300)
    line = one_line_error(proc, "train")
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [line], proc.stderr[-3000:]
    assert line == (f"kifunet train: error: {work}/checkpoints/20: No space left on device; free space there, or "
                    f"write somewhere else"), line
    tmpfs.remount(f"size={16 * MB}")
    proc = kifunet(*argv, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert "kifunet train: resuming from step 10 " in proc.stdout, proc.stdout
    assert [(c.step, c.status) for c in checkpointing.verify_checkpoints(str(work))] == \
        [(10, "intact"), (20, "intact"), (30, "intact")]
    assert sorted(p.name for p in (work / "checkpoints").iterdir()) == ["10", "20", "30"]  # no temporary left
    ref = tmp_path / "ref"
    assert kifunet(*argv[:4], ref, *argv[5:], cwd=tmp_path, timeout=300).returncode == 0
    a, b = state_arrays(str(work), 30), state_arrays(str(ref), 30)
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
