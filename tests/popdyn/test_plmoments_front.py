"""The branch-free twins of the pair loop of popdyn._kernels.plmoments._moments_list against the
one-pair forms they replace (bit for bit: the same operations on the same operands, one of two
computed values selected instead of a branch), on random and degenerate pairs: duplicated and
antiparallel units (ρ = ±1, 1 ∓ ρ = 0), tiny and huge biases (|β| > 40α: linear units), α = 0,
leaky and linear shapes, the diagonal.  And the batched self moments against the one-pair path on
such states (to rounding, as tests/popdyn/test_vmath.py)."""
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn._kernels import plmoments as pl
from popdyn._kernels._jit import jit
from popdyn._kernels.bvn import _exponent_range


@jit(error_model="numpy")   # as _moments_list: the twins form |μ|/τ also where τ = 0
def _front_both(p1, q1, al1, be1, p2, q2, al2, be2, rho, omr, opr, diag, rtol, atol):
    """(one-pair values, branch-free values) of the linear parts, the ramp frame, the bound's
    test and the Price form's log-variation for unit 1 of set 1 and unit 1 of set 2."""
    ui = pl._unit(p1, q1, al1, be1)
    uj = pl._unit(p2, q2, al2, be2)
    c, b, dij, dji, pa, pb = pl._pair_linear_parts(ui, p1, q1, al1, be1, uj, p2, q2, al2, be2,
                                                   rho, omr, opr, diag)
    ref = np.array([c, b, dij, dji, pa[0], pa[1], pa[2], pa[3], pb[0], pb[1], pb[2], pb[3],
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    got = np.zeros(23)
    v = pl._linear_parts_bf(ui, p1, q1, al1, be1, uj, p2, q2, al2, be2, rho, omr, opr, diag)
    for n in range(12):
        got[n] = v[n]
    fr = pl._ramp_frame(ui, uj, al1, al2, rho, omr, opr, diag)
    fb = pl._ramp_frame_bf(ui[0], ui[2], uj[0], uj[2], al1, al2, rho, omr, opr, diag)
    for n in range(7):
        ref[12 + n] = fr[n]
        got[12 + n] = fb[n]
    bd = pl._ramps_bound(ui[5], ui[6], ui[7], uj[5], uj[6], uj[7])
    ref[19] = pl._ramps_need(fr[3], fr[4], fr[5], fr[6], c, b, dij, dji, bd[0], bd[1], bd[2],
                             bd[3], bd[4], bd[5], bd[6], bd[7], ui[12], uj[12], ui[13], uj[13],
                             rtol, atol)
    got[19] = pl._ramps_need_bf(fr[3], fr[4], fr[5], fr[6], c, b, dij, dji, bd[0], bd[1],
                                bd[2], bd[3], bd[4], bd[5], bd[6], bd[7], ui[12], uj[12],
                                ui[13], uj[13], rtol, atol)
    rt = fr[0]
    if abs(rt) < 1.0:
        emin, emax = _exponent_range(ui[3], uj[3], rt)
        ref[20], ref[21] = emax - emin, emin
        V, em = pl._price_logvar_bf(ui[3], uj[3], rt)
        got[20], got[21] = V, em
    # the A term as the loop forms it when Hh₁ is not needed
    ref[22] = pl._a_value(pa) if pa[2] == 0.0 else 0.0
    got[22] = v[4] * v[5] if v[6] == 0.0 else 0.0
    return ref, got


def _same(a, b):
    """Bitwise equality of two float64 arrays (NaN payloads aside)."""
    return np.array_equal(a.view(np.int64), b.view(np.int64)) or np.array_equal(a, b,
                                                                                equal_nan=True)


_shape = st.sampled_from([(1.0, 0.0), (0.9, 0.1), (2.0, -1.0), (0.0, 1.0)])
_bias = st.one_of(st.floats(-3.0, 3.0), st.sampled_from([0.0, -0.0, 1e-300, -1e-300, 1e300,
                                                         -1e300, 50.0, -50.0, 39.9, -40.1]))
_alpha = st.one_of(st.floats(0.0, 3.0), st.sampled_from([0.0, 1e-300, 1e300, 1.0]))
_rho = st.one_of(st.floats(-1.0, 1.0), st.sampled_from([1.0, -1.0, 0.0, 1.0 - 1e-13,
                                                        -1.0 + 1e-13, 0.924, -0.926]))


@given(_shape, _shape, _alpha, _alpha, _bias, _bias, _rho, st.booleans())
@settings(max_examples=300, deadline=None)
def test_branch_free_front_equals_one_pair_forms(s1, s2, al1, al2, be1, be2, rho, diag):
    """Every value of the branch-free front equals the one-pair form's bit for bit (also the
    sign of zeros), on random and degenerate pairs."""
    if diag:
        s2, al2, be2, rho = s1, al1, be1, 1.0
    omr, opr = 1.0 - rho, 1.0 + rho     # exact for the sampled ρ up to rounding; both ≥ 0
    ref, got = _front_both(s1[0], s1[1], al1, be1, s2[0], s2[1], al2, be2, rho, omr, opr, diag,
                           pl.RTOL, pl.ATOL)
    assert _same(ref, got), (ref, got)


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["dup", "anti", "tiny", "huge"]))
@settings(max_examples=12, deadline=None)
def test_batched_equals_pairwise_on_degenerate_states(seed, kind):
    """pl_self_moments (the batched loop with the branch-free front) against
    pl_self_moments_pairwise (one pair at a time) on states with duplicated units, antiparallel
    units, tiny biases (1e−300) and huge biases (|β| ≫ 40α): to rounding (1e−14 of each entry
    plus 1e−15 of the pair's RMS scale, as tests/popdyn/test_vmath.py)."""
    from popdyn._kernels.geometry import pair_geometry

    rng = np.random.default_rng(seed)
    m, d = 10, 4
    W = rng.standard_normal((m, d))
    be = rng.standard_normal(m) * 0.5
    if kind == "dup":
        W[1:4] = W[0]
        be[1:4] = be[0]
    elif kind == "anti":
        W[1:4] = -W[0]
        be[1:4] = -be[0]
    elif kind == "tiny":
        be[:] = 1e-300 * np.sign(be)
    else:
        be[::2] = 1e3 * np.sign(be[::2])
    al = np.linalg.norm(W, axis=1)
    ok = al > 0
    th = W / np.where(ok, al, 1.0)[:, None]
    p, q = np.full(m, 0.9), np.full(m, 0.1)
    R = th @ th.T
    OMR = np.empty((m, m))
    OPR = np.empty((m, m))
    pair_geometry(th, ok, th, ok, R, OMR, OPR)
    a = [np.full((m, m), np.nan) for _ in range(4)]
    b = [np.empty((m, m)) for _ in range(4)]
    pl.pl_self_moments(p, q, al, be, R, OMR, OPR, *a)
    pl.pl_self_moments_pairwise(p, q, al, be, R, OMR, OPR, *b)
    r0 = np.sqrt(np.abs(np.diag(b[0])))
    r1 = np.sqrt(np.abs(np.diag(b[1])))
    scales = (np.outer(r0, r0), np.outer(r1, r1),
              np.outer(r1, r0) * np.maximum(al, 1.0)[:, None], np.outer(r1, r0))
    for X, Y, sc in zip(a, b, scales):
        assert np.all(np.abs(X - Y) <= 1e-14 * np.abs(Y) + 1e-15 * sc + 1e-300)
    assert math.isfinite(float(np.sum(a[0])))


def test_antiparallel_units_sharing_a_kink_line():
    """Regression: two nearly antiparallel relu
    units whose kink lines coincide (w_2 = −w_1 + ε, b_2 = −b_1) made ``pl_self_moments`` raise
    ZeroDivisionError for about 30% of perturbations ε of 1e−12 to 1e−8.  The loss and gradient
    must be finite there and continuous in ε (L is C¹; |L(ε) − L(0)| ≤ |∇L|·|ε| + rounding)."""
    import popdyn
    S = popdyn.Student(2, 2, "relu", bias=True, intercept=False)
    T = popdyn.Teacher.network("relu", [1.0], [[1.0, 0.0]])
    P0 = popdyn.Params([1.0, 1.0], [[0.6, 0.8], [-0.6, -0.8]], [0.25, -0.25], 0.0)
    L0, G0 = popdyn.loss_and_grad(S, P0, T)
    gW = np.abs(np.asarray(G0.W)).max()
    rng = np.random.default_rng(20261201)
    for _ in range(40):
        e = 10.0 ** rng.uniform(-12, -8) * rng.standard_normal(2)
        P = popdyn.Params([1.0, 1.0], [[0.6, 0.8], [-0.6 + e[0], -0.8 + e[1]]], [0.25, -0.25], 0.0)
        L, G = popdyn.loss_and_grad(S, P, T)
        assert np.isfinite(L) and all(np.all(np.isfinite(np.asarray(x))) for x in (G.a, G.W, G.b))
        assert abs(L - L0) <= 2.0 * gW * np.abs(e).sum() + 1e-14


def _needs_avx2():
    """Skip on a host without AVX2: the packed-code tests below read the assembly numba compiles
    for this CPU, and without AVX2 LLVM has no ymm registers to vectorize on (the kernels are
    then scalar and still correct: every value test of this module holds)."""
    import llvmlite.binding as ll
    import pytest

    if not ll.get_host_cpu_features().get("avx2", False):
        pytest.skip("host CPU without AVX2: no packed ymm / zmm code to look for")


def test_front_loop_is_vectorized():
    """The pair loop's front (:func:`popdyn._kernels.plmoments._front_seg`) compiles to packed
    AVX2/AVX-512 code: its square roots and divisions as vsqrtpd / vdivpd on ymm or zmm
    registers (a fresh, uncached compile: numba cannot show the assembly of cached code).
    Numba's wrap-around of negative store indices, four selects on one condition emitted as
    branches, or one more store stream for LLVM's run-time alias checks each made LLVM keep
    the loop scalar; this test fails if that comes back."""
    import re

    import numba

    _needs_avx2()
    f = numba.njit(error_model="numpy")(pl._front_seg.py_func)
    m = 12
    al = np.linspace(0.5, 1.5, m)
    be = np.linspace(-0.3, 0.3, m)
    p, q = np.ones(m), np.zeros(m)
    UA = pl._unit_array(pl.pl_units(p, q, al, be), p, q, al, be)
    rho = np.linspace(-0.5, 0.5, m)
    FR = np.empty(pl._FR_N * pl._LD)
    f(UA, 0, UA, 1, rho, 1.0 - rho, 1.0 + rho, np.zeros(m, np.bool_), 0, 0, m - 1,
      pl.RTOL, pl.ATOL, FR)
    asm = f.inspect_asm(f.signatures[0])
    packed = r"\s+[^\n]*%[yz]mm"
    assert re.search(r"vsqrtpd" + packed, asm), "the front's square roots are not packed"
    assert re.search(r"vdivpd" + packed, asm), "the front's divisions are not packed"
    # the same values as the reference compile
    FR2 = np.empty_like(FR)
    pl._front_seg(UA, 0, UA, 1, rho, 1.0 - rho, 1.0 + rho, np.zeros(m, np.bool_), 0, 0, m - 1,
                  pl.RTOL, pl.ATOL, FR2)
    idx = (np.arange(pl._FR_N)[:, None] * pl._LD + np.arange(m - 1)[None, :]).ravel()
    assert np.array_equal(FR[idx], FR2[idx])


def test_price_batch_is_vectorized():
    """The Price node sums (:func:`popdyn._kernels.plmoments._price_batch`, the largest stage of
    the biased step) compile to packed code: the powers of two of
    :func:`popdyn._kernels.vmath.exp_inline` built from exponent bits as a packed shift
    (vpsllq) and the division 1/((1 − t)(1 + t)) as a packed vdivpd, on ymm or zmm registers (a
    fresh, uncached compile).  Before the bitcast the powers of two were table reads, which
    LLVM turned into gathers and then kept the node loop scalar on AMD Zen 3; this test fails
    if the node loop goes scalar again.  And the fresh compile gives the bits of the cached
    kernel."""
    import re

    import numba

    _needs_avx2()
    f = numba.njit(error_model="numpy")(pl._price_batch.py_func)
    n = 11
    x = np.linspace(0.1, 1.0, n)
    y = np.linspace(-1.0, 0.5, n)
    rt = np.linspace(-0.5, 0.5, n)
    a0 = np.zeros(n)
    out = np.empty((n, 7))
    f(pl._GL6_U, pl._GL6_W, x, y, rt, a0, rt.copy(), out)
    asm = f.inspect_asm(f.signatures[0])
    packed = r"\w*\s+[^\n]*%[yz]mm"
    assert re.search(r"vpsllq" + packed, asm), "exp_inline's powers of two are not packed"
    assert re.search(r"vdivpd" + packed, asm), "the node loop's division is not packed"
    out2 = np.empty_like(out)
    pl._price_batch(pl._GL6_U, pl._GL6_W, x, y, rt, a0, rt.copy(), out2)
    assert np.array_equal(out, out2)
