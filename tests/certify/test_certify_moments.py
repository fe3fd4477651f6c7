"""Certified pair moments (certify.moments) against the independent mpmath reference
(tests/certify/_ref.py, 2-D Gaussian quadrature at 62 digits), over random and degenerate
geometry: duplicated, antiparallel and near-parallel neurons (1 − ρ ≈ 1e−12 and ≈ 1e−25),
w = 0, tiny |w| with |b| = 10|w|, far thresholds.  Zero violations is the only acceptable count.
"""
import numpy as np
from hypothesis import example, given, settings, strategies as st

import popdyn
from certify import Bracket
from certify import _arb as A
from certify.moments import certified_moments, clear_cache

import _ref as R

MODES = ("random", "dup", "anti", "near6", "near12", "zero", "tiny", "far", "const", "huge")


def _second(mode, w1, b1, w2, b2):
    n1 = float(np.linalg.norm(w1))
    e = np.zeros_like(w1)
    e[-1] = 1.0
    if mode == "dup":
        return w1.copy(), b1
    if mode == "anti":
        return -w1, b2
    if mode == "near6":
        return w1 + 1.4e-6 * n1 * e, b2
    if mode == "near12":
        return w1 + 1e-12 * n1 * e, b1
    if mode == "zero":
        return np.zeros_like(w1), b2
    if mode == "tiny":
        return 1e-8 * w1 / n1, -1e-7 if b2 < 0 else 1e-7
    if mode == "far":
        return w2, -8.0 * float(np.linalg.norm(w2))
    if mode == "const":                 # nearly constant: |w| = 1e-9 beside b of order one
        return 1e-9 * w2 / float(np.linalg.norm(w2)), 0.6 if b2 >= 0 else -0.6
    if mode == "huge":                  # threshold 1e4 standard deviations out
        return w2, -1e4 * float(np.linalg.norm(w2))
    return w2, b2


vec = st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3).filter(
    lambda v: float(np.linalg.norm(v)) > 0.05)


@settings(max_examples=10)
@given(vec, st.floats(-2, 2), vec, st.floats(-2, 2), st.sampled_from(MODES),
       st.sampled_from(["relu", "leaky_relu"]))
@example([0.6, -0.2, 0.3], 0.0, [0.1, 0.5, -0.4], 0.0, "near12", "relu")
@example([0.6, -0.2, 0.3], -0.3, [0.1, 0.5, -0.4], 0.4, "anti", "leaky_relu")
@example([0.6, -0.2, 0.3], 0.2, [0.1, 0.5, -0.4], -0.4, "tiny", "relu")
@example([0.6, -0.2, 0.3], 0.2, [0.1, 0.5, -0.4], 0.4, "const", "leaky_relu")
@example([0.6, -0.2, 0.3], 0.2, [0.1, 0.5, -0.4], 0.4, "huge", "relu")
def test_pair_moments_enclose_reference(w1, b1, w2, b2, mode, act):
    w1, w2 = np.array(w1), np.array(w2)
    w2, b2 = _second(mode, w1, b1, w2, b2)
    S = popdyn.Student(d=3, m=2, activation=act, negative_slope=0.1)
    p = popdyn.Params([1.0, -1.0], np.vstack([w1, w2]), [b1, b2], 0.0)
    clear_cache()
    CM = certified_moments(S, p, None, prec=128)
    fa = R.activation(act, 0.1)
    fd = R.derivative(fa)
    with R.ctx.workdps(62):
        refC = R.pair(fa, w1, b1, fa, w2, b2)
        refB = R.pair(fd, w1, b1, fd, w2, b2)
        refm = R.mean(fa, w2, b2)
    with A.workprec(128):
        bc = Bracket.from_arb(CM.C[0, 1])
        bb = Bracket.from_arb(CM.B[0, 1])
        bm = Bracket.from_arb(CM.mu0[1, 0])
    assert bc.contains(refC), (mode, CM.C[0, 1], refC)
    assert bb.contains(refB), (mode, CM.B[0, 1], refB)
    assert bm.contains(refm)
    # narrow: absolute width relative to the Cauchy-Schwarz scale of the pair
    with A.workprec(128):
        scale = (Bracket.from_arb(CM.C[0, 0]).hi * Bracket.from_arb(CM.C[1, 1]).hi) ** 0.5
    assert bc.width <= 1e-12 * max(scale, abs(float(refC))) + 1e-300


LINKS = ("h2", "h3+0.3h2", "damped_cubic:0.5", "sin", "gaussian_bump", "abs",
         "mixture(0.5*h3, 1.5*relu)")


@settings(max_examples=6)
@given(vec, st.floats(-2, 2), st.sampled_from(LINKS), st.sampled_from(["relu", "leaky_relu"]),
       st.sampled_from(["random", "parallel", "anti"]))
@example([0.3, 0.4, -0.2], -0.5, "damped_cubic:0.5", "leaky_relu", "parallel")
@example([0.0, 1.0, 3.2957391870541008e-158], 0.0, "damped_cubic:0.5", "relu", "random")
def test_student_teacher_moment_encloses_reference(w, b, link, act, mode):
    w = np.array(w)
    U = np.array([[0.6, 0.0, 0.8]])
    if mode == "parallel":
        w = 0.7 * U[0]
    elif mode == "anti":
        w = -1.3 * U[0]
    T = popdyn.Teacher.additive(link, U)
    S = popdyn.Student(d=3, m=1, activation=act, negative_slope=0.1)
    p = popdyn.Params([1.0], w[None, :], [b], 0.0)
    clear_cache()
    CM = certified_moments(S, p, T, prec=128)
    with R.ctx.workdps(62):
        ref = R.pair(R.activation(act, 0.1), w, b, R.link(link), U[0], 0.0)
    with A.workprec(128):
        assert Bracket.from_arb(CM.Ct[0, 0]).contains(ref), (link, CM.Ct[0, 0], ref)


@settings(max_examples=25)
@given(st.integers(0, 10 ** 6), st.sampled_from([2, 3, 8]), st.sampled_from(["relu", "leaky_relu"]),
       st.floats(0.05, 3.0))
@example(1, 3, "relu", 1.0)
def test_float_mehler_path_contains_arb_path(seed, d, act, scale):
    """The float64 Mehler path (prec <= 128) must contain the all-Arb closed forms (prec 192,
    checked against mpmath above): both are enclosures of the same numbers."""
    rng = np.random.default_rng(seed)
    m = 7
    W = rng.standard_normal((m, d)) * scale
    b = rng.standard_normal(m) * scale * rng.choice([0.0, 0.3, 3.0])
    S = popdyn.Student(d=d, m=m, activation=act, negative_slope=0.2)
    p = popdyn.Params(np.ones(m), W, b, 0.0)
    clear_cache()
    fast = certified_moments(S, p, None, prec=128)
    clear_cache()
    full = certified_moments(S, p, None, prec=192)
    with A.workprec(192):
        for i in range(m):
            for j in range(m):
                for M1, M2 in ((fast.C, full.C), (fast.B, full.B)):
                    assert M1[i, j].contains(M2[i, j]), (i, j, M1[i, j], M2[i, j])
