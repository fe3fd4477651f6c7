r"""Certified bracket of the bounded normalized-feature refit, Kumar (arXiv 2609.39408), eq. (6).

    R = inf_{v ∈ K} E[y²] − 2cᵀv + vᵀHv,   K = {‖v‖₂ ≤ a} ∩ {‖v‖₁ ≤ b},
    H_ij = E[σ_iσ_j]/(n_in_j),  c_i = E[σ_i y]/n_i,  n_i = √(‖W_i‖² + B_i²),

with a = 32/J_α, b = 64√r/J_α by default (J_α = 1 − α).  H, c and E[y²] are enclosed in Arb from
the certified moments C = E[σ_iσ_j] and Ct·v = E[σ_i y] of :mod:`certify.moments` (relu and
leaky relu students with biases; the teachers :func:`certify.refit_risk` covers), and n_i from
the exact float rows.  The caps are balls (64√r/J_α is irrational).

* **upper**: the float solver of :func:`popdyn.diagnostics.solve_bounded` (Clarabel) on the
  midpoints, with caps rounded down to floats, returns v̂ with ‖v̂‖₂ ≤ a̲ and ‖v̂‖₁ ≤ b̲ checked
  in exact rational arithmetic (a̲, b̲ ≤ the true caps), so v̂ ∈ K; upper = the upper end of
  the Arb enclosure of R(v̂).
* **lower** (the first-order support-function bound of paper App. A): for every v ∈ K,
  R(v) = R(v̂) + gᵀ(v − v̂) + (v − v̂)ᵀH(v − v̂) with g = 2(Hv̂ − c), and
  gᵀv ≥ −h_K(−g) ≥ −[ā‖u − clip(u, −τ, τ)‖₂ + b̄τ] (u = −g, any τ ≥ 0; ā, b̄ ≥ the caps;
  :func:`popdyn.diagnostics.refit.support_split` picks τ), while (v − v̂)ᵀH(v − v̂) ≥
  min(λ̲, 0)(ā + ‖v̂‖₂)² with a certified λ̲ ≤ λ_min(H) (:func:`certify._arb.sym_eig_enclosure`
  on the block of nonzero features).  Every term is evaluated in Arb and its lower end taken.

The bracket is ``rigorous`` when the moments are (``numerical`` when a tabulated link entered).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from flint import arb, arb_mat
from popdyn.diagnostics.refit import (BoundedProblem, BoundedRefit, L1_CAP, L2_CAP,
                                      fractions_feasible, check_bounded_student,
                                      feature_norms, solve_bounded, support_split)
from popdyn.objective import check_inputs as _check
from popdyn import validation as V

from . import _arb as A
from .bracket import Bracket
from .errors import CertificationError
from .refit import _moments, teacher_covered

if TYPE_CHECKING:
    from popdyn.typing import AnyParams, AnyStudent
    from popdyn.teachers import Teacher

__all__ = ["BoundedRefitBracket", "bounded_refit"]


@dataclass(frozen=True)
class BoundedRefitBracket:
    """Bracket of the bounded refit infimum R of eq. (6).

    Attributes
    ----------
    risk : Bracket
        [lower, upper] on the MSE scale.
    lower, upper : float
        ``risk.lo`` and ``risk.hi`` (so :func:`popdyn.diagnostics.refit_gain` accepts it).
    head : ndarray
        The feasible v̂ whose enclosed risk gives ``upper``.
    lambda_min : Bracket
        Enclosure of λ_min(H) on the nonzero features.
    l2_cap, l1_cap : Bracket
        Enclosures of the caps a, b.
    float_refit : BoundedRefit
        The float solve on the midpoints (its values are numerical).
    status : str
        ``resolved``.
    provenance : str
        ``rigorous`` or ``numerical``.
    prec : int
    note : str
    """

    risk: Bracket
    lower: float
    upper: float
    head: np.ndarray
    lambda_min: Bracket
    l2_cap: Bracket
    l1_cap: Bracket
    float_refit: BoundedRefit
    status: str
    provenance: str
    prec: int
    note: str = ""


def _caps(student, teacher, l2_cap, l1_cap):
    """The caps as balls: 32/J_α and 64√r/J_α by default, else the given floats (exact)."""
    J = arb(1) - arb(float(student.act.negative_slope)) if student.act.name == "leaky_relu" \
        else arb(1)
    r = int(np.asarray(teacher.subspace).shape[0])
    a = arb(L2_CAP) / J if l2_cap is None else arb(V.real("l2_cap", l2_cap, positive=True))
    b = (arb(L1_CAP) * arb(r).sqrt() / J if l1_cap is None
         else arb(V.real("l1_cap", l1_cap, positive=True)))
    return a, b


def _enclosures(student, params, teacher, prec):
    """(H, c, E[y²], moments, active) in Arb: H, c of the normalized features."""
    CM = _moments(student, params, teacher, prec)
    m = student.m
    inv = []
    for i in range(m):
        w = [float(x) for x in params.W[i]] + [float(params.b[i])]
        if all(x == 0.0 for x in w):
            inv.append(arb(0))
        else:
            s = arb(0)
            for x in w:
                s += arb(x) * arb(x)
            inv.append(1 / s.sqrt())
    active = np.array([not (inv[i] == 0) for i in range(m)])
    H = arb_mat(m, m)
    for i in range(m):
        for j in range(i, m):
            v = CM.C[i, j] * inv[i] * inv[j]
            H[i, j] = v
            H[j, i] = v
    Ctv = CM.Ct * CM.v
    c = arb_mat(m, 1, [Ctv[i, 0] * inv[i] for i in range(m)])
    return H, c, CM.ey2, CM, active


def _risk(H: arb_mat, c: arb_mat, e: arb, v: arb_mat) -> arb:
    return e - 2 * (c.transpose() * v)[0, 0] + (v.transpose() * (H * v))[0, 0]


def bounded_refit(student: AnyStudent, params: AnyParams, teacher: Teacher, *,
                  l2_cap: float | None = None, l1_cap: float | None = None, prec: int = 128,
                  tol: float = 1e-11) -> BoundedRefitBracket:
    """Bracket the bounded refit R of Kumar (arXiv 2609.39408), eq. (6) (module docstring).

    Parameters
    ----------
    student, params, teacher
        A relu or leaky_relu student (ridge family) and a teacher covered by
        :func:`certify.refit_risk` (additive, PL / smooth networks, gated).
    l2_cap, l1_cap : float, optional
        The caps (exact float values); default 32/J_α and 64√r/J_α (as balls).
    prec : int, keyword-only
        Working precision in bits (default 128).
    tol : float
        Clarabel's tolerances for the candidate point.

    Returns
    -------
    BoundedRefitBracket
        ``risk`` = [support-function lower bound, enclosed risk of a feasible v̂].

    Raises
    ------
    ValueError
        Bad student, caps or ``prec``.
    CertificationError
        Teacher not covered, or no finite enclosure (the message says what to try).

    Examples
    --------
    >>> import numpy as np, popdyn, certify
    >>> T = popdyn.Teacher.additive("h3", np.eye(3)[:2])
    >>> S = popdyn.Student(d=3, m=3)
    >>> res = certify.bounded_refit(S, S.init(0, 1.0, T), T)
    >>> res.provenance, res.risk.lo <= res.risk.hi
    ('rigorous', True)

    References
    ----------
    Kumar (arXiv 2609.39408), eq. (6) and App. A (constrained refitting: feasible upper risk,
    first-order support-function lower bound); docs/design.md §6.
    """
    prec = A.check_prec(prec)
    check_bounded_student(student)
    _check(student, params, teacher)
    if not teacher_covered(student, teacher):
        raise CertificationError("the certified bounded refit covers the teachers of "
                                 "certify.refit_risk (additive, PL / smooth networks, gated)",
                                 hint="use popdyn.diagnostics.bounded_refit for a float64 value")
    with A.workprec(prec):
        a, b = _caps(student, teacher, l2_cap, l1_cap)
        a_lo, a_hi = A.arb_bounds(a)
        b_lo, b_hi = A.arb_bounds(b)
        H, c, e, CM, active = _enclosures(student, params, teacher, prec)
        if not (H.is_finite() if hasattr(H, "is_finite") else True) or not e.is_finite():
            raise CertificationError("refit moments not finite", hint="a higher prec")
        prov = "rigorous" if CM.rigorous else "numerical"
        Hf = A.mat_mid(H)
        Hf = 0.5 * (Hf + Hf.T)
        cf = A.mat_mid(c)[:, 0]
        ef = float(e.mid())
        prob = BoundedProblem(Hf, cf, max(ef, 1e-300), a_lo, b_lo, feature_norms(params))
        fr = solve_bounded(prob, tol=tol)
        v = np.asarray(fr.head, dtype=np.float64)
        if not fractions_feasible(v, a_lo, b_lo):       # pragma: no cover - solve_bounded checks
            raise CertificationError("the refit point is not inside the caps", hint="report")
        va = A.mat_from_array(v)
        R = _risk(H, c, e, va)
        g = 2 * (H * va - c)
        gf = A.mat_mid(g)[:, 0]
        tau, _ = support_split(-gf, a_hi, b_hi)
        s = arb(0)
        for i in range(g.nrows()):
            d_up = max(A.upper(abs(g[i, 0]) - arb(tau)), 0.0)
            s += arb(d_up) * arb(d_up)
        supp = arb(a_hi) * arb(A.upper(s)).sqrt() + arb(b_hi) * arb(tau)
        idx = np.flatnonzero(active)
        if idx.size:
            Hs = arb_mat(idx.size, idx.size)
            for p_, i in enumerate(idx.tolist()):
                for q_, j in enumerate(idx.tolist()):
                    Hs[p_, q_] = H[int(i), int(j)]
            try:
                lo, hi, _, _ = A.sym_eig_enclosure(Hs, Hf[np.ix_(idx, idx)])
            except (CertificationError, np.linalg.LinAlgError):
                raise CertificationError("no eigenvalue enclosure of the refit Gram matrix",
                                         hint="a higher prec") from None
            lam = Bracket(float(lo[-1]), float(hi[-1]), provenance=prov)
        else:
            lam = Bracket(0.0, 0.0, provenance=prov)
        eig = arb(0)
        if lam.lo < 0:
            rad = arb(a_hi) + arb(A.vec_norm_upper(va))
            eig = arb(lam.lo) * rad * rad
        lb = R - (g.transpose() * va)[0, 0] - supp + eig
        if not (R.is_finite() and lb.is_finite()):
            raise CertificationError("the refit risk enclosure is not finite", hint="a higher prec")
        upper = A.upper(R)
        lower = min(max(A.lower(lb), 0.0), upper)
        note = "; ".join(CM.notes)
        risk = Bracket(lower, upper, provenance=prov, status="resolved", note=note)
        return BoundedRefitBracket(risk, lower, upper, v, lam,
                                   Bracket(a_lo, a_hi, provenance="rigorous"),
                                   Bracket(b_lo, b_hi, provenance="rigorous"), fr, "resolved",
                                   prov, prec, note)
