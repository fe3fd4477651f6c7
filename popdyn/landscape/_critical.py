r"""Critical points of the exact population loss: reduced coordinates, finder, classifier.

Reduced coordinates (positive homogeneity).  For a bias-free relu / leaky-relu unit,
a σ(w·x) = ε σ(u·x) with ε = sign(a) and u = |a| w, so the loss is invariant along the orbit
(a, w) → (a/λ, λw) (λ > 0) and its Hessian in (a, W) is singular there.  We work in

    u_i = |a_i| w_i  (i = 1..m),  the signs ε_i = sign(a_i) fixed,  plus v (skip) and c (intercept),

i.e. the student f = s Σ_i ε_i σ(u_i·x) + v·x + c; the reduced loss is the full loss at
a = ε, W = U, and its gradient / Hessian are the (W, v, c) blocks of :func:`loss_grad_hessian`
there.  ("Mass and direction" coordinates (|u_i|, u_i/|u_i|) are a further change of variables
of the same space.)  :func:`certify.critical_point` uses the same reduction.
Reduced vector order: U (m·d row-major), v (d; skip students), c (intercept students).

Students with biases: a σ(w·x + b) = ε σ(u·x + β) with (u, β) = |a|(w, b), so the orbit is
(a, w, b) → (a/λ, λw, λb) and the reduced coordinates are ũ_i = (u_i, β_i) = |a_i|(w_i, b_i),
signs fixed; the reduced loss is the full loss at a = ε, W = U, b = B and its derivatives are
the (W, b, v, c) blocks of :func:`loss_grad_hessian` (formulas B-1..B-10 of
:mod:`popdyn.landscape._biased`).  Vector order U, B (m), v, c; a unit's mass is |ũ_i|;
deduplication merges units of the same sign and direction ũ/|ũ|; the boundary test samples
directions ũ on the unit sphere of R^{d+1} and G(ũ) = s·ε·E[(f − y)σ(u·x + β)] from the same
moments (:func:`popdyn.landscape._biased.new_unit_correlation`).  ``certify.critical_point``
stays bias-free.

Finder: trust-region Newton with the exact Hessian (``scipy.optimize.minimize``,
``method="trust-exact"``) from declared starts, followed by Newton polishing (least-squares
steps on ∇L = 0 with the exact Hessian), or ``method="newton"`` (Levenberg–Marquardt on
∇L = 0: converges to saddles as well as minima).  A unit whose mass |u_i| falls below
``prune`` × max(largest mass, √V_Y) is removed (a unit of zero output weight: a boundary point of the
non-negative-weight problem), and the search continues at the smaller width; the point keeps
the count of pruned units.  Results are deduplicated up to permutation of units of the same
sign (and, for the key only, merging units of the same sign and direction, whose mass split
is a flat direction).

Classifier (:func:`classify`): ``global_min`` (loss ≤ ``loss_tol`` · V_Y, or within that of
``best_known``), ``strict_local_min`` (λ_min(∇²L) > eig_tol), ``saddle`` (λ_min < −eig_tol),
``degenerate`` (otherwise: PSD with eigenvalues within ±eig_tol of 0), or ``not_critical``
(|∇L| > gtol); eig_tol = ``eig_rtol`` · max|λ|.  A point with pruned units is also tested on
the boundary: the one-sided derivative G(θ) = ∂L/∂t of adding a unit tθ (t ≥ 0) must be ≥ 0
for every direction θ (``boundary_min``; sampled on a grid: numerical); min_θ G < 0 makes it
``saddle`` (a descent direction that adds a unit).

References
----------
"Removing spurious minima for planar features by skip connections";
docs/design.md §7 (the gauge orbit (a, w) → (λa, w/λ) of positively homogeneous units).
"""
from __future__ import annotations

import warnings
from typing import Any
from dataclasses import dataclass, field

import numpy as np

from ..models import Params, Student
from ._biased import new_unit_correlation
from ._hessian import _require, layout, loss_grad_hessian, pl_kernel, _SQ2PI

KINDS = ("global_min", "strict_local_min", "saddle", "degenerate", "not_critical")
METHODS = ("trust-exact", "newton")


# ------------------------------------------------------------------------------ reduced
@dataclass(frozen=True)
class Reduced:
    """A state in reduced coordinates: signs ε (m,), U (m, d), v (d,), c and, for a student with
    biases, B (m,) (β_i = |a_i| b_i; None for bias-free students); ``student`` is the student
    of width m the state belongs to."""

    student: Student
    signs: np.ndarray
    U: np.ndarray
    v: np.ndarray
    c: float = 0.0
    B: np.ndarray | None = None

    def biases(self) -> np.ndarray:
        """β (m,): B, or zeros for a bias-free student."""
        return np.zeros(self.m) if self.B is None else np.asarray(self.B, float)

    def units(self) -> np.ndarray:
        """ũ_i = (u_i, β_i) (m, d+1) for students with biases, u_i (m, d) otherwise."""
        if self.student.bias:
            return np.column_stack([self.U, self.biases()])
        return self.U

    @property
    def m(self) -> int:
        return self.U.shape[0]

    def vector(self) -> np.ndarray:
        parts: list[Any] = [self.U.ravel()]
        if self.student.bias:
            parts.append(self.biases())
        if self.student.skip:
            parts.append(self.v)
        if self.student.intercept:
            parts.append([self.c])
        return np.concatenate([np.asarray(p, float).ravel() for p in parts])

    def params(self):
        """The full-coordinate :class:`popdyn.Params` (a = ε, W = U)."""
        st = self.student
        return Params(self.signs.astype(float), self.U, self.biases() if st.bias else np.zeros(self.m),
                      self.c if st.intercept else 0.0, self.v if st.skip else None)

    def with_vector(self, x) -> "Reduced":
        st = self.student
        m, d = self.m, st.d
        x = np.asarray(x, float)
        U = x[:m * d].reshape(m, d)
        k = m * d
        B = x[k:k + m].copy() if st.bias else None
        k += m if st.bias else 0
        v = x[k:k + d] if st.skip else np.zeros(d)
        k += d if st.skip else 0
        c = float(x[k]) if st.intercept else 0.0
        return Reduced(st, self.signs, U.copy(), np.array(v, float), c, B)

    def masses(self) -> np.ndarray:
        """|u_i| (bias-free) or |ũ_i| = |(u_i, β_i)| (with biases)."""
        return np.linalg.norm(self.units(), axis=1)

    def drop(self, keep) -> "Reduced":
        """The state without the units where ``keep`` is False (the student of the smaller width;
        with ``mean_field`` scaling s = 1/m the kept u_i are multiplied by m′/m, which by positive
        homogeneity leaves f unchanged)."""
        keep = np.asarray(keep, bool)
        m2 = int(keep.sum())
        st = self.student.replace(m=m2)
        U = self.U[keep]
        B = None if self.B is None else self.biases()[keep]
        if self.student.scaling == "mean_field":
            U = U * (m2 / self.m)
            B = None if B is None else B * (m2 / self.m)
        return Reduced(st, self.signs[keep], U, self.v, self.c, B)


def reduce(student, params) -> Reduced:
    """(a, W, b, v, c) → reduced coordinates u_i = |a_i| w_i (and β_i = |a_i| b_i for students
    with biases), ε_i = sign(a_i) (a_i ≠ 0 required)."""
    if student.act.kind != "pl":
        raise ValueError("reduced coordinates are defined for relu / leaky_relu students "
                         "(positive homogeneity)")
    student.check(params)
    if np.any(params.a == 0):
        raise ValueError("`params.a` has a zero entry: its unit has no sign (drop it first)")
    B = np.abs(params.a) * params.b if student.bias else None
    return Reduced(student, np.sign(params.a), np.abs(params.a)[:, None] * params.W,
                   params.v.copy(), params.c, B)


def reduced_loss_grad_hessian(r: Reduced, teacher, *, hessian: bool = True):
    """(L, ∇L, ∇²L) in reduced coordinates (the (W, v, c) blocks of the full ones at a = ε)."""
    L, g, H = loss_grad_hessian(r.student, r.params(), teacher, hessian=hessian)
    lay = layout(r.student)
    idx = np.r_[np.arange(lay.W.start, lay.W.stop), np.arange(lay.b.start, lay.b.stop),
                np.arange(lay.v.start, lay.v.stop), np.arange(lay.c.start, lay.c.stop)]
    return L, g[idx], (H[np.ix_(idx, idx)] if hessian else None)


def boundary_derivative(r: Reduced, teacher, directions, sign: float = 1.0) -> np.ndarray:
    """G(θ) = ∂L/∂t at t = 0 of adding a unit of sign ``sign`` and weights tθ (rows of
    ``directions``, unit vectors): s·sign·E[(f − y) σ(θ·x)] in closed form (H-2).  For a
    student with biases the rows are θ̃ = (θ, β) in R^{d+1} (the unit tσ(θ·x + β)); with biases
    on either side G comes from :func:`popdyn.landscape._biased.new_unit_correlation`."""
    st = r.student
    _require(st, teacher)
    if st.bias or np.any(teacher.bias != 0):
        Th = np.asarray(directions, float)
        Th = Th / np.linalg.norm(Th, axis=1, keepdims=True)
        d = st.d
        bn = Th[:, d] if st.bias else np.zeros(Th.shape[0])
        return sign * st.s * new_unit_correlation(st, r.params(), teacher, Th[:, :d], bn)
    s, p, q = st.s, st.act.p, st.act.q
    Th = np.asarray(directions, float)
    Th = Th / np.linalg.norm(Th, axis=1, keepdims=True)
    U = teacher.theta * teacher.alpha[:, None]
    nz = teacher.alpha > 0
    pt, qt = teacher.activation.p, teacher.activation.q
    Ef = s * (pl_kernel(Th, p, q, r.U, p, q, hessian=False)[0] @ r.signs)
    Ey = pl_kernel(Th, p, q, U[nz], pt, qt, hessian=False)[0] @ teacher.weights[nz]
    mu1 = p / 2 + q
    Ef = Ef + r.c * p / _SQ2PI + mu1 * (Th @ r.v)
    return sign * s * (Ef - Ey)


def _sphere(d, n, seed=0):
    if d == 2:
        t = np.linspace(0, 2 * np.pi, n, endpoint=False)
        return np.column_stack([np.cos(t), np.sin(t)])
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# ------------------------------------------------------------------------------ classify
@dataclass(frozen=True)
class Classification:
    """The kind of a (near-)critical point and the numbers it rests on: ``loss`` is
    L = ½E[(f − y)²], ``loss_normalized`` the normalized loss MSE/V_Y = 2L/V_Y (docs/design.md §2),
    ``eigenvalues`` those of the reduced Hessian (ascending), ``eig_tol`` the zero band."""

    kind: str
    loss: float
    loss_normalized: float
    grad_norm: float
    eigenvalues: np.ndarray
    eig_tol: float
    gtol: float
    pruned: int = 0
    boundary_min_G: float | None = None
    reason: str = ""

    @property
    def lambda_min(self) -> float:
        return float(self.eigenvalues[0]) if self.eigenvalues.size else float("nan")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "loss": self.loss, "loss_normalized": self.loss_normalized,
                "grad_norm": self.grad_norm, "lambda_min": self.lambda_min,
                "lambda_max": float(self.eigenvalues[-1]) if self.eigenvalues.size else None,
                "n_negative": int(np.sum(self.eigenvalues < -self.eig_tol)),
                "n_zero": int(np.sum(np.abs(self.eigenvalues) <= self.eig_tol)),
                "eig_tol": self.eig_tol, "pruned": self.pruned,
                "boundary_min_G": self.boundary_min_G, "reason": self.reason}


def classify(r: Reduced, teacher, *, best_known: float | None = None, gtol: float = 1e-8,
             loss_tol: float = 1e-10, eig_rtol: float = 1e-7, pruned: int = 0,
             boundary_grid: int = 3600, boundary_signs=(1.0,)) -> Classification:
    """Classify the reduced state ``r`` (see the module docstring for the rules).

    Parameters
    ----------
    best_known : float, optional
        The best known loss value (a point within ``loss_tol``·V_Y of it is ``global_min``).
    gtol : float
        Largest |∇L| of a critical point.
    loss_tol : float
        Normalized-loss tolerance of ``global_min``.
    eig_rtol : float
        Eigenvalues within ±eig_rtol·max|λ| of 0 count as zero.
    pruned : int
        Units removed on the way (> 0 triggers the boundary test on ``boundary_grid`` directions:
        a grid on the circle for d = 2, seeded random unit vectors otherwise).
    boundary_signs : sequence of ±1
        Signs of the removed units (a unit may come back with these signs only).

    ``r`` may also be a pair ``(student, params)``: the rules are then applied to the full
    Hessian :func:`loss_grad_hessian` (for smooth students, which have no homogeneity
    reduction; ``pruned`` must be 0).
    """
    if isinstance(r, tuple):          # (student, params) in full coordinates (smooth students)
        L, g, H = loss_grad_hessian(r[0], r[1], teacher)
    else:
        L, g, H = reduced_loss_grad_hessian(r, teacher)
    lam = np.linalg.eigvalsh(H)
    tol = eig_rtol * max(1.0, float(np.max(np.abs(lam))))
    gn = float(np.linalg.norm(g))
    vy = float(teacher.variance)
    Ln = 2.0 * L / vy             # normalized loss MSE / V_Y (docs/design.md §2)
    Gmin = None
    if pruned:
        if isinstance(r, tuple):
            raise ValueError("`pruned` must be 0 when `r` is a (student, params) pair")
        dirs = _sphere(r.student.d + (1 if r.student.bias else 0), boundary_grid)
        G = np.concatenate([boundary_derivative(r, teacher, dirs, float(e))
                            for e in sorted(set(boundary_signs))])
        Gmin = float(G.min())
    common: dict[str, Any] = dict(loss=float(L), loss_normalized=float(Ln), grad_norm=gn,
                                  eigenvalues=lam, eig_tol=tol, gtol=gtol, pruned=pruned,
                                  boundary_min_G=Gmin)
    if gn > gtol:
        return Classification("not_critical", reason=f"|∇L| = {gn:.3g} > gtol = {gtol:.3g}", **common)
    if Ln <= loss_tol or (best_known is not None and abs(L - best_known) <= loss_tol * vy):
        return Classification("global_min", reason=f"normalized loss {Ln:.3g} at the global value",
                              **common)
    if lam[0] < -tol:
        return Classification("saddle", reason=f"λ_min = {lam[0]:.3g} < −{tol:.3g}", **common)
    if Gmin is not None and Gmin < -gtol:
        return Classification("saddle", reason=f"boundary: adding a unit descends (min G = {Gmin:.3g})",
                              **common)
    if lam[0] > tol:
        return Classification("strict_local_min", reason=f"λ_min = {lam[0]:.3g} > {tol:.3g}", **common)
    return Classification("degenerate", reason=f"|λ_min| = {abs(lam[0]):.3g} ≤ {tol:.3g}", **common)


# ------------------------------------------------------------------------------ finder
@dataclass
class CriticalPoint:
    """A critical point found by :func:`find_critical_points` (reduced coordinates)."""

    point: Reduced
    classification: Classification
    starts: list = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.classification.kind

    @property
    def loss(self) -> float:
        return self.classification.loss

    def directions(self, merge_angle: float = 1e-6) -> np.ndarray:
        """Distinct unit directions of positive mass (units within ``merge_angle`` rad merged)."""
        return _distinct(self.point.U / np.linalg.norm(self.point.U, axis=1, keepdims=True),
                         merge_angle)


def _distinct(Th, ang):
    out = []
    for t in Th:
        if not any(np.arccos(np.clip(t @ o, -1, 1)) <= ang for o in out):
            out.append(t)
    return np.array(out)


def _canonical(r: Reduced, ang=1e-6):
    """Same-sign, same-direction units merged (their mass split is a flat direction)."""
    units: list[tuple[float, np.ndarray]] = []
    for e, u in zip(r.signs, r.units()):
        t = u / np.linalg.norm(u)
        for k, (e2, u2) in enumerate(units):
            if e2 == e and np.arccos(np.clip(t @ (u2 / np.linalg.norm(u2)), -1, 1)) <= ang:
                units[k] = (e2, u2 + u)
                break
        else:
            units.append((e, u.copy()))
    return units


def same_point(r1: Reduced, r2: Reduced, tol: float = 1e-6) -> bool:
    """Whether two reduced states agree up to permutation of same-sign units (and merging of
    same-sign parallel units), v and c, within ``tol`` (relative)."""
    from scipy.optimize import linear_sum_assignment
    c1, c2 = _canonical(r1), _canonical(r2)
    if len(c1) != len(c2):
        return False
    scale = 1.0 + max(np.linalg.norm(r1.vector()), np.linalg.norm(r2.vector()))
    if np.linalg.norm(r1.v - r2.v) > tol * scale or abs(r1.c - r2.c) > tol * scale:
        return False
    C = np.array([[np.linalg.norm(u1 - u2) + (0.0 if e1 == e2 else 1e6) for e2, u2 in c2]
                  for e1, u1 in c1])
    i, j = linear_sum_assignment(C)
    return bool(np.max(C[i, j]) <= tol * scale)


def polish(r, teacher, gtol, steps=30):
    """Newton polishing of the reduced point ``r`` (:class:`Reduced`): up to ``steps`` least-squares
    Newton steps on the exact reduced gradient and Hessian, stopping once |∇L| ≤ 1e-3·``gtol`` or
    when a unit would vanish; returns the iterate of smallest |∇L| (a :class:`Reduced`)."""
    x = r.vector()
    best = None
    for _ in range(steps):
        L, g, H = reduced_loss_grad_hessian(r.with_vector(x), teacher)
        gn = np.linalg.norm(g)
        if best is None or gn < best[0]:
            best = (gn, x.copy())
        if gn <= 1e-3 * gtol:
            break
        dx = np.linalg.lstsq(H, g, rcond=1e-13)[0]
        x = x - dx
        if np.any(np.linalg.norm(r.with_vector(x).U, axis=1) == 0) or not np.all(np.isfinite(x)):
            break
    return r.with_vector(best[1])


def _run(r, teacher, method, gtol, maxiter):
    from scipy.optimize import least_squares, minimize

    def fun(x):
        rr = r.with_vector(x)
        wn = np.linalg.norm(rr.U, axis=1)
        if not np.all(np.isfinite(x)) or np.min(wn) <= 1e-12 * max(np.max(rr.masses()), 1e-300):
            return np.inf           # a unit through 0 (no Hessian there): the step is rejected
        return reduced_loss_grad_hessian(rr, teacher, hessian=False)[0]

    def jac(x):
        return reduced_loss_grad_hessian(r.with_vector(x), teacher, hessian=False)[1]

    def hess(x):
        return reduced_loss_grad_hessian(r.with_vector(x), teacher)[2]

    last = [r.vector()]

    def keep(xk, *args):
        last[0] = np.array(xk, float)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if method == "trust-exact":
                res = minimize(fun, r.vector(), jac=jac, hess=hess, method="trust-exact",
                               callback=keep, options={"gtol": gtol, "maxiter": maxiter})
            else:
                res = least_squares(jac, r.vector(), jac=hess, method="lm", xtol=1e-15,
                                    ftol=1e-15, gtol=1e-15, max_nfev=maxiter)
            x = res.x
        except ValueError:
            # scipy's trust-region ratio becomes 0/0 once the loss reaches its rounding level
            # (near a zero-loss minimum); the last accepted iterate goes on to Newton polishing
            x = last[0]
    return r.with_vector(x)


def find_critical_points(student, teacher, starts, *, method: str = "trust-exact",
                         gtol: float = 1e-9, maxiter: int = 400, prune: float = 1e-6,
                         best_known: float | None = None, dedup_tol: float = 1e-6,
                         loss_tol: float = 1e-10, eig_rtol: float = 1e-7):
    """Critical points of the exact loss reached from ``starts`` (reduced coordinates).

    Parameters
    ----------
    student : popdyn.Student
        Relu / leaky relu, with or without biases (skip and intercept free).
    teacher : popdyn.Teacher
        Relu / leaky relu network teacher, with or without biases.
    starts : sequence of popdyn.Params or Reduced
        Declared starting points (their signs of a are kept fixed).
    method : {"trust-exact", "newton"}
    gtol : float
        Gradient-norm threshold of a critical point (after polishing).
    prune : float
        Mass (relative to max(largest mass, √V_Y)) below which a unit is removed.

    Returns
    -------
    points : list of CriticalPoint
        Deduplicated; ``point.starts`` lists the start indices that reached it.
    failures : list of (int, str)
        Starts that ended at no critical point (|∇L| > gtol), with the reason.
    """
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}")
    _require(student, teacher)
    points: list[CriticalPoint] = []
    failures: list[tuple[int, str]] = []
    # masses are compared with the larger of the largest unit and the teacher's scale √V_Y
    # (so that a state whose units all die is recognized as such)
    ref = np.sqrt(float(teacher.variance))
    for k, s0 in enumerate(starts):
        r = reduce(student, s0) if isinstance(s0, Params) else s0
        pruned = 0
        psigns: set[float] = set()
        try:
            for _ in range(student.m + 1):
                r = _run(r, teacher, method, gtol, maxiter)
                mass = r.masses()
                keep = mass > prune * max(mass.max(), ref)
                if keep.all():
                    r = polish(r, teacher, gtol)
                    mass = r.masses()
                    keep = mass > prune * max(mass.max(), ref)
                    if keep.all():
                        break
                if not keep.any():
                    raise ValueError("every unit died")
                pruned += int((~keep).sum())
                psigns.update(float(e) for e in r.signs[~keep])
                r = r.drop(keep)
        except (ValueError, np.linalg.LinAlgError) as exc:
            failures.append((k, f"{type(exc).__name__}: {exc}"))
            continue
        cl = classify(r, teacher, best_known=best_known, gtol=gtol, loss_tol=loss_tol,
                      eig_rtol=eig_rtol, pruned=pruned, boundary_signs=tuple(psigns) or (1.0,))
        if cl.kind == "not_critical":
            failures.append((k, cl.reason))
            continue
        for cp in points:
            if same_point(cp.point, r, dedup_tol):
                cp.starts.append(k)
                break
        else:
            points.append(CriticalPoint(r, cl, [k]))
    return points, failures
