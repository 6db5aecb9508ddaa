"""Game results: the SGF ``RE`` text -> (kind, winner, margin), and each position's outcome for the player to move.

:func:`parse_result` reads ``RE`` (stripped, any case) into a :class:`Result`: a kind of :data:`KINDS` (whose index is
the ``result_kind`` code), a :mod:`kifunet.data_prep.game` colour as winner (``EMPTY`` = none), and ``margin``, the
score for kind ``score`` and NaN otherwise; text it does not read is ``unknown``, a winner never guessed.
:func:`outcome` is +1 won, -1 lost, 0 drawn, :data:`OUTCOME_UNKNOWN` (-128) unknown or void. Every spelling:
docs/building.md ("Game results and value targets").
"""

from __future__ import annotations

import math
import re
import typing

import numpy as np

from .game import BLACK, EMPTY, WHITE

KINDS = ("unknown", "resign", "score", "time", "forfeit", "win", "draw", "void")
KIND_CODES = {k: i for i, k in enumerate(KINDS)}
#: kinds with a winner (an outcome of +1 / -1)
WIN_KINDS = ("resign", "score", "time", "forfeit", "win")
#: kinds whose outcome is unknown (no value target; ``--result known`` drops them)
UNKNOWN_KINDS = ("unknown", "void")
#: the ``outcome`` of a row whose game result is unknown or void
OUTCOME_UNKNOWN = -128

_WIN = re.compile(r"([bw])\+(.*)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_HOW = {"r": "resign", "resign": "resign", "t": "time", "time": "time", "f": "forfeit", "forfeit": "forfeit",
        "": "win"}
_DRAW = ("draw", "jigo", "d")
_F32_MAX = float(np.finfo(np.float32).max)


class Result(typing.NamedTuple):
    """A game's result: ``kind`` (a name of :data:`KINDS`), ``winner`` (``BLACK``, ``WHITE`` or ``EMPTY``) and
    ``margin`` (points for kind ``score``, else NaN)."""

    kind: str
    winner: int
    margin: float

    @property
    def code(self) -> int:
        """The kind's code (:data:`KINDS` index), as the games tables store it."""
        return KIND_CODES[self.kind]


UNKNOWN_RESULT = Result("unknown", EMPTY, math.nan)


def parse_result(text: str | None) -> Result:
    """``RE`` text -> :class:`Result` (every spelling: docs/building.md); never raises."""
    t = (text or "").strip().casefold()
    if t in _DRAW or (_NUMBER.fullmatch(t) and float(t) == 0):
        return Result("draw", EMPTY, math.nan)
    if t == "void":
        return Result("void", EMPTY, math.nan)
    m = _WIN.fullmatch(t)
    if m is None:
        return UNKNOWN_RESULT
    winner = BLACK if m.group(1) == "b" else WHITE
    how = m.group(2)
    if how in _HOW:
        return Result(_HOW[how], winner, math.nan)
    if _NUMBER.fullmatch(how):
        v = float(how)
        if v == 0:
            return Result("win", winner, math.nan)
        if v <= _F32_MAX:  # the games table stores the margin as float32
            return Result("score", winner, v)
    return UNKNOWN_RESULT


def kind_names(values) -> tuple[str, ...]:
    """Kind names (``resign,score`` text or a list of names) -> a tuple in :data:`KINDS` order, each once.
    ``ValueError`` for a name that is no kind."""
    names = [v.strip() for v in values.split(",")] if isinstance(values, str) else [str(v).strip() for v in values]
    names = [n for n in names if n]
    bad = [n for n in names if n not in KIND_CODES]
    if bad:
        raise ValueError(f"unknown result kind {bad[0]!r}; kinds: {', '.join(KINDS)}")
    if not names:
        raise ValueError(f"no result kind given; kinds: {', '.join(KINDS)}")
    return tuple(k for k in KINDS if k in names)


def outcome(kind: str, winner: int, to_move) -> np.ndarray:
    """int8 per position: +1 the player to move (``to_move``: colours, one per position) won, -1 lost, 0 draw,
    :data:`OUTCOME_UNKNOWN` for an unknown or void result (see the module docstring)."""
    to_move = np.asarray(to_move)
    if kind in WIN_KINDS:
        return np.where(to_move == winner, 1, -1).astype(np.int8)
    return np.full(to_move.shape, 0 if kind == "draw" else OUTCOME_UNKNOWN, np.int8)
