"""certify.loss: soundness against the independent mpmath reference (tests/certify/_ref.py,
2-D Gaussian quadrature at 65 digits) on degenerate geometry, the gradient against the project's
independent reference tests/_mpref.py, provenance tags, width, narrowing with prec, and bad
input.

The references of the first two tests are stored (data/refs/loss_cases_refs.json, written by
data/_precompute/loss_cases_refs.py; exact float64 inputs as hex): the loss cases are those the
former hypothesis version of the test checked (its explicit examples and the draws of
hypothesis 6.170.17 under the derandomized profile), listed below as ``LOSS_DRAWS``; computing
the references live took about 40 s of single-core time.  The file's draws and inputs are
checked against this test's own construction, and its loss method is re-run live on one case
(bit-identical values expected).
"""
import json
import math
import os
import sys

import warnings

import numpy as np
import pytest

import popdyn
import certify
from certify import CertificationError
from certify.moments import clear_cache

import _ref as R
from _units import MODES, degenerate

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _mpref  # noqa: E402  (tests/_mpref.py: independent of popdyn and certify)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "data", "refs", "loss_cases_refs.json")) as fh:
    REFS = json.load(fh)
TEACHERS = ("h2", "relu_net", "sin", "damped_cubic:0.5", "abs")

# (W, b, teacher, activation, mode), W and b as they enter the mode's rewrite: the three explicit
# examples of the former hypothesis test, then the two examples hypothesis drew for it (entries
# in [−1, 1]; for "dup" the second row is the copy of the first, whatever was drawn there)
LOSS_DRAWS = [
    ([[0.5, -0.2, 0.3], [0.5, -0.2, 0.3]], [0.1, 0.1], "relu_net", "leaky_relu", "dup"),
    ([[0.5, -0.2, 0.3], [0.1, 0.4, 0.3]], [0.1, 0.5], "h2", "relu", "tiny"),
    ([[0.5, -0.2, 0.3], [0.1, 0.4, 0.3]], [0.1, -0.5], "relu_net", "leaky_relu", "huge"),
    ([[0.5, 0.0, 0.0], [0.5, 0.0, 0.0]], [0.0, 0.0], "h2", "relu", "dup"),
    ([[-0.9999999999999999, 0.382, 0.7668082360620363],
      [0.25183103218056124, -0.07959085777400898, -0.30467979768463926]],
     [-0.6519987148753685, 0.9999999999999999], "h2", "relu", "huge"),
]


def _teacher(kind, d):
    U = np.zeros((1, d))
    U[0, 0] = 0.6
    U[0, -1] = 0.8
    if kind == "relu_net":
        return popdyn.Teacher.network("relu", [1.3], U * 1.1, [0.4])
    return popdyn.Teacher.additive(kind, U, [0.9])


def _fx(h):
    if isinstance(h, list):
        return np.array([_fx(v) for v in h], dtype=float)
    return float.fromhex(h)


def _mp(s, dps):
    """A stored reference, read back exactly as the mpf the generator computed at ``dps``."""
    with R.ctx.workdps(dps):
        return R.ctx.mpf(s)


def _loss_problem(k):
    case = REFS["loss"][k]
    inp, dr = case["inputs"], case["draw"]
    S = popdyn.Student(d=3, m=2, activation=dr["activation"], negative_slope=0.1)
    p = popdyn.Params(_fx(inp["a"]), _fx(inp["W"]), _fx(inp["b"]), _fx(inp["c"]))
    return S, p, _teacher(dr["teacher"], 3)


def test_stored_loss_cases_are_the_declared_draws():
    """The stored file holds exactly the draws above, rewritten as this test rewrites them (up
    to the last bits of a BLAS norm: the file's inputs were built in correctly rounded Python
    floats, and those are what the test below feeds to certify)."""
    assert REFS["loss_work_dps"] == 65 and REFS["negative_slope"] == 0.1
    assert len(REFS["loss"]) == len(LOSS_DRAWS)
    assert {c["draw"]["mode"] for c in REFS["loss"]} == {"dup", "tiny", "huge"}
    for case, (W, b, teacher, act, mode) in zip(REFS["loss"], LOSS_DRAWS):
        dr, inp = case["draw"], case["inputs"]
        assert (dr["teacher"], dr["activation"], dr["mode"]) == (teacher, act, mode)
        assert teacher in TEACHERS and mode in ("dup",) + MODES
        assert _fx(dr["W"]).tolist() == W and _fx(dr["b"]).tolist() == b
        Wt, bt = np.array(W), np.array(b)
        if mode == "dup":
            Wt[1] = Wt[0]
        else:
            Wt, bt = degenerate(Wt, bt, 1, mode)
        np.testing.assert_allclose(_fx(inp["W"]), Wt, rtol=4e-16, atol=0)
        np.testing.assert_allclose(_fx(inp["b"]), bt, rtol=4e-16, atol=0)
        assert _fx(inp["a"]).tolist() == [0.7, -1.1] and _fx(inp["c"]) == 0.2


def test_stored_loss_reference_is_the_method_live():
    """The stored values are R.loss's output on the stored inputs: the duplicated-unit case
    against the h2 teacher (quadratures at 65 digits, about a second) recomputed
    bit-identically."""
    k = [(c["draw"]["mode"], c["draw"]["teacher"]) for c in REFS["loss"]].index(("dup", "h2"))
    S, p, T = _loss_problem(k)
    L, ey, ey2 = R.loss(S, p, T, dps=50)
    ref = REFS["loss"][k]["ref"]
    assert (L, ey, ey2) == tuple(_mp(ref[key], 65) for key in ("loss", "mean_y", "second_y"))


@pytest.mark.parametrize("k", range(len(LOSS_DRAWS)),
                         ids=[f"{k}-{d[2]}-{d[3]}-{d[4]}" for k, d in enumerate(LOSS_DRAWS)])
def test_loss_encloses_reference(k):
    S, p, T = _loss_problem(k)
    ref = REFS["loss"][k]["ref"]
    clear_cache()
    res = certify.loss(S, p, T)
    L, ey, ey2 = (_mp(ref[key], 65) for key in ("loss", "mean_y", "second_y"))
    assert res.provenance == "rigorous"
    assert res.loss.contains(L), (res.loss, L)
    assert res.variance.contains(ey2 - ey * ey)
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always", popdyn.AccuracyWarning)
        Lf, info = popdyn.population_loss(S, p, T, full_output=True)
    tol = info["error"] + 64 * np.finfo(float).eps * max(abs(Lf), T.second_moment)
    assert res.loss.lo - tol <= Lf <= res.loss.hi + tol
    # the rtol contract: silent only when the estimate is within rtol·|L| + atol,
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


def _grad_problem(teacher):
    g = REFS["grad_inputs"]
    d, m = 3, 3
    S = popdyn.Student(d=d, m=m, activation="leaky_relu", negative_slope=g["negative_slope"])
    p = popdyn.Params(_fx(g["a"]), _fx(g["W"]), _fx(g["b"]), _fx(g["c"]))
    return S, p, _teacher(teacher, d)


def test_stored_gradient_cases_are_the_seeded_draws():
    """The stored gradient inputs are np.random.default_rng(4)'s draws (a, W, b), and the stored
    cases are the reference's input dictionaries of these problems."""
    rng = np.random.default_rng(4)
    a, W, b = rng.standard_normal(3), rng.standard_normal((3, 3)), rng.standard_normal(3)
    g = REFS["grad_inputs"]
    assert g["seed"] == 4 and g["negative_slope"] == 0.2 and _fx(g["c"]) == 0.3
    assert _fx(g["a"]).tolist() == a.tolist() and _fx(g["W"]).tolist() == W.tolist()
    assert _fx(g["b"]).tolist() == b.tolist()
    assert [c["teacher"] for c in REFS["gradient"]] == ["relu_net", "h2"]
    assert REFS["grad_dps"] == 40


@pytest.mark.parametrize("teacher", ["relu_net", "h2"])
def test_gradient_encloses_reference(teacher):
    d, m = 3, 3
    S, p, T = _grad_problem(teacher)
    clear_cache()
    res = certify.loss(S, p, T, grad=True)
    g = next(c["ref"] for c in REFS["gradient"] if c["teacher"] == teacher)
    with _mpref.mp.workdps(40):
        mpf = _mpref.mp.mpf
        ga = [mpf(g["a"][j]) for j in range(m)]
        gW = [[mpf(g["W"][j][k]) for k in range(d)] for j in range(m)]
        gb = [mpf(g["b"][j]) for j in range(m)]
        gc = mpf(g["c"])
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
