"""popdyn.landscape: the exact population Hessian of bias-free relu / leaky-relu
students (with and without the learned skip), reduced coordinates, the critical-point finder and
the classifier.

References: data/refs/landscape_refs.json (data/_precompute/landscape_refs.py: mpmath polar
quadrature of every expectation at 45 digits and 45-digit finite differences; no popdyn code),
the exact gradient of popdyn.loss_and_grad (an independent code path: popdyn's moment engine),
and population_loss for the descent direction of a saddle.
"""
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popdyn
from popdyn import landscape as ls

from _fd import fd_hessian

REFS = os.path.join(os.path.dirname(__file__), "..", "..", "data", "refs", "landscape_refs.json")
ANG3 = np.deg2rad([0.0, 120.0, 240.0])
U3 = np.column_stack([np.cos(ANG3), np.sin(ANG3)])


def _load():
    with open(REFS) as fh:
        return json.load(fh)["cases"]


def _case_objects(case):
    hx = lambda xs: np.array([float.fromhex(x) for x in xs])
    st_ = popdyn.Student(case["d"], case["m"], case["act"], bias=False, skip=case["skip"],
                         intercept=case["intercept"], scaling=case["scaling"],
                         negative_slope=float.fromhex(case["slope"]) or 0.01)
    U = np.array([hx(r) for r in case["U"]])
    T = popdyn.Teacher.network(case["teacher_act"], hx(case["V"]), U,
                               negative_slope=float.fromhex(case["teacher_slope"]) or 0.01)
    return st_, ls.unflatten(st_, hx(case["theta"])), T


CASES = _load()


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_hessian_against_mpmath(case):
    """Loss, gradient and Hessian within 1e−10 relative of the 45-digit mpmath reference,
    including duplicated (φ = 0) and antiparallel (φ = π) units."""
    student, params, teacher = _case_objects(case)
    L, g, H = ls.loss_grad_hessian(student, params, teacher)
    Lr = float(case["loss"])
    gr = np.array([float(x) for x in case["grad"]])
    Hr = np.array([[float(x) for x in row] for row in case["hessian"]])
    assert abs(L - Lr) <= 1e-10 * max(abs(Lr), 1e-3)
    assert np.max(np.abs(g - gr)) <= 1e-10 * np.max(np.abs(gr))
    scale = np.max(np.abs(Hr))
    # normwise 1e-10 relative, and entrywise 1e-10 relative above a floor of 1e-6·max|H|
    assert np.max(np.abs(H - Hr)) <= 1e-10 * scale
    big = np.abs(Hr) > 1e-6 * scale
    assert np.all(np.abs(H - Hr)[big] <= 1e-10 * np.abs(Hr)[big] + 1e-14 * scale)


def test_reference_cases_cover_degenerate_geometry():
    names = {c["name"] for c in CASES}
    assert {"duplicated", "antiparallel", "leaky_skip", "planar_d4"} <= names
    st_, p, _ = _case_objects(next(c for c in CASES if c["name"] == "duplicated"))
    t = p.W / np.linalg.norm(p.W, axis=1, keepdims=True)
    assert t[0] @ t[1] == pytest.approx(1.0, abs=1e-15)
    st_, p, _ = _case_objects(next(c for c in CASES if c["name"] == "antiparallel"))
    t = p.W / np.linalg.norm(p.W, axis=1, keepdims=True)
    assert t[0] @ t[1] == pytest.approx(-1.0, abs=1e-15)


def _state(seed, act, skip, intercept, scaling, m=3, d=2):
    rng = np.random.default_rng(seed)
    st_ = popdyn.Student(d, m, act, bias=False, skip=skip, intercept=intercept, scaling=scaling,
                         negative_slope=0.2)
    p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)), np.zeros(m),
                      0.3 * rng.normal() if intercept else 0.0,
                      rng.normal(size=d) if skip else None)
    V = np.abs(rng.normal(size=3)) + 0.2
    Ut = rng.normal(size=(3, d))
    return st_, p, popdyn.Teacher.network("relu", V, Ut)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), act=st.sampled_from(["relu", "leaky_relu"]),
       skip=st.booleans(), intercept=st.booleans(),
       scaling=st.sampled_from(["standard", "mean_field"]))
def test_gradient_matches_engine_and_hessian_matches_its_differences(seed, act, skip, intercept,
                                                                     scaling):
    """The closed-form gradient equals popdyn's exact gradient (the moment engine); the Hessian
    is exactly symmetric and equals central differences of the engine's gradient (h = 1e−5:
    truncation O(h²), rounding O(ε/h))."""
    student, p, T = _state(seed, act, skip, intercept, scaling, d=2 + seed % 3)
    L, g, H = ls.loss_grad_hessian(student, p, T)
    L2, g2 = popdyn.loss_and_grad(student, p, T)
    ge = ls.flatten(student, g2.replace(b=np.zeros(student.m)))
    assert abs(L - L2) <= 1e-12 * max(1.0, abs(L2))
    assert np.max(np.abs(g - ge)) <= 1e-11 * max(1.0, np.max(np.abs(ge)))
    assert np.array_equal(H, H.T)
    Hf = fd_hessian(student, p, T, h=1e-5)
    assert np.max(np.abs(H - Hf)) <= 1e-6 * max(1.0, np.max(np.abs(H)))


def test_hessian_continuous_at_duplicated_and_antiparallel_units():
    """K is C² at φ ∈ {0, π}: the Hessian at φ = 1e−7 (resp. π − 1e−7) is within O(φ) of the
    limit used at φ = 0 (π)."""
    T = popdyn.Teacher.network("relu", [1.0, 0.5, 0.8], U3)
    st_ = popdyn.Student(2, 2, "relu", bias=False, skip=True)
    for sign in (1.0, -1.0):
        w = np.array([0.6, 0.8])
        eps = 1e-7
        rot = np.array([[np.cos(eps), -np.sin(eps)], [np.sin(eps), np.cos(eps)]])
        p0 = popdyn.Params([0.7, 0.4], [w, sign * 1.5 * w], [0, 0], 0.1, [0.2, -0.1])
        p1 = p0.replace(W=np.array([w, sign * 1.5 * (rot @ w)]))
        H0, H1 = ls.hessian(st_, p0, T), ls.hessian(st_, p1, T)
        assert np.max(np.abs(H0 - H1)) <= 1e-6


def test_gauge_null_vector_and_reduced_coordinates():
    """At a critical point the full Hessian annihilates the gauge directions (−a_j e_{a_j} +
    w_j·e_{w_j}) of positive homogeneity; the reduced Hessian is the (W, v, c) block at a = ε and
    rescaling (a, w) → (a/λ, λw) leaves the reduced state unchanged."""
    T = popdyn.Teacher.network("relu", [1.0, 1.0, 1.0], U3)
    st_ = popdyn.Student(2, 3, "relu", bias=False, skip=False, intercept=True)
    lam = np.array([2.0, 0.5, 1.25])
    p = popdyn.Params(1.0 / lam, U3 * lam[:, None], np.zeros(3), 0.0)    # the global minimum
    L, g, H = ls.loss_grad_hessian(st_, p, T)
    assert L <= 1e-15 and np.max(np.abs(g)) <= 1e-14
    lay = ls.layout(st_)
    for j in range(3):
        z = np.zeros(lay.size)
        z[lay.a][j] = -p.a[j]
        z[lay.W.start + 2 * j:lay.W.start + 2 * j + 2] = p.W[j]
        assert np.max(np.abs(H @ z)) <= 1e-13
    r = ls.reduce(st_, p)
    np.testing.assert_allclose(r.U, U3, atol=1e-15)
    assert np.linalg.eigvalsh(ls.reduced_loss_grad_hessian(r, T)[2])[0] > 1e-2


def test_finder_and_classifier():
    """From declared starts at m = k (no skip) trust-exact reaches only zero-loss minima, with
    the global minimum recovered up to permutation and rescaling; Newton (LM) on ∇L = 0 finds a
    saddle whose negative-curvature direction really lowers the loss (population_loss)."""
    V = np.array([1.0, 0.7, 1.3])
    ang = np.deg2rad([10.0, 80.0, 200.0])
    U = np.column_stack([np.cos(ang), np.sin(ang)])
    T = popdyn.Teacher.network("relu", V, U)
    st_ = popdyn.Student(2, 3, "relu", bias=False, skip=True, intercept=True)
    starts = [st_.init(s, 1.0).replace(a=np.abs(st_.init(s, 1.0).a)) for s in range(4)]
    pts, fails = ls.find_critical_points(st_, T, starts)
    assert not fails
    kinds = {cp.kind for cp in pts}
    assert kinds <= set(ls.KINDS)
    assert sum(len(cp.starts) for cp in pts) == 4
    for cp in pts:
        c = cp.classification
        assert c.grad_norm <= c.gtol
        if c.kind == "global_min":
            assert c.loss_normalized <= 1e-10
    # dedup: a permuted, rescaled copy of the teacher is the same point
    a = np.array([2.0, 0.5, 4.0])
    r1 = ls.reduce(st_, popdyn.Params(V / a, U * a[:, None], np.zeros(3), 0.0, [0.0, 0.0]))
    perm = [2, 0, 1]
    r2 = ls.reduce(st_, popdyn.Params(V[perm], U[perm], np.zeros(3), 0.0, [0.0, 0.0]))
    assert ls.same_point(r1, r2)
    assert ls.classify(r1, T).kind == "global_min"
    r3 = r1.with_vector(r1.vector() + 0.1)
    assert ls.classify(r3, T).kind == "not_critical"
    # a saddle: the symmetric point where all three student units sit on the teacher mean
    st1 = popdyn.Student(2, 2, "relu", bias=False, skip=False, intercept=False)
    T1 = popdyn.Teacher.network("relu", [1.0, 1.0], [[1.0, 0.0], [0.0, 1.0]])
    start = popdyn.Params([1.0, 1.0], [[1.0, 1.0], [1.0, 1.02]], [0, 0], 0.0)
    pts, fails = ls.find_critical_points(st1, T1, [start], method="newton")
    saddles = [cp for cp in pts if cp.kind == "saddle"]
    assert saddles, [cp.classification.reason for cp in pts] + [f for f in fails]
    cp = saddles[0]
    L0, _, H = ls.reduced_loss_grad_hessian(cp.point, T1)
    lam, Q = np.linalg.eigh(H)
    assert lam[0] < -cp.classification.eig_tol
    x = cp.point.vector()
    for t in (1e-3, -1e-3):
        pr = cp.point.with_vector(x + t * Q[:, 0]).params()
        assert popdyn.population_loss(cp.point.student, pr, T1) < L0 - 0.1 * abs(lam[0]) * t * t


def test_drop_keeps_the_function():
    """Removing a zero-mass unit leaves the loss unchanged, also under mean-field scaling
    (s = 1/m: the kept u_i are rescaled by m′/m)."""
    T = popdyn.Teacher.network("relu", [1.0, 0.5, 0.8], U3)
    for scaling in ("standard", "mean_field"):
        st_ = popdyn.Student(2, 3, "relu", bias=False, skip=True, scaling=scaling)
        r = ls.Reduced(st_, np.ones(3), np.array([[0.5, 0.2], [1e-300, 0.0], [-0.3, 0.9]]),
                       np.array([0.1, -0.2]), 0.05)
        r2 = r.drop([True, False, True])
        assert r2.m == 2 and r2.student.m == 2
        L1 = popdyn.population_loss(st_, r.params(), T)
        L2 = popdyn.population_loss(r2.student, r2.params(), T)
        assert abs(L1 - L2) <= 1e-14


def test_boundary_derivative_is_the_one_sided_derivative():
    """G(θ) = ∂L/∂t at t = 0⁺ of adding a unit tθ equals the engine's (L(t) − L(0))/t at small t
    (L is smooth in t > 0 with a bounded second derivative)."""
    T = popdyn.Teacher.network("relu", [1.0, 0.5, 0.8], U3)
    st_ = popdyn.Student(2, 2, "relu", bias=False, skip=True)
    r = ls.Reduced(st_, np.ones(2), np.array([[0.5, 0.2], [-0.3, 0.9]]), np.array([0.1, -0.2]), 0.05)
    th = np.array([[np.cos(0.7), np.sin(0.7)], [np.cos(2.9), np.sin(2.9)]])
    G = ls.boundary_derivative(r, T, th)
    st3 = popdyn.Student(2, 3, "relu", bias=False, skip=True)
    for k in range(2):
        vals = []
        for t in (0.0, 1e-6):
            p = popdyn.Params(np.ones(3), np.vstack([r.U, t * th[k]]), np.zeros(3), r.c, r.v)
            vals.append(popdyn.population_loss(st3, p, T))
        assert abs((vals[1] - vals[0]) / 1e-6 - G[k]) <= 1e-5 * max(1.0, abs(G[k]))


def test_bad_input():
    T = popdyn.Teacher.network("relu", [1.0], [[1.0, 0.0]])
    with pytest.raises(ValueError, match="network teacher"):      # biases: landscape._biased
        ls.hessian(popdyn.Student(2, 1, "relu", bias=True), popdyn.Params([1.0], [[1.0, 0.0]], [0.0]),
                   popdyn.Teacher.additive("h2", [[1.0, 0.0]]))
    with pytest.raises(ValueError, match="Teacher.network"):   # smooth students: _smooth.py
        ls.hessian(popdyn.Student(2, 1, "tanh", bias=False), popdyn.Params([1.0], [[1.0, 0.0]], [0.0]),
                   popdyn.Teacher.gated("id", np.eye(2)))
    with pytest.raises(ValueError, match="W\\[0\\]"):
        ls.hessian(popdyn.Student(2, 1, "relu", bias=False), popdyn.Params([1.0], [[0.0, 0.0]], [0.0]), T)
    with pytest.raises(ValueError, match="method"):
        ls.find_critical_points(popdyn.Student(2, 1, "relu", bias=False), T, [], method="bfgs")
    with pytest.raises(ValueError, match="network teacher"):
        ls.hessian(popdyn.Student(2, 1, "relu", bias=False), popdyn.Params([1.0], [[1.0, 0.0]], [0.0]),
                   popdyn.Teacher.additive("h2", [[1.0, 0.0]]))
