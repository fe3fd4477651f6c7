"""A student family written outside popdyn, as one module: a ridge student (relu and the other
activations of :class:`popdyn.Student`) trained on the population loss plus an ℓ2 penalty on
the head,

    L_λ(θ) = ½E[(f(x) − y)²] + λ‖a‖²,     f(x) = s Σ_j a_j σ(w_j·x + b_j) + c,

so ∇_a L_λ = ∇_a L + 2λa and every other gradient field is that of the ridge family.  λ is the
spec's hyperparameter (``L2HeadSpec(lam=...)``; ``[student] family = "l2head"``, ``lam = ...``
in a configuration).

It reuses the ridge family's moments and formulas by subclassing
:class:`popdyn.families.ridge.RidgeFamily` and defines no capability hook, so it gets no fused
kernel (which evaluates the ridge loss) and no finite-sample path (:mod:`popdyn.finite`'s loss
is the ridge one) -- :func:`popdyn.families.capability` never lets a subclass inherit them.
Registration is the one line at the bottom.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import popdyn
from popdyn import families
from popdyn.families.ridge import RidgeFamily


class L2HeadFamily(RidgeFamily):
    """The ridge family's moments and formulas plus the head penalty λ‖a‖²."""

    def loss(self, params, teacher, M) -> float:
        return super().loss(params, teacher, M) + self.spec.lam * float(params.a @ params.a)

    def loss_scale(self, params, teacher, M) -> float:
        return super().loss_scale(params, teacher, M) + self.spec.lam * float(params.a @ params.a)

    def grad(self, params, teacher, M):
        g = super().grad(params, teacher, M)
        return g.replace(a=g.a + (2.0 * self.spec.lam) * params.a)

    def grad_scale(self, params, teacher, M):
        g = super().grad_scale(params, teacher, M)
        return g.replace(a=g.a + (2.0 * self.spec.lam) * np.abs(params.a))


@dataclass(frozen=True)
class L2HeadSpec(families.FamilySpec):
    """The ``l2head`` family; hyperparameter ``lam`` = λ ≥ 0."""

    lam: float = 0.1
    name = "l2head"
    label = "l2-head relu-family"
    config_keys = ("d", "m", "activation", "negative_slope", "bias", "intercept", "scaling", "lam")
    rate_groups = ("a", "W", "b", "c")
    bound = L2HeadFamily

    def __post_init__(self):
        lam = self.lam
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not lam >= 0:
            raise ValueError(f"`lam` must be a real number >= 0, got {lam!r}")
        object.__setattr__(self, "lam", float(lam))

    def student(self, d: int, m: int, **kw) -> popdyn.Student:
        return popdyn.Student(d, m, spec=self, **kw)

    def from_config(self, table: dict, error=ValueError) -> popdyn.Student:
        t = dict(table)
        self.check_config_keys(t, error)
        spec = L2HeadSpec(lam=t.pop("lam", self.lam))
        return spec.student(**t)


SPEC = families.register(L2HeadSpec())
