"""Game and move filters, presets and config files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kifunet.data_prep.building import filters
from kifunet.data_prep.building.filters import Filters
from kifunet.data_prep.game import GameInfo, GameRecord
from kifunet.data_prep.ranks import UNKNOWN
from kifunet.data_prep.results import parse_result


def _rec(size=19, moves=10, br=5, wr=5, ha=0, date="2015-03-04", result="B+R"):
    r = parse_result(result)
    info = GameInfo(size=size, black_rank=br, white_rank=wr, handicap=ha, date=date,
                    year=int(date[:4]) if date[:4].isdigit() else None, result=result, result_kind=r.kind,
                    winner=r.winner, margin=r.margin)
    mv = [(1 + i % 2, i) for i in range(moves)]
    return GameRecord.from_moves(size, mv, info=info)


def test_rank_values():
    assert filters.rank_value("6d") == 5 and filters.rank_value("7d") == 6
    assert filters.rank_value("3k") == -3 and filters.rank_value("1p") == 9
    assert filters.rank_value(None) is None and filters.rank_value(4) == 4
    with pytest.raises(ValueError):
        filters.rank_value("strong")


@pytest.mark.parametrize("br,wr,expect", [
    ("6d", "6d", None), ("7d", "1k", None), ("1k", "7d", None), ("6d", "5d", "game_rank"),
    ("6d", None, "game_rank"), ("9p", None, None), (None, None, "game_rank"), ("5d", "5d", "game_rank"),
])
def test_gonn_game_rank_rule(br, wr, expect):
    f = filters.filters_from_options(filters.resolve(preset="gonn-kgs"))
    val = (lambda t: UNKNOWN if t is None else filters.rank_value(t))
    assert f.game_reason(_rec(br=val(br), wr=val(wr), date="2010-01-01")) == expect


def test_one_sided_rank_rules():
    both = Filters(min_both_rank=5)
    assert both.game_reason(_rec(br=5, wr=8)) is None
    assert both.game_reason(_rec(br=4, wr=8)) == "game_rank"
    either = Filters(min_either_rank=6)
    assert either.game_reason(_rec(br=6, wr=-20)) is None
    assert either.game_reason(_rec(br=5, wr=5)) == "game_rank"
    assert Filters().game_reason(_rec(br=UNKNOWN, wr=UNKNOWN)) is None  # no rule: ranks not needed


def test_game_reason_order_and_each_filter():
    f = Filters(board_size=19, no_handicap=True, min_both_rank=5, date_from="2001-00-00",
                date_to="2014-99-99", min_moves=20)
    assert f.game_reason(_rec(size=9, ha=4, br=0)) == "board_size"  # first failing filter wins
    assert f.game_reason(_rec(ha=2, br=0)) == "handicap"
    assert f.game_reason(_rec(ha=1, br=0, moves=30, date="2010-05-05")) == "game_rank"  # HA[1]: no handicap
    assert f.game_reason(_rec(moves=30, date="")) == "no_date"
    assert f.game_reason(_rec(moves=30, date="2015-01-01")) == "date_range"
    assert f.game_reason(_rec(moves=30, date="2000-12-31")) == "date_range"
    assert f.game_reason(_rec(moves=19, date="2014-12-31", result="?")) == "too_short"
    assert f.game_reason(_rec(moves=20, date="2001-01-01")) is None
    assert f.game_reason(_rec(moves=20, date="2001-01-01", result="?")) is None  # result filters off by default
    f.result, f.ended = "known", ("score",)
    assert f.game_reason(_rec(moves=19, date="2014-12-31", result="?")) == "too_short"
    assert f.game_reason(_rec(moves=20, date="2001-01-01", result="Void")) == "result_unknown"
    assert f.game_reason(_rec(moves=20, date="2001-01-01", result="B+R")) == "ended_other"
    assert f.game_reason(_rec(moves=20, date="2001-01-01", result="W+2.5")) is None
    assert filters.GAME_REASONS.index("too_short") + 1 == filters.GAME_REASONS.index("result_unknown") == \
        filters.GAME_REASONS.index("ended_other") - 1


def test_date_bounds_and_game_dates():
    assert filters.parse_date_bound("2015", upper=False) == "2015-00-00"
    assert filters.parse_date_bound("2015", upper=True) == "2015-99-99"
    assert filters.parse_date_bound("2015-06", upper=True) == "2015-06-99"
    assert filters.parse_date_bound("2015-6-3", upper=False) == "2015-06-03"
    with pytest.raises(ValueError):
        filters.parse_date_bound("June 2015", upper=False)
    assert filters.game_date(GameInfo(date="2017-01-28")) == "2017-01-28"
    assert filters.game_date(GameInfo(date="2017-01-28,29")) == "2017-01-28"
    assert filters.game_date(GameInfo(date="1999")) == "1999-00-00"
    assert filters.game_date(GameInfo(date="", year=2003)) == "2003-00-00"
    assert filters.game_date(GameInfo(date="unknown")) is None


@pytest.mark.parametrize("text, why", [("2015-13", "month 13 is not 1..12"), ("2015-00", "month 0 is not 1..12"),
                                       ("2015-02-30", "February 2015 has days 1..28"),
                                       ("2015-02-29", "February 2015 has days 1..28"),
                                       ("2015-04-31", "April 2015 has days 1..30"),
                                       ("2015-01-00", "January 2015 has days 1..31")])
def test_impossible_dates_are_refused_in_one_line(text, why, tmp_path, capsys):
    """Issue 48, item 11: a month or day that does not exist was compared as a string and accepted; each place a
    build takes a date (``--date-from``, ``--date-to``, a date split) refuses it, exit 2, naming it."""
    from kifunet.cli import main

    with pytest.raises(ValueError, match=why):
        filters.parse_date_bound(text, upper=False)
    for opt in (["--date-from", text], ["--date-to", text], ["--split", f"train:2000..{text}"]):
        rc = main(["build", str(tmp_path / "none.sgf"), "--out", str(tmp_path / "ds"), "--no-progress", *opt])
        err = capsys.readouterr().err
        assert rc == 2 and err == f"kifunet build: error: not a date: {text!r} ({why})\n", err
        assert not (tmp_path / "ds").exists()
    assert filters.parse_date_bound("2016-02-29", upper=True) == "2016-02-29"  # a leap day exists


def test_move_reasons_first_reason_counts():
    f = Filters(skip_first=2, min_rank=5, min_opponent_rank=3)
    target = np.array([361, 10, 361, 20, 30, 40], np.int16)
    move_number = np.array([1, 2, 3, 4, 5, 6], np.int16)
    pr = np.array([9, 9, 9, 4, 6, 6], np.int8)
    orank = np.array([9, 9, 9, 9, 2, UNKNOWN], np.int8)
    why = f.move_reasons(target, move_number, pr, orank, 361)
    names = ["kept"] + list(filters.MOVE_REASONS)
    assert [names[i] for i in why] == ["pass", "skip_first", "pass", "min_rank", "min_opponent_rank",
                                       "min_opponent_rank"]
    keep_passes = Filters(include_passes=True)
    assert keep_passes.move_reasons(target, move_number, pr, orank, 361).tolist() == [0] * 6


def test_unknown_rank_is_below_every_threshold():
    f = Filters(min_rank=-30)
    why = f.move_reasons(np.array([1, 2]), np.array([1, 2]), np.array([UNKNOWN, -30], np.int8),
                         np.array([0, 0], np.int8), 361)
    assert why.tolist() == [1 + filters.MOVE_REASONS.index("min_rank"), 0]


def test_preset_config_flag_precedence(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('preset = "gonn-kgs"\nmin-rank = "5d"\nmin_moves = 30\n')
    opts = filters.resolve(config=filters.load_config_file(str(cfg)), overrides={"min_moves": 50, "skip_first": None})
    f = filters.filters_from_options(opts)
    assert opts["preset"] == "gonn-kgs"
    assert f.min_rank == 4  # config beats preset
    assert f.min_moves == 50  # flag beats config
    assert f.no_handicap and f.min_both_rank == 5 and f.min_either_rank == 6  # preset
    assert opts["splits"] == ["train:2000-2014", "test:2015"]
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"no_handicap": False, "board_size": 9}))
    f2 = filters.filters_from_options(filters.resolve(preset="gonn-kgs", config=filters.load_config_file(str(j))))
    assert not f2.no_handicap and f2.board_size == 9
    t = tmp_path / "r.toml"
    t.write_text('result = "known"\nended = ["score", "resign"]\n')
    f3 = filters.filters_from_options(filters.resolve(config=filters.load_config_file(str(t)),
                                                      overrides={"ended": "time"}))
    assert f3.result == "known" and f3.ended == ("time",)  # the flag beats the file
    assert filters.filters_from_options(filters.load_config_file(str(t))).ended == ("resign", "score")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"min_rnak": "6d"}))
    with pytest.raises(ValueError, match="min_rnak"):
        filters.load_config_file(str(bad))
    with pytest.raises(ValueError, match="unknown preset"):
        filters.resolve(preset="nope")


def test_to_json_writes_ranks_as_text():
    d = filters.filters_from_options(filters.resolve(preset="gonn-kgs")).to_json()
    assert d["min_rank"] == "6d" and d["min_both_rank"] == "6d" and d["min_either_rank"] == "7d"
    assert d["no_handicap"] is True and d["dedupe"] is True and d["include_passes"] is False


FOX_GAMES = {  # Fox records as the server writes them (ranks P9段 / 9段, komi in hundredths), 19x19
    "a_pro_pro.sgf": "DT[2017-11-12]PB[A]PW[B]BR[P9段]WR[P7段]KM[650]HA[0]RU[Japanese]RE[B+R]",
    "b_ama_pro.sgf": "DT[2016-03-01]PB[C]PW[D]BR[9段]WR[P9段]KM[0]HA[0]RU[Japanese]RE[W+R]",
    "c_chinese.sgf": "DT[2015-05-05]PB[E]PW[F]BR[P5段]WR[P3段]KM[375]HA[0]RU[Chinese]RE[B+0.75]",
    "d_handicap.sgf": "DT[2017-01-01]PB[G]PW[H]BR[9段]WR[P9段]KM[0]HA[2]RU[Japanese]RE[W+R]AB[pd][dp]",
    "e_no_pro.sgf": "DT[2017-01-02]PB[I]PW[J]BR[9段]WR[8段]KM[650]HA[0]RU[Japanese]RE[B+R]",
    "f_undated.sgf": "PB[K]PW[L]BR[P9段]WR[P9段]KM[750]HA[0]RU[Japanese]RE[B+R]",
    "g_copy_of_a.sgf": "DT[2017-11-12]PB[A]PW[B]BR[P9段]WR[P7段]KM[650]HA[0]RU[Japanese]RE[B+R]AP[foxwq]",
}
FOX_MOVES = {"d_handicap.sgf": ";W[dd];B[pq];W[qc]"}


def test_fox_pro_preset_builds_the_pro_moves_of_even_games(tmp_path):
    """``--preset fox-pro`` on Fox-style records: even games with a professional, only the pros' moves, every
    dated game to ``test``; komi stored in points (KM[650] -> 6.5, KM[375] under Chinese rules -> 7.5)."""
    from kifunet.cli import main
    from kifunet.data_prep.datasets.shards import read_games_table

    src = tmp_path / "fox"
    src.mkdir()
    for name, props in FOX_GAMES.items():
        moves = FOX_MOVES.get(name, ";B[pd];W[dd];B[pq];W[dp];B[fc];W[cf]")
        (src / name).write_bytes(f"(;GM[1]FF[4]SZ[19]{props}{moves})".encode("utf-8"))
    out = tmp_path / "out"
    assert main(["build", str(src), "--out", str(out), "--preset", "fox-pro", "--features", "maddison",
                 "--workers", "0", "--no-progress"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    c = m["counts"]
    assert (c["seen"], c["used"]) == (7, 3)
    assert c["filtered"] == {"handicap": 1, "game_rank": 1, "no_date": 1, "duplicate": 1}
    # pro-pro 6 + Chinese pro-pro 6 + the pro's 3 of the amateur-pro game; the amateur's 3 dropped
    assert c["positions"]["kept"] == 15 and c["positions"]["filtered"] == {"min_rank": 3}
    assert list(m["splits"]) == ["test"] and m["splits"]["test"]["positions"] == 15
    g = read_games_table(str(out / "test" / "games.h5"))
    by_black = dict(zip(g["black"], g["komi"].tolist()))
    assert by_black == {"A": 6.5, "C": 0.0, "E": 7.5}
    assert sorted(g["black_rank"].tolist()) == [8, 13, 17]  # 9段 = 9d (8), P5段 = 5p (13), P9段 = 9p (17)
