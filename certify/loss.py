r"""Certified population loss (and gradient) brackets.

L = ½E[(f − y)²] with f = s Σ_j a_j σ(w_j·x + b_j) + c, from the moment enclosures of
:mod:`certify.moments` and the same formula as :mod:`popdyn.objective`:

    L = ½ (s² aᵀCa + 2sc aᵀμ0 + c² − 2s aᵀ(Ct v) − 2c E[y] + E[y²]),

all in Arb (s = 1 or exactly 1/m; every parameter is its exact float64 value).  The gradient
(``grad=True``) uses the formulas of :mod:`popdyn.objective` in the same way.

Provenance
----------
``rigorous`` for relu / leaky_relu students against relu / leaky_relu teacher networks and
additive teachers whose links are polynomial (h1…h6, h3+0.3h2), piecewise linear (relu, abs),
Gaussian-polynomial (gaussian_bump, damped_cubic:a), sin, or positive mixtures of these.
``rigorous`` also for smooth students (silu, gelu, tanh, erf: :mod:`certify.smooth`) against
PL or smooth teacher networks and the rigorous links above.  ``numerical`` when a tabulated
link (tanh, silu, silu_centered) enters (its Hermite coefficients are high-precision quadrature
values, not enclosures), and for PL students against smooth teacher networks or gated /
multi-index teachers, whose brackets come from the float64 engine with its estimated series
error doubled plus a rounding allowance of 1e−13 of the loss scale (an estimate, not a bound).

Other student families are bracketed by the certifier their module registers in
:mod:`certify._families` (the ridge family: :mod:`certify.ridge`; SwiGLU: :mod:`certify.swiglu`;
the linear skip: :mod:`certify.skip`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from flint import arb, arb_mat
from popdyn import assembly as _asm
from popdyn.accuracy import AccuracyWarning
from popdyn.family import family_of
from popdyn.objective import population_loss

from . import _arb as A
from . import _families
from .arrays import ARB, as_vec, col
from .bracket import Bracket, BracketArray
from .errors import CertificationError
from .moments import certified_moments, pair_supported, student_supported

if TYPE_CHECKING:
    from popdyn.typing import AnyParams, AnyStudent
    from popdyn.teachers import Teacher

__all__ = ["LossBracket", "loss"]


@dataclass(frozen=True)
class LossBracket:
    """Brackets of the population objective at one state.

    Attributes
    ----------
    loss : Bracket
        L = ½E[(f − y)²] (the objective; ``mse`` = 2L).
    mse : Bracket
        E[(f − y)²].
    normalized : Bracket
        MSE / V_Y (docs/design.md §2: ≈ 1 at a small initialization with a fitted intercept).
    variance, mean_y : Bracket
        V_Y = Var(y) and E[y].
    grad : dict or None
        With ``grad=True``: {"a", "W", "b", "c"} → :class:`BracketArray` / :class:`Bracket`
        of ∂L/∂a, ∂L/∂W, ∂L/∂b, ∂L/∂c.
    provenance : str
        "rigorous" or "numerical" (see the module docstring).
    prec : int
        Working precision in bits.
    notes : tuple of str
    """

    loss: Bracket
    mse: Bracket
    normalized: Bracket
    variance: Bracket
    mean_y: Bracket
    provenance: str
    prec: int
    grad: dict | None = None
    notes: tuple = ()


def _check_inputs(student, params, teacher):
    family_of(student).check(params, teacher)


def _scale(student):
    return arb(1) if student.scaling == "standard" else arb(1) / student.m


def _from(x, prov, lo=None, note=""):
    b = Bracket.from_arb(x, provenance=prov, note=note)
    if lo is not None and b.lo < lo:
        b = b.replace(lo=min(float(lo), b.hi))
    return b


def _finite_or_raise(x, what):
    if not x.is_finite():
        raise CertificationError(f"the enclosure of {what} is not finite",
                                 hint="a higher prec")


def loss(student: AnyStudent, params: AnyParams, teacher: Teacher, *, prec: int = 128,
         grad: bool = False) -> LossBracket:
    """Bracket the population loss L = ½E[(f − y)²] (and optionally its gradient).

    Parameters
    ----------
    student : popdyn.Student or popdyn.SwiGLUStudent
        SwiGLU students are bracketed by :func:`certify.swiglu.swiglu_loss` (rigorous for
        additive teachers with polynomial links, numerical otherwise; no gradient).
    params : popdyn.Params or popdyn.SwiGLUParams
        Every entry is taken as its exact float64 value.
    teacher : popdyn.Teacher
    prec : int, keyword-only
        Working precision in bits (default 128; 2 <= prec <= 65536).  Up to 128 bits most
        student pairs use the float64 Mehler path with rigorous bounds (:mod:`certify.moments`),
        giving relative widths ~1e−14 for relu-family losses; above 128 bits every pair is
        computed in Arb and the width keeps shrinking like 2^{−prec}.
    grad : bool, keyword-only
        Also bracket the gradient (relu / leaky_relu students against PL teachers and links
        whose Hermite part is a polynomial).

    Returns
    -------
    LossBracket

    Raises
    ------
    TypeError, ValueError
        Bad inputs (wrong types, non-finite parameters, bad ``prec``).
    CertificationError
        When no finite enclosure is obtained (try a higher ``prec``), or a gradient outside the
        supported families is requested.

    Examples
    --------
    >>> import numpy as np, popdyn, certify
    >>> T = popdyn.Teacher.additive("h2", np.eye(3)[:1])
    >>> S = popdyn.Student(d=3, m=4)
    >>> p = S.init(0, 0.5, T)
    >>> res = certify.loss(S, p, T)
    >>> res.loss.contains(popdyn.population_loss(S, p, T)), res.provenance
    (True, 'rigorous')

    References
    ----------
    docs/design.md §3 (moments), §6 (brackets); :mod:`popdyn.objective` (formulas).
    """
    prec = A.check_prec(prec)
    if not isinstance(grad, bool):
        raise TypeError(f"`grad` must be a bool, got {grad!r}")
    certifier = _families.of(student)           # ridge (certify.ridge), skip, swiglu
    if certifier.loss is None:                  # no certified moments for this family's terms
        _check_inputs(student, params, teacher)
    if grad:
        return certifier.require("grad", student)(student, params, teacher, prec=prec, grad=True)
    if certifier.loss is None:
        return _numerical_loss(student, params, teacher, prec)
    return certifier.loss(student, params, teacher, prec=prec)


def _ridge_family_loss(student, params, teacher, *, prec: int, grad: bool = False):
    """:func:`loss` for the ridge family (relu, leaky relu and the smooth activations)."""
    _check_inputs(student, params, teacher)
    if not teacher.ridge:
        # gated / multi-index teachers: the float64 engine's value ± twice its estimated error
        # (``numerical``; docs/design.md §6)
        if grad:
            raise CertificationError(
                f"the gradient against {type(teacher).__name__} (gated / multi-index) teachers "
                "is not certified", hint="grad=False (a numerical loss bracket), or "
                "popdyn.population_grad")
        CM = _source_moments(student, params, teacher, prec)   # rigorous (certify.gated)
        if CM is None:
            return _numerical_loss(student, params, teacher, prec)
    elif not grad:
        CM = _source_moments(student, params, teacher, prec)   # rigorous (certify.pl_smooth)
    else:
        CM = None
    covered, rigorous = (True, True) if CM is not None else pair_supported(student, teacher)
    if not (student_supported(student) and covered) or (grad and student.act.kind != "pl"):
        if grad:
            raise CertificationError(
                f"the gradient is certified only for relu / leaky_relu students against PL or "
                f"polynomial-link teachers (student {student.activation!r})",
                hint="certify the loss only (grad=False)")
        return _numerical_loss(student, params, teacher, prec)
    if CM is None:
        CM = certified_moments(student, params, teacher, prec=prec, grad=grad)
    with A.workprec(prec):
        s = _scale(student)
        a = A.mat_from_array(params.a)
        c = arb(float(params.c))
        L = _ridge_loss(CM, s, a, c)
        prov = "rigorous" if CM.rigorous else "numerical"
        g = _grad(student, params, teacher, CM, s, a, c, prov) if grad else None
        return _brackets(L, CM, prec, g)


def _source_moments(student, params, teacher, prec):
    """The moments of the moment source registered for the pair (:mod:`certify.ridge`), or
    None when no source covers it."""
    src = _families.source(student, teacher)
    if src is None or src.moments is None:
        return None
    return src.moments(student, params, teacher, prec=prec)


def _ridge_loss(CM, s, a, c):
    """L = ½(s²aᵀCa + 2sc aᵀμ0 + c² − 2s aᵀ(Ct v) − 2c E[y] + E[y²]) (a ball): the float
    engine's assembly (:func:`popdyn.assembly.ridge_loss`) in the Arb context."""
    return _asm.ridge_loss(ARB, s, as_vec(a), c, CM.C, as_vec(CM.mu0), CM.Ct, as_vec(CM.v),
                           CM.ey, CM.ey2)


def _brackets(L, CM, prec, g=None) -> LossBracket:
    """The :class:`LossBracket` of the ball ``L`` with the teacher moments of ``CM``."""
    prov = "rigorous" if CM.rigorous else "numerical"
    var = CM.ey2 - CM.ey * CM.ey
    _finite_or_raise(L, "the loss")
    note = "; ".join(CM.notes)
    Lb = _from(L, prov, lo=0.0, note=note)
    mse = _from(2 * L, prov, lo=0.0, note=note)
    vb = _from(var, prov, lo=0.0, note=note)
    if var > 0:
        nb = _from(2 * L / var, prov, lo=0.0, note=note)
    else:
        nb = Bracket(0.0, float("inf"), provenance=prov, status="unresolved",
                     note="V_Y not certified positive")
    return LossBracket(Lb, mse, nb, vb, _from(CM.ey, prov, note=note), prov, prec, g,
                       tuple(CM.notes))


def _arr_bounds(M: arb_mat, shape, prov):
    lo, hi = A.mat_bounds(M)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise CertificationError("a gradient enclosure is not finite", hint="a higher prec")
    return BracketArray(lo.reshape(shape), hi.reshape(shape), prov)


def _grad(student, params, teacher, CM, s, a, c, prov):
    """The gradient brackets {"a", "W", "b", "c"} of the balls of :func:`_grad_balls`."""
    return _grad_brackets(student, _grad_balls(student, params, teacher, CM, s, a, c), prov)


def _grad_brackets(student, g, prov):
    """Brackets of the gradient balls ``g`` (None for b and c: exactly 0)."""
    m, d = student.m, student.d
    out = {"a": _arr_bounds(g["a"], (m,), prov)}
    out["c"] = (Bracket.from_arb(g["c"], provenance=prov) if g["c"] is not None
                else Bracket.point(0.0, provenance=prov))
    out["b"] = (_arr_bounds(g["b"], (m,), prov) if g["b"] is not None
                else BracketArray(np.zeros(m), np.zeros(m), prov))
    out["W"] = _arr_bounds(g["W"], (m, d), prov)
    return out


def _grad_balls(student, params, teacher, CM, s, a, c):
    """∂L/∂a (m×1), ∂L/∂W (m×d), ∂L/∂b (m×1 or None), ∂L/∂c (ball or None) as balls: the
    float engine's assembly (:func:`popdyn.assembly.ridge_grad`) in the Arb context."""
    m, d = student.m, student.d
    v = as_vec(CM.v)
    vU = ARB.scale_rows(v, A.mat_from_array(teacher.U))
    theta = arb_mat(m, d, [x for row in CM.theta for x in row])
    ga, gW, gb, gc = _asm.ridge_grad(
        ARB, s, as_vec(a), A.mat_from_array(params.W), c, student.bias, student.intercept,
        theta, CM.C, CM.B, CM.A, CM.D, as_vec(CM.mu0), _vec_or_none(CM.mu1),
        as_vec(CM.mu2), CM.Ct, CM.Bt, CM.At, CM.Dt, v, vU, CM.ey)
    return {"a": col(ga), "c": gc, "b": None if gb is None else col(gb), "W": gW}


def _vec_or_none(M):
    return None if M is None else as_vec(M)


def _numerical_loss(student, params, teacher, prec):
    """Float64 engine value ± (2 × its estimated series error + 1e−13 × the loss scale)."""
    import warnings

    fam = family_of(student)
    with warnings.catch_warnings():      # the bracket below carries the estimated error
        warnings.simplefilter("ignore", AccuracyWarning)
        L, info = population_loss(student, params, teacher, full_output=True)
    scale = fam.loss_scale(params, teacher, fam.moments(params, teacher, need="loss"))
    err = 2.0 * float(info["error"]) + 1e-13 * scale
    if not np.isfinite(err):
        raise CertificationError("the float64 engine gave no finite error estimate",
                                 hint="a smaller rtol in popdyn, or a supported activation")
    note = ("float64 engine with its estimated series error (smooth activation or smooth "
            "teacher network: Hermite coefficients by quadrature, tails estimated)")
    Lb = Bracket.enclosing(max(L - err, 0.0), L + err, provenance="numerical", note=note)
    V = teacher.variance
    mse = Lb.scale(2.0)
    verr = 1e-13 * max(teacher.second_moment, 1e-300)
    vb = Bracket.enclosing(max(V - verr, 0.0), V + verr, provenance="numerical", note=note)
    if vb.lo > 0:
        nb = Bracket.enclosing(mse.lo / vb.hi * (1 - 1e-15), mse.hi / vb.lo * (1 + 1e-15),
                               provenance="numerical", note=note)
    else:
        nb = Bracket(0.0, float("inf"), provenance="numerical", status="unresolved", note=note)
    ey = teacher.mean
    mb = Bracket.enclosing(ey - verr, ey + verr, provenance="numerical", note=note)
    return LossBracket(Lb, mse, nb, vb, mb, "numerical", prec, None, (note,))

