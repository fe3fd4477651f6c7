"""Ball refits (``same_budget``, ``bounded`` B = ½) of relu / leaky-relu students with tiny units
against data/refs/tiny_refs.json (200 cases, 50-digit mpmath references of
tests/certify/_ref.py, inputs as float64 hex; independent of popdyn's moments and solvers).

A nearly affine unit (|w_j| ≈ 1e−11 … 1e−6, |b_j| ≫ |w_j|) is rebuilt from its linear form
(:func:`popdyn.diagnostics.refit.affine_problem`), so the entries of G are accurate relative to
its diagonal; its variance ~|w_j|² ≪ ε·λ_max(G) is nevertheless a real direction that a head
~1/|w_j| uses when the budget allows.  The ball solve used to take the eigenvalues of G below
m·ε·λ_max as null (the raw eigen-decomposition cannot resolve them): 5 same-budget risks were
silently off by up to 134 % and 80 refits warned.  Both directions of the contract at rtol
1e−10: beyond rtol (plus the stated rounding floor) ⇒ an AccuracyWarning; within rtol/100 ⇒ no
warning (warnings are errors).
"""
import json
import warnings
from pathlib import Path

import mpmath as mp
import pytest

import popdyn

from test_grad_contract import _build

ROOT = Path(__file__).resolve().parents[2]
TINY = json.loads((ROOT / "data" / "refs" / "tiny_refs.json").read_text())
RTOL = 1e-10


@pytest.mark.parametrize("kind,budget,key", [("same_budget", None, "same_budget"),
                                             ("bounded", 0.5, "bounded_0.5")])
def test_tiny_units_ball_refit_both_directions(kind, budget, key):
    slope = float(TINY["slope"])
    misses = []
    for k, case in enumerate(TINY["cases"]):
        inp = dict(case["inputs"], teacher=TINY["teachers"][case["inputs"]["teacher"]])
        S, p, T = _build(inp, slope)
        ref = mp.mpf(case["ref"]["refit"][key])
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always", popdyn.AccuracyWarning)
            r = popdyn.refit_risk(S, p, T, kind, budget=budget, rtol=RTOL)
        warned = any(issubclass(w.category, popdyn.AccuracyWarning) for w in wl)
        err = float(abs(mp.mpf(r.risk) - ref))
        size = abs(float(ref))
        if err > RTOL * size + 1e-15 * max(size, float(r.variance)) and not warned:
            misses.append((k, "silent miss", err / size, r.status))
        if err <= RTOL / 100 * size and warned:
            misses.append((k, "false alarm", err / size, r.status))
        assert r.lower <= r.risk
        assert float(mp.mpf(r.lower)) <= ref * (1 + 1e-10) + 1e-15
    assert not misses, misses
