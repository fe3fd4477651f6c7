"""Moment dispatcher: every population quantity reduces to scalar pair moments (DESIGN §3).

A *unit set* is a family of ridge units φ(α θ·x + β).  Student neurons form one set; the
teacher's units another.  Pairs of piecewise-linear (PL) units use the closed forms of
:mod:`popdyn._kernels.plmoments`; any pair with a smooth side, and the non-PL part of a teacher
link, use Mehler series of normalized Hermite coefficients (:mod:`popdyn._hermite`), with an
entrywise error estimate carried along in ``err*`` arrays (truncation tails + rounding, from
:func:`popdyn._hermite.mehler_moment`; ``inf`` means the tails could not bound it).

This is the engine layer over the pure kernels: unit sets and their pair geometry, the Hermite
coefficient policy (orders and targets of teacher links) and the pair rules by unit kinds.
"""
from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass

import numpy as np

from ._hermite import Tails, unit_coefficients
from ._hermite import mehler_moment_internal as mehler_moment
from ._kernels import hermite as _kh
from ._kernels import mehler as _km
from ._kernels import plmoments as _pl
from ._kernels.geometry import pair_geometry

# tolerances of the closed-form kernels, always passed explicitly (numba dispatches defaulted
# arguments through its slow generic path; STYLE item 3: every tolerance a parameter)
_PL_TOLS = (_pl.RTOL, _pl.ATOL, _pl.QTOL, _pl.MAXINT)


# ---------------------------------------------------------------------------- Hermite paths
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


@dataclass
class UnitSet:
    """Ridge units φ_k(α_k θ_k·x + β_k).

    kind "pl": φ = p·relu + q·id (arrays p, q);  "smooth": activation kernel ``code``;
    "link": an additive teacher link (PL part link.p, link.q plus a Hermite part), α = 1, β = 0.
    """

    kind: str
    al: np.ndarray
    be: np.ndarray
    theta: np.ndarray
    p: np.ndarray | None = None
    q: np.ndarray | None = None
    code: int = 0
    link: object = None

    @property
    def n(self) -> int:
        return self.al.shape[0]

    @property
    def ok(self) -> np.ndarray:
        return self.al > 0


def student_units(student, params) -> UnitSet:
    W = params.W
    al = np.sqrt(np.einsum("ij,ij->i", W, W))
    theta = np.zeros_like(W)
    nz = al > 0
    theta[nz] = W[nz] / al[nz, None]
    be = params.b if student.bias else np.zeros(student.m)
    act = student.act
    m = student.m
    if act.kind == "pl":
        return UnitSet("pl", al, np.ascontiguousarray(be, dtype=np.float64), theta,
                       np.full(m, act.p), np.full(m, act.q))
    return UnitSet("smooth", al, np.ascontiguousarray(be, dtype=np.float64), theta, code=act.code)


#: the engine's per-teacher cache (teachers are immutable and never hold it themselves)
_TEACHER_CACHE = weakref.WeakKeyDictionary()


def teacher_cache(teacher) -> dict:
    """The engine's cache of what it derives from ``teacher`` (exact moments, Hermite terms):
    kept here, keyed by the teacher object, and dropped with it."""
    c = _TEACHER_CACHE.get(teacher)
    if c is None:
        c = _TEACHER_CACHE[teacher] = {}
    return c


@dataclass
class Moments:
    """Student–student moments (C, B, A, D; μ0, μ1, μ2), student–teacher cross moments
    (Ct, Bt, At, Dt), their entrywise error estimates, and the student directions ``theta``."""

    C: np.ndarray
    mu0: np.ndarray
    Ct: np.ndarray
    B: np.ndarray | None = None
    A: np.ndarray | None = None
    D: np.ndarray | None = None
    mu1: np.ndarray | None = None
    mu2: np.ndarray | None = None
    Bt: np.ndarray | None = None
    At: np.ndarray | None = None
    Dt: np.ndarray | None = None
    theta: np.ndarray | None = None
    errC: np.ndarray | None = None
    errCt: np.ndarray | None = None
    errmu0: np.ndarray | None = None
    order: int | None = None


# ---------------------------------------------------------------------------- pair families
def _pl_self(u: UnitSet):
    m = u.n
    R, OMR, OPR = geometry(u, u)
    C = np.empty((m, m)); B = np.empty((m, m)); A = np.empty((m, m)); D = np.empty((m, m))
    _pl.pl_self_moments(u.p, u.q, u.al, u.be, R, OMR, OPR, C, B, A, D, *_PL_TOLS)
    mu0 = np.empty(m); mu1 = np.empty(m); mu2 = np.empty(m)
    _pl.pl_first_moments(u.p, u.q, u.al, u.be, mu0, mu1, mu2)
    return C, B, A, D, mu0, mu1, mu2


def _pl_pair(u1: UnitSet, u2: UnitSet, p2=None, q2=None):
    R, OMR, OPR = geometry(u1, u2)
    shape = R.shape
    C = np.empty(shape); B = np.empty(shape); A = np.empty(shape); D = np.empty(shape)
    _pl.pl_pair_moments(u1.p, u1.q, u1.al, u1.be,
                        u2.p if p2 is None else p2, u2.q if q2 is None else q2, u2.al, u2.be,
                        R, OMR, OPR, C, B, A, D, *_PL_TOLS)
    return C, B, A, D


def _first_moments_from_coeffs(cs):
    return cs.S[:, 0].copy(), cs.Dd[:, 0].copy(), cs.Dd2[:, 0].copy()


def moments(student, params, teacher, *, rtol: float = 1e-10, grad: bool = True,
            cross: bool = True) -> Moments:
    """All moments the objective and its gradient need (see :mod:`popdyn.objective`)."""
    su = student_units(student, params)
    m = su.n
    order = None
    if su.kind == "pl":
        C, B, A, D, mu0, mu1, mu2 = _pl_self(su)
        errC = np.zeros((m, m)); errmu0 = np.zeros(m)
    else:
        (C, B, A, D, mu0, mu1, mu2, errC, errmu0, order) = smooth_self(su, rtol)
    M = Moments(C=C, mu0=mu0, Ct=np.zeros((m, 0)), B=B, A=A, D=D, mu1=mu1, mu2=mu2,
                theta=su.theta, errC=errC, errCt=np.zeros((m, 0)), errmu0=errmu0, order=order)
    if not cross:
        return M
    Ct, Bt, At, Dt, errCt, order_t = teacher.cross(su, rtol)
    M.Ct, M.Bt, M.At, M.Dt, M.errCt = Ct, Bt, At, Dt, errCt
    if order_t is not None:
        M.order = max(order or 0, order_t)
    return M


def value_moments(student, params, teacher, *, rtol: float = 1e-10) -> Moments:
    """The moments of the diagnostics -- C, B, μ0 and the cross values Ct (AGOP and refit
    problems) -- each bit-identical to the same entry of :func:`moments` with ``grad=False``.

    For a piecewise-linear student against an additive teacher link only the value moments Ct
    of the link's Hermite part are evaluated (no derivative moments, no error estimates); every
    other pairing is delegated to :func:`moments`.  Fields other than C, B, μ0, Ct and theta
    may be None; ``errC``/``errCt`` are not computed on the fast path.
    """
    su = student_units(student, params)
    tu = teacher.units()
    if su.kind != "pl" or tu is None or tu.kind != "link":
        return moments(student, params, teacher, rtol=rtol, grad=False)
    g = tu.link
    herm = bool(np.any(g.coeffs != 0.0))
    if herm and not (np.all(np.isfinite(su.al)) and np.all(np.isfinite(su.be))):
        return moments(student, params, teacher, rtol=rtol, grad=False)   # raises there
    m, k = su.n, tu.n
    C, B, A, D, mu0, mu1, mu2 = _pl_self(su)
    # the Ct of cross_moments, term by term (same operations, so the same rounding)
    Ct = np.zeros((m, k))
    if g.p != 0.0 or g.q != 0.0:
        Ct = _pl_pair(su, tu, np.full(k, g.p), np.full(k, g.q))[0]
    if herm:
        Ct = Ct + pl_vs_link_values(su, tu)
    return Moments(C=C, mu0=mu0, Ct=Ct, B=B, A=A, D=D, mu1=mu1, mu2=mu2, theta=su.theta)


def cross_moments(su: UnitSet, tu: UnitSet, rtol: float):
    """Student units × teacher units: (Ct, Bt, At, Dt, errCt, order)."""
    m, k = su.n, tu.n
    if su.kind == "pl" and tu.kind == "pl":
        Ct, Bt, At, Dt = _pl_pair(su, tu)
        return Ct, Bt, At, Dt, np.zeros((m, k)), None
    if su.kind == "pl" and tu.kind == "link":
        g = tu.link
        Ct = np.zeros((m, k)); Bt = np.zeros((m, k)); At = np.zeros((m, k)); Dt = np.zeros((m, k))
        err = np.zeros((m, k))
        order = None
        if g.p != 0.0 or g.q != 0.0:
            Ct, Bt, At, Dt = _pl_pair(su, tu, np.full(k, g.p), np.full(k, g.q))
        if np.any(g.coeffs != 0.0):
            c2, b2, a2, d2, e2, order = pl_vs_link_hermite(su, tu, rtol)
            Ct = Ct + c2; Bt = Bt + b2; At = At + a2; Dt = Dt + d2; err = err + e2
        return Ct, Bt, At, Dt, err, order
    return hermite_cross(su, tu, rtol)


def teacher_self_moments(teacher):
    """(μ, C) of a teacher network's units: E[σ*_k] and E[σ*_k σ*_l]."""
    tu = teacher.units()
    if tu.kind == "pl":
        C, B, A, D, mu0, mu1, mu2 = _pl_self(tu)
        return mu0, C
    C, B, A, D, mu0, mu1, mu2, errC, errmu0, order = smooth_self(tu, 1e-13)
    return mu0, C
