"""The fused loss/gradient kernel and in-numba GD loop (popdyn._kernels.fused, dynamics._Fused).

* Against the independent 30-digit mpmath references of data/refs/engine_refs.json (every case
  with a relu / leaky-relu student and an additive or PL-network teacher), with the tolerances
  of tests/popdyn/test_engine_refs.py.
* Against the general path (popdyn.objective.loss_and_grad, itself checked against those
  references) on hypothesis-drawn states with degenerate geometry: one path since 0.7.0 (the
  engine evaluates these pairs with the fused kernel's moments and assembly), so the two agree
  bit for bit.
* Trajectories: fused GD equals the general integrator's GD bit for bit; every stopping rule
  (horizon, converged, diverged with the last finite state, max_time) and the snapshot schedule
  are the same.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import popdyn
from popdyn import dynamics
from popdyn._moments import moments
from popdyn.dynamics import _Fused
from popdyn.objective import loss_and_grad

from _cases import build, load_cases, outputs

def _covered(case):
    student, _, teacher = build(case)
    return _Fused.make(student, teacher) is not None


# every reference case with a relu / leaky-relu student and a teacher the fused path covers
CASES = [c for c in load_cases()
         if c.get("inputs", c)["activation"] in ("relu", "leaky_relu") and _covered(c)]


def _fused(student, teacher):
    fz = _Fused.make(student, teacher)
    assert fz is not None
    return fz


@pytest.mark.parametrize("case", CASES, ids=[c.get("name", f"case{i}") for i, c in enumerate(CASES)])
def test_fused_against_mpmath_references(case):
    student, params, teacher = build(case)
    fz = _Fused.make(student, teacher)
    L, ga, gW, gb, gc, _, _ = outputs(case)
    got_L, g, _ = fz.evaluate(params)
    scale = teacher.second_moment + params.c ** 2
    assert abs(got_L - L) <= 1e-12 * abs(L) + 1e-14 * max(scale, 1.0)
    gscale = np.sqrt(teacher.second_moment) * (1 + np.abs(params.a).sum()) * (1 + np.abs(params.W).max())
    for name, got, want in (("a", g.a, ga), ("W", g.W, gW), ("b", g.b, gb), ("c", g.c, gc)):
        err = np.abs(np.asarray(got) - want)
        assert np.all(err <= 1e-12 * np.abs(want) + 1e-14 * max(gscale, 1.0)), name


def test_references_cover_both_teacher_kinds():
    assert len(CASES) >= 10
    assert {build(case)[2].kind for case in CASES} == {"additive", "network"}


TEACHERS = {
    "h3": lambda U: popdyn.Teacher.additive("h3", U[:2], kappa=[0.8, -0.6]),
    "relu_link": lambda U: popdyn.Teacher.additive("relu", U[:2]),
    "sin": lambda U: popdyn.Teacher.additive("sin", U[:1]),
    "silu": lambda U: popdyn.Teacher.additive("silu", U[:2]),
    "mixture": lambda U: popdyn.Teacher.additive("mixture(0.5*relu, 0.5*h3)", U[:2]),
    "net_relu": lambda U: popdyn.Teacher.network("relu", [1.0, -0.7], 1.3 * U[:2], bias=[0.2, -0.4]),
    "net_leaky": lambda U: popdyn.Teacher.network("leaky_relu", [0.5], U[1:2], negative_slope=0.2),
}


def _state(seed, m, d, scale, degenerate):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(m) * scale
    W = rng.standard_normal((m, d)) * scale / np.sqrt(d)
    b = rng.standard_normal(m) * scale
    if degenerate:
        W[0] = 0.0                      # constant neuron (α = 0)
        W[1] = W[2]                     # duplicated direction (ρ = 1), other bias
        W[3] = -2.0 * W[2]              # antiparallel
        b[4] = 40.0 * np.linalg.norm(W[4])   # a neuron deep in its tail (h = 40)
        W[5, :] = 0.0
        W[5, 0] = 1.0                   # exactly on a teacher axis
    return a, W, b


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(TEACHERS)), st.integers(0, 2 ** 16), st.sampled_from([0.01, 0.3, 1.5]),
       st.booleans(), st.sampled_from(["relu", "leaky_relu"]), st.booleans(), st.booleans(),
       st.sampled_from(["standard", "mean_field"]))
@example("silu", 0, 1.5, True, "relu", True, True, "standard")
@example("net_relu", 3, 0.3, True, "leaky_relu", False, False, "mean_field")
def test_fused_equals_general_path(tname, seed, scale, degenerate, act, bias, intercept, scaling):
    d, m = 5, 7
    U = np.eye(d)
    teacher = TEACHERS[tname](U)
    student = popdyn.Student(d, m, act, negative_slope=0.1, bias=bias, intercept=intercept,
                             scaling=scaling)
    a, W, b = _state(seed, m, d, scale, degenerate)
    params = popdyn.Params(a, W, b if bias else np.zeros(m), 0.37 if intercept else 0.0)
    L0, g0 = loss_and_grad(student, params, teacher)
    L1, g1, _ = _fused(student, teacher).evaluate(params)
    # one path: the engine evaluates these pairs with the fused kernel's moments
    # (popdyn._kernels.fused.pl_moments) and assembly (ridge_loss, ridge_grad): bit for bit
    assert np.float64(L0).tobytes() == np.float64(L1).tobytes()
    for x, y in ((g0.a, g1.a), (g0.W, g1.W), (g0.b, g1.b), (g0.c, g1.c)):
        assert np.asarray(x, dtype=float).tobytes() == np.asarray(y, dtype=float).tobytes()
    # and the moments the diagnostics read (need="values") are the same bits as the step's
    M, Mv = (moments(student, params, teacher, need=n) for n in ("grad", "values"))
    for f in ("C", "B", "mu0", "Ct"):
        assert getattr(M, f).tobytes() == getattr(Mv, f).tobytes(), f


def test_not_covered_pairs_use_the_general_path():
    U = np.eye(4)
    assert _Fused.make(popdyn.Student(4, 3, "silu"), popdyn.Teacher.additive("h2", U[:1])) is None
    assert _Fused.make(popdyn.Student(4, 3), popdyn.Teacher.network("tanh", [1.0], U[:1])) is None
    assert _Fused.make(popdyn.Student(4, 3), popdyn.Teacher.gated("gelu", U[:2])) is None


@pytest.fixture(scope="module")
def problem():
    d, m = 6, 8
    U = np.eye(d)
    t = popdyn.Teacher.additive("mixture(0.6*relu, 0.4*sin)", U[:2]).normalized()
    s = popdyn.Student(d, m)
    return s, s.init(3, 0.2, t), t


def _pair(problem, monkeypatch, **kw):
    s, p, t = problem
    fused = popdyn.train(s, p, t, method="gd", **kw)
    monkeypatch.setattr(dynamics, "_FUSED", False)
    general = popdyn.train(s, p, t, method="gd", **kw)
    monkeypatch.setattr(dynamics, "_FUSED", True)
    return fused, general


def _same(f, g):
    assert f.status == g.status
    assert np.array_equal(f.n, g.n) and np.array_equal(f.t, g.t)
    assert np.array_equal(f.snap_n, g.snap_n) and np.array_equal(f.snap_t, g.snap_t)
    assert f.loss.tobytes() == g.loss.tobytes()
    for k in ("a", "W", "b", "c"):
        assert np.asarray(f.snapshots[k]).tobytes() == np.asarray(g.snapshots[k]).tobytes(), k
    assert f.info["grad_evals"] == g.info["grad_evals"]


def test_gd_trajectory_equals_general_integrator(problem, monkeypatch):
    sched = popdyn.Schedule(every=7, early=(1, 3, 20))
    f, g = _pair(problem, monkeypatch, lr=0.05, max_updates=60, schedule=sched,
                 head_lr_mult=0.5, bias_lr_mult=2.0, intercept_lr_mult=0.3)
    _same(f, g)
    assert list(f.snap_n) == [0, 1, 3, 7, 14, 20, 21, 28, 35, 42, 49, 56, 60]
    assert f.status == "horizon" and f.n[-1] == 60


def test_gd_stopping_rules_equal_general_integrator(problem, monkeypatch):
    f, g = _pair(problem, monkeypatch, lr=0.1, max_time=1.25, max_updates=1000,
                 schedule=popdyn.Schedule(every=4, early=()))
    _same(f, g)
    assert f.status == "horizon" and f.t[-1] >= 1.25 > f.t[-2]
    f, g = _pair(problem, monkeypatch, lr=0.5, loss_target=0.8, max_updates=10_000)
    _same(f, g)
    assert f.status == "converged" and f.normalized_loss[-1] <= 0.8 < f.normalized_loss[-2]


def test_gd_divergence_keeps_last_finite_state(problem, monkeypatch):
    s, p, t = problem
    f, g = _pair(problem, monkeypatch, lr=80.0, max_updates=500)
    _same(f, g)
    assert f.status == "diverged"
    assert f.final.is_finite() and np.all(np.isfinite(f.loss))
    L, _ = loss_and_grad(s, f.final, t)
    assert L == pytest.approx(f.loss[-1], rel=1e-13)
    # the accepted states obey the divergence bound explode·max(L0, V_Y)
    assert f.loss.max() <= 1e6 * max(f.loss[0], t.variance)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["silu", "tanh", "sin", "gaussian_bump", "h3+0.3h2"]),
       st.integers(0, 2 ** 16), st.sampled_from([1e-3, 0.05, 0.5, 3.0]),
       st.sampled_from([(1.0, 0.0), (0.9, 0.1)]))
def test_per_unit_truncation_within_its_bound(link, seed, scale, pq):
    """pl_link_sums cuts each unit's Mehler sums at its own order N_i ≤ N; the dropped terms
    (against the full sums to the link's order N, evaluated by the plain Mehler kernel) stay
    within the bound ``trunc`` that the engine adds to errCt."""
    from popdyn._kernels import mehler as km
    from popdyn._moments import UnitSet, _geometry, link_tables

    rng = np.random.default_rng(seed)
    d, m, k = 6, 9, 2
    W = rng.standard_normal((m, d)) * scale
    W[0] = 0.0
    al = np.linalg.norm(W, axis=1)
    th = np.where(al[:, None] > 0, W / np.where(al > 0, al, 1.0)[:, None], 0.0)
    be = rng.standard_normal(m) * scale
    g = popdyn.Teacher.additive(link, np.eye(d)[:k]).link
    N, H, dH, L1, ttol = link_tables(g)
    su = UnitSet("pl", al, be, th, np.full(m, pq[0]), np.full(m, pq[1]))
    tu = UnitSet("link", np.ones(k), np.zeros(k), np.eye(d)[:k], link=g)
    R = _geometry(su, tu)
    out = [np.zeros((m, k)) for _ in range(4)]
    trunc = np.zeros(m)
    km.pl_link_sums(pq[0], pq[1], al, be, R, H, dH, L1, ttol, True, *out, trunc)
    from popdyn._kernels.hermite import pl_coeffs
    S, Dd, Dd2 = (np.empty((m, N + 1)) for _ in range(3))
    pl_coeffs(pq[0], pq[1], al, be, S, Dd, Dd2)
    Rc = np.clip(R, -1.0, 1.0)
    for X, Y, got in ((S, H, out[0]), (Dd, dH, out[1]), (Dd2, H, out[2]), (Dd, H, out[3])):
        full = np.empty((m, k))
        km.mehler(X, np.tile(Y, (k, 1)), Rc, full)
        rnd = 4.0 * (N + 2) * 2.0 ** -53 * np.abs(X) @ np.abs(np.tile(Y, (k, 1))).T
        assert np.all(np.abs(got - full) <= trunc[:, None] + rnd), (link, np.abs(got - full).max())
    assert np.all(trunc <= 1.0 * ttol * np.maximum(al, 1.0))
