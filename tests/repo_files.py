"""The project's own files, for the tests that scan the checkout (docs citations, paths of one machine).

:func:`repo_files` lists what the next commit would hold: in a git checkout ``git ls-files --cached --others
--exclude-standard`` (tracked files, and new ones ``.gitignore`` does not ignore); in a copy without git (an
unpacked sdist or archive) the same rule by hand: every file under the root except ``.git`` and what the
``.gitignore`` files ignore (:func:`ignored`). Either way nothing inside a virtual environment (a folder holding
``pyvenv.cfg``, whatever its name and whether or not it is ignored) is listed: a user's ``python3 -m venv venv``
in the checkout holds site-packages, whose texts are not the project's.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path


def gitignore_patterns(root: Path) -> list[str]:
    """The patterns of ``root/.gitignore`` (comments and blank lines dropped; ``!`` negations are not used)."""
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith(("#", "!"))]


def ignored(rel: str, is_dir: bool, patterns: list[str]) -> bool:
    """Whether the repo-relative path ``rel`` matches one of the ``.gitignore`` ``patterns`` as git reads them: a
    trailing ``/`` matches folders only; a pattern with a ``/`` before its end is anchored at the root, any
    other matches the last component of the path at any depth."""
    name = rel.rsplit("/", 1)[-1]
    for pat in patterns:
        if pat.endswith("/"):
            if not is_dir:
                continue
            pat = pat[:-1]
        if "/" in pat:
            if fnmatch.fnmatchcase(rel, pat.lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(name, pat):
            return True
    return False


def _is_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file()


def _walk(root: Path) -> list[str]:
    """:func:`repo_files` without git: each folder's own ``.gitignore`` applies to what is below it, as git reads
    them (``.hypothesis/`` and ``.pytest_cache/`` ignore themselves with a ``*``)."""
    out = []
    rules: dict[str, list[str]] = {}  # folder ("" or "a/b/") -> the patterns of its .gitignore
    for top, dirs, files in os.walk(root):
        rel_top = Path(top).relative_to(root).as_posix()
        rel_top = "" if rel_top == "." else rel_top + "/"
        rules[rel_top] = gitignore_patterns(Path(top))
        scopes = [(base, pats) for base, pats in rules.items() if pats and rel_top.startswith(base)]

        def skip(rel: str, is_dir: bool) -> bool:
            return any(ignored(rel[len(base):], is_dir, pats) for base, pats in scopes)

        dirs[:] = sorted(d for d in dirs if d != ".git" and not _is_venv(Path(top) / d) and not skip(rel_top + d, True))
        out += [rel_top + f for f in sorted(files) if f != ".git" and not skip(rel_top + f, False)]
    return out


def repo_files(root: Path, *, use_git: bool = True) -> list[str]:
    """Repo-relative paths (``/``-separated) of the project's files under ``root`` (module docstring), sorted."""
    listed = None
    if use_git and (root / ".git").exists():
        try:
            out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                 cwd=root, capture_output=True, check=True, timeout=60).stdout
            listed = [n for n in out.decode("utf-8").split("\0") if n]
        except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
            listed = None
    if listed is None:
        return sorted(_walk(root))
    venv: dict[str, bool] = {}  # folder -> whether it is a virtual environment

    def in_venv(name: str) -> bool:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if prefix not in venv:
                venv[prefix] = _is_venv(root / prefix)
            if venv[prefix]:
                return True
        return False

    return sorted(n for n in listed if not in_venv(n))
