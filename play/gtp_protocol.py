"""What every GTP command handler shares: :class:`GtpError`, colour words, and registration by name
(:func:`command`, :func:`handlers`). A handler takes the arguments (``list[str]``) and returns the response text."""

from __future__ import annotations

from typing import Callable

from kifunet.data_prep.game import BLACK

from . import gtp_analysis

#: the largest number ``boardsize``, ``fixed_handicap`` and ``kifunet-policy`` read (beyond: refused as such)
MAX_COUNT = 10**6


class GtpError(Exception):
    """A command failed: the message is the GTP error text (``? message``)."""


def parse_colour(s: str) -> int:
    """``b``/``black``/``w``/``white`` (any case) -> BLACK / WHITE; else ``GtpError('syntax error')``."""
    c = gtp_analysis.colour_word(s)
    if c is None:
        raise GtpError("syntax error")
    return c


def colour_letter(c: int) -> str:
    return "B" if c == BLACK else "W"


def package_version() -> str:
    """The installed kifunet's version (``dev`` when it is not installed)."""
    from importlib import metadata

    try:
        return metadata.version("kifunet")
    except metadata.PackageNotFoundError:
        return "dev"


def command(*names: str) -> Callable:
    """Mark a method as the handler of the GTP commands ``names``."""

    def mark(method: Callable) -> Callable:
        method.gtp_names = names
        return method

    return mark


def handlers(group: object) -> dict[str, Callable[[list[str]], str]]:
    """``{name: bound method}`` of every :func:`command` method of ``group``."""
    out = {}
    for attr in dir(type(group)):
        for name in getattr(getattr(type(group), attr), "gtp_names", ()):
            out[name] = getattr(group, attr)
    return out
