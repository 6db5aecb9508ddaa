"""The lock of a folder being built, shared by ``kifunet build`` and ``kifunet tfds``.

A build holds an exclusive ``flock`` on a lock file in the folder it writes (holding its pid) from before it looks
at the folder until it is done (:func:`acquire`, :func:`release`). The holder removes the file while still holding
it, and a build that locked a file since removed locks the new one instead, so two builds never both hold a lock.
"""

from __future__ import annotations

import fcntl
import os

from ..errors import UserError


class Busy(UserError):
    """Another process holds the lock: ``FOLDER is being built by another WHO (pid PID); wait for it, or stop it
    first``."""


class NoFlock(OSError):
    """The file system refused ``flock`` (ENOLCK, EOPNOTSUPP: a network file system): the lock cannot be taken."""


def holder(fd: int) -> str:
    """The pid written in a held lock file ('unknown' if its holder has not written it yet)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


def _open(path: str, names: str | None) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        if names is None:
            raise
        raise OSError(e.errno, e.strerror, names) from None


def acquire(folder: str, name: str, who: str, *, names: str | None = None) -> int:
    """Take the lock file ``folder/name`` (created if missing) and write this pid in it; returns its fd.

    :class:`Busy` (naming ``folder`` as given, and ``who``, the program holding it, e.g. ``kifunet build``) while
    another process holds it; :class:`NoFlock` where the file system cannot lock. An ``OSError`` opening the file
    names ``names`` when given (the folder, say), else the lock file."""
    path = os.path.join(folder, name)
    while True:
        fd = _open(path, names)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = holder(fd)
            os.close(fd)
            raise Busy(f"{folder} is being built by another {who} (pid {pid}); wait for it, or stop it "
                       "first") from None
        except OSError as e:
            os.close(fd)
            raise NoFlock(e.errno, e.strerror) from e
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # its holder removed the file as it finished, after we opened it: lock the new one
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def release(folder: str, name: str, fd: int) -> None:
    """Remove the lock file ``folder/name`` while still holding it, then release it: a finished build leaves no
    file."""
    try:
        os.remove(os.path.join(folder, name))
    except FileNotFoundError:
        pass
    os.close(fd)
