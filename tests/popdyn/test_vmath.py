"""Tests of the vectorized kernels: popdyn._kernels.vmath (exp, sine), bvn.hh1_batch and the
batched Price sums of plmoments.

References: mpmath at 40 digits (exp, sine, Hh₁ = E[(Z − w)₊] = φ(w) − wΦ(−w) evaluated in
mpmath), and the scalar kernels for the batched forms of the same sums (the batched forms differ
from them only in the exponential and the Estrin/Horner rounding, a few ulp per term).
"""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn._kernels import bvn
from popdyn._kernels import plmoments as pl
from popdyn._kernels._jit import jit
from popdyn._kernels.vmath import _POW2, _POW2_OFF, _pow2, exp_batch, exp_inline, sin_small

EPS = 2.220446049250313e-16
TINY = 2.0 ** -1022


def _rel_ulps(v, ref):
    """|v − ref| in units of eps·|ref| (mpmath ref)."""
    return float(abs(mp.mpf(v) - ref) / (abs(ref) * EPS))


def test_exp_batch_against_mpmath():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-0.75, 0.75, 2000), -rng.exponential(40.0, 2000),
                        rng.uniform(-708.0, 709.0, 1000), rng.uniform(-745.0, -708.0, 200),
                        [0.0, -0.0, 1e-300, -1e-300, 0.5 * math.log(2), -0.5 * math.log(2),
                         709.0, -708.39, -745.0, -745.2, -1000.0, -1400.0, -5000.0]])
    out = np.empty_like(x)
    exp_batch(x, out)
    worst = 0.0
    with mp.workdps(40):
        for v, e in zip(out, x):
            ref = mp.exp(mp.mpf(float(e)))
            if ref >= TINY:
                worst = max(worst, _rel_ulps(v, ref))
            else:  # subnormal or underflow: absolute error ≤ one subnormal spacing (and ≥ 0)
                assert v >= 0.0 and abs(mp.mpf(v) - ref) <= 2.0 ** -1074 * 2, (e, v)
    assert worst <= 2.0, worst
    # in place, and arrays of every length (vector remainder loops)
    for n in range(0, 11):
        y = np.linspace(-3.0, 1.0, n)
        ref = np.array([math.exp(t) for t in y])
        exp_batch(y, y)
        assert np.all(np.abs(y - ref) <= 3 * EPS * ref)


@jit(error_model="numpy")
def _exp_inline_loop(E, out):
    for i in range(E.shape[0]):
        out[i] = exp_inline(E[i])


@jit
def _pow2_loop(n, out):
    for i in range(n.shape[0]):
        out[i] = _pow2(n[i])


def test_pow2_is_the_table_of_exact_powers():
    """_pow2 (exponent bits) equals the table _POW2 of exact powers 2.0**n that exp_inline read
    until 0.7.0, over the whole table (n = −1010 … 512), and 2.0**n up to n = ±1022/1023."""
    n = np.arange(-1022, 1024)
    out = np.empty(n.shape[0])
    _pow2_loop(n, out)
    assert np.array_equal(out, np.array([2.0 ** int(k) for k in n]))
    assert np.array_equal(out[(n >= -_POW2_OFF) & (n <= 512)], _POW2)


def test_pure_python_bitcast_is_the_intrinsics():
    """Under NUMBA_DISABLE_JIT=1 (the wheel test's `popdyn run`) exp_inline's powers of two come
    from the plain-Python bitcast, which must give the same exact powers as the intrinsic."""
    from popdyn._kernels.vmath import _bits_f64_py
    n = np.arange(-1022, 1024)
    out = np.empty(n.shape[0])
    _pow2_loop(n, out)
    assert np.array_equal(out, [_bits_f64_py((int(k) + 1023) << 52) for k in n])


def test_exp_inline_is_exp_batch_and_within_2_ulp():
    """exp_inline (the scalar form the fused Price pass inlines: powers of two built from their
    exponent bits in registers) gives the bits of exp_batch over its whole range, clamps included, and so is within 2 ulp
    of 40-digit mpmath (checked here again on the reduction's boundaries and the table's ends:
    k = −2020 … 1023)."""
    rng = np.random.default_rng(7)
    ln2 = math.log(2.0)
    kb = np.arange(-2020, 1024) * ln2
    x = np.concatenate([rng.uniform(-1500.0, 720.0, 50000), rng.uniform(-1.0, 1.0, 5000),
                        kb, kb + 0.5 * ln2, kb - 0.5 * ln2,
                        [0.0, -0.0, 709.0, 709.78, 710.0, -745.13, -745.14, -1400.0, -1e300,
                         1e300, 5e-324, -5e-324]])
    a = np.empty_like(x)
    b = np.empty_like(x)
    _exp_inline_loop(x, a)
    exp_batch(x, b)
    assert np.array_equal(a.view(np.int64), b.view(np.int64))
    worst = 0.0
    with mp.workdps(40):
        for v, e in zip(a[::23], x[::23]):
            e = min(float(e), 709.0)
            ref = mp.exp(mp.mpf(e))
            if ref >= TINY:
                worst = max(worst, _rel_ulps(v, ref))
            else:
                assert v >= 0.0 and abs(mp.mpf(v) - ref) <= 2.0 ** -1074 * 2, (e, v)
    assert worst <= 2.0, worst


@given(st.floats(-math.pi / 2, math.pi / 2))
@settings(max_examples=300)
def test_sin_small_against_mpmath(x):
    v = sin_small(x)
    with mp.workdps(40):
        ref = mp.sin(mp.mpf(x))
    if ref == 0:
        assert v == 0.0
    else:
        assert _rel_ulps(v, ref) <= 2.0
    assert abs(v - bvn._sin_small(x)) <= 2 * EPS * abs(v)


def test_hh1_batch_against_mpmath_and_scalar():
    rng = np.random.default_rng(1)
    w = np.concatenate([rng.uniform(0.0, 8.0, 600), np.arange(65) * bvn._MILLS_STEP,
                        np.arange(64) * bvn._MILLS_STEP + bvn._MILLS_STEP / 2,
                        [0.0, 8.0, 7.999999, 8.000001, 9999.0, 1e4, 1.0001e4, 3e5],
                        rng.uniform(8.0, 38.0, 300)])
    rng.shuffle(w)
    out = np.empty_like(w)
    bvn.hh1_batch(w, out)
    with mp.workdps(40):
        for v, x in zip(out, w):
            z = mp.mpf(float(x))
            ref = mp.npdf(z) - z * mp.ncdf(-z)
            if ref < TINY:
                assert abs(mp.mpf(v) - ref) <= 2.0 ** -1074 * (8.0 + x * x), (x, v)
                continue
            assert _rel_ulps(v, ref) <= 8.0 + x * x, (x, v)        # φ(w): conditioning w²·eps
            s = bvn.hh1_pos(float(x))
            assert abs(v - s) <= 4 * EPS * s + 2.0 ** -1074, (x, v, s)


@pytest.mark.parametrize("rule", [0, 1, 2])
def test_price_batch_equals_scalar_sums(rule):
    """_price_batch gives the sums of _price_sum within the rounding allowance the Price form's
    error estimate makes for them, eps·(8 + 4|E_min|) × the sums of |terms| (same operations and
    order; the exponential and the sine polynomial round differently, and a one-ulp change of
    the node t moves the exponent E by ~|E|·eps)."""
    U, W = [(bvn._GL6_U, bvn._GL6_W), (bvn._GL12_U, bvn._GL12_W), (bvn._GL20_U, bvn._GL20_W)][rule]
    rng = np.random.default_rng(2 + rule)
    for n in (1, 3, 8, 37, 200, 600):   # 600: several blocks of _price_batch
        x = rng.uniform(-1.0, 6.0, n)
        y = rng.uniform(-1.0, 6.0, n)
        rt = rng.uniform(-0.92, 0.92, n)
        asr = np.arcsin(rt)
        out = np.empty((n, 7))
        pl._price_batch(U, W, x, y, rt, np.zeros(n), asr, out)
        for p in range(n):
            ref = pl._price_sum(U, W, x[p], y[p], rt[p], 0.0, asr[p])
            # |terms| sums: s0 (all terms positive), s4, s5, s6 bound the signed sums' terms
            scale = [ref[0], ref[4], ref[5], ref[6], ref[4], ref[5], ref[6]]
            emin = pl._price_logvar(x[p], y[p], rt[p])[1]
            for c in range(7):
                tol = EPS * (8.0 + 4.0 * abs(emin)) * scale[c] + 1e-300
                assert abs(out[p, c] - ref[c]) <= tol, (p, c)


def test_bvn_hi_rem_batch_equals_scalar():
    """The batched remainder sums of Genz's |r| ≥ 0.925 rule equal the scalar ones within the
    rounding allowance of its estimate, eps·(4 + |exponent|)·Σ|terms|, and skip the same terms
    (exponent ≤ −745).  600 items span three blocks of the batch's node loop."""
    rng = np.random.default_rng(7)
    for n in (1, 5, 33, 150, 600):
        h = rng.uniform(-8.0, 8.0, n)
        k = rng.uniform(-8.0, 8.0, n)
        k[: n // 3] = h[: n // 3] + rng.uniform(-1e-3, 1e-3, n // 3)
        a2 = 10.0 ** rng.uniform(-12.0, math.log10(0.144), n)
        num = np.empty(n)
        nmag = np.empty(n)
        bvn._bvn_hi_rem_batch(h, k, a2, num, nmag)
        for p in range(n):
            sn, sm = bvn._bvn_hi_rem(h[p], k[p], a2[p])
            cond = 4.0 + 0.5 * abs((h[p] - k[p]) ** 2 / a2[p] + h[p] * k[p])
            assert abs(num[p] - sn) <= EPS * cond * sm + 1e-300, p
            assert abs(nmag[p] - sm) <= EPS * cond * sm + 1e-300, p


def test_price_batch_on_panels_equals_scalar_panels():
    """Panels (a0 = j·w, width w) as _price_panels lays them: the batched panel sums, added in
    order and times w, equal _price_panels within the same allowance."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        x, y = rng.uniform(2.0, 12.0, 2)
        rt = rng.uniform(0.3, 0.92)
        V, emin = pl._price_logvar(x, y, rt)
        npan = int(V / 8.0) + 1
        asr = math.asin(rt)
        w = asr / npan
        out = np.empty((npan, 7))
        pl._price_batch(bvn._GL20_U, bvn._GL20_W, np.full(npan, x), np.full(npan, y),
                        np.full(npan, rt), np.arange(npan) * w, np.full(npan, w), out)
        got = out.sum(axis=0) * w
        ref = pl._price_panels(x, y, rt, asr, npan)
        scale = [ref[0], ref[4], ref[5], ref[6], ref[4], ref[5], ref[6]]
        for c in range(7):
            assert abs(got[c] - ref[c]) <= EPS * (8.0 + 4.0 * abs(emin)) * scale[c] + 1e-300


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["bulk", "tails", "aligned", "anti"]))
@settings(max_examples=25, deadline=None)
def test_batched_self_moments_equal_pairwise(seed, kind):
    """pl_self_moments (batched) and pl_self_moments_pairwise (one pair at a time, scalar
    evaluators) agree to rounding: 1e−14 of each entry plus 1e−15 of the pair's RMS scale,
    on states with bulk, tail, nearly aligned and anti-aligned units, leaky slopes and α = 0."""
    from popdyn._kernels.geometry import pair_geometry

    rng = np.random.default_rng(seed)
    m, d = 12, 5
    W = rng.standard_normal((m, d))
    if kind == "aligned":
        W[1:6] = W[0] + 1e-3 * rng.standard_normal((5, d))
    elif kind == "anti":
        W[1:6] = -W[0] + 0.3 * rng.standard_normal((5, d))
    W[m - 1] = 0.0
    al = np.linalg.norm(W, axis=1)
    ok = al > 0
    th = W / np.where(ok, al, 1.0)[:, None]
    be = rng.standard_normal(m) * (6.0 if kind == "tails" else 0.7) * np.maximum(al, 0.1)
    slope = float(rng.choice([0.0, 0.1]))
    p = np.full(m, 1.0 - slope)
    q = np.full(m, slope)
    R = th @ th.T
    OMR = np.empty((m, m))
    OPR = np.empty((m, m))
    pair_geometry(th, ok, th, ok, R, OMR, OPR)
    a = [np.empty((m, m)) for _ in range(4)]
    b = [np.empty((m, m)) for _ in range(4)]
    pl.pl_self_moments(p, q, al, be, R, OMR, OPR, *a)
    pl.pl_self_moments_pairwise(p, q, al, be, R, OMR, OPR, *b)
    r0 = np.sqrt(np.abs(np.diag(b[0])))
    r1 = np.sqrt(np.abs(np.diag(b[1])))
    scales = (np.outer(r0, r0), np.outer(r1, r1), np.outer(r1, r0) * np.maximum(al, 1.0)[:, None],
              np.outer(r1, r0))
    for X, Y, sc in zip(a, b, scales):
        assert np.all(np.abs(X - Y) <= 1e-14 * np.abs(Y) + 1e-15 * sc + 1e-300)


def test_chunked_moments_equal_pairwise():
    """pl_self_moments / pl_pair_moments evaluate the pair list in chunks of plmoments._CHUNK
    pairs: on states of more than one chunk (bulk, tail, aligned, anti-aligned and α = 0 units)
    they agree with the one-pair evaluators to rounding, as the unchunked list does
    (:func:`test_batched_self_moments_equal_pairwise`), with every entry written (NaN-filled
    outputs)."""
    from popdyn._kernels.geometry import pair_geometry

    rng = np.random.default_rng(11)
    m, m2, d = 50, 25, 6
    assert m * (m + 1) // 2 > pl._CHUNK and m * m2 > pl._CHUNK
    W = rng.standard_normal((m + m2, d))
    W[1:6] = W[0] + 1e-3 * rng.standard_normal((5, d))
    W[6:11] = -W[0] + 0.3 * rng.standard_normal((5, d))
    W[m - 1] = 0.0
    n = m + m2
    al = np.linalg.norm(W, axis=1)
    ok = al > 0
    th = W / np.where(ok, al, 1.0)[:, None]
    be = rng.standard_normal(n) * np.where(np.arange(n) % 3 == 0, 6.0, 0.7) * np.maximum(al, 0.1)
    p, q = np.full(n, 0.9), np.full(n, 0.1)
    R = th @ th.T
    OMR = np.empty((n, n))
    OPR = np.empty((n, n))
    pair_geometry(th, ok, th, ok, R, OMR, OPR)
    ref = [np.empty((n, n)) for _ in range(4)]
    pl.pl_self_moments_pairwise(p, q, al, be, R, OMR, OPR, *ref)
    r0 = np.sqrt(np.abs(np.diag(ref[0])))
    r1 = np.sqrt(np.abs(np.diag(ref[1])))
    scales = (np.outer(r0, r0), np.outer(r1, r1), np.outer(r1, r0) * np.maximum(al, 1.0)[:, None],
              np.outer(r1, r0))
    s1, s2 = slice(0, m), slice(m, n)
    got = [np.full((m, m), np.nan) for _ in range(4)]
    pl.pl_self_moments(p[s1], q[s1], al[s1], be[s1], R[s1, s1].copy(), OMR[s1, s1].copy(),
                       OPR[s1, s1].copy(), *got)
    pair = [np.full((m, m2), np.nan) for _ in range(4)]
    pl.pl_pair_moments(p[s1], q[s1], al[s1], be[s1], p[s2], q[s2], al[s2], be[s2],
                       R[s1, s2].copy(), OMR[s1, s2].copy(), OPR[s1, s2].copy(), *pair)
    for blk, (a, b) in (("self", (s1, s1)), ("pair", (s1, s2))):
        out = got if blk == "self" else pair
        for X, Y, sc in zip(out, ref, scales):
            Yb, sb = Y[a, b], sc[a, b]
            assert np.all(np.abs(X - Yb) <= 1e-14 * np.abs(Yb) + 1e-15 * sb + 1e-300), blk
