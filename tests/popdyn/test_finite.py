"""popdyn.finite: finite-sample training of the population engine's students (docs/design.md §4)."""
import numpy as np
import pytest

import popdyn
from popdyn import finite


def setup(seed=0, act="relu", bias=True, intercept=True, scaling="standard", m=3, d=4):
    rng = np.random.default_rng(seed)
    student = popdyn.Student(d, m, act, bias=bias, intercept=intercept, scaling=scaling)
    p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)) / np.sqrt(d),
                      rng.normal(size=m) * 0.3 if bias else np.zeros(m),
                      float(rng.normal()) * 0.2 if intercept else 0.0)
    teacher = popdyn.Teacher.network("relu", [1.0, -0.5], rng.normal(size=(2, d)), [0.1, 0.0])
    return student, p, teacher


@pytest.mark.parametrize("act,bias,intercept,scaling", [
    ("relu", True, True, "standard"), ("leaky_relu", False, True, "mean_field"),
    ("silu", True, False, "standard"), ("tanh", False, False, "mean_field")])
def test_empirical_gradient_matches_finite_differences(act, bias, intercept, scaling):
    student, p, teacher = setup(1, act, bias, intercept, scaling)
    X, y = finite.draw(teacher, 300, 3)
    L, g = finite.empirical_loss_and_grad(student, p, X, y)
    assert L == pytest.approx(finite.empirical_loss(student, p, X, y), rel=1e-15)
    m, d = p.m, p.d
    v = np.random.default_rng(4).normal(size=p.flat().size)
    if not bias:
        v[m + m * d:2 * m + m * d] = 0
    if not intercept:
        v[-1] = 0

    def f(x):
        return finite.empirical_loss(student, popdyn.Params.from_flat(x, m, d), X, y)

    # a small step: a sample crossing a relu kink w·x + b = 0 inside the stencil would spoil the
    # difference (probability ~ 1e-4 here); rounding error ~ 1e-16/h
    h = 1e-7
    x0 = p.flat()
    fd = (f(x0 + h * v) - f(x0 - h * v)) / (2 * h)
    assert fd == pytest.approx(g.flat() @ v, rel=1e-6, abs=1e-8)
    if not bias:
        assert np.all(g.b == 0)
    if not intercept:
        assert g.c == 0


def test_empirical_decomposition_identities():
    from popdyn.gauge import identity_residuals

    for seed in range(4):
        student, p, teacher = setup(seed, "leaky_relu", True, True)
        X, y = finite.draw(teacher, 500, seed)
        dec = finite.decompose_empirical(student, p, X, y)
        assert max(identity_residuals(student, p, dec).values()) <= 1e-12
        assert dec.loss == pytest.approx(finite.empirical_loss(student, p, X, y), rel=1e-15)


def test_draw_and_training_are_deterministic():
    student, p, teacher = setup(2)
    X1, y1 = finite.draw(teacher, 100, 7)
    X2, y2 = finite.draw(teacher, 100, 7)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert not np.array_equal(finite.draw(teacher, 100, 8)[0], X1)
    for method, kw in (("gd", {}), ("sgd", dict(batch_size=16)), ("noisy_sgd", dict(batch_size=16, noise=0.05))):
        a = finite.train_finite(student, p, teacher, n_samples=200, seed=3, method=method, lr=0.02,
                                max_updates=30, **kw)
        b = finite.train_finite(student, p, teacher, n_samples=200, seed=3, method=method, lr=0.02,
                                max_updates=30, **kw)
        assert isinstance(a, popdyn.Trajectory)
        assert np.array_equal(a.loss, b.loss) and np.array_equal(a.final.flat(), b.final.flat())
        assert a.n[-1] == 30 and a.t[-1] == pytest.approx(0.6)
        assert a.status == "horizon" and a.info["method"] == method and a.info["n_samples"] == 200
        assert "population_loss" in a.records[0] and "empirical_loss" in a.records[0]
    c = finite.train_finite(student, p, teacher, n_samples=200, seed=4, method="sgd", lr=0.02,
                            batch_size=16, max_updates=30)
    assert not np.array_equal(c.loss, a.loss)


def test_gd_step_is_the_empirical_gradient_step_with_weight_decay():
    student, p, teacher = setup(5)
    X, y = finite.draw(teacher, 64, 0)
    tr = finite.train_finite(student, p, teacher, X=X, y=y, lr=0.1, weight_decay=0.3, max_updates=1,
                             head_lr_mult=2.0)
    _, g = finite.empirical_loss_and_grad(student, p, X, y)
    q = tr.final
    assert np.allclose(q.a, p.a - 0.1 * 2.0 * (g.a + 0.3 * p.a), rtol=1e-14, atol=1e-16)
    assert np.allclose(q.W, p.W - 0.1 * (g.W + 0.3 * p.W), rtol=1e-14, atol=1e-16)
    assert np.allclose(q.b, p.b - 0.1 * (g.b + 0.3 * p.b), rtol=1e-14, atol=1e-16)
    assert q.c == pytest.approx(p.c - 0.1 * g.c, rel=1e-14)
    assert tr.loss[1] == pytest.approx(finite.empirical_loss(student, q, X, y), rel=1e-14)


def test_mean_field_rate_matches_population_train_convention():
    student, p, teacher = setup(6, scaling="mean_field")
    X, y = finite.draw(teacher, 64, 0)
    tr = finite.train_finite(student, p, teacher, X=X, y=y, lr=0.1, max_updates=1)
    _, g = finite.empirical_loss_and_grad(student, p, X, y)
    assert np.allclose(tr.final.W, p.W - 0.1 * student.m * g.W, rtol=1e-14)


def test_large_sample_gd_tracks_population_gd():
    student, p, teacher = setup(8, m=2, d=3)
    pop = popdyn.train(student, p, teacher, method="gd", lr=0.05, max_updates=40)
    fin = finite.train_finite(student, p, teacher, n_samples=40_000, seed=0, lr=0.05, max_updates=40)
    assert abs(fin.records[-1]["population_loss"] - pop.loss[-1]) < 0.05 * pop.loss[0]
    assert np.max(np.abs(fin.final.flat() - pop.final.flat())) < 0.05


def test_divergence_is_detected_and_last_finite_state_kept():
    student, p, teacher = setup(9)
    tr = finite.train_finite(student, p, teacher, n_samples=50, seed=0, lr=50.0, max_updates=200)
    assert tr.status == "diverged" and tr.final.is_finite()


def test_loss_target_stops():
    student, p, teacher = setup(10)
    tr = finite.train_finite(student, p, teacher, n_samples=200, seed=0, lr=0.05, max_updates=10_000,
                             loss_target=0.5)
    assert tr.status == "converged" and tr.normalized_loss[-1] <= 0.5


def test_bad_inputs():
    student, p, teacher = setup(0)
    X, y = finite.draw(teacher, 20, 0)
    with pytest.raises(ValueError, match="`n_samples`"):
        finite.train_finite(student, p, teacher)
    with pytest.raises(ValueError, match="not both"):
        finite.train_finite(student, p, teacher, n_samples=10, X=X, y=y)
    with pytest.raises(ValueError, match="`X`"):
        finite.train_finite(student, p, teacher, X=X)
    with pytest.raises(ValueError, match="`batch_size`"):
        finite.train_finite(student, p, teacher, X=X, y=y, method="sgd")
    with pytest.raises(ValueError, match="`batch_size`"):
        finite.train_finite(student, p, teacher, X=X, y=y, method="sgd", batch_size=21)
    with pytest.raises(ValueError, match="`batch_size`"):
        finite.train_finite(student, p, teacher, X=X, y=y, batch_size=4)
    with pytest.raises(ValueError, match="`noise`"):
        finite.train_finite(student, p, teacher, X=X, y=y, noise=0.1)
    with pytest.raises(ValueError, match="`method`"):
        finite.train_finite(student, p, teacher, X=X, y=y, method="adam")
    with pytest.raises(ValueError, match="`weight_decay`"):
        finite.train_finite(student, p, teacher, X=X, y=y, weight_decay=-1.0)
    with pytest.raises(ValueError, match="`X`"):
        finite.empirical_loss(student, p, X[:, :2], y)
    with pytest.raises(ValueError, match="`y`"):
        finite.empirical_loss(student, p, X, y[:5])
    with pytest.raises(ValueError, match="`n`"):
        finite.draw(teacher, 0, 0)
