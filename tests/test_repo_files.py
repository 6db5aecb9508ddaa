"""The file list of the tests that scan the checkout (tests/repo_files.py): the project's files, never a virtual
environment's, with git and without (issue 48, item 17)."""

from __future__ import annotations

import shutil
import subprocess

from conftest import REPO, require
from repo_files import repo_files


def _tree(root):
    """A checkout with a tracked file, an ignored folder, a new file and a venv (``venv/``, not ignored) whose
    site-packages cite ``../shared/docs`` -- what made the docs tests fail for a user with a venv in the clone."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / ".gitignore").write_text("# build output\n__pycache__/\n/runs/\n*.tmp\n")
    (root / "runs" / "a").mkdir(parents=True)
    (root / "runs" / "a" / "log.txt").write_text("ignored\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "mod.pyc").write_bytes(b"\0")
    (root / "pkg" / "x.tmp").write_text("ignored\n")
    (root / "notes.md").write_text("new, not ignored\n")
    site = root / "venv" / "lib" / "python3" / "site-packages" / "dep"
    site.mkdir(parents=True)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "README.md").write_text("see ../shared/docs/gonn.md and /home/alice/x\n")


WANT = [".gitignore", "notes.md", "pkg/mod.py"]


def test_a_venv_in_the_checkout_is_not_listed_with_git(tmp_path):
    require(shutil.which("git") is not None, "git")
    _tree(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", ".gitignore", "pkg/mod.py"], cwd=tmp_path, check=True)
    assert repo_files(tmp_path) == WANT


def test_a_venv_in_the_checkout_is_not_listed_without_git(tmp_path):
    _tree(tmp_path)
    assert repo_files(tmp_path) == WANT  # not a git checkout: the .gitignore rule by hand
    assert repo_files(tmp_path, use_git=False) == WANT


def test_the_rule_without_git_lists_what_git_lists_here():
    """On this checkout (a venv in it or not) the walk and ``git ls-files`` agree, so a copy without git scans
    the same files."""
    require((REPO / ".git").exists(), "a git checkout", "a clone, as CI has")
    with_git = repo_files(REPO)
    assert len(with_git) > 100 and not any(f.startswith(".venv/") for f in with_git)
    assert repo_files(REPO, use_git=False) == with_git
