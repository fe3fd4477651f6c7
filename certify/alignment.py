r"""Certified AGOP alignment (docs/design.md §5, §6; Kumar, arXiv 2609.39408).

The AGOP M = s² Wᵀ(aaᵀ ∘ B)W is enclosed entrywise from the ball matrix B = E[σ′_iσ′_j]
(:mod:`certify.moments`; for relu B_ij = Φ₂(h_i, h_j; ρ_ij) up to the canonical signs).  Then
"compute in float64, verify in Arb":

1. λ̂, V̂ = eigh(M̂) of the float midpoints (descending).
2. Eigenvalue enclosures (:func:`certify._arb.sym_eig_enclosure`): with F = V̂ᵀMV̂ − diag(λ̂)
   and N = V̂ᵀV̂ − I in Arb, λ_i(M) ∈ [λ̂_i − ‖F‖_F, λ̂_i + ‖F‖_F] / [1 − ‖N‖_F, 1 + ‖N‖_F]
   (Weyl, and Ostrowski for the non-orthonormality of V̂), for every matrix in the ball.
3. Gap at rank r: δ' = λ̂_r − λ̄_{r+1} with λ̄_{r+1} the certified upper bound of λ_{r+1}(M).
   δ' ≤ 0 → the eigenspace is not certified: the scores are [0, 1], status ``unresolved``.
4. Davis–Kahan (residual form): with P_⊥ the spectral projector of M on its eigenvalues
   ≤ λ̄_{r+1}, Y = V̂_r and R = MY − YΛ̂_r (Arb), Z = P_⊥Y solves M_⊥Z − ZΛ̂_r = P_⊥R, whose
   spectra are separated by δ', so ‖Z‖_F ≤ ‖R‖_F/δ'; for the orthonormal basis
   X = Y(YᵀY)^{−1/2} of span Y, ‖P_⊥X‖₂ ≤ ε := ‖R‖_F / (δ' √(1 − ‖YᵀY − I‖_F)).  If ε < 1,
   span Y injects into the eigenspace of the eigenvalues above λ̄_{r+1}, whose dimension is at
   most r, so that eigenspace *is* the top-r eigenspace, λ_r > λ_{r+1} is certified, and
   ‖sin Θ‖₂ ≤ ε.  ε ≥ 1 is treated as "not certified".
5. Scores of span Y, in Arb: K = U Y (YᵀY)^{−1} YᵀUᵀ; A_mean(Y) = tr K / r, A_min(Y) = λ_min(K)
   (enclosed like step 2), A_top(y₁) = ‖Uy₁‖²/‖y₁‖² (rank-1 version with the gap at 1).
   With ‖P − P_X‖₂ = ε and ‖UᵀU‖₂ ≤ 1 + ν_U (ν_U = ‖UUᵀ − I‖_F):
   |A_mean − A_mean(Y)| ≤ ε(1 + ν_U), |A_min − A_min(Y)| ≤ ε(1 + ν_U) (Weyl),
   |A_top − A_top(y₁)| ≤ min(tr UUᵀ, 2(1 + ν_U)) ε₁ (P₁ − P_x has rank 2, nuclear norm 2ε₁).
   Brackets are clipped to [0, 1].

Every step is rigorous; the brackets are tagged ``rigorous`` whenever the moments are.
B comes first from the fast moment path (float64 Mehler sums with rigorous bounds for moderate
correlations, entries accurate to a few ulp); when that limits the result -- a resolved score
wider than 1e−8, or a gap that the float64 spectrum separates by more than 1e−12 relative but
that was not certified -- B is recomputed with every pair in Arb (2^{−prec} accurate) and the
recipe is rerun.

References
----------
C. Davis, W. M. Kahan, "The rotation of eigenvectors by a perturbation. III", SIAM J. Numer.
Anal. 7 (1970) 1–46 (sin Θ theorem); A. M. Ostrowski, "A quantitative formulation of
Sylvester's law of inertia", PNAS 45 (1959); docs/design.md §5–§6.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from flint import arb, arb_mat
from popdyn import assembly as _asm
from popdyn.diagnostics.alignment import check_subspace
from popdyn.family import family_of

from . import _arb as A
from . import _families
from .arrays import ARB, vec
from .bracket import Bracket, BracketArray
from .errors import CertificationError
from .moments import certified_moments, student_supported

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from popdyn.typing import AnyParams, AnyStudent
    from popdyn.teachers import Teacher

__all__ = ["AlignmentBracket", "alignment", "alignment_from_matrix", "agop_enclosure"]


@dataclass(frozen=True)
class AlignmentBracket:
    """Brackets of the AGOP alignment scores (docs/design.md §5).

    Attributes
    ----------
    a_top, a_min, a_mean : Bracket
        Each in [0, 1]; ``unresolved`` ([0, 1]) when the needed eigengap is not certified
        (rank 1 for ``a_top``, rank r for ``a_min`` and ``a_mean``).
    gap : Bracket
        λ_r − λ_{r+1} (inf when r = d).
    gap_top : Bracket
        λ_1 − λ_2.
    eigenvalues : BracketArray
        Enclosures of λ_1 ≥ … ≥ λ_d.
    sin_theta : float
        The certified bound ε on ‖sin Θ‖₂ at rank r (inf if unresolved).
    status : str
        "resolved" if the rank-r gap is certified, else "unresolved".
    provenance : str
    prec : int
    r, d : int
    """

    a_top: Bracket
    a_min: Bracket
    a_mean: Bracket
    gap: Bracket
    gap_top: Bracket
    eigenvalues: BracketArray
    sin_theta: float
    status: str
    provenance: str
    prec: int
    r: int
    d: int


def agop_enclosure(student, params, B: arb_mat) -> arb_mat:
    """M = s² Wᵀ(aaᵀ ∘ B)W as a symmetric ball matrix (current python-flint precision)."""
    s = arb(1) if student.scaling == "standard" else arb(1) / student.m
    # the float engine's assembly (popdyn.assembly.agop) in the Arb context
    return _asm.agop(ARB, s, vec(params.a), A.mat_from_array(params.W), B)


def _symmetrize(M: arb_mat) -> arb_mat:
    """½(M + Mᵀ), exactly symmetric (:meth:`certify.arrays.ArbContext.sym`)."""
    return ARB.sym(M)


def _unresolved(note, prov):
    return Bracket(0.0, 1.0, provenance=prov, status="unresolved", note=note)


def _score(center, eps, prov, note=""):
    """center (ball) ± eps, clipped to [0, 1]."""
    lo, hi = A.arb_bounds(center)
    if not (math.isfinite(lo) and math.isfinite(hi)) or not math.isfinite(eps):
        return _unresolved("no finite enclosure", prov)
    lo = lo - eps
    hi = hi + eps
    lo = math.nextafter(lo, -math.inf)
    hi = math.nextafter(hi, math.inf)
    lo, hi = max(lo, 0.0), min(hi, 1.0)
    if lo > hi:      # cannot happen for a sound enclosure of a value in [0, 1]
        raise CertificationError("alignment enclosure left [0, 1] (internal)", hint="a higher prec")
    return Bracket(lo, hi, provenance=prov, note=note)


def _sin_theta(M, V, lam, hi_next, k):
    """ε bound on ‖sin Θ‖₂ between span V[:, :k] and the top-k eigenspace of every M in the
    ball (inf if the gap is not certified)."""
    Y = A.mat_from_array(V[:, :k])
    delta = arb(float(lam[k - 1])) - arb(hi_next)
    if not delta > 0:
        return math.inf
    R = M * Y - Y * A.mat_from_array(np.diag(lam[:k]))
    rn = A.frob_upper(R)
    N = Y.transpose() * Y - A.mat_from_array(np.eye(k))
    nu = A.frob_upper(N)
    if not nu < 0.5:
        return math.inf
    eps = A.upper(arb(rn) / (delta * (1 - arb(nu)).sqrt()))
    # ε < 1 is what certifies the gap itself: span Y then injects into the eigenspace of the
    # eigenvalues above λ̄_{k+1}, which has dimension <= k, so it is the top-k eigenspace
    return eps if eps < 1.0 else math.inf


def alignment_from_matrix(M, U, *, prec: int = 128, provenance: str = "rigorous"):
    """Certified alignment of a ball matrix M (an ``arb_mat``, or a float array taken exactly,
    or a pair (M, rad) of float arrays meaning M ± rad entrywise) with the subspace U.

    This is the second half of :func:`alignment`; it is public so that the recipe can be
    checked on matrices whose gap is controlled.
    """
    prec = A.check_prec(prec)
    with A.workprec(prec):
        if isinstance(M, arb_mat):
            Ma = M
        else:
            if isinstance(M, tuple):
                Mf, rad = (np.asarray(x, dtype=np.float64) for x in M)
            else:
                Mf, rad = np.asarray(M, dtype=np.float64), None
            if Mf.ndim != 2 or Mf.shape[0] != Mf.shape[1]:
                raise ValueError(f"`M` must be a square matrix, got shape {Mf.shape}")
            if not np.all(np.isfinite(Mf)):
                raise ValueError("`M` must be finite")
            Ma = A.mat_from_array(Mf)
            if rad is not None:
                if rad.shape != Mf.shape or np.any(rad < 0) or not np.all(np.isfinite(rad)):
                    raise ValueError("`rad` must be a finite non-negative array of M's shape")
                for i in range(Mf.shape[0]):
                    for j in range(Mf.shape[1]):
                        if rad[i, j] > 0:
                            Ma[i, j] = Ma[i, j] + arb(0, float(rad[i, j]))
            Ma = _symmetrize(Ma)
        d = Ma.nrows()
        U = check_subspace(U, d)
        return _align(Ma, U, prec, provenance)


def _align(M: arb_mat, U: np.ndarray, prec: int, prov: str) -> AlignmentBracket:
    d = M.nrows()
    r = U.shape[0]
    lo, hi, lam, V = A.sym_eig_enclosure(M)
    eig = BracketArray(lo, hi, prov)
    Ua = A.mat_from_array(U)
    nuU = A.frob_upper(Ua * Ua.transpose() - A.mat_from_array(np.eye(r)))
    cU = 1.0 + nuU
    trU = A.upper(sum((Ua[i, j] * Ua[i, j] for i in range(r) for j in range(d)), arb(0)))

    def gapb(k):
        if k >= d:
            return Bracket(math.inf, math.inf, provenance=prov)
        return Bracket.enclosing(max(min(A.lower(arb(lo[k - 1]) - arb(hi[k])), 1e308), -1e308),
                                 max(min(A.upper(arb(hi[k - 1]) - arb(lo[k])), 1e308), -1e308),
                                 provenance=prov)

    gap, gap1 = gapb(r), gapb(1)
    eps_r = _sin_theta(M, V, lam, hi[r], r) if r < d else 0.0
    eps_1 = _sin_theta(M, V, lam, hi[1], 1) if d > 1 else 0.0
    # a certified eigenspace (ε < 1) certifies a positive gap
    if r < d and math.isfinite(eps_r) and gap.lo < 0:
        gap = gap.replace(lo=0.0)
    if d > 1 and math.isfinite(eps_1) and gap1.lo < 0:
        gap1 = gap1.replace(lo=0.0)
    # rank r: A_min, A_mean
    if r == d:
        eps = 0.0
        a_min = Bracket.enclosing(max(0.0, _lam_min_lo(Ua)), 1.0, provenance=prov)
        a_mean = Bracket(1.0, 1.0, provenance=prov) if nuU == 0 else _score(
            sum((Ua[i, j] * Ua[i, j] for i in range(r) for j in range(d)), arb(0)) / r, 0.0, prov)
    else:
        eps = eps_r
        if not math.isfinite(eps):
            note = f"eigengap at rank {r} not certified (λ̂_r − λ̄_(r+1) ≤ 0)"
            a_min = a_mean = _unresolved(note, prov)
        else:
            Y = A.mat_from_array(V[:, :r])
            UY = Ua * Y
            Sinv = (Y.transpose() * Y).inv()
            K = _symmetrize(UY * Sinv * UY.transpose())
            tr = sum((K[i, i] for i in range(r)), arb(0))
            a_mean = _score(tr / r, A.mul_up(eps, cU), prov)
            klo, khi, _, _ = A.sym_eig_enclosure(K)
            cen = arb(klo[-1]).union(arb(khi[-1]))
            a_min = _score(cen, A.mul_up(eps, cU), prov)
    # rank 1: A_top
    if d == 1:        # the only eigenvector is ±e_1: A_top = ‖U e_1‖²
        a_top = _score(sum((Ua[i, 0] * Ua[i, 0] for i in range(r)), arb(0)), 0.0, prov)
    else:
        eps1 = eps_1
        if not math.isfinite(eps1):
            a_top = _unresolved("eigengap at rank 1 not certified", prov)
        else:
            y = A.mat_from_array(V[:, :1])
            Uy = Ua * y
            num = (Uy.transpose() * Uy)[0, 0]
            den = (y.transpose() * y)[0, 0]
            a_top = _score(num / den, A.mul_up(min(trU, A.mul_up(2.0, cU)), eps1), prov)
    status = "resolved" if (r == d or math.isfinite(eps)) else "unresolved"
    return AlignmentBracket(a_top, a_min, a_mean, gap, gap1, eig,
                            eps if math.isfinite(eps) else math.inf, status, prov, prec, r, d)


def _lam_min_lo(Ua):
    K = _symmetrize(Ua * Ua.transpose())
    lo, _, _, _ = A.sym_eig_enclosure(K)
    return lo[-1]


def alignment(student: AnyStudent, params: AnyParams, U: ArrayLike | Teacher, *,
              prec: int = 128) -> AlignmentBracket:
    """Certified AGOP alignment of ``student`` at ``params`` with the teacher subspace ``U``.

    Parameters
    ----------
    student : popdyn.Student or popdyn.SwiGLUStudent
        relu or leaky_relu (rigorous), silu, gelu, tanh, erf (rigorous,
        :mod:`certify.smooth`), each also with a learned linear skip (rigorous,
        :mod:`certify.skip`), SwiGLU (rigorous, :mod:`certify.swiglu`).  Dispatched through the
        family registry :mod:`certify._families`.
    params : popdyn.Params or popdyn.SwiGLUParams
    U : array_like (r, d) or popdyn.Teacher
        Orthonormal rows (checked to 1e−10; the bound accounts for the actual ‖UUᵀ − I‖);
        a Teacher stands for its ``subspace``.
    prec : int, keyword-only
        Working precision in bits (default 128).

    Returns
    -------
    AlignmentBracket
        ``a_top``, ``a_min``, ``a_mean`` brackets in [0, 1]; ``unresolved`` ([0, 1]) where the
        eigengap is not certified -- never a point value.

    Examples
    --------
    >>> import numpy as np, popdyn, certify
    >>> S = popdyn.Student(d=4, m=6)
    >>> p = S.init(1, 1.0)
    >>> res = certify.alignment(S, p, np.eye(4)[:2])
    >>> res.a_mean.lo <= res.a_mean.hi
    True

    References
    ----------
    Kumar (arXiv 2609.39408) (AGOP alignment); docs/design.md §5, §6 (recipe).
    """
    prec = A.check_prec(prec)
    certify_of = _families.of(student).require("alignment", student)   # ridge, skip, swiglu
    return certify_of(student, params, U, prec=prec)


def _ridge_alignment(student, params, U, *, prec: int) -> AlignmentBracket:
    """:func:`alignment` for the ridge family (relu, leaky relu and the smooth activations)."""
    family_of(student).check(params)
    U = check_subspace(U, student.d)
    return certified_alignment(student, params, U, prec,
                               lambda CM: agop_enclosure(student, params, CM.B))


def certified_alignment(plain, params, U, prec: int, agop) -> AlignmentBracket:
    """The recipe shared by every family built on ridge neurons (ridge, skip): the certified
    moments of the ridge student ``plain`` (with B), the AGOP enclosure ``agop(CM)`` and the
    eigengap / Davis–Kahan scores; recomputed with every pair in Arb when the float64 Mehler
    path's few-ulp entries limit the bound (:func:`_retry_exact`).  ``U`` is checked."""
    if not student_supported(plain):
        raise CertificationError(
            "certified AGOP moments cover relu / leaky_relu / silu / gelu / tanh / erf "
            f"students, not {plain.activation!r}",
            hint="use popdyn.diagnostics.alignment for a float64 value")
    for exact in (False, True):
        CM = certified_moments(plain, params, None, prec=prec, need_B=True, exact_pairs=exact)
        with A.workprec(prec):
            res = _align(agop(CM), U, prec, "rigorous")
        if not _retry_exact(res):
            break
    return res


#: alignment widths above this (or an uncertified gap that the float64 spectrum separates by more
#: than GAP_RETRY relative) trigger a recomputation of B with every pair in Arb
WIDTH_TARGET = 1e-8
GAP_RETRY = 1e-12


def _retry_exact(res) -> bool:
    lam1 = max(abs(res.eigenvalues.lo[0]), abs(res.eigenvalues.hi[0]), 1e-300)
    for b, g in ((res.a_top, res.gap_top), (res.a_min, res.gap), (res.a_mean, res.gap)):
        if b.resolved and b.width > WIDTH_TARGET:
            return True
        if not b.resolved and math.isfinite(g.hi) and g.mid > GAP_RETRY * lam1:
            return True
    return False

