"""Refit risk on frozen features (DESIGN §5; seed paper 003, "refit MSE").

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

Numerical notes.  G is formed from the engine's uncentered moments, so a centered variance
G_jj = s²(C_jj − μ_j²) is known only to an absolute error of a few ε·s²C_jj: features with
G_jj ≤ 32ε·s²C_jj are treated as constant (dropped: zero row in G, zero head weight; a neuron
with w_j = 0 is exactly such a feature), and a nearly affine neuron (|w_j| ≪ |b_j|) has a
variance resolved only to relative accuracy ε·b_j²/|w_j|².  In the ball solve, eigen-directions
with λ ≤ m·ε·λ_max are numerically null: the interior candidate omits them (minimum norm) while
the dual keeps their gain, so nothing they could hide is lost from the gap.

All values are float64 numerics, not certificates (the certified versions live in
``certify``).  Lower values are clipped to [0, risk]: the true infimum lies in that range
whenever the float data are exact, so the clip only removes rounding-level inversions.

References
----------
Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt): same-budget refit (Figure 1),
bounded-head refit (Figure 2), projected-feature refit (Figure 1 row four), equilibrated
1e−12 eigencutoff solve (Tables 3–4); DESIGN §5 and §6 (Lagrangian dual lower bound).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.optimize import brentq

from .. import _validate as V
from ..family import RefitProblem, family_of
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
def solve_cutoff(prob: RefitProblem, *, rcond: float = 1e-12, equilibrate: bool = True) -> dict:
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
    return dict(head=a, risk=risk, lower=lower, cutoff=rcond, cutoff_abs=float(cut),
                rank=rank, discarded=discarded, equilibrated=bool(equilibrate),
                status="full_rank" if rank == m else "truncated")


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


def solve_ball(prob: RefitProblem, budget: float) -> dict:
    """min R(a) subject to ‖a‖₂ ≤ budget: the trust-region subproblem, solved exactly.

    See the module docstring.  Returns the head, its attained risk, the dual lower value
    D(μ) = V − cᵀ(Λ+μ)⁻¹c − μB², the multiplier μ and the status.
    """
    B = float(budget)
    m = prob.m
    V_ = prob.variance
    if B == 0.0:
        a = np.zeros(m)
        r = prob.risk(a)
        return dict(head=a, risk=r, lower=r, multiplier=None, status="zero_budget")
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

        hi = _norm(c) / B
        while nrm(hi) > B:                   # rounding guard; mathematically nrm(hi) ≤ B
            hi *= 2.0
        lo = hi
        while nrm(lo) < B and lo > 1e-300:   # nrm(μ) → ‖z0‖ > B as μ → 0
            lo *= 0.01
        if nrm(lo) <= B:
            mu = lo
        else:
            f = lambda t: 1.0 / nrm(np.exp(t)) - 1.0 / B   # increasing in t
            t = brentq(f, np.log(lo), np.log(hi), xtol=1e-15, rtol=4 * _EPS, maxiter=500)
            mu = float(np.exp(t))
        z = c / (lam + mu)
        status = "boundary"
        dual = V_ - float(np.sum(c * z)) - mu * B * B
    a = _into_ball(Q @ z, B)
    risk = prob.risk(a)
    return dict(head=a, risk=risk, lower=_clip_lower(dual, risk), multiplier=mu, status=status)


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


def _check_refit_args(kind, budget, rcond, equilibrate):
    """Validated (budget, rcond, equilibrate) of a refit of ``kind`` (already checked): shared by
    :func:`refit_risk` (every student family) and :func:`certify.refit_risk`."""
    budget = _check_budget(kind, budget)
    rcond = V.real("rcond", rcond, positive=True)
    if not rcond < 1:
        raise ValueError(f"`rcond` must be in (0, 1), got {rcond!r}")
    if not isinstance(equilibrate, (bool, np.bool_)):
        raise TypeError(f"`equilibrate` must be a bool, got {equilibrate!r}")
    return budget, rcond, bool(equilibrate)


def _refit(prob: RefitProblem, kind: str, budget, *, rcond, equilibrate, params=None) -> Refit:
    if budget is None:
        out = solve_cutoff(prob, rcond=rcond, equilibrate=equilibrate)
    else:
        out = solve_ball(prob, budget)
        n = float(np.linalg.norm(out["head"]))
        if not n <= budget:                  # pragma: no cover - guarded by _into_ball
            raise RuntimeError(f"refit head violates ‖a′‖ ≤ {budget}: ‖a′‖ = {n}")
    a = out.pop("head")
    c = prob.intercept(a)
    new = None if params is None else params.replace(a=a, c=c)
    return Refit(kind=kind, variance=prob.variance, head=a, intercept=c, params=new,
                 budget=budget, **out)


def check_kind(kind) -> str:
    """Validate a refit kind (``ValueError`` with a did-you-mean hint)."""
    return V.choice("kind", kind, KINDS)


def refit_risk(student, params, teacher, kind: str = "unrestricted", budget=None, *,
               U=None, rcond: float = 1e-12, equilibrate: bool = True,
               rtol: float = 1e-10) -> Refit:
    """Refit the head and intercept on frozen features and return the risk E[(f′ − y)²].

    Parameters
    ----------
    student : Student
    params : Params
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
        Series tolerance for smooth activations / non-polynomial links.

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
    Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt), refit MSE definitions
    (Figures 1, 2; Tables 3–4); DESIGN §5, §6.
    """
    fam = family_of(student)
    kind = check_kind(kind)
    if kind not in fam.refit_kinds:
        raise ValueError(f"`kind`={kind!r} is not defined for {fam.label} students; use one of "
                         + ", ".join(repr(k) for k in fam.refit_kinds))
    if kind != "projected" and U is not None:
        raise ValueError(f"`U` is only used by kind='projected', got kind={kind!r}")
    fam.check(params, teacher)
    budget, rcond, equilibrate = _check_refit_args(kind, budget, rcond, equilibrate)
    rtol = V.real("rtol", rtol, positive=True)
    if kind == "projected":
        S, axes = teacher_frame(teacher if U is None else U, student.d)
        W = getattr(params, fam.first_layer)
        params = params.replace(**{fam.first_layer: snap_to_axes(W, S, axes)})
    prob = fam.refit_problem(params, teacher, fam.moments(params, teacher, need="loss", tol=rtol))
    if kind == "same_budget":
        budget = float(np.linalg.norm(params.a))
    return _refit(prob, kind, budget, rcond=rcond, equilibrate=bool(equilibrate), params=params)
