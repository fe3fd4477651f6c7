"""The bias-free fast path (popdyn._kernels.arccos) against the general PL kernels
and against the independent mpmath reference tests/_mpref.py.

* hypothesis: random bias-free sets (relu and leaky relu, duplicated, antiparallel, scaled and
  nearly parallel rows) -- the arc-cosine closed forms agree with the general evaluators
  (``pl_self_moments_pairwise``: one pair at a time through the bivariate normal machinery,
  which the fast path never enters) within 16 ulp of each pair's scale;
* the population loss and gradient of a bias-free student against a bias-free relu teacher
  network against tests/_mpref.py (2-D Gaussian quadrature at 40 digits) within 1e−14.
"""
import math
import os
import sys

import mpmath as mp
import numpy as np
from hypothesis import example, given, settings, strategies as st

import popdyn
from popdyn._kernels import plmoments as pl
from popdyn._moments import UnitSet, geometry

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _mpref  # noqa: E402  (independent of popdyn)

EPS = 2.220446049250313e-16
TOLS = (pl.RTOL, pl.ATOL, pl.QTOL, pl.MAXINT)


def _units(W, slope):
    al = np.sqrt(np.einsum("ij,ij->i", W, W))
    m = W.shape[0]
    return UnitSet("pl", al, np.zeros(m), W / al[:, None], np.full(m, 1.0 - slope),
                   np.full(m, slope))


def _set(seed, m, d, mode):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((m, d))
    if m >= 4 and mode:
        W[1] = 2.5 * W[0]                                  # duplicated direction
        W[2] = -0.7 * W[0]                                 # antiparallel
        W[3] = W[0] + 1e-9 * rng.standard_normal(d)        # 1 − ρ ~ 1e−18
    return W


def _both(u):
    m = u.n
    R, OMR, OPR = geometry(u, u)
    fast = [np.empty((m, m)) for _ in range(4)]
    gen = [np.empty((m, m)) for _ in range(4)]
    pl.pl_self_moments(u.p, u.q, u.al, u.be, R, OMR, OPR, *fast, *TOLS)
    pl.pl_self_moments_pairwise(u.p, u.q, u.al, u.be, R, OMR, OPR, *gen, *TOLS)
    return fast, gen


def _scale(u, C, B):
    """Cauchy–Schwarz scales of C, B, A, D entries: √(E[σᵢ²]E[σⱼ²]) etc."""
    c = np.sqrt(np.diag(C))
    b = np.sqrt(np.diag(B))
    sC = np.outer(c, c)
    sB = np.outer(b, b)
    sA = np.outer(np.abs(u.p), c)          # |E[α σ'' σ]| <= |p| φ(0) E[σ²]^{1/2}·…
    sD = np.outer(b, c)
    return sC, sB, sA, sD


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(1, 7), st.integers(2, 6),
       st.sampled_from([0.0, 0.01, 0.3, -0.5]), st.booleans())
@example(3, 6, 4, 0.0, True)
@example(4, 5, 3, 0.3, True)
def test_fast_path_equals_general_path(seed, m, d, slope, mode):
    u = _units(_set(seed, m, d, mode), slope)
    fast, gen = _both(u)
    scales = _scale(u, gen[0], gen[1])
    for name, f, g, s in zip("CBAD", fast, gen, scales):
        err = np.abs(f - g)
        assert np.all(err <= 16 * EPS * s + 1e-300), (name, float(np.max(err / s)))


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(1, 5), st.integers(1, 4), st.integers(2, 5))
def test_fast_pair_path_equals_general_path(seed, m1, m2, d):
    """Set 1 against set 2 equals the off-diagonal block of the general self moments of the
    stacked set."""
    rng = np.random.default_rng(seed)
    W1, W2 = rng.standard_normal((m1, d)), rng.standard_normal((m2, d))
    u1, u2, u12 = _units(W1, 0.1), _units(W2, 0.1), _units(np.vstack([W1, W2]), 0.1)
    R, OMR, OPR = geometry(u1, u2)
    fast = [np.empty((m1, m2)) for _ in range(4)]
    pl.pl_pair_moments(u1.p, u1.q, u1.al, u1.be, u2.p, u2.q, u2.al, u2.be, R, OMR, OPR, *fast,
                       *TOLS)
    R, OMR, OPR = geometry(u12, u12)
    n = m1 + m2
    gen = [np.empty((n, n)) for _ in range(4)]
    pl.pl_self_moments_pairwise(u12.p, u12.q, u12.al, u12.be, R, OMR, OPR, *gen, *TOLS)
    scales = _scale(u12, gen[0], gen[1])
    for name, f, g, s in zip("CBAD", fast, gen, scales):
        err = np.abs(f - g[:m1, m1:])
        assert np.all(err <= 16 * EPS * s[:m1, m1:] + 1e-300), name


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(1, 80), st.integers(2, 9),
       st.sampled_from([0.0, 0.01, 0.3, -0.5]), st.booleans())
@example(5, 70, 6, 0.3, True)
def test_row_vectorized_self_moments_bit_identical_to_pair_loop(seed, m, d, slope, mode):
    """The strip/row-vectorized self_moments (blocked lower triangle, several strips for
    m > 32) gives the bits of the one-pair loop (same operations), every entry."""
    from popdyn._kernels import arccos as ac

    u = _units(_set(seed, m, d, mode), slope)
    R, OMR, OPR = geometry(u, u)
    fast = [np.full((m, m), np.nan) for _ in range(4)]
    ref = [np.full((m, m), np.nan) for _ in range(4)]
    ac.self_moments(u.p, u.q, u.al, R, OMR, OPR, *fast)
    ac.self_moments_pairwise(u.p, u.q, u.al, R, OMR, OPR, *ref)
    for name, f, g in zip("CBAD", fast, ref):
        assert np.array_equal(f, g), name


def test_bias_free_loss_and_grad_against_mpmath():
    rng = np.random.default_rng(7)
    d, m = 3, 3
    W = rng.standard_normal((m, d)) * 0.7
    W[2] = -1.3 * W[0]                                     # antiparallel pair
    a = rng.standard_normal(m)
    U = rng.standard_normal((2, d)) * 0.8
    V = np.array([1.1, -0.6])
    S = popdyn.Student(d, m, activation="leaky_relu", negative_slope=0.25, bias=False)
    p = popdyn.Params(a, W, np.zeros(m), 0.15)
    T = popdyn.Teacher.network("relu", V, U)
    L, g = popdyn.objective.loss_and_grad(S, p, T)
    case = {"activation": "leaky_relu", "negative_slope": 0.25, "W": W.tolist(), "a": a.tolist(),
            "b": [0.0] * m, "c": 0.15,
            "teacher": {"kind": "network", "activation": "relu", "V": V.tolist(),
                        "U": U.tolist(), "bias": [0.0, 0.0]}}
    ref = _mpref.reference_mp(case, dps=30)
    with mp.workdps(40):
        scale = abs(ref["loss"]) + 1
        assert abs(mp.mpf(L) - ref["loss"]) <= 1e-14 * scale
        gW = ref["grad"]["W"]
        ga = ref["grad"]["a"]
        gs = max(max(abs(x) for row in gW for x in row), max(abs(x) for x in ga))
        for j in range(m):
            assert abs(mp.mpf(float(g.a[j])) - ga[j]) <= 1e-14 * gs
            for k in range(d):
                assert abs(mp.mpf(float(g.W[j, k])) - gW[j][k]) <= 1e-14 * gs


def test_atan2q_within_3_ulp_of_mpmath():
    """The first-quadrant atan2 of the fast path against mpmath at 30 digits: random ratios over
    the whole range, both reduction boundaries (tan π/8, 1) and the axes."""
    from popdyn._kernels.arccos import atan2q

    rng = np.random.default_rng(0)
    y = np.concatenate([rng.uniform(0, 1, 4000), 10.0 ** rng.uniform(-300, 0, 1000),
                        np.full(500, 0.41421356237309503) * (1 + rng.uniform(-1e-6, 1e-6, 500)),
                        1 + rng.uniform(-1e-6, 1e-6, 500), [0.0, 1.0, 1e-308, 5e-324]])
    x = np.concatenate([rng.uniform(0, 1, 4000), np.ones(1000), np.ones(500), np.ones(500),
                        [1.0, 0.0, 1.0, 1.0]])
    swap = rng.random(x.size) < 0.5
    x, y = np.where(swap, y, x), np.where(swap, x, y)
    worst = 0.0
    with mp.workdps(30):
        for a, b in zip(y, x):
            v = atan2q(float(a), float(b))
            ref = mp.atan2(mp.mpf(float(a)), mp.mpf(float(b)))
            ulp = max(math.ulp(float(ref)), 5e-324)
            worst = max(worst, float(abs(mp.mpf(v) - ref)) / ulp)
    assert worst <= 3.0, worst
