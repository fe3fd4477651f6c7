"""Population objective L = ½E[(f − y)²] and its exact gradient (DESIGN §3).

With moment matrices C = E[σ_iσ_j], B = E[σ′_iσ′_j], Ã = E[α_iσ″_iσ_j], D = E[σ′_iσ_j], first
moments μ0 = E[σ], μ1 = E[σ′], μ2 = E[ασ″], teacher cross moments (superscript T, against the
teacher's ridge units t_k = α_kθ_k·x + β_k with weights v_k) and Stein's lemma
E[σ′_j(t_j) φ(t) x] = θ_j E[α_jσ″_j φ] + α_tθ_t E[σ′_j φ′]:

    L      = ½ (s² aᵀCa + 2sc aᵀμ0 + c² − 2s aᵀCᵀv − 2c E[y] + E[y²])
    ∂L/∂a  = s (s C a + c μ0 − Cᵀ v)
    ∂L/∂c  = s aᵀμ0 + c − E[y]
    ∂L/∂b  = s a ∘ (s D a + c μ1 − Dᵀ v)
    ∂L/∂W  = s a ∘ [ θ ∘ (s Ã a + c μ2 − Ãᵀ v) + s B (a ∘ W) − Bᵀ (v ∘ α_tθ_t) ]

(∘ scales rows).  For a neuron with w_j = 0 the θ_j term is absent (θ_j := 0).

References
----------
Central seed paper (../shared/seeds/003_40ccf210d3358dbe.txt), population objective; DESIGN §3.
"""
from __future__ import annotations

import numpy as np

from ._notice import compile_notice
from ._moments import moments
from .models import Params, Student


def _extension(student, teacher):
    """The module serving SwiGLU students (:mod:`popdyn.swiglu`) or multi-index teachers
    (:mod:`popdyn.multi_index`); None for the code path of ordinary students below."""
    if not isinstance(student, Student):
        from . import swiglu
        return swiglu if isinstance(student, swiglu.SwiGLUStudent) else None
    if getattr(teacher, "kind", None) == "multi_index":
        from . import multi_index
        return multi_index
    return None


def _check(student, params, teacher):
    from .teachers import Teacher

    if not isinstance(student, Student):
        raise TypeError(f"`student` must be a popdyn.Student, got {type(student).__name__}")
    student.check(params)
    if not isinstance(teacher, Teacher):
        raise TypeError(f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}")
    if teacher.d != student.d:
        raise ValueError(f"`teacher` has input dimension {teacher.d} but the student has d = {student.d}")


def _loss_from(student, params, teacher, M) -> float:
    s, a, c = student.s, params.a, params.c
    v = teacher.weights
    ey, ey2 = teacher.mean, teacher.second_moment
    # group terms to limit cancellation: E[(f-y)^2] = E[f^2] - 2E[fy] + E[y^2]
    ff = s * s * (a @ M.C @ a) + 2.0 * s * c * (a @ M.mu0) + c * c
    fy = s * (a @ (M.Ct @ v)) + c * ey
    return 0.5 * (ff - 2.0 * fy + ey2)


def population_loss(student: Student, params: Params, teacher, *, rtol: float = 1e-10,
                    full_output: bool = False):
    """L = ½E[(f − y)²] exactly (closed forms for relu/leaky_relu; Hermite series otherwise).

    Parameters
    ----------
    rtol : float
        Target relative accuracy of the Hermite series used for smooth activations and
        non-polynomial links (ignored by the closed forms).
    full_output : bool
        If True return ``(L, info)`` where ``info["error"]`` is the estimated absolute error of L
        from series truncation and rounding (0 for pure closed forms beyond rounding) and
        ``info["order"]`` the Hermite truncation order used (None if none was needed).

    SwiGLU students (:class:`popdyn.SwiGLUStudent`) and multi-index teachers
    (:meth:`popdyn.Teacher.gated`, :meth:`popdyn.Teacher.multi_index`) are dispatched to
    :mod:`popdyn.swiglu` and :mod:`popdyn.multi_index`.
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    ext = _extension(student, teacher)
    if ext is not None:
        return ext.population_loss(student, params, teacher, rtol=rtol, full_output=full_output)
    _check(student, params, teacher)
    M = moments(student, params, teacher, rtol=rtol, grad=False)
    L = _loss_from(student, params, teacher, M)
    if full_output:
        return L, {"error": _loss_error(student, params, teacher, M), "order": M.order}
    return L


def _loss_error(student, params, teacher, M) -> float:
    s, a, c = student.s, np.abs(params.a), abs(params.c)
    v = np.abs(teacher.weights)
    return float(0.5 * s * s * (a @ M.errC @ a) + s * (a @ (M.errCt @ v)) + s * c * (a @ M.errmu0))


def population_grad(student: Student, params: Params, teacher, *, rtol: float = 1e-10) -> Params:
    """The exact gradient of L = ½E[(f − y)²] in all parameters, as a :class:`Params`.

    Fixed parameters (biases of a bias-free student, intercept of an intercept-free student) get
    a zero gradient.
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    ext = _extension(student, teacher)
    if ext is not None:
        return ext.population_grad(student, params, teacher, rtol=rtol)
    _check(student, params, teacher)
    M = moments(student, params, teacher, rtol=rtol, grad=True)
    return _grad_from(student, params, teacher, M)


def loss_and_grad(student: Student, params: Params, teacher, *, rtol: float = 1e-10,
                  check: bool = True):
    """(L, ∇L) from one moment evaluation (what the integrators call)."""
    ext = _extension(student, teacher)
    if ext is not None:
        return ext.loss_and_grad(student, params, teacher, rtol=rtol, check=check)
    if check:
        _check(student, params, teacher)
    M = moments(student, params, teacher, rtol=rtol, grad=True)
    return _loss_from(student, params, teacher, M), _grad_from(student, params, teacher, M)


def _grad_from(student, params, teacher, M) -> Params:
    s, a, c, W = student.s, params.a, params.c, params.W
    v = teacher.weights
    ga = s * (s * (M.C @ a) + c * M.mu0 - M.Ct @ v)
    gc = s * (a @ M.mu0) + c - teacher.mean if student.intercept else 0.0
    if student.bias:
        gb = s * a * (s * (M.D @ a) + c * M.mu1 - M.Dt @ v)
    else:
        gb = np.zeros_like(a)
    scal = s * (M.A @ a) + c * M.mu2 - M.At @ v
    UT = teacher.theta * teacher.alpha[:, None]
    inner = M.theta * scal[:, None] + s * (M.B @ (a[:, None] * W)) - M.Bt @ (v[:, None] * UT)
    gW = (s * a)[:, None] * inner
    return Params(ga, gW, gb, gc)


def fit_intercept(student: Student, params: Params, teacher) -> Params:
    """Return ``params`` with the intercept set to its exact minimizer c = E[y] − s Σ a_j E[σ_j]."""
    if not isinstance(student, Student):
        ext = _extension(student, teacher)
        if ext is not None:
            return ext.fit_intercept(student, params, teacher)
    _check(student, params.replace(c=0.0) if not student.intercept else params, teacher)
    M = moments(student, params, teacher, grad=False, cross=False)
    return params.replace(c=float(teacher.mean - student.s * (params.a @ M.mu0)))
