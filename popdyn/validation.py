"""Argument checks shared with the packages built on popdyn (certify, proofs_checks, plugins).

Each check returns the validated value or raises one ``ValueError`` / ``TypeError`` line that
names the argument and, for a choice, the valid values (docs/design.md, STYLE item 4).
"""
from ._validate import array, choice, nonneg_int, orthonormal_rows, positive_int, real

__all__ = ["array", "choice", "nonneg_int", "orthonormal_rows", "positive_int", "real"]
