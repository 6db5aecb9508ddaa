"""Openings for a match (``kifunet match --openings SOURCE --opening-moves K``): the first K moves of held-out games,
so that two deterministic nets play a different game in every pair.

:func:`choose` reads SOURCE as a build reads its inputs (SGF files, directories, archives:
:func:`kifunet.data_prep.sgf.inputs.iter_sources`) and orders the games by their split hash
(:func:`kifunet.data_prep.building.splits.hash_fraction` of the moves hash), smallest first: the order does not
depend on how SOURCE is arranged, and the first games are the ones a ``--hash-split test:F`` build puts in its test
split (every game whose fraction is below F; :attr:`Opening.fraction` says where each lies). A game is skipped, with
its reason, when it cannot be read, is on another board, has setup stones, ends before move K, its first K moves do
not alternate from black, hold a pass or break the rules, or they are the first K moves of a game before it in that order. Game pair
``i`` (games ``2i`` and ``2i + 1``, colours swapped) starts from opening ``i``.
"""

from __future__ import annotations

import dataclasses
import os

from kifunet.data_prep.building.splits import hash_fraction
from kifunet.data_prep.errors import KifunetInputError, UserError
from kifunet.data_prep.game import BLACK, MOVE, WHITE
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.sgf import inputs, sgf_io


class OpeningsError(UserError, ValueError):
    """The openings cannot be had: SOURCE is missing, or it holds too few usable games (the message names SOURCE
    and counts the reasons)."""


@dataclasses.dataclass(frozen=True)
class Opening:
    """The first moves of one game: ``moves`` [(colour, flat)], the record it came from and its split hash."""

    path: str
    moves: tuple[tuple[int, int], ...]
    fraction: float  # hash_fraction of the game's moves hash, in [0, 1)

    def to_json(self) -> dict:
        return {"path": self.path, "moves": [list(m) for m in self.moves], "fraction": self.fraction}


def opening_of(rec, k: int, board_size: int) -> tuple[tuple[tuple[int, int], ...] | None, str]:
    """(the first ``k`` moves of game record ``rec``, "") or (None, why it cannot open a game)."""
    if rec.size != board_size:
        return None, f"a {rec.size}x{rec.size} game"
    if (rec.kinds != MOVE).any():
        return None, "setup stones"
    moves = rec.moves()
    if len(moves) < k:
        return None, f"ends before move {k}"
    board = Board(board_size)
    nn = board_size * board_size
    for i, (colour, flat) in enumerate(moves[:k]):
        if colour != (BLACK if i % 2 == 0 else WHITE):
            return None, "moves do not alternate from black"
        if flat == nn:
            return None, f"a pass at move {i + 1}"
        if not board.is_legal(flat, colour):
            return None, f"illegal move {i + 1}"
        board.play(flat, colour)
    return tuple(moves[:k]), ""


def choose(sources, k: int, count: int, board_size: int) -> tuple[list[Opening], dict[str, int]]:
    """The ``count`` openings of ``k`` moves from ``sources`` (module docstring) and the skipped games counted by
    reason. :class:`OpeningsError` when a source does not exist or fewer than ``count`` games are usable."""
    for s in sources:
        if not os.path.exists(s):
            raise OpeningsError(f"--openings: {s}: no such file or directory")
    skipped: dict[str, int] = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    found = []
    for src in inputs.iter_sources(list(sources)):
        if src.data is None:
            skip(f"unreadable ({src.error})")
            continue
        try:
            rec = sgf_io.load_game(src.data, path=src.path)
        except KifunetInputError:
            skip("unreadable")
            continue
        moves, why = opening_of(rec, k, board_size)
        if moves is None:
            skip(why)
            continue
        found.append(Opening(src.path, moves, hash_fraction(rec.moves_hash())))
    found.sort(key=lambda o: (o.fraction, o.path))
    chosen, seen = [], set()
    for o in found:
        if o.moves in seen:
            skip(f"the same first {k} moves as an earlier game")
            continue
        seen.add(o.moves)
        if len(chosen) < count:
            chosen.append(o)
    if len(chosen) < count:
        why = ", ".join(f"{n} {r}" for r, n in sorted(skipped.items())) or "none skipped"
        raise OpeningsError(f"--openings: {len(chosen)} usable games of at least {k} moves in "
                            f"{', '.join(sources)}, {count} needed (skipped: {why})")
    return chosen, skipped
