r"""Certified loss and refit of SwiGLU students against gated teachers.

Student φ_j(x) = σ(g_j·x)(v_j·x), σ = SiLU, f = Σ_j a_j φ_j + c (:mod:`popdyn.swiglu`);
teacher y = κ F(s) t, s = u₁·x, t = u₂·x, F ∈ {id, relu, gelu, tanh} or the rotation control
y = κ(s² − t²)/2 (:mod:`popdyn.teachers.gated`).  The rows are the exact float64 values and
are not assumed orthonormal: a = |u₁|², b = |u₂|², c = u₁·u₂ and every g·u, v·u are exact
dyadic rationals or balls.

Cross moments, F ≠ rotation.  Stein's lemma along u₂ and then along v_j
(E[k(x)(w·x)] = E[w·∇k(x)]), with α = |g_j|, β = |u₁|, ρ = g_j·u₁/(αβ):

    E[φ_j y]/κ = (g_j·u₂)[(v_j·g_j) E[σ″(g_j·x)F(s)] + (v_j·u₁) E[σ′(g_j·x)F′(s)]]
                 + (v_j·u₂) E[σ(g_j·x)F(s)] + c·E[σ(g_j·x)(v_j·x)F′(s)].            (SGG-1)

The three pair moments E[σ^{(p)}(αZ₁)F^{(q)}(βZ₂)] (corr(Z₁, Z₂) = ρ; (p, q) = (2, 0), (1, 1),
(0, 0)) are Mehler sums Σ_{n≤K} T^{(p)}_n(α) f^{(q)}_n ρⁿ of the rigorous SiLU Hermite
enclosures of :func:`certify.swiglu.silu_hermite_enclosures` and the gate's normalized
coefficients (f of F(βZ), f′ of F′(βZ)): id exact (f = (0, β), f′ = (1)), gelu in closed form,
tanh by the trapezoidal rule with the Trefethen–Weideman bound, relu by the PL coefficients
(:func:`certify.gated._gate_unit`), closed by the Cauchy–Schwarz tail
(τ_p(K) τ_f(K))^{1/2}|ρ|^{K+1} (valid for every |ρ| ≤ 1: g_j parallel or antiparallel to u₁ is
covered; the SiLU series decays geometrically, so the slowly decaying relu coefficients cost
nothing).  The last term of SGG-1 is bounded, not computed: |E[σ(v·x)F′(s)]| ≤
sup|F′|·E[φ_j²]^{1/2} (Cauchy–Schwarz; sup|F′| ≤ 1, 1.2 for gelu), multiplied by |c|, which is
0 exactly for exactly orthogonal rows and ~1e−17 for rows orthonormalized in float64.

Rotation.  E[φ_j (u·x)²] = |u|²E[φ_j] + E[uᵀ∇²φ_j u] = (v·g)(|u|²E[σ′] + (g·u)²E[σ‴])
+ 2(g·u)(v·u)E[σ′] (Stein twice; E[σ^{(p)}(αZ)] = T^{(p)}_0(α)); finite, no truncation.

Teacher moments (those of :mod:`certify.gated`): E[y] = κcE[F′(s)] (|E[F′]| ≤ sup|F′|),
E[y²] = κ²[(b − c²/a)E[F(s)²] + (c/a)²E[F(s)²s²]] with 0 ≤ (c/a)²E[F²s²] ≤ 3c²; rotation
E[y] = κ(a − b)/2, E[y²] = κ²(3a² + 3b² − 2ab − 4c²)/4.  The student moments Φ = E[φ_iφ_j] and
φ̄ = E[φ_j] are those of :mod:`certify.swiglu` (SG-1).

Everything is ball arithmetic with bounded truncations: the loss and the refit quadratic are
``rigorous``.  Zero rows: g_j = 0 or v_j = 0 give φ_j = 0 (the formulas give exact zeros);
u₁ = 0 gives y = 0 (F(0) = 0 for every gate).

References
----------
C. Stein (1981), Ann. Statist. 9, 1135–1151; L. N. Trefethen, J. A. C. Weideman, SIAM Review
56 (2014) 385–458 (trapezoid bound); Kumar (arXiv 2609.39408)
(SwiGLU students, gated teachers);
docs/design.md §3, §6; :mod:`certify.swiglu`, :mod:`certify.gated`.
"""
from __future__ import annotations

import math

import numpy as np
from flint import arb
from popdyn.teachers.gated import GatedTeacher

from . import _arb as A
from . import _families
from . import gated as GT
from . import smooth as SM
from . import swiglu as SW
from .errors import CertificationError

__all__ = ["covers", "swiglu_gated_loss", "swiglu_gated_refit_problem"]


def covers(teacher) -> bool:
    """Whether ``teacher`` is a gated teacher whose gate this module encloses."""
    return isinstance(teacher, GatedTeacher) and GT._gate(teacher) in GT.GATES


def _silu_cut(T, E, p, j, K):
    """(T^{(p)}_0..T^{(p)}_K of unit j, upper bound of its tail energy beyond K)."""
    co = [T[p][j, n] for n in range(K + 1)]
    s = arb(0)
    for x in co:
        s += x * x
    return co, max(A.upper(E[(p, p)][j] - s), 0.0)


def _gate_series(gate, beta, K, prec):
    """(f, τ_f, f′, τ_f′, K): normalized coefficients of F(βZ) and F′(βZ) to order K (capped by
    the tanh trapezoid's order) with upper bounds of their tail energies."""
    if gate == "id":
        return [arb(0), beta], 0.0, [arb(1)], 0.0, K
    kind, gu, Ng = GT._gate_unit(gate, beta, prec)
    if gate == "tanh":
        K = min(K, Ng)
    f, fp, tf, tfp = gu.series(K)
    return list(f[:K + 1]), tf, list(fp[:K + 1]), tfp, K


def _ef2(gate, beta, a, prec):
    """E[F(s)²] (s = u₁·x, |u₁|² = a): id a, relu a/2, gelu the closed Price integral, tanh the
    trapezoidal energy (:mod:`certify.gated`)."""
    if gate == "id":
        return a
    if gate == "relu":
        return a / 2
    kind, gu, _ = GT._gate_unit(gate, beta, prec)
    if gate == "gelu":
        return SM.closed_pair(gu, gu, arb(1), prec, True, False)[0]
    return gu.e0


def _quantities(student, params, teacher, prec):
    """(Φ, φ̄, E[yφ], E[y], E[y²]) (module docstring), current precision."""
    m = student.m
    gate = GT._gate(teacher)
    U = teacher.U
    # the SiLU enclosures and student moments depend on the student rows only: the student-only
    # entry of certify.swiglu's cache (shared with the AGOP and with every teacher); the
    # student–teacher geometry is formed here (each ball contains the exact value, so mixing
    # the two geometries is sound)
    _, T, E, M, N = SW._setup(student, params, None, prec)
    geo = SW._Geometry(np.vstack([params.G, U]))
    Phi, phib, GV = SW._student_part(params, T, M)
    i1, i2 = m, m + 1
    a, b, c = GT._dot(geo, i1, i1), GT._dot(geo, i2, i2), GT._dot(geo, i1, i2)
    c_zero = int(geo.G[i1, i2]) == 0
    kap = arb(float(teacher.weights[0]))
    VU = SW._inner(params.V, U)
    yphi = [arb(0)] * m
    if gate == "rotation":
        for j in range(m):
            vg = GV[j, j]
            acc = arb(0)
            for t, sgn in ((0, 1), (1, -1)):
                gu = GT._dot(geo, j, m + t)
                uu = GT._dot(geo, m + t, m + t)
                q = vg * (uu * T[1][j, 0] + gu * gu * T[3][j, 0]) + 2 * gu * VU[j, t] * T[1][j, 0]
                acc += sgn * q
            yphi[j] = kap * acc / 2
        ey = kap * (a - b) / 2
        ey2 = kap * kap * (3 * a * a + 3 * b * b - 2 * a * b - 4 * c * c) / 4
        return Phi, phib, yphi, ey, ey2
    if geo.zero[i1]:                                      # y = κF(0)t = 0
        return Phi, phib, yphi, arb(0), arb(0)
    beta = geo.alpha[i1]
    f, tf, fp, tfp, K = _gate_series(gate, beta, N, prec)
    fsup = GT._FP_SUP[gate]
    for j in range(m):
        rho, _, _, flag = geo.pair(j, i1)
        mom = {}
        for p, (fs, tfs) in ((2, (f, tf)), (1, (fp, tfp)), (0, (f, tf))):
            Kp = min(K, len(fs) - 1)
            co, tau = _silu_cut(T, E, p, j, Kp)
            if geo.zero[j]:
                mom[p] = co[0] * fs[0]
            else:
                mom[p] = SM._mehler(co, fs[:Kp + 1], tau, tfs if len(fs) > Kp + 1 or tfs else 0.0,
                                    rho, flag)
        gu2 = GT._dot(geo, j, i2)
        val = gu2 * (GV[j, j] * mom[2] + VU[j, 0] * mom[1]) + VU[j, 1] * mom[0]
        if not c_zero:
            pjj = max(A.upper(Phi[j, j]), 0.0)
            val += arb(0, A.mul_up(A.upper(abs(c)), A.sqrt_up(pjj), fsup))
        yphi[j] = kap * val
    EF2 = _ef2(gate, beta, a, prec)
    if c_zero:
        ey = arb(0)
        ey2 = kap * kap * b * EF2
    else:
        ey = kap * c * arb(0, fsup)
        U3 = A.upper(3 * c * c)
        ey2 = kap * kap * ((b - c * c / a) * EF2 + arb(U3 / 2, U3 / 2))
    return Phi, phib, yphi, ey, ey2


def swiglu_gated_loss(student, params, teacher, prec):
    """Rigorous bracket of L = ½E[(f − y)²] for a SwiGLU student and a gated teacher
    (module docstring); reached through :func:`certify.loss` via :mod:`certify.swiglu`."""
    with A.workprec(prec + 32):
        Phi, phib, yphi, ey, ey2 = _quantities(student, params, teacher, prec)
        Lb, vb, mb = SW._loss_brackets(params, Phi, phib, yphi, ey, ey2)
    if not (math.isfinite(Lb.lo) and math.isfinite(Lb.hi)):
        raise CertificationError("no finite enclosure of the SwiGLU loss", hint="a higher prec")
    return SW._assemble(Lb, vb, mb, "rigorous", prec, "")


def swiglu_gated_refit_problem(student, params, teacher, prec):
    """(G, g, V, info) of the frozen-feature SwiGLU refit against a gated teacher: G = Φ − φ̄φ̄ᵀ,
    g = E[yφ] − φ̄E[y], V = V_Y, rigorous (module docstring)."""
    with A.workprec(prec + 32):
        Phi, phib, yphi, ey, ey2 = _quantities(student, params, teacher, prec)
        return (*SW._refit_quadratic(Phi, phib, yphi, ey), ey2 - ey * ey,
                SW._SwiGLUCM())


def covers_pair(student, teacher) -> bool:
    """:func:`covers` as a moment source's ``covers(student, teacher)`` (the SwiGLU family's
    sources are looked up for SwiGLU students only)."""
    return covers(teacher)


#: the SwiGLU family's source for gated teachers (loss and refit quadratic outright)
SOURCE = _families.register_source(_families.MomentSource(
    SW.SWIGLU_FAMILY, "gated teachers", covers_pair, loss=swiglu_gated_loss,
    refit=swiglu_gated_refit_problem))
