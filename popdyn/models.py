"""Two-layer students and their parameters (DESIGN §2).

f(x) = s · Σ_j a_j σ(w_j·x + b_j) + c,   s = 1 ("standard") or 1/m ("mean_field").
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import _validate as V
from .activations import Activation, get_activation

SCALINGS = ("standard", "mean_field")
#: initialization conventions: ``norm`` -- W_jk ~ N(0, s²/d), so |w_j| ≈ s (the default);
#: ``entry`` -- every entry IID N(0, s²), so |w_j| ≈ s·√d (seed paper 003, abstract: "small IID
#: Gaussian initialization"; docs/protocol.md)
INIT_CONVENTIONS = ("norm", "entry")


def init_width(convention: str, scale: float, d: int) -> float:
    """Standard deviation of one first-layer entry under an initialization ``convention``.

    ``"norm"``: scale/√d (rows of norm ≈ scale); ``"entry"``: scale (IID entries of scale s).
    Raises ``ValueError`` naming ``convention`` and the valid choices for anything else.
    """
    V.choice("convention", convention, INIT_CONVENTIONS)
    return scale / np.sqrt(d) if convention == "norm" else scale


class ParamArrays:
    """Methods shared by the parameter containers (:class:`Params`, :class:`popdyn.SwiGLUParams`):
    the array fields named in ``_ARRAYS`` -- ``a`` (m,) first, then a (m, d) array -- and the
    intercept ``c``."""

    _ARRAYS: tuple = ()

    @property
    def m(self) -> int:
        return self.a.shape[0]

    @property
    def d(self) -> int:
        return getattr(self, self._ARRAYS[1]).shape[1]

    def _arrays(self):
        return [getattr(self, f) for f in self._ARRAYS]

    def replace(self, **kw):
        return replace(self, **kw)

    def copy(self):
        return type(self)(*[x.copy() for x in self._arrays()], self.c)

    def flat(self) -> np.ndarray:
        """All parameters as one vector (the arrays in field order, row-major, then c)."""
        return np.concatenate([x.ravel() for x in self._arrays()] + [[self.c]])

    def is_finite(self) -> bool:
        return bool(all(np.all(np.isfinite(x)) for x in self._arrays()) and np.isfinite(self.c))

    def to_dict(self) -> dict:
        out = {f: x.tolist() for f, x in zip(self._ARRAYS, self._arrays())}
        out["c"] = self.c
        return out


@dataclass(frozen=True)
class Params(ParamArrays):
    """Parameters of a two-layer student: head ``a`` (m,), first layer ``W`` (m, d), biases ``b`` (m,),
    intercept ``c`` (float).  Also used for gradients (same shapes).

    Arrays are stored as float64 copies; treat instances as immutable (use :meth:`replace`).
    """

    a: np.ndarray
    W: np.ndarray
    b: np.ndarray
    c: float = 0.0
    _ARRAYS = ("a", "W", "b")

    def __post_init__(self):
        a = np.array(self.a, dtype=np.float64)
        W = np.array(self.W, dtype=np.float64)
        b = np.array(self.b, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"`a` must be 1-dimensional, got shape {a.shape}")
        if W.ndim != 2 or W.shape[0] != a.shape[0]:
            raise ValueError(f"`W` must have shape (m, d) = ({a.shape[0]}, d), got {W.shape}")
        if b.shape != a.shape:
            raise ValueError(f"`b` must have shape ({a.shape[0]},), got {b.shape}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "c", float(self.c))

    @classmethod
    def from_flat(cls, v: np.ndarray, m: int, d: int) -> "Params":
        v = np.asarray(v, dtype=np.float64)
        return cls(v[:m], v[m:m + m * d].reshape(m, d), v[m + m * d:2 * m + m * d], float(v[-1]))


@dataclass(frozen=True)
class Student:
    """A two-layer student ``f(x) = s Σ_j a_j σ(w_j·x + b_j) + c`` on x ~ N(0, I_d).

    Parameters
    ----------
    d, m : int
        Input dimension and width (> 0).
    activation : str
        One of ``relu``, ``leaky_relu``, ``silu``, ``gelu``, ``tanh``, ``erf`` (DESIGN §2).
    negative_slope : float
        Slope s of ``leaky_relu`` (max(t, s t)); ignored otherwise.
    bias : bool
        Whether neurons have trainable biases b_j (if False, b is fixed at 0).
    intercept : bool
        Whether the output intercept c is trainable (if False, c is fixed at 0).
    scaling : {"standard", "mean_field"}
        s = 1 or s = 1/m.
    """

    d: int
    m: int
    activation: str = "relu"
    negative_slope: float = 0.01
    bias: bool = True
    intercept: bool = True
    scaling: str = "standard"
    act: Activation = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        V.positive_int("d", self.d)
        V.positive_int("m", self.m)
        V.choice("scaling", self.scaling, SCALINGS)
        if not isinstance(self.bias, bool):
            raise TypeError(f"`bias` must be a bool, got {self.bias!r}")
        if not isinstance(self.intercept, bool):
            raise TypeError(f"`intercept` must be a bool, got {self.intercept!r}")
        object.__setattr__(self, "act", get_activation(self.activation, self.negative_slope))

    @property
    def s(self) -> float:
        """Output scale: 1 (standard) or 1/m (mean_field)."""
        return 1.0 if self.scaling == "standard" else 1.0 / self.m

    def replace(self, **kw) -> "Student":
        return replace(self, **kw)

    def check(self, params: Params, name: str = "params") -> Params:
        """Validate ``params`` against this student (shapes, finiteness, fixed b / c)."""
        if not isinstance(params, Params):
            raise TypeError(f"`{name}` must be a popdyn.Params, got {type(params).__name__}")
        if params.W.shape != (self.m, self.d):
            raise ValueError(f"`{name}.W` must have shape (m, d) = ({self.m}, {self.d}), got {params.W.shape}")
        for nm, arr in (("a", params.a), ("W", params.W), ("b", params.b)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"`{name}.{nm}` must be finite (contains NaN or inf)")
        if not np.isfinite(params.c):
            raise ValueError(f"`{name}.c` must be finite, got {params.c}")
        if not self.bias and np.any(params.b != 0):
            raise ValueError(f"`{name}.b` must be zero for a student with bias=False")
        if not self.intercept and params.c != 0:
            raise ValueError(f"`{name}.c` must be 0 for a student with intercept=False")
        return params

    def init(self, seed: int, scale: float, teacher=None, *, convention: str = "norm") -> Params:
        """Deterministic small Gaussian initialization.

        a_j ~ N(0, scale²), W_jk ~ N(0, scale²/d) (so |w_j| ≈ scale), b_j ~ N(0, scale²) if
        ``bias`` else 0, drawn in that order from ``numpy.random.default_rng(seed)`` (PCG64:
        identical on every machine and run).  ``convention="entry"`` draws W_jk ~ N(0, scale²)
        instead (every entry IID of scale s, |w_j| ≈ scale·√d: the seed paper's "small IID
        Gaussian initialization", abstract, line 15); the draws are the same standard normals, so
        the two conventions differ exactly by the factor √d on W.  The intercept is 0, or -- when ``teacher`` is given
        and the intercept is trainable -- fitted exactly, c = E[y] − s Σ_j a_j E[σ_j], so that the
        normalized loss starts at ≈ 1 (DESIGN §2).
        """
        seed = V.nonneg_int("seed", seed)
        scale = V.real("scale", scale, positive=True)
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(self.m) * scale
        W = rng.standard_normal((self.m, self.d)) * init_width(convention, scale, self.d)
        b = rng.standard_normal(self.m) * scale
        if not self.bias:
            b = np.zeros(self.m)
        p = Params(a, W, b, 0.0)
        if teacher is not None and self.intercept:
            from .objective import fit_intercept
            p = fit_intercept(self, p, teacher)
        return p

    def __call__(self, params: Params, X: np.ndarray) -> np.ndarray:
        """Evaluate f at the rows of ``X`` (n, d) -- for Monte Carlo and finite-sample training."""
        Z = X @ params.W.T + params.b
        return self.s * (self.act(Z) @ params.a) + params.c
