"""Enumerate the SGF records of a build's inputs: files, directories and archives, read in place.

Inputs may be any mix of ``.sgf`` files, directories (searched recursively), ``.zip``, ``.tar``,
``.tar.gz``/``.tgz``, ``.tar.bz2`` (and ``.tar.xz``) archives. Nothing is extracted to disk: archive members
are read into memory one at a time (tar archives are streamed, so a ``.tar.gz`` is decompressed exactly once).

Order (it decides which copy of a duplicate game wins, and the build's work units): top-level inputs sorted by
path; directory entries sorted by name; archive members in the order the archive stores them.

Paths: a member of an archive is named ``ARCHIVE!MEMBER`` (``KGS-2015.tar.gz!kgs-2015/2015-01-01-1.sgf``); an
archive inside an archive nests the same way (``a.zip!inner.tar.gz!x.sgf``).

What is a game record: a file or member whose name ends in ``.sgf`` (any case); a top-level input file named
on the command line is read as SGF whatever its extension, unless it is an archive. Other files met inside
directories and archives are counted per input as ``ignored`` (README files, images), never as games.

Damage: a truncated or corrupt archive is reported in :attr:`InputReport.errors` (reason ``truncated_archive``,
``corrupt_archive``) with the members read before the damage kept; a member cut off by the damage, or one that
cannot be read, is yielded as a :class:`Source` with ``error`` set, so that the build counts it as a rejected
game. A zip without its central directory (a truncated download) is read sequentially from its local headers.
"""

from __future__ import annotations

import bz2
import dataclasses
import hashlib
import io
import lzma
import os
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator

SGF_SUFFIX = ".sgf"
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz")
ZIP_SUFFIXES = (".zip",)
MAX_MEMBER_BYTES = 64 << 20  # an SGF record larger than this is rejected ('too_large') without being read

# Exceptions a damaged archive raises while it is read.
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError, ValueError,
                   struct.error, NotImplementedError, lzma.LZMAError)


@dataclasses.dataclass(frozen=True)
class Source:
    """One game record candidate: its path and bytes, or an error that kept it from being read."""

    path: str
    data: bytes | None
    error: str | None = None  # reject reason when data is None: 'truncated_member', 'unreadable', 'too_large'
    detail: str = ""


@dataclasses.dataclass
class InputInfo:
    """What one top-level input held (recorded in the manifest)."""

    path: str
    kind: str  # 'sgf' | 'dir' | 'tar' | 'zip'
    bytes: int = 0
    sha256: str = ""
    records: int = 0  # game records yielded (including unreadable ones)
    ignored: int = 0  # non-SGF files / members skipped
    errors: list[dict] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def archive_kind(name: str) -> str | None:
    low = name.lower()
    if low.endswith(ZIP_SUFFIXES):
        return "zip"
    if low.endswith(TAR_SUFFIXES):
        return "tar"
    return None


def is_sgf_name(name: str) -> bool:
    return name.lower().endswith(SGF_SUFFIX)


def normalize_inputs(paths) -> list[str]:
    """Normalised, de-duplicated (same real path) and sorted top-level inputs. Missing paths raise."""
    seen, out = set(), []
    for p in paths:
        q = os.path.normpath(str(p))
        if not os.path.exists(q):
            raise FileNotFoundError(f"input not found: {p}")
        real = os.path.realpath(q)
        if real in seen:
            continue
        seen.add(real)
        out.append(q)
    return sorted(out)


def input_kind(path: str) -> str:
    if os.path.isdir(path):
        return "dir"
    return archive_kind(path) or "sgf"


class _HashingReader(io.RawIOBase):
    """A read-only file wrapper that hashes the bytes as they pass (for streamed tar archives)."""

    def __init__(self, f):
        self._f = f
        self.sha = hashlib.sha256()
        self.nbytes = 0

    def readable(self):
        return True

    def readinto(self, b):
        data = self._f.read(len(b))
        n = len(data)
        b[:n] = data
        self.sha.update(data)
        self.nbytes += n
        return n

    def read(self, n=-1):
        data = self._f.read(n)
        self.sha.update(data)
        self.nbytes += len(data)
        return data

    def drain(self):
        while self.read(1 << 20):
            pass


def _file_sha256(path: str) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
            n += len(block)
    return h.hexdigest(), n


class _Decompressor(io.RawIOBase):
    """Streaming gzip / bzip2 / xz decompression that hands out everything decodable before damage.

    Python's ``gzip.GzipFile`` raises at a truncation and drops the partial block it was decoding, and
    tarfile's own stream mode never checks the gzip checksum (a corrupt stream can decode to zeros that look
    like the end of the archive). Here a truncated input simply ends the data (``truncated`` is set, tarfile
    then fails inside the member that was cut), and a checksum error raises. Concatenated streams (multi-member
    gzip, as ``pigz`` and ``cat a.gz b.gz`` write) are followed.
    """

    def __init__(self, raw, kind: str):
        self._raw, self._kind = raw, kind
        self._dec = self._new()
        self._buf = b""
        self.truncated = False
        self._done = False

    def _new(self):
        if self._kind == "gzip":
            return zlib.decompressobj(wbits=31)
        if self._kind == "bz2":
            return bz2.BZ2Decompressor()
        return lzma.LZMADecompressor()

    def readable(self):
        return True

    def readinto(self, b):
        while not self._buf and not self._done:
            chunk = self._raw.read(1 << 16)
            if not chunk:
                if not self._dec.eof:
                    self.truncated = True
                self._done = True
                break
            while chunk:
                self._buf += self._dec.decompress(chunk)
                if self._dec.eof:
                    chunk = self._dec.unused_data
                    if chunk.strip(b"\0"):
                        self._dec = self._new()  # another stream follows
                    else:
                        chunk = b""
                else:
                    chunk = b""
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _decompressed(f):
    """(stream of tar bytes, decompressor or None) for a file object with ``peek`` (kind by magic number)."""
    head = f.peek(6)[:6]
    kind = ("gzip" if head[:2] == b"\x1f\x8b" else "bz2" if head[:3] == b"BZh"
            else "xz" if head[:6] == b"\xfd7zXZ\x00" else None)
    if kind is None:
        return f, None
    dec = _Decompressor(f, kind)
    return io.BufferedReader(dec, 1 << 16), dec


def _iter_tar(fileobj, name: str, info: InputInfo) -> Iterator[Source]:
    """Stream a tar archive (plain, gzip, bzip2 or xz). Damage ends the stream and is recorded in info.

    After tar's end-of-archive marker the rest of the stream is read too: a checksum failure or non-zero
    bytes there mean the archive was damaged (members after the damage are lost and reported)."""
    member = None
    dec = None
    try:
        stream, dec = _decompressed(fileobj)
        with tarfile.open(fileobj=stream, mode="r|") as tf:
            for member in tf:
                if not member.isfile():
                    member = None
                    continue
                mpath = f"{name}!{member.name}"
                kind = archive_kind(member.name)
                if not is_sgf_name(member.name) and kind is None:
                    info.ignored += 1
                    member = None
                    continue
                if member.size > MAX_MEMBER_BYTES and kind is None:
                    info.records += 1
                    yield Source(mpath, None, "too_large", f"{member.size} bytes")
                    member = None
                    continue
                data = tf.extractfile(member).read()
                member = None
                if kind is not None:
                    yield from _iter_archive_bytes(data, mpath, kind, info)
                else:
                    info.records += 1
                    yield Source(mpath, data)
        while block := stream.read(1 << 16):
            if block.count(0) != len(block):
                raise tarfile.ReadError("data after the end-of-archive marker (damaged archive)")
        if dec is not None and dec.truncated:
            raise EOFError("compressed stream cut off after the end-of-archive marker; every member is whole")
    except _ARCHIVE_ERRORS as e:
        at = f"{name}!{member.name}" if member is not None else name
        truncated = (dec is not None and dec.truncated) or _is_truncation(e)
        info.errors.append({"path": at, "reason": "truncated_archive" if truncated else "corrupt_archive",
                            "detail": f"{type(e).__name__}: {e}", "records_before": info.records})
        if member is not None and is_sgf_name(member.name):
            info.records += 1
            yield Source(at, None, "truncated_member", f"{type(e).__name__}: {e}")


def _is_truncation(e: Exception) -> bool:
    text = str(e).lower()
    return isinstance(e, EOFError) or "unexpected end" in text or "truncated" in text or "end of" in text


def _iter_zip(fileobj, name: str, info: InputInfo) -> Iterator[Source]:
    try:
        zf = zipfile.ZipFile(fileobj)
    except _ARCHIVE_ERRORS as e:
        info.errors.append({"path": name, "reason": "truncated_archive",
                            "detail": f"no central directory ({type(e).__name__}: {e}); read from local headers",
                            "records_before": info.records})
        fileobj.seek(0)
        yield from _iter_zip_local(fileobj, name, info)
        return
    with zf:
        for zi in zf.infolist():
            if zi.is_dir():
                continue
            mpath = f"{name}!{zi.filename}"
            kind = archive_kind(zi.filename)
            if not is_sgf_name(zi.filename) and kind is None:
                info.ignored += 1
                continue
            if zi.file_size > MAX_MEMBER_BYTES and kind is None:
                info.records += 1
                yield Source(mpath, None, "too_large", f"{zi.file_size} bytes")
                continue
            try:
                data = zf.read(zi)
            except _ARCHIVE_ERRORS as e:
                if kind is not None:
                    info.errors.append({"path": mpath, "reason": "corrupt_archive",
                                        "detail": f"{type(e).__name__}: {e}", "records_before": info.records})
                    continue
                info.records += 1
                yield Source(mpath, None, "unreadable", f"{type(e).__name__}: {e}")
                continue
            if kind is not None:
                yield from _iter_archive_bytes(data, mpath, kind, info)
            else:
                info.records += 1
                yield Source(mpath, data)


_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # signature .. extra length (30 bytes)


def _iter_zip_local(f, name: str, info: InputInfo) -> Iterator[Source]:
    """Read a zip whose central directory is missing, member by member from the local file headers."""
    while True:
        head = f.read(_LOCAL_HEADER.size)
        if len(head) < 4 or head[:4] != b"PK\x03\x04":
            return  # central directory (or the end of the data) reached
        if len(head) < _LOCAL_HEADER.size:
            info.errors.append({"path": name, "reason": "truncated_archive", "detail": "truncated local header",
                                "records_before": info.records})
            return
        (_sig, _ver, flags, method, _t, _d, _crc, csize, _usize, nlen, xlen) = _LOCAL_HEADER.unpack(head)
        fname = f.read(nlen).decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        f.read(xlen)
        mpath = f"{name}!{fname}"
        wanted = (is_sgf_name(fname) or archive_kind(fname) is not None) and not fname.endswith("/")
        try:
            if method == 0 and not flags & 0x8:
                data = f.read(csize)
                if len(data) < csize:
                    raise EOFError("member data cut off")
            elif method == 8:
                d = zlib.decompressobj(-15)
                chunks, total = [], 0
                if flags & 0x8:  # sizes follow the data: inflate until the deflate stream ends
                    while not d.eof:
                        block = f.read(1 << 16)
                        if not block:
                            raise EOFError("member data cut off")
                        out = d.decompress(block)
                        total += len(out)
                        if total > MAX_MEMBER_BYTES:
                            raise ValueError("member too large")
                        chunks.append(out)
                    # Hand back what was read past the end of the stream, then skip the data descriptor.
                    f.seek(-len(d.unused_data), os.SEEK_CUR)
                    desc = f.read(16)
                    skip = 16 if desc[:4] == b"PK\x07\x08" else 12
                    f.seek(skip - len(desc), os.SEEK_CUR)
                else:
                    comp = f.read(csize)
                    if len(comp) < csize:
                        raise EOFError("member data cut off")
                    chunks.append(d.decompress(comp))
                    if not d.eof:
                        raise zlib.error("incomplete deflate stream")
                data = b"".join(chunks)
            else:
                raise NotImplementedError(f"zip method {method} without a central directory")
        except _ARCHIVE_ERRORS as e:
            if wanted and is_sgf_name(fname):
                info.records += 1
                yield Source(mpath, None, "truncated_member", f"{type(e).__name__}: {e}")
            info.errors.append({"path": mpath, "reason": "truncated_archive", "detail": f"{type(e).__name__}: {e}",
                                "records_before": info.records})
            return
        if not wanted:
            if not fname.endswith("/"):
                info.ignored += 1
            continue
        kind = archive_kind(fname)
        if kind is not None:
            yield from _iter_archive_bytes(data, mpath, kind, info)
        else:
            info.records += 1
            yield Source(mpath, data)


def _iter_archive_bytes(data: bytes, name: str, kind: str, info: InputInfo) -> Iterator[Source]:
    """An archive inside an archive, read from memory."""
    if kind == "zip":
        yield from _iter_zip(io.BytesIO(data), name, info)
    else:
        yield from _iter_tar(io.BufferedReader(io.BytesIO(data)), name, info)


def _read_file(path: str, info: InputInfo) -> Source:
    try:
        size = os.path.getsize(path)
        if size > MAX_MEMBER_BYTES:
            return Source(path, None, "too_large", f"{size} bytes")
        with open(path, "rb") as f:
            return Source(path, f.read())
    except OSError as e:
        return Source(path, None, "unreadable", f"{type(e).__name__}: {e}")


def _iter_archive_file(path: str, kind: str, info: InputInfo, dir_hash=None) -> Iterator[Source]:
    try:
        f = open(path, "rb")
    except OSError as e:
        info.errors.append({"path": path, "reason": "unreadable", "detail": f"{type(e).__name__}: {e}",
                            "records_before": info.records})
        return
    with f:
        if kind == "tar":
            reader = _HashingReader(f)
            yield from _iter_tar(io.BufferedReader(reader, 1 << 20), path, info)
            reader.drain()
            sha, n = reader.sha.hexdigest(), reader.nbytes
        else:
            sha, n = _file_sha256(path)
            yield from _iter_zip(f, path, info)
    if dir_hash is None:
        info.sha256, info.bytes = sha, n
    else:
        dir_hash(path, sha, n)


def _walk_sorted(root: str):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            yield os.path.join(dirpath, fn)


def iter_input(path: str, info: InputInfo) -> Iterator[Source]:
    """Yield the game records of one top-level input, filling ``info`` (hash, counts, errors) as it goes."""
    kind = info.kind
    if kind == "sgf":
        src = _read_file(path, info)
        info.records += 1
        if src.data is not None:
            info.sha256 = hashlib.sha256(src.data).hexdigest()
            info.bytes = len(src.data)
        yield src
    elif kind in ("tar", "zip"):
        yield from _iter_archive_file(path, kind, info)
    else:
        h = hashlib.sha256()

        def add(p, sha, n):
            h.update(f"{os.path.relpath(p, path)}\0{sha}\n".encode("utf-8", "surrogateescape"))
            info.bytes += n

        for fp in _walk_sorted(path):
            k = archive_kind(fp)
            if k is not None:
                yield from _iter_archive_file(fp, k, info, dir_hash=add)
            elif is_sgf_name(fp):
                src = _read_file(fp, info)
                info.records += 1
                if src.data is not None:
                    add(fp, hashlib.sha256(src.data).hexdigest(), len(src.data))
                yield src
            else:
                info.ignored += 1
        info.sha256 = h.hexdigest()


def iter_sources(paths, infos: list[InputInfo] | None = None) -> Iterator[Source]:
    """Yield every game record of ``paths`` in build order. ``infos`` (if given) receives one InputInfo per input."""
    for p in normalize_inputs(paths):
        info = InputInfo(path=p, kind=input_kind(p))
        if infos is not None:
            infos.append(info)
        yield from iter_input(p, info)


def count_sources(paths) -> int:
    """Number of game records ``iter_sources`` will yield (one read of every input, for progress totals)."""
    return sum(1 for _ in iter_sources(paths))


def input_identity(paths) -> list[dict]:
    """Cheap identity of the inputs (path, size, mtime of every file) to detect inputs changed before a resume."""
    out = []
    for p in normalize_inputs(paths):
        files = [p] if not os.path.isdir(p) else list(_walk_sorted(p))
        for fp in files:
            try:
                st = os.stat(fp)
                out.append({"path": fp, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
            except OSError:
                out.append({"path": fp, "size": -1, "mtime_ns": -1})
    return out
