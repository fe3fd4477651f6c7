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
from popdyn.experiments import cells as cells_mod
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
def test_write_section_replaces_only_its_block(tmp_path):
    f = tmp_path / "r.md"
    f.write_text("# title\n\nhand-written reasons\n")
    R.write_section(f, "table2", "first")
    R.write_section(f, "table1", "other")
    R.write_section(f, "table2", "second")
    text = f.read_text()
    assert "hand-written reasons" in text and "second" in text and "first" not in text
    assert text.count("reproduce:table2 begin") == 1 and "other" in text


def test_compare_makes_one_cell_per_paper_number():
    """Table 2's cells from per-run values: the caption's median, the declared tolerances, and
    a row that did not run differs with its reason."""
    rows = {"Raw additive SiLU": [{"E": 128 + k, "dA_min": 0.222, "dA_mean": 0.576, "dR": 0.5,
                                   "L_20000": 0.054, "final_mse": 0.054} for k in (-1, 0, 1)]}
    cells = {(c["row"], c["column"]): c for c in R.compare("table2", rows)}
    assert all(tuple(c) == cells_mod.CELL_KEYS for c in cells.values())
    e = cells[("Raw additive SiLU", "E")]
    assert e["popdyn"] == 128 and e["verdict"] == "matches" and "median of 3 runs" in e["reason"]
    assert cells[("Raw additive SiLU", "dR")]["verdict"] == "differs"        # 0.5 vs 0.43 ± 0.03
    assert cells[("Additive sine", "E")]["verdict"] == "differs"
    assert cells[("Additive sine", "E")]["reason"].endswith("not measured by popdyn")
    assert len(cells) == 20 + 1        # Table 2's 20 numbers and the A.2 prose median final MSE


def _tiny_table2(real):
    def tiny(name, seeds, teachers=None):
        cfgs = real(name, seeds, teachers)
        for cfg in cfgs:
            cfg["student"].update(d=6, m=4)
            cfg["train"]["max_updates"] = 400
        return cfgs
    return tiny


def test_relu_endpoint_measure_against_a_brute_force_endpoint(tmp_path, monkeypatch):
    """One tiny Table-2-shaped run (d = 6, m = 4, additive ReLU, 400 updates): E is the band
    rule recomputed by brute force from the stored every-update MSE, the state at E is stored,
    and the gains are those of the diagnostics at the states 0 and E."""
    from popdyn.diagnostics import alignment as align, agop, bounded_refit
    from popdyn.experiments import Store
    from popdyn.experiments.runner import params_from

    monkeypatch.setattr(R, "_configs", _tiny_table2(R._configs))
    out = R.reproduce("table2", seeds=1, teachers=["Additive ReLU"], store=tmp_path / "st",
                      workers=1)
    (run,) = out["rows"]["Additive ReLU"]
    st = Store(tmp_path / "st")
    (k,) = st.keys()
    arrs = st.arrays(k)
    mse = 2.0 * np.asarray(arrs["loss"])
    E = None
    for n in range(1, len(mse)):               # the first update that leaves the band / ratio
        w = mse[:n + 1]
        if not (0.95 <= mse[n] <= 1.05) or w.max() / w.min() > 1.05:
            E = n - 1
            break
    assert E is not None and run["E"] == E and not run["censored"]
    iE = int(np.flatnonzero(np.asarray(arrs["snap_n"]) == E)[0])
    S, T = R._build(st.record(k))
    p0, pE = params_from(S, arrs, 0), params_from(S, arrs, iE)
    a0, aE = align(agop(S, p0), T.subspace), align(agop(S, pE), T.subspace)
    want = [aE.a_min_interval[0] - a0.a_min_interval[1], aE.a_min_interval[1] - a0.a_min_interval[0]]
    got = run["dA_min"] if isinstance(run["dA_min"], list) else [run["dA_min"]] * 2
    assert got == pytest.approx(want, abs=1e-12)
    r0, rE = bounded_refit(S, p0, T), bounded_refit(S, pE, T)
    assert run["dR"] == pytest.approx(r0.lower - rE.upper - 1e-5, abs=1e-12)
    assert run["final_mse"] == mse[-1] and run["n_final"] == 400


def test_reproduce_cli_json_teachers_and_write(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(R, "_configs", _tiny_table2(R._configs))
    from popdyn.cli import main

    doc, js = tmp_path / "repro.md", tmp_path / "cells.json"
    rc = main(["reproduce", "table2", "--seeds", "1", "--teachers", "Additive ReLU",
               "Additive sine", "--store", str(tmp_path / "st"), "--workers", "1", "--quiet",
               "--write", str(doc), "--json", str(js)])
    out = capsys.readouterr().out
    assert rc == 0 and "**reduced**" in out and "runs: 2" in out
    cells = __import__("json").loads(js.read_text())
    assert {c["row"] for c in cells} == {"Additive ReLU", "Additive sine"} and len(cells) == 10
    for c in cells:
        assert tuple(c) == cells_mod.CELL_KEYS and c["verdict"] in ("matches", "differs")
        assert c["reason"]
    assert "reproduce:table2 begin" in doc.read_text()


def test_reproduce_teachers_validated(capsys):
    with pytest.raises(ValueError, match=r"`teachers` \['Additive cosine'\] are not rows of "
                                         r"table2; valid: \['Raw additive SiLU'"):
        R.reproduce("table2", teachers=["Additive cosine"], run=False)
    from popdyn.cli import main

    assert main(["reproduce", "table2", "--teachers", "Additive cosine", "--no-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "are not rows of table2" in err


def test_paper_configs_are_the_declared_protocol():
    """The shipped ReLU configurations carry the paper's protocol (App. A, A.2, eq. (19)), and
    Table 1's teachers are popdyn.teachers.paper.TABLE1 in the printed order."""
    from popdyn.teachers.paper import TABLE1

    t1 = C.load(popdyn._paths.data_path("configs", "paper", "table1.toml"))
    assert [t["label"] for t in t1["teachers"]] == [lab for lab, _ in TABLE1]
    for (lab, tab), got in zip(TABLE1, t1["teachers"]):
        assert {k: v for k, v in got.items()} == {**tab}, lab
    for name, d, s, sched in (("table1", 16, 1e-4, "baseline"), ("table2", 64, 0.01, "a2"),
                              ("figure1", 16, 1e-4, "baseline")):
        cfg = C.load(popdyn._paths.data_path("configs", "paper", f"{name}.toml"))
        assert cfg["student"] == {"preset": "paper_relu", "d": d, "m": 32}
        assert cfg["init"]["convention"] == "iid" and cfg["init"]["scale"] == s
        assert C.seeds_of(cfg["init"]["seeds"]) == list(range(1, 51))
        assert cfg["train"]["method"] == "armijo" and cfg["train"]["h0"] == 0.05
        assert cfg["train"]["max_halvings"] == 40
        assert cfg["schedule"]["kind"] == sched


def test_the_diagnostic_schedule_does_not_change_a_swiglu_paper_trajectory():
    """The App. U.6 integrator (train_paper) on the shipped rank-one smoke: the snapshot
    schedule and the recorder leave the trajectory unchanged, bit for bit."""
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


def test_figure1_measures_at_updates_0_and_200(tmp_path, monkeypatch):
    """Figure 1's run (SiLU(s)t, E[y²] = 1, s = 1e-4) on a tiny student: the MSE starts at
    E[y²] = 1 up to the output of the tiny network, A_min is a score or the unresolved [0, 1],
    and the refit brackets are ordered and below E[y²]."""
    real = R._configs

    def tiny(name, seeds, teachers=None):
        cfgs = real(name, seeds, teachers)
        for cfg in cfgs:
            cfg["student"].update(d=6, m=4)
        return cfgs

    monkeypatch.setattr(R, "_configs", tiny)
    out = R.reproduce("figure1", seeds=1, store=tmp_path / "st", workers=1)
    (row,) = out["rows"]["SiLU(s)t"]
    assert row["mse_0"] == pytest.approx(1.0, abs=1e-6)
    for k in ("A_min_0", "A_min_200"):
        v = row[k]
        assert (v == [0.0, 1.0]) if isinstance(v, list) else (0.0 <= v <= 1.0)
    for k in ("refit_0", "refit_200"):
        lo, hi = row[k]
        assert 0.0 <= lo <= hi <= 1.0 + 1e-12 and hi - lo < 1e-6


def test_cell_numbers_print_compactly():
    """A diverged loss prints in scientific notation, not as 238 digits; the rest keep their
    printed precision."""
    from popdyn.experiments.reproduce import _fmt

    assert _fmt(6.11e237) == "6.11e+237"
    assert _fmt(-2.5e9) == "-2.5e+09"
    assert _fmt(203.5) == "203.5" and _fmt(128.0) == "128.0"
    assert _fmt(0.4297) == "0.4297" and _fmt(1.19e-06) == "1.19e-06" and _fmt(13.7) == "13.700"
    assert _fmt([0.1, 0.25]) == "[0.1, 0.25]" and _fmt(None) == "—" and _fmt(0.0) == "0"
