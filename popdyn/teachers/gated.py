r"""Gated teachers y = κ·F(u_1·x)·(u_2·x): multi-index teachers of two variables
(:mod:`popdyn.teachers.multi_index`) with a tabulated Hermite tensor, and the closed forms of the
relu gate against piecewise-linear students.

Gated teachers (``Teacher.gated``), s = u_1·x, t = u_2·x:

=============  =========================  ============================================
``gate``       y / κ                      tensor
=============  =========================  ============================================
``id``         s·t                        F_{1,1} = 1 (exact)
``gelu``       GELU(s)·t, GELU = zΦ(z)    F_{a,1} = ĝ_a, a ≤ 200 (closed form in mpmath)
``tanh``       tanh(s)·t                  F_{a,1} = ĝ_a, a ≤ 512 (popdyn.links table)
``relu``       max(s, 0)·t                F_{a,1} = ĝ_a, a ≤ 512 (closed form)
``silu``       SiLU(s)·t, s/(1 + e^{−s})  F_{a,1} = ĝ_a, a ≤ 512 (popdyn.links table)
``h2``         h_2(s)·t = (s² − 1)t/√2    F_{2,1} = 1 (exact)
``rotation``   (s² − t²)/2                F_{2,0} = 1/√2, F_{0,2} = −1/√2 (exact)
=============  =========================  ============================================

``id``, ``silu``, ``relu``, ``gelu``, ``tanh`` and ``h2`` are the six product targets of
Kumar (arXiv 2609.39408), eq. (20), Y_g = g(S)T/√E[g(S)²] once normalized to E[y²] = 1
(``Teacher.normalized("second_moment")``); the SiLU gate keeps its mean E[SiLU(S)] ≠ 0 (a linear
component F_{0,1} in t), as in the paper.

``rotation`` is the bilinear rotation control: the product s′t′ of the coordinates rotated by
45° (s′ = (s+t)/√2, t′ = (s−t)/√2), i.e. the function s·t written in a frame where the declared
axes u_1, u_2 are *not* its own axes (Kumar (arXiv 2609.39408), Figure 6,
"bilinear rotation control").  All gated teachers have E[y] = 0 and V_Y = κ²E[F(s)²] (s and t
independent).

Accuracy.  Against smooth student units (SiLU gates, silu/gelu/tanh/erf students) the sum
(MI-1) converges fast and the truncated tensor costs at most ‖ψ‖·√tail2.  Against
piecewise-linear students (relu, leaky_relu) the relu gate's series would converge only
algebraically as the student direction approaches the gate axis, so that pair uses closed
forms (:func:`_relu_gate_pl`: the engine's PL pair moments and a conditional-Gaussian formula).
The GELU, tanh and SiLU gates against PL students use (MI-1) with their tabulated 200 / 512 /
512 coefficients (geometric / exp(−c√n) decay); for other non-polynomial tensors against PL
students the truncation is estimated in ``info["error"]``.  Polynomial tensors (id, rotation,
any finite tensor) are exact.

References
----------
Kumar (arXiv 2609.39408): gated teachers st, GELU(s)t, tanh(s)t, ReLU(s)t and the bilinear
rotation control (Figures 1, 5, 6; Table 1);
docs/design.md §3 ("multi-index (gated)").
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from .. import _validate as V
from .._moments import UnitSet, cross_moments
from ._base import register_kind
from .multi_index import HermiteTensor, MultiIndexFunction, MultiIndexTeacher

GATES = ("id", "gelu", "tanh", "relu", "silu", "h2", "rotation")


# ---------------------------------------------------------------------------------- gates
@functools.lru_cache(maxsize=None)
def _gelu_coeffs(N=200):
    """Normalized Hermite coefficients of GELU(z) = zΦ(z), n = 0..N, and E[GELU²] (mpmath, 40 dps).

    Φ̂_0 = 1/2; for odd n, E[Φ He_n] = E[φ He_{n−1}] = (−1/2)^{(n−1)/2}(n−2)!!/(2√π); the
    Jacobi operator (z f)^_n = √(n+1) f̂_{n+1} + √n f̂_{n−1} then gives GELU.
    """
    import mpmath                # heavy: loaded on first use (CLI start-up)

    ctx = mpmath.MPContext()
    ctx.dps = 40
    M = N + 2
    ph = [ctx.mpf(0)] * (M + 1)
    ph[0] = ctx.mpf(1) / 2
    c = 1 / (2 * ctx.sqrt(ctx.pi))
    dfact = ctx.mpf(1)          # (n-2)!! for odd n, starting with (-1)!! = 1
    for n in range(1, M + 1, 2):
        if n >= 3:
            dfact *= (n - 2)
        ph[n] = c * (ctx.mpf(-1) / 2) ** ((n - 1) // 2) * dfact / ctx.sqrt(ctx.factorial(n))
    g = [ctx.sqrt(n + 1) * ph[n + 1] + (ctx.sqrt(n) * ph[n - 1] if n else 0) for n in range(N + 1)]
    e2 = ctx.quad(lambda z: (z * ctx.ncdf(z)) ** 2 * ctx.npdf(z), [-ctx.inf, 0, ctx.inf])
    tail = max(e2 - ctx.fsum(x * x for x in g), ctx.mpf(0))
    return np.array([float(x) for x in g]), float(e2), float(tail) + 1e-38   # + quad. error


@functools.lru_cache(maxsize=None)
def _relu_gate(N=512):
    import mpmath                    # heavy: loaded on first use (CLI start-up)

    from ..links import get_link      # links loads mpmath: on first use (CLI start-up)

    lk = get_link("relu")
    ctx = mpmath.MPContext()
    ctx.dps = 30
    c = lk.coefficients_full(N)
    # tail: E[relu²] = 1/2 minus the stored energy, evaluated from 30-digit coefficients
    phi0 = 1 / ctx.sqrt(2 * ctx.pi)
    s = phi0 ** 2 + ctx.mpf(1) / 4
    r = phi0 / ctx.sqrt(2)
    n = 2
    while n <= N:
        s += r * r
        r = r * (-(n - 1)) / ctx.sqrt((n + 1) * (n + 2))
        n += 2
    return c, 0.5, float(ctx.mpf(1) / 2 - s)


@functools.lru_cache(maxsize=None)
def _table_gate(name):
    """(coefficients F_{a,1} = ĝ_a, a ≤ 512, E[g²], tail Σ_{a>512} ĝ_a²) of the tabulated links
    tanh and silu (:mod:`popdyn.links`, data/links/links.npz)."""
    from ..links import get_link      # links loads mpmath: on first use (CLI start-up)

    lk = get_link(name)
    return lk.coefficients_full(lk.N_tab), float(lk.second_moment), float(lk.t2[-1])


def gate_tensor(gate: str) -> tuple:
    """(HermiteTensor, E[y²], scalar gate function) of a gated teacher y = F(s)·t (κ = 1)."""
    V.choice("gate", gate, GATES)
    if gate == "id":
        return HermiteTensor.from_dict({(1, 1): 1.0}), 1.0, lambda s: s
    if gate == "rotation":
        r = 1.0 / math.sqrt(2.0)
        return HermiteTensor.from_dict({(2, 0): r, (0, 2): -r}), 1.0, None
    if gate == "h2":
        return (HermiteTensor.from_dict({(2, 1): 1.0}), 1.0,
                lambda s: (s * s - 1.0) / math.sqrt(2.0))
    if gate == "gelu":
        c, e2, tail = _gelu_coeffs()
        fn = lambda s: s * special.ndtr(s)
    elif gate == "tanh":
        c, e2, tail = _table_gate("tanh")
        fn = np.tanh
    elif gate == "silu":
        c, e2, tail = _table_gate("silu")
        fn = lambda s: s * special.expit(s)
    else:
        c, e2, tail = _relu_gate()
        fn = lambda s: np.maximum(s, 0.0)
    idx = np.stack([np.arange(c.size), np.ones(c.size, dtype=np.int64)], axis=1)
    keep = c != 0.0
    return HermiteTensor(idx[keep].astype(np.int64), c[keep].copy(), 2, False, tail), e2, fn


def gated_function(gate: str) -> MultiIndexFunction:
    T, e2, fn = gate_tensor(gate)
    return MultiIndexFunction(f"gated:{gate}", T, 0.0, e2, gate, fn)


def _relu_gate_pl(su, teacher, rtol):
    """Exact cross moments of piecewise-linear student units σ = p·relu + q·id against the
    relu-gated teacher G = relu(s)·t (u_1 ⊥ u_2; docs/design.md §3 closed forms).

    With θ_l = θ_j·u_l, h = β_j/α_j, and Stein along u_2 (G is linear in t, independent of s):
      E[σ_j G]      = α_j θ_2 E[σ'_j relu(s)]                (engine's PL pair moment D)
      E[σ'_j G]     = θ_2 E[α_jσ''_j relu(s)]                (PL pair moment A)
      E[σ'_j ∂_2G]  = E[σ'_j relu(s)]
      E[σ'_j ∂_1G]  = θ_2 p φ(h) Φ(μ/τ)
      E[α_jσ''_j G] = p φ(h) θ_2 (−h E[relu(S)] − θ_1 Φ(μ/τ)),   S ~ N(μ, τ²),
    the last two from conditioning on z_j = θ_j·x = −h (ασ'' = p δ(z_j + h)): then
    s ~ N(μ, τ²) with μ = −θ_1 h, τ² = 1 − θ_1², and E[t | s, z_j] is linear (regression).
    """
    from scipy.special import ndtr

    U = teacher.U
    gate = UnitSet("pl", np.ones(1), np.zeros(1), np.ascontiguousarray(U[:1]),
                   np.ones(1), np.zeros(1))
    Cp, Bp, Ap, Dp, _, _ = cross_moments(su, gate, rtol)
    th = su.theta @ U.T
    t1, t2 = th[:, 0], th[:, 1]
    al, p = su.al, su.p
    ok = al > 0
    h = np.where(ok, su.be / np.where(ok, al, 1.0), 0.0)
    mu = -t1 * h
    tau = np.sqrt(np.maximum(1.0 - t1 * t1, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(tau > 0, mu / np.where(tau > 0, tau, 1.0), np.sign(mu) * np.inf)
    Phi = np.where(np.isinf(x), (x > 0).astype(float), ndtr(np.where(np.isinf(x), 0.0, x)))
    phi_x = np.where(np.isinf(x), 0.0, np.exp(-0.5 * np.where(np.isinf(x), 0.0, x) ** 2)
                     / math.sqrt(2 * math.pi))
    Erelu = mu * Phi + tau * phi_x
    phih = np.exp(-0.5 * h * h) / math.sqrt(2 * math.pi)
    w = np.where(ok, p * phih * t2, 0.0)
    Ct = (al * t2 * Dp[:, 0])[:, None]
    Dt = (t2 * Ap[:, 0])[:, None]
    At = (w * (-h * Erelu - t1 * Phi))[:, None]
    Bt = np.stack([w * Phi, Dp[:, 0]], axis=1)
    return Ct, Bt, At, Dt


@register_kind("gated")
class GatedTeacher(MultiIndexTeacher):
    """y = κ·F(s)·t (:meth:`popdyn.Teacher.gated`); stored and described as a multi-index
    teacher (kind ``multi_index``, function ``gated:<gate>``)."""

    @classmethod
    def build(cls, gate, U, kappa=1.0):
        U = V.array("U", U, (2, None))
        if U.shape[1] < 2:
            raise ValueError(f"`U` must have shape (2, d) with d >= 2, got {U.shape}")
        V.orthonormal_rows("U", U)
        fn = gated_function(gate)
        kappa = V.real("kappa", kappa)
        return cls("multi_index", U, np.array([kappa]), np.zeros(2), index=fn)

    def cross(self, su, rtol):
        if su.kind == "pl" and self.index.gate == "relu":
            Ct, Bt, At, Dt = _relu_gate_pl(su, self, rtol)
            return Ct, Bt, At, Dt, np.zeros((su.n, 1)), None
        return super().cross(su, rtol)
