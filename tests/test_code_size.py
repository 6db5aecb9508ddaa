"""Function and class sizes in the library: no function over 60 lines, no class over 300.

A size is ``end_lineno - lineno + 1`` of the ``def`` or ``class`` node (docstring, comments and nested functions
included; decorators not), for every function, method and nested function of every ``.py`` file under the
library folders. The allow-list names the few that are over and being split; an entry that is no longer over
the limit fails too, so that the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
LIBRARY = ("data_prep", "models", "train", "eval", "play", "kifunet")
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 300

#: "folder/file.py::name" -> why it may be over the limit for now.
ALLOWED: dict[str, str] = {}


def sizes(root: Path = REPO) -> dict[str, tuple[str, int]]:
    """``{"folder/file.py::name": (kind, lines)}`` for every function and class over its limit under ``root``'s
    library folders (a name defined twice in one file is reported with its first line: ``name@line``)."""
    over = {}
    for folder in LIBRARY:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    kind, limit = "function", MAX_FUNCTION_LINES
                elif isinstance(node, ast.ClassDef):
                    kind, limit = "class", MAX_CLASS_LINES
                else:
                    continue
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    key = f"{rel}::{node.name}"
                    over[key if key not in over else f"{key}@{node.lineno}"] = (kind, lines)
    return over


def test_no_function_over_60_lines_and_no_class_over_300():
    over = {k: v for k, v in sizes().items() if k not in ALLOWED}
    assert not over, "over the size limit (split it into named helpers): " + "; ".join(
        f"{k} ({kind}, {n} lines)" for k, (kind, n) in sorted(over.items()))


def test_every_allowed_name_is_still_over_the_limit():
    within = sorted(set(ALLOWED) - set(sizes()))
    assert within == [], f"{within} are within the limits now: remove them from ALLOWED in {Path(__file__).name}"


def test_the_limits_catch_a_long_function_and_a_long_class(tmp_path):
    (tmp_path / "models").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (tmp_path / "models" / "m.py").write_text(f"def f():\n{body}\n\ndef g():\n    return 1\n\n\nclass C:\n"
                                              + "".join(f"    a{i} = {i}\n" for i in range(300)))
    for folder in LIBRARY:
        (tmp_path / folder).mkdir(exist_ok=True)
    assert sizes(tmp_path) == {"models/m.py::f": ("function", 61), "models/m.py::C": ("class", 301)}


MAX_DOCSTRING_SHARE = 0.12


def test_docstrings_are_at_most_12_percent_of_the_library():
    """Docstrings state contracts; narrative, history and figures live in docs/ (``scripts/docstring_share.py``)."""
    from conftest import load_script

    share = load_script("docstring_share")
    rows = [share.measure(p) for folder in share.FOLDERS for p in sorted((REPO / folder).rglob("*.py"))]
    lines, doc = sum(n for n, _ in rows), sum(d for _, d in rows)
    assert doc / lines <= MAX_DOCSTRING_SHARE, f"docstrings are {doc / lines:.1%} of {lines} library lines"


def test_the_docstring_count_reads_module_class_and_function_docstrings_only():
    from conftest import load_script

    share = load_script("docstring_share")
    src = '"""Module,\ntwo lines."""\n\n\ndef f():\n    """One."""\n    x = """not a docstring\n"""\n\n\nclass C:\n    pass\n'
    assert share.docstring_lines(src) == 3
