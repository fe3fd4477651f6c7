"""Tests of the ``skip_empirical_transfer`` check and of popdyn.skip_empirical.

References are independent of the code under test: an empirical loss written here in mpmath
(50 digits) and differentiated by central differences; Monte Carlo over independent data sets
with z-scores against popdyn's exact population gradient (a separate code path: Gaussian
moments) and a per-sample covariance written here; closed forms of W₁ on the circle (a point
mass: π/2; two antipodal equal atoms: π/4) and an mpmath quadrature of its defining integral.
"""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import popdyn
from popdyn.skip_empirical import (circle_w1, data_accuracy, empirical_loss,
                                    empirical_loss_and_grad, gradient_descent)
from proofs_checks import VERDICTS, Verdict, run_check
from proofs_checks import skip_empirical_transfer as SE


# ---------------------------------------------------------------------------- mpmath reference
def _mp_loss(theta, X, y, m, d, s, act, bias, intercept, skip):
    """½ mean (s Σ a_j act(w_j·x + b_j) + v·x + c − y)², θ = (a, W row-major, b, c, v)."""
    a = theta[:m]
    W = [theta[m + j * d:m + (j + 1) * d] for j in range(m)]
    o = m + m * d
    b = theta[o:o + m] if bias else [mp.mpf(0)] * m
    o += m if bias else 0
    c = theta[o] if intercept else mp.mpf(0)
    o += 1 if intercept else 0
    v = theta[o:o + d] if skip else [mp.mpf(0)] * d
    tot = mp.mpf(0)
    for x, yy in zip(X, y):
        f = mp.fsum(a[j] * act(mp.fsum(W[j][k] * x[k] for k in range(d)) + b[j])
                    for j in range(m))
        f = s * f + mp.fsum(v[k] * x[k] for k in range(d)) + c - yy
        tot += f * f
    return tot / (2 * len(X))


def _flat(p, student):
    out = [p.a, p.W.ravel()]
    if student.bias:
        out.append(p.b)
    if student.intercept:
        out.append([p.c])
    if student.skip:
        out.append(p.v)
    return np.concatenate(out)


@pytest.mark.parametrize("activation,bias,intercept,scaling", [
    ("relu", False, False, "standard"),          # the check's student
    ("leaky_relu", True, True, "mean_field"),
])
def test_empirical_gradient_against_mpmath(activation, bias, intercept, scaling):
    d, m, n = 2, 3, 7
    rng = np.random.default_rng(11)
    S = popdyn.Student(d, m, activation, bias=bias, intercept=intercept, scaling=scaling,
                       skip=True, negative_slope=0.1)
    p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)),
                      rng.normal(size=m) if bias else np.zeros(m),
                      0.3 if intercept else 0.0, rng.normal(size=d))
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    L, g = empirical_loss_and_grad(S, p, X, y)
    slope = mp.mpf(0.1) if activation == "leaky_relu" else mp.mpf(0)
    act = lambda t: t if t > 0 else slope * t          # noqa: E731
    mp.mp.dps = 50
    try:
        Xm = [[mp.mpf(float(v)) for v in row] for row in X]
        ym = [mp.mpf(float(v)) for v in y]
        th = [mp.mpf(float(v)) for v in _flat(p, S)]
        args = (Xm, ym, m, d, mp.mpf(S.s), act, bias, intercept, True)
        L_ref = _mp_loss(th, *args)
        h = mp.mpf("1e-25")
        ref = []
        for i in range(len(th)):
            tp, tm = list(th), list(th)
            tp[i] += h
            tm[i] -= h
            ref.append((_mp_loss(tp, *args) - _mp_loss(tm, *args)) / (2 * h))
    finally:
        mp.mp.dps = 15
    ref = np.array([float(r) for r in ref])
    got = _flat(g, S)
    assert abs(L - float(L_ref)) <= 1e-13 * float(L_ref)
    assert np.max(np.abs(got - ref)) <= 1e-10 * np.max(np.abs(ref))
    assert abs(empirical_loss(S, p, X, y) - L) == 0.0


def test_fixed_fields_have_zero_gradient_and_bad_input():
    S = popdyn.Student(2, 2, "relu", bias=False, intercept=False, skip=False)
    p = S.init(0, 1.0)
    X = np.random.default_rng(0).normal(size=(5, 2))
    _, g = empirical_loss_and_grad(S, p, X, np.ones(5))
    assert np.all(g.b == 0) and g.c == 0 and np.all(g.v == 0)
    with pytest.raises(ValueError, match="`y`"):
        empirical_loss_and_grad(S, p, X, np.ones(4))
    with pytest.raises(ValueError, match="`X`"):
        empirical_loss_and_grad(S, p, np.ones((5, 3)), np.ones(5))
    with pytest.raises(ValueError, match="`lr`"):
        gradient_descent(S, p, X, np.ones(5), lr=-1.0, max_updates=3)


# ---------------------------------------------------------------------------- n^{-1/2}
def test_gradient_deviation_scales_like_inverse_sqrt_n():
    """Δ = ∇L_n − ∇L at a fixed state: E Δ = 0 and n E|Δ|² = tr Σ for every n (Monte Carlo,
    z-scores; ∇L is popdyn's exact population gradient, Σ the per-sample covariance)."""
    t, Vd, T = SE.teacher_data("pair_acute")
    S = popdyn.Student(2, 2, "relu", bias=False, intercept=False, skip=True)
    p = popdyn.Params([0.8, 0.5], [[0.9, 0.2], [-0.1, 1.1]], [0.0, 0.0], 0.0, [0.2, -0.3])
    _, gp = popdyn.loss_and_grad(S, p, T)
    g_pop = _flat(gp, S)
    rng = np.random.default_rng(2024)

    def per_sample(X):                      # written here, independently of the module
        Z = X @ p.W.T
        r = np.maximum(Z, 0) @ p.a + X @ p.v - T(X)
        ga = np.maximum(Z, 0) * r[:, None]
        gW = ((Z > 0) * r[:, None] * p.a)[:, :, None] * X[:, None, :]
        return np.concatenate([ga, gW.reshape(len(X), -1), X * r[:, None]], axis=1)

    G = per_sample(rng.standard_normal((200_000, 2)))
    dev2 = np.sum((G - g_pop) ** 2, axis=1)
    trS, se_trS = dev2.mean(), dev2.std() / math.sqrt(len(dev2))
    reps = 200
    means = []
    for n in (100, 400, 1600, 6400):
        D = np.empty((reps, g_pop.size))
        for k in range(reps):
            X = rng.standard_normal((n, 2))
            D[k] = _flat(empirical_loss_and_grad(S, p, X, T(X))[1], S) - g_pop
        z_mean = D.mean(0) / (D.std(0, ddof=1) / math.sqrt(reps))
        assert np.all(np.abs(z_mean) < 4.5), (n, z_mean)
        q = n * np.sum(D ** 2, axis=1)
        z = (q.mean() - trS) / math.hypot(q.std(ddof=1) / math.sqrt(reps), se_trS)
        assert abs(z) < 4.5, (n, q.mean(), trS, z)
        means.append(math.sqrt(np.mean(np.sum(D ** 2, axis=1))))
    slope = np.polyfit(np.log([100, 400, 1600, 6400]), np.log(means), 1)[0]
    assert abs(slope + 0.5) < 0.05, slope


# ---------------------------------------------------------------------------- W1 on the circle
def _mp_w1(angles, weights):
    """min_α ∫_0^{2π} |F_ν(θ) − θ/2π − α| dθ by mpmath quadrature and a golden-section search."""
    o = np.argsort(angles)
    th = [mp.mpf(float(a)) for a in np.asarray(angles)[o]]
    w = [mp.mpf(float(x)) for x in np.asarray(weights)[o]]
    tot = mp.fsum(w)
    cut = [mp.mpf(0)] + th + [2 * mp.pi]
    F = [mp.fsum(w[:i]) / tot for i in range(len(w) + 1)]

    def J(alpha):
        out = []
        for i in range(len(F)):
            pts = [cut[i], cut[i + 1]]
            k = 2 * mp.pi * (F[i] - alpha)           # the kink of |F_i − s/2π − α|
            if cut[i] < k < cut[i + 1]:
                pts = [cut[i], k, cut[i + 1]]
            out.append(mp.quad(lambda s, Fi=F[i]: abs(Fi - s / (2 * mp.pi) - alpha), pts))
        return mp.fsum(out)
    a, b = mp.mpf(-1), mp.mpf(1)
    g = (mp.sqrt(5) - 1) / 2
    for _ in range(60):
        c1, c2 = b - g * (b - a), a + g * (b - a)
        if J(c1) < J(c2):
            b = c2
        else:
            a = c1
    return J((a + b) / 2)


def test_circle_w1_closed_forms_and_mpmath():
    assert circle_w1([1.234]) == pytest.approx(math.pi / 2, rel=1e-14)
    assert circle_w1([0.3, 0.3 + math.pi]) == pytest.approx(math.pi / 4, rel=1e-14)
    rng = np.random.default_rng(5)
    for size in (1, 4):
        th = rng.uniform(0, 2 * math.pi, size)
        w = rng.uniform(0.1, 1.0, size)
        assert circle_w1(th, w) == pytest.approx(float(_mp_w1(th, w)), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(hst.lists(hst.floats(0, 2 * math.pi), min_size=1, max_size=12),
       hst.floats(-10, 10), hst.integers(0, 2 ** 32 - 1))
def test_circle_w1_invariances(th, shift, seed):
    th = np.array(th)
    w = np.random.default_rng(seed).uniform(0.05, 1.0, th.size)
    W = circle_w1(th, w)
    assert circle_w1(th + shift, w) == pytest.approx(W, abs=1e-9)        # rotation
    assert circle_w1(-th, w) == pytest.approx(W, abs=1e-9)               # reflection
    assert W <= math.pi / 2 + 1e-12                                      # W1(δ, unif) = π/2
    # W1 ≥ E_unif dist(θ, supp ν)
    g = (np.arange(20000) + 0.5) * 2 * math.pi / 20000
    dist = np.abs((g[:, None] - th[None, :] + math.pi) % (2 * math.pi) - math.pi).min(1)
    assert W >= dist.mean() - 1e-6


def test_data_accuracy_bracket_and_bad_input():
    X = np.random.default_rng(3).standard_normal((500, 2))
    acc = data_accuracy(X)
    assert acc["lo"] == pytest.approx(acc["hi"] / math.sqrt(1 + math.pi ** 2))
    assert acc["R2"] == pytest.approx(np.mean(np.sum(X ** 2, 1)))
    with pytest.raises(ValueError, match="`X`"):
        data_accuracy(np.ones((4, 3)))
    with pytest.raises(ValueError, match="`weights`"):
        circle_w1([0.1, 0.2], [-1.0, 1.0])


# ---------------------------------------------------------------------------- paper coordinates
def test_paper_coordinates_round_trip_and_exact_fits():
    t, Vd, T = SE.teacher_data("tri_sym")
    S = popdyn.Student(2, 4, "relu", bias=False, intercept=False, skip=True)
    rng = np.random.default_rng(8)
    p = popdyn.Params(rng.normal(size=4), rng.normal(size=(4, 2)), np.zeros(4), 0.0,
                      rng.normal(size=2))
    X = rng.standard_normal((300, 2))
    P = SE.paper_coordinates(p, t, Vd)
    q = SE.from_paper(*P, t, Vd)
    assert np.allclose(S(p, X), S(q, X), rtol=0, atol=1e-12)
    dist, Z = SE.nearest_zero(P, t, Vd)
    assert dist == pytest.approx(SE.joint_distance(P, Z))
    fit = SE.from_paper(*Z, t, Vd)
    assert np.max(np.abs(S(fit, X) - T(X))) < 1e-12      # a population zero fits every sample


def test_descent_certificate_near_an_exact_fit():
    """A state at joint distance 0.1 from the teacher's exact fit: with r = 0.5 the fit itself
    (L_n = 0 to rounding) is in the ball; with r = 0.05 the clipped segment still descends."""
    t, Vd, T = SE.teacher_data("pair_acute")
    S = popdyn.Student(2, 2, "relu", bias=False, intercept=False, skip=True)
    X, y = SE.draw(T, 200, 1)
    P = (t + 0.1, Vd.copy(), np.array([0.05, 0.0]))
    c = SE.descent_certificate(S, P, X, y, t, Vd, 0.5, 0, seed=0)
    assert c["found"] and c["how"] == "population zero in the ball"
    assert c["best"] < 1e-28 and c["zero_distance"] == pytest.approx(0.1)
    c = SE.descent_certificate(S, P, X, y, t, Vd, 0.05, 20, seed=0)
    assert c["found"] and c["best"] < c["loss_p"] and c["how"] != "population zero in the ball"


@settings(max_examples=8, deadline=None)
@given(hst.integers(0, 2 ** 32 - 1))
def test_uniform_comparison_holds_at_random_states(seed):
    """|(d/R₂)L_n − L| ≤ d B² δ̂_hi (the paper's uniform comparison with the data's bracket)."""
    t, Vd, T = SE.teacher_data("pair_acute")
    S = popdyn.Student(2, 3, "relu", bias=False, intercept=False, skip=True)
    rng = np.random.default_rng(seed)
    X, y = SE.draw(T, 200, seed % 1000)
    acc = data_accuracy(X)
    p = popdyn.Params(rng.normal(size=3), rng.normal(size=(3, 2)), np.zeros(3), 0.0,
                      rng.normal(size=2))
    P = SE.paper_coordinates(p, t, Vd)
    B = SE.residual_bound(P, t)
    lhs = abs(2 / acc["R2"] * empirical_loss(S, p, X, y) - popdyn.population_loss(S, p, T))
    assert lhs <= 2 * B * B * acc["hi"]


# ---------------------------------------------------------------------------- the check
def test_quick_verdict_structure():
    v = run_check("skip_empirical_transfer", quick=True, starts=2, max_updates=3000,
                  ball_points=5, control_starts=1, control_updates=300)
    assert isinstance(v, Verdict) and v.verdict in VERDICTS
    assert v.settings["preset"] == "quick" and v.settings["starts"] == 2
    names = [p.name for p in v.parts]
    for nm in ("transfer[pair_acute,n=1000]", "success[pair_acute,n=1000]",
               "uniform comparison[pair_acute,n=1000]", "accuracy[pair_acute,n=1000]",
               "gradient deviation[pair_acute,n=1000]", "no-skip control"):
        assert nm in names
    roles = {p.name: p.role for p in v.parts}
    assert roles["accuracy[pair_acute,n=1000]"] == "control"
    assert roles["transfer[pair_acute,n=1000]"] == "claim"
    uc = next(p for p in v.parts if p.name.startswith("uniform comparison"))
    assert 0 < uc.bracket[1] <= 1 and uc.verdict == "pass"
    assert all(p.provenance == "numerical" for p in v.parts)
    assert v.elapsed > 0 and any("δ̂ ∈" in n for n in v.notes)
    with pytest.raises(ValueError, match="teachers"):
        run_check("skip_empirical_transfer", quick=True, teachers=("nope",), control_starts=0)
