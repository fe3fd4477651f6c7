"""Two-layer students and their parameters (docs/design.md §2).

f(x) = s · Σ_j a_j σ(w_j·x + b_j) + c,   s = 1 ("standard") or 1/m ("mean_field").
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import math
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
from numpy.typing import ArrayLike

from . import _validate as V
from . import families as _families
from .activations import Activation, get_activation
from .teachers import Teacher

if TYPE_CHECKING:
    from .family import StudentFamily

SCALINGS = ("standard", "mean_field")
#: initialization conventions: ``norm`` -- W_jk ~ N(0, s²/d), so |w_j| ≈ s (the default);
#: ``entry`` -- every entry IID N(0, s²), so |w_j| ≈ s·√d (Kumar (arXiv 2609.39408), abstract: "small IID
#: Gaussian initialization"; docs/protocol.md); ``iid`` -- every scalar entry of a, W and b IID
#: N(0, s²/d), the same s for heads, weights and biases (Kumar (arXiv 2609.39408) §3 below
#: eq. (2), §5 and App. A)
INIT_CONVENTIONS = ("norm", "entry", "iid")


def init_width(convention: str, scale: float, d: int) -> float:
    """Standard deviation of one first-layer entry under an initialization ``convention``.

    ``"norm"`` and ``"iid"``: scale/√d; ``"entry"``: scale (IID entries of scale s).
    Raises ``ValueError`` naming ``convention`` and the valid choices for anything else.
    """
    V.choice("convention", convention, INIT_CONVENTIONS)
    return scale if convention == "entry" else scale / np.sqrt(d)


def init_head_width(convention: str, scale: float, d: int) -> float:
    """Standard deviation of a head a_j and of a bias b_j under ``convention``: scale, or
    scale/√d for ``"iid"`` (every scalar entry N(0, s²/d): Kumar §3)."""
    V.choice("convention", convention, INIT_CONVENTIONS)
    return scale / np.sqrt(d) if convention == "iid" else scale


#: named students (:meth:`Student.preset`)
PRESETS: dict[str, dict[str, Any]] = {
    # Kumar (arXiv 2609.39408) §3 eqs. (2)-(3), App. D eq. (43): f(x) = (1/m) Σ_j A_j
    # relu(W_j·x + B_j), trained biases, no intercept
    "paper_relu": dict(activation="relu", bias=True, intercept=False, scaling="mean_field"),
}


class ParamArrays:
    """The parameter container of every student family, keyed by its fields: the array fields
    named in ``_ARRAYS`` -- ``a`` (m,) first, then a (m, d) array -- and the intercept ``c``;
    ``_DIMS`` gives each array field's shape in the student's sizes (``{"W": ("m", "d")}``).

    A family's container is a frozen dataclass subclass with those fields (or one made by
    :func:`param_container`); it gets float64 storage and shape checks (:meth:`__post_init__`),
    flattening (:meth:`flat`, :meth:`from_flat`), copies and finiteness tests from here, and
    the family protocol's update and step norm from :class:`popdyn.families.BoundFamily`.
    :class:`Params`, :class:`popdyn.SwiGLUParams` and :class:`popdyn.SwiGLUBiasParams` keep
    their own checks (their messages)."""

    _ARRAYS: tuple = ()
    _DIMS: ClassVar[dict] = {}
    a: np.ndarray
    c: float

    def __post_init__(self):
        sizes: dict = {}
        for f in self._ARRAYS:
            x = np.array(getattr(self, f), dtype=np.float64)
            dims = self._DIMS[f]
            if x.ndim != len(dims):
                raise ValueError(f"`{f}` must have {len(dims)} dimension(s) {dims}, got shape "
                                 f"{x.shape}")
            for n, k in zip(dims, x.shape):
                if sizes.setdefault(n, k) != k:
                    raise ValueError(f"`{f}` must have shape ({', '.join(dims)}) with {n} = "
                                     f"{sizes[n]}, got {x.shape}")
            object.__setattr__(self, f, x)
        object.__setattr__(self, "c", float(self.c))

    @classmethod
    def from_flat(cls, v: ArrayLike, m: int, d: int) -> Self:
        """The inverse of :meth:`flat` for width ``m`` and input dimension ``d``."""
        v = np.asarray(v, dtype=np.float64)
        sizes, out, k = {"m": m, "d": d}, {}, 0
        for f in cls._ARRAYS:
            shape = tuple(sizes[n] for n in cls._DIMS[f])
            n = math.prod(shape)
            out[f] = v[k:k + n].reshape(shape)
            k += n
        return cls(**out, c=float(v[-1]))
    __dataclass_fields__: ClassVar[dict[str, Any]]   # the containers are dataclasses

    if TYPE_CHECKING:
        def __init__(self, *args: Any, **kw: Any) -> None: ...   # the dataclass's

    @property
    def m(self) -> int:
        return self.a.shape[0]

    @property
    def d(self) -> int:
        return getattr(self, self._ARRAYS[1]).shape[1]

    def _arrays(self):
        return [getattr(self, f) for f in self._ARRAYS]

    def replace(self, **kw: Any) -> Self:
        return replace(self, **kw)

    def copy(self) -> Self:
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
    intercept ``c`` (float) and the linear skip ``v`` (d,) of a ``skip=True`` student (zeros
    otherwise; None gives zeros).  Also used for gradients (same shapes).

    :meth:`flat` / :meth:`from_flat` and :meth:`to_dict` cover (a, W, b, c) only, as before the
    skip existed (stored layouts unchanged); the skip family handles ``v`` itself.

    Arrays are stored as float64 copies; treat instances as immutable (use :meth:`replace`).
    """

    a: np.ndarray
    W: np.ndarray
    b: np.ndarray
    c: float = 0.0
    #: (ignore[assignment]: ``__post_init__`` replaces None by zeros, so ``v`` is an array)
    v: np.ndarray = None  # type: ignore[assignment]
    _ARRAYS = ("a", "W", "b")
    #: (``v`` is stored but not flattened: the layouts predate the skip family)
    _DIMS = {"a": ("m",), "W": ("m", "d"), "b": ("m",), "v": ("d",)}

    if TYPE_CHECKING:   # the dataclass's __init__, which takes array_like (stored as float64)
        def __init__(self, a: ArrayLike, W: ArrayLike, b: ArrayLike, c: float = 0.0,
                     v: ArrayLike | None = None) -> None: ...

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
        if self.v is None:
            v = np.zeros(W.shape[1])
        else:
            v = np.array(self.v, dtype=np.float64)
            if v.shape != (W.shape[1],):
                raise ValueError(f"`v` must have shape (d,) = ({W.shape[1]},), got {v.shape}")
        object.__setattr__(self, "v", v)

    def copy(self) -> Params:
        return Params(self.a.copy(), self.W.copy(), self.b.copy(), self.c, self.v.copy())

    def is_finite(self) -> bool:
        # a finite sum has finite terms (a non-finite entry makes the sum inf or nan), so the
        # element-wise test runs only when the sum is not finite (an overflow or a true non-finite)
        add = np.add.reduce
        with np.errstate(over="ignore", invalid="ignore"):
            total = add(self.a) + add(self.W, axis=None) + add(self.b) + self.c + add(self.v)
        if math.isfinite(total):
            return True
        return bool(np.all(np.isfinite(self.a)) and np.all(np.isfinite(self.W))
                    and np.all(np.isfinite(self.b)) and np.isfinite(self.c)
                    and np.all(np.isfinite(self.v)))



@dataclass(frozen=True)
class Student:
    """A two-layer student ``f(x) = s Σ_j a_j σ(w_j·x + b_j) + c`` on x ~ N(0, I_d).

    Parameters
    ----------
    d, m : int
        Input dimension and width (> 0).
    activation : str
        One of ``relu``, ``leaky_relu``, ``silu``, ``gelu``, ``tanh``, ``erf`` (docs/design.md §2).
    negative_slope : float
        Slope s of ``leaky_relu`` (max(t, s t)); ignored otherwise.
    bias : bool
        Whether neurons have trainable biases b_j (if False, b is fixed at 0).
    intercept : bool
        Whether the output intercept c is trainable (if False, c is fixed at 0).
    scaling : {"standard", "mean_field"}
        s = 1 or s = 1/m.
    skip : bool
        Add a learned linear skip connection v·x (``Params.v``, shape (d,)):
        f(x) = s Σ_j a_j σ(w_j·x + b_j) + v·x + c (the ``skip`` family, :mod:`popdyn.skip`).
        Default False (the ``ridge`` family; ``Params.v`` must then be zero).
    spec : popdyn.families.FamilySpec, optional
        The family of a student with these parameters and another loss (a family registered
        outside popdyn, e.g. with a penalty; its hyperparameters are the spec's fields).
        Default None: the ``ridge`` family, or ``skip`` with ``skip=True``.

    The student's family (:mod:`popdyn.families`), bound to it, is ``student.family``.
    """

    d: int
    m: int
    activation: str = "relu"
    negative_slope: float = 0.01
    bias: bool = True
    intercept: bool = True
    scaling: str = "standard"
    skip: bool = False
    spec: _families.FamilySpec | None = field(default=None, repr=False)
    act: Activation = field(init=False, repr=False, compare=False)
    family: StudentFamily = field(init=False, repr=False, compare=False)
    _is_popdyn_student = True

    def __post_init__(self) -> None:
        V.positive_int("d", self.d)
        V.positive_int("m", self.m)
        V.choice("scaling", self.scaling, SCALINGS)
        if not isinstance(self.bias, bool):
            raise TypeError(f"`bias` must be a bool, got {self.bias!r}")
        if not isinstance(self.intercept, bool):
            raise TypeError(f"`intercept` must be a bool, got {self.intercept!r}")
        if not isinstance(self.skip, bool):
            raise TypeError(f"`skip` must be a bool, got {self.skip!r}")
        object.__setattr__(self, "act", get_activation(self.activation, self.negative_slope))
        spec = self.spec
        if spec is None:
            # the family that claims a table with this student's ``skip`` (the skip family
            # claims ``skip = true``; the ridge family is the fallback)
            spec = _families.of_table({"skip": self.skip})
        elif not isinstance(spec, _families.FamilySpec):
            raise TypeError(f"`spec` must be a popdyn.families.FamilySpec or None, got "
                            f"{type(spec).__name__}")
        elif self.skip:
            raise ValueError("`skip`=True selects the skip family; give `skip` or `spec`, "
                             "not both")
        object.__setattr__(self, "family", spec.bind(self))

    @property
    def s(self) -> float:
        """Output scale: 1 (standard) or 1/m (mean_field)."""
        return 1.0 if self.scaling == "standard" else 1.0 / self.m

    def replace(self, **kw: Any) -> "Student":
        return replace(self, **kw)

    @classmethod
    def preset(cls, name: str, d: int, m: int) -> "Student":
        """A named student (:data:`PRESETS`) of input dimension ``d`` and width ``m``.

        ``"paper_relu"``: the ReLU student of Kumar (arXiv 2609.39408) §3,

            f(x) = (1/m) Σ_j A_j relu(W_j·x + B_j),   L_paper = E[(y − f)²]   (eq. (2)),

        signed heads, trained biases, no intercept (``scaling="mean_field"``,
        ``intercept=False``, ``bias=True``).  popdyn's loss is L = ½E[(f − y)²] = L_paper/2 and
        mean-field GD with step Δt moves θ by −mΔt ∇L, so ``train(..., method="gd", lr=h)`` is
        eq. (3), Θ⁺ = Θ − η ∇L_paper with the raw step η = m h / 2 and force step h; for
        example A_j⁺ = A_j + h E[(y − f) relu(z_j)] (eq. (43)).  ``method="armijo"`` with
        ``h0=0.05`` is the experiments' persistent Armijo rule (eq. (19)), and
        ``init(seed, s, convention="iid")`` their initialization (every entry N(0, s²/d)).
        """
        V.choice("name", name, PRESETS)
        return cls(d, m, **PRESETS[name])

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
        if not np.all(np.isfinite(params.v)):
            raise ValueError(f"`{name}.v` must be finite (contains NaN or inf)")
        if not self.skip and np.any(params.v != 0):
            raise ValueError(f"`{name}.v` must be zero for a student with skip=False "
                             "(use popdyn.Student(..., skip=True) for a linear skip v·x)")
        return params

    def init(self, seed: int, scale: float, teacher: Teacher | None = None, *,
             convention: str = "norm") -> Params:
        """Deterministic small Gaussian initialization.

        a_j ~ N(0, scale²), W_jk ~ N(0, scale²/d) (so |w_j| ≈ scale), b_j ~ N(0, scale²) if
        ``bias`` else 0, drawn in that order from ``numpy.random.default_rng(seed)`` (PCG64:
        identical on every machine and run).  ``convention="entry"`` draws W_jk ~ N(0, scale²)
        instead (every entry IID of scale s, |w_j| ≈ scale·√d: the paper's "small IID
        Gaussian initialization", abstract, line 15); the draws are the same standard normals, so
        the two conventions differ exactly by the factor √d on W.  ``convention="iid"`` draws
        every scalar entry of a, W and b from N(0, scale²/d) (Kumar (arXiv 2609.39408) §3: "every
        scalar entry of A_{j,0}, W_{j,0}, B_{j,0} is independently N(0, s²/d)"), again from the
        same standard normals.  The intercept is 0, or -- when ``teacher`` is given
        and the intercept is trainable -- fitted exactly, c = E[y] − s Σ_j a_j E[σ_j], so that the
        normalized loss starts at ≈ 1 (docs/design.md §2).
        """
        seed = V.nonneg_int("seed", seed)
        scale = V.real("scale", scale, positive=True)
        rng = np.random.default_rng(seed)
        head = init_head_width(convention, scale, self.d)
        a = rng.standard_normal(self.m) * head
        W = rng.standard_normal((self.m, self.d)) * init_width(convention, scale, self.d)
        b = rng.standard_normal(self.m) * head
        if not self.bias:
            b = np.zeros(self.m)
        p = Params(a, W, b, 0.0)
        if teacher is not None and self.intercept:
            p = self.family.fit_intercept(p, teacher)
        return p

    def __call__(self, params: Params, X: np.ndarray) -> np.ndarray:
        """Evaluate f at the rows of ``X`` (n, d) -- for Monte Carlo and finite-sample training."""
        Z = X @ params.W.T + params.b
        out = self.s * (self.act(Z) @ params.a) + params.c
        return out + X @ params.v if self.skip else out



def param_container(name: str, dims: dict) -> type:
    """A frozen parameter container (a :class:`ParamArrays` dataclass) with the array fields of
    ``dims`` in order -- ``{"a": ("m",), "U": ("m", "d"), ...}``, ``a`` first -- and the
    intercept ``c`` (default 0)."""
    from dataclasses import make_dataclass

    if not dims or next(iter(dims)) != "a" or "c" in dims:
        raise ValueError("`dims` must start with the head 'a' and leave out the intercept 'c'")
    cls = make_dataclass(name, [(f, np.ndarray) for f in dims] + [("c", float, 0.0)],
                         bases=(ParamArrays,), frozen=True,
                         namespace={"_ARRAYS": tuple(dims), "_DIMS": dict(dims)})
    return cls
