"""The TFDS builder ``go_moves`` (data_prep/tfds_go_moves.py) against ``kifunet build`` on the same small archive.

* built in a subprocess where TensorFlow cannot be imported, read back there with ``tfds.data_source``;
* same splits, example counts, full planes and columns as the HDF5 build (as multisets: the orders differ),
  same accounting and rejects (a damaged game is reported with its path, not dropped);
* training runs a few steps from the TFDS source (``--config.dataset=tfds:DIR``);
* the Apache Beam path (DirectRunner) writes the same records, metadata and rejects. It needs ``apache-beam``,
  which pins protobuf below 7, so it is skipped in the project's environment and runs in the Beam one
  (``/root/beamenv/bin/python -m pytest tests/test_tfds_go_moves.py``; set-up commands and a real-archive check
  in ``benchmarks/bench_tfds_beam.py``).
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow_datasets")
pytest.importorskip("array_record")

from kifunet.cli import main as cli_main  # noqa: E402
from kifunet.data_prep import filters, shards  # noqa: E402
from kifunet.data_prep.reader import Reader  # noqa: E402
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
from kifunet.data_prep import features, tfds_go_moves

manual, data_dir, out, config = sys.argv[1:5]
b = tfds_go_moves.GoMoves(config=config, data_dir=data_dir)
b.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual))
fs = features.get(tfds_go_moves.kifunet_metadata(b)["features"]["name"])
res = {"splits": list(b.info.splits), "file_format": str(b.info.file_format.value), "dir": str(b.data_dir),
       "meta": tfds_go_moves.kifunet_metadata(b)}
for split in res["splits"]:
    ds = tfds.data_source(f"go_moves/{config}", data_dir=data_dir, split=split)
    batch = tfds_go_moves.decode([ds[i] for i in range(len(ds))], fs)
    batch["game"] = batch["game"].astype(str)
    np.savez(f"{out}/{split}.npz", **batch)
res["tensorflow_loaded"] = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
json.dump(res, open(f"{out}/result.json", "w"))
"""


def _add(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    tf.addfile(ti, io.BytesIO(data))


def make_inputs(root: Path) -> Path:
    """A manual_dir: one .tar.gz (train and test games, a duplicate, a weak game, a damaged record, a README) and
    one loose .sgf file. 19x19 random legal games of 30 moves."""
    manual = root / "manual"
    manual.mkdir(parents=True)
    with tarfile.open(manual / "kgs-small.tar.gz", "w:gz") as tf:
        for i in range(3):
            _add(tf, f"kgs/2014/train{i}.sgf", random_game(i, n=19, moves=30, date=f"2014-0{i + 1}-01"))
        _add(tf, "kgs/2015/test0.sgf", random_game(10, n=19, moves=30, date="2015-02-01"))
        _add(tf, "kgs/2014/copy-of-train0.sgf", random_game(0, n=19, moves=30, date="2014-05-05"))
        _add(tf, "kgs/2014/weak.sgf", random_game(20, n=19, moves=30, date="2014-06-01", br="1k", wr="2k"))
        _add(tf, "kgs/2014/damaged.sgf", b"(;GM[1]FF[4]SZ[19]DT[2014-07-01]BR[7d]WR[7d];B[pd];W[dp];B[")
        _add(tf, "kgs/README.txt", b"not a game")
    (manual / "loose").mkdir()
    (manual / "loose" / "test1.sgf").write_bytes(random_game(11, n=19, moves=30, date="2015-03-01"))
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


def test_same_positions_splits_and_accounting_as_the_hdf5_build(built):
    h5, res, out = built
    manifest = json.loads((h5 / "manifest.json").read_text())
    assert res["tensorflow_loaded"] == []
    assert res["file_format"] == "array_record"
    assert res["splits"] == list(manifest["splits"]) == ["train", "test"]
    meta = res["meta"]
    assert meta["features"]["name"] == "maddison" and meta["point_bytes"] == 4 and meta["preset"] == "gonn-kgs"
    assert meta["counts"] == manifest["counts"]
    assert meta["splits"] == {s: {"games": v["games"], "positions": v["positions"]}
                              for s, v in manifest["splits"].items()}
    assert meta["counts"]["used"] == 5 and meta["counts"]["filtered"] == {"duplicate": 1, "game_rank": 1}
    for split in res["splits"]:
        r = Reader(str(h5), split)
        want = r.batch(np.arange(len(r)))
        want_games = r.games()["moves_hash"][want["game_index"]].astype(str)
        got = dict(np.load(out / f"{split}.npz", allow_pickle=False))
        assert len(got["target"]) == len(r) == manifest["splits"][split]["positions"] > 0
        w, g = _sorted_rows(want, want_games), _sorted_rows(got, got["game"])
        assert np.array_equal(w["game"], g["game"])
        assert g["planes"].shape == (len(r), 19, 19, 36) and g["planes"].dtype == np.uint8
        assert np.array_equal(w["planes"], g["planes"])
        for k in ("target", "to_move", "move_number", "player_rank", "opponent_rank"):
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
    from kifunet.data_prep import tfds_go_moves
    from kifunet.train import input_pipeline

    _, res, out = built
    info = input_pipeline.describe(f"tfds:{res['dir']}", "test")
    assert info["features"] == "maddison" and info["num_planes"] == 36 and info["board_size"] == 19
    r = tfds_go_moves.TfdsReader(res["dir"], "test")
    assert len(r) == info["rows"]
    batches = list(input_pipeline.eval_batches(f"tfds:{res['dir']}", "test", batch_size=16))
    planes = np.concatenate([b["planes"] for b in batches])[: len(r)]
    assert np.array_equal(planes, np.load(out / "test.npz")["planes"])  # in record order, unaugmented
    # TfdsReader parses the records itself (decode_raw): the same as tfds.data_source + decode
    got, want = r.batch(np.arange(len(r))), np.load(out / "test.npz")
    for k in ("planes", "target", "to_move", "move_number", "player_rank", "opponent_rank"):
        assert got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k]), k
    assert list(got["game"]) == list(want["game"])


def test_beam_direct_runner_builds_the_same_dataset(built, tmp_path):
    pytest.importorskip("apache_beam", reason="apache-beam is not installed here (it pins protobuf < 7): the "
                        "Beam path is checked by benchmarks/bench_tfds_beam.py in its own environment")
    import tensorflow_datasets as tfds
    from apache_beam.options.pipeline_options import PipelineOptions

    from kifunet.data_prep import tfds_go_moves as T

    _, res, _ = built
    b = T.GoMoves(config=CONFIG, data_dir=str(tmp_path / "beam"))
    b.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=res["manual"], beam_options=PipelineOptions(["--runner=DirectRunner"])))
    gen = tfds.builder_from_directory(res["dir"])
    meta = T.kifunet_metadata(b)
    assert meta["builder"] == "beam"
    assert {k: v for k, v in meta.items() if k != "builder"} == {k: v for k, v in res["meta"].items()
                                                                 if k != "builder"}
    assert (Path(b.data_dir) / T.REJECTS).read_bytes() == (Path(res["dir"]) / T.REJECTS).read_bytes()
    for split in res["splits"]:
        x, y = (bb.as_data_source(split) for bb in (b, gen))
        assert len(x) == len(y) > 0
        assert [_canon(x[i]) for i in range(len(x))] == [_canon(y[i]) for i in range(len(y))]  # and same order


def _canon(rec: dict) -> tuple:
    """A decoded record as a comparable tuple (the serialized bytes may order the proto's feature map
    differently from one process to the next)."""
    return (rec["game"], *(int(rec[k]) for k in ("move_number", "target", "to_move", "player_rank",
                                                  "opponent_rank")), rec["planes"].tobytes())


def test_gogod_preset():
    opts = filters.resolve(preset="gonn-gogod")
    f = filters.filters_from_options(opts)
    assert f.board_size == 19 and not f.no_handicap and f.min_rank is None and f.min_both_rank is None
    from kifunet.data_prep import splits

    rule = splits.make_rule(opts["splits"])
    assert rule.names() == ["train", "test"]
    assert [r.ranges for r in rule.dates] == [(("1900-00-00", "2014-99-99"),), (("2015-00-00", "2016-99-99"),)]


def test_builder_configs():
    from kifunet.data_prep import tfds_go_moves as T

    names = {c.name for c in T.GoMoves.BUILDER_CONFIGS}
    assert {"kgs_maddison", "kgs_gonn", "kgs_alphago", "kgs_agz", "gogod_maddison", "gogod_gonn"} <= names
    cfg = next(c for c in T.GoMoves.BUILDER_CONFIGS if c.name == "gogod_gonn")
    assert cfg.preset == "gonn-gogod" and cfg.features == "gonn"
    with pytest.raises(ValueError, match="dedupe"):
        T.GoMovesConfig(name="x", preset="gonn-kgs", options={"dedupe": False}).filters()


def test_kifunet_tfds_command_builds_and_prints_the_accounting(built, tmp_path, capsys):
    from kifunet.commands import tfds as tfds_cmd
    from kifunet.data_prep import tfds_go_moves

    assert set(tfds_cmd.CONFIGS) == {c.name for c in tfds_go_moves.GoMoves.BUILDER_CONFIGS}
    _, res, _ = built
    assert cli_main(["tfds", "--config", CONFIG, "--manual-dir", res["manual"], "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "8 records seen = 5 used + 2 filtered + 1 rejected" in out, out
    with pytest.raises(SystemExit):  # Beam options without --beam are an error, not silently dropped
        cli_main(["tfds", "--manual-dir", res["manual"], "--data-dir", str(tmp_path), "--runner=DirectRunner"])
