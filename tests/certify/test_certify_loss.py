"""certify.loss: live soundness against the independent mpmath reference (hypothesis, few
examples: each costs ~6 two-dimensional quadratures at 56 digits), the gradient against the
project's independent reference tests/_mpref.py, provenance tags, width, narrowing with prec,
and bad input."""
import math
import os
import sys

import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import popdyn
import certify
from certify import CertificationError
from certify.moments import clear_cache

import _ref as R
from _units import MODES, degenerate

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _mpref  # noqa: E402  (tests/_mpref.py: independent of popdyn and certify)

TEACHERS = ("h2", "relu_net", "sin", "damped_cubic:0.5", "abs")


def _teacher(kind, d):
    U = np.zeros((1, d))
    U[0, 0] = 0.6
    U[0, -1] = 0.8
    if kind == "relu_net":
        return popdyn.Teacher.network("relu", [1.3], U * 1.1, [0.4])
    return popdyn.Teacher.additive(kind, U, [0.9])


@settings(max_examples=2)
@given(st.lists(st.floats(-1, 1), min_size=6, max_size=6), st.lists(st.floats(-1, 1), min_size=2,
       max_size=2), st.sampled_from(TEACHERS), st.sampled_from(["relu", "leaky_relu"]),
       st.sampled_from(("dup",) + MODES))
@example([0.5, -0.2, 0.3, 0.5, -0.2, 0.3], [0.1, 0.1], "relu_net", "leaky_relu", "dup")
@example([0.5, -0.2, 0.3, 0.1, 0.4, 0.3], [0.1, 0.5], "h2", "relu", "tiny")
@example([0.5, -0.2, 0.3, 0.1, 0.4, 0.3], [0.1, -0.5], "relu_net", "leaky_relu", "huge")
def test_loss_encloses_reference(w, b, teacher, act, mode):
    d = 3
    W = np.array(w).reshape(2, d)
    b = np.array(b)
    if np.linalg.norm(W[0]) == 0:
        W[0, 0] = 0.5
    if mode == "dup":                         # duplicated neuron: ρ = 1 exactly
        W[1] = W[0]
    else:                                     # tiny / nearly collinear / far-threshold units
        W, b = degenerate(W, b, 1, mode)
    S = popdyn.Student(d=d, m=2, activation=act, negative_slope=0.1)
    T = _teacher(teacher, d)
    p = popdyn.Params([0.7, -1.1], W, b, 0.2)
    clear_cache()
    res = certify.loss(S, p, T)
    L, ey, ey2 = R.loss(S, p, T, dps=50)
    assert res.provenance == "rigorous"
    assert res.loss.contains(L), (res.loss, L)
    assert res.variance.contains(ey2 - ey * ey)
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always", popdyn.AccuracyWarning)
        Lf, info = popdyn.population_loss(S, p, T, full_output=True)
    tol = info["error"] + 64 * np.finfo(float).eps * max(abs(Lf), T.second_moment)
    assert res.loss.lo - tol <= Lf <= res.loss.hi + tol
    # the rtol contract (issue 19): silent only when the estimate is within rtol·|L| + atol,
    # and then the value is within it of the certified bracket
    assert bool(wl) == (not info["within_rtol"])
    if not wl:
        lim = 1e-10 * abs(Lf) + info["atol"] + info["error"]
        assert res.loss.lo - lim <= Lf <= res.loss.hi + lim


def _case(S, p, T):
    t = {"kind": T.kind, "U": T.U.tolist()}
    if T.kind == "additive":
        t.update(link=T.link.name, kappa=T.weights.tolist())
    else:
        t.update(activation=T.activation.name, V=T.weights.tolist(), bias=T.bias.tolist(),
                 negative_slope=T.activation.negative_slope)
    return {"activation": S.activation, "negative_slope": S.negative_slope, "W": p.W.tolist(),
            "a": p.a.tolist(), "b": p.b.tolist(), "c": p.c, "scaling": S.scaling, "teacher": t}


@pytest.mark.parametrize("teacher", ["relu_net", "h2"])
def test_gradient_encloses_reference(teacher):
    rng = np.random.default_rng(4)
    d, m = 3, 3
    S = popdyn.Student(d=d, m=m, activation="leaky_relu", negative_slope=0.2)
    T = _teacher(teacher, d)
    p = popdyn.Params(rng.standard_normal(m), rng.standard_normal((m, d)), rng.standard_normal(m),
                      0.3)
    clear_cache()
    res = certify.loss(S, p, T, grad=True)
    with _mpref.mp.workdps(40):
        out = _mpref.compute(_case(S, p, T))
        g = out["grad"]
        ga = [g["a"][j] for j in range(m)]
        gW = [[g["W"][j][k] for k in range(d)] for j in range(m)]
        gb = [g["b"][j] for j in range(m)]
        gc = g["c"]
    # the reference carries ~40 digits: compare with a 1e-30 allowance
    slack = 1e-30
    for j in range(m):
        assert res.grad["a"][j].lo - slack <= ga[j] <= res.grad["a"][j].hi + slack
        assert res.grad["b"][j].lo - slack <= gb[j] <= res.grad["b"][j].hi + slack
        for k in range(d):
            assert res.grad["W"][j, k].lo - slack <= gW[j][k] <= res.grad["W"][j, k].hi + slack
    assert res.grad["c"].lo - slack <= gc <= res.grad["c"].hi + slack
    assert float(np.max(res.grad["W"].width)) < 1e-14


def test_numerical_provenance_for_tabulated_links_and_smooth_students():
    U = np.eye(3)[:1]
    T = popdyn.Teacher.additive("tanh", U)
    S = popdyn.Student(d=3, m=2)
    p = S.init(0, 0.5, T)
    res = certify.loss(S, p, T)
    assert res.provenance == "numerical" and res.loss.provenance == "numerical"
    assert res.loss.contains(popdyn.population_loss(S, p, T))
    Sm = popdyn.Student(d=3, m=2, activation="silu")
    res2 = certify.loss(Sm, Sm.init(0, 0.5, T), T)
    assert res2.provenance == "numerical"
    with pytest.raises(CertificationError):
        certify.loss(Sm, Sm.init(0, 0.5, T), T, grad=True)


def test_width_and_narrowing():
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((6, 2)))[0].T
    T = popdyn.Teacher.additive("h2", U)
    S = popdyn.Student(d=6, m=6)
    p = S.init(2, 0.7, T)
    res = certify.loss(S, p, T)
    assert res.loss.width <= 1e-12 * res.loss.hi
    clear_cache()
    w = [certify.loss(S, p, T, prec=pr).loss.width for pr in (20, 32, 48)]
    assert w[0] > w[1] > w[2]


def test_bad_input():
    T = popdyn.Teacher.additive("h2", np.eye(3)[:1])
    S = popdyn.Student(d=3, m=2)
    p = S.init(0, 0.5, T)
    for prec in (1, 0, -5, 10 ** 7):
        with pytest.raises(ValueError, match="prec"):
            certify.loss(S, p, T, prec=prec)
    with pytest.raises(TypeError, match="prec"):
        certify.loss(S, p, T, prec=64.0)
    bad = p.replace(W=np.where(np.eye(2, 3) > 0, np.nan, p.W))
    with pytest.raises(ValueError, match="finite"):
        certify.loss(S, bad, T)
    with pytest.raises(ValueError, match="kind"):
        certify.refit_risk(S, p, T, kind="unrestrcted")
    with pytest.raises(TypeError):
        certify.loss(S, p, "h2")


def test_low_precision_stays_sound_or_raises():
    """At absurdly low precision the brackets widen (or the call asks for more precision);
    they never silently become points."""
    T = popdyn.Teacher.network("relu", [1.0], np.array([[0.6, 0.8, 0.0]]), [0.1])
    S = popdyn.Student(d=3, m=2)
    p = S.init(1, 0.5, T)
    L = popdyn.population_loss(S, p, T)
    for prec in (2, 8):
        clear_cache()
        try:
            res = certify.loss(S, p, T, prec=prec)
        except CertificationError as exc:
            assert "prec" in str(exc)
            continue
        assert res.loss.width > 0 and (res.loss.contains(L) or math.isinf(res.loss.hi))
