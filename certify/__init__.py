"""certify: sound brackets [lo, hi] with provenance for the numbers a theorem check relies on.

Public API (docs/design.md §6):

* :class:`Bracket`, :class:`BracketArray` -- intervals with ``provenance`` ("rigorous" or
  "numerical") and ``status`` ("resolved" / "unresolved");
* :func:`loss` -- the population loss (and gradient) at a state;
* :func:`alignment` -- AGOP alignment A_top, A_min, A_mean with a certified eigengap;
* :func:`refit_risk` -- frozen-feature refit risk, feasible upper and Lagrangian-dual lower;
* :func:`bounded_refit` -- the bounded normalized-feature refit of Kumar (arXiv 2609.39408),
  eq. (6): feasible upper and support-function lower bound;
* :func:`timescale`, :func:`scaling_exponent` -- crossing-time and exponent brackets
  (numerical: step refinement);
* :func:`critical_point` -- a certified critical point (strict local minimum / saddle) of the
  bias-free relu population loss in reduced coordinates (Krawczyk in Arb);
* :class:`CertificationError`, :class:`Undecided`.

Backend: python-flint (Arb ball arithmetic); every function takes a keyword-only ``prec``
(bits).  Float64 inputs mean their exact binary values.
"""
from .alignment import AlignmentBracket, alignment
from .bounded_refit import BoundedRefitBracket, bounded_refit
from .bracket import Bracket, BracketArray
from .critical import CriticalPoint, critical_point
from .errors import CertificationError, Undecided
from .loss import LossBracket, loss
from .refit import RefitBracket, refit_risk
from . import smooth as _smooth  # noqa: F401  (registers the smooth-student moments)
from . import ridge as _ridge  # noqa: F401  (registers the ridge-family certifier)
from . import skip as _skip  # noqa: F401  (registers the skip-student certifiers)
from . import swiglu as _swiglu  # noqa: F401  (registers the SwiGLU certifiers)
from . import swiglu_gated as _swiglu_gated  # noqa: F401  (SwiGLU vs gated teachers)
from .timescale import ExponentBracket, TimescaleBracket, scaling_exponent, timescale

__all__ = [
    "AlignmentBracket", "BoundedRefitBracket", "Bracket", "BracketArray", "CertificationError", "CriticalPoint", "ExponentBracket",
    "LossBracket", "RefitBracket", "TimescaleBracket", "Undecided", "alignment", "bounded_refit", "critical_point",
    "loss",
    "refit_risk", "scaling_exponent", "timescale",
]
