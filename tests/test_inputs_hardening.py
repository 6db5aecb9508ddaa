"""Issue 13 'hardening' of the inputs, one class of bug per section: decompression bombs in every container,
truncated archives that must say what was lost, SGF collections (one record per game tree) and symbolic links.
Every archive is built here, small on disk; the caps are lowered so that a bomb needs only a few MiB."""

from __future__ import annotations

import bz2
import codecs
import hashlib
import io
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
import threading
import time
import tracemalloc
import zipfile

import pytest

from kifunet.data_prep.sgf import archives, inputs, sgf_io, sources

CAP = 1 << 20  # MAX_MEMBER_BYTES during the bomb tests
BOMB = 24 << 20  # what a bomb member inflates to
PEAK_LIMIT = 8 << 20  # traced memory allowed while reading a bomb (the old reader held the whole member)


def _sgf(i: int, n: int = 9) -> bytes:
    return f"(;GM[1]FF[4]SZ[{n}]PB[b{i}]PW[w{i}];B[cc];W[gg])".encode()


def _collect(paths):
    infos: list[inputs.InputInfo] = []
    srcs = list(inputs.iter_sources(paths, infos))
    return srcs, infos


class _Zeros(io.RawIOBase):
    """``n`` zero bytes, produced as they are read (a bomb's content, never held whole)."""

    def __init__(self, n: int):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def _add(tf: tarfile.TarFile, name: str, data: bytes | None = None, *, zeros: int = 0) -> None:
    ti = tarfile.TarInfo(name)
    ti.size = len(data) if data is not None else zeros
    tf.addfile(ti, io.BytesIO(data) if data is not None else _Zeros(zeros))


def _tar(path, members: list[tuple[str, bytes | int]], mode: str = "w:gz") -> None:
    """A tar archive; a member given as an int is that many zero bytes."""
    kw = {"preset": 1} if mode.endswith("xz") else {"compresslevel": 1} if mode != "w" else {}
    with tarfile.open(path, mode, **kw) as tf:
        for name, data in members:
            _add(tf, name, data if isinstance(data, bytes) else None, zeros=data if isinstance(data, int) else 0)


def _zip_bytes(members: list[tuple[str, bytes | int]], method: int = zipfile.ZIP_DEFLATED, *,
               lie: tuple[str, ...] = ()) -> bytes:
    """A zip; a member given as an int is that many zeros, and a member named in ``lie`` has its uncompressed
    size rewritten to 100 bytes in both its local header and the central directory (the data is a bomb)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        for name, data in members:
            zi = zipfile.ZipInfo(name)
            zi.compress_type = method
            if isinstance(data, int):
                with zf.open(zi, "w") as w:
                    for _ in range(data // (1 << 20)):
                        w.write(bytes(1 << 20))
            else:
                zf.writestr(zi, data)
    raw = bytearray(buf.getvalue())
    for name in lie:
        enc = name.encode()
        local = raw.find(enc) - 30  # the first occurrence of the name is in its local header
        assert raw[local:local + 4] == b"PK\x03\x04"
        struct.pack_into("<I", raw, local + 22, 100)
        central = raw.find(b"PK\x01\x02")
        while central >= 0:
            nlen = struct.unpack_from("<H", raw, central + 28)[0]
            if raw[central + 46:central + 46 + nlen] == enc:
                struct.pack_into("<I", raw, central + 24, 100)
            central = raw.find(b"PK\x01\x02", central + 4)
    return bytes(raw)


def _read_bounded(paths, monkeypatch):
    """iter_sources under the lowered cap: (sources, infos, seconds, peak traced bytes)."""
    monkeypatch.setattr(sources, "MAX_MEMBER_BYTES", CAP)
    monkeypatch.setattr(sources, "MAX_NESTED_ZIP_BYTES", 4 * CAP)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        srcs, infos = _collect(paths)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return srcs, infos, time.perf_counter() - t0, peak


# ------------------------------------------------------------------------------------------------------------
# 2. decompression bombs


@pytest.mark.parametrize("suffix,mode", [(".tar.gz", "w:gz"), (".tar.bz2", "w:bz2"), (".tar.xz", "w:xz")])
def test_tar_bomb_is_too_large_and_read_in_bounded_time_and_memory(tmp_path, monkeypatch, suffix, mode):
    p = tmp_path / f"bomb{suffix}"
    _tar(p, [("a.sgf", _sgf(1)), ("bomb.sgf", BOMB), ("zeros.bin", BOMB), ("b.sgf", _sgf(2))], mode)
    assert p.stat().st_size < 1 << 20
    srcs, infos, secs, peak = _read_bounded([p], monkeypatch)
    assert [(s.path.split("!")[1], s.error) for s in srcs] == [("a.sgf", None), ("bomb.sgf", "too_large"),
                                                              ("b.sgf", None)]
    assert [s.data for s in srcs if s.data] == [_sgf(1), _sgf(2)]
    assert infos[0].ignored == 1 and not infos[0].errors
    assert peak < PEAK_LIMIT, f"{peak / 2**20:.1f} MiB traced while skipping a {BOMB >> 20} MiB member"
    assert secs < 20


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_zip_bomb_whose_header_lies_stops_at_the_cap(tmp_path, monkeypatch, method):
    members = [("a.sgf", _sgf(1)), ("bomb.sgf", BOMB), ("b.sgf", _sgf(2)), ("honest.sgf", BOMB),
               ("c.sgf", _sgf(3))]
    p = tmp_path / "bomb.zip"
    p.write_bytes(_zip_bytes(members, method, lie=("bomb.sgf",)))
    assert p.stat().st_size < 1 << 20
    assert zipfile.ZipFile(p).getinfo("bomb.sgf").file_size == 100  # the header lies
    srcs, infos, secs, peak = _read_bounded([p], monkeypatch)
    assert [(s.path.split("!")[1], s.error) for s in srcs] == [
        ("a.sgf", None), ("bomb.sgf", "too_large"), ("b.sgf", None), ("honest.sgf", "too_large"), ("c.sgf", None)]
    assert [s.data for s in srcs if s.data] == [_sgf(1), _sgf(2), _sgf(3)]
    assert peak < PEAK_LIMIT, f"{peak / 2**20:.1f} MiB traced"
    assert secs < 20


def test_zip_bomb_without_central_directory_stops_at_the_cap(tmp_path, monkeypatch):
    whole = _zip_bytes([("a.sgf", _sgf(1)), ("bomb.sgf", BOMB), ("b.sgf", _sgf(2))], lie=("bomb.sgf",))
    p = tmp_path / "nocd.zip"
    p.write_bytes(whole[:whole.find(b"PK\x01\x02") + 10])
    srcs, infos, secs, peak = _read_bounded([p], monkeypatch)
    assert [(s.path.split("!")[1], s.error) for s in srcs] == [("a.sgf", None), ("bomb.sgf", "too_large"),
                                                              ("b.sgf", None)]
    assert peak < PEAK_LIMIT and secs < 20
    assert [e["reason"] for e in infos[0].errors] == ["truncated_archive"]


def test_nested_archive_bombs(tmp_path, monkeypatch):
    """A bomb inside a zip inside a .tar.gz, a bomb inside a .tar.gz inside a zip, a big plain tar inside a
    .tar.gz (streamed, not held), and a zip inside a .tar.gz that is itself too large to hold."""
    inner_zip = _zip_bytes([("in1.sgf", _sgf(11)), ("bomb.sgf", BOMB), ("in2.sgf", _sgf(12))], lie=("bomb.sgf",))
    inner_tgz = tmp_path / "inner.tar.gz"
    _tar(inner_tgz, [("t1.sgf", _sgf(21)), ("bomb.sgf", BOMB), ("t2.sgf", _sgf(22))])
    inner_tar = tmp_path / "inner.tar"
    _tar(inner_tar, [("p1.sgf", _sgf(31)), ("zeros.bin", BOMB), ("p2.sgf", _sgf(32))], "w")
    big_zip = _zip_bytes([("r.sgf", os.urandom(5 * CAP))], zipfile.ZIP_STORED)  # over MAX_NESTED_ZIP_BYTES
    outer = tmp_path / "outer.tar.gz"
    _tar(outer, [("a.sgf", _sgf(1)), ("inner.zip", inner_zip), ("inner.tar", inner_tar.read_bytes()),
                 ("big.zip", big_zip), ("b.sgf", _sgf(2))])
    outer_zip = tmp_path / "outer.zip"
    outer_zip.write_bytes(_zip_bytes([("c.sgf", _sgf(3)), ("inner.tar.gz", inner_tgz.read_bytes()),
                                      ("d.sgf", _sgf(4))]))
    inner_tar.unlink()
    inner_tgz.unlink()
    srcs, infos, secs, peak = _read_bounded([outer, outer_zip], monkeypatch)
    got = [(s.path.split("!", 1)[1], s.error) for s in srcs]
    assert got == [("a.sgf", None), ("inner.zip!in1.sgf", None), ("inner.zip!bomb.sgf", "too_large"),
                   ("inner.zip!in2.sgf", None), ("inner.tar!p1.sgf", None), ("inner.tar!p2.sgf", None),
                   ("b.sgf", None),
                   ("c.sgf", None), ("inner.tar.gz!t1.sgf", None), ("inner.tar.gz!bomb.sgf", "too_large"),
                   ("inner.tar.gz!t2.sgf", None), ("d.sgf", None)]
    assert [(e["path"], e["reason"]) for e in infos[0].errors] == [(f"{outer}!big.zip", "too_large")]
    assert not infos[1].errors
    assert peak < PEAK_LIMIT, f"{peak / 2**20:.1f} MiB traced"
    assert secs < 30


def test_decompressor_hands_out_at_most_what_is_asked(tmp_path):
    """The reader's decompressor is bounded per call whatever the ratio: 256 KiB of bzip2 zeros per request."""
    comp = bz2.compress(bytes(8 << 20))
    dec = archives._Decompressor(io.BytesIO(comp), "bz2", multistream=True)
    buf = bytearray(1 << 18)
    sizes = []
    while n := dec.readinto(buf):
        sizes.append(n)
    assert sum(sizes) == 8 << 20 and max(sizes) <= 1 << 18 and not dec.truncated


# ------------------------------------------------------------------------------------------------------------
# 3. truncated archives


def _members(k: int = 10) -> list[tuple[str, bytes]]:
    # incompressible comments make every cut offset land somewhere different
    return [(f"g/{i:02d}.sgf", f"(;GM[1]SZ[9]C[{os.urandom(700).hex()}];B[cc])".encode()) for i in range(k)]


def _check_cut(p, members, cut_bytes_missing: bool, compressed: bool):
    srcs, infos = _collect([p])
    info = infos[0]
    good = [s for s in srcs if s.data is not None]
    names = [m[0] for m in members]
    # every member read before the cut is yielded intact and in order
    assert [s.path.split("!")[1] for s in good] == names[:len(good)]
    assert [s.data for s in good] == [m[1] for m in members[:len(good)]]
    bad = [s for s in srcs if s.data is None]
    assert len(bad) <= 1 and all(s.error == "truncated_member" for s in bad)
    lost = len(good) < len(members)
    errs = info.errors
    if lost:
        assert len(errs) == 1, errs
        e = errs[0]
        assert e["reason"] == "truncated_archive", e
        assert e["members_read"] == len(good) and e["records_before"] == len(good), (e, len(good))
        text = e["detail"].lower()
        assert f"{len(good)} member" in text and "missing" in text, text
        assert not _claims_whole(text), text
    elif cut_bytes_missing and compressed:
        assert [e["reason"] for e in errs] == ["truncated_archive"], errs
    for e in errs:  # whatever was cut, nothing claims wholeness unless every member was read
        assert not (lost and _claims_whole(e["detail"].lower())), e


def _claims_whole(text: str) -> bool:
    return "every member" in text or "is whole" in text or re.search(r"\ball \d+ members", text) is not None


def _tar_offsets(raw: bytes) -> list[int]:
    """Cut points of a plain tar: inside, at and around every header and member boundary, then a grid."""
    pts = set(range(1, len(raw), 97))
    off = 0
    while off + 512 <= len(raw) and raw[off:off + 512].count(0) != 512:
        size = int(raw[off + 124:off + 136].strip(b"\0 ") or b"0", 8)
        for d in (0, 1, 100, 511, 512, 513, 512 + size // 2, 512 + size - 1, 512 + size):
            pts.add(off + d)
        off += 512 + (size + 511) // 512 * 512
    for d in (0, 1, 511, 512, 513, 1023, 1024):
        pts.add(off + d)
    return sorted(p for p in pts if 0 < p < len(raw))


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_truncated_tar_at_many_offsets_says_what_was_read(tmp_path, mode):
    members = _members()
    whole_p = tmp_path / "whole.tar"
    _tar(whole_p, members, mode)
    whole = whole_p.read_bytes()
    if mode == "w":
        cuts = _tar_offsets(whole)
    else:
        step = max(1, len(whole) // 60)
        cuts = sorted(set(range(1, len(whole), step)) | {len(whole) - k for k in (1, 4, 8, 12, 30)})
    p = tmp_path / f"cut.{'tar' if mode == 'w' else 'tgz' if mode == 'w:gz' else 'tar.' + mode[2:]}"
    for cut in cuts:
        p.write_bytes(whole[:cut])
        _check_cut(p, members, True, mode != "w")


def test_tar_cut_at_a_member_boundary_or_in_a_header_is_reported(tmp_path):
    """The plain-tar cases tarfile ends quietly on: 3 of 10 members, then nothing, or half a header."""
    members = _members()
    whole_p = tmp_path / "w.tar"
    _tar(whole_p, members, "w")
    whole = whole_p.read_bytes()
    stride = 512 + (len(members[0][1]) + 511) // 512 * 512
    for cut, detail in ((3 * stride, "without tar's end-of-archive marker"), (3 * stride + 200, "inside the header")):
        p = tmp_path / "cut.tar"
        p.write_bytes(whole[:cut])
        srcs, infos = _collect([p])
        assert [s.data for s in srcs] == [m[1] for m in members[:3]]
        (e,) = infos[0].errors
        assert e["reason"] == "truncated_archive" and e["members_read"] == 3 and detail in e["detail"]
        assert "3 members read whole (3 game records)" in e["detail"] and "missing" in e["detail"]


@pytest.mark.parametrize("mode", ["w", "w:gz"])
def test_tar_cut_inside_a_member_passed_over_names_it(tmp_path, mode):
    """A member whose data is skipped (not a game, or over the cap) is not counted whole when the cut is in it."""
    p = tmp_path / "x.tgz"
    _tar(p, [("a.sgf", _sgf(1)), ("notes.bin", os.urandom(20000)), ("b.sgf", _sgf(2))], mode)
    whole = p.read_bytes()
    p.write_bytes(whole[:len(whole) // 2])
    srcs, infos = _collect([p])
    assert [s.data for s in srcs] == [_sgf(1)]
    (e,) = infos[0].errors
    assert e["reason"] == "truncated_archive" and e["members_read"] == 1
    assert "1 member read whole (1 game record), then notes.bin was cut off" in e["detail"], e["detail"]


def test_tar_with_a_damaged_header_is_corrupt_not_ended(tmp_path):
    members = _members()
    whole_p = tmp_path / "w.tar"
    _tar(whole_p, members, "w")
    raw = bytearray(whole_p.read_bytes())
    stride = 512 + (len(members[0][1]) + 511) // 512 * 512
    raw[4 * stride + 10] ^= 0xFF  # the 5th header fails its checksum
    p = tmp_path / "bad.tar"
    p.write_bytes(bytes(raw))
    srcs, infos = _collect([p])
    assert [s.data for s in srcs] == [m[1] for m in members[:4]]
    (e,) = infos[0].errors
    assert e["reason"] == "corrupt_archive" and e["members_read"] == 4 and "4 members read whole" in e["detail"]


def _zip_offsets(raw: bytes) -> list[int]:
    pts = set(range(1, len(raw), 89))
    off = raw.find(b"PK\x03\x04")
    while off >= 0:
        nlen, xlen = struct.unpack_from("<HH", raw, off + 26)
        csize = struct.unpack_from("<I", raw, off + 18)[0]
        start = off + 30 + nlen + xlen
        for p in (off, off + 2, off + 4, off + 10, off + 29, off + 30, off + 30 + nlen // 2, start, start + 1,
                  start + csize // 2, start + csize - 1, start + csize, start + csize + 8):
            pts.add(p)
        off = raw.find(b"PK\x03\x04", start)
    cd = raw.find(b"PK\x01\x02")
    for p in (cd, cd + 2, cd + 30, raw.find(b"PK\x05\x06"), len(raw) - 1):
        pts.add(p)
    return sorted(p for p in pts if 0 < p < len(raw))


@pytest.mark.parametrize("streamed", [False, True])
def test_truncated_zip_at_many_offsets_says_what_was_read(tmp_path, streamed):
    members = _members()
    buf = io.BytesIO()
    if streamed:  # a non-seekable target: data descriptors (flag bit 3) after each member
        class Unseekable(io.RawIOBase):
            def writable(self):
                return True

            def write(self, b):
                return buf.write(b)

        target = Unseekable()
    else:
        target = buf
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    whole = buf.getvalue()
    p = tmp_path / "cut.zip"
    for cut in _zip_offsets(whole):
        p.write_bytes(whole[:cut])
        _check_cut(p, members, True, False)
        srcs, infos = _collect([p])
        assert infos[0].errors  # a zip without its end record is always reported


# ------------------------------------------------------------------------------------------------------------
# 4. SGF collections


def _game(i: int, moves: str = ";B[cc];W[gg];B[ec]", n: int = 9) -> str:
    return f"(;GM[1]FF[4]SZ[{n}]PB[black{i}]PW[white{i}]BR[6d]WR[7d]DT[2015-01-0{1 + i % 9}]KM[6.5]{moves})"


def test_collection_yields_one_record_per_game_tree(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    coll = "\n".join(_game(i) for i in range(3)) + "\n"
    (d / "a.sgf").write_text(coll)
    single = _game(9, ";B[cc](;W[gg])(;W[gc];B[dd])")  # variations: still one tree
    (d / "b.sgf").write_text(single + "\n\n")
    damaged = _game(20) + _game(21, ";B[cc]XX;W[dd]") + "junk between" + _game(22)
    (d / "c.sgf").write_text(damaged)
    srcs, infos = _collect([d])
    names = [os.path.relpath(s.path, d) for s in srcs]
    assert names == ["a.sgf", "a.sgf#2", "a.sgf#3", "b.sgf", "c.sgf", "c.sgf#2", "c.sgf#3"]
    assert infos[0].records == 7 and inputs.count_sources([d]) == 7
    assert [s.data for s in srcs[:3]] == [_game(0).encode(), ("\n" + _game(1))[1:].encode(), _game(2).encode()]
    assert srcs[3].data == (single + "\n\n").encode()  # a single tree is the file's bytes, as before
    loaded = []
    for s in srcs:
        try:
            loaded.append(sgf_io.load_game(s.data, path=s.path).info.black)
        except sgf_io.SgfError as e:
            loaded.append(e.reason)
    assert loaded == ["black0", "black1", "black2", "black9", "black20", "parse_error", "black22"]
    assert inputs.source_file(srcs[6].path) == str(d / "c.sgf")


def test_collections_inside_archives_and_as_top_level_files(tmp_path):
    coll = (_game(1) + _game(2)).encode()
    t = tmp_path / "a.tar.gz"
    _tar(t, [("x/c.sgf", coll), ("x/s.sgf", _game(3).encode())])
    z = tmp_path / "b.zip"
    z.write_bytes(_zip_bytes([("c.sgf", coll)]))
    f = tmp_path / "c.txt"  # named on the command line: SGF whatever its extension
    f.write_bytes(coll + coll)
    srcs, infos = _collect([t, z, f])
    assert [s.path for s in srcs] == [f"{t}!x/c.sgf", f"{t}!x/c.sgf#2", f"{t}!x/s.sgf", f"{z}!c.sgf",
                                      f"{z}!c.sgf#2", str(f), f"{f}#2", f"{f}#3", f"{f}#4"]
    assert [i.records for i in infos] == [3, 2, 4]
    assert [sgf_io.load_game(s.data).info.black for s in srcs] == [
        "black1", "black2", "black3", "black1", "black2", "black1", "black2", "black1", "black2"]


def test_collection_split_follows_the_decoded_text():
    # Shift-JIS: 表 is 95 5C, a backslash trail byte right before ']' — read as bytes, the value would not end
    t1 = "(;CA[Shift_JIS]SZ[9]PB[表]C[表];B[cc])"
    t2 = "(;SZ[9]PB[表]C[表 (; ];B[dd])"
    raw = (t1 + "\r\n" + t2).encode("cp932")
    pieces = sgf_io.split_game_trees(raw)
    assert pieces == [t1.encode("cp932"), t2.encode("cp932")]
    assert [sgf_io.load_game(p).info.black for p in pieces] == ["表", "表"]
    # UTF-16 with a byte-order mark: every piece keeps the mark, so it decodes as the file does
    raw16 = codecs.BOM_UTF16_LE + (t1 + t2).encode("utf-16-le")
    pieces = sgf_io.split_game_trees(raw16)
    assert len(pieces) == 2 and all(p.startswith(codecs.BOM_UTF16_LE) for p in pieces)
    assert [sgf_io.load_game(p).info.black for p in pieces] == ["表", "表"]
    # one tree (with variations, brackets and parentheses in values): the very same bytes
    one = b"\xef\xbb\xbf(;C[a (; b \\] c]SZ[9];B[aa](;W[bb])(;W[cc]))\n"
    assert sgf_io.split_game_trees(one) == [one]
    # a tree that never closes runs to the end; the trees before it are whole
    assert sgf_io.split_game_trees(b"(;B[aa])(;B[bb];C[open (;W[cc])") == [b"(;B[aa])", b"(;B[bb];C[open (;W[cc])"]


def test_split_agrees_with_sgfmills_collection_parse():
    from sgfmill import sgf_grammar

    trees = [_game(1).encode(), _game(2, ";B[cc](;W[dd]C[a ) b (; c \\] d])(;W[ee])").encode(),
             b"(;C[[(;)\\]]\n;B[aa])", _game(3, ";B[cc]C[\\\\];W[dd]").encode()]
    for seps in ([b"", b"", b"", b""], [b"junk ", b"\n", b"\r\n) x ", b"  "]):
        raw = b"".join(s + t for s, t in zip(seps, trees)) + b"\ntrailing"
        pieces = sgf_io.split_game_trees(raw)
        ref = sgf_grammar.parse_sgf_collection(raw)
        assert len(pieces) == len(ref) == 4
        for piece, tree in zip(pieces, ref):
            assert (sgf_grammar.serialise_game_tree(sgf_grammar.parse_sgf_game(piece))
                    == sgf_grammar.serialise_game_tree(tree))
        assert pieces[1:] == trees[1:] and pieces[0].endswith(trees[0])


@pytest.mark.slow
def test_build_cli_counts_every_game_tree(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "coll.sgf").write_text("\n".join(_game(i, f";B[{'abcdefg'[i]}c];W[gg];B[ee]") for i in range(4)))
    (d / "one.sgf").write_text(_game(7, ";B[ga];W[gb];B[gc]"))
    (d / "part.sgf").write_text(_game(8, ";B[ha];W[hb]") + _game(9, ";B[cc]XX") + _game(10, ";B[ia];W[ib]"))
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "kifunet.cli", "build", str(d), "--out", str(out),
                          "--board-size", "9", "--workers", "0", "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    m = json.load(open(out / "manifest.json"))
    c = m["counts"]
    assert c["seen"] == 8 and c["used"] == 7 and c["rejected"] == {"parse_error": 1}, c
    assert "8 records seen = 7 used" in res.stdout
    rejects = [json.loads(x) for x in open(out / "rejects.jsonl")]
    assert [r["path"] for r in rejects] == [str(d / "part.sgf#2")]


# ------------------------------------------------------------------------------------------------------------
# 5. symbolic links


def test_symlinked_directories_and_files_are_followed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "o.sgf").write_bytes(_sgf(1))
    (outside / "deep" / "p.sgf").write_bytes(_sgf(2))
    _tar(outside / "arch.tar.gz", [("t.sgf", _sgf(5))])
    d = tmp_path / "in"
    (d / "real").mkdir(parents=True)
    (d / "real" / "r.sgf").write_bytes(_sgf(3))
    os.symlink(outside, d / "linked")  # a symlinked subdirectory (outside the input)
    os.symlink(outside / "o.sgf", d / "file.sgf")  # a symlinked file
    os.symlink(outside / "arch.tar.gz", d / "zarch.tar.gz")  # a symlinked archive
    os.symlink(tmp_path / "nowhere.sgf", d / "broken.sgf")  # a dangling link
    srcs, infos = _collect([d])
    got = [(os.path.relpath(s.path.split("!")[0], d) + ("!" + s.path.split("!")[1] if "!" in s.path else ""),
            s.error) for s in srcs]
    assert got == [("broken.sgf", "unreadable"), ("file.sgf", None), ("zarch.tar.gz!t.sgf", None),
                   ("linked/arch.tar.gz!t.sgf", None), ("linked/o.sgf", None), ("linked/deep/p.sgf", None),
                   ("real/r.sgf", None)]
    assert infos[0].records == 7 and not infos[0].errors
    ident = [os.path.relpath(x["path"], d) for x in inputs.input_identity([d])]
    assert "linked/deep/p.sgf" in ident and "linked/o.sgf" in ident


def test_symlink_loops_are_reported_and_end(tmp_path):
    d = tmp_path / "in"
    (d / "a" / "b").mkdir(parents=True)
    (d / "a" / "x.sgf").write_bytes(_sgf(1))
    (d / "a" / "b" / "y.sgf").write_bytes(_sgf(2))
    os.symlink("../..", d / "a" / "b" / "up")  # back to the input itself
    os.symlink(".", d / "a" / "self")  # to its own directory
    os.symlink(d / "a" / "b", d / "z")  # a second path to a directory read already
    srcs, infos = _collect([d])
    assert [os.path.relpath(s.path, d) for s in srcs] == ["a/x.sgf", "a/b/y.sgf"]
    errs = sorted((os.path.relpath(e["path"], d), e["reason"]) for e in infos[0].errors)
    assert errs == [("a/b/up", "symlink_loop"), ("a/self", "symlink_loop"), ("z", "duplicate_directory")]
    assert all(e["detail"] for e in infos[0].errors)


def test_directory_that_cannot_be_listed_is_reported(tmp_path, monkeypatch):
    d = tmp_path / "in"
    (d / "locked").mkdir(parents=True)
    (d / "locked" / "x.sgf").write_bytes(_sgf(1))
    (d / "ok.sgf").write_bytes(_sgf(2))
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    srcs, infos = _collect([d])
    assert [os.path.basename(s.path) for s in srcs] == ["ok.sgf"]
    assert [(os.path.basename(e["path"]), e["reason"]) for e in infos[0].errors] == [("locked", "unreadable")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_named_sgf_in_a_directory_is_not_opened(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    os.mkfifo(d / "pipe.sgf")
    (d / "z.sgf").write_bytes(_sgf(1))
    box = {}
    th = threading.Thread(target=lambda: box.update(res=_collect([d])), daemon=True)
    th.start()
    th.join(30)
    if th.is_alive():  # unblock the reader stuck opening the FIFO, then fail
        with open(d / "pipe.sgf", "wb"):
            pass
        th.join(10)
        pytest.fail("reading a directory blocked on a FIFO")
    srcs, _ = box["res"]
    assert [(os.path.basename(s.path), s.error) for s in srcs] == [("pipe.sgf", "unreadable"), ("z.sgf", None)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_among_the_inputs_is_not_hashed_by_the_build(tmp_path):
    """The build's record of its inputs' sha256 (for a resume after they were touched) skips what is not a
    regular file: a FIFO would block the read."""
    d = tmp_path / "in"
    d.mkdir()
    os.mkfifo(d / "pipe.sgf")
    (d / "z.sgf").write_bytes(_sgf(1))
    ident = inputs.input_identity([str(d)])
    box = {}
    th = threading.Thread(target=lambda: box.update(res=inputs.content_hashes(ident)), daemon=True)
    th.start()
    th.join(30)
    if th.is_alive():
        with open(d / "pipe.sgf", "wb"):
            pass
        th.join(10)
        pytest.fail("hashing the inputs blocked on a FIFO")
    got = {os.path.basename(k): v for k, v in box["res"].items()}
    assert got["pipe.sgf"] is None and got["z.sgf"] == hashlib.sha256(_sgf(1)).hexdigest()


def test_tar_members_that_are_no_regular_file_are_counted_and_rejected(tmp_path):
    """Issue 48, item 11: tar members named ``.sgf`` that are links, FIFOs or devices were skipped silently (no
    record, no reject line); each is now a record rejected as ``unreadable``, its type named, so that the build
    accounts for every input (seen = used + filtered + rejected) and lists it in rejects.jsonl."""
    from kifunet.cli import main

    path = tmp_path / "odd.tar"
    with tarfile.open(path, "w") as tf:
        _add(tf, "g/real.sgf", _sgf(1))
        for name, typ, link in [("g/sym.sgf", tarfile.SYMTYPE, "real.sgf"),
                                ("g/hard.sgf", tarfile.LNKTYPE, "g/real.sgf"),
                                ("g/fifo.sgf", tarfile.FIFOTYPE, ""), ("g/chr.sgf", tarfile.CHRTYPE, ""),
                                ("g/blk.sgf", tarfile.BLKTYPE, ""), ("g/dir.sgf", tarfile.DIRTYPE, ""),
                                ("g/other-link", tarfile.SYMTYPE, "real.sgf")]:
            ti = tarfile.TarInfo(name)
            ti.type, ti.linkname = typ, link
            tf.addfile(ti)
        _add(tf, "g/last.sgf", _sgf(2))
    srcs, infos = _collect([path])
    got = [(s.path.split("!")[1], s.error, s.detail) for s in srcs]
    assert got == [
        ("g/real.sgf", None, ""),
        ("g/sym.sgf", "unreadable", "not a regular file: a symbolic link to 'real.sgf' in the archive; not read"),
        ("g/hard.sgf", "unreadable", "not a regular file: a hard link to 'g/real.sgf' in the archive; not read"),
        ("g/fifo.sgf", "unreadable", "not a regular file: a FIFO in the archive; not read"),
        ("g/chr.sgf", "unreadable", "not a regular file: a character device in the archive; not read"),
        ("g/blk.sgf", "unreadable", "not a regular file: a block device in the archive; not read"),
        ("g/last.sgf", None, "")]
    assert infos[0].records == 7 and infos[0].errors == []  # the archive itself is whole
    out = tmp_path / "ds"
    assert main(["build", str(path), "--out", str(out), "--board-size", "9", "--no-progress", "--workers", "0",
                 "--allow-empty"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    c = m["counts"]
    assert c["seen"] == 7 and c["used"] == 2 and c["rejected"] == {"unreadable": 5}
    assert c["seen"] == c["used"] + sum(c["filtered"].values()) + sum(c["rejected"].values())
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
    assert sorted((r["path"].split("!")[1], r["reason"]) for r in rejects) == sorted(
        (p, "unreadable") for p in ("g/sym.sgf", "g/hard.sgf", "g/fifo.sgf", "g/chr.sgf", "g/blk.sgf"))
