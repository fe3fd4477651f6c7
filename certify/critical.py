r"""Certified critical points of the bias-free ReLU population loss.

Problem
-------
Student f(x) = s Σ_j a_j relu(w_j·x) [+ v·x] [+ c] (popdyn ``Student(d, m, "relu", bias=False)``,
optionally ``skip=True`` -- the learned linear skip of :mod:`popdyn.skip` -- and the intercept c
if ``intercept=True``), teacher y = Σ_t α_t relu(z_t·x) (``popdyn.Teacher.network("relu", α, Z)``,
no teacher biases), x ~ N(0, I_d), L = ½E[(f − y)²].

Reduced coordinates
-------------------
relu is positively homogeneous: a relu(w·x) = sgn(a) relu(u·x) with u = |a| w (times s = 1 or
1/m).  The loss depends on (a_j, w_j) only through u_j and the sign ε_j = sgn(a_j), so in the
original coordinates every critical point lies on an m-dimensional orbit (a_j, w_j) → (λa_j,
w_j/λ), λ > 0, and the Hessian there has (at least) m zero eigenvalues: no critical point is
strict.  We work in the reduced coordinates

    x = (u_1, …, u_m [, v] [, c]) ∈ R^{md [+ d] [+ 1]},   ε_j = sgn(a_j) fixed,

in which a *strict* local minimum is possible; it is a (non-strict, exactly orbit-degenerate)
local minimum in the original coordinates, since (a, w) ↦ u is a submersion where a_j ≠ 0 and
the signs cannot change nearby.  A state with balanced heads (a_j = ε_j|w_j|, the gauge that
gradient flow from a balanced start keeps; docs/design.md §7) maps to u_j = |w_j| w_j and back
by a_j = ε_j|u_j|^{1/2}, w_j = u_j/|u_j|^{1/2} (:func:`from_reduced`); other gauges map to the
same u.

Closed forms (arc-cosine kernel, Cho & Saul 2009; gradient and Hessian as in Tian 2017 and
Brutzkus & Globerson 2017).  For u, w ≠ 0 with angle θ, ``sq`` = |u||w| sin θ =
√(Σ_{a<b}(u_a w_b − u_b w_a)²) (Lagrange's identity, no cancellation), q = w − (u·w/|u|²) u (the part of w orthogonal to u):

    K(u, w)   = E[relu(u·x) relu(w·x)] = (sq + (π − θ) u·w)/(2π),      K(u, u) = |u|²/2,
    ∇_u K     = E[1{u·x>0} x relu(w·x)] = ((π − θ) w + (sq/|u|²) u)/(2π),
    ∇²_uu K   = E[δ(u·x) x xᵀ relu(w·x)] = ((sq/|u|²)(I − uuᵀ/|u|²) + qqᵀ/sq)/(2π)   (the kink),
    ∇²_uw K   = E[1{u·x>0}1{w·x>0} x xᵀ]
              = ((π − θ) I + sq (u·w) uuᵀ/(|u|⁴|w|²) − (u·w) qqᵀ/(|w|² sq)
                 + sq (uqᵀ + quᵀ)/(|u|²|w|²))/(2π),
    E[relu(u·x)] = |u|/√(2π),   E[relu(u·x) x] = u/2   (Stein).

Hence, with h = f − y,

    L = Σ_j |u_j|²/4 + Σ_{j<l} ε_jε_l K(u_j, u_l) − Σ_{j,t} ε_j α_t K(u_j, z_t) + ½E[y²]
        + v·(Σ_j ε_j u_j − Σ_t α_t z_t)/2 + |v|²/2
        + c (Σ_j ε_j|u_j| − Σ_t α_t|z_t|)/√(2π) + c²/2,

and its gradient and Hessian follow blockwise from the formulas above (``_lgh``).

The angle near 0 or π
---------------------
π − θ is evaluated as atan(sq/|u·w|) (or π minus it) when the sign of u·w is certain and by
``atan2`` otherwise, so it is accurate and finite for every pair of nonzero vectors.  Only
qqᵀ/sq divides by sq; at sq = 0 (parallel or antiparallel vectors) it has the limit 0 and
|(qqᵀ/sq)_ab| ≤ |q|²/sq = sq/|u|², so on a box where sq can vanish it is enclosed entrywise by
[−sq/|u|², sq/|u|²] (the loss is C² there, not C³: the Hessian entries are continuous).  This is
used for a student unit that may be parallel or antiparallel to a teacher direction, and for
antiparallel student units (e.g. relu(x₁) + relu(−x₁)).  Boxes where two *student* units can be
parallel (not antiparallel) are refused: there mass can move between the two units
(the split line of :func:`split_is_local_min`), so no strict minimum exists in the reduced
coordinates, and the loss is not C³.  Boxes where a unit can reach u = 0 are refused: relu(u·x)
is not differentiable in u there (the loss has a |u| singularity).

Certificate
-----------
On the box X = x̂ ± r (x̂ refined by simplified Newton steps x ← x − Y∇L(x) in Arb at the
working precision), Krawczyk's
operator (Krawczyk 1969; Moore 1977; Neumaier 1990, Thm. 5.1.8)

    K(X) = x̂ − Y ∇L(x̂) + (I − Y ∇²L(X)) (X − x̂),   Y ≈ ∇²L(x̂)⁻¹ (float),

with ∇L(x̂) enclosed at the point and ∇²L(X) over the whole box in Arb; K(X) ⊂ int X proves
that X holds exactly one critical point x* (and x* ∈ K(X)).  The Hessian enclosure over X is
then passed to :func:`certify._arb.sym_eig_enclosure` (Weyl + Ostrowski bounds for every
symmetric matrix in the ball matrix): all eigenvalues > 0 on X proves a strict local minimum
(L is strictly convex on X, x* its unique minimizer there); one certainly negative and one
certainly positive eigenvalue proves a saddle.  The loss at x* is enclosed by the second-order
form L(x*) ∈ L(x̂) − ½ δᵀ∇²L(X)δ, δ ∈ x̂ − K(X) (Taylor at x*, where ∇L(x*) = 0).  Every bound
is an Arb ball, so the results are tagged ``rigorous``.

References
----------
Y. Cho, L. K. Saul, "Kernel methods for deep learning", NIPS 2009; Y. Tian, "An analytical
formula of population gradient for two-layered ReLU network", ICML 2017; A. Brutzkus,
A. Globerson, ICML 2017; I. Safran, O. Shamir, "Spurious local minima are common in two-layer
ReLU neural networks", ICML 2018; R. Krawczyk, Computing 4 (1969); A. Neumaier, "Interval
methods for systems of equations" (1990); "Removing spurious minima for planar features by
skip connections" (planar-feature teachers, the learned linear skip).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import arb, arb_mat
from popdyn.models import Params, Student
from popdyn.teachers import NetworkTeacher, Teacher

from . import _arb as A
from .bracket import Bracket, BracketArray
from .errors import CertificationError

__all__ = ["CriticalPoint", "critical_point", "to_reduced", "from_reduced", "reduced_lgh",
           "newton_refine", "split_is_local_min", "Problem"]

_TWO_PI = 2.0 * math.pi


# =============================================================================== the problem
@dataclass(frozen=True)
class Problem:
    """The reduced problem: signs ε (m,), teacher α (k,), Z (k, d), whether v and c are free."""

    signs: np.ndarray
    alpha: np.ndarray
    Z: np.ndarray
    skip: bool
    intercept: bool

    @property
    def m(self) -> int:
        return int(self.signs.shape[0])

    @property
    def d(self) -> int:
        return int(self.Z.shape[1])

    @property
    def P(self) -> int:
        return self.m * self.d + (self.d if self.skip else 0) + (1 if self.intercept else 0)

    def describe(self) -> str:
        parts = [f"u_j = s|a_j| w_j ∈ R^{self.d} for j = 1..{self.m} (row-major, signs "
                 f"ε = {self.signs.astype(int).tolist()} fixed)"]
        if self.skip:
            parts.append(f"then the skip v ∈ R^{self.d}")
        if self.intercept:
            parts.append("then the intercept c")
        return "reduced coordinates: " + ", ".join(parts)


def _problem(student, params, teacher) -> tuple[Problem, np.ndarray]:
    if not isinstance(student, Student):
        raise TypeError(f"`student` must be a popdyn.Student, got {type(student).__name__}")
    if student.activation != "relu" or student.bias:
        raise ValueError("`student` must be a bias-free relu student (activation='relu', "
                         f"bias=False), got activation={student.activation!r}, bias={student.bias}")
    if not isinstance(teacher, Teacher):
        raise TypeError(f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}")
    if (not isinstance(teacher, NetworkTeacher) or teacher.activation.name != "relu"
            or np.any(teacher.bias != 0)):
        raise ValueError("`teacher` must be a bias-free relu network (Teacher.network('relu', "
                         f"alpha, Z)), got {teacher.describe()['kind']} teacher "
                         f"{type(teacher).__name__}")
    if teacher.U.shape[1] != student.d:
        raise ValueError(f"teacher dimension {teacher.U.shape[1]} != student d = {student.d}")
    if not isinstance(params, Params):
        raise TypeError(f"`params` must be a popdyn.Params, got {type(params).__name__}")
    student.check(params)
    if np.any(params.a == 0):
        raise ValueError("`params.a` has a zero entry: the sign of a zero-mass unit is not "
                         "defined, so it has no reduced coordinates (drop the unit)")
    Z = np.array(teacher.U, dtype=np.float64)
    if np.any(np.sum(Z * Z, axis=1) == 0):
        raise ValueError("`teacher` has a zero row")
    prob = Problem(np.sign(params.a).astype(np.float64), np.array(teacher.weights, np.float64),
                   Z, bool(student.skip), bool(student.intercept))
    return prob, to_reduced(student, params)


def to_reduced(student, params) -> np.ndarray:
    """The reduced coordinates x = (u_1, …, u_m [, v] [, c]) of ``params`` (float64; u_j =
    s|a_j| w_j rounded to nearest)."""
    u = (student.s * np.abs(params.a))[:, None] * params.W
    parts = [u.ravel()]
    if student.skip:
        parts.append(np.asarray(params.v, dtype=np.float64))
    if student.intercept:
        parts.append([float(params.c)])
    return np.concatenate(parts)


def from_reduced(student, x, signs):
    """Balanced ``popdyn.Params`` with reduced coordinates x: a_j = ε_j (|u_j|/s)^{1/2},
    w_j = u_j / (s|a_j|)."""
    m, d = student.m, student.d
    x = np.asarray(x, dtype=np.float64)
    U = x[:m * d].reshape(m, d)
    nrm = np.linalg.norm(U, axis=1)
    s = student.s
    a = np.asarray(signs, dtype=np.float64) * np.sqrt(nrm / s)
    W = U / (s * np.abs(a))[:, None]
    v = x[m * d:m * d + d] if student.skip else None
    c = float(x[-1]) if student.intercept else 0.0
    return Params(a, W, np.zeros(m), c, v)


# =============================================================================== backends
class _FloatB:
    """float64 backend (the search and the Newton refinement; not a certificate)."""

    pi = math.pi
    sqrt2pi = math.sqrt(2.0 * math.pi)
    rigorous = False

    @staticmethod
    def arr(vals):
        return np.asarray(vals, dtype=np.float64)

    @staticmethod
    def eye(d):
        return np.eye(d)

    @staticmethod
    def zeros(shape):
        return np.zeros(shape)

    @staticmethod
    def sqrt(x):
        return math.sqrt(x) if x > 0 else 0.0

    @staticmethod
    def pmt(sq, dot):
        return math.atan2(sq, -dot)      # π − θ, accurate near θ = 0 and θ = π

    @staticmethod
    def qq_over_sq(q, sq, nu2):
        return np.outer(q, q) / sq if sq > 0 else np.zeros((q.shape[0], q.shape[0]))

    @staticmethod
    def positive(x):
        return x > 0


class _ArbB:
    """Arb backend: every quantity a ball; degenerate angles enclosed (module docstring)."""

    rigorous = True

    def __init__(self):
        self.pi = arb.pi()
        self.sqrt2pi = (2 * self.pi).sqrt()

    @staticmethod
    def arr(vals):
        out = np.empty(len(vals), dtype=object)
        for i, v in enumerate(vals):
            out[i] = v if isinstance(v, arb) else arb(v)
        return out

    @staticmethod
    def eye(d):
        E = np.empty((d, d), dtype=object)
        for i in range(d):
            for j in range(d):
                E[i, j] = arb(1) if i == j else arb(0)
        return E

    @staticmethod
    def zeros(shape):
        Z = np.empty(shape, dtype=object)
        Z.fill(arb(0))
        return Z

    @staticmethod
    def sqrt(x):
        if x > 0:
            return x.sqrt()
        # the true value is >= 0 (a Gram determinant): [0, sqrt(upper)]
        up = A.upper(x)
        if not math.isfinite(up):
            raise CertificationError("a Gram determinant is not finite", hint="a higher prec")
        return A.ball(0.0, A.sqrt_up(max(up, 0.0)))

    def pmt(self, sq, dot):
        """π − θ with θ = atan2(sq, dot) ∈ [0, π]."""
        if dot > 0:
            return self.pi - (sq / dot).atan()
        if dot < 0:
            return (sq / (-dot)).atan()
        if sq > 0:
            return self.pi - arb.atan2(sq, dot)
        raise _Refuse("a vector can be 0 (its angle is undefined)")

    @staticmethod
    def qq_over_sq(q, sq, nu2):
        d = q.shape[0]
        if sq > 0:
            return np.outer(q, q) / sq
        bnd = A.upper(sq / nu2)
        if not math.isfinite(bnd):
            raise _Refuse("a unit can reach 0")
        e = A.ball(-bnd, bnd)
        M = np.empty((d, d), dtype=object)
        M.fill(e)
        return M

    @staticmethod
    def positive(x):
        return bool(x > 0)


class _Refuse(Exception):
    """The box is outside the domain where the certificate applies (reason in args[0])."""


# =============================================================================== formulas
def _wedge2(u, w):
    """|u|²|w|² − (u·w)² = Σ_{a<b} (u_a w_b − u_b w_a)² (Lagrange's identity): no cancellation,
    so sq = √(·) is enclosed to O(box width) even where u ∥ w."""
    d = u.shape[0]
    if d < 2:
        return 0 * u[0]
    M = np.outer(u, w)
    iu = np.triu_indices(d, 1)
    t = M[iu] - M.T[iu]
    return (t * t).sum()


def _pair(u, w, B, *, h11=False, h11w=False, h12=False):
    """Kernel K(u, w), ∇_u K, ∇_w K and optionally ∇²_uu K, ∇²_ww K, ∇²_uw K (docstring)."""
    nu2 = u @ u
    nw2 = w @ w
    dot = u @ w
    s2 = _wedge2(u, w)
    sq = B.sqrt(s2)
    pmt = B.pmt(sq, dot)
    tp = 2 * B.pi
    K = (sq + pmt * dot) / tp
    gu = (pmt * w + (sq / nu2) * u) / tp
    gw = (pmt * u + (sq / nw2) * w) / tp
    out = {"K": K, "gu": gu, "gw": gw, "sq": sq, "dot": dot}
    d = u.shape[0]
    if h11 or h12:
        q = w - (dot / nu2) * u
        Qs = B.qq_over_sq(q, sq, nu2)
        if h11:
            P = B.eye(d) - np.outer(u, u) / nu2
            out["H11"] = ((sq / nu2) * P + Qs) / tp
        if h12:
            M = pmt * B.eye(d) + (sq * dot / (nu2 * nu2 * nw2)) * np.outer(u, u) \
                - (dot / nw2) * Qs + (sq / (nu2 * nw2)) * (np.outer(u, q) + np.outer(q, u))
            out["H12"] = M / tp
    if h11w:
        p = u - (dot / nw2) * w
        Qw = B.qq_over_sq(p, sq, nw2)
        P = B.eye(d) - np.outer(w, w) / nw2
        out["H11w"] = ((sq / nw2) * P + Qw) / tp
    return out


def _lgh(x, prob: Problem, B, *, hess: bool, refuse_coincident: bool = True):
    """(L, ∇L, ∇²L or None) in reduced coordinates with backend ``B``."""
    m, d, P = prob.m, prob.d, prob.P
    eps = prob.signs
    U = [x[j * d:(j + 1) * d] for j in range(m)]
    off = m * d
    v: Any = x[off:off + d] if prob.skip else None
    c: Any = x[-1] if prob.intercept else None
    Zs = [B.arr(list(z)) for z in prob.Z]
    al = [B.arr([a])[0] for a in prob.alpha]
    nu2 = [u @ u for u in U]
    for j in range(m):
        if not B.positive(nu2[j]):
            raise _Refuse(f"unit {j} can pass through u = 0 (relu(u·x) is not differentiable "
                          "in u there)")
    L = B.arr([0.0])[0]
    G = B.zeros(P)
    H: Any = B.zeros((P, P)) if hess else None
    eye = B.eye(d)
    half = B.arr([0.5])[0]
    for j in range(m):
        L = L + nu2[j] / 4
        G[j * d:(j + 1) * d] = G[j * d:(j + 1) * d] + half * U[j]
        if hess:
            H[j * d:(j + 1) * d, j * d:(j + 1) * d] += half * eye
    for j in range(m):
        sj = int(eps[j])
        for l in range(j + 1, m):
            sl = int(eps[l])
            r = _pair(U[j], U[l], B, h11=hess, h11w=hess, h12=hess)
            if refuse_coincident and not B.positive(r["sq"]) and not B.positive(-r["dot"]):
                raise _Refuse(f"student units {j} and {l} can be parallel (split line: mass "
                              "moves between them, so no strict minimum in reduced coordinates; "
                              "the loss is not C³ there)")
            ss = sj * sl
            L = L + ss * r["K"]
            G[j * d:(j + 1) * d] += ss * r["gu"]
            G[l * d:(l + 1) * d] += ss * r["gw"]
            if hess:
                H[j * d:(j + 1) * d, j * d:(j + 1) * d] += ss * r["H11"]
                H[l * d:(l + 1) * d, l * d:(l + 1) * d] += ss * r["H11w"]
                H[j * d:(j + 1) * d, l * d:(l + 1) * d] += ss * r["H12"]
                H[l * d:(l + 1) * d, j * d:(j + 1) * d] += ss * r["H12"].T
        for t, z in enumerate(Zs):
            r = _pair(U[j], z, B, h11=hess)
            co = sj * al[t]
            L = L - co * r["K"]
            G[j * d:(j + 1) * d] -= co * r["gu"]
            if hess:
                H[j * d:(j + 1) * d, j * d:(j + 1) * d] -= co * r["H11"]
    # E[y²]/2
    Y2 = B.arr([0.0])[0]
    for t, z in enumerate(Zs):
        Y2 = Y2 + al[t] * al[t] * (z @ z) / 2
        for s_ in range(t + 1, len(Zs)):
            Y2 = Y2 + 2 * al[t] * al[s_] * _pair(z, Zs[s_], B)["K"]
    L = L + Y2 / 2
    if prob.skip:
        tv = B.zeros(d)
        for t, z in enumerate(Zs):
            tv = tv - al[t] * z
        for j in range(m):
            tv = tv + int(eps[j]) * U[j]
        L = L + (v @ tv) / 2 + (v @ v) / 2
        G[off:off + d] = tv / 2 + v
        for j in range(m):
            G[j * d:(j + 1) * d] += (int(eps[j]) * half) * v
            if hess:
                H[j * d:(j + 1) * d, off:off + d] += (int(eps[j]) * half) * eye
                H[off:off + d, j * d:(j + 1) * d] += (int(eps[j]) * half) * eye
        if hess:
            H[off:off + d, off:off + d] += eye
    if prob.intercept:
        sp = B.sqrt2pi
        mc = B.arr([0.0])[0]
        for t, z in enumerate(Zs):
            mc = mc - al[t] * B.sqrt(z @ z)
        nu = [B.sqrt(n2) for n2 in nu2]
        for j in range(m):
            mc = mc + int(eps[j]) * nu[j]
        L = L + c * mc / sp + c * c / 2
        G[-1] = mc / sp + c
        for j in range(m):
            sj = int(eps[j])
            G[j * d:(j + 1) * d] += (sj * c / (nu[j] * sp)) * U[j]
            if hess:
                Pj = eye - np.outer(U[j], U[j]) / nu2[j]
                H[j * d:(j + 1) * d, j * d:(j + 1) * d] += (sj * c / (nu[j] * sp)) * Pj
                col = (sj / (nu[j] * sp)) * U[j]
                H[j * d:(j + 1) * d, -1] += col
                H[-1, j * d:(j + 1) * d] += col
        if hess:
            H[-1, -1] += 1
    return L, G, H


def reduced_lgh(student, params, teacher, *, x=None):
    """Float64 (L, ∇L, ∇²L, x, problem) in reduced coordinates (not a certificate: the finder's
    and the tests' float evaluation of the closed forms).  ``x`` overrides the coordinates."""
    prob, x0 = _problem(student, params, teacher)
    x = x0 if x is None else np.asarray(x, dtype=np.float64)
    L, G, H = _lgh(x, prob, _FloatB, hess=True, refuse_coincident=False)
    return float(L), G, H, x, prob


def newton_refine(prob: Problem, x, *, steps: int = 30, tol: float = 1e-15):
    """Float Newton iteration on ∇L = 0 in reduced coordinates (undamped; a critical-point
    polisher, not a minimizer).  Returns (x, |∇L|_∞, steps used)."""
    x = np.array(x, dtype=np.float64)
    g = None
    for it in range(steps):
        _, g, H = _lgh(x, prob, _FloatB, hess=True, refuse_coincident=False)
        gn = float(np.max(np.abs(g)))
        if gn <= tol:
            return x, gn, it
        try:
            dx = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            return x, gn, it
        x = x - dx
    _, g, _ = _lgh(x, prob, _FloatB, hess=False, refuse_coincident=False)
    return x, float(np.max(np.abs(g))), steps


# =============================================================================== certificate
@dataclass
class CriticalPoint:
    """Result of :func:`critical_point`.

    Attributes
    ----------
    verdict : {"strict_local_min", "saddle", "undecided"}
    box : BracketArray or None
        The box X (reduced coordinates, outward-rounded floats) proven to hold exactly one
        critical point (None when refused before a box was formed).
    radius : float
        Half-width r of the box (absolute, every coordinate).
    center : ndarray
        Float64 rounding of the box centre x̂.
    enclosure : BracketArray or None
        K(X): the tighter box that holds the critical point (when proven).
    loss : Bracket or None
        L at the critical point (rigorous).
    hessian_eigs : list of Bracket
        Ascending eigenvalue brackets valid for every Hessian on X (rigorous).
    reason : str
        What was proven, or what failed and what to try (enlarge / shrink the box, raise prec).
    coordinates : str
        Description of the reduced coordinates.
    contraction : float
        max_i |K(X)_i − x̂_i| / r (< 1 is needed).
    prec : int
    signs : ndarray
    """

    verdict: str
    box: BracketArray | None
    radius: float
    center: np.ndarray
    loss: Bracket | None
    hessian_eigs: list
    reason: str
    coordinates: str
    enclosure: BracketArray | None = None
    contraction: float = math.inf
    prec: int = 128
    signs: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def min_eig(self) -> Bracket | None:
        return self.hessian_eigs[0] if self.hessian_eigs else None


def _to_mat(Hobj) -> arb_mat:
    n = Hobj.shape[0]
    return arb_mat([[Hobj[i, j] for j in range(n)] for i in range(n)])


def _vec_bounds(vals):
    lo = np.empty(len(vals))
    hi = np.empty(len(vals))
    for i, v in enumerate(vals):
        lo[i], hi[i] = A.arb_bounds(v)
    return lo, hi


def critical_point(student: Student, params: Params, teacher: Teacher, *,
                   radius: float | None = None, prec: int = 128,
                   refine: bool = True) -> CriticalPoint:
    """Certify a critical point of the bias-free relu population loss near ``params``.

    Parameters
    ----------
    student : popdyn.Student
        ``Student(d, m, "relu", bias=False)`` with or without ``skip=True`` and ``intercept``;
        either scaling (s is absorbed into u).
    params : popdyn.Params
        A float critical point (approximate); every a_j ≠ 0 (its sign is kept).
    teacher : popdyn.Teacher
        ``Teacher.network("relu", alpha, Z)`` without biases.
    radius : float or None, keyword-only
        Half-width of the box in reduced coordinates (module docstring).  Default: 1e−8 ·
        max(1, |x̂|_∞), shrunk to 1e−10 and 1e−12 times that scale when Krawczyk fails (an
        ill-conditioned Hessian).  A larger box is a stronger statement (uniqueness and definiteness on
        more of the space) but needs a smaller Hessian variation.
    prec : int, keyword-only
        Arb working precision (bits).
    refine : bool, keyword-only
        Newton-polish the centre in float and then in Arb at ``prec`` before forming the box
        (default True).  With False the box is centred at the given point itself (used to show
        that a box without a critical point is refused).

    Returns
    -------
    CriticalPoint
        ``verdict`` "strict_local_min" (unique critical point in the box, Hessian positive
        definite on the whole box), "saddle" (unique critical point, Hessian indefinite on the
        whole box) or "undecided" with ``reason``.

    Raises
    ------
    TypeError, ValueError
        Unsupported student / teacher, a zero head a_j, bad ``radius`` or ``prec``.

    Examples
    --------
    >>> import numpy as np, popdyn, certify
    >>> T = popdyn.Teacher.network("relu", [1.0, 1.0], np.eye(2))
    >>> S = popdyn.Student(2, 2, "relu", bias=False, intercept=False)
    >>> p = popdyn.Params([1.0, 1.0], np.eye(2), np.zeros(2))
    >>> res = certify.critical_point(S, p, T)
    >>> res.verdict, res.loss.lo <= 0.0 <= res.loss.hi
    ('strict_local_min', True)

    References
    ----------
    Module docstring; Krawczyk (1969), Neumaier (1990) Thm. 5.1.8; Safran & Shamir (2018).
    """
    prec = A.check_prec(prec)
    prob, x0 = _problem(student, params, teacher)
    if radius is not None:
        if isinstance(radius, bool) or not isinstance(radius, (int, float)):
            raise TypeError(f"`radius` must be a positive float or None, got {radius!r}")
        radius = float(radius)
        if not (radius > 0 and math.isfinite(radius)):
            raise ValueError(f"`radius` must be a positive finite float, got {radius!r}")
    coords = prob.describe()
    xf = x0
    if refine:                 # keep the polished point only if its gradient is smaller
        try:
            with np.errstate(all="ignore"):
                g0 = float(np.max(np.abs(_lgh(x0, prob, _FloatB, hess=False,
                                              refuse_coincident=False)[1])))
                x1, g1, _ = newton_refine(prob, x0, steps=8)
            if np.all(np.isfinite(x1)) and g1 <= g0:
                xf = x1
        except _Refuse:          # a unit at 0: the Arb evaluation below refuses with the reason
            pass
    scale = max(1.0, float(np.max(np.abs(xf))))
    if radius is not None:
        return _certify(prob, xf, radius, prec, refine, coords)
    # default: 1e−8·scale, shrunk (1e−10, 1e−12) when the Hessian varies too much over the box
    # (an ill-conditioned minimum) -- never enlarged past the first try
    for f in (1e-8, 1e-10, 1e-12):
        res = _certify(prob, xf, f * scale, prec, refine, coords)
        shrink = res.reason.startswith("Krawczyk failed") or "bracket contains 0" in res.reason
        if res.verdict != "undecided" or not shrink:
            return res
    return res


def _certify(prob, xf, r, prec, refine, coords):
    P = prob.P

    def undecided(reason, box=None, eigs=(), center=xf, contraction=math.inf, enclosure=None):
        return CriticalPoint("undecided", box, r, np.asarray(center, dtype=np.float64), None,
                             list(eigs), reason, coords, enclosure, contraction, prec,
                             prob.signs.copy())

    with A.workprec(prec):
        B = _ArbB()
        xh = B.arr([float(t) for t in xf])
        try:
            # Y ≈ ∇²L⁻¹ from the float Hessian at the float point (any Y is valid in Krawczyk)
            Hf = _lgh(np.asarray(xf, dtype=np.float64), prob, _FloatB, hess=True,
                      refuse_coincident=False)[2]
            Hf = 0.5 * (Hf + Hf.T)
            try:
                Yf = np.linalg.inv(Hf)
            except np.linalg.LinAlgError:
                Yf = None
            if Yf is not None and not np.all(np.isfinite(Yf)):
                Yf = None
            Y = A.mat_from_array(Yf) if Yf is not None else None
            if refine and Y is not None:   # simplified Newton in Arb at the working precision
                for _ in range(8):
                    _, g, _ = _lgh(xh, prob, B, hess=False)
                    step = Y * arb_mat([[gi] for gi in g])
                    xh = B.arr([arb((xh[i] - step[i, 0]).mid()) for i in range(P)])
                    if max(A.upper(abs(step[i, 0])) for i in range(P)) < r * 1e-6:
                        break
            center = np.array([float(t.mid()) for t in xh])
            box = B.arr([xh[i] + arb(0, r) for i in range(P)])
            blo, bhi = _vec_bounds(box)
            boxb = BracketArray(blo, bhi, "rigorous")
            Lp, gp, _ = _lgh(xh, prob, B, hess=False)
            _, gX, HX = _lgh(box, prob, B, hess=True)
        except _Refuse as e:
            return undecided(f"refused: {e.args[0]}")
        # a gradient component certainly nonzero on the box: no critical point there at all
        nz = [i for i in range(P) if not gX[i].contains(0)]
        HXm = _to_mat(HX)
        if nz:
            return undecided(f"no critical point in the box: ∂L/∂x_{nz[0]} is certainly nonzero "
                             f"on it ({gX[nz[0]]}); enlarge the box or move its centre",
                             box=boxb, center=center)
        if Y is None:
            return undecided("the Hessian at the centre is numerically singular: a degenerate "
                             "critical point (reduce the symmetry) -- no Krawczyk certificate",
                             box=boxb, center=center)
        gcol = arb_mat([[gi] for gi in gp])
        I = A.mat_from_array(np.eye(P))
        Rm = I - Y * HXm
        dcol = arb_mat([[arb(0, r)] for _ in range(P)])
        Kd = -(Y * gcol) + Rm * dcol
        kmax = max(A.upper(abs(Kd[i, 0])) for i in range(P))
        contraction = kmax / r
        lo_e, hi_e, _, _ = _eigs(HXm)
        eigs = [Bracket(float(lo_e[i]), float(hi_e[i]), provenance="rigorous",
                        note="every symmetric Hessian on the box") for i in range(P - 1, -1, -1)]
        if not contraction < 1.0:
            yg = max(A.upper(abs((Y * gcol)[i, 0])) for i in range(P))
            rn = A.frob_upper(Rm)
            if yg >= r:
                hint = (f"enlarge the box (the Newton step |Y∇L(x̂)| ≈ {yg:.2e} exceeds r = {r:.2e})"
                        "" if yg < 1e-3 else "move the centre (it is far from a critical point)")
            elif rn >= 1.0:
                hint = (f"shrink the box (‖I − Y∇²L(X)‖_F ≤ {rn:.2e} ≥ 1: the Hessian varies too "
                        "much over X) or raise prec")
            else:
                hint = "raise prec or change the radius"
            return undecided(f"Krawczyk failed: max|K(X) − x̂|/r = {contraction:.3g} ≥ 1; {hint}",
                             box=boxb, eigs=eigs, center=center, contraction=contraction)
        enc = [xh[i] + Kd[i, 0] for i in range(P)]
        elo, ehi = _vec_bounds(enc)
        encb = BracketArray(elo, ehi, "rigorous")
        # L(x*) = L(x̂) − ½ δᵀ H(ξ) δ with δ = x̂ − x* ∈ −Kd, ξ ∈ X
        dl = arb_mat([[Kd[i, 0]] for i in range(P)])
        quad = (dl.transpose() * HXm * dl)[0, 0]
        Lstar = Lp - quad / 2
        if not Lstar.is_finite():
            return undecided("the loss enclosure is not finite; raise prec", box=boxb,
                             eigs=eigs, center=center, contraction=contraction)
        Lb = Bracket.from_arb(Lstar, provenance="rigorous",
                              note="L at the certified critical point (second-order form)")
        if Lb.lo < 0.0:
            Lb = Lb.replace(lo=min(0.0, Lb.hi) if Lb.hi >= 0 else Lb.lo)
    lam_min_lo = float(lo_e[-1])
    lam_max_hi = float(hi_e[0])
    common = dict(box=boxb, radius=r, center=center, loss=Lb, hessian_eigs=eigs,
                  coordinates=coords, enclosure=encb, contraction=contraction, prec=prec,
                  signs=prob.signs.copy())
    if lam_min_lo > 0.0:
        return CriticalPoint("strict_local_min", reason=(
            f"unique critical point in the box (Krawczyk contraction {contraction:.3g}); Hessian "
            f"positive definite on the whole box (λ_min ≥ {lam_min_lo:.6g})"), **common)
    neg = any(e.hi < 0 for e in eigs)
    pos = any(e.lo > 0 for e in eigs)
    if neg and pos:
        nneg = sum(e.hi < 0 for e in eigs)
        return CriticalPoint("saddle", reason=(
            f"unique critical point in the box (Krawczyk contraction {contraction:.3g}); Hessian "
            f"indefinite on the whole box ({nneg} eigenvalue(s) certainly < 0, λ_min ≤ "
            f"{eigs[0].hi:.6g}, λ_max ≥ {eigs[-1].lo:.6g})"), **common)
    if neg and not pos and lam_max_hi < 0:
        why = "Hessian negative definite on the box: a strict local maximum"
    else:
        why = ("an eigenvalue bracket contains 0 (degenerate, or the box is too wide for the "
               "Hessian enclosure): shrink the box or raise prec")
    out = CriticalPoint("undecided", reason=f"unique critical point in the box proven; {why}",
                        **common)
    return out


def _eigs(HXm: arb_mat):
    """Eigenvalue enclosures (descending) of every symmetric matrix in the ball matrix."""
    n = HXm.nrows()
    # symmetrize the ball matrix (the true Hessians are symmetric; the union keeps them inside)
    S = arb_mat(n, n)
    for i in range(n):
        for j in range(n):
            S[i, j] = HXm[i, j] if i == j else HXm[i, j].intersection(HXm[j, i])
    return A.sym_eig_enclosure(S)


# =============================================================================== split embedding
def split_is_local_min(student, params, teacher, cp: CriticalPoint, unit: int, *,
                       eta: float, n_arcs: int = 256, prec: int = 128) -> dict:
    r"""Certify that splitting unit ``unit`` of a certified strict minimum into parallel copies
    of the same sign gives a (non-strict) local minimum of the wider network, for d = 2.

    Splitting u_i into u′ + u″ + … (parallel, same sign ε_i, same sum) keeps the function and
    gives a segment (simplex) of critical points: no embedding by duplicates is strict.  What
    is true (and certified here): write ρ = Σ_k relu(u_k·x) − relu(S·x) ≥ 0 (relu is subadditive)
    with S = Σ_k u_k, so that, with h_S the residual of the m-unit network at S,

        L_wide = L_m(S) + ε_i E[h_S ρ] + ½E[ρ²] ≥ L_m(S)   whenever ε_i h_S ≥ 0 on supp ρ.

    ρ vanishes unless the u_k·x have different signs, i.e. (d = 2) unless x lies within angle η
    of the kink line S^⊥ when all copies lie within angle η of u_i.  So if (1) the m-unit point is
    a certified strict minimum on the box X (L_m(S) ≥ L_m(x*) on X), and (2) ε_i h_S(x) > 0 for
    every S ∈ X (all units) and every unit x within angle 2η of ±u_i^⊥ (checked here in Arb on
    ``n_arcs`` sub-arcs), then every wide state whose copies lie within angle η of u_i and whose
    sum S is in X has L_wide ≥ L_m(x*), with equality only if all copies are parallel (ρ = 0)
    and S = x*: a local minimum whose minimizing set nearby is exactly the split segment.

    Conversely, if ε_i h_S(x) ≤ −μ < 0 on the same arcs (``max_margin`` = −μ, an upper bound),
    the split is *not* a local minimum: with the copies ½u_i ± t e (e ⊥ u_i, unit), S = x* is
    unchanged, ρ is supported within angle atan(2t/|u_i|) ≤ η of ±u_i^⊥, and ρ(x) ≤ t|x|
    (ρ = min(|a|, |b|) ≤ |a − b|/2 for a = u′·x, b = u″·x of opposite signs), so by degree-1
    homogeneity (E[r²] = 2 in the plane) L_wide − L* = 2 avg(ε_i ĥρ̂) + avg(ρ̂²) ≤ (t − 2μ)
    avg(ρ̂) < 0 for 0 < t < 2μ: points arbitrarily close with a lower loss (a saddle of the wide
    loss; ``not_min`` True).  Splitting several units at once (ρ = Σ_i ρ_i) is covered by
    requiring ``certified`` for each of them.

    Returns a dict with ``certified`` (bool), ``min_margin`` (a lower bound of ε_i h over the
    arcs, rigorous), ``max_margin`` (an upper bound), ``not_min`` (bool), ``eta`` and
    ``reason``.
    """
    if cp.verdict != "strict_local_min" or cp.box is None:
        return {"certified": False, "reason": "the m-unit point is not a certified strict minimum",
                "min_margin": -math.inf, "eta": eta}
    prob, _ = _problem(student, params, teacher)
    if prob.d != 2 or prob.skip or prob.intercept:
        raise ValueError("split_is_local_min is for d = 2 students without skip or intercept")
    m, d = prob.m, prob.d
    if not 0 <= unit < m:
        raise ValueError(f"`unit` must be in [0, {m}), got {unit}")
    eta = float(eta)
    with A.workprec(prec):
        pi = arb.pi()
        box = [A.ball(float(cp.box.lo[i]), float(cp.box.hi[i])) for i in range(prob.P)]
        U = [box[j * d:(j + 1) * d] for j in range(m)]
        cx = float(cp.center[unit * d])
        cy = float(cp.center[unit * d + 1])
        phi = math.atan2(cy, cx)
        # the angle of u_i over the box: |Δφ| ≤ r√2/|u_i| (+ slack); the arcs cover ±π/2 ± (2η + that)
        nrm = math.hypot(cx, cy)
        dphi = 2.0 * cp.radius * math.sqrt(2.0) / max(nrm - 2 * cp.radius * math.sqrt(2), 1e-300)
        half = 2.0 * eta + dphi
        worst, best = math.inf, -math.inf
        eps = int(prob.signs[unit])
        for side in (+1, -1):
            c0 = phi + side * math.pi / 2
            for k in range(n_arcs):
                a0 = c0 - half + 2 * half * k / n_arcs
                a1 = c0 - half + 2 * half * (k + 1) / n_arcs
                th = A.ball(min(a0, a1), max(a0, a1))
                xv = [th.cos(), th.sin()]
                h = arb(0)
                for j in range(m):
                    t = U[j][0] * xv[0] + U[j][1] * xv[1]
                    h = h + int(prob.signs[j]) * _relu_ball(t)
                for t_ in range(len(prob.alpha)):
                    z = prob.Z[t_]
                    t = arb(float(z[0])) * xv[0] + arb(float(z[1])) * xv[1]
                    h = h - arb(float(prob.alpha[t_])) * _relu_ball(t)
                lo = A.lower(eps * h)
                worst = min(worst, lo)
                best = max(best, A.upper(eps * h))
        del pi
    ok = worst > 0
    return {"certified": bool(ok), "min_margin": float(worst), "eta": eta,
            "max_margin": float(best), "not_min": bool(best < 0),
            "arc_halfwidth": half, "n_arcs": n_arcs,
            "reason": ("ε_i h_S > 0 on the arcs around ±u_i^⊥ for every S in the certified box: "
                       "the split is a local minimum (non-strict: the split segment is flat)"
                       if ok else ("ε_i h_S < 0 on the arcs: the split is not a local minimum "
                                   "(a saddle; descent along the opposite-tilt split)")
                       if best < 0 else "ε_i h_S changes sign near the kink line of unit "
                       f"{unit}: the split embedding is not decided")}


def _relu_ball(t):
    if t >= 0:
        return t
    if t <= 0:
        return arb(0)
    return A.ball(0.0, A.upper(t))
