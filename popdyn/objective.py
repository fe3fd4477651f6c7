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

These formulas are assembled by the ``ridge`` family (:class:`popdyn.models.RidgeFamily`); the
functions here are generic: they call only the student-family protocol of
:mod:`popdyn.family` (``student.family``: check, moments, loss, grad, fit_intercept), so SwiGLU
students (:mod:`popdyn.swiglu`), skip students (:mod:`popdyn.skip`) and multi-index teachers go
through the same code.

References
----------
Central seed paper (../shared/seeds/003_40ccf210d3358dbe.txt), population objective; DESIGN §3.
"""
from __future__ import annotations

from ._notice import compile_notice
from .family import family_of
from .models import Params, Student


def _check(student, params, teacher):
    """Validate (student, params, teacher) through the student's family."""
    family_of(student).check(params, teacher)


def _loss_from(student, params, teacher, M) -> float:
    return student.family.loss(params, teacher, M)


def _grad_from(student, params, teacher, M):
    return student.family.grad(params, teacher, M)


def _loss_error(student, params, teacher, M) -> float:
    return student.family.loss_error(params, teacher, M)


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

    Every student family (:mod:`popdyn.family`: ridge, skip, SwiGLU) and every teacher kind
    (additive, network, gated, multi-index) goes through the family protocol.
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    fam = family_of(student)
    fam.check(params, teacher)
    M = fam.moments(params, teacher, need="loss", tol=rtol)
    L = fam.loss(params, teacher, M)
    if full_output:
        return L, fam.loss_info(params, teacher, M)
    return L


def population_grad(student: Student, params: Params, teacher, *, rtol: float = 1e-10) -> Params:
    """The exact gradient of L = ½E[(f − y)²] in all parameters, as a :class:`Params`.

    Fixed parameters (biases of a bias-free student, intercept of an intercept-free student) get
    a zero gradient.
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    fam = family_of(student)
    fam.check(params, teacher)
    return fam.grad(params, teacher, fam.moments(params, teacher, need="grad", tol=rtol))


def loss_and_grad(student: Student, params: Params, teacher, *, rtol: float = 1e-10,
                  check: bool = True):
    """(L, ∇L) from one moment evaluation (what the integrators call)."""
    fam = family_of(student)
    if check:
        fam.check(params, teacher)
    return fam.loss_and_grad(params, teacher, tol=rtol)


def fit_intercept(student: Student, params: Params, teacher) -> Params:
    """Return ``params`` with the intercept set to its exact minimizer c = E[y] − E[f − c]."""
    return family_of(student).fit_intercept(params, teacher)
