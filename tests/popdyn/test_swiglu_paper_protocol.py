"""The experimental protocol of Kumar (arXiv 2609.39408) App. U.6 for the biased SwiGLU student:
the Euler rule θ ← θ − mΔt∇L with L = Var(y − f̃) on the mean-field coordinates, the 1%
relative-change cap and Δt ≤ 50, the stopping rules, the loss-selected prefix, the
equilibrated eigencutoff refit and the A_top / A_min alignments with the U.8 resolution rule.

References: central differences of the profiled loss in the paper's coordinates (the
integrator's factors m, 2 and 1/m), closed forms for the refit (V − bᵀG⁻¹b, and −‖β‖² for a
rank-deficient Gram) and for the alignments (explicit spectra), hypothesis for the
equilibration invariance.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn import SwiGLUStudent, Teacher
from popdyn import swiglu as sw
from popdyn.dynamics import Schedule, Trajectory
from popdyn.swiglu import SwiGLUBiasParams


def tiny():
    d, m = 2, 3
    T = Teacher.additive("relu", np.eye(d)[:1], [np.sqrt(2.0)])
    s = SwiGLUStudent(d, m, biases=True, clock="mean_field")
    rng = np.random.default_rng(2)
    p = SwiGLUBiasParams(rng.normal(size=m) / m, 0.6 * rng.normal(size=(m, d)),
                         0.6 * rng.normal(size=(m, d)), 0.5 * rng.normal(size=m),
                         0.5 * rng.normal(size=m))
    return s, sw.fit_intercept_biased(s, p, T), T


def to_paper(p, m):
    return np.concatenate([m * p.a, p.G.ravel(), p.V.ravel(), p.bg, p.bv])


def neuron_rows(p, m):
    """Per-neuron paper coordinates θ_j = (ã_j, g_j, b_j, v_j, c_j), one row per neuron."""
    return np.column_stack([m * p.a, p.G, p.bg, p.V, p.bv])


def max_neuron_change(p, q, m):
    a, b = neuron_rows(p, m), neuron_rows(q, m)
    return float(np.max(np.linalg.norm(b - a, axis=1) / np.linalg.norm(a, axis=1)))


def from_paper(th, m, d):
    k = m * d
    return SwiGLUBiasParams(th[:m] / m, th[m:m + k].reshape(m, d),
                            th[m + k:m + 2 * k].reshape(m, d), th[m + 2 * k:2 * m + 2 * k],
                            th[2 * m + 2 * k:], 0.0)


def var_loss(s, th, T):
    """L = Var(y − f̃) at the fitted intercept = E[(y − f)²] there."""
    q = sw.fit_intercept_biased(s, from_paper(th, s.m, s.d), T)
    return 2.0 * s.family.loss(q, T, s.family.moments(q, T))


def test_euler_step_is_minus_m_dt_grad_of_var_loss():
    s, p, T = tiny()
    m, d = s.m, s.d
    _, g, p = s.family.evaluate(p, T, 1e-10)
    dt = 0.37
    q = sw._paper_axpy(p, g, dt, m)
    th = to_paper(p, m)
    h = 1e-5
    fd = np.array([(var_loss(s, th + h * e, T) - var_loss(s, th - h * e, T)) / (2 * h)
                   for e in np.eye(th.size)])
    want = th - m * dt * fd
    got = to_paper(q, m)
    assert np.max(np.abs(got - want)) <= 1e-8 * np.max(np.abs(want - th))


def test_adaptive_step_caps_relative_change():
    s, p, T = tiny()
    _, g, p = s.family.evaluate(p, T, 1e-10)
    m = s.m
    dt = sw.paper_step(p, g, m)
    assert dt < 50.0
    # the default (the paper's rule): no neuron's parameter vector moves by more than 1 %,
    # and the one that limits the step moves by exactly 1 %
    assert abs(max_neuron_change(p, sw._paper_axpy(p, g, dt, m), m) - 0.01) < 1e-12
    # one Euclidean norm over every parameter
    dtg = sw.paper_step(p, g, m, rel_norm="global")
    th0, th1 = to_paper(p, m), to_paper(sw._paper_axpy(p, g, dtg, m), m)
    assert abs(np.linalg.norm(th1 - th0) / np.linalg.norm(th0) - 0.01) < 1e-12
    assert dt <= dtg
    assert sw.paper_step(p, g, m, rel_change=1e9) == 50.0
    assert sw.paper_step(p, g, m, rel_change=1e9, dt_max=7.0) == 7.0
    assert sw.paper_step(p, g, m, dt=0.1) == 0.1


def test_train_paper_stopping_rules_and_clock():
    s, p, T = tiny()
    tr = sw.train_paper(s, p, T, n_max=3)
    assert tr.status == "horizon" and tr.n[-1] == 3
    assert np.isclose(tr.t[-1], tr.info["dt_used"].sum(), rtol=1e-15)
    tr = sw.train_paper(s, p, T, dt=0.3, t_max=1.0)
    assert tr.status == "horizon" and tr.n[-1] == 4          # first t ≥ t_max (one overshoot)
    assert np.allclose(tr.t, 0.3 * np.arange(5))
    ell = tr.normalized_loss
    assert np.isclose(ell[0], var_loss(s, to_paper(p, s.m), T) / T.variance, rtol=1e-13)
    stop = 0.9995 * ell[0]
    tr = sw.train_paper(s, p, T, loss_stop=stop, n_max=2000)
    ell = tr.normalized_loss
    assert tr.status == "converged" and ell[-1] <= stop and np.all(ell[:-1] > stop)
    # the loss is evaluated at the fitted intercept at every state
    last = tr.final
    assert last.c == sw.fit_intercept_biased(s, last, T).c


def test_train_paper_input_errors():
    s, p, T = tiny()
    with pytest.raises(ValueError, match="`rel_change`"):
        sw.train_paper(s, p, T, rel_change=0.0)
    with pytest.raises(ValueError, match="`dt`"):
        sw.train_paper(s, p, T, dt=-1.0)
    with pytest.raises(ValueError, match="`student.intercept` must be True"):
        s2 = SwiGLUStudent(2, 3, biases=True, intercept=False)
        sw.train_paper(s2, p.replace(c=0.0), T)


def test_loss_prefix_on_a_synthetic_record():
    ell = np.array([1.0, 1.0002, 0.9995, 0.9991, 0.9989, 0.99, 0.9995])
    n = np.arange(ell.size)
    tr = Trajectory(n, 0.5 * n, ell / 2, np.array([0, 2, 4, 6]), np.array([0, 1.0, 2.0, 3.0]),
                    {}, "horizon", None, 1.0)
    pre = sw.loss_prefix(tr, 1e-3)
    assert pre["n_end"] == 3 and pre["t_end"] == 1.5 and pre["n_P"] == 2 and pre["t_P"] == 1.0
    assert pre["l_P"] == 0.9995 and pre["snap"] == 1
    pre = sw.loss_prefix(tr, 1e-4)
    assert pre["n_end"] == 0 and pre["n_P"] == 0


def test_refit_closed_forms():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5))
    G = A @ A.T + 0.5 * np.eye(5)
    b = rng.normal(size=5) * 0.3
    vy = 3.0
    out = sw.refit_eigcut(G, b, vy)
    assert abs(out["R"] - (vy - b @ np.linalg.solve(G, b)) / vy) < 1e-13 and out["rank"] == 5
    # rank-deficient Gram G = BBᵀ (rank 2 of 5), b = Bβ: inf R = (V − ‖β‖²)/V
    B = rng.normal(size=(5, 2))
    beta = np.array([0.4, -0.7])
    out = sw.refit_eigcut(B @ B.T, B @ beta, 1.0)
    assert abs(out["R"] - (1.0 - beta @ beta)) < 1e-12 and out["rank"] == 2
    # the solver uses the symmetric part
    E = rng.normal(size=(5, 5)) * 1e-6
    out = sw.refit_eigcut(G + (E - E.T), b, vy)
    assert abs(out["R"] - (vy - b @ np.linalg.solve(G, b)) / vy) < 1e-13
    assert out["asymmetry"] > 0


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_refit_is_invariant_under_feature_rescaling(seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(4, 4))
    G = A @ A.T + 0.1 * np.eye(4)
    b = 0.2 * rng.normal(size=4)
    D = np.exp(rng.uniform(-6, 6, size=4))
    r1 = sw.refit_eigcut(G, b, 1.0)["R"]
    r2 = sw.refit_eigcut(D[:, None] * G * D[None, :], D * b, 1.0)["R"]
    assert abs(r1 - r2) < 1e-10


def test_alignment_closed_forms():
    d = 4
    c, s = np.cos(0.3), np.sin(0.3)
    e1 = np.array([c, s, 0, 0])
    e2 = np.array([-s, c, 0, 0])
    M = 3 * np.outer(e1, e1) + 1 * np.outer(e2, e2) + 0.5 * np.eye(d)
    U = np.eye(d)[:, :1]
    out = sw.alignment_paper(M, U)
    assert abs(out["A_top"] - c * c) < 1e-14 and abs(out["A_min"] - c * c) < 1e-14
    assert out["resolved"]
    # a doubly degenerate top eigenvalue: min over the eigenspace span{e_1, e_2} of ‖P_U e‖² = 0
    M = np.diag([2.0, 2.0, 1.0, 0.0])
    out = sw.alignment_paper(M, np.eye(d)[:, :1])
    assert out["A_top"] == 0.0 and not out["resolved"]
    # rank 2: A_min = σ_min²(UᵀQ_2)
    M = np.diag([3.0, 2.0, 1.0, 0.5])
    U = np.stack([np.eye(d)[0], (np.eye(d)[1] + np.eye(d)[2]) / np.sqrt(2)], axis=1)
    out = sw.alignment_paper(M, U)
    assert abs(out["A_min"] - 0.5) < 1e-14 and out["A_top"] == 1.0 and out["resolved_r"]
    # a negative eigenvalue below the screening ratio is unresolved
    out = sw.alignment_paper(np.diag([1.0, 0.5, -1e-6, 0.0]), np.eye(d)[:, :1])
    assert not out["resolved"]


def test_paper_diagnostics_smoke_run():
    """A d = 4, m = 6 run of the protocol (App. U.6 smoke size, ε = 0.1, relu teacher): in the
    first update the fastest neuron's parameters change by exactly 1%, the loss leaves 1 and the
    diagnostics are finite and resolved at initialization."""
    d, m = 4, 6
    T = Teacher.additive("relu", np.eye(d)[:1], [np.sqrt(2.0)])
    s = SwiGLUStudent(d, m, biases=True, clock="mean_field")
    p = s.init(0, 0.1, T, convention="paper")
    tr = sw.train_paper(s, p, T, n_max=40, schedule=Schedule(every=20, early=()),
                        recorder=lambda st_, q, TT, **kw: sw.paper_diagnostics(st_, q, TT,
                                                                                np.eye(d)[:1]))
    p1 = sw._paper_axpy(tr.snapshot(0), s.family.evaluate(tr.snapshot(0), T, 1e-10)[1],
                        tr.info["dt_used"][0], m)
    assert abs(max_neuron_change(tr.snapshot(0), p1, m) - 0.01) < 1e-12
    r0 = tr.records[0]
    assert r0["resolved"] and 0 <= r0["A_top"] <= 1 and 0 <= r0["R"] <= 1
    assert r0["R_band"][0] <= r0["R"] <= r0["R_band"][1]
    assert abs(r0["l"] - tr.normalized_loss[0]) < 1e-14


def test_fixed_step_equals_popdyn_train_on_the_mean_field_clock():
    """Fixed-Δt paper GD is popdyn.train(method="gd", lr=2Δt) of a mean-field-clock student
    (an independent code path: the family's rates and dynamics._train_rescaled)."""
    s, p, T = tiny()
    a = sw.train_paper(s, p, T, dt=0.2, n_max=4)
    b = popdyn_train(s, p, T, method="gd", lr=0.4, max_updates=4)
    assert np.allclose(a.loss, b.loss, rtol=1e-13, atol=0)
    for f in ("a", "G", "V", "bg", "bv"):
        assert np.allclose(getattr(a.final, f), getattr(b.final, f), rtol=1e-12, atol=1e-15)
    assert np.allclose(2 * a.t, b.t, rtol=1e-15)


def popdyn_train(*args, **kw):
    import popdyn
    return popdyn.train(*args, **kw)


def test_block_relative_change():
    s, p, T = tiny()
    _, g, p = s.family.evaluate(p, T, 1e-10)
    m = s.m
    dt = sw.paper_step(p, g, m, rel_norm="block")
    q = sw._paper_axpy(p, g, dt, m)
    ratios = [np.linalg.norm(getattr(q, f) - getattr(p, f)) / np.linalg.norm(getattr(p, f))
              for f in p._ARRAYS]
    assert abs(max(ratios) - 0.01) < 1e-12
    assert dt <= sw.paper_step(p, g, m)
    with pytest.raises(ValueError, match="`rel_norm` must be one of"):
        sw.paper_step(p, g, m, rel_norm="blocks")


def test_refit_paper_agrees_with_popdyn_refit_risk():
    """Two implementations of the unrestricted refit at one state: the paper's equilibrated
    eigencutoff solve and popdyn.refit_risk (risk in units of V_Y there)."""
    import popdyn
    d, m = 4, 5
    T = Teacher.additive("relu", np.eye(d)[:1], [np.sqrt(2.0)])
    s = SwiGLUStudent(d, m, biases=True, clock="mean_field")
    p = s.init(1, 0.6, T, convention="paper")
    R = sw.refit_paper(s, p, T)
    ref = popdyn.refit_risk(s, p, T, "unrestricted")
    assert abs(R["R"] * T.variance - ref.risk) < 1e-10
    assert R["band"][0] <= R["R"] <= R["band"][1] and R["rank"] == m
