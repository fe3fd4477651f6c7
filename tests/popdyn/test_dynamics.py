"""Integrators: clocks, stopping rules, snapshots, divergence, determinism (docs/design.md §4)."""
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
    rates = fam.rates(fam.multipliers())
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


# ---------------------------------------------------------------------------- named schedules
from hypothesis import given, strategies as st  # noqa: E402

from popdyn.dynamics import Schedule  # noqa: E402
from popdyn.plateau import BASELINE_RULE  # noqa: E402


@given(st.integers(0, 5000), st.integers(1, 300),
       st.lists(st.integers(0, 400), max_size=6).map(tuple))
def test_next_after_is_the_old_rule(n, every, early):
    """Schedules without the new fields advance exactly as before (gd / flow runs unchanged)."""
    sch = Schedule(every=every, early=early)
    assert sch.next_after(n) == min([(n // every + 1) * every] + [e for e in early if e > n])
    assert (n in sch) == (n == 0 or n % every == 0 or n in early)


def test_a2_schedule_is_the_papers_grid():
    """App. A.2: every 10 updates through 1,000, every 50 through 3,000, every 100 after."""
    sch = Schedule.named("a2")
    want = set(range(0, 1001, 10)) | set(range(1000, 3001, 50)) | set(range(3000, 6001, 100))
    assert {n for n in range(6001) if n in sch} == want
    got, n = [0], 0
    while n < 6000:
        n = sch.next_after(n)
        got.append(n)
    assert got == sorted(want)
    assert sch.plateau == BASELINE_RULE == Schedule.named("baseline").plateau
    assert {n for n in range(1000) if n in Schedule.named("baseline")} == set(range(0, 1000, 100))
    # a schedule continued from update 990 (a sweep's segment) keeps the global grid
    off = Schedule(every=100, early=(), dense=((1000, 10), (3000, 50)), offset=990)
    assert [k for k in range(1, 200) if k in off] == [k - 990 for k in range(991, 1190)
                                                      if k in sch]
    with pytest.raises(ValueError, match="`kind` must be one of \\['a2', 'baseline'\\]"):
        Schedule.named("A.2")


@pytest.fixture(scope="module")
def released():
    st_ = popdyn.Student.preset("paper_relu", 4, 5)
    T = popdyn.Teacher.additive("h2", np.eye(4)[:2], kappa=[2 ** -0.5, 2 ** -0.5])
    return st_, st_.init(3, 0.1, convention="iid"), T


@pytest.mark.parametrize("method", ["armijo", "gd"])
def test_baseline_schedule_snapshots_the_exact_endpoint(released, method):
    """The band rule is checked at every update during training; the snapshots at E and E + 1
    are the states of those updates (bit for bit those of an every-update run), the diagnostics
    there get the moments of those states, and E is the rule's endpoint on the loss record."""
    from popdyn._moments import moments

    s, p, T = released
    seen = []

    def rec(student, params, teacher, *, n, t, loss, moments=None):
        seen.append((n, loss, moments))
        return {"n": n}
    rec.takes_moments = True

    kw = dict(method=method, h0=0.5, lr=0.5, max_updates=300)
    tr = popdyn.train(s, p, T, schedule=Schedule.named("baseline"), recorder=rec, **kw)
    ref = popdyn.train(s, p, T, schedule=Schedule(every=1, early=()), **kw)
    E = BASELINE_RULE.apply(ref.mse).end
    assert 0 < E < 299 and tr.plateau.end == E and not tr.plateau.censored
    assert tr.info["plateau"]["end"] == E
    assert list(tr.snap_n) == [0, E, E + 1, 100, 200, 300]
    for i, n in enumerate(tr.snap_n):
        assert tr.snapshot(i).flat().tolist() == ref.snapshot(n).flat().tolist()
    assert tr.loss.tolist() == ref.loss.tolist()
    assert [n for n, _, _ in seen] == list(tr.snap_n)
    for n, L, M in seen:                 # the fused step's moments belong to the state at n
        q = ref.snapshot(n)
        assert L == ref.loss[n] and M is not None
        np.testing.assert_allclose(M.C, moments(s, q, T, need="values").C, rtol=1e-13)
    # a censored run: no event snapshots
    short = popdyn.train(s, p, T, schedule=Schedule.named("baseline"), **{**kw, "max_updates": E})
    assert short.plateau.censored and list(short.snap_n) == [0, E]


def test_plateau_watch_continues_across_runs(released):
    """A run split in two with the watch carried over snapshots the same endpoint."""
    s, p, T = released
    kw = dict(method="armijo", h0=0.5)
    one = popdyn.train(s, p, T, max_updates=60, schedule=Schedule.named("baseline"), **kw)
    E = one.plateau.end
    w = BASELINE_RULE.watch()
    a = popdyn.train(s, p, T, max_updates=E - 3, schedule=Schedule.named("baseline"),
                     plateau_watch=w, **kw)
    b = popdyn.train(s, a.final, T, max_updates=60 - (E - 3), plateau_watch=w,
                     schedule=Schedule(every=100, early=(), plateau=BASELINE_RULE,
                                       offset=E - 3), h0=a.info["h"], method="armijo")
    assert w.end == E and b.plateau is None and b.info["plateau"]["end"] == E
    assert [n + E - 3 for n in b.snap_n] == [E - 3, E, E + 1, 60]
    assert b.snapshot(1).flat().tolist() == one.snapshot(1).flat().tolist()


# ------------------------------------------------------------------ training settings record
from popdyn.dynamics import COMMON_OPTIONS, METHODS, TrainSettings  # noqa: E402


def test_settings_defaults_are_trains_and_the_methods():
    """The record's defaults are :func:`popdyn.train`'s keyword defaults, and each method's
    options default to the values its stepper declares (``METHODS[m].OPTIONS``)."""
    import inspect

    sig = inspect.signature(popdyn.train)
    s = TrainSettings()
    for name, value in s.kwargs().items():
        assert sig.parameters[name].default == value, name
    assert set(s.kwargs()) == {k for k, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY
                               } - {"schedule", "recorder", "plateau_watch"}
    assert set(METHODS) == {"gd", "flow", "armijo"}
    for method, stepper in METHODS.items():
        assert set(TrainSettings.options(method)) == set(COMMON_OPTIONS) | set(stepper.OPTIONS)
        for name, default in stepper.OPTIONS.items():
            assert getattr(s, name) == default, (method, name)


def test_settings_refuse_an_option_of_another_method():
    with pytest.raises(ValueError, match=r"^`eps` does not apply to method 'gd'; the options "
                                         r"of method 'gd' are \['bias_lr_mult'"):
        TrainSettings.of("gd", eps=0.1)
    with pytest.raises(ValueError, match="`max_halvings` does not apply to method 'flow'"):
        TrainSettings.from_config({"method": "flow", "max_halvings": 3})
    with pytest.raises(ValueError, match="`h_max` does not apply to method 'armijo'"):
        TrainSettings.of("armijo", h_max=1.0)
    with pytest.raises(ValueError, match="`epsilon` is not a training option; the options of "
                                         "method 'flow' are"):
        TrainSettings.of("flow", epsilon=0.1)
    with pytest.raises(ValueError, match=r"`method` must be one of \['armijo', 'flow', 'gd'\], "
                                         r"got 'sgd'"):
        TrainSettings.of("sgd")
    with pytest.raises(ValueError, match="`lr` must be > 0"):
        TrainSettings.of("gd", lr=-1.0)
    with pytest.raises(ValueError, match="`h_min` <= `h0` <= `h_max`"):
        TrainSettings.of("flow", h0=1.0, h_max=0.5)
    TrainSettings.of("armijo", h0=40.0)       # Armijo's h0 is not bounded by the flow's h_max
    import dataclasses
    with pytest.raises(dataclasses.FrozenInstanceError):
        TrainSettings().lr = 0.1


def test_config_refuses_an_option_of_another_method():
    from popdyn import config as C

    text = ('[teacher]\nlink = "h2"\n[student]\nd = 3\nm = 2\n[init]\nscale = 0.1\n'
            '[train]\nmethod = "gd"\neps = 0.1\n')
    with pytest.raises(C.ConfigError, match=r"\[train\] in .*`eps` does not apply to method "
                                            r"'gd'; the options of method 'gd' are"):
        C.expand(C.loads(text))
    C.expand(C.loads(text.replace("gd", "flow")))


@pytest.mark.parametrize("method", ["gd", "flow", "armijo"])
def test_settings_kwargs_train_the_same_run(small, method):
    """``train(**TrainSettings.from_config(table).kwargs())`` is ``train(**table)`` bit for
    bit (the record holds the validated values and every default)."""
    s, p0, t = small
    table = {"method": method, "max_updates": 12, "loss_target": 0.0}
    if method == "gd":
        table["lr"] = 0.1
    elif method == "flow":
        table["eps"] = 0.1
    else:
        table["h0"] = 0.2
    a = popdyn.train(s, p0, t, **table)
    b = popdyn.train(s, p0, t, **TrainSettings.from_config(table).kwargs())
    assert np.array_equal(a.loss, b.loss) and np.array_equal(a.t, b.t)
    assert np.array_equal(a.final.W, b.final.W) and a.status == b.status
    assert {k: v for k, v in a.info.items() if k != "wall_time"} == \
        {k: v for k, v in b.info.items() if k != "wall_time"}


def test_methods_registry_takes_a_new_stepper(small, monkeypatch):
    """:data:`popdyn.dynamics.METHODS` is what :func:`popdyn.train` dispatches on: a stepper
    registered under a new name (here fixed-step GD at half the step, with no options) is a
    method of train, and runs bit for bit as ``"gd"`` with ``lr / 2`` (general path)."""
    from popdyn import dynamics

    class HalfStep(dynamics.Stepper):
        def _propose(self):
            h = 0.5 * self.problem.lr
            return self.problem.axpy(self.p, self.g, h), h

    s = popdyn.Student(4, 3, "tanh")
    t = popdyn.Teacher.additive("h2", np.eye(4)[:2])
    p0 = s.init(1, 0.3)
    monkeypatch.setitem(dynamics.METHODS, "half", HalfStep)
    a = popdyn.train(s, p0, t, method="half", lr=0.2, max_updates=15)
    b = popdyn.train(s, p0, t, method="gd", lr=0.1, max_updates=15)
    assert np.array_equal(a.loss, b.loss) and np.array_equal(a.t, b.t)
    assert np.array_equal(a.final.W, b.final.W) and a.info["method"] == "half"
    with pytest.raises(ValueError, match="`eps` does not apply to method 'half'"):
        TrainSettings.of("half", eps=0.1)


@pytest.mark.parametrize("case", ["gd", "gd_fused", "flow", "armijo", "armijo_fused"])
def test_stepper_state_continues_bit_for_bit(case):
    """A stepper rebuilt from :meth:`Stepper.state` (a plain copy of n, t, the state, its
    gradient, the counters and the method's step) continues exactly as the run it was taken
    from: the same losses, times, states and counters after it (general and fused paths)."""
    from popdyn.dynamics import stepper

    method = case.split("_")[0]
    T = popdyn.Teacher.additive("h3+0.3h2", np.eye(4)[:1])
    if case.endswith("fused"):
        s = popdyn.Student.preset("paper_relu", 4, 5) if method == "armijo" else \
            popdyn.Student(4, 3, "relu", bias=True)
        assert _Fused.make(s, T) is not None
    else:
        s = popdyn.Student(4, 3, "tanh", bias=True)
    p0 = s.init(2, 0.5)
    opts = {"gd": {"lr": 0.1}, "flow": {"eps": 0.1}, "armijo": {"h0": 0.8}}[method]
    cfg = TrainSettings.of(method, max_updates=40, **opts)
    sch = popdyn.Schedule(every=7, early=())
    a = stepper(s, p0, T, cfg, schedule=sch)
    a.step(); a.step()
    assert a.n == 14 and a.status == "running"
    state = a.state()
    b = stepper(s, p0, T, cfg, schedule=sch, state=state)
    a.run(); b.run()
    k = len(b.losses)
    assert a.ns[-k:] == b.ns and a.losses[-k:] == b.losses and a.ts[-k:] == b.ts
    assert a.n == b.n == 40 and a.status == b.status
    assert a.grad_evals == b.grad_evals and a.forced_steps == b.forced_steps
    for f in ("a", "W", "b"):
        assert np.array_equal(getattr(a.p, f), getattr(b.p, f))
    assert a.p.c == b.p.c
    if method == "armijo":
        assert a.steps[-(k - 1):] == b.steps and a.h == b.h
    with pytest.raises(ValueError, match="`state` is of method"):
        stepper(s, p0, T, TrainSettings.of("gd" if method != "gd" else "flow"), state=state)
