"""The manual builds: ``docs/`` with Sphinx, MyST-Parser and autosummary, warnings as errors (a broken link,
reference or docstring fails), and every page is reachable from the index's toctree.

The build runs the command the README and docs/index.md give, into a temporary directory; it took 109-133 s on
the shared 2-core machine at load average 7-10 (it imports every module for the API reference), hence ``slow``.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the one command that builds the manual locally (README.md, docs/index.md)
COMMAND = "python -m sphinx -W --keep-going -b html docs docs/_build/html"


def reachable(toctree_includes: dict[str, list[str]], root: str) -> set[str]:
    """The documents reachable from ``root`` through toctrees (``{document: the documents its toctrees list}``)."""
    seen, todo = set(), [root]
    while todo:
        doc = todo.pop()
        if doc not in seen:
            seen.add(doc)
            todo += toctree_includes.get(doc, [])
    return seen


def test_reachable_follows_nested_toctrees():
    tree = {"index": ["a", "api"], "api": ["_api/m"], "_api/m": ["_api/m.sub"], "lost": ["lost2"]}
    assert reachable(tree, "index") == {"index", "a", "api", "_api/m", "_api/m.sub"}


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors_and_every_page_is_in_the_toctree(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("myst_parser", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("furo", reason="the docs extra is not installed: pip install -e '.[docs]'")
    argv = COMMAND.split()
    assert argv[:3] == ["python", "-m", "sphinx"] and argv[-2:] == ["docs", "docs/_build/html"]
    out, doctrees = tmp_path / "html", tmp_path / "doctrees"
    cmd = [sys.executable, *argv[1:-1], str(out), "-d", str(doctrees), "-q"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    # -W: any warning (a broken link or reference, a docstring docutils cannot read) makes the exit status 1
    assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout[-5000:]}\n{p.stderr[-10000:]}"
    with open(doctrees / "environment.pickle", "rb") as f:
        env = pickle.load(f)
    root = env.config.root_doc
    lost = sorted(set(env.found_docs) - reachable(env.toctree_includes, root))
    assert not lost, f"pages no toctree from {root} reaches: {lost}"
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    assert pages <= set(env.found_docs) and (out / "index.html").is_file()
    assert {p.stem for p in out.glob("*.html")} >= pages
    # the API reference reaches every module of every package (recursive autosummary)
    api = {d.removeprefix("_api/") for d in env.found_docs if d.startswith("_api/")}
    for module in ("kifunet.data_prep.planes.replay", "kifunet.models.base", "kifunet.train.train",
                   "kifunet.eval.metrics", "kifunet.play.gtp_engine"):
        assert module in api, module
