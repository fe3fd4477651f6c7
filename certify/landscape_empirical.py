r"""Certified bounds on the finite-sample weight-decay landscapes of :mod:`popdyn.landscape.empirical`.

The problem (n points X, labels y, a bias-free two-layer relu network, the ℓ2-regularized
empirical loss L of Boursier, Bowditch, Englert, Lazić, arXiv 2505.22578) and the mathematics are
in the docstring of :mod:`popdyn.landscape.empirical`, which holds the float side (data, loss,
patterns, the convex program solved in float, training, merging).  Here every bound is
evaluated in Arb on the exact float inputs:

* :func:`loss_upper_bound` -- a rigorous upper bound on L(a, W);
* :func:`global_optimum` -- the global minimum of L over all widths, bracketed by weak duality
  of the convex reformulation (Pilanci & Ergen 2020; lower bound) and the Arb loss of the
  balanced network read from the solution (upper bound);
* :func:`certify_state` -- Krawczyk's operator proves the critical point near a float state of
  the merged network, its Hessian's eigenvalues are bracketed on the Krawczyk box, and the
  zero units' dual margin decides whether they can grow (:class:`StateCertificate`).

References
----------
E. Boursier, M. Bowditch, M. Englert, R. Lazić, arXiv 2505.22578; M. Pilanci, T. Ergen,
"Neural networks are convex regularizers", ICML 2020; R. Krawczyk, Computing 4 (1969);
A. Neumaier, "Interval methods for systems of equations" (1990) Thm. 5.1.8.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import arb, arb_mat

from popdyn import validation as V
from popdyn.landscape import empirical as E

from . import _arb as A

__all__ = ["GlobalOptimum", "StateCertificate", "certify_state", "global_optimum",
           "loss_upper_bound"]


@dataclass(frozen=True)
class GlobalOptimum:
    """Result of :func:`global_optimum` (values in the normalization of :func:`loss`).

    Attributes
    ----------
    lower : float
        Certified lower bound on the minimum of L over every width (weak duality, Arb; −inf if
        the pattern list is not complete).
    upper : float
        Certified upper bound: the Arb loss of the network ``a``, ``W`` (width ``groups``).
    value : float
        The solver's primal objective.
    a, W : the balanced network read from the solution (one unit per nonzero group).
    groups : int
        m*: the number of nonzero groups (units of ``a``, ``W``).
    status : str
        Clarabel's status.
    dual_scale : float
        The factor t ≤ 1 that made the solver's residual dual feasible.
    """

    lower: float
    upper: float
    value: float
    a: np.ndarray
    W: np.ndarray
    groups: int
    status: str
    dual_scale: float

    @property
    def gap(self) -> float:
        return self.upper - self.lower


def loss_upper_bound(X, y, lam, a, W, *, prec: int = 128) -> float:
    """A rigorous upper bound on L(a, W) (Arb evaluation of the exact float inputs)."""
    with A.workprec(prec):
        return A.upper(_loss_arb(X, y, lam, a, W, arb))


def _loss_arb(X, y, lam, a, W, arb):
    n, d = X.shape
    m = len(a)
    tot = arb(0)
    pen = arb(0)
    for j in range(m):
        pen += arb(float(a[j])) ** 2
        for k in range(d):
            pen += arb(float(W[j, k])) ** 2
    for i in range(n):
        f = arb(0)
        for j in range(m):
            z = sum((arb(float(X[i, k])) * arb(float(W[j, k])) for k in range(d)), arb(0))
            z = z.max(arb(0))                  # relu of a ball: a ball containing it
            f += arb(float(a[j])) * z
        e = f - arb(float(y[i]))
        tot += e * e
    return tot / (2 * n) + arb(float(lam)) * pen / 2


def _sigma_upper(X, Dk, g_arb, arb, A):
    """Upper bound on max_{u ∈ C_k, |u| ≤ 1} |g·u| for g in the Arb vector ``g_arb`` (both signs):
    min over μ ≥ 0 of |±g + Aᵀμ| with μ from NNLS at the midpoint, evaluated in Arb."""
    from scipy.optimize import nnls
    Ak = (2.0 * Dk - 1.0)[:, None] * X                       # (n, d)
    gm = np.array([float(v.mid()) for v in g_arb])
    best = 0.0
    for s in (1.0, -1.0):
        mu, _ = nnls(Ak.T, -s * gm)
        v = [s * g_arb[k] + sum((arb(float(Ak[i, k])) * arb(float(mu[i]))
                                 for i in range(len(mu))), arb(0)) for k in range(X.shape[1])]
        nrm2 = sum((t * t for t in v), arb(0))
        best = max(best, A.upper(nrm2.sqrt()))
    return best


def global_optimum(X, y, lam, patterns: E.Patterns | None = None, *, tol: float = 1e-11,
                   prec: int = 128) -> GlobalOptimum:
    """The global minimum of L over all widths, certified by the convex reformulation.

    Parameters
    ----------
    X, y, lam : the problem (module docstring).
    patterns : the cells (default :func:`popdyn.landscape.empirical.activation_patterns`).
    tol : Clarabel's gap and feasibility tolerances.
    prec : Arb precision (bits) of the bounds.

    Returns
    -------
    GlobalOptimum
        ``lower`` ≤ min L ≤ ``upper`` (rigorous; the lower bound needs ``patterns.complete``,
        else −inf) and the network achieving ``upper`` (width ``groups``).
    """
    X, y, lam = E.check_problem(X, y, lam)
    if patterns is None:
        patterns = E.activation_patterns(X)
    a, W, value, status, residual, _ = E.convex_network(X, y, lam, patterns, tol=tol)
    upper = loss_upper_bound(X, y, lam, a, W, prec=prec)
    lower, t = _dual_lower(X, y, lam, patterns, residual, prec) if patterns.complete \
        else (-math.inf, 0.0)
    return GlobalOptimum(lower, upper, value, a, W, int(len(a)), status, t)


def _dual_lower(X, y, lam, patterns, z0, prec):
    n, d = X.shape
    with A.workprec(prec):
        z = [arb(float(v)) for v in z0]
        smax = 0.0
        for Dk in patterns.D:
            if not Dk.any():
                continue
            g = [sum((arb(float(X[i, k])) * z[i] for i in range(n) if Dk[i]), arb(0))
                 for k in range(d)]
            smax = max(smax, _sigma_upper(X, Dk, g, arb, A))
        beta = arb(float(n)) * arb(float(lam))
        t = arb(1) if smax <= A.lower(beta) else beta / arb(smax)
        t = arb(min(1.0, A.lower(t)))               # a float t ≤ the admissible scale
        zy = sum((t * z[i] * arb(float(y[i])) for i in range(n)), arb(0))
        zz = sum((t * t * z[i] * z[i] for i in range(n)), arb(0))
        lb = (zy - zz / 2) / n
        return A.lower(lb), float(t.mid())


@dataclass(frozen=True)
class StateCertificate:
    """Result of :func:`certify_state`.

    Attributes
    ----------
    verdict : {"local_min", "critical", "saddle", "undecided"}
        ``critical``: a certified critical point of the merged network with zero units whose
        dual margin is not certainly negative (a local minimum iff it is a global one).
    strict : bool
        A strict local minimum of the width-m loss (no duplicates, no zero units).
    loss : (float, float)
        Rigorous bracket of L at the certified critical point (−inf, inf if none).
    reason : str
    classes : int
        Number of (pattern, sign) classes of the merged network.
    zero_units, duplicates : int
    lam_min : (float, float)
        Bracket of the smallest Hessian eigenvalue of the merged network on the box.
    margin : (float, float)
        Bracket of λ − max_k σ_k(r*)/n (> 0: zero units cannot grow; < 0: saddle).
    contraction : float
        Krawczyk's max|K(X) − x̂|/r.
    center : (a, W) of the merged point (float).
    """

    verdict: str
    strict: bool
    loss: tuple
    reason: str
    classes: int
    zero_units: int
    duplicates: int
    lam_min: tuple = (-math.inf, math.inf)
    margin: tuple = (-math.inf, math.inf)
    contraction: float = math.inf
    center: tuple = field(default=(None, None), repr=False)


def _lgh_arb(xs, X, y, lam, Dm, m, d, arb, hess):
    """L, ∇L, ∇²L (lists of arb) on the box ``xs`` for the fixed pattern Dm (m, n)."""
    n = X.shape[0]
    a = xs[:m]
    W = [xs[m + j * d:m + (j + 1) * d] for j in range(m)]
    Xa = [[arb(float(v)) for v in row] for row in X]
    lamb = arb(float(lam))
    DX = [[[Xa[i][k] if Dm[j, i] else arb(0) for k in range(d)] for i in range(n)]
          for j in range(m)]
    Phi = [[sum((DX[j][i][k] * W[j][k] for k in range(d)), arb(0)) for i in range(n)]
           for j in range(m)]
    r = [sum((a[j] * Phi[j][i] for j in range(m)), arb(0)) - arb(float(y[i])) for i in range(n)]
    pen = sum((t * t for t in xs), arb(0))
    L = sum((t * t for t in r), arb(0)) / (2 * n) + lamb * pen / 2
    g = [sum((Phi[j][i] * r[i] for i in range(n)), arb(0)) / n + lamb * a[j] for j in range(m)]
    DXr = [[sum((DX[j][i][k] * r[i] for i in range(n)), arb(0)) / n for k in range(d)]
           for j in range(m)]
    for j in range(m):
        for k in range(d):
            g.append(a[j] * DXr[j][k] + lamb * W[j][k])
    if not hess:
        return L, g, None, r
    P = m * (d + 1)
    H = [[arb(0)] * P for _ in range(P)]
    for j in range(m):
        for k in range(j, m):
            v = sum((Phi[j][i] * Phi[k][i] for i in range(n)), arb(0)) / n
            if j == k:
                v += lamb
            H[j][k] = H[k][j] = v
    for j in range(m):
        for k in range(m):
            for e in range(d):
                v = a[k] * sum((DX[k][i][e] * Phi[j][i] for i in range(n)), arb(0)) / n
                if j == k:
                    v += DXr[j][e]
                H[j][m + k * d + e] = H[m + k * d + e][j] = v
    for j in range(m):
        for k in range(j, m):
            aa = a[j] * a[k]
            for e in range(d):
                for f in range(d):
                    v = aa * sum((DX[j][i][e] * DX[k][i][f] for i in range(n)), arb(0)) / n
                    if j == k and e == f:
                        v += lamb
                    H[m + j * d + e][m + k * d + f] = v
                    H[m + k * d + f][m + j * d + e] = v
    return L, g, H, r


def certify_state(X, y, lam, a, W, *, patterns: E.Patterns | None = None, zero_tol: float = 1e-6,
                  radius: float | None = None, prec: int = 128,
                  zero_units: int | None = None) -> StateCertificate:
    """Certify the critical point near the float state (a, W) (module docstring).

    Parameters
    ----------
    X, y, lam : the problem.
    a, W : a float state (e.g. the end of :func:`train_gd`).
    patterns : the cells (for the zero-unit margin; default :func:`popdyn.landscape.empirical.activation_patterns`).
    zero_tol : units with √(a_j² + |w_j|²) ≤ zero_tol are zero units.
    radius : half-width of the Krawczyk box (default 1e−9·max(1, |x̂|_∞), shrunk 100× on failure).
    prec : Arb precision (bits).
    zero_units : the number of zero units of the width-m point the certificate is about (default:
        those of (a, W) under ``zero_tol``); decides whether the margin matters.

    Returns
    -------
    StateCertificate
    """
    X, y, lam = E.check_problem(X, y, lam)
    a = V.array("a", a, (None,))
    W = V.array("W", W, (a.shape[0], X.shape[1]))
    if patterns is None:
        patterns = E.activation_patterns(X)
    n, d = X.shape
    am, Wm, classes, nzero, dup = E.merge_units(X, a, W, zero_tol=zero_tol)
    if zero_units is not None:
        nzero = V.nonneg_int("zero_units", zero_units)
    k = len(am)
    base = dict(classes=k, zero_units=nzero, duplicates=dup)
    if k == 0:
        # θ = 0: L = |y|²/2n; a local minimum iff no unit can grow: margin with r = −y
        return _zero_network(X, y, lam, patterns, prec, base)
    # snap near-kinks (|w_j·x_l| ≤ 1e−5|w_j||x_l|) onto the kink (a solver leaves ~1e−6 there);
    # a wrong snap only makes the certificate below fail (undecided), never pass
    for j in range(k):
        for l in range(n):
            z = float(Wm[j] @ X[l])
            if abs(z) <= 1e-5 * np.linalg.norm(Wm[j]) * np.linalg.norm(X[l]):
                Wm[j] = Wm[j] - (z / float(X[l] @ X[l])) * X[l]
                Wm[j, np.abs(Wm[j]) <= 1e-300] = 0.0
    am, Wm = E.region_newton(X, y, lam, am, Wm)
    xf = np.concatenate([am, Wm.ravel()])
    Dm = E.activation_pattern(X, Wm)
    # kinks: w_j·x_l = 0 exactly at every critical point of L_D when x_l ⊥ x_i (exact rationals)
    # for every i active for unit j (then λw_j = −(a_j/n)(D_j X)ᵀr is orthogonal to x_l)
    Z = Wm @ X.T
    kinks = []
    for j in range(k):
        for l in range(n):
            if not Dm[j, l] and abs(Z[j, l]) <= 1e-12 * np.linalg.norm(Wm[j]) * np.linalg.norm(X[l]):
                if all(E.exact_dot(X[l], X[i]) == 0 for i in range(n) if Dm[j, i]):
                    kinks.append((j, l))
    P = len(xf)
    scale = max(1.0, float(np.max(np.abs(xf))))
    radii = [radius] if radius is not None else [1e-9 * scale, 1e-11 * scale]
    res: Any = None
    for r in radii:
        res = _krawczyk(X, y, lam, xf, Dm, k, d, r, prec, arb, arb_mat, A, kinks)
        if res[0] == "ok":
            break
    if res is None or res[0] != "ok":
        return StateCertificate("undecided", False, (-math.inf, math.inf), res[1],
                                center=(am, Wm), **base)
    _, Lb, eig, contraction, enc, kinks = res
    with A.workprec(prec):
        encb = [A.ball(lo, hi) for lo, hi in enc]
        _, _, _, rr = _lgh_arb(encb, X, y, lam, Dm, k, d, arb, hess=False)
        m_lo, m_hi = _margin(X, lam, patterns, rr, arb, A)
        # a kink pair (j, l): x_l inactive for L_D with w_j·x_l = 0 at x*; L = L_D + (1/n) r_l a_j
        # relu(z) + a_j² relu(z)²/2n ≥ L_D on the box iff r_l a_j ≥ 0 there
        kmin, kmax = math.inf, math.inf
        for j, l in kinks:
            v = rr[l] * encb[j]
            lo_, hi_ = A.arb_bounds(v)
            kmin = min(kmin, lo_)
            kmax = min(kmax, hi_)
    margin = (m_lo, m_hi)
    info = (f"Krawczyk contraction {contraction:.3g}; merged width {k} ({dup} duplicate(s), "
            f"{nzero} zero unit(s), {len(kinks)} kink(s)); Hessian λ_min ∈ [{eig[0]:.4g}, "
            f"{eig[1]:.4g}]; dual margin λ − max σ/n ∈ [{m_lo:.4g}, {m_hi:.4g}]")
    if kinks:
        info += f"; kink factor min r_l a_j ∈ [{kmin:.4g}, ...] (> 0 needed)"
    common = dict(loss=Lb, lam_min=eig, margin=margin, contraction=contraction,
                  center=(am, Wm), **base)
    if eig[1] < 0:
        return StateCertificate("saddle", False, reason="negative Hessian eigenvalue of the "
                                "merged network; " + info, **common)
    if kinks and kmax < 0:
        return StateCertificate("saddle", False, reason="not a local minimum: a unit at a kink "
                                "lowers L at first order by turning towards x_l; " + info,
                                **common)
    if nzero > 0 and m_hi < 0:
        return StateCertificate("saddle", False, reason="a zero unit can grow (dual margin < 0); "
                                + info, **common)
    if kinks and not kmin > 0:
        return StateCertificate("undecided", False, reason="kink factor not certified positive; "
                                + info, **common)
    if eig[0] > 0 and nzero == 0:
        return StateCertificate("local_min", dup == 0,
                                reason="local minimum; " + info, **common)
    if eig[0] > 0:
        return StateCertificate("critical", False, reason="certified critical point of the merged "
                                "network; the zero units' dual margin is not certainly negative "
                                "(a local minimum iff the point is a global minimum); " + info,
                                **common)
    return StateCertificate("undecided", False, reason="eigenvalue bracket contains 0; " + info,
                            **common)


def _margin(X, lam, patterns, rr, arb, A):
    """Bracket of λ − max_k σ_k(r)/n for the residual enclosure ``rr`` (list of arb): the upper
    end from exact directions u ∈ C_k, the lower end from the NNLS bound (module docstring)."""
    n, d = X.shape
    smax_up, smax_lo = 0.0, 0.0
    rf = np.array([float(v.mid()) for v in rr])
    for Dk, wit in zip(patterns.D, patterns.witness):
        if not Dk.any():
            continue
        g = [sum((arb(float(X[i, e])) * rr[i] for i in range(n) if Dk[i]), arb(0))
             for e in range(d)]
        smax_up = max(smax_up, _sigma_upper(X, Dk, g, arb, A))
        _, u = E.sigma_lower(X, Dk, wit, (Dk[:, None] * X).T @ rf)
        if u is not None:   # a rigorous lower bound from the exact direction u ∈ C_k
            gu = sum((g[e] * arb(float(u[e])) for e in range(d)), arb(0))
            nu = sum((arb(float(t)) ** 2 for t in u), arb(0)).sqrt()
            smax_lo = max(smax_lo, A.lower(abs(gu) / nu))
    lamb = arb(float(lam))
    return A.lower(lamb - arb(smax_up) / n), A.upper(lamb - arb(smax_lo) / n)


def _zero_network(X, y, lam, patterns, prec, base):
    n, d = X.shape
    with A.workprec(prec):
        rr = [-arb(float(v)) for v in y]
        m_lo, m_hi = _margin(X, lam, patterns, rr, arb, A)
        L = arb(0)
        for v in y:
            L += arb(float(v)) ** 2
        L = L / (2 * n)
    Lb = (A.lower(L), A.upper(L))
    if m_hi < 0:
        return StateCertificate("saddle", False, Lb, "θ = 0 and a unit can grow (dual margin < 0)",
                                margin=(m_lo, m_hi), **base)
    return StateCertificate("critical", False, Lb, "θ = 0; dual margin not certainly negative",
                            margin=(m_lo, m_hi), **base)


def _krawczyk(X, y, lam, xf, Dm, m, d, r, prec, arb, arb_mat, A, kinks=()):
    n = X.shape[0]
    P = len(xf)
    _, _, Hf = E.loss_grad_hessian(X, y, lam, xf[:m], xf[m:].reshape(m, d))
    try:
        Yf = np.linalg.inv(Hf)
    except np.linalg.LinAlgError:
        return ("fail", "the Hessian at the centre is singular (degenerate critical point)")
    if not np.all(np.isfinite(Yf)):
        return ("fail", "the Hessian at the centre is singular (degenerate critical point)")
    with A.workprec(prec):
        xh = [arb(float(t)) for t in xf]
        box = [xh[i] + arb(0, r) for i in range(P)]
        # pre-activation signs certain on the box: the loss is the region's polynomial there
        for j in range(m):
            for i in range(n):
                if (j, i) in kinks:
                    continue
                z = sum((arb(float(X[i, e])) * box[m + j * d + e] for e in range(d)), arb(0))
                if z.contains(0):
                    return ("fail", f"refused: the box meets the kink w_{j}·x_{i} = 0 (unit "
                            f"{j} on a region boundary); pre-activation {z}")
                if (z > 0) != bool(Dm[j, i]):
                    return ("fail", "pattern mismatch")
        Lp, gp, _, _ = _lgh_arb(xh, X, y, lam, Dm, m, d, arb, hess=False)
        _, gX, HX, _ = _lgh_arb(box, X, y, lam, Dm, m, d, arb, hess=True)
        nz = [i for i in range(P) if not gX[i].contains(0)]
        if nz:
            return ("fail", f"no critical point in the box: ∂L/∂θ_{nz[0]} ≠ 0 on it "
                    f"({gX[nz[0]]}); the state is not near a critical point")
        Y = A.mat_from_array(Yf)
        HXm = arb_mat(HX)
        gcol = arb_mat([[v] for v in gp])
        Rm = A.mat_from_array(np.eye(P)) - Y * HXm
        dcol = arb_mat([[arb(0, r)] for _ in range(P)])
        Kd = -(Y * gcol) + Rm * dcol
        kmax = max(A.upper(abs(Kd[i, 0])) for i in range(P))
        contraction = kmax / r
        if not contraction < 1.0:
            return ("fail", f"Krawczyk failed: contraction {contraction:.3g} ≥ 1")
        enc = [A.arb_bounds(xh[i] + Kd[i, 0]) for i in range(P)]
        quad = (Kd.transpose() * HXm * Kd)[0, 0]
        Lstar = Lp - quad / 2
        Lb = (A.lower(Lstar), A.upper(Lstar))
        S = arb_mat(P, P)
        for i in range(P):
            for j in range(P):
                S[i, j] = HXm[i, j] if i == j else HXm[i, j].intersection(HXm[j, i])
        lo_e, hi_e, _, _ = A.sym_eig_enclosure(S)
    return ("ok", Lb, (float(lo_e[-1]), float(hi_e[-1])), contraction, enc, list(kinks))
