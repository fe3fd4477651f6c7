"""Frozen-feature refit risks (docs/design.md §5): the solvers on synthetic Gram matrices against
brute force (dense multiplier scans, scipy.optimize, least squares on the data matrix), their
properties (hypothesis), and popdyn.diagnostics.refit_risk against the 30-digit mpmath references
of data/_precompute/diagnostics_refs.py."""
import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import example, given, strategies as st

from popdyn.diagnostics import RefitProblem, solve_ball, solve_cutoff

try:  # tests/popdyn as a package (tests/__init__.py) or on sys.path (pytest's default rootdir mode)
    from ._diagrefs import build, case_ids, cases, f
except ImportError:
    from _diagrefs import build, case_ids, cases, f


# ---------------------------------------------------------------------------- synthetic problems
def _data_problem(seed, m, n=None, dup=0, scale=1.0):
    """Empirical covariances of a random design: always a consistent (G, g, V) (R ≥ 0)."""
    rng = np.random.default_rng(seed)
    n = n or m + 5
    X = rng.standard_normal((n, m)) * scale
    for k in range(dup):                       # exact duplicates / sign flips of columns
        X[:, m - 1 - k] = (-1) ** k * X[:, k]
    y = X @ rng.standard_normal(m) * 0.3 + rng.standard_normal(n)
    X = X - X.mean(0)
    y = y - y.mean()
    return RefitProblem.from_arrays(X.T @ X / n, X.T @ y / n, y @ y / n), X, y


def _brute_ball(P, B, n=600):
    """Dense scan of the multiplier: best feasible risk and best dual value."""
    G, g, V = P.G, P.g, P.variance
    lmax = max(np.linalg.eigvalsh(G)[-1], 1e-300)
    best, dual = np.inf, -np.inf
    for mu in np.concatenate([[0.0], np.geomspace(1e-14 * lmax, 1e8 * lmax, n)]):
        a = np.linalg.lstsq(G + mu * np.eye(P.m), g, rcond=None)[0]
        if np.linalg.norm(a) <= B:
            best = min(best, P.risk(a))
        if mu > 0:
            dual = max(dual, V - g @ np.linalg.solve(G + mu * np.eye(P.m), g) - mu * B * B)
    return best, dual


def test_cutoff_equals_least_squares():
    P, X, y = _data_problem(0, 6)
    out = solve_cutoff(P)
    a_ls = np.linalg.lstsq(X, y, rcond=None)[0]
    r_ls = np.mean((y - X @ a_ls) ** 2)
    assert out["risk"] == pytest.approx(r_ls, rel=1e-12)
    assert out["lower"] == pytest.approx(r_ls, rel=1e-12)
    assert out["rank"] == 6 and out["status"] == "full_rank" and out["discarded"].size == 0


def test_cutoff_rank_deficient_reports_spectrum():
    P, X, y = _data_problem(1, 7, dup=2)
    for eq in (True, False):
        out = solve_cutoff(P, equilibrate=eq)
        assert out["rank"] == 5 and out["status"] == "truncated"
        assert out["discarded"].shape == (2,) and np.all(out["discarded"] <= 1e-12 * 7)
        r_ls = np.mean((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2)
        assert out["risk"] == pytest.approx(r_ls, rel=1e-10)
        assert out["cutoff"] == 1e-12 and out["equilibrated"] == eq


def test_cutoff_nearly_collinear_keeps_lower_apart():
    """A feature of tiny variance (like a neuron with |w| = 1e−6 and a bias) falls below the
    unequilibrated cutoff: its gain is reported in the lower value, not hidden."""
    rng = np.random.default_rng(3)
    n, m = 40, 4
    X = rng.standard_normal((n, m))
    X[:, 3] *= 1e-7                          # variance 1e-14 relative
    y = X[:, 0] + 1e7 * X[:, 3] * 0.5 + 0.1 * rng.standard_normal(n)
    X -= X.mean(0)
    y -= y.mean()
    P = RefitProblem.from_arrays(X.T @ X / n, X.T @ y / n, y @ y / n)
    raw = solve_cutoff(P, equilibrate=False)
    eq = solve_cutoff(P, equilibrate=True)
    r_ls = np.mean((y - X @ np.linalg.lstsq(X, y, rcond=1e-15)[0]) ** 2)
    assert raw["rank"] == 3 and raw["discarded"].size == 1 and raw["discarded"][0] < 1e-12 * 2
    assert raw["risk"] > 10 * r_ls                    # the cutoff solve misses the feature …
    assert raw["lower"] == pytest.approx(r_ls, rel=1e-6)   # … and the lower value says so
    assert eq["rank"] == 4 and eq["risk"] == pytest.approx(r_ls, rel=1e-6)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("frac", [0.05, 0.5, 0.999, 3.0])
def test_ball_against_brute_force(seed, frac):
    P, X, y = _data_problem(seed, 5, dup=seed % 2)
    a_min = solve_cutoff(P, equilibrate=False)
    B = frac * np.linalg.norm(np.linalg.lstsq(P.G, P.g, rcond=1e-12)[0])
    out = solve_ball(P, B)
    best, dual = _brute_ball(P, B)
    tol = 1e-9 * P.variance
    assert np.linalg.norm(out["head"]) <= B
    assert out["risk"] <= best + tol                     # at least as good as every scanned head
    assert out["lower"] >= dual - tol                    # the dual at the solver's μ is optimal
    assert out["lower"] <= out["risk"] and out["risk"] - out["lower"] <= tol
    assert out["risk"] >= a_min["risk"] - tol
    assert out["status"] == ("boundary" if frac < 1 else ("hard_case" if seed % 2 else "interior"))
    # a generic solver never beats it
    cons = {"type": "ineq", "fun": lambda a: B * B - a @ a, "jac": lambda a: -2 * a}
    res = so.minimize(P.risk, np.zeros(P.m), jac=lambda a: 2 * (P.G @ a - P.g),
                      constraints=[cons], method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
    if np.linalg.norm(res.x) <= B * (1 + 1e-12):
        assert out["risk"] <= P.risk(res.x) + tol


def test_ball_hard_case_min_norm():
    """Singular G with g orthogonal to its null space and a budget above the minimum-norm
    solution: μ = 0, the minimum-norm head, status ``hard_case``."""
    G = np.diag([2.0, 1.0, 0.0])
    g = np.array([1.0, 0.5, 0.0])
    P = RefitProblem.from_arrays(G, g, 1.0)
    out = solve_ball(P, 1.0)
    np.testing.assert_allclose(out["head"], [0.5, 0.5, 0.0])
    assert out["status"] == "hard_case" and out["multiplier"] == 0.0
    assert out["risk"] == pytest.approx(1 - 0.5 - 0.25) == out["lower"]
    out = solve_ball(P, 0.5)                   # now the ball binds
    assert out["status"] == "boundary" and np.linalg.norm(out["head"]) <= 0.5
    best, dual = _brute_ball(P, 0.5)
    assert dual - 1e-12 <= out["lower"] <= out["risk"] <= best + 1e-12


def test_zero_budget_and_zero_signal():
    P, _, _ = _data_problem(2, 4)
    out = solve_ball(P, 0.0)
    assert out["status"] == "zero_budget" and not np.any(out["head"])
    assert out["risk"] == out["lower"] == pytest.approx(P.variance)
    Z = RefitProblem.from_arrays(P.G, np.zeros(4), 1.0)
    assert solve_ball(Z, 1.0)["risk"] == pytest.approx(1.0)
    assert solve_cutoff(Z)["risk"] == pytest.approx(1.0)


@st.composite
def _problems(draw):
    m = draw(st.integers(1, 7))
    dup = draw(st.integers(0, max(0, m // 2)))
    seed = draw(st.integers(0, 2 ** 31))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    P, _, _ = _data_problem(seed, m, n=m + draw(st.integers(2, 20)), dup=dup, scale=scale)
    b1 = draw(st.floats(1e-4, 10.0))
    b2 = draw(st.floats(1e-4, 10.0))
    perm = np.random.default_rng(seed).permutation(m)
    return P, min(b1, b2) / scale, max(b1, b2) / scale, perm


@given(_problems())
@example((RefitProblem.from_arrays(np.zeros((2, 2)), np.zeros(2), 1.0), 0.1, 1.0, np.array([1, 0])))
def test_properties(prob):
    P, Bs, Bl, perm = prob
    tol = 1e-9 * P.variance
    un = solve_cutoff(P, equilibrate=False)
    small, large = solve_ball(P, Bs), solve_ball(P, Bl)
    for out, B in ((small, Bs), (large, Bl)):
        assert np.linalg.norm(out["head"]) <= B                  # never violates the constraint
        assert 0.0 <= out["lower"] <= out["risk"]
    assert 0.0 <= un["lower"] <= un["risk"] <= P.variance + tol
    # nesting: unrestricted ≤ bounded(large) ≤ bounded(small) ≤ V (head 0 is feasible)
    assert un["lower"] <= large["risk"] + tol
    assert large["risk"] <= small["risk"] + tol <= P.variance + 2 * tol
    # invariance under a permutation of the neurons
    Q = RefitProblem.from_arrays(P.G[np.ix_(perm, perm)], P.g[perm], P.variance)
    assert solve_ball(Q, Bs)["risk"] == pytest.approx(small["risk"], abs=tol)
    assert solve_cutoff(Q, equilibrate=False)["risk"] == pytest.approx(un["risk"], abs=tol)


def test_into_ball_never_violates():
    """Heads that round out of the ball are scaled back in (and checked)."""
    from popdyn.diagnostics.refit import _into_ball

    rng = np.random.default_rng(5)
    for _ in range(200):
        a = rng.standard_normal(50) * 10 ** rng.uniform(-5, 5)
        B = float(np.linalg.norm(a)) * (1 - 1e-16)
        assert np.linalg.norm(_into_ball(a, B)) <= B


# ---------------------------------------------------------------------------- the public function
REL = 1e-10


@pytest.mark.parametrize("case", cases(), ids=case_ids())
def test_refit_risk_against_mpmath(case):
    import popdyn
    from popdyn.diagnostics import refit_risk

    S, p, T = build(case)
    VY = f(case["variance"])
    assert T.variance == pytest.approx(VY, rel=1e-13)
    un = refit_risk(S, p, T)
    ref = f(case["unrestricted"]["risk"])
    assert abs(un.risk - ref) <= REL * ref, (un.risk, ref)
    assert un.rank == case["unrestricted"]["rank"]
    assert un.normalized == pytest.approx(un.risk / VY)
    assert un.lower <= un.risk and abs(un.lower - ref) <= REL * ref
    sb = refit_risk(S, p, T, "same_budget")
    ref = f(case["same_budget"]["risk"])
    assert abs(sb.risk - ref) <= REL * ref, (sb.risk, ref)
    assert np.linalg.norm(sb.head) <= np.linalg.norm(p.a) and sb.lower <= sb.risk
    for bd in case["bounded"]:
        r = refit_risk(S, p, T, "bounded", bd["budget"])
        ref = f(bd["risk"])
        assert abs(r.risk - ref) <= REL * ref, (bd["budget"], r.risk, ref)
        assert abs(r.lower - ref) <= REL * ref
        assert np.linalg.norm(r.head) <= bd["budget"]
        assert r.status in (("boundary",) if f(bd["multiplier"]) > 0 else ("interior", "hard_case"))
    if "projected" in case:
        pr = refit_risk(S, p, T, "projected")
        ref = f(case["projected"]["risk"])
        assert abs(pr.risk - ref) <= REL * ref, (pr.risk, ref)
        np.testing.assert_allclose(pr.params.W, f(case["projected"]["W"]), rtol=1e-15, atol=1e-15)
    # the refitted head is a genuine head: its population loss is the reported risk
    L = popdyn.population_loss(S, un.params, T)
    assert 2 * L == pytest.approx(un.risk, rel=1e-9, abs=1e-12 * VY)


def _toy():
    import popdyn

    T = popdyn.Teacher.additive("h2", np.eye(4)[:2])
    S = popdyn.Student(d=4, m=5)
    return S, S.init(0, 0.5, T), T


@pytest.mark.parametrize("kw, exc, match", [
    (dict(kind="bounde"), ValueError, "Did you mean 'bounded'"),
    (dict(kind="ridge"), ValueError, "`kind` must be one of"),
    (dict(kind=3), TypeError, "`kind` must be a string"),
    (dict(kind="bounded"), ValueError, "`budget` is required"),
    (dict(kind="bounded", budget=0.0), ValueError, "`budget` must be > 0"),
    (dict(kind="bounded", budget=-1.0), ValueError, "`budget` must be > 0"),
    (dict(kind="bounded", budget=np.inf), ValueError, "`budget` must be finite"),
    (dict(kind="projected", budget=-2.0), ValueError, "`budget` must be > 0"),
    (dict(kind="same_budget", budget=1.0), ValueError, "`budget` must be None"),
    (dict(kind="unrestricted", budget=1.0), ValueError, "`budget` must be None"),
    (dict(rcond=0.0), ValueError, "`rcond` must be > 0"),
    (dict(rcond=2.0), ValueError, "`rcond` must be in"),
    (dict(kind="projected", U=np.ones((1, 4))), ValueError, "`U` must have orthonormal rows"),
    (dict(kind="projected", U=np.eye(3)[:1]), ValueError, "`U` must have width"),
    (dict(U=np.eye(4)[:1]), ValueError, "`U` is only used by kind='projected'"),
])
def test_bad_input(kw, exc, match):
    from popdyn.diagnostics import refit_risk

    S, p, T = _toy()
    with pytest.raises(exc, match=match):
        refit_risk(S, p, T, **kw)


def test_bad_objects():
    from popdyn.diagnostics import refit_risk

    S, p, T = _toy()
    with pytest.raises(TypeError, match="`student`"):
        refit_risk("relu", p, T)
    with pytest.raises(TypeError, match="`teacher`"):
        refit_risk(S, p, None)


def test_same_budget_with_zero_head():
    from popdyn.diagnostics import refit_risk

    S, p, T = _toy()
    r = refit_risk(S, p.replace(a=np.zeros(5)), T, "same_budget")
    assert r.status == "zero_budget" and r.normalized == pytest.approx(1.0)
