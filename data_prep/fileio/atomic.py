"""Atomic writes: a reader of ``path`` sees the old file or the whole new one, never a part.

On a local file system a write goes to a temporary beside ``path`` (:func:`tmp_path`, or the caller's suffix),
is flushed to disk (``fsync``), renamed onto ``path`` (``os.replace``) and the rename is flushed (the parent
directory's ``fsync``, where the system allows it): :func:`commit`. A write that fails removes its temporary and
raises. On an object store (a URL such as ``gs://bucket/run/config.json``, :func:`is_url`) an object appears
whole when its upload completes, so the data is uploaded once to ``path`` itself through ``etils.epath`` (the
path layer orbax uses); no temporary object is made.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator


def is_url(path) -> bool:
    """``path`` names an object store (``SCHEME://...``, e.g. ``gs://``), not a local file."""
    scheme, sep, _ = os.fspath(path).partition("://")
    return bool(sep) and scheme.replace("+", "").replace(".", "").replace("-", "").isalnum()


def tmp_path(path: str) -> str:
    """The default temporary of ``path``: ``PATH.tmp``."""
    return os.fspath(path) + ".tmp"


def commit(tmp: str, path: str) -> None:
    """Flush ``tmp`` (a file or a directory) to disk, rename it onto ``path`` (atomic on POSIX; a directory
    ``path`` must not exist) and flush the rename (best effort: some file systems refuse a directory's fsync)."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    try:
        dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _remove(p: str) -> None:
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p, ignore_errors=True)
    elif os.path.lexists(p):
        os.remove(p)


@contextlib.contextmanager
def atomic_path(path, *, suffix: str = ".tmp") -> Iterator[str]:
    """A local path to write ``path``'s new content to (a file, or a directory the caller makes), committed onto
    ``path`` when the block ends (:func:`commit`); removed when the block raises. A stale temporary of the same
    name is removed first. For a URL ``path``, the temporary is a local file whose bytes are uploaded to ``path``
    as the block ends."""
    path = os.fspath(path)
    if is_url(path):
        fd, tmp = tempfile.mkstemp(prefix="kifunet-", suffix=os.path.basename(path))
        os.close(fd)
        try:
            yield tmp
            with open(tmp, "rb") as f:
                _upload(path, f.read())
        finally:
            _remove(tmp)
        return
    tmp = path + suffix
    _remove(tmp)
    try:
        yield tmp
        commit(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _upload(url: str, data: bytes) -> None:
    from etils import epath

    epath.Path(url).write_bytes(data)


def write_bytes_atomic(path, data: bytes, *, suffix: str = ".tmp") -> None:
    """Write ``data`` to ``path`` atomically (module docstring); ``path`` may be a URL."""
    path = os.fspath(path)
    if is_url(path):
        _upload(path, data)
        return
    with atomic_path(path, suffix=suffix) as tmp, open(tmp, "wb") as f:
        f.write(data)


def write_text_atomic(path, text: str, *, encoding: str = "utf-8", errors: str = "strict",
                      suffix: str = ".tmp") -> None:
    """Write ``text`` to ``path`` atomically, encoded with ``encoding`` and ``errors`` (as ``open`` takes them);
    ``path`` may be a URL."""
    path = os.fspath(path)
    if is_url(path):
        _upload(path, text.encode(encoding, errors))
        return
    with atomic_path(path, suffix=suffix) as tmp, open(tmp, "w", encoding=encoding, errors=errors) as f:
        f.write(text)


def write_json_atomic(path, obj) -> None:
    """``obj`` as indented JSON (two spaces, non-ASCII characters as they are, undecodable ones as backslash
    escapes) and a newline, written atomically to ``path``."""
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n", errors="backslashreplace")
