"""The soak's Arb reference (tests/certify/_ref_arb.py) against the mpmath reference of
tests/certify/_ref.py on fixed cases, one per integration path: the ball must contain the
mpmath value up to that value's own error (10^−(dps+3) of max(|v|, 1), _ref.py's tolerance),
and be narrow (radius below 10^−(dps+2)).  Also: the nested trapezoid in Arb against
acb.integral inside acb.integral (two independent rules for the same tanh–tanh pair), and the
SwiGLU moments evaluated in Arb against swiglu_gated_refs.py's mpmath ones.

Inputs are float64 literals (exact dyadic rationals), no random draws."""
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(HERE)
import _ref as R  # noqa: E402
import _ref_arb as A  # noqa: E402

DPS = 10

W1, B1 = [0.9, -0.4], 0.26
W2, B2 = [0.3, 1.1], -0.36

# (name, atoms 1, w1, b1, atoms 2, w2, b2): one case per path of _ref_arb.pair_ball
CASES = [
    # 1-D acb.integral, split at the kink of the outer relu; closed relu inner mean
    ("relu-relu", R.activation("relu"), W1, B1, R.activation("relu"), W2, B2),
    # τ = 0 (duplicated rows): the inner relu on its branch, split at its kink too
    ("relu-relu duplicated", R.activation("relu"), W1, B1, R.activation("relu"), W1, -B2),
    # antiparallel leaky relu against the step of its derivative
    ("leaky-step antiparallel", R.activation("leaky_relu"), W1, B1,
     R.derivative(R.activation("leaky_relu")), [-0.9, 0.4], 0.1),
    # a tanh unit outside (poles: non-finite balls), a relu mean inside
    ("tanh-relu", R.activation("tanh"), W1, B1, R.activation("relu"), W2, B2),
    # a larger erf unit (|w| = 5) against gelu: entire integrands, a narrower transition
    ("erf5-gelu", R.activation("erf"), [3.0, 4.0], 0.26, R.activation("gelu"), W2, B2),
    # Gaussian-polynomial (erf′) against a polynomial link and against sin
    ("erf'-h3+0.3h2", R.derivative(R.activation("erf")), W1, B1, R.link("h3+0.3h2"),
     [0.6, 0.8], 0.0),
    ("silu-sin", R.activation("silu"), W1, B1, R.link("sin"), [0.6, 0.8], 0.0),
    # polynomial pair: exact Gaussian moments
    ("h2-h3+0.3h2", R.link("h2"), [0.6, 0.8], 0.0, R.link("h3+0.3h2"), [0.8, -0.6 + 2.0 ** -30],
     0.0),
    # tanh–silu with τ > 0: the nested trapezoid in Arb
    ("silu-tanh nested", R.activation("silu"), W1, B1, R.activation("tanh"), W2, B2),
    # a tiny unit (|w| = 1e−7) against tanh
    ("tanh-tiny", R.activation("tanh"), W1, B1, R.activation("tanh"), [1e-7, 2e-7], 0.5),
]


def _close(ball, ref):
    """|mid − ref| <= rad + (ref's own error), and the ball narrow."""
    tol = R.ctx.mpf(10) ** (-(DPS + 3)) * max(abs(ref), 1)
    err = abs(R.ctx.mpf(ball.mid()) - ref)
    assert err <= R.ctx.mpf(ball.rad()) + tol, (ball, ref)
    assert float(ball.rad()) < 10.0 ** (-(DPS + 2)) * max(abs(float(ref)), 1.0), ball


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_pair_ball_contains_mpmath_reference(case):
    _, f1, w1, b1, f2, w2, b2 = case
    R.RULE = "trapezoid"
    with R.ctx.workdps(DPS + 15):
        ref = R.pair(f1, w1, b1, f2, w2, b2)
        with A.installed(DPS):
            ball = A.pair_ball(f1, w1, b1, f2, w2, b2)
            _close(ball, ref)


@pytest.mark.parametrize("fn,w,b", [
    (R.activation("tanh"), W1, B1),            # a "num" atom: 1-D acb.integral
    (R.activation("gelu"), [3.0, 4.0], -0.7),  # closed form
    (R.derivative(R.activation("relu")), [0.0, 0.0], 0.3),   # a zero row: the constant
])
def test_mean_ball_contains_mpmath_reference(fn, w, b):
    with R.ctx.workdps(DPS + 15):
        ref = R.mean(fn, w, b)
        with A.installed(DPS):
            _close(A.mean_ball(fn, w, b), ref)


def test_installed_swaps_and_restores():
    """Within ``installed`` the composites of _ref.py use the Arb moments (same value as
    _ref's own); afterwards _ref.pair / mean and python-flint's precision are the originals."""
    from flint import ctx as fctx
    pair, mean, prec = R.pair, R.mean, fctx.prec
    f = R.activation("relu")
    with R.ctx.workdps(DPS + 15):
        ref = R.pair(f, W1, B1, f, W2, B2)
        with A.installed(DPS) as stats:
            assert R.pair is not pair and R.mean is not mean
            v = R.pair(f, W1, B1, f, W2, B2)
            assert abs(v - ref) <= A.LAST_RAD + 1e-18
            assert stats["pair"] == 1
    assert (R.pair, R.mean, fctx.prec) == (pair, mean, prec)


def test_nested_trapezoid_agrees_with_nested_acb_integral():
    """Two rules for the same tanh–tanh pair (τ > 0): the Arb trapezoid with its stated bound
    and acb.integral inside acb.integral; the balls must overlap.  (Lower precision: the nested
    acb.integral is the slow one.)"""
    dps = 6
    t = R.activation("tanh")
    with R.ctx.workdps(dps + 15):
        with A.installed(dps):
            a1 = A._arb(R.F(0.9) ** 2 + R.F(-0.4) ** 2).sqrt()
            n1 = R.F(0.9) ** 2 + R.F(-0.4) ** 2
            c12 = R.F(0.9) * R.F(0.3) + R.F(-0.4) * R.F(1.1)
            slope = A._arb(c12) / a1
            tau2 = A._arb((n1 * (R.F(0.3) ** 2 + R.F(1.1) ** 2) - c12 * c12) / n1)
            target = R.ctx.mpf(10) ** (-(dps + 4))
            args = (t[0], a1, A._arb(R.F(B1)), t[0], slope, A._arb(R.F(B2)), tau2.sqrt())
            trap = A._nested_trapezoid(*args, target)
            t0 = time.process_time()
            acb_val = A._nested_acb(*args, tau2, target)
            assert time.process_time() - t0 < 30
            assert trap is not None and trap.overlaps(acb_val), (trap, acb_val)
            assert float(acb_val.rad()) < 1e-8 and float(trap.rad()) < 1e-8


def test_swiglu_moment_in_arb_matches_mpmath():
    """_ref_arb.sg_moment against swiglu_gated_refs.moment (the same rules) for a SiLU × SiLU
    moment at general position with two linear forms and a relu-gate (kink) moment."""
    import swiglu_gated_refs as SG
    SG.mp.mp.dps = 10
    g, w = [0.7, -0.3, 0.5], [0.2, 0.9, -0.4]
    forms = [[0.1, 0.4, -0.8], [0.6, 0.0, 0.3]]
    try:
        for B, kink in ((SG.silu, False), (SG.GATES["relu"][0], True)):
            ref = SG.moment(g, w, B, forms, kink=kink)
            with A.swiglu_installed(10):
                val = A.sg_moment(g, w, B, forms, kink=kink)
            assert abs(val - ref) < SG.mp.mpf(10) ** -9 * max(abs(ref), 1), (B, val, ref)
    finally:
        SG.mp.mp.dps = 15
