"""Enumerate the SGF records of a build's inputs: files, directories and archives, read in place.

Inputs: ``.sgf`` files, directories (recursive, links followed), ``.zip``, ``.tar``, ``.tar.gz``/``.tgz``,
``.tar.bz2``, ``.tar.xz``, nested alike (``a.zip!inner.tar.gz!x.sgf``). Nothing is extracted; members are read
into memory one at a time, capped by ``MAX_MEMBER_BYTES``, ``MAX_NESTED_ZIP_BYTES`` and ``MAX_XZ_MEMORY``. The order
is deterministic; a collection gives one record per game tree (``NAME#k`` for k >= 2, :func:`source_file` maps
back). A damaged record is a :class:`Source` with ``error``; a damaged input is an entry of
:attr:`InputInfo.errors`, and the members before the damage are kept. The rules: docs/building.md ("Inputs,
filters and splits", "File formats").
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
    """Every non-directory entry under ``root`` in build order (docs/building.md, "File formats"); with ``info``,
    loops, directories met twice and directories that cannot be listed are recorded in ``info.errors``."""

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
