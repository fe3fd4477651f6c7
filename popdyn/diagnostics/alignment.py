"""AGOP alignment with the teacher subspace (DESIGN §5; seed paper 003, Figures 1–4).

With the eigenvalues λ_1 ≥ … ≥ λ_d of the AGOP M, the top-r eigenvectors V_r (rows
v_1, …, v_r) and the principal cosines σ_1 ≥ … ≥ σ_r of U V_rᵀ (U: r orthonormal rows):

    A_top  = ‖U v_1‖²                   leading eigenvector's mass in span U
    A_min  = σ_r²                       weakest direction (smallest squared principal cosine)
    A_mean = ‖U V_rᵀ‖_F² / r            mean squared cosine; isotropic reference r/d
    gap    = λ_r − λ_{r+1}              the top-r eigenspace is defined only if gap > 0

At r = 1, A_top = A_min = A_mean.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from ..teachers import Teacher

_EPS = np.finfo(np.float64).eps


@dataclass(frozen=True)
class Alignment:
    """Alignment of the top-r AGOP eigenspace with a teacher subspace.

    Attributes
    ----------
    a_top, a_min, a_mean : float
        The three scores of DESIGN §5 (each in [0, 1]).
    gap : float
        Eigengap λ_r − λ_{r+1}; reported as exactly 0.0 when it is within the numerical tie
        tolerance ``tie_tol`` (the top-r eigenspace is then not defined: ``resolved`` is False and
        the scores refer to the basis LAPACK's ``eigh`` returned, which is deterministic for a
        given input).  ``inf`` when r = d (the top-d eigenspace is the whole space).
    gap_raw : float
        λ_r − λ_{r+1} as computed.
    tie_tol : float
        8·d·ε·max|λ|: gaps at or below this are numerical ties.
    resolved : bool
        ``gap > 0`` (after the tie rule).
    eigenvalues : ndarray (d,)
        Spectrum of M in descending order.
    cosines : ndarray (r,)
        Principal cosines σ_1 ≥ … ≥ σ_r between span U and the top-r eigenspace.
    eigenvectors : ndarray (r, d)
        V_r, the top-r eigenvectors (rows), in descending eigenvalue order.
    r, d : int
        Teacher rank and input dimension; ``isotropic`` = r/d is the reference for A_mean.
    """

    a_top: float
    a_min: float
    a_mean: float
    gap: float
    gap_raw: float
    tie_tol: float
    resolved: bool
    eigenvalues: np.ndarray
    cosines: np.ndarray
    eigenvectors: np.ndarray
    r: int
    d: int

    @property
    def isotropic(self) -> float:
        """r/d: the value of A_mean for a uniformly random r-dimensional eigenspace."""
        return self.r / self.d

    def as_dict(self) -> dict:
        """Scalars only (what the recorder stores)."""
        return {"a_top": self.a_top, "a_min": self.a_min, "a_mean": self.a_mean,
                "gap": self.gap, "resolved": self.resolved}


def check_subspace(U, d: int | None = None, *, name: str = "U", atol: float = 1e-10) -> np.ndarray:
    """Validate a teacher subspace: a (r, d) array with orthonormal rows, 1 ≤ r ≤ d.

    A :class:`popdyn.Teacher` is accepted and replaced by its ``subspace``.
    """
    if isinstance(U, Teacher):
        U = U.subspace
    U = V.array(name, U, (None, None))
    if U.shape[0] == 0 or U.shape[1] == 0:
        raise ValueError(f"`{name}` must have at least one row and one column, got shape {U.shape}")
    if d is not None and U.shape[1] != d:
        raise ValueError(f"`{name}` must have width d = {d} (one column per input coordinate), "
                         f"got shape {U.shape}")
    if U.shape[0] > U.shape[1]:
        raise ValueError(f"`{name}` has {U.shape[0]} rows in dimension {U.shape[1]}: "
                         "at most d orthonormal rows exist")
    V.orthonormal_rows(name, U, atol)
    return U


def check_agop(M, *, name: str = "M") -> np.ndarray:
    """Validate a finite, square, symmetric matrix (symmetry within 1e−10 relative)."""
    M = V.array(name, M, (None, None))
    if M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"`{name}` must be a non-empty square matrix, got shape {M.shape}")
    asym = float(np.max(np.abs(M - M.T)))
    scale = float(np.max(np.abs(M)))
    if asym > 1e-10 * scale:
        raise ValueError(f"`{name}` must be symmetric; max |M − Mᵀ| = {asym:.3g} "
                         f"(max |M| = {scale:.3g})")
    return M


def alignment(M, U) -> Alignment:
    """Alignment of the top-r eigenspace of the AGOP ``M`` with the teacher subspace ``U``.

    Parameters
    ----------
    M : array_like (d, d)
        A symmetric matrix, normally :func:`popdyn.agop`.  It is symmetrized as (M + Mᵀ)/2.
    U : array_like (r, d) or Teacher
        Orthonormal rows spanning the teacher subspace (checked to 1e−10); a
        :class:`popdyn.Teacher` stands for its ``subspace``.

    Returns
    -------
    Alignment
        ``a_top``, ``a_min``, ``a_mean``, ``gap`` and the spectrum.

    Notes
    -----
    The spectrum comes from ``numpy.linalg.eigh`` (ascending; reversed here).  When
    λ_r = λ_{r+1} up to the tie tolerance 8·d·ε·max|λ| the top-r eigenspace is not defined:
    the result reports ``gap = 0.0``, ``resolved = False`` and scores for ``eigh``'s basis, which
    is deterministic for a given matrix but not a property of M.  Principal cosines are the
    singular values of U V_rᵀ clipped to [0, 1] (they agree with
    ``cos(scipy.linalg.subspace_angles)``).

    References
    ----------
    Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt), AGOP alignment A_min, A_mean,
    A_top; DESIGN §5.
    """
    M = check_agop(M)
    U = check_subspace(U, M.shape[0])
    return _alignment(M, U)


def _alignment(M: np.ndarray, U: np.ndarray) -> Alignment:
    """:func:`alignment` of a checked matrix ``M`` and subspace ``U`` (no input checks)."""
    d = M.shape[0]
    r = U.shape[0]
    lam, Q = np.linalg.eigh(0.5 * (M + M.T))
    lam = lam[::-1].copy()
    Q = Q[:, ::-1]
    Vr = np.ascontiguousarray(Q[:, :r].T)
    P = U @ Vr.T                                  # (r, r)
    cos = np.clip(np.linalg.svd(P, compute_uv=False), 0.0, 1.0)
    a_top = float(min(1.0, np.sum((U @ Vr[0]) ** 2)))
    a_min = float(cos[-1] ** 2)
    a_mean = float(min(1.0, np.sum(P * P) / r))
    tie_tol = 8.0 * d * _EPS * float(np.max(np.abs(lam)))
    if r < d:
        gap_raw = float(lam[r - 1] - lam[r])
        gap = gap_raw if gap_raw > tie_tol else 0.0
    else:
        gap_raw = gap = float("inf")
    return Alignment(a_top, a_min, a_mean, gap, gap_raw, tie_tol, gap > 0, lam, cos, Vr, r, d)
