"""The ``swiglu`` student family: f(x) = Σ_j a_j SiLU(g_j·x)(v_j·x) + c, and the biased student
of Kumar (arXiv 2609.39408) eq. (71) (κ = 1), f(x) = Σ_j a_j SiLU(g_j·x + b_j)(v_j·x + c_j) + c.

The student, its parameters and its moments are in :mod:`popdyn.swiglu`; this module holds the
family's spec (:class:`SwiGLUSpec`: configuration keys, rate groups) and its bound families
(:class:`SwiGLUFamily`, :class:`SwiGLUBiasFamily`).  The intercept is fitted exactly at every
visited state, so it is no rate group: a step leaves it and the evaluation refits it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import family as _family
from ..swiglu import (SwiGLUBiasParams, SwiGLUParams, SwiGLUStudent, _check, _check_biased,
                      _grad_biased, _grad_from, _loss_from, _loss_info, _profiled,
                      agop_biased_from_moments, agop_from_moments, fit_intercept,
                      fit_intercept_biased, moments, moments_biased, refit_problem)
from ._base import BoundFamily, FamilySpec, register


class SwiGLUFamily(BoundFamily):
    """The ``swiglu`` family (:mod:`popdyn.family` protocol) of a :class:`SwiGLUStudent`.

    One moment evaluation (:func:`moments`) serves every quantity.  Training
    (:func:`popdyn.train`) follows the flow of the profiled loss min_c L when the intercept is
    fitted; ``clock="mean_field"`` is integrated on the standard clock τ = m·t with head
    multiplier head_lr_mult/m² and every time reported on the mean-field clock t = τ/m (the
    standard-coordinate flow dG/dt = −m ∂L/∂G, dã/dt = −m·head_lr_mult·∂L/∂ã with a = ã/m).
    """

    fields: tuple[str, ...] = ("a", "G", "V", "c")
    params_type: type[SwiGLUParams | SwiGLUBiasParams] = SwiGLUParams
    #: ``projected`` snaps ridge weights: not defined for SwiGLU students
    refit_kinds = ("unrestricted", "same_budget", "bounded")
    geometry_kind = "gate"
    first_layer = None
    #: the SwiGLU AGOP comes from Hermite series (refined under the rtol contract)
    agop_closed_form = False
    #: trained fields (the intercept is fitted, not stepped)
    rate_groups: tuple[str, ...] = ("a", "G", "V")

    def __init__(self, student, spec):
        super().__init__(student, spec)
        self.fitted_intercept = student.intercept

    def check(self, params, teacher=_family.NO_TEACHER, *, name: str = "params"):
        if teacher is _family.NO_TEACHER:
            _check(self.student, params, None, need_teacher=False)
        else:
            _check(self.student, params, teacher)
        return params

    def moments(self, params, teacher, *, need: str = "grad", tol: float = 1e-10):
        return moments(self.student, params, teacher, tol)

    def loss(self, params, teacher, M) -> float:
        return _loss_from(params, teacher, M)

    def loss_info(self, params, teacher, M) -> dict:
        return _loss_info(params, teacher, M)

    def loss_error(self, params, teacher, M) -> float:
        return _loss_info(params, teacher, M)["error"]

    def grad(self, params, teacher, M):
        return _grad_from(self.student, params, teacher, M)

    def loss_and_grad(self, params, teacher, *, tol: float = 1e-10):
        M = moments(self.student, params, teacher, tol)
        return _loss_from(params, teacher, M), _grad_from(self.student, params, teacher, M)

    def fit_intercept(self, params, teacher):
        return fit_intercept(self.student, params, teacher)

    def agop(self, params, M) -> np.ndarray:
        return agop_from_moments(params, M)

    def refit_problem(self, params, teacher, M):
        return refit_problem(M, teacher)

    def clock(self):
        return 1.0, (float(self.student.m) if self.student.clock == "mean_field" else 1.0)

    def standard_clock(self):
        """The same student on the standard clock (what the integrators run)."""
        return self.student.replace(clock="standard")

    def train_info(self, cfg, rates) -> dict:
        return dict(super().train_info(cfg, rates),
                    intercept="fitted" if self.student.intercept else "none")

    def evaluate(self, params, teacher, tol):
        return _profiled(self.student, params, teacher, tol)


class SwiGLUBiasFamily(SwiGLUFamily):
    """The ``swiglu`` family of a biased student: the student of Kumar (arXiv 2609.39408) eq. (71) (κ = 1) with
    trained gate and value biases, ``SwiGLUStudent(biases=True)``.  The same protocol as
    :class:`SwiGLUFamily` (clocks, rates, fitted intercept, refit kinds on the centered feature
    Gram); moments from :func:`moments_biased`.  It carries the registry name ``swiglu`` (every
    generic layer treats it as a SwiGLU student; :mod:`certify.swiglu` refuses it by its
    ``biases`` flag) and is bound by the ``swiglu`` spec to a ``SwiGLUStudent(biases=True)``."""

    label = "SwiGLU (biased)"
    fields = ("a", "G", "V", "bg", "bv", "c")
    rate_groups = ("a", "G", "V", "bg", "bv")

    def paper_step(self):
        """:func:`popdyn.swiglu.train_paper` (the protocol of Kumar (arXiv 2609.39408) App. U.6,
        ``[train] method = "paper_euler"``) for a student with a fitted intercept, else None."""
        if not self.student.intercept:
            return None
        from ..swiglu import train_paper
        return train_paper
    params_type = SwiGLUBiasParams

    def check(self, params, teacher=_family.NO_TEACHER, *, name: str = "params"):
        _check_biased(self.student, params, name)
        if teacher is not _family.NO_TEACHER:
            _check(self.student, params, teacher)
        return params

    def moments(self, params, teacher, *, need: str = "grad", tol: float = 1e-10):
        return moments_biased(self.student, params, teacher, tol)

    def grad(self, params, teacher, M):
        return _grad_biased(self.student, params, teacher, M)

    def loss_and_grad(self, params, teacher, *, tol: float = 1e-10):
        M = moments_biased(self.student, params, teacher, tol)
        return _loss_from(params, teacher, M), _grad_biased(self.student, params, teacher, M)

    def fit_intercept(self, params, teacher):
        return fit_intercept_biased(self.student, params, teacher)

    def agop(self, params, M) -> np.ndarray:
        return agop_biased_from_moments(params, M)

    def refit_problem(self, params, teacher, M):
        return refit_problem(M, teacher)

    def evaluate(self, params, teacher, tol):
        Mo = moments_biased(self.student, params, teacher, tol)
        p = params
        if self.student.intercept:
            p = p.replace(c=float(teacher.mean - p.a @ Mo.phibar))
        return _loss_from(p, teacher, Mo), _grad_biased(self.student, p, teacher, Mo), p


#: [student] keys of a SwiGLU student (``activation = "swiglu"``)
SWIGLU_KEYS = ("activation", "d", "m", "intercept", "clock", "biases")


@dataclass(frozen=True)
class SwiGLUSpec(FamilySpec):
    """The ``swiglu`` family (:class:`popdyn.SwiGLUStudent`).

    Configuration: ``[student]`` keys :data:`SWIGLU_KEYS` (``activation = "swiglu"``).  Rate
    groups a, G, V (and bg, bv of a biased student); ``head_lr_mult`` scales a, and
    ``bias_lr_mult`` / ``intercept_lr_mult`` are refused (no such trained field)."""

    name = "swiglu"
    label = "SwiGLU"
    config_keys = SWIGLU_KEYS
    rate_groups = ("a", "G", "V", "bg", "bv")
    activations = ("swiglu",)
    key_defaults = {"skip": False}

    def bind(self, student):
        return (SwiGLUBiasFamily if student.biases else SwiGLUFamily)(student, self)

    def student(self, d: int, m: int, **kw) -> SwiGLUStudent:
        """A :class:`popdyn.SwiGLUStudent`."""
        return SwiGLUStudent(d, m, **kw)

    def from_config(self, table: dict, error=ValueError) -> SwiGLUStudent:
        t = dict(table)
        if "skip" in t:
            if not isinstance(t["skip"], bool):
                raise error(f"[student] skip must be true or false, got {t['skip']!r}")
            if t.pop("skip"):
                raise error("[student] skip applies to relu-family students (relu, leaky_relu "
                            "and the smooth activations); a SwiGLU student has no linear skip: "
                            "remove `skip`")
        extra = sorted(k for k in t if k not in SWIGLU_KEYS)
        if extra:
            raise error(
                f"[student] activation = 'swiglu' takes only d, m, intercept, clock and biases; "
                f"{extra} "
                "apply to relu-family students only (a SwiGLU student f = Σ a_j SiLU(g_j·x)"
                "(v_j·x) + c has no negative slope and standard scaling; its gate/value biases "
                "are `biases = true`): remove "
                + ("it" if len(extra) == 1 else "them"))
        if t.pop("activation", "swiglu") != "swiglu":
            raise error(f"[student] family = 'swiglu' needs activation = 'swiglu' (or none), "
                        f"got {table['activation']!r}")
        return self.student(**t)


SWIGLU = register(SwiGLUSpec())
