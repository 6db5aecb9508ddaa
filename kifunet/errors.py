"""The command line's one error style: ``kifunet CMD: error: MESSAGE`` on stderr, exit status 2, no traceback.

A command reports bad input by raising; :func:`kifunet.cli.main` catches it and prints it (:func:`report`).
:func:`is_user_error` says what counts as bad input: a :class:`~kifunet.data_prep.errors.UserError` (of which
:class:`CommandError` is what a command itself finds wrong), an ``OSError`` about a path the user named, and a
fault of the place written to or read from (:func:`fault_errno`: the errnos and hints of :data:`FAULT_HINTS`),
printed as ``PATH: REASON; WHAT TO DO``. Anything else is a bug and keeps its traceback (docs/getting_started.md).
This module imports nothing heavy, so ``--help`` and bad options answer without loading NumPy or JAX.
"""

from __future__ import annotations

import errno
import os
import re
import sys

from kifunet.data_prep.errors import UserError

OS_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)

#: errno -> what to do: the faults of a place written to or read from
FAULT_HINTS = {
    errno.ENOSPC: "free space there, or write somewhere else",
    errno.EDQUOT: "free space within your quota, or write somewhere else",
    errno.EROFS: "write somewhere else: that file system is read-only",
    errno.EACCES: "check its permissions, or write somewhere else",
    errno.EPERM: "check its permissions and attributes, or write somewhere else",
    errno.EEXIST: "a file is in the way: remove it, or choose another path",
    errno.ENOTDIR: "a file is in the way of a directory: remove it, or choose another path",
    errno.EISDIR: "name a file, not a directory",
}

_H5_ERRNO = re.compile(r"\berrno = (\d+)")
_H5_FILENAME = re.compile(r"\bfilename = '([^']*)'")


def fault_errno(exc: BaseException) -> int | None:
    """The errno of ``exc`` if it is an ``OSError`` with one of :data:`FAULT_HINTS`' errnos, else None. The errno
    is the exception's own, or (an h5py error that lacks it) the ``errno = N`` of its message."""
    if not isinstance(exc, OSError):
        return None
    code = exc.errno
    if code is None:
        m = _H5_ERRNO.search(str(exc))
        code = int(m.group(1)) if m else None
    return code if code in FAULT_HINTS else None


def _fault_text(exc: OSError, code: int) -> str:
    """``PATH: REASON; WHAT TO DO`` for a fault (:func:`fault_errno`); PATH is the exception's file name, or the
    ``filename = '...'`` of an h5py message; left out when neither is known."""
    path = exc.filename
    if path is None:
        m = _H5_FILENAME.search(str(exc))
        path = m.group(1) if m else None
    text = f"{os.strerror(code)}; {FAULT_HINTS[code]}"
    return text if path is None else f"{os.fsdecode(path)}: {text}"

EXIT_STATUS = 2


def describe(exc: BaseException) -> str:
    """The message of ``exc`` for a user: ``PATH: REASON; WHAT TO DO`` for a fault (:func:`fault_errno`),
    ``PATH: reason`` for another ``OSError`` with a file name, a ``KeyError``'s text without quotes, else
    ``str(exc)`` (the class name when that is empty)."""
    if isinstance(exc, CommandError):
        return str(exc)
    code = fault_errno(exc)
    if code is not None:
        return _fault_text(exc, code)
    if isinstance(exc, OSError) and exc.strerror:
        if exc.filename is not None:
            return f"{exc.filename}: {exc.strerror}"
        return exc.strerror
    if exc.args and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc) or type(exc).__name__


class CommandError(UserError):
    """Bad input a command found: printed as ``kifunet CMD: error: MESSAGE`` on stderr, exit 2.

    ``CommandError("--games must be at least 1")``, or ``CommandError(exc)`` with a caught exception, whose
    message (:func:`describe`) it takes."""

    def __init__(self, what: str | BaseException):
        super().__init__(describe(what) if isinstance(what, BaseException) else str(what))


def user_error_types() -> tuple[type, ...]:
    """The exception classes :func:`kifunet.cli.main` reports as bad input (see the module docstring)."""
    return (UserError, *OS_ERRORS)


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, user_error_types()) or fault_errno(exc) is not None


def report(command: str, what: str | BaseException, file=None) -> int:
    """Print ``kifunet COMMAND: error: MESSAGE`` on stderr; returns the exit status, 2."""
    message = describe(what) if isinstance(what, BaseException) else str(what)
    print(f"kifunet {command}: error: {message}", file=file if file is not None else sys.stderr, flush=True)
    return EXIT_STATUS


__all__ = ["CommandError", "EXIT_STATUS", "FAULT_HINTS", "UserError", "describe", "fault_errno", "is_user_error",
           "report", "user_error_types"]
