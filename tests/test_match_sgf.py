"""Match games on disk: written with sgfmill, read back whole (result, colours, length, ending, timing)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kifunet.data_prep.planes import replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play.match_report import GameResult
from kifunet.play.match_sgf import finished_games, game_path, read_game, write_game

REPO = Path(__file__).resolve().parents[1]
PRETRAINED_MATCH = REPO / "pretrained" / "kgs_cpu_small" / "match-gnugo10"


def _write(out, index, colour=WHITE, moves=((BLACK, 40), (WHITE, 30), (BLACK, 81), (WHITE, 81))):
    res = GameResult(index=index, engine_colour=colour, winner=BLACK, result="B+3.5", moves=len(moves),
                     ended="two passes", seconds=12.34, think={"engine": 1.26, "opponent": 9.0})
    path = game_path(out, index)
    write_game(path, res, list(moves), board_size=9, komi=6.5, engine="kifunet gtp --model x",
               opponent="gnugo --mode gtp", names={"engine": "kifunet 0.1", "opponent": "GNU Go 3.8"},
               note="referee final_score: B+3.5")
    return path


def test_a_written_game_reads_back_and_replays(tmp_path):
    path = _write(tmp_path, 7)
    assert path == tmp_path / "games" / "game-0007.sgf" and not list(path.parent.glob("*.tmp"))
    g = read_game(path)
    assert (g.index, g.engine_colour, g.winner, g.result, g.moves, g.ended) == (7, WHITE, BLACK, "B+3.5", 4,
                                                                               "two passes")
    assert g.seconds == 12.3 and g.think == {"engine": 1.3, "opponent": 9.0} and g.path == str(path)
    rec = sgf_io.load_game(path)
    assert rec.moves() == [(BLACK, 40), (WHITE, 30), (BLACK, 81), (WHITE, 81)]
    assert (rec.info.black, rec.info.white, rec.info.komi, rec.info.result) == ("GNU Go 3.8", "kifunet 0.1", 6.5,
                                                                                "B+3.5")
    replay.analyse_game(rec)
    text = path.read_text()
    assert "AP[kifunet:match]" in text and "RU[Chinese]" in text and "GN[game 7]" in text
    assert "engine: kifunet gtp --model x\nopponent: gnugo --mode gtp\nengine_colour: W\n" in text
    assert "scored_by: referee final_score: B+3.5" in text


def test_finished_games_reads_only_game_files(tmp_path):
    _write(tmp_path, 0, colour=BLACK)
    _write(tmp_path, 12345)
    (tmp_path / "games" / "game-0001.sgf.tmp").write_text("(;)")  # an interrupted write
    (tmp_path / "games" / "notes.txt").write_text("x")
    assert sorted(finished_games(tmp_path)) == [0, 12345]
    assert finished_games(tmp_path / "nowhere") == {}
    with pytest.raises(ValueError, match="not a match game file"):
        read_game(tmp_path / "games" / "notes.txt")


def test_a_game_without_the_comment_reads_with_defaults(tmp_path):
    path = tmp_path / "games" / "game-0003.sgf"
    path.parent.mkdir()
    path.write_text("(;FF[4]GM[1]SZ[9]KM[7.5]RE[W+R];B[ee];W[cc])")
    g = read_game(path)
    assert (g.engine_colour, g.winner, g.result, g.moves, g.ended, g.think) == (WHITE, WHITE, "W+R", 2, "?", {})
    assert math.isnan(g.seconds)


@pytest.mark.skipif(not PRETRAINED_MATCH.is_dir(), reason="pretrained/kgs_cpu_small/match-gnugo10 is absent")
def test_the_pretrained_match_games_read_back():
    games = finished_games(PRETRAINED_MATCH)
    assert len(games) == 50 and set(range(53)) - set(games) == {0, 34, 49}
    for i, g in games.items():
        assert g.engine_colour == (BLACK if i % 2 == 0 else WHITE)
        assert g.ended in ("two passes", "resignation") and g.moves > 0
        assert set(g.think) == {"engine", "opponent"}
    g1 = games[1]
    assert (g1.result, g1.winner, g1.moves, g1.seconds) == ("B+85.5", BLACK, 324, 287.2)
