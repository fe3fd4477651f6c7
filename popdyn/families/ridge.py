"""The ``ridge`` student family: f(x) = s Σ_j a_j σ(w_j·x + b_j) + c (docs/design.md §2–3).

The student and its parameters are :class:`popdyn.Student` and :class:`popdyn.Params`
(:mod:`popdyn.models`); this module holds the family's spec (:class:`RidgeSpec`: configuration
keys, rate groups) and its bound family (:class:`RidgeFamily`: moments, loss, gradient, AGOP,
refit problem; formulas in :mod:`popdyn.objective`).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from .. import assembly as _asm
from .. import family as _family
from .._kernels import fused as _fk
from .._moments import moments as _moments
from ..family import RefitProblem
from ..models import PRESETS, Params, Student
from ..teachers import Teacher
from ..threads import kernel_blas
from ._base import BoundFamily, FamilySpec, register

_EPS = np.finfo(np.float64).eps


def _f64(x):
    """``x`` as a C-contiguous float64 array (no copy when it is one): the kernels' type."""
    return np.ascontiguousarray(x, dtype=np.float64)


def check_teacher(student, teacher):
    """``teacher`` must be a popdyn.Teacher of the student's input dimension."""
    if not isinstance(teacher, Teacher):
        raise TypeError(f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}")
    if teacher.d != student.d:
        raise ValueError(f"`teacher` has input dimension {teacher.d} but the student has d = {student.d}")


class RidgeFamily(BoundFamily):
    """The ``ridge`` family (:mod:`popdyn.family` protocol): f(x) = s Σ_j a_j σ(w_j·x + b_j) + c
    for relu, leaky relu and the smooth activations (docs/design.md §3; formulas in
    :mod:`popdyn.objective`).

    Moments come from :mod:`popdyn._moments` (ridge teachers: additive links and networks) and
    the teacher's ``cross`` (:mod:`popdyn.teachers`: Hermite-tensor sums for multi-index / gated
    teachers).
    """

    fields: tuple[str, ...] = ("a", "W", "b", "c")
    params_type = Params
    refit_kinds = ("unrestricted", "same_budget", "bounded", "projected")
    geometry_kind = "neuron"
    #: the (m, d) first-layer field snapped by the ``projected`` refit
    first_layer = "W"
    fitted_intercept = False

    # -- capabilities (popdyn.families.capability: honoured for this class only, never inherited)
    def fused_kernel(self):
        """The fused evaluator of :mod:`popdyn.dynamics` (``_Fused``: the loss and gradient of
        this family in one compiled call) for piecewise-linear activations, else None."""
        if self.student.act.kind != "pl":
            return None
        from ..dynamics import _Fused
        return _Fused

    def finite_sample_loss(self):
        """:func:`popdyn.finite.empirical_loss_and_grad` (the sample mean of this family's
        squared loss, the finite-sample GD / SGD of :mod:`popdyn.finite`)."""
        from ..finite import empirical_loss_and_grad
        return empirical_loss_and_grad

    def ridge_units(self):
        """The student: its hidden units are the ridge units σ(w_j·x + b_j) of (W, b)."""
        return self.student

    def ridge_loss(self):
        """The student: the loss is the ridge loss ½E[(f − y)²] of this student, whose closed
        forms :mod:`popdyn.landscape` (exact Hessian) and the sample loss of
        :mod:`popdyn._skip_empirical` implement."""
        return self.student

    def ridge_readout(self):
        """The student: f is exactly s Σ_j a_j σ(w_j·x + b_j) + c (no other term), which the
        bounded refit, the affine-feature refit and the coefficient form assume."""
        return self.student

    @property
    def agop_closed_form(self) -> bool:
        """True when B = E[σ′σ′] is a closed form (relu, leaky relu: PL kernels; erf: Gaussian),
        so :func:`popdyn.diagnostics.agop` needs no series refinement."""
        st = self.student
        return st.act.kind == "pl" or st.activation == "erf"

    # -- validation
    def check(self, params, teacher=_family.NO_TEACHER, *, name: str = "params"):
        st = self.student
        st.check(params, name)
        if teacher is not _family.NO_TEACHER:
            check_teacher(st, teacher)
        return params

    # -- moments
    def moments(self, params, teacher, *, need: str = "grad", tol: float = 1e-10):
        """``need``: ``"grad"`` (every moment of the gradient), ``"loss"`` (C, μ0, Ct and the
        error estimates), ``"values"`` (C, B, μ0, Ct: AGOP and refit), ``"student"`` (student
        moments only; ``teacher`` may be None)."""
        return _moments(self.student, params, teacher, rtol=tol,
                        need="student" if teacher is None else need)

    # -- objective (docs/design.md §3; popdyn.objective module docstring)
    def loss(self, params, teacher, M) -> float:
        # E[f²] − 2E[fy] + E[y²] (terms grouped to limit cancellation), evaluated by the kernel
        # the fused GD step assembles with (:func:`popdyn._kernels.fused.ridge_loss`)
        with kernel_blas(self.student.m):
            return float(_fk.ridge_loss(float(self.student.s), _f64(params.a), float(params.c),
                                        _f64(M.C), _f64(M.mu0), _f64(M.Ct),
                                        _f64(teacher.weights), float(teacher.mean),
                                        float(teacher.second_moment)))

    def loss_error(self, params, teacher, M) -> float:
        s, a, c = self.student.s, np.abs(params.a), abs(params.c)
        v = np.abs(teacher.weights)
        return float(0.5 * s * s * (a @ M.errC @ a) + s * (a @ (M.errCt @ v))
                     + s * c * (a @ M.errmu0))

    def loss_info(self, params, teacher, M) -> dict:
        """``{"error": loss_error, "order": Hermite order used or None}``."""
        return {"error": self.loss_error(params, teacher, M), "order": M.order}

    def loss_scale(self, params, teacher, M) -> float:
        """½ Σ |terms| of :meth:`loss` (the scale of its rounding error)."""
        s = self.student.s
        aa, cc = np.abs(params.a), abs(params.c)
        return 0.5 * (s * s * (aa @ np.abs(M.C) @ aa) + 2 * s * cc * (aa @ np.abs(M.mu0)) + cc * cc
                      + 2 * s * (aa @ (np.abs(M.Ct) @ np.abs(teacher.weights)))
                      + 2 * cc * abs(teacher.mean) + teacher.second_moment)

    def grad(self, params, teacher, M) -> Params:
        """∇L from the moments by :func:`popdyn._kernels.fused.ridge_grad` (the fused step's
        assembly; formulas in :mod:`popdyn.objective`)."""
        st = self.student
        m, d = params.W.shape
        ga, gW, gb = np.empty(m), np.empty((m, d)), np.empty(m)
        v = _f64(teacher.weights)
        vU = v[:, None] * (teacher.theta * teacher.alpha[:, None])    # as the fused kernel's
        with kernel_blas(m):
            gc = _fk.ridge_grad(float(st.s), _f64(params.a), _f64(params.W), float(params.c),
                                bool(st.bias), bool(st.intercept), _f64(M.theta), _f64(M.C),
                                _f64(M.B), _f64(M.A), _f64(M.D), _f64(M.mu0), _f64(M.mu1),
                                _f64(M.mu2), _f64(M.Ct), _f64(M.Bt), _f64(M.At), _f64(M.Dt),
                                v, _f64(vU), float(teacher.mean), ga, gW, gb)
        return Params(ga, gW, gb, float(gc))

    def loss_and_grad(self, params, teacher, *, tol: float = 1e-10):
        M = self.moments(params, teacher, need="grad", tol=tol)
        return self.loss(params, teacher, M), self.grad(params, teacher, M)

    def _grad_abs(self, params, teacher, M, E):
        """Entrywise |terms| propagation of the gradient formulas (:mod:`popdyn.objective`)
        with the moment arrays replaced by the non-negative arrays of ``E`` (dict C, B, A, D,
        mu0, mu1, mu2, Ct, Bt, At, Dt): with error estimates it bounds the gradient's error to
        first order, with absolute values it is the size of the gradient's terms."""
        st = self.student
        s = st.s
        aa, cc = np.abs(params.a), abs(params.c)
        v = np.abs(np.asarray(teacher.weights, dtype=float))
        vU = v[:, None] * np.abs(teacher.theta * teacher.alpha[:, None])
        ga = s * (s * (E["C"] @ aa) + cc * E["mu0"] + E["Ct"] @ v)
        sa = s * aa
        gb = sa * (s * (E["D"] @ aa) + cc * E["mu1"] + E["Dt"] @ v) if st.bias else 0.0 * aa
        inner = s * (E["A"] @ aa) + cc * E["mu2"] + E["At"] @ v
        gW = sa[:, None] * (np.abs(M.theta) * inner[:, None]
                            + s * (E["B"] @ (aa[:, None] * np.abs(params.W))) + E["Bt"] @ vU)
        gc = float(sa @ E["mu0"]) if st.intercept else 0.0
        return Params(ga, gW, gb, gc)

    def grad_error(self, params, teacher, M):
        """Entrywise estimate of the gradient's error from the moments' error estimates
        (``need="grad_err"``: truncation tails, coefficient errors and rounding of the Mehler
        sums, :func:`popdyn._hermite.mehler_moment`), propagated through the formulas of
        :mod:`popdyn.objective` in absolute values; None when the teacher's cross moments carry
        no estimate (multi-index teachers)."""
        eg = getattr(M, "errg", None)
        if eg is None:
            return None
        E = dict(eg, C=M.errC, mu0=M.errmu0, Ct=M.errCt)
        return self._grad_abs(params, teacher, M, E)

    def grad_scale(self, params, teacher, M):
        """Entrywise size of the gradient's terms (the scale of its float64 rounding, the
        ``atol`` of the contract): the formulas with every moment in absolute value, plus
        |c| and |E[y]| in ∂L/∂c."""
        E = {k: np.abs(getattr(M, k)) for k in ("C", "B", "A", "D", "mu0", "mu1", "mu2", "Ct",
                                                 "Bt", "At", "Dt")}
        g = self._grad_abs(params, teacher, M, E)
        if self.student.intercept:
            g = g.replace(c=g.c + abs(params.c) + abs(float(teacher.mean)))
        return g

    def fit_intercept(self, params, teacher) -> Params:
        """``params`` with c = E[y] − s Σ a_j E[σ_j] (the exact minimizer)."""
        st = self.student
        self.check(params.replace(c=0.0) if not st.intercept else params, teacher)
        M = self.moments(params, None, need="student")
        return params.replace(c=float(teacher.mean - st.s * (params.a @ M.mu0)))

    # -- diagnostics
    def agop(self, params, M) -> np.ndarray:
        """M = s² Wᵀ(aaᵀ ∘ B)W from B = E[σ′_iσ′_j] (docs/design.md §3, §5)."""
        return _asm.agop(_asm.NUMPY, self.student.s, params.a, params.W, M.B)

    def refit_problem(self, params, teacher, M) -> RefitProblem:
        """The refit quadratic on the frozen features σ(w_j·x + b_j) (intercept refitted)."""
        s = self.student.s
        C, mu0 = M.C, M.mu0
        ey = teacher.mean
        G, g = _asm.refit_quadratic(_asm.NUMPY, s, C, mu0, M.Ct @ teacher.weights, ey)
        diagC = np.abs(np.diag(C))
        dropped = np.diag(G) <= 32.0 * _EPS * (s * s) * diagC
        if np.any(dropped):
            G[dropped, :] = 0.0
            G[:, dropped] = 0.0
            g = np.where(dropped, 0.0, g)
        return RefitProblem(G, g, float(teacher.variance), float(ey), mu0.copy(), s, dropped)

    # -- dynamics (popdyn.dynamics): per-field rates, the update and the step-doubling norm
    def clock(self):
        """(κ, time scale): parameter-space rate factor κ (1, or m for mean-field scaling) and
        the factor between the integration clock and the reported clock (1)."""
        return (1.0 if self.student.scaling == "standard" else float(self.student.m)), 1.0

    def evaluate(self, params, teacher, tol):
        """(L, ∇L, params) at ``params`` (the integrators' evaluation)."""
        L, g = self.loss_and_grad(params, teacher, tol=tol)
        return L, g, params

    def frozen(self) -> tuple:
        """b without biases, c without an intercept (their rate is 0)."""
        st = self.student
        return tuple(f for f, on in (("b", st.bias), ("c", st.intercept)) if not on)


#: [student] keys of a ridge student (``skip = false`` allowed: the default)
RIDGE_KEYS = ("d", "m", "activation", "negative_slope", "bias", "intercept", "scaling", "skip",
              "preset")


@dataclass(frozen=True)
class RidgeSpec(FamilySpec):
    """The ``ridge`` family: relu, leaky relu and smooth-activation students without a skip.

    Configuration: ``[student]`` keys :data:`RIDGE_KEYS` (``preset`` with ``d`` and ``m``
    only, :data:`popdyn.models.PRESETS`; ``skip = false`` is the default and is left out of
    run keys).  It is the family of a table no other family claims.  Rate groups a, W, b, c
    (``head_lr_mult``, ``bias_lr_mult``, ``intercept_lr_mult`` scale a, b, c)."""

    name = "ridge"
    label = "relu-family"
    config_keys = RIDGE_KEYS
    rate_groups = ("a", "W", "b", "c")
    bound = RidgeFamily
    fallback = True
    key_defaults = {"skip": False}

    def student(self, d: int, m: int, **kw) -> Student:
        """A :class:`popdyn.Student` of this family."""
        return Student(d, m, **kw)

    def from_config(self, table: dict, error=ValueError) -> Student:
        t = dict(table)
        if "preset" in t:
            name = t.pop("preset")
            if name not in PRESETS:
                close = difflib.get_close_matches(str(name), PRESETS, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise error(f"[student] preset must be one of {sorted(PRESETS)}, got "
                            f"{name!r}.{hint}")
            extra = sorted(k for k in t if k not in ("d", "m"))
            if extra or not {"d", "m"} <= set(t):
                raise error(f"[student] preset = {name!r} takes d and m only (it fixes "
                            f"{', '.join(sorted(PRESETS[name]))}); got {sorted(t)}")
            return Student.preset(name, t["d"], t["m"])
        if "skip" in t:
            skip = t.pop("skip")
            if skip is not False:
                raise error(f"[student] skip must be true or false, got {skip!r}")
        self.check_config_keys(t, error)
        return self.student(**t)


RIDGE = register(RidgeSpec())
