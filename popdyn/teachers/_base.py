"""The teacher protocol (docs/design.md §3): what the engine, the families and the diagnostics may ask of
a teacher, whatever its kind.

A teacher is a function y(x) of x ~ N(0, I_d) with input rows ``U`` (k, d), and answers

* ``units()``: its ridge units v_k φ_k(α_k θ_k·x + β_k) as a :class:`popdyn._moments.UnitSet`
  (None when y is not a finite sum of ridge units: multi-index teachers, ``ridge = False``);
* ``cross(su, rtol)``: the cross moments (Ct, Bt, At, Dt, errCt, order) of student units ``su``
  against its units (or against its Hermite tensor);
* ``hermite_terms(N)``: y = Σ_t w_t G_t(B_t x) with each G_t a normalized Hermite tensor
  (to order N + 3 where it is not finite), and ``hermite_degree()``: the degree beyond which its
  Hermite shells are below 1e−17 of its norm (None if they never are);
* ``mean``, ``second_moment``, ``variance`` (exact), ``subspace``, ``describe()`` (plain data
  for configs, stores and run keys) and ``y = teacher(X)``.

Every kind is one module of :mod:`popdyn.teachers` registered here by :func:`register_kind`;
``Teacher.additive`` / ``network`` / ``gated`` / ``multi_index`` build them.  Teachers are
immutable; what the engine derives from one (its exact moments, Hermite terms) it keeps in its
own per-teacher cache (:func:`popdyn._moments.teacher_cache`), never on the teacher.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Callable, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as V
from .._moments import UnitSet, cross_moments, teacher_cache
from ..activations import Activation

if TYPE_CHECKING:
    from ..links import Link

#: the teacher kinds by constructor name, filled by the kind modules (:func:`register_kind`)
_KINDS: dict = {}
#: the built-in kinds (the others come from :func:`register_kind` calls of other code)
BUILTIN_KINDS = ("additive", "network", "gated", "multi_index")
#: the entry-point group through which other packages provide teacher kinds
ENTRY_POINT_GROUP = "popdyn.teachers"
_loaded = False
#: a teacher kind (class) being registered
_K = TypeVar("_K", bound="type[Teacher]")


def register_kind(name: str) -> Callable[[_K], _K]:
    """Class decorator registering a teacher kind (a subclass of :class:`Teacher`).

    The built-in kinds are built by ``Teacher.<name>(...)`` (their classmethod ``build``).  A
    kind of another package is registered the same way; to be usable from a configuration
    file (``[teacher] kind = "<name>"``) it defines the classmethod ``from_config(table, d)``
    returning the teacher for the table's remaining keys and the input dimension ``d``, and to
    be found by every worker process of a sweep it is declared in the entry-point group
    ``popdyn.teachers`` (``<name> = "package.module"``; the module is imported on first use).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"`name` must be an identifier-like string, got {name!r}")

    def deco(cls: _K) -> _K:
        if name in BUILTIN_KINDS and name in _KINDS and _KINDS[name] is not cls:
            raise ValueError(f"teacher kind {name!r} is built in; choose another name")
        _KINDS[name] = cls
        return cls
    return deco


def kind_class(name: str) -> type[Teacher] | None:
    """The class of the teacher kind ``name``, loading the ``popdyn.teachers`` entry points of
    installed packages on the first unknown name; None when no such kind exists."""
    global _loaded
    if name not in _KINDS and not _loaded:
        _loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                ep.load()                  # the module registers its kinds
            except Exception as exc:       # a broken plugin names itself, it does not crash
                import warnings
                warnings.warn(f"teacher-kind entry point {ep.name} = {ep.value} failed to "
                              f"load: {type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)
    return _KINDS.get(name)


def kinds() -> list:
    """The names of the registered teacher kinds (built-in first, entry points loaded)."""
    kind_class("")
    return list(BUILTIN_KINDS) + sorted(k for k in _KINDS if k not in BUILTIN_KINDS)


def input_rows(U: ArrayLike, *, orthonormal: bool) -> np.ndarray:
    """The rows ``U`` (k, d) of a teacher, checked: finite, k, d >= 1, orthonormal if asked."""
    U = V.array("U", U, (None, None))
    if U.shape[0] == 0 or U.shape[1] == 0:
        raise ValueError(f"`U` must have at least one row and one column, got shape {U.shape}")
    if orthonormal:
        V.orthonormal_rows("U", U)
    return U


def effective_degree(shell_norms, tail2, energy):
    """Largest n whose Hermite shell norm exceeds 1e−17·‖y‖, or None when the stored shells or
    the tail beyond them do not fall below that level (slowly decaying teachers)."""
    thr = 1e-17 * math.sqrt(max(energy, 1e-300))
    if math.sqrt(max(tail2, 0.0)) > thr:
        return None
    big = np.flatnonzero(np.asarray(shell_norms) > thr)
    if big.size and big[-1] == len(shell_norms) - 1:
        return None
    return int(big[-1]) if big.size else 0


@dataclass(frozen=True, eq=False)
class Teacher:
    """A teacher function of x ~ N(0, I_d).  Build with :meth:`additive`, :meth:`network`,
    :meth:`gated` or :meth:`multi_index` (module docstring: the protocol)."""

    kind: str
    U: np.ndarray                  # (k, d) raw directions (rows)
    weights: np.ndarray            # κ (additive) or v (network)
    bias: np.ndarray               # (k,) zeros for additive
    link: Link | None = None       # popdyn.links.Link for additive
    activation: Activation | None = None  # for network
    index: object = None           # popdyn.teachers.multi_index.MultiIndexFunction for multi_index

    #: y is a finite sum of ridge units (``units()`` is not None)
    ridge: ClassVar[bool] = True

    # ------------------------------------------------------------------ constructors
    @classmethod
    def additive(cls, link: str | Link, U: ArrayLike, kappa: ArrayLike | None = None) -> "Teacher":
        """y = Σ_k κ_k g(u_k·x) with orthonormal rows ``U`` (r, d) and link ``g``.

        ``link`` is a name (``h1``…``h6``, ``h3+0.3h2``, ``relu``, ``tanh``, ``abs``, ``sin``,
        ``silu``, ``silu_centered``, ``gaussian_bump``, ``damped_cubic:a``, the paper's
        ``g:<v>`` / ``q:<v>`` / ``g_mu(...)``, ``user:<name>``) or a
        :class:`popdyn.links.Link` (e.g. a signed mixture).  ``kappa`` defaults to ones.
        The teacher is *not* normalized; use :meth:`normalized` explicitly for unit variance.
        """
        return _KINDS["additive"].build(link, U, kappa)

    @classmethod
    def network(cls, activation: str, V_: ArrayLike, U: ArrayLike, bias: ArrayLike | None = None,
                *, negative_slope: float = 0.01) -> "Teacher":
        """y = Σ_k v_k σ*(u_k·x + b*_k): a teacher network with output weights ``V_`` (k,),
        rows ``U`` (k, d) (need not be orthogonal or unit) and biases ``bias`` (k,) (default 0)."""
        return _KINDS["network"].build(activation, V_, U, bias, negative_slope=negative_slope)

    @classmethod
    def gated(cls, gate: str, U: ArrayLike, kappa: float = 1.0) -> "Teacher":
        """Gated teacher y = κ·F(s)·t with s = u_1·x, t = u_2·x (``U``: 2 orthonormal rows).

        Parameters
        ----------
        gate : {"id", "gelu", "tanh", "relu", "silu", "h2", "rotation"}
            F = identity (y = st), exact GELU zΦ(z), tanh, max(z, 0), SiLU z/(1 + e^{−z}),
            h_2(z) = (z² − 1)/√2; ``"rotation"`` is the bilinear rotation control
            y = κ(s² − t²)/2 (= s′t′ in the frame rotated by 45°).
        U : array_like (2, d)
            Orthonormal rows u_1 (gate axis) and u_2 (value axis).
        kappa : float
            Output scale κ (not normalized; use :meth:`normalized`).

        Notes
        -----
        E[y] = 0 and V_Y = κ²E[F(Z)²].  With ``normalized("second_moment")`` these are the
        product targets Y_g = g(S)T/√E[g(S)²] of Kumar (arXiv 2609.39408), eq. (20).  The teacher is stored by its normalized Hermite tensor
        (exact for ``id`` and ``rotation``; truncated with a tail bound otherwise) and every
        population moment reduces to bivariate scalar moments (docs/design.md §3); see
        :mod:`popdyn.teachers.gated`.

        References
        ----------
        Kumar (arXiv 2609.39408), gated teachers st, GELU(s)t, tanh(s)t, ReLU(s)t and the bilinear
        rotation control (Figures 1, 5, 6); docs/design.md §3.
        """
        return _KINDS["gated"].build(gate, U, kappa)

    @classmethod
    def multi_index(cls, hermite_tensor: dict[tuple[int, ...], float] | ArrayLike, U: ArrayLike,
                    kappa: float = 1.0, *, tail2: float = 0.0) -> "Teacher":
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
        docs/design.md §3 (E[σ(αθ·x+β) He_a(s) He_b(t)] = c_{a+b} θ_s^a θ_t^b);
        :mod:`popdyn.teachers.multi_index`.
        """
        return _KINDS["multi_index"].build(hermite_tensor, U, kappa, tail2=tail2)

    def normalized(self, moment: str = "variance") -> "Teacher":
        """The same teacher rescaled to unit variance (an explicit option, never silent).

        Parameters
        ----------
        moment : {"variance", "second_moment"}
            ``"variance"`` (default): V_Y = 1.  ``"second_moment"``: E[y²] = 1, the unit norm
            of y in L²(γ), so that the zero predictor has MSE one; the two differ only for a
            teacher with a mean (Kumar (arXiv 2609.39408), Figure 1: "per normalized
            teacher"; Figure 11: "Both teacher means … are retained"; docs/protocol.md).
        """
        if moment not in ("variance", "second_moment"):
            raise ValueError(f"`moment` must be 'variance' or 'second_moment', got {moment!r}")
        sd = np.sqrt(self.variance if moment == "variance" else self.second_moment)
        if not sd > 0:
            raise ValueError(f"cannot normalize a teacher with zero {moment.replace('_', ' ')}")
        return replace(self, weights=self.weights / sd)

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
        return self.U.copy()

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
        c = teacher_cache(self)
        if "m" not in c:
            c["m"] = self.exact_moments()
        return c["m"]

    # ------------------------------------------------------------------ the kind's part
    def exact_moments(self) -> tuple:
        """(E[y], E[y²], Var y), exact (each kind; cached by the engine)."""
        raise NotImplementedError

    def units(self) -> UnitSet | None:
        """The teacher's ridge units (:class:`popdyn._moments.UnitSet`), or None."""
        raise NotImplementedError

    def cross(self, su: UnitSet, rtol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                        np.ndarray, np.ndarray, int | None]:
        """(Ct, Bt, At, Dt, errCt, order): student units ``su`` against this teacher."""
        tu = self.units()
        assert tu is not None                    # this default serves the ridge kinds
        return cross_moments(su, tu, rtol)

    def hermite_terms(self, N: int) -> list:
        """[(w, B (k_t, d) orthonormal rows, HermiteTensor)] with y = Σ w·G_t(B x); series
        kept to order N + 3 where they do not terminate."""
        raise NotImplementedError

    def hermite_degree(self) -> int | None:
        """Degree beyond which the Hermite shells of y are below 1e−17·‖y‖ (None: never)."""
        return None

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Evaluate y at the rows of ``X`` (n, d)."""
        raise NotImplementedError

    def describe(self) -> dict:
        """Plain-data description (for configs, stores and references)."""
        raise NotImplementedError
