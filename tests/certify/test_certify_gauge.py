"""Rigorous specialization times of the reduced single-neuron flow against an
independent 30-digit reference.

The reference (data/_precompute/gauge_time_refs.py: ``ref_field``, ``ref_time``) integrates the
*unreduced* gradient flow of the bias-free single neuron in the plane of (u, θ0): state
(a, w1, w2), loss L = ½E[(a relu(w·x) − relu(u·x))²] with E[relu(w·x)²] = |w|²/2,
E[relu(w·x) relu(u·x)] = (|w| sin φ + (π − φ) w1)/(2π) and its gradient
((π − φ) u + sin φ ŵ)/(2π) (arc-cosine kernel; the feature-ownership paper, docs/design.md §7), by
mpmath.odefun at
30 digits, and finds cos(w, u) = τ by root finding on its dense solution — it calls no popdyn /
certify code.  Its times for the exact float64 inputs of these tests are precomputed into
data/refs/gauge_time_refs.json (inputs as hex, times exact); inputs not stored there (e.g.
other hypothesis draws) are computed here by the same function.  The reference field is
cross-checked against popdyn's reduced (ċ, φ̇) numerically."""
import math
import os
import sys

import mpmath as mp
import numpy as np
from hypothesis import given, settings, strategies as st

from certify.gauge import rigorous_specialization_times
from popdyn.gauge import ratio_start, reduced_rhs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.append(os.path.join(ROOT, "data", "_precompute"))
import gauge_time_refs as GT  # noqa: E402  (the independent reference, pure mpmath)

_ref_field = GT.ref_field
_STORED = GT.load()


def _ref_time(c0, ratio, cos0, tau):
    """The reference time for these exact float64 inputs: stored, or computed now."""
    t = _STORED.get(GT.key(c0, ratio, cos0, tau))
    return GT.ref_time(c0, ratio, cos0, tau) if t is None else t


def test_reference_field_matches_popdyn_reduction():
    rng = np.random.default_rng(1)
    for _ in range(20):
        c = float(np.exp(rng.uniform(-3, 1)))
        ratio = float(np.exp(rng.uniform(-3, 3)))
        cphi = float(rng.uniform(-0.9, 0.99))
        a, wn, Delta = ratio_start(c, ratio)
        phi = math.acos(cphi)
        da, dw1, dw2 = (float(v) for v in _ref_field(mp.mpf(a), mp.mpf(wn * cphi),
                                                      mp.mpf(wn * math.sin(phi))))
        # c = a|w|, cos φ = w1/|w| from the unreduced flow
        w1, w2 = wn * cphi, wn * math.sin(phi)
        dn = (w1 * dw1 + w2 * dw2) / wn
        cdot = da * wn + a * dn
        dcos = dw1 / wn - w1 * dn / wn ** 2
        rc, rphi = reduced_rhs(c, phi, Delta)
        assert abs(cdot - rc) <= 1e-12 * (abs(rc) + c)
        assert abs(dcos - (-math.sin(phi) * rphi)) <= 1e-12 * (abs(rphi) + 1e-3)


@settings(max_examples=5, deadline=None)
@given(c0=st.floats(0.3, 2.0), logD=st.floats(-0.7, 1.5), cos0=st.floats(0.05, 0.4),
       tau=st.floats(0.45, 0.8))
def test_rigorous_time_contains_independent_reference(c0, logD, cos0, tau):
    ratio = float(np.exp(logD))
    (b,), n = rigorous_specialization_times(c0, ratio, cos0, [tau])
    assert b.provenance == "rigorous"
    ref = _ref_time(c0, ratio, cos0, tau)
    assert b.lo <= ref <= b.hi, (b, ref)
    assert b.hi - b.lo <= 1e-8 * b.lo


def test_rigorous_times_in_the_quick_regimes_and_both_gauges():
    # the small-initialization claim regime of the check (c0 = 1e-5, λ = 4: a/|w| = 16, 1/16)
    # against the same reference at 30 digits; threshold below cos0 is the exact [0, 0]
    for ratio in (16.0, 1 / 16):
        bs, _ = rigorous_specialization_times(1e-5, ratio, 1 / np.sqrt(10), [0.2, 0.5])
        assert (bs[0].lo, bs[0].hi) == (0.0, 0.0)
        ref = _ref_time(1e-5, ratio, 1 / np.sqrt(10), 0.5)
        assert bs[1].lo <= ref <= bs[1].hi
        assert bs[1].hi - bs[1].lo <= 1e-8 * bs[1].lo


def test_rigorous_sweep_provenance_and_fallback():
    from popdyn.gauge import gauge_sweep

    rig = gauge_sweep("ratio", [2.0, 4.0], c0=1.0, d=10, thresholds=(0.5,), method="rigorous")
    num = gauge_sweep("ratio", [2.0, 4.0], c0=1.0, d=10, thresholds=(0.5,))
    for p, q in zip(rig.points[0], num.points[0]):
        for b in (p.t_fav, p.t_opp, p.ratio):
            assert b.provenance == "rigorous"
        # the numerical bracket (tolerance refinement) is consistent with the enclosure
        assert q.t_fav.lo <= p.t_fav.hi and p.t_fav.lo <= q.t_fav.hi
        assert q.t_opp.lo <= p.t_opp.hi and p.t_opp.lo <= q.t_opp.hi
    s = rig.slopes[0][0]
    assert s.provenance == "rigorous" and s.hi - s.lo < 1e-10
    # the slope bracket encloses the secant slope of every pair of times in the brackets
    a, b = rig.points[0]
    for T2 in (a.ratio.lo, a.ratio.hi):
        for T4 in (b.ratio.lo, b.ratio.hi):
            sl = float(mp.log(mp.mpf(T4) / mp.mpf(T2)) / mp.log(2))
            assert s.lo <= sl <= s.hi
    # past the step budget: numerical fallback, tagged numerical, the reason recorded
    fb = gauge_sweep("ratio", [2.0, 4.0], c0=1.0, d=10, thresholds=(0.5,), method="rigorous",
                     max_steps=3)
    p = fb.points[0][1]
    assert p.t_opp.provenance == "numerical" and "fallback" in p.t_opp.method
    assert fb.slopes[0][0].provenance == "numerical"
