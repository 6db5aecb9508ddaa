"""Test helpers: ASCII boards to positions, and reading games straight out of an archive."""

from __future__ import annotations

import tarfile

import numpy as np

from kifunet.data_prep.planes import replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.rules.analysis import GameAnalysis
from kifunet.data_prep.game import BLACK, EMPTY, WHITE, GameRecord

# End-of-game positions shared by tests/test_life_death.py and tests/test_move_choice.py.

# Bottom left: white A4-C4, C3-C1 and black A2-B1 share their only liberties A3 and B3: seki. The groups
# around them live with several eyes each.
SEKI = """
. X . X O . O . .
X . X X O O . O .
X X X X O . O O O
. X . X O O O . O
X X X X O . O O .
O O O X O O . O O
. . O X O . O . O
X X O X O O O O .
X X O X O . O . O
"""

# The final position of pretrained/qiqiao9x9/match-gnugo10/games/game-0009.sgf (komi 7, black to move),
# scored B+74 by GNU Go: 26 dead white stones, among them a group of 14 on the right.
BIG_DEAD = """
O O O . X . X O O
O X O X X . X O .
X X X X . X X O O
X . . X X O O O O
X . . X . X O O X
. X X X X X O X X
. X . X X X X X X
. X . X O O O X O
X . X O O . O O O
"""

# Black owns columns A-D, white E-I (walls that split each area); a white stone (B8) inside black's area and a
# black one (G3) inside white's.
DEAD_STONES = """
. . . X O . . . .
. O . X O . . . .
. . . X O O O O O
. . . X O . . . .
X X X X O . . . .
. . . X O O O O O
. . . X O . X . .
. . . X O . . . .
. . . X O . . . .
"""

CHARS = {".": EMPTY, "X": BLACK, "O": WHITE}


def parse_ascii(text: str) -> np.ndarray:
    rows = [ln.replace(" ", "") for ln in text.strip().splitlines() if ln.strip()]
    return np.array([[CHARS[ch] for ch in row] for row in rows], dtype=np.int8)


def position(text: str, to_move: int, history=()) -> GameRecord:
    """A record whose first position is the ASCII board with ``to_move`` to play (the move played: a pass).

    ``history``: [(colour, flat)] moves played (and replayed) before that position, after the setup.
    """
    st = parse_ascii(text)
    n = st.shape[0]
    setup = [(int(c), int(p)) for p, c in enumerate(st.reshape(-1)) if c != EMPTY]
    moves = list(history) + [(to_move, n * n)]
    return GameRecord.from_moves(n, moves, setup=setup)


def analyse_last(text: str, to_move: int, flags: int, history=()) -> GameAnalysis:
    """Analysis of the position after the history (the last row), as a GameAnalysis with one row."""
    a = replay.analyse_game(position(text, to_move, history), flags)
    t = len(a) - 1
    arrays = {k: v[t:t + 1] for k, v in a.arrays.items()}
    return GameAnalysis(size=a.size, to_move=a.to_move[t:], target=a.target[t:], move_number=a.move_number[t:],
                        ko=a.ko[t:], arrays=arrays)


def plane(a: GameAnalysis, name: str) -> np.ndarray:
    return a.arrays[name][0].reshape(a.size, a.size)


def archive_records(path, limit=None):
    out = []
    with tarfile.open(path) as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".sgf"):
                out.append(sgf_io.load_game(tf.extractfile(m).read(), path=f"{path.name}:{m.name}"))
                if limit and len(out) >= limit:
                    break
    return out
