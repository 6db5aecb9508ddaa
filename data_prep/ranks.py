"""Player ranks: every spelling kifunet reads, mapped onto one integer scale.

The scale (``int``, higher is stronger): 30k..1k = -30..-1, 1d..9d = 0..8, 1p..9p = 9..17 (``MIN = -30``,
``MAX = 17``); :data:`UNKNOWN` = -128 sorts below every real rank, and any text not read as a rank is ``UNKNOWN``,
never a strong rank. ``parse_rank(rank_to_text(v)) == v`` for every ``v`` in ``MIN..MAX`` and ``UNKNOWN``. The
spellings by server, the ``source`` rule (a bare dan is professional for ``'gogod'``) and the titles:
docs/positions.md ("Ranks").
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata

UNKNOWN = -128
MIN = -30  # 30 kyu
MAX = 17  # 9 professional dan
MAX_KYU = 30
SOURCES = ("kgs", "gogod")

_PRO_MARKERS = ("professional", "pro", "職業", "职业", "プロ", "프로")
_AMA_MARKERS = ("amateur", "ama", "am", "業餘", "業余", "业余", "アマ", "아마")
# Title names -> value. Latin names match as whole words; CJK names as substrings.
_TITLES_LATIN = {
    "meijin": MAX, "honinbo": MAX, "honinbō": MAX, "hon'inbo": MAX, "honinbou": MAX, "kisei": MAX, "judan": MAX,
    "tengen": MAX, "oza": MAX, "gosei": MAX, "mingren": MAX, "qisheng": MAX, "kuksu": MAX,
    "myeongin": MAX, "myungin": MAX, "jun-meijin": MAX - 1, "junmeijin": MAX - 1,
}
_TITLES_CJK = {
    "準名人": MAX - 1, "准名人": MAX - 1, "名人": MAX, "本因坊": MAX, "棋聖": MAX, "棋圣": MAX, "十段": MAX,
    "天元": MAX, "王座": MAX, "碁聖": MAX, "国手": MAX, "國手": MAX, "명인": MAX, "국수": MAX,
}
_KANJI_DIGITS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}

_NUM = r"(?P<num>\d{1,3}|[初一二三四五六七八九十]{1,3})"
_UNIT = r"(?P<unit>kyu|k|dan|d|pro|p|級|级|급|段|단)"
_RANK_RE = re.compile(rf"{_NUM}\s*[-.]?\s*{_UNIT}\.?")
_LATIN_WORD_RE = re.compile(r"[a-zō][a-zō'\-]*")
# A "p" written before the number marks a professional (Fox: ``P9段``, ``P9``; also ``P9D``).
_P_PREFIX_RE = re.compile(r"(?<![a-z])p\s*(?=\d|[初一二三四五六七八九十])")


@dataclasses.dataclass(frozen=True)
class RankInfo:
    """A parsed rank: ``value`` on the scale above, ``uncertain`` for KGS's trailing ``?`` (``9d?``)."""

    value: int
    uncertain: bool = False

    @property
    def known(self) -> bool:
        return is_known(self.value)


def is_known(value: int) -> bool:
    """True for a real rank (``MIN <= value <= MAX``), False for ``UNKNOWN`` and anything off the scale."""
    return isinstance(value, int) and not isinstance(value, bool) and MIN <= value <= MAX


def _number(tok: str) -> int | None:
    """``'12'`` -> 12; kanji numerals ``'九'`` -> 9, ``'十二'`` -> 12, ``'二十'`` -> 20; ``'初'`` -> 1."""
    if tok.isdigit():
        return int(tok)
    if tok == "初":
        return 1
    if "十" in tok:
        tens, _, ones = tok.partition("十")
        if "十" in ones or (tens and tens not in _KANJI_DIGITS) or (ones and ones not in _KANJI_DIGITS):
            return None
        return 10 * (_KANJI_DIGITS[tens] if tens else 1) + (_KANJI_DIGITS[ones] if ones else 0)
    if len(tok) == 1 and tok in _KANJI_DIGITS:
        return _KANJI_DIGITS[tok]
    return None


def _strip_markers(s: str, markers) -> tuple[str, bool]:
    """Remove whole-word (Latin) or substring (CJK) markers; report whether any was found."""
    found = False
    for m in markers:
        if m.isascii():
            pat = rf"(?<![a-z]){re.escape(m)}(?![a-z])"
            s, k = re.subn(pat, " ", s)
        else:
            k = s.count(m)
            s = s.replace(m, " ")
        found = found or k > 0
    return s, found


def _value(num: int, unit: str, pro: bool, ama: bool, source: str) -> int:
    if unit in ("k", "kyu", "級", "级", "급"):
        if pro or not 1 <= num <= 99:
            return UNKNOWN
        return -min(num, MAX_KYU)
    if unit in ("p", "pro"):
        professional = not ama
        if ama:
            return UNKNOWN  # "5p ama" contradicts itself
    else:  # a dan
        professional = pro or (source == "gogod" and not ama)
    if not 1 <= num <= 9:
        return UNKNOWN
    return 8 + num if professional else num - 1


@functools.lru_cache(maxsize=4096)
def _parse(text: str, source: str) -> RankInfo:
    s = unicodedata.normalize("NFKC", text).strip().lower()
    uncertain = False
    if s.endswith("?"):
        s = s.rstrip("?").rstrip()
        uncertain = True
    elif s.endswith("*") and not s.endswith("**"):
        s = s[:-1].rstrip()  # IGS: an established rank
    if s in ("", "-", "--", "?"):
        return RankInfo(UNKNOWN, False)
    s, pro = _strip_markers(s, _PRO_MARKERS)
    s, ama = _strip_markers(s, _AMA_MARKERS)
    s, k = _P_PREFIX_RE.subn(" ", s)
    pro = pro or k > 0
    if pro and ama:
        return RankInfo(UNKNOWN, False)
    # Titles: CJK first (十段 is a title, not "10 dan"), then Latin words.
    title = None
    for name, v in _TITLES_CJK.items():
        if name in s:
            title = v if title is None else max(title, v)
            s = s.replace(name, " ")
    for word in _LATIN_WORD_RE.findall(s):
        if word in _TITLES_LATIN:
            v = _TITLES_LATIN[word]
            title = v if title is None else max(title, v)
            s = re.sub(rf"(?<![a-z]){re.escape(word)}(?![a-z'\-])", " ", s)
    s = re.sub(r"^(honorary|名誉|名譽)\s*", " ", s.strip()).strip(" ,;/()[]")
    if pro and s.isdigit():
        s += "p"  # "9 pro": the marker was the unit
    matches = list(_RANK_RE.finditer(s))
    leftover = _RANK_RE.sub(" ", s).strip(" ,;/()[]-")
    if len(matches) == 1 and not leftover:
        m = matches[0]
        tok, unit = m.group("num"), m.group("unit")
        num = _number(tok)
        if num is None or (tok == "初" and unit not in ("段", "단")):
            return RankInfo(UNKNOWN, False)
        # A title next to a bare dan ("Kisei 7d") names a professional.
        value = _value(num, unit, pro or (title is not None and not ama), ama, source)
    elif not matches and not leftover and title is not None and not ama:
        value = title
    else:
        value = UNKNOWN
    if value == UNKNOWN:
        return RankInfo(UNKNOWN, False)
    return RankInfo(value, uncertain)


def parse_rank_info(text: str | None, source: str = "kgs") -> RankInfo:
    """Parse ``text`` into a :class:`RankInfo` (value and KGS uncertainty). See the module table."""
    if source not in SOURCES:
        raise ValueError(f"unknown rank source {source!r}; expected one of {SOURCES}")
    if text is None or not isinstance(text, str):
        return RankInfo(UNKNOWN, False)
    return _parse(text, source)


def parse_rank(text: str | None, source: str = "kgs") -> int:
    """Parse ``text`` into the integer scale of the module table (``UNKNOWN`` when it is not a rank).

    ``source='gogod'`` reads a bare dan as professional. ``9d?`` keeps its rank (8); use
    :func:`parse_rank_info` to see the uncertainty."""
    return parse_rank_info(text, source).value


def rank_to_text(value: int) -> str:
    """``-3`` -> ``'3k'``, ``0`` -> ``'1d'``, ``17`` -> ``'9p'``, ``UNKNOWN`` -> ``'?'``; ValueError otherwise."""
    if value == UNKNOWN and not isinstance(value, bool):
        return "?"
    if not is_known(value):
        raise ValueError(f"{value!r} is not a rank on the scale {MIN}..{MAX} (or UNKNOWN={UNKNOWN})")
    if value < 0:
        return f"{-value}k"
    if value <= 8:
        return f"{value + 1}d"
    return f"{value - 8}p"
