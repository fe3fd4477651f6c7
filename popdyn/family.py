"""The student-family protocol and its registry.

A *student family* is everything the engine-generic layers (objective, dynamics, diagnostics,
experiments, certify) need to know about one kind of student: its parameter container and field
names, how to validate a state, how to evaluate the population moments a quantity needs, and how
to assemble the loss, its gradient, the AGOP and the frozen-feature refit problem from them.
Those layers call only this protocol; they never test a student's class, a module's name or an
attribute of a parameter object.

Families: one module each under :mod:`popdyn.families` (``ridge``, ``skip``, ``swiglu``),
declared by a frozen spec and registered by :func:`popdyn.families.register`.

A student object carries its family, bound to it, as ``student.family`` (built once in the
student's ``__post_init__`` from this registry); :func:`family_of` returns it and raises a clear
``TypeError`` for anything that is not a popdyn student.

Layering: this module imports nothing of popdyn's but :mod:`popdyn._validate`; the family
modules import it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np

from . import _validate as V

#: default of ``check``'s ``teacher``: no teacher to validate (``None`` itself is validated, and
#: refused, since every function that takes a teacher needs one)
NO_TEACHER = object()


def get(name: str):
    """The family spec registered under ``name`` (:func:`popdyn.families.get`)."""
    from . import families
    return families.get(name)


def names() -> tuple:
    """The registered family names, sorted (:func:`popdyn.families.names`)."""
    from . import families
    return families.names()


def family_of(student):
    """The bound :class:`StudentFamily` of ``student`` (``TypeError`` for non-students)."""
    fam = getattr(type(student), "_is_popdyn_student", False) and student.family
    if not fam:
        raise TypeError("`student` must be a popdyn student (popdyn.Student or "
                        f"popdyn.SwiGLUStudent), got {type(student).__name__}")
    return fam


@runtime_checkable
class StudentFamily(Protocol):
    """What the generic layers use of a student family (bound to one student).

    Attributes
    ----------
    name : str
        Registry name (``"ridge"``, ``"skip"``, ``"swiglu"``); ``label`` is the name used in
        messages (``"relu-family"``, ``"skip"``, ``"SwiGLU"``).
    student
        The student this family object is bound to.
    fields : tuple of str
        Stored parameter arrays, in order, intercept last (``("a", "W", "b", "c")``, ...).
    params_type : type
        The parameter container (built as ``params_type(**{field: array})``).
    refit_kinds : tuple of str
        The frozen-feature refit kinds defined for the family.
    geometry_kind : str
        ``"neuron"`` (ridge neurons: angle histograms) or ``"gate"`` (SwiGLU gate geometry).
    first_layer : str or None
        The (m, d) field the ``projected`` refit snaps to the teacher axes.
    spec : popdyn.families.FamilySpec
        The family's registered declaration (configuration keys, rate groups).
    fitted_intercept : bool
        True when the intercept is refitted exactly at every visited state (profiled loss).
    agop_closed_form : bool
        True when the AGOP's moments are closed forms (no series to refine under ``rtol``).

    Methods (besides those below): ``shapes()`` (per-state shape of each field),
    ``loss_info(params, teacher, M)`` (``{"error", "order", ...}`` of ``full_output``),
    ``loss_scale`` (the size of the loss's terms, for rounding bounds), ``loss_and_grad``, and
    the integrators' hooks ``clock()`` → (κ, time scale), ``standard_clock()`` (when the time
    scale is not 1), ``rates(mult)``, ``train_info(cfg, rates)``,
    ``evaluate(params, teacher, tol)`` → (L, ∇L, params′), ``axpy(p, g, h, rates)``,
    ``diff_norm(p, q)`` (generic ones in :class:`popdyn.families.BoundFamily`).  Optional
    capabilities (``fused_kernel``, ``finite_sample_loss``, ``ridge_units``,
    ``ridge_readout``, ``ridge_loss``, ``paper_step``) are read by
    :func:`popdyn.families.capability`.
    """

    name: str
    label: str
    fields: tuple
    refit_kinds: tuple
    geometry_kind: str

    @property
    def agop_closed_form(self) -> bool:
        """True when the AGOP's moments are closed forms (a property or a class attribute)."""

    def check(self, params, teacher=NO_TEACHER, *, name: str = "params"):
        """Validate ``params`` (and ``teacher``, unless it is :data:`NO_TEACHER`)."""

    def shapes(self) -> dict:
        """Per-state shape of each field of :attr:`fields` (``c``: ``()``)."""

    def moments(self, params, teacher, *, need: str = "grad", tol: float = 1e-10):
        """The population moments ``need`` asks for: ``"loss"``, ``"grad"``, ``"values"``
        (what the AGOP and the refit problem use) or ``"student"`` (no teacher terms)."""

    def loss(self, params, teacher, M) -> float:
        """L = ½E[(f − y)²] from moments ``M``."""

    def loss_error(self, params, teacher, M) -> float:
        """Estimated absolute error of :meth:`loss` (series truncation and rounding)."""

    def grad(self, params, teacher, M):
        """∇L (a parameter container) from moments ``M`` (``need="grad"``)."""

    def agop(self, params, M) -> np.ndarray:
        """AGOP E[∇_x f ∇_x fᵀ] (d × d) from moments ``M``."""

    def refit_problem(self, params, teacher, M) -> "RefitProblem":
        """The frozen-feature refit quadratic from moments ``M``."""

    def fit_intercept(self, params, teacher):
        """``params`` with the intercept at its exact minimizer."""

    def evaluate(self, params, teacher, tol):
        """(L, ∇L, params′) at ``params`` for the integrators (params′: intercept refitted)."""

    def axpy(self, p, g, h, rates):
        """p − h·(rates ∘ g)."""

    def diff_norm(self, p, q) -> float:
        """The parameter-space distance of the step-doubling rule."""

    def clock(self) -> tuple:
        """(κ, time scale) of the integrators."""

    def multipliers(self, rates=None, **keywords) -> dict:
        """Validated learning-rate multipliers {field: float} of the family's rate groups."""

    def rates(self, mult: dict) -> dict:
        """{field: rate} of the integrators from ``multipliers`` (0 for fixed fields)."""


@dataclass(frozen=True, eq=False)
class RefitProblem:
    """The centered quadratic R(a′) = a′ᵀGa′ − 2gᵀa′ + V of a frozen-feature refit.

    Attributes
    ----------
    G : ndarray (m, m)
        s²(C − μ0μ0ᵀ), with the rows and columns of *constant* features zeroed (``dropped``).
    g : ndarray (m,)
        s(E[σ y] − μ0 E[y]), zeroed on dropped features.
    variance : float
        V_Y.
    mean_y : float
        E[y].
    mu0 : ndarray (m,)
        E[σ_j] (for the intercept).
    s : float
        Output scale of the student.
    dropped : ndarray of bool (m,)
        Features whose centered variance G_jj is ≤ 32ε·s²C_jj, i.e. not resolved above the
        rounding of C_jj − μ_j² (a neuron with w_j = 0 is constant; its covariances with
        anything vanish by Cauchy–Schwarz).
    """

    G: np.ndarray
    g: np.ndarray
    variance: float
    mean_y: float
    mu0: np.ndarray
    s: float
    dropped: np.ndarray

    @property
    def m(self) -> int:
        return self.g.shape[0]

    def risk(self, a) -> float:
        """R(a) = aᵀGa − 2gᵀa + V."""
        a = np.asarray(a, dtype=np.float64)
        return float(a @ (self.G @ a) - 2.0 * (self.g @ a) + self.variance)

    def intercept(self, a) -> float:
        return float(self.mean_y - self.s * (np.asarray(a) @ self.mu0))

    @cached_property
    def eig(self):
        """(λ ascending, Q) of G (cached: shared by every norm-constrained solve)."""
        lam, Q = np.linalg.eigh(self.G)
        return lam, Q

    @classmethod
    def from_arrays(cls, G, g, variance, *, mean_y=0.0, mu0=None, s=1.0, dropped=None):
        """A problem from a given Gram matrix (for tests and for callers with their own moments)."""
        G = V.array("G", G, (None, None))
        m = G.shape[0]
        if G.shape != (m, m):
            raise ValueError(f"`G` must be square, got shape {G.shape}")
        if np.max(np.abs(G - G.T), initial=0.0) > 1e-12 * np.max(np.abs(G), initial=0.0):
            raise ValueError("`G` must be symmetric")
        g = V.array("g", g, (m,))
        variance = V.real("variance", variance, positive=True)
        mu0 = np.zeros(m) if mu0 is None else V.array("mu0", mu0, (m,))
        dropped = np.zeros(m, bool) if dropped is None else np.asarray(dropped, bool)
        return cls(0.5 * (G + G.T), g, variance, float(mean_y), mu0, float(s), dropped)
