"""Population objective L = ½E[(f − y)²] and its exact gradient (docs/design.md §3).

With moment matrices C = E[σ_iσ_j], B = E[σ′_iσ′_j], Ã = E[α_iσ″_iσ_j], D = E[σ′_iσ_j], first
moments μ0 = E[σ], μ1 = E[σ′], μ2 = E[ασ″], teacher cross moments (superscript T, against the
teacher's ridge units t_k = α_kθ_k·x + β_k with weights v_k) and Stein's lemma
E[σ′_j(t_j) φ(t) x] = θ_j E[α_jσ″_j φ] + α_tθ_t E[σ′_j φ′]:

    L      = ½ (s² aᵀCa + 2sc aᵀμ0 + c² − 2s aᵀCᵀv − 2c E[y] + E[y²])
    ∂L/∂a  = s (s C a + c μ0 − Cᵀ v)
    ∂L/∂c  = s aᵀμ0 + c − E[y]
    ∂L/∂b  = s a ∘ (s D a + c μ1 − Dᵀ v)
    ∂L/∂W  = s a ∘ [ θ ∘ (s Ã a + c μ2 − Ãᵀ v) + s B (a ∘ W) − Bᵀ (v ∘ α_tθ_t) ]

(∘ scales rows).  For a neuron with w_j = 0 the θ_j term is absent (θ_j := 0).

These formulas are assembled by the ``ridge`` family (:class:`popdyn.families.ridge.RidgeFamily`); the
functions here are generic: they call only the student-family protocol of
:mod:`popdyn.family` (``student.family``: check, moments, loss, grad, fit_intercept), so SwiGLU
students (:mod:`popdyn.swiglu`), skip students (:mod:`popdyn.skip`) and multi-index teachers go
through the same code.

References
----------
Kumar (arXiv 2609.39408), population objective; docs/design.md §3.
"""
from __future__ import annotations

from typing import Any, Literal, overload

import numpy as np

from . import _moments as _mom
from . import accuracy as _acc
from ._notice import compile_notice
from .family import StudentFamily, family_of
from .models import Params
from ._typing import AnyParams, AnyStudent, P
from .teachers import Teacher
from .threads import kernel_blas


def check_inputs(student, params, teacher):
    """Validate (student, params, teacher) through the student's family (a ``ValueError`` or
    ``TypeError`` naming the argument)."""
    family_of(student).check(params, teacher)


_check = check_inputs  # the name used inside popdyn


def _loss_from(student: AnyStudent, params: AnyParams, teacher: Teacher, M: Any) -> float:
    return student.family.loss(params, teacher, M)


def _grad_from(student, params, teacher, M):
    return student.family.grad(params, teacher, M)


def _loss_error(student: AnyStudent, params: AnyParams, teacher: Teacher, M: Any) -> float:
    return student.family.loss_error(params, teacher, M)


@overload
def population_loss(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: Literal[False] = False) -> float: ...
@overload
def population_loss(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: Literal[True]) -> tuple[float, dict[str, Any]]: ...
@overload
def population_loss(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: bool = False) -> float | tuple[float, dict[str, Any]]: ...
def population_loss(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: bool = False) -> float | tuple[float, dict[str, Any]]:
    """L = ½E[(f − y)²] exactly (closed forms for relu/leaky_relu; Hermite series otherwise).

    Parameters
    ----------
    rtol : float
        Requested relative accuracy (a contract, :mod:`popdyn.accuracy`): L is returned when its
        estimated error is at most ``rtol·|L| + atol`` (``atol``: the float64 rounding floor
        8(n + 2)u times the size of the loss's terms, n the number of units); otherwise the
        Hermite series of smooth activations and non-polynomial links are refined (series
        tolerance ÷100 per step down to 1e−16, at most :data:`popdyn.accuracy.MAX_STEPS` steps,
        a work bound, so the result does not depend on the machine's load) and, if the estimate
        still exceeds it, an :class:`popdyn.AccuracyWarning` names the cap that was hit.  Closed forms (relu /
        leaky relu against PL teachers) are within rounding.
    full_output : bool
        If True return ``(L, info)`` where ``info["error"]`` is the estimated absolute error of L
        from series truncation and rounding (0 for pure closed forms beyond rounding),
        ``info["order"]`` the Hermite truncation order used (None if none was needed),
        ``info["rtol"]``, ``info["atol"]``, ``info["series_tol"]`` (the series tolerance of the
        returned value) and ``info["within_rtol"]`` (error <= rtol·|L| + atol).

    Every student family (:mod:`popdyn.family`: ridge, skip, SwiGLU) and every teacher kind
    (additive, network, gated, multi-index) goes through the family protocol.
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    fam = family_of(student)
    fam.check(params, teacher)
    L, info = _contract_loss(fam, params, teacher, rtol)
    if full_output:
        return L, info
    return L


def _loss_atol(fam: StudentFamily, params: AnyParams, teacher: Teacher, M: Any,
               info: dict) -> float:
    """The rounding floor of the loss (``atol`` of the contract)."""
    if "rounding" in info:
        return float(info["rounding"])
    scale = fam.loss_scale(params, teacher, M) if hasattr(fam, "loss_scale") else 0.0
    n = int(params.a.shape[0]) + int(getattr(teacher, "k", 1) or 1)
    return _acc.rounding_floor(n, scale)


def _what(fam: StudentFamily) -> str:
    """The student named in an AccuracyWarning: its activation, else its family's label."""
    act = getattr(getattr(fam, "student", None), "activation", None)
    return str(act) if act is not None else getattr(fam, "label", "student")


def _contract_loss(fam, params, teacher, rtol):
    """(L, info) under the tolerance contract of :mod:`popdyn.accuracy`."""
    if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and 0 < rtol < 1):
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    tol = float(rtol)
    steps = 0
    while True:
        M = fam.moments(params, teacher, need="loss", tol=tol)
        L = fam.loss(params, teacher, M)
        info = dict(fam.loss_info(params, teacher, M))
        atol = _loss_atol(fam, params, teacher, M, info)
        err = _acc.finite_or_inf(info["error"])
        target = rtol * abs(L) + atol
        info.update(rtol=float(rtol), atol=atol, series_tol=tol, within_rtol=err <= target)
        if err <= target:
            return L, info
        order = info.get("order")
        cap = info.get("cap")
        if cap is None and order is not None and order >= _acc.ORDER_CAP:
            cap = f"the Hermite order cap {_acc.ORDER_CAP} was reached"
        if cap is not None:
            break
        if tol <= _acc.RTOL_FLOOR:
            cap = f"the series tolerance floor {_acc.RTOL_FLOOR:g} was reached"
            break
        cap = _acc.budget_cap(steps)
        if cap is not None:
            break
        tol = _acc.next_tolerance(tol, err, target)
        steps += 1
    _acc.warn(f"population loss of the {_what(fam)} student", err,
              target, rtol, cap, "certify.loss gives a rigorous bracket.", stacklevel=4)
    return L, info


#: the gradient's blocks of the contract: the output layer (a, c) and each other field
def _blocks(fields):
    out = [tuple(f for f in ("a", "c") if f in fields)]
    out += [(f,) for f in fields if f not in ("a", "c")]
    return [b for b in out if b]


def _as_arrays(g, fields):
    return {f: np.atleast_1d(np.asarray(getattr(g, f), dtype=float)) for f in fields}


def _grad_check(fam, params, teacher, g, err, scale, rtol):
    """Per-block (error, atol, target) of the gradient contract and whether all are met.

    Block ``B`` (:func:`_blocks`): error = max over its entries of the entrywise estimate,
    atol = the float64 rounding floor of its largest term sum (:func:`popdyn.accuracy.
    rounding_floor` with n = m + k + 2 terms), target = rtol·max|∇L entries of B| + atol."""
    fields = [f for f in fam.fields if getattr(g, f, None) is not None]
    G = _as_arrays(g, fields)
    Ea = _as_arrays(err, fields) if err is not None else None
    Sa = _as_arrays(scale, fields)
    n = int(params.a.shape[0]) + int(getattr(teacher, "k", 1) or 1)
    out, ok = {}, True
    for blk in _blocks(fields):
        gmax = max(float(np.max(np.abs(G[f]))) if G[f].size else 0.0 for f in blk)
        smax = max(float(np.max(Sa[f])) if Sa[f].size else 0.0 for f in blk)
        e = (max(float(np.max(Ea[f])) if Ea[f].size else 0.0 for f in blk)
             if Ea is not None else np.inf)
        atol = _acc.rounding_floor(n, smax)
        target = rtol * gmax + atol
        e = _acc.finite_or_inf(e)
        out["+".join(blk)] = (e, atol, target)
        ok = ok and e <= target
    return out, ok


def _aposteriori(fam, params, teacher, tol):
    """(M, g, err) for a family or teacher without moment error estimates: the gradient at
    ``tol`` and at tol/100 (returned), the entrywise change between them as the estimate (an
    a-posteriori estimate, as the AGOP's)."""
    M1 = fam.moments(params, teacher, need="grad", tol=tol)
    g1 = fam.grad(params, teacher, M1)
    t2 = max(tol / _acc.STEP, _acc.RTOL_FLOOR)
    M = fam.moments(params, teacher, need="grad", tol=t2)
    g = fam.grad(params, teacher, M)
    fields = [f for f in fam.fields if getattr(g, f, None) is not None]
    err = type(g)(*[np.abs(np.asarray(getattr(g, f), dtype=float)
                           - np.asarray(getattr(g1, f), dtype=float)) for f in g._ARRAYS],
                  abs(g.c - g1.c))
    if "v" in fields:
        err = err.replace(v=np.abs(g.v - g1.v))
    return M, g, err


def _grad_scale(fam, params, teacher, M, g):
    if hasattr(fam, "grad_scale"):
        return fam.grad_scale(params, teacher, M)
    # families without a term-size propagation: the size of the entries themselves
    fields = [f for f in fam.fields if getattr(g, f, None) is not None]
    sc = type(g)(*[np.abs(np.asarray(getattr(g, f), dtype=float)) for f in g._ARRAYS],
                 abs(g.c))
    if "v" in fields:
        sc = sc.replace(v=np.abs(g.v))
    return sc


def _closed(fam: StudentFamily, student: AnyStudent, teacher: Teacher, rtol: float) -> bool:
    """The fused relu / leaky-relu pairs (:func:`popdyn._moments.closed_form`): nothing to
    estimate, the family's own evaluation is returned (the integrators' bits, no overhead)."""
    if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and 0 < rtol < 1):
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    from .families import capability

    return capability(fam, "fused_kernel") is not None and _mom.closed_form(student, teacher)


def _contract_grad(fam, params, teacher, rtol, with_loss):
    """(L or None, ∇L, info) under the tolerance contract (see :func:`population_grad`)."""
    if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and 0 < rtol < 1):
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    rtol = float(rtol)
    tol = rtol
    steps, prev = 0, np.inf
    has_est = hasattr(fam, "grad_error")
    while True:
        err = None
        if has_est:
            M = fam.moments(params, teacher, need="grad_err", tol=tol)
            g = fam.grad(params, teacher, M)
            err = fam.grad_error(params, teacher, M)
        if err is None:
            M, g, err = _aposteriori(fam, params, teacher, tol)
            used = max(tol / _acc.STEP, _acc.RTOL_FLOOR)
            post, has_est = True, False
        else:
            used = tol
            post = False
        blocks, ok = _grad_check(fam, params, teacher, g, err,
                                 _grad_scale(fam, params, teacher, M, g), rtol)
        order = getattr(M, "order", None)
        info = {"error": {k: v[0] for k, v in blocks.items()},
                "atol": {k: v[1] for k, v in blocks.items()},
                "entry_error": err, "order": order, "rtol": rtol, "series_tol": used,
                "within_rtol": bool(ok)}
        L = linfo = None
        lok = True
        if with_loss and not post:
            L = fam.loss(params, teacher, M)
            li = dict(fam.loss_info(params, teacher, M)) if M.errC is not None else {
                "error": np.inf, "order": order}
            latol = _loss_atol(fam, params, teacher, M, li)
            lerr = _acc.finite_or_inf(li["error"])
            lok = lerr <= rtol * abs(L) + latol
            linfo = dict(li, rtol=rtol, atol=latol, series_tol=used, within_rtol=bool(lok))
        if ok and lok:
            break
        # the worst block's ratio sets the step (tails scale like the tolerance)
        worst = max((v[0] / v[2] if v[2] > 0 else np.inf) for v in blocks.values())
        if with_loss and not lok:
            worst = max(worst, lerr / (rtol * abs(L) + latol))
        if not ok and post and worst >= 0.5 * prev:
            cap = ("the a-posteriori estimate (the change between two series tolerances) "
                   "stopped improving")
            break
        cap = None
        if order is not None and order >= _acc.ORDER_CAP and not worst < 0.5 * prev:
            # at the order cap a unit's series cannot be refined; the others may still
            # converge, so the cap ends the refinement only once the estimate stops improving
            cap = f"the Hermite order cap {_acc.ORDER_CAP} was reached"
        elif used <= _acc.RTOL_FLOOR:
            cap = f"the series tolerance floor {_acc.RTOL_FLOOR:g} was reached"
        else:
            cap = _acc.budget_cap(steps)
        if cap is not None:
            break
        prev = worst
        tol = _acc.next_tolerance(tol, worst, 1.0)
        steps += 1
    what = _what(fam)
    act = getattr(getattr(fam, "student", None), "activation", None)
    if not ok:
        bad = [k for k, v in blocks.items() if not v[0] <= v[2]]
        k = bad[0]
        if act in ("relu", "leaky_relu"):
            hint = ("certify.loss(..., grad=True) gives rigorous brackets (PL or "
                    "polynomial-link teachers).")
        else:
            hint = ("certify.loss gives a rigorous loss bracket (rigorous gradients: relu and "
                    "leaky relu students).")
        _acc.warn(f"population gradient (block {k}) of the {what} student", blocks[k][0],
                  blocks[k][2], rtol, cap, hint, stacklevel=4)
    if with_loss and not lok:
        _acc.warn(f"population loss of the {what} student", lerr, rtol * abs(L) + latol, rtol,
                  cap, "certify.loss gives a rigorous bracket.", stacklevel=4)
    if with_loss and post:
        # no moment estimates for the gradient: the loss under its own contract
        L, linfo = _contract_loss(fam, params, teacher, rtol)
    return L, g, info, linfo


@overload
def population_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: Literal[False] = False) -> P: ...
@overload
def population_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: Literal[True]) -> tuple[P, dict[str, Any]]: ...
@overload
def population_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: bool = False) -> P | tuple[P, dict[str, Any]]: ...
def population_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                    full_output: bool = False) -> P | tuple[P, dict[str, Any]]:
    """The exact gradient of L = ½E[(f − y)²] in all parameters, as a :class:`Params`.

    Fixed parameters (biases of a bias-free student, intercept of an intercept-free student) get
    a zero gradient.

    Parameters
    ----------
    rtol : float
        Requested relative accuracy, a contract (:mod:`popdyn.accuracy`) per *block* of the
        gradient -- the output layer (∂L/∂a with ∂L/∂c), ∂L/∂W, ∂L/∂b (and ∂L/∂v of a skip
        student; each field of a SwiGLU student): the gradient is returned when, in every
        block, the largest estimated entry error is at most ``rtol·max|entries of the block|
        + atol`` (max-norm relative to the block's largest entry; ``atol`` the float64
        rounding floor 8(n + 2)u times the block's largest sum of |terms|, n the number of
        units).  Otherwise the Hermite series are refined (series tolerance ÷100 per step or
        in proportion to the excess, at most :data:`popdyn.accuracy.MAX_STEPS` steps, down to
        1e−16 or the order cap 4096; a work bound, not a time bound) and,
        if an estimate still exceeds its target, an :class:`popdyn.AccuracyWarning` names the
        block and the cap that was hit.  The estimate: the Mehler error estimates of every
        moment of the gradient (series tails of both sides, coefficient errors, rounding;
        :func:`popdyn._hermite.mehler_moment`) propagated entrywise in absolute values through
        the formulas of this module; closed forms (relu / leaky relu against PL networks) carry
        none and finite sums (polynomial links) only the bound on their per-unit truncation.
        Teachers or families without moment estimates (multi-index teachers, SwiGLU) use the
        change of the gradient between two series tolerances a factor 100 apart (the finer is
        returned).
    full_output : bool
        If True return ``(grad, info)``: ``info["error"]`` and ``info["atol"]`` map each block
        ("a+c", "W", "b", ...) to its estimated error and rounding floor,
        ``info["entry_error"]`` holds the entrywise estimates (same type as ``grad``),
        ``info["order"]`` the Hermite order used (None if none), ``info["rtol"]``,
        ``info["series_tol"]`` and ``info["within_rtol"]`` (every block within its target).
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    fam = family_of(student)
    fam.check(params, teacher)
    if not full_output and _closed(fam, student, teacher, rtol):
        return fam.grad(params, teacher, fam.moments(params, teacher, need="grad", tol=rtol))
    _, g, info, _ = _contract_grad(fam, params, teacher, rtol, False)
    if full_output:
        return g, info
    return g


def _fused_loss_and_grad(student, params, teacher):
    """(L, ∇L) of a relu / leaky-relu student against a PL-network or additive-link teacher
    (:func:`_closed`) by the fused kernel with its scratch kept between calls
    (:func:`popdyn._kernels.fused.pl_loss_grad_cached`): the engine's moments and assembly
    (``family.loss_and_grad``) bit for bit up to :data:`popdyn._kernels.fused.TILE` units,
    tile by tile beyond (O(m·d + tile²) memory, the sums over the units in another order),
    without mapping m×m arrays afresh at every call.  None for a non-finite W or b (the
    engine's general path handles them)."""
    from ._kernels import fused as _fk

    W, b = params.W, params.b
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
        return None
    tab = _mom.teacher_tables(teacher)
    m, d = W.shape
    ga, gW, gb = np.empty(m), np.empty((m, d)), np.empty(m)
    act = student.act
    with kernel_blas(m):
        L, gc = _fk.pl_loss_grad_cached(float(act.p), float(act.q), float(student.s),
                                        np.ascontiguousarray(params.a, dtype=np.float64),
                                        np.ascontiguousarray(W, dtype=np.float64),
                                        np.ascontiguousarray(b, dtype=np.float64),
                                        float(params.c), bool(student.bias),
                                        bool(student.intercept), *tab, ga, gW, gb)
    return float(L), Params(ga, gW, gb, float(gc))


@overload
def loss_and_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                  check: bool = True,
                  full_output: Literal[False] = False) -> tuple[float, P]: ...
@overload
def loss_and_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                  check: bool = True,
                  full_output: Literal[True]) -> tuple[float, P, dict[str, Any]]: ...
@overload
def loss_and_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                  check: bool = True, full_output: bool = False
                  ) -> tuple[float, P] | tuple[float, P, dict[str, Any]]: ...
def loss_and_grad(student: AnyStudent, params: P, teacher: Teacher, *, rtol: float = 1e-10,
                  check: bool = True, full_output: bool = False
                  ) -> tuple[float, P] | tuple[float, P, dict[str, Any]]:
    """(L, ∇L) from one moment evaluation, under the contracts of :func:`population_loss` and
    :func:`population_grad` (one refinement loop for both; a warning for each one missed).

    With ``full_output`` returns ``(L, ∇L, info)``, ``info = {"loss": <population_loss's
    info>, "grad": <population_grad's info>, "within_rtol": both met}``.  (The training
    integrators evaluate through their family's ``loss_and_grad`` at a fixed series tolerance:
    their trajectories do not depend on this contract.)

    A relu / leaky-relu student against a PL-network or additive-link teacher (closed forms)
    is evaluated by the fused kernel of the training step with its scratch kept between calls
    (:func:`popdyn._kernels.fused.pl_loss_grad_cached`): the bits of the engine's moments and
    assembly up to :data:`popdyn._kernels.fused.TILE` units; with more units, tile by tile
    (O(m·d + TILE²) memory, the sums over the units in another order: agreement to
    rounding)."""
    fam = family_of(student)
    if check:
        fam.check(params, teacher)
    if not full_output and _closed(fam, student, teacher, rtol):
        out = _fused_loss_and_grad(student, params, teacher)
        return out if out is not None else fam.loss_and_grad(params, teacher, tol=rtol)
    L, g, ginfo, linfo = _contract_grad(fam, params, teacher, rtol, True)
    if full_output:
        return L, g, {"loss": linfo, "grad": ginfo,
                      "within_rtol": bool(ginfo["within_rtol"] and linfo["within_rtol"])}
    return L, g


def fit_intercept(student: AnyStudent, params: P, teacher: Teacher) -> P:
    """Return ``params`` with the intercept set to its exact minimizer c = E[y] − E[f − c]."""
    return family_of(student).fit_intercept(params, teacher)
