"""Gated teachers with ordinary students (issue 19): numerical loss and refit brackets instead of
refusals.

The refit quadratic's teacher side, g_j = E[σ_j y] and V_Y, is checked against the independent
30-digit mpmath reference of data/refs/swiglu_refs.json (data/_precompute/swiglu_refs.py: pure
mpmath, Gaussian conditioning and tensor Gauss–Legendre quadrature; no popdyn code), which has
E[σ(w_j·x + b_j) y] for relu and silu units against the id, gelu, tanh, relu and rotation
gates, including a unit along the value axis and one nearly along the gate axis.  The student
side G = C − μ0μ0ᵀ is the certified (rigorous) one of the ordinary refit.
"""
import json
import warnings
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import certify
import popdyn
from certify.errors import CertificationError
from certify.refit import _multi_index_problem
from popdyn import Teacher

REFS = json.loads((Path(__file__).resolve().parents[2] / "data" / "refs"
                   / "swiglu_refs.json").read_text())
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
        L = popdyn.population_loss(S, p, T)
        rf = popdyn.refit_risk(S, p, T)
    res = certify.loss(S, p, T)
    assert res.provenance == "numerical" and res.loss.contains(L)
    assert res.loss.rel_width <= 1e-9
    for kind, B in (("unrestricted", None), ("same_budget", None), ("bounded", 0.5)):
        R = certify.refit_risk(S, p, T, kind, budget=B)
        assert R.provenance == "numerical"
        assert 0 <= R.risk.lo <= R.risk.hi <= T.variance * (1 + 1e-12)
        if kind == "unrestricted":
            assert R.risk.lo - 1e-9 <= rf.risk <= R.risk.hi + 1e-9
    with pytest.raises(CertificationError, match="gated"):
        certify.loss(S, p, T, grad=True)


SW = [c for c in REFS["cases"] if c["teacher"] in ("tanh", "rotation")]


@pytest.mark.parametrize("case", SW, ids=[c["teacher"] for c in SW])
def test_swiglu_refit_against_gated_teachers(case):
    """SwiGLU refits against teachers outside the polynomial class: numerical problem whose
    teacher side contains the 30-digit E[yφ_j] and V_Y; every kind gives a bracket."""
    from certify.swiglu import swiglu_refit_problem
    U = np.eye(REFS["d"])[:2]
    T = Teacher.gated(case["teacher"], U)
    S = popdyn.SwiGLUStudent(REFS["d"], len(case["a"]))
    p = popdyn.SwiGLUParams(case["a"], case["G"], case["V"], case["c"])
    G, g, V, CM = swiglu_refit_problem(S, p, T, 128)
    assert not CM.rigorous
    for j, y in enumerate(case["ref"]["Yphi"]):
        assert _contains(g[j, 0], y), (j, g[j, 0], y)
    assert _contains(V, case["ref"]["Ey2"])
    for kind, B in (("unrestricted", None), ("bounded", 0.5)):
        R = certify.refit_risk(S, p, T, kind, budget=B)
        assert R.provenance == "numerical" and R.risk.lo <= R.risk.hi
