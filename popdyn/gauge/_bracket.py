"""A small numerical bracket type for timescales and exponents (docs/design.md §6, "Timescales").

Timescales measured here are :class:`NumericalBracket` objects tagged ``provenance="numerical"``
(grid bracketing widened by step / tolerance refinement), except the validated-integration
times of :func:`certify.gauge.rigorous_specialization_times`, tagged ``"rigorous"``.  Ratios and
slopes of rigorous brackets are computed in Arb with outward rounding and stay rigorous (by
:mod:`certify.gauge`, reached through the ``gauge_certifier`` service of :mod:`popdyn.plugins`);
any numerical input makes the result numerical (float arithmetic here).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NumericalBracket:
    """[lo, hi] with a point ``estimate`` inside, obtained numerically (``method`` says how).

    ``hi`` may be ``inf`` (e.g. a crossing not reached by the horizon: [t_horizon, inf)).
    """

    lo: float
    hi: float
    estimate: float
    method: str = ""
    provenance: str = "numerical"

    def __post_init__(self):
        if not (self.lo <= self.estimate <= self.hi):
            raise ValueError(f"bracket must satisfy lo <= estimate <= hi, got "
                             f"{self.lo!r}, {self.estimate!r}, {self.hi!r}")

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.lo) and np.isfinite(self.hi))

    def contains(self, x: float) -> bool:
        return bool(self.lo <= x <= self.hi)

    def __str__(self) -> str:
        return f"{self.estimate:.8g} ∈ [{self.lo:.8g}, {self.hi:.8g}] ({self.provenance})"

    def to_dict(self) -> dict:
        return {"lo": self.lo, "hi": self.hi, "estimate": self.estimate, "method": self.method,
                "provenance": self.provenance}


def _rigorous(*bs) -> bool:
    return all(b.provenance == "rigorous" for b in bs)


def _arb_arithmetic():
    """The provider of the Arb arithmetic on rigorous brackets (``certify.gauge``)."""
    from ..plugins import load

    return load("gauge_certifier")


def ratio_bracket(num: NumericalBracket, den: NumericalBracket, method: str = "ratio") -> NumericalBracket:
    """Bracket of num/den for positive brackets (interval division).

    When both inputs are ``rigorous`` and finite the endpoints are computed in Arb and rounded
    outward, and the result is ``rigorous`` (:func:`certify.gauge.ratio_bracket`); otherwise
    float division, ``numerical``.
    """
    if not (num.lo > 0 and den.lo > 0):
        raise ValueError("ratio_bracket needs positive brackets")
    if _rigorous(num, den) and num.finite and den.finite:
        return _arb_arithmetic().ratio_bracket(num, den, method)
    est = num.estimate / den.estimate
    return NumericalBracket(num.lo / den.hi, num.hi / den.lo, est, method)


def slope_bracket(x0: float, x1: float, y0: NumericalBracket, y1: NumericalBracket) -> NumericalBracket:
    """Bracket of the local log-log slope log(y1/y0)/log(x1/x0) for x1 > x0 > 0.

    Rigorous, finite, positive ``y0``, ``y1``: Arb logarithms rounded outward, ``rigorous``
    (:func:`certify.gauge.slope_bracket`); otherwise float, ``numerical``."""
    if not (x1 > x0 > 0):
        raise ValueError("slope_bracket needs 0 < x0 < x1")
    if _rigorous(y0, y1) and y0.finite and y1.finite and y0.lo > 0 and y1.lo > 0:
        return _arb_arithmetic().slope_bracket(x0, x1, y0, y1)
    dl = np.log(x1 / x0)
    return NumericalBracket((np.log(y1.lo) - np.log(y0.hi)) / dl,
                            (np.log(y1.hi) - np.log(y0.lo)) / dl,
                            (np.log(y1.estimate) - np.log(y0.estimate)) / dl,
                            "local log-log slope from the two brackets")


def hull(brackets, method: str = "hull") -> NumericalBracket:
    """Smallest bracket containing all ``brackets`` (estimate: the median of the estimates)."""
    bs = list(brackets)
    if not bs:
        raise ValueError("hull of no brackets")
    lo = min(b.lo for b in bs)
    hi = max(b.hi for b in bs)
    est = float(np.clip(np.median([b.estimate for b in bs]), lo, hi))
    return NumericalBracket(lo, hi, est, method,
                            provenance="rigorous" if _rigorous(*bs) else "numerical")
