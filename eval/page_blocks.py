"""Generated blocks of the manual's Markdown pages: the text between a ``<!-- NAME:start -->`` line and a
``<!-- NAME:end -->`` line, written by a script from a kept record (``--into PAGE.md``) and read back by the test
that checks the page against that record: ``gpu-table`` (README.md, ``benchmarks/device/table.py``),
``profile-runs``, ``profile-who``, ``profile-era`` and their ``-seed1`` twins (docs/profiles.md,
``scripts/profile_runs.py table|who|era``).
"""

from __future__ import annotations


def markers(name: str) -> tuple[str, str]:
    """The start and end lines of block ``name``."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def _check(page: str, name: str) -> tuple[str, str]:
    start, end = markers(name)
    if page.count(start) != 1 or page.count(end) != 1 or page.index(start) > page.index(end):
        raise ValueError(f"the page needs one '{start}' line and one '{end}' line after it")
    return start, end


def replace_block(page: str, name: str, new: str) -> str:
    """``page`` with the text of block ``name`` replaced by ``new``; ValueError without its markers."""
    start, end = _check(page, name)
    before, rest = page.split(start, 1)
    return f"{before}{start}\n{new}\n{end}{rest.split(end, 1)[1]}"


def block(page: str, name: str) -> str:
    """The text of block ``name`` (what :func:`replace_block` wrote); ValueError without its markers."""
    start, end = _check(page, name)
    return page.split(start, 1)[1].split(end, 1)[0].strip("\n")
