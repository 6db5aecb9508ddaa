"""Archives read in place as streams: tar (any compression), zip (with or without its central directory), and
archives inside archives, with bounded memory and time whatever a member inflates to.

:func:`iter_archive_file` yields the :class:`~.sources.Source` records of one archive file (member paths
``ARCHIVE!MEMBER``, the size caps, truncated and corrupt archives: docs/building.md, "Inputs, filters and
splits"). :func:`read_capped` reads a stream up to a cap.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import lzma
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

from . import sources
from .sources import InputInfo, Source, archive_kind, is_sgf_name, note_error, tree_records

_CHUNK = 1 << 16  # compressed bytes read at a time, and the most a decompressor hands out at once
_READ = 1 << 20  # block size when reading a whole member

# Exceptions a damaged archive raises while it is read.
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError, ValueError,
                   struct.error, NotImplementedError, lzma.LZMAError)


# ------------------------------------------------------------------------------------------------------------
# streams


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

    def drain(self):
        while self.read(_READ):
            pass


def _file_sha256(path: str) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while block := f.read(_READ):
            h.update(block)
            n += len(block)
    return h.hexdigest(), n


def _lzma_zip_filters(props: bytes, max_dict: int | None) -> list[dict]:
    """The raw LZMA1 filter of a zip member (method 14) from its 5 property bytes, the dictionary clamped to
    ``max_dict``."""
    if len(props) != 5:
        raise zipfile.BadZipFile(f"LZMA properties of {len(props)} bytes, not 5")
    d = props[0]
    if d >= 9 * 5 * 5:
        raise zipfile.BadZipFile("bad LZMA properties")
    size = int.from_bytes(props[1:5], "little")
    if max_dict is not None:
        size = min(size, max(max_dict, 1 << 12))
    return [{"id": lzma.FILTER_LZMA1, "lc": d % 9, "lp": d // 9 % 5, "pb": d // 45, "dict_size": size}]


class _Decompressor(io.RawIOBase):
    """Streaming gzip / raw deflate / bzip2 / xz / raw LZMA1 decompression with bounded output.

    Each ``readinto(b)`` yields at most ``len(b)`` bytes, so time is linear in the member's size and memory one
    buffer, whatever it inflates to. A truncated input ends the data (``truncated`` set); a checksum error
    raises. With ``multistream``, concatenated streams are followed and zero padding between them skipped;
    without it the data ends with the first stream and ``unused`` holds what followed."""

    def __init__(self, raw, kind: str, *, multistream: bool = False, filters=None):
        self._raw, self._kind, self._multi, self._filters = raw, kind, multistream, filters
        self._zlib = kind in ("gzip", "deflate")
        self._dec = self._new()
        self._in = b""  # input not yet handed to the decompressor (zlib: its unconsumed tail)
        self.truncated = False  # the input ended inside a stream
        self.eof = False  # the (last) stream ended properly
        self.unused = b""  # without multistream: the input after the end of the stream
        self._done = False

    def _new(self):
        if self._kind == "gzip":
            return zlib.decompressobj(wbits=31)
        if self._kind == "deflate":
            return zlib.decompressobj(wbits=-15)
        if self._kind == "bz2":
            return bz2.BZ2Decompressor()
        if self._kind == "lzma-raw":
            return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=self._filters)
        return lzma.LZMADecompressor(memlimit=sources.MAX_XZ_MEMORY)

    def readable(self):
        return True

    def readinto(self, b):
        want = len(b)
        while want and not self._done:
            dec = self._dec
            if dec is None:  # between concatenated streams: skip zero padding, start the next one if any
                data = self._in.lstrip(b"\0")
                if not data:
                    self._in = b""
                    chunk = self._raw.read(_CHUNK)
                    if not chunk:
                        self._done = True
                        break
                    self._in = chunk
                    continue
                self._dec, self._in, self.eof = self._new(), data, False
                continue
            if dec.eof:
                self.eof = True
                if not self._multi:
                    self.unused, self._done = dec.unused_data, True
                    break
                self._dec, self._in = None, dec.unused_data
                continue
            if self._zlib:
                out = dec.decompress(self._in, want)
                self._in = dec.unconsumed_tail
            elif self._in or not dec.needs_input:
                out = dec.decompress(self._in, want)
                self._in = b""
            else:
                out = b""
            if out:
                n = len(out)
                b[:n] = out
                return n
            if dec.eof:
                continue
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                self.truncated = self._done = True
                break
            self._in += chunk
        return 0


def _sniff(head: bytes) -> str | None:
    return ("gzip" if head[:2] == b"\x1f\x8b" else "bz2" if head[:3] == b"BZh"
            else "xz" if head[:6] == b"\xfd7zXZ\x00" else None)


def _decompressed(f):
    """(stream of tar bytes, decompressor or None) for a file object with ``peek`` (kind by magic number)."""
    kind = _sniff(f.peek(6)[:6])
    if kind is None:
        return f, None
    dec = _Decompressor(f, kind, multistream=True)
    return io.BufferedReader(dec, _CHUNK), dec


def read_capped(stream, limit: int, keep: int | None = None) -> bytes | None:
    """All of ``stream``, or None when it holds more than ``limit`` bytes (at most ``limit`` + 1 are read).
    Bytes past ``keep`` (the size a header states) are counted, not kept; a stream that ends short of a lying
    header's size but under the cap raises ``BadZipFile``."""
    parts, total = [], 0
    while True:
        block = stream.read(min(_READ, limit + 1 - total))
        if not block:
            if keep is not None and total > keep:
                raise zipfile.BadZipFile(f"member inflates to {total} bytes, its header says {keep}")
            return b"".join(parts)
        if keep is None or total < keep:
            parts.append(block if keep is None else block[:keep - total])
        total += len(block)
        if total > limit:
            return None


# ------------------------------------------------------------------------------------------------------------
# tar


class _TarInfo(tarfile.TarInfo):
    """Records on the TarFile why reading a header failed: tarfile itself ends the archive quietly at an empty
    (cut at a member boundary), truncated (cut inside a header) or invalid (damaged) header after the first."""

    @classmethod
    def fromtarfile(cls, tf):
        try:
            ti = super().fromtarfile(tf)
        except tarfile.HeaderError as e:
            tf._kifunet_stop = e
            raise
        tf._kifunet_stop = None
        return ti


def _members_text(members: int, records: int) -> str:
    return f"{members} member{'s' * (members != 1)} read whole ({records} game record{'s' * (records != 1)})"


def _not_regular(member: tarfile.TarInfo) -> str:
    """Why a tar member named ``.sgf`` that is no regular file is not read (its type, and a link's target)."""
    if member.issym():
        what = f"a symbolic link to {member.linkname!r}"
    elif member.islnk():
        what = f"a hard link to {member.linkname!r}"
    else:
        what = {tarfile.FIFOTYPE: "a FIFO", tarfile.CHRTYPE: "a character device",
                tarfile.BLKTYPE: "a block device"}.get(member.type, f"a member of tar type {member.type!r}")
    return f"not a regular file: {what} in the archive; not read"


def _iter_tar(fileobj, name: str, info: InputInfo) -> Iterator[Source]:
    """Stream a tar archive (plain, gzip, bzip2 or xz); damage ends the stream and is recorded in ``info``.

    Whole means tar's end-of-archive marker was read, and after it only zero bytes that pass their checks."""
    member, dec, tf = None, None, None
    members, records0 = 0, info.records
    skipped = None  # the last member whose data was passed over unread (tarfile checks it is there on the next)
    try:
        stream, dec = _decompressed(fileobj)
        tf = tarfile.open(fileobj=stream, mode="r|", tarinfo=_TarInfo)
        while True:
            member = tf.next()
            tf.members.clear()  # stream mode would keep every header: memory grows with the member count
            if skipped is not None:
                members, skipped = members + 1, None
            if member is None:
                break
            if member.isfile():
                skipped = yield from _tar_member(tf, member, name, info)
            elif is_sgf_name(member.name) and not member.isdir():  # a record that cannot be read: rejected
                info.records += 1
                yield Source(f"{name}!{member.name}", None, "unreadable", _not_regular(member))
            member = None
            if skipped is None:
                members += 1
        _check_tar_end(tf, stream, dec, _members_text(members, info.records - records0))
    except _ARCHIVE_ERRORS as e:
        at = f"{name}!{member.name}" if member is not None else name
        stop = getattr(tf, "_kifunet_stop", None)
        truncated = ((dec is not None and dec.truncated) or _is_truncation(e)
                     or isinstance(stop, (tarfile.EmptyHeaderError, tarfile.TruncatedHeaderError)))
        detail = f"{type(e).__name__}: {e}"
        if f"{members} member" not in detail:
            cut_name = member.name if member is not None else skipped
            cut = f", then {cut_name} was cut off" if cut_name is not None and truncated else ""
            detail += (f"; {_members_text(members, info.records - records0)}{cut}; the rest of the archive is "
                       f"{'missing' if truncated else 'not read'}")
        note_error(info, at, "truncated_archive" if truncated else "corrupt_archive", detail, members_read=members)
        if member is not None and is_sgf_name(member.name):
            info.records += 1
            yield Source(at, None, "truncated_member", f"{type(e).__name__}: {e}")
    finally:
        if tf is not None:
            tf.close()


def _tar_member(tf, member: tarfile.TarInfo, name: str, info: InputInfo):
    """The records of regular file ``member`` of the tar ``name`` being streamed (an SGF, an archive inside, or
    passed over); returns the member's name when its data was passed over unread (tarfile checks that it is there
    as it reads the next header), else None."""
    mpath = f"{name}!{member.name}"
    kind = archive_kind(member.name)
    if not is_sgf_name(member.name) and kind is None:
        info.ignored += 1
        return member.name
    if kind == "tar":  # streamed from inside this one: any size, bounded memory
        yield from _iter_tar(tf.extractfile(member), mpath, info)
        return member.name  # whole once tarfile has passed over the end of its data
    if kind == "zip":
        if member.size > sources.MAX_NESTED_ZIP_BYTES:
            note_error(info, mpath, "too_large", f"a zip inside an archive is read into memory: {member.size} "
                       f"bytes is over MAX_NESTED_ZIP_BYTES = {sources.MAX_NESTED_ZIP_BYTES}; not read")
            return member.name
        yield from _iter_zip(io.BytesIO(tf.extractfile(member).read()), mpath, info)
        return None
    if member.size > sources.MAX_MEMBER_BYTES:
        info.records += 1
        yield Source(mpath, None, "too_large", f"{member.size} bytes (cap {sources.MAX_MEMBER_BYTES})")
        return member.name
    yield from tree_records(mpath, tf.extractfile(member).read(), info)
    return None


def _check_tar_end(tf, stream, dec, done: str) -> None:
    """Raise unless the tar stream ended whole: at tar's end-of-archive marker, then only zero bytes, with the
    compressed stream (``dec``, None for a plain tar) complete; ``done`` says what was read."""
    stop = getattr(tf, "_kifunet_stop", None)
    if isinstance(stop, tarfile.EmptyHeaderError):
        raise EOFError(f"the archive ends without tar's end-of-archive marker, after {done}: cut at a member "
                       f"boundary; any later members are missing")
    if isinstance(stop, tarfile.TruncatedHeaderError):
        raise EOFError(f"cut off inside the header after {done}; the rest of the archive is missing")
    if isinstance(stop, tarfile.InvalidHeaderError):
        raise tarfile.ReadError(f"a damaged header ({stop}) after {done}; the rest of the archive is not read")
    while block := stream.read(_READ):
        if block.count(0) != len(block):
            raise tarfile.ReadError(f"data after the end-of-archive marker (damaged archive); {done}")
    if dec is not None and dec.truncated:
        raise EOFError(f"compressed stream cut off after the end-of-archive marker; all {done}")


def _is_truncation(e: Exception) -> bool:
    text = str(e).lower()
    return (isinstance(e, EOFError) or "unexpected end" in text or "truncated" in text or "end of" in text
            or "empty file" in text or "cut off" in text)


# ------------------------------------------------------------------------------------------------------------
# zip

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # signature .. extra length (30 bytes)
_LOCAL_SIG, _CENTRAL_SIG, _END_SIGS = b"PK\x03\x04", b"PK\x01\x02", (b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07")


class _Slice(io.RawIOBase):
    """``length`` bytes of a seekable, possibly shared file from ``start`` (to its end when None); every read seeks
    first; ending short raises EOFError."""

    def __init__(self, f, start: int, length: int | None):
        self._f, self._start, self._length = f, start, length
        self.pos = 0

    def readable(self):
        return True

    def readinto(self, b):
        n = len(b) if self._length is None else min(len(b), self._length - self.pos)
        if n <= 0:
            return 0
        self._f.seek(self._start + self.pos)
        data = self._f.read(n)
        if not data and self._length is not None:
            raise EOFError(f"member data cut off ({self.pos} of {self._length} bytes)")
        b[:len(data)] = data
        self.pos += len(data)
        return len(data)

    def read_exactly(self, n: int) -> bytes:
        data = self.read(n)
        if len(data) != n:
            raise EOFError("member data cut off")
        return data


class _ZipMember(io.RawIOBase):
    """A zip member's data, decompressed as read (bounded, :class:`_Decompressor`); size and CRC-32 are checked at
    the end where known (``BadZipFile``). ``csize`` None (a data descriptor follows): the data runs to the end of
    the compressed stream, and :meth:`end` gives where."""

    def __init__(self, f, start: int, method: int, csize: int | None, *, usize: int | None = None,
                 crc: int | None = None, flags: int = 0, limit: int | None = None,
                 on_end: Callable[[_ZipMember], None] | None = None):
        if flags & 0x1:
            raise NotImplementedError("encrypted zip member")
        self._slice = _Slice(f, start, csize)
        self._sized = csize is not None
        if method == 0:
            if not self._sized:
                raise NotImplementedError("a stored zip member of unknown size (data descriptor)")
            self._dec = None
        elif method == 8:
            self._dec = _Decompressor(self._slice, "deflate")
        elif method == 12:
            self._dec = _Decompressor(self._slice, "bz2")
        elif method == 14:
            head = self._slice.read_exactly(4)
            props = self._slice.read_exactly(int.from_bytes(head[2:4], "little"))
            known = [v + 1 for v in (usize, limit) if v is not None]
            self._dec = _Decompressor(self._slice, "lzma-raw",
                                      filters=_lzma_zip_filters(props, min(known) if known else None))
            self._lzma_eos = bool(flags & 0x2)
        else:
            raise NotImplementedError(f"zip compression method {method}")
        self._method, self.usize, self.crc, self._on_end = method, usize, crc, on_end
        self.size, self.crc32, self._ended = 0, 0, False

    def readable(self):
        return True

    def readinto(self, b):
        if self._ended:
            return 0
        n = (self._dec or self._slice).readinto(b)
        if n:
            self.crc32 = zlib.crc32(memoryview(b)[:n], self.crc32)
            self.size += n
            return n
        self._ended = True
        dec = self._dec
        if dec is not None and not dec.eof:
            if not self._sized:
                raise EOFError("member data cut off")
            if not (self._method == 14 and not self._lzma_eos):  # raw LZMA without an end marker just stops
                raise zipfile.BadZipFile("compressed data ends before its stream does")
        if self.usize is not None and self.size != self.usize:
            raise zipfile.BadZipFile(f"member inflates to {self.size} bytes, its header says {self.usize}")
        if self.crc is not None and self.crc32 != self.crc:
            raise zipfile.BadZipFile("bad CRC-32")
        if self._on_end is not None:
            self._on_end(self)
        return 0

    def drain(self) -> None:
        while self.read(_READ):
            pass

    def end(self) -> int:
        """Compressed bytes the member took (after it was read to its end)."""
        return self._slice.pos - (len(self._dec.unused) if self._dec is not None else 0)


def _data_start(f, header_offset: int) -> int:
    f.seek(header_offset)
    head = f.read(_LOCAL_HEADER.size)
    if len(head) != _LOCAL_HEADER.size or head[:4] != _LOCAL_SIG:
        raise zipfile.BadZipFile("bad local file header")
    nlen, xlen = _LOCAL_HEADER.unpack(head)[9:]
    return header_offset + _LOCAL_HEADER.size + nlen + xlen


def _too_large(info: InputInfo, mpath: str, kind: str | None, game: str, archive: str) -> Iterator[Source]:
    """A member over its cap: a game is yielded as a Source with the ``too_large`` error (``game``: the detail), a
    nested archive is recorded as an input error (``archive``)."""
    if kind is None:
        info.records += 1
        yield Source(mpath, None, "too_large", game)
    else:
        note_error(info, mpath, "too_large", archive)


def _zip_entry(open_member: Callable[..., _ZipMember], fname: str, size: int | None, mpath: str,
               info: InputInfo, *, damage: str) -> Iterator[Source]:
    """Read one zip member (a game record or an archive); an unreadable member is yielded as a Source with ``damage``
    as its error (a game) or recorded (an archive), and raised again when ``damage`` is 'truncated_member'."""
    kind = archive_kind(fname)
    cap = sources.MAX_NESTED_ZIP_BYTES if kind == "zip" else sources.MAX_MEMBER_BYTES
    if kind != "tar" and size is not None and size > cap:
        yield from _too_large(info, mpath, kind, f"{size} bytes (cap {cap})", "a zip inside an archive is read into "
                              f"memory: {size} bytes is over MAX_NESTED_ZIP_BYTES = {cap}; not read")
        return
    try:
        member = open_member(limit=None if kind == "tar" else cap)
        if kind == "tar":
            yield from _iter_tar(io.BufferedReader(member, _CHUNK), mpath, info)
            return
        data = read_capped(member, cap, keep=size)
    except _ARCHIVE_ERRORS as e:
        detail = f"{type(e).__name__}: {e}"
        if kind is None:
            info.records += 1
            yield Source(mpath, None, damage, detail)
        elif damage != "truncated_member":
            note_error(info, mpath, "corrupt_archive", detail)
        if damage == "truncated_member":
            raise
        return
    if data is None:
        yield from _too_large(info, mpath, kind, f"inflates past the cap of {cap} bytes (read {cap + 1})",
                              f"a zip inside an archive inflates past MAX_NESTED_ZIP_BYTES = {cap}; not read")
    elif kind == "zip":
        yield from _iter_zip(io.BytesIO(data), mpath, info)
    else:
        yield from tree_records(mpath, data, info)


def _iter_zip(fileobj, name: str, info: InputInfo) -> Iterator[Source]:
    try:
        zf = zipfile.ZipFile(fileobj)
    except _ARCHIVE_ERRORS as e:
        yield from _iter_zip_local(fileobj, name, info, f"no central directory ({type(e).__name__}: {e})")
        return
    with zf:
        for zi in zf.infolist():
            if not zi.filename:  # a damaged or hostile entry with no name: nothing to read as a game
                info.ignored += 1
                continue
            if zi.is_dir():
                continue
            if not is_sgf_name(zi.filename) and archive_kind(zi.filename) is None:
                info.ignored += 1
                continue

            def open_member(zi=zi, limit=None):
                return _ZipMember(fileobj, _data_start(fileobj, zi.header_offset), zi.compress_type,
                                  zi.compress_size, usize=zi.file_size, crc=zi.CRC, flags=zi.flag_bits,
                                  limit=limit)

            yield from _zip_entry(open_member, zi.filename, zi.file_size, f"{name}!{zi.filename}", info,
                                  damage="unreadable")


def _zip64_sizes(extra: bytes, usize: int, csize: int) -> tuple[int, int]:
    """Sizes from a local header's ZIP64 extra field (only the fields set to 0xFFFFFFFF are there)."""
    i = 0
    while i + 4 <= len(extra):
        tag, ln = struct.unpack_from("<HH", extra, i)
        if tag == 0x0001:
            vals, j = [], i + 4
            for v in (usize, csize):
                if v == 0xFFFFFFFF and j + 8 <= i + 4 + ln:
                    vals.append(struct.unpack_from("<Q", extra, j)[0])
                    j += 8
                else:
                    vals.append(v)
            return vals[0], vals[1]
        i += 4 + ln
    return usize, csize


class _LocalHeader(NamedTuple):
    """A zip member's local file header, its sizes from the ZIP64 extra field where it has one."""

    fname: str
    flags: int
    method: int
    crc: int
    csize: int
    usize: int
    zip64: bool  # the header's sizes are 0xFFFFFFFF: its data descriptor holds 8-byte sizes
    start: int  # where the member's data starts

    @property
    def descriptor(self) -> bool:
        """Sizes and CRC-32 are in a data descriptor behind the data (general purpose flag bit 3)."""
        return bool(self.flags & 0x8)


def _local_header(f, pos: int, done: str) -> _LocalHeader | tuple[str, str]:
    """The member header at byte ``pos``, or where the members end (reason, what) for :func:`_iter_zip_local`'s
    one error; ``done`` says what was read whole before."""
    f.seek(pos)
    head = f.read(_LOCAL_HEADER.size)
    if not head:
        return "truncated_archive", (f"the data ends after {done}; any later members and the central directory "
                                     "are missing")
    if head[:4] == _CENTRAL_SIG or head[:4] in _END_SIGS:
        return "truncated_archive", f"{done}: every member up to the central directory, which is cut off or damaged"
    if head[:4] != _LOCAL_SIG and not (len(head) < 4 and _LOCAL_SIG.startswith(head)):
        return "corrupt_archive", f"no member header at byte {pos}, after {done}; the rest of the archive is not read"
    cut = "truncated_archive", f"cut off inside a member header after {done}; the rest of the archive is missing"
    if len(head) < _LOCAL_HEADER.size:
        return cut
    (_sig, _ver, flags, method, _t, _d, crc, csize, usize, nlen, xlen) = _LOCAL_HEADER.unpack(head)
    tail = f.read(nlen + xlen)
    if len(tail) < nlen + xlen:
        return cut
    fname = tail[:nlen].decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
    zip64 = 0xFFFFFFFF in (usize, csize)
    usize, csize = _zip64_sizes(tail[nlen:], usize, csize)
    return _LocalHeader(fname, flags, method, crc, csize, usize, zip64, pos + _LOCAL_HEADER.size + nlen + xlen)


def _local_member(f, h: _LocalHeader, name: str, info: InputInfo):
    """The records of the member with local header ``h`` (read if an SGF or an archive, else passed over);
    returns where the next header starts. Damage raises one of ``_ARCHIVE_ERRORS``."""
    holder: list[_ZipMember] = []
    after: list[int] = []

    def check_descriptor(member):
        """Read the data descriptor behind the data: its CRC-32 and size must match; note where it ends."""
        end = h.start + member.end()
        size_len = 8 if h.zip64 else 4
        f.seek(end)
        desc = f.read(4 + 4 + 2 * size_len)
        sig = 4 if desc[:4] == b"PK\x07\x08" else 0
        need = sig + 4 + 2 * size_len
        if len(desc) < need:
            raise EOFError("data descriptor cut off")
        d_crc = struct.unpack_from("<I", desc, sig)[0]
        d_usize = struct.unpack_from("<Q" if h.zip64 else "<I", desc, sig + 4 + size_len)[0]
        if d_crc != member.crc32 or d_usize != member.size % (1 << (8 * size_len)):
            raise zipfile.BadZipFile("data does not match its data descriptor (CRC-32 or size)")
        after.append(end + need)

    def open_member(limit=None):
        if h.descriptor:
            m = _ZipMember(f, h.start, h.method, None, flags=h.flags, limit=limit, on_end=check_descriptor)
        else:
            m = _ZipMember(f, h.start, h.method, h.csize, usize=h.usize, crc=h.crc, flags=h.flags, limit=limit)
        holder.append(m)
        return m

    fname = h.fname
    if (is_sgf_name(fname) or archive_kind(fname) is not None) and not fname.endswith("/"):
        yield from _zip_entry(open_member, fname, None if h.descriptor else h.usize, f"{name}!{fname}", info,
                              damage="truncated_member")
    elif not fname.endswith("/"):
        info.ignored += 1
    if h.descriptor:
        (holder[0] if holder else open_member()).drain()  # to the end of the data (and its descriptor)
        return after[0]
    if h.csize:  # the data must all be there (a member not read, or read only up to a cap)
        f.seek(h.start + h.csize - 1)
        if not f.read(1):
            raise EOFError("member data cut off")
    return h.start + h.csize


def _iter_zip_local(f, name: str, info: InputInfo, why: str) -> Iterator[Source]:
    """Read a zip whose central directory is missing, member by member from the local file headers. Exactly one
    error is recorded: how many members were read whole, and whether the rest is missing."""
    members, records0, pos = 0, info.records, 0
    whole = info.records  # records of the members read whole

    def report(reason, what, path=name):
        note_error(info, path, reason, f"{why}; read from local headers: {what}", members_read=members,
                   records_before=whole)

    while True:
        h = _local_header(f, pos, _members_text(members, whole - records0))
        if not isinstance(h, _LocalHeader):
            return report(*h)
        try:
            pos = yield from _local_member(f, h, name, info)
        except _ARCHIVE_ERRORS as e:
            return report("truncated_archive", f"member {h.fname} cut off or damaged ({type(e).__name__}: {e}) "
                          f"after {_members_text(members, whole - records0)}; the rest of the archive is missing",
                          f"{name}!{h.fname}")
        members += 1
        whole = info.records


def iter_archive_file(path: str, kind: str, info: InputInfo, dir_hash=None) -> Iterator[Source]:
    """The records of one tar or zip archive file (``kind``), filling ``info``; its sha256 and size go to
    ``info`` or, for a file inside a directory input, to ``dir_hash(path, sha256, nbytes)``."""
    try:
        f = open(path, "rb")
    except OSError as e:
        note_error(info, path, "unreadable", f"{type(e).__name__}: {e}")
        return
    with f:
        if kind == "tar":
            reader = _HashingReader(f)
            yield from _iter_tar(io.BufferedReader(reader, _READ), path, info)
            reader.drain()
            sha, n = reader.sha.hexdigest(), reader.nbytes
        else:
            sha, n = _file_sha256(path)
            yield from _iter_zip(f, path, info)
    if dir_hash is None:
        info.sha256, info.bytes = sha, n
    else:
        dir_hash(path, sha, n)
