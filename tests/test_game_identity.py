"""The identity of a game (issue 13, item 6): ``GameRecord.game_id`` is equal for copies of one game and differs
for different games that share their moves (short games above all); ``moves_hash`` stays the moves only."""

from __future__ import annotations

import json
import os
import tarfile

import numpy as np
import pytest
from conftest import KGS_DIR, require_module, require_path

from kifunet.data_prep.building import build, filters, splits
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.game import BLACK, GameInfo, GameRecord
from kifunet.data_prep.datasets.reader import Reader
from kifunet.data_prep.datasets.shards import Storage

BASE = ("(;GM[1]FF[4]CA[UTF-8]SZ[19]PB[Alice]BR[6d]PW[古力]WR[7d]DT[2015-03-01]KM[6.5]RU[Japanese]TM[300]"
        "OT[5x30 byo-yomi]RE[W+Resign]AP[CGoban:3];B[pd])")


def _id(text: str | bytes, codec: str = "utf-8"):
    raw = text if isinstance(text, bytes) else text.encode(codec)
    g = sgf_io.load_game(raw)
    return g.moves_hash(), g.game_id()


# Copies of the BASE game as another download, writer or archive might hold them: one game.
SAME = {
    "re-encoded": BASE.replace("CA[UTF-8]", "CA[GB2312]").encode("gb2312"),
    "re-encoded-undeclared": BASE.replace("CA[UTF-8]", "").encode("gbk"),
    "comments-and-markup": BASE.replace(";B[pd])", ";B[pd]C[nice move]LB[dd:A]TR[pp])"),
    "property-order": ("(;FF[4]GM[1]SZ[19]RE[W+Resign]PW[古力]PB[Alice]WR[7d]BR[6d]OT[5x30 byo-yomi]TM[300.0]"
                       "KM[6.5]DT[2015-03-01]CA[UTF-8];B[pd])"),
    "white-space-and-newlines": BASE.replace("]", "]\r\n").replace("PB[Alice]", "PB[ Alice ]"),
    "result-spelling": BASE.replace("W+Resign", "W+R"),
    "rank-spelling": BASE.replace("BR[6d]", "BR[6段]").replace("WR[7d]", "WR[7 dan]"),
    "komi-spelling": BASE.replace("KM[6.5]", "KM[650]"),
    "name-case": BASE.replace("PB[Alice]", "PB[alice]"),
    "other-application-and-place": BASE.replace("AP[CGoban:3]", "AP[foxwq]PC[KGS]GN[round 1]EV[cup]"),
    "a-variation": BASE.replace(";B[pd])", "(;B[pd])(;B[dd]))"),
    "no-charset": BASE.replace("CA[UTF-8]", ""),
}
# Games that share the BASE game's move: different games.
DIFFERENT = {
    "black": BASE.replace("PB[Alice]", "PB[Carol]"),
    "white": BASE.replace("PW[古力]", "PW[常昊]"),
    "colours-swapped": BASE.replace("PB[Alice]", "PB[古力]").replace("PW[古力]", "PW[Alice]"),
    "date": BASE.replace("2015-03-01", "2015-03-02"),
    "result": BASE.replace("W+Resign", "W+Time"),
    "no-result": BASE.replace("RE[W+Resign]", ""),
    "main-time": BASE.replace("TM[300]", "TM[1800]"),
    "overtime": BASE.replace("5x30 byo-yomi", "10x30 byo-yomi"),
    "move": BASE.replace(";B[pd])", ";B[dp])"),
    "setup": BASE.replace("AP[CGoban:3]", "AB[dd][pp]"),
    "size": BASE.replace("SZ[19]", "SZ[13]").replace("B[pd]", "B[jd]"),
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_copies_of_one_game_are_one_game(name):
    base_moves, base_id = _id(BASE)
    moves, gid = _id(SAME[name])
    assert (moves, gid) == (base_moves, base_id), name


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_games_that_share_their_moves_are_different_games(name):
    base_moves, base_id = _id(BASE)
    moves, gid = _id(DIFFERENT[name])
    assert gid != base_id, name
    if name not in ("move", "setup", "size"):
        assert moves == base_moves, name  # what the old identity (moves only) dropped as a duplicate


@pytest.mark.parametrize("moves", [[], [(BLACK, 60)], [(BLACK, 60), (2, 300)]], ids=["0-moves", "1-move", "2-moves"])
def test_short_games(moves):
    a = GameRecord.from_moves(19, moves, info=GameInfo(black="alice", white="bob", date="2015-01-01"))
    b = GameRecord.from_moves(19, moves, info=GameInfo(black="carol", white="dave", date="2016-05-05"))
    a2 = GameRecord.from_moves(19, moves, info=GameInfo(black="Alice ", white="bob", date="2015-01-01",
                                                        path="elsewhere.sgf", encoding="gb18030", komi=7.5))
    assert a.moves_hash() == b.moves_hash() == a2.moves_hash()
    assert a.game_id() != b.game_id()
    assert a.game_id() == a2.game_id()
    assert len(a.game_id()) == 32 and int(a.game_id(), 16) >= 0


def test_identity_fields():
    g = GameRecord.from_moves(19, [(BLACK, 60)], info=GameInfo(black="  Lee  Sedol ", white="ＧＵ Li", date="2015-01-01",
                                                                result="B+3.50", time_limit="300", overtime="5x30"))
    assert g.identity() == (g.moves_hash(), "lee sedol", "gu li", "2015-01-01", "b+3.5", "300", "5x30")


# ------------------------------------------------------------------------------------------ real data

# Pairs of KGS records with the same moves (and setup) that moves_hash took for one game. The first nine are
# every "duplicate" the GoNN KGS build dropped (docs/building.md, 9 over the 9 archives): all different games.
KGS_SAME_MOVES_DIFFERENT_GAMES = [
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-06-2.sgf", "KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-26-2.sgf"),
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-02-8.sgf", "KGS-2001-19-2298-.tar.gz!KGS2001/2001-12-28-3.sgf"),
    ("KGS-2002-19-3646-.tar.gz!KGS2002/2002-02-15-1.sgf", "KGS-2002-19-3646-.tar.gz!KGS2002/2002-05-01-1.sgf"),
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-02-8.sgf", "KGS-2006-19-10388-.tar.gz!kgs-19-2006/2006-04-03-9.sgf"),
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-02-8.sgf", "KGS-2006-19-10388-.tar.gz!kgs-19-2006/2006-08-27-11.sgf"),
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-02-8.sgf", "KGS-2015-19-8133-.tar.gz!kgs-19-2015/2015-09-17-19.sgf"),
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-02-8.sgf", "KGS-2015-19-8133-.tar.gz!kgs-19-2015/2015-06-09-5.sgf"),
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-03-02-8.sgf", "KGS-2015-19-8133-.tar.gz!kgs-19-2015/2015-06-13-18.sgf"),
    ("KGS-2017_01-19-733-.tar.gz!kgs-19-2017-01-new/2017-01-22-33.sgf",
     "KGS-2017_04-19-913-.tar.gz!kgs-19-2017-04-new/2017-04-26-3.sgf"),  # 290 moves, other players, 3 months on
    # same players, same day, one move each, same result: told apart by the time settings only
    ("KGS-2002-19-3646-.tar.gz!KGS2002/2002-02-02-14.sgf", "KGS-2002-19-3646-.tar.gz!KGS2002/2002-02-02-15.sgf"),
    # same players, same day, same move: one resigned, one has no result
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-06-21-5.sgf", "KGS-2001-19-2298-.tar.gz!KGS2001/2001-06-21-7.sgf"),
]
# The copies in the KGS archives: the same bytes under two names (0, 0, 1 and 33 moves).
KGS_COPIES = [
    ("KGS-2001-19-2298-.tar.gz!KGS2001/2001-09-05-2.sgf", "KGS-2001-19-2298-.tar.gz!KGS2001/2001-09-05-3.sgf"),
    ("KGS-2006-19-10388-.tar.gz!kgs-19-2006/2006-10-08-8.sgf",
     "KGS-2006-19-10388-.tar.gz!kgs-19-2006/2006-10-08-9.sgf"),
    ("KGS-2002-19-3646-.tar.gz!KGS2002/2002-02-02-11.sgf", "KGS-2002-19-3646-.tar.gz!KGS2002/2002-02-02-12.sgf"),
    ("KGS-2002-19-3646-.tar.gz!KGS2002/2002-10-14-4.sgf", "KGS-2002-19-3646-.tar.gz!KGS2002/2002-10-14-5.sgf"),
]


def _kgs_records(names) -> dict:
    wanted: dict[str, set] = {}
    for n in names:
        archive, member = n.split("!")
        wanted.setdefault(archive, set()).add(member)
    out = {}
    for archive, members in sorted(wanted.items()):
        with tarfile.open(require_path(KGS_DIR / archive, "the real KGS archives"), "r|gz") as tf:
            for m in tf:
                if m.name in members:
                    out[f"{archive}!{m.name}"] = tf.extractfile(m).read()
    return out


def test_kgs_records_with_the_same_moves():
    """On the real archives: every pair moves_hash merged is two games, except byte-identical copies."""
    names = {n for pair in KGS_SAME_MOVES_DIFFERENT_GAMES + KGS_COPIES for n in pair}
    raw = _kgs_records(names)
    assert set(raw) == names
    games = {n: sgf_io.load_game(b, path=n) for n, b in raw.items()}
    for a, b in KGS_SAME_MOVES_DIFFERENT_GAMES:
        assert games[a].moves_hash() == games[b].moves_hash(), (a, b)
        assert games[a].game_id() != games[b].game_id(), (a, b)
    for a, b in KGS_COPIES:
        assert raw[a] == raw[b] and games[a].game_id() == games[b].game_id(), (a, b)
    assert games[KGS_COPIES[-1][0]].num_moves == 33


# ------------------------------------------------------------------------------------------ the build


def _short(black: str, white: str, date: str, extra: str = "") -> bytes:
    return (f"(;GM[1]FF[4]SZ[9]PB[{black}]BR[6d]PW[{white}]WR[7d]DT[{date}]RE[W+Resign]{extra};B[ee];W[cc])"
            .encode())


def _short_games(d):
    """Three different games with the same two moves, and a copy of the first; their game ids, in order."""
    d.mkdir()
    (d / "a.sgf").write_bytes(_short("alice", "bob", "2015-01-01"))
    (d / "b.sgf").write_bytes(_short("carol", "dave", "2015-02-02"))  # the same two moves: another game
    (d / "c.sgf").write_bytes(_short("bob", "alice", "2015-01-01"))  # colours swapped: another game
    # a.sgf again: renamed, with a comment, another charset and property order (sorts after a.sgf)
    (d / "z-copy.sgf").write_bytes("(;FF[4]GM[1]CA[GB2312]SZ[9]DT[2015-01-01]PW[bob]WR[7d]PB[alice]BR[6d]"
                                   "RE[W+Resign]C[对局];B[ee]C[好棋];W[cc])".encode("gb2312"))
    return [sgf_io.load_game((d / n).read_bytes()).game_id() for n in ("a.sgf", "b.sgf", "c.sgf")]


def test_build_keeps_different_short_games_and_drops_copies(tmp_path):
    d = tmp_path / "in"
    ids = _short_games(d)
    cfg = build.BuildConfig(inputs=[str(d)], out=str(tmp_path / "out"), features="maddison",
                            filters=filters.Filters(board_size=9), splits=splits.make_rule(), seed=7,
                            storage=Storage(chunk_rows=32), shard_rows=400, unit_games=8, workers=0,
                            progress=False)
    m = build.build(cfg, log=lambda *a, **k: None)
    c = m["counts"]
    assert (c["seen"], c["used"], c["filtered"]) == (4, 3, {"duplicate": 1})
    lines = (tmp_path / "out" / "rejects.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and "z-copy.sgf" in lines[0] and "a.sgf" in lines[0]
    assert json.loads(lines[0])["detail"] == f"same game as {d / 'a.sgf'}"
    games = Reader(str(tmp_path / "out"), "train").games()
    assert sorted(games["game_id"]) == sorted(ids) and len(set(games["moves_hash"])) == 1
    assert sorted(os.path.basename(p) for p in games["path"]) == ["a.sgf", "b.sgf", "c.sgf"]


def test_tfds_keeps_different_short_games_and_drops_copies(tmp_path):
    """The TFDS builder: example keys are game ids, so games sharing their moves are distinct examples (with the
    moves hash as key TFDS stops on duplicate keys); the copy is dropped as in the build."""
    require_module("tensorflow_datasets")
    require_module("array_record")
    import tensorflow_datasets as tfds

    from kifunet.data_prep.building import tfds_go_moves as T
    from kifunet.data_prep.datasets.dataset import open_split

    ids = _short_games(tmp_path / "in")
    cfg = T.GoMovesConfig(name="short_games", features="maddison", options={"board_size": 9})
    b = T.GoMoves(config=cfg, data_dir=str(tmp_path / "tfds"))
    b.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(tmp_path / "in")))
    c = b.info.metadata["kifunet"]["counts"]
    assert (c["seen"], c["used"], c["filtered"]) == (4, 3, {"duplicate": 1})
    r = open_split(f"tfds:{b.data_path}", "train")
    got = r.batch(np.arange(len(r)))
    assert len(r) == 6 and sorted(set(got["game"])) == sorted(ids)  # 3 games x 2 moves
    assert sorted(zip(got["game"], got["move_number"].tolist())) == sorted((g, m) for g in ids for m in (1, 2))
