"""The game a GTP engine plays as its commands see it: size, komi, the
:class:`~kifunet.play.game_state.GameState`, vertices, SGF in and out, and the dead-stone estimate kept until the
position changes."""

from __future__ import annotations

from kifunet.data_prep import coords
from kifunet.data_prep.game import BLACK, EMPTY, WHITE
from kifunet.data_prep.rules import life_death

from . import gtp_sgf
from .game_state import GameState
from .gtp_protocol import GtpError

# Which of the spec's nine points (see Game.handicap_points) each fixed handicap uses (GTP spec 4.1.1).
_HANDICAP_ORDER = {2: (0, 1), 3: (0, 1, 2), 4: (0, 1, 2, 3), 5: (0, 1, 2, 3, 4), 6: (0, 1, 2, 3, 5, 6),
                   7: (0, 1, 2, 3, 4, 5, 6), 8: (0, 1, 2, 3, 5, 6, 7, 8), 9: tuple(range(9))}


class Game:
    """One game on ``size`` x ``size`` with ``komi``."""

    def __init__(self, size: int, komi: float):
        self.size = size
        self.komi = float(komi)
        self.state = GameState(size)
        self._estimate = None  # (position key, life_death.Estimate)

    def clear(self, size: int | None = None) -> None:
        """An empty board (of ``size`` when given); komi kept."""
        if size is not None:
            self.size = size
        self.state = GameState(self.size)

    def load(self, game: gtp_sgf.LoadedGame, komi: float) -> None:
        """Replace the game by a loaded one (its size, setup, first player, kept properties and moves)."""
        self.size, self.komi = game.size, komi
        self.state = GameState(game.size, game.setup, game.first, game.info)
        for colour, flat in game.moves:
            self.state.play(colour, flat)

    def sgf(self, app: tuple[str, str]) -> str:
        """The game as SGF text (:func:`kifunet.play.gtp_sgf.game_sgf`)."""
        s = self.state
        return gtp_sgf.game_sgf(self.size, self.komi, s.setup, s.moves, s.first_colour(), app=app, info=s.info)

    def vertex(self, s: str) -> int:
        """GTP vertex -> flat index (``pass``: N*N); ``GtpError('syntax error')`` when it is not one."""
        try:
            return coords.to_flat(coords.from_gtp(s, self.size), self.size)
        except ValueError:
            raise GtpError("syntax error") from None

    def gtp(self, flat: int) -> str:
        """Flat index -> GTP vertex."""
        return coords.to_gtp(coords.from_flat(int(flat), self.size), self.size)

    def handicap_points(self, k: int) -> list[int]:
        """The GTP spec's fixed placement (section 4.1.1): 3-3 points below 13x13, 4-4 points from 13x13."""
        n = self.size
        if n < 7 or not 2 <= k <= (9 if n % 2 == 1 and n >= 9 else 4):
            raise GtpError("invalid number of stones")
        edge = 3 if n >= 13 else 2
        lo, mid, hi = edge, n // 2, n - 1 - edge
        # (row from the top, col) of D4 Q16 D16 Q4 K10 D10 Q10 K4 K16 on 19x19, in that order
        spec = [(hi, lo), (lo, hi), (lo, lo), (hi, hi), (mid, mid), (mid, lo), (mid, hi), (hi, mid), (lo, mid)]
        return [r * n + c for r, c in (spec[i] for i in _HANDICAP_ORDER[k])]

    def estimate(self) -> life_death.Estimate:
        """The dead-stone estimate of the current position, kept until the position changes."""
        s = self.state
        key = (self.size, tuple(s.setup), tuple(s.moves))
        if self._estimate is None or self._estimate[0] != key:
            self._estimate = (key, life_death.estimate(s.board.stones, s.next_colour()))
        return self._estimate[1]

    def showboard(self) -> str:
        """``showboard``'s text: the board with coordinates, the last move, captures, moves and komi."""
        n = self.size
        cols = " ".join(coords.GTP_COLUMNS[:n])
        chars = {EMPTY: ".", BLACK: "X", WHITE: "O"}
        st = self.state.board.stones
        last = self.state.moves[-1][1] if self.state.moves else None
        lines = ["   " + cols]
        for r in range(n):
            row = " ".join(chars[int(v)] for v in st[r])
            mark = ""
            if last is not None and last != n * n and last // n == r:
                mark = f"   last move {self.gtp(last)}"
            lines.append(f"{n - r:2d} {row} {n - r:2d}{mark}")
        lines.append("   " + cols)
        b = self.state.board
        lines.append(f"captured: black {b.captures(BLACK)} white {b.captures(WHITE)}; moves {len(self.state.moves)};"
                     f" komi {self.komi:g}")
        return "\n" + "\n".join(lines)
