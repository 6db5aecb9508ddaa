"""The one atomic-write helper (kifunet.data_prep.fileio.atomic): whole files or none, no temporaries left, one copy."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest

from kifunet.data_prep.fileio import atomic

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("data_prep", "models", "train", "eval", "play", "kifunet")


def test_write_json_atomic_writes_indented_utf8_with_a_newline_and_no_temporary(tmp_path):
    p = tmp_path / "m.json"
    atomic.write_json_atomic(str(p), {"b": 1, "name": "碁", "bad": "\udcff"})
    assert p.read_bytes() == b'{\n  "b": 1,\n  "name": "\xe7\xa2\x81",\n  "bad": "\\udcff"\n}\n'
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.json"]


@pytest.mark.parametrize("write", [lambda p: atomic.write_text_atomic(p, "new\n"),
                                   lambda p: atomic.write_bytes_atomic(p, b"new\n"),
                                   lambda p: atomic.write_json_atomic(p, ["new"])])
def test_a_write_that_fails_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch, write):
    p = tmp_path / "f.txt"
    p.write_text("old\n")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write(str(p))
    assert p.read_text() == "old\n" and sorted(x.name for x in tmp_path.iterdir()) == ["f.txt"]
    monkeypatch.undo()
    write(str(p))
    assert "new" in p.read_text() and sorted(x.name for x in tmp_path.iterdir()) == ["f.txt"]


def test_atomic_path_commits_a_directory_and_removes_a_failed_one(tmp_path):
    final = tmp_path / "unit"
    with atomic.atomic_path(final) as tmp:
        os.mkdir(tmp)
        Path(tmp, "a").write_text("1")
    assert (final / "a").read_text() == "1"
    with pytest.raises(RuntimeError), atomic.atomic_path(tmp_path / "other") as tmp:
        os.mkdir(tmp)
        raise RuntimeError("cut")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["unit"]


def test_a_stale_temporary_is_replaced_and_the_suffix_is_the_callers(tmp_path):
    p = tmp_path / "c.json"
    (tmp_path / "c.json.tmp-7").write_text("half")
    atomic.write_text_atomic(p, "{}\n", suffix=".tmp-7")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.json"]


@pytest.mark.parametrize("path,url", [("gs://b/run", True), ("s3://b/x", True), ("/tmp/gs:/x", False),
                                      ("run", False), ("C:/x", False)])
def test_urls_are_told_from_local_paths(path, url):
    assert atomic.is_url(path) is url


def test_the_library_renames_files_into_place_only_through_the_helper():
    """Every temp-file-and-rename in the library is :mod:`kifunet.data_prep.fileio.atomic` (no ``os.replace``
    elsewhere)."""
    found = []
    for folder in LIBRARY:
        for f in sorted((ROOT / folder).rglob("*.py")):
            if f.parent == ROOT / "data_prep" / "fileio":
                continue
            for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"\bos\.replace\(|def write_json_atomic|def fsync_replace|\.rename\(tmp", line):
                    found.append(f"{f.relative_to(ROOT)}:{i}")
    assert found == []
