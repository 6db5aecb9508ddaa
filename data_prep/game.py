"""A game record as the rules engine consumes it: board size, a flat list of events, and metadata.

Colours: ``EMPTY = 0``, ``BLACK = 1``, ``WHITE = 2``; the other colour of ``c`` is ``3 - c``.

Events replay the record's main line in order. An SGF node with setup properties (``AB``/``AW``/``AE``,
in the root or later) becomes one ``SETUP`` event per point (colour ``EMPTY`` for ``AE``), placed before the
node's move if it has one. A ``B``/``W`` property becomes one ``MOVE`` event whose point is a flat index
(see :mod:`kifunet.data_prep.coords`; pass = ``N*N``). Move numbers are 1-based over ``MOVE`` events only.
"""

from __future__ import annotations

import dataclasses
import hashlib

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
    result: str = ""
    date: str = ""
    year: int | None = None
    rules: str = ""
    encoding: str = ""
    content_hash: str = ""  # sha256 of the file's bytes


@dataclasses.dataclass
class GameRecord:
    size: int
    kinds: np.ndarray  # int8 [E]: MOVE or SETUP
    colours: np.ndarray  # int8 [E]: BLACK / WHITE (EMPTY only for SETUP = AE)
    points: np.ndarray  # int16 [E]: flat index, N*N = pass (MOVE only)
    info: GameInfo = dataclasses.field(default_factory=GameInfo)

    @property
    def num_moves(self) -> int:
        return int(np.count_nonzero(self.kinds == MOVE))

    def moves(self) -> list[tuple[int, int]]:
        """(colour, flat point) of every MOVE event, in order."""
        m = self.kinds == MOVE
        return list(zip(self.colours[m].tolist(), self.points[m].tolist()))

    def moves_hash(self) -> str:
        """Hash of the board size, setup and move sequence (not metadata): equal for duplicate games."""
        h = hashlib.sha256()
        h.update(np.int16(self.size).tobytes())
        for a in (self.kinds, self.colours, self.points):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:32]

    @classmethod
    def from_moves(cls, size: int, moves, setup=(), info: GameInfo | None = None) -> "GameRecord":
        """Build a record from ``[(colour, flat), ...]`` moves and optional ``[(colour, flat), ...]`` setup."""
        ev = [(SETUP, c, p) for c, p in setup] + [(MOVE, c, p) for c, p in moves]
        arr = np.array(ev, dtype=np.int64).reshape(-1, 3)
        return cls(size=size, kinds=arr[:, 0].astype(np.int8), colours=arr[:, 1].astype(np.int8),
                   points=arr[:, 2].astype(np.int16), info=info or GameInfo(size=size))
