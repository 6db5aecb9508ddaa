"""The share of library lines that sit inside docstrings, per library folder and in total.

    python scripts/docstring_share.py            # a table: folder, lines, docstring lines, share
    python scripts/docstring_share.py --files    # ... and every file, largest docstring share first

A docstring is the leading string literal of a module, class or function (what :func:`ast.get_docstring` reads);
its lines run from the literal's first to its last line, quotes included. Lines are the file's physical lines,
blank ones and comments included. Folders: ``data_prep/ models/ train/ eval/ play/ kifunet/`` below the repository
root, every ``*.py`` file under them.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("data_prep", "models", "train", "eval", "play", "kifunet")
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstring_lines(source: str) -> int:
    """Lines of ``source`` inside module, class and function docstrings."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, DOCUMENTED) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                count += first.end_lineno - first.lineno + 1
    return count


def measure(path: Path) -> tuple[int, int]:
    """(lines, docstring lines) of one Python file."""
    source = path.read_text(encoding="utf-8")
    return len(source.splitlines()), docstring_lines(source)


def share(doc: int, total: int) -> str:
    return f"{100.0 * doc / total:5.1f}%" if total else "    -"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", action="store_true", help="also list every file")
    args = parser.parse_args(argv)
    files = {folder: {p: measure(p) for p in sorted((REPO / folder).rglob("*.py"))} for folder in FOLDERS}
    print(f"{'folder':<12}{'lines':>8}{'doc':>8}{'share':>8}")
    all_lines = all_doc = 0
    for folder, rows in files.items():
        lines = sum(n for n, _ in rows.values())
        doc = sum(d for _, d in rows.values())
        all_lines, all_doc = all_lines + lines, all_doc + doc
        print(f"{folder + '/':<12}{lines:>8}{doc:>8}{share(doc, lines):>8}")
    print(f"{'total':<12}{all_lines:>8}{all_doc:>8}{share(all_doc, all_lines):>8}")
    if args.files:
        rows = [(p, n, d) for folder in files.values() for p, (n, d) in folder.items()]
        print()
        for p, n, d in sorted(rows, key=lambda r: (-r[2] / max(r[1], 1), str(r[0]))):
            print(f"{share(d, n)} {d:>5} / {n:>5}  {p.relative_to(REPO)}")


if __name__ == "__main__":
    main()
