"""The game a GTP engine plays: position, setup, moves, and an undo log of O(1) memory per move (each move
logs the board cells it changed, so an undo restores the board bit-identically)."""

from __future__ import annotations

import numpy as np

from kifunet.data_prep.game import BLACK, WHITE
from kifunet.data_prep.rules.board import Board

#: the SGF root properties of a loaded game that ``printsgf`` writes back (all other root properties are the
#: engine's own: size, komi, handicap, application, date)
KEPT_PROPERTIES = ("PB", "PW", "BR", "WR", "RU")

_NO_CHANGE = b""  # the undo record of a pass (one shared object)


class GameState:
    """One game on an ``size`` x ``size`` board. ``setup``: ``[(colour, flat)]`` stones set before the first
    move; ``first``: who plays first after them (None: White after setup stones, else Black); ``info``: SGF root
    properties to write back (:data:`KEPT_PROPERTIES`)."""

    def __init__(self, size: int, setup=(), first: int | None = None, info: dict | None = None):
        self.board = Board(size)
        self.setup = [(int(c), int(p)) for c, p in setup]
        for colour in (BLACK, WHITE):
            pts = [p for c, p in self.setup if c == colour]
            if pts:
                self.board.setup(pts, colour)
        self.first = first
        self.info = dict(info or {})
        self.moves: list[tuple[int, int]] = []
        self._undo: list[bytes] = []  # per move: int32 cell indices of the rules engine's array, then old values
        self._passes: dict[int, tuple[int, int]] = {}  # colour -> its pass move (one tuple for all of them)

    @property
    def size(self) -> int:
        return self.board.size

    def is_empty(self) -> bool:
        """No move, no setup stone, no stone on the board."""
        return not self.moves and not self.setup and not self.board.stones.any()

    def place_handicap(self, points) -> None:
        """Set black stones at ``points`` (flat) on an empty board, as the game's setup."""
        self.board.setup(list(points), BLACK)
        self.setup = [(BLACK, int(p)) for p in points]

    def play(self, colour: int, flat: int) -> None:
        """Play ``colour`` at ``flat`` (``N*N``: pass); ``ValueError`` naming the reason for an illegal move
        (nothing changes then)."""
        colour, flat = int(colour), int(flat)
        if flat == self.size * self.size:
            record = _NO_CHANGE
            move = self._passes.get(colour) or self._passes.setdefault(colour, (colour, flat))
        else:
            before = self.board.B.copy()
            self.board.play(flat, colour)
            cells = np.flatnonzero(self.board.B != before).astype(np.int32)
            record = np.concatenate([cells, before.reshape(-1)[cells]]).astype(np.int32).tobytes()
            move = (colour, flat)
        self.moves.append(move)
        self._undo.append(record)

    def undo(self) -> bool:
        """Take back the last move (the board bit-identical to before it); False when no move was played."""
        if not self.moves:
            return False
        record = np.frombuffer(self._undo.pop(), dtype=np.int32)
        if record.size:
            k = record.size // 2
            np.put(self.board.B, record[:k], record[k:])
        self.moves.pop()
        return True

    def first_colour(self) -> int:
        """Who plays first after the setup: the recorded one, else White after setup stones, else Black."""
        if self.first is not None:
            return self.first
        return WHITE if self.setup else BLACK

    def next_colour(self) -> int:
        """The side to move: the other colour after the last move; else :meth:`first_colour`."""
        if self.moves:
            return 3 - self.moves[-1][0]
        return self.first_colour()

    def handicap_stones(self) -> int:
        """The handicap the game shows: the black stones set before the first move when no white one is
        (2..9, more counts as 9), else 0."""
        if len(self.setup) < 2 or any(c != BLACK for c, _ in self.setup):
            return 0
        return min(len(self.setup), 9)


def chains_in(board: Board, mask: np.ndarray) -> list[list[int]]:
    """The stones of ``mask`` (bool [N, N]) grouped by the rules engine's chains, each sorted, ordered by their
    first point; a chain only partly in ``mask`` gives its points in ``mask``."""
    flat = np.asarray(mask, dtype=bool).reshape(-1)
    seen = np.zeros_like(flat)
    out = []
    for start in np.flatnonzero(flat):
        if seen[start]:
            continue
        chain = [p for p in board.chain(int(start)) if flat[p]] or [int(start)]
        seen[chain] = True
        out.append(chain)
    return out
