"""The bounded normalized-feature refit of Kumar (arXiv 2609.39408), eq. (6) and App. A.

References: the exhaustive 40-digit KKT minimum of tests/_bounded_kkt.py on synthetic quadratics
and on population quadratics whose H, c, E[y²] come from the independent 50-digit quadrature of
tests/certify/_ref.py (data/_precompute/bounded_refit_refs.py → data/refs/bounded_refit_refs.json);
scipy's SLSQP from many starts on larger problems; hypothesis properties (the lower value is below
R at random feasible points, exact feasibility, the support-function bound).
"""
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import example, given, settings, strategies as st
from mpmath import mpf

import popdyn
from popdyn.diagnostics import (BoundedProblem, bounded_problem, bounded_refit, default_caps,
                                refit_gain, solve_bounded)
from popdyn.diagnostics.refit import support_split

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _bounded_cases import build, exact_feasible as _exact_feasible, hx as _hx  # noqa: E402

REFS = Path(__file__).resolve().parents[2] / "data" / "refs" / "bounded_refit_refs.json"


def _refs():
    return json.loads(REFS.read_text())


# ---------------------------------------------------------------------------- references
@pytest.mark.parametrize("case", _refs()["synthetic"], ids=lambda c: c["name"])
def test_synthetic_against_kkt_reference(case):
    m = case["m"]
    H = _hx(case["H"]).reshape(m, m)
    prob = BoundedProblem.from_arrays(H, _hx(case["c"]), float.fromhex(case["e"]),
                                      l2_cap=float.fromhex(case["l2_cap"]),
                                      l1_cap=float.fromhex(case["l1_cap"]))
    r = solve_bounded(prob)
    Rs = mpf(case["R"])
    assert _exact_feasible(r.head, prob.l2_cap, prob.l1_cap)
    # the lower value is a bound for these (exact) float data; the upper one is R(v̂) evaluated in
    # float64 (rounding ~1e−16 relative)
    assert r.lower <= Rs
    assert r.upper >= Rs - 4e-16 * prob.second_moment
    assert r.upper - Rs <= 1e-9 * prob.second_moment
    assert r.gap <= 1e-9 * prob.second_moment
    vs = np.array([float(x) for x in case["v"]])
    assert np.linalg.norm(r.head - vs) <= 1e-4 * max(1.0, np.linalg.norm(vs))


def test_some_references_have_active_caps():
    """The references exercise the caps (else the KKT enumeration would test nothing new)."""
    act = 0
    for case in _refs()["synthetic"] + _refs()["population"]:
        vs = np.array([float(x) for x in case["v"]])
        a, b = float.fromhex(case["l2_cap"]), float.fromhex(case["l1_cap"])
        act += (abs(np.linalg.norm(vs) - a) < 1e-20 * a + 1e-12) or (abs(np.abs(vs).sum() - b) < 1e-12)
    assert act >= 5


@pytest.mark.parametrize("case", _refs()["population"], ids=lambda c: c["name"])
def test_population_against_reference(case):
    S, p, T, a, b = build(case)
    prob = bounded_problem(S, p, T, l2_cap=a, l1_cap=b)
    m = case["m"]
    H = np.array([float(x) for x in case["H"]]).reshape(m, m)
    c = np.array([float(x) for x in case["c"]])
    np.testing.assert_allclose(prob.H, H, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(prob.c, c, rtol=1e-12, atol=1e-15)
    assert prob.second_moment == pytest.approx(float(case["e"]), rel=1e-14)
    r = bounded_refit(S, p, T, l2_cap=a, l1_cap=b)
    Rs = mpf(case["R"])
    tol = 1e-13       # the float moments' error
    assert r.lower - tol <= Rs <= r.upper + tol
    assert r.upper - Rs <= 1e-9


# ---------------------------------------------------------------------------- independent solver
def _slsqp(prob, starts=12, seed=0):
    """min R over K by SLSQP in split variables v = p − q, p, q ≥ 0 (smooth constraints)."""
    H, c, e, a, b = prob.H, prob.c, prob.second_moment, prob.l2_cap, prob.l1_cap
    m = prob.m
    rng = np.random.default_rng(seed)

    def f(x):
        v = x[:m] - x[m:]
        return e - 2 * c @ v + v @ H @ v

    def jac(x):
        v = x[:m] - x[m:]
        gv = 2 * (H @ v - c)
        return np.concatenate([gv, -gv])

    cons = [{"type": "ineq", "fun": lambda x: b - np.sum(x), "jac": lambda x: -np.ones(2 * m)},
            {"type": "ineq", "fun": lambda x: a * a - np.sum((x[:m] - x[m:]) ** 2),
             "jac": lambda x: np.concatenate([-2 * (x[:m] - x[m:]), 2 * (x[:m] - x[m:])])}]
    best = math.inf
    for _ in range(starts):
        v0 = rng.standard_normal(m)
        v0 *= 0.5 * min(a / np.linalg.norm(v0), b / np.abs(v0).sum())
        x0 = np.concatenate([np.maximum(v0, 0), np.maximum(-v0, 0)])
        res = so.minimize(f, x0, jac=jac, bounds=[(0, None)] * (2 * m), constraints=cons,
                          method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000})
        v = res.x[:m] - res.x[m:]
        # SLSQP may end a hair outside K (a linear objective sits on its boundary): scaled back
        # into K, the point is feasible and its value still bounds the minimum from above
        nv, n1 = np.linalg.norm(v), np.abs(v).sum()
        if not (np.all(np.isfinite(v)) and nv > 0):
            continue
        v = v * min(1.0, a / nv, b / n1)
        best = min(best, e - 2 * c @ v + v @ H @ v)
    return best


@pytest.mark.parametrize("seed,a,b", [(0, 0.4, 0.7), (1, 1.5, 2.0), (2, 10.0, 3.0),
                                      (3, 50.0, 500.0)])
def test_against_slsqp(seed, a, b):
    rng = np.random.default_rng(seed)
    m, n = 8, 30
    X = rng.standard_normal((n, m))
    y = X @ rng.standard_normal(m) + 0.5 * rng.standard_normal(n)
    prob = BoundedProblem.from_arrays(X.T @ X / n, X.T @ y / n, y @ y / n, l2_cap=a, l1_cap=b)
    r = solve_bounded(prob)
    best = _slsqp(prob)
    assert r.lower <= best + 1e-12
    assert r.upper <= best + 1e-8
    assert r.gap <= 1e-8


# ---------------------------------------------------------------------------- properties
@settings(max_examples=25)
@given(st.integers(0, 10 ** 6), st.integers(2, 7), st.floats(0.05, 5.0), st.floats(0.05, 8.0))
@example(0, 3, 0.1, 5.0)
@example(1, 5, 5.0, 0.1)
def test_lower_is_below_every_feasible_point(seed, m, a, b):
    rng = np.random.default_rng(seed)
    n = m + int(rng.integers(-1, 4))                # n < m: a singular H
    X = rng.standard_normal((max(n, 1), m))
    y = X @ rng.standard_normal(m) + rng.standard_normal(X.shape[0])
    prob = BoundedProblem.from_arrays(X.T @ X / X.shape[0], X.T @ y / X.shape[0],
                                      y @ y / X.shape[0], l2_cap=a, l1_cap=b)
    r = solve_bounded(prob)
    assert _exact_feasible(r.head, a, b)
    assert r.lower <= r.upper <= prob.second_moment * (1 + 1e-14)   # v = 0 is feasible
    for _ in range(200):
        v = rng.standard_normal(m) * rng.exponential(size=m)
        v *= min(a / np.linalg.norm(v), b / np.abs(v).sum()) * rng.uniform(0, 1) ** 0.2
        assert r.lower <= prob.risk(v) + 1e-14 * prob.second_moment


@settings(max_examples=15)
@given(st.integers(0, 10 ** 6), st.integers(1, 9), st.floats(0.01, 10.0), st.floats(0.01, 10.0))
@example(0, 6, 1.0, 1.8)                     # both caps matter: 1 < 1.8 < √6
@example(11452, 1, 4.5, 5.0)                 # SLSQP ends just outside K (m = 1)
def test_support_split_bounds_the_support_function(seed, m, a, b):
    """max_{v∈K} uᵀv ≤ value ≤ min(a‖u‖₂, b‖u‖_∞), equality with the known cases: K is the l1
    ball when b ≤ a (h = b‖u‖_∞) and the l2 ball when a√m ≤ b (h = a‖u‖₂)."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(m) * rng.exponential(size=m)
    tau, val = support_split(u, a, b)
    assert val <= min(a * np.linalg.norm(u), b * np.max(np.abs(u))) * (1 + 1e-14)
    if b <= a:
        assert val == pytest.approx(b * np.max(np.abs(u)), rel=1e-12)
    if a * math.sqrt(m) <= b:
        assert val == pytest.approx(a * np.linalg.norm(u), rel=1e-12)
    # feasible points: vertices of the l1 ball scaled into the l2 ball, sphere points, and the
    # maximizer of uᵀv over K computed by SLSQP (an independent solver)
    for _ in range(100):
        v = rng.standard_normal(m)
        v *= min(a / np.linalg.norm(v), b / np.abs(v).sum())
        assert u @ v <= val * (1 + 1e-12) + 1e-15
    prob = BoundedProblem.from_arrays(np.zeros((m, m)), u / 2, 1.0, l2_cap=a, l1_cap=b)
    best = 1.0 - _slsqp(prob, starts=4, seed=seed)      # max uᵀv = 1 − min(1 − uᵀv)
    assert best <= val * (1 + 1e-9) + 1e-12
    assert val <= best * (1 + 1e-6) + 1e-9                # the split is the exact support


# ---------------------------------------------------------------------------- population layer
def _paper_state(seed=0, d=16, m=32):
    T = popdyn.Teacher.additive("h3", np.eye(d)[:2]).normalized("second_moment")
    S = popdyn.Student(d=d, m=m)
    rng = np.random.default_rng(seed)
    W = 1e-3 * rng.standard_normal((m, d))
    k = min(24, m)                          # rows near ±e1, ±e2 with biases spread in [−2, 2]
    for j in range(k):
        W[j, j % 2] += 1.0 if j % 4 < 2 else -1.0
    b = np.concatenate([np.linspace(-2, 2, k), rng.standard_normal(m - k)])
    return S, popdyn.Params(np.ones(m), W, b), T


def test_paper_defaults_and_normalization():
    S, p, T = _paper_state()
    assert default_caps(S, T) == (32.0, 64 * math.sqrt(2))
    Sl = popdyn.Student(d=16, m=32, activation="leaky_relu", negative_slope=0.25)
    assert default_caps(Sl, T) == (32 / 0.75, 64 * math.sqrt(2) / 0.75)
    r = bounded_refit(S, p, T)
    assert r.status in ("solved", "almost_solved")
    assert 0 <= r.lower <= r.upper < 0.2 and r.gap <= 1e-8
    # scaling a row and its bias by a positive factor leaves the normalized feature unchanged
    f = np.exp(np.linspace(-3, 3, 32))
    q = p.replace(W=p.W * f[:, None], b=p.b * f, a=-p.a, c=3.0)
    P0, P1 = bounded_problem(S, p, T), bounded_problem(S, q, T)
    np.testing.assert_allclose(P1.H, P0.H, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(P1.c, P0.c, rtol=1e-12, atol=1e-15)


def test_zero_row_is_a_zero_feature():
    S, p, T = _paper_state(1, d=6, m=5)
    W, b = p.W.copy(), p.b.copy()
    W[2], b[2] = 0.0, 0.0
    P = bounded_problem(S, p.replace(W=W, b=b), T)
    assert np.all(P.H[2] == 0) and np.all(P.H[:, 2] == 0) and P.c[2] == 0
    r = bounded_refit(S, p.replace(W=W, b=b), T, l2_cap=0.3, l1_cap=0.5)
    assert r.head[2] == 0.0
    keep = [0, 1, 3, 4]
    S4 = popdyn.Student(d=6, m=4)
    r4 = bounded_refit(S4, popdyn.Params(np.ones(4), W[keep], b[keep]), T, l2_cap=0.3, l1_cap=0.5)
    assert r.upper == pytest.approx(r4.upper, abs=1e-12)


def test_refit_gain():
    S, p, T = _paper_state()
    p0 = S.init(3, 1e-4, T)
    R0, RE = bounded_refit(S, p0, T), bounded_refit(S, p, T)
    g = refit_gain(R0, RE)
    assert g == R0.lower - RE.upper - 1e-5
    assert g > 0.7                       # the axis-aligned bank explains most of y
    assert refit_gain(R0, RE, margin=0.0) == R0.lower - RE.upper
    with pytest.raises(TypeError, match="R0"):
        refit_gain(0.9, RE)
    with pytest.raises(ValueError, match="margin"):
        refit_gain(R0, RE, margin=-1.0)


def test_bad_input():
    S, p, T = _paper_state(0, d=4, m=3)
    with pytest.raises(ValueError, match="l2_cap"):
        bounded_refit(S, p, T, l2_cap=-1.0)
    with pytest.raises(ValueError, match="l1_cap"):
        bounded_refit(S, p, T, l1_cap=0.0)
    Ss = popdyn.Student(d=4, m=3, activation="silu")
    with pytest.raises(ValueError, match="relu or leaky_relu"):
        bounded_refit(Ss, p, T)
    with pytest.raises(ValueError, match="max_iter"):
        solve_bounded(bounded_problem(S, p, T), max_iter=0)


@settings(max_examples=10)
@given(st.integers(0, 10 ** 6), st.floats(1e-8, 1e-2))
def test_negative_eigenvalue_allowance(seed, shift):
    """An indefinite H (moments with quadrature asymmetry / rounding): R is not convex, the lower
    value subtracts |λ_min|(a + ‖v̂‖)² and stays below R at every sampled feasible point and at
    the minimizer of R over K found by SLSQP from many starts."""
    rng = np.random.default_rng(seed)
    m = 5
    X = rng.standard_normal((m + 2, m))
    y = X @ rng.standard_normal(m) + rng.standard_normal(m + 2)
    H0 = X.T @ X / (m + 2)
    lam = np.linalg.eigvalsh(H0)
    H = H0 - (lam[0] + shift * lam[-1]) * np.eye(m)          # λ_min(H) = −shift·λ_max(H0)
    prob = BoundedProblem.from_arrays(H, X.T @ y / (m + 2), y @ y / (m + 2), l2_cap=1.0,
                                      l1_cap=1.5)
    r = solve_bounded(prob)
    assert r.lambda_min < 0 and r.eig_allowance > 0
    assert r.lower <= r.upper
    for _ in range(300):
        v = rng.standard_normal(m)
        v *= min(1.0 / np.linalg.norm(v), 1.5 / np.abs(v).sum()) * rng.uniform(0, 1) ** 0.1
        assert r.lower <= prob.risk(v)
    assert r.lower <= _slsqp(prob, starts=8, seed=seed) + 1e-12
