"""Whole-number arguments of GTP commands, read without ``int()`` of an unbounded string.

A GTP line may hold a token of any length (``boardsize`` followed by 50 MB of digits). Python's ``int()``
refuses strings of more than 4,300 digits with a ``ValueError`` that names an interpreter setting, and
``str.isdigit`` accepts digits that ``int()`` does not read (``'²'``). :func:`is_digits` says whether a token
is ASCII digits (a regular expression: one pass, no copy), and :func:`bounded_int` reads such a token as an
``int`` only when its value is at most a limit, looking at no more than the limit's number of significant
digits; the commands answer a token beyond the limit with their own one-line error, quoting it with
:func:`shown` (shortened).
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"[0-9]+")


def is_digits(token: str) -> bool:
    """Whether ``token`` is one or more ASCII digits (``'007'`` yes; ``'-1'``, ``'1.5'``, ``'²'`` no)."""
    return _DIGITS.fullmatch(token) is not None


def bounded_int(token: str, limit: int) -> int | None:
    """``token`` (ASCII digits, leading zeros allowed) as an ``int`` when it is at most ``limit``; None when
    it is larger or not ASCII digits."""
    if not is_digits(token):
        return None
    significant = token.lstrip("0")
    if len(significant) > len(str(limit)):
        return None
    value = int(significant or "0")
    return value if value <= limit else None


def shown(token: str, limit: int = 40) -> str:
    """``token`` as an error message quotes it: ``repr`` when at most ``limit`` characters, else its start and
    its length."""
    if len(token) <= limit:
        return repr(token)
    return f"{token[:limit // 2]!r}... ({len(token)} characters)"
