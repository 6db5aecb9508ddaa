"""File operations on a local path or an object-store URL (``gs://bucket/run/...``), one call each.

A local path goes to ``os`` and ``open`` exactly as a caller would call them; a URL
(:func:`kifunet.data_prep.fileio.atomic.is_url`) goes to ``etils.epath``, the path layer orbax uses (for ``gs://``: ``gcsfs``, pointed at an emulator by
``STORAGE_EMULATOR_HOST``). An object store has no folders: a "directory" is a prefix with objects under it,
:func:`makedirs` makes nothing, and :func:`rename` of a prefix copies and deletes (not atomic). Listings are read
fresh (``gcsfs`` caches them, and orbax writes its arrays through tensorstore, not through ``gcsfs``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from .atomic import is_url


def _epath(path):
    from etils import epath

    return epath.Path(path)


def _fresh(path):
    """``path`` as an ``epath.Path`` whose file system forgets what it listed before."""
    p = _epath(path)
    fs = getattr(getattr(p, "_backend", None), "fs", None)
    if fs is not None:
        fs(os.fspath(p)).invalidate_cache()
    return p


def resolve(path) -> str:
    """An absolute local path (``os.path.abspath``), or the URL without a trailing ``/``."""
    path = os.fspath(path)
    return path.rstrip("/") if is_url(path) else os.path.abspath(path)


def exists(path) -> bool:
    return _fresh(path).exists() if is_url(path) else os.path.exists(path)


def isdir(path) -> bool:
    return _fresh(path).is_dir() if is_url(path) else os.path.isdir(path)


def isfile(path) -> bool:
    if not is_url(path):
        return os.path.isfile(path)
    p = _fresh(path)
    return p.exists() and not p.is_dir()


def getsize(path) -> int:
    return _epath(path).stat().length if is_url(path) else os.path.getsize(path)


def listdir(path) -> list[str]:
    """The names in a directory (a URL: the names one level under the prefix)."""
    if not is_url(path):
        return os.listdir(path)
    return [p.name for p in _fresh(path).iterdir()]


def walk(top) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)``; for a URL, the same triples (a caller may prune ``dirs`` in place) through epath."""
    if not is_url(top):
        yield from os.walk(top)
        return
    scheme = os.fspath(top).partition("://")[0]
    for root, dirs, files in _fresh(top).walk():
        root = os.fspath(root)
        yield (root if "://" in root else f"{scheme}://{root}"), dirs, files


def relpath(path, start) -> str:
    """``os.path.relpath``; for URLs, ``path`` below ``start`` (``/``-separated)."""
    if not is_url(path):
        return os.path.relpath(path, start)
    path, start = os.fspath(path), os.fspath(start).rstrip("/")
    if not path.startswith(start + "/"):
        raise ValueError(f"{path} is not under {start}")
    return path[len(start) + 1:]


def open(path, mode: str = "r", **kwargs):  # noqa: A001 - the builtin's name and arguments, for either kind of path
    if not is_url(path):
        import builtins

        return builtins.open(path, mode, **kwargs)
    return _epath(path).open(mode, **kwargs)


def makedirs(path) -> None:
    """``os.makedirs(path, exist_ok=True)``; nothing for a URL (an object store has no folders)."""
    if not is_url(path):
        os.makedirs(path, exist_ok=True)


def rename(src, dst) -> None:
    """``os.rename``; for a URL, epath's (a prefix is copied, then deleted)."""
    if is_url(src):
        _epath(src).rename(dst)
    else:
        os.rename(src, dst)


def append_text(path, text: str) -> None:
    """Append ``text`` (UTF-8) to a file. An object cannot be appended to: a URL's object is read and uploaded
    again whole, with ``text`` at its end."""
    if not is_url(path):
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
        return
    p = _epath(path)
    old = p.read_bytes() if p.exists() else b""
    p.write_bytes(old + text.encode("utf-8"))
