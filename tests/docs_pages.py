"""The manual's pages as text, for the tests that check a table or sentence of the manual against the code or the
committed records.

Holds: :func:`page` (one page of ``docs/`` by name), :func:`pages` (all of them) and :func:`page_holding` (the
one page that holds a table header or sentence, so a test does not break when the text moves between pages,
only when it disappears or is written twice). The README is the front door and holds no manual text; these
read ``docs/*.md`` only.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"


def page(name: str) -> str:
    """The text of ``docs/NAME`` (``.md`` may be left out)."""
    path = DOCS / (name if name.endswith(".md") else f"{name}.md")
    return path.read_text(encoding="utf-8")


def pages() -> dict[str, str]:
    """Every page of the manual: ``{file name: text}`` for ``docs/*.md``."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}


def page_holding(text: str) -> tuple[str, str]:
    """``(file name, page text)`` of the one page of the manual that holds ``text``, which it holds once."""
    found = [(name, body) for name, body in pages().items() if text in body]
    assert len(found) == 1, f"docs/*.md: {text!r} is in {[n for n, _ in found] or 'no page'}, not in one page"
    name, body = found[0]
    assert body.count(text) == 1, f"docs/{name}: {text!r} is written {body.count(text)} times"
    return name, body
