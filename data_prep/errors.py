"""Named exceptions for bad input. Each carries the file (and move, where one applies) it is about."""

from __future__ import annotations


class KifunetInputError(Exception):
    """Base class: a record kifunet cannot use. ``reason`` is a short stable key for reject counts."""

    reason: str = "bad_input"

    def __init__(self, message: str, *, path: str | None = None, reason: str | None = None):
        self.path = path
        if reason is not None:
            self.reason = reason
        super().__init__(f"{path}: {message}" if path else message)


class SgfError(KifunetInputError):
    """The file is not a usable SGF game: parse error, encoding, missing or wrong board size, bad point."""

    reason = "sgf_error"


class IllegalMoveError(KifunetInputError):
    """A move of the record breaks the rules. ``move_number`` is 1-based over the record's moves."""

    reason = "illegal_move"

    def __init__(self, why: str, *, path: str | None, move_number: int, move: str, colour: str):
        self.move_number = move_number
        self.move = move
        self.colour = colour
        self.why = why
        super().__init__(f"move {move_number} ({colour} {move}) is illegal: {why}", path=path,
                         reason=f"illegal_move:{why}")
