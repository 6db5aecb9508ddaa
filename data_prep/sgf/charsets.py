"""Decode an SGF file's bytes to text, choosing the codec: :func:`decode_sgf`.

The bytes are decoded before sgfmill tokenises them (then handed over as UTF-8). A decoding is right only if it
keeps the ASCII structure: every ``[``, ``]`` and ``\\`` byte still that character. A byte-order mark decides; else
the first ``CA[]`` (widened: GB2312/GBK -> ``gb18030``, Shift_JIS -> ``cp932``, EUC-KR -> ``cp949``) if the whole
file decodes under it and keeps the structure; else UTF-8 if the whole file decodes; else the readings of the
declared codec and ``FALLBACK_ENCODINGS`` compete (docs/positions.md, "SGF reading"). A reading always exists. The
codec's name goes to ``GameInfo.encoding``, the count of bytes it could not decode to
``GameInfo.encoding_replaced``.
"""

from __future__ import annotations

import codecs
import collections
import functools
import re
import threading
import typing
import unicodedata

from ..errors import SgfError

FALLBACK_ENCODINGS = ("utf-8", "gb18030", "cp932", "cp949", "iso8859-1")
_WIDEN = {"gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949"}
_CA_RE = re.compile(rb"(?<![A-Za-z])CA\s*\[([^\]]{0,64})\]")
#: the UTF-16 byte-order marks (a file starting with one is read as UTF-16)
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


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
    """A decoded SGF file: ``text``, the ``codec`` used and how many bytes it could not decode (shown as U+FFFD).

    ``escaped``: the text with each undecodable byte as a lone surrogate (``U+DC80 + byte``), so
    ``escaped[i:j].encode(codec, "surrogateescape")`` gives back that stretch's bytes; equal to ``text`` when
    nothing was replaced."""

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
    """Error handler: each undecodable byte becomes a lone surrogate, an ASCII byte in the failing range stays
    itself; counts the ill-formed stretches in ``_ERRORS.n``."""
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
    swallowed a structure byte, of the anchored ones (stretches between ``]`` bytes, then between all three);
    ``errors`` counts the ill-formed stretches."""
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
    elif raw.startswith(UTF16_BOMS):
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
