"""Φ₂ and Owen's T enclosures (certify._arb) against independent mpmath quadrature at 50 digits.

Reference: Φ₂(h, k; ρ) = ∫_{−∞}^{h} φ(z) Φ((k − ρz)/√(1−ρ²)) dz by mpmath tanh-sinh at 60
digits, split around the transition z = k/ρ (width √(1−ρ²)/|ρ|); Owen's T by its defining
integral.  Pinned examples: h = k = 0, h = 0, ρ within 1e−12 of ±1, far tails (|h| = 8, 12).
"""

import mpmath
from flint import arb
from hypothesis import example, given, settings, strategies as st

from certify import Bracket
from certify import _arb as A

mp = mpmath.MPContext()
mp.dps = 60


def ref_phi2(h, k, r):
    h, k, r = mp.mpf(h), mp.mpf(k), mp.mpf(r)
    s = mp.sqrt((1 - r) * (1 + r))
    f = lambda z: mp.npdf(z) * mp.ncdf((k - r * z) / s)
    pts = []
    if r != 0:
        t, w = k / r, s / abs(r)
        pts = [q for q in (t - 40 * w, t - 4 * w, t, t + 4 * w, t + 40 * w)
               if q < h and abs(q) < 60]
    return mp.quad(f, [-mp.inf] + sorted(set(pts)) + [h], maxdegree=10)


def cert_phi2(h, k, r, prec=128):
    with A.workprec(prec):
        H, K, R = arb(h), arb(k), arb(r)
        s = ((1 - R) * (1 + R)).sqrt()
        wh, wk = (K - R * H) / s, (H - R * K) / s
        sg = lambda v: 0 if v == 0 else (1 if v > 0 else -1)
        return A.phi2(H, K, R, wh, wk, A.Phi_pair(H), A.Phi_pair(K), A.Phi_pair(wh),
                      A.Phi_pair(wk), sg(h), sg(k), prec + 12)


coord = st.one_of(st.floats(-6, 6), st.sampled_from([0.0, -0.5, 1.0, 3.0, -8.0]))
corr = st.one_of(st.floats(-0.999, 0.999),
                 st.sampled_from([0.0, 1 - 1e-12, -1 + 1e-12, 0.999999, -0.9999]))


@settings(max_examples=40)
@given(coord, coord, corr)
@example(0.0, 0.0, 0.3)
@example(0.0, -1.5, -0.7)
@example(0.7, 0.0, 1 - 1e-12)
@example(-8.0, -8.0, 0.5)
@example(-12.0, 3.0, -0.5)
@example(2.0, -2.0, -1 + 1e-12)
@example(-3.0, 7.0, -0.999999)
@example(0.0, 0.0, 2.2250738585072014e-308)     # past failure (the reference's exponent range)
def test_phi2_encloses_reference(h, k, r):
    P = cert_phi2(h, k, r)
    ref = ref_phi2(h, k, r)
    b = Bracket.from_arb(P)
    assert b.contains(ref), (h, k, r, P, ref)
    # and the ball is narrow in absolute terms
    assert P.rad() < 1e-30


@settings(max_examples=15)
@given(st.floats(-5, 5).filter(lambda v: v != 0.0), st.floats(-3, 3))
@example(1e-300, 0.5)
@example(6.0, 1.0)
@example(1e-9, 40.0)
@example(1.0, 1.1125369292536007e-308)          # past failure: the float tail bound underflowed
@example(1.175494351e-38, 2.6125004508152457e-273)   # a tiny a: the reference must be rescaled
def test_owen_t_definition(h, a):
    """T(h, a) = (1/2π)∫_0^a e^{−h²(1+x²)/2}/(1+x²) dx, the reference integrated in x = a·u over
    u ∈ [0, 1] (an integral over [0, a] with a ~ 1e−273 loses the scale in mpmath's nodes),
    split at u = 1/|a| where the integrand's width is."""
    with mp.workdps(60):
        A_, H2 = mp.mpf(a), mp.mpf(h) ** 2
        cut = [0, 1] if abs(A_) <= 1 else [0, 1 / abs(A_), 1]
        ref = A_ * mp.quad(lambda u: mp.exp(-H2 * (1 + (A_ * u) ** 2) / 2) / (1 + (A_ * u) ** 2),
                           cut) / (2 * mp.pi)
    with A.workprec(128):
        H, w = arb(h), arb(h) * arb(a)
        hs = 0 if h == 0 else (1 if h > 0 else -1)
        T = A.owen_t(H, w, A.Phi_pair(H), A.Phi_pair(w), hs, 140)
    assert Bracket.from_arb(T).contains(ref)


def test_phi2_narrows_with_prec():
    w64 = cert_phi2(0.3, -0.4, 0.6, prec=64).rad()
    w128 = cert_phi2(0.3, -0.4, 0.6, prec=128).rad()
    w256 = cert_phi2(0.3, -0.4, 0.6, prec=256).rad()
    assert w256 < w128 < w64
