"""AGOP alignment with the teacher subspace (docs/design.md §5; Kumar (arXiv 2609.39408), Figures
1–4).

With the eigenvalues λ_1 ≥ … ≥ λ_d of the AGOP M, the top-r eigenvectors V_r (rows
v_1, …, v_r) and the principal cosines σ_1 ≥ … ≥ σ_r of U V_rᵀ (U: r orthonormal rows):

    A_top  = ‖U v_1‖²                   leading eigenvector's mass in span U
    A_min  = σ_r²                       weakest direction (smallest squared principal cosine)
    A_mean = ‖U V_rᵀ‖_F² / r            mean squared cosine; isotropic reference r/d
    gap    = λ_r − λ_{r+1}              the top-r eigenspace is defined only if gap > 0

At r = 1, A_top = A_min = A_mean.

Resolution rule of Kumar (arXiv 2609.39408), App. A ("Full AGOP and unresolved spectra"): a
rank-r score is reported only when λ_r/λ_1 > 1e−9 and (λ_r − λ_{r+1})/λ_1 > 1e−9
(:attr:`Alignment.spectrum_resolved`); an unresolved A_min or A_mean enters averages as the
interval [0, 1] (:attr:`Alignment.a_min_interval`, :func:`interval_mean`, :func:`gain_interval`),
never as 0 and never dropped.  The hidden-weight energy fraction A_sub (:func:`a_sub`) is a
separate statistic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as V
from ..teachers import Teacher

#: a possibly unresolved score: a value, an interval (lo, hi), or None (unresolved: [0, 1])
_Score: TypeAlias = "float | Sequence[float] | np.ndarray | None"

_EPS = np.finfo(np.float64).eps


@dataclass(frozen=True)
class Alignment:
    """Alignment of the top-r AGOP eigenspace with a teacher subspace.

    Attributes
    ----------
    a_top, a_min, a_mean : float
        The three scores of docs/design.md §5 (each in [0, 1]).
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
    def spectrum_resolved(self) -> bool:
        """The paper's resolution rule (Kumar, arXiv 2609.39408, App. A): λ_r/λ_1 > 1e−9 and
        (λ_r − λ_{r+1})/λ_1 > 1e−9 (λ_{d+1} := 0 when r = d; False when λ_1 ≤ 0).  Independent of
        ``resolved`` (the tie rule of the eigengap)."""
        return paper_resolved(self.eigenvalues, self.r)

    @property
    def a_min_interval(self) -> tuple[float, float]:
        """(A_min, A_min) when :attr:`spectrum_resolved`, else (0.0, 1.0)."""
        return score_interval(self.a_min, self.spectrum_resolved)

    @property
    def a_mean_interval(self) -> tuple[float, float]:
        """(A_mean, A_mean) when :attr:`spectrum_resolved`, else (0.0, 1.0)."""
        return score_interval(self.a_mean, self.spectrum_resolved)

    @property
    def isotropic(self) -> float:
        """r/d: the value of A_mean for a uniformly random r-dimensional eigenspace."""
        return self.r / self.d

    def as_dict(self) -> dict:
        """Scalars only (what the recorder stores)."""
        return {"a_top": self.a_top, "a_min": self.a_min, "a_mean": self.a_mean,
                "gap": self.gap, "resolved": self.resolved}


def check_subspace(U: ArrayLike | Teacher, d: int | None = None, *, name: str = "U",
                   atol: float = 1e-10) -> np.ndarray:
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


def check_agop(M: ArrayLike, *, name: str = "M") -> np.ndarray:
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


def alignment(M: ArrayLike, U: ArrayLike | Teacher) -> Alignment:
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
    Kumar (arXiv 2609.39408), AGOP alignment A_min, A_mean,
    A_top; docs/design.md §5.
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


# ---------------------------------------------------------------------------- resolution rule
#: the relative thresholds of the resolution rule (paper App. A)
RESOLUTION_TOL = 1e-9


def paper_resolved(eigenvalues: ArrayLike, r: int, tol: float = RESOLUTION_TOL) -> bool:
    """Whether a rank-``r`` AGOP score is resolved under the rule of Kumar (arXiv 2609.39408),
    App. A: λ_r/λ_1 > tol and (λ_r − λ_{r+1})/λ_1 > tol.

    Parameters
    ----------
    eigenvalues : array_like (d,)
        The spectrum in any order (sorted descending here).
    r : int
        Teacher rank, 1 ≤ r ≤ d.  For r = d, λ_{d+1} := 0 (the gap condition is then the first
        one: the top-d space must not contain a null direction).
    tol : float
        The threshold (default 1e−9).

    Returns
    -------
    bool
        False whenever λ_1 ≤ 0 (a zero AGOP has no leading space).
    """
    lam = np.sort(V.array("eigenvalues", eigenvalues, (None,)))[::-1]
    d = lam.shape[0]
    r = V.positive_int("r", r)
    if r > d:
        raise ValueError(f"`r` must be at most d = {d} (the number of eigenvalues), got {r}")
    tol = V.real("tol", tol, positive=True)
    l1 = float(lam[0])
    if not l1 > 0:
        return False
    lr = float(lam[r - 1])
    lnext = float(lam[r]) if r < d else 0.0
    return bool(lr / l1 > tol and (lr - lnext) / l1 > tol)


def score_interval(value: float, resolved: bool) -> tuple[float, float]:
    """The interval a score enters averages with: (value, value) if ``resolved``, else the
    possible range (0.0, 1.0) (paper App. A: never 0, never dropped)."""
    if not isinstance(resolved, (bool, np.bool_)):
        raise TypeError(f"`resolved` must be a bool, got {resolved!r}")
    if not resolved:
        return (0.0, 1.0)
    v = V.real("value", value)
    return (v, v)


def _as_interval(x, name):
    """A score as (lo, hi): a real number is a point, None an unresolved score (0, 1)."""
    if x is None:
        return (0.0, 1.0)
    if isinstance(x, (tuple, list, np.ndarray)) and len(x) == 2:
        lo, hi = V.real(f"{name}[0]", x[0]), V.real(f"{name}[1]", x[1])
        if not lo <= hi:
            raise ValueError(f"`{name}` must be an interval (lo, hi) with lo <= hi, got {tuple(x)!r}")
        return (lo, hi)
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a score, an interval (lo, hi) or None, got {x!r}")
    v = V.real(name, x)
    return (v, v)


def interval_mean(scores: Iterable[_Score]) -> tuple[float, float]:
    """Average possibly-unresolved scores: (mean of the lower ends, mean of the upper ends).

    Each item is a number (a resolved score), an interval (lo, hi) (e.g.
    :attr:`Alignment.a_min_interval`) or None (an unresolved score: (0, 1)).  Every item has the
    same weight (paper App. A: an unresolved score contributes its possible interval; the
    denominator keeps every seed).
    """
    items = list(scores)
    if not items:
        raise ValueError("`scores` must contain at least one score")
    iv = [_as_interval(x, f"scores[{i}]") for i, x in enumerate(items)]
    return (math.fsum(lo for lo, _ in iv) / len(iv), math.fsum(hi for _, hi in iv) / len(iv))


def gain_interval(later: _Score, initial: _Score) -> tuple[float, float]:
    """ΔA = A(E) − A(0) as an interval: (lo_E − hi_0, hi_E − lo_0) (paper Table 1: unresolved
    AGOPs contribute [0, 1] before the gain difference is taken).  Arguments as the items of
    :func:`interval_mean`."""
    lo_e, hi_e = _as_interval(later, "later")
    lo_0, hi_0 = _as_interval(initial, "initial")
    return (lo_e - hi_0, hi_e - lo_0)


def a_sub(W: ArrayLike, U: ArrayLike | Teacher) -> float:
    """The hidden-weight energy fraction A_sub = Σ_j‖P_U W_j‖² / Σ_j‖W_j‖² (Kumar, arXiv
    2609.39408, App. A), P_U the orthogonal projector on span U.

    Parameters
    ----------
    W : array_like (m, d)
        First-layer rows W_j (biases excluded).
    U : array_like (r, d) or Teacher
        Orthonormal rows spanning the teacher subspace.

    Returns
    -------
    float
        In [0, 1]; NaN when every row is zero (undefined, as in the paper).
    """
    W = V.array("W", W, (None, None))
    U = check_subspace(U, W.shape[1])
    den = float(np.sum(W * W))
    if den == 0.0:
        return float("nan")
    P = W @ U.T                                  # (m, r): coordinates in span U
    return float(min(1.0, np.sum(P * P) / den))
