"""Moment dispatcher: every population quantity reduces to scalar pair moments (docs/design.md §3).

A *unit set* is a family of ridge units φ(α θ·x + β).  Student neurons form one set; the
teacher's units another.  Pairs of piecewise-linear (PL) units use the closed forms of
:mod:`popdyn._kernels.plmoments`; any pair with a smooth side, and the non-PL part of a teacher
link, use Mehler series of normalized Hermite coefficients (:mod:`popdyn._hermite`), with an
entrywise error estimate carried along in ``err*`` arrays (truncation tails + rounding, from
:func:`popdyn._hermite.mehler_moment`; ``inf`` means the tails could not bound it).

This is the engine layer over the pure kernels: unit sets and their pair geometry, the Hermite
coefficient policy (orders and targets of teacher links) and the pair rules by unit kinds.
One path per quantity: a relu / leaky-relu student against a PL-network or
additive-link teacher is evaluated by :func:`popdyn._kernels.fused.pl_moments`, the kernel of
the fused GD step itself, and every PL-unit × link Mehler sum by
:func:`popdyn._kernels.mehler.pl_link_sums` on :func:`link_tables` (each unit truncated at its
own order, the dropped terms bounded and added to ``errCt``), so the general and the fused
paths agree bit for bit.  :func:`moments` returns one :class:`Moments` with what ``need`` asks
for (values, derivative moments of the gradient, error estimates).
"""
from __future__ import annotations

import functools
import math
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ._hermite import Tails, unit_coefficients
from ._hermite import mehler_moment_internal as mehler_moment
from ._kernels import fused as _fk
from ._kernels import mehler as _km
from ._kernels import plmoments as _pl
from ._kernels.geometry import pair_geometry
from .threads import kernel_blas

if TYPE_CHECKING:
    from .links import Link

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
    """B_ij = E[erf′(T_i) erf′(T_j)] of an erf unit set in closed form.

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


def smooth_self(u, rtol, errors: bool = False):
    """Self moments of a smooth unit set: (C, B, A, D, μ0, μ1, μ2, errC, errμ0, order).

    For erf units B is the closed form of :func:`erf_B_closed` (exact at every |w| and ρ).
    With ``errors`` an 11th element is appended: the dict of the error estimates of the
    gradient's moments, ``{"B", "A", "D", "mu1", "mu2"}`` (:func:`popdyn._hermite.mehler_moment`:
    truncation tails of both sides, coefficient errors and rounding; B of erf units: 0 beyond
    the rounding floor of the contract, a closed form)."""
    uc = _coeffs(u, 0, rtol)
    R = _geometry(u, u)
    # every estimate takes the root-sum-square rounding term and ℓ² coefficient errors
    # (:func:`popdyn._hermite.mehler_moment_internal`, ``rss``): the loss's C as the gradient's
    # moments (the worst-case Horner bound 4(N + 1)u·Σ|c_n|² alone is 1.8e−12·E[σ²] on the
    # diagonal at the order cap N = 4096, ~10³ times the error measured there)
    C, eC = mehler_moment(uc.S, uc.S, uc.tails_S, uc.tails_S, R, True, True)
    if u.code == _ERF_CODE:
        B = erf_B_closed(u)
        eB = np.zeros_like(B) if errors else None
    else:
        B, eB = mehler_moment(uc.Dd, uc.Dd, uc.tails_Dd, uc.tails_Dd, R, errors, errors)
    A, eA = mehler_moment(uc.Dd2, uc.S, uc.tails_Dd2, uc.tails_S, R, errors, errors)
    D, eD = mehler_moment(uc.Dd, uc.S, uc.tails_Dd, uc.tails_S, R, errors, errors)
    out = (C, B, A, D, uc.S[:, 0].copy(), uc.Dd[:, 0].copy(), uc.Dd2[:, 0].copy(), eC,
           np.asarray(uc.tails_S.err, dtype=float).copy(), uc.N)
    if not errors:
        return out
    return out + ({"B": eB, "A": eA, "D": eD,
                   "mu1": np.asarray(uc.tails_Dd.err, dtype=float).copy(),
                   "mu2": np.asarray(uc.tails_Dd2.err, dtype=float).copy()},)


def pl_partner_tol(rtol: float) -> float:
    """Series tolerance of a smooth unit set paired with a piecewise-linear (or link) partner.

    The partner's coefficients decay algebraically (relu: n^{-5/4}; its derivative, a step:
    n^{-3/4}), so the truncation error of such a pair is about r^{N+1}·sup|partner|·ℓ¹(smooth
    tail) ~ √(t2 of the smooth side): the smooth side must converge to about the *square* of the
    requested accuracy.  ``min(1e−16, 10⁴·rtol²)``: 1e−16 at every rtol >= 1e−10 (the level used
    so far), then rtol² × 10⁴ (1e−22 at rtol = 1e−13), so that a refinement of the series
    tolerance below 1e−10 reaches these pairs too.
    """
    return min(1e-16, 1e4 * float(rtol) * float(rtol))


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


@functools.lru_cache(maxsize=64)
def link_tables(g):
    """(N, H, dH, L1, ttol): the tables of the Hermite part of link ``g`` that every PL student
    × link cross moment is evaluated from (:func:`popdyn._kernels.mehler.pl_link_sums`, by the
    engine and by the fused GD kernel alike): the truncation order :func:`_link_order`, the
    coefficients of the Hermite part and of its derivative cut at N (empty when the link has no
    Hermite part), L1[n] = Σ_{n < n' ≤ N} max(|H[n']|, |dH[n']|) and the per-unit truncation
    target ``ttol`` = :func:`_link_target`.  Cached per link object (links are immutable);
    callers must not modify the arrays (left writable: the kernels' usual array type)."""
    N = _link_order(g)
    if np.any(g.coeffs != 0.0):
        H, dH, _, _ = _link_coeffs(g, N)
    else:
        H = dH = np.zeros(0)
    big = np.maximum(np.abs(H), np.abs(dH))
    L1 = np.concatenate([np.cumsum(big[::-1])[::-1][1:], [0.0]]) if H.size else H
    return N, H, dH, L1, _link_target(g)


def _finite_units(su) -> bool:
    return bool(np.all(np.isfinite(su.al)) and np.all(np.isfinite(su.be)))


def _link_error(su, tu, N, R, rtol, trunc):
    """errCt of PL student units × the Hermite part of a link: the Mehler error estimate of the
    sums to the link's order N (:func:`popdyn._hermite.mehler_moment`: the tails of both
    sides and rounding) plus ``trunc``, the bound on the terms the per-unit orders drop."""
    uc = _coeffs(su, N, rtol)
    S, tS, _, _ = _link_seqs(tu.link, tu.n, N, include_pl=False)
    _, eC = mehler_moment(uc.S, S, uc.tails_S, tS, R)
    return eC + trunc[:, None]


def _link_grad_errors(su, tu, N, R, rtol, trunc, out):
    """Error estimates of Bt, At, Dt of PL student units × the Hermite part of a link (into the
    dict ``out``): the Mehler estimates of the sums Σ Dd_i dH ρⁿ, Σ Dd2_i H ρⁿ, Σ Dd_i H ρⁿ to
    the link's order N (tails of both sides, coefficient errors, rounding) plus ``trunc``, the
    bound on the terms the per-unit orders drop (it bounds every coefficient kind)."""
    uc = _coeffs(su, N, rtol)
    S, tS, Dd, tD = _link_seqs(tu.link, tu.n, N, include_pl=False)
    _, eB = mehler_moment(uc.Dd, Dd, uc.tails_Dd, tD, R, True, True)
    _, eA = mehler_moment(uc.Dd2, S, uc.tails_Dd2, tS, R, True, True)
    _, eD = mehler_moment(uc.Dd, S, uc.tails_Dd, tS, R, True, True)
    t = trunc[:, None]
    out.update(Bt=eB + t, At=eA + t, Dt=eD + t)


def pl_vs_link_hermite(su, tu, rtol, grad: bool = True, errors: bool = True):
    """PL student units × the Hermite part of an additive link: (Ct, Bt, At, Dt, err, order),
    by :func:`popdyn._kernels.mehler.pl_link_sums` on :func:`link_tables` (without ``grad``
    Bt, At, Dt are zero; without ``errors`` err is None)."""
    if not _finite_units(su):
        raise ValueError("the student units must be finite (`al`, `be`)")
    N, H, dH, L1, ttol = link_tables(tu.link)
    R = _geometry(su, tu)
    m, k = su.n, tu.n
    Ct = np.zeros((m, k)); Bt = np.zeros((m, k)); At = np.zeros((m, k)); Dt = np.zeros((m, k))
    trunc = np.zeros(m)
    _km.pl_link_sums(float(su.p[0]), float(su.q[0]), su.al, su.be, R, H, dH, L1, ttol,
                     bool(grad), Ct, Bt, At, Dt, trunc)
    err = _link_error(su, tu, N, R, rtol, trunc) if errors is not False else None
    if isinstance(errors, dict):
        _link_grad_errors(su, tu, N, R, rtol, trunc, errors)
    return Ct, Bt, At, Dt, err, N


def _cross_from(uc, S, tS, Dd, tD, R, errors=None, cap=None):
    """(Ct, Bt, At, Dt, errCt) of the coefficient rows ``uc`` against (S, Dd); with a dict
    ``errors`` its entries "Bt", "At", "Dt" receive the error estimates of those moments;
    ``cap``: a sharper truncation estimate of Ct (:func:`_link_block_trunc`)."""
    e = errors is not None
    Ct, eC = mehler_moment(uc.S, S, uc.tails_S, tS, R, True, True, cap)
    Dt, eD = mehler_moment(uc.Dd, S, uc.tails_Dd, tS, R, e, e)
    At, eA = mehler_moment(uc.Dd2, S, uc.tails_Dd2, tS, R, e, e)
    Bt, eB = mehler_moment(uc.Dd, Dd, uc.tails_Dd, tD, R, e, e)
    if e:
        errors.update(Bt=eB, At=eA, Dt=eD)
    return Ct, Bt, At, Dt, eC


def hermite_cross(su, tu, rtol, errors=None):
    """Student × teacher units when either side is smooth: (Ct, Bt, At, Dt, err, order).

    A smooth side paired with a PL unit or a link converges to :func:`pl_partner_tol` of
    ``rtol``.  With a dict ``errors`` the error estimates of Bt, At, Dt are stored in it."""
    R = _geometry(su, tu)
    # a smooth side paired with a slowly decaying PL/link side must converge further: the
    # truncation error is ~ sqrt(t2_pl * t2_smooth) at |rho| -> 1 (PL tails decay algebraically)
    pl_partner = tu.kind in ("pl", "link")
    if su.kind == "smooth":
        us = _coeffs(su, 0, pl_partner_tol(rtol) if pl_partner else rtol)
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
            ut = _coeffs(tu, 0, pl_partner_tol(rtol) if su.kind == "pl" else rtol)
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
    cap = _link_block_trunc(us, tu.link, R) if tu.kind == "link" and su.kind == "smooth" \
        else None
    return _cross_from(us, S, tS, Dd, tD, R, errors, cap) + (N,)


#: blocks of the smooth side's tail in :func:`_link_block_trunc`
_TRUNC_BLOCKS = 8


def _link_block_trunc(uc, g, R):
    """A sharper estimate of the truncation error |Σ_{n>N} X_in Y_n ρ_ijⁿ| of a smooth unit
    row X against an additive link Y (``None`` where it does not apply).

    The plain estimate √(t2_X t2_Y)·|ρ|^{N+1} pairs the whole tail of X with the whole tail of
    Y.  A smooth row's tail is concentrated just past N (its coefficients decay geometrically
    there), while a piecewise-linear link's tail (relu: Y_n² ~ n^{−5/2}) is spread over orders far
    beyond N, so the two tails meet only in their first blocks.  Here the tail of X is split into
    blocks of w = max(8, N/16) orders, its mass t2_X distributed as t2_X(1 − Q)Q^k with Q the
    ratio of X's last two w-blocks of coefficients (the measured decay), and Cauchy–Schwarz is
    applied per block against the link's own block masses (its coefficients to order
    N + 8w, exact, and its Parseval tail beyond); the sum is doubled for the decay that slows
    down past N (exp(−τ√n) tails).  Rows whose last blocks are at the coefficients' noise level
    or do not decrease, and links whose tabulated Hermite part ends before N + 8w, keep the
    plain estimate (``inf`` in the returned array)."""
    X = uc.S
    m, n1 = X.shape
    N = n1 - 1
    w = max(8, N // 16)
    K = _TRUNC_BLOCKS
    N2 = N + K * w
    if N < 2 * w or (not g.is_polynomial and N2 > g.N_tab):
        return None
    y = g.coefficients_full(N2)
    y2 = y * y
    yb = y2[N + 1:].reshape(K, w).sum(axis=1)
    E2 = float(g.second_moment)
    ytail = max(E2 - math.fsum(y2.tolist()), 0.0) + 8.0 * math.sqrt(N2 + 1.0) * 2.0 ** -53 * E2
    t2x = np.asarray(uc.tails_S.t2, dtype=float)
    nu = np.asarray(uc.tails_S.err, dtype=float)
    Bl = np.sum(X[:, N - w + 1:] ** 2, axis=1)
    Be = np.sum(X[:, N - 2 * w + 1:N - w + 1] ** 2, axis=1)
    out = np.full(R.shape, np.inf)
    ar = np.abs(R)
    k = np.arange(K)
    for i in range(m):
        if not (np.isfinite(t2x[i]) and Be[i] > 0.0 and Bl[i] < Be[i]
                and Bl[i] > w * (3.0 * nu[i]) ** 2):
            continue
        Q = Bl[i] / Be[i]
        xk = t2x[i] * (1.0 - Q) * Q ** k
        xr = t2x[i] * Q ** K
        r = ar[i][:, None]
        with np.errstate(under="ignore"):
            s = np.sum(r ** (N + 1 + k * w) * np.sqrt(xk * yb), axis=1)
            s += ar[i] ** (N + 1 + K * w) * math.sqrt(xr * ytail)
        out[i] = 2.0 * s
    return out


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
    link: Link | None = None

    @property
    def n(self) -> int:
        return self.al.shape[0]

    @property
    def ok(self) -> np.ndarray:
        return self.al > 0


def student_units(student, params) -> UnitSet:
    """The student's ridge units, their norms and directions from
    :func:`popdyn._kernels.fused.directions` (the fused kernel's, so both paths see the same
    geometry)."""
    al, theta, _ = _fk.directions(np.ascontiguousarray(params.W, dtype=np.float64))
    be = params.b if student.bias else np.zeros(student.m)
    act = student.act
    m = student.m
    if act.kind == "pl":
        return UnitSet("pl", al, np.ascontiguousarray(be, dtype=np.float64), theta,
                       np.full(m, act.p), np.full(m, act.q))
    return UnitSet("smooth", al, np.ascontiguousarray(be, dtype=np.float64), theta, code=act.code)


#: the engine's per-teacher cache (teachers are immutable and never hold it themselves)
_TEACHER_CACHE: weakref.WeakKeyDictionary[object, dict] = weakref.WeakKeyDictionary()


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
    #: what was asked for (:data:`NEEDS`); fields not asked for may be None
    need: str | None = None
    #: ``need="grad_err"``: the entrywise error estimates of the gradient's moments, a dict with
    #: "B", "A", "D", "mu1", "mu2", "Bt", "At", "Dt" (None: the teacher's cross moments carry no
    #: estimate, e.g. multi-index teachers)
    errg: dict | None = None


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


#: what :func:`moments` can be asked for: values and derivative moments of the gradient with
#: no error estimates ("grad"), the values of the loss with its error estimates ("loss"), the
#: values of the diagnostics (C, B, μ0, Ct: AGOP and refit; no errors, no derivative cross
#: moments) or the student's own moments ("student")
#: ``"grad_err"``: everything of "grad" and "loss" (the same values bit for bit) plus the error
#: estimates of the gradient's moments (``Moments.errg``; the accuracy contract of the gradient)
NEEDS = ("grad", "loss", "values", "student", "grad_err")


def teacher_tables(teacher):
    """The teacher-side tables of :func:`popdyn._kernels.fused.pl_moments` for a PL-network or
    additive-link teacher (None for any other kind): (θ*, ok*, α*, β*, p*, q*, has-PL-part, H,
    dH, L1, ttol, v, α*θ*, E[y], E[y²]), the link's from :func:`link_tables`.  Cached in the
    engine's per-teacher cache."""
    c = teacher_cache(teacher)
    if "pl_tables" in c:
        return c["pl_tables"]
    tu = teacher.units() if hasattr(teacher, "units") else None
    out = None
    if tu is not None and tu.kind in ("link", "pl"):
        k = tu.n
        if tu.kind == "link":
            g = tu.link
            tth = np.ascontiguousarray(teacher.U, dtype=np.float64)
            tal, tbe = np.ones(k), np.zeros(k)
            tp, tq = np.full(k, float(g.p)), np.full(k, float(g.q))
            tpl = g.p != 0.0 or g.q != 0.0
            _, H, dH, L1, ttol = link_tables(g)
            UT = tth
        else:
            tth = np.ascontiguousarray(tu.theta, dtype=np.float64)
            tal = np.ascontiguousarray(tu.al, dtype=np.float64)
            tbe = np.ascontiguousarray(tu.be, dtype=np.float64)
            tp, tq = tu.p.astype(np.float64), tu.q.astype(np.float64)
            tpl = True
            H = dH = L1 = np.zeros(0)
            ttol = 0.0
            UT = np.ascontiguousarray(teacher.theta * teacher.alpha[:, None])
        v = np.ascontiguousarray(teacher.weights, dtype=np.float64)
        out = (tth, tal > 0, tal, tbe, tp, tq, bool(tpl), H, dH, L1, ttol, v, UT,
               float(teacher.mean), float(teacher.second_moment))
    c["pl_tables"] = out
    return out


def _need(need, grad, cross):
    if need is None:
        need = "student" if not cross else ("grad" if grad else "loss")
    if need not in NEEDS:
        raise ValueError(f"`need` must be one of {NEEDS}, got {need!r}")
    return need


def _pl_fast(student, params, teacher, need, rtol):
    """:func:`moments` of a PL student against a PL-network / additive-link teacher: the
    kernel of the fused GD step (:func:`popdyn._kernels.fused.pl_moments`) on the same inputs,
    so its moments are those of the fused path bit for bit; the loss's error estimate from the
    coefficient tails (:func:`_link_error`)."""
    tab = teacher_tables(teacher)
    W = np.ascontiguousarray(params.W, dtype=np.float64)
    b = np.ascontiguousarray(params.b, dtype=np.float64)
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
        return None
    act = student.act
    grad = need in ("grad", "grad_err")
    with kernel_blas(W.shape[0]):
        (al, th, C, B, A, D, mu0, mu1, mu2, Ct, Bt, At, Dt, trunc) = _fk.pl_moments(
            float(act.p), float(act.q), W, b, bool(student.bias), *tab[:11], grad)
    m = student.m
    herm = tab[7].shape[0] > 0
    order = link_tables(teacher.units().link)[0] if herm else None
    M = Moments(C=C, mu0=mu0, Ct=Ct, B=B, A=A, D=D, mu1=mu1, mu2=mu2, theta=th, order=order,
                need=need)
    if grad:
        M.Bt, M.At, M.Dt = Bt, At, Dt
    if need in ("loss", "grad_err"):
        M.errC, M.errmu0 = np.zeros((m, m)), np.zeros(m)
        poly = not herm or teacher.units().link.is_polynomial
        if herm and need == "loss":
            su, tu = student_units(student, params), teacher.units()
            R = _geometry(su, tu)
            M.errCt = _link_error(su, tu, order, R, rtol, trunc)
        else:
            M.errCt = np.zeros(Ct.shape) + trunc[:, None]
    if need == "grad_err":
        # closed forms (PL networks) and link sums to the link table's order N: the terms the
        # per-unit orders drop are bounded by ``trunc``, and those beyond N by E_i·ttol (every
        # unit coefficient is at most E_i, the Cramér bound of pl_link_sums, and the link's
        # ℓ¹ tail beyond N is at most ttol): an a-priori bound, no estimation
        z = np.zeros(m)
        M.errg = {"B": np.zeros((m, m)), "A": np.zeros((m, m)), "D": np.zeros((m, m)),
                  "mu1": z, "mu2": z}
        t = trunc.copy()
        if herm and not poly:
            t = t + pl_unit_bound(act, al, b if student.bias else np.zeros(m)) * tab[10]
        t = np.zeros(Ct.shape) + t[:, None]
        M.errg.update(Bt=t, At=t, Dt=t)
        M.errCt = t
    return M


def pl_unit_bound(act, al, be):
    """E_i = max(α_i, 1)·|p|·K·φ(0)·e^{−h_i²/4} (K = 1.086435 Cramér's constant, h_i = β_i/α_i;
    0 for α_i = 0): the bound on every Hermite coefficient of order >= 2 of the PL units
    p·relu(α_i z + β_i) + q·(α_i z + β_i) and of their derivatives
    (:func:`popdyn._kernels.mehler.pl_link_sums`)."""
    al = np.asarray(al, dtype=float)
    ok = al > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        h = np.where(ok, np.asarray(be, dtype=float) / np.where(ok, al, 1.0), 0.0)
        E = (np.maximum(al, 1.0) * abs(float(act.p)) * 1.086435 / np.sqrt(2.0 * np.pi)
             * np.exp(-0.25 * h * h))
    return np.where(ok, E, 0.0)


def closed_form(student, teacher) -> bool:
    """True when the moments of ``student`` against ``teacher`` are closed forms or link sums
    to the link table's order (a relu / leaky-relu student against a PL-network or
    additive-link teacher, :func:`_pl_fast`): their error is the a-priori bound of
    ``need="grad_err"`` (at most ~1e−17 of the terms), below every rounding floor, so the
    contract of :mod:`popdyn.objective` has nothing to estimate or refine."""
    return (student.act.kind == "pl" and teacher is not None
            and teacher_tables(teacher) is not None)


def _plain_ridge(teacher) -> bool:
    """True when the teacher's cross moments are :func:`cross_moments` of its units (the
    ridge teachers of :mod:`popdyn.teachers` that do not override ``cross``)."""
    # the class that defines ``cross`` is the teacher protocol's base (no import of
    # popdyn.teachers here: it imports this module)
    owner = next((c for c in type(teacher).__mro__ if "cross" in vars(c)), None)
    return (bool(getattr(teacher, "ridge", False))
            and owner is not None and owner.__module__ == "popdyn.teachers._base"
            and teacher.units() is not None)


def moments(student, params, teacher, *, rtol: float = 1e-10, grad: bool = True,
            cross: bool = True, need: str | None = None) -> Moments:
    """The moments of the objective, its gradient and the diagnostics (see
    :mod:`popdyn.objective`), as one :class:`Moments` holding what ``need`` asks for
    (:data:`NEEDS`; default from the older flags: ``cross=False`` → "student", ``grad=False``
    → "loss", else "grad").

    A relu / leaky-relu student against a PL-network or additive-link teacher is evaluated by
    the fused kernel's :func:`popdyn._kernels.fused.pl_moments` (one path for these pairs);
    every other pairing by the unit-set rules below (:func:`cross_moments` and the teacher's
    ``cross``)."""
    need = _need(need, grad, cross)
    if (need != "student" and teacher is not None and student.act.kind == "pl"
            and teacher_tables(teacher) is not None):
        M = _pl_fast(student, params, teacher, need, rtol)
        if M is not None:
            return M
    su = student_units(student, params)
    m = su.n
    order = None
    if su.kind == "pl":
        # the kernel of the fused step (same bits as _pl_fast's student moments)
        with kernel_blas(m):
            _, _, C, B, A, D, mu0, mu1, mu2 = _fk.pl_student_moments(
                float(student.act.p), float(student.act.q),
                np.ascontiguousarray(params.W, dtype=np.float64),
                np.ascontiguousarray(params.b, dtype=np.float64), bool(student.bias))
        errC = np.zeros((m, m)); errmu0 = np.zeros(m)
        errg = {"B": np.zeros((m, m)), "A": np.zeros((m, m)), "D": np.zeros((m, m)),
                "mu1": np.zeros(m), "mu2": np.zeros(m)}
    elif need == "grad_err":
        (C, B, A, D, mu0, mu1, mu2, errC, errmu0, order, errg) = smooth_self(su, rtol, True)
    else:
        (C, B, A, D, mu0, mu1, mu2, errC, errmu0, order) = smooth_self(su, rtol)
    M = Moments(C=C, mu0=mu0, Ct=np.zeros((m, 0)), B=B, A=A, D=D, mu1=mu1, mu2=mu2,
                theta=su.theta, errC=errC, errCt=np.zeros((m, 0)), errmu0=errmu0, order=order,
                need=need)
    if need == "student":
        return M
    if need == "grad_err" and _plain_ridge(teacher):
        # ridge teachers (additive links, networks): their cross moments are cross_moments of
        # their units (popdyn.teachers), here with the gradient's error estimates
        Ct, Bt, At, Dt, errCt, order_t = cross_moments(su, teacher.units(), rtol, errg)
        M.errg = errg
    else:
        Ct, Bt, At, Dt, errCt, order_t = teacher.cross(su, rtol)
    M.Ct, M.Bt, M.At, M.Dt, M.errCt = Ct, Bt, At, Dt, errCt
    if order_t is not None:
        M.order = max(order or 0, order_t)
    return M


def cross_moments(su: UnitSet, tu: UnitSet, rtol: float, errors=None):
    """Student units × teacher units: (Ct, Bt, At, Dt, errCt, order).  With a dict ``errors``
    the error estimates of Bt, At, Dt are stored in it (zeros for closed forms)."""
    m, k = su.n, tu.n
    if errors is not None:
        errors.update(Bt=np.zeros((m, k)), At=np.zeros((m, k)), Dt=np.zeros((m, k)))
    if su.kind == "pl" and tu.kind == "pl":
        Ct, Bt, At, Dt = _pl_pair(su, tu)
        return Ct, Bt, At, Dt, np.zeros((m, k)), None
    if su.kind == "pl" and tu.kind == "link":
        g = tu.link
        assert g is not None                 # kind "link" units carry their link
        Ct = np.zeros((m, k)); Bt = np.zeros((m, k)); At = np.zeros((m, k)); Dt = np.zeros((m, k))
        err = np.zeros((m, k))
        order = None
        if g.p != 0.0 or g.q != 0.0:
            Ct, Bt, At, Dt = _pl_pair(su, tu, np.full(k, g.p), np.full(k, g.q))
        if np.any(g.coeffs != 0.0):
            c2, b2, a2, d2, e2, order = pl_vs_link_hermite(
                su, tu, rtol, errors=True if errors is None else errors)
            Ct = Ct + c2; Bt = Bt + b2; At = At + a2; Dt = Dt + d2; err = err + e2
        return Ct, Bt, At, Dt, err, order
    return hermite_cross(su, tu, rtol, errors)


def teacher_self_moments(teacher):
    """(μ, C) of a teacher network's units: E[σ*_k] and E[σ*_k σ*_l]."""
    tu = teacher.units()
    if tu.kind == "pl":
        C, B, A, D, mu0, mu1, mu2 = _pl_self(tu)
        return mu0, C
    C, B, A, D, mu0, mu1, mu2, errC, errmu0, order = smooth_self(tu, 1e-13)
    return mu0, C
