"""Rank parsing: every spelling of the module table, the round trip, and unknown staying unknown."""

from __future__ import annotations

import re
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from conftest import require_path

from kifunet.data_prep import ranks
from kifunet.data_prep.ranks import MAX, MIN, UNKNOWN, RankInfo, is_known, parse_rank, parse_rank_info, rank_to_text

# (text, expected value with source='kgs', expected value with source='gogod')
CASES = [
    # KGS forms
    ("6d", 5, 14), ("1d", 0, 9), ("9d", 8, 17), ("3k", -3, -3), ("1k", -1, -1), ("30k", -30, -30),
    ("1p", 9, 9), ("9p", 17, 17), ("9P", 17, 17), ("6D", 5, 14), (" 7d ", 6, 15),
    ("9d?", 8, 17), ("3k?", -3, -3),
    ("?", UNKNOWN, UNKNOWN), ("-", UNKNOWN, UNKNOWN), ("", UNKNOWN, UNKNOWN), (None, UNKNOWN, UNKNOWN),
    # kyu spellings, clamping
    ("3 kyu", -3, -3), ("3kyu", -3, -3), ("3-kyu", -3, -3), ("12k", -12, -12), ("35k", -30, -30),
    # dan spellings
    ("9 dan", 8, 17), ("9-dan", 8, 17), ("5 Dan", 4, 13),
    # professional spellings
    ("9 pro", 17, 17), ("9d pro", 17, 17), ("pro 9d", 17, 17), ("9 dan pro", 17, 17), ("7 dan Pro", 15, 15),
    ("3p", 11, 11), ("9 professional", 17, 17),
    # amateur markers override source='gogod'
    ("6d ama", 5, 5), ("ama 6d", 5, 5), ("6 dan amateur", 5, 5),
    # titles
    ("Meijin", 17, 17), ("Honinbo", 17, 17), ("Hon'inbo", 17, 17), ("Kisei", 17, 17), ("Judan", 17, 17),
    ("Tengen", 17, 17), ("Oza", 17, 17), ("Gosei", 17, 17), ("Honorary Honinbo", 17, 17),
    ("Jun-Meijin", 16, 16), ("Kisei 7d", 15, 15), ("9d, Meijin", 17, 17), ("Meijin 8p", 16, 16),
    # Japanese / Chinese / Korean
    ("9段", 8, 17), ("九段", 8, 17), ("初段", 0, 9), ("二段", 1, 10), ("６段", 5, 14), ("5級", -5, -5),
    ("5级", -5, -5), ("二十級", -20, -20), ("十二級", -12, -12), ("5급", -5, -5), ("9단", 8, 17),
    ("职业九段", 17, 17), ("職業九段", 17, 17), ("プロ9段", 17, 17), ("프로9단", 17, 17),
    ("アマ6段", 5, 5), ("业余5段", 4, 4), ("아마 5단", 4, 4),
    ("名人", 17, 17), ("本因坊", 17, 17), ("棋聖", 17, 17), ("棋圣", 17, 17), ("十段", 17, 17), ("天元", 17, 17),
    ("王座", 17, 17), ("碁聖", 17, 17), ("名誉本因坊", 17, 17), ("準名人", 16, 16), ("국수", 17, 17),
    ("Mingren", 17, 17), ("Kuksu", 17, 17), ("国手", 17, 17), ("國手", 17, 17), ("명인", 17, 17), ("99k", -30, -30),
]

# The spellings of other servers (issue 13, item 8). Fox: a leading P marks a professional; a bare 段 is Fox's
# amateur grade (9段 is its top amateur rank); 级 is kyu.
SERVER_CASES = [
    # Fox (every spelling of the Fox archive is also checked in test_fox_archive_rank_spellings)
    ("P9段", 17, 17), ("P1段", 9, 9), ("P5段", 13, 13), ("P9", 17, 17), ("P1", 9, 9), ("p9", 17, 17),
    ("P9D", 17, 17), ("P 9段", 17, 17), ("P九段", 17, 17), ("Ｐ９段", 17, 17), ("9段", 8, 17), ("18级", -18, -18),
    ("1级", -1, -1), ("职业九段", 17, 17), ("P9段?", 17, 17),
    # Tygem
    ("9단", 8, 17), ("9D", 8, 17), ("18급", -18, -18), ("18K", -18, -18), ("아마5단", 4, 4), ("아마 5단", 4, 4),
    ("프로9단", 17, 17), ("프로 9단", 17, 17), ("9단 프로", 17, 17), ("9P", 17, 17), ("職業九段", 17, 17),
    # OGS
    ("5d", 4, 13), ("12k", -12, -12), ("30k", -30, -30), ("1p", 9, 9), ("9p", 17, 17), ("1d", 0, 9),
    ("-", UNKNOWN, UNKNOWN), ("?", UNKNOWN, UNKNOWN),
    # IGS: '*' marks an established rank
    ("3d*", 2, 11), ("5k*", -5, -5), ("1p*", 9, 9), ("NR", UNKNOWN, UNKNOWN),
]

NOT_RANKS = [
    "", " ", "?", "??", "-", "--", "abc", "9", "d", "k", "p", "0d", "0k", "0p", "10d", "10p", "99d", "1000k",
    "9x", "1d2d", "9d 8d", "9d9d", "Insei", "ama", "pro", "amateur", "5p ama", "7d pro ama", "9d pro?ama",
    "初級", "段", "十一段", "Propane", "dan", "strong", "9d+", "[9d]x", "1,5k",
    "P10段", "P0", "P3k", "P9 ama", "P9段 アマ", "pp9", "9P9", "P", "NR", "5k**", "*", "P段",
]


@pytest.mark.parametrize("text,kgs,gogod", CASES + SERVER_CASES)
def test_parse_table(text, kgs, gogod):
    assert parse_rank(text) == kgs
    assert parse_rank(text, source="kgs") == kgs
    assert parse_rank(text, source="gogod") == gogod


@pytest.mark.parametrize("text", NOT_RANKS)
@pytest.mark.parametrize("source", ranks.SOURCES)
def test_unknown_never_becomes_a_rank(text, source):
    assert parse_rank(text, source) == UNKNOWN
    assert parse_rank_info(text, source) == RankInfo(UNKNOWN, False)


def test_non_strings_are_unknown():
    for value in (None, 9, 9.0, b"9d", ["9d"]):
        assert parse_rank(value) == UNKNOWN


def test_uncertainty_is_kept_apart_from_the_value():
    assert parse_rank_info("9d?") == RankInfo(8, True)
    assert parse_rank_info("9d") == RankInfo(8, False)
    assert parse_rank_info("2k ?") == RankInfo(-2, True)
    assert parse_rank_info("9d?", "gogod") == RankInfo(17, True)
    assert parse_rank_info("?") == RankInfo(UNKNOWN, False)  # '?' alone is unknown, not "uncertain"
    assert parse_rank_info("9d?").known and not parse_rank_info("?").known


def test_scale_and_round_trip():
    assert (UNKNOWN, MIN, MAX) == (-128, -30, 17)
    texts = {v: rank_to_text(v) for v in range(MIN, MAX + 1)}
    assert texts[-30] == "30k" and texts[-1] == "1k" and texts[0] == "1d" and texts[8] == "9d"
    assert texts[9] == "1p" and texts[17] == "9p"
    assert len(set(texts.values())) == MAX - MIN + 1
    for v, t in texts.items():
        assert parse_rank(t) == v, (v, t)
        assert is_known(v)
    assert rank_to_text(UNKNOWN) == "?" and parse_rank(rank_to_text(UNKNOWN)) == UNKNOWN
    # under source='gogod' the explicit p / k spellings still round-trip
    for v in list(range(MIN, 0)) + list(range(9, MAX + 1)):
        assert parse_rank(rank_to_text(v), "gogod") == v


def test_order_follows_strength():
    order = ["30k", "10k", "1k", "1d", "9d", "1p", "9p"]
    values = [parse_rank(t) for t in order]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert UNKNOWN < MIN


@pytest.mark.parametrize("bad", [MIN - 1, MAX + 1, 100, -127, True, 3.0, "5"])
def test_rank_to_text_rejects_values_off_the_scale(bad):
    with pytest.raises(ValueError):
        rank_to_text(bad)
    assert not is_known(bad)


def test_bad_source_is_an_error():
    with pytest.raises(ValueError, match="unknown rank source"):
        parse_rank("9d", source="igs")


# ---------------------------------------------------------------------------------------------- real data

FOX = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fox" / "fox-pro-2012-2019.tar.gz"

# Every BR/WR spelling of the Fox archive (10,348 games) with how many times it occurs and its value.
FOX_SPELLINGS = {
    "9段": (8663, 8), "P9段": (7487, 17), "P7段": (1064, 15), "P3段": (594, 11), "P6段": (538, 14),
    "P8段": (495, 16), "P1段": (437, 9), "P5段": (422, 13), "P4段": (409, 12), "P2段": (326, 10),
    "3段": (128, 2), "8段": (32, 7), "1段": (21, 0), "2段": (15, 1), "4段": (14, 3), "6段": (12, 5),
    "18级": (9, -18), "5段": (7, 4), "7段": (7, 6), "1级": (3, -1), "9级": (3, -9), "16级": (3, -16),
    "7级": (2, -7), "15级": (1, -15), "17级": (1, -17), "6级": (1, -6), "10级": (1, -10), "2级": (1, -2),
}


def test_fox_archive_rank_spellings():
    """Every rank spelling in the Fox archive parses to a rank (issue 13: ``P9段`` was unknown)."""
    require_path(FOX, "the Fox archive")
    counts: Counter = Counter()
    with tarfile.open(FOX, "r|gz") as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".sgf"):
                raw = tf.extractfile(m).read()
                counts.update(v.decode("utf-8", "replace") for v in re.findall(rb"(?<![A-Z])[BW]R\[([^\]]*)\]", raw))
    assert dict(counts) == {text: n for text, (n, _) in FOX_SPELLINGS.items()}
    for text, (_, value) in FOX_SPELLINGS.items():
        assert parse_rank(text) == value, text
