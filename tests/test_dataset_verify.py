"""Verified datasets (issue 29, item 1): every shard is checked against the manifest's sha256 and row count before
its rows are used, by every reader and command; a damaged, cut or missing file, or a damaged manifest, is one line
naming the file (``kifunet CMD: error: ...``, exit 2, no traceback); ``kifunet verify`` checks a whole dataset.

The faults are injected into copies of one small dataset built from ``samples/gnugo``: bytes flipped in a
compressed ``planes`` chunk (first, middle and last), in the uncompressed ``plane_codes`` table and in a column,
a shard cut short, a shard deleted, the manifest's row count of a shard lowered and raised, the manifest cut
(invalid JSON) or missing a key, the games table flipped; and (issue 48, item 1) a manifest that is not whole: a
shard listed twice, an entry appended again, a shard left out, a file outside its split's folder, totals that are
not the sums, a content edited after its ``manifest_sha256`` was written. Every fault goes through ``kifunet verify`` and the
HDF5 reader in-process (cheap); the real program runs ``kifunet verify`` (without JAX), ``kifunet eval`` and
``kifunet train`` on a few of them.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from kifunet.cli import main
from kifunet.data_prep.datasets import manifest as manifest_mod
from kifunet.data_prep.datasets import verify
from kifunet.data_prep.datasets.dataset_base import CorruptDatasetError
from kifunet.data_prep.datasets.reader import Reader
from test_train_loop import _group

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples" / "gnugo"
PRETRAINED = str(ROOT / "pretrained" / "kgs_cpu_small")  # features maddison, 19x19
TINY = str(ROOT / "train" / "configs" / "tiny.py")
SHARD = "test/shard-00001.h5"  # the shard the faults damage (test split: 3 shards of about 820 rows)


def kifunet(*argv, cwd, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "kifunet.cli", *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})})


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    ds = tmp_path_factory.mktemp("verify") / "ds"
    assert main(["build", str(SAMPLES), "--out", str(ds), "--features", "maddison", "--workers", "0", "--no-progress",
                 "--hash-split", "test:0.3", "--shard-size", "1000"]) == 0
    return ds


def _flip(path: Path, offset: int, n: int = 16) -> None:
    b = bytearray(path.read_bytes())
    assert 0 <= offset and offset + n <= len(b)
    b[offset:offset + n] = bytes(x ^ 0xFF for x in b[offset:offset + n])
    path.write_bytes(bytes(b))


def _chunk(path: Path, name: str, which: int) -> int:
    """File offset of the middle of chunk ``which`` (-1: the last) of the chunked dataset ``name``."""
    with h5py.File(path, "r") as f:
        d = f[name]
        info = d.id.get_chunk_info(which % d.id.get_num_chunks())
    return info.byte_offset + info.size // 2


def _contiguous(path: Path, name: str) -> int:
    with h5py.File(path, "r") as f:
        return f[name].id.get_offset()


def _manifest(ds: Path, change, seal: bool = True) -> None:
    """Change the manifest; ``seal``: give it the checksum of its new content (as a writer that got it wrong would),
    so that only the check under test can see the change; else it keeps its old ``manifest_sha256``."""
    m = json.loads((ds / "manifest.json").read_text())
    change(m)
    if seal and manifest_mod.SEAL in m:
        m[manifest_mod.SEAL] = manifest_mod.content_sha256(m)
    (ds / "manifest.json").write_text(json.dumps(m))


def _positions(m: dict, split: str, delta: int) -> None:
    """Move a split's totals (rows, positions, the largest result kind's positions, counts) by ``delta``."""
    info = m["splits"][split]
    info["rows"] += delta
    info["positions"] += delta
    kind = max(info["results"], key=lambda k: info["results"][k]["positions"])
    info["results"][kind]["positions"] += delta
    m["counts"]["positions"]["kept"] += delta


def _rows(ds: Path, delta: int):
    """A shard's row count wrong in a manifest otherwise whole: the totals moved with it."""
    def change(m):
        m["splits"]["test"]["shards"][1]["rows"] += delta
        _positions(m, "test", delta)

    _manifest(ds, change)


def _twice(m: dict) -> None:
    """The issue's fault: ``shards[2] = shards[1]``, the split's rows still the sum of its entries."""
    t = m["splits"]["test"]["shards"]
    _positions(m, "test", t[1]["rows"] - t[2]["rows"])
    t[2] = dict(t[1])


def _appended(m: dict) -> None:
    t = m["splits"]["test"]["shards"]
    t.append(dict(t[0]))
    _positions(m, "test", t[0]["rows"])


def _left_out(m: dict) -> None:
    t = m["splits"]["test"]["shards"]
    _positions(m, "test", -t.pop(2)["rows"])


def _unsealed(change):
    """``change`` to a manifest written before kifunet recorded its checksum."""
    def both(m):
        change(m)
        m.pop(manifest_mod.SEAL)
    return both


# fault -> (what it does to the dataset copy, the file the message names)
FAULTS = {
    "planes-first-chunk": (lambda ds: _flip(ds / SHARD, _chunk(ds / SHARD, "planes", 0)), SHARD),
    "planes-middle-chunk": (lambda ds: _flip(ds / SHARD, _chunk(ds / SHARD, "planes", 1)), SHARD),
    "planes-last-chunk": (lambda ds: _flip(ds / SHARD, _chunk(ds / SHARD, "planes", -1), 4), SHARD),
    "plane-codes": (lambda ds: _flip(ds / SHARD, _contiguous(ds / SHARD, "plane_codes")), SHARD),
    "plane-codes-one-byte": (lambda ds: _flip(ds / SHARD, _contiguous(ds / SHARD, "plane_codes") + 7, 1), SHARD),
    "target-column": (lambda ds: _flip(ds / SHARD, _chunk(ds / SHARD, "target", 0), 2), SHARD),
    "cut-in-half": (lambda ds: os.truncate(ds / SHARD, os.path.getsize(ds / SHARD) // 2), SHARD),
    "cut-last-byte": (lambda ds: os.truncate(ds / SHARD, os.path.getsize(ds / SHARD) - 1), SHARD),
    "deleted": (lambda ds: os.remove(ds / SHARD), SHARD),
    "rows-lowered": (lambda ds: _rows(ds, -230), SHARD),
    "rows-raised": (lambda ds: _rows(ds, +1000), SHARD),
    "games-table": (lambda ds: _flip(ds / "test/games.h5", os.path.getsize(ds / "test/games.h5") // 2),
                    "test/games.h5"),
    "manifest-not-json": (lambda ds: (ds / "manifest.json").write_text((ds / "manifest.json").read_text()[:-40]),
                          "manifest.json"),
    "manifest-lacks-sha256": (lambda ds: _manifest(ds, lambda m: m["splits"]["test"]["shards"][2].pop("sha256")),
                              "manifest.json"),
    "manifest-lacks-splits": (lambda ds: _manifest(ds, lambda m: m.pop("splits")), "manifest.json"),
    # issue 48, item 1: the manifest checked whole
    "manifest-lists-a-shard-twice": (lambda ds: _manifest(ds, _twice), "manifest.json"),
    "manifest-lists-a-shard-twice-unsealed": (lambda ds: _manifest(ds, _unsealed(_twice)), "manifest.json"),
    "manifest-appends-a-copy": (lambda ds: _manifest(ds, _appended), "manifest.json"),
    "manifest-leaves-a-shard-out": (lambda ds: _manifest(ds, _left_out), "manifest.json"),
    "manifest-lists-another-splits-shard": (
        lambda ds: _manifest(ds, lambda m: m["splits"]["test"]["shards"][1].update(file="test/../x/shard-00001.h5")),
        "manifest.json"),
    "manifest-positions-not-the-sum": (
        lambda ds: _manifest(ds, lambda m: m["splits"]["test"].update(positions=m["splits"]["test"]["positions"] + 5)),
        "manifest.json"),
    "manifest-split-rows-not-the-sum": (
        lambda ds: _manifest(ds, lambda m: m["splits"]["train"].update(rows=m["splits"]["train"]["rows"] - 1)),
        "manifest.json"),
    "manifest-used-not-the-games": (
        lambda ds: _manifest(ds, lambda m: m["counts"].update(used=m["counts"]["used"] + 1)), "manifest.json"),
    "manifest-edited": (lambda ds: _manifest(ds, lambda m: m.update(seed=m["seed"] + 1), seal=False), "manifest.json"),
    "manifest-checksum-flipped": (
        lambda ds: _manifest(ds, lambda m: m.update(manifest_sha256="01"[m["manifest_sha256"][0] == "0"]
                                                    + m["manifest_sha256"][1:]), seal=False),
        "manifest.json"),
}
#: what each fault of the manifest's wholeness is reported as (after ``manifest.json: ``)
MANIFEST_WHY = {
    "manifest-lists-a-shard-twice": "splits.test.shards[2] lists test/shard-00001.h5 again (splits.test.shards[1] "
                                    "lists it too); the manifest is damaged",
    "manifest-lists-a-shard-twice-unsealed": "splits.test.shards[2] lists test/shard-00001.h5 again",
    "manifest-appends-a-copy": "splits.test.shards[3] lists test/shard-00000.h5 again",
    "manifest-leaves-a-shard-out": "test/shard-00002.h5 is in the split's folder but splits.test.shards does not list "
                                   "it",
    "manifest-lists-another-splits-shard": "splits.test.shards[1] lists 'test/../x/shard-00001.h5', not a file of the "
                                           "split's folder test/",
    "manifest-positions-not-the-sum": "splits.test.positions is 2,464, its shards hold 2,459 rows",
    "manifest-split-rows-not-the-sum": "splits.train.rows is 4,908, its shards hold 4,909",
    "manifest-used-not-the-games": "counts.used is 36, the splits hold 35 games",
    "manifest-edited": "its content has sha256 ",
    "manifest-checksum-flipped": "its content has sha256 ",
}
MANIFEST_FAULTS = [k for k, (_, f) in FAULTS.items() if f == "manifest.json"]


def damaged(dataset: Path, tmp_path: Path, fault: str) -> tuple[Path, str]:
    """A copy of ``dataset`` with ``fault``, and the path of the file the error must name."""
    copy = tmp_path / f"ds-{fault}"
    shutil.copytree(dataset, copy)
    inject, name = FAULTS[fault]
    inject(copy)
    return copy, str(copy / name)


def _one_error_line(command: str, err: str, names: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kifunet {command}: error: "), err
    assert names in lines[0], err


@pytest.mark.parametrize("fault", FAULTS)
def test_verify_reports_the_damaged_file(fault, dataset, tmp_path, capsys):
    copy, name = damaged(dataset, tmp_path, fault)
    rc = main(["verify", str(copy)])
    out, err = capsys.readouterr()
    assert rc == 2, out + err
    assert "Traceback" not in out + err
    if fault in MANIFEST_FAULTS:  # nothing can be checked: the one line is the manifest's
        _one_error_line("verify", err, name)
        assert f"{name}: {MANIFEST_WHY.get(fault, '')}" in err
        assert out == ""
    else:
        _one_error_line("verify", err, f"1 of 10 files damaged in {copy}")
        problems = [line.strip() for line in out.splitlines() if line.strip().startswith(str(copy) + "/")]
        assert len(problems) == 1 and problems[0].startswith(f"{name}: "), out
        assert "rebuild the dataset" in problems[0]


@pytest.mark.parametrize("fault", FAULTS)
def test_the_reader_refuses_the_damaged_file_before_using_its_rows(fault, dataset, tmp_path):
    """What ``kifunet eval`` and ``kifunet stats`` read: every row of the test split, and the games table."""
    copy, name = damaged(dataset, tmp_path, fault)
    verify.forget()
    with pytest.raises(CorruptDatasetError) as e:
        with Reader(str(copy), "test") as r:
            for _ in r.iter_batches(512):
                pass
            r.games()
    assert str(e.value).startswith(f"{name}: ") and "\n" not in str(e.value)


def test_verify_says_an_intact_dataset_is_intact(dataset, capsys):
    assert main(["verify", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert f"{dataset}: intact (10 files)" in out
    assert "train: 6 of 6 files ok, 0 damaged; 4,909 rows" in out and "test: 4 of 4 files ok" in out
    m = json.loads((dataset / "manifest.json").read_text())
    assert m[manifest_mod.SEAL] == manifest_mod.content_sha256(m)
    assert (f"  manifest.json: checked whole (2 splits, 8 shard files each listed once, no unlisted shard file, "
            f"totals = sums); manifest_sha256 intact ({m['manifest_sha256'][:16]}...)\n") in out


@pytest.mark.parametrize("fault", ["manifest-lists-a-shard-twice", "manifest-appends-a-copy", "manifest-edited"])
def test_train_refuses_a_manifest_that_is_not_whole_before_the_model_is_built(fault, dataset, tmp_path):
    """What ``kifunet train`` and ``kifunet eval`` set a run up from (:func:`describe`, before the model is built)
    and the training pipeline's source refuse the manifest in one line naming it (the command line then says
    ``kifunet train: error: ...``, exit 2: :func:`test_train_reports_the_damaged_file_and_leaves_no_process`)."""
    from kifunet.data_prep.datasets.dataset import describe, open_split

    copy, name = damaged(dataset, tmp_path, fault)
    for split in ("train", "test"):  # the damaged split and the other: the manifest is checked whole
        with pytest.raises(CorruptDatasetError) as e:
            describe(str(copy), split)
        assert str(e.value).startswith(f"{name}: {MANIFEST_WHY[fault]}") and "\n" not in str(e.value)
    with pytest.raises(CorruptDatasetError, match="manifest.json: "):
        open_split(str(copy), "train").blocks()


def test_a_manifest_without_its_checksum_loads_with_one_warning(dataset, tmp_path, capsys):
    """Issue 48, item 1: datasets built before the manifest recorded ``manifest_sha256`` still load (checked whole,
    their bytes unchecked): one warning line per process from the readers, a note in ``kifunet verify``'s report."""
    copy = tmp_path / "old"
    shutil.copytree(dataset, copy)
    _manifest(copy, lambda m: m.pop(manifest_mod.SEAL))
    manifest_mod._WARNED.clear()
    assert main(["stats", str(copy)]) == 0  # reads the manifest, then a Reader per split
    out, err = capsys.readouterr()
    assert err == (f"kifunet: warning: {copy}/manifest.json: no manifest_sha256 (written before kifunet recorded "
                   "it): its content is checked, its bytes are not\n"), err
    assert "4,909" in out
    assert len(Reader(str(copy), "test")) == 2459 and capsys.readouterr().err == ""  # once per process
    assert main(["verify", str(copy)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and (f"manifest.json: checked whole (2 splits, 8 shard files each listed once, no unlisted "
                          "shard file, totals = sums); note: no manifest_sha256 (written before kifunet recorded "
                          "it): its bytes are not checked") in out
    assert f"{copy}: intact (10 files)" in out


@pytest.mark.parametrize("command", ["stats", "inspect"])
@pytest.mark.parametrize("fault", ["plane-codes", "rows-raised", "cut-in-half", "manifest-not-json",
                                   "manifest-lists-a-shard-twice", "manifest-appends-a-copy",
                                   "manifest-positions-not-the-sum", "manifest-edited"])
def test_stats_and_inspect_report_the_damaged_file(command, fault, dataset, tmp_path, capsys):
    copy, name = damaged(dataset, tmp_path, fault)
    verify.forget()
    # inspect: a row of the damaged shard (rows 820..1639 of the test split)
    args = [str(copy)] if command == "stats" else [str(copy), "--split", "test", "--index", "900"]
    rc = main([command, *args])
    out, err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in out + err and out == "", out + err
    _one_error_line(command, err, name)


def test_the_program_verifies_without_importing_jax(dataset, tmp_path):
    """``kifunet verify`` on an HDF5 dataset is quick: a jax that cannot be imported does not stop it."""
    fake = tmp_path / "no_jax"
    (fake / "jax").mkdir(parents=True)
    (fake / "jax" / "__init__.py").write_text("raise ImportError('jax imported by kifunet verify')\n")
    path = os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    copy, name = damaged(dataset, tmp_path, "plane-codes")
    proc = kifunet("verify", copy, cwd=tmp_path, env={"PYTHONPATH": path})
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    _one_error_line("verify", proc.stderr, "1 of 10 files damaged")
    assert f"{name}: sha256 " in proc.stdout and "!= manifest's" in proc.stdout
    proc = kifunet("verify", dataset, cwd=tmp_path, env={"PYTHONPATH": path})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["plane-codes", "rows-lowered", "manifest-lists-a-shard-twice"])
def test_eval_reports_the_damaged_file(fault, dataset, tmp_path):
    """Before: 16 flipped bytes of ``plane_codes`` gave wrong numbers with exit 0; a lowered row count skipped
    rows silently. (Every other fault reaches eval through the same reader: ``test_the_reader_refuses_...``.)"""
    copy, name = damaged(dataset, tmp_path, fault)
    proc = kifunet("eval", "--checkpoint", PRETRAINED, "--data", copy, "--split", "test", "--out", "-",
                   cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert proc.stdout == ""
    _one_error_line("eval", proc.stderr, name)


def test_train_reports_the_damaged_file_and_leaves_no_process(dataset, tmp_path):
    """A damaged training shard: ``kifunet train`` (one grain worker process) stops with the one line, before any
    worker starts, and leaves no run behind."""
    copy = tmp_path / "ds-train"
    shutil.copytree(dataset, copy)
    shard = copy / "train" / "shard-00002.h5"
    _flip(shard, _contiguous(shard, "plane_codes"))
    wd = tmp_path / "wd"
    # in a session of its own, so that whatever it leaves behind is its process group (its pid is the group's id)
    p = subprocess.Popen([sys.executable, "-m", "kifunet.cli", "train", "--config", TINY, "--workdir", str(wd),
                          f"--config.dataset={copy}", "--config.input.workers=1"], cwd=tmp_path, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    out, err = p.communicate(timeout=300)
    assert p.returncode == 2 and "Traceback" not in out + err, out + err
    _one_error_line("train", err, f"{shard}: sha256 ")
    assert not (wd / "config.json").exists()
    assert not _group(p.pid), _group(p.pid)  # no worker outlives it


def test_each_file_is_hashed_once_per_process_and_workers_reuse_the_check(dataset, tmp_path, monkeypatch):
    """Re-created readers and a reader unpickled in another process (grain workers) do not hash again; a file
    rewritten after the check (another size or mtime) is hashed again and refused."""
    copy = tmp_path / "ds-cache"
    shutil.copytree(dataset, copy)
    verify.forget()
    hashed = []
    real = verify.hashlib.sha256

    def counting(*data):
        if not data:  # a file's hash (the manifest's checksum hashes its content, given at once)
            hashed.append(1)
        return real(*data)

    monkeypatch.setattr(verify.hashlib, "sha256", counting)
    r = Reader(str(copy), "test")
    r.blocks()  # the training pipeline's source checks every file of the split
    assert len(hashed) == 4  # 3 shards and the games table
    Reader(str(copy), "test").batch([0, 900, 2000])
    state = pickle.dumps(Reader(str(copy), "test"))
    verify.forget()  # as in a fresh worker process
    pickle.loads(state).blocks()
    assert len(hashed) == 4
    _flip(copy / SHARD, _contiguous(copy / SHARD, "plane_codes"))
    os.utime(copy / SHARD, ns=(0, 10**18))  # another mtime
    with pytest.raises(CorruptDatasetError, match="sha256"):
        Reader(str(copy), "test").batch([900])
    assert len(hashed) == 5


def test_manifest_records_the_games_tables_sha256_and_old_manifests_still_load(dataset, tmp_path):
    m = json.loads((dataset / "manifest.json").read_text())
    for split, info in m["splits"].items():
        assert info["games_table_sha256"] == verify.sha256(str(dataset / info["games_table"]))
    copy = tmp_path / "old"
    shutil.copytree(dataset, copy)
    _manifest(copy, lambda m: [i.pop("games_table_sha256") for i in m["splits"].values()])
    with Reader(str(copy), "test") as r:
        assert len(r.games()["game_id"]) == m["splits"]["test"]["games"]
    assert main(["verify", str(copy)]) == 0


@pytest.fixture(scope="module")
def tfds_dataset(tmp_path_factory) -> Path:
    pytest.importorskip("tensorflow_datasets")
    pytest.importorskip("array_record")
    data = tmp_path_factory.mktemp("verify_tfds")
    assert main(["tfds", "--manual-dir", str(SAMPLES), "--data-dir", str(data), "--name", "small", "--preset",
                 "gonn-gogod", "--features", "maddison", "--split", "train:rest", "--hash-split", "test:0.3"]) == 0
    (d,) = data.glob("go_moves/small/*")
    return d


def test_tfds_files_are_checked_by_sha256_and_records(tfds_dataset, tmp_path, capsys):
    meta = json.loads((tfds_dataset / "metadata.json").read_text())["kifunet"]
    files = meta["files"]
    assert set(files) == {"train", "test"} and [f["rows"] for f in files["test"]] == [2459]
    assert main(["verify", f"tfds:{tfds_dataset}"]) == 0
    capsys.readouterr()
    copy = tmp_path / "tfds"
    shutil.copytree(tfds_dataset, copy)
    rec = copy / files["test"][0]["file"]
    _flip(rec, os.path.getsize(rec) // 2)
    assert main(["verify", f"tfds:{copy}"]) == 2
    out, err = capsys.readouterr()
    _one_error_line("verify", err, "1 of 2 files damaged")
    assert f"{rec}: sha256 " in out and "!= metadata's" in out
    assert main(["inspect", f"tfds:{copy}", "--split", "test"]) == 2
    _one_error_line("inspect", capsys.readouterr().err, f"{rec}: sha256 ")


def test_a_tfds_dataset_without_checksums_loads_and_is_checked_by_records(tfds_dataset, tmp_path, capsys):
    """Built before ``go_moves`` recorded checksums: it reads without a word; ``kifunet verify`` says what it could
    not check, and still finds a file cut short (array_record's own chunk hashes)."""
    from kifunet.data_prep.datasets.tfds_reader import TfdsReader

    copy = tmp_path / "old"
    shutil.copytree(tfds_dataset, copy)
    meta = json.loads((copy / "metadata.json").read_text())
    files = meta["kifunet"].pop("files")
    (copy / "metadata.json").write_text(json.dumps(meta))
    verify.forget()
    r = TfdsReader(str(copy), "train")
    assert r.batch([0, 5])["planes"].shape[0] == 2
    assert main(["verify", f"tfds:{copy}"]) == 0
    assert "no sha256 recorded" in capsys.readouterr().out
    rec = copy / files["test"][0]["file"]
    os.truncate(rec, os.path.getsize(rec) // 2)
    assert main(["verify", f"tfds:{copy}"]) == 2
    out, err = capsys.readouterr()
    _one_error_line("verify", err, "1 of 2 files damaged")
    assert f"{rec}: array_record cannot read it" in out
    with pytest.raises(CorruptDatasetError, match="array_record cannot read it"):
        TfdsReader(str(copy), "test").batch(np.arange(3))
