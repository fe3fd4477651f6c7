"""certify.bounded_refit: the bracket of the bounded refit of Kumar (arXiv 2609.39408), eq. (6).

References: the 40-digit exhaustive KKT minimum of quadratics whose H, c, E[y²] come from the
independent 50-digit quadrature of tests/certify/_ref.py (data/refs/bounded_refit_refs.json,
m = 2–4, d = 2–3, caps active in three of the four cases), and on the fly (hypothesis, few
examples) the same KKT enumeration on moments from tests/certify/_ref.py; the float value of
popdyn.diagnostics.bounded_refit lies in the bracket; the bracket is narrow at a paper-sized
state (d = 16, m = 32, relu with biases, additive h3 teacher).
"""
import json
import os
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from mpmath import mpf

import popdyn
import certify
from certify.moments import clear_cache
from popdyn.diagnostics import bounded_refit as float_refit

import _ref as R

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from _bounded_kkt import kkt_minimum  # noqa: E402  (independent of popdyn and certify)
from _bounded_cases import build as _build, exact_feasible as _exact_feasible  # noqa: E402

REFS = Path(__file__).resolve().parents[2] / "data" / "refs" / "bounded_refit_refs.json"


@pytest.mark.parametrize("case", json.loads(REFS.read_text())["population"],
                         ids=lambda c: c["name"])
def test_bracket_contains_reference(case):
    S, p, T, a, b = _build(case)
    res = certify.bounded_refit(S, p, T, l2_cap=a, l1_cap=b)
    Rs = mpf(case["R"])
    assert res.provenance == "rigorous" and res.status == "resolved"
    assert res.risk.contains(Rs), (res.risk, Rs)
    assert res.risk.width <= 1e-10 * float(Rs)
    assert _exact_feasible(res.head, a, b)
    # the float value (from the float64 engine's moments, accurate to ~1e−13 here) lies in the
    # bracket up to that accuracy
    fr = float_refit(S, p, T, l2_cap=a, l1_cap=b)
    assert res.risk.lo - 1e-12 <= fr.upper <= res.risk.hi + 1e-12
    assert fr.lower <= res.risk.hi + 1e-12


def _moments_ref(S, p, T):
    """H, c, E[y²] at 40 digits from the independent quadrature of tests/certify/_ref.py."""
    C, _, _, Ct = R.moment_matrices(S, p, T, dps=40, with_B=False)
    _, ey2 = R.teacher_moments(S, p, T, dps=40)
    ctx = R.ctx
    m = S.m
    with ctx.workdps(50):
        n = [ctx.sqrt(R.mpq(sum(Fraction(float(x)) ** 2 for x in p.W[i])
                            + Fraction(float(p.b[i])) ** 2)) for i in range(m)]
        w = [R.mpq(Fraction(float(x))) for x in T.weights]
        H = [[mpf(C[i][j] / (n[i] * n[j])) for j in range(m)] for i in range(m)]
        c = [mpf(ctx.fsum(Ct[i][k] * w[k] for k in range(len(w))) / n[i]) for i in range(m)]
    return H, c, mpf(ey2)


@settings(max_examples=2)
@given(st.integers(0, 1000), st.sampled_from([(0.05, 0.07), (0.3, 0.2), (32.0, 90.5)]),
       st.sampled_from(["relu", "leaky_relu"]))
@example(4, (0.05, 0.07), "relu")
def test_bracket_contains_kkt_on_the_fly(seed, caps, act):
    rng = np.random.default_rng(seed)
    d, m = 2, 2
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    T = popdyn.Teacher.additive("h2", U, [1.0, 0.5])
    S = popdyn.Student(d=d, m=m, activation=act, negative_slope=0.2)
    p = popdyn.Params(np.ones(m), rng.standard_normal((m, d)), rng.standard_normal(m))
    clear_cache()
    res = certify.bounded_refit(S, p, T, l2_cap=caps[0], l1_cap=caps[1])
    H, c, e = _moments_ref(S, p, T)
    Rs, _ = kkt_minimum(H, c, e, caps[0], caps[1], dps=35)
    assert res.risk.contains(Rs), (res.risk, Rs)


def _paper_state(caps=None):
    d, m = 16, 32
    T = popdyn.Teacher.additive("h3", np.eye(d)[:2]).normalized("second_moment")
    S = popdyn.Student(d=d, m=m)
    rng = np.random.default_rng(0)
    W = 1e-3 * rng.standard_normal((m, d))
    for j in range(24):
        W[j, j % 2] += 1.0 if j % 4 < 2 else -1.0
    b = np.concatenate([np.linspace(-2, 2, 24), rng.standard_normal(m - 24)])
    return S, popdyn.Params(np.ones(m), W, b), T


@pytest.mark.parametrize("caps", [None, (4.0, 9.0)])
def test_paper_sized_bracket_is_tight(caps):
    S, p, T = _paper_state()
    kw = {} if caps is None else dict(l2_cap=caps[0], l1_cap=caps[1])
    res = certify.bounded_refit(S, p, T, **kw)
    fr = float_refit(S, p, T, **kw)
    assert res.provenance == "rigorous"
    assert res.risk.width <= 1e-8 * res.risk.hi
    assert res.risk.lo - 1e-12 <= fr.upper <= res.risk.hi + 1e-12
    if caps is None:                     # the paper's caps, as balls around 32 and 64√2
        assert res.l2_cap.contains(32.0) and res.l1_cap.lo <= 64 * 2 ** 0.5 <= res.l1_cap.hi
        assert res.risk.hi < 0.2
    else:                                # the caps bind
        h = res.head
        assert np.linalg.norm(h) > 0.999 * caps[0] or np.abs(h).sum() > 0.999 * caps[1]
    # conservative gain against initialization with the certified brackets
    p0 = S.init(3, 1e-4, T)
    r0 = certify.bounded_refit(S, p0, T, **kw)
    g = popdyn.diagnostics.refit_gain(r0, res)
    assert g == r0.risk.lo - res.risk.hi - 1e-5 and g > 0.5


def test_tabulated_link_is_numerical():
    """A tabulated link (tanh) makes the moments numerical: the bracket says so."""
    d, m = 3, 3
    T = popdyn.Teacher.additive("tanh", np.eye(d)[:2])
    S = popdyn.Student(d=d, m=m)
    p = S.init(2, 1.0, T)
    res = certify.bounded_refit(S, p, T)
    assert res.provenance == "numerical" and res.risk.provenance == "numerical"
    fr = float_refit(S, p, T)
    assert res.risk.lo - 1e-10 <= fr.upper <= res.risk.hi + 1e-10


def test_bad_input():
    S, p, T = _paper_state()
    Ss = popdyn.Student(d=16, m=32, activation="tanh")
    with pytest.raises(ValueError, match="relu or leaky_relu"):
        certify.bounded_refit(Ss, p, T)
    with pytest.raises(ValueError, match="prec"):
        certify.bounded_refit(S, p, T, prec=1)
    with pytest.raises(ValueError, match="l1_cap"):
        certify.bounded_refit(S, p, T, l1_cap=-2.0)
