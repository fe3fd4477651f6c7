"""Refit risk on frozen features (docs/design.md §5; Kumar (arXiv 2609.39408), "refit MSE").

The first layer (W, b) is frozen; the head a′ and the intercept c′ are refitted.  The features
are s·σ_j(x) = s·σ(w_j·x + b_j) plus a constant.  The intercept is eliminated exactly
(c′ = E[y] − s a′ᵀμ0), which centers the features, and the risk on the MSE scale is the quadratic

    R(a′) = E[(f′ − y)²] = a′ᵀ G a′ − 2 gᵀ a′ + V_Y,
    G = s² (C − μ0 μ0ᵀ),    g = s (Ct v − μ0 E[y]),

with C = E[σ_iσ_j], μ0 = E[σ_i], (Ct v)_i = E[σ_i y] from the population engine.

Kinds
-----
``unrestricted``
    Least squares with a relative eigenvalue cutoff (default 1e−12).  By default the Gram matrix
    is first equilibrated (Jacobi scaling to unit feature variance, as in the paper's
    "equilibrated 1e−12 eigencutoff solve"), so the cutoff acts on the correlation matrix.
    The attained risk of the cutoff head can exceed the infimum when features are nearly
    collinear; the result reports the cutoff, the rank kept, the discarded spectrum, and a
    numerical lower value (below).
``same_budget``
    ‖a′‖₂ ≤ ‖a‖₂ of the current head.
``bounded``
    ‖a′‖₂ ≤ B for a given B > 0.
``projected``
    Snap each neuron's teacher-subspace component to its nearest teacher axis (see
    :func:`popdyn.diagnostics.snap_to_axes`), recompute the moments with the snapped W, then
    refit unrestricted (or in the ball ‖a′‖ ≤ B when a budget is given).

Norm-constrained refits solve the trust-region subproblem exactly: with G = QΛQᵀ and
c = Qᵀg the minimizer is a(μ) = Q(Λ + μ)⁻¹c with μ = 0 if ‖a(0)‖ ≤ B (interior; when G is
singular and g has no component in its null space, the minimum-norm minimizer is returned —
the "hard case" of a positive semidefinite G), else the root μ > 0 of the secular equation
1/‖a(μ)‖ = 1/B (bracketed, solved by Brent's method in log μ).  The head is scaled back into
the ball if rounding pushes it out, and checked.  The lower value is the Lagrangian dual
D(μ) = V − cᵀ(Λ + μ)⁻¹c − μB² at the solver's μ, kept apart from the attained (feasible,
upper) risk of the returned head.

The bounded refit of Kumar (arXiv 2609.39408), eq. (6) and App. A, is a separate diagnostic
(:func:`bounded_refit`, :func:`solve_bounded`): normalized features, no intercept, an l2 and an l1
cap on the coefficients; see :func:`bounded_refit`.

Numerical notes.  G is formed from the engine's uncentered moments, so a centered variance
G_jj = s²(C_jj − μ_j²) is known only to an absolute error of a few ε·s²C_jj: features with
G_jj ≤ 32ε·s²C_jj are treated as constant (dropped: zero row in G, zero head weight; a neuron
with w_j = 0 is exactly such a feature), and a nearly affine neuron (|w_j| ≪ |b_j|) has a
variance resolved only to relative accuracy ε·b_j²/|w_j|².  In the ball solve, eigen-directions
with λ ≤ m·ε·λ_max are numerically null: the interior candidate omits them (minimum norm) while
the dual keeps their gain, so nothing they could hide is lost from the gap.  When the nearly
affine features were rebuilt from their linear form (:func:`affine_problem`), G is accurate
relative to its diagonal and those small directions are real (a head ~1/|w_j| uses them): the
ball is then solved in the equilibrated basis (``solve_ball(..., graded=True)``).

All values are float64 numerics, not certificates (the certified versions live in
``certify``).  Lower values are clipped to [0, risk]: the true infimum lies in that range
whenever the float data are exact, so the clip only removes rounding-level inversions.

References
----------
Kumar (arXiv 2609.39408): same-budget refit (Figure 1),
bounded-head refit (Figure 2), projected-feature refit (Figure 1 row four), equilibrated
1e−12 eigencutoff solve (Tables 3–4); docs/design.md §5 and §6 (Lagrangian dual lower bound).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from .. import _validate as V
from .. import _tails
from .. import accuracy as _acc
from .._typing import AnyParams, AnyStudent
from ..families import capability
from ..family import RefitProblem, family_of
from ..teachers import Teacher
from .geometry import snap_to_axes, teacher_frame

KINDS = ("unrestricted", "same_budget", "bounded", "projected")
_EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------------------- data types
@dataclass(frozen=True)
class Refit:
    """Result of a frozen-feature refit.

    Attributes
    ----------
    kind : str
        ``unrestricted``, ``same_budget``, ``bounded`` or ``projected``.
    risk : float
        Attained risk E[(f′ − y)²] (MSE scale) of the returned head: a feasible upper value.
    lower : float
        The solver's numerical lower value (module docstring), 0 ≤ lower ≤ risk.
    variance : float
        V_Y, so ``normalized`` = risk / V_Y.
    head : ndarray (m,)
        The refitted head a′ (for norm-constrained kinds ‖a′‖ ≤ budget is guaranteed).
    intercept : float
        The refitted intercept c′ = E[y] − s a′ᵀμ0.
    status : str
        ``full_rank`` / ``truncated`` (cutoff solves: whether any direction was discarded);
        ``interior`` / ``hard_case`` / ``boundary`` / ``zero_budget`` (norm-constrained solves;
        ``hard_case`` = interior minimizer of a numerically singular G — an eigenvalue at or
        below m·ε·λ_max — with the minimum-norm head returned).
    budget : float or None
        B for norm-constrained kinds.
    multiplier : float or None
        The Lagrange multiplier μ ≥ 0 of the ball constraint.
    cutoff, cutoff_abs : float or None
        Relative eigenvalue cutoff and the absolute threshold it gave (on the equilibrated
        scale when ``equilibrated``).
    rank : int or None
        Number of eigen-directions kept by the cutoff solve.
    discarded : ndarray or None
        Discarded eigenvalues (descending; features of zero variance — constant features,
        absorbed by the intercept — are listed as 0.0).
    equilibrated : bool or None
        Whether the cutoff acted on the correlation (equilibrated) matrix.
    params : Params or None
        The refitted student parameters (W, b frozen — snapped W for ``projected`` — and a′, c′).
    error : float or None
        The estimated distance of ``risk`` from the infimum of its kind under exact moments
        (:func:`refit_error`), when the moments' error estimates were available (``None`` for
        refits of a given :class:`RefitProblem`).
    """

    kind: str
    risk: float
    lower: float
    variance: float
    head: np.ndarray
    intercept: float
    status: str
    budget: float | None = None
    multiplier: float | None = None
    cutoff: float | None = None
    cutoff_abs: float | None = None
    rank: int | None = None
    discarded: np.ndarray | None = None
    equilibrated: bool | None = None
    params: object = field(default=None, repr=False)
    error: float | None = None

    @property
    def gap(self) -> float:
        """risk − lower (≥ 0)."""
        return self.risk - self.lower

    @property
    def normalized(self) -> float:
        """risk / V_Y."""
        return self.risk / self.variance

    @property
    def normalized_lower(self) -> float:
        """lower / V_Y."""
        return self.lower / self.variance

    def as_dict(self, prefix: str = "") -> dict:
        """Flat record for the recorder: risk and lower value normalized by V_Y, status, and the
        budget (ball solves) or the cutoff, rank and discarded spectrum (cutoff solves)."""
        d = {f"{prefix}": self.normalized, f"{prefix}_lower": self.normalized_lower,
             f"{prefix}_status": self.status}
        if self.rank is not None:
            d[f"{prefix}_rank"] = self.rank
            d[f"{prefix}_cutoff"] = self.cutoff
            assert self.discarded is not None    # set with rank (cutoff solves)
            d[f"{prefix}_discarded"] = self.discarded.tolist()
        if self.budget is not None:
            d[f"{prefix}_budget"] = self.budget
        return d


def refit_problem(student, params, teacher, *, moments=None, rtol: float = 1e-10) -> RefitProblem:
    """The refit quadratic (G, g, V_Y) of ``student`` at ``params`` against ``teacher``.

    ``moments`` may pass precomputed moments of the student's family (for the ridge family a
    :class:`popdyn._moments.Moments` with C, μ0, Ct) to avoid recomputation.
    """
    fam = family_of(student)
    if moments is None:
        fam.check(params, teacher)
        moments = fam.moments(params, teacher, need="loss", tol=rtol)
    return fam.refit_problem(params, teacher, moments)


def _problem_from(student, teacher, M, params=None) -> RefitProblem:
    """The refit problem of the family of ``student`` from moments ``M``."""
    return student.family.refit_problem(params, teacher, M)


# ---------------------------------------------------------------------------- solvers
def solve_cutoff(prob: RefitProblem, *, rcond: float = 1e-12, equilibrate: bool = True,
                 _spectrum: bool = False) -> dict:
    """Least squares with a relative eigenvalue cutoff (the ``unrestricted`` refit).

    Keeps the eigen-directions of Ĝ = DGD (D = diag(G)^{−1/2} on features of nonzero variance
    if ``equilibrate``, else D = I) with λ > rcond·λ_max and returns the pseudo-inverse head.
    The lower value subtracts from the attained risk the gain c_i²/λ_i every discarded direction
    above the float64 noise floor m·ε·λ_max would give; it is 0-clipped.  It is numerical (a
    direction below the noise floor cannot be resolved in float64).
    """
    m = prob.m
    G, g = prob.G, prob.g
    dg = np.diag(G)
    active = (dg > 0) & ~prob.dropped
    idx = np.flatnonzero(active)
    scale = np.zeros(m)
    if equilibrate:
        scale[idx] = 1.0 / np.sqrt(dg[idx])
    else:
        scale[idx] = 1.0
    a = np.zeros(m)
    if idx.size:
        sc = scale[idx]
        Ge = sc[:, None] * G[np.ix_(idx, idx)] * sc[None, :]
        ge = sc * g[idx]
        lam, Q = np.linalg.eigh(0.5 * (Ge + Ge.T))
        lmax = max(float(lam[-1]), 0.0)
        cut = rcond * lmax
        keep = lam > cut if lmax > 0 else np.zeros(lam.shape, bool)
        c = Q.T @ ge
        a[idx] = sc * (Q[:, keep] @ (c[keep] / lam[keep]))
        floor = max(m * _EPS * lmax, np.finfo(np.float64).tiny)
        extra = (~keep) & (lam > floor)
        hidden = float(np.sum(c[extra] ** 2 / lam[extra]))
        discarded = np.sort(lam[~keep])[::-1]
    else:
        cut, keep, hidden, discarded = 0.0, np.zeros(0, bool), 0.0, np.zeros(0)
    ndrop = m - idx.size
    discarded = np.concatenate([np.maximum(discarded, 0.0) if discarded.size else discarded,
                                np.zeros(ndrop)])
    risk = prob.risk(a)
    lower = _clip_lower(risk - hidden, risk)
    rank = int(np.sum(keep))
    out = dict(head=a, risk=risk, lower=lower, cutoff=rcond, cutoff_abs=float(cut),
               rank=rank, discarded=discarded, equilibrated=bool(equilibrate),
               status="full_rank" if rank == m else "truncated")
    if _spectrum:
        out["spectrum"] = ((idx, scale[idx], lam, c, keep) if idx.size else None)
    return out


def _clip_lower(lower: float, risk: float) -> float:
    """Clip a numerical lower value into [0, max(risk, 0)] (R ≥ 0 and inf R ≤ attained risk)."""
    return min(max(lower, 0.0), max(risk, 0.0))


def _norm(v: np.ndarray) -> float:
    """‖v‖₂ of a real 1-D float64 array: ``float(numpy.linalg.norm(v))`` bit for bit (which
    is sqrt(v·v) for real vectors), without its dispatch overhead."""
    v = v.ravel(order="K")           # as numpy.linalg.norm does
    return math.sqrt(float(v.dot(v)))


def _into_ball(a: np.ndarray, B: float) -> np.ndarray:
    """Scale ``a`` so that ‖a‖₂ ≤ B holds in floating point (and check it)."""
    nrm = _norm(a)
    if nrm <= B:
        return a
    a = a * (B / nrm)
    for _ in range(60):
        if _norm(a) <= B:
            return a
        a = a * (1.0 - 4 * _EPS)
    raise RuntimeError("could not scale the head into the ball (please report)")  # pragma: no cover


def solve_ball(prob: RefitProblem, budget: float, *, graded: bool = False) -> dict:
    """min R(a) subject to ‖a‖₂ ≤ budget: the trust-region subproblem, solved exactly.

    See the module docstring.  Returns the head, its attained risk, the dual lower value
    D(μ) = V − cᵀ(Λ+μ)⁻¹c − μB², the multiplier μ and the status.  ``graded``: G is accurate
    entrywise relative to its diagonal (the nearly affine features rebuilt from their linear
    form, :func:`affine_problem`), so its small directions are resolved and are solved for in
    the equilibrated basis (:func:`_solve_ball_graded`) instead of being treated as null.
    """
    B = float(budget)
    m = prob.m
    V_ = prob.variance
    if B == 0.0:
        a = np.zeros(m)
        r = prob.risk(a)
        return dict(head=a, risk=r, lower=r, multiplier=None, status="zero_budget")
    if graded:
        return _solve_ball_graded(prob, B)
    lam, Q = prob.eig
    lam = np.maximum(lam, 0.0)               # G ⪰ 0 in exact arithmetic
    c = Q.T @ prob.g
    pos = lam > 0
    c = np.where(pos, c, 0.0)                # no mass in the exact null space
    # numerically null directions (λ ≤ m·ε·λ_max): their c_i/λ_i is rounding noise; the interior
    # candidate leaves them out (minimum norm) and the lower value keeps their gain c_i²/λ_i
    big = lam > m * _EPS * max(float(lam[-1]), 0.0)
    z0 = np.zeros(m)
    z0[big] = c[big] / lam[big]
    n0 = _norm(z0)
    if n0 <= B:
        mu = 0.0
        z = z0
        status = "interior" if np.all(big) else "hard_case"
        dual = V_ - float(np.sum(c[pos] ** 2 / lam[pos]))
    else:
        def nrm(mu):
            return _norm(c / (lam + mu))

        mu = _ball_multiplier(nrm, _norm(c) / B, B)
        z = c / (lam + mu)
        status = "boundary"
        dual = V_ - float(np.sum(c * z)) - mu * B * B
    a = _into_ball(Q @ z, B)
    risk = prob.risk(a)
    return dict(head=a, risk=risk, lower=_clip_lower(dual, risk), multiplier=mu, status=status)


def _ball_multiplier(nrm, hi: float, B: float) -> float:
    """The multiplier μ > 0 with ‖a(μ)‖ = B on the ball path, ``nrm(μ)`` = ‖a(μ)‖ decreasing
    in μ: ``hi`` (‖g‖/B, where mathematically ‖a‖ ≤ B) doubled while rounding leaves it
    outside, a lower end found by steps of 1/100 (‖a(μ)‖ → ‖a(0)‖ > B as μ → 0), then Brent
    on 1/‖a(e^t)‖ − 1/B, increasing in t; the lower end itself when ‖a‖ ≤ B there already."""
    while nrm(hi) > B:                   # rounding guard; mathematically nrm(hi) ≤ B
        hi *= 2.0
    lo = hi
    while nrm(lo) < B and lo > 1e-300:
        lo *= 0.01
    if nrm(lo) <= B:
        return lo
    f = lambda t: 1.0 / nrm(np.exp(t)) - 1.0 / B   # noqa: E731
    t = brentq(f, np.log(lo), np.log(hi), xtol=1e-15, rtol=4 * _EPS, maxiter=500)
    return float(np.exp(t))


def _solve_ball_graded(prob: RefitProblem, B: float) -> dict:
    """:func:`solve_ball` for a G whose entries are accurate relative to √(G_iiG_jj).

    With D = diag(G) on the active features and Ĝ = D^{−1/2}GD^{−1/2} (unit diagonal), the
    ball path is a(μ) = D^{−1/2}(Ĝ + μD^{−1})^{−1}D^{−1/2}g, the same vector as (G + μI)^{−1}g
    in exact arithmetic but formed without the absolute eigenvalue floor ε·λ_max of G, which
    makes the directions of a feature with variance ~|w_j|² ≪ ε (a nearly affine unit with a
    head ~1/|w_j|) look null.  μ = 0 (interior) when the equilibrated minimum-norm solution
    (:func:`solve_cutoff`, cutoff m·ε) lies in the ball, else the root of 1/‖a(μ)‖ = 1/B (Brent
    in log μ); the lower value is the dual D(μ) = V − gᵀa(μ) − μB² (μ > 0) or the cutoff
    solve's lower value (μ = 0)."""
    m = prob.m
    V_ = prob.variance
    G, g = prob.G, prob.g
    dg = np.diag(G)
    idx = np.flatnonzero((dg > 0) & ~prob.dropped)
    cut = solve_cutoff(prob, rcond=max(m * _EPS, 1e-300), equilibrate=True)
    if _norm(cut["head"]) <= B or not idx.size:
        a = _into_ball(cut["head"], B)
        risk = prob.risk(a)
        status = "interior" if cut["rank"] == m else "hard_case"
        return dict(head=a, risk=risk, lower=_clip_lower(cut["lower"], risk), multiplier=0.0,
                    status=status)
    sc = 1.0 / np.sqrt(dg[idx])
    Ge = sc[:, None] * G[np.ix_(idx, idx)] * sc[None, :]
    Ge = 0.5 * (Ge + Ge.T)
    ge = sc * g[idx]
    dinv = sc * sc

    def head(mu):
        a = np.zeros(m)
        a[idx] = sc * np.linalg.solve(Ge + np.diag(mu * dinv), ge)
        return a

    def nrm(mu):
        return _norm(head(mu))

    mu = _ball_multiplier(nrm, max(_norm(g) / B, np.finfo(np.float64).tiny), B)
    z = head(mu)
    dual = V_ - float(g @ z) - mu * B * B
    a = _into_ball(z, B)
    risk = prob.risk(a)
    return dict(head=a, risk=risk, lower=_clip_lower(dual, risk), multiplier=mu,
                status="boundary")


# ---------------------------------------------------------------------------- public layer
def _check_budget(kind, budget):
    if kind in ("unrestricted", "same_budget"):
        if budget is not None:
            hint = ("the budget of kind='same_budget' is ‖a‖ of the current head"
                    if kind == "same_budget" else "kind='unrestricted' has no budget")
            raise ValueError(f"`budget` must be None for kind={kind!r} ({hint}); "
                             "use kind='bounded' for a given budget")
        return None
    if budget is None:
        if kind == "bounded":
            raise ValueError("`budget` is required for kind='bounded' (the head-norm bound B > 0)")
        return None
    return V.real("budget", budget, positive=True)


def check_refit_args(kind, budget, rcond, equilibrate):
    """Validated (budget, rcond, equilibrate) of a refit of ``kind`` (already checked): shared by
    :func:`refit_risk` (every student family) and :func:`certify.refit_risk`."""
    budget = _check_budget(kind, budget)
    rcond = V.real("rcond", rcond, positive=True)
    if not rcond < 1:
        raise ValueError(f"`rcond` must be in (0, 1), got {rcond!r}")
    if not isinstance(equilibrate, (bool, np.bool_)):
        raise TypeError(f"`equilibrate` must be a bool, got {equilibrate!r}")
    return budget, rcond, bool(equilibrate)


def _refit(prob: RefitProblem, kind: str, budget, *, rcond, equilibrate, params=None,
           errors=None, rtol=None, who: str = "", graded: bool = False) -> Refit:
    spec = None
    if budget is None:
        out = solve_cutoff(prob, rcond=rcond, equilibrate=equilibrate, _spectrum=errors is not None)
        spec = out.pop("spectrum", None)
    else:
        out = solve_ball(prob, budget, graded=graded)
        if errors is not None and out["status"] in ("interior", "hard_case"):
            # the ball's minimizer is interior: the equilibrated cutoff solve resolves directions
            # of small scale that the ball solve leaves out as numerically null
            alt = solve_cutoff(prob, rcond=rcond, equilibrate=equilibrate)
            if _norm(alt["head"]) <= budget and alt["risk"] < out["risk"]:
                out = dict(head=alt["head"], risk=alt["risk"], lower=alt["lower"],
                           multiplier=0.0, status="interior")
        n = float(np.linalg.norm(out["head"]))
        if not n <= budget:                  # pragma: no cover - guarded by _into_ball
            raise RuntimeError(f"refit head violates ‖a′‖ ≤ {budget}: ‖a′‖ = {n}")
    a = out.pop("head")
    c = prob.intercept(a)
    new = None if params is None else params.replace(a=a, c=c)
    err = None
    if errors is not None:
        est = refit_error(prob, a, out["risk"], out["lower"], errors, spec, budget,
                          out.get("multiplier"))
        err = est["error"]
        if rtol is not None:
            target = rtol * max(out["risk"], 0.0) + est["atol"]
            if not err <= target:
                _warn_refit(kind, who, est, target, rtol, rcond if budget is None else None)
    return Refit(kind=kind, variance=prob.variance, head=a, intercept=c, params=new,
                 budget=budget, error=err, **out)


# ---------------------------------------------------------------------------- error estimate
_U = 2.0 ** -53


def _finite_sum(student, teacher) -> bool:
    """Whether E[σ_j y] is a finite Hermite sum: a piecewise-linear student against an additive
    teacher with a polynomial link (the Mehler sum stops at the link's degree, so it has no
    truncation error; the engine's ``errCt`` there is its coefficient-error allowance, which
    is far above the rounding of a nearly affine unit's coefficients)."""
    act = getattr(student, "act", None)
    link = getattr(teacher, "link", None)
    return (act is not None and getattr(act, "kind", None) == "pl" and link is not None
            and bool(getattr(link, "is_polynomial", False)))


def _smooth_errC(student, params, R, errC):
    """The error estimate of C for a smooth ridge student (silu, gelu, tanh): the smaller of the
    engine's ``errC`` (whose coefficient-error allowance dominates at small tolerances) and
    the a-priori bound of the truncation |ρ_ij|^{N+1}√(t_i t_j)
    (:func:`popdyn._tails.value_tail_bound` at the moments' order N) plus 8u√(C_iiC_jj)."""
    code = getattr(getattr(student, "act", None), "code", None)
    th = getattr(R, "theta", None)
    C = getattr(R, "C", None)
    N = getattr(R, "order", None)
    if code not in _tails.CODES or th is None or C is None or N is None or params is None:
        return errC
    W = np.asarray(params.W, dtype=np.float64)
    al = np.sqrt(np.einsum("ij,ij->i", W, W))
    t = np.sqrt(_tails.value_tail_bound(int(code), al, int(N)))
    rho = np.clip(np.asarray(th) @ np.asarray(th).T, -1.0, 1.0)
    with np.errstate(under="ignore"):
        P = np.abs(rho) ** (int(N) + 1)
    np.fill_diagonal(P, 1.0)
    dC = np.sqrt(np.abs(np.diag(C)))
    apriori = P * np.outer(t, t) + 8.0 * _U * np.outer(dC, dC)
    return np.minimum(errC, apriori)


def _smooth_errg(student, params, R, teacher, err):
    """The error estimate of E[σ_j y] for a smooth ridge student (silu, gelu, tanh): the
    smaller of the engine's (``errCt`` summed with the teacher's weights) and √(t_j E[y²]) plus
    8u√(C_jjE[y²]), t_j the a-priori tail bound of σ_j's series at the moments' order
    (Cauchy–Schwarz on the discarded part of σ_j; the teacher side's own truncation is the
    engine's, below its tolerance)."""
    code = getattr(getattr(student, "act", None), "code", None)
    C = getattr(R, "C", None)
    N = getattr(R, "order", None)
    y2 = getattr(teacher, "second_moment", None)
    if code not in _tails.CODES or C is None or N is None or params is None or y2 is None:
        return err
    W = np.asarray(params.W, dtype=np.float64)
    al = np.sqrt(np.einsum("ij,ij->i", W, W))
    t = _tails.value_tail_bound(int(code), al, int(N))
    y2 = abs(float(y2))
    apriori = np.sqrt(t * y2) + 8.0 * _U * np.sqrt(np.abs(np.diag(C)) * y2)
    return np.minimum(err, apriori)


def refit_errors(prob: RefitProblem, M=None, teacher=None, student=None, params=None):
    """(eG, eg): entrywise error estimates of the refit problem's G and g.

    G = s²(C − μ0μ0ᵀ) and g = s(E[σ y] − μ0E[y]) are differences of uncentered moments, so
    besides the engine's error estimates of C, μ0 and E[σ y] (``M.errC``, ``M.errmu0``,
    ``M.errCt`` of the ridge moments, when ``M`` carries them; not ``errCt`` of a finite sum,
    :func:`_finite_sum`) each entry carries the rounding
    of its two terms, 8u·s²(|C_ij| + |μ_iμ_j|) and 8u·s(|E[σ_i y]| + |μ_i E[y]|) (u = 2⁻⁵³).
    For a nearly affine feature (|w_j| ≪ |b_j|) these are large next to the centered variance
    G_jj ~ s²|w_j|² (module docstring), which is what makes its refit inaccurate.
    """
    s = float(prob.s)
    mu = np.abs(np.asarray(prob.mu0, dtype=np.float64))
    mm = np.outer(mu, mu)
    Cabs = np.abs(prob.G) / (s * s) + mm if s != 0 else mm
    eG = (s * s) * (8.0 * _U) * (Cabs + mm)
    ey = abs(float(prob.mean_y))
    eg = (8.0 * _U) * (np.abs(prob.g) + 2.0 * abs(s) * mu * ey)
    R = getattr(M, "R", M)
    if R is not None and not isinstance(R, np.ndarray):
        m = prob.m
        errC = getattr(R, "errC", None)
        emu = getattr(R, "errmu0", None)
        if emu is None or np.shape(emu) != (m,):
            emu = np.zeros(m)
        emu = np.asarray(emu, dtype=np.float64)
        if errC is not None and np.shape(errC) == (m, m):
            errC = _smooth_errC(student, params, R, np.abs(errC))
            eG = eG + (s * s) * (errC + np.outer(emu, mu) + np.outer(mu, emu))
        eg = eg + abs(s) * emu * ey
        errCt = getattr(R, "errCt", None)
        Ct = getattr(R, "Ct", None)
        v = None if teacher is None else getattr(teacher, "weights", None)
        if (errCt is not None and v is not None and np.ndim(errCt) == 2
                and np.shape(errCt)[0] == m and np.shape(errCt)[1] == np.size(v)
                and not _finite_sum(student, teacher)):
            va = np.abs(np.asarray(v, dtype=np.float64).ravel())
            eg = eg + abs(s) * _smooth_errg(student, params, R, teacher, np.abs(errCt) @ va)
            if Ct is not None and np.shape(Ct) == np.shape(errCt):
                eg = eg + abs(s) * (8.0 * _U) * (np.abs(Ct) @ va)
    dr = np.asarray(prob.dropped, bool)
    lost = None
    if np.any(dr):
        lost = _dropped_rows(prob, M, teacher, dr, eG, eg)
        eG[dr, :] = 0.0
        eG[:, dr] = 0.0
        eg = np.where(dr, 0.0, eg)
    return RefitErrors(0.5 * (eG + eG.T), eg, lost)


class RefitErrors(tuple):
    """(eG, eg, dropped) of :func:`refit_errors`; ``dropped`` is None or the tuple
    (index, G rows, g, eG rows, eg) of the features the problem dropped, from the raw moments.
    ``affine`` (:func:`affine_problem`): None or (index, rows λ_jw_j, eCx, egx, mask) — the
    rebuilt features share the errors eCx of Cov(x, σ_k) and egx of Cov(x, y)."""

    def __new__(cls, eG, eg, dropped=None, affine=None):
        obj = super().__new__(cls, (eG, eg, dropped))
        obj.affine = affine
        return obj


def _dropped_rows(prob, M, teacher, dr, eG, eg):
    """The raw rows G_j· = s²(C_j· − μ_jμ0ᵀ) and g_j = s(E[σ_j y] − μ_jE[y]) of the features
    the problem dropped (ridge moments only: ``M`` with C, Ct and the teacher's weights), with
    their error estimates; None otherwise."""
    C = getattr(M, "C", None)
    Ct = getattr(M, "Ct", None)
    v = None if teacher is None else getattr(teacher, "weights", None)
    m = prob.m
    if (C is None or Ct is None or v is None or hasattr(M, "R") or np.shape(C) != (m, m)
            or np.ndim(Ct) != 2 or np.shape(Ct)[1] != np.size(v)):
        return None
    s = float(prob.s)
    mu = np.asarray(prob.mu0, dtype=np.float64)
    j = np.flatnonzero(dr)
    Gj = (s * s) * (np.asarray(C)[j, :] - np.outer(mu[j], mu))
    gj = s * (np.asarray(Ct)[j, :] @ np.asarray(v, dtype=np.float64).ravel() - mu[j] * prob.mean_y)
    return j, Gj, gj, eG[j, :].copy(), eg[j].copy()


def refit_error(prob: RefitProblem, head, risk: float, lower: float, errors, spectrum=None,
                budget=None, multiplier=None):
    """The estimated error of a refit's ``risk`` as the infimum of its kind (a dict).

    * ``data``: the first-order change of the optimal value under the entrywise errors
      (eG, eg) of G and g (:func:`refit_errors`): |a′|ᵀeG|a′| + 2 eg·|a′| at the returned head
      (the optimal value's derivative with respect to G is a′a′ᵀ and to g is −2a′, for the
      unrestricted and the ball-constrained minimum alike);
    * ``solver``: risk − lower (the gains of the directions a cutoff solve discarded above its
      noise floor; the dual gap of a ball solve);
    * ``cutoff`` (cutoff solves): every discarded eigen-direction k of the (equilibrated) Gram
      matrix, c_k the component of g on it, may lower the risk by c_k²/λ_k; with λ_k and c_k
      known only to ε_λ = ‖D eG D‖₂ and ε_c = ‖D eg‖₂ (D the equilibration) the estimate is
      Σ_k (|c_k| + ε_c)²/(max(λ_k, 0) + ε_λ): the gain of a direction whose eigenvalue is
      resolved (λ_k ≫ ε_λ), and of an unresolved one the size its data allow (a tiny or nearly
      affine feature with a real correlation with y gives a large value, an exactly duplicated
      feature — c_k and λ_k both at rounding level — a negligible one); likewise every
      feature the problem dropped as numerically constant (from its raw moments, ridge
      students), with the gain (|G_j·a′ − g_j| + noise)²/(max(G_jj, 0) + eG_jj), raised to the
      risk itself when the gradient G_j·a′ − g_j is resolved (above 4× its noise) while G_jj
      is not: the feature then lowers the risk by an amount the float data cannot bound (in a
      ball ‖a′‖ ≤ B with multiplier μ the gain is (|G_j·a′ − g_j| + noise)²/(max(G_jj, 0) +
      eG_jj + μ), and at most 4B(|G_j·a′ − g_j| + noise) since the head moves by at most 2B).

    ``error`` = data + max(solver, cutoff); ``atol`` = 8(m + 2)u·(V + 2|g|·|a′| + |a′|ᵀ|G||a′|),
    the rounding floor of evaluating the risk.
    """
    eG, eg, lost = errors
    a = np.asarray(head, dtype=np.float64)
    aa = np.abs(a)
    data = float(aa @ (eG @ aa) + 2.0 * (eg @ aa))
    aff = getattr(errors, "affine", None)
    if aff is not None and aff[0].size:
        # the rebuilt features enter through v = Σ_j a′_j λ_j w_j (their errors are shared):
        # δR = 2s²vᵀδCx a′_reg − 2s vᵀδgx (first order)
        j, Wj, eCx, egx, mask = aff
        s = float(prob.s)
        v = np.abs(Wj.T @ a[j])
        reg = np.abs(np.where(mask, 0.0, a))
        data += float(2.0 * s * s * (v @ (eCx @ reg)) + 2.0 * abs(s) * (v @ egx))
    solver = max(float(risk) - float(lower), 0.0)
    cut = 0.0
    if spectrum is not None:
        idx, sc, lam, c, keep = spectrum
        if np.any(~keep):
            De = sc[:, None] * eG[np.ix_(idx, idx)] * sc[None, :]
            e_lam = float(np.linalg.norm(De, 2)) if De.size else 0.0
            e_c = float(np.linalg.norm(sc * eg[idx]))
            dk = ~keep
            den = np.maximum(lam[dk], 0.0) + e_lam
            num = (np.abs(c[dk]) + e_c) ** 2
            with np.errstate(divide="ignore", invalid="ignore"):
                gains = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                                 np.where(num > 0, np.inf, 0.0))
            cut = float(np.sum(gains))
    if lost is not None:
        # a dropped feature j (numerically constant) may still lower the risk: by
        # (∂R/∂a_j)²/(4 G_jj), with ∂R/∂a_j = 2(G_j·a′ − g_j) and G_jj not resolved above its
        # error eG_jj
        j, Gj, gj, eGj, egj = lost
        noise = egj + eGj @ aa
        grad = np.abs(Gj @ a - gj)
        num = grad + noise
        den = np.maximum(Gj[np.arange(j.size), j], 0.0) + eGj[np.arange(j.size), j]
        with np.errstate(divide="ignore", invalid="ignore"):
            gains = np.where(den > 0, num * num / np.where(den > 0, den, 1.0),
                             np.where(num > 0, np.inf, 0.0))
        if budget is None:
            # a resolved gradient (above 4× its noise) on a feature whose variance is not
            # resolved: the gain is at least the value above and may be as large as the risk
            gains = np.where(grad > 4.0 * noise, np.maximum(gains, max(float(risk), 0.0)), gains)
        else:
            # in the ball: the multiplier μ of the constraint regularizes the new coordinate
            # (gain (|∂R/∂a_j|/2)²/(G_jj + μ)), and the head moves by at most 2B
            mu = float(multiplier or 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                reg = np.where(den + mu > 0, num * num / np.where(den + mu > 0, den + mu, 1.0),
                               np.where(num > 0, np.inf, 0.0))
            gains = np.minimum(reg, 4.0 * float(budget) * num)
            # a resolved gradient where neither G_jj nor μ is resolved: up to the risk itself
            loose = (grad > 4.0 * noise) & (mu <= eGj[np.arange(j.size), j])
            gains = np.where(loose, np.maximum(gains, np.minimum(
                max(float(risk), 0.0), 4.0 * float(budget) * num)), gains)
        cut += float(np.sum(gains))
    scale = (float(prob.variance) + 2.0 * float(np.abs(prob.g) @ aa)
             + float(aa @ (np.abs(prob.G) @ aa)))
    atol = 8.0 * (prob.m + 2) * _U * scale
    err = data + max(solver, cut)
    return {"error": err, "data": data, "solver": solver, "cutoff": cut, "atol": atol}


def _warn_refit(kind, who, est, target, rtol, rcond):
    parts = []
    if rcond is not None and est["cutoff"] > 0.1 * target:
        parts.append(f"the eigenvalue cutoff rcond={rcond:g} discarded directions that may "
                     f"lower the risk by ~{est['cutoff']:.3g} (the value is a restricted refit; "
                     "a smaller rcond keeps them)")
    if est["data"] > 0.1 * target:
        parts.append(f"the moments' errors move the optimum by ~{est['data']:.3g} (a feature of "
                     "tiny or nearly affine variance needs a huge head)")
    if not parts:
        parts.append(f"the solver's gap is {est['solver']:.3g}")
    _acc.warn(f"refit risk ({kind}){who}", est["error"], target, rtol, "; ".join(parts),
              "certify.refit_risk gives rigorous brackets.", stacklevel=4)



def check_kind(kind) -> str:
    """Validate a refit kind (``ValueError`` with a did-you-mean hint)."""
    return V.choice("kind", kind, KINDS)


def refit_risk(student: AnyStudent, params: AnyParams, teacher: Teacher,
               kind: str = "unrestricted", budget: float | None = None, *,
               U: ArrayLike | None = None, rcond: float = 1e-12, equilibrate: bool = True,
               rtol: float = 1e-10) -> Refit:
    """Refit the head and intercept on frozen features and return the risk E[(f′ − y)²].

    Parameters
    ----------
    student : Student or SwiGLUStudent
        A student of any family (:mod:`popdyn.family`).
    params : Params or SwiGLUParams
        Its parameters.
        The current state; W and b are frozen (snapped for ``projected``).
    teacher : Teacher
    kind : {"unrestricted", "same_budget", "bounded", "projected"}
        See the module docstring.
    budget : float, optional
        B > 0: required for ``bounded``; optional for ``projected`` (a ball refit after snapping
        instead of the cutoff solve); must be None for ``unrestricted`` and ``same_budget``
        (whose budget is ‖a‖ of the current head; a zero head gives a zero budget).
    U : array_like (r, d), optional
        Teacher axes for ``projected`` (orthonormal rows); default: the teacher's own axes
        (``teacher.U`` for additive teachers, the unit rows ``teacher.theta`` of a network
        teacher, inside ``teacher.subspace``).
    rcond : float
        Relative eigenvalue cutoff of the unrestricted solve, in (0, 1); default 1e−12.
    equilibrate : bool
        Apply the cutoff to the equilibrated (correlation) matrix (default, as in the paper).
    rtol : float
        Requested accuracy of ``risk`` relative to the infimum of its kind, a contract: the risk
        is returned when its estimated error (:func:`refit_error`: the moments' errors, the
        directions a cutoff discarded, the dropped features) is within rtol·risk plus the
        rounding floor, else with an :class:`popdyn.AccuracyWarning` naming the cause.  The
        moments are computed at the series tolerance rtol and, when their error estimate is
        what exceeds the target, again at rtol/100 and rtol/10⁴.  Nearly affine features of
        piecewise-linear students are rebuilt from their linear form (:func:`affine_problem`).

    Returns
    -------
    Refit
        ``risk`` (MSE scale, attained, feasible), ``lower``, ``gap``, ``normalized`` (÷ V_Y),
        ``status``; for cutoff solves ``cutoff``, ``rank``, ``discarded``.

    Examples
    --------
    >>> import numpy as np, popdyn
    >>> from popdyn.diagnostics import refit_risk
    >>> T = popdyn.Teacher.additive("h2", np.eye(4)[:2])
    >>> S = popdyn.Student(d=4, m=8)
    >>> p = S.init(0, 1.0, T)
    >>> r = refit_risk(S, p, T)
    >>> 0 <= r.lower <= r.risk <= T.variance + 1e-12
    True

    References
    ----------
    Kumar (arXiv 2609.39408), refit MSE definitions
    (Figures 1, 2; Tables 3–4); docs/design.md §5, §6.
    """
    fam = family_of(student)
    kind = check_kind(kind)
    if kind not in fam.refit_kinds:
        raise ValueError(f"`kind`={kind!r} is not defined for {fam.label} students; use one of "
                         + ", ".join(repr(k) for k in fam.refit_kinds))
    if kind != "projected" and U is not None:
        raise ValueError(f"`U` is only used by kind='projected', got kind={kind!r}")
    fam.check(params, teacher)
    budget, rcond, equilibrate = check_refit_args(kind, budget, rcond, equilibrate)
    rtol = V.real("rtol", rtol, positive=True)
    if kind == "projected":
        S, axes = teacher_frame(teacher if U is None else U, student.d)
        W = getattr(params, fam.first_layer)
        params = params.replace(**{fam.first_layer: snap_to_axes(W, S, axes)})
    if kind == "same_budget":
        budget = float(np.linalg.norm(params.a))
    who = f" of the {getattr(student, 'activation', fam.label)} student"
    tol = rtol
    while True:
        Mo = fam.moments(params, teacher, need="loss", tol=tol)
        prob = fam.refit_problem(params, teacher, Mo)
        fixed = affine_problem(student, params, teacher, prob, tol)
        if fixed is not None:
            prob, errors = fixed
        else:
            errors = refit_errors(prob, Mo, teacher, student, params)
        last = tol <= _acc.RTOL_FLOOR or tol <= rtol * 1e-4
        r = _refit(prob, kind, budget, rcond=rcond, equilibrate=bool(equilibrate),
                   params=params, errors=errors, rtol=min(rtol, 0.5) if last else None, who=who,
                   graded=fixed is not None)
        if last or r.error is None:
            return r
        est = refit_error(prob, r.head, r.risk, r.lower, errors, None, budget, r.multiplier)
        if r.error <= min(rtol, 0.5) * max(r.risk, 0.0) + est["atol"]:
            return r
        if est["data"] <= 0.5 * r.error:     # not the moments' series: tightening cannot help
            return _refit(prob, kind, budget, rcond=rcond, equilibrate=bool(equilibrate),
                          params=params, errors=errors, rtol=min(rtol, 0.5), who=who,
                          graded=fixed is not None)
        tol = max(tol / _acc.STEP, _acc.RTOL_FLOOR)


#: |b_j| > AFFINE_RATIO·|w_j|: a piecewise-linear unit is affine to within e^{−(b/|w|)²/2} < e^{−50}
AFFINE_RATIO = 10.0
#: the bias of the helper units x_i + HELPER_BIAS (affine to within e^{−800})
HELPER_BIAS = 40.0


def affine_problem(student, params, teacher, prob, rtol):
    """The refit problem with the nearly affine features of a piecewise-linear ridge student
    rebuilt from their exact linear form, and its error estimates; None when there are none.

    A unit σ = p·relu + q·id with |b_j| > :data:`AFFINE_RATIO`·|w_j| equals, up to
    e^{−(b_j/|w_j|)²/2}, the affine function λ_j(w_j·x) + const with λ_j = p + q (b_j > 0) or q
    (b_j < 0).  Its centered variance s²λ_j²|w_j|² is lost in C_jj − μ_j² when |w_j|² ≲ ε b_j²
    (module docstring), yet a refit can use it with a head ~1/|w_j| (it is the linear feature
    w_j·x/|w_j|).  Here its covariances are taken from the linear form instead:
    Cov(w_j·x, σ_k) = Σ_i w_ji Cov(x_i, σ_k), Cov(w_j·x, w_l·x) = w_j·w_l and
    Cov(w_j·x, y) = Σ_i w_ji Cov(x_i, y), with Cov(x_i, ·) from the engine's moments of the helper
    units σ(x_i + 40) = (p + q)(x_i + 40) (affine to within e^{−800}) appended to the student,
    where the cancellation is only a factor 40.  A feature with λ_j = 0 (relu, b_j < 0) is zero
    to within e^{−(b_j/|w_j|)²/2} and dropped.  Ridge students with a piecewise-linear activation
    and biases only.
    """
    if (capability(family_of(student), "ridge_readout") is None or student.act.kind != "pl"
            or not student.bias or not np.all(np.isfinite(params.W))):
        return None
    act = student.act
    W = np.asarray(params.W, dtype=np.float64)
    b = np.asarray(params.b, dtype=np.float64)
    al = np.sqrt(np.einsum("ij,ij->i", W, W))
    aff = (al > 0) & (np.abs(b) > AFFINE_RATIO * al)
    if not np.any(aff):
        return None
    from ..models import Params, Student
    m, d = W.shape
    kap = float(act.p + act.q)
    if kap == 0.0:
        return None
    lam = np.where(b > 0, kap, float(act.q))
    helper = Student(d=d, m=m + d, activation=student.activation,
                     negative_slope=getattr(student, "negative_slope", 0.01))
    hp = Params(np.zeros(m + d), np.vstack([W, np.eye(d)]),
                np.concatenate([b, np.full(d, HELPER_BIAS)]), 0.0)
    hfam = helper.family
    Mh = hfam.moments(hp, teacher, need="loss", tol=rtol)
    Ph = hfam.refit_problem(hp, teacher, Mh)            # s = 1: unscaled covariances
    Cx = Ph.G[m:, :m] / kap                              # Cov(x_i, σ_k)
    gx = Ph.g[m:] / kap                                  # Cov(x_i, y)
    s = float(prob.s)
    G = np.array(prob.G, dtype=np.float64, copy=True)
    g = np.array(prob.g, dtype=np.float64, copy=True)
    dropped = np.array(prob.dropped, bool, copy=True)
    eG, eg, _ = refit_errors(prob, None, teacher, student)
    mu = np.abs(np.asarray(Mh.mu0[:m], dtype=np.float64))
    ey = abs(float(teacher.mean))
    # rounding of the helper covariances: their terms are ~HELPER_BIAS·|μ_k| and ~HELPER_BIAS·|E[y]|
    eCx = 4.0 * _U * (np.abs(Cx) + (HELPER_BIAS + 1.0) * mu[None, :])
    egx = 4.0 * _U * (np.abs(gx) + (HELPER_BIAS + 1.0) * ey + np.abs(Mh.Ct[m:] @ np.abs(
        np.asarray(teacher.weights, dtype=np.float64).ravel())) / max(kap, 1e-300))
    j = np.flatnonzero(aff)
    Wj = W[j] * lam[j, None]
    rows = (s * s) * (Wj @ Cx)                           # Cov(λ_j w_j·x, σ_k)
    G[j, :] = rows
    G[:, j] = rows.T
    eG[j, :] = 0.0                                       # (the helper errors: ``affine`` below)
    eG[:, j] = 0.0
    lin = (s * s) * (Wj @ Wj.T)
    G[np.ix_(j, j)] = lin
    eG[np.ix_(j, j)] = 4.0 * _U * (s * s) * (np.abs(Wj) @ np.abs(Wj).T)
    g[j] = s * (Wj @ gx)
    eg[j] = 0.0
    zero = lam[j] == 0.0
    dropped[j] = zero
    dr = dropped
    if np.any(dr):
        G[dr, :] = 0.0
        G[:, dr] = 0.0
        g[dr] = 0.0
        eG[dr, :] = 0.0
        eG[:, dr] = 0.0
        eg[dr] = 0.0
    G = 0.5 * (G + G.T)
    new = RefitProblem(G, g, prob.variance, prob.mean_y, prob.mu0, prob.s, dropped)
    keep = ~zero
    return new, RefitErrors(0.5 * (eG + eG.T), eg, None,
                            (j[keep], Wj[keep], eCx, egx, aff & ~dropped))


# ---------------------------------------------------------------------------- bounded refit
#: the caps of Kumar (arXiv 2609.39408), eq. (6): ‖v‖₂ ≤ L2_CAP/J_α, ‖v‖₁ ≤ L1_CAP·√r/J_α
L2_CAP = 32.0
L1_CAP = 64.0
#: the margin of the conservative refit gain Δ̂ = R̲₀ − R̄_n − 1e−5 (paper App. A)
GAIN_MARGIN = 1e-5


@dataclass(frozen=True, eq=False)
class BoundedProblem:
    """The quadratic of the bounded refit, eq. (6) of Kumar (arXiv 2609.39408):

        R(v) = E[y²] − 2cᵀv + vᵀHv,   H = E[φφᵀ],  c = E[yφ],
        φ_j = σ_α(W_jᵀx + B_j)/√(‖W_j‖² + B_j²)   (φ_j = 0 for a zero row),

    minimized over K = {‖v‖₂ ≤ l2_cap, ‖v‖₁ ≤ l1_cap}.

    Attributes
    ----------
    H : ndarray (m, m)
        The symmetrized Gram matrix of the normalized features.
    c : ndarray (m,)
    second_moment : float
        E[y²] (1 for the paper's teachers, which is why it writes 1 − 2cᵀv + vᵀHv).
    l2_cap, l1_cap : float
    norms : ndarray (m,)
        √(‖W_j‖² + B_j²) (0 for a zero row; ones for :meth:`from_arrays`, whose moments are
        taken as given).
    """

    H: np.ndarray
    c: np.ndarray
    second_moment: float
    l2_cap: float
    l1_cap: float
    norms: np.ndarray

    @property
    def m(self) -> int:
        return self.c.shape[0]

    def risk(self, v) -> float:
        """R(v) = E[y²] − 2cᵀv + vᵀHv in float64."""
        v = np.asarray(v, dtype=np.float64)
        return float(self.second_moment - 2.0 * (self.c @ v) + v @ (self.H @ v))

    @classmethod
    def from_arrays(cls, H, c, second_moment, *, l2_cap=L2_CAP, l1_cap=L1_CAP * math.sqrt(2)):
        """A problem from given moments (H is symmetrized; no feature is normalized here)."""
        H = V.array("H", H, (None, None))
        m = H.shape[0]
        if H.shape != (m, m):
            raise ValueError(f"`H` must be square, got shape {H.shape}")
        c = V.array("c", c, (m,))
        second_moment = V.real("second_moment", second_moment, positive=True)
        l2_cap = V.real("l2_cap", l2_cap, positive=True)
        l1_cap = V.real("l1_cap", l1_cap, positive=True)
        return cls(0.5 * (H + H.T), c, float(second_moment), float(l2_cap), float(l1_cap),
                   np.ones(m))


@dataclass(frozen=True)
class BoundedRefit:
    """Result of the bounded refit of eq. (6) (Kumar, arXiv 2609.39408, App. A).

    Attributes
    ----------
    upper : float
        R̄ = R(v̂) of the exactly feasible point v̂, evaluated in float64 from H, c, E[y²].
    lower : float
        R̲, the first-order support-function lower value (:func:`solve_bounded`).
    head : ndarray (m,)
        v̂ with ‖v̂‖₂ ≤ l2_cap and ‖v̂‖₁ ≤ l1_cap checked in exact rational arithmetic.
    status : str
        Clarabel's status (``solved``, ``almost_solved``, ``max_iterations``, …), or
        ``trivial`` when H = 0 and c = 0 (every v gives R = E[y²]).
    l2_cap, l1_cap : float
    second_moment : float
        E[y²].
    lambda_min : float
        Smallest eigenvalue of the symmetrized H (float64).
    support : float
        The bound on the support term max_{v∈K} (−g)ᵀv used (g = ∇R(v̂)).
    eig_allowance, arith_allowance : float
        The negative-eigenvalue and float-arithmetic allowances subtracted from the lower value.
    iterations : int
        Clarabel's iteration count.
    """

    upper: float
    lower: float
    head: np.ndarray
    status: str
    l2_cap: float
    l1_cap: float
    second_moment: float
    lambda_min: float
    support: float
    eig_allowance: float
    arith_allowance: float
    iterations: int = 0

    @property
    def risk(self) -> float:
        """The attained (feasible, upper) risk R̄."""
        return self.upper

    @property
    def gap(self) -> float:
        """R̄ − R̲ (≥ 0)."""
        return self.upper - self.lower

    def as_dict(self, prefix: str = "bounded") -> dict:
        """Flat record: lower and upper risks, status and the caps."""
        return {f"{prefix}_lower": self.lower, f"{prefix}_upper": self.upper,
                f"{prefix}_status": self.status, f"{prefix}_l2_cap": self.l2_cap,
                f"{prefix}_l1_cap": self.l1_cap}


def default_caps(student, teacher) -> tuple[float, float]:
    """(32/J_α, 64√r/J_α) of eq. (6): J_α = 1 − α for the leaky slope α (1 for relu), r the
    teacher rank (rows of ``teacher.subspace``)."""
    J = 1.0 - float(student.act.negative_slope) if student.act.name == "leaky_relu" else 1.0
    r = int(np.asarray(teacher.subspace).shape[0])
    return L2_CAP / J, L1_CAP * math.sqrt(r) / J


def _check_caps(student, teacher, l2_cap, l1_cap):
    d2, d1 = default_caps(student, teacher)
    l2 = d2 if l2_cap is None else V.real("l2_cap", l2_cap, positive=True)
    l1 = d1 if l1_cap is None else V.real("l1_cap", l1_cap, positive=True)
    return float(l2), float(l1)


def check_bounded_student(student) -> None:
    """The bounded refit is defined for the paper's σ_α students: the ridge family with a relu or
    leaky_relu activation (one clear error otherwise)."""
    fam = family_of(student)
    if (capability(fam, "ridge_readout") is None
            or student.act.name not in ("relu", "leaky_relu")):
        raise ValueError("the bounded refit of eq. (6) needs a relu or leaky_relu student of the "
                         f"ridge family (no skip), got {fam.label} students with activation "
                         f"{getattr(student, 'activation', None)!r}")


def feature_norms(params) -> np.ndarray:
    """√(‖W_j‖² + B_j²) of every neuron (the normalization of eq. (6))."""
    return np.sqrt(np.sum(params.W * params.W, axis=1) + params.b * params.b)


def bounded_problem(student, params, teacher, *, l2_cap=None, l1_cap=None,
                    rtol: float = 1e-10) -> BoundedProblem:
    """The quadratic (H, c, E[y²]) of eq. (6) from the population moments of ``student``.

    H_ij = E[σ_iσ_j]/(n_i n_j) and c_i = E[σ_i y]/n_i with n_i = √(‖W_i‖² + B_i²) from the
    engine's moments C = E[σ_iσ_j] and Ct·v = E[σ_i y]; a zero row (n_i = 0) gives a zero
    feature.  The output scale, the heads and the intercept do not enter.
    """
    check_bounded_student(student)
    fam = family_of(student)
    fam.check(params, teacher)
    l2, l1 = _check_caps(student, teacher, l2_cap, l1_cap)
    rtol = V.real("rtol", rtol, positive=True)
    M = fam.moments(params, teacher, need="loss", tol=rtol)
    n = feature_norms(params)
    inv = np.zeros_like(n)
    inv[n > 0] = 1.0 / n[n > 0]
    C = np.asarray(M.C, dtype=np.float64)
    H = inv[:, None] * C * inv[None, :]
    H = 0.5 * (H + H.T)
    c = inv * (np.asarray(M.Ct, dtype=np.float64) @ np.asarray(teacher.weights, dtype=np.float64))
    return BoundedProblem(H, c, float(teacher.second_moment), l2, l1, n)


def fractions_feasible(v: np.ndarray, l2_cap, l1_cap) -> bool:
    """‖v‖₂ ≤ l2_cap and ‖v‖₁ ≤ l1_cap in exact rational arithmetic (floats are dyadic)."""
    from fractions import Fraction

    q = [Fraction(float(x)) for x in v]
    a, b = Fraction(l2_cap), Fraction(l1_cap)
    return sum(x * x for x in q) <= a * a and sum(abs(x) for x in q) <= b


def make_feasible(v: np.ndarray, l2_cap, l1_cap) -> np.ndarray:
    """``v`` scaled into K = {‖v‖₂ ≤ l2_cap, ‖v‖₁ ≤ l1_cap} so that membership holds exactly
    (checked in rational arithmetic; ``l2_cap`` / ``l1_cap`` are the exact float values)."""
    v = np.where(np.isfinite(v), v, 0.0)
    n2, n1 = _norm(v), float(np.sum(np.abs(v)))
    f = min(1.0, l2_cap / n2 if n2 > 0 else 1.0, l1_cap / n1 if n1 > 0 else 1.0)
    v = v * f
    k = 1.0
    for _ in range(80):
        if fractions_feasible(v, l2_cap, l1_cap):
            return v
        v = v * (1.0 - k * _EPS)
        k *= 2.0
    raise RuntimeError("could not scale the refit coefficients into the caps (please report)")  # pragma: no cover


def support_split(u: np.ndarray, a: float, b: float) -> tuple[float, float]:
    """(τ, value): a bound value = a‖u − clip(u, −τ, τ)‖₂ + bτ on the support function
    h_K(u) = max_{v∈K} uᵀv of K = {‖v‖₂ ≤ a} ∩ {‖v‖₁ ≤ b}.

    h_K is the infimal convolution of h_{l2}(u₁) = a‖u₁‖₂ and h_{l1}(u₂) = b‖u₂‖_∞ over
    u₁ + u₂ = u; for ‖u₂‖_∞ ≤ τ the best u₂ is clip(u, −τ, τ), so h_K(u) = min_τ φ(τ),
    φ(τ) = a‖(|u| − τ)₊‖₂ + bτ, convex in τ.  τ = 0 gives a‖u‖₂, τ = ‖u‖_∞ gives b‖u‖_∞; the
    minimum over τ is located by golden-section search and every τ gives a valid bound.
    """
    au = np.abs(u)
    top = float(np.max(au, initial=0.0))

    def phi(t):
        return a * _norm(np.maximum(au - t, 0.0)) + b * t

    best_t, best = 0.0, phi(0.0)
    if top > 0:
        for t in (top, *np.unique(au)):
            val = phi(float(t))
            if val < best:
                best_t, best = float(t), val
        lo, hi = 0.0, top
        g = 0.5 * (math.sqrt(5.0) - 1.0)
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        f1, f2 = phi(x1), phi(x2)
        for _ in range(120):
            if f1 <= f2:
                hi, x2, f2 = x2, x1, f1
                x1 = hi - g * (hi - lo)
                f1 = phi(x1)
            else:
                lo, x1, f1 = x1, x2, f2
                x2 = lo + g * (hi - lo)
                f2 = phi(x2)
        for t, val in ((x1, f1), (x2, f2)):
            if val < best:
                best_t, best = float(t), val
    return best_t, best


def _clarabel_solve(H, c, a, b, *, tol, max_iter):
    """min vᵀHv − 2cᵀv over ‖v‖₂ ≤ a, ‖v‖₁ ≤ b with Clarabel (SOC for the l2 ball, the l1 ball
    by −t ≤ v ≤ t, Σt ≤ b, and the quadratic as ‖w‖² with w = Fv, FᵀF = H₊ the PSD part of H).
    Returns (v, status, iterations)."""
    import clarabel
    import scipy.sparse as sp

    m = c.shape[0]
    lam, Q = np.linalg.eigh(H)
    keep = lam > 0
    F = np.sqrt(lam[keep])[:, None] * Q[:, keep].T          # (k, m), FᵀF = H₊
    k = F.shape[0]
    n = 2 * m + k
    P = sp.block_diag([sp.csc_matrix((2 * m, 2 * m)), 2.0 * sp.identity(k, format="csc")],
                      format="csc")
    q = np.concatenate([-2.0 * c, np.zeros(m + k)])
    I, Z = sp.identity(m, format="csc"), sp.csc_matrix((m, m))
    rows = []
    bvec = []
    if k:
        rows.append(sp.hstack([sp.csc_matrix(F), sp.csc_matrix((k, m)),
                               -sp.identity(k, format="csc")]))      # Fv − w = 0
        bvec.append(np.zeros(k))
    zk = sp.csc_matrix((m, k))
    rows += [sp.hstack([I, -I, zk]), sp.hstack([-I, -I, zk]),       # ±v − t ≤ 0
             sp.hstack([sp.csc_matrix((1, m)), sp.csc_matrix(np.ones((1, m))),
                        sp.csc_matrix((1, k))]),                     # Σt ≤ b
             sp.csc_matrix((1, n)),                                  # SOC head: a
             sp.hstack([-I, Z, zk])]                                 # SOC tail: v
    bvec += [np.zeros(2 * m), [b], [a], np.zeros(m)]
    A = sp.vstack(rows, format="csc")
    bv = np.concatenate([np.asarray(x, dtype=float) for x in bvec])
    cones = ([clarabel.ZeroConeT(k)] if k else []) + [clarabel.NonnegativeConeT(2 * m + 1),
                                                      clarabel.SecondOrderConeT(m + 1)]
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.max_iter = int(max_iter)
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = float(tol)
    st.max_threads = 1
    sol = clarabel.DefaultSolver(sp.triu(P, format="csc"), q, A, bv, cones, st).solve()
    v = np.array(sol.x[:m], dtype=np.float64)
    status = re.sub(r"(?<!^)(?=[A-Z])", "_", str(sol.status).split(".")[-1]).lower()
    return v, status, int(sol.iterations)


def bounded_lower(prob: BoundedProblem, v: np.ndarray, lam_min: float, lam_abs: float) -> dict:
    """The first-order support-function lower value at a feasible ``v`` (paper App. A).

    For convex R, inf_K R ≥ R(v) + min_{u∈K} gᵀ(u − v), g = ∇R(v) = 2(Hv − c), and
    min_{u∈K} gᵀu = −h_K(−g) ≥ −min_τ φ(τ) (:func:`support_split`).  When H has a negative
    eigenvalue (rounding, or asymmetric quadrature moments), (u − v)ᵀH(u − v) ≥
    λ̲‖u − v‖² ≥ λ̲(l2_cap + ‖v‖₂)² is added, with λ̲ = ``lam_min`` − 4mε·``lam_abs`` (the
    float eigensolver's error; ``lam_abs`` = max|λ(H)|).  The float64 evaluation is covered by an allowance
    16(m + 4)ε times the absolute sizes of the terms.  Returns lower, support, eig_allowance,
    arith_allowance.
    """
    H, c, a, b = prob.H, prob.c, prob.l2_cap, prob.l1_cap
    m = prob.m
    Hv = H @ v
    g = 2.0 * (Hv - c)
    R = prob.risk(v)
    tau, supp = support_split(-g, a, b)
    lam_lo = lam_min - 4.0 * m * _EPS * lam_abs
    eig = -lam_lo * (a + _norm(v)) ** 2 if lam_lo < 0 else 0.0
    av = np.abs(v)
    gabs = 2.0 * (np.abs(H) @ av + np.abs(c))
    scale = (prob.second_moment + 2.0 * float(np.abs(c) @ av) + float(av @ (np.abs(H) @ av))
             + float(gabs @ av) + a * _norm(gabs) + b * tau + supp)
    arith = 16.0 * (m + 4) * _EPS * scale
    lower = R - float(g @ v) - supp - eig - arith
    return dict(lower=lower, support=supp, eig_allowance=eig, arith_allowance=arith, tau=tau)


def solve_bounded(prob: BoundedProblem, *, tol: float = 1e-11, max_iter: int = 200) -> BoundedRefit:
    """min R(v) over ‖v‖₂ ≤ l2_cap, ‖v‖₁ ≤ l1_cap (eq. (6)): Clarabel, then a bracket.

    The Clarabel point is scaled into the caps until membership holds in exact arithmetic; its
    float64 risk is the upper value R̄ and :func:`bounded_lower` the lower value R̲.  The lower
    value holds for the float moments whatever the solver's accuracy (it only needs v̂
    feasible); the solver's accuracy decides how tight it is.  Features with a zero row and
    column of H and a zero c_j get v_j = 0.
    """
    tol = V.real("tol", tol, positive=True)
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"`max_iter` must be a positive int, got {max_iter!r}")
    H, c, a, b = prob.H, prob.c, prob.l2_cap, prob.l1_cap
    m = prob.m
    active = (np.any(H != 0.0, axis=1) | (c != 0.0))
    idx = np.flatnonzero(active)
    v = np.zeros(m)
    iters = 0
    lam_min = lam_abs = 0.0
    if idx.size:
        Ha = H[np.ix_(idx, idx)]
        lam = np.linalg.eigvalsh(Ha)
        lam_min, lam_abs = float(lam[0]), float(np.max(np.abs(lam)))
        va, status, iters = _clarabel_solve(Ha, c[idx], a, b, tol=tol, max_iter=max_iter)
        v[idx] = va
    else:
        status = "trivial"
    v = make_feasible(v, a, b)
    # zero rows of H leave (u − v)ᵀH(u − v) to the active block: its λ_min is the one needed
    lb = bounded_lower(prob, v, lam_min, lam_abs)
    upper = prob.risk(v)
    lower = min(float(lb["lower"]), upper)
    return BoundedRefit(upper=upper, lower=lower, head=v, status=status, l2_cap=a, l1_cap=b,
                        second_moment=prob.second_moment, lambda_min=lam_min,
                        support=float(lb["support"]), eig_allowance=float(lb["eig_allowance"]),
                        arith_allowance=float(lb["arith_allowance"]), iterations=iters)


def bounded_refit(student, params, teacher, *, l2_cap=None, l1_cap=None, rtol: float = 1e-10,
                  tol: float = 1e-11) -> BoundedRefit:
    """The bounded normalized-feature refit R(n) of Kumar (arXiv 2609.39408), eq. (6).

    R = inf E[(y − Σ_j v_jφ_j)²] over ‖v‖₂ ≤ 32/J_α, ‖v‖₁ ≤ 64√r/J_α (J_α = 1 − α), with
    φ_j = σ_α(W_jᵀx + B_j)/√(‖W_j‖² + B_j²) (a zero row gives a zero feature), no intercept
    and no ridge: R(v) = E[y²] − 2cᵀv + vᵀHv (the paper writes 1 − 2cᵀv + vᵀHv since its
    teachers have E[y²] = 1).  Solved by Clarabel as in the paper (App. A); the result keeps
    the feasible upper value R̄ and the support-function lower value R̲ apart
    (:func:`solve_bounded`).

    Parameters
    ----------
    student : Student
        relu or leaky_relu (α = ``negative_slope``), ridge family; heads, output scale and
        intercept do not enter.
    params : Params
    teacher : Teacher
    l2_cap, l1_cap : float, optional
        The caps (default 32/J_α and 64√r/J_α, r the teacher rank).
    rtol : float
        Accuracy of the engine's moments.
    tol : float
        Clarabel's gap and feasibility tolerances.

    Returns
    -------
    BoundedRefit
        ``lower``, ``upper`` (= ``risk``), ``head`` (the feasible v̂), ``status``.

    Examples
    --------
    >>> import numpy as np, popdyn
    >>> from popdyn.diagnostics import bounded_refit
    >>> T = popdyn.Teacher.additive("h3", np.eye(4)[:2])
    >>> S = popdyn.Student(d=4, m=6)
    >>> r = bounded_refit(S, S.init(0, 1.0, T), T)
    >>> 0.0 <= r.lower <= r.upper <= T.second_moment + 1e-12
    True

    References
    ----------
    Kumar (arXiv 2609.39408), eq. (6) and App. A ("Constrained refitting and its numerical
    error"); docs/design.md §5.
    """
    prob = bounded_problem(student, params, teacher, l2_cap=l2_cap, l1_cap=l1_cap, rtol=rtol)
    return solve_bounded(prob, tol=tol)


def refit_gain(R0, RE, *, margin: float = GAIN_MARGIN) -> float:
    """The conservative refit gain Δ̂ = R̲₀ − R̄_E − margin of Kumar (arXiv 2609.39408), App. A.

    ``R0`` and ``RE`` are refit results with ``lower`` and ``upper`` attributes (a
    :class:`BoundedRefit`, or a :class:`certify.BoundedRefitBracket`) at the reference
    checkpoint (initialization) and at the compared one; ``margin`` defaults to 1e−5.
    """
    for nm, r in (("R0", R0), ("RE", RE)):
        if not (hasattr(r, "lower") and hasattr(r, "upper")):
            raise TypeError(f"`{nm}` must be a refit result with `lower` and `upper` "
                            f"(e.g. popdyn.diagnostics.bounded_refit), got {type(r).__name__}")
    margin = V.real("margin", margin)
    if margin < 0:
        raise ValueError(f"`margin` must be >= 0, got {margin!r}")
    return float(R0.lower) - float(RE.upper) - margin
