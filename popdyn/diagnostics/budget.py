"""Refits under one fixed coefficient budget at several checkpoints (the paper's
"unchanged coefficient budgets").

The theorem of Kumar (arXiv 2609.39408, abstract) compares "the minimum refit MSE under
unchanged coefficient budgets" at initialization and at a plateau checkpoint, and its tables
report the conservative gain ΔR = R̲₀ − R̄_E − 1e−5 (Table 2, line 87).  ``kind="same_budget"``
of :func:`popdyn.diagnostics.refit_risk` reads the budget as ‖a‖ of *each checkpoint's own*
head; at a small initialization that ball is tiny and the refit cannot move.  This
module gives the other readings, one ball B shared by all checkpoints:

``features``
    ``"raw"``: the head a′ multiplies the student's own features s·σ(w_j·x + b_j) and the
    ball is ‖a′‖₂ ≤ B.  ``"coefficient"``: for positively homogeneous activations (``relu``,
    ``leaky_relu``) each neuron is written as a coefficient times a unit-direction feature,
    s·a_j·σ(w_j·x + b_j) = c_j·σ(θ_j·x + β_j) with c_j = s·a_j·n_j, n_j = ‖(w_j, b_j)‖₂,
    (θ_j, β_j) = (w_j, b_j)/n_j (docs/design.md §7: coefficient c = a|w|, direction θ), and the ball is
    on the coefficients, ‖c′‖₂ ≤ B -- a budget that does not depend on the features' size.
``budget``
    ``"trained_head"``: B = the norm of the head (``raw``) or of the coefficients
    (``coefficient``) of the *last* state given (the later checkpoint E), so both checkpoints
    are refitted in the ball the trained network actually uses; ``"teacher"``: B = ‖κ‖₂, the
    teacher's coefficient norm (additive teachers: the weights of the unit-direction links;
    network teachers: the output weights times the input-weight norms); or a number B > 0.

The intercept is refitted exactly in every reading (as in :func:`refit_risk`).  Each result is
a :class:`popdyn.diagnostics.Refit` from the exact trust-region solver, with the feasible
(upper) risk and the Lagrangian lower value kept apart.

References
----------
Kumar (arXiv 2609.39408): abstract ("unchanged coefficient budgets"), Figure 1 ("a same-budget
readout refit"), Table 2 ("ΔR = R̲₀ − R̄_E − 10⁻⁵ is the conservative numerical refit gain"); docs/protocol.md.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import _validate as V
from ..families import capability
from ..family import RefitProblem, family_of
from ..models import Params
from .refit import _refit, refit_risk

FEATURES = ("raw", "coefficient")
BUDGET_SOURCES = ("trained_head", "teacher")
_HOMOGENEOUS = ("relu", "leaky_relu")


def coefficient_form(student, params):
    """(standard student, params) with unit-norm (w_j, b_j) and coefficients c_j = s·a_j·n_j.

    The predictor is unchanged (positive homogeneity of ``relu`` / ``leaky_relu``); a neuron with
    (w_j, b_j) = 0 keeps a zero feature and a zero coefficient.  Raises ``ValueError`` for other
    activations (the coefficient reading needs positive homogeneity) and for SwiGLU students.
    """
    if capability(family_of(student), "ridge_readout") is None:
        raise ValueError("`features`='coefficient' is defined for ReLU-family students only "
                         f"(positively homogeneous), got {type(student).__name__}; use "
                         "features='raw'")
    if student.activation not in _HOMOGENEOUS:
        raise ValueError(f"`features`='coefficient' needs a positively homogeneous activation "
                         f"{list(_HOMOGENEOUS)}, got {student.activation!r}; use features='raw'")
    n = np.sqrt(np.sum(params.W ** 2, axis=1) + params.b ** 2)
    safe = np.where(n > 0, n, 1.0)
    W = np.where(n[:, None] > 0, params.W / safe[:, None], 0.0)
    b = np.where(n > 0, params.b / safe, 0.0)
    c = student.s * params.a * n
    std = student.replace(scaling="standard", bias=True, intercept=True)
    return std, Params(c, W, b, params.c)


def teacher_budget(teacher) -> float:
    """‖κ‖₂: the teacher's coefficient norm on unit-direction features (additive: ``weights``;
    network: |v_i|·‖(u_i, b*_i)‖).  ``ValueError`` for teachers without such coefficients."""
    units = teacher.units()
    if units is not None and units.kind == "link":          # additive: unit-direction links
        return float(np.linalg.norm(teacher.weights))
    raise ValueError(f"`budget`='teacher' needs an additive teacher (its weights κ are the "
                     f"coefficients of unit-direction links), got {type(teacher).__name__}; "
                     "give a number")


def _check_budget(budget):
    if isinstance(budget, str):
        if budget not in BUDGET_SOURCES:
            raise ValueError(f"`budget` must be one of {list(BUDGET_SOURCES)} or a number B > 0, "
                             f"got {budget!r}")
        return budget
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`budget` must be one of {list(BUDGET_SOURCES)} or a number > 0, got "
                        f"{budget!r}")
    return V.real("budget", budget, positive=True)


def _no_intercept_problem(student, params, teacher, rtol):
    """The uncentered refit quadratic R(a′) = a′ᵀ s²C a′ − 2 s E[σ y]ᵀa′ + E[y²] (c′ = 0)."""
    M = student.family.moments(params, teacher, need="loss", tol=rtol)
    s = student.s
    G = (s * s) * M.C
    G = 0.5 * (G + G.T)
    g = s * (M.Ct @ teacher.weights)
    return RefitProblem(G, g, float(teacher.second_moment), 0.0, np.zeros(student.m), s,
                        np.zeros(student.m, bool))


def fixed_ball_refits(student, states, teacher, *, budget="trained_head",
                      features="coefficient", intercept: bool = True,
                      rtol: float = 1e-10) -> list:
    """Refit every state in ``states`` in one ball ‖·‖₂ ≤ B (see the module docstring).

    Parameters
    ----------
    student : Student
    states : sequence of Params
        The checkpoints (e.g. ``[init, E]``); with ``budget="trained_head"`` the last one
        defines B.
    teacher : Teacher
    budget : {"trained_head", "teacher"} or float
        Where B comes from, or B itself.
    features : {"coefficient", "raw"}
        Coefficients on unit-direction features (ReLU family) or the head on raw features.
    intercept : bool
        True (default): the intercept c′ is refitted exactly (as in :func:`refit_risk`).
        False: c′ = 0, the readout alone is refitted and the target's mean E[y] stays in the
        risk (the reading for students without an intercept); the risk is then
        a′ᵀs²Ca′ − 2s E[σy]ᵀa′ + E[y²] and ``Refit.variance`` holds E[y²] (divide the risk by
        V_Y yourself for the paper's normalization).

    Returns
    -------
    list of Refit
        One per state, all with the same ``budget``.

    References
    ----------
    Kumar (arXiv 2609.39408), abstract (line 15) and Table 2 (line 87); docs/protocol.md.
    """
    V.choice("features", features, FEATURES)
    budget = _check_budget(budget)
    states = list(states)
    if not states:
        raise ValueError("`states` must hold at least one checkpoint")
    forms = [coefficient_form(student, p) if features == "coefficient" else (student, p)
             for p in states]
    if budget == "trained_head":
        B = float(np.linalg.norm(forms[-1][1].a))
        if not B > 0:
            raise ValueError("`budget`='trained_head': the last state's head is zero; give a number")
    elif budget == "teacher":
        B = teacher_budget(teacher)
    else:
        B = float(budget)
    if not isinstance(intercept, bool):
        raise TypeError(f"`intercept` must be a bool, got {intercept!r}")
    if intercept:
        return [refit_risk(S, p, teacher, kind="bounded", budget=B, rtol=rtol) for S, p in forms]
    if not teacher.ridge:
        raise ValueError("`intercept`=False is implemented for additive and network teachers of "
                         "ReLU-family students only")
    out = []
    for S, p in forms:
        S.family.check(p, teacher)
        prob = _no_intercept_problem(S, p, teacher, rtol)
        r = _refit(prob, "bounded", B, rcond=1e-12, equilibrate=True)
        out.append(r)
    return out
