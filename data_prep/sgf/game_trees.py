"""Cut an SGF collection (several game trees in one file) into one byte string per tree: :func:`split_game_trees`.

Trees are found where sgfmill looks for one (``(`` then ``;``); a damaged tree runs to the end of the file and
text between trees is dropped, as sgfmill drops it. A file with one tree gives its bytes unchanged.
"""

from __future__ import annotations

import codecs
import re

from .charsets import UTF16_BOMS, decode_sgf_bytes

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
    """(start, end) of every game tree in ``s``: to its matching ')', or to the end of ``s`` for a tree that never
    closes; junk sgfmill would stop at is stepped over."""
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

    Trees are found as sgfmill's ``parse_sgf_collection`` finds them, on the text as :func:`decode_sgf_bytes`
    decodes it. The first piece runs from the file's start to the end of the first tree; a later piece is its tree's
    bytes behind the file's byte-order mark; a tree that never closes runs to the end. Never raises: anything
    unexpected gives ``[raw]``."""
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
    if raw.startswith(UTF16_BOMS):
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
    """Byte offsets in ``raw`` of the tree spans found in the decoded ``text`` (the n-th '(' or ')' of the text is
    the n-th such byte), or None if the counts disagree."""
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
