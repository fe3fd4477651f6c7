r"""Certified loss, gradient and refit brackets for students with a learned linear skip.

The ``skip`` family (:mod:`popdyn.skip`, ``popdyn.Student(..., skip=True)``):

    f(x) = s Σ_j a_j σ(w_j·x + b_j) + v·x + c,     x ~ N(0, I_d).

Everything reduces to the certified moments of the same student without the skip
(:func:`certify.moments.certified_moments` / :mod:`certify.smooth`) plus, by Stein's identity
E[σ(w·x + b) x] = E[σ′] w, per-neuron scalars and one teacher vector:

    μ1_j = E[σ′_j],   α_j E[σ″_j],   α_j E[σ″_j z_j]   (z_j = θ_j·x, θ_j = w_j/α_j, α_j = |w_j|),
    τ = E[y x] = Σ_t v*_t (E[σ*′_t] u_t  or  Ĥ_1 θ*_t)                              (SK-5)

(a teacher unit σ*(u_t·x + b_t) gives E[σ*′_t] u_t; a Hermite link part H(α θ*·x) gives Ĥ_1 θ*_t,
its normalized coefficient of order one).  With r_j = w_j·v = α_j (θ_j·v) (:mod:`popdyn.skip`,
SK-1, SK-2):

    L       = L_ridge + s Σ_j a_j μ1_j r_j − v·τ + ½|v|²
    ∂L/∂a_j = ∂L_ridge/∂a_j + s μ1_j r_j
    ∂L/∂b_j = ∂L_ridge/∂b_j + s a_j (θ_j·v) α_jE[σ″_j]
    ∂L/∂w_j = ∂L_ridge/∂w_j + s a_j (μ1_j v + (θ_j·v) α_jE[σ″_j z_j] θ_j)
    ∂L/∂c   = ∂L_ridge/∂c                  (E[v·x] = 0)
    ∂L/∂v   = s Wᵀ(a ∘ μ1) − τ + v

For a PL unit σ(t) = p relu(t) + q t (relu: p = 1, q = 0; leaky relu: p = 1 − slope,
q = slope), σ″ = p δ, so α E[σ″] = p φ(h) and α E[σ″ z] = −p h φ(h) with h = β/α: the
``mu2`` of :class:`certify.moments._PL` and its sign-folded form ``s·p·x·φ(x)`` (exact
identities, no division by α).

Every term is a polynomial in the exact float64 inputs and these balls, evaluated in Arb, so a
bracket is ``rigorous`` exactly when the moments of the student without the skip are.

Refit (the float side's definition, :meth:`popdyn.skip.SkipFamily.refit_problem`): the head and
the intercept are refitted on the frozen features σ(w_j·x + b_j) **with the skip v·x frozen as
part of the model** (v is not refitted): the target is y − v·x, so

    G = G_ridge,   g = g_ridge − s μ1 ∘ (W v),   V = Var(y − v·x) = V_Y − 2 v·τ + |v|²,

and the risk is E[(f′ − y)²] on the MSE scale (``variance`` and ``normalized`` use the
zero-head risk Var(y − v·x), the float side's ``variance``); kinds unrestricted, same_budget
(B = ‖a‖), bounded and projected (W snapped to the teacher axes first, v unchanged) as for the ridge
family (:func:`certify.refit.refit_risk`, which calls :func:`skip_refit_problem`).

AGOP alignment (:func:`skip_alignment`): ∇f = v + s Σ_j a_j σ′_j w_j, so the AGOP is the ridge
AGOP s²Wᵀ(aaᵀ∘B)W plus v vᵀ + q vᵀ + v qᵀ with q = s Wᵀ(a ∘ μ1) (SK-3), enclosed from the same
certified moments (B = E[σ′_iσ′_j], μ1) and passed to the eigengap / Davis–Kahan recipe of
:mod:`certify.alignment`: rigorous for relu, leaky relu, silu, gelu, tanh and erf.

Coverage.  The loss and the refit: relu, leaky relu and the smooth students (erf, gelu, tanh,
silu) wherever the student without the skip is covered; other pairs (gated / multi-index
teachers, PL students against smooth teacher networks) get the float64 engine's ``numerical``
loss bracket, and the refit a ``numerical`` bracket with τ from the teacher's stored linear
Hermite part (:func:`popdyn.skip.linear_part`, float64 sums with a rounding allowance).  The
gradient (rigorous): relu and leaky relu students through the ridge gradient moments of
:mod:`certify.moments`, against PL networks and links whose Hermite part is a polynomial; the
smooth students (erf, gelu, tanh, silu) through :func:`_smooth_grad_moments` -- Mehler sums of
the normalized Hermite coefficients of σ, σ′ (:mod:`certify.smooth`) and of ασ″
(e_n = √(n+1) d_{n+1}) with Cauchy–Schwarz tails -- against PL or smooth teacher networks and
polynomial-link teachers.  Its widths follow the σ′ series' tail energy at ρ = 1 (the diagonal
pairs): ~1e−16 relative for erf, gelu, silu and small tanh weights, up to ~1e−10 for tanh at
|w| ≈ 1.2 with the order-128 series of prec ≤ 128 (a larger ``prec`` raises the order).
Refused (CertificationError): gated / multi-index teachers, tabulated links, PL students
against smooth teacher networks.

References
----------
:mod:`popdyn.skip` (SK-1..SK-4); C. Stein (1981), Ann. Statist. 9, 1135–1151 (Stein's lemma);
docs/design.md §3 (moments), §5 (refit), §6 (brackets).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from flint import arb, arb_mat
from popdyn import assembly as _asm
from popdyn.diagnostics.alignment import check_subspace
from popdyn.families.skip import SKIP as _SKIP_SPEC
from popdyn.skip import linear_part

from . import _arb as A
from . import _families
from . import pl_smooth
from . import smooth as SM
from .arrays import ARB, Vec, as_vec, col, vec
from .loss import (_brackets, _check_inputs, _grad_balls, _grad_brackets, _numerical_loss,
                   _ridge_loss, _scale)
from .refit import _NumericalMoments, ridge_refit
from .alignment import AlignmentBracket, agop_enclosure, certified_alignment
from .bracket import BracketArray
from .errors import CertificationError
from .moments import certified_moments, pair_supported, student_supported

__all__ = ["skip_agop_enclosure", "skip_alignment", "skip_loss", "skip_refit_problem",
           "teacher_linear_moment"]


def _plain(student):
    return student.replace(skip=False)


def teacher_linear_moment(CM, teacher):
    """τ = E[y x] (d×1 balls) of a ridge teacher by Stein's lemma (SK-5), from the teacher unit
    records of the certified moments ``CM``, at their working precision.

    A unit σ(u·x + b) gives E[σ′] u (u the raw row, exact); a Hermite part H(α θ·x) gives
    θ E[H(αZ) Z] = Ĥ_1 θ (a part of degree 0 with a tail bound τ_H gives |Ĥ_1| ≤ τ_H; a
    tabulated part adds its α ≠ 1 allowance ``dal``, since ‖Z‖ = 1).
    """
    if getattr(CM, "teacher_units", None) is None:
        raise CertificationError(
            "the skip refit needs a rigorous E[y x] of the teacher, which certify encloses only "
            "from unit-by-unit teacher moments (relu-family students against PL-network or "
            f"polynomial-link teachers); this {type(teacher).__name__}'s moments come from "
            "another source", hint="popdyn.refit_risk (float)")
    geo, m = CM.geo, CM.C.nrows()
    parts = [(u[0].mu1 if u[0] is not None else None, u[1]) if isinstance(u, tuple)
             else (u.mu1, None) for u in CM.teacher_units]
    d = teacher.d
    with A.workprec(CM.wprec):
        tx = [arb(0)] * d
        for t, (mu1, h) in enumerate(parts):
            vt = arb(float(teacher.weights[t]))
            if mu1 is not None:
                f = vt * mu1
                for i in range(d):
                    tx[i] += f * arb(float(teacher.U[t, i]))
            if h is not None and not geo.zero[m + t]:
                c1 = h.c[1] if h.K >= 1 else arb(0)
                if h.K < 1 and h.tau > 0.0:
                    c1 = arb(0, h.tau)              # |Ĥ_1| <= the tail norm beyond order 0
                if h.dal > 0.0:
                    c1 = c1 + arb(0, h.dal)
                th = geo.theta(m + t, teacher.U[t])
                for i in range(d):
                    tx[i] += vt * c1 * th[i]
        return arb_mat(d, 1, tx)


def _mu1(CM):
    """E[σ′_j] (m×1 balls) of the student units of ``CM``."""
    with A.workprec(CM.wprec):
        return arb_mat(len(CM.units), 1, [u.mu1 for u in CM.units])


def skip_loss(student, params, teacher, *, prec: int = 128, grad: bool = False):
    r"""Bracket the loss (and with ``grad`` its gradient) of a student with a linear skip.

    L = L_ridge + s Σ_j a_j E[σ′_j] w_j·v − v·E[y x] + ½|v|² (module docstring; SK-1), in
    Arb from the certified moments of the same student without the skip.

    Parameters
    ----------
    student : popdyn.Student
        ``skip=True``; relu, leaky relu, erf, gelu, tanh or silu.
    params : popdyn.Params
        With ``v`` of shape (d,); every entry is its exact float64 value.
    teacher : popdyn.Teacher
    prec : int, keyword-only
        Working precision in bits.
    grad : bool, keyword-only
        Also bracket ∂L/∂a, ∂L/∂W, ∂L/∂b, ∂L/∂c and ∂L/∂v (``grad["v"]``, shape (d,)):
        relu / leaky relu students against PL teacher networks and links whose Hermite part
        is a polynomial (rigorous), as for :func:`certify.loss`.

    Returns
    -------
    certify.loss.LossBracket
        ``rigorous`` exactly when the plain student's bracket is; ``numerical`` (the float64
        engine's value ± twice its estimated error) for pairs the certified moments do not
        cover.

    Raises
    ------
    CertificationError
        ``grad=True`` for smooth students, gated / multi-index teachers or teachers whose
        Hermite part is not a polynomial.

    References
    ----------
    :mod:`popdyn.skip` (SK-1, SK-2); docs/design.md §3 (Stein's lemma), §6 (brackets).
    """
    _check_inputs(student, params, teacher)
    plain = _plain(student)
    covered = (student_supported(plain) and teacher.ridge and pair_supported(plain, teacher)[0])
    if grad and not covered:
        raise CertificationError(
            "the gradient of a skip student is certified against PL / smooth teacher networks "
            "and polynomial-link teachers, for the activations certify covers (student "
            f"{student.activation!r}, teacher {type(teacher).__name__})",
            hint="grad=False (a numerical loss bracket), or popdyn.population_grad")
    if not covered:
        return _numerical_loss(student, params, teacher, prec)
    smooth = plain.act.kind == "smooth"
    CM = certified_moments(plain, params, teacher, prec=prec, grad=grad and not smooth)
    tx = teacher_linear_moment(CM, teacher)
    mu1 = _mu1(CM)
    if grad:
        CM, e2, e2z = (_smooth_grad_moments(CM, plain, params, teacher) if smooth
                       else _pl_second(CM))
    with A.workprec(prec):
        s = _scale(student)
        a = A.mat_from_array(params.a)
        c = arb(float(params.c))
        v = A.mat_from_array(params.v)
        L = _asm.skip_loss(ARB, _ridge_loss(CM, s, a, c), s, as_vec(a),
                           A.mat_from_array(params.W), as_vec(v), as_vec(mu1), as_vec(tx))
        g = None
        if grad:
            prov = "rigorous" if CM.rigorous else "numerical"
            g = _skip_grad(plain, params, teacher, CM, s, a, c, v, mu1, tx, e2, e2z, prov)
        return _brackets(L, CM, prec, g)


def _pl_second(CM):
    """(CM, α_jE[σ″_j], α_jE[σ″_j z_j]) of PL units: p φ(h) (``mu2``) and −p h φ(h) =
    s·p·x·φ(x) in the unit's sign-folded variable (x = −h for s = 1, h for s = −1)."""
    with A.workprec(CM.wprec):
        return (CM, [u.mu2 for u in CM.units],
                [u.s * u.p * u.x * u.ph for u in CM.units])


def _skip_grad(plain, params, teacher, CM, s, a, c, v, mu1, tx, e2, e2z, prov):
    """SK-2 in Arb: the ridge gradient balls of :mod:`certify.loss` plus the skip terms
    (``e2``, ``e2z``: α_jE[σ″_j], α_jE[σ″_j z_j], paired with θ_j·v), by the float engine's
    assembly (:func:`popdyn.assembly.skip_grad`) in the Arb context."""
    m, d = plain.m, plain.d
    g = _grad_balls(plain, params, teacher, CM, s, a, c)
    W = A.mat_from_array(params.W)
    theta = arb_mat(m, d, [x for row in CM.theta for x in row])
    vv = as_vec(v)
    gb0 = None if g["b"] is None else as_vec(g["b"])
    ga, gW, gb, gv = _asm.skip_grad(ARB, (as_vec(g["a"]), g["W"], gb0), s, as_vec(a), W, vv,
                                    as_vec(mu1), ARB.matvec(theta, vv), Vec(e2), Vec(e2z),
                                    theta, as_vec(tx), gb0 is not None)
    g = dict(g, a=col(ga), W=gW, b=None if gb is None else col(gb))
    out = _grad_brackets(plain, g, prov)
    lo, hi = A.mat_bounds(col(gv))
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise CertificationError("a gradient enclosure is not finite", hint="a higher prec")
    out["v"] = BracketArray(lo.reshape(d), hi.reshape(d), prov)
    return out


def _add_up(x: float, y: float) -> float:
    """An upper bound of x + y (non-negative float upper bounds)."""
    return math.nextafter(x + y, math.inf)


def _cut(series, tail, K):
    """(series[:K+1], tail energy beyond K): the entries dropped are added to ``tail``."""
    extra = arb(0)
    for x in series[K + 1:]:
        extra += x * x
    return series[:K + 1], _add_up(tail, A.upper(extra)) if len(series) > K + 1 else tail


def _e_series(d):
    """e_n = E[ασ″(αZ + β) h_n] = √(n+1) d_{n+1} for n < len(d) − 1 (integration by parts)."""
    return [arb(n + 1).sqrt() * d[n + 1] for n in range(len(d) - 1)]


def _a_tail(d_j, td_j, d_o, td_o, al_o, N, r):
    """Bound of |Σ_{n≥N} e^j_n ĉ^o_n ρⁿ| for a partner o whose ĉ_n = α_o d^o_{n−1}/√n:
    |e^j_n ĉ^o_n| ≤ √2 α_o |d^j_{n+1}||d^o_{n−1}|, so by Cauchy–Schwarz the tail is at most
    √2 α_o (Σ_{k>N} (d^j_k)²)^{1/2} (Σ_{k≥N−1} (d^o_k)²)^{1/2} r^N (r ≥ |ρ|, ≤ 1)."""
    ext = _add_up(td_o, A.upper(d_o[N] * d_o[N] + d_o[N - 1] * d_o[N - 1]))
    return A.mul_up(A.sqrt_up(2.0), A.upper(al_o), A.sqrt_up(A.mul_up(td_j, ext)),
                    A.pow_up(r, N))


def _a_sum(e_j, c_o, N, rho):
    acc = arb(0)
    for n in range(N - 1, -1, -1):
        acc = acc * rho + e_j[n] * c_o[n]
    return acc


def _r_of(rho, flag):
    return 1.0 if flag else min(1.0, A.upper(abs(rho)))


def _smooth_grad_moments(CM, plain, params, teacher):
    """The gradient moments of a smooth student (module docstring) as a copy of ``CM`` with
    ``A`` (α_jE[σ″_jσ_i]), ``D`` (E[σ′_jσ_i]), ``mu1``, ``mu2`` (α_jE[σ″_j]), ``At``
    (α_jE[σ″_j y_t]), ``Bt`` (E[σ′_j y_t′]), ``Dt`` (E[σ′_j y_t]) and ``theta``, plus the lists
    α_jE[σ″_j], α_jE[σ″_j z_j].

    Mehler sums of the units' normalized Hermite coefficients ĉ (of σ), d (of σ′) from
    :mod:`certify.smooth` and e_n = √(n+1) d_{n+1} (of ασ″), with Cauchy–Schwarz tails: for D,
    Dt, Bt those of the two series; for A, At the bound of :func:`_a_tail`, which uses
    ĉ_n = α d_{n−1}/√n of the partner (so only the d-tails enter); teacher Hermite parts must be
    polynomials (finite sums).  Every term is a ball: rigorous."""
    m = plain.m
    su = CM.units
    kind = su[0].kind
    prec = CM.prec
    geo = CM.geo
    with A.workprec(CM.wprec):
        N = SM.pick_order(su, prec) if kind in SM._CLOSED else SM.trap_order(su, prec)
        ser = [u.series(N) for u in su]                  # (ĉ, d, tc, td), each to order N
        es = [_e_series(d) for _, d, _, _ in ser]        # e_0..e_{N−1}
        Am, Dm = arb_mat(m, m), arb_mat(m, m)
        for j in range(m):
            cj, dj, tcj, tdj = ser[j]
            for i in range(m):
                ci, di, tci, tdi = ser[i]
                g = (arb(1), arb(0), arb(2), 1) if i == j else geo.pair(j, i)
                rho, flag = g[0], g[3]
                Dm[j, i] = SM._mehler(dj, ci, tdj, tci, rho, flag)
                a = _a_sum(es[j], ci, N, rho)
                if not (su[i].zero or su[j].zero):
                    a = a + arb(0, _a_tail(dj, tdj, di, tdi, su[i].al, N, _r_of(rho, flag)))
                Am[j, i] = a
        mu1 = arb_mat(m, 1, [u.mu1 for u in su])
        mu2 = arb_mat(m, 1, [ser[j][1][1] for j in range(m)])
        e2 = [ser[j][1][1] for j in range(m)]
        e2z = [es[j][1] for j in range(m)]
        k = teacher.k
        At, Bt, Dt = arb_mat(m, k), arb_mat(m, k), arb_mat(m, k)
        for t, unit in enumerate(CM.teacher_units):
            parts = unit if isinstance(unit, tuple) else (unit, None)
            pl, h = parts
            if h is not None and not (h.tau == 0.0 and h.rigorous and h.dal == 0.0):
                raise CertificationError(
                    "the certified gradient supports PL / smooth teacher units and links whose "
                    "Hermite part is a polynomial", hint="certify the loss only (grad=False)")
            al_t = geo.alpha[m + t]
            for j in range(m):
                cj, dj, tcj, tdj = ser[j]
                g = geo.pair(j, m + t)
                rho, flag = g[0], g[3]
                at = bt = dt = arb(0)
                if pl is not None:                     # a PL or smooth unit σ_t(α_t z + β_t)
                    Nt = N if not isinstance(pl, SM.SmoothUnit) or pl.kind in SM._CLOSED \
                        or pl.kind == kind else min(N, SM._order_for([pl], prec))
                    ct, dt_, tct, tdt = pl.series(Nt)
                    dj2, tdj2 = _cut(dj, tdj, Nt)
                    dt = SM._mehler(dj2, ct, tdj2, tct, rho, flag)
                    bt = SM._mehler(dj2, dt_, tdj2, tdt, rho, flag)
                    at = _a_sum(es[j], ct, Nt, rho)
                    if not (su[j].zero or geo.zero[m + t]):
                        at = at + arb(0, _a_tail(dj2, tdj2, dt_, tdt, al_t, Nt,
                                                 _r_of(rho, flag)))
                if h is not None:                      # H(α_t z): Ĥ_0..Ĥ_K, exact
                    K = h.K
                    hd = ([arb(n + 1).sqrt() * h.c[n + 1] / al_t for n in range(K)]
                          if not geo.zero[m + t] else [arb(0)] * K)
                    x1 = x2 = x3 = arb(0)
                    for n in range(K, -1, -1):
                        x1 = x1 * rho + dj[n] * h.c[n]
                        x2 = x2 * rho + es[j][n] * h.c[n]
                        x3 = x3 * rho + (dj[n] * hd[n] if n < K else arb(0))
                    dt, at, bt = dt + x1, at + x2, bt + x3
                At[j, t], Bt[j, t], Dt[j, t] = at, bt, dt
        theta = [geo.theta(i, params.W[i]) for i in range(m)]
        B = CM.B
        if B is None:
            B = arb_mat(m, m)
            for j in range(m):
                for i in range(m):
                    g = (arb(1), arb(0), arb(2), 1) if i == j else geo.pair(j, i)
                    B[j, i] = SM._mehler(ser[j][1], ser[i][1], ser[j][3], ser[i][3], g[0], g[3])
    out = dataclasses.replace(CM, A=Am, D=Dm, mu1=mu1, mu2=mu2, At=At, Bt=Bt, Dt=Dt,
                              theta=theta, B=B, notes=list(CM.notes))
    return out, e2, e2z


def _float_tau(student, teacher):
    """τ = E[y x] of a gated / multi-index teacher as balls: Σ_t w_t B_tᵀ F_t[e] summed in
    float64 with an allowance of 8(k + 2)ε times the sum of the absolute terms (``numerical``:
    the stored tensor entries are float64 values of the teacher's coefficients)."""
    d = student.d
    tau = np.zeros(d)
    absum = np.zeros(d)
    nterm = 0
    for w, B, F in teacher.hermite_terms(1):
        lp = linear_part(F)
        tau += w * (B.T @ lp)
        absum += abs(w) * (np.abs(B.T) @ np.abs(lp))
        nterm += B.shape[0]
    rad = 8.0 * (nterm + 2) * np.finfo(float).eps * absum + 1e-300
    return arb_mat(d, 1, [arb(float(tau[i]), float(rad[i])) for i in range(d)])


def skip_refit_problem(student, params, teacher, prec, *, base):
    """The refit quadratic (G, g, V, moments) of a skip student with v frozen (module
    docstring): ``base`` (the ridge builder :func:`certify.refit.refit_risk` chose for this
    teacher) gives G, g, V of the student without the skip; then g −= s μ1 ∘ (Wv) and
    V = V_Y − 2v·τ + |v|², in Arb.  τ is rigorous (SK-5) for the teachers the certified moments
    cover, float64 (``numerical``) for gated / multi-index teachers."""
    plain = _plain(student)
    G, g, V, CM = base(plain, params, teacher, prec)
    if isinstance(CM, _NumericalMoments):           # gated / multi-index teachers
        CMs = certified_moments(plain, params, None, prec=prec, need_B=False)
        tx = _float_tau(student, teacher)
    else:
        CMs = CM
        tx = teacher_linear_moment(CM, teacher)
    g2, V2 = _asm.skip_refit(ARB, as_vec(g), V, _scale(student), A.mat_from_array(params.W),
                             vec(params.v), as_vec(_mu1(CMs)), as_vec(tx))
    return G, col(g2), V2, CM


def skip_agop_enclosure(student, params, CM) -> arb_mat:
    r"""The AGOP of a skip student as a symmetric ball matrix (current precision).

    ∇f = v + s Σ_j a_j σ′_j w_j, so with q = s Wᵀ(a ∘ μ1) (μ1_j = E[σ′_j], enclosed in ``CM``)

        M = E[∇f ∇fᵀ] = s² Wᵀ(aaᵀ ∘ B)W + v vᵀ + q vᵀ + v qᵀ           (SK-3)

    where the first term is the AGOP of the student without the skip
    (:func:`certify.alignment.agop_enclosure`, B = E[σ′_iσ′_j] from ``CM``).  Every input entry
    is its exact float64 value; every operation is a ball operation.

    Parameters
    ----------
    student : popdyn.Student
        ``skip=True``.
    params : popdyn.Params
    CM : certify.moments.CertMoments
        Certified moments of the student without the skip, with ``B``.
    """
    plain = _plain(student)
    M0 = agop_enclosure(plain, params, CM.B)
    # the float engine's assembly (popdyn.assembly.skip_agop) in the Arb context: symmetric
    # entry for entry, and v = 0 adds exact zeros (the plain student's enclosure, bit for bit)
    return _asm.skip_agop(ARB, M0, _scale(student), vec(params.a),
                          A.mat_from_array(params.W), vec(params.v), as_vec(_mu1(CM)))


def skip_alignment(student, params, U, *, prec: int = 128) -> AlignmentBracket:
    r"""Certified AGOP alignment (A_top, A_min, A_mean) of a student with a linear skip.

    The AGOP (:func:`skip_agop_enclosure`, SK-3) is enclosed in Arb from the certified moments
    B = E[σ′_iσ′_j] and μ1 = E[σ′_j] of the same student without the skip
    (:func:`certify.moments.certified_moments`; relu and leaky relu in closed form, silu, gelu,
    tanh and erf by :mod:`certify.smooth`); the eigengap and Davis–Kahan steps are those of
    :func:`certify.alignment.alignment`, including its recomputation of B with every pair in
    Arb when the float64 Mehler path limits the width.  Reached through
    :func:`certify.alignment`, which dispatches skip students here.

    Parameters
    ----------
    student : popdyn.Student
        ``skip=True``; relu, leaky_relu, silu, gelu, tanh or erf.
    params : popdyn.Params
        With ``v`` of shape (d,).
    U : array_like (r, d) or popdyn.Teacher
        Orthonormal rows (a Teacher stands for its ``subspace``).
    prec : int, keyword-only
        Working precision in bits.

    Returns
    -------
    certify.alignment.AlignmentBracket
        ``rigorous``; scores ``unresolved`` ([0, 1]) where the eigengap is not certified.

    Raises
    ------
    CertificationError
        An activation outside the certified moments.

    References
    ----------
    :mod:`popdyn.skip` (AGOP: ∇f = v + Σ a_j σ′_j w_j); Kumar (arXiv 2609.39408)
    (AGOP alignment); docs/design.md §5, §6.
    """
    prec = A.check_prec(prec)
    student.family.check(params)
    U = check_subspace(U, student.d)
    return certified_alignment(_plain(student), params, U, prec,
                               lambda CM: skip_agop_enclosure(student, params, CM))


def skip_refit(student, params, teacher):
    """The skip family's refit builder (:class:`certify._families.Certifier` ``refit``): the
    ridge family's checks and teacher coverage (:func:`certify.refit.ridge_refit`; gated
    teachers numerical, as :mod:`certify.gated` is not a skip moment source), then
    :func:`skip_refit_problem` on the builder chosen there."""
    return functools.partial(skip_refit_problem, base=ridge_refit(student, params, teacher))


SKIP = _families.register(_families.Certifier(
    _SKIP_SPEC.name, loss=skip_loss, grad=True, alignment=skip_alignment, refit=skip_refit))
#: the refit's moment source for PL skip students against smooth teacher networks (the moments
#: of the student without the skip; gated teachers are not a skip source: numerical refit)
PL_SMOOTH = _families.register_source(_families.MomentSource(
    _SKIP_SPEC.name, "smooth teacher networks", pl_smooth.covers,
    moments=pl_smooth.pl_smooth_moments))
