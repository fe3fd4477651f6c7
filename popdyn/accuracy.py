"""The float engine's tolerance as a contract: :class:`AccuracyWarning` and the
refinement driver behind ``rtol``.

A float result that depends on truncated series (smooth activations, non-polynomial links,
SwiGLU) is returned only when its *estimated* error is within the requested accuracy

    |error| <= rtol · |value| + atol,

where ``atol`` is the float64 rounding floor of the quantity (a stated multiple of the unit
roundoff times the size of its terms: no float64 evaluation can promise less).  When the
estimate at the requested ``rtol`` is larger, the series tolerance is tightened (÷100 per step,
down to :data:`RTOL_FLOOR`) and the quantity recomputed; if the floor or the Hermite order cap
(:data:`ORDER_CAP`) is reached and the estimate still exceeds the requested accuracy, the value
is returned with an :class:`AccuracyWarning` naming the cap that was hit, the estimate and what
to do (``certify`` gives rigorous brackets).  The refinement is bounded by work, never by wall
time, so a result does not depend on the machine's speed or load: at most :data:`MAX_STEPS`
steps per call, each at most the Hermite order cap (the warning names the cap hit).
The estimates are those of the engine: for the loss the propagated series tails and rounding
(``full_output``'s ``"error"``); for the gradient the same estimates of its moments propagated
entrywise through its formulas (:func:`popdyn.population_grad`); for the AGOP
the change of M between two series tolerances a factor 100 apart, in the spectral norm, plus
its rounding floor (an a-posteriori estimate, not a bound: the rigorous bracket is
:func:`certify.alignment`).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike

#: the smallest series tolerance the refinement asks the Hermite engine for
RTOL_FLOOR = 1e-16
#: the largest Hermite truncation order of the smooth-unit coefficients (popdyn._hermite nmax)
ORDER_CAP = 4096
#: refinement factor of the series tolerance per step
STEP = 100.0
#: the most refinement steps (recomputations after the first evaluation) of one call
MAX_STEPS = 8
_U = 2.0 ** -53


class AccuracyWarning(UserWarning):
    """A float result of popdyn could not be guaranteed within the requested ``rtol``.

    Raised (as a warning) by :func:`popdyn.population_loss`, :func:`popdyn.population_grad`,
    :func:`popdyn.loss_and_grad` and :func:`popdyn.agop` (and the
    diagnostics built on them) when the estimated error of the returned value exceeds
    ``rtol·|value| + atol`` after refining the series down to :data:`RTOL_FLOOR` or up to the
    Hermite order cap :data:`ORDER_CAP`.  The message names the quantity, the estimate, the
    requested accuracy and the cap that was hit.  Turn it into an error with
    ``warnings.simplefilter("error", popdyn.AccuracyWarning)``.
    """


def rounding_floor(n_terms: int, scale: float) -> float:
    """The float64 rounding floor ``8·(n_terms + 2)·u·scale`` (u = 2⁻⁵³) of a sum of
    ``n_terms`` products of size ``scale``: the ``atol`` of the contract."""
    return 8.0 * (n_terms + 2) * _U * float(scale)


def next_tolerance(tol: float, error: float, target: float) -> float:
    """The next series tolerance after ``tol`` gave the estimate ``error`` > ``target``: ÷100,
    or further in proportion when the estimate is far off (tails scale like the tolerance),
    never below :data:`RTOL_FLOOR`."""
    t = tol / STEP
    if error > 0 and math.isfinite(error) and target > 0:
        t = min(t, 0.5 * tol * target / error)
    return max(t, RTOL_FLOOR)


def tolerances(rtol: float) -> list[float]:
    """The series tolerances tried for a request ``rtol``: rtol, rtol/100, ... down to
    :data:`RTOL_FLOOR` (at least one)."""
    t = float(rtol)
    out = [t]
    while t > RTOL_FLOOR:
        t = max(t / STEP, RTOL_FLOOR)
        out.append(t)
    return out


def warn(what: str, error: float, target: float, rtol: float, cap: str, advice: str,
         stacklevel: int = 3) -> None:
    """Issue the :class:`AccuracyWarning` of the contract."""
    warnings.warn(
        f"{what}: estimated error {error:.3g} exceeds the requested accuracy {target:.3g} "
        f"(rtol={rtol:g} relative plus the float64 rounding floor); {cap}. {advice}",
        AccuracyWarning, stacklevel=stacklevel)


def budget_cap(steps: int) -> str | None:
    """The name of the refinement cap reached after ``steps`` refinement steps
    (:data:`MAX_STEPS`), or None.  The cap counts work, not time: the same call gives the same
    bits on a loaded machine."""
    if steps >= MAX_STEPS:
        return f"the refinement step cap {MAX_STEPS} was reached"
    return None


def spectral_norm(M: ArrayLike) -> float:
    """‖M‖₂ of a symmetric matrix (largest |eigenvalue|; 0 for an empty one)."""
    M = np.asarray(M, dtype=float)
    if M.size == 0:
        return 0.0
    ev = np.linalg.eigvalsh(0.5 * (M + M.T))
    return float(np.max(np.abs(ev)))


def finite_or_inf(x: float) -> float:
    x = float(x)
    return x if math.isfinite(x) else math.inf
