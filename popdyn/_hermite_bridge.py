"""Hermite (Mehler-series) paths of the moment dispatcher (see :mod:`popdyn._moments`).

Used for every pair with a smooth side and for the non-piecewise-linear part of teacher links.
Each moment comes with an entrywise error estimate from :func:`popdyn._hermite.mehler_moment`
(truncation tails + rounding); ``inf`` means the tails could not bound it.
"""
from __future__ import annotations

import functools

import numpy as np

from ._hermite import Tails, unit_coefficients
from ._hermite import mehler_moment_internal as mehler_moment
from ._kernels import hermite as _kh
from ._kernels import mehler as _km
from ._kernels.geometry import pair_geometry


def geometry(u1, u2):
    """(R, 1 − R, 1 + R) of two unit sets (ρ_ij = θ_i·θ_j with the complements computed
    accurately by :func:`popdyn._kernels.geometry.pair_geometry`)."""
    R = np.ascontiguousarray(u1.theta @ u2.theta.T)
    OMR = np.empty_like(R)
    OPR = np.empty_like(R)
    pair_geometry(u1.theta, u1.ok, u2.theta, u2.ok, R, OMR, OPR)
    return R, OMR, OPR


def _geometry(u1, u2):
    return geometry(u1, u2)[0]


def _coeffs(u, n, rtol):
    """UnitCoefficients of a 'pl' or 'smooth' UnitSet (PL sets use order ``n``)."""
    if u.kind == "pl":
        return unit_coefficients("pl", u.al, u.be, p=float(u.p[0]), q=float(u.q[0]), n=max(int(n), 1),
                                 rtol=rtol)
    return unit_coefficients("smooth", u.al, u.be, code=u.code, rtol=rtol)


_ERF_CODE = 4


def erf_B_closed(u):
    """B_ij = E[erf′(T_i) erf′(T_j)] of an erf unit set in closed form (issue 19).

    erf′(t) = (2/√π)e^{−t²} is Gaussian, so for (T_i, T_j) jointly normal with means β, variances
    α² and correlation ρ: B = (4/π) det^{−1/2} e^{−q}, det = 1 + 2α_i² + 2α_j² +
    4α_i²α_j²(1 − ρ)(1 + ρ), q·det = β_i² + β_j² + 2(α_jβ_i ∓ α_iβ_j)² ± 4α_iα_jβ_iβ_j(1 ∓ ρ)
    (upper signs for ρ ≥ 0), written with the engine's exact 1 ∓ ρ so that nearly parallel and
    antiparallel units at large |w| keep their relative accuracy (the Mehler series converges
    like (2α²/(1 + 2α²))ⁿ there: at |w| = 20 it was 1.4e−3 off).
    """
    R, OMR, OPR = geometry(u, u)
    a = np.asarray(u.al, dtype=np.float64)
    b = np.asarray(u.be, dtype=np.float64)
    ai, aj = a[:, None], a[None, :]
    bi, bj = b[:, None], b[None, :]
    det = 1.0 + 2.0 * ai * ai + 2.0 * aj * aj + 4.0 * (ai * aj) ** 2 * (OMR * OPR)
    pos = R >= 0
    qp = bi * bi + bj * bj + 2.0 * (aj * bi - ai * bj) ** 2 + 4.0 * ai * aj * bi * bj * OMR
    qm = bi * bi + bj * bj + 2.0 * (aj * bi + ai * bj) ** 2 - 4.0 * ai * aj * bi * bj * OPR
    q = np.where(pos, qp, qm) / det
    B = (4.0 / np.pi) * np.exp(-q) / np.sqrt(det)
    return 0.5 * (B + B.T)


def smooth_self(u, rtol):
    """Self moments of a smooth unit set: (C, B, A, D, μ0, μ1, μ2, errC, errμ0, order).

    For erf units B is the closed form of :func:`erf_B_closed` (exact at every |w| and ρ)."""
    uc = _coeffs(u, 0, rtol)
    R = _geometry(u, u)
    C, eC = mehler_moment(uc.S, uc.S, uc.tails_S, uc.tails_S, R)
    if u.code == _ERF_CODE:
        B = erf_B_closed(u)
    else:
        B, _ = mehler_moment(uc.Dd, uc.Dd, uc.tails_Dd, uc.tails_Dd, R, False)
    A, _ = mehler_moment(uc.Dd2, uc.S, uc.tails_Dd2, uc.tails_S, R, False)
    D, _ = mehler_moment(uc.Dd, uc.S, uc.tails_Dd, uc.tails_S, R, False)
    return (C, B, A, D, uc.S[:, 0].copy(), uc.Dd[:, 0].copy(), uc.Dd2[:, 0].copy(), eC,
            np.asarray(uc.tails_S.err, dtype=float).copy(), uc.N)


def _link_order(g) -> int:
    """Truncation order for a link's Hermite part: its degree, or the first N whose ℓ¹ tails
    (value and derivative) are below 1e−17 of the part's RMS size (at most N_tab)."""
    N_tab = g.coeffs.shape[0] - 1
    if g.is_polynomial:
        return N_tab
    target = _link_target(g)
    ok = np.flatnonzero((g.l1 <= target) & (g.dl1 <= target))
    return int(ok[0]) if ok.size else N_tab


def _link_target(g) -> float:
    """1e−17 × max(1, RMS of the link's Hermite part, RMS of its derivative): the level at which
    a link's series are truncated."""
    return 1e-17 * max(1.0, float(np.sqrt(g.h_second_moment)), float(np.sqrt(g.h_d_second_moment)))


def _link_coeffs(g, N):
    """(H, dH, nH, nd): the link's Hermite coefficients and its derivative's, cut or zero-padded
    to order N (nH, nd: the last stored orders used)."""
    H = np.zeros(N + 1)
    dH = np.zeros(N + 1)
    nH = min(N, g.coeffs.shape[0] - 1)
    H[:nH + 1] = g.coeffs[:nH + 1]
    nd = min(N, g.dcoeffs.shape[0] - 1)
    dH[:nd + 1] = g.dcoeffs[:nd + 1]
    return H, dH, nH, nd


def _link_seqs(g, k, N, include_pl):
    """(S, tails_S, Dd, tails_Dd) rows for k copies of link g up to order N (α = 1, β = 0)."""
    N = min(N, g.coeffs.shape[0] - 1) if not g.is_polynomial else N
    H, dH, nH, nd = _link_coeffs(g, N)
    if g.is_polynomial or nH == g.coeffs.shape[0] - 1 and g.t2[-1] == 0:
        t2 = sup = l1 = 0.0
    else:
        t2, l1 = float(g.t2[nH]), float(g.l1[nH])
        sup = min(np.sqrt(t2), l1)
    if g.is_polynomial or nd == g.dcoeffs.shape[0] - 1 and g.dt2[-1] == 0:
        dt2 = dsup = dl1 = 0.0
    else:
        dt2, dl1 = float(g.dt2[nd]), float(g.dl1[nd])
        dsup = min(np.sqrt(dt2), dl1)
    tS = Tails(np.full(k, t2), np.full(k, sup), np.full(k, l1), np.zeros(k), {})
    tD = Tails(np.full(k, dt2), np.full(k, dsup), np.full(k, dl1), np.zeros(k), {})
    S = np.tile(H, (k, 1))
    Dd = np.tile(dH, (k, 1))
    if include_pl and (g.p != 0.0 or g.q != 0.0):
        pl = unit_coefficients("pl", np.ones(1), np.zeros(1), p=g.p, q=g.q, n=max(N, 1))
        S = S + pl.S[:, :N + 1]
        Dd = Dd + pl.Dd[:, :N + 1]
        tS = _sum_tails(tS, pl.tails_S, k)
        tD = _sum_tails(tD, pl.tails_Dd, k)
    return S, tS, Dd, tD


def _sum_tails(a: Tails, b: Tails, k: int) -> Tails:
    bt2 = np.broadcast_to(b.t2, (k,))
    return Tails((np.sqrt(a.t2) + np.sqrt(bt2)) ** 2, a.sup + np.broadcast_to(b.sup, (k,)),
                 a.l1 + np.broadcast_to(b.l1, (k,)), a.err + np.broadcast_to(b.err, (k,)), {})


def pl_vs_link_hermite(su, tu, rtol):
    """PL student units × the Hermite part of an additive link: (Ct, Bt, At, Dt, err, order)."""
    g = tu.link
    N = _link_order(g)
    uc = _coeffs(su, N, rtol)
    S, tS, Dd, tD = _link_seqs(g, tu.n, N, include_pl=False)
    R = _geometry(su, tu)
    return _cross_from(uc, S, tS, Dd, tD, R) + (N,)


@functools.lru_cache(maxsize=64)
def _link_values(g, k: int):
    """(N, S): the truncation order :func:`_link_order` of link ``g`` and the value rows of its
    Hermite part, k copies (the ``S`` of :func:`_link_seqs` without the PL part).
    Teacher-only: cached per link object (links are immutable) and k; callers must not modify
    ``S`` (it is left writable so that the kernels see their usual array type)."""
    N = _link_order(g)
    S = _link_seqs(g, k, N, include_pl=False)[0]
    return N, S


def pl_vs_link_values(su, tu):
    """Ct of :func:`pl_vs_link_hermite` alone (value moments E[σ_i H_t], no error estimate):
    the same Mehler sum of the same coefficient rows, so bit-identical to its ``Ct``."""
    N, Y = _link_values(tu.link, tu.n)
    n = max(int(N), 1)               # the PL student rows' order, as in _coeffs
    m = su.n
    X = np.empty((m, n + 1))
    _kh.pl_coeffs(float(su.p[0]), float(su.q[0]), su.al, su.be, X, np.empty((m, n + 1)),
                  np.empty((m, n + 1)))
    Nc = min(X.shape[1], Y.shape[1]) - 1     # common order (mehler_moment truncates)
    if X.shape[1] - 1 > Nc:
        X = np.ascontiguousarray(X[:, :Nc + 1])
    if Y.shape[1] - 1 > Nc:
        Y = np.ascontiguousarray(Y[:, :Nc + 1])
    R = np.clip(_geometry(su, tu), -1.0, 1.0)
    val = np.empty(R.shape)
    _km.mehler(X, Y, R, val)
    return val


def _cross_from(uc, S, tS, Dd, tD, R):
    Ct, eC = mehler_moment(uc.S, S, uc.tails_S, tS, R)
    Dt, _ = mehler_moment(uc.Dd, S, uc.tails_Dd, tS, R, False)
    At, _ = mehler_moment(uc.Dd2, S, uc.tails_Dd2, tS, R, False)
    Bt, _ = mehler_moment(uc.Dd, Dd, uc.tails_Dd, tD, R, False)
    return Ct, Bt, At, Dt, eC


def hermite_cross(su, tu, rtol):
    """Student × teacher units when either side is smooth: (Ct, Bt, At, Dt, err, order)."""
    R = _geometry(su, tu)
    # a smooth side paired with a slowly decaying PL/link side must converge further: the
    # truncation error is ~ sqrt(t2_pl * t2_smooth) at |rho| -> 1 (PL tails decay algebraically)
    pl_partner = tu.kind in ("pl", "link")
    if su.kind == "smooth":
        us = _coeffs(su, 0, min(rtol, 1e-16) if pl_partner else rtol)
        N = us.N
    else:
        us = None
        N = None
    if tu.kind == "link":
        g = tu.link
        if N is None:  # PL student: cannot happen (handled in _moments), keep for completeness
            N = _link_order(g)
        S, tS, Dd, tD = _link_seqs(g, tu.n, N, include_pl=True)
    else:
        if tu.kind == "smooth":
            ut = _coeffs(tu, 0, min(rtol, 1e-16) if su.kind == "pl" else rtol)
            N = max(N or 0, ut.N)
        else:
            ut = None
        if us is None:
            us = _coeffs(su, N, rtol)
        if ut is None:
            ut = _coeffs(tu, N, rtol)
        S, tS, Dd, tD = ut.S, ut.tails_S, ut.Dd, ut.tails_Dd
    if us is None:
        us = _coeffs(su, N, rtol)
    return _cross_from(us, S, tS, Dd, tD, R) + (N,)
