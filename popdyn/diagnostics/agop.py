"""Average gradient outer product of a two-layer student (DESIGN §3, §5).

For f(x) = s Σ_j a_j σ(w_j·x + b_j) + c on x ~ N(0, I_d), ∇_x f = s Σ_j a_j σ′(w_j·x + b_j) w_j, so

    M = E[∇_x f ∇_x fᵀ] = s² Wᵀ (a aᵀ ∘ B) W,    B_ij = E[σ′_i σ′_j],

for every activation: B is the engine's derivative moment matrix (closed forms through the
bivariate normal CDF for relu / leaky_relu, Hermite series for smooth activations).
"""
from __future__ import annotations

import numpy as np

from .. import _validate as V
from ..family import family_of


def _check_student(student, params):
    family_of(student).check(params)


def agop_from_moments(student, params, B) -> np.ndarray:
    """M = s² Wᵀ(aaᵀ ∘ B)W from a precomputed B = E[σ′_iσ′_j] (no input checks)."""
    s, a, W = student.s, params.a, params.W
    K = (s * s) * (a[:, None] * B * a[None, :])
    M = W.T @ (K @ W)
    return 0.5 * (M + M.T)


def agop(student, params, *, rtol: float = 1e-10) -> np.ndarray:
    """The AGOP M = E[∇_x f(x) ∇_x f(x)ᵀ] of ``student`` at ``params``, exactly in population.

    Parameters
    ----------
    student : Student
    params : Params
    rtol : float
        Series tolerance for smooth activations (relu and leaky_relu use closed forms).

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
    return fam.agop(params, fam.moments(params, None, need="student", tol=rtol))
