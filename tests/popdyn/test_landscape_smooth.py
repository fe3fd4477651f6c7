"""Exact Hessian of smooth-activation students (popdyn.landscape._smooth).

* against the independent mpmath reference data/refs/landscape_smooth_refs.json (2-D
  Gauss–Legendre quadrature in each pair frame of E[∇f∇fᵀ] + E[(f − y)∇²f], no Stein identity,
  no Hermite series; data/_precompute/landscape_smooth_refs.py): generic, duplicated,
  antiparallel, near-aligned (1 − ρ ~ 1e−18) and teacher-aligned units, all four activations,
  relu / tanh network and additive (polynomial, relu) teachers, biases, skip, intercept, both
  scalings; within 1e−10 relative (normwise), and within the module's own error estimate;
* the loss and gradient against the engine (popdyn.population_loss / population_grad);
* hypothesis: the Hessian against central finite differences of the engine's exact gradient,
  the symmetry of the assembled blocks before symmetrization, permutation equivariance;
* refusals (teacher kinds, rtol) and the AccuracyWarning at the order cap.
"""
import json
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popdyn
from popdyn import accuracy as acc
from popdyn.landscape import _smooth as SM
from popdyn.landscape import flatten, layout, supported, unflatten

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFS = os.path.join(ROOT, "data", "refs", "landscape_smooth_refs.json")


def _hx(x):
    return np.array([float.fromhex(v) for v in x])


def _case(c):
    st_ = popdyn.Student(c["d"], c["m"], c["act"], bias=c["bias"], skip=c["skip"],
                         intercept=c["intercept"], scaling=c["scaling"])
    T = c["teacher"]
    U = np.array([_hx(r) for r in T["U"]])
    if T["kind"] == "network":
        teacher = popdyn.Teacher.network(T["fn"], _hx(T["w"]), U, _hx(T["bias"]))
    else:
        teacher = popdyn.Teacher.additive(T["fn"], U, _hx(T["w"]))
    return st_, unflatten(st_, _hx(c["theta"])), teacher


def _refs():
    with open(REFS) as fh:
        return json.load(fh)["cases"]


@pytest.fixture(scope="module")
def refs():
    return _refs()


def _names():
    try:
        return [c["name"] for c in _refs()]
    except OSError:
        return ["missing"]


@pytest.mark.parametrize("name", _names())
def test_against_mpmath_reference(refs, name):
    c = next(c for c in refs if c["name"] == name)
    st_, p, teacher = _case(c)
    with warnings.catch_warnings():
        warnings.simplefilter("error", popdyn.AccuracyWarning)
        L, g, H, info = SM.loss_grad_hessian(st_, p, teacher, rtol=1e-10, full_output=True)
    Lr = float(c["loss"])
    gr = np.array([float(x) for x in c["grad"]])
    Hr = np.array([[float(x) for x in row] for row in c["hessian"]])
    assert H.shape == Hr.shape
    sc = np.max(np.abs(Hr))
    err = np.max(np.abs(H - Hr)) / sc
    assert err <= 1e-10, (name, err)
    assert abs(L - Lr) <= 1e-10 * abs(Lr) + 1e-14, (name, L, Lr)
    assert np.max(np.abs(g - gr)) <= 1e-10 * np.max(np.abs(gr)) + 1e-14, name
    # the propagated estimate is not below the measured error (entrywise, plus rounding)
    assert np.all(np.abs(H - Hr) <= info["error_hessian"] + info["atol_hessian"]), name
    assert np.all(np.abs(g - gr) <= info["error_grad"] + info["atol_grad"]), name
    # the reference's own refinement check is far below the tolerance
    if "check" in c:
        assert float(c["check"]["max_hessian_diff_rel"]) < 1e-16


def _grad_vec(student, p, teacher):
    g = popdyn.population_grad(student, p, teacher, rtol=1e-12)
    parts = [g.a, g.W.ravel()]
    if student.bias:
        parts.append(g.b)
    if student.skip:
        parts.append(g.v)
    if student.intercept:
        parts.append([g.c])
    return np.concatenate([np.ravel(x) for x in parts])


TEACHERS = {
    "relu_net": lambda d: popdyn.Teacher.network("relu", [0.9, -0.6],
                                                 np.eye(d)[:2] * [[0.8], [1.1]], [0.15, -0.25]),
    "tanh_net": lambda d: popdyn.Teacher.network("tanh", [1.1], np.eye(d)[:1] * 0.9, [0.2]),
    "h3_add": lambda d: popdyn.Teacher.additive("h3+0.3h2", np.eye(d)[:2], [1.0, 0.5]),
    "tanh_add": lambda d: popdyn.Teacher.additive("tanh", np.eye(d)[1:2]),
    "leaky_net": lambda d: popdyn.Teacher.network(
        "leaky_relu", [0.7, 0.5], [[0.6] + [0.0] * (d - 1), [0.3, -0.9] + [0.0] * (d - 2)],
        [-0.1, 0.3], negative_slope=0.2),
}


@pytest.mark.parametrize("act", ["silu", "gelu", "tanh", "erf"])
def test_loss_and_gradient_match_engine(act):
    rng = np.random.default_rng(11)
    names = sorted(TEACHERS)
    k = ["silu", "gelu", "tanh", "erf"].index(act)
    for tk in (names[k], names[k + 1]):             # every teacher over the activations
        teacher = TEACHERS[tk](2)
        student = popdyn.Student(2, 3, act, bias=True, skip=True, intercept=True)
        p = popdyn.Params(rng.normal(size=3), 0.8 * rng.normal(size=(3, 2)),
                          0.3 * rng.normal(size=3), 0.1, 0.2 * rng.normal(size=2))
        L, g, _, info = SM.loss_grad_hessian(student, p, teacher, hessian=False,
                                             full_output=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", popdyn.AccuracyWarning)
            Le = popdyn.population_loss(student, p, teacher, rtol=1e-12)
            ge = _grad_vec(student, p, teacher)
        assert abs(L - Le) <= 1e-10 * abs(Le) + info["atol_loss"], (act, tk)
        assert np.max(np.abs(g - ge)) <= 1e-10 * np.max(np.abs(ge)) + 1e-13, (act, tk)


@st.composite
def _states(draw):
    act = draw(st.sampled_from(["silu", "gelu", "tanh", "erf"]))
    tk = draw(st.sampled_from(sorted(TEACHERS)))
    m = draw(st.integers(1, 2))
    bias, skip, intercept = (draw(st.booleans()) for _ in range(3))
    scaling = draw(st.sampled_from(["standard", "mean_field"]))
    seed = draw(st.integers(0, 2 ** 16))
    geom = draw(st.sampled_from(["generic", "duplicate", "near", "antiparallel", "zero"]))
    rng = np.random.default_rng(seed)
    d = 2
    W = 0.9 * rng.normal(size=(m, d))
    if m > 1 and geom == "duplicate":
        W[1] = W[0]
    elif m > 1 and geom == "near":
        W[1] = W[0] + 1e-9 * rng.normal(size=d)
    elif m > 1 and geom == "antiparallel":
        W[1] = -0.7 * W[0]
    elif geom == "zero":
        W[0] = 0.0
    student = popdyn.Student(d, m, act, bias=bias, skip=skip, intercept=intercept,
                             scaling=scaling)
    p = popdyn.Params(rng.normal(size=m), W, 0.4 * rng.normal(size=m) if bias else np.zeros(m),
                      0.2 * rng.normal() if intercept else 0.0,
                      0.3 * rng.normal(size=d) if skip else None)
    return student, p, TEACHERS[tk](d)


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_states())
def test_hessian_is_the_derivative_of_the_engine_gradient(state):
    _fd_check(*state)


@pytest.mark.parametrize("geom,act,tk", [("near", "gelu", "relu_net"), ("zero", "silu", "h3_add"),
                                         ("antiparallel", "erf", "tanh_add")])
def test_fd_degenerate_geometry(geom, act, tk):
    W = np.array([[0.7, -0.5], [0.7, -0.5 + 1e-9]]) if geom == "near" else (
        np.array([[0.0, 0.0], [0.6, 0.9]]) if geom == "zero" else np.array([[0.7, -0.5],
                                                                            [-0.49, 0.35]]))
    student = popdyn.Student(2, 2, act, bias=True, skip=True)
    p = popdyn.Params([0.8, -0.6], W, [0.1, -0.2], 0.05, [0.2, -0.1])
    _fd_check(student, p, TEACHERS[tk](2))


def _fd_check(student, p, teacher):
    L, g, H = SM.loss_grad_hessian(student, p, teacher)
    x = flatten(student, p)
    h = 1e-4
    Hfd = np.empty_like(H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", popdyn.AccuracyWarning)
        for k in range(x.size):
            e = np.zeros(x.size)
            e[k] = h
            Hfd[:, k] = (_grad_vec(student, unflatten(student, x + e), teacher)
                         - _grad_vec(student, unflatten(student, x - e), teacher)) / (2 * h)
    sc = max(np.max(np.abs(H)), 1e-3)
    assert np.max(np.abs(H - Hfd)) <= 2e-7 * sc, np.max(np.abs(H - Hfd)) / sc
    assert H.shape == (layout(student).size,) * 2


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_states())
def test_blocks_symmetric_before_symmetrization_and_permutation_equivariant(state):
    student, p, teacher = state
    st_ = SM._Student(student, p, 1e-10, SM._teacher_order(teacher, 1e-10),
                      SM._pl_partner(teacher))
    te = SM._Teacher(teacher, 1e-10, st_.M)
    mo = SM._Mom(st_, te)
    lay = SM.layout(student)
    raw = SM._assemble(lay, student.s, p.a, p.W, st_.su.al, st_.su.theta, p.v, p.c, te.w,
                       te.alpha, te.theta, float(teacher.mean), float(teacher.second_moment),
                       te.tau, mo.v, mo.first, -1.0, True, symmetrize=False)[2]
    sc = max(np.max(np.abs(raw)), 1e-300)
    assert np.max(np.abs(raw - raw.T)) <= 1e-12 * sc
    # permuting the neurons permutes the Hessian
    m = student.m
    perm = np.arange(m)[::-1]
    q = popdyn.Params(p.a[perm], p.W[perm], p.b[perm], p.c, p.v)
    H = SM.loss_grad_hessian(student, p, teacher)[2]
    Hq = SM.loss_grad_hessian(student, q, teacher)[2]
    idx = np.arange(lay.size).reshape(-1)
    pos = list(perm) + [m + perm[i] * lay.d + k for i in range(m) for k in range(lay.d)]
    if lay.bias:
        pos += [lay.b.start + perm[i] for i in range(m)]
    pos += list(range(lay.b.stop, lay.size))
    pos = np.array(pos)
    assert np.max(np.abs(Hq - H[np.ix_(pos, pos)])) <= 1e-11 * max(np.max(np.abs(H)), 1.0)
    assert idx.size == pos.size


def test_dispatch_layout_and_refusals():
    student = popdyn.Student(2, 2, "tanh", bias=True, skip=True)
    teacher = TEACHERS["relu_net"](2)
    p = student.init(3, 0.8)
    assert supported(student, teacher) == (True, "")
    H1 = popdyn.landscape.hessian(student, p, teacher)
    H2 = SM.loss_grad_hessian(student, p, teacher)[2]
    assert np.array_equal(H1, H2)
    gated = popdyn.Teacher.gated("id", np.eye(2))
    ok, why = supported(student, gated)
    assert not ok and "network" in why and "additive" in why
    with pytest.raises(ValueError, match="Teacher.network"):
        popdyn.landscape.loss_grad_hessian(student, p, gated)
    with pytest.raises(ValueError, match="rtol"):
        SM.loss_grad_hessian(student, p, teacher, rtol=0.0)
    relu_student = popdyn.Student(2, 2, "relu", bias=False)
    assert not SM.supported(relu_student, teacher)[0]


def test_accuracy_warning_names_the_order_cap(monkeypatch):
    monkeypatch.setattr(acc, "ORDER_CAP", 40)
    student = popdyn.Student(2, 2, "tanh", bias=True)
    p = popdyn.Params([0.8, -0.6], [[1.5, 0.4], [-0.3, 1.4]], [0.1, 0.2], 0.0)
    with pytest.warns(popdyn.AccuracyWarning, match="order cap 40"):
        L, g, H, info = SM.loss_grad_hessian(student, p, TEACHERS["relu_net"](2), rtol=1e-13,
                                             full_output=True)
    assert not info["within_rtol"]


def test_classify_smooth_student_in_full_coordinates():
    # the teacher itself as a student state: the global minimum; a generic state: not critical
    teacher = popdyn.Teacher.network("tanh", [1.0, -0.5], [[0.9, 0.2], [-0.3, 0.8]])
    student = popdyn.Student(2, 2, "tanh", bias=False, intercept=False)
    p = popdyn.Params([1.0, -0.5], [[0.9, 0.2], [-0.3, 0.8]], [0.0, 0.0], 0.0)
    c = popdyn.landscape.classify((student, p), teacher)
    assert c.kind == "global_min" and c.loss < 1e-20
    # at the global minimum of a realizable smooth teacher the Hessian is the Gauss-Newton
    # matrix E[∇f∇fᵀ] (positive semidefinite)
    assert c.lambda_min >= -1e-12
    q = popdyn.Params([0.7, -0.2], [[0.5, 0.4], [-0.1, 0.9]], [0.0, 0.0], 0.0)
    assert popdyn.landscape.classify((student, q), teacher).kind == "not_critical"
    with pytest.raises(ValueError, match="pruned"):
        popdyn.landscape.classify((student, p), teacher, pruned=1)


def test_accuracy_warning_at_the_estimate_floor():
    # rtol = 1e−14 is below the estimate's floor (coefficient errors and rounding): the
    # refinement stops when a step no longer halves the excess, and says so
    student = popdyn.Student(2, 2, "gelu", bias=True)
    p = popdyn.Params([0.8, -0.6], [[0.9, 0.4], [-0.3, 0.8]], [0.1, 0.2], 0.0)
    with pytest.warns(popdyn.AccuracyWarning, match="stopped decreasing"):
        SM.loss_grad_hessian(student, p, TEACHERS["h3_add"](2), rtol=1e-14)
