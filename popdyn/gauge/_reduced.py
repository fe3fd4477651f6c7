r"""The exact single-neuron flow reduced to two variables (c, φ) (docs/design.md §7).

Setting: bias-free ReLU student f(x) = a·relu(w·x) (m = 1, s = 1, no intercept), teacher
y = relu(u·x) with |u| = 1, x ~ N(0, I_d).  With c = a|w| > 0, cos φ = θ·u, θ = w/|w|, the
conserved Δ = a² − |w|² and S = sqrt(Δ² + 4c²) (= a² + |w|², the reaction mobility):

    k(φ) = E[relu(θ·x) relu(u·x)] = (sin φ + (π − φ) cos φ) / (2π)
    G    = c/2 − k(φ)
    (I − θθᵀ)H = −((π − φ)/(2π)) (u − cos φ θ)
    ċ    = −S (c/2 − k(φ))
    φ̇    = −ρ (π − φ) sin φ / (2π),     ρ = a/|w| = (S + Δ)/(2c) = 2c/(S − Δ)

(the second form of ρ is used for Δ < 0, avoiding the cancellation in S + Δ).  The dimension d
enters only through the initial cosine; the sweeps use cos φ0 = 1/√d (a typical random
direction's overlap), set explicitly by ``cos0``.  Under D ↔ 1/D, S is unchanged and
ρ_D·ρ_{1/D} = 1 at every c.

:func:`reduced_vs_engine` checks this reduction against the engine's exact decomposition
(:func:`popdyn.gauge.decompose` on the m = 1 student) at given states, and
:func:`engine_specialization_time` integrates the engine's own gradient field for a full
cross-check of a specialization time.

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units");
docs/design.md §7 (the probe of the exact bias-free single-neuron flow).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from .. import _validate as V
from ..models import Params, Student
from ..objective import loss_and_grad
from ..teachers import Teacher
from ._bracket import NumericalBracket
from ._decompose import decompose

TWO_PI = 2.0 * np.pi
RTOLS = (1e-8, 1e-10, 1e-12)

__all__ = ["reduced_rhs", "ratio_start", "reduced_specialization_times", "single_neuron_problem",
           "reduced_vs_engine", "engine_specialization_time", "check_thresholds", "RTOLS"]


def check_start(c0, ratio, cos0):
    """Validated (c0, ratio, cos0) of a ratio-gauge start: c0 > 0, ratio > 0, cos0 ∈ (−1, 1)."""
    c0 = V.real("c0", c0, positive=True)
    ratio = V.real("ratio", ratio, positive=True)
    cos0 = V.real("cos0", cos0)
    if not -1.0 < cos0 < 1.0:
        raise ValueError(f"`cos0` must lie in (-1, 1), got {cos0!r}")
    return c0, ratio, cos0


def check_thresholds(thresholds, name: str = "thresholds") -> np.ndarray:
    """Validate alignment thresholds: a non-empty 1-D sequence of distinct numbers in (0, 1),
    returned sorted ascending."""
    arr = np.atleast_1d(np.array(thresholds, dtype=np.float64)) if not isinstance(thresholds, str) else None
    if arr is None or arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"`{name}` must be a number or a non-empty 1-D sequence in (0, 1), got {thresholds!r}")
    bad = ~((arr > 0) & (arr < 1))
    if np.any(bad):
        raise ValueError(f"`{name}` must lie in the open interval (0, 1), got {arr[bad][0]!r}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"`{name}` must be distinct, got {arr.tolist()}")
    return np.sort(arr)


def _k(phi):
    return (np.sin(phi) + (np.pi - phi) * np.cos(phi)) / TWO_PI


def _speed(c, Delta):
    S = np.sqrt(Delta * Delta + 4.0 * c * c)
    rho = (S + Delta) / (2.0 * c) if Delta >= 0 else 2.0 * c / (S - Delta)
    return S, rho


def reduced_rhs(c: float, phi: float, Delta: float):
    """(ċ, φ̇) of the reduced single-neuron flow (module docstring); c > 0, φ ∈ [0, π]."""
    S, rho = _speed(c, Delta)
    return -S * (0.5 * c - _k(phi)), -rho * (np.pi - phi) * np.sin(phi) / TWO_PI


def ratio_start(c0: float, ratio: float):
    """(a, |w|, Δ) with a|w| = c0 and a/|w| = ratio (a > 0)."""
    a = np.sqrt(c0 * ratio)
    w = np.sqrt(c0 / ratio)
    return a, w, a * a - w * w


def _solve(c0, Delta, phi0, thr, rtol, t_max):
    def rhs(t, y):
        return reduced_rhs(y[0], y[1], Delta)

    events = []
    for th in thr:
        def ev(t, y, th=th):
            return np.cos(y[1]) - th
        ev.direction = 1
        ev.terminal = False
        events.append(ev)
    events[-1].terminal = True
    atol = np.array([rtol * 1e-3 * c0, rtol * 1e-3])
    sol = solve_ivp(rhs, (0.0, t_max), [c0, phi0], method="LSODA", rtol=rtol, atol=atol,
                    events=events)
    if sol.status == -1:
        raise RuntimeError(f"reduced flow integration failed: {sol.message}")
    out = []
    for te in sol.t_events:
        out.append(float(te[0]) if len(te) else np.inf)
    return out, sol.nfev


def reduced_specialization_times(c0: float, ratio: float, cos0: float, thresholds, *,
                                 rtols=RTOLS, t_max: float = 1e8):
    """Specialization times of the reduced single-neuron flow, with numerical brackets.

    The neuron starts at coefficient ``c0`` = a|w| > 0, ratio a/|w| = ``ratio`` and initial
    cosine ``cos0`` with the teacher direction; the specialization time for threshold τ is the
    first flow time with cos φ ≥ τ.  The flow is integrated with LSODA (stiff-capable) at each
    relative tolerance in ``rtols`` (decreasing), the crossing located by root finding on the
    dense output; the bracket is centred on the finest estimate t_K and widened by
    2·max(|t_K − t_{K−1}|, |t_{K−1} − t_{K−2}|·rtol_K/rtol_{K−1}) plus 16 ulp — a tolerance-
    refinement rule, tagged ``numerical``.  A crossing not reached by ``t_max`` gives
    [t_max, inf).  Thresholds at or below ``cos0`` give the exact [0, 0].

    Returns
    -------
    list of NumericalBracket, one per threshold (in the order of the sorted thresholds), and the
    total number of right-hand-side evaluations.
    """
    c0, ratio, cos0 = check_start(c0, ratio, cos0)
    thr = check_thresholds(thresholds)
    rt = [V.real("rtols", r, positive=True) for r in rtols]
    if len(rt) < 2 or any(rt[i + 1] >= rt[i] for i in range(len(rt) - 1)):
        raise ValueError(f"`rtols` must be >= 2 strictly decreasing tolerances, got {rtols!r}")
    _, _, Delta = ratio_start(c0, ratio)
    phi0 = float(np.arccos(cos0))
    todo = thr[thr > cos0]
    est: Any = []
    nfev = 0
    if todo.size:
        for r in rt:
            ts, nf = _solve(c0, Delta, phi0, todo, r, t_max)
            est.append(ts)
            nfev += nf
        est = np.array(est)  # (K, len(todo))
    out = []
    j = 0
    for th in thr:
        if th <= cos0:
            out.append(NumericalBracket(0.0, 0.0, 0.0, "initial cosine above threshold (exact)"))
            continue
        col = est[:, j]
        j += 1
        tK = col[-1]
        if not np.isfinite(tK):
            out.append(NumericalBracket(t_max, np.inf, t_max, "not reached by t_max"))
            continue
        e1 = abs(col[-1] - col[-2])
        e2 = abs(col[-2] - col[-3]) * rt[-1] / rt[-2] if len(col) >= 3 else 0.0
        w = 2.0 * max(e1, e2) + 16.0 * np.finfo(float).eps * tK
        out.append(NumericalBracket(max(tK - w, 0.0), tK + w, tK,
                                    f"LSODA event, tolerance refinement rtol={rt}"))
    return out, nfev


def single_neuron_problem(d: int, c0: float, ratio: float, cos0: float | None = None):
    """The engine objects of the reduced problem: (student, params, teacher).

    Student(d, m = 1, relu, bias=False, intercept=False); teacher relu(e_1·x); the neuron has
    a = sqrt(c0·ratio) > 0 and w = sqrt(c0/ratio)·(cos0 e_1 + sin0 e_2), cos0 = 1/√d by default.
    """
    d = V.positive_int("d", d)
    if d < 2:
        raise ValueError(f"`d` must be >= 2 for the single-neuron problem, got {d}")
    cos0 = 1.0 / np.sqrt(d) if cos0 is None else V.real("cos0", cos0)
    a, wn, _ = ratio_start(V.real("c0", c0, positive=True), V.real("ratio", ratio, positive=True))
    w = np.zeros(d)
    w[0] = cos0
    w[1] = np.sqrt(max(1.0 - cos0 * cos0, 0.0))
    student = Student(d, 1, "relu", bias=False, intercept=False)
    U = np.zeros((1, d))
    U[0, 0] = 1.0
    teacher = Teacher.network("relu", [1.0], U)
    return student, Params([a], [wn * w], [0.0], 0.0), teacher


def reduced_vs_engine(states, d: int = 3) -> float:
    """Max relative discrepancy between the reduced (ċ, d cos φ/dt) and the engine's exact
    decomposition at the given states ``(c, cos φ, ratio)`` — an independent check of the
    reduction (and of the engine's decomposition)."""
    worst = 0.0
    for c, cphi, ratio in states:
        student, p, teacher = single_neuron_problem(d, c, ratio, cphi)
        dec = decompose(student, p, teacher)
        _, _, Delta = ratio_start(c, ratio)
        phi = float(np.arccos(cphi))
        cdot, phidot = reduced_rhs(c, phi, Delta)
        dcos = -np.sin(phi) * phidot
        S, rho = _speed(c, Delta)
        u = np.zeros(d)
        u[0] = 1.0
        e_c = abs(dec.c_dot[0] - cdot) / (S * (0.5 * c + _k(phi)))
        e_t = abs(dec.theta_dot[0] @ u - dcos) / (abs(rho) * (np.pi + 1) / TWO_PI + 1e-300)
        worst = max(worst, e_c, e_t)
    return float(worst)


def engine_specialization_time(d: int, c0: float, ratio: float, threshold: float, *,
                               cos0: float | None = None, rtol: float = 1e-10,
                               t_max: float = 1e6) -> float:
    """The specialization time of the same problem from the *engine's* gradient field
    (ȧ = −∂L/∂a, ẇ = −∂L/∂w with :func:`popdyn.population_grad`), integrated by LSODA at
    ``rtol`` with an event on cos(w, e_1) = threshold.  A cross-check of the reduction."""
    threshold = float(check_thresholds([threshold])[0])
    student, p0, teacher = single_neuron_problem(d, c0, ratio, cos0)
    if p0.W[0, 0] / np.linalg.norm(p0.W[0]) >= threshold:
        return 0.0

    def rhs(t, y):
        p = Params(y[:1], y[1:].reshape(1, d), np.zeros(1), 0.0)
        _, g = loss_and_grad(student, p, teacher, check=False)
        return -np.concatenate([g.a, g.W.ravel()])

    def ev(t, y):
        w = y[1:]
        return w[0] / np.linalg.norm(w) - threshold
    # (ignore[attr-defined]: solve_ivp reads these attributes off the event function)
    ev.terminal = True  # type: ignore[attr-defined]
    ev.direction = 1  # type: ignore[attr-defined]
    y0 = np.concatenate([p0.a, p0.W.ravel()])
    scale = np.abs(y0) + np.sqrt(c0) * 1e-3
    sol = solve_ivp(rhs, (0.0, t_max), y0, method="LSODA", rtol=rtol, atol=rtol * 1e-3 * scale,
                    events=ev)
    if sol.status == -1:
        raise RuntimeError(f"engine flow integration failed: {sol.message}")
    return float(sol.t_events[0][0]) if len(sol.t_events[0]) else np.inf
