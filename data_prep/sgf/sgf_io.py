"""Read one SGF game record (a path or bytes) into a :class:`~kifunet.data_prep.game.GameRecord`.

:func:`load_game` keeps the main line (the first variation at every node) of the first game, decoded by
:func:`kifunet.data_prep.sgf.charsets.decode_sgf`; ``SZ`` defaults to 19, a pass is ``B[]`` or (up to 19x19)
``B[tt]``. Every failure is an :class:`~kifunet.data_prep.errors.SgfError` with ``.path`` and ``.reason``, one of
``REASONS``. The GameInfo fields and the reasons are tabled in docs/positions.md ("SGF reading").
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re

import numpy as np
from sgfmill import sgf, sgf_grammar, sgf_properties

from .. import coords
from ..errors import SgfError
from ..game import BLACK, EMPTY, MOVE, SETUP, WHITE, GameInfo, GameRecord
from ..ranks import parse_rank
from ..results import parse_result
# re-exported: callers name them as sgf_io.X
from .charsets import FALLBACK_ENCODINGS, Decoded, decode_sgf, decode_sgf_bytes  # noqa: F401
from .game_trees import split_game_trees  # noqa: F401

#: a record may set up at most this many whole boards' worth of points (AB/AW/AE, compressed lists expanded)
#: over its main line; a handicap or a position copied from a book is one board at most
MAX_SETUP_BOARDS = 16
REASONS = ("unreadable", "empty", "encoding", "parse_error", "board_size", "bad_point", "bad_node", "too_many_setup",
           "internal_error")
GOGOD_PROPERTIES = ("CP", "SO", "GC", "US", "AN")

_YEAR_RE = re.compile(r"(?<!\d)(\d{4})(?!\d)")


# ------------------------------------------------------------------------------------------- parsing


def _board_size(root_props: dict, path: str) -> int:
    values = root_props.get("SZ")
    if not values:
        return 19
    text = values[0].decode("ascii", "replace").strip()
    parts = [p.strip() for p in text.split(":")]
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise SgfError(f"bad board size SZ[{text}]", path=path, reason="board_size") from None
    if len(dims) not in (1, 2) or (len(dims) == 2 and dims[0] != dims[1]):
        raise SgfError(f"non-square or malformed board size SZ[{text}]", path=path, reason="board_size")
    n = dims[0]
    if not 2 <= n <= coords.MAX_SIZE:
        raise SgfError(f"board size {n} is outside 2..{coords.MAX_SIZE}", path=path, reason="board_size")
    return n


def _text(node, ident: str) -> str:
    try:
        value = node.get(ident)
    except (KeyError, ValueError):
        return ""
    return value.strip() if isinstance(value, str) else ""


def _raw_text(node, ident: str) -> str:
    """A property's value as written (for properties sgfmill reads as numbers, such as ``TM``), stripped."""
    try:
        return node.get_raw(ident).decode("utf-8", "replace").strip() if node.has_property(ident) else ""
    except (KeyError, ValueError):
        return ""


def komi_points(km: float | None, rules: str = "") -> float | None:
    """``KM`` as read -> komi in points. A whole number of magnitude >= 100 is Fox's hundredths: of a point
    (``KM[650]`` = 6.5), under ``RU[Chinese]`` of a stone (``KM[375]`` = 7.5 points); anything else is points as
    written (Fox's ``KM[0]`` included, which also stands for "not recorded")."""
    if km is None or not 100 <= abs(km) < 1e6 or km % 1:
        return km
    return km / 50.0 if "chinese" in rules.lower() else km / 100.0


def _read_info(root, n: int, path: str, decoded: Decoded, raw: bytes) -> GameInfo:
    source = "kgs"
    for ident in GOGOD_PROPERTIES:
        if "gogod" in _text(root, ident).lower():
            source = "gogod"
            break
    br, wr = _text(root, "BR"), _text(root, "WR")
    komi = None
    if root.has_property("KM"):
        try:
            komi = komi_points(float(root.get("KM")), _text(root, "RU"))
        except ValueError:
            komi = None
    handicap = 0
    if root.has_property("HA"):
        try:
            handicap = int(root.get("HA"))
        except ValueError:
            handicap = 0
        if not 0 <= handicap <= n * n:
            handicap = 0
    date = _text(root, "DT")
    m = _YEAR_RE.search(date)
    result = _text(root, "RE")
    res = parse_result(result)
    return GameInfo(
        path=path, size=n, black=_text(root, "PB"), white=_text(root, "PW"),
        black_rank=parse_rank(br, source), white_rank=parse_rank(wr, source),
        black_rank_text=br, white_rank_text=wr, komi=komi, handicap=handicap,
        result=result, result_kind=res.kind, winner=res.winner, margin=res.margin, date=date,
        year=int(m.group(1)) if m else None,
        rules=_text(root, "RU"), encoding=decoded.codec, encoding_replaced=decoded.replaced,
        time_limit=_raw_text(root, "TM"), overtime=_text(root, "OT"), content_hash=hashlib.sha256(raw).hexdigest(),
        place=_text(root, "PC"), application=_raw_text(root, "AP"), periods=_raw_text(root, "TC"),
        period_time=_raw_text(root, "TT"),
    )


def _flat(raw_value: bytes, n: int) -> int:
    """Raw SGF move value -> flat index (pass = n*n); ValueError if malformed or off the board."""
    return coords.to_flat(coords.from_sgfmill(sgf_properties.interpret_go_point(raw_value, n), n), n)


def _events(game, n: int, path: str):
    kinds: list[int] = []
    colours: list[int] = []
    points: list[int] = []
    move_number = 0
    setup_left = MAX_SETUP_BOARDS * n * n
    for node_number, node in enumerate(game.main_sequence_iter()):
        props = node.get_raw_property_map()
        if "AB" in props or "AW" in props or "AE" in props:
            for ident, colour in (("AE", EMPTY), ("AB", BLACK), ("AW", WHITE)):
                if ident not in props:
                    continue
                if setup_left < 0:  # checked before sgfmill expands the next compressed lists (AE[aa:ss])
                    raise SgfError(f"node {node_number}: more setup points than {MAX_SETUP_BOARDS} whole boards "
                                   f"({MAX_SETUP_BOARDS * n * n}); not a game record", path=path,
                                   reason="too_many_setup")
                try:
                    pts = sorted(coords.to_flat(coords.from_sgfmill(p, n), n) for p in node.get(ident))
                except ValueError:
                    shown = b"".join(b"[" + v + b"]" for v in props[ident]).decode("utf-8", "replace")
                    raise SgfError(f"node {node_number}: setup {ident}{shown[:80]} has a point that is "
                                   f"malformed or off the {n}x{n} board", path=path,
                                   reason="bad_point") from None
                setup_left -= len(pts)
                kinds.extend([SETUP] * len(pts))
                colours.extend([colour] * len(pts))
                points.extend(pts)
        has_b, has_w = "B" in props, "W" in props
        if not (has_b or has_w):
            continue
        move_number += 1
        if has_b and has_w:
            raise SgfError(f"move {move_number} (node {node_number}) has both B and W", path=path,
                           reason="bad_node")
        ident = "B" if has_b else "W"
        value = props[ident][0]
        try:
            flat = _flat(value, n)
        except ValueError:
            shown = value.decode("utf-8", "replace")[:20]
            raise SgfError(f"move {move_number} ({ident} [{shown}]) is malformed or off the {n}x{n} board",
                           path=path, reason="bad_point") from None
        kinds.append(MOVE)
        colours.append(BLACK if has_b else WHITE)
        points.append(flat)
    return (np.array(kinds, dtype=np.int8), np.array(colours, dtype=np.int8),
            np.array(points, dtype=np.int16))


def _load(raw: bytes, path: str) -> GameRecord:
    if not raw.strip():
        raise SgfError("file is empty", path=path, reason="empty")
    decoded = decode_sgf(raw, path=path)
    text, encoding = decoded.text, decoded.codec
    utf8 = (raw if encoding == "utf-8" and not decoded.replaced and not raw.startswith(codecs.BOM_UTF8)
            else text.encode("utf-8"))
    try:
        coarse = sgf_grammar.parse_sgf_game(utf8)
    except ValueError as e:
        raise SgfError(f"not a valid SGF game: {e}", path=path, reason="parse_error") from None
    n = _board_size(coarse.sequence[0], path)
    coarse.sequence[0]["SZ"] = [str(n).encode()]  # normalised (SZ[19:19] -> 19) for sgfmill
    game = sgf.Sgf_game.from_coarse_game_tree(coarse, override_encoding="UTF-8")
    kinds, colours, points = _events(game, n, path)
    info = _read_info(game.get_root(), n, path, decoded, raw)
    return GameRecord(size=n, kinds=kinds, colours=colours, points=points, info=info,
                      territory=_territory(game.get_last_node(), n))


def _territory(node, n: int) -> np.ndarray | None:
    """``GameRecord.territory`` from ``node``'s ``TB``/``TW``; None without marks or with a malformed one."""
    if not (node.has_property("TB") or node.has_property("TW")):
        return None
    out = np.zeros(n * n, np.int8)
    try:
        for ident, colour in (("TB", BLACK), ("TW", WHITE)):
            if node.has_property(ident):
                for p in node.get(ident):
                    out[coords.to_flat(coords.from_sgfmill(p, n), n)] = colour
    except ValueError:
        return None
    return out


def load_game(source: str | os.PathLike | bytes | bytearray | memoryview, *, path: str | None = None
              ) -> GameRecord:
    """Load the main line of one SGF game.

    ``source`` is a path or the file's bytes (``path`` then names it in messages and ``GameInfo.path``). Raises
    :class:`SgfError` (``.path``, ``.reason``) for every unusable record, ``TypeError`` for a ``source`` of the
    wrong type."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        name = path if path is not None else "<bytes>"
    elif isinstance(source, (str, os.PathLike)):
        name = path if path is not None else os.fspath(source)
        try:
            with open(source, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise SgfError(f"cannot read: {e.strerror or e}", path=name, reason="unreadable") from e
    else:
        raise TypeError(f"load_game needs a path or bytes, not {type(source).__name__}")
    try:
        return _load(raw, name)
    except (SgfError, MemoryError):
        raise
    except Exception as e:  # never let a malformed record crash the caller with another type
        raise SgfError(f"unexpected {type(e).__name__} while reading: {e}", path=name,
                       reason="internal_error") from e
