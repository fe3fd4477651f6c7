"""The options behind the paper reproduction (docs/protocol.md) and `popdyn reproduce`.

* initialization conventions: the default is bit-identical to the documented draws, "entry" is
  exactly √d times the first layer, bad values name the argument;
* the SwiGLU mean-field clock: one GD step against finite-difference gradients of the mean-field
  loss (an independent computation of the rates m·Δt and head_lr_mult·m·Δt);
* fixed-ball refits: the coefficient form keeps the predictor (Monte Carlo), the c′ = 0 risk
  equals the loss engine's value at the returned head, a large ball equals the unrestricted
  cutoff solve, a middle ball agrees with scipy's SLSQP;
* the reproduce machinery: verdicts, comparison, the markdown section writer, and a tiny
  end-to-end run through the CLI (a few seconds).
"""
import tomllib

import numpy as np
import pytest

import popdyn
from popdyn import config as C
from popdyn.diagnostics import coefficient_form, fixed_ball_refits, refit_risk
from popdyn.experiments import reproduce as R
from popdyn.models import Params
from popdyn.swiglu import SwiGLUParams


# ---------------------------------------------------------------- initialization conventions
def test_init_default_is_the_documented_draw_bit_for_bit():
    S = popdyn.Student(d=5, m=4)
    p = S.init(3, 0.2)
    rng = np.random.default_rng(3)
    a = rng.standard_normal(4) * 0.2
    W = rng.standard_normal((4, 5)) * (0.2 / np.sqrt(5))
    b = rng.standard_normal(4) * 0.2
    assert np.array_equal(p.a, a) and np.array_equal(p.W, W) and np.array_equal(p.b, b)
    q = S.init(3, 0.2, convention="norm")
    assert np.array_equal(q.W, p.W)


def test_init_entry_convention_scales_the_first_layer_by_sqrt_d():
    S = popdyn.Student(d=9, m=3)
    p, q = S.init(1, 0.1), S.init(1, 0.1, convention="entry")
    assert np.array_equal(q.a, p.a) and np.array_equal(q.b, p.b)
    rng = np.random.default_rng(1)
    rng.standard_normal(3)
    assert np.array_equal(q.W, rng.standard_normal((3, 9)) * 0.1)
    Sg = popdyn.SwiGLUStudent(d=4, m=3)
    g0, g1 = Sg.init(2, 0.1), Sg.init(2, 0.1, convention="entry")
    np.testing.assert_allclose(g1.G, 2.0 * g0.G, rtol=1e-15)
    np.testing.assert_allclose(g1.V, 2.0 * g0.V, rtol=1e-15)


@pytest.mark.parametrize("make", [lambda: popdyn.Student(d=3, m=2),
                                  lambda: popdyn.SwiGLUStudent(d=3, m=2)])
def test_init_convention_rejects_unknown_values(make):
    with pytest.raises(ValueError, match=r"`convention` must be one of \[.entry., .iid., .norm.\]"):
        make().init(0, 0.1, convention="rows")


_CFG = """
[teacher]
link = "h2"
rank = 1
[student]
d = 3
m = 2
[init]
scale = 0.1
seeds = [0]
"""


def test_config_convention_validated_and_absent_from_the_spec_by_default():
    runs = C.expand(C.loads(_CFG))
    assert "convention" not in runs[0]["init"]           # stored run keys unchanged
    runs = C.expand(C.loads(_CFG + 'convention = "entry"\n'))
    assert runs[0]["init"]["convention"] == "entry"
    with pytest.raises(C.ConfigError, match=r"convention must be one of \['norm', 'entry', 'iid'\]"):
        C.expand(C.loads(_CFG + 'convention = "entri"\n'))


def test_clock_key_is_for_swiglu_students_only():
    bad = _CFG.replace("m = 2", 'm = 2\nclock = "mean_field"')
    with pytest.raises(C.ConfigError, match="clock applies to SwiGLU students"):
        C.expand(C.loads(bad))
    with pytest.raises(ValueError, match=r"`clock` must be one of"):
        popdyn.SwiGLUStudent(d=3, m=2, clock="mf")


# ---------------------------------------------------------------- SwiGLU mean-field clock
def test_swiglu_mean_field_gd_step_against_finite_differences():
    d, m, dt, head = 3, 3, 0.05, 0.3
    T = popdyn.Teacher.additive("h3", np.eye(d)[:1])
    S = popdyn.SwiGLUStudent(d, m, clock="mean_field")
    S0 = popdyn.SwiGLUStudent(d, m)
    p = S.init(4, 0.6, T)
    at = p.a * m                                   # the mean-field head ã

    def L(at_, G, Vv):                             # profiled loss of f = (1/m) Σ ã φ + c
        q = popdyn.fit_intercept(S0, SwiGLUParams(at_ / m, G, Vv, 0.0), T)
        return popdyn.population_loss(S0, q, T)

    h = 1e-6
    ga = np.array([(L(at + h * e, p.G, p.V) - L(at - h * e, p.G, p.V)) / (2 * h)
                   for e in np.eye(m)])
    E = np.zeros((m, d)); E[1, 0] = 1.0
    gG = (L(at, p.G + h * E, p.V) - L(at, p.G - h * E, p.V)) / (2 * h)
    tr = popdyn.train(S, p, T, method="gd", lr=dt, head_lr_mult=head, max_updates=1,
                      schedule=popdyn.Schedule(every=1, early=()))
    q = tr.final
    # mean-field GD: ã ← ã − m·Δt·head·∂L/∂ã, G ← G − m·Δt·∂L/∂G; the clock advances by Δt
    np.testing.assert_allclose(q.a * m, at - m * dt * head * ga, rtol=0, atol=1e-8)
    assert abs(q.G[1, 0] - (p.G[1, 0] - m * dt * gG)) < 1e-8
    assert tr.t[1] == pytest.approx(dt, rel=1e-15)


# ---------------------------------------------------------------- fixed-ball refits
def _state(scaling="mean_field", seed=0):
    d, m = 4, 6
    T = popdyn.Teacher.additive("silu", np.eye(d)[:2]).normalized()
    S = popdyn.Student(d, m, scaling=scaling, intercept=False)
    return S, S.init(seed, 0.7), T


def test_coefficient_form_keeps_the_predictor():
    S, p, T = _state()
    S1, q = coefficient_form(S, p)
    X = np.random.default_rng(0).standard_normal((500, S.d))
    np.testing.assert_allclose(S1(q, X), S(p, X), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.hypot(np.linalg.norm(q.W, axis=1), q.b), 1.0, rtol=1e-14)


def test_trained_head_budget_is_the_last_states_coefficient_norm():
    S, p, T = _state()
    p2 = S.init(5, 0.9)
    r = fixed_ball_refits(S, [p, p2], T, budget="trained_head")
    B = np.linalg.norm(coefficient_form(S, p2)[1].a)
    assert r[0].budget == r[1].budget == pytest.approx(B, rel=1e-15)
    # the last state's own coefficients are feasible: its refit is no worse than its own loss
    own = 2 * popdyn.population_loss(popdyn.Student(S.d, S.m, scaling=S.scaling), p2, T)
    assert r[1].risk <= own + 1e-12
    assert fixed_ball_refits(S, [p], T, budget="teacher")[0].budget == pytest.approx(
        np.linalg.norm(T.weights), rel=1e-15)


def test_large_ball_equals_the_unrestricted_cutoff_solve():
    S, p, T = _state()
    big = fixed_ball_refits(S, [p], T, budget=1e6)[0]
    un = refit_risk(S, p, T)                     # raw features, cutoff solve: another path
    assert big.risk == pytest.approx(un.risk, rel=1e-8, abs=1e-10)


def test_middle_ball_agrees_with_slsqp():
    from scipy.optimize import minimize

    from popdyn.diagnostics import refit_problem

    S, p, T = _state()
    S1, q = coefficient_form(S, p)
    prob = refit_problem(S1, q, T)
    B = 0.3 * np.linalg.norm(np.linalg.lstsq(prob.G, prob.g, rcond=None)[0])
    ours = fixed_ball_refits(S, [p], T, budget=B)[0]
    res = minimize(prob.risk, np.zeros(S.m), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda a: B * B - a @ a}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert ours.risk == pytest.approx(res.fun, rel=1e-7)
    assert ours.lower <= ours.risk + 1e-15


def test_no_intercept_refit_against_the_loss_engine():
    S, p, T = _state()
    r = fixed_ball_refits(S, [p], T, budget=0.8, intercept=False)[0]
    S1, q = coefficient_form(S, p)
    S1 = S1.replace(intercept=False)
    at_head = 2 * popdyn.population_loss(S1, Params(r.head, q.W, q.b, 0.0), T)
    assert r.risk == pytest.approx(at_head, rel=1e-10)
    assert r.intercept == 0.0
    with_c = fixed_ball_refits(S, [p], T, budget=0.8, intercept=True)[0]
    assert with_c.risk <= r.risk + 1e-12          # c′ = 0 is feasible for the intercept refit


@pytest.mark.parametrize("kw, err, match", [
    ({"budget": "head"}, ValueError, r"budget.*trained_head.*teacher"),
    ({"budget": -1.0}, ValueError, "budget"),
    ({"budget": True}, TypeError, "budget"),
    ({"features": "unit"}, ValueError, r"`features` must be one of \[.coefficient., .raw.\]"),
    ({"intercept": 1}, TypeError, "intercept"),
])
def test_fixed_ball_validation(kw, err, match):
    S, p, T = _state()
    with pytest.raises(err, match=match):
        fixed_ball_refits(S, [p], T, **kw)


def test_coefficient_features_need_a_homogeneous_relu_family_student():
    T = popdyn.Teacher.additive("h2", np.eye(3)[:1])
    S = popdyn.Student(3, 2, activation="tanh")
    with pytest.raises(ValueError, match="positively homogeneous"):
        fixed_ball_refits(S, [S.init(0, 0.5)], T, budget=1.0)
    Sg = popdyn.SwiGLUStudent(3, 2)
    with pytest.raises(ValueError, match="ReLU-family"):
        fixed_ball_refits(Sg, [Sg.init(0, 0.5)], T, budget=1.0)


# ---------------------------------------------------------------- reproduce
def test_verdict_rule():
    assert R.verdict(0.5, 0.49, 0.45, 0.499, 3) == "differs"
    assert R.verdict(0.5, 0.49, 0.45, 0.4995, 3) == "matches"     # half a unit of 1e-3
    assert R.verdict([0.2, 0.3], 0.1, 0.05, 0.15, 3) == "differs"
    assert R.verdict([0.2, 0.3], 0.25, 0.0, 0.21, 3) == "matches"


def test_compare_uses_the_paper_statistic_and_goals():
    rows = {"Raw additive SiLU": [{"E": 128 + k, "dA_mean": 0.576, "dR": 0.0} for k in (-1, 0, 1)]}
    cells = {(c["row"], c["quantity"]): c for c in R.compare("table2", rows)}
    e = cells[("Raw additive SiLU", "E")]
    assert e["ours"] == 128 and e["verdict"] == "matches" and e["goal"] == "met"
    assert cells[("Raw additive SiLU", "dR")]["verdict"] == "differs"
    assert cells[("Raw additive SiLU", "dR")]["goal"] == "missed"
    assert cells[("Additive sine", "E")]["verdict"] == "not run"


def test_paper_values_cite_lines_of_the_seed_text():
    for name in R.EXPERIMENTS:
        pv = R.paper_values(name)
        if name == "plateau_alignment":         # a verdict, not a table: no cell to compare
            assert pv["cells"] == [] and pv["configs"] == ["plateau_alignment.toml"]
            continue
        assert pv["cells"]
        for row in pv["cells"]:
            for q, ref in row.items():
                if q != "row":
                    assert 15 <= ref["line"] <= 410 and "value" in ref and "digits" in ref


def test_write_section_replaces_only_its_block(tmp_path):
    f = tmp_path / "r.md"
    f.write_text("# title\n\nhand-written reasons\n")
    R.write_section(f, "table2", "first")
    R.write_section(f, "table3", "other")
    R.write_section(f, "table2", "second")
    text = f.read_text()
    assert "hand-written reasons" in text and "second" in text and "first" not in text
    assert text.count("reproduce:table2 begin") == 1 and "other" in text


def test_reproduce_end_to_end_reduced(tmp_path, monkeypatch, capsys):
    """A tiny Table-2-shaped run (d = 6, m = 4, 40 updates, one seed per teacher) through the
    CLI: every cell is reported, the run says it is reduced, the doc section is written."""
    real = R._configs

    def tiny(name, seeds):
        cfgs = real(name, seeds)
        for cfg in cfgs:
            cfg["student"].update(d=6, m=4)
            cfg["train"]["max_updates"] = 40
            cfg["schedule"] = {"every": 20, "early": list(range(1, 40))}
        return cfgs

    monkeypatch.setattr(R, "_configs", tiny)
    from popdyn.cli import main

    doc = tmp_path / "repro.md"
    rc = main(["reproduce", "table2", "--seeds", "1", "--store", str(tmp_path / "st"),
               "--workers", "1", "--quiet", "--write", str(doc)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "**reduced**" in out and "runs: 4" in out
    for row in ("Raw additive SiLU", "Centered additive SiLU", "Additive ReLU", "Additive sine"):
        assert out.count(f"| {row} | ") == 6        # E, ΔA_min, ΔA_mean, ΔR (2 readings), L
    assert "not run" not in out
    assert "reproduce:table2 begin" in doc.read_text()


def _smoke_r1(loss_target):
    """The shipped rank-one SwiGLU smoke (Table 3, d = 4, m = 6) with another loss stop."""
    import copy

    from popdyn._paths import data_path

    cfg = C.load(data_path("configs", "paper", "table3.toml"))
    smoke = cfg.pop("settings")[0]
    for k in ("student", "init", "train"):
        cfg[k] = {**copy.deepcopy(cfg[k]), **smoke.get(k, {})}
    cfg["train"]["loss_target"] = loss_target
    return C.validate(cfg)


def test_a_loss_stop_after_the_prefix_leaves_everything_at_P_unchanged(tmp_path):
    """The Table 3 / Table 6 runs stop at l <= 0.99 for cost (data/configs/paper/table6.toml):
    a run is causal, so every quantity at P (inside the delta = 1e-3 prefix) is bit for bit
    that of a run stopped later; only the terminal quantities move."""
    from popdyn.experiments import Store, sweep

    out = {}
    for tgt in (0.99, 0.995):
        st = Store(tmp_path / str(tgt))
        k = sweep(_smoke_r1(tgt), st, workers=1, progress=False)["keys"][0]
        out[tgt] = R._m_swiglu_paper(st.record(k), st.arrays(k))
    assert out[0.99]["l_P"] > 0.995 > out[0.99]["l_f"]      # both stops lie after the prefix
    for q in ("t_P", "n_P", "l_P", "A_top_0", "A_top_P", "R_0", "R_P"):
        assert out[0.99][q] == out[0.995][q], q
    assert out[0.99]["t_f"] > out[0.995]["t_f"]


def test_plateau_alignment_under_the_papers_reading(tmp_path):
    """check_store_paper decides in-family runs at each run's 5% ratio endpoint E with the
    fixed-ball coefficient refit; its ΔR bracket is [R̲_0 − R̄_E − 1e-5, R̄_0 − R̲_E] of the two
    fixed-ball solves (the same ball at both ends), and runs outside the family are controls."""
    from popdyn.diagnostics.budget import fixed_ball_refits
    from popdyn.experiments import Store, sweep
    from popdyn.experiments.runner import params_from
    from proofs_checks.plateau_alignment import check_store_paper

    cfg = {"name": "pa", "teachers": [{"label": "g", "link": "damped_cubic:0.5", "rank": 2,
                                       "normalize": True},
                                      {"label": "sine", "link": "sin", "rank": 2, "normalize": True}],
           "student": {"d": 5, "m": 6, "activation": "relu", "bias": True, "intercept": False,
                       "scaling": "mean_field"},
           "init": {"scale": 1e-3, "seeds": [0], "fit_intercept": False},
           "train": {"method": "gd", "lr": 0.5, "max_updates": 120},
           "schedule": {"every": 1, "early": []},
           "diagnostics": {"kinds": ["unrestricted"], "geometry": False, "delta": 1e-3,
                           "certify": False}}
    st = Store(tmp_path / "st")
    keys = sweep(C.validate(cfg), st, workers=1, progress=False)["keys"]
    v = check_store_paper(st, keys)
    roles = {p.name: p.role for p in v.parts}
    assert roles == {"ΔA_min g seed 0": "claim", "ΔR_fixed_ball g seed 0": "claim",
                     "ΔA_min sine seed 0": "control", "ΔR_fixed_ball sine seed 0": "control"}
    assert v.verdict in ("pass", "fail", "undecided") and any("5% loss-ratio" in n for n in v.notes)
    rec, arrs = st.record(keys[0]), st.arrays(keys[0])
    S, T = R._build(rec)
    iE = R._at_or_before(arrs["snap_n"], rec["plateaus"]["ratio=0.05"]["end_n"])
    assert arrs["snap_n"][iE] == rec["plateaus"]["ratio=0.05"]["end_n"]     # every-update grid
    f0, fE = fixed_ball_refits(S, [params_from(S, arrs, 0), params_from(S, arrs, iE)], T,
                               budget="teacher")
    assert f0.budget == fE.budget == pytest.approx(float(np.linalg.norm(T.weights)))
    part = next(p for p in v.parts if p.name == "ΔR_fixed_ball g seed 0")
    VY = float(T.variance)
    assert part.bracket[0] == pytest.approx((f0.lower - fE.risk) / VY - 1e-5, abs=1e-12)
    assert part.bracket[1] == pytest.approx((f0.risk - fE.lower) / VY, abs=1e-12)
    assert part.bracket[0] <= part.bracket[1] and part.provenance == "numerical"


def test_reproduce_plateau_alignment_reports_the_verdict(tmp_path, monkeypatch, capsys):
    """`popdyn reproduce plateau_alignment` on a tiny version of its configuration (d = 5,
    m = 6, 60 updates, one seed per teacher): the verdict block with its reading is written."""
    real = R._configs

    def tiny(name, seeds):
        cfgs = real(name, seeds)
        for cfg in cfgs:
            cfg["student"].update(d=5, m=6)
            cfg["init"]["scale"] = 1e-3
            cfg["train"].update(max_updates=60, lr=0.5)
            cfg["schedule"] = {"every": 1, "early": []}
        return cfgs

    monkeypatch.setattr(R, "_configs", tiny)
    from popdyn.cli import main

    doc = tmp_path / "repro.md"
    rc = main(["reproduce", "plateau_alignment", "--seeds", "1", "--store", str(tmp_path / "st"),
               "--workers", "1", "--quiet", "--write", str(doc)])
    out = capsys.readouterr().out
    assert rc == 0 and "**reduced**" in out and "runs: 3" in out
    assert "**Verdict: " in out and "5% loss-ratio prefix endpoint" in out
    for row in ("g_1/2", "g_1/3", "g_2/3"):
        assert f"| {row} | ΔA_min ≥ 0.5 | claim |" in out
        assert f"| {row} | ΔR_fixed_ball ≥ 0.399 | claim |" in out
    assert "reproduce:plateau_alignment begin" in doc.read_text()


def test_the_diagnostic_schedule_does_not_change_a_swiglu_flow_trajectory():
    """benchmarks/protocol_probes.py ``release`` continues the Table 3 runs toward the paper's
    loss stop without the per-update diagnostics (docs/reproduction.md, Table 3): that is the
    sweep's own trajectory only if the snapshot schedule and the recorder leave the adaptive
    flow unchanged.  Bit for bit, on the shipped rank-one smoke (its loss stop 0.9)."""
    import numpy as np

    import popdyn
    from popdyn.experiments.runner import build
    from popdyn.experiments.sweep import plan

    from popdyn.config import paper_euler_kwargs
    from popdyn.swiglu import train_paper

    spec = plan(_smoke_r1(0.99))[0][1]
    S, T, p0, kw, schedule, rec = build(spec)
    kw = paper_euler_kwargs(kw)          # the shipped config runs the App. U.6 protocol
    dense = train_paper(S, p0, T, schedule=schedule, recorder=rec, **kw)
    bare = train_paper(S, p0, T, schedule=popdyn.Schedule(every=10 ** 9, early=()), **kw)
    assert dense.n[-1] == bare.n[-1] > 50 and dense.status == bare.status == "converged"
    assert np.array_equal(dense.loss, bare.loss)
    assert np.array_equal(dense.t, bare.t)
    assert np.array_equal(dense.final.G, bare.final.G) and np.array_equal(dense.final.a, bare.final.a)


# ---------------------------------------------------------------- teacher normalization readings
def _gauss_moments_mp(g):
    """E[g(Z)], E[g(Z)²] for Z ~ N(0, 1) by mpmath quadrature at 30 digits (independent)."""
    import mpmath as mp

    mp.mp.dps = 30
    w = lambda z: mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi)  # noqa: E731
    m1 = mp.quad(lambda z: g(z) * w(z), [-mp.inf, 0, mp.inf])
    m2 = mp.quad(lambda z: g(z) ** 2 * w(z), [-mp.inf, 0, mp.inf])
    return m1, m2


@pytest.mark.parametrize("link, g", [
    ("silu", lambda z: z / (1 + __import__("mpmath").exp(-z))),
    ("relu", lambda z: z if z > 0 else 0 * z),
])
def test_second_moment_normalization_against_mpmath(link, g):
    """normalize = "second_moment" gives the rank-two additive teacher E[y²] = 1: its weights
    equal 1/sqrt(2 E[g²] + 2 E[g]²) from 30-digit quadrature (independent coordinates), and
    unit variance ("true") gives 1/sqrt(2 Var g); the key is absent unless given."""
    m1, m2 = _gauss_moments_mp(g)
    base = f'[teacher]\nlink = "{link}"\nrank = 2\n'
    Tm = C.teacher_from_table(tomllib.loads(base + 'normalize = "second_moment"\n')["teacher"], 3)
    Tv = C.teacher_from_table(tomllib.loads(base + "normalize = true\n")["teacher"], 3)
    np.testing.assert_allclose(Tm.weights, float(1 / (2 * m2 + 2 * m1 ** 2) ** 0.5), rtol=1e-12)
    np.testing.assert_allclose(Tv.weights, float(1 / (2 * (m2 - m1 ** 2)) ** 0.5), rtol=1e-12)
    assert abs(Tm.second_moment - 1) < 1e-12 and abs(Tv.variance - 1) < 1e-12


def test_second_moment_normalization_is_the_variance_one_for_a_centered_teacher():
    T = popdyn.Teacher.additive("sin", np.eye(3)[:2])
    np.testing.assert_allclose(T.normalized("second_moment").weights, T.normalized().weights,
                               rtol=1e-14)


def test_normalize_values_validated():
    base = '[teacher]\nlink = "silu"\nrank = 2\n'
    with pytest.raises(C.ConfigError, match="normalize must be true, false or 'second_moment'"):
        C.teacher_from_table(tomllib.loads(base + 'normalize = "l2"\n')["teacher"], 3)
    with pytest.raises(ValueError, match="`moment` must be 'variance' or 'second_moment'"):
        popdyn.Teacher.additive("silu", np.eye(3)[:2]).normalized("l2")


@pytest.mark.parametrize("norm", ["second_moment", True])
def test_figure1_loss_unit_follows_the_normalization(tmp_path, monkeypatch, norm):
    """The reported loss at initialization (s = 1e-4, so f ≈ 0 and MSE ≈ E[y²]) is one in units
    of E[y²] under normalize = "second_moment" and E[y²]/V_Y = 1 + 2E[g]²/Var g (y = g(z₁) +
    g(z₂) up to scale) under unit variance, the moments of the SiLU link from 30-digit quadrature (rank two, independent)."""
    real = R._configs

    def tiny(name, seeds):
        cfgs = real(name, seeds)
        for cfg in cfgs:
            cfg["student"].update(d=6, m=4)
            cfg["teacher"]["normalize"] = norm
            cfg["train"]["max_updates"] = 3
            cfg["schedule"] = {"every": 3, "early": [1, 2]}
        return cfgs

    monkeypatch.setattr(R, "_configs", tiny)
    out = R.reproduce("figure1", seeds=1, store=tmp_path / "st", workers=1)
    (row,) = out["rows"]["raw SiLU"]
    m1, m2 = _gauss_moments_mp(lambda z: z / (1 + __import__("mpmath").exp(-z)))
    want = 1.0 if norm == "second_moment" else float(1 + 2 * m1 ** 2 / (m2 - m1 ** 2))
    assert row["loss_0"] == pytest.approx(want, abs=1e-6)
