"""Read one SGF game record (a path or bytes) into a :class:`~kifunet.data_prep.game.GameRecord`.

``load_game(source, *, path=None)`` parses with sgfmill and keeps the **main line** only (the first variation
at every node, as ``Sgf_game.main_sequence_iter`` gives). A file holding a collection yields its first game;
:func:`split_game_trees` cuts a collection into one byte string per game tree (the build's inputs do, so that
every tree is its own record).

Events, per node of the main line, in this order (see :mod:`kifunet.data_prep.game`):

* ``AE`` points (``SETUP``, colour ``EMPTY``), then ``AB`` (``BLACK``), then ``AW`` (``WHITE``), each
  sorted by flat index; in the root and in any later node; compressed point lists (``AB[aa:cc]``) expand;
* then the node's ``B``/``W`` move (``MOVE``); pass is ``N*N``, written ``B[]`` or, on boards up to 19,
  ``B[tt]``. A node with both ``B`` and ``W`` is an error.

Text: the file's bytes are decoded by :func:`kifunet.data_prep.sgf.charsets.decode_sgf` (the codec and the bytes
it could not decode go to ``GameInfo.encoding`` and ``encoding_replaced``) before sgfmill reads them. A
collection is cut into game trees by :func:`kifunet.data_prep.sgf.game_trees.split_game_trees`.

Board size: ``SZ`` (19 when missing, per the SGF spec). ``SZ[19:19]`` is accepted; anything not an integer
``2..19`` or non-square (``SZ[19:13]``) is rejected.

**Metadata** (:class:`~kifunet.data_prep.game.GameInfo`):

=================  ======================================================================================
field              from
=================  ======================================================================================
black, white       ``PB``, ``PW`` text, stripped ("" if missing); likewise every text field below
``*_rank_text``    ``BR``, ``WR`` text ("" if missing)
``*_rank``         :func:`kifunet.data_prep.ranks.parse_rank` of that text, ``source='gogod'`` when the root's
                   ``CP``, ``SO``, ``GC``, ``US`` or ``AN`` contains ``GoGoD`` (any case), else ``'kgs'``
komi               ``KM`` in points (:func:`komi_points`: Fox's hundredths, ``KM[650]`` -> 6.5, ``KM[375]`` under
                   ``RU[Chinese]`` -> 7.5); ``None`` if missing or not a finite number
handicap           ``HA`` as an int; 0 if missing, and 0 if not an integer in ``0..N*N`` (no flag is kept:
                   the handicap stones themselves are replayed from ``AB``)
result, date,      ``RE``, ``DT``, ``RU`` text
rules
result_kind,       ``RE`` read by :func:`kifunet.data_prep.results.parse_result` (its table: ``B+R`` -> resign,
winner, margin     black, NaN; ``W+12.5`` -> score, white, 12.5; missing -> unknown, none, NaN)
year               the first 4-digit number in ``DT`` (``DT[2015-01-01]`` -> 2015), else ``None``
size, path         board size; the display name (``path=``, else the source path, else ``'<bytes>'``)
encoding           the codec used (above)
encoding_replaced  bytes that codec could not decode, replaced by ``U+FFFD`` (above; 0 for a clean file)
time_limit,        ``TM``, ``OT`` text (main time; overtime), kept for the game's identity
overtime           (:meth:`~kifunet.data_prep.game.GameRecord.game_id`)
place,             ``PC``, ``AP`` text as written (where the game was played; the program that wrote the file):
application        what :func:`kifunet.data_prep.profiles.source_of` reads
periods,           Fox's ``TC``, ``TT`` as written (byo-yomi periods; seconds a period), "" elsewhere: Fox
period_time        writes its overtime there, not in ``OT``
content_hash       sha256 hex digest of the file's raw bytes
=================  ======================================================================================

**Errors.** Every failure is an :class:`~kifunet.data_prep.errors.SgfError` whose ``.path`` is the display
name and whose ``.reason`` is one of ``REASONS``:

==================  ====================================================================================
reason              when
==================  ====================================================================================
``unreadable``      reading the path raises ``OSError`` (missing file, a directory, ...)
``empty``           no bytes, or only whitespace
``encoding``        a UTF-16 byte-order mark but the text does not decode as UTF-16
``parse_error``     no ``(;`` game, unbalanced brackets, a truncated file, a property outside a node
``board_size``      ``SZ`` not an integer in 2..19, or non-square
``bad_point``       a move or setup point that is malformed or off the board (message names the move
                    number, colour and value, or the node for setup points)
``bad_node``        a node with both ``B`` and ``W``
``too_many_setup``  more setup points (``AB``/``AW``/``AE``, compressed lists expanded) than
                    ``MAX_SETUP_BOARDS`` (16) whole boards over the main line: bounds the work of a record
                    whose few bytes expand to millions of setup points
``internal_error``  any other exception while reading (a bug; the original is chained as ``__cause__``)
==================  ====================================================================================

A game with no moves is not an error: it loads with zero ``MOVE`` events.
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
    """``KM`` as read -> komi in points. Fox writes komi in hundredths: of a point (``KM[650]`` = 6.5), and under
    Chinese rules of a stone (``KM[375]`` = 3.75 stones = 7.5 points; its Chinese results count stones too,
    ``B+0.75``). A whole number of magnitude >= 100 is read so (no real komi is 100 points); every other value
    is points as written, Fox's ``KM[0]`` included (the Fox archive also writes 0 for games whose results,
    ``B+0.5``, show a fractional komi: read it as "not recorded" there)."""
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
    return GameRecord(size=n, kinds=kinds, colours=colours, points=points, info=info)


def load_game(source: str | os.PathLike | bytes | bytearray | memoryview, *, path: str | None = None
              ) -> GameRecord:
    """Load the main line of one SGF game.

    ``source`` is a filesystem path, or the file's bytes (``path`` then names it in messages and in
    ``GameInfo.path``, e.g. ``'KGS-2015.tar.gz:2015/01/01/x.sgf'``). Raises :class:`SgfError` (with ``.path``
    and ``.reason``, see the module docstring) for every unusable record; a ``TypeError`` only for a
    ``source`` of the wrong type.
    """
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
