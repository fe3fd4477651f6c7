r"""The ``skip`` student family: a ridge student with a learned linear skip connection.

    f(x) = s Σ_j a_j σ(w_j·x + b_j) + v·x + c,     x ~ N(0, I_d),

built by ``popdyn.Student(d, m, activation=..., skip=True)`` (``Params.v``, shape (d,)), for the
relu, leaky relu and smooth activations.  Everything reduces to the ridge family's moments
(:class:`popdyn.families.ridge.RidgeFamily`) plus, by Stein's identity E[σ(w·x + b) x] = E[σ′] w, three
per-neuron scalars and one teacher vector:

    μ1_j = E[σ′_j],   ∂_b μ1_j = E[σ″_j],   ∂_w μ1_j = E[σ″_j z] θ_j   (z = θ_j·x),
    τ = E[y x] = Σ_k v*_k E[θ_k·x · g_k]      (the engine's cross moments of d linear units).

With r_j = w_j·v and u = s Wᵀ(a ∘ μ1) = E[∇_x(f − v·x)]:

    L      = L_ridge + s Σ_j a_j μ1_j r_j − v·τ + ½|v|²                             (SK-1)
    ∂L/∂v  = u − τ + v
    ∂L/∂a_j = ∂L_ridge/∂a_j + s μ1_j r_j
    ∂L/∂b_j = ∂L_ridge/∂b_j + s a_j r_j E[σ″_j]
    ∂L/∂w_j = ∂L_ridge/∂w_j + s a_j (μ1_j v + r_j E[σ″_j z] θ_j)                    (SK-2)
    AGOP    = AGOP_ridge + v vᵀ + u vᵀ + v uᵀ        (∇_x f = v + s Σ_j a_j σ′_j w_j)   (SK-3)

(∂L/∂c is the ridge one: E[v·x] = 0.)  The normalized Hermite coefficients
E[σ′ h_n], E[ασ″ h_n] of :func:`popdyn._hermite.unit_coefficients` give μ1 = E[σ′ h_0],
α E[σ″] = E[ασ″ h_0] and α E[σ″ z] = E[ασ″ h_1] (closed forms for relu / leaky relu, quadrature
for the smooth activations).

Refits (kinds ``unrestricted``, ``same_budget``, ``bounded``, ``projected``) refit the head and
the intercept on the frozen features σ(w_j·x + b_j) with the skip v·x kept as part of the
frozen model: the target is y − v·x, so g gains −s μ1 ∘ (Wv) and the problem's ``variance``
(the risk of a zero head) is Var(y − v·x) = V_Y − 2v·τ + |v|²; ``risk`` is E[(f′ − y)²].

Teachers: every kind.  For additive links and networks (the engine's ridge teachers) τ comes
from the engine's cross moments of d linear units; for multi-index (gated) teachers
y = κ·G(Ux), with G = Σ_A F_A h_A its normalized Hermite tensor, it is the linear Hermite part

    τ = κ Uᵀ (F[e_1], …, F[e_k]),     E[G(ξ) ξ_l] = F[e_l]                               (SK-4)

(gated y = κF(s)t: τ = κ E[F(Z)] u_2), exact from the stored entries (:func:`linear_part`).

Certification: :mod:`certify.skip` (reached through ``certify.loss`` and
``certify.refit_risk``) brackets the loss (SK-1), the gradient (SK-2) and the refit above in
Arb: rigorous wherever the bracket of the student without the skip is.

References
----------
"Removing spurious minima for planar features by skip connections" (arXiv 2610.01728);
docs/design.md §3 (Stein's lemma, moment matrices).
"""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from .. import assembly as _asm
from .. import family as _family
from .._hermite import unit_coefficients
from .._moments import UnitSet, student_units
from ..models import Params, Student
from ._base import FamilySpec, register
from .ridge import RIDGE_KEYS, RidgeFamily


def linear_part(F) -> np.ndarray:
    """(F[e_1], …, F[e_k]): the degree-one entries of the normalized Hermite tensor ``F``, i.e.
    E[G(ξ) ξ] for G = Σ_A F_A h_A(ξ) (SK-4).

    Exact when the tensor's unstored tail (``tail2``) lies beyond its stored degree, the
    convention of :meth:`popdyn.teachers.MultiIndexTeacher.cross` (gated teachers: the gate's
    coefficients beyond the table, of degree > 2).  A tensor of degree 0 with a non-zero tail
    leaves the linear part unknown: ``ValueError``.
    """
    if F.tail2 > 0.0 and F.degree < 1:
        raise ValueError("skip students need E[y x], the teacher's linear Hermite part; this "
                         "multi-index teacher's tensor stores only degree 0 and its tail "
                         "(tail2 > 0) may hold the degree-one entries: give them explicitly")
    out = np.zeros(F.k)
    one = F.idx.sum(axis=1) == 1
    for A, val in zip(F.idx[one], F.val[one]):
        out[int(np.argmax(A))] += val
    return out


class _SkipMoments:
    """Ridge moments ``R`` plus the skip terms: ``mu1`` = E[σ′_j], ``e2`` = E[σ″_j],
    ``e2z`` = E[σ″_j z_j], ``theta`` (m, d) and ``tau`` = E[y x] (None without a teacher)."""

    #: the error estimate of the skip terms (set by :meth:`SkipFamily.moments`)
    err_skip: tuple[np.ndarray, ...]

    def __init__(self, R, mu1, e2, e2z, theta, tau):
        self.R, self.mu1, self.e2, self.e2z, self.theta, self.tau = R, mu1, e2, e2z, theta, tau

    def __getattr__(self, name):          # the ridge fields (C, B, mu0, order, ...)
        return getattr(self.__dict__["R"], name)


class SkipFamily(RidgeFamily):
    """The ``skip`` family (:mod:`popdyn.family` protocol; formulas SK-1..SK-3 above)."""

    fields = ("a", "W", "b", "v", "c")

    def __init__(self, student, spec):
        super().__init__(student, spec)
        self._tau = {}

    # -- capabilities (own: none of the ridge family's is inherited)
    def ridge_units(self):
        """The student: its hidden units are the ridge units σ(w_j·x + b_j) of (W, b) (the
        AGOP's series tails, :mod:`popdyn.diagnostics.agop`)."""
        return self.student

    def ridge_loss(self):
        """The student: the loss is the ridge loss with the skip terms (SK-1), which
        :mod:`popdyn.landscape` and :mod:`popdyn._skip_empirical` implement."""
        return self.student

    # -- moments
    def _teacher_tau(self, teacher, tol):
        """τ = E[y x] (d,), cached per teacher (teachers are immutable).

        Ridge teachers: the engine's cross moments of d linear units against the teacher's
        units.  Multi-index (gated) teachers y = Σ_t w_t G_t(B_t x): the linear Hermite part,
        τ = Σ_t w_t B_tᵀ (F_t[e_1], …, F_t[e_k]) (E[G(ξ) ξ_l] = F[e_l], h_1 = He_1), exact
        from the stored tensor entries (SK-4)."""
        hit = self._tau.get(id(teacher))
        if hit is not None and hit[0] is teacher:
            return hit[1]
        d = self.student.d
        if teacher.ridge:
            lin = UnitSet("pl", np.ones(d), np.zeros(d), np.eye(d), np.zeros(d), np.ones(d))
            Ct = teacher.cross(lin, tol)[0]
            tau = Ct @ teacher.weights
        else:
            tau = np.zeros(d)
            for w, B, F in teacher.hermite_terms(1):
                tau += w * (B.T @ linear_part(F))
        if len(self._tau) > 8:
            self._tau.clear()
        self._tau[id(teacher)] = (teacher, tau)
        return tau

    def _units(self, params, tol):
        su = student_units(self.student, params)
        if su.kind == "pl":
            uc = unit_coefficients("pl", su.al, su.be, p=float(su.p[0]), q=float(su.q[0]), n=2,
                                   rtol=tol)
        else:
            uc = unit_coefficients("smooth", su.al, su.be, code=su.code, rtol=min(tol, 1e-13))
        mu1 = uc.Dd[:, 0].copy()
        ok = su.al > 0
        al = np.where(ok, su.al, 1.0)
        # r_j = w_j·v = 0 where α_j = 0, so those entries never enter
        e2 = np.where(ok, uc.Dd2[:, 0] / al, 0.0)
        e2z = np.where(ok, uc.Dd2[:, 1] / al, 0.0)
        if su.kind == "pl":
            self._err_skip = _pl_skip_errors(float(su.p[0]), ok, al, su.be, mu1)
        else:
            self._err_skip = (np.asarray(uc.tails_Dd.err, dtype=float).copy(),
                              np.where(ok, uc.tails_Dd2.err / al, 0.0),
                              np.where(ok, uc.tails_Dd2.err / al, 0.0))
        return mu1, e2, e2z, su.theta

    def moments(self, params, teacher, *, need: str = "grad", tol: float = 1e-10):
        R = super().moments(params, teacher, need=need, tol=tol)
        mu1, e2, e2z, theta = self._units(params, tol)
        tau = None if (teacher is None or need == "student") else self._teacher_tau(teacher, tol)
        M = _SkipMoments(R, mu1, e2, e2z, theta, tau)
        M.err_skip = self._err_skip
        return M

    # -- objective
    def loss(self, params, teacher, M) -> float:
        return _asm.skip_loss(_asm.NUMPY, super().loss(params, teacher, M.R), self.student.s,
                              params.a, params.W, params.v, M.mu1, M.tau)

    def loss_error(self, params, teacher, M) -> float:
        return super().loss_error(params, teacher, M.R)

    def loss_scale(self, params, teacher, M) -> float:
        s, v = self.student.s, params.v
        r = np.abs(params.W @ v)
        return (super().loss_scale(params, teacher, M.R) + s * ((np.abs(params.a * M.mu1)) @ r)
                + np.abs(v) @ np.abs(M.tau) + 0.5 * (v @ v))

    def grad(self, params, teacher, M) -> Params:
        st = self.student
        g = super().grad(params, teacher, M.R)
        ga, gW, gb, gv = _asm.skip_grad(_asm.NUMPY, (g.a, g.W, g.b), st.s, params.a, params.W,
                                        params.v, M.mu1, params.W @ params.v, M.e2, M.e2z,
                                        M.theta, M.tau, st.bias)
        return Params(ga, gW, gb, g.c, gv)

    def _skip_abs(self, params, g, mu1, e2, e2z, tau):
        """|terms| of the skip part of :meth:`grad` added to the ridge part ``g``."""
        st = self.student
        s, aa, v, W = st.s, np.abs(params.a), np.abs(params.v), np.abs(params.W)
        r = W @ v
        ga = g.a + s * mu1 * r
        gb = g.b + s * aa * r * e2 if st.bias else g.b
        gW = g.W + (s * aa)[:, None] * (mu1[:, None] * v[None, :] + (r * e2z)[:, None])
        gv = s * (W.T @ (aa * mu1)) + tau
        return Params(ga, gW, gb, g.c, gv)

    def grad_error(self, params, teacher, M):
        """The ridge part's estimate (:meth:`RidgeFamily.grad_error`) plus the coefficient
        errors of E[σ′], E[σ″], E[σ″z] in the skip terms (τ = E[y x]: exact linear units)."""
        g = super().grad_error(params, teacher, M.R)
        if g is None:
            return None
        e = getattr(M, "err_skip", None)
        if e is None:
            e = (np.zeros(self.student.m),) * 3
        return self._skip_abs(params, g, *e, np.zeros(self.student.d))

    def grad_scale(self, params, teacher, M):
        g = super().grad_scale(params, teacher, M.R)
        g = self._skip_abs(params, g, np.abs(M.mu1), np.abs(M.e2), np.abs(M.e2z), np.abs(M.tau))
        return g.replace(v=g.v + np.abs(params.v))

    def fit_intercept(self, params, teacher) -> Params:
        return super().fit_intercept(params, teacher)       # E[v·x] = 0: the ridge minimizer

    # -- diagnostics
    def agop(self, params, M) -> np.ndarray:
        if getattr(M, "mu1", None) is None:
            raise ValueError("skip AGOP needs the skip moments")
        return _asm.skip_agop(_asm.NUMPY, super().agop(params, M.R), self.student.s, params.a,
                              params.W, params.v, M.mu1)

    def refit_problem(self, params, teacher, M):
        P = super().refit_problem(params, teacher, M.R)
        g, var = _asm.skip_refit(_asm.NUMPY, P.g, teacher.variance, self.student.s, params.W,
                                 params.v, M.mu1, M.tau)
        g = np.where(P.dropped, 0.0, g)
        return _family.RefitProblem(P.G, g, float(var), P.mean_y, P.mu0, P.s, P.dropped)


#: [student] keys of a skip student
SKIP_KEYS = tuple(k for k in RIDGE_KEYS if k != "preset")


def _pl_skip_errors(p, ok, al, be, mu1):
    """Error estimates of E[σ′], E[σ″]/α and E[σ″z]/α of PL units σ = p relu + q id.

    They are closed forms in b = β/α: E[σ′] = pΦ(±b) + const, E[σ″] = pφ(b) and E[σ″z] =
    pφ(b)·b.  The rounding of b (|δb| ≤ u|b|) moves them by |∂/∂b|·u|b| ≤ u|p|φ(b)(1 + b²)
    (times 1 + |b| for E[σ″z]); their evaluation adds a few ulps of the value.  Both are
    relative to φ(b) itself, so a unit active with probability 1e−54 gets errors of that size,
    not of the Cramér envelope e^{−b²/4} that bounds the Hermite coefficients of every order
    (8u per term, as the other coefficient estimates)."""
    u8 = 8.0 * 2.0 ** -53
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        b = np.where(ok, be / al, 0.0)
        fin = np.isfinite(b)
        b = np.where(fin, b, 0.0)
        ph = np.where(ok & fin, abs(p) * np.exp(-0.5 * b * b) / np.sqrt(2.0 * np.pi), 0.0)
        cond = 1.0 + np.minimum(b * b, 1e300)
        e_mu1 = u8 * (np.abs(mu1) + ph * cond)
        e_e2 = np.where(ok, u8 * ph * cond / al, 0.0)
        e_e2z = np.where(ok, u8 * ph * cond * (1.0 + np.abs(b)) / al, 0.0)
    return e_mu1, e_e2, e_e2z


@dataclass(frozen=True)
class SkipSpec(FamilySpec):
    """The ``skip`` family: a ridge student with a learned linear skip v·x
    (``popdyn.Student(..., skip=True)``).  Configuration: ``[student]`` keys :data:`SKIP_KEYS`
    (``skip = true``).  Rate groups a, W, b, v, c (v moves with the rate of W)."""

    name = "skip"
    label = "skip"
    config_keys = SKIP_KEYS
    rate_groups = ("a", "W", "b", "v", "c")
    bound = SkipFamily

    def student(self, d: int, m: int, **kw) -> Student:
        """A :class:`popdyn.Student` with ``skip=True``."""
        return Student(d, m, skip=True, **kw)

    def claims(self, table: dict) -> bool:
        """A table with ``skip = true``."""
        return table.get("skip") is True

    def from_config(self, table: dict, error=ValueError) -> Student:
        t = dict(table)
        self.check_config_keys(t, error)
        if t.pop("skip", True) is not True:
            raise error("[student] family = 'skip' needs skip = true (or no `skip` key)")
        return self.student(**t)


SKIP = register(SkipSpec())
