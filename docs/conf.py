"""Sphinx configuration of the popdyn documentation.

Build (warnings are errors)::

    python -m sphinx -W -b html docs docs/_build/html

The pages are Markdown (MyST); the API reference is generated from the numpydoc docstrings
(autodoc + numpydoc); the tutorial's ``{exec-python}`` blocks run while the pages are read
(``docs/_ext/execblocks.py``), so a build that passes has run the tutorial.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# the checkout's popdyn / certify / proofs_checks, not an installed copy of another version
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(HERE, "_ext"))

import popdyn  # noqa: E402

project = "popdyn"
author = "popdyn developers"
copyright = "2026, popdyn developers"
version = release = popdyn.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "execblocks",
    "plaindocstrings",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# numpydoc renders the docstrings; its validation report is off (the docstrings follow the
# project's own numpydoc conventions, which cite equations rather than listing every section)
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_inherit_docstrings = False

html_theme = "alabaster"
html_title = f"popdyn {release}"
html_static_path = []
