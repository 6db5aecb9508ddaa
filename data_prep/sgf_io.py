"""Read one SGF game record (a path or bytes) into a :class:`~kifunet.data_prep.game.GameRecord`.

``load_game(source, *, path=None)`` parses with sgfmill and keeps the **main line** only (the first variation
at every node, as ``Sgf_game.main_sequence_iter`` gives). A file holding a collection yields its first game.

Events, per node of the main line, in this order (see :mod:`kifunet.data_prep.game`):

* ``AE`` points (``SETUP``, colour ``EMPTY``), then ``AB`` (``BLACK``), then ``AW`` (``WHITE``), each
  sorted by flat index; in the root and in any later node; compressed point lists (``AB[aa:cc]``) expand;
* then the node's ``B``/``W`` move (``MOVE``); pass is ``N*N``, written ``B[]`` or, on boards up to 19,
  ``B[tt]``. A node with both ``B`` and ``W`` is an error.

Board size: ``SZ`` (19 when missing, per the SGF spec). ``SZ[19:19]`` is accepted; anything not an integer
``2..19`` or non-square (``SZ[19:13]``) is rejected.

**Encoding.** The file's bytes are decoded *before* sgfmill tokenises them (then handed to sgfmill as UTF-8),
so multi-byte characters whose trail byte is ``\\`` or ``]`` (Shift-JIS ``表`` = ``95 5C``) do not break
property values. The codec is chosen thus:

1. a UTF-8 byte-order mark means UTF-8; a UTF-16 mark means UTF-16 (if that fails: ``'encoding'`` error);
2. the declared ``CA[]`` (first ``CA[...]`` in the file), widened to the superset writers actually emit
   (GB2312/GBK -> ``gb18030``, Shift_JIS -> ``cp932``, EUC-KR -> ``cp949``), is used if the whole file
   decodes under it without error. Declared charsets that are not ASCII-compatible (UTF-16/32) or unknown to
   Python are ignored;
3. otherwise (no ``CA``, or it fails): ``FALLBACK_ENCODINGS = utf-8, gb18030, cp932, cp949, iso8859-1``.
   UTF-8 wins if it decodes (random bytes seldom do). Among the others that decode without error, the one
   with the fewest *suspect* characters wins, ties going to the earlier; a character is suspect when it is a
   control, private-use or unassigned code point, or lies outside the codec's common core: GB2312 for
   gb18030; JIS level-1 kanji, kana and symbols (``0x8140..0x84BE``, ``0x889F..0x9872``) for cp932; Hangul
   and symbols of KS X 1001 (lead ``0xA1..0xC8``) for cp949; ``U+00A0..U+00FF`` for iso8859-1 (C1 controls
   are suspect). ``iso8859-1`` decodes any bytes, so this step always picks one.

The codec used (Python's name: ``utf-8``, ``gb18030``, ``cp932``, ``cp949``, ``iso8859-1``, or a declared one
such as ``big5``) goes to ``GameInfo.encoding``. Known limit: EUC-KR text *without* ``CA`` decodes as valid
GB2312 and is read as gb18030 (the bytes alone cannot tell them apart); with ``CA[EUC-KR]`` it is right.

**Metadata** (:class:`~kifunet.data_prep.game.GameInfo`):

=================  ======================================================================================
field              from
=================  ======================================================================================
black, white       ``PB``, ``PW`` text, stripped ("" if missing); likewise every text field below
*_rank_text        ``BR``, ``WR`` text ("" if missing)
*_rank             :func:`kifunet.data_prep.ranks.parse_rank` of that text, ``source='gogod'`` when the root's
                   ``CP``, ``SO``, ``GC``, ``US`` or ``AN`` contains ``GoGoD`` (any case), else ``'kgs'``
komi               ``KM`` as a float; ``None`` if missing or not a finite number
handicap           ``HA`` as an int; 0 if missing, and 0 if not an integer in ``0..N*N`` (no flag is kept:
                   the handicap stones themselves are replayed from ``AB``)
result, date,      ``RE``, ``DT``, ``RU`` text
rules
year               the first 4-digit number in ``DT`` (``DT[2015-01-01]`` -> 2015), else ``None``
size, path         board size; the display name (``path=``, else the source path, else ``'<bytes>'``)
encoding           the codec used (above)
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
``internal_error``  any other exception while reading (a bug; the original is chained as ``__cause__``)
==================  ====================================================================================

A game with no moves is not an error: it loads with zero ``MOVE`` events.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import os
import re
import unicodedata

import numpy as np
from sgfmill import sgf, sgf_grammar, sgf_properties

from . import coords
from .errors import SgfError
from .game import BLACK, EMPTY, MOVE, SETUP, WHITE, GameInfo, GameRecord
from .ranks import parse_rank

FALLBACK_ENCODINGS = ("utf-8", "gb18030", "cp932", "cp949", "iso8859-1")
_WIDEN = {"gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949"}
REASONS = ("unreadable", "empty", "encoding", "parse_error", "board_size", "bad_point", "bad_node",
           "internal_error")
GOGOD_PROPERTIES = ("CP", "SO", "GC", "US", "AN")

_CA_RE = re.compile(rb"(?<![A-Za-z])CA\s*\[([^\]]{0,64})\]")
_YEAR_RE = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


# ------------------------------------------------------------------------------------------- encoding


def _declared_codec(raw: bytes) -> str | None:
    """The first ``CA[...]`` as a usable, ASCII-compatible Python codec name (widened), else None."""
    m = _CA_RE.search(raw)
    if not m:
        return None
    name = m.group(1).decode("ascii", "replace").strip()
    try:
        codec = codecs.lookup(name).name
        if "(;CA[x]".encode(codec) != b"(;CA[x]":  # UTF-16/32 and bytes-to-bytes codecs
            return None
    except (LookupError, UnicodeError, TypeError, ValueError):
        return None
    return _WIDEN.get(codec, codec)


@functools.lru_cache(maxsize=65536)
def _suspect(ch: str, codec: str) -> bool:
    """Is ``ch``, as decoded by ``codec``, unlikely in real text (a sign of the wrong codec)?"""
    if unicodedata.category(ch) in ("Cc", "Co", "Cn", "Cs") or ch == "\ufffd":
        return True
    try:
        if codec == "gb18030":
            ch.encode("gb2312")
            return False
        if codec == "cp932":
            b = ch.encode("shift_jis")
            code = int.from_bytes(b, "big")
            return not (len(b) == 2 and (0x8140 <= code <= 0x84BE or 0x889F <= code <= 0x9872))
        if codec == "cp949":
            b = ch.encode("euc_kr")
            return not (len(b) == 2 and 0xA1 <= b[0] <= 0xC8)
    except UnicodeEncodeError:
        return True
    return False  # iso8859-1 (C1 controls were caught above as Cc) and anything else


def _count_suspect(text: str, codec: str) -> int:
    return sum(1 for ch in text if ord(ch) > 127 and _suspect(ch, codec))


def decode_sgf_bytes(raw: bytes, *, path: str | None = None) -> tuple[str, str]:
    """Decode a whole SGF file: ``(text, codec name)``, choosing the codec as the module docstring says."""
    if raw.startswith(codecs.BOM_UTF8):
        try:
            return raw[len(codecs.BOM_UTF8):].decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            raw = raw[len(codecs.BOM_UTF8):]  # a lying mark: treat the rest like any other file
    elif raw.startswith(_UTF16_BOMS):
        try:
            return raw.decode("utf-16"), "utf-16"
        except UnicodeDecodeError as e:
            raise SgfError(f"starts with a UTF-16 byte-order mark but is not UTF-16: {e}", path=path,
                           reason="encoding") from e
    declared = _declared_codec(raw)
    if declared is not None:
        try:
            return raw.decode(declared), declared
        except (UnicodeDecodeError, LookupError):
            pass
    best = None
    for rank, codec in enumerate(FALLBACK_ENCODINGS):
        if codec == declared:
            continue
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            continue
        if codec == "utf-8":
            return text, codec
        key = (_count_suspect(text, codec), rank)
        if best is None or key < best[0]:
            best = (key, text, codec)
    assert best is not None  # iso8859-1 decodes every byte string
    return best[1], best[2]


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


def _read_info(root, n: int, path: str, encoding: str, raw: bytes) -> GameInfo:
    source = "kgs"
    for ident in GOGOD_PROPERTIES:
        if "gogod" in _text(root, ident).lower():
            source = "gogod"
            break
    br, wr = _text(root, "BR"), _text(root, "WR")
    komi = None
    if root.has_property("KM"):
        try:
            komi = float(root.get("KM"))
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
    return GameInfo(
        path=path, size=n, black=_text(root, "PB"), white=_text(root, "PW"),
        black_rank=parse_rank(br, source), white_rank=parse_rank(wr, source),
        black_rank_text=br, white_rank_text=wr, komi=komi, handicap=handicap,
        result=_text(root, "RE"), date=date, year=int(m.group(1)) if m else None,
        rules=_text(root, "RU"), encoding=encoding, content_hash=hashlib.sha256(raw).hexdigest(),
    )


def _flat(raw_value: bytes, n: int) -> int:
    """Raw SGF move value -> flat index (pass = n*n); ValueError if malformed or off the board."""
    return coords.to_flat(coords.from_sgfmill(sgf_properties.interpret_go_point(raw_value, n), n), n)


def _events(game, n: int, path: str):
    kinds: list[int] = []
    colours: list[int] = []
    points: list[int] = []
    move_number = 0
    for node_number, node in enumerate(game.main_sequence_iter()):
        props = node.get_raw_property_map()
        if "AB" in props or "AW" in props or "AE" in props:
            for ident, colour in (("AE", EMPTY), ("AB", BLACK), ("AW", WHITE)):
                if ident not in props:
                    continue
                try:
                    pts = sorted(coords.to_flat(coords.from_sgfmill(p, n), n) for p in node.get(ident))
                except ValueError:
                    shown = b"".join(b"[" + v + b"]" for v in props[ident]).decode("utf-8", "replace")
                    raise SgfError(f"node {node_number}: setup {ident}{shown[:80]} has a point that is "
                                   f"malformed or off the {n}x{n} board", path=path,
                                   reason="bad_point") from None
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
    text, encoding = decode_sgf_bytes(raw, path=path)
    utf8 = raw if encoding == "utf-8" and not raw.startswith(codecs.BOM_UTF8) else text.encode("utf-8")
    try:
        coarse = sgf_grammar.parse_sgf_game(utf8)
    except ValueError as e:
        raise SgfError(f"not a valid SGF game: {e}", path=path, reason="parse_error") from None
    n = _board_size(coarse.sequence[0], path)
    coarse.sequence[0]["SZ"] = [str(n).encode()]  # normalised (SZ[19:19] -> 19) for sgfmill
    game = sgf.Sgf_game.from_coarse_game_tree(coarse, override_encoding="UTF-8")
    kinds, colours, points = _events(game, n, path)
    info = _read_info(game.get_root(), n, path, encoding, raw)
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
