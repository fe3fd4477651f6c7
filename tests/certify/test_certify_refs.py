"""Certified brackets against precomputed 50-digit references (data/refs/certify_refs.json,
produced by data/_precompute/certify_refs.py from the independent mpmath reference
tests/certify/_ref.py), on the configurations of tests/certify/_configs.py (degenerate
geometry included).

Checked for every configuration: the loss, E[y], V_Y, the moment matrices C, B, μ0, Ct, the AGOP
spectrum and alignment scores, and the refit optima of the unrestricted, same_budget and
bounded (B = 0.5) kinds lie in their rigorous brackets; the float64 engine lies in (or within
its stated error of) the loss bracket; widths at the default precision.

Every case is built from the exact float64 inputs stored beside its references (``inputs``,
hex), never from the construction in _configs.py, whose QR / norm calls round differently on
different BLAS kernels (an input that differs in its last bit is a different problem: its
50-digit reference would not lie in a bracket of width 1e-16).
"""
import json
import os

import numpy as np
import pytest
from mpmath import mp, mpf

import popdyn
import certify
from certify import Bracket
from certify import _arb as A
from certify.moments import certified_moments, clear_cache

from _configs import CONFIGS, from_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "data", "refs", "certify_refs.json")) as fh:
    REFS = {c["name"]: c for c in json.load(fh)["configs"]}

mp.dps = 60
IDS = [c["name"] for c in CONFIGS]


def build(cfg):
    """(student, params, teacher) from the stored inputs of the configuration's references."""
    return from_inputs(cfg, REFS[cfg["name"]]["inputs"])


def _f(s):
    return mpf(s)


def _ok(b, ref):
    """The 50-digit reference string lies in the bracket up to its own last-digit rounding
    (exactly representable values -- a constant unit's σ(b) -- are stored rounded)."""
    v = mpf(ref)
    e = abs(v) * mpf(10) ** -48 + mpf(10) ** -300
    return b.overlaps(Bracket.enclosing(v - e, v + e))


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_loss_and_moments(cfg):
    ref = REFS[cfg["name"]]
    S, p, T = build(cfg)
    res = certify.loss(S, p, T)
    assert res.provenance == "rigorous"
    L = _f(ref["loss"])
    assert _ok(res.loss, ref["loss"])
    assert _ok(res.mean_y, ref["mean_y"])
    assert _ok(res.variance, str(_f(ref["second_y"]) - _f(ref["mean_y"]) ** 2))
    # width at the default precision: <= 1e-12 relative (float endpoints: a few ulp)
    assert res.loss.width <= 1e-12 * abs(float(L))
    # the float64 engine lies inside or within its stated error
    Lf, info = popdyn.population_loss(S, p, T, full_output=True)
    tol = info["error"] + 64 * np.finfo(float).eps * abs(Lf)
    assert res.loss.lo - tol <= Lf <= res.loss.hi + tol
    CM = certified_moments(S, p, T, prec=128)
    m = S.m
    with A.workprec(128):
        for i in range(m):
            assert _ok(Bracket.from_arb(CM.mu0[i, 0]), ref["mu0"][i])
            for j in range(m):
                assert _ok(Bracket.from_arb(CM.C[i, j]), ref["C"][i][j]), (i, j)
                assert _ok(Bracket.from_arb(CM.B[i, j]), ref["B"][i][j]), (i, j)
            for k in range(T.k):
                assert _ok(Bracket.from_arb(CM.Ct[i, k]), ref["Ct"][i][k]), (i, k)


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_alignment(cfg):
    ref = REFS[cfg["name"]]
    S, p, T = build(cfg)
    res = certify.alignment(S, p, T.subspace)
    for i, lam in enumerate(ref["agop_eigenvalues"]):
        assert _ok(res.eigenvalues[i], lam)
    for key in ("a_top", "a_min", "a_mean"):
        b = getattr(res, key)
        assert _ok(b, ref[key]), (key, b, ref[key])
        if b.resolved:
            assert b.width <= 1e-8 or res.gap.lo <= 1e-6 * abs(res.eigenvalues[0].hi)
    # consistency with the float64 diagnostics
    from popdyn.diagnostics import agop, alignment

    fa = alignment(agop(S, p), T.subspace)
    for key in ("a_top", "a_min", "a_mean"):
        b = getattr(res, key)
        if b.resolved:
            assert abs(getattr(fa, key) - b.mid) <= b.rad + 1e-9


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_refit(cfg):
    ref = REFS[cfg["name"]]["refit"]
    S, p, T = build(cfg)
    for kind, budget, key in (("unrestricted", None, "unrestricted"),
                              ("same_budget", None, "same_budget"),
                              ("bounded", 0.5, "bounded_0.5")):
        res = certify.refit_risk(S, p, T, kind, budget)
        assert _ok(res.risk, ref[key]), (kind, res.risk, ref[key])
        assert res.provenance == "rigorous"
        if res.status == "resolved":
            assert res.risk.width <= 1e-9 * max(res.risk.hi, 1e-300) or kind == "unrestricted"


def test_degenerate_unrestricted_refit_is_flagged():
    """Duplicated neurons and a constant unit make G singular: the lower bound falls back to 0
    and the bracket says so (never a silent point)."""
    S, p, T = build(CONFIGS[0])
    res = certify.refit_risk(S, p, T, "unrestricted")
    assert res.status == "unresolved" and res.risk.lo == 0.0


def test_loss_narrows_with_prec():
    cfg = CONFIGS[2]
    S, p, T = build(cfg)
    clear_cache()
    widths = []
    for prec in (24, 40, 64, 192):
        res = certify.loss(S, p, T, prec=prec)
        assert _ok(res.loss, REFS[cfg["name"]]["loss"])
        widths.append(res.loss.width)
    assert widths[0] > widths[1] > widths[2] >= widths[3]
