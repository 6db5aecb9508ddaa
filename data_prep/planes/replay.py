"""Game records to positions: replay a record under the rules and return each position's feature planes.

:func:`iter_positions` yields one position per move (every plane of the set, constant planes included; the move's
flat index, pass = N*N, and the per-row columns); :func:`encode_game` returns a whole game at once (stored planes
plus the per-row columns constant planes are made from), for the build and the GTP engine. Both rest on
:func:`analyse_game`, which raises :class:`IllegalMoveError` naming the file, move number, move and reason.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np

from ..rules import analysis, ladders
from .. import coords
from . import features
from ..rules.analysis import GameAnalysis
from ..rules.board import ILLEGAL_REASONS, neighbours_cached
from ..errors import IllegalMoveError
from ..game import BLACK, COLOUR_NAMES, MOVE, GameRecord

_NO_SCRATCH = (np.zeros((1, 7, 1), dtype=np.int32), np.zeros((1, 3 + ladders.MAX_OPTIONS), dtype=np.int32))
_SCRATCH: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _scratch(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-process scratch boards for ladder reading (reused across games)."""
    if n not in _SCRATCH:
        _SCRATCH[n] = ladders.scratch(n)
    return _SCRATCH[n]


_ZOBRIST = np.random.default_rng(20260101).integers(1, 2**62, size=(3, 19 * 19), dtype=np.int64)


def analyse_game(record: GameRecord, flags: int = 0, *, libs_cap: int = analysis.LIBS_CAP,
                 allow_suicide: bool = False, superko: bool = False, path: str | None = None) -> GameAnalysis:
    """Replay ``record`` and compute the arrays that ``flags`` asks for (``analysis.F_*``); liberties after a move
    are counted up to ``libs_cap``."""
    n = record.size
    nn = n * n
    is_move = record.kinds == MOVE
    tt = int(np.count_nonzero(is_move))
    arrays = {}
    for name, (dtype, flag) in analysis.ARRAYS.items():
        rows = tt if (flag == 0 or flags & flag) else 0
        arrays[name] = np.zeros((rows, nn), dtype=dtype)
    ko = np.zeros(tt, dtype=np.int16)
    status, t_bad, code = analysis.replay_game(
        n, neighbours_cached(n), record.kinds, record.colours, record.points.astype(np.int32), flags,
        min(libs_cap, analysis.LIBS_CAP), allow_suicide, superko, _ZOBRIST, arrays["stones"], arrays["libs"], arrays["placed"], ko,
        arrays["legal"], arrays["libs_after_pla"], arrays["capture_pla"], arrays["self_atari_pla"],
        arrays["libs_after_opp"], arrays["eye_pla"], arrays["ladder_capture"], arrays["ladder_escape"],
        arrays["ladder_atari_dead"], arrays["ladder_2lib_dead"], arrays["ladder_2lib_move"],
        *(_scratch(n) if flags & (analysis.F_LADDER_PLA | analysis.F_LADDER_CHAINS) else _NO_SCRATCH))
    colours = record.colours[is_move]
    points = record.points[is_move]
    if status != analysis.OK:
        why = "superko" if status == analysis.SUPERKO else ILLEGAL_REASONS[int(code)]
        move = coords.to_gtp(coords.from_flat(int(points[t_bad]), n), n)
        raise IllegalMoveError(why, path=path or record.info.path, move_number=int(t_bad) + 1, move=move,
                               colour=COLOUR_NAMES[int(colours[t_bad])])
    return GameAnalysis(size=n, to_move=colours.astype(np.int8), target=points.astype(np.int16),
                        move_number=np.arange(1, tt + 1, dtype=np.int16), ko=ko, arrays=arrays)


@dataclasses.dataclass
class EncodedGame:
    """A game's positions as stored rows: planes without the constant ones, and per-row columns."""

    planes: np.ndarray  # uint8 [T, N, N, num_stored], 0/1
    target: np.ndarray  # int16 [T]
    to_move: np.ndarray  # int8 [T]
    move_number: np.ndarray  # int16 [T]
    player_rank: np.ndarray  # int8 [T]
    opponent_rank: np.ndarray  # int8 [T]

    def __len__(self) -> int:
        return int(self.target.shape[0])

    def columns(self) -> dict[str, np.ndarray]:
        return {"target": self.target, "to_move": self.to_move, "move_number": self.move_number,
                "player_rank": self.player_rank, "opponent_rank": self.opponent_rank}


def encode_game(record: GameRecord, feature_set: features.FeatureSet, *, path: str | None = None,
                allow_suicide: bool = False, superko: bool = False) -> EncodedGame:
    """Stored planes and per-row columns of every position of ``record`` (one per move, passes included).
    ``feature_set``: a :class:`~kifunet.data_prep.planes.features.FeatureSet` (``features.get(name)``)."""
    if isinstance(feature_set, str):
        raise TypeError(f"encode_game takes a FeatureSet, not its name: features.get({feature_set!r})")
    fs = feature_set
    a = analyse_game(record, fs.flags, libs_cap=fs.libs_cap, allow_suicide=allow_suicide, superko=superko, path=path)
    planes = fs.compute(a)
    info = record.info
    black = a.to_move == BLACK
    pr = np.where(black, info.black_rank, info.white_rank).astype(np.int8)
    orank = np.where(black, info.white_rank, info.black_rank).astype(np.int8)
    return EncodedGame(planes=planes, target=a.target, to_move=a.to_move, move_number=a.move_number,
                       player_rank=pr, opponent_rank=orank)


@dataclasses.dataclass
class Position:
    planes: np.ndarray  # uint8 (N, N, C): every plane of the feature set
    target: int
    to_move: int
    move_number: int
    player_rank: int
    opponent_rank: int
    path: str


def load(source, *, path: str | None = None) -> GameRecord:
    """A GameRecord from a path, SGF bytes, or a GameRecord (returned as is)."""
    if isinstance(source, GameRecord):
        return source
    from ..sgf import sgf_io

    return sgf_io.load_game(source, path=path)


def iter_positions(source, feature_set="maddison", *, path: str | None = None, allow_suicide: bool = False,
                   superko: bool = False) -> Iterator[Position]:
    """Replay a game (SGF path, SGF bytes or GameRecord) and yield every position with all its planes.
    ``feature_set``: a :class:`~kifunet.data_prep.planes.features.FeatureSet` or its name (looked up here)."""
    fs = features.get(feature_set) if isinstance(feature_set, str) else feature_set
    record = load(source, path=path)
    enc = encode_game(record, fs, path=path, allow_suicide=allow_suicide, superko=superko)
    full = fs.assemble(enc.planes, enc.columns())
    for t in range(len(enc)):
        yield Position(planes=full[t], target=int(enc.target[t]), to_move=int(enc.to_move[t]),
                       move_number=int(enc.move_number[t]), player_rank=int(enc.player_rank[t]),
                       opponent_rank=int(enc.opponent_rank[t]), path=path or record.info.path)
