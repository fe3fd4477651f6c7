"""popdyn.gauge: reaction–transport decomposition, gauge, invariants, specialization times,
sweeps and ownership (docs/design.md §7; the feature-ownership paper).

The decomposition identities are tested against quantities recomputed here from
:func:`popdyn.population_grad` alone (an evaluation independent of the decomposition's own
residual moments): ȧ = −∂L/∂a, dŵ/dt = −∂L/∂ŵ, ċ = ȧ|ŵ| + a θ·dŵ/dt, θ̇ = (I − θθᵀ)(dŵ/dt)/|ŵ|.
Relative errors are normwise over the neurons, against the size of the terms.
"""
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import popdyn
from popdyn import gauge

# closed forms, finite Hermite sums and truncated Hermite series (tanh, sin, silu): the identities
# hold to rounding for all of them (each truncated term satisfies Euler's identity)
TEACHERS = ["relu_network", "h2", "h3+0.3h2", "relu", "abs", "h1", "tanh", "sin", "silu"]


def make(seed, act="relu", bias=True, intercept=True, scaling="standard", teacher="relu_network",
         m=4, d=5, zero_head=False, zero_w=False):
    rng = np.random.default_rng(seed)
    student = popdyn.Student(d, m, act, negative_slope=0.2, bias=bias, intercept=intercept,
                             scaling=scaling)
    a = rng.normal(size=m)
    if zero_head:
        a[0] = 0.0
    W = rng.normal(size=(m, d)) * rng.uniform(0.2, 2.0) / np.sqrt(d)
    b = rng.normal(size=m) * 0.5 if bias else np.zeros(m)
    if zero_w:
        W[-1] = 0.0
        b[-1] = 0.0
    c = float(rng.normal() * 0.3) if intercept else 0.0
    p = popdyn.Params(a, W, b, c)
    if teacher == "relu_network":
        k = 2
        t = popdyn.Teacher.network("relu", rng.normal(size=k), rng.normal(size=(k, d)),
                                   rng.normal(size=k) * 0.5)
    else:
        U = np.linalg.qr(rng.normal(size=(d, 2)))[0].T
        t = popdyn.Teacher.additive(teacher, U, rng.uniform(0.5, 1.5, size=2))
    return student, p, t


def exact_rates(student, p, teacher):
    """ċ, θ̇ and ‖∇L‖² from population_grad alone."""
    g = popdyn.population_grad(student, p, teacher)
    what = np.column_stack([p.W, p.b]) if student.bias else p.W
    gw = np.column_stack([g.W, g.b]) if student.bias else g.W
    norm = np.linalg.norm(what, axis=1)
    adot, wdot = -g.a, -gw
    th = what / norm[:, None]
    cdot = adot * norm + p.a * np.sum(th * wdot, axis=1)
    thdot = (wdot - th * np.sum(th * wdot, axis=1)[:, None]) / norm[:, None]
    gn2 = float(np.sum(g.a ** 2) + np.sum(g.W ** 2) + np.sum(g.b ** 2) + g.c ** 2)
    scale_c = np.max(np.abs(adot) * norm + np.abs(p.a) * np.linalg.norm(wdot, axis=1))
    scale_t = np.max(np.linalg.norm(wdot, axis=1) / norm)
    return cdot, thdot, gn2, scale_c, scale_t


state = st.tuples(st.integers(0, 10_000), st.sampled_from(["relu", "leaky_relu"]), st.booleans(),
                  st.booleans(), st.sampled_from(["standard", "mean_field"]), st.sampled_from(TEACHERS),
                  st.booleans())


@settings(max_examples=60)
@given(state)
@example((0, "relu", True, True, "standard", "relu_network", False))
@example((1, "leaky_relu", False, False, "mean_field", "h2", True))
@example((2, "relu", False, True, "standard", "abs", True))
def test_reaction_transport_identities(args):
    seed, act, bias, intercept, scaling, tk, zero_head = args
    student, p, teacher = make(seed, act, bias, intercept, scaling, tk, zero_head=zero_head)
    dec = gauge.decompose(student, p, teacher)
    cdot, thdot, gn2, sc, stt = exact_rates(student, p, teacher)
    assert np.max(np.abs(dec.c_dot - cdot)) <= 1e-12 * sc
    assert np.max(np.linalg.norm(dec.theta_dot - thdot, axis=1)) <= 1e-12 * stt
    total = (dec.dissipation_reaction + dec.dissipation_transport + dec.dissipation_intercept
             + dec.dissipation_degenerate)
    assert abs(total - gn2) <= 1e-12 * gn2
    assert dec.dL_dt == -dec.grad_norm2
    assert abs(dec.grad_norm2 - gn2) <= 1e-14 * gn2
    # derived quantities follow their definitions
    what = np.column_stack([p.W, p.b]) if bias else p.W
    norm = np.linalg.norm(what, axis=1)
    assert np.allclose(dec.c, p.a * norm, rtol=0, atol=1e-15 * np.max(np.abs(p.a * norm)))
    assert np.allclose(dec.reaction_mobility, p.a ** 2 + norm ** 2, rtol=1e-15, atol=0)
    assert np.allclose(dec.direction_speed, p.a / norm, rtol=1e-15)
    assert dec.theta.shape == (p.m, p.d + (1 if bias else 0)) and dec.augmented == bias
    assert dec.dissipation_intercept == (dec.grad.c ** 2 if intercept else 0.0)
    # G convention: ∂L/∂a = |ŵ| G, ∂L/∂ŵ = a H (G, H include the output scale s)
    g = dec.grad
    assert np.allclose(g.a, norm * dec.G, rtol=0, atol=1e-14 * np.max(np.abs(g.a)))
    gw = np.column_stack([g.W, g.b]) if bias else g.W
    assert np.allclose(gw, p.a[:, None] * dec.H, rtol=0, atol=1e-14 * max(np.max(np.abs(gw)), 1e-300))
    # θ·H = G (Euler) and the per-neuron split
    assert np.allclose(np.sum(dec.theta * dec.H, axis=1), dec.G, rtol=0,
                       atol=1e-12 * np.max(np.linalg.norm(dec.H, axis=1)))
    assert dec.conserved == pytest.approx(p.a ** 2 - norm ** 2, abs=1e-14)


@settings(max_examples=40)
@given(state, st.lists(st.floats(0.05, 20.0), min_size=1, max_size=4))
def test_gauge_leaves_loss_unchanged(args, lams):
    seed, act, bias, intercept, scaling, tk, _ = args
    student, p, teacher = make(seed, act, bias, intercept, scaling, tk)
    idx = list(range(len(lams)))
    q = gauge.apply(p, idx, lams, student=student)
    L0 = popdyn.population_loss(student, p, teacher)
    L1 = popdyn.population_loss(student, q, teacher)
    scale = L0 + 0.5 * teacher.second_moment + 0.5 * (gauge.group_contribution(student, p, None) + abs(p.c)) ** 2
    assert abs(L1 - L0) <= 1e-13 * scale
    # the gauge changes the ratio by λ² and keeps c
    d0, d1 = gauge.decompose(student, p, teacher), gauge.decompose(student, q, teacher)
    assert np.allclose(d1.c, d0.c, rtol=1e-14, atol=1e-15)
    assert np.allclose(d1.direction_speed[idx], d0.direction_speed[idx] * np.array(lams) ** 2, rtol=1e-13)
    # G is gauge invariant (it depends on θ and the function only)
    assert np.allclose(d1.G, d0.G, rtol=1e-10, atol=1e-13)


def test_residual_moments_match_population_grad():
    for seed in range(6):
        student, p, teacher = make(seed, "leaky_relu", True, True, "mean_field", "h3+0.3h2")
        L, g, R0, Rw, Rb = gauge._decompose._residual_moments(student, p, teacher, 1e-10)
        ref = popdyn.population_grad(student, p, teacher)
        s = student.s
        assert np.allclose(s * R0, ref.a, rtol=1e-14, atol=1e-16)
        assert np.allclose((s * p.a)[:, None] * Rw, ref.W, rtol=1e-14, atol=1e-16)
        assert np.allclose(s * p.a * Rb, ref.b, rtol=1e-14, atol=1e-16)
        assert L == pytest.approx(popdyn.population_loss(student, p, teacher), rel=1e-15)


def test_degenerate_and_zero_head_neurons():
    student, p, teacher = make(3, zero_head=True, zero_w=True)
    dec = gauge.decompose(student, p, teacher)  # no division by zero (filterwarnings = error)
    assert dec.degenerate.tolist() == [False, False, False, True]
    j = student.m - 1
    assert dec.c[j] == 0 and dec.G[j] == 0 and np.all(dec.theta[j] == 0) and dec.c_dot[j] == 0
    assert np.all(dec.theta_dot[j] == 0) and dec.direction_speed[j] == 0
    # zero head: c = 0, θ̇ = 0, ċ = −|ŵ|²G
    assert dec.c[0] == 0 and np.all(dec.theta_dot[0] == 0)
    assert dec.c_dot[0] == pytest.approx(-dec.reaction_mobility[0] * dec.G[0])
    g = dec.grad
    gn2 = float(np.sum(g.a ** 2) + np.sum(g.W ** 2) + np.sum(g.b ** 2) + g.c ** 2)
    assert dec.dissipation_total == pytest.approx(gn2, rel=1e-12)
    res = gauge.identity_residuals(student, p, dec)
    assert max(res.values()) <= 1e-12


def test_identity_residuals_are_rounding_level():
    for seed in range(5):
        student, p, teacher = make(seed, "relu", True, True)
        res = gauge.identity_residuals(student, p, gauge.decompose(student, p, teacher))
        assert set(res) == {"c_dot", "theta_dot", "dissipation", "conservation"}
        assert max(res.values()) <= 1e-12


# ---------------------------------------------------------------------------- bad input
def test_apply_rejects_bad_gauge_factors():
    student, p, _ = make(0)
    for bad in (0.0, -1.0, np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="`D`"):
            gauge.apply(p, 0, bad)
    with pytest.raises(ValueError, match="`D`"):
        gauge.apply(p, [0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="`D`"):
        gauge.apply(p, [0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="`D`"):
        gauge.apply(p, 0, True)
    with pytest.raises(TypeError, match="`D`"):
        gauge.apply(p, 0, "2")
    with pytest.raises(ValueError, match="`D`"):
        gauge.set_ratio(p, 0, -2.0)


def test_apply_rejects_bad_neurons_and_params():
    student, p, _ = make(0)
    with pytest.raises(ValueError, match="`neurons`"):
        gauge.apply(p, [student.m], 2.0)
    with pytest.raises(ValueError, match="`neurons`"):
        gauge.apply(p, [-1], 2.0)
    with pytest.raises(ValueError, match="`neurons`"):
        gauge.apply(p, [0, 0], 2.0)
    with pytest.raises(ValueError, match="`neurons`"):
        gauge.apply(p, np.array([True, False]), 2.0)
    with pytest.raises(TypeError, match="`neurons`"):
        gauge.apply(p, [0.5], 2.0)
    with pytest.raises(TypeError, match="`params`"):
        gauge.apply(p.flat(), 0, 2.0)


def test_non_homogeneous_activation_is_rejected():
    for act in ("silu", "gelu", "tanh", "erf"):
        student, p, teacher = make(0, act)
        with pytest.raises(ValueError, match=r"`student.activation`.*positively homogeneous"):
            gauge.apply(p, 0, 2.0, student=student)
        with pytest.raises(ValueError, match=r"`student.activation`"):
            gauge.set_ratio(p, 0, 2.0, student=student)
        with pytest.raises(ValueError, match=r"`student.activation`"):
            gauge.decompose(student, p, teacher)
    with pytest.raises(TypeError, match="`student`"):
        gauge.decompose("relu", p, teacher)


def test_thresholds_outside_unit_interval_are_rejected():
    student, p, teacher = make(0)
    tr = popdyn.train(student, p, teacher, method="gd", lr=0.01, max_updates=3)
    for bad in (0.0, 1.0, -0.2, 1.5, np.nan, [0.5, 1.0], []):
        with pytest.raises(ValueError, match="`thresholds`"):
            gauge.specialization_times(tr, teacher, bad)
        with pytest.raises(ValueError, match="`thresholds`"):
            gauge.reduced_specialization_times(1.0, 2.0, 0.3, bad)
        with pytest.raises(ValueError, match="`thresholds`"):
            gauge.gauge_sweep("ratio", [2.0, 4.0], c0=1.0, d=10, thresholds=bad)
    with pytest.raises(ValueError, match="`thresholds`"):
        gauge.specialization_time(student, p, teacher, [1.2], lr=0.01, max_time=0.05)


def test_sweep_bad_inputs():
    with pytest.raises(ValueError, match="`gauges`"):
        gauge.gauge_sweep("ratio", [1.0, 2.0], c0=1.0, d=10)
    with pytest.raises(ValueError, match="`gauges`"):
        gauge.gauge_sweep("ratio", [4.0, 2.0], c0=1.0, d=10)
    with pytest.raises(ValueError, match="`parametrization`"):
        gauge.gauge_sweep("lambda", [2.0, 4.0], c0=1.0, d=10)
    with pytest.raises(ValueError, match="`c0`"):
        gauge.gauge_sweep("ratio", [2.0, 4.0], c0=0.0, d=10)
    with pytest.raises(ValueError, match="requires c0·D ≥ 10"):
        gauge.regime_table({"ratio/large-imbalance": [(1.0, (2.0, 4.0, 8.0))]}, ds=(10,))
    with pytest.raises(ValueError, match="unknown regime"):
        gauge.regime_table({"ratio/huge": [(1.0, (20.0, 40.0, 80.0))]}, ds=(10,))


# ---------------------------------------------------------------------------- gauge helpers
def test_set_ratio_and_conserved():
    student, p, teacher = make(5)
    q = gauge.set_ratio(p, [0, 2], [3.0, 0.25], student=student)
    what = np.column_stack([q.W, q.b])
    nq = np.linalg.norm(what, axis=1)
    assert np.abs(q.a[0]) / nq[0] == pytest.approx(3.0, rel=1e-14)
    assert np.abs(q.a[2]) / nq[2] == pytest.approx(0.25, rel=1e-14)
    n0 = np.linalg.norm(np.column_stack([p.W, p.b]), axis=1)
    assert np.allclose(q.a * nq, p.a * n0, rtol=1e-14)
    assert np.array_equal(q.a[[1, 3]], p.a[[1, 3]])
    assert gauge.conserved(q) == pytest.approx(q.a ** 2 - nq ** 2, abs=1e-13)
    p0 = p.replace(a=np.where(np.arange(p.m) == 0, 0.0, p.a))
    with pytest.raises(ValueError, match="ratio"):
        gauge.set_ratio(p0, 0, 2.0)


def test_gd_drift_is_first_order_and_flow_rate_zero():
    student, p, teacher = make(7, "relu", True, True)
    drifts = []
    for h in (0.04, 0.02, 0.01):
        tr = popdyn.train(student, p, teacher, method="gd", lr=h, max_updates=int(round(1.0 / h)))
        drifts.append(gauge.conserved_drift(tr).max_abs)
    orders = np.log2(np.array(drifts[:-1]) / np.array(drifts[1:]))
    assert np.all(np.abs(orders - 1.0) < 0.25), orders
    # the head multiplier breaks the invariant: drift does not vanish with the step
    tr = popdyn.train(student, p, teacher, method="gd", lr=0.01, max_updates=100, head_lr_mult=2.0)
    assert gauge.conserved_drift(tr).max_abs > 10 * drifts[-1]


def test_alignment_and_contributions():
    student, p, teacher = make(2, "relu", False, False)
    cos = gauge.alignment(p, teacher)
    W = p.W / np.linalg.norm(p.W, axis=1)[:, None]
    assert np.allclose(cos, W @ teacher.theta.T)
    con = gauge.contributions(student, p)
    # bias-free relu: E[relu(w·x)²] = |w|²/2
    assert np.allclose(con, np.abs(p.a) * np.linalg.norm(p.W, axis=1) / np.sqrt(2), rtol=1e-13)
    # the joint contribution of a single neuron is its own
    assert gauge.group_contribution(student, p, [1]) == pytest.approx(con[1], rel=1e-13)


# ---------------------------------------------------------------------------- reduced flow
def test_reduced_flow_matches_engine_decomposition():
    rng = np.random.default_rng(0)
    states = [(float(np.exp(rng.uniform(-7, 1))), float(rng.uniform(-0.95, 0.99)),
               float(np.exp(rng.uniform(-5, 5)))) for _ in range(25)]
    assert gauge.reduced_vs_engine(states, d=4) <= 1e-12


def test_reduced_time_matches_engine_flow():
    for ratio in (8.0, 1 / 8.0):
        b = gauge.reduced_specialization_times(1.0, ratio, 1 / np.sqrt(10), [0.5])[0][0]
        eng = gauge.engine_specialization_time(10, 1.0, ratio, 0.5)
        assert abs(eng - b.estimate) <= 1e-6 * b.estimate
        assert b.provenance == "numerical" and b.lo <= b.estimate <= b.hi


def test_reduced_times_edge_cases():
    out, _ = gauge.reduced_specialization_times(1.0, 2.0, 0.6, [0.5, 0.9])
    assert (out[0].lo, out[0].hi) == (0.0, 0.0)   # already aligned beyond 0.5
    assert 0 < out[1].lo <= out[1].hi < np.inf
    out, _ = gauge.reduced_specialization_times(1.0, 2.0, 0.3, [0.9], t_max=1e-3)
    assert out[0].hi == np.inf and out[0].lo == 1e-3


def test_specialization_time_refinement_brackets_the_flow_time():
    d, c0, ratio = 10, 1.0, 4.0
    red = gauge.reduced_specialization_times(c0, ratio, 1 / np.sqrt(d), [0.5, 0.7])[0]
    student, p, teacher = gauge.single_neuron_problem(d, c0, ratio)
    rt = gauge.specialization_time(student, p, teacher, [0.7, 0.5], lr=0.004, max_time=0.6)
    assert rt.steps == (0.004, 0.002, 0.001)
    for k in range(2):
        b = rt.t[0, k]
        assert b.provenance == "numerical"
        assert b.lo <= red[k].estimate <= b.hi, (b, red[k])
        # update clock of the base run brackets the same crossing
        assert rt.n_lo[0, k] * 0.004 <= rt.levels[0].t_hi[0, k]
        assert rt.n_hi[0, k] - rt.n_lo[0, k] == 1


def test_specialization_times_snapshot_rule():
    student, p, teacher = gauge.single_neuron_problem(10, 1.0, 4.0)
    tr = popdyn.train(student, p, teacher, method="gd", lr=0.01, max_updates=40,
                      schedule=popdyn.Schedule(every=5, early=()))
    sp = gauge.specialization_times(tr, teacher, [0.2, 0.5, 0.999])
    cos = gauge.alignment(tr.final, teacher)
    assert sp.t_lo[0, 0] == 0 and sp.t_hi[0, 0] == 0        # cos0 = 0.316 ≥ 0.2 at t = 0
    assert sp.reached[0, 1] and sp.t_hi[0, 1] - sp.t_lo[0, 1] == pytest.approx(0.05)
    assert sp.n_hi[0, 1] % 5 == 0
    assert not sp.reached[0, 2] and sp.t_hi[0, 2] == np.inf and cos[0, 0] < 0.999
    snaps_cos = [gauge.alignment(tr.snapshot(i), teacher)[0, 0] for i in range(len(tr))]
    i = int(np.flatnonzero(np.array(snaps_cos) >= 0.5)[0])
    assert sp.t_hi[0, 1] == tr.snap_t[i] and sp.t_lo[0, 1] == tr.snap_t[i - 1]


def test_sweep_reproduces_design_regimes():
    """docs/design.md §7: Θ(D²) at large imbalance (slope 2.00), Θ(D) at small init, T_fav ≈
    const/D."""
    sw = gauge.gauge_sweep("ratio", [20.0, 40.0, 80.0], c0=1.0, d=10, thresholds=[0.5])
    for s in sw.slopes[0]:
        assert abs(s.estimate - 2.0) < 0.02 and s.lo <= s.estimate <= s.hi
    sw2 = gauge.gauge_sweep("ratio", [256.0, 1024.0], c0=1e-5, d=10, thresholds=[0.5])
    assert abs(sw2.slopes[0][0].estimate - 1.0) < 0.05
    sw3 = gauge.gauge_sweep("scaling", [16.0, 32.0], c0=1e-5, d=10, thresholds=[0.5])
    assert sw3.slopes[0][0].estimate == pytest.approx(2 * sw2.slopes[0][0].estimate, rel=1e-9)
    fd = [p.t_fav.estimate * p.gauge for p in sw.points[0]]
    assert np.ptp(fd) / np.mean(fd) < 0.01
    assert "T_opp/T_fav" in sw.table()


# ---------------------------------------------------------------------------- ownership
def test_duplicate_start_has_the_same_function_for_every_gauge():
    X = np.random.default_rng(0).standard_normal((50, 6))
    outs = []
    for others in ("opposite", "balanced"):
        for D in (1.5, 8.0):
            student, p, teacher = gauge.duplicate_start(3, c0=0.7, D=D, d=6, others=others)
            outs.append(student(p, X))
    for o in outs[1:]:
        assert np.allclose(o, outs[0], rtol=1e-13, atol=1e-15)


def test_ownership_selection_and_pruning_population_and_finite():
    # others' contribution decays like exp(-0.73 t) here (≈ 1e-10 by t = 30)
    pop = gauge.ownership(3, c0=1.0, D=16.0, d=6, others="opposite", lr=0.01, max_time=30.0, every=50)
    assert pop.selected and pop.owner == 0 and pop.selection_ratio > 1
    assert pop.final_others_rel < 1e-8
    assert pop.loss[-1] < 1e-10 * pop.loss[0]
    assert pop.cos[-1, 0] > 0.999
    fin = gauge.ownership(3, c0=1.0, D=16.0, d=6, others="opposite", mode="finite", n_samples=1000,
                          seed=1, lr=0.01, max_time=30.0, every=50)
    assert fin.selected and fin.final_others_rel < 1e-8
    assert fin.empirical_loss is not None and fin.empirical_loss[-1] < 1e-10
    bal = gauge.ownership(3, c0=1.0, D=16.0, d=6, others="balanced", lr=0.01, max_time=20.0, every=50)
    assert bal.selected and bal.final_others_rel > 1e-3     # balanced others keep a share
    with pytest.raises(ValueError, match="`others`"):
        gauge.ownership(3, others="favorable")
    with pytest.raises(ValueError, match="`k`"):
        gauge.ownership(1)


# ---------------------------------------------------------------------------- mpmath reference
MP_CASES = [
    # relu with biases and intercept, relu-network teacher (non-orthogonal, with bias)
    dict(activation="relu", W=[[0.3, -0.5, 0.2], [0.1, 0.4, -0.7]], a=[0.8, -1.1], b=[0.2, -0.1], c=0.1,
         scaling="standard",
         teacher=dict(kind="network", activation="relu", V=[1.0, -0.5], U=[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]],
                      bias=[0.0, 0.25])),
    # leaky relu, bias-free, mean field, additive h2 + relu teacher
    dict(activation="leaky_relu", negative_slope=0.25, W=[[0.6, -0.2, 0.1], [-0.3, 0.3, 0.9], [0.05, 0.7, -0.2]],
         a=[0.5, 1.25, -0.75], b=[0.0, 0.0, 0.0], c=0.0, scaling="mean_field",
         teacher=dict(kind="additive", link="h3+0.3h2", U=[[0.0, 1.0, 0.0]], kappa=[1.5])),
]


def _mp_decomposition(case, bias, intercept):
    """Reaction–transport quantities from the 40-digit mpmath gradient of tests/_mpref.py
    (independent of popdyn): G = ∂L/∂a / |ŵ|, H = ∂L/∂ŵ / a, ċ = ȧ|ŵ| + a θ·dŵ/dt, reaction and
    transport by their definitions, ‖∇L‖², and θ·H − G (zero by Euler's identity)."""
    import sys
    from pathlib import Path

    from mpmath import mp, mpf

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import _mpref

    out = _mpref.reference_mp(case, dps=40)
    with mp.workdps(50):
        g = out["grad"]
        rows = []
        for j, aj in enumerate(case["a"]):
            aj = mpf(aj)
            what = [mpf(x) for x in case["W"][j]] + ([mpf(case["b"][j])] if bias else [])
            gw = list(g["W"][j]) + ([g["b"][j]] if bias else [])
            nrm = mp.sqrt(mp.fsum(x * x for x in what))
            th = [x / nrm for x in what]
            G = g["a"][j] / nrm
            H = [x / aj for x in gw]
            thH = mp.fsum(t * h for t, h in zip(th, H))
            PH = [h - t * thH for t, h in zip(th, H)]
            cdot = -g["a"][j] * nrm - aj * mp.fsum(t * x for t, x in zip(th, gw))
            rows.append(dict(G=G, cdot=cdot, euler=thH - G, reaction=(aj * aj + nrm * nrm) * G * G,
                             transport=aj * aj * mp.fsum(x * x for x in PH)))
        gn2 = mp.fsum([x * x for x in g["a"]] + [x * x for row in g["W"] for x in row]
                      + ([x * x for x in g["b"]] if bias else []) + ([g["c"] ** 2] if intercept else []))
        return rows, gn2, g["c"]


@pytest.mark.parametrize("case", MP_CASES, ids=["relu-bias-network", "leaky-meanfield-h3h2"])
def test_decomposition_against_mpmath_reference(case):
    bias = any(x != 0 for x in case["b"])
    intercept = case["c"] != 0
    W = np.array(case["W"])
    m, d = W.shape
    student = popdyn.Student(d, m, case["activation"], negative_slope=case.get("negative_slope", 0.01),
                             bias=bias, intercept=intercept, scaling=case["scaling"])
    p = popdyn.Params(case["a"], W, case["b"], case["c"])
    t = case["teacher"]
    if t["kind"] == "network":
        teacher = popdyn.Teacher.network(t["activation"], t["V"], t["U"], t["bias"])
    else:
        teacher = popdyn.Teacher.additive(t["link"], t["U"], t["kappa"])
    dec = gauge.decompose(student, p, teacher)
    rows, gn2, gc = _mp_decomposition(case, bias, intercept)
    for j, r in enumerate(rows):
        assert abs(float(r["euler"])) < 1e-30            # θ·H = G at 40 digits (docs/design.md §7)
        assert dec.G[j] == pytest.approx(float(r["G"]), rel=1e-13, abs=1e-15)
        assert dec.c_dot[j] == pytest.approx(float(r["cdot"]), rel=1e-13, abs=1e-15)
        assert dec.reaction[j] == pytest.approx(float(r["reaction"]), rel=1e-12, abs=1e-16)
        assert dec.transport[j] == pytest.approx(float(r["transport"]), rel=1e-12, abs=1e-16)
    assert dec.grad_norm2 == pytest.approx(float(gn2), rel=1e-13)
    total = (sum(float(r["reaction"]) for r in rows) + sum(float(r["transport"]) for r in rows)
             + (float(gc) ** 2 if intercept else 0.0))
    assert total == pytest.approx(float(gn2), rel=1e-14)   # the split holds for the reference too
