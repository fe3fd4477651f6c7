"""Tests of popdyn._kernels.bvn: Φ, φ, the ramp moments Hh_n and the bivariate normal cdf Φ₂.

References are mpmath values at 30 digits computed here from first principles (never from the
kernels): Φ₂(h, k; r) = ∫_{−∞}^{min(h,k)} φ(z) Φ((max(h,k) − r z)/s) dz by ``mpmath.quad`` with
breakpoints around the mode of the (log-concave) integrand and around the step of the inner Φ,
the integrand scaled by its maximum (``mpmath.quad`` stops on an absolute error).  The
correlation is defined by the exact binary values of 1 − r and 1 + r (``omr``, ``opr``), as the
kernel is.  The costlier references are precomputed by ``data/_precompute/plmoments_refs.py``
into ``data/refs/plmoments_refs.json`` (key ``bvn``); a few are recomputed live.

Accuracy asserted: absolute error ≤ 2 ulp(1) = 4.4e−16 for every value (a value near 1 is a
sum of O(1) terms, each rounded), and relative error
≤ 2e−14 + 2·eps·|ln Φ₂| (the second term is the conditioning of a value e^{−E} whose exponent E
is formed from rounded inputs: ~E·eps).
"""
import json
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from popdyn._kernels.bvn import (_MILLS_STEP, _MILLS_TAB, bvn_cdf, hh1_pos, mills3, norm_cdf, norm_hh,
                                 norm_pdf)

EPS = 2.220446049250313e-16
DATA = Path(__file__).resolve().parents[2] / "data"   # the checkout's data/ (refs are not shipped)
REFS = DATA / "refs" / "plmoments_refs.json"


# ----------------------------------------------------------------------------- mpmath reference
def _ncdf(x):
    if x > 1e4:
        return mp.mpf(1)
    if x < -1e4:
        return mp.mpf(0)
    return mp.ncdf(x)


def _logncdf(x):
    """log Φ(x) at working precision, also far in the lower tail."""
    if x > -30:
        return mp.log(mp.ncdf(x))
    x = mp.mpf(x)
    if x > -1e4:
        return mp.log(mp.erfc(-x / mp.sqrt(2)) / 2)
    return -x * x / 2 - mp.log(-x) - mp.log(mp.sqrt(2 * mp.pi))


def quad_logconcave(logf, a, b, extra=()):
    """∫_a^b exp(logf) for a concave logf on a finite [a, b]: breakpoints at the mode, at
    distances w·2^j from it (w: where logf has dropped by 1/2), and at ``extra``; the integrand
    is scaled by its maximum because mpmath.quad's stopping rule is absolute."""
    a = mp.mpf(a)
    b = mp.mpf(b)
    lo, hi = a, b
    g = (mp.sqrt(5) - 1) / 2
    c = hi - g * (hi - lo)
    d = lo + g * (hi - lo)
    fc, fd = logf(c), logf(d)
    for _ in range(120):
        if hi - lo < mp.mpf(10) ** -20 * (1 + abs(lo)):
            break
        if fc > fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = logf(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = logf(d)
    zm = (lo + hi) / 2
    lm = logf(zm)

    def width(direction):
        lim = (b - zm) if direction > 0 else (zm - a)
        if lim <= 0:
            return mp.mpf(0)
        w = mp.mpf(10) ** -20
        while w < lim and lm - logf(zm + direction * w) < 0.5:
            w *= 2
        return min(w, lim)

    pts = {a, b, zm}
    for direction in (1, -1):
        w = width(direction)
        for j in range(-3, 12):
            p = zm + direction * w * mp.mpf(2) ** j
            if w > 0 and a < p < b:
                pts.add(p)
    for p in extra:
        if a < p < b:
            pts.add(p)
    pts = sorted(pts)
    return mp.quad(lambda z: mp.exp(logf(z) - lm), pts) * mp.exp(lm)


def bvn_ref(h, k, omr, opr, sign, dps=30):
    """Φ₂(h, k; r) with r = 1 − omr (sign > 0) or opr − 1 (sign < 0), s² = omr·opr exactly."""
    with mp.workdps(dps):
        h, k, omr, opr = (mp.mpf(v) for v in (h, k, omr, opr))
        if omr == 0:
            return _ncdf(min(h, k))
        if opr == 0:
            return max(mp.mpf(0), _ncdf(h) - _ncdf(-k))
        r = (1 - omr) if sign > 0 else (opr - 1)
        s = mp.sqrt(omr * opr)
        if k < h:
            h, k = k, h
        lo = min(h, -40) - 10

        def logf(z):
            return -z * z / 2 - mp.log(mp.sqrt(2 * mp.pi)) + _logncdf((k - r * z) / s)

        extra = []
        if r != 0:
            z0 = k / r
            extra.append(z0)
            d = s / 8
            while d < 20:
                if d > mp.mpf(10) ** -25 * (1 + abs(z0)):
                    extra += [z0 + d, z0 - d]
                d *= 4
        return quad_logconcave(logf, lo, h, extra)


def corr_triple(omr, sign):
    """(r, omr, opr) as a caller forms them: r = 1 − omr or omr − 1 in float."""
    if sign > 0:
        return 1.0 - omr, omr, 2.0 - omr
    return omr - 1.0, 2.0 - omr, omr


def check_bvn(h, k, omr, sign, ref=None):
    r, o1, o2 = corr_triple(omr, sign)
    v = bvn_cdf(h, k, r, o1, o2)
    if ref is None:
        ref = bvn_ref(h, k, o1, o2, sign)
    err = abs(mp.mpf(v) - ref)
    assert err <= 2 * EPS, (h, k, r, v, ref)
    if ref > 1e-300:
        rtol = 2e-14 + 2 * EPS * abs(float(mp.log(ref)))
        assert err <= rtol * ref, (h, k, r, v, ref, float(err / ref))
    else:
        assert v <= 1e-290
    return float(err / ref) if ref > 1e-300 else 0.0


# ------------------------------------------------------------------------------- univariate
def test_norm_pdf_cdf_against_mpmath():
    with mp.workdps(30):
        for x in np.concatenate([np.linspace(-37, 8.5, 301), [0.0, -1e-300, 1e-300, 37.0, -36.9]]):
            x = float(x)
            ref = mp.npdf(x)
            assert abs(norm_pdf(x) - ref) <= 2 * EPS * ref * (1 + x * x / 2)
            ref = mp.ncdf(x)
            # erfc is ulp-accurate; the argument x/√2 is rounded (conditioning ~x²/2·eps)
            assert abs(norm_cdf(x) - ref) <= 2 * EPS * ref * (2 + x * x)
    assert norm_cdf(math.inf) == 1.0 and norm_cdf(-math.inf) == 0.0
    assert norm_pdf(math.inf) == 0.0


def test_mills_table_rows():
    """Every tabulated T_n(w) = Hh_n(w)/φ(w) (n = 0, 1, 2) against mpmath at 40 digits."""
    with mp.workdps(40):
        for j in range(_MILLS_TAB.shape[0]):
            w = mp.mpf(j) * mp.mpf(_MILLS_STEP)
            P, f = mp.ncdf(-w), mp.npdf(w)
            ref = (P / f, (f - w * P) / f, ((1 + w * w) * P - w * f) / (2 * f))
            for n in range(3):
                assert abs(_MILLS_TAB[j, n] - ref[n]) <= 0.6 * EPS * ref[n], (j, n)


def _hh_ref(w):
    with mp.workdps(60):
        w = mp.mpf(w)
        P, f = mp.ncdf(-w), mp.npdf(w)
        return P, f - w * P, ((1 + w * w) * P - w * f) / 2


@pytest.mark.parametrize("w", [-60.0, -39.5, -10.0, -3.0, -1.0, -1e-3, 0.0, 1e-9, 0.0625, 0.3, 1.0,
                               2.718, 3.0625, 5.5, 7.9375, 7.99, 8.0, 8.0000001, 9.3, 15.0, 30.0,
                               36.0, 1e3, 9999.0, 1.0001e4, 1e6, 1e150])
def test_mills3_and_norm_hh(w):
    ref = _hh_ref(w)
    if w >= 0:
        with mp.workdps(60):
            f = mp.npdf(mp.mpf(w))
            for n, t in enumerate(mills3(w)):
                if w < 1e4:
                    tr = ref[n] / f
                else:  # asymptotic series (next terms < 1e−23 relative)
                    v = mp.mpf(1) / (mp.mpf(w) ** 2)
                    tr = [(1 - v + 3 * v * v) / w, v * (1 - 3 * v + 15 * v * v),
                          v * (1 - 6 * v + 45 * v * v) / w][n]
                assert abs(t - tr) <= 6 * EPS * abs(tr) + 1e-300, (n, t, tr)
    if abs(w) < 37:  # below: the values are subnormal or 0
        for n, v in enumerate(norm_hh(w)):
            # φ(w) from exp(−w²/2): conditioning ~w²/2·eps
            assert abs(v - ref[n]) <= EPS * abs(ref[n]) * (8 + w * w), (n, v, ref[n])


@given(st.floats(0.0, 40.0))
@settings(max_examples=200)
def test_mills3_recurrences(w):
    """Hh_n recurrence n Hh_n = Hh_{n−2} − w Hh_{n−1} in ratio form, and positivity/monotonicity."""
    t0, t1, t2 = mills3(w)
    assert t0 > t1 > t2 > 0
    # 2 T2 = T0 − w T1 and T1 = 1 − w T0 hold up to cancellation; check them where they do not cancel
    if w < 2:
        assert abs(2 * t2 - (t0 - w * t1)) <= 64 * EPS * t0
        assert abs(t1 - (1 - w * t0)) <= 64 * EPS
    assert t0 <= 1 / w if w > 0 else True


def test_hh1_pos_is_norm_hh():
    """hh1_pos(w) is bit-identical to norm_hh(w)[1] for w ≥ 0 (table nodes and midpoints, the
    switch to the continued fraction at w = 8, the asymptotic series beyond 1e4)."""
    w = np.concatenate([np.linspace(0.0, 12.0, 4801), np.arange(65) * _MILLS_STEP + _MILLS_STEP / 2,
                        [7.999999, 8.0, 8.000001, 9999.0, 1e4, 1.0001e4, 3e5]])
    for v in w:
        assert hh1_pos(float(v)) == norm_hh(float(v))[1], v


# ------------------------------------------------------------------------------- bivariate
def test_bvn_exact_cases():
    # r = ±1 exactly
    for h, k in [(0.3, -0.2), (-5.0, -7.0), (2.0, 2.0), (40.0, -1.0), (-0.1, 0.1), (1e300, -3.0)]:
        assert bvn_cdf(h, k, 1.0, 0.0, 2.0) == norm_cdf(min(h, k))
        lower = bvn_cdf(h, k, -1.0, 2.0, 0.0)
        expect = max(0.0, float(mp.ncdf(h) - mp.ncdf(-k)))
        # a difference of two Φ values: absolute accuracy (2e−16), relative ~(Φ/difference)·eps
        assert abs(lower - expect) <= 2e-16 and abs(lower - expect) <= 1e-14 * expect + 1e-300
    # r = 0
    for h, k in [(0.3, -0.2), (-8.7, -8.5), (3.0, 1e300)]:
        assert bvn_cdf(h, k, 0.0, 1.0, 1.0) == norm_cdf(h) * norm_cdf(k)
    # infinite and huge limits
    for r, omr, opr in [(0.5, 0.5, 1.5), (-0.99, 1.99, 0.01), (0.0, 1.0, 1.0), (1 - 1e-12, 1e-12, 2 - 1e-12)]:
        assert bvn_cdf(-math.inf, 0.3, r, omr, opr) == 0.0
        assert bvn_cdf(0.3, -math.inf, r, omr, opr) == 0.0
        assert bvn_cdf(math.inf, 0.3, r, omr, opr) == norm_cdf(0.3)
        assert bvn_cdf(-0.7, math.inf, r, omr, opr) == norm_cdf(-0.7)
        assert bvn_cdf(math.inf, math.inf, r, omr, opr) == 1.0
        assert bvn_cdf(1e300, 1e300, r, omr, opr) == 1.0
        assert bvn_cdf(-1e300, 2.0, r, omr, opr) == 0.0
        assert bvn_cdf(1e300, -2.5, r, omr, opr) == norm_cdf(-2.5)
        assert math.isnan(bvn_cdf(math.nan, 0.0, r, omr, opr))


@given(st.floats(-12, 12), st.floats(-12, 12), st.floats(0, 1))
@settings(max_examples=300)
@example(h=0.0, k=0.0, t=1.011526910571683e-160)    # 1 − r = 5e−320: the nodes' x² underflow
def test_bvn_identities(h, k, t):
    """Symmetry in (h, k); Φ₂(h,k;r) + Φ₂(h,−k;−r) = Φ(h); bounds; monotonicity in r."""
    ang = math.pi * t
    r, omr, opr = math.cos(ang), 2 * math.sin(ang / 2) ** 2, 2 * math.cos(ang / 2) ** 2
    v = bvn_cdf(h, k, r, omr, opr)
    assert 0.0 <= v <= min(norm_cdf(h), norm_cdf(k)) * (1 + 4e-15)
    assert v >= (norm_cdf(h) + norm_cdf(k) - 1.0) - 4e-16
    assert abs(v - bvn_cdf(k, h, r, omr, opr)) <= 2e-16 + 1e-14 * v
    w = bvn_cdf(h, -k, -r, opr, omr)
    assert abs(v + w - norm_cdf(h)) <= 4e-16
    # ∂Φ₂/∂r = φ₂ ≥ 0
    ang2 = ang * 0.999
    r2, o12, o22 = math.cos(ang2), 2 * math.sin(ang2 / 2) ** 2, 2 * math.cos(ang2 / 2) ** 2
    assert bvn_cdf(h, k, r2, o12, o22) >= v - 4e-16 - 1e-14 * v


def test_bvn_precomputed_references():
    """Against the mpmath references of data/refs/plmoments_refs.json (key "bvn")."""
    data = json.loads(REFS.read_text())["bvn"]
    assert len(data) >= 150
    worst = 0.0
    for c in data:
        worst = max(worst, check_bvn(c["h"], c["k"], c["omr"], c["sign"], mp.mpf(c["ref"])))
    assert worst < 1e-13


@given(st.floats(-9, 9), st.floats(-9, 9),
       st.sampled_from([1e-12, 1e-8, 0.075, 0.0751, 0.0749, 0.3, 1.0, 1.5, 1.97]),
       st.sampled_from([1, -1]))
@settings(max_examples=8)
@example(h=0.5, k=0.5, omr=1e-12, sign=1)
@example(h=-6.0, k=-6.0, omr=1e-12, sign=1)
@example(h=2.0, k=-2.0, omr=1e-12, sign=-1)
@example(h=-3.0, k=2.5, omr=0.075, sign=-1)     # |r| = 0.925 exactly: high-correlation branch
@example(h=-3.0, k=-3.5, omr=0.0751, sign=1)    # |r| just below 0.925
@example(h=-8.0, k=-8.0, omr=0.05, sign=1)      # lower-left tail at high r (cancellation)
@example(h=-3.0, k=-3.0, omr=0.6, sign=-1)      # h + k < 0 at r < 0 (cancellation)
@example(h=0.2, k=-0.3, omr=1.0, sign=1)        # r = 0
@example(h=1.25, k=1.25, omr=0.0751, sign=-1)    # 0.789 with 2.1 ulp of rounding (2.3e−16)
def test_bvn_live_mpmath(h, k, omr, sign):
    check_bvn(h, k, omr, sign)


def test_bvn_scipy_sanity():
    """Loose agreement with scipy's multivariate normal cdf (a different code path)."""
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for _ in range(40):
        h, k = rng.uniform(-3, 3, 2)
        r = rng.uniform(-0.99, 0.99)
        ref = stats.multivariate_normal(mean=[0, 0], cov=[[1, r], [r, 1]]).cdf([h, k])
        assert abs(bvn_cdf(h, k, r, 1 - r, 1 + r) - ref) < 1e-6


# pinned (randomized check aimed at the joint tail, |r| ≈ 0.925–0.95): Genz's single 20-point
# panel for the remainder of K lost relative accuracy there (1e−12 of K), up to 5× beyond the
# estimate of the |r| ≥ 0.925 branch without refinement, as the closed-form ramp moments call
# it -- until 0.3.3 (bvn._REM_CHECK)
_REM_TAIL = [(-8.040835907749587, -8.666401555855378, 0.06726260669529438, 1),
             (-7.872409186592051, -7.6949367217246865, 0.05826198868453503, 1),
             (-8.828, -9.111, 0.067787, 1),
             (-7.465, 7.593, 0.067784, -1),
             (-9.097454601849687, 8.88106896975845, 0.05316834710538393, -1)]


def test_bvn_estimate_covers_the_remainder_rule_in_the_joint_tail():
    from popdyn._kernels.bvn import _bvn_err

    for h, k, c, sign in _REM_TAIL:
        c = round(c * 2 ** 30) / 2 ** 30
        r, omr, opr = corr_triple(c, sign)
        v, e = _bvn_err(h, k, r, omr, opr, False)
        ref = bvn_ref(h, k, omr, opr, sign)
        assert abs(mp.mpf(v) - ref) <= e, (h, k, r, v, e, float(abs(mp.mpf(v) - ref)))


def test_bvn_cdf_accurate_in_the_joint_tail_remainder_cases():
    """bvn_cdf (refined) on the same cases: the remainder on 4 panels where the single panel is
    short, relative error within 2e−14 plus the documented input conditioning (h² + k²)·eps
    (it was 1e−13 to 9e−12 with the single panel)."""
    for h, k, c, sign in _REM_TAIL:
        c = round(c * 2 ** 30) / 2 ** 30
        r, omr, opr = corr_triple(c, sign)
        v = bvn_cdf(h, k, r, omr, opr)
        ref = bvn_ref(h, k, omr, opr, sign)
        assert abs(mp.mpf(v) - ref) <= (2e-14 + (h * h + k * k) * EPS) * ref, (h, k, r, v)
