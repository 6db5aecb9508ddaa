"""Enumerate the SGF records of a build's inputs: files, directories and archives, read in place.

Inputs may be any mix of ``.sgf`` files, directories (searched recursively), ``.zip``, ``.tar``,
``.tar.gz``/``.tgz``, ``.tar.bz2`` (and ``.tar.xz``) archives. Nothing is extracted to disk: archive members
are read into memory one at a time (tar archives are streamed, so a ``.tar.gz`` is decompressed exactly once).

=====================  ==================================================================================
convention             rule
=====================  ==================================================================================
order                  (it decides which copy of a duplicate game wins, and the build's work units)
                       top-level inputs sorted by path; in a directory, its files sorted by name, then its
                       subdirectories sorted by name, each read whole before the next (depth first); archive
                       members in the order the archive stores them; the game trees of a file in file order.
paths                  a member of an archive is ``ARCHIVE!MEMBER``
                       (``KGS-2015.tar.gz!kgs-2015/2015-01-01-1.sgf``); an archive inside an archive nests the
                       same way (``a.zip!inner.tar.gz!x.sgf``); a file in a directory is its path under the
                       directory as given (through symbolic links, not resolved).
game record            a file or member whose name ends in ``.sgf`` (any case); a top-level input file named
                       on the command line is read as SGF whatever its extension, unless it is an archive.
                       Other files met inside directories and archives are counted per input as ``ignored``
                       (README files, images), never as games.
collections            a file holding several game trees (an SGF collection) gives one record per tree, in
                       order: the first keeps the file's name, tree *k* >= 2 is ``NAME#k`` (``x.sgf#2``,
                       ``a.zip!x.sgf#3``; :func:`source_file` maps a record's path back to its file). A file
                       with one tree is one record, named and with bytes exactly as before (so existing
                       datasets and dedupe are unchanged); in a collection each record's bytes are its tree's
                       (:func:`kifunet.data_prep.sgf.sgf_io.split_game_trees` says where they are cut). Each tree
                       is then filtered, used or rejected like any other record; a damaged tree rejects only
                       itself (a tree that never closes runs to the end of the file); text between trees is
                       ignored, as sgfmill ignores it.
symbolic links         followed, to files and to directories. A directory reached again through a link is
                       not read twice and is recorded in :attr:`InputInfo.errors`: ``symlink_loop`` when the
                       link leads back to a directory it is inside, ``duplicate_directory`` when the directory
                       was already read through another path of the same input (the first path in build
                       order reads it; directories are told apart by device and inode). A link to nothing is a
                       record rejected as ``unreadable`` (if named ``.sgf``); a directory that cannot be listed
                       is an ``unreadable`` error; a special file (FIFO, device) named ``.sgf`` inside a
                       directory is ``unreadable`` (never opened, it could block). A tar member named
                       ``.sgf`` that is no regular file (a symbolic or hard link, a FIFO, a device) is a
                       record rejected as ``unreadable``, its type and a link's target in the detail: links
                       inside an archive are never followed.
size caps              a game record is read with at most ``MAX_MEMBER_BYTES`` + 1 bytes: larger, it is a
                       record rejected as ``too_large`` (decided from the size a file, tar or zip header states,
                       and again while decompressing, so a zip member whose header lies is stopped at the cap).
                       Decompression hands out at most what was asked for (``decompress(data, max_length)``):
                       time is linear and memory bounded whatever a member inflates to. A tar inside an
                       archive is streamed (any size); a zip inside an archive needs random access and is read
                       into memory, up to ``MAX_NESTED_ZIP_BYTES``: larger, it is an error ``too_large`` (with
                       its path). An ``.xz`` stream may use ``MAX_XZ_MEMORY`` (its dictionary); a zip LZMA
                       member's dictionary is clamped to what the member can need.
damage                 a truncated or corrupt archive is recorded in :attr:`InputInfo.errors` (reason
                       ``truncated_archive``, ``corrupt_archive``; ``members_read`` and the detail say how many
                       members were read whole, and that the rest is missing) with the members read before the
                       damage kept. A tar cut at a member boundary or inside a header (tarfile itself ends
                       quietly there) is truncated; wholeness is claimed only when tar's end-of-archive marker
                       was read. A member cut off by the damage, or one that cannot be read, is yielded as a
                       :class:`Source` with ``error`` set, so that the build counts it as a rejected game. A
                       zip without its central directory (a truncated download) is read sequentially from its
                       local headers.
=====================  ==================================================================================
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator

from . import archives, sources
# re-exported: callers name them as inputs.X
from .sources import TREE_MARK, InputInfo, Source, archive_kind, is_sgf_name, note_error, tree_records  # noqa: F401

_TREE_RE = re.compile(re.escape(TREE_MARK) + r"([2-9]|[1-9][0-9]+)\Z")


def source_file(path: str) -> str:
    """The file a record was read from: the part before the first ``!`` (the archive, or the SGF file), without
    a collection's ``#k`` (``a.sgf#2`` -> ``a.sgf``) unless a file of that very name exists."""
    top = path.split("!", 1)[0]
    m = _TREE_RE.search(top)
    if m and "!" not in path and not os.path.exists(top):
        return top[:m.start()]
    return top


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


# ------------------------------------------------------------------------------------------------------------
# files and directories


def _read_file(path: str, info: InputInfo, *, regular_only: bool = False) -> Source:
    """One file's bytes (at most ``sources.MAX_MEMBER_BYTES`` + 1 are read) as a single Source, or its error."""
    try:
        st = os.stat(path)
        if regular_only and not stat.S_ISREG(st.st_mode):
            return Source(path, None, "unreadable", "not a regular file (a FIFO, socket or device): not opened")
        if st.st_size > sources.MAX_MEMBER_BYTES:
            return Source(path, None, "too_large", f"{st.st_size} bytes (cap {sources.MAX_MEMBER_BYTES})")
        with open(path, "rb") as f:
            data = archives.read_capped(f, sources.MAX_MEMBER_BYTES)
        if data is None:
            return Source(path, None, "too_large", f"more than {sources.MAX_MEMBER_BYTES} bytes")
        return Source(path, data)
    except OSError as e:
        return Source(path, None, "unreadable", f"{type(e).__name__}: {e}")


def _file_records(path: str, info: InputInfo, dir_hash=None, *, regular_only: bool = False) -> Iterator[Source]:
    src = _read_file(path, info, regular_only=regular_only)
    if src.data is None:
        info.records += 1
        yield src
        return
    sha = hashlib.sha256(src.data).hexdigest()
    if dir_hash is None:
        info.sha256, info.bytes = sha, len(src.data)
    else:
        dir_hash(path, sha, len(src.data))
    yield from tree_records(path, src.data, info)



def iter_file(path: str, info: InputInfo, dir_hash=None) -> Iterator[Source]:
    """The records of one file met in a directory: an archive's, an SGF file's (one per game tree), or none
    (``info.ignored`` counts it). ``dir_hash(path, sha256, nbytes)`` receives the file's hash."""
    kind = archive_kind(path)
    if kind is not None:
        yield from archives.iter_archive_file(path, kind, info, dir_hash=dir_hash if dir_hash else lambda *a: None)
    elif is_sgf_name(path):
        yield from _file_records(path, info, dir_hash if dir_hash else lambda *a: None, regular_only=True)
    else:
        info.ignored += 1


def walk(root: str, info: InputInfo | None = None) -> Iterator[str]:
    """Every non-directory entry under ``root`` in build order (see 'order' and 'symbolic links' in the module
    docstring); with ``info``, loops, directories met twice and directories that cannot be listed are recorded
    in ``info.errors``."""

    def key(st):
        return st.st_dev, st.st_ino

    top = key(os.stat(root))
    seen: set = set()  # directories read (marked when read, so that the first path in build order reads one)
    stack = [(root, top, frozenset([top]))]
    while stack:
        d, k, ancestors = stack.pop()
        if k in seen:
            if info is not None:
                note_error(info, d, "duplicate_directory", f"the directory {os.path.realpath(d)} was already read "
                           f"through another path of this input: not read twice")
            continue
        seen.add(k)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            if info is not None:
                note_error(info, d, "unreadable", f"cannot list the directory: {type(e).__name__}: {e}")
            continue
        subdirs = []
        for e in entries:
            try:
                is_dir = e.is_dir()  # follows symbolic links
            except OSError:
                is_dir = False
            if not is_dir:
                yield e.path
                continue
            try:
                k = key(os.stat(e.path))  # through links (DirEntry.stat has no inode on Windows)
            except OSError as err:
                if info is not None:
                    note_error(info, e.path, "unreadable", f"{type(err).__name__}: {err}")
                continue
            if k in ancestors:
                if info is not None:
                    note_error(info, e.path, "symlink_loop", f"links back to {os.path.realpath(e.path)}, a directory "
                               f"it is inside: not followed again")
            else:
                subdirs.append((e.path, k, ancestors | {k}))
        stack.extend(reversed(subdirs))


def iter_input(path: str, info: InputInfo) -> Iterator[Source]:
    """Yield the game records of one top-level input, filling ``info`` (hash, counts, errors) as it goes."""
    kind = info.kind
    if kind == "sgf":
        yield from _file_records(path, info)
    elif kind in ("tar", "zip"):
        yield from archives.iter_archive_file(path, kind, info)
    else:
        h = hashlib.sha256()

        def add(p, sha, n):
            h.update(f"{os.path.relpath(p, path)}\0{sha}\n".encode("utf-8", "surrogateescape"))
            info.bytes += n

        for fp in walk(path, info):
            yield from iter_file(fp, info, dir_hash=add)
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


def content_hashes(identity: list[dict]) -> dict[str, str | None]:
    """sha256 of every file :func:`input_identity` named, read in 1 MiB blocks; None for what is not a regular
    file (a FIFO would block the read) or cannot be read."""
    out = {}
    for entry in identity:
        h = hashlib.sha256()
        try:
            if not stat.S_ISREG(os.stat(entry["path"]).st_mode):
                out[entry["path"]] = None
                continue
            with open(entry["path"], "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out[entry["path"]] = h.hexdigest()
        except OSError:
            out[entry["path"]] = None
    return out


def input_identity(paths) -> list[dict]:
    """Cheap identity of the inputs (path, size, mtime of every file) to detect inputs changed before a resume."""
    out = []
    for p in normalize_inputs(paths):
        files = [p] if not os.path.isdir(p) else list(walk(p))
        for fp in files:
            try:
                st = os.stat(fp)
                out.append({"path": fp, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
            except OSError:
                out.append({"path": fp, "size": -1, "mtime_ns": -1})
    return out
