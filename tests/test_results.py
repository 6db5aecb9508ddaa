"""Game results (data_prep/results.py): every RE spelling of docs/building.md's table, the outcome of a position, the
result filters; and the result kinds of a real KGS archive."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from conftest import KGS_2017_01, require_path

from kifunet.data_prep.building import filters
from kifunet.data_prep import results
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.game import BLACK, EMPTY, WHITE, GameInfo, GameRecord
from kifunet.data_prep.results import OUTCOME_UNKNOWN, parse_result

B, W, N = BLACK, WHITE, EMPTY
NAN = math.nan

# every form of docs/building.md's table (Game results and value targets): RE text -> (kind, winner, margin)
TABLE = [
    # resignation
    ("B+R", "resign", B, NAN), ("W+R", "resign", W, NAN), ("B+Resign", "resign", B, NAN),
    ("W+Resign", "resign", W, NAN), ("b+r", "resign", B, NAN), ("w+RESIGN", "resign", W, NAN),
    # counted: a number > 0 (digits and one decimal point)
    ("B+12.5", "score", B, 12.5), ("W+0.5", "score", W, 0.5), ("B+39.50", "score", B, 39.5), ("W+7", "score", W, 7.0),
    ("B+.5", "score", B, 0.5), ("W+8194.00", "score", W, 8194.0), ("B+0.02", "score", B, 0.02),
    ("w+146.5", "score", W, 146.5), ("B+3.", "score", B, 3.0),
    # time, forfeit
    ("B+T", "time", B, NAN), ("W+Time", "time", W, NAN), ("w+t", "time", W, NAN),
    ("B+F", "forfeit", B, NAN), ("W+Forfeit", "forfeit", W, NAN), ("b+forfeit", "forfeit", B, NAN),
    # a winner, how not said: SGF's B+, and a zero score with a winner (Fox)
    ("B+", "win", B, NAN), ("W+", "win", W, NAN), ("B+0", "win", B, NAN), ("W+0.0", "win", W, NAN),
    ("B+0.0", "win", B, NAN),
    # draws
    ("0", "draw", N, NAN), ("0.0", "draw", N, NAN), ("Draw", "draw", N, NAN), ("draw", "draw", N, NAN),
    ("Jigo", "draw", N, NAN), ("JIGO", "draw", N, NAN), ("D", "draw", N, NAN),
    # no result
    ("Void", "void", N, NAN), ("void", "void", N, NAN),
    # unknown: SGF's ?, missing or empty RE, and everything not SGF
    ("?", "unknown", N, NAN), ("", "unknown", N, NAN), (None, "unknown", N, NAN), ("  ", "unknown", N, NAN),
    ("0.5", "unknown", N, NAN), ("B+R.", "unknown", N, NAN), ("B+1/2", "unknown", N, NAN),
    ("B+ 3", "unknown", N, NAN), ("B+-3", "unknown", N, NAN), ("B+3.5 points", "unknown", N, NAN),
    ("B+1e3", "unknown", N, NAN), ("W+inf", "unknown", N, NAN), ("W+nan", "unknown", N, NAN),
    ("Black resigns", "unknown", N, NAN), ("黑中盘胜", "unknown", N, NAN), ("白胜", "unknown", N, NAN),
    ("B+" + "9" * 40, "unknown", N, NAN), ("B++R", "unknown", N, NAN), ("X+R", "unknown", N, NAN),
    ("B-R", "unknown", N, NAN), ("Resign", "unknown", N, NAN), ("B+Res", "unknown", N, NAN),
]


@pytest.mark.parametrize("text,kind,winner,margin", TABLE)
def test_every_spelling_of_the_table(text, kind, winner, margin):
    r = parse_result(text)
    assert (r.kind, r.winner) == (kind, winner)
    assert math.isnan(r.margin) if math.isnan(margin) else r.margin == margin
    assert math.isnan(r.margin) == (kind != "score")  # a margin only for a counted game
    assert r.code == results.KINDS.index(kind)


def test_leading_and_trailing_space_as_sgf_io_strips_it():
    rec = sgf_io.load_game(b"(;GM[1]SZ[9]RE[ W+Resign ];B[aa])")
    i = rec.info
    assert (i.result, i.result_kind, i.winner, math.isnan(i.margin)) == ("W+Resign", "resign", WHITE, True)
    i = sgf_io.load_game(b"(;GM[1]SZ[9]RE[B+3.5];B[aa])").info
    assert (i.result_kind, i.winner, i.margin) == ("score", BLACK, 3.5)
    i = sgf_io.load_game(b"(;GM[1]SZ[9];B[aa])").info
    assert (i.result, i.result_kind, i.winner) == ("", "unknown", EMPTY) and math.isnan(i.margin)


def test_what_the_scorer_writes_reads_back():
    """RE as kifunet's own scorer writes it for its matches (``data_prep/rules/scoring.format_score``)."""
    from kifunet.data_prep.rules import scoring

    for score, kind, winner in ((3.5, "score", B), (-0.5, "score", W), (-12.0, "score", W), (0.0, "draw", N)):
        r = parse_result(scoring.format_score(score))
        assert (r.kind, r.winner) == (kind, winner)
        if kind == "score":
            assert r.margin == abs(score)


def test_codes_and_kind_names():
    assert results.KINDS == ("unknown", "resign", "score", "time", "forfeit", "win", "draw", "void")
    assert results.KIND_CODES["unknown"] == 0  # a missing games-table value reads as unknown
    assert set(results.WIN_KINDS) | set(results.UNKNOWN_KINDS) | {"draw"} == set(results.KINDS)
    assert results.kind_names("score, resign,score") == ("resign", "score")  # KINDS order, each once
    assert results.kind_names(["void", "win"]) == ("win", "void")
    assert results.kind_names("resign,") == ("resign",)
    for bad in ("resin", "", ",", []):
        with pytest.raises(ValueError, match="kind"):
            results.kind_names(bad)


@pytest.mark.parametrize("text,black,white", [("B+R", 1, -1), ("W+12.5", -1, 1), ("B+", 1, -1), ("W+T", -1, 1),
                                              ("0", 0, 0), ("Void", OUTCOME_UNKNOWN, OUTCOME_UNKNOWN),
                                              ("?", OUTCOME_UNKNOWN, OUTCOME_UNKNOWN)])
def test_outcome_from_the_side_of_the_player_to_move(text, black, white):
    r = parse_result(text)
    got = results.outcome(r.kind, r.winner, np.array([BLACK, WHITE, WHITE, BLACK], np.int8))
    assert got.dtype == np.int8 and got.tolist() == [black, white, white, black]
    assert results.outcome(r.kind, r.winner, np.zeros(0, np.int8)).shape == (0,)


def _record(re_text: str | None) -> GameRecord:
    r = parse_result(re_text)
    info = GameInfo(size=9, result=re_text or "", result_kind=r.kind, winner=r.winner, margin=r.margin)
    return GameRecord.from_moves(9, [(BLACK, 0), (WHITE, 1)], info=info)


def test_result_filters_in_order():
    known = filters.Filters(board_size=9, result="known")
    assert [known.game_reason(_record(t)) for t in ("B+R", "0", "B+", "Void", "?", None)] == [
        None, None, None, "result_unknown", "result_unknown", "result_unknown"]
    ended = filters.Filters(board_size=9, ended="resign,score")
    assert ended.ended == ("resign", "score")
    assert [ended.game_reason(_record(t)) for t in ("W+R", "B+0.5", "B+T", "0", "?")] == [
        None, None, "ended_other", "ended_other", "ended_other"]
    both = filters.Filters(board_size=9, result="known", ended=["time"], min_moves=3)
    assert both.game_reason(_record("Void")) == "too_short"  # earlier filters first, then result, then ended
    both.min_moves = 0
    assert both.game_reason(_record("Void")) == "result_unknown" and both.game_reason(_record("B+R")) == "ended_other"
    assert filters.Filters(board_size=9).game_reason(_record(None)) is None  # by default every result is kept
    with pytest.raises(ValueError, match="result must be"):
        filters.Filters(result="yes")
    f = filters.filters_from_options({"result": "known", "ended": "score,resign", "board_size": 9})
    assert (f.result, f.ended) == ("known", ("resign", "score"))
    assert f.to_json()["ended"] == ("resign", "score") and filters.Filters().to_json()["ended"] is None
    with pytest.raises(ValueError, match="ended: unknown result kind 'timeout'"):
        filters.filters_from_options({"ended": ["timeout"]})


def test_the_command_line_options_name_every_choice_and_kind():
    import argparse

    from kifunet.commands.dataset_options import add_dataset_options, dataset_options

    p = argparse.ArgumentParser()
    add_dataset_options(p)
    acts = {a.dest: a for a in p._actions}
    assert tuple(acts["result"].choices) == filters.RESULT_CHOICES
    assert all(k in acts["ended"].help for k in results.KINDS)
    f = dataset_options(p.parse_args(["--result", "known", "--ended", "time,resign"])).filters
    assert (f.result, f.ended) == ("known", ("resign", "time"))


@pytest.mark.slow
def test_kgs_2017_01_result_kinds():
    """The result kinds of one real archive (docs/building.md gives all nine KGS archives and Fox's)."""
    from kifunet.data_prep.sgf import inputs

    require_path(KGS_2017_01, "the KGS 2017-01 archive")
    kinds, spellings = Counter(), Counter()
    for src in inputs.iter_sources([str(KGS_2017_01)]):
        info = sgf_io.load_game(src.data, path=src.path).info
        kinds[info.result_kind] += 1
        if info.result_kind != "score":
            spellings[info.result] += 1
    assert kinds == {"resign": 457, "score": 149, "time": 120, "unknown": 6, "forfeit": 1}
    assert spellings == {"B+Resign": 181, "W+Resign": 276, "B+Time": 49, "W+Time": 71, "": 6, "W+Forfeit": 1}
