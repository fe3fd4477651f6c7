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

from . import accuracy as _acc
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
        Requested relative accuracy (a contract, :mod:`popdyn.accuracy`): L is returned when its
        estimated error is at most ``rtol·|L| + atol`` (``atol``: the float64 rounding floor
        8(n + 2)u times the size of the loss's terms, n the number of units); otherwise the
        Hermite series of smooth activations and non-polynomial links are refined (series
        tolerance ÷100 per step down to 1e−16) and, if the estimate still exceeds it, an
        :class:`popdyn.AccuracyWarning` names the cap that was hit.  Closed forms (relu /
        leaky relu against PL teachers) are within rounding.
    full_output : bool
        If True return ``(L, info)`` where ``info["error"]`` is the estimated absolute error of L
        from series truncation and rounding (0 for pure closed forms beyond rounding),
        ``info["order"]`` the Hermite truncation order used (None if none was needed),
        ``info["rtol"]``, ``info["atol"]``, ``info["series_tol"]`` (the series tolerance of the
        returned value) and ``info["within_rtol"]`` (error <= rtol·|L| + atol).

    Every student family (:mod:`popdyn.family`: ridge, skip, SwiGLU) and every teacher kind
    (additive, network, gated, multi-index) goes through the family protocol.
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    fam = family_of(student)
    fam.check(params, teacher)
    L, info = _contract_loss(fam, params, teacher, rtol)
    if full_output:
        return L, info
    return L


def _loss_atol(fam, params, teacher, M, info) -> float:
    """The rounding floor of the loss (``atol`` of the contract)."""
    if "rounding" in info:
        return float(info["rounding"])
    scale = fam.loss_scale(params, teacher, M) if hasattr(fam, "loss_scale") else 0.0
    n = int(params.a.shape[0]) + int(getattr(teacher, "k", 1) or 1)
    return _acc.rounding_floor(n, scale)


def _contract_loss(fam, params, teacher, rtol):
    """(L, info) under the tolerance contract of :mod:`popdyn.accuracy`."""
    if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and 0 < rtol < 1):
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    tol = float(rtol)
    while True:
        M = fam.moments(params, teacher, need="loss", tol=tol)
        L = fam.loss(params, teacher, M)
        info = dict(fam.loss_info(params, teacher, M))
        atol = _loss_atol(fam, params, teacher, M, info)
        err = _acc.finite_or_inf(info["error"])
        target = rtol * abs(L) + atol
        info.update(rtol=float(rtol), atol=atol, series_tol=tol, within_rtol=err <= target)
        if err <= target:
            return L, info
        order = info.get("order")
        cap = info.get("cap")
        if cap is None and order is not None and order >= _acc.ORDER_CAP:
            cap = f"the Hermite order cap {_acc.ORDER_CAP} was reached"
        if cap is not None:
            break
        if tol <= _acc.RTOL_FLOOR:
            cap = f"the series tolerance floor {_acc.RTOL_FLOOR:g} was reached"
            break
        tol = _acc.next_tolerance(tol, err, target)
    _acc.warn(f"population loss of the {getattr(fam, 'label', 'student')} student", err,
              target, rtol, cap, "certify.loss gives a rigorous bracket.", stacklevel=4)
    return L, info


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
