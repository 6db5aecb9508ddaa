"""The 9x9 engine-game corpus: ``scripts/make_engine9x9_corpus.py --pack`` (the first copy of each game, a
deterministic archive, counts that add up) and the committed ``corpora/engine9x9`` (what its README says it is,
and every game builds)."""

from __future__ import annotations

import json
import tarfile

import pytest
from conftest import REPO, load_script

CORPUS = REPO / "corpora" / "engine9x9"


def _sgf(moves: str, result: str, engine_colour: str = "B") -> str:
    return (f"(;FF[4]AP[kifunet:match]C[engine_colour: {engine_colour}\nended: two passes\nseconds: 1.5]"
            f"GM[1]KM[7]PB[GNU Go 3.8]PW[GNU Go 3.8]RE[{result}]RU[Chinese]SZ[9]{moves})")


@pytest.fixture
def work(tmp_path):
    script = load_script("make_engine9x9_corpus")
    a, b = list(script.PAIRINGS)[:2]
    games = {a: [";B[ee];W[cc];B[tt];W[tt]", ";B[ee];W[gg];B[tt];W[tt]", ";B[ee];W[cc];B[tt];W[tt]"],
             b: [";B[ee];W[cc];B[tt];W[tt]", ";B[cc];W[ee];B[tt];W[tt]"]}
    results = ["B+7", "W+R", "0"]
    for name, seqs in games.items():
        d = tmp_path / "work" / name / "games"
        d.mkdir(parents=True)
        for i, seq in enumerate(seqs):
            (d / f"game-{i:04d}.sgf").write_text(_sgf(seq, results[i % 3], "BW"[i % 2]))
    return script, tmp_path / "work", (a, b)


def test_pack_keeps_the_first_copy_of_each_game_and_counts_it(work, tmp_path):
    script, work_dir, (a, b) = work
    counts = script.pack(work_dir, tmp_path / "out")
    assert counts["pairings"][a] | {"engine": "", "opponent": ""} == {
        "played": 3, "kept": 2, "duplicates": 1, "black_wins": 1, "white_wins": 1, "draws": 0, "mean_moves": 4.0,
        "game_seconds": 4.5, "engine": "", "opponent": ""}
    assert (counts["pairings"][b]["played"], counts["pairings"][b]["kept"]) == (2, 1)  # its game 0 is a's game 0
    assert counts["total"] | {"archive_bytes": 0} == {"played": 5, "kept": 3, "game_seconds": 7.5, "archive_bytes": 0}
    with tarfile.open(tmp_path / "out" / "engine9x9.tar.xz") as tar:
        assert tar.getnames() == [f"{a}/game-0000.sgf", f"{a}/game-0001.sgf", f"{b}/game-0001.sgf"]
        assert {m.mtime for m in tar.getmembers()} == {0}
    assert json.loads((tmp_path / "out" / "counts.json").read_text()) == counts
    readme = (tmp_path / "out" / "README.md").read_text()
    assert f"| {a} | `{script.PAIRINGS[a][0]}` | `{script.PAIRINGS[a][1]}` | 3 | 2 | 1 / 1 / 0 | 4.0 | 1.5 |" in readme
    assert "3 games on the 9x9 board" in readme and "not human games" in readme
    first = (tmp_path / "out" / "engine9x9.tar.xz").read_bytes()
    script.pack(work_dir, tmp_path / "again")
    assert (tmp_path / "again" / "engine9x9.tar.xz").read_bytes() == first  # deterministic


@pytest.mark.slow
def test_the_committed_corpus_is_what_its_counts_say_and_builds(tmp_path):
    """Every game of corpora/engine9x9 is a scored 9x9 engine game at komi 7, counted by pairing in counts.json
    and its README; `kifunet build` uses all of them (nothing rejected, no duplicate, every result known)."""
    from kifunet.cli import main

    counts = json.loads((CORPUS / "counts.json").read_text())
    script = load_script("make_engine9x9_corpus")
    assert list(counts["pairings"]) == [p for p in script.PAIRINGS if p in counts["pairings"]]
    by_pairing = {}
    with tarfile.open(CORPUS / "engine9x9.tar.xz") as tar:
        for m in tar.getmembers():
            text = tar.extractfile(m).read().decode()
            assert all(f in text for f in ("SZ[9]", "KM[7]", "AP[kifunet:match]", "RE[")), m.name
            by_pairing[m.name.split("/")[0]] = by_pairing.get(m.name.split("/")[0], 0) + 1
    assert by_pairing == {k: v["kept"] for k, v in counts["pairings"].items()}
    assert sum(by_pairing.values()) == counts["total"]["kept"] >= 3000
    readme = (CORPUS / "README.md").read_text()
    assert readme == script.readme(counts)
    out = tmp_path / "ds"
    assert main(["build", str(CORPUS / "engine9x9.tar.xz"), "--out", str(out), "--features", "qiqiao",
                 "--board-size", "9", "--split", "train:rest", "--no-progress"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert (m["counts"]["seen"], m["counts"]["used"], m["counts"]["filtered"], m["counts"]["rejected"]) == \
        (counts["total"]["kept"], counts["total"]["kept"], {}, {})
    assert m["splits"]["train"]["results"]["unknown"]["games"] == 0
