"""Moment dispatcher: every population quantity reduces to scalar pair moments (DESIGN §3).

A *unit set* is a family of ridge units φ(α θ·x + β).  Student neurons form one set; the
teacher's units another.  Pairs of piecewise-linear (PL) units use the closed forms of
:mod:`popdyn._kernels.plmoments`; any pair with a smooth side, and the non-PL part of a teacher
link, use Mehler series of normalized Hermite coefficients (:mod:`popdyn._hermite`), with an
entrywise error estimate carried along in ``err*`` arrays.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from . import _hermite_bridge as hb
from ._hermite_bridge import geometry
from ._kernels import plmoments as _pl

# tolerances of the closed-form kernels, always passed explicitly (numba dispatches defaulted
# arguments through its slow generic path; STYLE item 3: every tolerance a parameter)
_PL_TOLS = (_pl.RTOL, _pl.ATOL, _pl.QTOL, _pl.MAXINT)


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
        (C, B, A, D, mu0, mu1, mu2, errC, errmu0, order) = hb.smooth_self(su, rtol)
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
        Ct = Ct + hb.pl_vs_link_values(su, tu)
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
            c2, b2, a2, d2, e2, order = hb.pl_vs_link_hermite(su, tu, rtol)
            Ct = Ct + c2; Bt = Bt + b2; At = At + a2; Dt = Dt + d2; err = err + e2
        return Ct, Bt, At, Dt, err, order
    return hb.hermite_cross(su, tu, rtol)


def teacher_self_moments(teacher):
    """(μ, C) of a teacher network's units: E[σ*_k] and E[σ*_k σ*_l]."""
    tu = teacher.units()
    if tu.kind == "pl":
        C, B, A, D, mu0, mu1, mu2 = _pl_self(tu)
        return mu0, C
    C, B, A, D, mu0, mu1, mu2, errC, errmu0, order = hb.smooth_self(tu, 1e-13)
    return mu0, C
