"""Named exceptions for bad input. Each carries the file (and move, where one applies) it is about.

:class:`UserError` is the base of every bad-input exception of the library (this module is the bottom layer:
every package may import it). The command line (:func:`kifunet.cli.main`) prints one as
``kifunet COMMAND: error: MESSAGE`` on stderr and exits 2, without a traceback; any other exception is a bug
and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import os


class UserError(Exception):
    """Bad input: something the user gave (a file, an option, a directory) cannot be used. Its message is one
    line, naming what is wrong and where; the command line prints it without a traceback (exit status 2)."""


class InvalidValue(UserError, ValueError):
    """A value the user gave -- an option, a config key's value, a text to parse -- that cannot be used; the
    message names it and what would do. Also a ``ValueError``, for the callers that catch one."""


class UnknownName(UserError, KeyError):
    """A name the user gave that names nothing known (a feature set, say); the message lists the known names."""

    def __str__(self) -> str:  # the message, not KeyError's repr of it
        return str(self.args[0]) if self.args else ""


class KifunetInputError(UserError):
    """Base class: a record kifunet cannot use. ``reason`` is a short stable key for reject counts."""

    reason: str = "bad_input"

    def __init__(self, message: str, *, path: str | None = None, reason: str | None = None):
        self.path = path
        if reason is not None:
            self.reason = reason
        super().__init__(f"{path}: {message}" if path else message)


class SgfError(KifunetInputError):
    """The file is not a usable SGF game: parse error, encoding, missing or wrong board size, bad point."""

    reason = "sgf_error"


class IllegalMoveError(KifunetInputError):
    """A move of the record breaks the rules. ``move_number`` is 1-based over the record's moves."""

    reason = "illegal_move"

    def __init__(self, why: str, *, path: str | None, move_number: int, move: str, colour: str):
        self.move_number = move_number
        self.move = move
        self.colour = colour
        self.why = why
        super().__init__(f"move {move_number} ({colour} {move}) is illegal: {why}", path=path,
                         reason=f"illegal_move:{why}")


@contextlib.contextmanager
def naming(path: str):
    """Around writes to ``path``: the system's plain ``OSError`` that names no file (a write to, or the close of,
    an open file: a full disk) is raised again naming ``path``, so that the command line reports it as ``PATH:
    REASON; WHAT TO DO`` (:mod:`kifunet.errors`). Other exceptions pass unchanged (h5py's name the file in their
    message)."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or e.errno is None or e.strerror != os.strerror(e.errno):
            raise
        raise OSError(e.errno, e.strerror, path) from None
