"""Sanity checks of the independent mpmath reference (tests/_mpref.py) and of the reference data it
produced (data/refs/engine_refs.json).  Nothing here imports popdyn: these tests check the
reference itself, against closed forms, Monte Carlo, finite differences and mpmath's own
quadrature.

Monte Carlo: 2,000,000 samples per case; every output (loss, each gradient entry, E[y], E[y²])
must agree within |z| ≤ 5 standard errors (~30 outputs per case: a false alarm has probability
< 2e-5 per case; the seed is fixed, so the test is deterministic).
"""
from __future__ import annotations

import copy
import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest
from mpmath import mp, mpf
from scipy.special import erf as np_erf, expit
from scipy.stats import norm

import _mpref as R

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFS = os.path.join(ROOT, "data", "refs", "engine_refs.json")


@pytest.fixture(scope="module")
def refs():
    with open(REFS) as fh:
        return json.load(fh)


def _cases_by_id(refs):
    return {cs["id"]: cs for cs in refs["cases"]}


def _inputs(cs):
    return {k: cs[k] for k in ("activation", "negative_slope", "scaling", "a", "W", "b", "c",
                               "teacher")}


# ----------------------------------------------------------------------------------------------
# 1-D Gaussian closed forms vs mpmath's own quadrature
# ----------------------------------------------------------------------------------------------

_MU_TAU = [("0.3", "0.7"), ("-2.1", "1.9"), ("4.0", "0.05"), ("0", "3.0")]


def _zpts(mu, tau):
    """Split points for mpmath.quad over z: [−20, 20] (Gaussian tail < 1e-85), the kink / centre
    z = −μ/τ when inside, and ±6, 0."""
    pts = {mpf(-20), mpf(-6), mpf(0), mpf(6), mpf(20)}
    zc = -mu / tau
    if -20 < zc < 20:
        pts.add(zc)
    return sorted(pts)


def _closed_fns():
    out = []
    for act, ns in [("relu", None), ("leaky_relu", 0.2), ("gelu", None), ("erf", None)]:
        s, ds = R.activation_fns(act, ns)
        out += [(act, s), (act + "'", ds)]
    for link in ["h1", "h2", "h3", "h4", "h5", "h6", "h3+0.3h2", "relu", "abs", "sin",
                 "gaussian_bump", "damped_cubic:0.5", [[0.6, "h3"], [0.4, "damped_cubic:1.0"]]]:
        out.append((str(link), R.link_fn(link)))
    return out


@pytest.mark.parametrize("name,fn", _closed_fns(), ids=[n for n, _ in _closed_fns()])
def test_closed_form_gaussian_expectations(name, fn):
    assert fn.closed
    with mp.workdps(45):
        for mu_s, tau_s in _MU_TAU:
            mu, tau = mpf(mu_s), mpf(tau_s)
            M, N = fn.closed_part_MN(mu, tau)
            pts = _zpts(mu, tau)
            qM = mp.quad(lambda z: fn.value(mu + tau * z) * mp.npdf(z), pts)
            qN = mp.quad(lambda z: fn.value(mu + tau * z) * z * mp.npdf(z), pts)
            scale = 1 + abs(qM) + abs(qN)
            assert abs(M - qM) < mpf("1e-35") * scale, (name, mu_s, tau_s, M, qM)
            assert abs(N - qN) < mpf("1e-35") * scale, (name, mu_s, tau_s, N, qN)


@pytest.mark.parametrize("act", ["tanh", "silu"])
def test_lattice_rule_for_smooth_functions(act):
    """The trapezoidal lattice rule (nested integrals of tanh / SiLU and their derivatives) vs
    mpmath's quad, including a tiny and a large smoothing width."""
    with mp.workdps(50):
        fns = list(R.activation_fns(act))
        for tau_s in ["1e-9", "4.5"]:
            tau = mpf(tau_s)
            lat = R._HardLattice(fns, tau)
            for mu_s in ["0.4", "-3.7"]:
                mu = mpf(mu_s)
                got = lat.MN(mu)
                for fn, (M, N) in zip(fns, got):
                    f = lambda z: fn.value(mu + tau * z) * mp.npdf(z)  # noqa: E731
                    pts = _zpts(mu, tau)
                    qM = mp.quad(f, pts)
                    qN = mp.quad(lambda z: f(z) * z, pts)
                    assert abs(M - qM) < mpf("1e-38"), (act, tau_s, mu_s)
                    assert abs(N - qN) < mpf("1e-38"), (act, tau_s, mu_s)


# ----------------------------------------------------------------------------------------------
# closed-form pair kernels
# ----------------------------------------------------------------------------------------------

def _unit(w, b, fns):
    return R.Unit([R.to_frac(x) for x in w], R.to_frac(b), fns)


def _exact_rho(w1, w2):
    """(ρ, sin θ = sqrt(1 − ρ²), |w1|, |w2|) from exact rational dot products (full relative
    precision of sin θ even when ρ is within 1e-24 of ±1)."""
    f1 = [Fraction(x) for x in w1]
    f2 = [Fraction(x) for x in w2]
    dot = sum(x * y for x, y in zip(f1, f2))
    n1 = sum(x * x for x in f1)
    n2 = sum(x * x for x in f2)
    nn = R.fmpf(n1 * n2)
    return (R.fmpf(dot) / mp.sqrt(nn), mp.sqrt(R.fmpf(n1 * n2 - dot * dot) / nn),
            mp.sqrt(R.fmpf(n1)), mp.sqrt(R.fmpf(n2)))


_PAIRS = {
    "generic": ([0.8, -0.3, 0.5], [-0.2, 1.1, 0.4]),
    "obtuse": ([1.0, 0.0, 0.0], [-0.9, 0.3, 0.0]),
    "near_parallel_1e-12": ([1.0, 0.5, 0.0], [1.0, 0.5, 1.5e-6]),
    "near_parallel_1e-24": ([1.0, 0.5, 0.0], [1.0, 0.5, 1.5e-12]),
    "parallel": ([1.0, 0.5, -0.25], [2.0, 1.0, -0.5]),
    "antiparallel": ([1.0, 0.5, -0.25], [-0.5, -0.25, 0.125]),
    "big": ([4.0, 3.0, 0.0], [0.0, -3.0, 4.0]),
}


@pytest.mark.parametrize("pair", list(_PAIRS))
def test_arc_cosine_kernels(pair):
    """E[relu(w1·x) relu(w2·x)] = |w1||w2| (sqrt(1−ρ²) + (π − arccos ρ) ρ)/(2π) and
    E[step(w1·x) step(w2·x)] = (π − arccos ρ)/(2π)."""
    w1, w2 = _PAIRS[pair]
    with mp.workdps(50):
        U1 = _unit(w1, 0.0, R.activation_fns("relu"))
        U2 = _unit(w2, 0.0, R.activation_fns("relu"))
        (k1, _), (k0, _) = R.plane_expect(U1, U2, [(0, 0, False), (1, 1, False)])
        rho, sin_t, a1, a2 = _exact_rho(w1, w2)
        theta = mp.atan2(sin_t, rho)  # = arccos ρ, accurate near ρ = ±1
        ex1 = a1 * a2 * (sin_t + (mp.pi - theta) * rho) / (2 * mp.pi)
        ex0 = (mp.pi - theta) / (2 * mp.pi)
        assert abs(k1 - ex1) < mpf("1e-38") * (1 + abs(ex1))
        assert abs(k0 - ex0) < mpf("1e-38")


@pytest.mark.parametrize("pair", list(_PAIRS))
def test_erf_kernel(pair):
    """E[erf(w1·x) erf(w2·x)] = (2/π) arcsin(2 w1·w2 / sqrt((1 + 2|w1|²)(1 + 2|w2|²)))."""
    w1, w2 = _PAIRS[pair]
    with mp.workdps(50):
        U1 = _unit(w1, 0.0, R.activation_fns("erf"))
        U2 = _unit(w2, 0.0, R.activation_fns("erf"))
        (k, _), = R.plane_expect(U1, U2, [(0, 0, False)])
        rho, _, a1, a2 = _exact_rho(w1, w2)
        arg = 2 * rho * a1 * a2 / mp.sqrt((1 + 2 * a1 ** 2) * (1 + 2 * a2 ** 2))
        ex = 2 / mp.pi * mp.asin(arg)
        assert abs(k - ex) < mpf("1e-38")


@pytest.mark.parametrize("pair", ["generic", "near_parallel_1e-12", "antiparallel", "big"])
def test_sin_kernel_with_biases(pair):
    """E[sin(w1·x + b1) sin(w2·x + b2)]
    = ½[cos(b1−b2) e^{−|w1−w2|²/2} − cos(b1+b2) e^{−|w1+w2|²/2}]."""
    w1, w2 = _PAIRS[pair]
    b1, b2 = 0.7, -1.3
    with mp.workdps(50):
        f = R.link_fn("sin")
        U1 = _unit(w1, b1, [f])
        U2 = _unit(w2, b2, [f])
        (k, _), = R.plane_expect(U1, U2, [(0, 0, False)])
        d2 = sum((mpf(x) - mpf(y)) ** 2 for x, y in zip(w1, w2))
        s2 = sum((mpf(x) + mpf(y)) ** 2 for x, y in zip(w1, w2))
        B1, B2 = mpf(b1), mpf(b2)
        ex = (mp.cos(B1 - B2) * mp.exp(-d2 / 2) - mp.cos(B1 + B2) * mp.exp(-s2 / 2)) / 2
        assert abs(k - ex) < mpf("1e-38")


def test_hermite_mehler_exact_directions():
    """E[h_k(u·x) h_l(v·x)] = δ_kl ρ^k for exactly unit u, v (given as exact rationals)."""
    u = [Fraction(1), Fraction(0), Fraction(0)]
    vs = {"3/5": [Fraction(3, 5), Fraction(4, 5), Fraction(0)], "1": u,
          "-1": [-x for x in u], "0": [Fraction(0), Fraction(0), Fraction(1)]}
    with mp.workdps(50):
        for rho_s, v in vs.items():
            rho = R.fmpf(Fraction(rho_s))
            for k in range(1, 7):
                for l in range(1, 7):
                    if rho_s != "3/5" and l not in (k, k + 1, k + 2):
                        continue
                    U1 = R.Unit(u, Fraction(0), [R.link_fn(f"h{k}")])
                    U2 = R.Unit(v, Fraction(0), [R.link_fn(f"h{l}")])
                    (e, _), = R.plane_expect(U1, U2, [(0, 0, False)])
                    ex = rho ** k if k == l else mpf(0)
                    assert abs(e - ex) < mpf("1e-38"), (rho_s, k, l, e)


@pytest.mark.slow
def test_smooth_pair_against_plain_2d_quadrature():
    """A pair with no closed form on either side (tanh' vs SiLU: lattice rule inside, tanh–sinh
    outside) against mpmath's own 2-D quadrature in the original coordinates (15 digits;
    precomputed by data/_precompute/mpref_quad2d_refs.py for these exact float64 inputs)."""
    w1, b1, w2, b2 = [1.3, 0.4], 0.7, [-0.5, 2.1], -0.3
    with open(os.path.join(ROOT, "data", "refs", "mpref_quad2d_refs.json")) as fh:
        ref, = json.load(fh)["cases"]
    hx = {k: [float.fromhex(v) for v in x] if isinstance(x, list) else float.fromhex(x)
          for k, x in ref["inputs"].items()}
    assert hx == {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    man, ex = int(ref["value_exact"]["man"]), int(ref["value_exact"]["exp"])
    with mp.workdps(50):
        q = mp.ldexp(mpf(man), ex)
        assert abs(q - mpf(ref["value"])) < mpf("1e-19") * abs(q)
        U1 = _unit(w1, b1, R.activation_fns("tanh"))
        U2 = _unit(w2, b2, R.activation_fns("silu"))
        (e, _), = R.plane_expect(U1, U2, [(1, 0, False)])
    assert abs(e - q) < mpf("1e-13"), (e, q)


# ----------------------------------------------------------------------------------------------
# independent quadrature paths must agree (orientation swap), and degenerate limits
# ----------------------------------------------------------------------------------------------

_ORIENT = [
    ("relu", "relu", "generic", 0.3, -0.4),
    ("relu", "relu", "near_parallel_1e-12", 0.2, 0.2),
    ("relu", "relu", "near_parallel_1e-24", 0.2, 0.2),
    ("leaky_relu", "relu", "antiparallel", 0.1, -0.3),
    ("gelu", "erf", "big", 4.5, -2.0),
    ("relu", "gelu", "obtuse", 1e-7, 0.5),
]


@pytest.mark.parametrize("a1,a2,pair,b1,b2", _ORIENT)
def test_orientation_swap_agrees(a1, a2, pair, b1, b2):
    """E[σ1'(u1) σ2(u2)], E[σ1'(u1) σ2(u2) x] computed with the outer integral along w1 and
    along w2 (different closed forms, different quadrature nodes)."""
    w1, w2 = _PAIRS[pair]
    with mp.workdps(50):
        U1 = _unit(w1, b1, R.activation_fns(a1, 0.2))
        U2 = _unit(w2, b2, R.activation_fns(a2, 0.2))
        r12 = R.plane_expect(U1, U2, [(1, 0, True), (0, 1, True)])
        r21 = R.plane_expect(U2, U1, [(0, 1, True), (1, 0, True)])
        for (e, v), (e2, v2) in zip(r12, r21):
            assert abs(e - e2) < mpf("1e-38") * (1 + abs(e))
            for x, y in zip(v, v2):
                assert abs(x - y) < mpf("1e-38") * (1 + abs(x))


def test_tiny_weight_limit():
    """|w| = 1e-8, b = 1e-7: relu(w·x + b) differs from its linear part w·x + b only where
    w·x < −b (probability Φ(−10) ≈ 7.6e-24), so E[relu(u1) σ(u2)] = E[(u1) σ(u2)] up to ~1e-30."""
    with mp.workdps(50):
        w1 = [1e-8, 0.0, 0.0]
        U1 = _unit(w1, 1e-7, R.activation_fns("relu"))
        U1lin = _unit(w1, 1e-7, [R.Fn([(1, R.IDENT)])])
        U2 = _unit([0.3, -0.9, 0.2], 0.4, R.activation_fns("gelu"))
        (e, v), = R.plane_expect(U1, U2, [(0, 0, True)])
        (el, vl), = R.plane_expect(U1lin, U2, [(0, 0, True)])
        assert abs(e - el) < mpf("1e-28")
        assert all(abs(x - y) < mpf("1e-28") for x, y in zip(v, vl))
        assert abs(e) > mpf("1e-9")  # not trivially zero


# ----------------------------------------------------------------------------------------------
# finite differences of the loss vs the gradient, at high precision
# ----------------------------------------------------------------------------------------------

_FD_CASES = {
    "relu-net-tanh": {
        "activation": "relu", "negative_slope": None, "scaling": "mean_field",
        "a": [0.7, -1.1], "W": [[0.5, -0.3, 0.9], [1.2, 0.1, -0.4]], "b": [0.1, -0.5], "c": 0.2,
        "teacher": {"kind": "network", "activation": "tanh", "negative_slope": None,
                    "V": [1.0, -0.6], "U": [[1.0, 0.5, 0.0], [0.3, 0.0, 1.0]],
                    "bias": [0.2, -0.1]}},
    "gelu-h3+0.3h2": {
        "activation": "gelu", "negative_slope": None, "scaling": "standard",
        "a": [0.9, -0.4], "W": [[1.5, -0.3, 0.2], [-0.7, 0.6, 1.1]], "b": [0.4, -1.3], "c": -0.1,
        "teacher": {"kind": "additive", "link": "h3+0.3h2", "U": [[0.0, 1.0, 0.0]],
                    "kappa": [1.2]}},
}


def _perturbed(case, key, idx, delta):
    c2 = copy.deepcopy(case)
    if key == "c":
        c2["c"] = R.to_frac(c2["c"]) + delta
    elif key == "W":
        c2["W"][idx[0]][idx[1]] = R.to_frac(c2["W"][idx[0]][idx[1]]) + delta
    else:
        c2[key][idx] = R.to_frac(c2[key][idx]) + delta
    return c2


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_FD_CASES))
def test_finite_differences_match_gradient(name):
    """Central differences of the reference loss with h = 1e-15 (exact rational perturbation of
    the float inputs) at 50 digits: truncation O(h²) ≈ 1e-30, rounding ≈ 1e-60/h = 1e-45; the
    reference gradient must match to 1e-26.  (Within R.pair_memo() a pair integral that a
    perturbation leaves unchanged — every one for a and c, those without the perturbed neuron
    for its w and b — is integrated once: the same values, bit for bit.)"""
    case = _FD_CASES[name]
    h = Fraction(1, 10 ** 15)
    with mp.workdps(50), R.pair_memo():
        base = R.compute(case)
        checks = [("c", None, base["grad"]["c"]), ("a", 1, base["grad"]["a"][1]),
                  ("b", 0, base["grad"]["b"][0]), ("W", (0, 2), base["grad"]["W"][0][2]),
                  ("W", (1, 0), base["grad"]["W"][1][0])]
        for key, idx, g in checks:
            lp = R.compute(_perturbed(case, key, idx, h), need_grad=False)["loss"]
            lm = R.compute(_perturbed(case, key, idx, -h), need_grad=False)["loss"]
            fd = (lp - lm) / (2 * R.fmpf(h))
            assert abs(fd - g) < mpf("1e-26"), (key, idx, g, fd)


# ----------------------------------------------------------------------------------------------
# Monte Carlo against the stored references
# ----------------------------------------------------------------------------------------------

def _np_act(name, s=None):
    if name == "relu":
        return lambda t: np.maximum(t, 0.0), lambda t: (t > 0).astype(float)
    if name == "leaky_relu":
        return lambda t: np.where(t > 0, t, s * t), lambda t: np.where(t > 0, 1.0, s)
    if name == "silu":
        return lambda t: t * expit(t), lambda t: expit(t) * (1 + t * expit(-t))
    if name == "gelu":
        return lambda t: t * norm.cdf(t), lambda t: norm.cdf(t) + t * norm.pdf(t)
    if name == "tanh":
        return np.tanh, lambda t: 1 - np.tanh(t) ** 2
    if name == "erf":
        return np_erf, lambda t: 2 / np.sqrt(np.pi) * np.exp(-t * t)
    raise ValueError(name)


def _np_link(name):
    from numpy.polynomial.hermite_e import hermeval

    if isinstance(name, list):
        parts = [(w, _np_link(n)) for w, n in name]
        return lambda z: sum(w * g(z) for w, g in parts)
    if name.startswith("h") and name[1:].isdigit():
        k = int(name[1:])
        return lambda z: hermeval(z, [0] * k + [1]) / math.sqrt(math.factorial(k))
    if name == "h3+0.3h2":
        return lambda z: _np_link("h3")(z) + 0.3 * _np_link("h2")(z)
    if name == "relu":
        return lambda z: np.maximum(z, 0.0)
    if name == "tanh":
        return np.tanh
    if name == "abs":
        return np.abs
    if name == "sin":
        return np.sin
    if name == "silu":
        return lambda z: z * expit(z)
    if name == "silu_centered":
        with mp.workdps(30):
            mean = float(mp.quad(lambda z: z / (1 + mp.exp(-z)) * mp.npdf(z), [-mp.inf, 0, mp.inf]))
        return lambda z: z * expit(z) - mean
    if name == "gaussian_bump":
        return lambda z: np.exp(-z * z / 2)
    if name.startswith("damped_cubic:"):
        a = float(name.split(":")[1])
        return lambda z: z ** 3 * np.exp(-a * z * z / 2)
    raise ValueError(name)


def _monte_carlo(cs, n_total=2_000_000, chunk=250_000, seed=12345):
    rng = np.random.default_rng(seed)
    a = np.array(cs["a"])
    W = np.array(cs["W"])
    b = np.array(cs["b"])
    c = cs["c"]
    m, d = W.shape
    s = 1.0 if cs["scaling"] == "standard" else 1.0 / m
    sig, dsig = _np_act(cs["activation"], cs["negative_slope"])
    T = cs["teacher"]
    U = np.array(T["U"])
    if T["kind"] == "additive":
        g = _np_link(T["link"])
        kappa = np.array(T["kappa"])
        teacher = lambda x: g(x @ U.T) @ kappa  # noqa: E731
    else:
        gs, _ = _np_act(T["activation"], T.get("negative_slope"))
        V, bias = np.array(T["V"]), np.array(T["bias"])
        teacher = lambda x: gs(x @ U.T + bias) @ V  # noqa: E731
    sums, sq = {}, {}

    def acc(k, v):
        sums[k] = sums.get(k, 0) + v.sum(axis=0)
        sq[k] = sq.get(k, 0) + (v * v).sum(axis=0)

    for _ in range(n_total // chunk):
        x = rng.standard_normal((chunk, d))
        pre = x @ W.T + b
        y = teacher(x)
        r = s * (sig(pre) @ a) + c - y
        acc("loss", 0.5 * r * r)
        acc("c", r)
        acc("a", s * r[:, None] * sig(pre))
        gb = s * a * r[:, None] * dsig(pre)
        acc("b", gb)
        acc("W", gb[:, :, None] * x[:, None, :])
        acc("y", y)
        acc("y2", y * y)
    n = (n_total // chunk) * chunk
    out = {}
    for k in sums:
        mean = sums[k] / n
        var = sq[k] / n - mean * mean
        out[k] = (mean, np.sqrt(np.maximum(var, 0) / n))
    return out


_MC_IDS = ["relu-h3+0.3h2", "leaky_relu-mixture", "net-gelu-vs-relu", "tanh-tanh",
           "degen-relu-zero-w", "silu-silu_centered"]


@pytest.mark.parametrize("cid", _MC_IDS)
def test_monte_carlo_agreement(refs, cid):
    cs = _cases_by_id(refs)[cid]
    est = _monte_carlo(cs)
    o = cs["outputs"]
    Ey = float(o["teacher_mean"])
    Ey2 = float(o["teacher_variance"]) + Ey * Ey
    pairs = [("loss", float(o["loss"]), ()), ("c", float(o["grad"]["c"]), ()),
             ("y", Ey, ()), ("y2", Ey2, ())]
    pairs += [("a", float(v), (j,)) for j, v in enumerate(o["grad"]["a"])]
    pairs += [("b", float(v), (j,)) for j, v in enumerate(o["grad"]["b"])]
    pairs += [("W", float(v), (j, i)) for j, row in enumerate(o["grad"]["W"])
              for i, v in enumerate(row)]
    worst = 0.0
    for k, ref, idx in pairs:
        mean, se = est[k]
        mean, se = np.asarray(mean)[idx], np.asarray(se)[idx]
        if se == 0:  # e.g. a neuron with w = 0 and σ'(b) = 0: exactly zero in both
            assert ref == mean == 0.0, (k, idx)
            continue
        z = abs(ref - mean) / se
        worst = max(worst, z)
        assert z <= 5.0, (cid, k, idx, ref, mean, se)


# ----------------------------------------------------------------------------------------------
# the stored data
# ----------------------------------------------------------------------------------------------

def test_json_schema_and_coverage(refs):
    assert refs["schema"] == "popdyn.engine_refs/1"
    assert refs["digits"] == 30 and refs["dps"] >= 40
    assert refs["precision_check"]["max_relative_difference"] < 1e-32
    assert refs["precision_check"]["max_absolute_difference_over_scale"] < 1e-35
    assert os.path.getsize(REFS) < 2_000_000
    acts, links_relu, links_leaky, scalings, cats = set(), set(), set(), set(), set()
    for cs in refs["cases"]:
        m = len(cs["a"])
        d = len(cs["W"][0])
        assert len(cs["W"]) == m and len(cs["b"]) == m
        o = cs["outputs"]
        assert len(o["grad"]["a"]) == m and len(o["grad"]["b"]) == m
        assert len(o["grad"]["W"]) == m and all(len(r) == d for r in o["grad"]["W"])
        for v in [o["loss"], o["teacher_mean"], o["teacher_variance"], o["grad"]["c"]]:
            assert isinstance(v, str)
            mpf(v)
        acts.add(cs["activation"])
        scalings.add(cs["scaling"])
        cats.add(cs["category"])
        t = cs["teacher"]
        if t["kind"] == "additive":
            key = t["link"] if isinstance(t["link"], str) else "mixture"
            if cs["activation"] == "relu":
                links_relu.add(key)
            if cs["activation"] == "leaky_relu":
                links_leaky.add(key)
        assert float(o["teacher_variance"]) >= 0
        assert float(o["loss"]) >= 0
    every = {"h1", "h2", "h3", "h4", "h5", "h6", "h3+0.3h2", "relu", "tanh", "abs", "sin", "silu",
             "silu_centered", "gaussian_bump", "damped_cubic:0.5", "mixture"}
    assert acts == {"relu", "leaky_relu", "silu", "gelu", "tanh", "erf"}
    assert links_relu == every and links_leaky == every
    assert scalings == {"standard", "mean_field"}
    assert {"degenerate", "network_teacher", "large_d"} <= cats


@pytest.mark.parametrize("cid", ["relu-h2", "degen-relu-duplicate"])
def test_fresh_reference_reproduces_stored_values(refs, cid):
    cs = _cases_by_id(refs)[cid]
    fresh = R.reference(_inputs(cs), dps=refs["dps"])

    def flat(o):
        g = o["grad"]
        return ([o["loss"], g["c"], o["teacher_mean"], o["teacher_variance"]] + g["a"] + g["b"]
                + [x for row in g["W"] for x in row])

    with mp.workdps(40):
        for x, y in zip(flat(fresh), flat(cs["outputs"])):
            X, Y = mpf(x), mpf(y)
            assert abs(X - Y) <= mpf("1e-29") * max(abs(Y), mpf("1e-30")), (cid, x, y)
