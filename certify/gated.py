r"""Certified moments against gated teachers y = κ·F(s)·t, s = u₁·x, t = u₂·x.

The gates of :mod:`popdyn.teachers.gated`: F ∈ {id, relu, gelu, tanh} and the bilinear rotation
control y = κ(s² − t²)/2.  The student units are relu / leaky_relu (:mod:`certify.moments`) or
silu, gelu, tanh, erf (:mod:`certify.smooth`); their moments C, μ0 come from
:func:`certify.moments.certified_moments`.  The teacher side is enclosed rigorously as follows,
for the exact float64 rows u₁, u₂ (not assumed orthonormal: a = |u₁|², b = |u₂|², c = u₁·u₂ are
exact dyadic rationals from the integer Gram matrix of :class:`certify.moments._Geometry`).

Cross moments, F ≠ rotation.  Stein's lemma along u₂, E[g(x)(u₂·x)] = E[u₂·∇g(x)], with
g = σ(w·x + b)F(s):

    E[σ(w·x + b) F(s) t] = (w·u₂) E[σ′(w·x + b) F(s)] + c·E[σ(w·x + b) F′(s)].

The second term is bounded by |c|·(E[σ²] sup|F′|²)^{1/2} (sup|F′| ≤ 1 for id, relu, tanh;
≤ 1.2 for gelu, whose F′ = Φ + zφ has (F′)′ = (2 − z²)φ, so F′ ∈ [−0.129, 1.129]); c = 0
exactly for the usual orthonormal frames, so the term vanishes.  The first is a pair moment
of σ′ (student unit at α = |w|, β = b) and F (gate unit at α = √a, β = 0) at the correlation
ρ = w·u₁/(|w|√a):

* Mehler's formula Σ_{n≤N} d_n f_n ρⁿ with the Cauchy–Schwarz tail (T_d(N)T_f(N))^{1/2}|ρ|^{N+1}
  (valid for every |ρ| ≤ 1; docs/design.md §6): d_n, T_d the normalized coefficients of σ′ and their
  tail energy (PL units: d_n = pφ(h)ĥ_{n−1}(−h)/√n, E[σ′²] closed; smooth units:
  :meth:`certify.smooth.SmoothUnit.series`), f_n, T_f those of the gate (id: f₁ = √a, exact;
  gelu: closed-form power series and energy; tanh: the trapezoidal rule with the
  Trefethen–Weideman bound; relu: the PL coefficients);
* PL students against the gelu and tanh gates, when that tail is wide (|ρ| near 1): intersected
  with the 1-D integral E[F(s)(q + pΦ(μ/σ̃))] of :func:`certify.pl_smooth.pl_cond_moment`
  (Arb's rigorous ``acb.integral`` and a Gaussian tail bound);
* PL students against the relu gate: the closed form E[σ′_j relu(s)] (the PL pair moment D of
  :func:`certify.moments._pl_pair`; the float engine's closed form, in Arb).

Cross moments, rotation.  E[σ(w·x + b)(u·x)²] = |u|²E[σ] + (w·u)²E[σ″(w·x + b)] (Stein twice)
and E[σ″(αZ + β)] = √2 ĉ₂/α² (ĉ₂ = E[σ(αZ + β)h₂(Z)]): a finite formula, no truncation.

Teacher moments.  t = (c/a)s + r with r independent of s, Var r = b − c²/a:
E[y] = κ c E[F′(s)] (|E[F′]| ≤ sup|F′|), E[y²] = κ²[(b − c²/a)E[F(s)²] + (c/a)²E[F(s)²s²]]
with 0 ≤ E[F²s²] ≤ E[s⁴] = 3a² (|F(s)| ≤ |s| for every gate); E[F(s)²] = a (id), a/2 (relu),
the closed Price integral (gelu, :func:`certify.smooth.closed_pair`), the trapezoidal energy
(tanh).  Rotation: E[y] = κ(a − b)/2, E[y²] = κ²(3a² + 3b² − 2ab − 4c²)/4.

Every rounding is a ball operation and every truncation is bounded: the moments are
``rigorous``.  The loss (:func:`certify.loss`) and the refit risks (:func:`certify.refit_risk`,
every kind) use them; the AGOP alignment does not depend on the teacher beyond its subspace.

References
----------
C. Stein (1981), Ann. Statist. 9, 1135–1151 (Gaussian integration by parts); docs/design.md §3
("multi-index (gated)"), §6; :mod:`popdyn.teachers.gated` (the float64 engine's formulas).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from flint import arb, arb_mat
from popdyn.teachers.gated import GatedTeacher

from . import _arb as A
from . import _families
from . import moments as MO
from . import pl_smooth as PS
from . import smooth as SM

__all__ = ["GATES", "covers", "gated_moments"]

#: the gates enclosed here (popdyn.teachers.gated.GATES)
GATES = ("id", "relu", "gelu", "tanh", "rotation")
#: bounds of sup |F′| (gelu: Φ(z) + zφ(z) has its extrema at z = ±√2: 1.1289 and −0.1289)
_FP_SUP = {"id": 1.0, "relu": 1.0, "tanh": 1.0, "gelu": 1.2}


def _gate(teacher):
    idx = getattr(teacher, "index", None)
    return getattr(idx, "gate", None)


def covers(student, teacher) -> bool:
    """Whether the pair is a relu / leaky_relu / smooth student of a family for which
    :func:`gated_moments` is a registered moment source (the ridge family:
    :mod:`certify.ridge`) against a gated teacher."""
    if getattr(student, "family", None) is None or not isinstance(teacher, GatedTeacher):
        return False
    if not _families.has_source(student, gated_moments):
        return False
    return _gate(teacher) in GATES and student.act.kind in ("pl", "smooth")


_CACHE: list = []


def clear_cache():
    _CACHE.clear()
    _GATE_CACHE.clear()
    _STUDENT_CACHE.clear()


MO.CLEAR_HOOKS.append(clear_cache)


def _dot(geo, i, j):
    """w_i·w_j exactly (ball of radius 0) from the integer Gram matrix."""
    return arb(int(geo.G[i, j])) * arb(2) ** int(geo.exps[i] + geo.exps[j])


_STUDENT_CACHE: list = []


def _student_units(student, params, geo, m, prec):
    """(units, N, PL?, student moments): σ′ series available up to N (tanh / silu: the
    trapezoid is built once and serves C, μ0 as in :func:`certify.smooth.smooth_moments`).
    Cached by student state and precision (the student rows' geometry does not depend on the
    teacher rows stacked after them)."""
    key = MO._cache_key(student, params, None, prec)
    for k, obj in _STUDENT_CACHE:
        if k == key:
            return obj
    obj = _make_student_units(student, params, geo, m, prec)
    _STUDENT_CACHE.insert(0, (key, obj))
    del _STUDENT_CACHE[2:]
    return obj


def _make_student_units(student, params, geo, m, prec):
    if student.act.kind == "pl":
        CMs = MO.certified_moments(student, params, None, prec=prec, need_B=False)
        return MO._student_units(student, params, geo, m), None, True, CMs
    kind = student.act.name
    be = params.b if student.bias else np.zeros(m)
    su = SM.make_units(kind, geo.alpha[:m], be, geo.zero[:m])
    N = SM._order_for(su, prec)
    eng = SM.PairEngine(kind, su, N, prec)          # sets the trapezoid series of tanh / silu
    C = arb_mat(m, m)
    for i in range(m):
        for j in range(i, m):
            if i == j:
                cij = eng.diag(su[i], True, False)[0]
            else:
                cij = eng.pair(su[i], su[j], geo.pair(i, j), True, False)[0]
            C[i, j] = cij
            C[j, i] = cij
    CMs = MO.CertMoments(C=C, B=None, mu0=arb_mat(m, 1, [u.mu0 for u in su]), prec=prec)
    CMs.mu1 = arb_mat(m, 1, [u.mu1 for u in su])
    return su, N, False, CMs


#: gate units (with their series) by (gate, |u₁| ball, prec): they do not depend on the student
_GATE_CACHE: dict = {}


def _gate_unit(gate, al, prec):
    """(kind, unit, order N) of the gate F(αZ) (cached)."""
    key = (gate, al.mid().man_exp(), al.rad().man_exp(), prec)
    hit = _GATE_CACHE.get(key)
    if hit is None:
        if len(_GATE_CACHE) > 8:
            _GATE_CACHE.clear()
        hit = _GATE_CACHE[key] = _make_gate_unit(gate, al, prec)
    return hit


def _make_gate_unit(gate, al, prec):
    if gate == "relu":
        return "pl", MO._PL(((arb(1), arb(0)), (1.0, 0.0)), al, 0.0, False), 256
    u = SM.SmoothUnit(gate, al, 0.0, False)
    N = SM._order_for([u], prec)
    if gate == "tanh":
        SM.PairEngine("tanh", [u], N, prec)
    return "smooth", u, N


def gated_moments(student, params, teacher, *, prec: int = 128) -> MO.CertMoments:
    """:class:`certify.moments.CertMoments` of a student against a gated teacher: C, μ0 (from
    :func:`certify.moments.certified_moments`), Ct = (E[σ_j F(s)t])_j (m×1), v = (κ), E[y],
    E[y²], all rigorous (module docstring).

    Parameters
    ----------
    student, params : popdyn.Student, popdyn.Params
        relu, leaky_relu, silu, gelu, tanh or erf units.
    teacher : popdyn.teachers.gated.GatedTeacher
        ``Teacher.gated(gate, U, kappa)`` with gate in :data:`GATES`.
    prec : int, keyword-only
        Working precision in bits.

    Raises
    ------
    ValueError
        A pair outside :func:`covers`.
    CertificationError
        When an enclosure is not finite (from the unit series).
    """
    prec = A.check_prec(prec)
    if not covers(student, teacher):
        raise ValueError("gated_moments needs a relu, leaky_relu, silu, gelu, tanh or erf student "
                         f"and a gated teacher with gate in {GATES}")
    gate = _gate(teacher)
    key = (MO._cache_key(student, params, None, prec), gate, teacher.U.tobytes(),
           float(teacher.weights[0]))
    for k, obj in _CACHE:
        if k == key:
            return obj
    m = student.m
    with A.workprec(prec + 16):
        geo = MO._Geometry(np.vstack([params.W, teacher.U]))
        i1, i2 = m, m + 1
        a, b, c = _dot(geo, i1, i1), _dot(geo, i2, i2), _dot(geo, i1, i2)
        c_zero = int(geo.G[i1, i2]) == 0
        kap = arb(float(teacher.weights[0]))
        su, Ns, pl, CMs = _student_units(student, params, geo, m, prec)
        Ct = arb_mat(m, 1)
        if gate == "rotation":
            for i in range(m):
                mu0 = CMs.mu0[i, 0]
                v = (a - b) * mu0
                if not geo.zero[i]:
                    c2 = su[i].coeffs(2)[0][2] if pl else su[i].series(Ns)[0][2]
                    d1, d2 = _dot(geo, i, i1), _dot(geo, i, i2)
                    v += arb(2).sqrt() * c2 * (d1 * d1 - d2 * d2) / (geo.alpha[i] ** 2)
                Ct[i, 0] = v / 2
            ey = kap * (a - b) / 2
            ey2 = kap * kap * (3 * a * a + 3 * b * b - 2 * a * b - 4 * c * c) / 4
        else:
            gu: Any                  # the gate's unit (_PL or SmoothUnit); None for "id"
            gk, gu, Ng = (None, None, 0) if gate == "id" else _gate_unit(gate, geo.alpha[i1],
                                                                          prec)
            fp = _FP_SUP[gate]
            for i in range(m):
                v = arb(0)
                if not geo.zero[i] and int(geo.G[i, i2]) != 0:
                    rho, _, _, flag = geo.pair(i, i1)
                    if gate == "id":
                        d = su[i].series(1)[1] if pl else su[i].series(Ns)[1]
                        M = d[1] * geo.alpha[i1] * rho           # f = (0, √a), no tail
                    elif pl and gate == "relu":
                        M = MO._pl_pair(su[i], gu, geo.pair(i, i1), False, False, prec)[4]
                    else:
                        # PL and erf / gelu series extend to any order; tanh / silu to N_s
                        K = Ng if (pl or student.act.name in SM._CLOSED) else min(Ns, Ng)
                        _, d, _, td = su[i].series(K)
                        if gk == "pl":
                            f, tf = gu.coeffs(K)
                        else:
                            f, _, tf, _ = gu.series(K)
                        M = SM._mehler(d[:K + 1], f[:K + 1], td, tf, rho, flag)
                        if pl and gk == "smooth":      # |ρ| near 1: the 1-D integral
                            sc = A.sqrt_up(A.mul_up(A.upper(su[i].e2d), A.upper(a)))
                            M = PS._narrow(M, su[i], gate, gu.al, gu.be, geo.pair(i, i1), 1,
                                           prec, sc)
                    v = _dot(geo, i, i2) * M
                if not c_zero:
                    Cii = A.upper(CMs.C[i, i])
                    v += arb(0, A.mul_up(A.upper(abs(c)), A.sqrt_up(max(Cii, 0.0)), fp))
                Ct[i, 0] = v
            # teacher moments (module docstring)
            if gate == "id":
                EF2 = a
            elif gate == "relu":
                EF2 = a / 2
            elif gate == "gelu":
                EF2 = SM.closed_pair(gu, gu, arb(1), prec, True, False)[0]
            else:
                EF2 = gu.e0
            if c_zero:
                ey = arb(0)
                ey2 = kap * kap * b * EF2
            else:
                ey = kap * c * arb(0, fp)
                U3 = A.upper(3 * c * c)              # 0 <= (c/a)²E[F²s²] <= 3c²
                ey2 = kap * kap * ((b - c * c / a) * EF2 + arb(U3 / 2, U3 / 2))
    out = MO.CertMoments(C=CMs.C, B=CMs.B, mu0=CMs.mu0, Ct=Ct, v=arb_mat(1, 1, [kap]), ey=ey,
                         ey2=ey2, rigorous=CMs.rigorous, notes=list(CMs.notes), prec=prec)
    out.mu1 = CMs.mu1
    out.teacher_rows = teacher.U
    _CACHE.insert(0, (key, out))
    del _CACHE[4:]
    return out
