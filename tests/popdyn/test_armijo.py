"""Persistent Armijo backtracking (Kumar, arXiv 2609.39408, App. A eq. (19)), the paper's ReLU
student preset (§3 eqs. (2)-(3), App. D eq. (43)) and the "iid" initialization (§3, App. A).

The references are written here in plain numpy in the paper's units -- MSE = E[(y − f)²],
F = −(m/2)∇MSE, acceptance MSE(θ + hF) ≤ MSE(θ) − 1e−4 (2h/m)‖F‖² + 1e−13 max{1, |MSE(θ)|} --
from ``popdyn.population_loss`` / ``population_grad`` (the general moment engine), not from the
fused kernel the stepper runs.
"""
import numpy as np
import pytest

import popdyn
from popdyn.dynamics import METHODS, Schedule


def _flat(p):
    return np.concatenate([p.a, p.W.ravel(), p.b])


def _unflat(v, m, d):
    return popdyn.Params(v[:m], v[m:m + m * d].reshape(m, d), v[m + m * d:], 0.0)


def reference_armijo(st, p0, T, h0, updates, max_halvings=40):
    """Eq. (19) verbatim: returns (states, steps, halvings, mse) or raises at a failed search."""
    m, d = st.m, st.d

    def mse(v):
        return 2.0 * popdyn.population_loss(st, _unflat(v, m, d), T)

    def grad_mse(v):
        return 2.0 * _flat(popdyn.population_grad(st, _unflat(v, m, d), T))

    th, h = _flat(p0), h0
    states, steps, halvings, losses = [th], [], [], [mse(th)]
    for _ in range(updates):
        L = mse(th)
        F = -(m / 2.0) * grad_mse(th)
        k = 0
        while True:
            trial = th + h * F
            Lt = mse(trial) if np.all(np.isfinite(trial)) else np.inf
            if Lt <= L - 1e-4 * (2.0 * h / m) * (F @ F) + 1e-13 * max(1.0, abs(L)):
                break
            if k == max_halvings:
                raise RuntimeError("line search failed")
            h, k = h / 2.0, k + 1
        th = trial
        states.append(th); steps.append(h); halvings.append(k); losses.append(Lt)
    return np.array(states), np.array(steps), np.array(halvings), np.array(losses)


@pytest.fixture(scope="module")
def case():
    st = popdyn.Student.preset("paper_relu", 4, 5)
    T = popdyn.Teacher.additive("h2", np.eye(4)[:2], kappa=[2 ** -0.5, 2 ** -0.5])
    return st, st.init(3, 1.0, convention="iid"), T


def test_methods_registry():
    assert set(METHODS) == {"gd", "flow", "armijo"}
    with pytest.raises(ValueError, match=r"`method` must be one of \['armijo', 'flow', 'gd'\]"):
        popdyn.train(popdyn.Student(2, 2), popdyn.Params(np.ones(2), np.ones((2, 2)), np.ones(2)),
                     popdyn.Teacher.additive("h2", np.eye(2)[:1]), method="armijio")


@pytest.mark.parametrize("h0", [0.05, 40.0])
def test_armijo_matches_the_numpy_reference(case, h0):
    """Same accepted steps and halvings, same states: h0 = 0.05 (no backtracking on this
    case) and h0 = 40 (η = 100: backtracking at the first updates, then the reduced step
    persists)."""
    st, p0, T = case
    N = 25
    tr = popdyn.train(st, p0, T, method="armijo", h0=h0, max_updates=N,
                      schedule=Schedule(every=1, early=()))
    states, steps, halvings, losses = reference_armijo(st, p0, T, h0, N)
    assert tr.status == "horizon" and tr.info["failure"] is None
    assert tr.steps.tolist() == steps.tolist()
    assert tr.backtracks.tolist() == halvings.tolist()
    np.testing.assert_array_equal(tr.t[1:], np.cumsum(steps))
    for i in range(N + 1):
        q = tr.snapshot(i)
        assert q.c == 0.0
        np.testing.assert_allclose(_flat(q), states[i], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(tr.mse, losses, rtol=1e-12)
    # a rejected trial costs one evaluation; an accepted one reuses its gradient
    assert tr.info["grad_evals"] == 1 + N + int(halvings.sum())
    if h0 == 40.0:
        assert halvings.sum() > 0 and halvings[0] > 0
        assert np.all(np.diff(steps) <= 0)                   # persists, never increases
        assert tr.info["h"] == steps[-1]
        # the next run continues from the persistent step, not from h0
        cont = popdyn.train(st, tr.final, T, method="armijo", h0=tr.info["h"], max_updates=3)
        assert cont.steps[0] <= steps[-1]
    else:
        assert halvings.sum() == 0 and np.all(steps == h0)
    assert np.all(np.diff(tr.mse) <= 1e-13 * np.maximum(1, tr.mse[:-1]))


def test_armijo_decrease_test_is_in_paper_units(case):
    """The decrease term is 1e−4 (2h/m)‖F‖² with F = −(m/2)∇MSE: in popdyn's units (L = ½ MSE,
    g = ∇L) that is 1e−4·2hm‖g‖²; the stepper's slope is that quantity."""
    from popdyn.dynamics import _slope

    st, p0, T = case
    fam = st.family
    rates = fam.rates(fam.multipliers())
    kappa, _ = fam.clock()
    g = popdyn.population_grad(st, p0, T)
    slope = _slope(p0, fam.fields, lambda q, gg, h: fam.axpy(q, gg, h * kappa, rates))(g)
    F = -(st.m / 2.0) * 2.0 * _flat(g)
    assert slope == pytest.approx((2.0 / st.m) * (F @ F), rel=1e-14)


def test_line_search_failure_is_a_recorded_failure(case):
    st, p0, T = case
    tr = popdyn.train(st, p0, T, method="armijo", h0=1e4, max_halvings=2, max_updates=10)
    assert tr.status == "diverged" and tr.info["failure"] == "line_search"
    assert len(tr.loss) == 1 and tr.final.flat().tolist() == p0.flat().tolist()
    assert tr.info["grad_evals"] == 1 + 3
    # a non-finite trial is a rejection, not a crash
    tr = popdyn.train(st, p0, T, method="armijo", h0=1e308, max_halvings=1, max_updates=5)
    assert tr.status == "diverged" and tr.info["failure"] == "line_search"
    # with the paper's 40 halvings the same start succeeds
    tr = popdyn.train(st, p0, T, method="armijo", h0=1e4, max_updates=2)
    assert tr.status == "horizon" and tr.backtracks[0] > 2


def test_armijo_errors_name_the_argument(case):
    st, p0, T = case
    with pytest.raises(ValueError, match="`max_halvings` must be a non-negative int"):
        popdyn.train(st, p0, T, method="armijo", max_halvings=-1)
    with pytest.raises(ValueError, match="`h0` must be > 0"):
        popdyn.train(st, p0, T, method="armijo", h0=0.0)
    # the flow's step bounds do not constrain the Armijo step
    tr = popdyn.train(st, p0, T, method="armijo", h0=1e-9, max_updates=2)
    assert tr.steps.tolist() == [1e-9, 1e-9]


def test_armijo_general_path_is_the_fused_path(case, monkeypatch):
    """The fused evaluator and the general engine drive the same Armijo decisions."""
    import popdyn.dynamics as D

    st, p0, T = case
    a = popdyn.train(st, p0, T, method="armijo", h0=40.0, max_updates=12)
    monkeypatch.setattr(D, "_FUSED", False)
    b = popdyn.train(st, p0, T, method="armijo", h0=40.0, max_updates=12)
    assert a.steps.tolist() == b.steps.tolist() and a.backtracks.tolist() == b.backtracks.tolist()
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-13)


def test_armijo_deterministic_and_resumable(case):
    """Two runs agree bit for bit; a run split in two (the second continued from the first's
    final state and persistent step) is the same run."""
    st, p0, T = case
    a = popdyn.train(st, p0, T, method="armijo", h0=40.0, max_updates=20)
    b = popdyn.train(st, p0, T, method="armijo", h0=40.0, max_updates=20)
    assert a.loss.tolist() == b.loss.tolist() and a.steps.tolist() == b.steps.tolist()
    c1 = popdyn.train(st, p0, T, method="armijo", h0=40.0, max_updates=8)
    c2 = popdyn.train(st, c1.final, T, method="armijo", h0=c1.info["h"], max_updates=12)
    assert c1.steps.tolist() + c2.steps.tolist() == a.steps.tolist()
    assert c1.loss.tolist() + c2.loss[1:].tolist() == a.loss.tolist()


# ---------------------------------------------------------------------------- the preset
def test_paper_relu_preset_is_eq_2():
    st = popdyn.Student.preset("paper_relu", 5, 7)
    assert (st.activation, st.bias, st.intercept, st.scaling) == ("relu", True, False,
                                                                  "mean_field")
    assert st.s == 1 / 7
    with pytest.raises(ValueError, match="`name` must be one of \\['paper_relu'\\]"):
        popdyn.Student.preset("paper", 5, 7)


def test_paper_relu_gd_is_eq_3_and_eq_43():
    """GD with lr = h is Θ⁺ = Θ − η∇MSE with η = m h / 2 (eq. (3)), MSE = 2·population_loss;
    and its head update is A_j + h E[(y − f)σ(z_j)] (eq. (43)), checked by Monte Carlo
    (z-score) with f(x) = (1/m) Σ A_j relu(W_j·x + B_j) evaluated directly."""
    d, m, h = 3, 4, 0.3
    st = popdyn.Student.preset("paper_relu", d, m)
    T = popdyn.Teacher.additive("h3", np.eye(d)[:1])
    p = st.init(5, 1.0, convention="iid")
    tr = popdyn.train(st, p, T, method="gd", lr=h, max_updates=1)
    q = tr.final
    eta = m * h / 2.0
    grad_mse = 2.0 * _flat(popdyn.population_grad(st, p, T))
    np.testing.assert_allclose(_flat(q), _flat(p) - eta * grad_mse, rtol=1e-13, atol=1e-15)
    # eq. (43), head row, by Monte Carlo with the network written out in numpy
    rng = np.random.default_rng(20260915)
    X = rng.standard_normal((400_000, d))
    Z = X @ p.W.T + p.b
    S = np.maximum(Z, 0.0)
    f = S @ p.a / m
    e = T(X) - f
    samples = e[:, None] * S                         # (y − f) σ(z_j)
    est, se = samples.mean(0), samples.std(0) / np.sqrt(len(X))
    z = ((q.a - p.a) / h - est) / se
    assert np.all(np.abs(z) < 5), z
    # and the loss is ½ E[(y − f)²] (so MSE = 2L is eq. (2))
    sq = e ** 2
    zL = (2.0 * tr.loss[0] - sq.mean()) / (sq.std() / np.sqrt(len(X)))
    assert abs(zL) < 5, zL


# ---------------------------------------------------------------------------- iid init
def test_iid_init_moments_and_determinism():
    """Every scalar entry of a, W and b is N(0, s²/d): means and variances over draws by
    z-scores; the same seed gives the same arrays; the other conventions are unchanged."""
    d, m, s = 8, 16, 0.01
    st = popdyn.Student.preset("paper_relu", d, m)
    draws = [st.init(seed, s, convention="iid") for seed in range(400)]
    for name in ("a", "W", "b"):
        x = np.concatenate([getattr(p, name).ravel() for p in draws]) / (s / np.sqrt(d))
        n = x.size
        assert abs(x.mean()) * np.sqrt(n) < 5                      # mean 0
        assert abs(x.var() - 1.0) / np.sqrt(2.0 / n) < 5           # variance s²/d
    p1, p2 = st.init(7, s, convention="iid"), st.init(7, s, convention="iid")
    assert p1.flat().tolist() == p2.flat().tolist()
    # the same standard normals as "norm", with heads and biases scaled by 1/√d
    pn = st.init(7, s)
    np.testing.assert_array_equal(p1.W, pn.W)
    np.testing.assert_allclose(p1.a, pn.a / np.sqrt(d), rtol=1e-15)
    np.testing.assert_allclose(p1.b, pn.b / np.sqrt(d), rtol=1e-15)
    # the existing conventions, bit for bit as drawn by hand
    g = np.random.default_rng(7)
    a, W, b = g.standard_normal(m), g.standard_normal((m, d)), g.standard_normal(m)
    assert pn.a.tolist() == (a * s).tolist() and pn.W.tolist() == (W * (s / np.sqrt(d))).tolist()
    pe = st.init(7, s, convention="entry")
    assert pe.W.tolist() == (W * s).tolist() and pe.b.tolist() == (b * s).tolist()
    with pytest.raises(ValueError, match="`convention` must be one of \\['entry', 'iid', 'norm'\\]"):
        st.init(7, s, convention="IID")


# ---------------------------------------------------------------------------- sweeps
PAPER = """
name = "paper-protocol"
[teacher]
link = "h2"
rank = 2
kappa = [0.7071067811865476, 0.7071067811865476]
[student]
preset = "paper_relu"
d = 4
m = 5
[init]
scale = 0.1
convention = "iid"
seeds = [3]
fit_intercept = false
[train]
method = "armijo"
h0 = {h0}
max_halvings = 40
max_updates = 250
[schedule]
kind = "{kind}"
[diagnostics]
kinds = ["unrestricted"]
certify = false
geometry = false
[store]
checkpoint_every = 100
"""


def _paper_spec(h0=0.5, kind="a2"):
    from popdyn import config as C

    return C.expand(C.loads(PAPER.format(h0=h0, kind=kind)))[0]


@pytest.mark.parametrize("h0", [0.05, 40.0])
def test_sweep_run_is_the_direct_run_and_resumes_bit_for_bit(tmp_path, h0):
    """A config with the paper's preset, iid init, Armijo and the A.2 schedule: the stored run
    is the direct ``train`` call (steps, halvings, loss, event snapshots at E and E + 1), and an
    interrupted run resumed from its checkpoint is stored identically.  h0 = 0.05: E ≈ 216, so
    the plateau watch runs across three 100-update segments and a resume; h0 = 40: Armijo
    backtracks."""
    from popdyn.experiments import Store, run_one
    from popdyn.experiments.runner import spec_key

    from _stores import same_run

    spec = _paper_spec(h0)
    st_ = popdyn.Student.preset("paper_relu", 4, 5)
    T = popdyn.Teacher.additive("h2", np.eye(4)[:2], kappa=[2 ** -0.5] * 2)
    p0 = st_.init(3, 0.1, convention="iid")
    ref = popdyn.train(st_, p0, T, method="armijo", h0=h0, max_updates=250,
                       schedule=Schedule.named("a2"))
    run_one(spec, str(tmp_path / "a"))
    key = spec_key(spec)
    rec, arrs = Store(tmp_path / "a").record(key), Store(tmp_path / "a").arrays(key)
    assert arrs["loss"].tolist() == ref.loss.tolist()
    assert arrs["step"][1:].tolist() == ref.steps.tolist() and arrs["step"][0] == 0.0
    assert arrs["backtracks"][1:].tolist() == ref.backtracks.tolist()
    assert arrs["snap_n"].tolist() == ref.snap_n.tolist()
    np.testing.assert_array_equal(arrs["W"], ref.snapshots["W"])
    ev = rec["plateau_event"]
    E = ref.plateau.end
    assert ev["end_n"] == E and not ev["censored"] and ev["kind"] == "window"
    assert arrs["snap_n"][ev["E_index"]] == E and arrs["snap_n"][ev["E1_index"]] == E + 1
    assert rec["armijo"]["h"] == ref.info["h"] and rec["armijo"]["failure"] is None
    assert (E > 200) if h0 == 0.05 else (arrs["backtracks"].sum() > 0)
    # interrupted after one segment, resumed: the same stored run
    out = run_one(spec, str(tmp_path / "b"), _stop_after_segments=1)
    assert out["status"] == "interrupted"
    out = run_one(spec, str(tmp_path / "b"))
    assert out["resumed"]
    same_run(Store(tmp_path / "a"), Store(tmp_path / "b"), key)


def test_config_errors_name_the_key():
    from popdyn import config as C

    def bad(text, match):
        with pytest.raises(C.ConfigError, match=match):
            C.expand(C.loads(text))
    base = PAPER.format(h0=0.05, kind="baseline")
    bad(base.replace('preset = "paper_relu"', 'preset = "paper_relu"\nbias = false'),
        "preset = 'paper_relu' takes d and m only")
    bad(base.replace('preset = "paper_relu"', 'preset = "paper-relu"'),
        r"\[student\] preset must be one of \['paper_relu'\].*Did you mean 'paper_relu'")
    bad(base.replace('kind = "baseline"', 'kind = "A2"'),
        r"\[schedule\] kind must be one of \['baseline', 'a2'\]")
    bad(base.replace('kind = "baseline"', 'kind = "baseline"\nevery = 10'),
        r"kind = 'baseline' fixes the grid; remove \['every'\]")
    bad(base.replace('kind = "baseline"', 'every = 10\nplateau = "band"'),
        r"\[schedule\] plateau must be one of")
    bad(base.replace('max_halvings = 40', 'max_halvings = -1'),
        "`max_halvings` must be a non-negative int")
    bad(base.replace('method = "armijo"', 'method = "armijio"'), "`method` must be one of")
    bad(base.replace('convention = "iid"', 'convention = "IID"'),
        r"\[init\] convention must be one of \['norm', 'entry', 'iid'\]")


def test_existing_config_keys_unchanged():
    """The new keys enter a run's spec (and key) only when a config gives them."""
    from popdyn import config as C

    spec = C.expand(C.loads("""
[teacher]
link = "h2"
[student]
d = 3
m = 2
[init]
scale = 0.1
[train]
method = "gd"
"""))[0]
    assert spec["schedule"] == {"every": 100, "early": []}
    assert spec["train"] == {"method": "gd"}
    assert set(spec["student"]) == {"d", "m"} and set(spec["init"]) == {"scale", "seed",
                                                                        "fit_intercept"}


def test_armijo_without_backtracking_is_fixed_step_gd(case):
    """When no trial is rejected, persistent Armijo is the paper's fixed-step GD (eq. (3)) at
    the force step h0, bit for bit (the same update, the same fused evaluations)."""
    st, p0, T = case
    a = popdyn.train(st, p0, T, method="armijo", h0=0.05, max_updates=40)
    g = popdyn.train(st, p0, T, method="gd", lr=0.05, max_updates=40)
    assert a.backtracks.sum() == 0
    assert a.loss.tolist() == g.loss.tolist() and a.t.tolist() == g.t.tolist()
    assert a.final.flat().tolist() == g.final.flat().tolist()


def test_schedule_kind_and_plateau_rule_validated():
    from popdyn import config as C

    with pytest.raises(C.ConfigError, match=r"^\[schedule\] kind must be one of \['baseline', "
                                            r"'a2'\] in the config, got 'basline'\. Did you mean "
                                            r"'baseline'\?$"):
        C.schedule_of({"kind": "basline"})
    with pytest.raises(C.ConfigError, match=r"^\[schedule\] plateau must be one of .*'baseline'.* "
                                            r"got 'q0=0\.5'\."):
        C.schedule_of({"every": 10, "plateau": "q0=0.5"})
