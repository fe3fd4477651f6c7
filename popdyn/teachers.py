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
from ._moments import teacher_self_moments
from .activations import Activation, get_activation
from .multi_index import gated_function, tensor_function


@dataclass(frozen=True, eq=False)
class Teacher:
    """A teacher function of x ~ N(0, I_d).  Build with :meth:`additive`, :meth:`network`,
    :meth:`gated` or :meth:`multi_index`."""

    kind: str
    U: np.ndarray                  # (k, d) raw directions (rows)
    weights: np.ndarray            # κ (additive) or v (network)
    bias: np.ndarray               # (k,) zeros for additive
    link: object = None            # popdyn.links.Link for additive
    activation: Activation | None = None  # for network
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    index: object = None           # popdyn.multi_index.MultiIndexFunction for multi_index

    # ------------------------------------------------------------------ constructors
    @classmethod
    def additive(cls, link, U, kappa=None) -> "Teacher":
        """y = Σ_k κ_k g(u_k·x) with orthonormal rows ``U`` (r, d) and link ``g``.

        ``link`` is a name (``h1``…``h6``, ``h3+0.3h2``, ``relu``, ``tanh``, ``abs``, ``sin``,
        ``silu``, ``silu_centered``, ``gaussian_bump``, ``damped_cubic:a``) or a
        :class:`popdyn.links.Link` (e.g. a positive mixture).  ``kappa`` defaults to ones.
        The teacher is *not* normalized; use :meth:`normalized` explicitly for unit variance.
        """

        from .links import get_link      # links loads mpmath: on first use (CLI start-up)

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

    @classmethod
    def gated(cls, gate, U, kappa: float = 1.0) -> "Teacher":
        """Gated teacher y = κ·F(s)·t with s = u_1·x, t = u_2·x (``U``: 2 orthonormal rows).

        Parameters
        ----------
        gate : {"id", "gelu", "tanh", "relu", "rotation"}
            F = identity (y = st), exact GELU zΦ(z), tanh, max(z, 0); ``"rotation"`` is the
            bilinear rotation control y = κ(s² − t²)/2 (= s′t′ in the frame rotated by 45°).
        U : array_like (2, d)
            Orthonormal rows u_1 (gate axis) and u_2 (value axis).
        kappa : float
            Output scale κ (not normalized; use :meth:`normalized`).

        Notes
        -----
        E[y] = 0 and V_Y = κ²E[F(Z)²].  The teacher is stored by its normalized Hermite tensor
        (exact for ``id`` and ``rotation``; truncated with a tail bound otherwise) and every
        population moment reduces to bivariate scalar moments (DESIGN §3); see
        :mod:`popdyn.multi_index`.

        References
        ----------
        Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt), gated teachers st, GELU(s)t,
        tanh(s)t, ReLU(s)t and the bilinear rotation control (Figures 1, 5, 6); DESIGN §3.
        """

        U = V.array("U", U, (2, None))
        if U.shape[1] < 2:
            raise ValueError(f"`U` must have shape (2, d) with d >= 2, got {U.shape}")
        V.orthonormal_rows("U", U)
        fn = gated_function(gate)
        kappa = V.real("kappa", kappa)
        return cls("multi_index", U, np.array([kappa]), np.zeros(2), index=fn)

    @classmethod
    def multi_index(cls, hermite_tensor, U, kappa: float = 1.0, *, tail2: float = 0.0) -> "Teacher":
        """Multi-index teacher y = κ·G(u_1·x, …, u_k·x) from its normalized Hermite tensor.

        Parameters
        ----------
        hermite_tensor : dict or array_like
            F_A = E[G(ξ) Π_l h_{a_l}(ξ_l)] with h_n = He_n/√n!: a dict ``{(a_1, …, a_k): F_A}``
            or a dense k-dimensional array indexed by A.  G = Σ_A F_A Π_l h_{a_l}(ξ_l).
        U : array_like (k, d)
            Orthonormal rows.
        kappa : float
            Output scale.
        tail2 : float
            Upper bound on Σ F_A² of the entries not given (0: the tensor is exact, i.e. G is
            the polynomial given).  It enters V_Y and the error estimates.

        Examples
        --------
        >>> import numpy as np, popdyn
        >>> T = popdyn.Teacher.multi_index({(1, 1): 1.0}, np.eye(3)[:2])   # y = s·t
        >>> T.mean, T.variance
        (0.0, 1.0)

        References
        ----------
        DESIGN §3 (E[σ(αθ·x+β) He_a(s) He_b(t)] = c_{a+b} θ_s^a θ_t^b); :mod:`popdyn.multi_index`.
        """

        U = V.array("U", U, (None, None))
        if U.shape[0] == 0 or U.shape[1] == 0:
            raise ValueError(f"`U` must have at least one row and one column, got shape {U.shape}")
        V.orthonormal_rows("U", U)
        fn = tensor_function(hermite_tensor, U.shape[0], tail2=tail2)
        kappa = V.real("kappa", kappa)
        return cls("multi_index", U, np.array([kappa]), np.zeros(U.shape[0]), index=fn)

    def normalized(self) -> "Teacher":
        """The same teacher rescaled to unit variance (an explicit option, never silent)."""
        sd = np.sqrt(self.variance)
        if not sd > 0:
            raise ValueError("cannot normalize a teacher with zero variance")
        if self.kind == "multi_index":
            return Teacher(self.kind, self.U, self.weights / sd, self.bias, index=self.index)
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
        if self.kind in ("additive", "multi_index"):
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
            if self.kind == "multi_index":
                k, f = float(self.weights[0]), self.index
                self._cache["m"] = (k * f.mean, k * k * f.second_moment, k * k * f.variance)
            elif self.kind == "additive":
                g = self.link
                k1 = float(np.sum(self.weights))
                k2 = float(np.sum(self.weights ** 2))
                mean = g.mean * k1
                var = g.variance * k2
                self._cache["m"] = (mean, var + mean * mean, var)
            else:
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
        if self.kind == "multi_index":
            return self.weights[0] * self.index(Z)
        if self.kind == "additive":
            return self.link(Z) @ self.weights
        return self.activation(Z) @ self.weights

    def describe(self) -> dict:
        """Plain-data description (for configs, stores and references)."""
        if self.kind == "multi_index":
            f = self.index
            out = {"kind": "multi_index", "function": f.name, "U": self.U.tolist(),
                   "kappa": float(self.weights[0])}
            if f.gate is None:
                out["tensor"] = {str(tuple(int(a) for a in A)): float(v)
                                 for A, v in zip(f.tensor.idx, f.tensor.val)}
                out["tail2"] = f.tensor.tail2
            return out
        if self.kind == "additive":
            return {"kind": "additive", "link": self.link.name, "U": self.U.tolist(),
                    "kappa": self.weights.tolist()}
        return {"kind": "network", "activation": self.activation.name,
                "negative_slope": self.activation.negative_slope,
                "V": self.weights.tolist(), "U": self.U.tolist(), "bias": self.bias.tolist()}
