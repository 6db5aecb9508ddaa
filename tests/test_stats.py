"""`kifunet stats` and `kifunet inspect` on a small built dataset."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kifunet.cli import main
from kifunet.data_prep.building import build, splits
from kifunet.data_prep.datasets import stats
from kifunet.data_prep.coords import from_flat
from kifunet.data_prep.datasets.reader import Reader
from kifunet.data_prep.datasets.manifest import read_manifest
from test_build import cfg_for, quiet, write_corpus


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats")
    write_corpus(root / "in", 5, moves=24, br="6d", wr="7d", date="2014-03-03")
    write_corpus(root / "in", 3, start=10, moves=24, br="3k", wr="9p", date="2013-03-03")
    write_corpus(root / "in", 4, start=20, moves=24, date="2015-03-03")
    (root / "in" / "broken.sgf").write_bytes(b"(;GM[1]SZ[9];B[")
    rule = splits.make_rule(["train:2000-2014", "test:2015"])
    build.build(cfg_for([root / "in"], root / "out", splits=rule), log=quiet)
    return str(root / "out")


def test_stats_sums_match_manifest(dataset):
    st = stats.dataset_stats(dataset)
    m = read_manifest(dataset)
    for name, s in st["splits"].items():
        assert s["positions"] == m["splits"][name]["positions"]
        assert sum(s["positions_by_rank"].values()) == s["positions"]
        assert sum(s["games_by_year"].values()) == s["games"]
        assert sum(s["positions_by_year"].values()) == s["positions"]
        assert s["bytes"] > 0 and s["bytes_per_row"] == s["bytes"] / s["rows"]
    tr = st["splits"]["train"]
    assert tr["games_by_year"] == {"2013": 3, "2014": 5}
    assert set(tr["positions_by_rank"]) == {"9p", "7d", "6d", "3k"}
    r = Reader(dataset, "train")
    pr = r.batch(np.arange(len(r)))["player_rank"]
    assert tr["positions_by_rank"]["9p"] == int((pr == 17).sum())
    assert tr["positions_by_rank"]["3k"] == int((pr == -3).sum())
    assert st["counts"]["rejected"] == {"parse_error": 1}


def test_stats_cli_text_and_json(dataset, capsys):
    assert main(["stats", dataset, "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["splits"]["test"]["games"] == 4
    assert main(["stats", dataset]) == 0
    text = capsys.readouterr().out
    assert "records seen 13 = used 12 + filtered 0 + rejected 1" in text
    assert "parse_error" in text and "[train] positions by rank" in text
    assert main(["stats", dataset + "/nope"]) == 2


def test_inspect_board_matches_planes(dataset, capsys):
    r = Reader(dataset, "test")
    for i in (0, 7, len(r) - 1):
        text = stats.render_position(r, i)
        b = r.batch([i])
        names = r.feature_set.plane_names()
        planes = b["planes"][0]
        pla = int(planes[:, :, names.index("stone_colour[0]")].sum())
        opp = int(planes[:, :, names.index("stone_colour[1]")].sum())
        rows = [ln for ln in text.splitlines() if ln[:3].strip().isdigit()]
        assert len(rows) == 9
        grid = [ln[4:4 + 17].split(" ") for ln in rows]
        black = sum(row.count("X") for row in grid)
        white = sum(row.count("O") for row in grid)
        assert (black, white) == ((pla, opp) if b["to_move"][0] == 1 else (opp, pla))
        rc = from_flat(int(b["target"][0]), 9)
        assert grid[rc[0]][rc[1]] == "*"
        assert f"move {int(b['move_number'][0])}:" in text
        for k, name in enumerate(names):
            assert f"{name:<24}{int(planes[:, :, k].sum()):>6}" in text
    assert main(["inspect", dataset, "--split", "test", "--index", "3"]) == 0
    assert "played" in capsys.readouterr().out
    assert main(["inspect", dataset, "--split", "test", "--index", "100000"]) == 2


def _board_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln[:3].strip().isdigit()]


def test_inspect_draws_the_qiqiao_colour_planes_as_the_board(tmp_path):
    """``qiqiao`` keeps each colour as it stood after its own last move: the board shown takes off what the last
    move captured, and equals the board of the same position built with ``stone_colour`` planes."""
    write_corpus(tmp_path / "in", 6, moves=90)
    for fs in ("maddison", "qiqiao"):
        build.build(cfg_for([tmp_path / "in"], tmp_path / fs, features=fs), log=quiet)
    ref, qq = Reader(str(tmp_path / "maddison"), "train"), Reader(str(tmp_path / "qiqiao"), "train")
    key = lambda b, i: (int(b["game_index"][i]), int(b["move_number"][i]))  # noqa: E731
    rb = ref.batch(np.arange(len(ref)))
    where = {key(rb, i): i for i in range(len(ref))}
    qb = qq.batch(np.arange(len(qq)))
    names = qq.feature_set.plane_names()
    captured = 0
    assert len(qq) == len(ref) > 300
    for i in range(len(qq)):
        shown = _board_lines(stats.render_position(qq, i))
        assert shown == _board_lines(stats.render_position(ref, where[key(qb, i)]))
        stones = int(qb["planes"][i][:, :, [names.index("colour_history_4[3]"),
                                            names.index("colour_history_4[7]")]].sum())
        captured += stones > sum(row[4:].count("X") + row[4:].count("O") for row in shown)
    assert captured > 0  # some positions follow a capture
