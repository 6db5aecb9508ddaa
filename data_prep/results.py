"""Game results: the SGF ``RE`` text -> (kind, winner, margin), and each position's outcome for the player to move.

:func:`parse_result` reads ``RE`` (as :mod:`kifunet.data_prep.sgf.sgf_io` returns it: stripped) into a
:class:`Result`. Spelling is case-insensitive; nothing else is forgiven (no inner spaces, no trailing text).
Winners are the colours of :mod:`kifunet.data_prep.game` (``BLACK`` 1, ``WHITE`` 2; ``EMPTY`` 0 = none).
``margin`` is the score (``B+12.5`` -> 12.5) for kind ``score`` and NaN for every other kind.

=======================================  ========  ======  ==================================================
``RE`` text (any case)                   kind      winner  why
=======================================  ========  ======  ==================================================
``B+R``, ``B+Resign``                    resign    B       SGF FF[4]; likewise ``W+...`` with winner W
``B+12.5``, ``W+0.5``, ``B+39.50``,      score     B/W     SGF: a real number of points > 0; digits and one
``W+7``, ``B+.5``                                          decimal point only; margin = that number
``B+T``, ``B+Time``                      time      B/W     SGF
``B+F``, ``B+Forfeit``                   forfeit   B/W     SGF
``B+``                                   win       B/W     SGF: "black wins", how not said
``B+0``, ``W+0.0``                       win       B/W     a winner is named, so it is no draw: the Fox
                                                           archive writes ``B+0.0`` / ``W+0.0`` for 368 games
                                                           that end after 13 to 345 moves (not by a count;
                                                           it writes ``draw`` for its 105 draws)
``0``, ``0.0``, ``Draw``, ``Jigo``,      draw      none    SGF ``0`` / ``Draw``; a number that is zero,
``D``                                                      ``Jigo`` (Japanese) and ``D`` name nothing else;
                                                           Fox writes ``draw``
``Void``                                 void      none    SGF: no result or suspended play
``?``                                    unknown   none    SGF: unknown result
missing ``RE``, empty ``RE[]``           unknown   none    the KGS archives: 485 games without ``RE``
anything else: ``0.5``, ``B+R.``,        unknown   none    not SGF: a winner is never guessed. ``0.5`` names
``B+1/2``, ``B+ 3``, ``B+-3``,                             no winner; results in other languages occur in
``B+3.5 points``, ``B+1e3``,                               none of the archives read here; a score float32
``W+inf``, ``Black resigns``,                              cannot hold is no score
``黑中盘胜``, ``白胜``
=======================================  ========  ======  ==================================================

Kinds are stored as small integers (:data:`KINDS`, the ``result_kind`` int8 column of the games tables; the
tables also carry the list as their ``result_kinds`` attribute):

====  ===========  ===================================================================
code  kind         the game ended
====  ===========  ===================================================================
0     ``unknown``  no readable result (also every dataset built before results were read)
1     ``resign``   by resignation
2     ``score``    by counting, ``margin`` points
3     ``time``     on time
4     ``forfeit``  by forfeit
5     ``win``      with a winner, how not said
6     ``draw``     in a draw (jigo)
7     ``void``     without result
====  ===========  ===================================================================

**Outcome of a position** (:func:`outcome`; the per-row ``outcome`` int8 column of every dataset): the game's
result from the side of the player to move, the one whose move is the row's target:

=========================  ===========================================================================
``outcome``                when
=========================  ===========================================================================
+1                         the player to move won the game (kinds resign, score, time, forfeit, win)
-1                         the player to move lost it
0                          the game was drawn
-128                       the result is unknown or void (:data:`OUTCOME_UNKNOWN`): no value target (the
                           sentinel of :data:`kifunet.data_prep.ranks.UNKNOWN`); also every row of a dataset built
                           before this column existed (the readers fill it in)
=========================  ===========================================================================

What the real archives hold (``RE`` of every record that loads, read with :func:`parse_result`; a scan of 2
minutes, and ``tests/test_results.py::test_kgs_2017_01_result_kinds`` checks one archive): the nine KGS archives
of ``../shared/data/kgs`` (34,935 records): resign 19,894 (``B+Resign``/``W+Resign``), score 8,843 (``B+0.50`` to
``W+8194.00``: two games of 2006 claim 8,194 points, more than a board holds; kept as written), time 5,699
(``B+Time``/``W+Time``), forfeit 13 (``W+Forfeit``), void 1 (``Void``), unknown 485 (no ``RE``). The Fox
professional archive (10,357 records, 14 of which do not load): resign 9,076 (``B+R``/``W+R``), score 776
(``B+0.02`` to ``W+146.5``), win 368 (``B+0.0``/``W+0.0``), draw 105 (``draw``), unknown 18 (no ``RE``). No other
spelling occurs.
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
