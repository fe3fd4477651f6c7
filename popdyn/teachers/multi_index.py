r"""Multi-index (gated) teachers y = κ·G(u_1·x, …, u_k·x) given by their Hermite tensor.

A multi-index function of ξ = Ux (U: k orthonormal rows) is stored by its *normalized Hermite
tensor* F_A = E[G(ξ) h_A(ξ)], h_A(ξ) = Π_l h_{a_l}(ξ_l), h_n = He_n/√n! (docs/design.md §2), so that
G = Σ_A F_A h_A.  Exact (finite) for polynomials; for a non-polynomial gate the tensor is
truncated at a tabulated order with a stated L² tail bound ``tail2`` = Σ_{A beyond} F_A².

Reduction to scalar moments (docs/design.md §3): for any ridge unit ψ(θ·x) with |θ| = 1 and normalized
coefficients ψ̂_n = E[ψ(z) h_n(z)], the identity E[ψ(θ·x) He_{A}(Ux)] = c_{|A|} Π_l θ_l^{a_l}
(θ_l = u_l·θ; docs/design.md §3, "multi-index (gated)") gives

    E[ψ(θ·x) G(Ux)] = Σ_A F_A ψ̂_{|A|} √(|A|!/A!) Π_l θ_l^{a_l},                       (MI-1)

a generalized Mehler sum (for k = 1 it is Mehler's formula).  Derivatives of G are tensors
too: (∂_l G)_A = √(a_l + 1) F_{A+e_l}.  Every population quantity of a student against such a
teacher is a sum of (MI-1) terms: for an ordinary student E[σ_j y], E[σ'_j y], E[α_jσ''_j y] and
E[σ'_j ∂_l G] (the W-gradient uses E[σ'_j ∇y] = Σ_l u_l E[σ'_j ∂_l G]); SwiGLU students need
a few more (see :mod:`popdyn.swiglu`).

Gated teachers (``Teacher.gated``, :mod:`popdyn.teachers.gated`) are multi-index teachers of
k = 2 variables with a tabulated tensor.

References
----------
Kumar (arXiv 2609.39408): gated teachers st, GELU(s)t, tanh(s)t, ReLU(s)t and the bilinear
rotation control (Figures 1, 5, 6; Table 1);
docs/design.md §3 ("multi-index (gated)").
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from .._hermite import unit_coefficients
from .._kernels import swiglu as _ks
from ._base import Teacher, effective_degree, input_rows, register_kind


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

    @classmethod
    def one_d(cls, c):
        """The tensor of one variable with the coefficients ``c`` (its non-zero entries)."""
        c = np.asarray(c, dtype=np.float64)
        nz = np.flatnonzero(c != 0.0)
        if nz.size == 0:
            nz = np.zeros(1, dtype=np.int64)
        return cls(nz[:, None].astype(np.int64), c[nz].copy(), 1)

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


# ---------------------------------------------------------------------------------- teachers
@register_kind("multi_index")
class MultiIndexTeacher(Teacher):
    """y = κ·G(u_1·x, …, u_k·x) (:meth:`popdyn.Teacher.multi_index`): not a sum of ridge units;
    every moment against a student unit is a sum of (MI-1) terms (module docstring)."""

    ridge = False

    @classmethod
    def build(cls, hermite_tensor, U, kappa=1.0, *, tail2=0.0):
        U = input_rows(U, orthonormal=True)
        fn = tensor_function(hermite_tensor, U.shape[0], tail2=tail2)
        kappa = V.real("kappa", kappa)
        return cls("multi_index", U, np.array([kappa]), np.zeros(U.shape[0]), index=fn)

    def exact_moments(self):
        k, f = float(self.weights[0]), self.index
        return (k * f.mean, k * k * f.second_moment, k * k * f.variance)

    def units(self):
        return None

    def cross(self, su, rtol):
        """(Ct, Bt, At, Dt, errCt, order) of ridge student units ``su`` against y.

        Ct = E[σ_j G], Dt = E[σ'_j G], At = E[α_jσ''_j G] (m × 1) and Bt_jl = E[σ'_j ∂_l G]
        (m × k), all from (MI-1) with the student units' normalized coefficients.
        """
        F = self.index.tensor
        deg = F.degree
        if su.kind == "pl":
            n = max(deg, 1) + 1
            uc = unit_coefficients("pl", su.al, su.be, p=float(su.p[0]), q=float(su.q[0]), n=n,
                                   rtol=rtol)
        else:
            uc = unit_coefficients("smooth", su.al, su.be, code=su.code, rtol=min(rtol, 1e-16),
                                   n=deg + 1 if F.polynomial else None)
        T = np.stack([uc.S, uc.Dd, uc.Dd2])
        xi = su.theta @ self.U.T                          # (m, k) directions in the teacher frame
        Y = F.contract(T, xi)
        k = F.k
        Bt = np.empty((su.n, k))
        for l in range(k):
            Bt[:, l] = F.derivative(l).contract(T[1:2], xi)[0]
        # truncation estimate: the student tail beyond the common order against the tensor tail
        err = np.zeros((su.n, 1))
        if not F.polynomial or deg > uc.N:
            # student orders beyond N meet tensor coefficients only below degree deg (if N < deg)
            # or the tensor's tail beyond its table (the first term only when N < deg)
            # (Cauchy–Schwarz over the shells n > N: the tensor's energy beyond degree N)
            beyond = float(np.sum(F.val[F.idx.sum(axis=1) > uc.N] ** 2)) + F.tail2
            t2 = np.maximum(np.asarray(uc.tails_S.t2, dtype=float), 0.0)
            head = np.sqrt(t2 * beyond) if deg > uc.N else 0.0
            # the tensor's unstored tail meets only the student's orders beyond its degree
            s_beyond = t2 + (np.sum(uc.S[:, deg + 1:] ** 2, axis=1) if uc.N > deg else 0.0)
            err[:, 0] = head + np.sqrt(s_beyond * F.tail2)
        return Y[0][:, None], Bt, Y[2][:, None], Y[1][:, None], err, uc.N

    def hermite_terms(self, N):
        return [(float(self.weights[0]), self.U, self.index.tensor)]

    def hermite_degree(self):
        F = self.index.tensor
        if F.polynomial:
            return F.degree
        deg = F.idx.sum(axis=1)
        shells = np.zeros(int(deg.max()) + 1)
        np.add.at(shells, deg, F.val ** 2)
        return effective_degree(np.sqrt(shells), F.tail2, F.energy + F.tail2)

    def __call__(self, X):
        return self.weights[0] * self.index(X @ self.U.T + self.bias)

    def describe(self):
        f = self.index
        out = {"kind": "multi_index", "function": f.name, "U": self.U.tolist(),
               "kappa": float(self.weights[0])}
        if f.gate is None:
            out["tensor"] = {str(tuple(int(a) for a in A)): float(v)
                             for A, v in zip(f.tensor.idx, f.tensor.val)}
            out["tail2"] = f.tensor.tail2
        return out
