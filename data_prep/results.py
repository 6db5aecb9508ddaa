"""Game results: the SGF ``RE`` text -> (kind, winner, margin), and each position's outcome for the player to move.

:func:`parse_result` reads ``RE`` (stripped) into a :class:`Result`, case-insensitively and forgiving nothing
else. Winners are :mod:`kifunet.data_prep.game` colours (``EMPTY`` = none); ``margin`` is the score for kind
``score`` and NaN otherwise.

=======================================  ========  ======  ==================================================
``RE`` text (any case)                   kind      winner  rule
=======================================  ========  ======  ==================================================
``B+R``, ``B+Resign``                    resign    B       likewise ``W+...`` with winner W
``B+12.5``, ``W+0.5``, ``W+7``,          score     B/W     a real number > 0: digits and one decimal point
``B+.5``                                                   only; margin = that number
``B+T``, ``B+Time``                      time      B/W
``B+F``, ``B+Forfeit``                   forfeit   B/W
``B+``, ``B+0``, ``W+0.0``               win       B/W     a winner is named, so it is no draw
``0``, ``0.0``, ``Draw``, ``Jigo``,      draw      none
``D``
``Void``                                 void      none
``?``, missing or empty ``RE``           unknown   none
anything else (``0.5``, ``B+R.``,        unknown   none    a winner is never guessed; a score float32 cannot
``B+ 3``, ``B+1e3``, ``W+inf``,                            hold is no score
``Black resigns``, ``白胜``)
=======================================  ========  ======  ==================================================

:data:`KINDS` gives each kind its code (``result_kind`` int8 column of the games tables, which also carry the list
as their ``result_kinds`` attribute): 0 ``unknown``, 1 ``resign``, 2 ``score``, 3 ``time``, 4 ``forfeit``,
5 ``win``, 6 ``draw``, 7 ``void``.

:func:`outcome` (the per-row ``outcome`` int8 column) is the result from the side of the player to move: +1 won
(kinds resign, score, time, forfeit, win), -1 lost, 0 drawn, :data:`OUTCOME_UNKNOWN` (-128) unknown or void: no
value target; readers give -128 to every row of a dataset built without the column.
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
    """``RE`` text -> :class:`Result` (the module docstring's table); never raises."""
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
