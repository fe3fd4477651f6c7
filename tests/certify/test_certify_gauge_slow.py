"""Rigorous specialization times of the stiff opposite gauges (the verified slow-manifold tube of
certify.gauge) against an independent reference.

The reference integrates the *unreduced* gradient flow of the bias-free single neuron in the
plane of (u, θ0) — state (a, w1, w2), L = ½E[(a relu(w·x) − relu(u·x))²] with the arc-cosine
closed forms E[relu(w·x)²] = |w|²/2, E[relu(w·x) relu(u·x)] = (|w| sin φ + (π − φ) w1)/(2π)
and its gradient ((π − φ) u + sin φ ŵ)/(2π) (docs/design.md §7) — by scipy's Radau (implicit, for
the stiff opposite gauges) at rtol 1e−13, the crossing cos(w, u) = τ located by its event finder.
It calls no popdyn / certify code.  Its own error is estimated by the change from rtol 1e−12
to 1e−13, and the bracket must contain it up to 10× that change plus 1e−11 relative."""
import math

import mpmath as mp
import pytest
from hypothesis import Phase, example, given, settings, strategies as st
from scipy.integrate import solve_ivp

from certify import CertificationError
from certify.gauge import rigorous_specialization_times


def _field(t, y):
    a, w1, w2 = y
    nw = math.hypot(w1, w2)
    c = max(-1.0, min(1.0, w1 / nw))
    phi = math.acos(c)
    s = math.sin(phi)
    g = (nw * s + (math.pi - phi) * w1) / (2 * math.pi)
    gw1 = ((math.pi - phi) + s * w1 / nw) / (2 * math.pi)
    gw2 = (s * w2 / nw) / (2 * math.pi)
    return [-(a * nw * nw / 2 - g), -(a * a * w1 / 2 - a * gw1), -(a * a * w2 / 2 - a * gw2)]


def _radau_time(c0, ratio, cos0, tau, rtol):
    a0, wn = math.sqrt(c0 * ratio), math.sqrt(c0 / ratio)
    y0 = [a0, wn * cos0, wn * math.sqrt(1 - cos0 * cos0)]

    def ev(t, y):
        return y[1] / math.hypot(y[1], y[2]) - tau
    ev.terminal, ev.direction = True, 1
    sol = solve_ivp(_field, (0, 1e5), y0, method="Radau", rtol=rtol,
                    atol=[rtol * 1e-3 * a0, rtol * 1e-3 * wn, rtol * 1e-3 * wn], events=ev)
    assert sol.status == 1, sol.message
    return float(sol.t_events[0][0])


@settings(max_examples=3, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(c0=st.floats(0.5, 2.0), D=st.floats(10.0, 100.0), cos0=st.floats(0.05, 0.4),
       tau=st.floats(0.45, 0.9))
@example(c0=0.5, D=10.0, cos0=0.3838188619546927, tau=0.48969584781190706)  # met in the transient
def test_tube_time_contains_independent_stiff_reference(c0, D, cos0, tau):
    """The stiff default: the slow-manifold tube, or the explicit integrator when the threshold
    is crossed during the fast transient (the tube alone refuses that); either bracket holds
    the Radau time."""
    (b,), _ = rigorous_specialization_times(c0, 1 / D, cos0, [tau])
    assert b.provenance == "rigorous"
    assert "slow-manifold" in b.method or "Taylor" in b.method
    if "Taylor" in b.method:
        with pytest.raises(CertificationError, match="fast transient"):
            rigorous_specialization_times(c0, 1 / D, cos0, [tau], stiff="tube")
    assert b.hi - b.lo <= 1e-8 * b.lo
    r13 = _radau_time(c0, 1 / D, cos0, tau, 1e-13)
    r12 = _radau_time(c0, 1 / D, cos0, tau, 1e-12)
    slack = 10 * abs(r13 - r12) + 1e-11 * r13
    assert b.lo - slack <= r13 <= b.hi + slack, (b, r13, r12)


def test_tube_needs_a_real_tube_radius():
    # a tube radius far below the slow manifold's float defect is not inward: refused
    from certify import CertificationError
    from flint import arb

    from certify import _arb as A
    from certify.gauge._slow import SlowTube, _enclose
    from popdyn.gauge import slow_manifold

    with A.workprec(128):
        Delta = -40.0
        coef, defect, _ = slow_manifold(Delta, 0.4, 1.3)
        assert defect < 1e-12
        tube = SlowTube(arb(Delta), coef, 0.4, 1.3, 1e-30)
        with pytest.raises(CertificationError):
            _enclose(lambda cen, L: tube.normal_speed(cen, 1, L), 0.4, 1.3, 14,
                     test=lambda E: E < 0)
        # with a radius well above the defect the same verification passes
        tube = SlowTube(arb(Delta), coef, 0.4, 1.3, 1e-10)
        assert _enclose(lambda cen, L: tube.normal_speed(cen, 1, L), 0.4, 1.3, 14,
                        test=lambda E: E < 0) >= 1


def test_exact_inverse_sqrt_d_start():
    from certify import _arb as A

    from certify.gauge import start_angle

    with A.workprec(128):
        phi = start_angle(None, 10)
        with mp.workdps(60):
            ref = mp.acos(1 / mp.sqrt(10))
            m = mp.mpf(phi.mid().str(55, radius=False))
            rad = mp.mpf(phi.rad().str(10, radius=False))
            assert rad < mp.mpf(10) ** -35
            assert abs(m - ref) <= rad + mp.mpf(10) ** -50
            # the float start fl(1/√10) is a different point, well outside this ball
            assert abs(mp.acos(mp.mpf(1 / math.sqrt(10))) - ref) > 100 * rad
        assert start_angle(1 / math.sqrt(10), 10).overlaps(phi)
    with pytest.raises(ValueError, match="not 1/sqrt"):
        start_angle(0.3, 10)
    # the sweep's default start is the real 1/sqrt(d): its brackets use the enclosed start
    (b,), _ = rigorous_specialization_times(1.0, 1 / 20, None, [0.5], d=10)
    (bf,), _ = rigorous_specialization_times(1.0, 1 / 20, 1 / math.sqrt(10), [0.5])
    assert b.provenance == bf.provenance == "rigorous"
    assert b.lo <= bf.hi and bf.lo <= b.hi


def test_check_method_flag_is_validated(capsys):
    from proofs_checks.cli import main

    assert main(["gauge_separation", "--method", "exact"]) == 2
    err = capsys.readouterr().err
    assert "--method must be one of rigorous, numerical" in err and "'exact'" in err
    assert main(["balancedness", "--method", "numerical"]) == 2
    assert "balancedness has none" in capsys.readouterr().err
