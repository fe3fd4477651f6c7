"""Independent high-precision minimum of the bounded refit quadratic (pure mpmath + numpy).

    min R(v) = e − 2cᵀv + vᵀHv   over   K = {‖v‖₂ ≤ a} ∩ {‖v‖₁ ≤ b},   H ⪰ 0,

by an exhaustive enumeration of KKT points (shares no code with popdyn or certify: no conic
solver, no support function).  A minimizer lies in the relative interior of one face of the l1
ball -- the support S ⊆ {1..m} and signs s of its nonzero entries -- with the l1 constraint
active (sᵀv_S = b) or not, and the l2 constraint active (‖v‖ = a) or not.  Each combination is
a stationarity system in v_S and the multipliers:

* neither active:      H_SS v_S = c_S                      (S = all indices)
* l2 only:             (H + μI) v = c, ‖v‖² = a²,  μ ≥ 0   (secular equation in μ)
* l1 only:             H_SS v_S + (λ/2) s = c_S, sᵀv_S = b  (one bordered linear system)
* both:                (H_SS + μI) v_S + (λ/2) s = c_S, sᵀv_S = b, ‖v_S‖² = a², μ ≥ 0.

The one-parameter equations in μ ≥ 0 are scanned in float64 on a log grid for sign changes and
every bracketed root is refined by bisection at the working precision.  The minimum of R over
all feasible candidates (and v = 0) is the infimum whenever the minimizer satisfies a constraint
qualification (generic data; the tests use random data).  Cost: 3^m faces (m ≤ 4 here).
"""
from __future__ import annotations

import itertools

import mpmath
import numpy as np

_GRID = np.concatenate([[0.0], np.geomspace(1e-12, 1e12, 721)])


def _mp_solve(ctx, A, rhs):
    return ctx.lu_solve(ctx.matrix(A), ctx.matrix(rhs))


def _bordered(ctx, H, c, S, s, b, mu):
    """v_S (list) solving (H_SS + μI)v + (λ/2)s = c_S, sᵀv = b (None if singular)."""
    k = len(S)
    A = [[H[S[i]][S[j]] + (mu if i == j else 0) for j in range(k)] + [s[i] / 2]
         for i in range(k)]
    A.append([ctx.mpf(s[j]) for j in range(k)] + [ctx.mpf(0)])
    rhs = [c[S[i]] for i in range(k)] + [b]
    try:
        x = _mp_solve(ctx, A, rhs)
    except ZeroDivisionError:
        return None
    return [x[i] for i in range(k)]


def _plain(ctx, H, c, S, mu):
    k = len(S)
    A = [[H[S[i]][S[j]] + (mu if i == j else 0) for j in range(k)] for i in range(k)]
    try:
        x = _mp_solve(ctx, A, [c[S[i]] for i in range(k)])
    except ZeroDivisionError:
        return None
    return [x[i] for i in range(k)]


def _roots(ctx, fmp, ffloat):
    """Roots μ ≥ 0 of f bracketed on the float grid: float64 bisection of the bracket, then
    the Anderson–Björck bracketing iteration of mpmath at the working precision."""
    vals = []
    for mu in _GRID:
        try:
            vals.append(ffloat(mu))
        except np.linalg.LinAlgError:
            vals.append(np.nan)
    out = []
    for i in range(len(_GRID) - 1):
        f0, f1 = vals[i], vals[i + 1]
        if not (np.isfinite(f0) and np.isfinite(f1)) or f0 * f1 > 0:
            continue
        lo, hi = _GRID[i], _GRID[i + 1]
        for _ in range(60):                          # float64 bisection
            mid = 0.5 * (lo + hi)
            fm = ffloat(mid)
            if (fm > 0) == (f0 > 0):
                lo = mid
            else:
                hi = mid
        lo, hi = lo * (1 - 1e-9), hi * (1 + 1e-9) + 1e-300
        try:
            if fmp(ctx.mpf(lo)) * fmp(ctx.mpf(hi)) > 0:
                lo, hi = _GRID[i], _GRID[i + 1]
            out.append(ctx.findroot(fmp, (ctx.mpf(lo), ctx.mpf(hi)), solver="anderson"))
        except (ValueError, ZeroDivisionError):
            continue
    return out


def kkt_minimum(H, c, e, a, b, dps: int = 40):
    """(R*, v*) at ``dps`` digits for H (m×m), c (m), e = E[y²], caps a, b; inputs may be floats,
    Fractions, decimal strings or mpf (used exactly)."""
    ctx = mpmath.MPContext()
    ctx.dps = dps
    m = len(c)
    def num(x):
        if hasattr(x, "denominator") and not isinstance(x, (int, float)):   # Fraction
            return ctx.mpf(x.numerator) / x.denominator
        return ctx.mpf(x)

    H = [[num(x) for x in row] for row in H]
    c = [num(x) for x in c]
    e, a, b = num(e), num(a), num(b)
    Hf = np.array([[float(x) for x in row] for row in H])
    cf = np.array([float(x) for x in c])
    af, bf = float(a), float(b)
    tol = ctx.mpf(10) ** (-(dps - 8))

    def risk(v):
        return e - 2 * ctx.fsum(c[i] * v[i] for i in range(m)) + ctx.fsum(
            H[i][j] * v[i] * v[j] for i in range(m) for j in range(m))

    def feasible(v):
        return (ctx.fsum(x * x for x in v) <= a * a * (1 + tol)
                and ctx.fsum(abs(x) for x in v) <= b * (1 + tol))

    cands = [[ctx.mpf(0)] * m]

    def add(S, vS):
        if vS is None:
            return
        v = [ctx.mpf(0)] * m
        for i, j in enumerate(S):
            v[j] = vS[i]
        cands.append(v)

    full = list(range(m))
    add(full, _plain(ctx, H, c, full, 0))
    # l2 only (all signs free)
    add_l2 = _roots(ctx,
                    lambda mu: ctx.fsum(x * x for x in _plain(ctx, H, c, full, mu)) - a * a,
                    lambda mu: float(np.sum(np.linalg.solve(Hf + mu * np.eye(m), cf) ** 2) - af * af))
    for mu in add_l2:
        add(full, _plain(ctx, H, c, full, mu))
    for k in range(1, m + 1):
        for S in itertools.combinations(range(m), k):
            S = list(S)
            HSS = Hf[np.ix_(S, S)]
            for s in itertools.product((-1, 1), repeat=k):
                s = list(s)
                add(S, _bordered(ctx, H, c, S, s, b, 0))
                if k == 1:                   # the vertex b·s: ‖v‖₂ = b for every μ
                    continue

                def ff(mu, S=S, s=s, HSS=HSS):
                    A = np.zeros((k + 1, k + 1))
                    A[:k, :k] = HSS + mu * np.eye(k)
                    A[:k, k] = np.array(s) / 2
                    A[k, :k] = s
                    x = np.linalg.solve(A, np.concatenate([cf[S], [bf]]))
                    return float(np.sum(x[:k] ** 2) - af * af)

                def fm(mu, S=S, s=s):
                    return ctx.fsum(x * x for x in _bordered(ctx, H, c, S, s, b, mu)) - a * a

                for mu in _roots(ctx, fm, ff):
                    add(S, _bordered(ctx, H, c, S, s, b, mu))
    best, vbest = None, None
    for v in cands:
        if feasible(v):
            r = risk(v)
            if best is None or r < best:
                best, vbest = r, v
    return best, vbest
