"""Tests of the vectorized Φ₂ (popdyn._kernels.bvn_batch.bvn_cdf_batch) and of the vectorized
asin it uses (popdyn._kernels.vmath.asin_corr).

References: mpmath at 30 digits, computed from first principles by tests/popdyn/test_bvn.py's
``bvn_ref`` (a 1-D quadrature of φ(z)Φ((k − rz)/s), never the kernels) -- the precomputed
values of data/refs/plmoments_refs.json (key ``bvn``) and live values at degenerate geometry
(r → ±1, joint tails, |r| = 0.925 on both sides, large limits) -- and 40-digit mpmath for asin.
The batch is also compared with the scalar :func:`bvn_cdf` under hypothesis: both carry the same
stated accuracy (absolute ≤ 2 ulp(1), relative ≤ 2e−14 + 2·eps·|ln Φ₂|), so they may differ by
twice it; the items the batch hands to :func:`bvn_cdf` must equal it exactly.
"""
import json
import math
import re

import mpmath as mp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn._kernels.bvn import bvn_cdf
from popdyn._kernels.bvn_batch import (_C6, _C12, _C20, _CHI, _CPAN, _CSCALAR, _classify,
                                       bvn_cdf_batch)
from popdyn._kernels.vmath import asin_corr

try:  # tests/popdyn as a package or on sys.path (pytest's default rootdir mode)
    from .test_bvn import REFS, bvn_ref, corr_triple
except ImportError:
    from test_bvn import REFS, bvn_ref, corr_triple

EPS = 2.220446049250313e-16


def _contract(v, ref, what):
    """The stated accuracy of Φ₂ (tests/popdyn/test_bvn.py's check_bvn)."""
    err = abs(mp.mpf(v) - ref)
    assert err <= 2 * EPS, (what, v, ref)
    if ref > 1e-300:
        assert err <= (2e-14 + 2 * EPS * abs(float(mp.log(ref)))) * ref, (what, v, ref)
    else:
        assert v <= 1e-290, (what, v, ref)


def _batch(cases):
    """bvn_cdf_batch on (h, k, omr, sign) cases, with r, 1 − r, 1 + r as the caller forms them."""
    trip = [corr_triple(omr, sign) for _, _, omr, sign in cases]
    h = np.array([c[0] for c in cases], float)
    k = np.array([c[1] for c in cases], float)
    r, om, op = (np.array(x) for x in zip(*trip))
    out = np.empty(len(cases))
    bvn_cdf_batch(h, k, r, om, op, out)
    return out, (h, k, r, om, op)


# ------------------------------------------------------------------------------ asin
@given(st.floats(0.0, 2.0), st.sampled_from([1, -1]))
@settings(max_examples=400)
def test_asin_corr_against_mpmath(c, sign):
    """asin(r) from (r, 1 − r, 1 + r) within 2 ulp of 40-digit mpmath, at the correlation the
    exact 1 − r (r > 0) or 1 + r (r < 0) defines (what the caller's omr, opr mean)."""
    r, om, op = corr_triple(c, sign)
    v = asin_corr(r, om, op)
    with mp.workdps(40):
        ref = mp.asin(1 - mp.mpf(om)) if sign > 0 else mp.asin(mp.mpf(op) - 1)
        if ref == 0:
            assert v == 0.0
            return
        ulp = mp.mpf(2) ** (mp.floor(mp.log(abs(ref), 2)) - 52)
        assert abs(mp.mpf(v) - ref) <= 2 * ulp, (r, v, ref, float(abs(mp.mpf(v) - ref) / ulp))
    assert asin_corr(-r, op, om) == -v


def test_asin_corr_edges():
    assert asin_corr(0.0, 1.0, 1.0) == 0.0
    assert asin_corr(1.0, 0.0, 2.0) == math.pi / 2
    assert asin_corr(-1.0, 2.0, 0.0) == -math.pi / 2
    # the switch point, from both sides (within the 2 ulp asserted against mpmath above)
    assert abs(asin_corr(0.5, 0.5, 1.5) - math.asin(0.5)) <= 2 * EPS
    assert abs(asin_corr(np.nextafter(0.5, 1.0), 0.5 - 2 ** -53, 1.5 + 2 ** -52)
               - math.asin(np.nextafter(0.5, 1.0))) <= 2 * EPS


# ------------------------------------------------------------------------------ Φ₂ batch
def test_bvn_batch_precomputed_references():
    """Every precomputed 30-digit reference through one batch, at Φ₂'s stated accuracy."""
    data = json.loads(REFS.read_text())["bvn"]
    cases = [(c["h"], c["k"], c["omr"], c["sign"]) for c in data]
    out, args = _batch(cases)
    cls = np.empty(len(cases), np.int64)
    _classify(*args, cls)
    # the references cover every class of the batch
    assert set(np.unique(cls)) == {_C6, _C12, _C20, _CHI, _CSCALAR, _CPAN}, np.bincount(cls)
    for v, c in zip(out, data):
        _contract(v, mp.mpf(c["ref"]), c)


# degenerate geometry (live 30-digit mpmath): r → ±1, |r| = 0.925 from both sides, joint tails
# at high and at negative r (the cases bvn_cdf refines), r = 0, large and tiny limits
_DEGENERATE = [(0.5, 0.5, 1e-12, 1), (-6.0, -6.0, 1e-12, 1), (2.0, -2.0, 1e-12, -1),
               (-3.0, 2.5, 0.075, -1), (-3.0, -3.5, 0.0751, 1), (-8.0, -8.0, 0.05, 1),
               (-3.0, -3.0, 0.6, -1), (0.2, -0.3, 1.0, 1), (1.25, 1.25, 0.0751, -1),
               (-8.040835907749587, -8.666401555855378, 0.06726260669529438, 1),
               (7.5, -0.4, 0.3, 1), (-38.5, 0.2, 0.9, 1), (0.0, 0.0, 1e-300, 1),
               (1e-9, -1e-9, 1.2, -1), (-5.0, 4.0, 1.9999, 1), (-2.0, -2.5, 0.71, 1),
               # V > 8 (several panels): joint tails at positive and negative r
               (-12.0, -15.0, 0.5, 1), (-30.0, -30.5, 0.2, 1), (-9.0, 20.0, 0.7, -1),
               (6.0, -25.0, 1.6, 1)]


def test_bvn_batch_degenerate_live_mpmath():
    out, args = _batch(_DEGENERATE)
    cls = np.empty(len(_DEGENERATE), np.int64)
    _classify(*args, cls)
    assert np.sum(cls == _CPAN) >= 3, cls
    for v, (h, k, omr, sign) in zip(out, _DEGENERATE):
        _contract(v, bvn_ref(h, k, *corr_triple(omr, sign)[1:], sign), (h, k, omr, sign))


_lim = st.one_of(st.floats(-10, 10), st.floats(-45, 45),
                 st.sampled_from([0.0, math.inf, -math.inf]))
_corr = st.one_of(st.floats(0.0, 2.0), st.sampled_from([0.0, 1e-300, 1e-12, 0.075, 0.0751, 0.7,
                                                          1.0, 1.3, 1.925, 1.93, 2.0]))


@given(st.lists(st.tuples(_lim, _lim, _corr, st.sampled_from([1, -1])), min_size=1, max_size=40))
@settings(max_examples=150)
def test_bvn_batch_against_scalar(cases):
    """Each item within twice Φ₂'s stated accuracy of the scalar :func:`bvn_cdf` (both are
    within it of the truth), the items left to bvn_cdf equal to it, and the order of the items
    irrelevant (each is computed on its own)."""
    out, args = _batch(cases)
    cls = np.empty(len(cases), np.int64)
    _classify(*args, cls)
    for i, (v, c) in enumerate(zip(out, cls)):
        s = bvn_cdf(*(a[i] for a in args))
        if c == _CSCALAR:
            assert v == s or (math.isnan(v) and math.isnan(s))
            continue
        d = abs(v - s)
        assert d <= 4 * EPS and d <= 2 * (2e-14 + 2 * EPS * abs(math.log(max(s, 1e-300)))) * s \
            + 1e-300, (cases[i], v, s)
    rev, _ = _batch(cases[::-1])
    assert np.array_equal(rev[::-1], out, equal_nan=True)


def test_bvn_batch_is_vectorized():
    """The node loop of the single-panel rules and the asin loop compile to packed code (the
    division of the node loop as a packed vdivpd, the square root of asin_corr as vsqrtpd on ymm
    or zmm registers; a fresh, uncached compile), and the fresh compile gives the bits of the
    cached kernel."""
    import numba
    import llvmlite.binding as ll
    import pytest

    from popdyn._kernels import bvn_batch as BB

    if not ll.get_host_cpu_features().get("avx2", False):
        pytest.skip("host CPU without AVX2: no packed ymm / zmm code to look for")
    packed = r"\w*\s+[^\n]*%[yz]mm"
    f = numba.njit(error_model="numpy")(BB._node_sums.py_func)
    n = 37
    HK = np.linspace(-1, 1, n)
    HS = np.linspace(0.1, 2.0, n)
    A0 = np.zeros(n)
    ASR = np.linspace(-0.3, 0.3, n)
    S = np.empty(n)
    f(BB._GL6_U, BB._GL6_W, HK, HS, A0, ASR, S)
    assert re.search(r"vdivpd" + packed, f.inspect_asm(f.signatures[0])), "node loop not packed"
    S2 = np.empty(n)
    BB._node_sums(BB._GL6_U, BB._GL6_W, HK, HS, A0, ASR, S2)
    assert np.array_equal(S, S2)
    g = numba.njit(error_model="numpy")(BB._lo_class.py_func)
    h = np.linspace(-1, 1, n)
    r = np.linspace(-0.2, 0.2, n)
    o1, o2 = np.empty(n), np.empty(n)
    idx = np.arange(n)
    g(h, h[::-1].copy(), r, 1 - r, 1 + r, idx, _C12, o1)
    assert re.search(r"vsqrtpd" + packed, g.inspect_asm(g.signatures[0])), "asin loop not packed"
    BB._lo_class(h, h[::-1].copy(), r, 1 - r, 1 + r, idx, _C12, o2)
    assert np.array_equal(o1, o2)
