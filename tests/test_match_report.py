"""Match reports: the Wilson interval, summaries of games (jigo counts half, forfeits grouped), the tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import match_report
from kifunet.play.match import MatchConfig
from kifunet.play.match_report import GameResult, format_rank_table, format_summary, summarise
from kifunet.play.match_sgf import finished_games

REPO = Path(__file__).resolve().parents[1]
PRETRAINED_MATCH = REPO / "pretrained" / "kgs_cpu_small" / "match-gnugo10"


def test_wilson_interval_matches_known_values():
    lo, hi = match_report.wilson_interval(5, 10)
    assert abs(lo - 0.2366) < 1e-4 and abs(hi - 0.7634) < 1e-4
    lo, hi = match_report.wilson_interval(0, 10)
    assert lo == 0 and abs(hi - 0.2775) < 1e-4
    lo, hi = match_report.wilson_interval(45, 50)
    assert abs(lo - 0.7864) < 1e-4 and abs(hi - 0.9565) < 1e-4
    assert match_report.wilson_interval(0, 0) == (0.0, 1.0)


def _game(i, winner, ended="two passes", moves=100, seconds=10.0):
    ecol = BLACK if i % 2 == 0 else WHITE
    result = "0" if winner is None else ("B" if winner == BLACK else "W") + "+1.5"
    return GameResult(index=i, engine_colour=ecol, winner=winner, result=result, moves=moves, ended=ended,
                      seconds=seconds)


def test_summary_counts_jigo_half_groups_forfeits_and_ignores_games_beyond_the_request():
    games = {0: _game(0, BLACK), 1: _game(1, None), 2: _game(2, WHITE, ended="forfeit: B played illegal move 'A1'"),
             3: _game(3, BLACK, ended="forfeit: W played unreadable move 'x'", seconds=float("nan")),
             5: _game(5, WHITE, moves=300)}
    s = summarise(games, requested=5, out_dir="m", failed=[4])
    assert s.games == 4 and s.engine_wins == 1.5 and s.win_rate == 1.5 / 4
    assert s.as_black == (1.0, 2) and s.as_white == (0.5, 2)
    assert s.ended == {"two passes": 2, "forfeit": 2}
    assert s.mean_moves == 100 and s.mean_seconds == 10.0  # NaN seconds are left out
    assert (s.ci_low, s.ci_high) == match_report.wilson_interval(1.5, 4)
    assert s.failed == [4] and s.requested == 5 and json.loads(json.dumps(s.to_json()))["games"] == 4
    table = format_summary(s)
    # Wilson by hand: p = 0.375, n = 4, z = 1.96: centre 0.4362, half-width 0.3443
    assert table.splitlines()[2] == ("| 4 | 1.5 | 37.5% | 9.2-78.1% | 1/2 | 0.5/2 | 100 | 10.0 | "
                                     "forfeit 2, two passes 2 |")
    assert "missing games (failed or not yet played): [4]" in table
    empty = summarise({}, requested=2, out_dir="m", failed=[0, 1])
    assert empty.games == 0 and math.isnan(empty.win_rate)
    assert "| 0 | 0 | - | - | 0/0 | 0/0 | - | - | - |" in format_summary(empty)  # no nan in the table


def test_tables_name_the_settings():
    cfg = MatchConfig(engine="kifunet gtp --model x", opponent="gnugo --mode gtp --level 0", board_size=9, komi=6.5,
                      referee=None)
    s = summarise({0: _game(0, BLACK)}, requested=1, out_dir="m")
    lines = format_summary(s, cfg).splitlines()
    assert lines[:3] == ["engine:   kifunet gtp --model x", "opponent: gnugo --mode gtp --level 0",
                         "9x9, komi 6.5, move cap 243, referee: Tromp-Taylor"]
    rank = format_rank_table({"1d": s, "9d": s}, cfg).splitlines()
    assert rank[0] == "engine:   kifunet gtp --model x --rank R"
    assert rank[3].startswith("| rank | games |") and rank[5].startswith("| 1d | 1 | 1 | 100.0% |")
    assert format_summary(s).startswith("| games |")  # no settings without a config


#: the kept matches of the ingredient rows (issue 51: net against net from held-out openings)
KEPT_MATCHES = sorted((REPO / "benchmarks" / "results" / "matches").glob("*/results.json"))


@pytest.mark.parametrize("results", KEPT_MATCHES, ids=lambda p: p.parent.name)
def test_each_kept_match_reads_back_to_its_results(results):
    """The kept games of each kept match give back its results.json."""
    _check_reads_back(results.parent)


@pytest.mark.skipif(not PRETRAINED_MATCH.is_dir(), reason="pretrained/kgs_cpu_small/match-gnugo10 is absent")
def test_the_pretrained_match_reads_back_to_its_results():
    """The 50 committed games against GNU Go level 10 give back the committed results.json."""
    s = _check_reads_back(PRETRAINED_MATCH)
    assert "| 50 | 6 | 12.0% | 5.6-23.8% | 3/25 | 3/25 | 303 |" in format_summary(s)


def _check_reads_back(match_dir: Path):
    saved = json.loads((match_dir / "results.json").read_text())
    openings = saved.pop("openings", None)  # the match's openings (kifunet match --openings), not a game figure
    if openings is not None:
        assert openings["source"] and (match_dir / "openings.json").is_file()
    games = finished_games(match_dir)
    s = summarise(games, saved["requested"], saved["out_dir"],
                  failed=[i for i in range(saved["requested"]) if i not in games])
    got = s.to_json()
    # seconds are stored to 0.1 s in the SGFs
    assert abs(got.pop("mean_seconds") - saved.pop("mean_seconds")) < 0.05
    assert got == {**saved, "as_black": tuple(saved["as_black"]), "as_white": tuple(saved["as_white"])}
    return s
