"""Teachers: additive single-index sums and teacher networks (DESIGN §3).

* additive:  y = Σ_k κ_k g(u_k·x), orthonormal rows u_k, a link g from :mod:`popdyn.links`;
* network:   y = Σ_k v_k σ*(u_k·x + b*_k), arbitrary (non-orthogonal, non-unit) rows u_k.

Both are sums of *ridge units* v_k φ_k(α_k θ_k·x + β_k); the moment engine only sees those units.
The mean E[y] and variance V_Y are exact (closed forms / tabulated exact moments).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import _validate as V
from .activations import Activation, get_activation


@dataclass(frozen=True, eq=False)
class Teacher:
    """A teacher function of x ~ N(0, I_d).  Build with :meth:`additive` or :meth:`network`."""

    kind: str
    U: np.ndarray                  # (k, d) raw directions (rows)
    weights: np.ndarray            # κ (additive) or v (network)
    bias: np.ndarray               # (k,) zeros for additive
    link: object = None            # popdyn.links.Link for additive
    activation: Activation | None = None  # for network
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def additive(cls, link, U, kappa=None) -> "Teacher":
        """y = Σ_k κ_k g(u_k·x) with orthonormal rows ``U`` (r, d) and link ``g``.

        ``link`` is a name (``h1``…``h6``, ``h3+0.3h2``, ``relu``, ``tanh``, ``abs``, ``sin``,
        ``silu``, ``silu_centered``, ``gaussian_bump``, ``damped_cubic:a``) or a
        :class:`popdyn.links.Link` (e.g. a positive mixture).  ``kappa`` defaults to ones.
        The teacher is *not* normalized; use :meth:`normalized` explicitly for unit variance.
        """
        from .links import get_link

        U = V.array("U", U, (None, None))
        if U.shape[0] == 0 or U.shape[1] == 0:
            raise ValueError(f"`U` must have at least one row and one column, got shape {U.shape}")
        V.orthonormal_rows("U", U)
        r = U.shape[0]
        kappa = np.ones(r) if kappa is None else V.array("kappa", kappa, (r,))
        g = get_link(link)
        return cls("additive", U, kappa, np.zeros(r), link=g)

    @classmethod
    def network(cls, activation, V_, U, bias=None, *, negative_slope: float = 0.01) -> "Teacher":
        """y = Σ_k v_k σ*(u_k·x + b*_k): a teacher network with output weights ``V_`` (k,),
        rows ``U`` (k, d) (need not be orthogonal or unit) and biases ``bias`` (k,) (default 0)."""
        act = get_activation(activation, negative_slope)
        U = V.array("U", U, (None, None))
        if U.shape[0] == 0 or U.shape[1] == 0:
            raise ValueError(f"`U` must have at least one row and one column, got shape {U.shape}")
        k = U.shape[0]
        v = V.array("V", V_, (k,))
        b = np.zeros(k) if bias is None else V.array("bias", bias, (k,))
        return cls("network", U, v, b, activation=act)

    def normalized(self) -> "Teacher":
        """The same teacher rescaled to unit variance (an explicit option, never silent)."""
        sd = np.sqrt(self.variance)
        if not sd > 0:
            raise ValueError("cannot normalize a teacher with zero variance")
        return Teacher(self.kind, self.U, self.weights / sd, self.bias, self.link, self.activation)

    # ------------------------------------------------------------------ geometry
    @property
    def d(self) -> int:
        return self.U.shape[1]

    @property
    def k(self) -> int:
        return self.U.shape[0]

    @cached_property
    def alpha(self) -> np.ndarray:
        return np.linalg.norm(self.U, axis=1)

    @cached_property
    def theta(self) -> np.ndarray:
        al = self.alpha
        th = np.zeros_like(self.U)
        ok = al > 0
        th[ok] = self.U[ok] / al[ok, None]
        return th

    @cached_property
    def subspace(self) -> np.ndarray:
        """Orthonormal basis (rows) of span{u_k}: the teacher subspace used by the diagnostics."""
        if self.kind == "additive":
            return self.U.copy()
        u, s, vt = np.linalg.svd(self.U, full_matrices=False)
        rank = int(np.sum(s > s.max() * 1e-12)) if s.size and s.max() > 0 else 0
        return vt[:rank]

    # ------------------------------------------------------------------ moments
    @property
    def mean(self) -> float:
        """E[y] (exact)."""
        return self._moments()[0]

    @property
    def second_moment(self) -> float:
        """E[y²] (exact)."""
        return self._moments()[1]

    @property
    def variance(self) -> float:
        """V_Y = Var(y) (exact)."""
        return self._moments()[2]

    def _moments(self):
        if "m" not in self._cache:
            if self.kind == "additive":
                g = self.link
                k1 = float(np.sum(self.weights))
                k2 = float(np.sum(self.weights ** 2))
                mean = g.mean * k1
                var = g.variance * k2
                self._cache["m"] = (mean, var + mean * mean, var)
            else:
                from ._moments import teacher_self_moments
                mu, C = teacher_self_moments(self)
                v = self.weights
                mean = float(v @ mu)
                second = float(v @ C @ v)
                # variance as vᵀ(C − μμᵀ)v: no cancellation against the mean
                var = float(v @ (C - np.outer(mu, mu)) @ v)
                self._cache["m"] = (mean, second, max(var, 0.0))
        return self._cache["m"]

    # ------------------------------------------------------------------ evaluation
    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Evaluate y at the rows of ``X`` (n, d)."""
        Z = X @ self.U.T + self.bias
        if self.kind == "additive":
            return self.link(Z) @ self.weights
        return self.activation(Z) @ self.weights

    def describe(self) -> dict:
        """Plain-data description (for configs, stores and references)."""
        if self.kind == "additive":
            return {"kind": "additive", "link": self.link.name, "U": self.U.tolist(),
                    "kappa": self.weights.tolist()}
        return {"kind": "network", "activation": self.activation.name,
                "negative_slope": self.activation.negative_slope,
                "V": self.weights.tolist(), "U": self.U.tolist(), "bias": self.bias.tolist()}
