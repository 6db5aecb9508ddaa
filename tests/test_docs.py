"""The project's own docs/ travel with the code: nothing cites ../shared, and every docs/ citation resolves.

A clone has no ../shared beside it. Its real KGS archives (``../shared/data``) are data the slow tests and
the README's commands read in place, and may be named; its docs and paper texts may not be cited: the facts
the code relies on live in docs/ (issue 12).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repo_files import repo_files

ROOT = Path(__file__).resolve().parents[1]
EXEMPT = ("tests/", ".ci/")  # the fixtures and CI locate ../shared/data and say when it is absent

# ../shared and /work/shared except their data/ folder; shared/docs, shared/seeds; a bare seeds/ path
FORBIDDEN = re.compile(r"\.\./shared(?!/data\b)|shared/(?!data/)|(?<![\w.-])seeds/[\w-]")
# docs/<name>.md, optionally followed by "section 4" or "section 4.2"
CITATION = re.compile(r"(?<![\w.-])docs/([\w.-]+\.md)(?:,?\s+section\s+(\d+(?:\.\d+)*))?")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)[.\s]", re.MULTILINE)


def _repo_texts() -> dict[str, str]:
    """Every text file of the project (:func:`repo_files.repo_files`: tracked or new and not ignored, no virtual
    environment), by repo-relative path."""
    texts = {}
    for name in repo_files(ROOT):
        path = ROOT / name
        if not path.is_file():
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
    """A sentence of the README or of a page of the manual (docs/*.md) that names a test (``tests/test_x.py`` or
    ``tests/test_x.py::test_name``) names a real one."""
    import re

    from docs_pages import README, pages

    repo = Path(__file__).resolve().parents[1]
    texts = {"README.md": README.read_text(encoding="utf-8")} | {f"docs/{k}": v for k, v in pages().items()}
    cited = [(where, path, name) for where, text in texts.items()
             for path, name in re.findall(r"(tests/test_\w+\.py)(?:::(\w+))?", text)]
    assert len({where for where, _, _ in cited}) >= 8, "the manual names the tests behind its promises"
    for where, path, name in cited:
        assert (repo / path).is_file(), f"{where}: {path}"
        if name:
            assert re.search(rf"^\s*(async\s+)?def {name}\(", (repo / path).read_text(encoding="utf-8"), re.M), \
                f"{where}: {path}::{name}"


#: the README is a front door: two screens or so, ending in links into the manual (issue 32)
README_MAX_LINES = 260

#: every command of the README's code blocks -> how it is run: a test (``tests/FILE.py::NAME``, whose file holds
#: the command as written) or, for a command no test runs, the reason
README_COMMANDS = {
    'python -m pip install -e ".[dev]" && kifunet quickstart':
        "not a test: CI itself runs it (.ci/run installs the package as the README says; tests/test_quickstart.py "
        "runs the quickstart)",
    "python -m pytest -q": "not a test: CI itself runs it (.ci/run), and a test cannot run the suite it is in",
    "python -m sphinx -W --keep-going -b html docs docs/_build/html":
        "tests/test_docs_site.py::test_the_site_builds_with_warnings_as_errors_and_every_page_is_in_the_toctree",
}


def readme_commands(text: str) -> list[str]:
    """The commands of the ``sh`` code blocks of a Markdown text: comments dropped, continuation lines joined."""
    import re

    out = []
    for block in re.findall(r"^```(?:sh|bash|console)\n(.*?)^```", text, re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            cmd = re.sub(r"\s+#.*$", "", line).strip()
            if cmd and not cmd.startswith("#"):
                out.append(" ".join(cmd.split()))
    return out


def test_readme_commands_are_cut_from_sh_blocks():
    text = "```sh\nkifunet a --x 1   # why\nkifunet b \\\n    --y 2\n# a note\n```\n```python\nprint(1)\n```\n"
    assert readme_commands(text) == ["kifunet a --x 1", "kifunet b --y 2"]


def test_the_readme_is_a_front_door():
    """At most README_MAX_LINES lines, and every command in its code blocks is run by a test or listed in
    README_COMMANDS with the reason it is not; the two commands are the ones CI runs, as written."""
    import re

    from docs_pages import README

    text = README.read_text(encoding="utf-8")
    assert text.count("\n") <= README_MAX_LINES, f"README.md: {text.count(chr(10))} lines; the manual is docs/"
    commands = readme_commands(text)
    assert commands[:2] == ['python -m pip install -e ".[dev]" && kifunet quickstart', "python -m pytest -q"]
    assert set(commands) == set(README_COMMANDS), "list every README command in README_COMMANDS: " + \
        repr(sorted(set(commands) ^ set(README_COMMANDS)))
    for cmd in commands:
        how = README_COMMANDS[cmd]
        if how.startswith("not a test: "):
            continue
        path, name = how.split("::")
        test_file = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", test_file, re.M), how
        assert cmd in test_file, f"{path} does not hold the command {cmd!r} as the README writes it"


def test_what_moved_lists_every_moved_module():
    """docs/what_moved.md's data_prep table names every module of data_prep's sub-packages that moved there, each
    under the sub-package that holds it, and the old flat names are gone."""
    import importlib
    import re

    from docs_pages import page

    listed = {}
    section = page("what_moved").split("## data_prep", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            sub = re.match(r"`(\w+)/`", cells[1]).group(1)
            listed.update({name: sub for name in re.findall(r"`(\w+)`", cells[0])})
    assert len(listed) >= 20
    root = Path(__file__).resolve().parents[1] / "data_prep"
    for name, sub in listed.items():
        assert (root / sub / f"{name}.py").is_file(), (name, sub)
        assert not (root / f"{name}.py").exists(), name
    data_prep = importlib.import_module("kifunet.data_prep")
    assert not hasattr(data_prep, "MOVED") and not hasattr(data_prep, "__getattr__")


def test_the_readme_headline_tables_are_the_manuals():
    """The README's results are copies: each row of its two-domain table is a row of docs/evaluation.md, and each
    row of its GNU Go table holds the figures of that net's row in docs/matches.md's strength table."""
    from docs_pages import README, page

    readme = README.read_text(encoding="utf-8").splitlines()
    two_domain = [x for x in readme if x.startswith(("| AlphaGo Zero SL 2017", "| **ours: "))]
    assert len(two_domain) == 7
    for row in two_domain:
        assert row in page("evaluation").splitlines(), row
    strength = {}
    for x in page("matches").splitlines():
        cells = [c.strip() for c in x.strip().strip("|").split("|")]
        if x.startswith("| GNU Go 3.8 level 10 |") and "(19x19" not in x and len(cells) == 9:
            strength[cells[1].split(",")[0]] = cells[2:6] + cells[8:]
    gnugo = [[c.strip() for c in x.strip().strip("|").split("|")] for x in readme if x.startswith("| `kgs_cpu_")]
    assert len(gnugo) == 3
    for cells in gnugo:
        assert cells[1:] == strength[cells[0]], (cells, strength)
