"""Additive single-index teachers y = Σ_k κ_k g(u_k·x): orthonormal rows u_k and a link g from
:mod:`popdyn.links` (docs/design.md §3).  The mean and variance are exact (the link's tabulated exact
moments); each term is one ridge unit of kind ``link`` (α = 1, β = 0)."""
from __future__ import annotations

import numpy as np

from .. import _validate as V
from .._moments import UnitSet
from ._base import Teacher, effective_degree, input_rows, register_kind
from .multi_index import HermiteTensor


@register_kind("additive")
class AdditiveTeacher(Teacher):
    """y = Σ_k κ_k g(u_k·x) (:meth:`popdyn.Teacher.additive`)."""

    @classmethod
    def build(cls, link, U, kappa=None):
        from ..links import get_link      # links loads mpmath: on first use (CLI start-up)

        U = input_rows(U, orthonormal=True)
        r = U.shape[0]
        kappa = np.ones(r) if kappa is None else V.array("kappa", kappa, (r,))
        return cls("additive", U, kappa, np.zeros(r), link=get_link(link))

    def exact_moments(self):
        g = self.link
        k1 = float(np.sum(self.weights))
        k2 = float(np.sum(self.weights ** 2))
        mean = g.mean * k1
        var = g.variance * k2
        return (mean, var + mean * mean, var)

    def units(self):
        k = self.k
        return UnitSet("link", np.ones(k), np.zeros(k), np.ascontiguousarray(self.U), link=self.link)

    def hermite_terms(self, N):
        lk = self.link
        if lk.p == 0.0 and lk.is_polynomial:
            Nk = max(lk.N_tab, 1)
        elif lk.is_polynomial:
            Nk = N + 3
        else:
            Nk = min(N + 3, lk.N_tab)
        F = HermiteTensor.one_d(lk.coefficients_full(Nk))
        return [(float(self.weights[k]), self.U[k:k + 1], F) for k in range(self.k)]

    def hermite_degree(self):
        lk = self.link
        if lk.p == 0.0 and lk.is_polynomial:
            return max(lk.N_tab, 1)
        if lk.p == 0.0:
            c = lk.coefficients_full(lk.N_tab)
            return effective_degree(np.abs(c), float(lk.t2[-1]), lk.second_moment)
        return None

    def __call__(self, X):
        return self.link(X @ self.U.T + self.bias) @ self.weights

    def describe(self):
        return {"kind": "additive", "link": self.link.name, "U": self.U.tolist(),
                "kappa": self.weights.tolist()}
