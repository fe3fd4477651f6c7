"""Integrators: clocks, stopping rules, snapshots, divergence, determinism (DESIGN §4)."""
import numpy as np
import pytest

import popdyn
from popdyn.dynamics import _Fused

EPS = np.finfo(float).eps


def _same_loss(s, params, t, L):
    """``L`` is the loss of ``params``: exactly for the evaluator the GD loop ran (the fused
    kernel: same code, same process), and within 64 ulp of the size of the terms that cancel for
    the general path (population_loss sums a@C@a etc. with BLAS, whose order of summation -- and so
    the last bits -- depend on the OpenBLAS kernel of the machine)."""
    fused = _Fused.make(s, t)
    assert fused is not None and fused.evaluate(params)[0] == L
    a = params.a
    terms = t.second_moment + params.c ** 2 + (s.s * np.abs(a).sum()) ** 2 * (
        1 + np.abs(params.W).max() + np.abs(params.b).max()) ** 2
    assert abs(popdyn.population_loss(s, params, t) - L) <= 64 * EPS * terms


@pytest.fixture(scope="module")
def small():
    s = popdyn.Student(6, 8)
    t = popdyn.Teacher.additive("h2", np.eye(6)[:2], kappa=[2 ** -0.5, 2 ** -0.5])
    return s, s.init(0, 0.3, t), t


def test_gd_records_every_update_and_both_clocks(small):
    s, p, t = small
    tr = popdyn.train(s, p, t, method="gd", lr=0.05, max_updates=30,
                      schedule=popdyn.Schedule(every=10, early=(1, 2, 5)))
    assert tr.status == "horizon"
    assert np.array_equal(tr.n, np.arange(31))
    np.testing.assert_allclose(tr.t, 0.05 * np.arange(31))
    assert list(tr.snap_n) == [0, 1, 2, 5, 10, 20, 30]
    # the loss at every update is the loss of the state reached
    last = tr.snapshot(len(tr) - 1)
    _same_loss(s, last, t, tr.loss[-1])
    assert tr.final.flat().tolist() == last.flat().tolist()
    assert np.all(np.diff(tr.loss) < 0)


def test_gd_step_is_exactly_minus_lr_grad(small):
    s, p, t = small
    tr = popdyn.train(s, p, t, method="gd", lr=0.01, head_lr_mult=0.5, bias_lr_mult=2.0,
                      intercept_lr_mult=0.0, max_updates=1)
    g = popdyn.population_grad(s, p, t)
    q = tr.final
    np.testing.assert_allclose(q.a, p.a - 0.005 * g.a, rtol=1e-15, atol=0)
    np.testing.assert_allclose(q.W, p.W - 0.01 * g.W, rtol=1e-15, atol=0)
    np.testing.assert_allclose(q.b, p.b - 0.02 * g.b, rtol=1e-15, atol=0)
    assert q.c == p.c


def test_mean_field_clock(small):
    _, _, t = small
    s = popdyn.Student(6, 8, scaling="mean_field")
    p = s.init(1, 0.3, t)
    tr = popdyn.train(s, p, t, method="gd", lr=0.01, max_updates=1)
    g = popdyn.population_grad(s, p, t)
    np.testing.assert_allclose(tr.final.W, p.W - 0.01 * 8 * g.W, rtol=1e-15)
    assert tr.t[-1] == pytest.approx(0.01)


def test_flow_converges_and_matches_gd_in_the_limit(small):
    s, p, t = small
    fl = popdyn.train(s, p, t, method="flow", eps=1e-3, h0=0.01, max_time=2.0)
    gd = popdyn.train(s, p, t, method="gd", lr=1e-3, max_time=2.0)
    assert fl.status == gd.status == "horizon"
    assert fl.t[-1] >= 2.0 and gd.t[-1] == pytest.approx(2.0, abs=1e-3)
    # Euler with a small step vs adaptive flow at tight tolerance: same state at t ≈ 2
    Lf = np.interp(2.0, fl.t, fl.loss)
    assert Lf == pytest.approx(gd.loss[-1], rel=2e-3)
    assert np.all(np.diff(fl.loss) <= 0)
    assert fl.info["forced_steps"] == 0


def test_loss_target_converged(small):
    s, p, t = small
    tr = popdyn.train(s, p, t, method="flow", loss_target=0.9, max_time=1e4)
    assert tr.status == "converged"
    assert tr.normalized_loss[-1] <= 0.9 < tr.normalized_loss[-2]


def test_divergence_keeps_last_finite_state(small):
    s, p, t = small
    tr = popdyn.train(s, p, t, method="gd", lr=50.0, max_updates=1000)
    assert tr.status == "diverged"
    assert tr.final.is_finite()
    assert np.all(np.isfinite(tr.loss))
    _same_loss(s, tr.final, t, tr.loss[-1])


def test_deterministic(small):
    s, p, t = small
    a = popdyn.train(s, p, t, method="flow", max_updates=40)
    b = popdyn.train(s, p, t, method="flow", max_updates=40)
    assert np.array_equal(a.loss, b.loss) and np.array_equal(a.t, b.t)


def test_recorder_called_at_snapshots(small):
    s, p, t = small
    seen = []

    def rec(student, params, teacher, n, t, loss):
        seen.append(n)
        return {"n": n, "L": loss}

    tr = popdyn.train(s, p, t, method="gd", lr=0.01, max_updates=12,
                      schedule=popdyn.Schedule(every=5, early=(1,)), recorder=rec)
    assert seen == [0, 1, 5, 10, 12] == list(tr.snap_n)
    assert [r["L"] for r in tr.records] == [tr.loss[n] for n in tr.snap_n]


def test_stepper_template_owns_n_t_status_and_counters():
    """The scipy-style stepper: a frozen Problem, ``step()`` advancing to the next snapshot count
    and owning n, t, status and counters, identical to ``popdyn.train`` bit for bit."""
    import dataclasses

    from popdyn.dynamics import FixedStepGD, Problem, Schedule, _Recorder

    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.Student(4, 3, activation="tanh")
    p = S.init(0, 0.5, T)
    fam, sch = S.family, Schedule(every=5, early=(1, 2))
    tr = popdyn.train(S, p, T, method="gd", lr=0.05, max_updates=12, schedule=sch)
    rates = fam.rates(1.0, 1.0, 1.0)
    prob = Problem(lambda q: fam.evaluate(q, T, 1e-10), lambda q, g, h: fam.axpy(q, g, h, rates),
                   fam.diff_norm, p, T.variance, 0.05, 12, np.inf, 0.0, 1e6, sch)
    with pytest.raises(dataclasses.FrozenInstanceError):
        prob.lr = 0.1
    run = FixedStepGD(prob, _Recorder(sch, None, S, T))
    seen = []
    while run.status == "running":
        seen.append((run.step(), run.n))
    assert [n for _, n in seen] == [1, 2, 5, 10, 12]
    assert [s for s, _ in seen] == ["running"] * 4 + ["horizon"]
    with pytest.raises(RuntimeError, match="finished run"):
        run.step()
    run.run()
    assert np.array(run.losses).tobytes() == tr.loss.tobytes()
    assert np.array(run.ts).tobytes() == tr.t.tobytes()
    assert run.grad_evals == tr.info["grad_evals"] == 13 and run.t == tr.t[-1]
    assert list(run.rec.arrays()[0]) == list(tr.snap_n) == [0, 1, 2, 5, 10, 12]
