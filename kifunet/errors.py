"""The command line's one error style: ``kifunet CMD: error: MESSAGE`` on stderr, exit status 2, no traceback.

A command reports bad input by raising; :func:`kifunet.cli.main` catches it and prints it (:func:`report`).
What counts as bad input (:func:`is_user_error`):

* :class:`CommandError`: anything a command itself finds wrong (a bad option value, a combination of options, a
  number out of range): ``raise CommandError("--games must be at least 1")``, or ``raise CommandError(e) from e``
  to report a caught ``ValueError`` with its message;
* ``FileNotFoundError``, ``NotADirectoryError``, ``IsADirectoryError``, ``PermissionError``: a path the user
  named (an ``OSError`` that carries a file name is printed as ``PATH: reason``);
* ``KifunetInputError`` (:mod:`kifunet.data_prep.errors`): an SGF that cannot be read or replayed;
* ``DatasetError`` (:mod:`kifunet.data_prep.dataset_base`): no dataset, no such split, an empty split;
* ``BuildError`` (:mod:`kifunet.data_prep.build`): an output directory ``kifunet build`` may not use;
* ``MatchConfigError``, ``EngineError`` (:mod:`kifunet.play.match`, :mod:`kifunet.play.gtp_client`): a match
  directory of another match, a GTP program that cannot be found or does not start.

Anything else is a bug and keeps its traceback. The project's exception classes are looked up only in modules
already imported (an exception of a module that was never imported cannot have been raised), so this module
imports nothing heavy.
"""

from __future__ import annotations

import sys

#: the project's bad-input exceptions: (module, class name)
PROJECT_ERRORS = (
    ("kifunet.data_prep.errors", "KifunetInputError"),
    ("kifunet.data_prep.dataset_base", "DatasetError"),
    ("kifunet.data_prep.build", "BuildError"),
    ("kifunet.play.match", "MatchConfigError"),
    ("kifunet.play.gtp_client", "EngineError"),
)

OS_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)

EXIT_STATUS = 2


def describe(exc: BaseException) -> str:
    """The message of ``exc`` for a user: ``PATH: reason`` for an ``OSError`` with a file name, a ``KeyError``'s
    text without quotes, else ``str(exc)`` (the class name when that is empty)."""
    if isinstance(exc, CommandError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        if exc.filename is not None:
            return f"{exc.filename}: {exc.strerror}"
        return exc.strerror
    if exc.args and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc) or type(exc).__name__


class CommandError(Exception):
    """Bad input a command found: printed as ``kifunet CMD: error: MESSAGE`` on stderr, exit 2.

    ``CommandError("--games must be at least 1")``, or ``CommandError(exc)`` with a caught exception, whose
    message (:func:`describe`) it takes."""

    def __init__(self, what: str | BaseException):
        super().__init__(describe(what) if isinstance(what, BaseException) else str(what))


def user_error_types() -> tuple[type, ...]:
    """The exception classes :func:`kifunet.cli.main` reports as bad input (see the module docstring)."""
    types: list[type] = [CommandError, *OS_ERRORS]
    for module, name in PROJECT_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type):
            types.append(cls)
    return tuple(types)


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, user_error_types())


def report(command: str, what: str | BaseException, file=None) -> int:
    """Print ``kifunet COMMAND: error: MESSAGE`` on stderr; returns the exit status, 2."""
    message = describe(what) if isinstance(what, BaseException) else str(what)
    print(f"kifunet {command}: error: {message}", file=file if file is not None else sys.stderr, flush=True)
    return EXIT_STATUS


__all__ = ["CommandError", "EXIT_STATUS", "describe", "is_user_error", "report", "user_error_types"]
