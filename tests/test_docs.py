"""The project's own docs/ travel with the code: nothing cites ../shared, and every docs/ citation resolves.

A clone has no ../shared beside it. Its real KGS archives (``../shared/data``) are data the slow tests and
the README's commands read in place, and may be named; its docs and paper texts may not be cited: the facts
the code relies on live in docs/ (issue 12).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXEMPT = ("tests/", ".ci/")  # the fixtures and CI locate ../shared/data and say when it is absent

# ../shared and /work/shared except their data/ folder; shared/docs, shared/seeds; a bare seeds/ path
FORBIDDEN = re.compile(r"\.\./shared(?!/data\b)|shared/(?!data/)|(?<![\w.-])seeds/[\w-]")
# docs/<name>.md, optionally followed by "section 4" or "section 4.2"
CITATION = re.compile(r"(?<![\w.-])docs/([\w.-]+\.md)(?:,?\s+section\s+(\d+(?:\.\d+)*))?")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)[.\s]", re.MULTILINE)


def _repo_texts() -> dict[str, str]:
    """Every tracked or untracked-but-not-ignored text file, by repo-relative path."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    texts = {}
    for name in out.decode("utf-8").split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # checkpoints, images
            continue
    return texts


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return _repo_texts()


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def test_patterns_catch_the_old_citations():
    for cited in ("../shared/docs/gonn.md", "/work/shared/docs/published.md", "see ../shared for the papers",
                  "(seeds/maddison-2015)", "shared/seeds/mao-network-li-2020.txt"):
        assert FORBIDDEN.search(cited), cited
    for allowed in ("../shared/data/kgs/KGS-2015-19-8133-.tar.gz", "/work/shared/data/kgs", "docs/gonn.md",
                    "the seeds come from", "a shared 2-core machine"):
        assert not FORBIDDEN.search(allowed), allowed
    assert [m.groups() for m in CITATION.finditer("docs/gonn.md section 4.2 and (docs/published.md)")] == [
        ("gonn.md", "4.2"), ("published.md", None)]


def test_nothing_outside_tests_cites_shared(texts):
    bad = [f"{name}:{_line(text, m.start())}: {m.group(0)!r}"
           for name, text in texts.items() if not name.startswith(EXEMPT)
           for m in FORBIDDEN.finditer(text)]
    assert not bad, "cite the project's docs/ instead of ../shared:\n" + "\n".join(bad)


def test_every_docs_citation_resolves(texts):
    docs = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")}
    assert {"features.md", "architectures.md", "published.md", "gonn.md"} <= set(docs)
    sections = {name: set(HEADING.findall(text)) for name, text in docs.items()}
    bad, cited = [], set()
    for name, text in texts.items():
        for m in CITATION.finditer(text):
            doc, section = m.groups()
            where = f"{name}:{_line(text, m.start())}: {m.group(0)!r}"
            if doc not in docs:
                bad.append(f"{where}: no docs/{doc}")
            elif section is not None and section not in sections[doc]:
                bad.append(f"{where}: docs/{doc} has no section {section} (it has {sorted(sections[doc])})")
            if not name.startswith("docs/"):
                cited.add(doc)
    assert not bad, "\n".join(bad)
    # and every doc is cited from outside docs/: a page nothing relies on has no place there
    assert set(docs) <= cited, sorted(set(docs) - cited)


def test_every_test_the_readme_names_exists():
    """A README sentence that names a test (``tests/test_x.py`` or ``tests/test_x.py::test_name``) names a real one."""
    import re

    repo = Path(__file__).resolve().parents[1]
    text = (repo / "README.md").read_text(encoding="utf-8")
    cited = re.findall(r"(tests/test_\w+\.py)(?:::(\w+))?", text)
    assert cited
    for path, name in cited:
        assert (repo / path).is_file(), path
        if name:
            assert re.search(rf"^\s*(async\s+)?def {name}\(", (repo / path).read_text(encoding="utf-8"), re.M), \
                f"{path}::{name}"
