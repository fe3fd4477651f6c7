r"""The approximate slow manifold of the stiff opposite gauges (float; docs/design.md §7).

For a/|w| = D ≪ 1 the reduced flow (:func:`popdyn.gauge.reduced_rhs`; Δ = a² − |w|² < 0),

    ċ = −S (c/2 − k(φ)),   φ̇ = ρ(c) k'(φ),   S = sqrt(Δ² + 4c²),  ρ(c) = 2c/(S − Δ),

is fast–slow: c relaxes at rate ≈ S/2 ≥ |Δ|/2 while φ moves at rate ρ ≈ c/|Δ|.
:func:`slow_manifold` computes a Chebyshev polynomial c = h(φ) on [φ_a, φ_b] that approximately
solves the invariance equation ċ = h'(φ) φ̇ (its fixed-point form h = 2k − 2 h' ρ(h) k'/S(h),
iterated from h = 2k, keeping the iterate of least float defect; when that defect stays above
1e−14, a Chebyshev fit of the invariant curve through its end point, dc/dφ = ċ/φ̇ integrated by
Radau towards decreasing φ).  Nothing rigorous rests on it: :mod:`certify.gauge` verifies a tube
around it in Arb and encloses the specialization times of the stiff gauges from that tube.

References
----------
N. Fenichel, "Geometric singular perturbation theory for ordinary differential equations",
J. Differential Equations 31 (1979) 53–98; the feature-ownership paper (abstract: "Training
changes a network's predictions while allocating task-relevant structure across its internal
units"); docs/design.md §7.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import chebyshev as C

__all__ = ["slow_manifold"]

_TWO_PI = 2.0 * math.pi


# --------------------------------------------------------------------------- float manifold
def slow_manifold(Delta: float, phi_a: float, phi_b: float, *, degree: int = 48, iters: int = 60):
    """Chebyshev coefficients (float64, on [phi_a, phi_b]) of an approximate slow manifold
    c = h(φ) of the reduced flow with Δ < 0, by the fixed-point form
    h = 2k − 2h'ρ(h)k'/S(h) of the invariance equation; and the max float defect
    |ċ − h'φ̇| on a fine grid (a guide for the tube radius, not part of any bound)."""
    n = int(degree)
    j = np.arange(n + 1)
    x = np.cos(np.pi * (j + 0.5) / (n + 1))
    half, midp = 0.5 * (phi_b - phi_a), 0.5 * (phi_b + phi_a)
    phi = midp + half * x
    k = (np.sin(phi) + (np.pi - phi) * np.cos(phi)) / _TWO_PI
    kp = -(np.pi - phi) * np.sin(phi) / _TWO_PI
    h = 2.0 * k
    coef = C.chebfit(x, h, n)
    best = (_defect(coef, Delta, phi_a, phi_b), coef)
    worse = 0
    for _ in range(iters):
        # (an asymptotic iteration: it may stall or diverge at moderate stiffness; the best
        # iterate by its float defect is kept)
        hp = C.chebval(x, C.chebder(coef)) / half
        S = np.sqrt(Delta * Delta + 4.0 * h * h)
        rho = 2.0 * h / (S - Delta)
        hn = 2.0 * k - 2.0 * hp * rho * kp / S
        if not np.all(np.isfinite(hn)) or np.any(hn <= 0):
            break
        done = np.max(np.abs(hn - h)) <= 1e-17 * np.max(np.abs(h))
        h = hn
        coef = C.chebfit(x, h, n)
        dfc = _defect(coef, Delta, phi_a, phi_b)
        if dfc[0] < best[0][0]:
            best, worse = (dfc, coef), 0
        else:
            worse += 1
        if done or worse >= 3:
            break
    (defect, hmax), coef = best
    if defect > 1e-14 * hmax:
        # moderate stiffness: the asymptotic iteration stalls; follow instead the invariant
        # curve (a trajectory) through (φ_b, h(φ_b)) by integrating dc/dφ = ċ/φ̇ (Radau, which
        # is stable towards decreasing φ, where the curve attracts), and refit
        from scipy.integrate import solve_ivp

        def dcdphi(p, c):
            S = np.sqrt(Delta * Delta + 4.0 * c * c)
            rho = 2.0 * c / (S - Delta)
            kk = (np.sin(p) + (np.pi - p) * np.cos(p)) / _TWO_PI
            kpp = -(np.pi - p) * np.sin(p) / _TWO_PI
            return -S * (0.5 * c - kk) / (rho * kpp)

        cb = float(C.chebval(1.0, coef))
        sol = solve_ivp(dcdphi, (phi_b, phi_a), [cb], method="Radau", rtol=1e-13,
                        atol=1e-16 * hmax, dense_output=True)
        if sol.status == 0:
            c2 = C.chebfit(x, sol.sol(phi)[0], n)
            d2, h2 = _defect(c2, Delta, phi_a, phi_b)
            if d2 < defect:
                coef, defect, hmax = c2, d2, h2
    return coef, float(defect), float(hmax)


def _defect(coef, Delta, phi_a, phi_b):
    half, midp = 0.5 * (phi_b - phi_a), 0.5 * (phi_b + phi_a)
    xs = np.linspace(-1, 1, 2001)
    ps = midp + half * xs
    hh = C.chebval(xs, coef)
    hp = C.chebval(xs, C.chebder(coef)) / half
    S = np.sqrt(Delta * Delta + 4.0 * hh * hh)
    rho = 2.0 * hh / (S - Delta)
    kk = (np.sin(ps) + (np.pi - ps) * np.cos(ps)) / _TWO_PI
    kp = -(np.pi - ps) * np.sin(ps) / _TWO_PI
    defect = np.max(np.abs(-S * (0.5 * hh - kk) - hp * rho * kp))
    return float(defect), float(np.max(np.abs(hh)))
