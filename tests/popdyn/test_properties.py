"""Hypothesis properties of the population objective (issue "Exact population engine").

* gradient = directional derivative of the loss (5-point central differences, h-extrapolated);
* invariance under permutations of the neurons;
* positive homogeneity of (leaky) ReLU: (a, w, b) → (λa, w/λ, b/λ) leaves the loss unchanged;
* a small gradient step decreases the loss;
* Monte Carlo agreement of the loss with a stated z-score (an independent reference).
"""
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import popdyn

LINKS = ["h1", "h2", "h3", "h4", "h3+0.3h2", "relu", "abs", "tanh", "sin", "gaussian_bump",
         "silu", "silu_centered", "damped_cubic:0.5"]
ACTS = ["relu", "leaky_relu", "silu", "gelu", "tanh", "erf"]


def make(seed, act, link, m=5, d=6, r=2, scale=0.7, scaling="standard", network=False):
    rng = np.random.default_rng(seed)
    student = popdyn.Student(d, m, act, negative_slope=0.1, scaling=scaling)
    p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)) * scale / np.sqrt(d) * 2,
                      rng.normal(size=m) * 0.5, rng.normal() * 0.3)
    if network:
        teacher = popdyn.Teacher.network(link, rng.normal(size=r), rng.normal(size=(r, d)),
                                         rng.normal(size=r) * 0.5)
    else:
        U = np.linalg.qr(rng.normal(size=(d, r)))[0].T
        teacher = popdyn.Teacher.additive(link, U, rng.uniform(0.5, 1.5, size=r))
    return student, p, teacher


def _dirderiv(f, x, v, h):
    # 4th-order central difference
    return (-f(x + 2 * h * v) + 8 * f(x + h * v) - 8 * f(x - h * v) + f(x - 2 * h * v)) / (12 * h)


@settings(max_examples=25)
@given(st.integers(0, 10_000), st.sampled_from(ACTS), st.sampled_from(LINKS))
@example(0, "relu", "h2")
@example(1, "leaky_relu", "abs")
def test_gradient_matches_finite_differences(seed, act, link):
    student, p, teacher = make(seed, act, link)
    m, d = p.m, p.d
    g = popdyn.population_grad(student, p, teacher).flat()
    v = np.random.default_rng(seed + 1).normal(size=g.size)
    x0 = p.flat()

    def f(x):
        return popdyn.population_loss(student, popdyn.Params.from_flat(x, m, d), teacher)

    fd = _dirderiv(f, x0, v, 1e-3)
    exact = g @ v
    assert abs(fd - exact) <= 1e-7 * (np.abs(g) @ np.abs(v) + 1.0)


@settings(max_examples=20)
@given(st.integers(0, 10_000), st.sampled_from(ACTS), st.sampled_from(LINKS))
def test_permutation_invariance(seed, act, link):
    student, p, teacher = make(seed, act, link)
    perm = np.random.default_rng(seed).permutation(p.m)
    q = popdyn.Params(p.a[perm], p.W[perm], p.b[perm], p.c)
    L1, L2 = (popdyn.population_loss(student, x, teacher) for x in (p, q))
    assert L2 == pytest.approx(L1, rel=1e-13, abs=1e-15)
    g1, g2 = (popdyn.population_grad(student, x, teacher) for x in (p, q))
    np.testing.assert_allclose(g2.W, g1.W[perm], rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(g2.a, g1.a[perm], rtol=1e-11, atol=1e-14)


@settings(max_examples=25)
@given(st.integers(0, 10_000), st.sampled_from(["relu", "leaky_relu"]), st.sampled_from(LINKS),
       st.floats(0.05, 20.0), st.booleans())
def test_positive_homogeneity(seed, act, link, lam, network):
    if network and link not in ACTS:
        link = "relu"
    student, p, teacher = make(seed, act, link, network=network)
    q = popdyn.Params(p.a * lam, p.W / lam, p.b / lam, p.c)
    L1, L2 = (popdyn.population_loss(student, x, teacher) for x in (p, q))
    assert L2 == pytest.approx(L1, rel=1e-12, abs=1e-14)


@settings(max_examples=20)
@given(st.integers(0, 10_000), st.sampled_from(ACTS), st.sampled_from(LINKS),
       st.sampled_from(["standard", "mean_field"]))
def test_small_gd_step_decreases_loss(seed, act, link, scaling):
    student, p, teacher = make(seed, act, link, scaling=scaling)
    L0, g = popdyn.loss_and_grad(student, p, teacher)
    gn = np.sum(g.flat() ** 2)
    if gn < 1e-20:
        return
    h = 1e-4 / max(1.0, np.sqrt(gn))
    q = popdyn.Params.from_flat(p.flat() - h * g.flat(), p.m, p.d)
    L1 = popdyn.population_loss(student, q, teacher)
    assert L1 < L0
    # and by about h·|g|² (first order)
    assert (L0 - L1) == pytest.approx(h * gn, rel=1e-3)


@pytest.mark.parametrize("act, link, network", [
    ("relu", "h2", False), ("leaky_relu", "tanh", False), ("silu", "abs", False),
    ("relu", "relu", True), ("tanh", "gelu", True),
])
def test_monte_carlo_loss(act, link, network):
    """Independent check: |exact − MC| ≤ 5 standard errors with n = 400 000 samples."""
    student, p, teacher = make(3, act, link, network=network)
    rng = np.random.default_rng(12345)
    n = 400_000
    X = rng.standard_normal((n, p.d))
    sq = 0.5 * (student(p, X) - teacher(X)) ** 2
    mc, se = sq.mean(), sq.std(ddof=1) / np.sqrt(n)
    exact = popdyn.population_loss(student, p, teacher)
    assert abs(exact - mc) <= 5 * se, f"z = {(exact - mc) / se:.2f}"
    assert teacher.mean == pytest.approx(teacher(X).mean(), abs=5 * teacher(X).std() / np.sqrt(n))
