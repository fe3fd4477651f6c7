"""popdyn.learnability (seed 004, second abstract): the end-state classifier on
hand-built states, the Clopper–Pearson interval against scipy's exact binomial interval and its
coverage computed from the binomial law, the teachers' declared geometry, determinism, the
census log, and the input errors."""
import copy
import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy import stats

import popdyn
from popdyn import learnability as L

CLS = dict(success=1e-4, z_oob=3.0, dead_w=1e-6, tail=0.2, stall=0.02)


def P(W, b, a=None):
    W = np.asarray(W, float)
    return popdyn.Params(np.ones(W.shape[0]) if a is None else a, W, b, 0.0)


FLAT = (np.array([1.0, 0.5, 0.2, 0.2, 0.2]), np.array([0.0, 10.0, 20.0, 30.0, 40.0]))
FALLING = (np.array([1.0, 0.5, 0.4, 0.3, 0.2]), np.array([0.0, 10.0, 20.0, 30.0, 40.0]))


# ------------------------------------------------------------------ classifier, hand-built states
def test_dead_unit_is_out_of_bounds():
    p = P([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]], [0.1, 0.3, -0.2])
    c = L.classify(p, 0.05, 1.0, losses=FLAT[0], times=FLAT[1], **CLS)
    assert c["kind"] == "out_of_bounds" and c["dead"] == [1] and c["far"] == []
    assert math.isinf(c["z"][1])


@pytest.mark.parametrize("b", [3.5, -3.5])
def test_far_kink_either_side_is_out_of_bounds(b):
    # |b|/|w| = 3.5/1 > 3: the kink lies 3.5 standard deviations of w.x from the centre
    p = P([[0.6, 0.8], [1.0, 0.0]], [b, 0.0])
    c = L.classify(p, 0.05, 1.0, losses=FLAT[0], times=FLAT[1], **CLS)
    assert c["kind"] == "out_of_bounds" and c["far"] == [0] and c["dead"] == []
    assert c["z"][0] == pytest.approx(3.5, rel=1e-15)


def test_interior_and_unconverged():
    p = P([[0.6, 0.8], [2.0, 0.0]], [1.7, -5.9])        # depths 1.7 and 2.95 < 3
    c = L.classify(p, 0.05, 1.0, losses=FLAT[0], times=FLAT[1], **CLS)
    assert c["kind"] == "interior" and c["drop"] == 0.0
    # over the last 20% of the flow time (t >= 32: from t = 30) the loss fell from 0.3 to 0.2
    c = L.classify(p, 0.05, 1.0, losses=FALLING[0], times=FALLING[1], **CLS)
    assert c["kind"] == "unconverged" and c["drop"] == pytest.approx(0.5)
    # without a history the rest test cannot be made: never called interior
    assert L.classify(p, 0.05, 1.0, **CLS)["kind"] == "unconverged"


def test_boundaries_and_precedence():
    # exactly z_oob deep is in bounds (the rule is strict), exactly at the threshold is global
    p = P([[1.0, 0.0]], [3.0])
    assert L.classify(p, 0.05, 1.0, losses=FLAT[0], times=FLAT[1], **CLS)["kind"] == "interior"
    dead = P([[0.0, 0.0], [1.0, 0.0]], [0.0, 0.0])
    assert L.kink_depths(dead)[0] == 0.0                  # w = 0 = b: no kink, but dead
    assert L.classify(dead, 0.5e-4, 1.0, **CLS)["kind"] == "global"     # 2L/V = 1e-4
    assert L.classify(dead, 0.5e-4 * (1 + 1e-12), 1.0, **CLS)["kind"] == "out_of_bounds"
    # the normalized loss is 2L/V_Y
    assert L.classify(dead, 0.3, 2.0, **CLS)["nloss"] == pytest.approx(0.3)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(-20, 20)), min_size=1, max_size=5),
       st.floats(1e-3, 1e3))
@example(units=[(0.0, 1.0, 2.2250738585072014e-308)], lam=0.001)   # λb subnormal
@example(units=[(0.0, 1.3390779793157603e-157, 1.0)], lam=2.0)      # ‖w‖² subnormal
@example(units=[(0.0, 2.2250738585072014e-308, 4.0)], lam=1.0)      # |b|/‖w‖ overflows: inf
@example(units=[(0.0, 2.2250738585072014e-308, 1.0)], lam=0.001)    # λw subnormal
@example(units=[(2.2250738585e-313, 2.2250738585e-313, 2.2250738585e-313)], lam=11.0)  # w, b too
def test_depth_is_positively_homogeneous(units, lam):
    """|b|/|w| is invariant under the rescaling (w, b) -> λ(w, b), λ > 0, which leaves a relu
    unit's kink in place: the classification cannot depend on it (dead units aside)."""
    W = np.array([[u[0], u[1]] for u in units])
    b = np.array([u[2] for u in units])
    p, q = P(W, b), P(lam * W, lam * b)
    zp, zq = L.kink_depths(p), L.kink_depths(q)
    fin = np.isfinite(zp)
    assert np.array_equal(fin, np.isfinite(zq))
    # λb, λw and the norms ‖w‖, ‖λw‖ may be subnormal: each rounding (≤ 2⁻¹⁰⁷⁵ absolute) moves
    # the depth by 2⁻¹⁰⁷⁵/‖λw‖ (from λb) and by depth·2⁻¹⁰⁷⁵/‖·‖ (from λw and the two norms);
    # allowed with a factor 2 on each
    def ulp_over(x):                     # 2⁻¹⁰⁷⁴/x (≤ 1 for x ≥ 2⁻¹⁰⁷⁴), 0 for x = 0
        return np.where(x > 0, 2.0 ** -1074 / np.where(x > 0, x, 1.0), 0.0)
    qn = ulp_over(np.array([math.hypot(*row) for row in lam * W])[fin])
    qp = ulp_over(np.array([math.hypot(*row) for row in W])[fin])
    slack = qn + np.abs(zp[fin]) * (3.0 * qn + qp)
    assert np.all(np.abs(zq[fin] - zp[fin]) <= 1e-13 * np.abs(zp[fin]) + slack)
    wn = np.linalg.norm(W, axis=1)
    ok = (wn > 1e-3) & (np.abs(np.abs(zp) - 3.0) > 1e-9)
    if ok.all():
        assert (L.classify(p, 1.0, 1.0, **CLS)["kind"] == L.classify(q, 1.0, 1.0, **CLS)["kind"])


# ------------------------------------------------------------------ the interval
@pytest.mark.parametrize("n,level", [(1, 0.95), (7, 0.8), (20, 0.95), (33, 0.99)])
def test_clopper_pearson_matches_scipy_exact(n, level):
    for x in range(n + 1):
        lo, hi = L.clopper_pearson(x, n, level)
        ref = stats.binomtest(x, n).proportion_ci(confidence_level=level, method="exact")
        assert lo == pytest.approx(ref.low, abs=1e-12) and hi == pytest.approx(ref.high, abs=1e-12)


@pytest.mark.parametrize("n", [5, 40])
def test_clopper_pearson_coverage(n):
    """Coverage P_p(p ∈ CI(X)) = Σ_x binom.pmf(x; n, p)·[p ∈ CI(x)] is ≥ level for every p
    (checked on a grid of p), and the interval's endpoints are the tail equations'
    solutions: P(X ≥ x | lo) = α/2 and P(X ≤ x | hi) = α/2."""
    level = 0.95
    cis = np.array([L.clopper_pearson(x, n, level) for x in range(n + 1)])
    ps = np.linspace(0.001, 0.999, 301)
    pmf = stats.binom.pmf(np.arange(n + 1)[None, :], n, ps[:, None])          # (p, x)
    inside = (cis[None, :, 0] <= ps[:, None]) & (ps[:, None] <= cis[None, :, 1])
    cov = np.sum(pmf * inside, axis=1)
    assert np.all(cov >= level - 1e-12), (ps[np.argmin(cov)], cov.min())
    for x, (lo, hi) in enumerate(cis):
        if x > 0:
            assert stats.binom.sf(x - 1, n, lo) == pytest.approx(0.025, rel=1e-9)
        if x < n:
            assert stats.binom.cdf(x, n, hi) == pytest.approx(0.025, rel=1e-9)
    assert L.clopper_pearson(0, 0) == (0.0, 1.0)


def test_rate_difference_is_bonferroni():
    lo1, hi1 = L.clopper_pearson(9, 12, 0.975)
    lo2, hi2 = L.clopper_pearson(2, 10, 0.975)
    assert L.rate_difference(9, 12, 2, 10, 0.95) == (lo1 - hi2, hi1 - lo2)


# ------------------------------------------------------------------ teachers, determinism
def test_teacher_geometry_and_determinism():
    cfg = L.load_config()
    t = cfg["teacher"]
    E = L.teacher_rows("easy", 3, k=t["k"], d=t["d"], hard_angle=t["hard_angle"])
    H = L.teacher_rows("hard", 3, k=t["k"], d=t["d"], hard_angle=t["hard_angle"])
    np.testing.assert_allclose(E @ E.T, np.eye(t["k"]), atol=1e-14)
    G = H @ H.T
    off = G[~np.eye(t["k"], dtype=bool)]
    np.testing.assert_allclose(np.diag(G), 1.0, atol=1e-14)
    np.testing.assert_allclose(off, math.cos(t["hard_angle"]) ** 2, atol=1e-14)
    assert np.array_equal(E, L.teacher_rows("easy", 3, k=t["k"], d=t["d"], hard_angle=t["hard_angle"]))
    assert not np.array_equal(E, L.teacher_rows("easy", 4, k=t["k"], d=t["d"], hard_angle=t["hard_angle"]))
    assert L.init_seed(0, 3, 0.1) == L.init_seed(0, 3, 0.1) != L.init_seed(1, 3, 0.1)


def _tiny(cfg):
    cfg = copy.deepcopy(cfg)
    cfg["quick"].update(widths=[3], scales=[0.5], seeds=1, max_time=2.0)
    return cfg


def test_run_deterministic_and_census_resumes(tmp_path, monkeypatch):
    cfg = _tiny(L.load_config())
    log = tmp_path / "census.jsonl"
    a = L.census(cfg, "quick", log=log)
    assert len(a) == 4 and [r["intervention"] for r in a] == [False, True, False, True]
    kw = L.grid(cfg, "quick")[1]
    b = L.run(cfg, **kw)                             # recomputed: the same numbers
    assert {k: v for k, v in a[1].items() if k != "wall"} == {k: v for k, v in b.items() if k != "wall"}
    # the intervention changed the trajectory (paired: the same initial state)
    assert a[0]["a"] != a[1]["a"]

    def boom(*args, **kw):
        raise AssertionError("recomputed a logged run")

    monkeypatch.setattr(L, "run", boom)
    assert L.census(cfg, "quick", log=log) == a      # read back from the log
    rows = L.tabulate(a)
    assert {r["n"] for r in rows} == {1} and len(rows) == 4


def test_grid_prefix_is_balanced():
    g = L.grid(L.load_config(), "full")
    cells = {(x["activation"], x["kind"], x["m"], x["scale"], x["intervention"]) for x in g}
    per_seed = len(cells)
    assert len(g) == per_seed * L.load_config()["full"]["seeds"]
    assert all(x["seed"] == i // per_seed for i, x in enumerate(g))


# ------------------------------------------------------------------ bad input
def test_bad_input_names_argument_and_choices():
    cfg = L.load_config()
    with pytest.raises(ValueError, match=r"`kind` must be one of \['easy', 'hard'\]"):
        L.teacher_rows("medium", 0, k=3, d=4, hard_angle=0.3)
    with pytest.raises(ValueError, match=r"`activation` must be one of .*'relu'"):
        L.teacher("easy", 0, activation="rleu", k=3, d=4, hard_angle=0.3)
    with pytest.raises(ValueError, match=r"`preset` must be one of \['full', 'quick'\]"):
        L.grid(cfg, "paper")
    with pytest.raises(ValueError, match=r"`successes` must be <= `n`"):
        L.clopper_pearson(5, 4)
    with pytest.raises(ValueError, match=r"`level` must be in \(0, 1\)"):
        L.clopper_pearson(1, 4, 1.0)
    with pytest.raises(ValueError, match=r"`tail` must be in \(0, 1\)"):
        L.classify(P([[1.0]], [0.0]), 0.1, 1.0, **dict(CLS, tail=1.0))
    with pytest.raises(ValueError, match=r"`times` must be given"):
        L.classify(P([[1.0]], [0.0]), 0.1, 1.0, losses=[1.0], **CLS)
    with pytest.raises(ValueError, match=r"need `d` >= `k` \+ 1"):
        L.teacher_rows("hard", 0, k=4, d=4, hard_angle=0.3)
    bad = copy.deepcopy(cfg)
    bad["intervention"] = {"head_lr_mult": 0.5, "bias_lr_mult": 2.0}
    with pytest.raises(ValueError, match="need head_lr_mult > 1 and bias_lr_mult < 1"):
        L.validate_config(bad)
    bad = copy.deepcopy(cfg)
    bad["classify"]["zoob"] = 3.0
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['zoob'\] in \[classify\]; valid: "):
        L.validate_config(bad)
    bad = copy.deepcopy(cfg)
    bad["full"]["widths"] = [2]
    with pytest.raises(ValueError, match=r"widths must be >= k = 3"):
        L.validate_config(bad)
    with pytest.raises(FileNotFoundError, match="`path`"):
        L.load_config("/nonexistent/learnability.toml")


# ------------------------------------------------------------------ the check's decisions
def _recs(spec):
    """Synthetic census records: spec maps (teacher, intervention, m) -> list of kinds."""
    out = []
    for (kd, iv, m), kinds in spec.items():
        for i, k in enumerate(kinds):
            out.append(dict(activation="relu", teacher=kd, intervention=iv, m=m, scale=0.1, seed=i,
                            kind=k, drop=0.0, nloss=0.0 if k == "global" else 0.1))
    return out


def test_check_decisions_on_synthetic_records():
    from proofs_checks.learnability import verdict_of

    cfg = L.load_config()
    n = 30
    good = _recs({("easy", False, 4): ["global"] * 25 + ["interior"] * 5,
                  ("hard", False, 4): ["global"] * 2 + ["out_of_bounds"] * 28,
                  ("easy", True, 4): ["global"] * 30, ("hard", True, 4): ["global"] * 28 + ["interior"] * 2})
    v = verdict_of(good, cfg)
    by = {p.name: p for p in v.parts}
    assert by["easy > hard [relu]"].verdict == "pass"
    assert by["hard → OOB"].verdict == "pass" and by["easy → interior"].verdict == "pass"
    assert by["intervention [relu]"].verdict == "pass" and v.verdict == "pass"
    lo, hi = by["easy > hard [relu]"].bracket
    assert lo > 0 and (lo, hi) == L.rate_difference(25, n, 2, n, cfg["stats"]["level"])
    # the same counts with the teachers swapped fail; equal counts are undecided
    swap = [dict(r, teacher={"easy": "hard", "hard": "easy"}[r["teacher"]]) for r in good]
    by = {p.name: p for p in verdict_of(swap, cfg).parts}
    assert by["easy > hard [relu]"].verdict == "fail" and by["hard → OOB"].verdict == "fail"
    tie = _recs({(kd, iv, 4): ["global"] * 10 + ["interior"] * 10 for kd in ("easy", "hard")
                 for iv in (False, True)})
    vt = verdict_of(tie, cfg)
    assert {p.verdict for p in vt.parts if p.role == "claim"} == {"undecided"}
    assert vt.verdict == "undecided"
    # (the figure is drawn by the check's quick run in tests/proofs_checks/test_checks.py)
