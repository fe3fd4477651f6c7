r"""Certified frozen-feature refit risk (docs/design.md §5, §6; Kumar, arXiv 2609.39408).

With the first layer frozen and the intercept eliminated exactly, the refit risk of a head a′
on the MSE scale is the quadratic (see :mod:`popdyn.diagnostics.refit`)

    R(a′) = a′ᵀGa′ − 2gᵀa′ + V,   G = s²(C − μ0μ0ᵀ),  g = s(Ct v − μ0 E[y]),  V = V_Y,

with G, g, V enclosed in Arb from the certified moments.  For every kind the result is a bracket
[lower, upper] of the optimal risk:

* **upper** (feasible): the risk R(ã) of the head ã computed in float64 by the diagnostics'
  own solver (refined by two steps of residual correction for the unrestricted kind), enclosed
  in Arb; for norm-constrained kinds ‖ã‖² ≤ B² is checked in Arb (the head is shrunk by factors
  1 − 2⁻⁵², 1 − 2⁻⁵¹, … until it is certainly feasible).
* **lower** (Lagrangian duality, docs/design.md §6):

  - ball ‖a‖ ≤ B (``same_budget`` with B = ‖a‖ of the current head, ``bounded``, ``projected``
    with a budget): for μ > 0 and any ã, with H = G + μI, r = Hã − g and
    q = ãᵀHã − 2gᵀã,  R(a) ≥ q + V − μB² − ‖r‖²/μ  for all ‖a‖ ≤ B
    (R(a) ≥ aᵀHa − 2gᵀa + V − μB² and aᵀHa − 2gᵀa ≥ q − ‖r‖²/μ because H ⪰ μI; no eigenvalue
    certificate is needed since G ⪰ 0).  μ is the maximizer of the float64 dual
    V − gᵀ(G + μI)⁻¹g − μB² (and ã = (G + μI)⁻¹g in float64);
  - unrestricted (and ``projected`` without a budget): R(a) ≥ R(ã) − ‖D(Gã − g)‖²/λ̲ with a
    certified λ̲ ≤ λ_min(DGD) (:func:`certify._arb.sym_eig_enclosure`), D the exact
    power-of-two equilibration diag(≈ 1/√G_ii): a nearly constant unit (|w| ≪ |b|) has a
    variance ~|w|², which makes G ill-conditioned by scale alone.  When DGD is not certified
    positive definite (duplicated or constant features make G singular) the lower bound falls
    back to 0 (R ≥ 0) and the bracket is flagged ``unresolved``.

Ill-conditioned refits.  Whatever the head's size (coefficients ~1/|w| ~ 1e9 for tiny units),
``upper`` is R(ã) evaluated in ball arithmetic from the enclosures of G, g, V, whose radii are
propagated exactly, so it is an upper bound of the infimum; its width grows with ‖ã‖² times the
radius of G, which :mod:`certify.moments` keeps at 2^{−prec} of the pair scale for nearly
constant units (they are kept off the float64 Mehler path).

The unrestricted float solve uses the diagnostics' equilibrated eigenvalue cutoff, so ``upper``
is the risk of that head; the bracket is on the infimum over all heads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from flint import arb, arb_mat
from popdyn import assembly as _asm
from popdyn.accuracy import AccuracyWarning
from popdyn.diagnostics.geometry import snap_to_axes, teacher_frame
from popdyn.diagnostics.refit import (check_kind, check_refit_args, solve_ball,
                                      solve_cutoff)
from popdyn.family import RefitProblem
from popdyn.models import Params
from popdyn.objective import check_inputs as _check

from . import _arb as A
from . import _families
from .arrays import ARB, as_vec, col
from .bracket import Bracket
from .errors import CertificationError
from .moments import certified_moments, pair_supported, student_supported

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from popdyn.typing import AnyParams, AnyStudent
    from popdyn.teachers import Teacher

__all__ = ["RefitBracket", "refit_risk"]


@dataclass(frozen=True)
class RefitBracket:
    """Bracket of the optimal frozen-feature refit risk of one kind.

    Attributes
    ----------
    kind : str
    risk : Bracket
        [certified lower bound, risk of the computed head] on the MSE scale.
    normalized : Bracket
        risk / V_Y.
    upper : Bracket
        Enclosure of the attained risk R(ã) of the computed head (feasible).
    lower : float
        The certified lower bound (``risk.lo``).
    variance : Bracket
        V_Y.
    head : ndarray
        The head ã whose risk gives the upper bound (feasible for the kind).
    budget : float or None
    multiplier : float or None
        μ used in the dual bound (ball kinds).
    status : str
        "resolved", or "unresolved" when the lower bound fell back to 0.
    provenance : str
    prec : int
    note : str
    """

    kind: str
    risk: Bracket
    normalized: Bracket
    upper: Bracket
    lower: float
    variance: Bracket
    head: np.ndarray
    budget: float | None
    multiplier: float | None
    status: str
    provenance: str
    prec: int
    note: str = ""


def _quad(G: arb_mat, g: arb_mat, V, a: arb_mat):
    """R(a) = aᵀGa − 2gᵀa + V (ball)."""
    return (a.transpose() * (G * a))[0, 0] - 2 * (g.transpose() * a)[0, 0] + V


def _norm2(a: arb_mat):
    s = arb(0)
    for i in range(a.nrows()):
        s += a[i, 0] * a[i, 0]
    return s


def _moments(student, params, teacher, prec):
    """The certified moments of the refit quadratic: those of the moment source registered for
    the pair (:mod:`certify.ridge`: :mod:`certify.pl_smooth` for PL students against smooth
    teacher networks, :mod:`certify.gated` for gated teachers),
    :func:`certify.moments.certified_moments` otherwise."""
    src = _families.source(student, teacher)
    if src is not None and src.moments is not None:
        return src.moments(student, params, teacher, prec=prec)
    return certified_moments(student, params, teacher, prec=prec)


def _problem(student, params, teacher, prec):
    CM = _moments(student, params, teacher, prec)
    s = arb(1) if student.scaling == "standard" else arb(1) / student.m
    # the float engine's assembly (popdyn.assembly.refit_quadratic) in the Arb context
    G, g = _asm.refit_quadratic(ARB, s, CM.C, as_vec(CM.mu0), ARB.matvec(CM.Ct, as_vec(CM.v)),
                                CM.ey)
    V = CM.ey2 - CM.ey * CM.ey
    return G, col(g), V, CM


class _NumericalMoments:
    """The part of the certified-moments record the refit reads (``rigorous``, ``notes``)."""

    def __init__(self, notes):
        self.rigorous = False
        self.notes = list(notes)


def _multi_index_problem(student, params, teacher, prec):
    """The refit quadratic against a gated / multi-index teacher: G from the
    certified student moments C, μ0 (Arb, rigorous), g from the float64 engine's cross moments
    E[σ_j y] (:mod:`popdyn.teachers.multi_index`) as balls of radius 2·(its estimated series error) +
    1e−13·|value| + 1e−16·max|E[σ y]|, V = V_Y ± 1e−13·E[y²]: a ``numerical`` bracket (the
    cross moments' error is an estimate, not a bound)."""
    import warnings

    CMs = certified_moments(student, params, None, prec=prec, need_B=False)
    fam = student.family
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        Mf = fam.moments(params, teacher, need="loss", tol=1e-16)
    m = student.m
    s = arb(1) if student.scaling == "standard" else arb(1) / m
    G = arb_mat(m, m)
    mu = [CMs.mu0[i, 0] for i in range(m)]
    for i in range(m):
        for j in range(i, m):
            v = s * s * (CMs.C[i, j] - mu[i] * mu[j])
            G[i, j] = v
            G[j, i] = v
    yv = np.asarray(Mf.Ct, dtype=float) @ np.asarray(teacher.weights, dtype=float)
    ev = np.abs(np.asarray(Mf.errCt, dtype=float)) @ np.abs(np.asarray(teacher.weights,
                                                                       dtype=float))
    if not (np.all(np.isfinite(yv)) and np.all(np.isfinite(ev))):
        raise CertificationError("the float64 cross moments with the multi-index teacher have "
                                 "no finite error estimate", hint="popdyn.diagnostics.refit_risk")
    floor = 1e-16 * float(np.max(np.abs(yv), initial=0.0))
    ey = arb(float(teacher.mean), 1e-13 * abs(float(teacher.mean)) + 1e-16)
    g = arb_mat(m, 1)
    for i in range(m):
        rad = 2.0 * float(ev[i]) + 1e-13 * abs(float(yv[i])) + floor
        g[i, 0] = s * (arb(float(yv[i]), rad) - mu[i] * ey)
    ey2 = float(teacher.second_moment)
    V = arb(ey2, 1e-13 * ey2) - ey * ey
    note = ("gated / multi-index teacher: E[σ_j y] from the float64 engine with twice its "
            "estimated series error")
    return G, g, V, _NumericalMoments(list(CMs.notes) + [note])


def _dual_best_mu(lam, c, V, B2):
    """μ > 0 maximizing D(μ) = V − Σ c_i²/(λ_i + μ) − μB² (float64, for choosing μ only)."""
    lam = np.maximum(lam, 0.0)
    c2 = c * c

    def D(mu):
        return V - float(np.sum(c2 / (lam + mu))) - mu * B2

    lmax = max(float(lam.max(initial=0.0)), 1e-300)
    grid = np.geomspace(1e-16 * lmax + 1e-300, max(1e4 * lmax, float(np.sqrt(c2.sum() / B2))
                                                    if B2 > 0 else 1.0), 200)
    vals = np.array([D(mu) for mu in grid])
    k = int(np.argmax(vals))
    lo = grid[max(k - 1, 0)]
    hi = grid[min(k + 1, grid.size - 1)]
    for _ in range(60):                         # golden-section refinement in log μ
        m1 = math.exp(math.log(lo) + 0.382 * (math.log(hi) - math.log(lo)))
        m2 = math.exp(math.log(lo) + 0.618 * (math.log(hi) - math.log(lo)))
        if D(m1) < D(m2):
            lo = m1
        else:
            hi = m2
    return 0.5 * (lo + hi)


def _ball_lower(G, g, V, Gf, gf, B2a, mu):
    """Rigorous LB(μ) = q + V − μB² − ‖r‖²/μ with ã = (Ĝ + μI)⁻¹ĝ (float)."""
    m = Gf.shape[0]
    H = Gf + mu * np.eye(m)
    try:
        at = np.linalg.solve(H, gf)
    except np.linalg.LinAlgError:
        at = np.linalg.lstsq(H, gf, rcond=None)[0]
    if not np.all(np.isfinite(at)):
        return None
    aa = A.mat_from_array(at)
    mua = arb(mu)
    Ha = G * aa + aa * mua
    r = arb_mat(m, 1, [Ha[i, 0] - g[i, 0] for i in range(m)])
    q = (aa.transpose() * Ha)[0, 0] - 2 * (g.transpose() * aa)[0, 0]
    rn = A.vec_norm_upper(r)
    lb = q + V - mua * B2a - arb(rn) * arb(rn) / mua
    return A.lower(lb) if lb.is_finite() else None


def _feasible_head(a: np.ndarray, B2a) -> np.ndarray:
    """Shrink ``a`` until ‖a‖² ≤ B² certainly."""
    f = 2.0 ** -52
    a0 = a
    for _ in range(60):
        if _norm2(A.mat_from_array(a)) <= B2a:
            return a
        a = a0 * (1.0 - f)
        f *= 2.0
    raise CertificationError("could not certify the head inside the ball", hint="a higher prec")


def refit_risk(student: AnyStudent, params: AnyParams, teacher: Teacher,
               kind: str = "unrestricted", budget: float | None = None, *,
               U: ArrayLike | None = None, rcond: float = 1e-12, equilibrate: bool = True,
               prec: int = 128) -> RefitBracket:
    """Bracket the optimal frozen-feature refit risk (MSE scale) of ``kind``.

    Parameters
    ----------
    student, params, teacher
        As in :func:`popdyn.diagnostics.refit_risk`: relu, leaky_relu and smooth (silu, gelu,
        tanh, erf; :mod:`certify.smooth`) students against PL / smooth networks (relu /
        leaky_relu against smooth networks: :mod:`certify.pl_smooth`), additive teachers and
        gated teachers (:mod:`certify.gated`), all rigorous except tabulated links; other
        multi-index teachers numerical; SwiGLU students
        (:func:`certify.swiglu.swiglu_refit_problem`) against additive polynomial-link teachers
        and gated teachers (:mod:`certify.swiglu_gated`; rigorous) and other teachers
        (numerical) (the SwiGLU family's kinds: unrestricted, same_budget, bounded); skip
        students with v frozen (:func:`certify.skip.skip_refit_problem`).  Dispatched through
        the family registry :mod:`certify._families`.
    kind : {"unrestricted", "same_budget", "bounded", "projected"}
        The refit kinds of :mod:`popdyn.diagnostics.refit`.
    budget : float, optional
        B > 0 (required for ``bounded``, optional for ``projected``, None otherwise).
    U : array_like, optional
        Teacher axes for ``projected`` (default: the teacher's own).
    rcond, equilibrate
        Settings of the float64 unrestricted solve that produces the candidate head.
    prec : int, keyword-only
        Working precision in bits (default 128).

    Returns
    -------
    RefitBracket
        ``risk`` = [lower, upper]: the certified Lagrangian-dual lower bound and the enclosed
        risk of a feasible head.

    Raises
    ------
    ValueError, TypeError
        Unknown kind, bad budget, non-finite parameters, bad ``prec``.
    CertificationError
        When no finite enclosure is obtained, or the float64 cross moments of a numerical
        (multi-index) problem have no finite error estimate.

    Examples
    --------
    >>> import numpy as np, popdyn, certify
    >>> T = popdyn.Teacher.additive("h2", np.eye(4)[:2])
    >>> S = popdyn.Student(d=4, m=8)
    >>> p = S.init(0, 1.0, T)
    >>> res = certify.refit_risk(S, p, T)
    >>> 0.0 <= res.risk.lo <= res.risk.hi
    True

    References
    ----------
    Kumar (arXiv 2609.39408) (refit MSE); docs/design.md §5, §6 (Lagrangian dual lower bound).
    """
    prec = A.check_prec(prec)
    kind = check_kind(kind)
    refit_of = _families.of(student).require("refit", student)    # ridge, skip, swiglu
    kinds = student.family.refit_kinds                  # the float side's kinds
    if kind not in kinds:
        raise ValueError(f"`kind`={kind!r} is not defined for {student.family.label} students; "
                         f"use one of {', '.join(repr(k) for k in kinds)}")
    budget, rcond, equilibrate = check_refit_args(kind, budget, rcond, equilibrate)
    _problem_of = refit_of(student, params, teacher)    # checks what the family covers
    if kind == "projected":
        Sx, axes = teacher_frame(teacher if U is None else U, student.d)
        assert isinstance(params, Params)        # "projected" is a ridge / skip refit kind
        params = params.replace(W=snap_to_axes(params.W, Sx, axes))
    elif U is not None:
        raise ValueError(f"`U` is only used by kind='projected', got kind={kind!r}")
    if kind == "same_budget":
        budget = float(np.linalg.norm(params.a))
    with A.workprec(prec):
        G, g, V, CM = _problem_of(student, params, teacher, prec)
        prov = "rigorous" if CM.rigorous else "numerical"
        if not (G.is_finite() if hasattr(G, "is_finite") else True) or not V.is_finite():
            raise CertificationError("refit quadratic not finite", hint="a higher prec")
        Gf = A.mat_mid(G)
        Gf = 0.5 * (Gf + Gf.T)
        gf = A.mat_mid(g)[:, 0]
        Vf = float(V.mid())
        Vb = Bracket.from_arb(V, provenance=prov).clip(0.0, math.inf)
        note = "; ".join(CM.notes)
        status = "resolved"
        mult = None
        ball = kind in ("same_budget", "bounded") or (kind == "projected" and budget is not None)
        if ball:
            B = float(budget)
            Ba = arb(B)
            B2a = Ba * Ba if kind != "same_budget" else _norm2(A.mat_from_array(params.a))
            prob = RefitProblem.from_arrays(Gf, gf, max(Vf, 1e-300), s=1.0)
            sol = solve_ball(prob, B)
            head = np.asarray(sol["head"], dtype=float)
            if not np.all(np.isfinite(head)):
                raise CertificationError("the float64 refit head is not finite",
                                         hint="a higher prec")
            head = _feasible_head(head, B2a)
            up = _quad(G, g, V, A.mat_from_array(head))
            lam, Q = prob.eig
            c = Q.T @ gf
            B2f = B * B
            cands = []
            if B2f > 0:
                mu_best = _dual_best_mu(lam, c, Vf, B2f)
                mus = [mu_best]
                if sol.get("multiplier"):
                    mus.append(float(sol["multiplier"]))
                for mu in mus:
                    if mu > 0 and math.isfinite(mu):
                        lb = _ball_lower(G, g, V, Gf, gf, B2a, mu)
                        if lb is not None:
                            cands.append((lb, mu))
            else:
                cands.append((A.lower(V), None))       # B = 0: the head is 0, R = V
            lb_u = _unrestricted_lower(G, g, V, Gf, gf, prec)
            if lb_u is not None:
                cands.append((lb_u, None))
            if cands:
                lower, mult = max(cands, key=lambda t: t[0])
            else:
                lower, status = 0.0, "unresolved"
        else:
            sol = solve_cutoff(RefitProblem.from_arrays(Gf, gf, max(Vf, 1e-300), s=1.0),
                               rcond=rcond, equilibrate=bool(equilibrate))
            head = np.asarray(sol["head"], dtype=float)
            if not np.all(np.isfinite(head)):
                raise CertificationError("the float64 refit head is not finite",
                                         hint="a higher prec")
            head = _refine(G, g, Gf, head)
            up = _quad(G, g, V, A.mat_from_array(head))
            lb = _unrestricted_lower(G, g, V, Gf, gf, prec, head=head)
            if lb is None:
                lower, status = 0.0, "unresolved"
                note = (note + "; " if note else "") + (
                    "G not certified positive definite (collinear or constant features): "
                    "lower bound 0")
            else:
                lower = lb
        if not up.is_finite():
            raise CertificationError("the refit risk enclosure is not finite", hint="a higher prec")
        ub = Bracket.from_arb(up, provenance=prov).clip(0.0, math.inf)
        lower = max(0.0, min(lower, ub.hi))
        risk = Bracket(lower, ub.hi, provenance=prov, status=status, note=note)
        if Vb.lo > 0:
            nlo = A.lower(arb(risk.lo) / arb(Vb.hi))
            nhi = A.upper(arb(risk.hi) / arb(Vb.lo))
            norm = Bracket(max(nlo, 0.0), nhi, provenance=prov, status=status, note=note)
        else:
            norm = Bracket(0.0, math.inf, provenance=prov, status="unresolved",
                           note="V_Y not certified positive")
        return RefitBracket(kind, risk, norm, ub, lower, Vb, head, budget, mult, status, prov,
                            prec, note)


def _equilibrator(Gf: np.ndarray) -> np.ndarray:
    """Powers of two d_i ≈ 1/√Ĝ_ii (1 where Ĝ_ii <= 0): D = diag(d) scales G to DGD with unit
    diagonal up to a factor 2, exactly (multiplying by a power of two rounds nothing)."""
    dg = np.diag(Gf)
    d = np.ones(dg.shape[0])
    pos = dg > 0
    d[pos] = np.ldexp(1.0, -np.round(0.5 * np.log2(dg[pos])).astype(int))
    return d


def _scaled(G, d):
    """DGD as a ball matrix (D = diag(d), d powers of two)."""
    m = G.nrows()
    H = arb_mat(m, m)
    for i in range(m):
        for j in range(m):
            H[i, j] = G[i, j] * arb(float(d[i] * d[j]))
    return H


def _refine(G, g, Gf, a, steps: int = 2):
    """Residual correction of a float head: a ← a − D Ĥ⁺ D r with r = Ga − g computed in Arb and
    Ĥ = DĜD the equilibrated float Gram (:func:`_equilibrator`): units of very different
    variance (|w| ≪ |b|) leave G ill-conditioned by scale alone, DGD is not."""
    d = _equilibrator(Gf)
    Hf = Gf * np.outer(d, d)
    try:
        lam, Q = np.linalg.eigh(0.5 * (Hf + Hf.T))
    except np.linalg.LinAlgError:
        return a
    keep = lam > 1e-12 * max(float(lam[-1]), 0.0)
    if not np.any(keep):
        return a
    for _ in range(steps):
        aa = A.mat_from_array(a)
        r = G * aa - g
        rf = d * A.mat_mid(r)[:, 0]
        corr = d * (Q[:, keep] @ ((Q[:, keep].T @ rf) / lam[keep]))
        new = a - corr
        if not np.all(np.isfinite(new)):
            break
        a = new
    return a


def _unrestricted_lower(G, g, V, Gf, gf, prec, head=None):
    """R(ã) − ‖D(Gã − g)‖²/λ̲ with a certified λ̲ ≤ λ_min(DGD), or None if λ̲ ≤ 0.

    For every a, R(a) − R(ã) = 2rᵀδ + δᵀGδ ≥ −rᵀG⁻¹r (δ = a − ã, r = Gã − g, G ≻ 0), and
    rᵀG⁻¹r = (Dr)ᵀ(DGD)⁻¹(Dr) ≤ ‖Dr‖²/λ_min(DGD) for any positive diagonal D.  D is the exact
    power-of-two equilibration of :func:`_equilibrator`, so λ_min(DGD) can be certified where a
    tiny unit (variance ~1e−18 beside O(1)) leaves λ_min(G) below the float eigensolver's
    resolution (D = I is the unscaled bound)."""
    d = _equilibrator(Gf)
    H = _scaled(G, d)
    try:
        lo, hi, lam, Vv = A.sym_eig_enclosure(H, Gf * np.outer(d, d))
    except (CertificationError, np.linalg.LinAlgError):
        return None
    lmin = lo[-1]
    if not lmin > 0:
        return None
    if head is None:
        try:
            head = np.linalg.solve(Gf, gf)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(head)):
            return None
        head = _refine(G, g, Gf, head)
    aa = A.mat_from_array(head)
    r = G * aa - g
    Dr = arb_mat(r.nrows(), 1, [r[i, 0] * arb(float(d[i])) for i in range(r.nrows())])
    rn = A.vec_norm_upper(Dr)
    lb = _quad(G, g, V, aa) - arb(rn) * arb(rn) / arb(lmin)
    return A.lower(lb) if lb.is_finite() else None


def teacher_covered(student, teacher) -> bool:
    """Whether the certified moments of the ridge student form cover ``teacher``: the pairs of
    :func:`certify.moments.pair_supported` and those of a moment source registered for the
    student's family (:mod:`certify.ridge`: PL students against smooth networks, gated
    teachers).  Used by :func:`ridge_refit` and :func:`certify.bounded_refit`."""
    covered, _ = pair_supported(student, teacher)
    return covered or _families.source(student, teacher) is not None


def ridge_refit(student, params, teacher):
    """The ridge family's refit builder (:class:`certify._families.Certifier` ``refit``):
    checks the arguments and returns :func:`_problem` for the teachers the certified moments
    cover, :func:`_multi_index_problem` (numerical) for other multi-index teachers; refuses
    other teachers with one line."""
    _check(student, params, teacher)
    if not student_supported(student):      # pragma: no cover - every activation is covered
        raise CertificationError(
            f"certified refit does not cover {student.activation!r} students",
            hint="use popdyn.diagnostics.refit_risk for a float64 value")
    if teacher_covered(student, teacher):
        return _problem
    if not teacher.ridge:
        return _multi_index_problem             # other multi-index teachers: numerical
    raise CertificationError("certified refit needs a PL teacher network or an "
                             "additive teacher", hint="use popdyn.diagnostics.refit_risk")
