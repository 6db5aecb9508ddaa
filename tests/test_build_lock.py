"""The one build lock of ``kifunet build`` and ``kifunet tfds`` (:mod:`kifunet.data_prep.building.build_lock`).

The two commands' whole runs are tested in ``tests/test_build_faults.py`` (a second ``kifunet build`` of a folder
being built) and ``tests/test_tfds_faults.py`` (a second ``kifunet tfds`` of a config being built); here the
helper's contract, in one process (``flock`` locks belong to an open file, so a second ``open`` conflicts).
"""

from __future__ import annotations

import errno
import os

import pytest

from kifunet.data_prep.building import build, build_lock
from kifunet.data_prep.errors import UserError


def test_a_second_taker_is_refused_naming_the_holder_and_a_release_frees_it(tmp_path):
    folder = str(tmp_path / "ds")
    os.mkdir(folder)
    fd = build_lock.acquire(folder, ".lock", "kifunet build")
    assert (tmp_path / "ds" / ".lock").read_text() == f"{os.getpid()}\n"
    with pytest.raises(build_lock.Busy) as info:
        build_lock.acquire(folder, ".lock", "kifunet build")
    assert str(info.value) == (f"{folder} is being built by another kifunet build (pid {os.getpid()}); wait for it, "
                               "or stop it first")
    assert isinstance(info.value, UserError)  # the command line prints it in one line, exit 2
    build_lock.release(folder, ".lock", fd)
    assert not (tmp_path / "ds" / ".lock").exists()
    build_lock.release(folder, ".lock", build_lock.acquire(folder, ".lock", "kifunet tfds"))


def test_a_holder_that_has_not_written_its_pid_is_unknown(tmp_path):
    with open(tmp_path / ".lock", "w") as held:
        import fcntl

        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(build_lock.Busy, match=r"another kifunet tfds \(pid unknown\)"):
            build_lock.acquire(str(tmp_path), ".lock", "kifunet tfds")


def test_a_file_removed_by_its_holder_after_it_was_opened_is_locked_anew(tmp_path, monkeypatch):
    """The holder finished (removed the file, released it) between our open and our flock: the lock taken on
    the removed file is no lock; the new file is locked instead."""
    real_open = build_lock._open
    opened = []

    def open_then_holder_finishes(path, names):
        fd = real_open(path, names)
        if not opened:
            os.remove(path)
        opened.append(fd)
        return fd

    monkeypatch.setattr(build_lock, "_open", open_then_holder_finishes)
    fd = build_lock.acquire(str(tmp_path), ".lock", "kifunet build")
    assert len(opened) == 2 and fd == opened[1]
    assert os.fstat(fd).st_ino == os.stat(tmp_path / ".lock").st_ino
    build_lock.release(str(tmp_path), ".lock", fd)


def test_a_file_system_without_flock_is_said_and_the_file_closed(tmp_path, monkeypatch):
    import fcntl

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(fcntl, "flock", no_flock)
    with pytest.raises(build_lock.NoFlock) as info:
        build_lock.acquire(str(tmp_path), ".lock", "kifunet tfds")
    assert info.value.errno == errno.ENOLCK and isinstance(info.value, OSError)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_fault_opening_the_file_names_what_the_caller_says(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(FileNotFoundError) as info:
        build_lock.acquire(missing, ".lock", "kifunet build", names=missing)
    assert info.value.filename == missing
    with pytest.raises(FileNotFoundError) as info:
        build_lock.acquire(missing, ".lock", "kifunet tfds")
    assert info.value.filename == os.path.join(missing, ".lock")


def test_build_and_tfds_take_the_same_lock():
    """No second copy of the locking loop: both builders go through :func:`build_lock.acquire`."""
    from pathlib import Path

    for name in ("build.py", "tfds_go_moves.py"):
        src = (Path(build.__file__).parent / name).read_text(encoding="utf-8")
        assert "build_lock.acquire(" in src and "fcntl" not in src, name
