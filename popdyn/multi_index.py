r"""Multi-index (gated) teachers y = κ·G(u_1·x, …, u_k·x) given by their Hermite tensor.

A multi-index function of ξ = Ux (U: k orthonormal rows) is stored by its *normalized Hermite
tensor* F_A = E[G(ξ) h_A(ξ)], h_A(ξ) = Π_l h_{a_l}(ξ_l), h_n = He_n/√n! (DESIGN §2), so that
G = Σ_A F_A h_A.  Exact (finite) for polynomials; for a non-polynomial gate the tensor is
truncated at a tabulated order with a stated L² tail bound ``tail2`` = Σ_{A beyond} F_A².

Reduction to scalar moments (DESIGN §3): for any ridge unit ψ(θ·x) with |θ| = 1 and normalized
coefficients ψ̂_n = E[ψ(z) h_n(z)], the identity E[ψ(θ·x) He_{A}(Ux)] = c_{|A|} Π_l θ_l^{a_l}
(θ_l = u_l·θ; DESIGN §3, "multi-index (gated)") gives

    E[ψ(θ·x) G(Ux)] = Σ_A F_A ψ̂_{|A|} √(|A|!/A!) Π_l θ_l^{a_l},                       (MI-1)

a generalized Mehler sum (for k = 1 it is Mehler's formula).  Derivatives of G are tensors
too: (∂_l G)_A = √(a_l + 1) F_{A+e_l}.  Every population quantity of a student against such a
teacher is a sum of (MI-1) terms: for an ordinary student E[σ_j y], E[σ'_j y], E[α_jσ''_j y] and
E[σ'_j ∂_l G] (the W-gradient uses E[σ'_j ∇y] = Σ_l u_l E[σ'_j ∂_l G]); SwiGLU students need
a few more (see :mod:`popdyn.swiglu`).

Gated teachers (``Teacher.gated``), s = u_1·x, t = u_2·x:

=============  =========================  ============================================
``gate``       y / κ                      tensor
=============  =========================  ============================================
``id``         s·t                        F_{1,1} = 1 (exact)
``gelu``       GELU(s)·t, GELU = zΦ(z)    F_{a,1} = ĝ_a, a ≤ 200 (closed form in mpmath)
``tanh``       tanh(s)·t                  F_{a,1} = ĝ_a, a ≤ 512 (popdyn.links table)
``relu``       max(s, 0)·t                F_{a,1} = ĝ_a, a ≤ 512 (closed form)
``rotation``   (s² − t²)/2                F_{2,0} = 1/√2, F_{0,2} = −1/√2 (exact)
=============  =========================  ============================================

``rotation`` is the bilinear rotation control: the product s′t′ of the coordinates rotated by
45° (s′ = (s+t)/√2, t′ = (s−t)/√2), i.e. the function s·t written in a frame where the declared
axes u_1, u_2 are *not* its own axes (seed paper 003, Figures 1 and 6, "bilinear rotation
control").  All gated teachers have E[y] = 0 and V_Y = κ²E[F(s)²] (s and t independent).

Accuracy.  Against smooth student units (SiLU gates, silu/gelu/tanh/erf students) the sum
(MI-1) converges fast and the truncated tensor costs at most ‖ψ‖·√tail2.  Against
piecewise-linear students (relu, leaky_relu) the relu gate's series would converge only
algebraically as the student direction approaches the gate axis, so that pair uses closed
forms (:func:`_relu_gate_pl`: the engine's PL pair moments and a conditional-Gaussian formula).
The GELU and tanh gates against PL students use (MI-1) with their tabulated 200 / 512
coefficients (geometric / exp(−c√n) decay); for other non-polynomial tensors against PL
students the truncation is estimated in ``info["error"]``.  Polynomial tensors (id, rotation,
any finite tensor) are exact.

References
----------
Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt): gated teachers st, GELU(s)t,
tanh(s)t, ReLU(s)t and the bilinear rotation control (Figures 1, 5, 6; Table 1);
DESIGN §3 ("multi-index (gated)").
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from . import _validate as V
from ._hermite import unit_coefficients
from ._kernels import swiglu as _ks
from ._moments import UnitSet, cross_moments, moments, student_units

GATES = ("id", "gelu", "tanh", "relu", "rotation")


# ---------------------------------------------------------------------------------- tensors
@dataclass(frozen=True, eq=False)
class HermiteTensor:
    """A sparse normalized Hermite tensor: entries F[idx[e]] = val[e] in k variables.

    Attributes
    ----------
    idx : (E, k) int64 multi-indices; val : (E,) float64 values.
    k : number of variables.  polynomial : whether the tensor is exact (finite).
    tail2 : upper bound on Σ F_A² over the entries *not* stored (0 for polynomials).
    """

    idx: np.ndarray
    val: np.ndarray
    k: int
    polynomial: bool = True
    tail2: float = 0.0

    @classmethod
    def from_dict(cls, entries, k=None, *, tail2=0.0, polynomial=None, name="tensor"):
        if not isinstance(entries, dict) or not entries:
            raise ValueError(f"`{name}` must be a non-empty dict {{multi-index tuple: value}}")
        keys = list(entries)
        kk = len(keys[0]) if isinstance(keys[0], tuple) else None
        if kk is None or any(not isinstance(t, tuple) or len(t) != kk for t in keys):
            raise ValueError(f"`{name}` keys must be tuples of one common length k")
        if k is not None and kk != k:
            raise ValueError(f"`{name}` keys have length {kk} but U has {k} rows")
        idx = np.array(keys, dtype=np.int64).reshape(len(keys), kk)
        if np.any(idx < 0):
            raise ValueError(f"`{name}` multi-indices must be non-negative")
        val = V.array(name + " values", [entries[t] for t in keys], (len(keys),))
        poly = (tail2 == 0.0) if polynomial is None else bool(polynomial)
        return cls(idx, val, kk, poly, float(tail2))

    @classmethod
    def from_array(cls, arr, *, tail2=0.0, polynomial=None, name="tensor"):
        a = np.asarray(arr, dtype=np.float64)
        if a.ndim == 0 or a.size == 0:
            raise ValueError(f"`{name}` must be a k-dimensional array with k >= 1")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"`{name}` must be finite")
        nz = np.argwhere(a != 0.0)
        if nz.shape[0] == 0:
            nz = np.zeros((1, a.ndim), dtype=np.int64)
        poly = (tail2 == 0.0) if polynomial is None else bool(polynomial)
        return cls(nz.astype(np.int64), a[tuple(nz.T)].astype(np.float64), a.ndim, poly, float(tail2))

    @property
    def degree(self) -> int:
        return int(self.idx.sum(axis=1).max())

    @property
    def mean(self) -> float:
        z = np.all(self.idx == 0, axis=1)
        return float(self.val[z].sum())

    @property
    def energy(self) -> float:
        """Σ F_A² over the stored entries (E[G²] for an exact tensor)."""
        return float(np.sum(self.val ** 2))

    def derivative(self, l: int) -> "HermiteTensor":
        """Tensor of ∂G/∂ξ_l: (∂_l G)_A = √(a_l + 1) F_{A+e_l}."""
        keep = self.idx[:, l] > 0
        idx = self.idx[keep].copy()
        val = self.val[keep] * np.sqrt(idx[:, l].astype(np.float64))
        idx[:, l] -= 1
        if idx.shape[0] == 0:
            idx = np.zeros((1, self.k), dtype=np.int64)
            val = np.zeros(1)
        # tail of the derivative: not tracked precisely (an estimate via the degree weight)
        return HermiteTensor(idx, val, self.k, self.polynomial,
                             self.tail2 * (self.degree + 1) if self.tail2 else 0.0)

    @functools.cached_property
    def _packed(self):
        deg = self.idx.sum(axis=1).astype(np.int64)
        lg = np.array([math.lgamma(n + 1) for n in deg]) - np.sum(
            np.vectorize(math.lgamma)(self.idx + 1.0), axis=1)
        coef = self.val * np.exp(0.5 * lg)
        return (np.ascontiguousarray(self.idx), np.ascontiguousarray(coef),
                np.ascontiguousarray(deg))

    def contract(self, T, xi) -> np.ndarray:
        """(MI-1): out[p, j] = Σ_A F_A T[p, j, |A|] √(|A|!/A!) Π_l xi[j, l]^{a_l}."""
        idx, coef, deg = self._packed
        T = np.ascontiguousarray(T, dtype=np.float64)
        out = np.empty(T.shape[:2])
        _ks.tensor_contract(T, np.ascontiguousarray(xi, dtype=np.float64), idx, coef, deg, out)
        return out

    def evaluate(self, xi) -> np.ndarray:
        """G(ξ) at the rows of ``xi`` (n, k), float64 (normalized Hermite recurrences)."""
        xi = np.asarray(xi, dtype=np.float64)
        D = int(self.idx.max()) if self.idx.size else 0
        H = np.empty((xi.shape[0], self.k, D + 1))
        H[:, :, 0] = 1.0
        if D >= 1:
            H[:, :, 1] = xi
        for n in range(1, D):
            H[:, :, n + 1] = (xi * H[:, :, n] - math.sqrt(n) * H[:, :, n - 1]) / math.sqrt(n + 1)
        out = np.zeros(xi.shape[0])
        for A, v in zip(self.idx, self.val):
            term = np.full(xi.shape[0], v)
            for l in range(self.k):
                term = term * H[:, l, A[l]]
            out += term
        return out


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

    from .links import get_link      # links loads mpmath: on first use (CLI start-up)

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
def _tanh_gate():
    from .links import get_link      # links loads mpmath: on first use (CLI start-up)

    lk = get_link("tanh")
    return lk.coefficients_full(lk.N_tab), float(lk.second_moment), float(lk.t2[-1])


def gate_tensor(gate: str) -> tuple:
    """(HermiteTensor, E[y²], scalar gate function) of a gated teacher y = F(s)·t (κ = 1)."""
    V.choice("gate", gate, GATES)
    if gate == "id":
        return HermiteTensor.from_dict({(1, 1): 1.0}), 1.0, lambda s: s
    if gate == "rotation":
        r = 1.0 / math.sqrt(2.0)
        return HermiteTensor.from_dict({(2, 0): r, (0, 2): -r}), 1.0, None
    if gate == "gelu":
        c, e2, tail = _gelu_coeffs()
        fn = lambda s: s * special.ndtr(s)
    elif gate == "tanh":
        c, e2, tail = _tanh_gate()
        fn = np.tanh
    else:
        c, e2, tail = _relu_gate()
        fn = lambda s: np.maximum(s, 0.0)
    idx = np.stack([np.arange(c.size), np.ones(c.size, dtype=np.int64)], axis=1)
    keep = c != 0.0
    return HermiteTensor(idx[keep].astype(np.int64), c[keep].copy(), 2, False, tail), e2, fn


@dataclass(frozen=True, eq=False)
class MultiIndexFunction:
    """G(ξ), ξ ∈ R^k: a Hermite tensor plus exact scalar moments and a pointwise evaluator."""

    name: str
    tensor: HermiteTensor
    mean: float
    second_moment: float
    gate: str | None = None
    _fn: object = None

    @property
    def k(self) -> int:
        return self.tensor.k

    @property
    def variance(self) -> float:
        return max(self.second_moment - self.mean ** 2, 0.0)

    def __call__(self, xi):
        xi = np.asarray(xi, dtype=np.float64)
        if self.gate == "rotation":
            return 0.5 * (xi[:, 0] ** 2 - xi[:, 1] ** 2)
        if self.gate is not None:
            return self._fn(xi[:, 0]) * xi[:, 1]
        return self.tensor.evaluate(xi)


def gated_function(gate: str) -> MultiIndexFunction:
    T, e2, fn = gate_tensor(gate)
    return MultiIndexFunction(f"gated:{gate}", T, 0.0, e2, gate, fn)


def tensor_function(tensor, k: int, *, tail2: float = 0.0) -> MultiIndexFunction:
    tail2 = V.real("tail2", tail2, nonnegative=True)
    if isinstance(tensor, HermiteTensor):
        T = tensor
    elif isinstance(tensor, dict):
        T = HermiteTensor.from_dict(tensor, k, tail2=tail2)
    else:
        T = HermiteTensor.from_array(tensor, tail2=tail2)
    if T.k != k:
        raise ValueError(f"`hermite_tensor` has {T.k} variables but `U` has {k} rows")
    return MultiIndexFunction("multi_index", T, T.mean, T.energy + T.tail2)


# ---------------------------------------------------------------------- ordinary students
def _ordinary_cross(student, params, teacher, rtol):
    """(Ct, Bt, At, Dt, errCt, order) of an ordinary Student against a multi-index teacher.

    Ct = E[σ_j G], Dt = E[σ'_j G], At = E[α_jσ''_j G] (m × 1) and Bt_jl = E[σ'_j ∂_l G]
    (m × k), all from (MI-1) with the student units' normalized coefficients.
    """
    su = student_units(student, params)
    if su.kind == "pl" and teacher.index.gate == "relu":
        Ct, Bt, At, Dt = _relu_gate_pl(su, teacher, rtol)
        return Ct, Bt, At, Dt, np.zeros((su.n, 1)), None
    F = teacher.index.tensor
    deg = F.degree
    if su.kind == "pl":
        n = max(deg, 1) + 1
        uc = unit_coefficients("pl", su.al, su.be, p=float(su.p[0]), q=float(su.q[0]), n=n,
                               rtol=rtol)
    else:
        uc = unit_coefficients("smooth", su.al, su.be, code=su.code, rtol=min(rtol, 1e-16),
                               n=deg + 1 if F.polynomial else None)
    T = np.stack([uc.S, uc.Dd, uc.Dd2])
    xi = su.theta @ teacher.U.T                          # (m, k) directions in the teacher frame
    Y = F.contract(T, xi)
    k = F.k
    Bt = np.empty((su.n, k))
    for l in range(k):
        Bt[:, l] = F.derivative(l).contract(T[1:2], xi)[0]
    # truncation estimate: the student tail beyond the common order against the tensor tail
    err = np.zeros((su.n, 1))
    if not F.polynomial or deg > uc.N:
        # student orders beyond N meet tensor coefficients only below degree deg (if N < deg)
        # or the tensor's tail beyond its table (issue 19: the first term only when N < deg)
        # (Cauchy–Schwarz over the shells n > N: the tensor's energy beyond degree N)
        beyond = float(np.sum(F.val[F.idx.sum(axis=1) > uc.N] ** 2)) + F.tail2
        t2 = np.maximum(np.asarray(uc.tails_S.t2, dtype=float), 0.0)
        head = np.sqrt(t2 * beyond) if deg > uc.N else 0.0
        # the tensor's unstored tail meets only the student's orders beyond its degree
        s_beyond = t2 + (np.sum(uc.S[:, deg + 1:] ** 2, axis=1) if uc.N > deg else 0.0)
        err[:, 0] = head + np.sqrt(s_beyond * F.tail2)
    return Y[0][:, None], Bt, Y[2][:, None], Y[1][:, None], err, uc.N


def _relu_gate_pl(su, teacher, rtol):
    """Exact cross moments of piecewise-linear student units σ = p·relu + q·id against the
    relu-gated teacher G = relu(s)·t (u_1 ⊥ u_2; DESIGN §3 closed forms).

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


def ridge_moments(student, params, teacher, rtol, grad=True):
    """The :class:`popdyn._moments.Moments` of a ridge student against a multi-index teacher:
    the student moments of the engine and the cross moments of :func:`_ordinary_cross` (what
    the ridge family's ``moments`` returns for these teachers)."""
    M = moments(student, params, None, rtol=rtol, grad=grad, cross=False)
    Ct, Bt, At, Dt, err, order = _ordinary_cross(student, params, teacher, rtol)
    M.Ct, M.Bt, M.At, M.Dt, M.errCt = Ct, Bt, At, Dt, err
    if order is not None:
        M.order = max(M.order or 0, order)
    return M


def refit_moments(student, params, teacher, rtol):
    return ridge_moments(student, params, teacher, rtol, grad=False)
