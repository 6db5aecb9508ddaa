"""A game record as the rules engine consumes it: board size, a flat list of events, and metadata.

Colours: ``EMPTY = 0``, ``BLACK = 1``, ``WHITE = 2``; the other colour of ``c`` is ``3 - c``. Events replay the
record's main line in order: setup properties (``AB``/``AW``/``AE``, any node) become one ``SETUP`` event per point
(colour ``EMPTY`` for ``AE``) before the node's move; ``B``/``W`` become one ``MOVE`` event at a flat index (pass =
``N*N``). Move numbers are 1-based over ``MOVE`` events only. :meth:`GameRecord.game_id` is a game's identity (what
``--dedupe`` compares), :meth:`GameRecord.moves_hash` its moves only; which fields each compares, and how they are
normalised: docs/positions.md ("Identity of a game").
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import unicodedata

import numpy as np

EMPTY, BLACK, WHITE = 0, 1, 2
COLOUR_NAMES = {EMPTY: "empty", BLACK: "B", WHITE: "W"}

MOVE, SETUP = 0, 1


@dataclasses.dataclass
class GameInfo:
    """Metadata of one game. Ranks use the scale of :mod:`kifunet.data_prep.ranks` (UNKNOWN if unknown)."""

    path: str = ""
    size: int = 19
    black: str = ""
    white: str = ""
    black_rank: int = -128
    white_rank: int = -128
    black_rank_text: str = ""
    white_rank_text: str = ""
    komi: float | None = None
    handicap: int = 0
    result: str = ""  # RE as written
    # RE read by kifunet.data_prep.results.parse_result: a kind of results.KINDS, the winner (EMPTY: none) and
    # the margin (points, for kind "score"; else NaN)
    result_kind: str = "unknown"
    winner: int = EMPTY
    margin: float = math.nan
    date: str = ""
    year: int | None = None
    rules: str = ""
    encoding: str = ""
    encoding_replaced: int = 0  # bytes the codec could not decode, shown as U+FFFD
    time_limit: str = ""  # TM
    overtime: str = ""  # OT
    place: str = ""  # PC
    application: str = ""  # AP
    periods: str = ""  # Fox's TC: byo-yomi periods
    period_time: str = ""  # Fox's TT: seconds a period
    content_hash: str = ""  # sha256 of the file's bytes


_SPACE = re.compile(r"\s+")
_RESULT_WORDS = {"resign": "r", "time": "t", "forfeit": "f"}
_RESULT_RE = re.compile(r"^([bw])\+(.*)$")


def _norm(text: str, space: str = "") -> str:
    return _SPACE.sub(space, unicodedata.normalize("NFKC", text or "").casefold()).strip()


def _norm_number(text: str) -> str:
    t = _norm(text)
    try:
        v = float(t)
    except ValueError:
        return t
    return format(v, "g") if math.isfinite(v) else t


def _norm_result(text: str) -> str:
    r = _norm(text)
    m = _RESULT_RE.match(r)
    if m:
        how = _RESULT_WORDS.get(m.group(2), m.group(2))
        try:
            v = float(how)
            how = format(v, "g") if math.isfinite(v) else how
        except ValueError:
            pass
        r = f"{m.group(1)}+{how}"
    return r


@dataclasses.dataclass
class GameRecord:
    size: int
    kinds: np.ndarray  # int8 [E]: MOVE or SETUP
    colours: np.ndarray  # int8 [E]: BLACK / WHITE (EMPTY only for SETUP = AE)
    points: np.ndarray  # int16 [E]: flat index, N*N = pass (MOVE only)
    info: GameInfo = dataclasses.field(default_factory=GameInfo)
    # int8 [N*N]: the last main-line node's territory marks (BLACK on TB points, WHITE on TW, else EMPTY);
    # None when it has none or one is malformed
    territory: np.ndarray | None = None

    @property
    def num_moves(self) -> int:
        return int(np.count_nonzero(self.kinds == MOVE))

    def moves(self) -> list[tuple[int, int]]:
        """(colour, flat point) of every MOVE event, in order."""
        m = self.kinds == MOVE
        return list(zip(self.colours[m].tolist(), self.points[m].tolist()))

    def moves_hash(self) -> str:
        """Hash of the board size, setup and move sequence (not metadata): equal for games with the same moves,
        also different games; what the hash splits use. :meth:`game_id` tells games apart."""
        h = hashlib.sha256()
        h.update(np.int16(self.size).tobytes())
        for a in (self.kinds, self.colours, self.points):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:32]

    def identity(self) -> tuple[str, ...]:
        """What makes this game record one game (see the module docstring): the moves hash, then the players,
        date, result and time settings, normalised."""
        i = self.info
        return (self.moves_hash(), _norm(i.black, " "), _norm(i.white, " "), _norm(i.date), _norm_result(i.result),
                _norm_number(i.time_limit), _norm(i.overtime))

    def game_id(self) -> str:
        """32 hex digits naming the game (:meth:`identity`): equal for copies of one game, different for
        different games even when they share every move. What ``--dedupe`` compares."""
        h = hashlib.sha256(b"kifunet-game-id\0")
        for field in self.identity():
            h.update(field.encode("utf-8", "surrogatepass") + b"\0")
        return h.hexdigest()[:32]

    @classmethod
    def from_moves(cls, size: int, moves, setup=(), info: GameInfo | None = None) -> "GameRecord":
        """Build a record from ``[(colour, flat), ...]`` moves and optional ``[(colour, flat), ...]`` setup."""
        ev = [(SETUP, c, p) for c, p in setup] + [(MOVE, c, p) for c, p in moves]
        arr = np.array(ev, dtype=np.int64).reshape(-1, 3)
        return cls(size=size, kinds=arr[:, 0].astype(np.int8), colours=arr[:, 1].astype(np.int8),
                   points=arr[:, 2].astype(np.int16), info=info or GameInfo(size=size))
