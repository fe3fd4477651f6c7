r"""Timescale brackets (plateau end, release, specialization time) and scaling exponents.

These brackets are **numerical** (docs/design.md §6): they rest on step refinement, not on a validated
integration.  Rigorous crossing times of a flow given as an Arb vector field come from
:func:`certify.ode.crossing_times` (validated Taylor integration).

Crossing time of one run
------------------------
For a diagnostic series v(t_0), v(t_1), … recorded along a run, the crossing of ``level`` in
``direction`` "down" (first v ≤ level) or "up" (first v ≥ level) lies in [t_{k−1}, t_k],
k the first recorded index past the level (exact for the discrete process that was recorded).

Gradient-flow crossing time by step refinement
----------------------------------------------
``timescale(run, level, h=h)`` runs ``run(h)``, ``run(h/2)``, ``run(h/4)`` (``refinements``
halvings), takes the crossing bracket I_j = [a_j, b_j] of each, and widens the finest one by the
integration error measured by refinement,

    e = max(|a_{J−1} − a_J|, |b_{J−1} − b_J|),   bracket = [a_J − s·e, b_J + s·e],

with a safety factor s (default 2): for a first-order method the error left at step h_J is
about the change from h_{J−1} to h_J.  If the changes do not decrease (|I_{J−1} − I_J| >
0.75 |I_{J−2} − I_J−1| plus the recording spacing) the run is not in its asymptotic regime and a
:class:`~certify.CertificationError` asks for a finer step.

Scaling exponents
-----------------
For a sweep D_1 < … < D_n with timescale brackets [T_i^−, T_i^+] (all positive), the local
slopes of log T against log D are enclosed exactly,
κ_i ∈ [(log T_{i+1}^− − log T_i^+)/Δ_i, (log T_{i+1}^+ − log T_i^−)/Δ_i], Δ_i = log D_{i+1} −
log D_i, and the least-squares slope Σ w_i log T_i (w_i = (x_i − x̄)/Σ(x − x̄)², x = log D) by
taking for each term the endpoint that the sign of w_i selects.  The logs are evaluated in Arb
(rigorous given the timescale brackets); the provenance stays that of the inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
from flint import arb
from popdyn import validation as V

from . import _arb as A
from .bracket import Bracket
from .errors import CertificationError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["TimescaleBracket", "ExponentBracket", "crossing_bracket", "timescale",
           "scaling_exponent"]

DIRECTIONS = ("down", "up")


@dataclass(frozen=True)
class TimescaleBracket:
    """A crossing-time bracket.

    Attributes
    ----------
    time : Bracket
        The bracket (``numerical``).
    per_step : tuple of (h, Bracket)
        The crossing bracket of each run (exact for the recorded discrete process).
    error : float
        The integration error e measured by refinement (before the safety factor).
    safety : float
    level : float
    direction : str
    """

    time: Bracket
    per_step: tuple
    error: float
    safety: float
    level: float
    direction: str


@dataclass(frozen=True)
class ExponentBracket:
    """Bracket of a scaling exponent from a sweep.

    Attributes
    ----------
    slope : Bracket
        Least-squares slope of log T on log D, enclosed over the timescale brackets.
    local : tuple of Bracket
        Secant slopes between consecutive sweep points.
    x : ndarray
        The sweep values D_i.
    provenance : str
    """

    slope: Bracket
    local: tuple
    x: np.ndarray
    provenance: str


def _check_series(times, values):
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.ndim != 1 or v.shape != t.shape or t.size < 2:
        raise ValueError(f"`times` and `values` must be 1-D of equal length >= 2, got "
                         f"{t.shape} and {v.shape}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))):
        raise ValueError("`times` and `values` must be finite")
    if np.any(np.diff(t) <= 0):
        raise ValueError("`times` must be strictly increasing")
    return t, v


def crossing_bracket(times: ArrayLike, values: ArrayLike, level: float, *,
                     direction: str = "down") -> Bracket:
    """[t_{k−1}, t_k] around the first recorded crossing of ``level`` (see module docstring).

    Exact for the recorded discrete process, hence ``rigorous`` as a statement about the
    recorded values.  Raises ``CertificationError`` if there is no crossing (run longer) or
    the series starts past the level.
    """
    t, v = _check_series(times, values)
    level = V.real("level", level)
    V.choice("direction", direction, DIRECTIONS)
    past = v <= level if direction == "down" else v >= level
    idx = np.flatnonzero(past)
    if idx.size == 0:
        raise CertificationError(f"the series never crosses {level!r} ({direction})",
                                 hint="a longer horizon")
    k = int(idx[0])
    if k == 0:
        raise CertificationError("the series starts past the level", hint="an earlier start "
                                 "or denser early diagnostics")
    return Bracket(float(t[k - 1]), float(t[k]), provenance="rigorous",
                   note="bracket between the last recorded value before and the first after")


def timescale(run: Callable[[float], tuple[ArrayLike, ArrayLike]], level: float, *, h: float,
              refinements: int = 2, direction: str = "down",
              safety: float = 2.0) -> TimescaleBracket:
    """Bracket the gradient-flow crossing time of ``level`` by step refinement.

    Parameters
    ----------
    run : callable
        ``run(h) -> (times, values)``: the diagnostic series of a run at step size ``h``
        (e.g. flow time n·h and the normalized loss of ``popdyn.train(method="gd", lr=h)``).
    level : float
        The level whose first crossing defines the time.
    h : float, keyword-only
        The coarsest step; runs at h, h/2, …, h/2^refinements.
    refinements : int, keyword-only
        Number of halvings (>= 1; default 2, i.e. h, h/2, h/4).
    direction : {"down", "up"}
    safety : float
        Factor on the measured integration error (>= 1).

    Returns
    -------
    TimescaleBracket
        ``time`` is tagged ``numerical``.

    Raises
    ------
    CertificationError
        No crossing, or refinement not converging ("try a finer step").
    """
    h = V.real("h", h, positive=True)
    refinements = V.positive_int("refinements", refinements)
    safety = V.real("safety", safety, positive=True)
    if safety < 1:
        raise ValueError(f"`safety` must be >= 1, got {safety}")
    if not callable(run):
        raise TypeError("`run` must be a callable h -> (times, values)")
    per = []
    for j in range(refinements + 1):
        hj = h / 2 ** j
        t, v = run(hj)
        per.append((hj, crossing_bracket(t, v, level, direction=direction)))
    (_, Ia), (_, Ib) = per[-2], per[-1]
    e = max(abs(Ia.lo - Ib.lo), abs(Ia.hi - Ib.hi))
    if len(per) >= 3:
        _, I0 = per[-3]
        e0 = max(abs(I0.lo - Ia.lo), abs(I0.hi - Ia.hi))
        spacing = max(Ib.width, Ia.width)
        if e > 0.75 * e0 + spacing:
            raise CertificationError(
                f"step refinement does not converge (changes {e0:.3g} then {e:.3g})",
                hint=f"a finer step than h = {h:g}")
    lo = Ib.lo - safety * e
    hi = Ib.hi + safety * e
    lo = math.nextafter(lo, -math.inf) if e > 0 else lo
    hi = math.nextafter(hi, math.inf) if e > 0 else hi
    note = (f"finest step h = {per[-1][0]:g}; integration error {e:.3g} measured by step "
            f"refinement, widened by {safety:g}x")
    return TimescaleBracket(Bracket(lo, hi, provenance="numerical", note=note), tuple(per), e,
                            safety, float(level), direction)


def scaling_exponent(x: ArrayLike, brackets: Sequence[Bracket | TimescaleBracket], *,
                     prec: int = 128) -> ExponentBracket:
    """Bracket the exponent κ of T ∝ x^κ from a sweep (see module docstring).

    Parameters
    ----------
    x : array_like (n,)
        Sweep values, positive, strictly increasing, n >= 2.
    brackets : sequence of Bracket or TimescaleBracket (n,)
        Positive timescale brackets.
    prec : int, keyword-only
        Precision of the log evaluations.
    """
    prec = A.check_prec(prec)
    xs = np.asarray(x, dtype=np.float64)
    if xs.ndim != 1 or xs.size < 2:
        raise ValueError("`x` must be 1-D with at least 2 values")
    if not np.all(np.isfinite(xs)) or np.any(xs <= 0) or np.any(np.diff(xs) <= 0):
        raise ValueError("`x` must be finite, positive and strictly increasing")
    bs = [b.time if isinstance(b, TimescaleBracket) else b for b in brackets]
    if len(bs) != xs.size or not all(isinstance(b, Bracket) for b in bs):
        raise ValueError("`brackets` must be one Bracket (or TimescaleBracket) per x")
    if any(not b.lo > 0 for b in bs):
        raise ValueError("timescale brackets must be positive (lo > 0)")
    prov = "rigorous" if all(b.is_rigorous for b in bs) else "numerical"
    with A.workprec(prec):
        lx = [arb(float(v)).log() for v in xs]
        llo = [arb(b.lo).log() for b in bs]
        lhi = [arb(b.hi).log() for b in bs]
        local = []
        for i in range(len(bs) - 1):
            dx = lx[i + 1] - lx[i]
            lo = (llo[i + 1] - lhi[i]) / dx
            hi = (lhi[i + 1] - llo[i]) / dx
            local.append(Bracket(A.lower(lo), A.upper(hi), provenance=prov))
        n = len(bs)
        xbar = sum(lx, arb(0)) / n
        sxx = sum(((v - xbar) * (v - xbar) for v in lx), arb(0))
        lo_s = arb(0)
        hi_s = arb(0)
        for i in range(n):
            w = (lx[i] - xbar) / sxx
            if w >= 0:
                lo_s += w * llo[i]
                hi_s += w * lhi[i]
            elif w <= 0:
                lo_s += w * lhi[i]
                hi_s += w * llo[i]
            else:      # sign undecidable: cover both
                both = (w * llo[i]).union(w * lhi[i])
                lo_s += both
                hi_s += both
        slope = Bracket(A.lower(lo_s), A.upper(hi_s), provenance=prov,
                        note="least-squares slope of log T on log x over the brackets")
    return ExponentBracket(slope, tuple(local), xs, prov)
