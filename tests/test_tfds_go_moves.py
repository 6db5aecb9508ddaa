"""The TFDS builder ``go_moves`` (data_prep/building/tfds_go_moves.py) against ``kifunet build`` on the same small archive.

* built in a subprocess where TensorFlow cannot be imported, read back there with ``tfds.data_source``;
* same splits, example counts, full planes and columns as the HDF5 build (as multisets: the orders differ),
  same accounting and rejects (a damaged game is reported with its path, not dropped);
* training runs a few steps from the TFDS source (``--config.dataset=tfds:DIR``);
* `kifunet tfds` from the command line with `kifunet build`'s options (`--split train:rest --val-fraction 0.1`
  over the named config) gives the HDF5 build's positions, options and summary, and two runs (in two processes,
  workers 0 and 2) write byte-identical files; an empty result exits 2 with the accounting as `kifunet build`
  does; `kifunet train` fails alike on both containers without train rows; docs/tfds.md's `workers=2`
  example runs as a script without a main guard (issue 19);
* the Apache Beam path (DirectRunner, two processes) on the small archive and real KGS games writes the same
  records, metadata and rejects as the one-machine build and the HDF5 build's positions and accounting. It needs
  ``apache-beam``, which pins protobuf below 7, so it runs in an environment of its own (``.ci-beam-venv``, made by
  ``python tests/beam_env.py``, which ``.ci/run`` runs): ``test_beam_test_passes_in_the_beam_environment`` runs it
  there with that environment's pytest (in CI too; skipped locally without the venv); in the project's environment
  the test itself is skipped (``@pytest.mark.manual``).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import require, require_module

require_module("tensorflow_datasets")
require_module("array_record")

from kifunet.cli import main as cli_main  # noqa: E402
from kifunet.data_prep.building import filters
from kifunet.data_prep.datasets import shards  # noqa: E402
from kifunet.data_prep.datasets.reader import Reader  # noqa: E402
from test_build import random_game  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TINY = str(REPO / "train" / "configs" / "tiny.py")
CONFIG = "kgs_maddison"  # preset gonn-kgs: both >= 6d, no handicap, moves by >= 6d; train 2000-2014, test 2015

# Runs in a fresh interpreter: every finder is told that `tensorflow` does not exist (as if not installed).
BUILD_SCRIPT = r"""
import importlib.util, json, sys

class NoTensorFlow:
    def __init__(self, inner):
        self.inner = inner
    def find_spec(self, name, path=None, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            return None
        return self.inner.find_spec(name, path, target)

sys.meta_path[:] = [NoTensorFlow(f) if hasattr(f, "find_spec") else f for f in sys.meta_path]
assert importlib.util.find_spec("tensorflow") is None
try:
    import tensorflow  # noqa: F401
    raise SystemExit("tensorflow importable")
except ImportError:
    pass

import numpy as np
import tensorflow_datasets as tfds
from kifunet.data_prep.building import tfds_go_moves
from kifunet.data_prep.datasets import tfds_reader
from kifunet.data_prep.planes import features

manual, data_dir, out, config = sys.argv[1:5]
b = tfds_go_moves.GoMoves(config=config, data_dir=data_dir)
b.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual))
fs = features.get(tfds_reader.kifunet_metadata(b)["features"]["name"])
res = {"splits": list(b.info.splits), "file_format": str(b.info.file_format.value), "dir": str(b.data_dir),
       "meta": tfds_reader.kifunet_metadata(b)}
for split in res["splits"]:
    ds = tfds.data_source(f"go_moves/{config}", data_dir=data_dir, split=split)
    batch = tfds_reader.decode([ds[i] for i in range(len(ds))], fs)
    batch["game"] = batch["game"].astype(str)
    np.savez(f"{out}/{split}.npz", **batch)
res["tensorflow_loaded"] = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
json.dump(res, open(f"{out}/result.json", "w"))
"""


def _add(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    tf.addfile(ti, io.BytesIO(data))


#: the RE of the used games of make_inputs (None: no RE); train0 keeps B+R, which its commented copy replaces
RESULTS = {"train0": "B+R", "train1": "W+3.5", "train2": "Void", "test0": "0", "test1": None}
#: the outcome of their positions, (black to move, white to move)
OUTCOMES = {"train0": (1, -1), "train1": (-1, 1), "train2": (-128, -128), "test0": (0, 0), "test1": (-128, -128)}
COLUMNS = ("target", "to_move", "move_number", "player_rank", "opponent_rank", "outcome")


def make_inputs(root: Path) -> Path:
    """A manual_dir: one .tar.gz (train and test games, a duplicate, a weak game, a damaged record, a README) and
    one loose .sgf file. 19x19 random legal games of 30 moves; the used games end every way an outcome can take
    (:data:`RESULTS`: a black win, a white win, a void game, a draw, no ``RE``)."""
    manual = root / "manual"
    manual.mkdir(parents=True)
    with tarfile.open(manual / "kgs-small.tar.gz", "w:gz") as tf:
        for i in range(3):
            _add(tf, f"kgs/2014/train{i}.sgf", random_game(i, n=19, moves=30, date=f"2014-0{i + 1}-01",
                                                           result=RESULTS[f"train{i}"]))
        _add(tf, "kgs/2015/test0.sgf", random_game(10, n=19, moves=30, date="2015-02-01", result=RESULTS["test0"]))
        # train0 downloaded twice, one copy commented: the same game (another date would be another game)
        _add(tf, "kgs/2014/copy-of-train0.sgf", random_game(0, n=19, moves=30, date="2014-01-01").replace(
            b"RE[B+R]", b"RE[B+R]C[downloaded twice]"))
        _add(tf, "kgs/2014/weak.sgf", random_game(20, n=19, moves=30, date="2014-06-01", br="1k", wr="2k"))
        _add(tf, "kgs/2014/damaged.sgf", b"(;GM[1]FF[4]SZ[19]DT[2014-07-01]BR[7d]WR[7d];B[pd];W[dp];B[")
        _add(tf, "kgs/README.txt", b"not a game")
    (manual / "loose").mkdir()
    (manual / "loose" / "test1.sgf").write_bytes(random_game(11, n=19, moves=30, date="2015-03-01",
                                                             result=RESULTS["test1"]))
    return manual


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(HDF5 dataset dir, TFDS result dict, directory of the TFDS split arrays)."""
    root = tmp_path_factory.mktemp("tfds_go_moves")
    manual = make_inputs(root)
    h5 = root / "hdf5"
    assert cli_main(["build", str(manual), "--out", str(h5), "--preset", "gonn-kgs", "--features", "maddison",
                     "--workers", "0", "--shard-size", "64", "--chunk-rows", "32", "--no-progress"]) == 0
    out = root / "tfds_out"
    out.mkdir()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, "-c", BUILD_SCRIPT, str(manual), str(root / "tfds_data"), str(out), CONFIG],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    res = json.loads((out / "result.json").read_text())
    res["manual"] = str(manual)
    return h5, res, out


def _sorted_rows(batch: dict, games: np.ndarray) -> dict:
    order = np.lexsort((batch["move_number"], games))
    return {k: v[order] for k, v in batch.items()} | {"game": games[order]}


@pytest.mark.slow
def test_same_positions_splits_and_accounting_as_the_hdf5_build(built):
    h5, res, out = built
    manifest = json.loads((h5 / "manifest.json").read_text())
    assert res["tensorflow_loaded"] == []
    assert res["file_format"] == "array_record"
    assert res["splits"] == list(manifest["splits"]) == ["train", "test"]
    meta = res["meta"]
    assert meta["features"]["name"] == "maddison" and meta["point_bytes"] == 4 and meta["preset"] == "gonn-kgs"
    assert meta["counts"] == manifest["counts"]
    assert meta["splits"] == {s: {"games": v["games"], "positions": v["positions"], "results": v["results"]}
                              for s, v in manifest["splits"].items()}
    assert meta["counts"]["used"] == 5 and meta["counts"]["filtered"] == {"duplicate": 1, "game_rank": 1}
    res_games = {k: v["games"] for k, v in meta["counts"]["results"].items() if v["games"]}
    assert res_games == {"resign": 1, "score": 1, "void": 1, "draw": 1, "unknown": 1}
    for split in res["splits"]:
        r = Reader(str(h5), split)
        want = r.batch(np.arange(len(r)))
        want_games = r.games()["game_id"][want["game_index"]].astype(str)
        # the value targets: each game's result, from the side of the player to move
        names = [os.path.basename(p)[:-4] for p in r.games()["path"][want["game_index"]]]
        black = want["to_move"] == 1
        expect = np.array([OUTCOMES[n][0 if b else 1] for n, b in zip(names, black)])
        assert np.array_equal(want["outcome"], expect) and want["outcome"].dtype == np.int8
        got = dict(np.load(out / f"{split}.npz", allow_pickle=False))
        assert len(got["target"]) == len(r) == manifest["splits"][split]["positions"] > 0
        w, g = _sorted_rows(want, want_games), _sorted_rows(got, got["game"])
        assert np.array_equal(w["game"], g["game"])
        assert g["planes"].shape == (len(r), 19, 19, 36) and g["planes"].dtype == np.uint8
        assert np.array_equal(w["planes"], g["planes"])
        for k in COLUMNS:
            assert g[k].dtype == shards.COLUMN_DTYPES[k]
            assert np.array_equal(w[k], g[k]), k
        # TFDS's record order (hash of the key) already mixes the games
        assert len(np.unique(got["game"][: len(r) // 2])) == len(np.unique(got["game"]))


def test_damaged_and_filtered_games_are_reported_not_dropped(built):
    h5, res, _ = built
    lines = [json.loads(x) for x in (Path(res["dir"]) / "rejects.jsonl").read_text().splitlines()]
    assert lines == [json.loads(x) for x in (h5 / "rejects.jsonl").read_text().splitlines()]
    by_path = {x["path"].split("!")[-1]: x for x in lines}
    assert by_path["kgs/2014/damaged.sgf"]["status"] == "rejected"
    assert by_path["kgs/2014/damaged.sgf"]["path"].endswith("kgs-small.tar.gz!kgs/2014/damaged.sgf")
    assert by_path["kgs/2014/copy-of-train0.sgf"]["reason"] == "duplicate"
    assert by_path["kgs/2014/weak.sgf"]["reason"] == "game_rank"
    c = res["meta"]["counts"]
    assert c["seen"] == c["used"] + sum(c["filtered"].values()) + sum(c["rejected"].values()) == 8
    assert res["meta"]["inputs"][0]["ignored"] == 1  # the README


def test_training_runs_from_the_tfds_source(built, tmp_path):
    pytest.importorskip("jax")
    from kifunet.train import configs, metric_writer, train

    _, res, _ = built
    cfg = configs.load(TINY, [("dataset", f"tfds:{res['dir']}"), ("train_positions", "96"),
                              ("log_every_steps", "1"), ("eval_every_positions", "0"),
                              ("checkpoint_every_positions", "0"), ("final_eval_positions", "32")])
    out = train.train_and_evaluate(cfg, str(tmp_path / "w"))
    assert out["step"] == 3 and out["positions"] == 96
    assert out["eval_positions"] == 32 and math.isfinite(out["nats"])
    rows = metric_writer.read_jsonl(str(tmp_path / "w" / "metrics_train.jsonl"))
    assert [r["step"] for r in rows] == [1, 2, 3] and all(math.isfinite(r["loss"]) for r in rows)


def test_tfds_source_batches_match_the_reader(built):
    pytest.importorskip("jax")
    from kifunet.data_prep.datasets import dataset, tfds_reader
    from kifunet.train import eval_batches
    from kifunet.train.data import open_blocks

    _, res, out = built
    info = dataset.describe(f"tfds:{res['dir']}", "test")
    assert info["features"] == "maddison" and info["num_planes"] == 36 and info["board_size"] == 19
    r = tfds_reader.TfdsReader(res["dir"], "test")
    assert len(r) == info["rows"]
    batches = list(eval_batches.eval_batches(open_blocks(f"tfds:{res['dir']}", "test"), batch_size=16))
    planes = np.concatenate([b["planes"] for b in batches])[: len(r)]
    assert np.array_equal(planes, np.load(out / "test.npz")["planes"])  # in record order, unaugmented
    # TfdsReader parses the records itself (decode_raw): the same as tfds.data_source + decode
    got, want = r.batch(np.arange(len(r))), np.load(out / "test.npz")
    for k in ("planes",) + COLUMNS:
        assert got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k]), k
    assert list(got["game"]) == list(want["game"])


def test_records_written_before_the_outcome_feature_read_as_unknown(built):
    """go_moves 1.1.0 records (no ``outcome`` feature) decode with ``outcome`` -128 and the other columns as
    written, by both decoders."""
    from tensorflow_datasets.proto import tf_example_pb2

    from kifunet.data_prep.planes import features
    from kifunet.data_prep.datasets import tfds_reader

    _, res, _ = built
    r = tfds_reader.TfdsReader(res["dir"], "train")
    idx = np.arange(len(r))
    new = r.batch(idx)
    assert set(new["outcome"].tolist()) == {1, -1, -128}  # train: B+R, W+3.5, Void
    old_records, old_dicts = [], []
    for raw in r.records(idx):
        ex = tf_example_pb2.Example.FromString(raw)
        del ex.features.feature["outcome"]
        old_records.append(ex.SerializeToString())
        f = ex.features.feature
        old_dicts.append({k: f[k].int64_list.value[0] for k in COLUMNS[:-1]} | {
            "planes": np.frombuffer(f["planes"].bytes_list.value[0], np.uint8).reshape(19, 19, 4),
            "game": f["game"].bytes_list.value[0]})  # as tfds.data_source gives a 1.1.0 record
    fs = features.get("maddison")
    for old in (tfds_reader.decode_raw(old_records, fs, 19), tfds_reader.decode(old_dicts, fs)):
        assert old["outcome"].dtype == np.int8 and (old["outcome"] == -128).all()
        for k in ("planes", "game") + COLUMNS[:-1]:
            assert np.array_equal(old[k], new[k]), k


#: The Beam test runs in the Beam environment (``.ci-beam-venv``, made by ``python tests/beam_env.py``; .ci/run makes
#: it): apache-beam pins protobuf < 7 and the project's environment has protobuf 7. There
#: test_beam_test_passes_in_the_beam_environment runs it, in CI too; here, in the project's environment, it is
#: skipped (marked manual, so CI allows that skip: it has run in the other environment).
BEAM_ENV = ("runs in the Beam environment (apache-beam pins protobuf < 7), where "
            "test_beam_test_passes_in_the_beam_environment runs it, in CI too; by hand: `python tests/beam_env.py`, "
            "then `.ci-beam-venv/bin/python -m pytest tests/test_tfds_go_moves.py::"
            "test_beam_direct_runner_builds_the_same_dataset`")
BEAM_TEST = "test_beam_direct_runner_builds_the_same_dataset"


@pytest.mark.slow
def test_beam_test_passes_in_the_beam_environment(kgs_2017_01, tmp_path):
    """The Beam test below, run by pytest with the Beam venv's Python: it must pass there, not skip. The venv is made
    here when missing or out of date (pip, about a minute, once), so `python -m pytest -q` alone runs it;
    .ci/run makes it before the suite (`python tests/beam_env.py`), where this finds it up to date."""
    import beam_env

    try:
        py = beam_env.create(quiet=True)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        require(False, f"the Beam environment {beam_env.VENV}", f"`python tests/beam_env.py` could not make it: {e}")
    env = dict(os.environ, JAX_PLATFORMS="cpu")  # CI=true too: a skip in there fails as here
    node = f"{Path(__file__).resolve().relative_to(REPO)}::{BEAM_TEST}"
    p = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra",
                        f"--basetemp={tmp_path / 'beam'}", node],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    summary = (p.stdout.strip().splitlines() or [""])[-1]
    assert p.returncode == 0 and "1 passed" in summary and "skipped" not in summary, \
        p.stdout[-6000:] + p.stderr[-3000:]


#: how many games of the real archive the Beam test takes (its first ones, in archive order; 25 used, 5,052
#: positions): a slice, since the whole month takes the DirectRunner 28 s (docs/tfds.md) on top of its fixed cost (two
#: worker processes, each importing Beam and TFDS: about 20 CPU-seconds of the test's 40)
REAL_GAMES = 40


def add_real_games(archive: Path, manual: Path) -> int:
    """Add the first :data:`REAL_GAMES` games of a real KGS archive (their SGF bytes and member names as in it) to
    ``manual`` in two .tar.gz archives, the second with a copy of a game of the first (a duplicate across Beam
    workers: the group-by on ``game_id`` drops it, as the build does). Returns the number of records added."""
    with tarfile.open(archive) as src:
        members = [m for m in src.getmembers() if m.isfile() and m.name.endswith(".sgf")][:REAL_GAMES]
        games = [(m.name, src.extractfile(m).read()) for m in members]
    half = len(games) // 2
    copy = next(g for g in games[:half] if b"HA[" not in g[1])  # not a handicap game: gonn-kgs would filter it
    parts = {"real-a.tar.gz": games[:half], "real-b.tar.gz": games[half:] + [("copy/" + copy[0], copy[1])]}
    for name, part in parts.items():
        with tarfile.open(manual / name, "w:gz") as tf:
            for member, data in part:
                _add(tf, member, data)
    return len(games) + 1


@pytest.mark.manual(BEAM_ENV)
def test_beam_direct_runner_builds_the_same_dataset(kgs_2017_01, tmp_path):
    """`kifunet tfds --beam` with the DirectRunner in two processes (the command of docs/tfds.md), on the small archive
    of :func:`make_inputs` (a duplicate, a weak game, a damaged record, every kind of result) and real KGS games
    (:func:`add_real_games`), against the one-machine build and `kifunet build` (HDF5) of the same directory with
    the same options: the same records in the same order and metadata as the one-machine build, the same
    accounting, rejects and positions (full planes and columns) as the HDF5 build."""
    pytest.importorskip("apache_beam", reason=BEAM_ENV)
    from kifunet.data_prep.building import tfds_go_moves as T
    from kifunet.data_prep.datasets.dataset import open_split

    manual = make_inputs(tmp_path)
    records = 8 + add_real_games(kgs_2017_01, manual)  # make_inputs: 8 records and a README
    h5 = tmp_path / "hdf5"
    assert cli_main(["build", str(manual), "--out", str(h5), "--preset", "gonn-kgs", "--features", "maddison",
                     "--workers", "0", "--no-progress", *CLI_OPTS]) == 0
    tfds_argv = ["tfds", "--config", CONFIG, "--manual-dir", str(manual), *CLI_OPTS]
    assert cli_main([*tfds_argv, "--data-dir", str(tmp_path / "gen")]) == 0
    assert cli_main([*tfds_argv, "--data-dir", str(tmp_path / "beam"), "--beam", "--runner=DirectRunner",
                     "--direct_num_workers=2", "--direct_running_mode=multi_processing"]) == 0
    gen, beam = _dataset_dir(tmp_path / "gen"), _dataset_dir(tmp_path / "beam")
    mg, mb = (json.loads((d / "metadata.json").read_text())["kifunet"] for d in (gen, beam))
    assert mb["builder"] == "beam" and mg["builder"] != "beam"
    assert {k: v for k, v in mb.items() if k != "builder"} == {k: v for k, v in mg.items() if k != "builder"}
    manifest = json.loads((h5 / "manifest.json").read_text())
    for k in ("preset", "options", "filters", "split_rule", "counts"):
        assert mb[k] == manifest[k], k
    assert mb["splits"] == {s: {"games": v["games"], "positions": v["positions"], "results": v["results"]}
                            for s, v in manifest["splits"].items()}
    c = mb["counts"]
    assert c["seen"] == records and c["filtered"]["duplicate"] == 2 and c["rejected"] and c["used"] > 20
    assert (beam / T.REJECTS).read_bytes() == (gen / T.REJECTS).read_bytes()
    lines = [json.loads(x) for x in (beam / T.REJECTS).read_text().splitlines()]
    assert lines == [json.loads(x) for x in (h5 / T.REJECTS).read_text().splitlines()]
    dups = sorted(x["path"].split("!")[0].rsplit("/", 1)[-1] for x in lines if x.get("reason") == "duplicate")
    assert dups == ["kgs-small.tar.gz", "real-b.tar.gz"]
    import tensorflow_datasets as tfds

    for split in ("train", "val"):
        x, y = (tfds.builder_from_directory(str(d)).as_data_source(split) for d in (beam, gen))
        assert len(x) == len(y) > 0
        assert [_canon(x[i]) for i in range(len(x))] == [_canon(y[i]) for i in range(len(y))]  # and same order
        r, t = open_split(str(h5), split), open_split(f"tfds:{beam}", split)
        assert len(t) == len(r) == manifest["splits"][split]["positions"] == len(x)
        want, got = r.batch(np.arange(len(r))), t.batch(np.arange(len(t)))
        w = _sorted_rows(want, r.games()["game_id"][want["game_index"]].astype(str))
        g = _sorted_rows(got, got["game"].astype(str))
        assert np.array_equal(w["game"], g["game"]) and np.array_equal(w["planes"], g["planes"])
        for k in COLUMNS:
            assert np.array_equal(w[k], g[k]), k


def _canon(rec: dict) -> tuple:
    """A decoded record as a comparable tuple (the serialized bytes may order the proto's feature map
    differently from one process to the next)."""
    return (rec["game"], *(int(rec[k]) for k in ("move_number", "target", "to_move", "player_rank",
                                                  "opponent_rank", "outcome")), rec["planes"].tobytes())


def test_gogod_preset():
    opts = filters.resolve(preset="gonn-gogod")
    f = filters.filters_from_options(opts)
    assert f.board_size == 19 and not f.no_handicap and f.min_rank is None and f.min_both_rank is None
    from kifunet.data_prep.building import splits

    rule = splits.make_rule(opts["splits"])
    assert rule.names() == ["train", "test"]
    assert [r.ranges for r in rule.dates] == [(("1900-00-00", "2014-99-99"),), (("2015-00-00", "2016-99-99"),)]


def test_builder_configs():
    from kifunet.data_prep.building import tfds_go_moves as T

    names = {c.name for c in T.GoMoves.BUILDER_CONFIGS}
    assert {"kgs_maddison", "kgs_gonn", "kgs_alphago", "kgs_agz", "gogod_maddison", "gogod_gonn"} <= names
    cfg = next(c for c in T.GoMoves.BUILDER_CONFIGS if c.name == "gogod_gonn")
    assert cfg.preset == "gonn-gogod" and cfg.features == "gonn"
    with pytest.raises(ValueError, match="dedupe"):
        T.GoMovesConfig(name="x", preset="gonn-kgs", options={"dedupe": False}).filters()


def test_kifunet_tfds_command_builds_and_prints_the_accounting(built, tmp_path, capsys):
    from kifunet.commands import tfds as tfds_cmd
    from kifunet.data_prep.building import tfds_go_moves

    assert set(tfds_cmd.CONFIGS) == {c.name for c in tfds_go_moves.GoMoves.BUILDER_CONFIGS}
    _, res, _ = built
    assert cli_main(["tfds", "--config", CONFIG, "--manual-dir", res["manual"], "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "8 records seen = 5 used + 2 filtered + 1 rejected" in out, out
    # Beam options without --beam are an error (exit 2, the CLI's error style), not silently dropped
    assert cli_main(["tfds", "--manual-dir", res["manual"], "--data-dir", str(tmp_path), "--runner=DirectRunner"]) == 2
    assert "Beam pipeline options need --beam" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------------------
# issue 19: the build's options, messages and reproducible bytes

CLI_OPTS = ["--split", "train:rest", "--val-fraction", "0.1"]


def make_years_inputs(root: Path) -> Path:
    """A manual_dir of 24 strong 19x19 games from 2013 to 2018 (two thirds outside gonn-kgs's 2000-2015 splits,
    which `--split train:rest` takes) and a weak one, in one .tar.gz."""
    manual = root / "manual"
    manual.mkdir(parents=True)
    with tarfile.open(manual / "kgs-years.tar.gz", "w:gz") as tf:
        for i in range(24):
            _add(tf, f"kgs/{2013 + i % 6}/g{i}.sgf", random_game(100 + i, n=19, moves=24,
                                                                  date=f"{2013 + i % 6}-03-0{1 + i % 9}"))
        _add(tf, "kgs/2017/weak.sgf", random_game(200, n=19, moves=24, date="2017-01-01", br="2k", wr="1k"))
    return manual


def _tfds_cli(args: list[str]) -> subprocess.CompletedProcess:
    """`kifunet tfds ARGS` in a fresh interpreter (a fresh protobuf hash seed, as two runs of the command)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "kifunet.cli", "tfds", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def _dataset_dir(data_dir: Path) -> Path:
    from kifunet.data_prep.building.tfds_go_moves import VERSION

    dirs = sorted(data_dir.glob(f"go_moves/*/{VERSION}"))
    assert len(dirs) == 1, dirs
    return dirs[0]


@pytest.fixture(scope="module")
def cli_built(tmp_path_factory):
    """The years archive built from the command line with `--split train:rest --val-fraction 0.1`: by `kifunet
    build --preset gonn-kgs` (HDF5, with its printed summary), and twice by `kifunet tfds --config kgs_maddison`,
    each in its own process (workers 0 and 2)."""
    import contextlib

    root = tmp_path_factory.mktemp("tfds_cli")
    manual = make_years_inputs(root)
    h5 = root / "hdf5"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["build", str(manual), "--out", str(h5), "--preset", "gonn-kgs", "--features", "maddison",
                         "--workers", "0", "--no-progress", *CLI_OPTS]) == 0
    runs = []
    for i, workers in enumerate(("0", "2")):
        p = _tfds_cli(["--config", CONFIG, "--manual-dir", str(manual), "--data-dir", str(root / f"tfds{i}"),
                       "--workers", workers, *CLI_OPTS])
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        runs.append((root / f"tfds{i}", p.stdout))
    return h5, out.getvalue(), runs


@pytest.mark.slow
def test_command_line_options_give_the_hdf5_builds_positions(cli_built):
    from kifunet.data_prep.datasets.dataset import open_split

    h5, h5_out, runs = cli_built
    manifest = json.loads((h5 / "manifest.json").read_text())
    d = _dataset_dir(runs[0][0])
    assert d.parent.name.startswith("kgs_maddison_")  # other options than the named config: its own directory
    meta = json.loads((d / "metadata.json").read_text())["kifunet"]
    for k in ("preset", "options", "filters", "split_rule", "counts"):
        assert meta[k] == manifest[k], k
    assert meta["options"]["splits"] == ["train:rest"] and meta["options"]["val_fraction"] == 0.1
    assert list(meta["splits"]) == list(manifest["splits"]) == ["train", "val"]
    assert meta["splits"] == {s: {"games": v["games"], "positions": v["positions"], "results": v["results"]}
                              for s, v in manifest["splits"].items()}
    c = meta["counts"]
    assert c["used"] == 24 and c["filtered"] == {"game_rank": 1}  # 2016+ games are used, not no_split
    assert manifest["splits"]["val"]["games"] > 0 and manifest["splits"]["train"]["games"] > 0
    for split in ("train", "val"):
        r, t = open_split(str(h5), split), open_split(f"tfds:{d}", split)
        want, got = r.batch(np.arange(len(r))), t.batch(np.arange(len(t)))
        w = _sorted_rows(want, r.games()["game_id"][want["game_index"]].astype(str))
        g = _sorted_rows(got, got["game"].astype(str))
        assert len(t) == len(r) == manifest["splits"][split]["positions"]
        assert np.array_equal(w["game"], g["game"]) and np.array_equal(w["planes"], g["planes"])
        for k in COLUMNS:
            assert np.array_equal(w[k], g[k]), k
    # one summary formatter: the same lines but for the location and the HDF5 shard counts
    h5_lines = [x.replace(str(h5), "DS").split(", ") for x in h5_out.splitlines()]
    tf_lines = [x.replace(str(d), "DS").split(", ") for x in runs[0][1].splitlines()]
    h5_lines = [[p for p in x if not p.endswith(" shards")] for x in h5_lines]
    assert [x for x in tf_lines if x[0] != "  details: DS/metadata.json"] == \
           [x for x in h5_lines if x[0] != "  details: DS/manifest.json"]
    assert "  filtered game_rank: 1" in h5_out.splitlines()


def test_two_tfds_builds_are_byte_identical(cli_built):
    import hashlib

    _, _, runs = cli_built

    def digests(root: Path) -> dict:
        return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file()}

    a, b = digests(runs[0][0]), digests(runs[1][0])
    records = [k for k in a if ".array_record-" in k]
    assert len(records) == 2 and {"dataset_info.json", "features.json", "metadata.json", "rejects.jsonl"} <= {
        Path(k).name for k in a}
    assert a == b


def test_tfds_and_build_share_one_option_surface():
    from kifunet.cli import build_parser
    from kifunet.commands import dataset_options

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    ref = argparse.ArgumentParser()
    dataset_options.add_dataset_options(ref)
    for action in ref._actions[1:]:
        for cmd in ("build", "tfds"):
            got = next(a for a in sub[cmd]._actions if a.dest == action.dest and
                       set(action.option_strings) <= set(a.option_strings))
            assert (got.default, got.type, got.help) == (action.default, action.type, action.help), (cmd, action)
    assert "--config" in next(a for a in sub["build"]._actions if a.dest == "options_file").option_strings


def test_named_configs_are_presets_under_the_options():
    from kifunet.commands.dataset_options import dataset_options
    from kifunet.data_prep.building import tfds_go_moves as T

    p = argparse.ArgumentParser()
    from kifunet.commands.tfds import add_arguments

    add_arguments(p)

    def config(*argv, name=None):
        args = p.parse_args(["--manual-dir", "M", "--data-dir", "D", *argv])
        base = T.named_config(args.config)
        return T.config_from_options(args.config, dataset_options(args, preset=base.preset, features=base.features,
                                                                  options=base.options), name=args.name)

    assert config() == "kgs_maddison" and config("--preset", "gonn-kgs", "--features", "maddison") == "kgs_maddison"
    assert config("--config", "gogod_agz") == "gogod_agz"
    assert config("--features", "agz") == "kgs_agz"  # the same positions as a named config: that config
    c = config("--split", "train:rest", "--val-fraction", "0.1")
    assert c.name.startswith("kgs_maddison_") and c.preset == "gonn-kgs" and c.features == "maddison"
    assert c.split_rule().names() == ["train", "val"] and c.filters().min_rank == 5  # the preset's filters stay
    assert config("--split", "train:rest", "--val-fraction", "0.1").name == c.name  # a deterministic name
    assert config("--split", "train:rest").name != c.name
    assert config("--split", "train:rest", "--name", "mine").name == "mine"
    with pytest.raises(ValueError, match="named config"):
        config("--split", "train:rest", "--name", "kgs_gonn")
    v = config("--result", "known", "--ended", "score,resign")  # the result filters: a custom config of their own
    assert v.name.startswith("kgs_maddison_") and v.name != c.name
    assert (v.filters().result, v.filters().ended) == ("known", ("resign", "score"))
    assert config("--ended", "resign,score").name == config("--ended", "score,resign").name  # one order
    with pytest.raises(ValueError, match="unknown result kind"):
        config("--ended", "resign,resin")
    g = config("--config", "gogod_gonn", "--min-rank", "5d", "--hash-split", "dev:0.05")
    assert g.preset == "gonn-gogod" and g.features == "gonn" and g.split_rule().names() == ["train", "test", "dev"]


def _years_only(root: Path, year: int) -> Path:
    d = root / f"only{year}"
    d.mkdir(parents=True)
    (d / "g.sgf").write_bytes(random_game(7, n=19, moves=24, date=f"{year}-05-01"))
    return d


def test_an_empty_tfds_build_exits_2_with_the_accounting_as_kifunet_build(tmp_path, capsys):
    manual = _years_only(tmp_path, 2016)  # gonn-kgs splits 2000-2014 / 2015: no split takes it
    data = tmp_path / "tfds"
    argv = ["tfds", "--config", CONFIG, "--manual-dir", str(manual), "--data-dir", str(data)]
    assert cli_main(argv) == 2
    cap = capsys.readouterr()
    d = _dataset_dir(data)
    assert "1 records seen = 0 used + 1 filtered + 0 rejected" in cap.out and "  filtered no_split: 1" in cap.out
    assert "  train: 0 games, 0 positions" in cap.out and "  test: 0 games, 0 positions" in cap.out
    err = [x for x in cap.err.splitlines() if "error" in x]
    assert err == [f"kifunet tfds: error: no positions written (1 records seen, 0 used, 1 filtered, 0 rejected); "
                   f"see {d / 'rejects.jsonl'}, or pass --allow-empty to accept an empty dataset"]
    # the HDF5 build of the same input says the same
    h5 = tmp_path / "h5"
    assert cli_main(["build", str(manual), "--out", str(h5), "--preset", "gonn-kgs", "--workers", "0",
                     "--no-progress"]) == 2
    h5_err = [x for x in capsys.readouterr().err.splitlines() if "error" in x]
    assert [x.replace(str(h5 / "rejects.jsonl"), "R").replace("kifunet build", "P") for x in h5_err] == \
           [x.replace(str(d / "rejects.jsonl"), "R").replace("kifunet tfds", "P") for x in err]
    assert cli_main(argv) == 2  # a rerun finds the finished (empty) dataset and fails the same way
    assert "no positions written" in capsys.readouterr().err
    assert cli_main(argv + ["--allow-empty"]) == 0
    assert "error" not in capsys.readouterr().err
    # the same name with other options is refused (TFDS would reuse the directory silently)
    assert cli_main(argv + ["--split", "train:rest", "--name", d.parent.name + "x"]) == 0
    assert cli_main(argv + ["--split", "test:2015", "--name", d.parent.name + "x"]) == 2
    assert "built with other split_rule" in capsys.readouterr().err
    (tmp_path / "none").mkdir()
    for m, why in ((tmp_path / "none", "the inputs hold no SGF record"), (tmp_path / "missing", "input not found")):
        assert cli_main(["tfds", "--manual-dir", str(m), "--data-dir", str(data)]) == 2
        assert why in capsys.readouterr().err


@pytest.mark.parametrize("case", ["no_train_split", "empty"])
def test_train_without_train_rows_fails_alike_on_both_containers(tmp_path, capsys, case):
    pytest.importorskip("jax")
    if case == "no_train_split":  # the rule has no train split
        manual, opts = _years_only(tmp_path, 2015), ["--split", "test:2015"]
    else:  # nothing written at all
        manual, opts = _years_only(tmp_path, 2016), ["--allow-empty"]
    assert cli_main(["build", str(manual), "--out", str(tmp_path / "h5"), "--preset", "gonn-kgs", "--workers", "0",
                     "--no-progress", *opts]) == 0
    assert cli_main(["tfds", "--config", CONFIG, "--manual-dir", str(manual), "--data-dir", str(tmp_path / "tf"),
                     *opts]) == 0
    d = _dataset_dir(tmp_path / "tf")
    msgs = []
    for i, (spec, where) in enumerate(((str(tmp_path / "h5"), str(tmp_path / "h5")), (f"tfds:{d}", str(d)))):
        capsys.readouterr()
        assert cli_main(["train", "--config", TINY, "--workdir", str(tmp_path / f"w{i}"),
                         f"--config.dataset={spec}"]) == 2
        err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
        assert len(err) == 1 and err[0].startswith("kifunet train: error: "), err
        msgs.append(err[0].replace("tfds:", "").replace(where, "DS"))
    want = {"no_train_split": "DS: no split 'train'; splits: test", "empty": "DS: split 'train' has no rows"}[case]
    assert msgs == [f"kifunet train: error: {want}"] * 2


#: the manual's first Python example on the TFDS page (section "From Python")
DOC_SCRIPT_PATTERN = r"## From Python\n.*?```python\n(.*?)```"


@pytest.mark.slow
def test_manual_workers_example_runs_as_a_script_without_main_guard(built, tmp_path):
    """docs/tfds.md's `workers=2` example, pasted into a script as is (no `if __name__ == "__main__":`)."""
    import re

    from docs_pages import page

    code = re.search(DOC_SCRIPT_PATTERN, page("tfds"), re.S).group(1)
    assert "workers=2" in code and "__main__" not in code
    code = textwrap.dedent(code).replace("DATA_DIR", str(tmp_path / "data")).replace("ARCHIVES_DIR",
                                                                                      built[1]["manual"])
    script = tmp_path / "example.py"
    script.write_text(code + "\nprint('splits', sorted(b.info.splits))\n")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "splits ['test', 'train']" in p.stdout
