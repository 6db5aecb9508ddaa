"""data_prep/profiles.py: the profile's fields, how they are read from a record's text, and the vector's layout
(the table of docs/profiles.md, "The encoding", checked here entry by entry)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kifunet.data_prep import profiles as P
from kifunet.data_prep import ranks


def test_the_layout_table_is_the_code():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "profiles.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (\d+) \| (\S.*)$", doc.split("## The encoding")[1].split("\n## ")[0], re.M)
    offsets = [int(o) for o, _, _ in rows]
    counts = [int(c) for _, c, _ in rows]
    assert offsets == sorted(P.OFFSETS.values()) and sum(counts) == P.SIZE == 46
    assert [o + c for o, c in zip(offsets, counts)][:-1] == offsets[1:]


def test_unknown_profile_is_six_flags():
    v = P.encode(P.UNKNOWN_PROFILE)
    assert v.dtype == np.float32 and v.shape == (P.SIZE,)
    assert np.nonzero(v)[0].tolist() == [6, 13, 27, 35, 41, 45]


def test_rank_strength_and_band():
    enc = {t: P.encode(P.Profile(rank=ranks.parse_rank(t)))[:7] for t in ("20k", "1k", "1d", "4d", "5d", "9d",
                                                                          "1p", "9p")}
    assert [round(10 * enc[t][0], 2) for t in enc] == [-19, 0, 1, 4, 5, 9, 9.25, 11.25]
    assert [int(np.argmax(enc[t][1:6])) for t in enc] == [0, 1, 2, 2, 3, 3, 4, 4]
    assert all(enc[t][6] == 0 for t in enc)
    opp = P.encode(P.Profile(opponent_rank=ranks.parse_rank("7d")))
    assert opp[7] == pytest.approx(0.7) and opp[7 + 1 + 3] == 1 and opp[6] == 1 and opp[13] == 0


def test_dates():
    assert P.days_since_epoch("1970-01-01") == 0
    assert P.days_since_epoch("2017-01-31") == 17197
    assert P.days_since_epoch("2017-01-31,2017-02-01") == 17197  # several dates: the first
    assert P.days_since_epoch("2017") == P.days_since_epoch("", 2017) == P.days_since_epoch("2017-07-01")
    assert P.days_since_epoch("2017-13-40") == P.days_since_epoch("2017-07-01")  # a bad month/day: the year
    assert P.days_since_epoch("") is None and P.days_since_epoch("yesterday") is None
    v = P.encode(P.Profile(date=P.days_since_epoch("2016-03-09")))[14:28]
    years = P.days_since_epoch("2016-03-09") / 365.25
    assert v[0] == pytest.approx(math.sin(math.pi * years), abs=1e-6)  # period 2 years
    assert v[11] == pytest.approx(math.cos(2 * math.pi * years / 64), abs=1e-6)
    assert v[12] == pytest.approx((1970 + years - 2000) / 20, abs=1e-6) and v[13] == 0


@pytest.mark.parametrize("pc, ap, path, want", [
    ("The KGS Go Server at http://www.gokgs.com/", "CGoban:3", "", "kgs"),
    ("", "foxwq", "", "fox"),
    ("", "GNU Go:3.8", "archives/fox-pro-2012-2019.tar.gz:Pro/1p/1.sgf", "fox"),
    ("OGS: https://online-go.com/game/123", "", "", "ogs"),
    ("", "", "Tygem/2010/a.sgf", "tygem"),
    ("", "", "GoGoD/1995/x.sgf", "gogod"),
    ("", "", "games/a.sgf", None),
    ("", "", "blogs/dogs/logs.sgf", None),  # marks are words
    ("", "", "KGS-2017_01-19-913-.tar.gz:kgs-19-2017-01-new/a.sgf", "kgs"),
    ("", "", "foxy/a.sgf", None),
])
def test_source_of(pc, ap, path, want):
    assert P.source_of(pc, ap, path) == want


@pytest.mark.parametrize("tm, ot, want", [
    ("0", "5x15 byo-yomi", "fast"),  # 1500 s: KGS's usual
    ("60", "3x10 byo-yomi", "fast"),  # 1060 s
    ("120", "", "blitz"),
    ("300", "5x3 byo-yomi", "fast"),  # 600 s: the first second of fast
    ("299", "5x3 byo-yomi", "blitz"),
    ("1200", "3x30 byo-yomi", "normal"),  # 4200 s
    ("1800", "25/600 Canadian", "normal"),  # 1800 + 100 * 24
    ("3600", "5x30 byo-yomi", "slow"),  # 6600 s
    ("600", "5x20 byo-yomi", "normal"),  # 2600 s
    ("259200", "", "correspondence"),
    ("", "", None),
    ("", "sudden death please", None),
    ("", "0", "blitz"),  # "no overtime" alone: 0 s
])
def test_time_control_of(tm, ot, want):
    assert P.time_control_of(tm, ot) == want


def test_parse_the_command_line_form():
    p = P.parse("rank=7d, year=2010, source=KGS, time=fast, handicap=2, komi=0.5, opponent=5k")
    assert p == P.Profile(rank=8 - 2, opponent_rank=-5, date=P.days_since_epoch("2010-07-01"), source="kgs",
                          time_control="fast", handicap=2, komi=0.5)
    assert P.parse("") == P.UNKNOWN_PROFILE
    assert P.parse("date=2016-03-09").date == P.days_since_epoch("2016-03-09")
    for bad, why in (("rank=strong", "not a rank"), ("colour=b", "unknown key 'colour'"), ("rank", "key=value"),
                     ("source=igs", "source 'igs'"), ("handicap=12", "handicap 12"), ("komi=x", "komi='x'"),
                     ("year=ten", "not a year"), ("time=bullet", "time control 'bullet'")):
        with pytest.raises(ValueError, match=re.escape(why)):
            P.parse(bad)


@given(rank=st.one_of(st.none(), st.integers(ranks.MIN, ranks.MAX)),
       opp=st.one_of(st.none(), st.integers(ranks.MIN, ranks.MAX)),
       date=st.one_of(st.none(), st.integers(-30000, 60000)),
       source=st.one_of(st.none(), st.sampled_from(P.SOURCES)),
       tc=st.one_of(st.none(), st.sampled_from(P.TIME_CONTROLS)),
       handicap=st.integers(0, 9), komi=st.one_of(st.none(), st.floats(-100, 100)))
def test_every_profile_encodes_to_bounded_numbers_with_one_hot_groups(rank, opp, date, source, tc, handicap, komi):
    v = P.encode(P.Profile(rank, opp, date, source, tc, handicap, komi))
    assert np.isfinite(v).all() and np.abs(v).max() <= 11
    for off in (0, 7):  # band or unknown: exactly one
        assert v[off + 1:off + 7].sum() == 1
    assert v[28:36].sum() == 1 and v[36:42].sum() == 1
    assert (v[27] == 1) == (date is None) and (v[45] == 1) == (komi is None)


KGS_HEADER = (b"(;GM[1]FF[4]SZ[19]PW[kaler]WR[7d]PB[Whis]BR[6d]DT[2017-01-28]"
              b"PC[The KGS Go Server at http://www.gokgs.com/]KM[0.50]RE[B+Resign]RU[Japanese]TM[60]"
              b"OT[3x10 byo-yomi]HA[2];B[dp];W[pd])")


def test_profile_of_a_record():
    from kifunet.data_prep.game import BLACK, WHITE
    from kifunet.data_prep.sgf.sgf_io import load_game

    info = load_game(KGS_HEADER, path="kgs/KGS-2017_01.tar.gz:2017-01-28-8.sgf").info
    b = P.profile_of(info, BLACK)
    assert b == P.Profile(rank=5, opponent_rank=6, date=P.days_since_epoch("2017-01-28"), source="kgs",
                          time_control="fast", handicap=2, komi=info.komi)
    w = P.profile_of(info, WHITE, source="fox")  # a build's declaration wins over the path
    assert (w.rank, w.opponent_rank, w.source) == (6, 5, "fox")
    fox = load_game(b"(;GM[1]FF[4]SZ[19]DT[2017-08-30]BR[9\xe6\xae\xb5]WR[P9\xe6\xae\xb5]KM[0]HA[2]"
                    b"TM[1200]TC[3]TT[60]AP[foxwq];AB[pd][dp];W[cd])", path="Pro/9p/1.sgf").info
    assert (fox.place, fox.application, fox.periods, fox.period_time) == ("", "foxwq", "3", "60")
    assert P.profile_of(fox, WHITE) == P.Profile(rank=17, opponent_rank=8, date=P.days_since_epoch("2017-08-30"),
                                                 source="fox", time_control="slow", handicap=2, komi=fox.komi)
    bare = load_game(b"(;GM[1]SZ[19];B[dp])", path="a.sgf").info
    assert P.profile_of(bare, BLACK) == P.Profile(komi=bare.komi)  # nothing known but what KM defaults to
    with pytest.raises(ValueError, match="colour 0"):
        P.profile_of(info, 0)
