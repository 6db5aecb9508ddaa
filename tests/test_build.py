"""The build end to end on small generated corpora: round trip, accounting, determinism, resume, crashes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest
from conftest import require_module, require_path
from sgfmill import boards

from kifunet.data_prep.building import build, filters, splits
from kifunet.data_prep.planes import features, replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.datasets.reader import Reader
from kifunet.data_prep.datasets.shards import Storage

GTP_COLS = "ABCDEFGHJKLMNOPQRST"


# ------------------------------------------------------------------------------------------------------------
# a corpus of random legal games (sgfmill's board checks occupancy and captures; suicide and ko retakes are
# avoided here)

def random_game(seed: int, *, n: int = 9, moves: int = 40, br: str = "6d", wr: str = "7d",
                date: str = "2015-01-01", ha: int = 0, pass_prob: float = 0.05,
                result: str | None = "B+R") -> bytes:
    rng = np.random.default_rng(seed)
    board = boards.Board(n)
    colour, ko = "b", None
    seq = []
    for _ in range(moves):
        if rng.random() < pass_prob:
            seq.append((colour, None))
            ko = None
        else:
            empties = [(r, c) for r in range(n) for c in range(n) if board.get(r, c) is None]
            rng.shuffle(empties)
            for pt in empties:
                if pt == ko:
                    continue
                trial = board.copy()
                new_ko = trial.play(pt[0], pt[1], colour)
                if trial.get(*pt) is None:  # suicide
                    continue
                board, ko = trial, new_ko
                seq.append((colour, pt))
                break
            else:
                seq.append((colour, None))
        colour = "w" if colour == "b" else "b"
    letters = "abcdefghijklmnopqrs"
    body = "".join(f";{c.upper()}[{'' if p is None else letters[p[1]] + letters[n - 1 - p[0]]}]" for c, p in seq)
    re_ = "" if result is None else f"RE[{result}]"  # None: no RE at all
    head = f"(;GM[1]FF[4]CA[UTF-8]SZ[{n}]PB[black{seed}]PW[white{seed}]BR[{br}]WR[{wr}]DT[{date}]KM[6.5]{re_}"
    if ha:
        head += f"HA[{ha}]"
    return (head + body + ")").encode()


def write_corpus(d, count: int, start: int = 0, **kw) -> list[str]:
    os.makedirs(d, exist_ok=True)
    paths = []
    for i in range(start, start + count):
        p = os.path.join(d, f"g{i:04d}.sgf")
        with open(p, "wb") as f:
            f.write(random_game(i, **kw))
        paths.append(p)
    return paths


def expected_rows(path: str, fs, data: bytes | None = None, include_passes=False):
    rec = sgf_io.load_game(data if data is not None else open(path, "rb").read(), path=path)
    enc = replay.encode_game(rec, fs, path=path)
    keep = np.ones(len(enc), bool) if include_passes else enc.target != rec.size ** 2
    return enc, keep


def cfg_for(inputs, out, **kw) -> build.BuildConfig:
    base = dict(inputs=[str(i) for i in inputs], out=str(out), features="maddison",
                filters=filters.Filters(board_size=9), splits=splits.make_rule(), seed=7,
                storage=Storage(chunk_rows=32), shard_rows=400, unit_games=8, workers=0, progress=False)
    base.update(kw)
    return build.BuildConfig(**base)


def shard_hashes(out) -> dict[str, str]:
    res = {}
    for root, _, files in os.walk(out):
        for f in files:
            if f.endswith(".h5"):
                p = os.path.join(root, f)
                res[os.path.relpath(p, out)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return res


def quiet(msg):
    pass


# ------------------------------------------------------------------------------------------------------------

def test_round_trip_bit_exact_and_shuffled(tmp_path):
    paths = write_corpus(tmp_path / "in", 24, moves=36)
    m = build.build(cfg_for([tmp_path / "in"], tmp_path / "out"), log=quiet)
    fs = features.get("maddison")
    r = Reader(str(tmp_path / "out"), "train", assemble=False)
    n = len(r)
    b = r.batch(np.arange(n))
    games = r.games()
    assert m["splits"]["train"]["positions"] == n and len(m["splits"]["train"]["shards"]) >= 2
    seen = set()
    cache = {}
    for i in range(n):
        path = games["path"][b["game_index"][i]]
        if path not in cache:
            cache[path] = expected_rows(path, fs)
        enc, keep = cache[path]
        t = int(b["move_number"][i]) - 1
        assert keep[t]
        assert np.array_equal(b["stored"][i], enc.planes[t])
        assert b["target"][i] == enc.target[t] and b["to_move"][i] == enc.to_move[t]
        assert b["player_rank"][i] == enc.player_rank[t] and b["opponent_rank"][i] == enc.opponent_rank[t]
        assert b["outcome"][i] == (1 if b["to_move"][i] == 1 else -1)  # RE[B+R]: black won
        seen.add((path, t))
    # every non-pass move of every game is there exactly once
    want = {(p, t) for p in paths for t in np.flatnonzero(cache[p][1])}
    assert seen == want and len(seen) == n
    # shuffled across games: consecutive rows rarely share a game, and each shard mixes many games
    gi = b["game_index"]
    assert np.mean(gi[1:] == gi[:-1]) < 0.2
    assert len(np.unique(gi[: len(gi) // 2])) == len(paths)
    # the full planes are the feature set's assembly of stored planes and columns
    full = Reader(str(tmp_path / "out"), "train").batch([0, 1, 2])
    assert np.array_equal(full["planes"], fs.assemble(b["stored"][:3], {"player_rank": b["player_rank"][:3]}))
    assert full["planes"].shape == (3, 9, 9, fs.num_planes)


def _bad_corpus(tmp_path):
    d = tmp_path / "mixed"
    good = write_corpus(d / "good", 10, moves=30)
    (d / "bad").mkdir()
    (d / "bad" / "empty.sgf").write_bytes(b"")
    (d / "bad" / "binary.sgf").write_bytes(np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes())
    (d / "bad" / "corrupt.sgf").write_bytes(b"(;GM[1]SZ[9];B[cc];W[dd" + b"]]]((((;;;")
    whole = random_game(100, moves=30)
    (d / "bad" / "truncated.sgf").write_bytes(whole[: len(whole) // 2])
    (d / "bad" / "size25.sgf").write_bytes(b"(;GM[1]FF[4]SZ[25]PB[a]PW[b];B[aa];W[bb])")
    (d / "bad" / "size13.sgf").write_bytes(random_game(101, n=13, moves=20))
    (d / "bad" / "illegal.sgf").write_bytes(b"(;GM[1]FF[4]SZ[9]PB[x]PW[y]BR[6d]WR[7d]DT[2015-01-01]"
                                            b";B[cc];W[gg];B[dd];W[cc];B[ee])")
    (d / "bad" / "README.txt").write_text("not a game")
    (d / "zdup").mkdir()  # sorts after good/: the copy there is the duplicate
    # the same game downloaded twice, one copy commented: renamed and other bytes, still one game
    (d / "zdup" / "copy.sgf").write_bytes(open(good[3], "rb").read().replace(
        b"PB[black3]", b"PB[black3]C[downloaded twice]"))
    # a truncated .tar.gz holding 12 more good games (incompressible comments keep the cut mid-archive)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i in range(12):
            data = random_game(200 + i, moves=30).replace(b"KM[6.5]", f"KM[6.5]GC[{os.urandom(1500).hex()}]".encode())
            ti = tarfile.TarInfo(f"arch/a{i:02d}.sgf")
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    whole = buf.getvalue()
    (tmp_path / "cut.tar.gz").write_bytes(whole[: int(len(whole) * 0.6)])
    return d, good


def test_accounting_identity_on_bad_inputs(tmp_path):
    d, good = _bad_corpus(tmp_path)
    out = tmp_path / "out"
    m = build.build(cfg_for([d, tmp_path / "cut.tar.gz"], out), log=quiet)
    c = m["counts"]
    assert c["seen"] == c["used"] + sum(c["filtered"].values()) + sum(c["rejected"].values())
    assert c["filtered"] == {"board_size": 1, "duplicate": 1}
    rej = c["rejected"]
    assert rej.pop("illegal_move:occupied") == 1 and rej.pop("truncated_member") == 1
    assert rej.pop("empty") == 1 and sum(rej.values()) == 4  # binary, corrupt, truncated.sgf, size 25
    assert set(rej) <= {"parse_error", "board_size", "encoding", "bad_point"}
    lines = [json.loads(x) for x in open(out / "rejects.jsonl", encoding="utf-8")]
    by_name = {os.path.basename(x["path"]): x for x in lines if x["status"] != "input_error"}
    for name in ("empty.sgf", "binary.sgf", "corrupt.sgf", "truncated.sgf", "size25.sgf", "size13.sgf",
                 "illegal.sgf", "copy.sgf"):
        assert name in by_name, name
    assert by_name["illegal.sgf"]["move_number"] == 4 and by_name["illegal.sgf"]["move"] == "C7"
    assert by_name["illegal.sgf"]["colour"] == "W" and "illegal_move:occupied" == by_name["illegal.sgf"]["reason"]
    assert by_name["copy.sgf"]["reason"] == "duplicate" and by_name["copy.sgf"]["detail"].endswith("g0003.sgf")
    assert by_name["copy.sgf"]["detail"].startswith("same game as ")
    assert by_name["size13.sgf"]["status"] == "filtered"
    errs = [x for x in lines if x["status"] == "input_error"]
    assert len(errs) == 1 and errs[0]["reason"] == "truncated_archive" and "cut.tar.gz!arch/a" in errs[0]["path"]
    assert len(lines) == c["seen"] - c["used"] + len(errs)
    # no good game lost: all 10 directory games and every archive member before the cut are used
    tab = Reader(str(out), "train").games()
    used = set(tab["path"])
    assert set(good) <= used
    arch = sorted(p for p in used if "cut.tar.gz!" in p)
    k = len(arch)
    assert k >= 3 and arch == [f"{tmp_path / 'cut.tar.gz'}!arch/a{i:02d}.sgf" for i in range(k)]
    assert by_name[f"a{k:02d}.sgf"]["reason"] == "truncated_member"
    assert c["used"] == 10 + k
    info = {os.path.basename(i["path"]): i for i in m["inputs"]}
    assert info["cut.tar.gz"]["errors"][0]["records_before"] == k and info["mixed"]["ignored"] == 1
    # positions: moves of used games = kept + dropped, and kept = rows in the shards
    p = c["positions"]
    assert p["moves"] == p["kept"] + sum(p["filtered"].values())
    assert p["kept"] == m["splits"]["train"]["positions"] == len(Reader(str(out), "train"))


def test_workers_give_the_same_bytes_as_inline(tmp_path):
    write_corpus(tmp_path / "in", 20, moves=30)
    rule = splits.make_rule(["train:2015-01-01..2015-01-01", "test:rest"])
    a = build.build(cfg_for([tmp_path / "in"], tmp_path / "a", splits=rule), log=quiet)
    b = build.build(cfg_for([tmp_path / "in"], tmp_path / "b", splits=rule, workers=2), log=quiet)
    assert shard_hashes(tmp_path / "a") == shard_hashes(tmp_path / "b")
    assert a["splits"] == b["splits"] and a["counts"] == b["counts"]
    # another seed shuffles differently, same rows
    c = build.build(cfg_for([tmp_path / "in"], tmp_path / "c", splits=rule, seed=8), log=quiet)
    assert c["splits"]["train"]["positions"] == a["splits"]["train"]["positions"]
    assert shard_hashes(tmp_path / "c") != shard_hashes(tmp_path / "a")
    ra, rc = Reader(str(tmp_path / "a"), "train"), Reader(str(tmp_path / "c"), "train")
    key = lambda r: sorted(zip(r.games()["path"][r.batch(np.arange(len(r)))["game_index"]],  # noqa: E731
                               r.batch(np.arange(len(r)))["move_number"]))
    assert key(ra) == key(rc)


def test_the_feature_set_is_looked_up_once_and_passed_down_as_the_object(tmp_path, monkeypatch):
    """The name becomes the FeatureSet in BuildConfig; the build, its stages and replay use that object (the
    workers get it pickled: test_workers_give_the_same_bytes_as_inline)."""
    import pickle

    cfg = cfg_for([], tmp_path / "x", features="gonn")
    assert cfg.features is features.get("gonn") and pickle.loads(pickle.dumps(cfg.features)) == cfg.features
    assert cfg_for([], tmp_path / "x", features=cfg.features).features is cfg.features
    with pytest.raises(KeyError, match="unknown feature set 'nope'"):
        cfg_for([], tmp_path / "x", features="nope")
    write_corpus(tmp_path / "in", 6, moves=20)
    cfg = cfg_for([tmp_path / "in"], tmp_path / "out", unit_games=2)
    looked_up = []
    monkeypatch.setattr(features, "get", lambda name: looked_up.append(name) or features.SETS[name])
    m = build.build(cfg, log=quiet)
    assert looked_up == [] and m["features"]["name"] == "maddison" and m["counts"]["used"] == 6


def _cli(args, **kw):
    env = dict(os.environ)
    env.update(kw.pop("env", {}))
    return subprocess.Popen([sys.executable, "-m", "kifunet.cli", "build", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kw)


def _kill_when(proc, cond, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            return False
        if cond():
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.005)
    raise AssertionError("condition never met")


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["encode", "write"])
def test_kill_9_then_resume_is_byte_identical(tmp_path, stage):
    write_corpus(tmp_path / "in", 40, moves=40)
    args = [tmp_path / "in", "--board-size", "9", "--unit-games", "2", "--shard-size", "60", "--chunk-rows",
            "16", "--workers", "1", "--split", "train:2015-01-01", "--val-fraction", "0.2", "--seed", "3"]
    # the reference: the same command line, uninterrupted, run in this process (workers do not change bytes)
    from kifunet.cli import build_parser
    from kifunet.commands.build import config_from_args

    cfg = config_from_args(build_parser().parse_args(["build", *map(str, args), "--out", str(tmp_path / "ref")]))
    cfg.workers, cfg.progress = 0, False
    build.build(cfg, log=quiet)
    out = tmp_path / "out"
    proc = _cli([*args, "--out", out])
    units = out / ".work" / "units"
    if stage == "encode":
        cond = lambda: units.is_dir() and len([u for u in os.listdir(units) if ".tmp" not in u]) >= 3  # noqa
    else:
        cond = lambda: (out / "train").is_dir() and any(f.endswith(".h5") for f in os.listdir(out / "train"))  # noqa
    assert _kill_when(proc, cond), "the build finished before it could be killed"
    assert not (out / "manifest.json").exists()
    again = _cli([*args, "--out", out])
    assert again.wait(timeout=300) == 0, again.stderr.read().decode()
    assert shard_hashes(out) == shard_hashes(tmp_path / "ref") and len(shard_hashes(out)) > 4
    m1, m2 = (json.load(open(p / "manifest.json")) for p in (out, tmp_path / "ref"))
    assert m1["splits"] == m2["splits"] and m1["counts"] == m2["counts"]
    assert not (out / ".work").exists()


# (RE, kind, winner, margin, outcome for black to move): one game of each, built into one dataset
RESULT_GAMES = [
    ("B+R", "resign", 1, None, 1), ("W+Resign", "resign", 2, None, -1), ("B+12.5", "score", 1, 12.5, 1),
    ("W+0.5", "score", 2, 0.5, -1), ("W+T", "time", 2, None, -1), ("B+Forfeit", "forfeit", 1, None, 1),
    ("W+", "win", 2, None, -1), ("B+0.0", "win", 1, None, 1), ("0", "draw", 0, None, 0), ("Jigo", "draw", 0, None, 0),
    ("Void", "void", 0, None, -128), ("?", "unknown", 0, None, -128), (None, "unknown", 0, None, -128),
    ("黑中盘胜", "unknown", 0, None, -128),
]


def test_results_outcomes_filters_and_accounting(tmp_path, capsys):
    """Each game's RE -> the games table's kind, winner and margin, every row's outcome from the mover's side, the
    manifest's counts by result kind (adding up), ``kifunet stats``, and the filters ``--result known`` and
    ``--ended`` (``result_unknown`` before ``ended_other``), each game accounted for."""
    import h5py

    from kifunet.cli import main
    from kifunet.data_prep import results
    from kifunet.data_prep.datasets import stats

    d = tmp_path / "in"
    d.mkdir()
    for i, (re_, *_) in enumerate(RESULT_GAMES):
        (d / f"r{i:02d}.sgf").write_bytes(random_game(300 + i, moves=12 + i, result=re_))
    out = tmp_path / "all"
    m = build.build(cfg_for([d], out), log=quiet)
    r = Reader(str(out), "train", assemble=False)
    g = r.games()
    with h5py.File(out / "train" / "games.h5") as f:
        assert json.loads(f.attrs["result_kinds"]) == list(results.KINDS)
    b = r.batch(np.arange(len(r)))
    names = [os.path.basename(p) for p in g["path"]]
    for i, (re_, kind, winner, margin, black) in enumerate(RESULT_GAMES):
        gi = names.index(f"r{i:02d}.sgf")
        assert g["result"][gi] == (re_ or "") and results.KINDS[g["result_kind"][gi]] == kind, re_
        assert g["winner"][gi] == winner and (np.isnan(g["margin"][gi]) if margin is None
                                              else g["margin"][gi] == np.float32(margin)), re_
        mine = b["game_index"] == gi
        white = -black if black in (1, -1) else black
        want = np.where(b["to_move"][mine] == 1, black, white)
        assert mine.sum() == g["positions"][gi] and np.array_equal(b["outcome"][mine], want), re_
    # the accounting by result kind adds up, per split and over the build
    c = m["counts"]
    kinds = {k: v["games"] for k, v in c["results"].items() if v["games"]}
    assert kinds == {"resign": 2, "score": 2, "time": 1, "forfeit": 1, "win": 2, "draw": 2, "void": 1, "unknown": 3}
    assert list(c["results"]) == list(results.KINDS)
    assert m["splits"]["train"]["results"] == c["results"]
    assert sum(v["games"] for v in c["results"].values()) == c["used"] == len(RESULT_GAMES)
    assert sum(v["positions"] for v in c["results"].values()) == c["positions"]["kept"] == len(r)
    st = stats.dataset_stats(str(out))["splits"]["train"]
    assert st["games_by_result"] == kinds and sum(st["positions_by_result"].values()) == len(r)
    assert st["positions_by_result"]["void"] == c["results"]["void"]["positions"]
    # the filters, from the command line: every game accounted for
    for k, (flags, filtered) in enumerate(((["--result", "known"], {"result_unknown": 4}),
                                           (["--ended", "resign,score"], {"ended_other": 10}),
                                           (["--ended", "void,draw"], {"ended_other": 11}),
                                           (["--result", "known", "--ended", "score,draw,time"],
                                            {"result_unknown": 4, "ended_other": 5}))):
        o = tmp_path / f"filtered{k}"
        assert main(["build", str(d), "--out", str(o), "--board-size", "9", "--workers", "0", "--no-progress",
                     *flags]) == 0
        mf = json.load(open(o / "manifest.json"))
        cf = mf["counts"]
        assert cf["filtered"] == filtered and cf["seen"] == cf["used"] + sum(filtered.values()), flags
        assert sum(v["games"] for v in cf["results"].values()) == cf["used"]
        kept = {k for k, v in cf["results"].items() if v["games"]}
        if "--ended" in flags:
            assert kept == set(flags[flags.index("--ended") + 1].split(","))
        else:
            assert kept.isdisjoint(results.UNKNOWN_KINDS)
        outcomes = set(Reader(str(o), "train").column("outcome").tolist())
        assert (-128 in outcomes) == bool(kept & set(results.UNKNOWN_KINDS)), flags
    capsys.readouterr()
    assert main(["build", str(d), "--out", str(tmp_path / "bad"), "--ended", "resign,resin"]) == 2
    assert "unknown result kind 'resin'" in capsys.readouterr().err


def test_rerun_done_refused_changed_and_overwrite(tmp_path):
    write_corpus(tmp_path / "in", 6, moves=20)
    out = tmp_path / "out"
    m = build.build(cfg_for([tmp_path / "in"], out), log=quiet)
    msgs = []
    assert build.build(cfg_for([tmp_path / "in"], out), log=msgs.append) == m  # same settings: nothing to do
    assert "nothing to do" in msgs[0]
    with pytest.raises(build.BuildError, match="different dataset"):
        build.build(cfg_for([tmp_path / "in"], out, seed=99), log=quiet)
    m2 = build.build(cfg_for([tmp_path / "in"], out, seed=99, overwrite=True), log=quiet)
    assert m2["seed"] == 99 and m2["fingerprint"] != m["fingerprint"]
    # an unfinished build with other settings is refused too
    os.makedirs(out / ".work")
    with open(out / ".work" / "fingerprint.json", "w") as f:
        json.dump({"seed": 1}, f)
    os.remove(out / "manifest.json")
    with pytest.raises(build.BuildError, match="unfinished build"):
        build.build(cfg_for([tmp_path / "in"], out), log=quiet)
    # one started by a kifunet whose work units lack game_id (no spill_version): not resumed with them
    old = cfg_for([tmp_path / "in"], out).fingerprint()
    del old["spill_version"]
    with open(out / ".work" / "fingerprint.json", "w") as f:
        json.dump(old, f)
    with pytest.raises(build.BuildError, match="another kifunet version.*--overwrite"):
        build.build(cfg_for([tmp_path / "in"], out), log=quiet)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("x")
    with pytest.raises(build.BuildError, match="not empty"):
        build.build(cfg_for([tmp_path / "in"], foreign), log=quiet)


def test_resume_after_inputs_touched_checks_their_content(tmp_path):
    """An unfinished build whose inputs got a new mtime (copied again, touched) resumes when every such file has the
    sha256 recorded as the build began, byte-identical; a file of the same size but other bytes is refused, and so
    is a build begun before the hashes were recorded."""
    paths = write_corpus(tmp_path / "in", 12, moves=20)
    ref = build.build(cfg_for([tmp_path / "in"], tmp_path / "ref"), log=quiet)
    out = tmp_path / "out"
    build.build(cfg_for([tmp_path / "in"], out, keep_work=True), log=quiet)
    assert (out / ".work" / build.INPUT_HASHES).is_file()
    os.remove(out / "manifest.json")  # as if killed after the encode stage: every unit done
    for p in paths:
        os.utime(p, ns=(os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns + 10**9))
    msgs = []
    m = build.build(cfg_for([tmp_path / "in"], out, keep_work=True), log=msgs.append)
    assert any("12 input file(s) have a new mtime" in x and "resuming" in x for x in msgs), msgs
    assert m["counts"] == ref["counts"] and shard_hashes(out) == shard_hashes(tmp_path / "ref")
    os.remove(out / "manifest.json")
    data = bytearray(open(paths[3], "rb").read())
    data[data.index(b";B[") + 3] ^= 1  # same size, another move
    with open(paths[3], "wb") as f:
        f.write(data)
    with pytest.raises(build.BuildError, match="unfinished build with other settings.*inputs"):
        build.build(cfg_for([tmp_path / "in"], out, keep_work=True), log=quiet)
    with open(paths[3], "wb") as f:  # the old bytes again, a newer mtime: resumes
        data[data.index(b";B[") + 3] ^= 1
        f.write(data)
    assert build.build(cfg_for([tmp_path / "in"], out, keep_work=True), log=quiet)["counts"] == ref["counts"]
    os.remove(out / "manifest.json")
    os.remove(out / ".work" / build.INPUT_HASHES)  # begun by a kifunet that did not record them
    os.utime(paths[0], ns=(os.stat(paths[0]).st_atime_ns, os.stat(paths[0]).st_mtime_ns + 10**9))
    with pytest.raises(build.BuildError, match="unfinished build with other settings.*inputs"):
        build.build(cfg_for([tmp_path / "in"], out, keep_work=True), log=quiet)


def test_symmetries_all_materialises_eight_copies(tmp_path):
    from kifunet.data_prep import symmetries as sym

    write_corpus(tmp_path / "in", 4, moves=16)
    m1 = build.build(cfg_for([tmp_path / "in"], tmp_path / "one"), log=quiet)
    m8 = build.build(cfg_for([tmp_path / "in"], tmp_path / "all", symmetries="all"), log=quiet)
    p = m1["splits"]["train"]["positions"]
    assert m8["splits"]["train"]["positions"] == p and m8["splits"]["train"]["rows"] == 8 * p
    r = Reader(str(tmp_path / "all"), "train", assemble=False)
    b = r.batch(np.arange(len(r)))
    key = list(zip(b["game_index"].tolist(), b["move_number"].tolist()))
    groups: dict = {}
    for i, k in enumerate(key):
        groups.setdefault(k, {})[int(b["symmetry"][i])] = i
    assert len(groups) == p and all(sorted(g) == list(range(8)) for g in groups.values())
    for g in list(groups.values())[:10]:
        base = g[0]
        for s, i in g.items():
            assert np.array_equal(b["stored"][i], sym.apply_planes(b["stored"][base], s))
            assert b["target"][i] == sym.apply_index(int(b["target"][base]), s, 9)


def test_splits_are_disjoint_and_complete(tmp_path):
    write_corpus(tmp_path / "in", 12, moves=20, date="2014-05-05")
    write_corpus(tmp_path / "in", 6, start=50, moves=20, date="2015-05-05")
    write_corpus(tmp_path / "in", 3, start=80, moves=20, date="2016-05-05")
    rule = splits.make_rule(["train:2000-2014", "test:2015"], val_fraction=0.3)
    m = build.build(cfg_for([tmp_path / "in"], tmp_path / "out", splits=rule), log=quiet)
    assert m["counts"]["filtered"] == {"no_split": 3}
    paths = {s: set(Reader(str(tmp_path / "out"), s).games()["path"]) for s in ("train", "test", "val")}
    assert len(paths["test"]) == 6 and len(paths["train"]) + len(paths["val"]) == 12 and paths["val"]
    assert not (paths["train"] & paths["val"]) and not (paths["train"] & paths["test"])
    assert {os.path.basename(p) for p in paths["test"]} == {f"g{i:04d}.sgf" for i in range(50, 56)}
    for s in ("train", "test", "val"):
        r = Reader(str(tmp_path / "out"), s)
        assert len(r) == m["splits"][s]["positions"] and m["splits"][s]["games"] == len(paths[s])


def test_gonn_preset_game_and_move_filters(tmp_path):
    d = tmp_path / "in"
    write_corpus(d, 3, br="6d", wr="6d", moves=20)  # used, both colours
    write_corpus(d, 3, start=10, br="7d", wr="2k", moves=20)  # used, black's moves only
    write_corpus(d, 2, start=20, br="6d", wr="5d", moves=20)  # game_rank
    write_corpus(d, 2, start=30, br="7d", wr="7d", ha=3, moves=20)  # handicap
    opts = filters.resolve(preset="gonn-kgs", overrides={"board_size": 9, "splits": ["train:2015"]})
    cfg = cfg_for([d], tmp_path / "out", filters=filters.filters_from_options(opts),
                  splits=splits.make_rule(opts["splits"]))
    m = build.build(cfg, log=quiet)
    assert m["counts"]["filtered"] == {"game_rank": 2, "handicap": 2} and m["counts"]["used"] == 6
    r = Reader(str(tmp_path / "out"), "train")
    b = r.batch(np.arange(len(r)))
    assert (b["player_rank"] >= 5).all()
    fs = features.get("maddison")
    expect = 0
    for i in list(range(3)) + list(range(10, 13)):
        enc, keep = expected_rows(str(d / f"g{i:04d}.sgf"), fs)
        expect += int((keep & (enc.player_rank >= 5)).sum())
    assert len(r) == expect
    assert m["counts"]["positions"]["filtered"]["min_rank"] > 0


SITE = """
import os
from kifunet.data_prep.sgf import sgf_io
_orig = sgf_io.load_game
def load_game(source, *, path=None):
    if path and path.endswith("crashme.sgf"):
        os.abort()
    return _orig(source, path=path)
sgf_io.load_game = load_game
"""


@pytest.mark.slow
def test_worker_crash_rejects_the_record_and_keeps_the_rest(tmp_path):
    d = tmp_path / "in"
    write_corpus(d, 9, moves=20)
    (d / "g0004crashme.sgf").write_bytes(random_game(99, moves=20))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    env = {"PYTHONPATH": str(site) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = _cli([d, "--out", tmp_path / "out", "--board-size", "9", "--workers", "2", "--unit-games", "3"], env=env)
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    err = proc.stderr.read().decode()
    assert "worker crashed on" in err and "crashme" in err
    m = json.load(open(tmp_path / "out" / "manifest.json"))
    assert m["counts"]["rejected"] == {"worker_crash": 1} and m["counts"]["used"] == 9
    ref = build.build(cfg_for([d], tmp_path / "ref", unit_games=3, seed=0,
                              storage=Storage()), log=quiet)
    assert ref["counts"]["used"] == 10  # without the crash hook the record is fine


# ------------------------------------------------------------------------------------------------------------
# real data (slow): the GoNN KGS protocol against a count made straight from sgfmill

KGS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "kgs")
ACCEPTANCE_TRAIN = ["KGS-2001-19-2298-.tar.gz", "KGS-2002-19-3646-.tar.gz", "KGS-2003-19-7582-.tar.gz",
                    "KGS-2006-19-10388-.tar.gz", "KGS-2017_01-19-733-.tar.gz", "KGS-2017_02-19-525-.tar.gz",
                    "KGS-2017_03-19-717-.tar.gz", "KGS-2017_04-19-913-.tar.gz"]


def _kgs_rank(text: str) -> int | None:
    """KGS rank text -> 1d=0..9d=8, pros 9.., kyu -k (independent of kifunet.data_prep.ranks)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*([dkp])\??\s*", text or "")
    if not m:
        return None
    v, unit = int(m.group(1)), m.group(2)
    return v - 1 if unit == "d" else 8 + v if unit == "p" else -v


def _ident_text(text: str, space: str = "") -> str:
    """NFKC, case-folded, runs of white space as ``space`` (the rule of kifunet.data_prep.game's docstring,
    written again here)."""
    import unicodedata

    return space.join(unicodedata.normalize("NFKC", text or "").casefold().split())


def _ident_number(text: str) -> str:
    import math

    t = _ident_text(text)
    try:
        v = float(t)
    except ValueError:
        return t
    return f"{v:g}" if math.isfinite(v) else t


def _ident_result(text: str) -> str:
    """``B+Resign`` = ``b+r``, ``W+Time`` = ``w+t``, ``B+3.50`` = ``b+3.5``."""
    r = _ident_text(text)
    if r[:2] in ("b+", "w+"):
        r = r[:2] + _ident_number({"resign": "r", "time": "t", "forfeit": "f"}.get(r[2:], r[2:]))
    return r


def _ident_props(root) -> tuple[str, ...]:
    """Players, date, result and time settings of a game, as its identity compares them (sgfmill only)."""
    def text(prop):
        if not root.has_property(prop):
            return ""
        return root.get_raw(prop).decode("utf-8", "replace") if prop == "TM" else root.get(prop)

    return (_ident_text(text("PB"), " "), _ident_text(text("PW"), " "), _ident_text(text("DT")),
            _ident_result(text("RE")), _ident_number(text("TM")), _ident_text(text("OT")))


def independent_gonn_count(archives) -> dict:
    """Per split (by DT year: 2015 test, else train), games and moves by >=6d players in non-handicap games
    where both players are >=6d or one is >=7d; games with an illegal move (occupied, suicide, simple-ko
    retake) or a copy of an earlier kept game (the same setup, moves, players, date, result and time settings,
    normalised as kifunet.data_prep.game's docstring says, computed here) excluded. sgfmill only."""
    from sgfmill import sgf

    out = {"train": [0, 0], "test": [0, 0], "illegal": 0, "duplicate": 0}
    seen = set()
    for name in sorted(archives):
        with tarfile.open(os.path.join(KGS, name), "r|gz") as tf:
            for m in tf:
                if not m.isfile() or not m.name.endswith(".sgf"):
                    continue
                game = sgf.Sgf_game.from_bytes(tf.extractfile(m).read())
                root = game.get_root()
                n = game.get_size()
                ha = int(root.get("HA")) if root.has_property("HA") else 0
                br = _kgs_rank(root.get("BR")) if root.has_property("BR") else None
                wr = _kgs_rank(root.get("WR")) if root.has_property("WR") else None
                if n != 19 or ha >= 2:
                    continue
                ok_ranks = (br is not None and wr is not None and min(br, wr) >= 5) or any(
                    r is not None and r >= 6 for r in (br, wr))
                if not ok_ranks:
                    continue
                year = int(root.get("DT")[:4])
                board = boards.Board(n)
                ab, aw, _ = root.get_setup_stones()
                for pt in ab:
                    board.play(*pt, "b")
                for pt in aw:
                    board.play(*pt, "w")
                ko, legal, moves, count = None, True, [], 0
                for node in game.get_main_sequence()[1:]:
                    colour, pt = node.get_move()
                    if colour is None:
                        continue
                    moves.append((colour, pt))
                    if pt is None:
                        ko = None
                        continue
                    if board.get(*pt) is not None or pt == ko:
                        legal = False
                        break
                    ko = board.play(*pt, colour)
                    if board.get(*pt) is None:  # suicide
                        legal = False
                        break
                    if (br if colour == "b" else wr) is not None and (br if colour == "b" else wr) >= 5:
                        count += 1
                if not legal:
                    out["illegal"] += 1
                    continue
                if count == 0:
                    continue
                key = (tuple(sorted(ab)), tuple(sorted(aw)), tuple(moves), _ident_props(root))
                if key in seen:
                    out["duplicate"] += 1
                    continue
                seen.add(key)
                split = "test" if year == 2015 else "train"
                out[split][0] += 1
                out[split][1] += count
    return out


@pytest.mark.slow
@pytest.mark.parametrize("which", ["2017-01", "acceptance"])
def test_gonn_kgs_protocol_matches_independent_count(tmp_path, which):
    archives = (["KGS-2017_01-19-733-.tar.gz"] if which == "2017-01"
                else ACCEPTANCE_TRAIN + ["KGS-2015-19-8133-.tar.gz"])
    for a in archives:
        require_path(os.path.join(KGS, a), "the real KGS archive")
    from kifunet.cli import build_parser
    from kifunet.commands.build import config_from_args

    argv = ["build", *[os.path.join(KGS, a) for a in archives], "--out", str(tmp_path / "out"),
            # the counts do not depend on the feature set: agz, the cheapest to encode (maddison reads liberties)
            "--features", "agz", "--preset", "gonn-kgs", "--split", "train:2000-2014,2016-2017",
            "--split", "test:2015", "--workers", "2",
            # nor on the ownership targets, which would double the build's CPU time (docs/tests.md), nor on the
            # shards' compression and the disk-space estimate's extra pass (alone: 37.7 s instead of 46.3 s)
            "--no-targets", "--compression", "none", "--no-space-check"]
    cfg = config_from_args(build_parser().parse_args(argv))
    cfg.progress = False
    m = build.build(cfg, log=quiet)
    want = independent_gonn_count(archives)
    c = m["counts"]
    assert c["seen"] == c["used"] + sum(c["filtered"].values()) + sum(c["rejected"].values())
    assert sum(v for k, v in c["rejected"].items() if k.startswith("illegal_move")) == want["illegal"]
    # no copy of a game passes the GoNN filter (the 4 copies in the archives are 0-33 move games below it);
    # the games that only share their moves with another (short games, one 290-move game) are all kept
    assert c["filtered"].get("duplicate", 0) == want["duplicate"] == 0
    for split in ("train", "test"):
        got = m["splits"].get(split, {"games": 0, "positions": 0})
        assert (got["games"], got["positions"]) == tuple(want[split]), split
    assert m["splits"]["train"]["positions"] > 0
    if which == "acceptance":  # the "Measured: ..." sentence of this build (docs/building.md), every figure of it
        r = readme_gonn_build_figures()
        assert (c["seen"], c["used"], sum(c["filtered"].values())) == (r["seen"], r["used"], r["filtered"]), c
        assert c["filtered"] == r["filtered_by"] and sum(c["rejected"].values()) == r["rejected"], c
        for split in ("train", "test"):
            assert (m["splits"][split]["games"], m["splits"][split]["positions"]) == r[split], split


def readme_gonn_build_figures() -> dict:
    """The figures of the docs/building.md sentence "Measured: N records seen = N used + N filtered (N reason, ...)
    + N rejected; train N games / N positions, test N games / N positions"."""
    import re

    from docs_pages import page

    text = " ".join(page("building").split())
    num = r"(\d[\d,]*)"
    m = re.search(rf"Measured: {num} records seen = {num} used \+ {num} filtered \(([^)]*)\) \+ {num} rejected; "
                  rf"train {num} games / {num} positions, test {num} games / {num} positions", text)
    assert m, "docs/building.md: the GoNN KGS build's 'Measured:' sentence is not in the form this test reads"
    n = [int(x.replace(",", "")) if i != 3 else x for i, x in enumerate(m.groups())]
    by = {}
    for part in n[3].split(", "):
        count, reason = part.split()
        by[reason] = int(count.replace(",", ""))
    return {"seen": n[0], "used": n[1], "filtered": n[2], "filtered_by": by, "rejected": n[4],
            "train": (n[5], n[6]), "test": (n[7], n[8])}


def test_undecodable_file_names_and_a_bug_on_one_record(tmp_path, monkeypatch):
    d = tmp_path / "in"
    write_corpus(d, 3, moves=16)
    odd = os.path.join(os.fsencode(str(d)), b"\xff\xfeodd.sgf")  # not UTF-8: str paths carry surrogates
    with open(odd, "wb") as f:
        f.write(random_game(50, moves=16))
    (d / "zz-bug.sgf").write_bytes(random_game(51, moves=16))
    real = replay.encode_game

    def buggy(record, fs, *, path=None, **kw):
        if path and path.endswith("zz-bug.sgf"):
            raise ZeroDivisionError("a bug")
        return real(record, fs, path=path, **kw)

    monkeypatch.setattr(replay, "encode_game", buggy)
    m = build.build(cfg_for([d], tmp_path / "out"), log=quiet)
    assert m["counts"]["used"] == 4 and m["counts"]["rejected"] == {"internal_error": 1}
    paths = list(Reader(str(tmp_path / "out"), "train").games()["path"])
    assert any(p.endswith("\ufffd\ufffdodd.sgf") for p in paths)
    rej = [json.loads(x) for x in open(tmp_path / "out" / "rejects.jsonl", encoding="utf-8")]
    assert rej[0]["path"].endswith("zz-bug.sgf") and "ZeroDivisionError" in rej[0]["detail"]


def test_build_modules_use_only_public_names_of_each_other():
    """The orchestration, the stages, the pool and the TFDS builder reach into no other module's private names."""
    import re
    from pathlib import Path

    root = Path(build.__file__).parent
    mods = ("build", "encode_stage", "plan_stage", "write_stage", "worker_pool", "progress", "manifest")
    attr = re.compile(r"\b(?:%s)(?:_mod)?\._[A-Za-z]" % "|".join(mods))
    frm = re.compile(r"^from \.+(?:\w+\.)?(?:%s) import .*\b_[A-Za-z]" % "|".join(mods), re.M)
    for name in (*mods, "tfds_go_moves"):
        src = next(root.parent.glob(f"*/{name}.py")).read_text()  # data_prep/<sub-package>/<name>.py
        assert not attr.findall(src) and not frm.findall(src), name
    from kifunet.data_prep.building import plan_stage

    assert plan_stage.shard_sizes(10, 4) == [4, 3, 3] and plan_stage.shard_sizes(0, 4) == []
    assert plan_stage.reject_line({"path": "p", "status": "filtered", "reason": "r", "detail": "", "move": "D4",
                                   "split": "train"}) == {"path": "p", "status": "filtered", "reason": "r",
                                                          "move": "D4"}


# ------------------------------------------------------------------------------------------------------------
# narrow columns (issue 13, item 1): every value the parser accepts is stored right or the record is rejected
# with a named reason in the encode stage; never an OverflowError at the end of the build

def _sgf(n: int, first: str, *, moves: int = 3, root: str = "", passes: bool = True) -> bytes:
    """A legal game on an n x n board: ``first`` (an SGF point) by black, then passes (``moves`` in all)."""
    seq = [f";B[{first}]"] + [";W[]" if i % 2 else ";B[]" for i in range(1, moves)]
    head = f"(;GM[1]FF[4]SZ[{n}]PB[b]PW[w]BR[6d]WR[7d]DT[2015-01-01]KM[6.5]{root}"
    return (head + "".join(seq) + ")").encode()


# (name, board size, SGF, expected: ("ok", {games-table column: value}) or ("rejected", reason))
LIMIT_TABLE = [
    ("handicap_127", 19, _sgf(19, "aa", root="HA[127]"), ("ok", {"handicap": 127})),
    ("handicap_128", 19, _sgf(19, "ab", root="HA[128]"), ("rejected", "bad_handicap")),
    ("handicap_NxN", 19, _sgf(19, "ac", root="HA[361]"), ("rejected", "bad_handicap")),
    ("handicap_NxN_9x9", 9, _sgf(9, "aa", root="HA[81]"), ("ok", {"handicap": 81})),
    ("ranks_extremes", 19, _sgf(19, "ad").replace(b"BR[6d]WR[7d]", b"BR[9p]WR[99k]"),
     ("ok", {"black_rank": 17, "white_rank": -30})),
    ("rank_unknown", 19, _sgf(19, "ae").replace(b"BR[6d]", b"BR[?]"), ("ok", {"black_rank": -128})),
    ("year_9999", 19, _sgf(19, "af").replace(b"DT[2015-01-01]", b"DT[9999-12-31]"), ("ok", {"year": 9999})),
    ("komi_beyond_float32", 19, _sgf(19, "ag").replace(b"KM[6.5]", b"KM[1e39]"), ("ok", {"komi": np.nan})),
    ("komi_float32_max", 19, _sgf(19, "ah").replace(b"KM[6.5]", b"KM[3e38]"), ("ok", {"komi": np.float32(3e38)})),
    ("moves_1000_passes", 5, _sgf(5, "aa", moves=1000), ("ok", {"num_moves": 1000, "positions": 1000})),
    ("moves_32767", 5, _sgf(5, "bb", moves=32767), ("ok", {"num_moves": 32767, "positions": 32767})),
    ("moves_32768", 5, _sgf(5, "cc", moves=32768), ("rejected", "too_many_moves")),
    ("moves_40000", 5, _sgf(5, "dd", moves=40000), ("rejected", "too_many_moves")),
]


def test_narrow_columns_at_their_limits_build_or_reject(tmp_path):
    from kifunet.data_prep.datasets.shards import ShardFile, read_games_table

    for n in sorted({row[1] for row in LIMIT_TABLE}):
        rows = [r for r in LIMIT_TABLE if r[1] == n]
        d = tmp_path / f"in{n}"
        d.mkdir()
        for name, _, data, _ in rows:
            (d / f"{name}.sgf").write_bytes(data)
        out = tmp_path / f"out{n}"
        m = build.build(cfg_for([d], out, filters=filters.Filters(board_size=n, include_passes=True),
                                shard_rows=65536, unit_games=4), log=quiet)
        c = m["counts"]
        assert c["seen"] == len(rows) == c["used"] + sum(c["filtered"].values()) + sum(c["rejected"].values())
        assert not c["filtered"]
        want_rej = {}
        for _, _, _, (status, v) in rows:
            if status == "rejected":
                want_rej[v] = want_rej.get(v, 0) + 1
        assert c["rejected"] == want_rej, n
        rej = {os.path.basename(x["path"]): x for x in map(json.loads, open(out / "rejects.jsonl"))}
        games = read_games_table(str(out / "train" / "games.h5"))
        names = [os.path.basename(p)[:-4] for p in games["path"]]
        cols = {}
        for s in m["splits"]["train"]["shards"]:
            f = ShardFile(str(out / s["file"]))
            for k, v in f.read_columns(0, len(f)).items():
                cols.setdefault(k, []).append(v)
        cols = {k: np.concatenate(v) for k, v in cols.items()}
        for name, _, data, (status, want) in rows:
            if status == "rejected":
                assert rej[f"{name}.sgf"]["reason"] == want and name not in names, name
                assert "range of the" in rej[f"{name}.sgf"]["detail"]
                continue
            gi = names.index(name)
            for col, v in want.items():
                got = games[col][gi]
                assert (np.isnan(got) if isinstance(v, float) and np.isnan(v) else got == v), (name, col, got)
            mine = cols["game_index"] == gi
            assert mine.sum() == games["positions"][gi]
            # move numbers are 1..num_moves, unwrapped; ranks are the game's
            assert np.array_equal(np.sort(cols["move_number"][mine].astype(np.int64)),
                                  np.arange(1, int(games["num_moves"][gi]) + 1))
            black = cols["to_move"][mine] == 1
            assert set(cols["player_rank"][mine][black].tolist()) == {int(games["black_rank"][gi])}


def test_values_no_column_holds_are_rejected_not_crashed(tmp_path, monkeypatch):
    """Values the parser cannot produce today (it clamps ranks, reads 4-digit years, caps the board at 19) are
    rejected by the same check, so a parser change cannot bring the crash back; and no later stage (shards,
    TFDS features) is narrower than the spill."""
    from kifunet.data_prep.building import encode_stage
    from kifunet.data_prep.datasets import shards

    ints = [k for k, dt in shards.GAME_NUM_COLUMNS.items() if np.issubdtype(dt, np.integer)]
    assert sorted(encode_stage.COLUMN_LIMITS) == sorted(ints)  # a new integer column needs a rule
    real = sgf_io.load_game
    tweaks = {"rank": ("black_rank", 128), "rank_low": ("white_rank", -129), "year": ("year", 32768),
              "size": ("size", 128)}

    def load(source, *, path=None):
        rec = real(source, path=path)
        for key, (field, v) in tweaks.items():
            if os.path.basename(path or "").startswith(key + "."):
                setattr(rec.info, field, v)
                if field == "size":
                    rec.size = v
        return rec

    monkeypatch.setattr(sgf_io, "load_game", load)
    d = tmp_path / "in"
    for i, key in enumerate([*tweaks, "fine"]):
        write_corpus(d, 1, start=i, moves=10)
        os.rename(d / f"g{i:04d}.sgf", d / f"{key}.sgf")
    m = build.build(cfg_for([d], tmp_path / "out"), log=quiet)
    c = m["counts"]
    assert c["seen"] == 5 and c["used"] == 1 and not c["filtered"]
    assert c["rejected"] == {"bad_rank": 2, "bad_year": 1, "board_size": 1}
    # spill -> shard columns -> TFDS features: no stage narrows a value the one before it holds
    spill = encode_stage.SPILL_DTYPE
    for k, dt in shards.COLUMN_DTYPES.items():
        assert np.can_cast(spill["game"] if k == "game_index" else spill[k], dt, "safe"), k
    g = shards.GAME_NUM_COLUMNS
    for k, src in (("move_number", "num_moves"), ("player_rank", "black_rank"), ("opponent_rank", "white_rank")):
        assert np.can_cast(g[src], spill[k], "safe"), k
    require_module("tensorflow_datasets")
    from kifunet.data_prep.building import tfds_go_moves

    feats = tfds_go_moves.example_features(19, 27)
    for k in ("target", "to_move", "move_number", "player_rank", "opponent_rank", "outcome"):
        assert np.can_cast(spill[k], np.dtype(feats[k].np_dtype), "safe"), k


# ------------------------------------------------------------------------------------------------------------
# empty results (issue 13, item 9): exit 2 with the accounting unless --allow-empty

@pytest.mark.parametrize("case", ["empty_dir", "all_filtered", "all_rejected"])
def test_build_with_no_positions_exits_2_unless_allowed(tmp_path, capsys, case):
    from kifunet.cli import main

    d = tmp_path / "in"
    d.mkdir()
    if case == "all_filtered":
        write_corpus(d, 3, moves=12)  # 9x9 games, built for 19x19: all filtered (board_size)
    elif case == "all_rejected":
        for i in range(3):
            (d / f"bad{i}.sgf").write_bytes(b"(;GM[1]SZ[9];B[cc];W[dd")
    out = tmp_path / "out"
    argv = ["build", str(d), "--out", str(out), "--workers", "0", "--no-progress"]
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert "kifunet build: error: no positions written" in cap.err and "--allow-empty" in cap.err
    seen = {"empty_dir": 0, "all_filtered": 3, "all_rejected": 3}[case]
    assert f"{seen} records seen" in cap.out and "train: 0 games, 0 positions" in cap.out  # the accounting
    if case != "empty_dir":
        assert ("filtered board_size: 3" if case == "all_filtered" else "rejected parse_error: 3") in cap.out
    assert json.load(open(out / "manifest.json"))["counts"]["seen"] == seen  # inspectable
    assert main(argv) == 2  # a rerun finds the finished build and fails the same way
    assert "no positions written" in capsys.readouterr().err
    assert main(argv + ["--allow-empty"]) == 0
    assert "error" not in capsys.readouterr().err
    assert main(argv + ["--allow-empty", "--out", str(tmp_path / "out2")]) == 0
    if case == "all_filtered":  # an empty split is fine as long as another split has positions
        capsys.readouterr()
        assert main(["build", str(d), "--out", str(tmp_path / "out3"), "--board-size", "9", "--workers", "0",
                     "--no-progress", "--split", "test:2016", "--split", "train:rest"]) == 0
        assert "test: 0 games, 0 positions" in capsys.readouterr().out

