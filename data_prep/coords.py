"""Board coordinates: every coordinate system kifunet uses.

Board size ``N``: 2 <= N <= :data:`MAX_SIZE` (19) for records, datasets and the rules engine; the conversions go
up to :data:`GTP_MAX_SIZE` (25). Rows count from the top, columns from the left; flat index ``row*N + col``, pass
``N*N`` (``None`` as a (row, col)). SGF, GTP (no letter ``I``) and sgfmill (rows from the bottom) are converted at
the boundary: the table is in docs/positions.md ("Coordinates").
"""

from __future__ import annotations

GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # no I: 25 columns, GTP's largest board
SGF_LETTERS = "abcdefghijklmnopqrstuvwxyz"
MAX_SIZE = 19  # records, datasets and the rules engine (data_prep.board.Board)
GTP_MAX_SIZE = 25  # the largest board GTP vertices can name (GTP 2 spec, section 3.11)


def pass_index(n: int) -> int:
    """Flat index of pass on an ``n`` x ``n`` board."""
    return n * n


def _on_board(rc: tuple[int, int], n: int) -> tuple[int, int]:
    """``rc`` as (row, col); ``ValueError`` when it is off an n x n board."""
    r, c = rc
    if not (0 <= r < n and 0 <= c < n):
        raise ValueError(f"point {rc} is off a {n}x{n} board")
    return r, c


def to_flat(rc: tuple[int, int] | None, n: int) -> int:
    if rc is None:
        return n * n
    r, c = _on_board(rc, n)
    return r * n + c


def from_flat(flat: int, n: int) -> tuple[int, int] | None:
    if flat == n * n:
        return None
    if not 0 <= flat < n * n:
        raise ValueError(f"flat index {flat} is off a {n}x{n} board")
    return divmod(int(flat), n)


def from_sgf(s: str, n: int) -> tuple[int, int] | None:
    """SGF point ``'pd'`` -> (row, col); ``''`` and (on boards up to 19) ``'tt'`` are pass."""
    if s == "" or (s == "tt" and n <= 19):
        return None
    if len(s) != 2:
        raise ValueError(f"bad SGF point {s!r}")
    c, r = SGF_LETTERS.find(s[0]), SGF_LETTERS.find(s[1])
    if not (0 <= r < n and 0 <= c < n):
        raise ValueError(f"SGF point {s!r} is off a {n}x{n} board")
    return r, c


def to_sgf(rc: tuple[int, int] | None, n: int) -> str:
    if rc is None:
        return ""
    r, c = _on_board(rc, n)
    return SGF_LETTERS[c] + SGF_LETTERS[r]


def from_gtp(s: str, n: int) -> tuple[int, int] | None:
    """GTP vertex ``'Q16'`` -> (row, col); ``'pass'`` -> None. Case-insensitive."""
    t = s.strip().upper()
    if t == "PASS":
        return None
    if len(t) < 2 or t[0] not in GTP_COLUMNS[:n] or not t[1:].isdigit():
        raise ValueError(f"bad GTP vertex {s!r} for a {n}x{n} board")
    c = GTP_COLUMNS.index(t[0])
    number = int(t[1:])
    if not 1 <= number <= n:
        raise ValueError(f"GTP vertex {s!r} is off a {n}x{n} board")
    return n - number, c


def to_gtp(rc: tuple[int, int] | None, n: int) -> str:
    if rc is None:
        return "pass"
    r, c = _on_board(rc, n)
    return f"{GTP_COLUMNS[c]}{n - r}"


def from_sgfmill(rc: tuple[int, int] | None, n: int) -> tuple[int, int] | None:
    """sgfmill's (row-from-bottom, col) -> our (row-from-top, col)."""
    if rc is None:
        return None
    return n - 1 - rc[0], rc[1]


def to_sgfmill(rc: tuple[int, int] | None, n: int) -> tuple[int, int] | None:
    if rc is None:
        return None
    return n - 1 - rc[0], rc[1]
