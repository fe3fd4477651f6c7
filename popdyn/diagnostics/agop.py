"""Average gradient outer product of a two-layer student (DESIGN §3, §5).

For f(x) = s Σ_j a_j σ(w_j·x + b_j) + c on x ~ N(0, I_d), ∇_x f = s Σ_j a_j σ′(w_j·x + b_j) w_j, so

    M = E[∇_x f ∇_x fᵀ] = s² Wᵀ (a aᵀ ∘ B) W,    B_ij = E[σ′_i σ′_j],

for every activation: B is the engine's derivative moment matrix (closed forms through the
bivariate normal CDF for relu / leaky_relu, Hermite series for smooth activations).
"""
from __future__ import annotations

import numpy as np

from .. import _validate as V
from .. import accuracy as _acc
from ..family import family_of


def _check_student(student, params):
    family_of(student).check(params)


def agop_from_moments(student, params, B) -> np.ndarray:
    """M = s² Wᵀ(aaᵀ ∘ B)W from a precomputed B = E[σ′_iσ′_j] (no input checks)."""
    s, a, W = student.s, params.a, params.W
    K = (s * s) * (a[:, None] * B * a[None, :])
    M = W.T @ (K @ W)
    return 0.5 * (M + M.T)


def agop(student, params, *, rtol: float = 1e-10, full_output: bool = False) -> np.ndarray:
    """The AGOP M = E[∇_x f(x) ∇_x f(x)ᵀ] of ``student`` at ``params``, exactly in population.

    Parameters
    ----------
    student : Student
    params : Params
    rtol : float
        Requested accuracy in the spectral norm, a contract (:mod:`popdyn.accuracy`): M is
        returned when its estimated error satisfies ‖ΔM‖₂ <= rtol·‖M‖₂ + atol (``atol``: the
        rounding floor 8(m + d + 2)u·‖s²|W|ᵀ(|a||a|ᵀ∘|B|)|W|‖₂), else with an
        :class:`popdyn.AccuracyWarning`.  relu / leaky relu (closed forms) and erf (B in closed
        form) are within rounding; the series of silu, gelu and tanh are refined (÷100 per
        step down to 1e−16) and the estimate is the change of M between the last two series
        tolerances (an a-posteriori estimate; :func:`certify.alignment` gives rigorous
        brackets).
    full_output : bool
        If True return ``(M, info)`` with ``info["error"]`` (the estimate of ‖ΔM‖₂),
        ``info["rtol"]``, ``info["atol"]``, ``info["series_tol"]`` and ``info["within_rtol"]``.

    Returns
    -------
    ndarray (d, d)
        Symmetric positive semidefinite; the intercept c does not enter.

    Notes
    -----
    M = s² Wᵀ(aaᵀ ∘ B)W with B_ij = E[σ′(w_i·x + b_i) σ′(w_j·x + b_j)].  A neuron with w_j = 0
    contributes nothing (its gradient in x vanishes).

    References
    ----------
    Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt), AGOP definition; DESIGN §3
    ("The AGOP is M = Wᵀ(aaᵀ ∘ B)W — the same B") and §5.  Every student family goes through its
    ``agop`` (:mod:`popdyn.family`; SwiGLU: :func:`popdyn.swiglu.agop_from_moments`, skip
    students: :mod:`popdyn.skip`).
    """
    fam = family_of(student)
    fam.check(params)
    rtol = V.real("rtol", rtol, positive=True)
    if not rtol < 1:
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    M, info = contract_agop(fam, params, rtol)
    return (M, info) if full_output else M


def _agop_atol(fam, params, M, B) -> float:
    """The float64 rounding floor of the AGOP: from |W|ᵀ(s²|a||B||a|ᵀ)|W| when the family has a
    ridge first layer (``fam.first_layer``) and B was formed, else from ‖M‖."""
    st = fam.student
    if B is None or fam.first_layer is None:
        return _acc.rounding_floor(st.m + st.d, _acc.spectral_norm(M))
    s = st.s
    aa = np.abs(params.a)
    Wa = np.abs(getattr(params, fam.first_layer))
    K = (s * s) * (aa[:, None] * np.abs(B) * aa[None, :])
    return _acc.rounding_floor(st.m + st.d, _acc.spectral_norm(Wa.T @ (K @ Wa)))


def contract_agop(fam, params, rtol: float):
    """(M, info) of :func:`agop` under the tolerance contract (no input checks)."""
    tols = _acc.tolerances(rtol)
    Mo = fam.moments(params, None, need="student", tol=tols[0])
    M = fam.agop(params, Mo)
    atol = _agop_atol(fam, params, M, getattr(Mo, "B", None))
    if fam.agop_closed_form:
        return M, {"error": atol, "rtol": rtol, "atol": atol, "series_tol": tols[0],
                   "within_rtol": True}
    err = np.inf
    tol = tols[0]
    cap = f"the series tolerance floor {_acc.RTOL_FLOOR:g} was reached"
    for nxt in tols[1:]:
        Mo2 = fam.moments(params, None, need="student", tol=nxt)
        M2 = fam.agop(params, Mo2)
        err = _acc.spectral_norm(M - M2) + atol
        M, Mo, tol = M2, Mo2, nxt
        atol = _agop_atol(fam, params, M, getattr(Mo, "B", None))
        target = rtol * _acc.spectral_norm(M) + atol
        if err <= target:
            return M, {"error": err, "rtol": rtol, "atol": atol, "series_tol": tol,
                       "within_rtol": True}
        order = getattr(Mo, "order", None) or getattr(Mo, "N", None)
        if order is not None and order >= _acc.ORDER_CAP:
            cap = f"the Hermite order cap {_acc.ORDER_CAP} was reached"
            break
    target = rtol * _acc.spectral_norm(M) + atol
    if len(tols) == 1:       # rtol at the floor already: no second tolerance to compare with
        Mo2 = fam.moments(params, None, need="student", tol=min(1e-15, 10 * tols[0]))
        err = _acc.spectral_norm(M - fam.agop(params, Mo2)) + atol
        if err <= target:
            return M, {"error": err, "rtol": rtol, "atol": atol, "series_tol": tol,
                       "within_rtol": True}
    _acc.warn(f"AGOP of the {getattr(fam.student, 'activation', fam.label)} student", err,
              target, rtol, cap, "certify.alignment gives rigorous brackets.", stacklevel=4)
    return M, {"error": err, "rtol": rtol, "atol": atol, "series_tol": tol, "within_rtol": False}
