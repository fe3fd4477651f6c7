"""Certified critical points of the bias-free relu population loss (certify.critical).

References, all outside certify.critical: an mpmath quadrature at 40 digits of the d = 2 loss
(L = ½E[h²] = (1/2π)∫₀^{2π} h(cos φ, sin φ)² dφ for a degree-1 homogeneous residual h, since
E[r²] = 2 for x ∈ R² Gaussian), split at every kink; finite differences of popdyn's float
population loss (gradient and Hessian in the reduced coordinates u_j = |a_j| w_j)."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import certify
import popdyn
from certify.critical import (_ArbB, _FloatB, _lgh, _problem, critical_point, from_reduced,
                              split_is_local_min)

SPREAD_U = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
T3 = popdyn.Teacher.network("relu", [1.0, 1.0, 1.0], SPREAD_U)
S3 = popdyn.Student(2, 3, "relu", bias=False, intercept=False)
# starts (exact decimal inputs; critical_point polishes them by Newton in float and Arb)
SPURIOUS = np.array([1.1758, 0.6334, 0.0, -0.3222, -1.1758, 0.6334])
SADDLE = np.array([0.9349, 0.901, -1.2307, 0.3649, 0.2603, -0.3192])


def _params(x, signs=(1, 1, 1), S=S3):
    return from_reduced(S, x, list(signs))


def _mp_loss_2d(U, signs, alpha, Z, v=None, c=0.0, dps=40):
    """½E[(f − y)²] in d = 2 by mpmath quadrature over the angle (module docstring); with an
    intercept c, E[(h + c)²] = (1/π)∫h² dφ + 2c E[r] (1/2π)∫h dφ + c², E[r] = √(π/2)."""
    with mp.workdps(dps):
        U = [[mp.mpf(float(t)) for t in row] for row in U]
        Z = [[mp.mpf(float(t)) for t in row] for row in Z]
        vv = [mp.mpf(float(t)) for t in v] if v is not None else [mp.mpf(0)] * 2

        def h1(phi):
            co, si = mp.cos(phi), mp.sin(phi)
            out = vv[0] * co + vv[1] * si
            for e, u in zip(signs, U):
                out += e * max(u[0] * co + u[1] * si, 0)
            for a, z in zip(alpha, Z):
                out -= a * max(z[0] * co + z[1] * si, 0)
            return out

        kinks = set()
        for u in list(U) + list(Z):
            base = mp.atan2(u[1], u[0])
            for k in (-1, 1, 3):
                kinks.add(float((base + k * mp.pi / 2) % (2 * mp.pi)))
        pts = [mp.mpf(0)] + sorted(mp.mpf(t) for t in kinks) + [2 * mp.pi]
        L = mp.quad(lambda t: h1(t) ** 2, pts) / (2 * mp.pi)
        if c:
            cc = mp.mpf(float(c))
            mean = mp.sqrt(mp.pi / 2) * mp.quad(h1, pts) / (2 * mp.pi)
            L += cc * mean + cc * cc / 2
        return L


def test_spurious_minimum_certified_and_loss_encloses_mpmath():
    res = critical_point(S3, _params(SPURIOUS), T3, radius=1e-4)
    assert res.verdict == "strict_local_min", res.reason
    assert res.loss.is_rigorous and res.min_eig.lo > 0.03
    assert res.loss.lo > 0.017          # above the global minimum 0
    U = res.center.reshape(3, 2)
    ref = _mp_loss_2d(U, [1, 1, 1], [1, 1, 1], SPREAD_U)
    # L(x̂) − L(x*) = O(|x̂ − x*|²) ≤ 1e−30 here: far below the bracket width
    assert res.loss.contains(ref), (res.loss, ref)
    assert res.box.contains(res.center) and res.enclosure.lo.shape == (6,)
    assert "reduced coordinates" in res.coordinates


def test_tight_box_default_radius():
    res = critical_point(S3, _params(SPURIOUS), T3)
    assert res.verdict == "strict_local_min"
    assert res.loss.width < 1e-15 and res.radius <= 1e-7


def test_global_minimum_loss_contains_zero():
    res = critical_point(S3, popdyn.Params(np.ones(3), SPREAD_U, np.zeros(3)), T3)
    assert res.verdict == "strict_local_min", res.reason     # antiparallel units are allowed
    assert res.loss.lo == 0.0 and res.loss.hi < 1e-20


def test_known_saddle_is_certified_saddle():
    res = critical_point(S3, _params(SADDLE), T3, radius=1e-5)
    assert res.verdict == "saddle", res.reason
    assert res.hessian_eigs[0].hi < 0 < res.hessian_eigs[-1].lo
    ref = _mp_loss_2d(res.center.reshape(3, 2), [1, 1, 1], [1, 1, 1], SPREAD_U)
    assert res.loss.contains(ref)


def test_wrong_box_is_refused():
    x = SPURIOUS.copy()
    x[0] += 1e-3
    res = critical_point(S3, _params(x), T3, radius=1e-6, refine=False)
    assert res.verdict == "undecided" and res.loss is None
    assert "no critical point in the box" in res.reason
    # a box reaching u = 0 is refused with the reason
    res = critical_point(S3, _params(SPURIOUS), T3, radius=0.5)
    assert res.verdict == "undecided" and "u = 0" in res.reason
    # two parallel student units (a split): refused
    xs = np.array([0.6, 0.3, 0.6, 0.3, -1.0, 0.5])
    res = critical_point(S3, _params(xs), T3, refine=False)
    assert res.verdict == "undecided" and "parallel" in res.reason


def test_box_too_wide_says_so():
    res = critical_point(S3, _params(SPURIOUS), T3, radius=1e-2)
    assert res.verdict == "undecided"
    assert "shrink the box" in res.reason


@pytest.mark.parametrize("skip,intercept", [(False, False), (True, False), (True, True)])
def test_arb_loss_ball_contains_mpmath_quadrature(skip, intercept):
    """The Arb closed-form loss at an exact float point (any point, not only critical ones)
    contains the 40-digit quadrature value, with the skip and the intercept."""
    rng = np.random.default_rng(11 + skip + 2 * intercept)
    m = 3
    S = popdyn.Student(2, m, "relu", bias=False, intercept=intercept, skip=skip)
    Z = rng.standard_normal((2, 2))
    T = popdyn.Teacher.network("relu", [1.0, 0.4], Z)
    signs = [1.0, -1.0, 1.0]
    p = popdyn.Params(np.array(signs) * rng.uniform(0.5, 1.5, m), rng.standard_normal((m, 2)),
                      np.zeros(m), 0.3 if intercept else 0.0,
                      0.4 * rng.standard_normal(2) if skip else None)
    prob, x = _problem(S, p, T)
    from certify import _arb as A
    from certify.bracket import Bracket

    with A.workprec(128):
        B = _ArbB()
        L, _, _ = _lgh(B.arr(list(x)), prob, B, hess=False)
        Lb = Bracket.from_arb(L)
    U = x[:2 * m].reshape(m, 2)
    v = x[2 * m:2 * m + 2] if skip else None
    ref = _mp_loss_2d(U, signs, [1.0, 0.4], Z, v=v, c=x[-1] if intercept else 0.0)
    assert Lb.contains(ref) and Lb.width < 1e-15 * max(1.0, abs(Lb.mid)), (Lb, ref)


@pytest.mark.parametrize("skip,intercept", [(False, False), (True, False), (False, True),
                                            (True, True)])
def test_arb_gradient_hessian_match_popdyn_finite_differences(skip, intercept):
    rng = np.random.default_rng(7 + 2 * skip + intercept)
    d, m = 3, 3
    S = popdyn.Student(d, m, "relu", bias=False, intercept=intercept, skip=skip)
    T = popdyn.Teacher.network("relu", [1.0, 0.6, 1.3], rng.standard_normal((3, d)))
    W = rng.standard_normal((m, d))
    W *= (rng.uniform(0.7, 1.5, m) / np.linalg.norm(W, axis=1))[:, None]   # |u_j| not tiny
    a = rng.uniform(0.7, 1.3, m) * np.where(rng.random(m) < 0.5, -1.0, 1.0)
    p = popdyn.Params(a, W, np.zeros(m),
                      0.2 if intercept else 0.0, 0.3 * rng.standard_normal(d) if skip else None)
    prob, x = _problem(S, p, T)
    from certify import _arb as A

    with A.workprec(128):
        B = _ArbB()
        L, G, H = _lgh(B.arr(list(x)), prob, B, hess=True)
        Lm = float(L.mid())
        Gm = np.array([float(g.mid()) for g in G])
        Hm = np.array([[float(h.mid()) for h in row] for row in H])

    def f(xx):
        return popdyn.population_loss(S, from_reduced(S, xx, prob.signs), T, rtol=1e-13)

    assert Lm == pytest.approx(f(x), rel=1e-12, abs=1e-14)
    P = len(x)
    E = np.eye(P)
    h1 = 1e-5
    Gfd = np.array([(f(x + h1 * e) - f(x - h1 * e)) / (2 * h1) for e in E])
    np.testing.assert_allclose(Gm, Gfd, atol=2e-8)
    h2 = 1e-4                  # truncation ~h²|u|⁻³, rounding ~1e-16 L/h²: both ≤ 1e-7
    Hfd = np.empty((P, P))
    for i in range(P):
        for j in range(i, P):
            ei, ej = h2 * E[i], h2 * E[j]
            Hfd[i, j] = Hfd[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej)
                                     + f(x - ei - ej)) / (4 * h2 * h2)
    np.testing.assert_allclose(Hm, Hfd, atol=2e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 31 - 1), st.floats(0.0, 2 * math.pi))
def test_rotation_invariance_and_symmetry(seed, ang):
    """L is invariant and ∇L, ∇²L equivariant under a joint rotation of units and teacher
    (float closed forms); the Hessian is symmetric."""
    rng = np.random.default_rng(seed)
    m, k = 3, 2
    U = rng.standard_normal((m, 2))
    Z = rng.standard_normal((k, 2))
    signs = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    Q = np.array([[math.cos(ang), -math.sin(ang)], [math.sin(ang), math.cos(ang)]])
    from certify.critical import Problem

    p1 = Problem(signs, np.array([1.0, 0.5]), Z, False, False)
    p2 = Problem(signs, np.array([1.0, 0.5]), Z @ Q.T, False, False)
    L1, G1, H1 = _lgh(U.ravel(), p1, _FloatB, hess=True, refuse_coincident=False)
    L2, G2, H2 = _lgh((U @ Q.T).ravel(), p2, _FloatB, hess=True, refuse_coincident=False)
    R = np.kron(np.eye(m), Q)
    assert L2 == pytest.approx(L1, rel=1e-12, abs=1e-13)
    np.testing.assert_allclose(G2, R @ G1, atol=1e-11)
    np.testing.assert_allclose(H2, R @ H1 @ R.T, atol=1e-10)
    np.testing.assert_allclose(H1, H1.T, atol=1e-13)


def test_split_embedding_certificate():
    res = critical_point(S3, _params(SPURIOUS), T3, radius=1e-4)
    out = [split_is_local_min(S3, _params(SPURIOUS), T3, res, i, eta=1e-3, n_arcs=64)
           for i in range(3)]
    # unit 1 (the one at −π/2, whose kink line carries teacher units) has h > 0 there; the
    # others have h < 0 on their kink lines (splitting them gives saddles)
    assert out[1]["certified"] and out[1]["min_margin"] > 0.1
    for i in (0, 2):
        assert not out[i]["certified"] and out[i]["not_min"] and out[i]["max_margin"] < 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="bias-free relu"):
        critical_point(popdyn.Student(2, 3, "relu"), _params(SPURIOUS), T3)
    with pytest.raises(ValueError, match="params.a"):
        critical_point(S3, popdyn.Params([1.0, 0.0, 1.0], np.eye(3)[:, :2], np.zeros(3)), T3)
    with pytest.raises(ValueError, match="radius"):
        critical_point(S3, _params(SPURIOUS), T3, radius=-1.0)
    with pytest.raises(ValueError, match="prec"):
        critical_point(S3, _params(SPURIOUS), T3, prec=1)
    with pytest.raises(ValueError, match="teacher"):
        critical_point(S3, _params(SPURIOUS), popdyn.Teacher.network("tanh", [1.0], [[1.0, 0.0]]))
    assert certify.critical_point is critical_point
