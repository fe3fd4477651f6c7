r"""Rigorous specialization times of the exact reduced single-neuron flow.

The reduced (c, φ) flow of :func:`popdyn.gauge.reduced_rhs` (docs/design.md §7; the feature-ownership
paper), with Δ = a² − |w|² = c0 (D − 1/D) conserved,

    ċ = −S (c/2 − k(φ)),      φ̇ = ρ k'(φ),
    S = sqrt(Δ² + 4c²),   ρ = (S + Δ)/(2c) = 2c/(S − Δ),
    k(φ) = (sin φ + (π − φ) cos φ)/(2π),   k'(φ) = −(π − φ) sin φ/(2π),

is integrated by the validated Taylor integrator :mod:`certify.ode`.  Its Jacobian, needed for
the mean-value (Lohner) propagation, is

    ∂ċ/∂c = −(4c/S)(c/2 − k) − S/2,   ∂ċ/∂φ = S k'(φ),
    ∂φ̇/∂c = ρ'(c) k'(φ),   ρ' = −Δ ρ²/(c² (ρ² + 1))   (from ρ − 1/ρ = Δ/c),
    ∂φ̇/∂φ = ρ k''(φ),      k''(φ) = (sin φ − (π − φ) cos φ)/(2π).

The specialization time for threshold τ is the first t with cos φ(t) ≥ τ: the section
s = cos φ − τ with rate ṡ = −sin φ · φ̇ = sin φ · ρ (π − φ) sin φ/(2π) > 0 on 0 < φ < π.

The problem is the exact one for the float inputs (c0, D, cos0, τ as their binary values):
Δ = c0 (D − 1/D) and φ0 = arccos(cos0) are enclosed in Arb, not rounded.  With ``d`` given,
the initial cosine is the real number 1/√d itself (not its float): φ0 = arccos(1/√d) is
enclosed in Arb and the whole ball of initial values is carried by the integrators.

Stiff opposite gauges (Δ ≤ −STIFF_DELTA): the explicit method would need ~|Δ|·T steps; they
are enclosed instead by the verified slow-manifold tube of :mod:`certify.gauge._slow` (the
explicit integrator only carries the fast transient into the tube).
"""
from __future__ import annotations

import math

from flint import arb

from popdyn.gauge import STIFF_DELTA, NumericalBracket, check_start, check_thresholds

from .. import _arb as A
from ..errors import CertificationError
from ..ode import CrossingSpec, crossing_times
from ._field import reduced_field

__all__ = ["rigorous_specialization_times", "start_angle"]


def _spec(field_, tau):
    t = arb(float(tau))

    def section(x):
        return x[1].cos() - t

    def rate(x):
        return -x[1].sin() * field_.f(x)[1]

    return CrossingSpec(section, rate, f"cos φ ≥ {tau:g}")


def start_angle(cos0, d=None):
    """The initial angle φ0 as an ``arb``: arccos(cos0) for the exact float cos0, or, with
    ``d`` given, arccos(1/√d) for the real 1/√d (then ``cos0`` must be None or within 4 ulp of
    it: it names the same start).  Call inside a precision context."""
    if d is None:
        return arb(cos0).acos()
    d = int(d)
    if d < 2:
        raise ValueError(f"`d` must be >= 2, got {d}")
    c = 1 / arb(d).sqrt()
    if cos0 is not None and not abs(float(cos0) - 1 / math.sqrt(d)) <= 4 * 2.0 ** -52 / math.sqrt(d):
        raise ValueError(f"`cos0` = {cos0!r} is not 1/sqrt(d) for d = {d}; pass one or the other")
    return c.acos()


def rigorous_specialization_times(c0: float, ratio: float, cos0: float, thresholds, *,
                                  t_max: float = 1e8, prec: int = 128, order: int = 20,
                                  tol: float = 1e-16, max_steps: int = 100000, d=None,
                                  stiff: str = "auto"):
    """Rigorous brackets of the specialization times of the reduced single-neuron flow.

    Parameters
    ----------
    c0, ratio, cos0 : float
        Initial coefficient a|w| > 0, gauge ratio a/|w| > 0, initial cosine in (−1, 1) (exact
        binary values).
    thresholds : sequence of float in (0, 1)
    t_max : float
        Horizon (a threshold not reached gives [t_end, inf), rigorous).
    prec, order, tol, max_steps
        Arb precision, Taylor order, local error target and step budget of
        :func:`certify.ode.crossing_times` (CertificationError past the budget).
    d : int or None
        If given, the start cosine is the real 1/√d (enclosed), not the float ``cos0``
        (which may then be None).
    stiff : {"auto", "tube", "explicit"}
        "auto": the slow-manifold tube (:mod:`certify.gauge._slow`) when Δ ≤
        −:data:`popdyn.gauge.STIFF_DELTA`,
        the explicit Taylor–Lohner integrator otherwise, and also when a threshold is crossed
        during the fast transient, before the tube is entered ("tube" refuses that case).

    Returns
    -------
    (list of NumericalBracket with provenance "rigorous", one per sorted threshold; the number
    of validated steps)

    Raises
    ------
    certify.CertificationError
        When the validated enclosures cannot separate a crossing.
    """
    if stiff not in ("auto", "tube", "explicit"):
        raise ValueError(f"`stiff` must be one of ('auto', 'tube', 'explicit'), got {stiff!r}")
    c0, ratio, cos0 = check_start(c0, ratio, 1 / math.sqrt(d) if cos0 is None and d is not None
                                  else cos0)
    thr = check_thresholds(thresholds)
    with A.workprec(prec):
        Delta = arb(c0) * (arb(ratio) - 1 / arb(ratio))
        field_ = reduced_field(Delta)
        phi0 = start_angle(cos0, d)
        use_tube = stiff == "tube" or (stiff == "auto" and bool(Delta <= -STIFF_DELTA))
        if use_tube:
            from ._slow import TransientSection, slow_tube_times  # lazy: stiff starts only

            cs = phi0.cos()
            out: list[NumericalBracket | None] = []
            todo: list[float] = []
            for t in thr:
                if cs >= t:
                    out.append(NumericalBracket(0.0, 0.0, 0.0, "initial cosine above threshold "
                                                "(exact)", provenance="rigorous"))
                elif cs < t:
                    todo.append(float(t))
                    out.append(None)
                else:
                    raise CertificationError("a threshold straddles the initial cosine")
            if todo:
                try:
                    brs, info = slow_tube_times(Delta, [arb(c0), phi0], todo, prec=prec)
                except TransientSection:
                    if stiff == "tube":
                        raise
                    brs = None              # a section inside the transient: explicit below
            if todo and brs is not None:
                it = iter(brs)
                for i, b in enumerate(out):
                    if b is None:
                        lo, hi = next(it)
                        out[i] = NumericalBracket(lo, hi, 0.5 * (lo + hi),
                                                  "verified slow-manifold tube (gauge._slow; "
                                                  f"transient {info['transient_steps']} validated "
                                                  f"steps, tube radius {info['eps']:.2g})",
                                                  provenance="rigorous")
                return out, info["transient_steps"]
            if not todo:
                return out, 0
        specs = [_spec(field_, t) for t in thr]
        brs, flow = crossing_times(field_, [arb(c0), phi0], specs, t_max=t_max, order=order,
                                   tol=tol, scale_floor=[c0 / 2, 1.0], prec=prec,
                                   max_steps=max_steps)
    out = []
    for b in brs:
        est = 0.5 * (b.lo + b.hi) if math.isfinite(b.hi) else b.lo
        est = min(max(est, b.lo), b.hi)
        out.append(NumericalBracket(b.lo, b.hi, est, "validated Taylor integration (certify.ode)",
                                    provenance="rigorous"))
    return out, len(flow.steps)
