"""certify.loss for students with a linear skip: L = L_ridge + s Σ a_j E[σ′_j] w_j·v
− v·E[y x] + ½|v|² in Arb (certify.skip.skip_loss).

References: data/refs/skip_refs.json (mpmath nested quadrature at 35 digits of the whole loss,
inputs as float64 hex; data/_precompute/skip_refs.py), not popdyn code.  The bracket must
contain the 30-digit value (compared exactly), be tagged rigorous and be narrow; popdyn's float
loss must agree to 1e−12 (relu family) / 1e−10 (smooth).  Properties: v = 0 gives the plain
student's bracket, and the float loss lies within its own stated error of the bracket at
random states.
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import certify
import popdyn
from certify.errors import CertificationError

from _refdata import assert_inside, build_skip, load_refs, unhex
from _refdata import skip_state as _state  # (the name the hypothesis tests' source uses)

_REFS = load_refs("skip_refs.json")


@pytest.mark.parametrize("i", range(len(_REFS["certify_cases"])))
def test_skip_loss_against_mpmath(i):
    mp.mp.dps = 40
    case = _REFS["certify_cases"][i]
    S, p, T = build_skip(unhex(case["inputs"]))
    res = certify.loss(S, p, T)
    ref = case["loss"]
    assert res.provenance == "rigorous"
    assert_inside(res.loss, ref, "loss")
    assert res.loss.hi - res.loss.lo <= 1e-12 * float(ref)
    tol = 1e-12 if S.act.kind == "pl" else 1e-10
    assert abs(popdyn.population_loss(S, p, T) - float(ref)) <= tol * float(ref)


@pytest.mark.parametrize("i", [0, 1])
def test_one_neuron_cases(i):
    """The one-neuron relu / silu cases of the float tests, now through certify."""
    mp.mp.dps = 40
    case = _REFS["cases"][i]
    inp = unhex(case["inputs"])
    S = popdyn.Student(3, 1, activation=inp["act"], skip=True)
    T = popdyn.Teacher.additive("h2", np.array(inp["u"])[None, :], np.array([inp["kappa"]]))
    p = popdyn.Params([inp["a"]], np.array(inp["w"])[None, :], [inp["b"]], inp["c"],
                      np.array(inp["v"]))
    res = certify.loss(S, p, T)
    assert res.provenance == "rigorous"
    assert_inside(res.loss, case["loss"], "loss")


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), act=st.sampled_from(["relu", "leaky_relu", "erf"]),
       teacher=st.sampled_from(["network", "additive"]))
def test_v_zero_is_the_plain_bracket_and_float_loss_inside(seed, act, teacher):
    S, p, T = _state(seed, act, teacher)
    res = certify.loss(S, p, T)
    assert res.provenance == "rigorous"
    # the float loss within its own stated error (series estimate + rounding floor atol)
    L, info = popdyn.population_loss(S, p, T, full_output=True)
    slack = info["error"] + info["atol"]
    assert res.loss.lo - slack <= L <= res.loss.hi + slack, (res.loss, L, slack)
    p0 = p.replace(v=np.zeros(S.d))
    b0 = certify.loss(S, p0, T).loss
    plain = certify.loss(S.replace(skip=False), p0, T).loss
    assert (b0.lo, b0.hi) == (plain.lo, plain.hi)


def test_unsupported_pairs_are_numerical_and_no_gradient():
    S, p, T = _state(2, "relu", "network")
    G = popdyn.Teacher.multi_index({(1, 1): 1.0, (0, 1): 0.4}, T.subspace[:2])
    res = certify.loss(S, p, G)
    assert res.provenance == "numerical" and res.loss.contains(popdyn.population_loss(S, p, G))
    with pytest.raises(CertificationError, match="gradient of a skip student"):
        certify.loss(S, p, G, grad=True)


def test_skip_refit_refuses_a_teacher_without_unit_moments_in_one_line():
    """A skip relu student against a tanh network: certify has no unit-by-unit E[y x] for it and
    refuses in one line (it raised a bare TypeError)."""
    import popdyn

    rng = np.random.default_rng(0)
    S = popdyn.Student(3, 2, "relu", bias=True, skip=True)
    p = popdyn.Params(rng.normal(size=2), rng.normal(size=(2, 3)), rng.normal(size=2), 0.1,
                      v=rng.normal(size=3) * 0.3)
    T = popdyn.Teacher.network("tanh", [1.0, -0.5], rng.normal(size=(2, 3)), [0.0, 0.2])
    with pytest.raises(certify.CertificationError, match="skip refit needs a rigorous E\\[y x\\]"):
        certify.refit_risk(S, p, T, "unrestricted")
