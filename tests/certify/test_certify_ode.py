"""The validated integrator certify.ode against closed-form flows: every step's end
enclosure contains the exact solution; crossing times contain the exact crossing.

x' = −x (x = x0 e^{−t}), logistic x' = x(1 − x) (x = x0 e^t/(1 − x0 + x0 e^t)), the rotation
(x, y)' = (−y, x) (x = cos t, y = sin t from (1, 0)), with initial boxes of positive width."""
import math

import pytest
from flint import arb
from hypothesis import given, settings, strategies as st

from certify import CertificationError
from certify import _arb as A
from certify.ode import CrossingSpec, VectorField, crossing_times, integrate

DECAY = VectorField(lambda x: [-x[0]], lambda x: [[arb(-1)]], 1, "decay")
LOGISTIC = VectorField(lambda x: [x[0] * (1 - x[0])], lambda x: [[1 - 2 * x[0]]], 1, "logistic")
ROT = VectorField(lambda x: [-x[1], x[0]], lambda x: [[arb(0), arb(-1)], [arb(1), arb(0)]], 2,
                  "rotation")


def _all_steps(flow, exact):
    with A.workprec(flow.prec):
        for s in flow.steps:
            te = s.t0 + s.h
            ex = exact(te)
            for box, v in zip(s.x_end, ex):
                assert box.contains(v), (A.mid(te), box, v)
            # the interior of the step too, at its midpoint
            tm = s.t0 + s.h / 2
            for box, v in zip(s.enclose(arb(s.h / 2)), exact(tm)):
                assert box.contains(v)


@settings(max_examples=6, deadline=None)
@given(x0=st.floats(0.1, 10.0), rad=st.sampled_from([0.0, 1e-12, 1e-6]))
def test_decay(x0, rad):
    fl = integrate(DECAY, [arb(x0, rad)], 15.0, scale_floor=[1e-8])
    _all_steps(fl, lambda t: [arb(x0) * (-t).exp()])
    with A.workprec(fl.prec):
        w = float(fl.steps[-1].x_end[0].rad()) / A.mid(fl.steps[-1].x_end[0])
    assert w <= 1e-12 + 4 * rad / x0


@settings(max_examples=6, deadline=None)
@given(x0=st.floats(1e-3, 0.9))
def test_logistic(x0):
    fl = integrate(LOGISTIC, [x0], 25.0)
    _all_steps(fl, lambda t: [arb(x0) * t.exp() / (1 - arb(x0) + arb(x0) * t.exp())])


@settings(max_examples=3, deadline=None)
@given(rad=st.sampled_from([0.0, 1e-10]))
def test_rotation_no_wrapping_blowup(rad):
    fl = integrate(ROT, [arb(1, rad), arb(0, rad)], 60.0)
    _all_steps(fl, lambda t: [t.cos(), t.sin()])
    # Lohner's QR frame: the width after ~10 turns stays at the initial width (no 2^k wrapping)
    with A.workprec(fl.prec):
        w = max(float(b.rad()) for b in fl.steps[-1].x_end)
    assert w <= 2 * math.sqrt(2) * rad + 1e-25


@settings(max_examples=6, deadline=None)
@given(level=st.floats(0.01, 0.9))
def test_crossing_decay(level):
    spec = CrossingSpec(lambda x: arb(level) - x[0], lambda x: x[0], "level")
    (b,), _ = crossing_times(DECAY, [1.0], [spec], t_max=100.0)
    exact = -math.log(level)
    assert b.is_rigorous and b.lo <= exact <= b.hi
    assert b.hi - b.lo <= 1e-14 * max(exact, 1.0)
    with A.workprec(128):         # exactness beyond float: -log(level) in Arb
        e = -arb(level).log()
        assert A.lower(e) <= b.hi and A.upper(e) >= b.lo


def test_crossing_start_and_horizon():
    spec = CrossingSpec(lambda x: arb(0.5) - x[0], lambda x: x[0], "half")
    (b,), _ = crossing_times(DECAY, [0.25], [spec], t_max=1.0)
    assert (b.lo, b.hi) == (0.0, 0.0)
    (b,), _ = crossing_times(DECAY, [1.0], [CrossingSpec(lambda x: arb(1e-3) - x[0],
                                                          lambda x: x[0])], t_max=2.0)
    assert b.lo >= 2.0 and b.hi == math.inf
    with pytest.raises(CertificationError):
        crossing_times(DECAY, [arb(0.5, 0.01)], [spec], t_max=1.0)


def test_rate_must_be_certain():
    # a section whose supplied rate is not certainly positive cannot be separated
    spec = CrossingSpec(lambda x: arb(0.5) - x[0], lambda x: x[0] - arb(0.7), "bad rate")
    with pytest.raises(CertificationError, match="rate"):
        crossing_times(DECAY, [1.0], [spec], t_max=5.0)
