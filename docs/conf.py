"""Sphinx configuration: MyST Markdown prose, autodoc (numpy-style docstrings via napoleon), furo.

Built by ``scripts/docs`` with warnings as errors.  The API reference documents every name in
``pygraphrt.__all__`` and in the public modules' ``__all__`` (one page per module under
``api/``); importing pygraphrt loads no runtime, so the build needs no GPU.
"""

from __future__ import annotations

import logging
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)

import pygraphrt  # noqa: E402

project = "pygraphrt"
author = "the pygraphrt authors"
copyright = "2026, the pygraphrt authors"
release = version = pygraphrt.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # "#section" links within and between pages

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"pygraphrt {release}"
# Code blocks in fences the docs test does not run (```text, ```console, ```bash, ```dot)
# are still highlighted; an unknown lexer must not fail the build.
highlight_language = "python3"
suppress_warnings = ["misc.highlighting_failure"]


class _EmptyGuideGlob(logging.Filter):
    """The user guide's toctree ends in ``*`` for pages added later (docs/guide/index.md); while
    there are none it matches nothing, which Sphinx warns of without a type that
    ``suppress_warnings`` could name.  Only that warning is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (getattr(record, "subtype", "") == "empty_glob" and "guide/index" in str(getattr(record, "location", "")))


def setup(app):  # type: ignore[no-untyped-def]
    from sphinx.util.logging import NAMESPACE

    for handler in logging.getLogger(NAMESPACE).handlers:
        handler.filters.insert(0, _EmptyGuideGlob())  # before Sphinx counts the warning
    return {"parallel_read_safe": True}
# A string annotation of a name two public modules share (kernels.Library, nccl.Library)
autodoc_type_aliases = {"Library": "pygraphrt.kernels.Library"}
