r"""Certified moments of piecewise-linear students against smooth teacher networks (issue 19).

A relu / leaky_relu student f(x) = s Σ_j a_j σ(w_j·x + b_j) + c against a teacher network
y = Σ_t v_t τ(u_t·x + c_t) with τ ∈ {tanh, silu, gelu, erf} (biases allowed) needs, besides the
student moments C, μ0 of :mod:`certify.moments` (rigorous closed forms),

* the cross moments Ct_jt = E[σ(w_j·x + b_j) τ(u_t·x + c_t)],
* the teacher moments E[y] = Σ_t v_t E[τ_t] and E[y²] = Σ_{t,l} v_t v_l E[τ_t τ_l].

Both are enclosed in Arb with the machinery that already serves smooth students against PL
teachers (:mod:`certify.smooth`), with the roles exchanged:

* Ct by Mehler's formula, E[σ(α_jZ + β_j) τ(α_tZ′ + c_t)] = Σ_n ĉ_n τ̂_n ρⁿ (corr(Z, Z′) = ρ,
  normalized Hermite coefficients), truncated at the teacher unit's order N and closed by the
  Cauchy–Schwarz tail (T_σ(N) T_τ(N))^{1/2} |ρ|^{N+1} (DESIGN §6), valid for every |ρ| ≤ 1
  (duplicated and antiparallel directions included).  ĉ_n are the PL unit's closed-form
  coefficients with T_σ(N) = E[σ²] − Σ_{n≤N} ĉ_n² (E[σ²] in closed form,
  :class:`certify.moments._PL`); τ̂_n and T_τ(N) come from :class:`certify.smooth.SmoothUnit`
  (erf / gelu: one Arb power series and closed-form energies; tanh / silu: the trapezoidal
  rule with the Trefethen–Weideman strip bound).  A zero student or teacher row is the
  constant σ(b) or τ(c) (exact).
* E[τ_t τ_l] by :class:`certify.smooth.PairEngine` (closed forms and Price integrals for erf /
  gelu; Mehler sums intersected with the ρ = ±1 trapezoid and its Lipschitz bound for tanh /
  silu), E[τ_t] from the unit.

Every rounding is a ball operation and every truncation is bounded, so the moments are
``rigorous``.  The tail factor makes near-aligned pairs (|ρ| → 1) wider than the rest; it is
the product of the PL coefficients' algebraic tail (≈ N^{−3/2}) and the smooth unit's
(≈ e^{−π√(2N)/α} for tanh), so it stays small unless the teacher weights are large.

References
----------
DESIGN.md §3 (Mehler, PL coefficients), §6 (tail bound); :mod:`certify.smooth` (smooth units).
"""
from __future__ import annotations

import numpy as np
from flint import arb, arb_mat
from popdyn.teachers import NetworkTeacher

from . import _arb as A
from . import moments as MO
from . import smooth as SM

__all__ = ["covers", "pl_smooth_moments"]


def covers(student, teacher) -> bool:
    """Whether the pair is a relu / leaky_relu student against a smooth teacher network."""
    return (student.act.kind == "pl" and isinstance(teacher, NetworkTeacher)
            and teacher.activation.kind == "smooth" and teacher.activation.name in SM.SMOOTH)


_CACHE: list = []


def _key(student, params, teacher, prec):
    return (MO._cache_key(student, params, teacher, prec), teacher.activation.name)


def clear_cache():
    _CACHE.clear()


MO.CLEAR_HOOKS.append(clear_cache)


def pl_smooth_moments(student, params, teacher, *, prec: int = 128) -> MO.CertMoments:
    """:class:`certify.moments.CertMoments` (C, μ0 from :func:`certify.moments.certified_moments`;
    Ct, v, E[y], E[y²] as in the module docstring) of a PL student against a smooth teacher
    network, all rigorous.

    Parameters
    ----------
    student, params : popdyn.Student, popdyn.Params
        A relu or leaky_relu student (checked by :func:`covers`).
    teacher : popdyn.teachers.NetworkTeacher
        tanh, silu, gelu or erf units, any rows and biases.
    prec : int, keyword-only
        Working precision in bits.
    """
    prec = A.check_prec(prec)
    if not covers(student, teacher):
        raise ValueError("pl_smooth_moments needs a relu / leaky_relu student and a teacher "
                         "network of tanh, silu, gelu or erf units")
    key = _key(student, params, teacher, prec)
    for k, obj in _CACHE:
        if k == key:
            return obj
    CMs = MO.certified_moments(student, params, None, prec=prec, need_B=False)
    m, k = student.m, teacher.k
    kind = teacher.activation.name
    with A.workprec(prec + 16):
        geo = MO._Geometry(np.vstack([params.W, teacher.U]))
        su = MO._student_units(student, params, geo, m)
        tsm = SM.make_units(kind, geo.alpha[m:], teacher.bias, geo.zero[m:])
        N = SM._order_for(tsm, prec)
        teng = SM.PairEngine(kind, tsm, N, prec)
        Ct = arb_mat(m, k)
        for t in range(k):
            ct, _, tct, _ = tsm[t].series(N)
            tau = A.sqrt_up(tct)
            for i in range(m):
                rho, _, _, flag = geo.pair(i, m + t)
                cu, tcu = su[i].coeffs(len(ct) - 1)
                Ct[i, t] = MO._mehler(cu, tcu, ct, tau, rho, flag)
        v = [arb(float(x)) for x in teacher.weights]
        ey = arb(0)
        for vt, u in zip(v, tsm):
            ey += vt * u.mu0
        ey2 = arb(0)
        for t in range(k):
            for l in range(t, k):
                if t == l:
                    e = teng.diag(tsm[t], True, False)[0]
                else:
                    e = teng.pair(tsm[t], tsm[l], geo.pair(m + t, m + l), True, False)[0]
                ey2 += (v[t] * v[l] * e) * (1 if t == l else 2)
    out = MO.CertMoments(C=CMs.C, B=CMs.B, mu0=CMs.mu0, Ct=Ct, v=arb_mat(k, 1, v), ey=ey,
                         ey2=ey2, rigorous=CMs.rigorous, notes=list(CMs.notes), prec=prec)
    out.mu1 = CMs.mu1
    out.teacher_rows = teacher.U
    _CACHE.insert(0, (key, out))
    del _CACHE[4:]
    return out
