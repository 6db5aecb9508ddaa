"""Whole-number GTP arguments read without ``int()`` of an unbounded string (a token may be any length)."""

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
