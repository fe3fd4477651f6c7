"""Rigorous brackets against gated teachers (certify.gated).

* Every stored case of data/refs/gated_refs.json (independent 32-digit mpmath reference,
  data/_precompute/gated_refs.py: Stein's lemma in t and the 2-D Gaussian quadrature of
  tests/certify/_ref.py; the same method as the soak's ``_gated_reference``; float64 inputs
  stored as hex): relu, leaky_relu, gelu, erf, tanh and silu students against the id, relu,
  gelu, tanh gates and the rotation control, in a frame with |u_l|² ≠ 1 by an ulp (exactly
  orthogonal), with a duplicated-direction, an antiparallel and a zero unit (PL, gelu, erf:
  also a unit within 2^−20 of the gate axis and one in the gate plane).  The loss, E[y], V_Y,
  every E[σ_j y] and the unrestricted / same_budget / bounded refit optima lie inside the
  rigorous brackets; loss widths <= 1e−12 relative.  Without the zero unit (the same optimum)
  the unrestricted refit is resolved, <= 1e−12 relative (PL, gelu, erf students).
* A frame that is orthonormal only to rounding (u₁·u₂ ≠ 0): the Stein remainder is bounded,
  and the bracket still contains the float engine's value within its stated error.
* The gradient stays refused (docs/design.md §6).
"""
import os
import sys

import mpmath as mp
import numpy as np
import pytest

import certify
import popdyn
from certify import gated
from certify.errors import CertificationError

from _refdata import REF_ABS, ROOT, assert_inside, check_loss_bracket, exact, load_refs

sys.path.append(os.path.join(ROOT, "data", "_precompute"))
import gated_refs as GR  # noqa: E402  (only its exact-input builder)

CASES = load_refs("gated_refs.json")["cases"]
mp.mp.dps = 40


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_brackets_contain_the_reference(case):
    S, p, T = GR.build(case["activation"], case["gate"], case["inputs"])
    assert gated.covers(S, T)
    check_loss_bracket(S, p, T, case)
    CM = gated.gated_moments(S, p, T)
    kap = float(T.weights[0])
    for j in range(S.m):
        mid, rad = exact(CM.Ct[j, 0].mid()), exact(CM.Ct[j, 0].rad())
        assert abs(mp.mpf(case["Ct"][j]) - kap * mid) <= abs(kap) * rad + REF_ABS, (j, CM.Ct[j, 0])
    for kind, key, B in (("unrestricted", "unrestricted", None),
                         ("same_budget", "same_budget", None), ("bounded", "bounded_0.5", 0.5)):
        R = certify.refit_risk(S, p, T, kind, budget=B)
        assert R.provenance == "rigorous"
        assert_inside(R.risk, case["refit"][key], f"refit {kind}")
        if kind != "unrestricted":            # the zero unit makes G singular: lower bound 0
            assert R.status == "resolved" and R.risk.width <= 1e-9 * R.risk.hi, (kind, R.risk)
    if S.activation in ("tanh", "silu"):       # (their trapezoid would be rebuilt: suite time)
        return
    # without the zero unit (3; a constant feature, centered to 0): the same optimum, resolved
    keep = [i for i in range(S.m) if i != 3]
    S2 = popdyn.Student(d=S.d, m=len(keep), activation=S.activation)
    p2 = popdyn.Params(p.a[keep], p.W[keep], p.b[keep], p.c)
    R = certify.refit_risk(S2, p2, T, "unrestricted")
    assert R.status == "resolved" and R.provenance == "rigorous"
    assert_inside(R.risk, case["refit"]["unrestricted"], "refit unrestricted (zero unit removed)")
    assert R.risk.width <= 1e-12 * R.risk.hi, R.risk


@pytest.mark.parametrize("gate", ["tanh", "relu", "rotation"])
def test_frame_orthonormal_to_rounding(gate):
    """u₁·u₂ ≠ 0 (a QR frame): c·E[σF′(s)] is bounded, not dropped; the float64 value is within
    its stated error of the bracket, which stays narrow (<= 1e−12 relative)."""
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 2)))
    U = Q.T.copy()
    assert U[0] @ U[1] != 0.0
    S = popdyn.Student(d=3, m=3, activation="relu")
    p = popdyn.Params(np.array([0.7, -0.4, 0.9]), rng.normal(size=(3, 3)),
                      np.array([0.2, -0.1, 0.3]), 0.05)
    T = popdyn.Teacher.gated(gate, U, 1.5)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", popdyn.AccuracyWarning)
        Lf, info = popdyn.population_loss(S, p, T, full_output=True)
    Lb = certify.loss(S, p, T)
    assert Lb.provenance == "rigorous"
    err = float(info["error"]) + float(info["atol"])
    assert Lb.loss.lo - err <= Lf <= Lb.loss.hi + err
    assert Lb.loss.width <= 1e-12 * Lb.loss.hi
    with pytest.raises(CertificationError, match="gated"):
        certify.loss(S, p, T, grad=True)
