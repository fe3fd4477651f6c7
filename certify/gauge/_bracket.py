"""Ratios and log-log slopes of rigorous timescale brackets, in Arb with outward rounding
(docs/design.md §6, "Timescales"; §7).

:func:`popdyn.gauge.ratio_bracket` and :func:`popdyn.gauge.slope_bracket` reach these through
the ``gauge_certifier`` service (:mod:`popdyn.plugins`) when their inputs are rigorous; an input
that is not (numerical, or infinite) is passed back to popdyn's float arithmetic, whose result
is tagged numerical.
"""
from __future__ import annotations

import numpy as np
from flint import arb

from popdyn import gauge as G
from popdyn.gauge import NumericalBracket

from .. import _arb as A

__all__ = ["ratio_bracket", "slope_bracket"]


def _rigorous(*bs) -> bool:
    return all(b.provenance == "rigorous" for b in bs)


def _outward(lo_ball, hi_ball, est):
    """Float endpoints rounded outward from Arb balls, the estimate clamped inside."""
    lo, hi = A.lower(lo_ball), A.upper(hi_ball)
    return lo, hi, float(min(max(est, lo), hi))


def ratio_bracket(num: NumericalBracket, den: NumericalBracket,
                  method: str = "ratio") -> NumericalBracket:
    """Bracket of num/den for positive brackets (interval division).

    When both inputs are ``rigorous`` and finite the endpoints are computed in Arb and rounded
    outward, and the result is ``rigorous``; otherwise :func:`popdyn.gauge.ratio_bracket`
    (float division, ``numerical``).
    """
    if not (num.lo > 0 and den.lo > 0):
        raise ValueError("ratio_bracket needs positive brackets")
    if not (_rigorous(num, den) and num.finite and den.finite):
        return G.ratio_bracket(num, den, method)
    est = num.estimate / den.estimate
    with A.workprec(128):
        lo, hi, est = _outward(arb(num.lo) / arb(den.hi), arb(num.hi) / arb(den.lo), est)
    return NumericalBracket(lo, hi, est, method, provenance="rigorous")


def slope_bracket(x0: float, x1: float, y0: NumericalBracket,
                  y1: NumericalBracket) -> NumericalBracket:
    """Bracket of the local log-log slope log(y1/y0)/log(x1/x0) for x1 > x0 > 0.

    Rigorous, finite, positive ``y0``, ``y1``: Arb logarithms rounded outward, ``rigorous``;
    otherwise :func:`popdyn.gauge.slope_bracket` (float, ``numerical``).
    """
    if not (x1 > x0 > 0):
        raise ValueError("slope_bracket needs 0 < x0 < x1")
    if not (_rigorous(y0, y1) and y0.finite and y1.finite and y0.lo > 0 and y1.lo > 0):
        return G.slope_bracket(x0, x1, y0, y1)
    with A.workprec(128):
        dla = (arb(x1) / arb(x0)).log()
        est = (np.log(y1.estimate) - np.log(y0.estimate)) / np.log(x1 / x0)
        lo, hi, est = _outward((arb(y1.lo).log() - arb(y0.hi).log()) / dla,
                               (arb(y1.hi).log() - arb(y0.lo).log()) / dla, est)
    return NumericalBracket(lo, hi, est, "local log-log slope from the two brackets (Arb)",
                            provenance="rigorous")
