"""certify.refit_risk: every refit kind of the diagnostics module; the float64 diagnostics'
attained risk and dual lower value must agree with the bracket up to float rounding; the Lagrangian
lower bound and the feasible upper bound against an mpmath solve of the refit quadratic built
from the independent reference moments (50 digits, hypothesis, few examples)."""
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from mpmath import mp

import popdyn
import certify
from certify.moments import clear_cache
from popdyn.diagnostics import refit_risk as float_refit

import _ref as R
from _units import MODES, degenerate

KINDS = (("unrestricted", None), ("same_budget", None), ("bounded", 0.3), ("bounded", 5.0),
         ("projected", None), ("projected", 0.4))


def _setup(seed, act="relu", m=6, d=5):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    T = popdyn.Teacher.additive("h2", U, [1.0, 0.5])
    S = popdyn.Student(d=d, m=m, activation=act, negative_slope=0.1)
    return S, S.init(seed, 0.8, T), T


@pytest.mark.parametrize("kind,budget", KINDS)
def test_kinds_agree_with_float_diagnostics(kind, budget):
    S, p, T = _setup(3, "leaky_relu")
    res = certify.refit_risk(S, p, T, kind, budget)
    fr = float_refit(S, p, T, kind, budget)
    assert res.provenance == "rigorous" and res.kind == kind
    assert res.risk.lo <= res.risk.hi
    tol = 1e-12 * T.variance
    # the float attained risk is an upper value of the optimum, its dual a lower value
    assert fr.risk >= res.risk.lo - tol
    assert fr.lower <= res.risk.hi + tol
    if kind != "unrestricted" or res.status == "resolved":
        assert res.risk.width <= 1e-9 * res.risk.hi
    if budget is not None or kind == "same_budget":
        B = budget if budget is not None else float(np.linalg.norm(p.a))
        assert float(np.linalg.norm(res.head)) <= B


def _mp_refit(S, p, T, B2):
    C, _, mu0, Ct = R.moment_matrices(S, p, T, dps=50, with_B=False)
    with R.ctx.workdps(62):
        ey, ey2 = R.teacher_moments(S, p, T, dps=50)
        m = S.m
        G = mp.matrix(m, m)
        for i in range(m):
            for j in range(m):
                G[i, j] = C[i][j] - mu0[i] * mu0[j]
        g = [sum(Ct[i][k] * R.mpq(R.F(float(T.weights[k]))) for k in range(T.k)) - mu0[i] * ey
             for i in range(m)]
        V = ey2 - ey * ey
        lam, Q = mp.eigsy(G)
        c = [mp.fsum(Q[k, i] * g[k] for k in range(m)) for i in range(m)]
        if B2 is None or mp.fsum(c[i] ** 2 / lam[i] ** 2 for i in range(m)) <= B2:
            return V - mp.fsum(c[i] ** 2 / lam[i] for i in range(m))
        lo, hi = mp.mpf(0), mp.sqrt(mp.fsum(x * x for x in c) / B2) + 1
        for _ in range(300):
            mid = (lo + hi) / 2
            if mp.fsum(c[i] ** 2 / (lam[i] + mid) ** 2 for i in range(m)) > B2:
                lo = mid
            else:
                hi = mid
        mu = (lo + hi) / 2
        return V + mp.fsum(lam[i] * c[i] ** 2 / (lam[i] + mu) ** 2 - 2 * c[i] ** 2 / (lam[i] + mu)
                           for i in range(m))


@settings(max_examples=3)
@given(st.integers(0, 1000), st.sampled_from([None, 0.09]), st.sampled_from(MODES))
@example(5, None, "tiny")
@example(7, 0.09, "collinear")
def test_refit_encloses_reference(seed, B2, mode):
    mp.dps = 60
    S, p, T = _setup(seed, m=2, d=3)
    W, b = degenerate(p.W.copy(), p.b.copy(), 1, mode)
    p = p.replace(W=W, b=b)
    clear_cache()
    kind, budget = ("unrestricted", None) if B2 is None else ("bounded", 0.3)
    res = certify.refit_risk(S, p, T, kind, budget)
    ref = _mp_refit(S, p, T, B2)
    assert res.risk.contains(ref), (mode, res.risk, ref)


def test_bad_budget_and_kind():
    S, p, T = _setup(1)
    with pytest.raises(ValueError, match="budget"):
        certify.refit_risk(S, p, T, "bounded")
    with pytest.raises(ValueError, match="budget"):
        certify.refit_risk(S, p, T, "same_budget", 1.0)
    with pytest.raises(ValueError, match="kind"):
        certify.refit_risk(S, p, T, "ridge")
    with pytest.raises(ValueError, match="budget"):
        certify.refit_risk(S, p, T, "bounded", -1.0)
