"""Docstrings written as plain-text mathematics, read as reStructuredText.

The docstrings of popdyn, certify and proofs_checks write absolute values and norms as ``|x|``
and ``|a||a|ᵀ``; reStructuredText reads ``|x|`` as a substitution reference (an error when none
is defined) and ``|x|_`` as a broken one.  None of these docstrings uses substitutions, so before
numpydoc parses a docstring this hook escapes every ``|`` outside inline literals, interpreted
text and literal blocks (the rendered text shows the ``|`` as written).  It also ends a bullet
list that a following paragraph continues without a blank line (docutils warns on those).
Nothing in the docstrings themselves is changed.
"""
from __future__ import annotations

import re

_INLINE = re.compile(r"(``.+?``|`[^`]+`_{0,2})")
_BULLET = re.compile(r"^(\s*)([*\-+]|\d+\.|#\.)\s+\S")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _escape(text: str) -> str:
    parts = _INLINE.split(text)
    return "".join(p if i % 2 else p.replace("|", r"\|") for i, p in enumerate(parts))


def process(app, what, name, obj, options, lines):
    out = []
    literal_at = None            # indentation of the paragraph that opened a literal block
    bullet_at = None             # indentation of the current bullet item's marker
    for line in lines:
        blank = not line.strip()
        ind = _indent(line)
        if literal_at is not None:
            if blank or ind > literal_at:
                out.append(line)
                continue
            literal_at = None
        if blank:
            bullet_at = None
        else:
            m = _BULLET.match(line)
            if m:
                bullet_at = len(m.group(1))
            elif bullet_at is not None and ind <= bullet_at:
                out.append("")          # the paragraph after a list needs a blank line
                bullet_at = None
        if line.rstrip().endswith("::"):
            literal_at = ind
        out.append(_escape(line))
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", process, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
