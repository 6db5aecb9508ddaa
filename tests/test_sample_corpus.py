"""The committed sample corpus (samples/gnugo/*.sgf) and the script that makes it.

The corpus is what the README's CPU quickstart and the tests without ../shared run on, so it must parse,
be 19x19, be long enough, straddle the 2015 date boundary, contain handicap and "strong" (nominal rank)
games, and replay legally on sgfmill's own board.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import load_script, require_gnugo
from sgfmill import boards, sgf

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples" / "gnugo"
SCRIPT = REPO / "scripts" / "make_sample_corpus.py"

MIN_GAMES = 16  # the committed corpus (samples/README.md); regenerate bigger, never smaller
MIN_MOVES = 50
MAX_TOTAL_BYTES = 400_000  # "a few hundred KB at most"
DATE_BOUNDARY = "2015-01-01"

FILES = sorted(SAMPLES.glob("*.sgf"))


@pytest.fixture(scope="module")
def games() -> dict[str, sgf.Sgf_game]:
    return {p.name: sgf.Sgf_game.from_bytes(p.read_bytes()) for p in FILES}


def moves_of(game: sgf.Sgf_game) -> list[tuple[str, tuple[int, int] | None]]:
    out = []
    for node in game.get_main_sequence()[1:]:
        colour, point = node.get_move()
        assert colour is not None, "a non-root node without a move"
        out.append((colour, point))
    return out


def test_corpus_present_and_small():
    assert len(FILES) >= MIN_GAMES, f"{SAMPLES} holds {len(FILES)} games"
    total = sum(p.stat().st_size for p in FILES)
    assert total <= MAX_TOTAL_BYTES, f"corpus is {total} bytes"
    # only SGF files in the corpus folder, so `kifunet build samples/gnugo` sees nothing else
    assert sorted(p for p in SAMPLES.iterdir()) == FILES


def test_every_file_parses_19x19_and_long_enough(games):
    for name, game in games.items():
        assert game.get_size() == 19, name
        assert len(moves_of(game)) >= MIN_MOVES, name


def test_metadata(games):
    script = load_script("make_sample_corpus")
    ranks = set(script.LEVEL_RANKS.values())
    for name, game in games.items():
        root = game.get_root()
        for prop in ("PB", "PW", "BR", "WR", "KM", "RU", "RE", "DT", "SZ", "HA", "GC"):
            assert root.has_property(prop), (name, prop)
        assert root.get("BR") in ranks and root.get("WR") in ranks, name
        assert "NOMINAL" in root.get("GC") and "NOT" in root.get("GC"), name
        assert root.get("RU") == "Chinese", name
        assert re.fullmatch(r"[BW]\+(R|\d+(\.\d+)?)|0", root.get("RE")), (name, root.get("RE"))
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", root.get("DT")), name
        handicap = root.get("HA")
        black_setup, white_setup, empty_setup = root.get_setup_stones()
        assert not white_setup and not empty_setup, name
        if handicap:
            assert 2 <= handicap <= 4 and len(black_setup) == handicap, name
            assert root.get("KM") == 0.5, name
            assert moves_of(game)[0][0] == "w", f"{name}: White moves first in a handicap game"
        else:
            assert not black_setup and root.get("KM") == 6.5, name
            assert moves_of(game)[0][0] == "b", name


def test_dates_straddle_2015(games):
    dates = [g.get_root().get("DT") for g in games.values()]
    assert any(d < DATE_BOUNDARY for d in dates)
    assert any(d.startswith("2015") for d in dates)
    assert any(d >= "2016-01-01" for d in dates)


def test_corpus_has_handicap_and_strong_games(games):
    """Something for the handicap filter to drop and for the GoNN rank filter (>=6d / >=7d) to keep."""
    roots = [g.get_root() for g in games.values()]
    assert sum(1 for r in roots if r.get("HA")) >= 1
    assert sum(1 for r in roots if not r.get("HA")) >= MIN_GAMES - 5

    def dan(rank: str) -> int:
        return int(rank[:-1]) if rank.endswith("d") else 0

    gonn = [r for r in roots if not r.get("HA") and (
        min(dan(r.get("BR")), dan(r.get("WR"))) >= 6 or max(dan(r.get("BR")), dan(r.get("WR"))) >= 7)]
    assert gonn, "no game would pass the GoNN KGS rank filter"
    assert len(gonn) < len(roots), "the rank filter should also have games to drop"


def test_every_game_replays_legally(games):
    """Replay on sgfmill's board: never on an occupied point, no suicide, no simple-ko recapture,
    colours alternate, and the game ends with two passes, a resignation or the move cap."""
    for name, game in games.items():
        board = boards.Board(game.get_size())
        black_setup, white_setup, empty_setup = game.get_root().get_setup_stones()
        assert board.apply_setup(black_setup, white_setup, empty_setup), name
        moves = moves_of(game)
        ko_point = None
        previous = None
        for number, (colour, point) in enumerate(moves, 1):
            where = f"{name} move {number}"
            if previous is not None:
                assert colour != previous, f"{where}: same colour twice"
            previous = colour
            if point is None:
                ko_point = None
                continue
            row, col = point
            assert board.get(row, col) is None, f"{where}: plays on an occupied point"
            assert point != ko_point, f"{where}: retakes a ko at once"
            ko_point = board.play(row, col, colour)
            assert board.get(row, col) == colour, f"{where}: suicide"
        result = game.get_root().get("RE")
        two_passes = len(moves) >= 2 and moves[-1][1] is None and moves[-2][1] is None
        assert two_passes or result.endswith("+R") or "cap" in game.get_root().get("GC"), name


def test_plan_is_deterministic_and_covers_dates():
    script = load_script("make_sample_corpus")
    levels = list(range(11))
    plans = [script.plan_game(i, levels, 7) for i in range(40)]
    assert plans == [script.plan_game(i, levels, 7) for i in range(40)]
    assert plans != [script.plan_game(i, levels, 8) for i in range(40)]
    years = {int(p["date"][:4]) for p in plans[:4]}
    assert years == {2013, 2014, 2015, 2016}
    for p in plans:
        assert p["black_level"] != p["white_level"]
        assert p["black_seed"] > 0 and p["white_seed"] > 0
        if p["handicap"]:
            assert p["black_level"] < p["white_level"] and p["komi"] == 0.5
    assert [p["index"] for p in plans if p["handicap"]] == [9, 19, 29, 39]
    for p in plans[4::10]:
        assert min(p["black_level"], p["white_level"]) >= 8


def test_level_parsing():
    script = load_script("make_sample_corpus")
    assert script.parse_levels("0..10") == list(range(11))
    assert script.parse_levels("0..2,8,10") == [0, 1, 2, 8, 10]
    with pytest.raises(Exception):
        script.parse_levels("3")
    with pytest.raises(Exception):
        script.parse_levels("0,11")


@pytest.mark.slow
def test_script_plays_a_short_game(tmp_path):
    """End to end on a 9x9 board at level 0, capped at a few moves (about a second of CPU)."""
    GNUGO = require_gnugo()
    script = load_script("make_sample_corpus")
    argv = ["--out", str(tmp_path), "--games", "1", "--start", "9", "--size", "9", "--levels", "0,1",
            "--max-moves", "12", "--seed", "3", "--gnugo", GNUGO]
    assert script.main(argv) == 0
    (path,) = tmp_path.glob("*.sgf")
    game = sgf.Sgf_game.from_bytes(path.read_bytes())
    root = game.get_root()
    assert game.get_size() == 9 and root.get("HA") in (2, 3, 4)
    assert len(root.get_setup_stones()[0]) == root.get("HA")
    assert 1 <= len(moves_of(game)) <= 12
    assert "NOMINAL" in root.get("GC")


def test_readme_numbers_match_the_files(games):
    """Every count samples/README.md gives (summary table, generation notes, the GoNN filter, the per-game table)
    is the corpus's."""
    from kifunet.data_prep import ranks

    text = (REPO / "samples" / "README.md").read_text(encoding="utf-8")
    rows, years, endings = [], {}, {"two passes": 0, "resignation": 0, "move cap": 0}
    for name, game in games.items():
        root = game.get_root()
        get = lambda k: root.get(k) if root.has_property(k) else None  # noqa: E731
        moves = moves_of(game)
        result = get("RE")
        ending = ("resignation" if result.endswith("+R") else
                  "two passes" if "ended by two passes" in get("GC") else "move cap")
        endings[ending] += 1
        years[get("DT")[:4]] = years.get(get("DT")[:4], 0) + 1
        level = lambda player: int(re.search(r"level (\d+)", player).group(1))  # noqa: E731
        rows.append(dict(name=name, dt=get("DT"), b=f"{level(get('PB'))} ({get('BR')})",
                         w=f"{level(get('PW'))} ({get('WR')})", ha=get("HA") or 0, km=get("KM"), moves=len(moves),
                         passes=sum(1 for _, p in moves if p is None), re=result, ending=ending,
                         bytes=(SAMPLES / name).stat().st_size, br=get("BR"), wr=get("WR")))
    n, even = len(rows), [r for r in rows if not r["ha"]]
    total = sum(r["moves"] for r in rows)
    passes = sum(r["passes"] for r in rows)
    size = sum(r["bytes"] for r in rows)
    assert f"holds **{n} games of 19x19 Go**" in text
    assert f"| games | {n} ({len(even)} even, {n - len(even)} handicap) |" in text
    assert (f"| moves | {total:,} ({total - passes:,} stones played, {passes} passes); "
            f"{min(r['moves'] for r in rows)} to {max(r['moves'] for r in rows)} per game, "
            f"mean {round(total / n)} |") in text
    assert (f"| size | {size:,} bytes of SGF ({min(r['bytes'] for r in rows) / 1000:.1f} to "
            f"{max(r['bytes'] for r in rows) / 1000:.1f} KB per game) |") in text
    by_count = {}
    for y, c in sorted(years.items()):
        by_count.setdefault(c, []).append(y)
    assert "| dates (DT) | " + "; ".join(f"{', '.join(ys)}: {c} games each" if len(ys) > 1 else f"{ys[0]}: {c}"
                                          for c, ys in sorted(by_count.items(), reverse=True)) + " |" in text
    assert (f"| endings | {endings['two passes']} by two passes (scored with GNU Go `final_score`), "
            f"{endings['resignation']} by resignation, {endings['move cap']} at the move cap |") in text
    assert f"--games {n} " in text and f"regenerates these\n{n} files" in text and f"adds\ngames {n}, {n + 1}" in text
    # the GoNN game filter: both players >= 6d, or one >= 7d (handicap games are dropped anyway)
    six, seven = ranks.parse_rank("6d"), ranks.parse_rank("7d")
    passing = [r["name"][6:10] for r in even
               if min(ranks.parse_rank(r["br"]), ranks.parse_rank(r["wr"])) >= six
               or max(ranks.parse_rank(r["br"]), ranks.parse_rank(r["wr"])) >= seven]
    said = re.search(r"(\d+) of the (\d+) even games pass the GoNN game filter\s+\([^)]*\): ([\d,\sand]+)\. "
                     r"The other (\d+) are filtered out, and so are the (\d+) handicap games", text)
    assert said, "the GoNN filter sentence"
    assert [int(x) for x in (said[1], said[2], said[4], said[5])] == [len(passing), len(even),
                                                                     len(even) - len(passing), n - len(even)]
    assert re.findall(r"\d{4}", said[3]) == passing
    # the per-game table, row by row
    table = [line for line in text.splitlines() if line.startswith("| gnugo-")]
    assert table == [f"| {r['name']} | {r['dt']} | {r['b']} | {r['w']} | {r['ha']} | {r['km']:g} | {r['moves']} | "
                     f"{r['re']}{' (two passes)' if r['ending'] == 'two passes' else ''} | {r['bytes']} |"
                     for r in rows]
