"""Sphinx configuration of the kifunet manual (the pages in this folder and an API reference from the docstrings).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (``pip install -e ".[docs]"``; warnings
are errors, so a broken link or reference fails the build; tests/test_docs_site.py runs it).
Why Sphinx + MyST-Parser + autodoc/autosummary: it is what flax, optax and orbax use, the pages stay Markdown that
GitHub renders, and the API reference is generated from the docstrings, so it cannot drift from the code.
"""

import os
import shutil

# the API stubs are regenerated at every build: a stub left from a module that moved or went away would be a
# page no toctree reaches (a warning, so a failed build) in a checkout that built the manual before
shutil.rmtree(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_api"), ignore_errors=True)

project = "kifunet"
author = "the kifunet authors"
copyright = "the kifunet authors, Apache-2.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
]

root_doc = "index"
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: `## Heading` anchors for links such as training.md#resume (levels 1-3), tables, $...$ untouched
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# API reference: api.md lists the packages; autosummary walks every module under them (recursive), writing its
# stubs into _api/ (git-ignored, regenerated each build), so a new module appears without an edit here.
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# The one warning type suppressed: "more than one target found" for a builtin type in an annotation. Python's
# own types are no target here (no intersphinx: the build must work offline), so a field typed ``bytes`` is
# matched fuzzily against the attributes named ``bytes`` of several classes (``SplitReport.bytes``,
# ``InputInfo.bytes``, ...) and any choice would be wrong. Broken links and references still fail the build.
suppress_warnings = ["ref.python"]

html_theme = "furo"
html_title = "kifunet"
