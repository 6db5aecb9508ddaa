"""Input enumeration: directories, archives read in place, damage reported with the good members kept."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import zipfile

import pytest

from kifunet.data_prep.sgf import inputs


def _sgf(i: int) -> bytes:
    return f"(;GM[1]FF[4]SZ[9]PB[b{i}]PW[w{i}];B[cc];W[gg])".encode()


def _padded(i: int, times: int) -> bytes:
    """One game about ``times`` times the size of ``_sgf(i)`` (a comment pads it: repeating the game would make a
    collection of ``times`` records)."""
    return f"(;GM[1]FF[4]SZ[9]PB[b{i}]PW[w{i}]C[{'pad ' * (11 * times)}];B[cc];W[gg])".encode()


def _tar_bytes(members: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def _zip_bytes(members: dict[str, bytes], *, streamed: bool = False) -> bytes:
    buf = io.BytesIO()
    if streamed:  # a non-seekable target makes zipfile write data descriptors (flag bit 3)
        class Unseekable(io.RawIOBase):
            def writable(self):
                return True

            def write(self, b):
                return buf.write(b)

        target = Unseekable()
    else:
        target = buf
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _collect(paths):
    infos = []
    srcs = list(inputs.iter_sources(paths, infos))
    return srcs, infos


def test_directory_recursive_sorted_and_non_sgf_ignored(tmp_path):
    d = tmp_path / "games"
    (d / "b" / "deep").mkdir(parents=True)
    (d / "a").mkdir()
    (d / "b" / "deep" / "2.SGF").write_bytes(_sgf(2))
    (d / "a" / "1.sgf").write_bytes(_sgf(1))
    (d / "z.sgf").write_bytes(_sgf(3))
    (d / "README.txt").write_text("not a game")
    srcs, infos = _collect([d])
    assert [os.path.relpath(s.path, d) for s in srcs] == ["z.sgf", "a/1.sgf", "b/deep/2.SGF"]
    assert all(s.data is not None and s.error is None for s in srcs)
    assert infos[0].kind == "dir" and infos[0].records == 3 and infos[0].ignored == 1
    assert len(infos[0].sha256) == 64


@pytest.mark.parametrize("suffix,mode", [(".tar.gz", "w:gz"), (".tgz", "w:gz"), (".tar.bz2", "w:bz2"),
                                         (".tar", "w")])
def test_tar_archives_read_in_place(tmp_path, suffix, mode):
    members = {"kgs/1.sgf": _sgf(1), "kgs/2.sgf": _sgf(2), "kgs/notes.txt": b"x"}
    p = tmp_path / f"games{suffix}"
    p.write_bytes(_tar_bytes(members, mode))
    srcs, infos = _collect([p])
    assert [s.path for s in srcs] == [f"{p}!kgs/1.sgf", f"{p}!kgs/2.sgf"]
    assert [s.data for s in srcs] == [_sgf(1), _sgf(2)]
    assert infos[0].sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert infos[0].bytes == p.stat().st_size and infos[0].ignored == 1 and not infos[0].errors
    assert not any(x.name != p.name for x in tmp_path.iterdir())  # nothing extracted


def test_zip_and_nested_archives(tmp_path):
    inner = _tar_bytes({"in/3.sgf": _sgf(3)})
    p = tmp_path / "c.zip"
    p.write_bytes(_zip_bytes({"1.sgf": _sgf(1), "sub/inner.tar.gz": inner, "2.sgf": _sgf(2)}))
    srcs, infos = _collect([p])
    assert [s.path for s in srcs] == [f"{p}!1.sgf", f"{p}!sub/inner.tar.gz!in/3.sgf", f"{p}!2.sgf"]
    assert [s.data for s in srcs] == [_sgf(1), _sgf(3), _sgf(2)]
    assert infos[0].kind == "zip" and infos[0].records == 3


def test_truncated_tar_gz_keeps_members_before_damage(tmp_path):
    members = {f"g/{i:03d}.sgf": os.urandom(3000).hex().encode() for i in range(40)}  # incompressible
    whole = _tar_bytes(members)
    p = tmp_path / "cut.tar.gz"
    p.write_bytes(whole[: len(whole) // 2])
    srcs, infos = _collect([p])
    good = [s for s in srcs if s.data is not None]
    bad = [s for s in srcs if s.data is None]
    assert 10 <= len(good) < 40
    assert [s.data for s in good] == list(members.values())[: len(good)]  # intact, in order
    assert len(bad) == 1 and bad[0].error == "truncated_member"
    assert bad[0].path == f"{p}!g/{len(good):03d}.sgf"
    err = infos[0].errors
    assert len(err) == 1 and err[0]["reason"] == "truncated_archive" and err[0]["records_before"] == len(good)


@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
def test_corrupt_gzip_stream_is_reported(tmp_path, where):
    # Zeroed bytes inside the deflate stream: tarfile alone would stop silently at a fake end-of-archive or
    # never notice; the gzip checksum catches it and the archive is reported as corrupt.
    members = {f"{i}.sgf": _padded(i, 50) for i in range(20)}
    whole = bytearray(_tar_bytes(members))
    k = int(len(whole) * where)
    whole[k:k + 64] = b"\0" * 64
    p = tmp_path / "bad.tgz"
    p.write_bytes(bytes(whole))
    srcs, infos = _collect([p])
    assert [e["reason"] for e in infos[0].errors] == ["corrupt_archive"]
    assert infos[0].errors[0]["records_before"] == len(srcs) < 20
    # Members decoded before the damage are intact; only the one being decoded at the damage may not be
    # (gzip has one checksum for the whole stream). It reaches the build, which rejects it if it is not SGF.
    intact = [s.data == members[s.path.split("!")[1]] for s in srcs]
    assert all(intact[:-1])


@pytest.mark.parametrize("streamed", [False, True])
def test_truncated_zip_read_from_local_headers(tmp_path, streamed):
    members = {f"z/{i}.sgf": _padded(i, 20) for i in range(6)}
    whole = _zip_bytes(members, streamed=streamed)
    cd = whole.rfind(b"PK\x01\x02", 0, whole.find(b"PK\x05\x06"))
    first_cd = whole.find(b"PK\x01\x02")
    assert 0 < first_cd <= cd
    # 1) central directory cut off: every member still read
    p = tmp_path / "nocd.zip"
    p.write_bytes(whole[:first_cd + 10])
    srcs, infos = _collect([p])
    assert [s.data for s in srcs] == list(members.values())
    assert infos[0].errors[0]["reason"] == "truncated_archive"
    # 2) cut inside the 4th member's data: the first 3 kept, the 4th reported
    fourth = whole.find(b"PK\x03\x04", whole.find(b"z/3.sgf") - 40)
    p2 = tmp_path / "cut.zip"
    p2.write_bytes(whole[:fourth + 50])
    srcs, infos = _collect([p2])
    assert [s.data for s in srcs if s.data is not None] == list(members.values())[:3]
    assert [s.error for s in srcs if s.data is None] == ["truncated_member"]


def test_single_files_missing_inputs_and_duplicates(tmp_path):
    f = tmp_path / "one.sgf"
    f.write_bytes(_sgf(1))
    other = tmp_path / "game.txt"  # named on the command line: read as SGF whatever its extension
    other.write_bytes(_sgf(2))
    srcs, infos = _collect([f, other, str(f)])  # duplicate input counted once
    assert [s.data for s in srcs] == [_sgf(2), _sgf(1)]  # sorted by path
    assert infos[1].sha256 == hashlib.sha256(_sgf(1)).hexdigest()
    with pytest.raises(FileNotFoundError):
        list(inputs.iter_sources([tmp_path / "nope.sgf"]))


def test_count_and_identity(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    for i in range(3):
        (d / f"{i}.sgf").write_bytes(_sgf(i))
    (d / "x.tar.gz").write_bytes(_tar_bytes({"a.sgf": _sgf(9)}))
    assert inputs.count_sources([d]) == 4
    ident = inputs.input_identity([d])
    assert [os.path.basename(x["path"]) for x in ident] == ["0.sgf", "1.sgf", "2.sgf", "x.tar.gz"]
    assert all(x["size"] > 0 for x in ident)


def test_gzip_member_data_matches(tmp_path):
    # A .tar.gz whose gzip trailer is lost still yields every member (tar's end marker comes first).
    whole = _tar_bytes({"a.sgf": _sgf(1), "b.sgf": _sgf(2)})
    assert gzip.decompress(whole)  # sanity: a valid gzip stream
    p = tmp_path / "t.tar.gz"
    p.write_bytes(whole[:-6])
    srcs, infos = _collect([p])
    assert [s.data for s in srcs] == [_sgf(1), _sgf(2)]
