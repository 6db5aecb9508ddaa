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

Board size: ``SZ`` (19 when missing, per the SGF spec). ``SZ[19:19]`` is accepted; anything not an integer
``2..19`` or non-square (``SZ[19:13]``) is rejected.

**Encoding.** The file's bytes are decoded *before* sgfmill tokenises them (then handed to sgfmill as UTF-8),
so multi-byte characters whose trail byte is ``\\`` or ``]`` (Shift-JIS ``表`` = ``95 5C``) do not break
property values. The SGF structure (``[``, ``]``, ``\\``, ``;``, ``(``, ``)``, property names) is ASCII; a
decoding is only right if it keeps that structure. The codec is chosen thus (:func:`decode_sgf`):

1. a UTF-8 byte-order mark means UTF-8; a UTF-16 mark means UTF-16 (if that fails: ``'encoding'`` error);
2. the declared ``CA[]`` (first ``CA[...]`` in the file), widened to the superset writers actually emit
   (GB2312/GBK -> ``gb18030``, Shift_JIS -> ``cp932``, EUC-KR -> ``cp949``), is used as it is if the whole
   file decodes under it without error *and* every ``[``, ``]`` and ``\\`` byte is still that character
   (no multi-byte character swallowed one as its trail byte: GBK, Big5 and Shift-JIS allow them there).
   Declared charsets that are not ASCII-compatible (UTF-16/32) or unknown to Python are ignored;
3. else, with no ``CA`` (or an ignored one), UTF-8 is used if the whole file decodes under it (random bytes
   seldom do; UTF-8 never swallows an ASCII byte);
4. else every *reading* competes: the declared codec and each of ``FALLBACK_ENCODINGS = utf-8, gb18030, cp932,
   cp949, iso8859-1``, each decoding what it can and replacing each run of bytes it cannot decode (a broken
   byte: a name cut in the middle of a character, a byte lost in transfer) with one ``U+FFFD``; and for a
   codec under which a multi-byte character swallowed a ``[``, ``]`` or ``\\`` byte, also its *anchored*
   readings, which decode the stretches between such bytes (those right after a non-ASCII byte: a lead byte
   is never ASCII) separately, so they stay structure and a lead byte left dangling before ``]`` becomes
   ``U+FFFD``: first split at ``]`` only (a ``\\`` trail byte, as in ``表``, stays in its character), then,
   if a ``[`` or ``\\`` was swallowed too, at all three. The reading that wins has, in order: the most
   property values an SGF tokeniser reads before it stops (a swallowed ``]`` merges two values, so a reading
   that eats structure loses; a stray ``]`` stops the tokeniser, so does a reading that splits a real
   character at its trail byte); then the fewest *bad* characters: the codec's decoding errors (each an
   ill-formed stretch as the codec reports it: a cut 3-byte UTF-8 character is one, a lone GBK lead byte one;
   two errors either side of a ``?``, a character whose middle byte a writer replaced by ``?``, are one)
   plus *suspect* characters; then the earlier in the order declared (plain, then anchored), utf-8, gb18030,
   cp932, cp949, iso8859-1. So a declared codec that decodes all but a few bytes is kept, with ``U+FFFD`` for
   those, over a codec that decodes every byte into garbage, and no reading that swallows a rank property into
   a name can beat one that keeps it.

   A character is suspect when it is a control, private-use, unassigned or surrogate code point, ``U+FFFD``,
   or, except for the declared codec, lies outside the codec's common core: GB2312 for gb18030; JIS level-1
   kanji, kana and symbols (``0x8140..0x84BE``, ``0x889F..0x9872``) for cp932; Hangul and symbols of KS X 1001
   (lead ``0xA1..0xC8``) for cp949; for iso8859-1, a C1 control, a sign of ``U+00A1..U+00BF``, ``×`` or
   ``÷`` next to another non-ASCII character, or any non-ASCII character in a run of three or more (East Asian
   double bytes read as Latin-1: ``古力`` -> ``¹ÅÁ¦``, ``聂卫`` -> ``ÄôÎÀ``; Latin names put at most two
   accented letters side by side, ``Müßig``). ``iso8859-1`` decodes any bytes, so a reading always exists.

The codec used (Python's name: ``utf-8``, ``gb18030``, ``cp932``, ``cp949``, ``iso8859-1``, or a declared one
such as ``big5``) goes to ``GameInfo.encoding``, and the number of bytes it could not decode (each maximal run
shown as one ``U+FFFD``; 0 for a clean file) to ``GameInfo.encoding_replaced``. Known limits, names only (the
structure, ranks included, is kept whatever the codec): EUC-KR text *without* ``CA`` decodes as valid GB2312 and
is read as gb18030 (the bytes alone cannot tell them apart), and Big5 without ``CA`` is not among the fallbacks;
with ``CA[EUC-KR]`` / ``CA[Big5]`` both are right. A byte that a writer replaced by ``?`` (the Fox archive: a
UTF-8 byte that cp1252 lacks became ``?``) leaves ``U+FFFD?U+FFFD`` where the character was.

**Metadata** (:class:`~kifunet.data_prep.game.GameInfo`):

=================  ======================================================================================
field              from
=================  ======================================================================================
black, white       ``PB``, ``PW`` text, stripped ("" if missing); likewise every text field below
*_rank_text        ``BR``, ``WR`` text ("" if missing)
*_rank             :func:`kifunet.data_prep.ranks.parse_rank` of that text, ``source='gogod'`` when the root's
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
import collections
import functools
import threading
import typing
import hashlib
import os
import re
import unicodedata

import numpy as np
from sgfmill import sgf, sgf_grammar, sgf_properties

from .. import coords
from ..errors import SgfError
from ..game import BLACK, EMPTY, MOVE, SETUP, WHITE, GameInfo, GameRecord
from ..ranks import parse_rank
from ..results import parse_result

#: a record may set up at most this many whole boards' worth of points (AB/AW/AE, compressed lists expanded)
#: over its main line; a handicap or a position copied from a book is one board at most
MAX_SETUP_BOARDS = 16
FALLBACK_ENCODINGS = ("utf-8", "gb18030", "cp932", "cp949", "iso8859-1")
_WIDEN = {"gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949"}
REASONS = ("unreadable", "empty", "encoding", "parse_error", "board_size", "bad_point", "bad_node", "too_many_setup",
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


# Latin-1 signs (U+00A1..U+00BF, x, /) next to another non-ASCII character: East Asian double bytes read as Latin-1.
_LATIN1_SIGN_PAIR = re.compile(r"(?<=[\x80-\xff])[\xa1-\xbf\xd7\xf7]|[\xa1-\xbf\xd7\xf7](?=[\x80-\xff])")
# Three or more non-ASCII Latin-1 characters in a row (Latin names seldom have two: "Müßig").
_LATIN1_RUN = re.compile(r"[\x80-\xff]{3,}")
_LATIN1_LETTERS = frozenset(chr(c) for c in range(0xC0, 0x100)) - {"\xd7", "\xf7"} | {"\xa0"}


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _count_suspect(text: str, codec: str | None) -> int:
    """Suspect characters of ``text`` read with ``codec`` (None: the declared codec, judged by category only).
    Undecodable bytes (lone surrogates, see :func:`_escape_undecodable`) are not counted here."""
    counts = collections.Counter(_NON_ASCII.findall(text))
    n = sum(k for ch, k in counts.items() if not "\udc80" <= ch <= "\udcff" and _suspect(ch, codec or ""))
    if codec == "iso8859-1":  # signs next to non-ASCII, and the letters of long non-ASCII runs (signs counted)
        n += len(_LATIN1_SIGN_PAIR.findall(text))
        n += sum(1 for run in _LATIN1_RUN.findall(text) for ch in run if ch in _LATIN1_LETTERS)
    return n


class Decoded(typing.NamedTuple):
    """A decoded SGF file: the text, the codec used and how many bytes it could not decode (shown as U+FFFD).

    ``escaped`` is the same text with each undecodable byte as a lone surrogate (``U+DC80 + byte``) instead of
    one ``U+FFFD`` per run, so ``escaped[i:j].encode(codec, "surrogateescape")`` gives back the bytes that
    stretch came from (for codecs whose characters encode back to their bytes): what maps a position in the
    text to a byte offset. Equal to ``text`` when nothing was replaced."""

    text: str
    codec: str
    replaced: int = 0
    escaped: str = ""


_ESCAPED = re.compile("[\udc80-\udcff]+")  # undecodable bytes, as the "kifunet-sgf" error handler leaves them
# One character whose middle byte a writer replaced by '?' (the Fox archive): two decoding errors, one damage.
_QUESTIONED = re.compile("[\udc80-\udcff]\\?[\udc80-\udcff]")
# SGF structure bytes that a multi-byte character may swallow as its trail byte: those after a non-ASCII byte
# (a lead byte is never ASCII). The anchored readings split there: at ']' only, or at '[', ']' and '\'.
_STRUCTURE_SPLITS = (re.compile(rb"(?<=[\x80-\xff])(\])"), re.compile(rb"(?<=[\x80-\xff])([\[\]\\])"))
# An SGF tokeniser on text, as sgfmill's on bytes (sgf_grammar._tokenise_re): up to 4096 tokens (a value, a
# property name, a delimiter) at a time, so the regex engine's stack stays small (Python 3.10 has no possessive
# quantifiers); a name is never split (the look-ahead), so a failing token cannot backtrack into the names before.
_SGF_START = re.compile(r"\(\s*;")
_SGF_VALUE = r"\[[^\\\]]*(?:\\.[^\\\]]*)*\]"
_SGF_TOKENS = re.compile(r"(?:\s*(?:" + _SGF_VALUE + r"|[A-Za-z]+(?![A-Za-z])|[;()])){0,4096}", re.DOTALL)
_SGF_VALUES = re.compile(_SGF_VALUE, re.DOTALL)


_ERRORS = threading.local()  # decoding errors met by _escape_undecodable in this thread


def _escape_undecodable(e: UnicodeDecodeError):
    """Error handler: each byte that does not decode becomes a lone surrogate (counted, then shown as U+FFFD);
    an ASCII byte inside the failing range stays itself (the SGF structure is ASCII and must survive). Counts
    the errors (each a maximal ill-formed stretch, as the codec reports it) in ``_ERRORS.n``."""
    _ERRORS.n = getattr(_ERRORS, "n", 0) + 1
    bad = e.object[e.start:e.end]
    return "".join(chr(b) if b < 0x80 else chr(0xDC00 + b) for b in bad), e.end


codecs.register_error("kifunet-sgf", _escape_undecodable)


def _keeps_structure(raw: bytes, text: str) -> bool:
    """Is every ``[``, ``]`` and ``\\`` byte of ``raw`` still that character in ``text`` (none swallowed as
    the trail byte of a multi-byte character)?"""
    return all(raw.count(b) == text.count(c) for b, c in ((b"]", "]"), (b"\\", "\\"), (b"[", "[")))


def _values_read(text: str) -> int:
    """How many property values an SGF tokeniser reads in ``text`` before it meets what it cannot read."""
    m = _SGF_START.search(text)
    if m is None:
        return 0
    i, n = m.start(), 0
    while (j := _SGF_TOKENS.match(text, i).end()) > i:
        n += len(_SGF_VALUES.findall(text, i, j))  # in a run of whole tokens, a value starts at every '['
        i = j
    return n


def _readings(raw: bytes, codec: str):
    """``(text, keeps_structure, errors)`` of the plain reading of ``raw`` under ``codec`` and, if a character
    swallowed a ``[``/``]``/``\\`` byte, of the anchored ones: the stretches between the ``]`` bytes (so a
    ``\\`` trail byte, as in Shift-JIS ``表``, still counts), then between all three, decoded separately, so
    each such byte stays itself. Undecodable bytes are lone surrogates (:func:`_escape_undecodable`); ``errors``
    counts the ill-formed stretches."""
    _ERRORS.n = 0
    plain = raw.decode(codec, "kifunet-sgf")
    keeps = _keeps_structure(raw, plain)
    yield plain, keeps, _ERRORS.n
    if not keeps:
        for split in _STRUCTURE_SPLITS:
            parts = split.split(raw)
            _ERRORS.n = 0
            parts[::2] = [p.decode(codec, "kifunet-sgf") for p in parts[::2]]
            parts[1::2] = [p.decode("ascii") for p in parts[1::2]]
            text = "".join(parts)
            keeps = _keeps_structure(raw, text)
            yield text, keeps, _ERRORS.n
            if keeps:
                break


def _clean(text: str, codec: str) -> Decoded:
    """A strict decoding (no surrogate in it)."""
    return Decoded(text, codec, 0, text)


def _decoded(text: str, codec: str) -> Decoded:
    replaced = sum(len(run) for run in _ESCAPED.findall(text))
    return Decoded(_ESCAPED.sub("\ufffd", text) if replaced else text, codec, replaced, text)


def decode_sgf(raw: bytes, *, path: str | None = None) -> Decoded:
    """Decode a whole SGF file, choosing the codec as the module docstring says."""
    if raw.startswith(codecs.BOM_UTF8):
        try:
            return _clean(raw[len(codecs.BOM_UTF8):].decode("utf-8"), "utf-8")
        except UnicodeDecodeError:
            raw = raw[len(codecs.BOM_UTF8):]  # a lying mark: treat the rest like any other file
    elif raw.startswith(_UTF16_BOMS):
        try:
            return _clean(raw.decode("utf-16"), "utf-16")
        except UnicodeDecodeError as e:
            raise SgfError(f"starts with a UTF-16 byte-order mark but is not UTF-16: {e}", path=path,
                           reason="encoding") from e
    declared = _declared_codec(raw)
    declared_ok = False
    if declared is not None:
        try:
            text = raw.decode(declared)
            declared_ok = True
        except (UnicodeDecodeError, LookupError):
            pass
        else:
            if _keeps_structure(raw, text):
                return _clean(text, declared)
    if not declared_ok:
        try:
            return _clean(raw.decode("utf-8"), "utf-8")
        except UnicodeDecodeError:
            pass
    best = None
    order = ((declared,) if declared is not None else ()) + tuple(c for c in FALLBACK_ENCODINGS if c != declared)
    kept = _values_read(raw.decode("iso8859-1"))  # the values of every reading that keeps the structure bytes
    tie = 0
    for codec in order:
        try:
            readings = list(_readings(raw, codec))
        except (UnicodeError, LookupError):  # a codec whose errors the handler cannot mend
            continue
        for text, keeps, errors in readings:
            values = kept if keeps else _values_read(text)
            tie += 1
            if best is not None and -values > best[0][0]:
                continue
            if errors:
                errors -= len(_QUESTIONED.findall(text))
            if best is not None and (-values, errors) >= best[0][:2]:
                continue  # suspects only add: it cannot win
            key = (-values, errors + _count_suspect(text, None if codec == declared else codec), tie)
            if best is None or key < best[0]:
                best = (key, text, codec)
    assert best is not None  # iso8859-1 decodes every byte string
    return _decoded(best[1], best[2])


def decode_sgf_bytes(raw: bytes, *, path: str | None = None) -> tuple[str, str]:
    """Decode a whole SGF file: ``(text, codec name)`` of :func:`decode_sgf` (see the module docstring)."""
    d = decode_sgf(raw, path=path)
    return d.text, d.codec


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


# ------------------------------------------------------------------------------------------- collections

# A game tree starts where sgfmill looks for one: '(' then ';' with ASCII whitespace between (its _find_start_re).
_TREE_START = r"\([ \t\n\r\f\v]*;"
# A property value as sgfmill reads it: no unescaped ']'; a backslash escapes any character (unrolled: linear).
_TREE_VALUE = r"\[[^\\\]]*(?:\\.[^\\\]]*)*\]"
# What lies up to the next '(', ')' or unclosed '[': runs of other characters and whole values. The bounded
# repeat keeps sre's backtracking stack small (Python 3.10 has no possessive quantifiers).
_TREE_SKIP = r"(?:[^()\[]+|" + _TREE_VALUE + r"){0,4096}"
_TREE_RES = {t: tuple(re.compile(t(x) if t is str else x.encode(), re.DOTALL)
                      for x in (_TREE_START, _TREE_VALUE, _TREE_SKIP)) for t in (str, bytes)}


def _tree_spans(s: str | bytes) -> list[tuple[int, int]]:
    """(start, end) of every game tree in ``s``: from a tree start to its matching ')', or to the end of ``s``
    for a tree that never closes (a missing ')' or an unclosed value runs to the end, as in sgfmill).
    Characters sgfmill would stop at (junk) are stepped over, so a damaged tree still ends at its own ')'."""
    start_re, value_re, skip_re = _TREE_RES[type(s)]
    lp, rp, lb = ("(", ")", "[") if isinstance(s, str) else (b"(", b")", b"[")
    n, pos, spans = len(s), 0, []
    while (m := start_re.search(s, pos)) is not None:
        i, depth, end = m.end(), 1, n
        while True:
            i = skip_re.match(s, i).end()
            if i >= n:
                break
            c = s[i:i + 1]
            if c == lp:
                depth += 1
            elif c == rp:
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
            elif c == lb:
                if value_re.match(s, i) is None:
                    break  # an unclosed value: the rest of the data is inside it
                continue  # the repeat bound stopped before a value: go on
            else:
                continue  # the repeat bound stopped inside a run
            i += 1
        spans.append((m.start(), end))
        pos = end
    return spans


def split_game_trees(raw: bytes) -> list[bytes]:
    """The bytes of each game tree of an SGF file, in order: ``[raw]`` itself when it holds at most one tree.

    Trees are found as sgfmill's ``parse_sgf_collection`` finds them (``(;`` starts one, its matching ``)`` ends
    it; brackets inside property values do not count), on the text decoded as :func:`decode_sgf_bytes` decodes
    it, so a Shift-JIS or GBK trail byte equal to ``]`` or ``\\`` cannot move a boundary. The first piece is
    everything up to the end of the first tree (a byte-order mark or header included); a later piece is its
    tree's bytes, with the file's byte-order mark (UTF-8 or UTF-16) in front so that it decodes as the file
    does. Bytes between and after trees are dropped, as sgfmill ignores them. A tree that never closes runs to
    the end of the data (it then fails to parse on its own; the trees before it are whole). Each piece is
    decoded on its own when loaded: a later tree without ``CA[]`` in a file whose charset only the first tree
    declares is decoded by the fallback rules. Never raises: anything unexpected gives ``[raw]``.
    """
    try:
        return _split_game_trees(bytes(raw))
    except Exception:  # noqa: BLE001 - splitting must never lose the record: load it whole as before
        return [raw]


def _several_starts(s: str | bytes) -> bool:
    """Could ``s`` hold two game trees? Only if a tree start occurs twice (a cheap test that settles nearly all
    files, those without variations, before the scan that tells values apart)."""
    start_re = _TREE_RES[type(s)][0]
    m = start_re.search(s)
    return m is not None and start_re.search(s, m.end()) is not None


def _split_game_trees(raw: bytes) -> list[bytes]:
    if raw.startswith(_UTF16_BOMS):
        bom = raw[:2]
        text, _codec = decode_sgf_bytes(raw)  # strict UTF-16 (else SgfError: the file stays whole)
        chars = _tree_spans(text)
        if len(chars) < 2:
            return [raw]
        enc = "utf-16-le" if bom == codecs.BOM_UTF16_LE else "utf-16-be"
        at, done, offset = {}, 0, len(bom)  # character offset -> byte offset, encoding each stretch once
        for k in sorted({k for span in chars for k in span}):
            offset += len(text[done:k].encode(enc))
            done, at[k] = k, offset
        spans = [(at[a], at[b]) for a, b in chars]
    else:
        # In every ASCII-compatible codec read here '(', ')', ';' and ASCII whitespace are single bytes that
        # are never part of a multi-byte character: a tree start in the text is one in the bytes.
        if not _several_starts(raw):
            return [raw]
        bom = codecs.BOM_UTF8 if raw.startswith(codecs.BOM_UTF8) else b""
        text, codec = (None, "ascii") if raw.isascii() else decode_sgf_bytes(raw)
        if text is None or codec == "utf-8":
            spans = _tree_spans(raw)  # UTF-8 multi-byte sequences hold no ASCII byte: the bytes split alike
        else:
            spans = _byte_spans(raw, text, _tree_spans(text))
            if spans is None:
                return [raw]
    if len(spans) < 2:
        return [raw]
    return [raw[:spans[0][1]]] + [bom + raw[a:b] for a, b in spans[1:]]


def _byte_spans(raw: bytes, text: str, chars: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """Byte offsets of tree spans found in the decoded ``text``: a tree starts at a '(' and ends after a ')',
    and the n-th '(' (')') of the text is the n-th such byte of ``raw`` (never a trail byte, always kept by the
    decoder). None if the counts disagree (a codec for which that does not hold)."""
    opens = [m.start() for m in re.finditer(rb"\(", raw)]
    closes = [m.start() for m in re.finditer(rb"\)", raw)]
    if len(opens) != text.count("(") or len(closes) != text.count(")"):
        return None
    spans, n_open, n_close, at_open, at_close = [], 0, 0, 0, 0
    for a, b in chars:
        n_open += text.count("(", at_open, a)
        at_open = a
        start = opens[n_open]
        if b == len(text) and text[b - 1:b] != ")":
            end = len(raw)  # a tree that never closes
        else:
            n_close += text.count(")", at_close, b - 1)
            at_close = b - 1
            end = closes[n_close] + 1
        spans.append((start, end))
    return spans
