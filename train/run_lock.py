"""One trainer per run directory: an exclusive ``fcntl.flock`` on ``train.lock`` in the workdir
(:class:`RunInUse` when taken; without flock support the run goes on and says so)."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import tempfile

from kifunet.data_prep.fileio.atomic import is_url

from kifunet.data_prep.errors import UserError


class RunInUse(UserError):
    """Another ``kifunet train`` holds the run directory's lock."""


def lock_path(workdir: str, process_index: int = 0) -> str:
    """``WORKDIR/train.lock`` (``train.lock.<i>`` for process i); for a URL workdir, a file in this machine's
    temporary folder named after the URL (``kifunet-locks/<sha256 of the URL, 16 digits>-train.lock``)."""
    name = "train.lock" if process_index == 0 else f"train.lock.{process_index}"
    if is_url(workdir):
        key = hashlib.sha256(workdir.rstrip("/").encode()).hexdigest()[:16]
        return os.path.join(tempfile.gettempdir(), "kifunet-locks", f"{key}-{name}")
    return os.path.join(workdir, name)


class RunLock:
    """``with RunLock(workdir, process_index):`` holds the lock for the block (raises :class:`RunInUse` if taken)."""

    def __init__(self, workdir: str, process_index: int = 0, *, log=print):
        self.workdir, self.path, self.log = workdir, lock_path(workdir, process_index), log
        self._fd: int | None = None

    def __enter__(self) -> "RunLock":
        os.makedirs(os.path.dirname(self.path) if is_url(self.workdir) else self.workdir, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise RunInUse(f"{self.workdir} is in use by another kifunet train (pid {holder}); wait for it or "
                               f"pick another --workdir") from None
            os.close(fd)  # ENOLCK, EOPNOTSUPP: no flock on this file system
            self.log(f"kifunet train: cannot lock {self.path} ({os.strerror(e.errno)}): make sure no other trainer "
                     f"uses this workdir")
            return self
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor releases the flock
            self._fd = None


__all__ = ["RunInUse", "RunLock", "lock_path"]
