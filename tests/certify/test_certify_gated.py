"""Gated teachers with ordinary students: rigorous loss and refit brackets
(certify.gated; the numerical path of certify.refit._multi_index_problem stays for general
multi-index teachers and is still checked here).

The refit quadratic's teacher side, g_j = E[σ_j y] and V_Y, is checked against the independent
30-digit mpmath reference of data/refs/swiglu_refs.json (data/_precompute/swiglu_refs.py: pure
mpmath, Gaussian conditioning and tensor Gauss–Legendre quadrature; no popdyn code), which has
E[σ(w_j·x + b_j) y] for relu and silu units against the id, gelu, tanh, relu and rotation
gates, including a unit along the value axis and one nearly along the gate axis.  The student
side G = C − μ0μ0ᵀ is the certified (rigorous) one of the ordinary refit.
"""
import warnings

import mpmath as mp
import numpy as np
import pytest

import certify
import popdyn
from certify.errors import CertificationError
from certify.refit import _multi_index_problem
from popdyn import Teacher

from _refdata import exact, load_refs

REFS = load_refs("swiglu_refs.json")
GATED = [c for c in REFS["cases"] if "Ct_relu" in c["ref"] and c["teacher"] != "h3"]


def _setup(case, act):
    U = np.eye(REFS["d"])[:2]
    T = Teacher.gated(case["teacher"], U)
    S = popdyn.Student(REFS["d"], 3, activation=act)
    p = popdyn.Params(np.ones(3), np.array(case["W"]), np.array(case["b"]), 0.0)
    return S, p, T


def _contains(ball, x):
    mid, rad = mp.mpf(float(ball.mid())), mp.mpf(float(ball.rad()))
    return abs(mp.mpf(x) - mid) <= rad * (1 + 1e-12) + mp.mpf(2.0 ** -60) * abs(mid)


ORD = [(c, "relu") for c in GATED] + [(c, "silu") for c in GATED if c["teacher"] == "tanh"]


@pytest.mark.parametrize("case,act", ORD, ids=[f"{c['teacher']}-{a}" for c, a in ORD])
def test_refit_quadratic_contains_the_reference(case, act):
    S, p, T = _setup(case, act)
    G, g, V, CM = _multi_index_problem(S, p, T, 128)
    assert not CM.rigorous
    ref = case["ref"][f"Ct_{act}"]
    kappa = float(T.weights[0])
    for j in range(3):
        assert _contains(g[j, 0], mp.mpf(ref[j]) * kappa), (j, g[j, 0], ref[j])
    assert _contains(V, mp.mpf(case["ref"]["Ey2"]))


@pytest.mark.parametrize("gate", ["gelu", "relu"])
def test_brackets_not_refused(gate):
    case = next(c for c in GATED if c["teacher"] == gate)
    S, p, T = _setup(case, "relu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", popdyn.AccuracyWarning)
        L, info = popdyn.population_loss(S, p, T, full_output=True)
        rf = popdyn.refit_risk(S, p, T)
    res = certify.loss(S, p, T)
    # rigorous since certify.gated (second pass): the float64 value lies within its
    # stated error (series estimate + rounding floor) of the bracket
    assert res.provenance == "rigorous"
    err = float(info["error"]) + float(info["atol"])
    assert res.loss.lo - err <= L <= res.loss.hi + err
    assert res.loss.rel_width <= 1e-12
    for kind, B in (("unrestricted", None), ("same_budget", None), ("bounded", 0.5)):
        R = certify.refit_risk(S, p, T, kind, budget=B)
        assert R.provenance == "rigorous"
        assert 0 <= R.risk.lo <= R.risk.hi <= T.variance * (1 + 1e-12)
        if kind == "unrestricted":
            assert R.risk.lo - 1e-9 <= rf.risk <= R.risk.hi + 1e-9
    with pytest.raises(CertificationError, match="gated"):
        certify.loss(S, p, T, grad=True)


@pytest.mark.parametrize("case,act", ORD, ids=[f"{c['teacher']}-{a}" for c, a in ORD])
def test_rigorous_gated_moments_contain_the_reference(case, act):
    """certify.gated's rigorous E[σ_j y] and E[y²] contain the independent 30-digit values of
    swiglu_refs (relu and silu units, every gate, a unit along the value axis and one nearly
    along the gate axis), with widths <= 1e-14 of the scale."""
    from certify.gated import gated_moments
    S, p, T = _setup(case, act)
    CM = gated_moments(S, p, T, prec=128)
    assert CM.rigorous
    ref = case["ref"][f"Ct_{act}"]
    # the reference's accuracy: relu units by mpmath.quad of a closed inner integral, 30 digits
    # of the O(1) scale (a unit along the value axis has E[σ y] = E[σ t]E[F(s)] = 0 exactly;
    # the quadrature gives ~1e−31); silu units by composite Gauss–Legendre, whose stored
    # self-check is ``quadrature_check`` (8e−16 relative): 10× that (the silu values are
    # checked at 32 digits against data/refs/gated_refs.json in test_certify_gated_rigorous)
    rel = 0 if act == "relu" else 10 * REFS["quadrature_check"]
    for j in range(3):
        mid, rad = exact(CM.Ct[j, 0].mid()), exact(CM.Ct[j, 0].rad())
        tol = rad * (1 + 1e-12) + mp.mpf(10) ** -28 + rel * abs(mp.mpf(ref[j]))
        assert abs(mp.mpf(ref[j]) - mid) <= tol, (j, CM.Ct[j, 0], ref[j])
        assert float(CM.Ct[j, 0].rad()) <= 1e-14 * max(abs(float(mp.mpf(ref[j]))), 1e-2)
    mid, rad = exact(CM.ey2.mid()), exact(CM.ey2.rad())
    ey2 = mp.mpf(case["ref"]["Ey2"])
    assert abs(ey2 - mid) <= rad * (1 + 1e-12) + mp.mpf(10) ** -28 + rel * ey2
    assert CM.ey == 0                    # the identity frame: u1·u2 = 0 exactly


SW = [c for c in REFS["cases"] if c["teacher"] in ("tanh", "rotation")]


@pytest.mark.parametrize("case", SW, ids=[c["teacher"] for c in SW])
def test_swiglu_refit_against_gated_teachers(case):
    """SwiGLU refits against gated teachers: a rigorous problem (certify.swiglu_gated, issue
    19) whose teacher side contains the 30-digit E[yφ_j] and V_Y; every kind gives a bracket."""
    from certify.swiglu import swiglu_refit_problem
    U = np.eye(REFS["d"])[:2]
    T = Teacher.gated(case["teacher"], U)
    S = popdyn.SwiGLUStudent(REFS["d"], len(case["a"]))
    p = popdyn.SwiGLUParams(case["a"], case["G"], case["V"], case["c"])
    G, g, V, CM = swiglu_refit_problem(S, p, T, 128)
    assert CM.rigorous
    # swiglu_refs.json is accurate to its stated quadrature_check (8e−16 relative: Gauss–Legendre
    # on [−10, 10]), coarser than the rigorous balls (~1e−17); the 40-digit references of
    # test_certify_swiglu_gated.py check the balls themselves
    acc = mp.mpf(REFS["quadrature_check"])
    for j, y in enumerate(case["ref"]["Yphi"]):
        mid, rad = exact(g[j, 0].mid()), exact(g[j, 0].rad())
        lo, hi = mid - rad, mid + rad
        assert lo - acc * abs(mp.mpf(y)) <= mp.mpf(y) <= hi + acc * abs(mp.mpf(y)), (j, g[j, 0], y)
    # in exact arithmetic (``_contains`` rounds the midpoint to float64, coarser than a rigorous
    # V ball), allowing the reference string's own 30-digit rounding
    mid, rad = exact(V.mid()), exact(V.rad())
    ey2 = mp.mpf(case["ref"]["Ey2"])
    assert mid - rad - 1e-29 * abs(ey2) <= ey2 <= mid + rad + 1e-29 * abs(ey2)
    for kind, B in (("unrestricted", None), ("bounded", 0.5)):
        R = certify.refit_risk(S, p, T, kind, budget=B)
        assert R.provenance == "rigorous" and R.risk.lo <= R.risk.hi
