"""The ``skip`` student family (moved to :mod:`popdyn.families.skip`; this name is kept for
the callers that import :func:`linear_part` and :class:`SkipFamily` from here)."""
from .families.skip import SkipFamily, SkipSpec, linear_part

__all__ = ["SkipFamily", "SkipSpec", "linear_part"]
