"""Relu / leaky-relu students against smooth teacher networks (tanh, silu, gelu, erf): the
float engine's cross moments and loss against data/refs/pl_smooth_refs.json (8 cases, 32-digit
2-D Gaussian integrals of tests/certify/_ref.py, inputs as float64 hex; no Hermite series).

Both directions: every cross moment E[σ_j y_t] is within its stated error ``errCt`` (the
Mehler estimate of :func:`popdyn._moments.hermite_cross`: tails, coefficient errors, rounding),
and the loss is within rtol (plus its rounding floor) or warns, and does not warn when it is
within rtol/100.  Geometries: a random unit, its duplicate, an antiparallel multiple, a zero
unit, a unit along the first teacher row (ρ = 1), one within 2⁻²⁰ of it and a tiny unit.
"""
import json
import warnings
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import popdyn
import popdyn._moments as PM

ROOT = Path(__file__).resolve().parents[2]
REFS = json.loads((ROOT / "data" / "refs" / "pl_smooth_refs.json").read_text())["cases"]


def _ux(x):
    if isinstance(x, list):
        return np.array([_ux(v) for v in x], dtype=float)
    return float.fromhex(x)


def _build(case):
    inp, t = case["inputs"], case["inputs"]["teacher"]
    W = _ux(inp["W"])
    S = popdyn.Student(W.shape[1], W.shape[0], case["activation"])
    p = popdyn.Params(_ux(inp["a"]), W, _ux(inp["b"]), _ux(inp["c"]))
    T = popdyn.Teacher.network(t["activation"], _ux(t["V"]), _ux(t["U"]), _ux(t["bias"]))
    return S, p, T


@pytest.mark.parametrize("rtol", [1e-10, 1e-12])
@pytest.mark.parametrize("case", REFS, ids=[c["name"] for c in REFS])
def test_pl_vs_smooth_network_both_directions(case, rtol):
    S, p, T = _build(case)
    M = PM.moments(S, p, T, rtol=rtol, need="loss")
    ref = np.array([[float(mp.mpf(x)) for x in r] for r in case["Ct"]])
    true = np.abs(M.Ct - ref)
    # the stated error covers the truth (float64 rounding of the reference itself aside)
    assert np.all(true <= M.errCt + 4 * 2.0 ** -53 * np.abs(ref)), (true - M.errCt).max()
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always", popdyn.AccuracyWarning)
        L, info = popdyn.population_loss(S, p, T, rtol=rtol, full_output=True)
    warned = any(issubclass(w.category, popdyn.AccuracyWarning) for w in wl)
    Lref = mp.mpf(case["loss"])
    err = float(abs(mp.mpf(L) - Lref))
    if err > rtol * abs(float(Lref)) + info["atol"]:
        assert warned, (err, info["error"])
    if err <= rtol / 100 * abs(float(Lref)):
        assert not warned, [str(w.message) for w in wl]
    assert err <= info["error"] + info["atol"], (err, info["error"])
