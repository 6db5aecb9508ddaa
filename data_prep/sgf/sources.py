"""The records of a build's inputs and what each input held: the vocabulary of the input and archive readers.

``Source`` (one record candidate), ``InputInfo`` (one input, for the manifest), the size caps
``MAX_MEMBER_BYTES``, ``MAX_NESTED_ZIP_BYTES``, ``MAX_XZ_MEMORY`` (looked up here at each use, so a test may lower
them), :func:`tree_records` and :func:`note_error`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from .game_trees import split_game_trees

SGF_SUFFIX = ".sgf"
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz")
ZIP_SUFFIXES = (".zip",)
MAX_MEMBER_BYTES = 64 << 20  # an SGF record larger than this is rejected ('too_large'); at most this + 1 is read
MAX_NESTED_ZIP_BYTES = 256 << 20  # a zip inside an archive is read into memory; larger: an error 'too_large'
MAX_XZ_MEMORY = 256 << 20  # memory an .xz stream may ask for (its dictionary); more: a corrupt_archive error
TREE_MARK = "#"  # tree k >= 2 of a collection is named f"{name}#{k}"


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


def note_error(info: InputInfo, path: str, reason: str, detail: str, *, records_before: int | None = None,
               **extra) -> None:
    """Record an input-level error in ``info.errors`` (``records_before``: records yielded before it)."""
    info.errors.append({"path": path, "reason": reason, "detail": detail,
                        "records_before": info.records if records_before is None else records_before, **extra})


def tree_records(path: str, data: bytes, info: InputInfo) -> Iterator[Source]:
    """The records of one SGF file's bytes: one per game tree (see 'collections' in :mod:`.inputs`)."""
    for k, piece in enumerate(split_game_trees(data), 1):
        info.records += 1
        yield Source(path if k == 1 else f"{path}{TREE_MARK}{k}", piece)
