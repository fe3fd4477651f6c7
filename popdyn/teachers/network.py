"""Teacher networks y = Σ_k v_k σ*(u_k·x + b*_k) with arbitrary (non-orthogonal, non-unit) rows
u_k (docs/design.md §3): ridge units of the activation's kind (``pl`` or ``smooth``); the mean and
variance from the engine's exact pair moments of the units."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from .. import _validate as V
from .._hermite import unit_coefficients
from .._moments import UnitSet, teacher_self_moments
from ..activations import Activation, get_activation
from ._base import Teacher, input_rows, register_kind
from .multi_index import HermiteTensor


@register_kind("network")
class NetworkTeacher(Teacher):
    """y = Σ_k v_k σ*(u_k·x + b*_k) (:meth:`popdyn.Teacher.network`)."""

    #: a network teacher always has its activation (``build``)
    activation: Activation

    @classmethod
    def build(cls, activation, V_, U, bias=None, *, negative_slope=0.01):
        act = get_activation(activation, negative_slope)
        U = input_rows(U, orthonormal=False)
        k = U.shape[0]
        v = V.array("V", V_, (k,))
        b = np.zeros(k) if bias is None else V.array("bias", bias, (k,))
        return cls("network", U, v, b, activation=act)

    def exact_moments(self):
        mu, C = teacher_self_moments(self)
        v = self.weights
        mean = float(v @ mu)
        second = float(v @ C @ v)
        # variance as vᵀ(C − μμᵀ)v: no cancellation against the mean
        var = float(v @ (C - np.outer(mu, mu)) @ v)
        return (mean, second, max(var, 0.0))

    def units(self):
        k, act = self.k, self.activation
        al, th, be = self.alpha, np.ascontiguousarray(self.theta), np.ascontiguousarray(self.bias)
        if act.kind == "pl":
            return UnitSet("pl", al, be, th, np.full(k, act.p), np.full(k, act.q))
        return UnitSet("smooth", al, be, th, code=act.code)

    def hermite_terms(self, N):
        act = self.activation
        al, be, th = self.alpha, self.bias, self.theta
        if act.kind == "pl":
            uc = unit_coefficients("pl", al, be, p=act.p, q=act.q, n=N + 3)
        else:
            uc = unit_coefficients("smooth", al, be, code=act.code, n=N + 3, rtol=1e-16)
        return [(float(self.weights[k]), th[k:k + 1], HermiteTensor.one_d(uc.S[k, :N + 4]))
                for k in range(self.k)]

    @cached_property
    def subspace(self):
        """Orthonormal basis (rows) of span{u_k} (SVD; the rows need not be orthonormal)."""
        u, s, vt = np.linalg.svd(self.U, full_matrices=False)
        rank = int(np.sum(s > s.max() * 1e-12)) if s.size and s.max() > 0 else 0
        return vt[:rank]

    def __call__(self, X):
        return self.activation(X @ self.U.T + self.bias) @ self.weights

    def describe(self):
        return {"kind": "network", "activation": self.activation.name,
                "negative_slope": self.activation.negative_slope,
                "V": self.weights.tolist(), "U": self.U.tolist(), "bias": self.bias.tolist()}
