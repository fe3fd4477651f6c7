"""Rigorous loss and refits of relu / leaky_relu students against smooth teacher networks
(certify.pl_smooth).

* Every stored case of data/refs/pl_smooth_refs.json (independent 2-D mpmath quadrature at 32
  digits, data/_precompute/pl_smooth_refs.py; float64 inputs stored as hex; tanh, silu, gelu
  and erf teacher units with biases; a duplicated, an antiparallel, a zero unit, a unit exactly
  along a teacher row, one within 2^−20 of it and a tiny unit): the loss, E[y], V_Y, every
  cross moment Ct and the unrestricted / same_budget / bounded refit optima lie inside the
  rigorous brackets; loss widths <= 1e−12 relative, Ct radii <= 1e−21 (the 1-D integral takes over above 2^−72 of the pair scale).
* The unrestricted refit of the same features without the zero unit (a constant feature: its
  centered column of G is 0, so the optimum is the same) is resolved, with a relative width
  <= 1e−6.
* The 1-D conditional integral and the Mehler sum are two independent enclosures of Ct: both
  contain the reference.
"""

import mpmath as mp
import numpy as np
import pytest

import certify
import popdyn
from certify import pl_smooth

from _refdata import REF_ABS, assert_inside, ball_has, check_loss_bracket, hex_array, load_refs

CASES = load_refs("pl_smooth_refs.json")["cases"]
mp.mp.dps = 40


def _build(case, drop=()):
    inp = case["inputs"]
    keep = [i for i in range(len(inp["W"])) if i not in drop]
    u = hex_array
    W = u(inp["W"])[keep]
    S = popdyn.Student(d=W.shape[1], m=W.shape[0], activation=case["activation"])
    p = popdyn.Params(u(inp["a"])[keep], W, u(inp["b"])[keep], float.fromhex(inp["c"]))
    t = inp["teacher"]
    T = popdyn.Teacher.network(t["activation"], u(t["V"]), u(t["U"]), u(t["bias"]))
    return S, p, T


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_brackets_contain_the_reference(case):
    S, p, T = _build(case)
    assert pl_smooth.covers(S, T)
    check_loss_bracket(S, p, T, case)
    CM = pl_smooth.pl_smooth_moments(S, p, T)
    for i in range(S.m):
        for t in range(T.k):
            assert ball_has(CM.Ct[i, t], case["Ct"][i][t], REF_ABS), (i, t, CM.Ct[i, t])
            assert float(CM.Ct[i, t].rad()) <= 1e-21
    for kind, key, B in (("unrestricted", "unrestricted", None),
                         ("same_budget", "same_budget", None), ("bounded", "bounded_0.5", 0.5)):
        R = certify.refit_risk(S, p, T, kind, budget=B)
        assert R.provenance == "rigorous"
        assert_inside(R.risk, case["refit"][key], f"refit {kind}")
        if kind != "unrestricted":            # the zero unit makes G singular: lower bound 0
            assert R.status == "resolved" and R.risk.width <= 1e-9 * R.risk.hi, (kind, R.risk)
    # without the zero unit (3; a constant feature, centered to 0): the same optimum, resolved
    S2, p2, T2 = _build(case, drop=(3,))
    R = certify.refit_risk(S2, p2, T2, "unrestricted")
    assert R.status == "resolved" and R.provenance == "rigorous"
    assert_inside(R.risk, case["refit"]["unrestricted"], "refit unrestricted (deduplicated)")
    assert R.risk.width <= 1e-6 * R.risk.hi, R.risk


def test_integral_and_mehler_are_both_enclosures():
    """At the exactly aligned unit (ρ = 1) and the near-aligned one the two enclosures of Ct are
    computed separately: each contains the reference, the integral is the narrow one."""
    from certify import _arb as A
    from certify import moments as MO
    case = next(c for c in CASES if c["name"] == "relu_tanh")
    S, p, T = _build(case)
    m = S.m
    with A.workprec(144):
        geo = MO._Geometry(np.vstack([p.W, T.U]))
        su = MO._student_units(S, p, geo, m)
        tsm, N = pl_smooth._teacher_side(T, geo, m, 128)[:2]
        ct, _, tct, _ = tsm[0].series(N)
        for i in (4, 5):                      # 2·u₁ (ρ = 1 exactly) and u₁ + O(2^−20)
            g = geo.pair(i, m)
            cu, tcu = su[i].coeffs(N)
            x = MO._mehler(cu, tcu, ct, A.sqrt_up(tct), g[0], g[3])
            y = pl_smooth.pl_cond_moment(su[i], "tanh", tsm[0].al, tsm[0].be, g, 0, 128)
            ref = case["Ct"][i][0]
            assert ball_has(x, ref, REF_ABS) and ball_has(y, ref, REF_ABS)
            assert float(y.rad()) <= 1e-21 < float(x.rad())
