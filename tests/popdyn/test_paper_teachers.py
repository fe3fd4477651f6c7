"""The central paper's teacher links and Table 1 teachers (popdyn.links g/q/g_mu,
popdyn.teachers.paper) against independent references.

References: data/refs/paper_links_refs.json (data/_precompute/paper_links_refs.py: mpmath.quad
at 34 digits of the defining integrals of eq. (7) of Kumar (arXiv 2609.39408) and of the raw
Table 1 links, written there from the paper, no popdyn code); eq. (7) re-implemented below in
mpmath (``_gv``) for pointwise values, the series and the signed combinations; the closed forms
N_v² = 3{2+3(1−v)²}/[v(2−v)]^{7/2} and K(t) = 3(2+3t)/(1−t)^{7/2} written here, the printed
values 6, 10.5714, 22.5808, 78.2445; and a Monte Carlo estimate of a population loss with a
z-score.
"""
import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

import popdyn
from popdyn.config import teacher_from_table
from popdyn.links import N_TAB, g_mixture, get_link, mixture
from popdyn.teachers import paper

mp = mpmath.MPContext()
mp.dps = 30
INF = mp.inf
REFS = json.loads((Path(__file__).resolve().parents[2] / "data" / "refs"
                   / "paper_links_refs.json").read_text())


def _h(n, z):
    return mp.hermite(n, z / mp.sqrt(2)) / mp.sqrt(mp.mpf(2) ** n * mp.factorial(n))


def _gv(v, t):
    v = mp.mpf(v.numerator) / v.denominator if isinstance(v, Fraction) else mp.mpf(v)
    return v ** (-mp.mpf(7) / 2) * (t ** 3 - 3 * v * t) * mp.exp(-(1 / v - 1) * t * t / 2)


def _gmu(atoms):
    return lambda t: mp.fsum(mp.mpf(w.numerator) / w.denominator * _gv(v, t) for w, v in atoms)


def E(f):
    return mp.quad(lambda z: f(z) * mp.npdf(z), [-INF, -3, 0, 3, INF])


F = Fraction
TWO = [(F(1, 2), F(1, 3)), (F(1, 2), F(1))]
THREE = [(F(1, 5), F(2, 5)), (F(3, 10), F(7, 10)), (F(1, 2), F(1))]


# ------------------------------------------------------------------------------------ g_v
@pytest.mark.parametrize("v", ["1/3", "1/2", "2/3", "1", "2/5", "7/10"])
def test_gv_coefficients_and_energy_vs_quadrature(v):
    ref = REFS["gv"][v]
    g = get_link(f"g:{v}")
    fv = F(v)
    assert g.name == f"g:{v}" and g.mean == 0.0
    c = g.coefficients_full(9)
    for n, r in enumerate(ref["coeffs"]):
        # the 50-digit coefficient behind the float64 table, then the table itself
        if n < len(g._hdata.coeffs):
            assert abs(g._hdata.coeffs[n] - mp.mpf(r)) <= 1e-30 * max(1, abs(mp.mpf(r)))
        r = float(mp.mpf(r))
        assert abs(c[n] - r) <= 1e-15 * max(1.0, abs(r)), (n, c[n], r)
    e2, de2 = mp.mpf(ref["second"]), mp.mpf(ref["dsecond"])
    assert abs(mp.mpf(g.second_moment_str) - e2) < 1e-28 * e2
    assert abs(mp.mpf(g.d_second_moment_str) - de2) < 1e-28 * de2
    vm = mp.mpf(fv.numerator) / fv.denominator
    closed = 3 * (2 + 3 * (1 - vm) ** 2) / (vm * (2 - vm)) ** (mp.mpf(7) / 2)
    assert abs(mp.mpf(g.second_moment_str) - closed) < 1e-28 * closed
    for z, val in ref["values"].items():
        assert float(mp.mpf(g.eval_mp(z)) - mp.mpf(val)) == pytest.approx(0.0, abs=1e-28)
        assert g(float(z)) == pytest.approx(float(mp.mpf(val)), rel=1e-14, abs=1e-15)
    # far out the exponent y = (1/v - 1) z^2/2 is large: the float64 v (7/10 is no binary
    # fraction; relative error ε) moves it by y·ε/(1 - v), and three roundings by 3yε
    a = float(1 / vm - 1)
    kap = 0.0 if fv == 1 else float(1 / (1 - vm))
    for x in (-3.1, -0.4, 0.0, 0.9, 2.5, 8.0, 40.0):
        want = float(_gv(fv, mp.mpf(x)))
        y = a * x * x / 2
        assert g(x) == pytest.approx(want, rel=1.2e-16 * (20 + y * (kap + 3)), abs=1e-300), x


def test_printed_norms_and_series_closed_form():
    want = {"1": 6.0, "2/3": 10.5714, "1/2": 22.5808, "1/3": 78.2445}
    for v, val in want.items():
        assert round(get_link(f"g:{v}").second_moment, 4) == val
    # the series (-1)^j sqrt((2j+3)!)/(2^j j!) (1-v)^j at high degree, written here
    g = get_link("g:1/3")
    for j in (0, 1, 7, 40, 150, 254):
        ref = (-1) ** j * mp.sqrt(mp.factorial(2 * j + 3)) / (2 ** j * mp.factorial(j)) \
            * (mp.mpf(2) / 3) ** j
        assert abs(g.coeffs[2 * j + 3] - float(ref)) <= 1e-14 * abs(float(ref))
        assert g.coeffs[2 * j + 2] == 0.0
    assert g.coeffs[0] == g.coeffs[1] == g.coeffs[2] == 0.0
    # g_1 = sqrt(6) h_3 exactly, a polynomial
    g1 = get_link("g:1")
    assert g1.is_polynomial and g1.N_tab == 3 and g1.coeffs[3] == math.sqrt(6)


@pytest.mark.parametrize("v", ["1/3", "1/2"])
def test_gv_tails_are_tight_upper_bounds(v):
    g = get_link(f"g:{v}")
    rho = 1 - mp.mpf(F(v).numerator) / F(v).denominator
    c = [mp.zero] * 2000
    for j in range(998):
        c[2 * j + 3] = (-1) ** j * mp.sqrt(mp.factorial(2 * j + 3)) / (2 ** j * mp.factorial(j)) \
            * rho ** j
    for N in (3, 50, 200, N_TAB):
        t2 = mp.fsum(x * x for x in c[N + 1:])
        l1 = mp.fsum(abs(x) for x in c[N + 1:])
        dt2 = mp.fsum(m * c[m] ** 2 for m in range(N + 2, 2000))
        for got, ref in ((g.t2[N], t2), (g.l1[N], l1), (g.dt2[N], dt2)):
            assert got >= ref and got <= ref * (1 + 1e-12)


def test_q_is_normalized():
    for v in ("1/3", "2/3"):
        g, q = get_link(f"g:{v}"), get_link(f"q:{v}")
        assert q.second_moment == pytest.approx(1.0, rel=1e-15)
        np.testing.assert_allclose(q.coeffs, g.coeffs / math.sqrt(g.second_moment), rtol=1e-14,
                                   atol=1e-300)
    q = g_mixture(THREE, normalized=True)
    assert q.name == "q_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)"
    assert float(mp.mpf(q.second_moment_str)) == pytest.approx(1.0, rel=1e-28)


# ----------------------------------------------------------------------------------- g_mu
@pytest.mark.parametrize("key, atoms", [("two", TWO), ("three", THREE)])
def test_table1_mixtures_vs_quadrature(key, atoms):
    ref = REFS["gmu"][key]
    assert [(F(w), F(v)) for w, v in ref["atoms"]] == atoms
    g = g_mixture([(w, v) for w, v in atoms])
    e2 = mp.mpf(ref["second"])
    assert abs(mp.mpf(g.second_moment_str) - e2) < 1e-28 * e2
    # the kernel K(t) = 3(2+3t)/(1-t)^{7/2} double sum, written here
    K = lambda t: 3 * (2 + 3 * t) / (1 - t) ** (mp.mpf(7) / 2)  # noqa: E731
    q = lambda f: mp.mpf(f.numerator) / f.denominator  # noqa: E731
    kk = mp.fsum(q(w1) * q(w2) * K((1 - q(v1)) * (1 - q(v2)))
                 for w1, v1 in atoms for w2, v2 in atoms)
    assert abs(mp.mpf(g.second_moment_str) - kk) < 1e-28 * kk
    assert 6 <= e2 < 81                                # sqrt(6) <= N_mu < 9 (paper, after (7))
    for n, r in enumerate(ref["coeffs"]):
        r = float(mp.mpf(r))
        assert abs(g.coeffs[n] - r) <= 1e-15 * max(1.0, abs(r))
    assert abs(mp.mpf(ref["mean"])) < 1e-30 and g.mean == 0.0


def test_uniform_measure_vs_quadrature():
    ref = REFS["uniform"]
    g = g_mixture("uniform")
    assert g.name == "g_mu(uniform)" and g.tail_beyond == "closed-form" and g.mean == 0.0
    e2 = mp.mpf(ref["second"])
    assert abs(mp.mpf(g.second_moment_str) - e2) < 1e-28 * e2
    for n, r in ref["coeffs"].items():
        assert g.coeffs[int(n)] == pytest.approx(float(mp.mpf(r)), rel=1e-15)
    for z, val in ref["values"].items():
        assert abs(g.eval_mp(z) - mp.mpf(val)) < 1e-25 * max(1, abs(mp.mpf(val)))
        assert g(float(z)) == pytest.approx(float(mp.mpf(val)), rel=4e-15, abs=1e-15)
    for N in (3, 40, N_TAB):
        assert math.fsum(g.coeffs[:N + 1] ** 2) + g.t2[N] == pytest.approx(float(e2), rel=1e-14)
    q = g_mixture("uniform", normalized=True)
    assert q.name == "q_mu(uniform)" and q.second_moment == pytest.approx(1.0, rel=1e-15)
    np.testing.assert_allclose(q.coeffs, g.coeffs / math.sqrt(float(e2)), rtol=1e-14,
                               atol=1e-300)


def test_measure_names_and_parsing():
    a = g_mixture([(0.5, 1), (0.5, "1/3")])
    assert a.name == "g_mu(1/2*g:1/3, 1/2*g:1)"
    assert get_link("g_mu(0.5*g:1, 0.5*g:1/3)") is a
    assert g_mixture([(F(1, 2), F(1, 3)), ("0.5", 1.0)]) is a
    b = g_mixture([(0.2, 0.4), (0.3, 0.7), (0.5, 1)])
    assert b.name == "g_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)"
    assert g_mixture([(1, "0.5")]) is get_link("g:1/2") is get_link(("g", 0.5))
    assert get_link("g:0.5") is get_link("g:1/2") and get_link(("g", 1 / 3)).name == "g:1/3"
    assert g_mixture([(0.25, 0.5), (0.75, 0.5)]) is get_link("g:1/2")     # merged atoms
    # within 1e-12 of mass one is accepted and kept as given
    c = g_mixture([(1 - 1e-13, 1), (1e-13, F(1, 2))])
    assert c.name.startswith("g_mu(")


@pytest.mark.parametrize("bad, match", [
    ([(0.5, 1), (0.4, 0.5)], "sum to 1"),
    ([(1.5, 1), (-0.5, 0.5)], ">= 0"),
    ([(1, 0.25)], r"\[1/3, 1\]"),
    ([(1, "0.3333333333333333")], r"\[1/3, 1\]"),
    ([(1, 1.5)], r"\[1/3, 1\]"),
    ([(1, "x")], "rational"),
    ([], "at least one"),
])
def test_bad_measures(bad, match):
    with pytest.raises(ValueError, match=match):
        g_mixture(bad)


def test_bad_g_names():
    for s in ("g:1/4", "g:0", "g:abc", "g_mu(1*g:1/2, 0.5*g:1)", "g_mu(1*h3)"):
        with pytest.raises(ValueError, match="`spec`"):
            get_link(s)
    with pytest.raises(TypeError, match="`measure`"):
        g_mixture("g:1/2")


def test_g_mixtures_through_mixture_stay_exact():
    m = mixture([(0.5, "g:1"), (0.5, "g:1/3")])
    ref = g_mixture([(0.5, 1), (0.5, F(1, 3))])
    assert m.tail_beyond == "closed-form"
    np.testing.assert_allclose(m.coeffs, ref.coeffs, rtol=1e-15, atol=1e-300)
    assert m.second_moment_str[:25] == ref.second_moment_str[:25]
    # a signed combination of g's (not a probability measure): exact energy vs quadrature
    s = mixture([(1.0, "g:1/2"), (-0.5, "g:1/3")])
    ref = REFS["gmu"]["signed"]
    e2 = mp.mpf(ref["second"])
    assert abs(mp.mpf(s.second_moment_str) - e2) < 1e-28 * e2
    for n, r in enumerate(ref["coeffs"]):
        assert abs(s.coeffs[n] - float(mp.mpf(r))) <= 1e-15 * max(1.0, abs(float(mp.mpf(r))))
    for N in (10, 100):
        assert math.fsum(s.coeffs[:N + 1] ** 2) + s.t2[N] == pytest.approx(float(e2), rel=1e-14)


def test_damped_cubic_is_not_the_papers_g():
    # z^3 e^{-a z^2/2} with a = 1/v - 1 = 1 differs from g_{1/2} (linear term and v^{-7/2})
    assert get_link("damped_cubic:1").coeffs[1] != 0.0 and get_link("g:1/2").coeffs[1] == 0.0


# ------------------------------------------------------------------------- Table 1 teachers
LABELS = ["|z|", "st", "g_{1/2}", "g_{1/3}", "g_{2/3}", "GELU(s)t", "h_2", "h_3",
          "h_3 + 0.1h_5", "h_3 + 0.1sin", "h_4", "g_1 + g_{1/3}", "h_2(s)t", "ReLU", "ReLU(s)t",
          "Raw additive SiLU", "Centered additive SiLU", "SiLU(s)t", "sin z", "tanh(s)t",
          "Three-scale mixture"]

_silu = lambda z: z / (1 + mp.exp(-z))  # noqa: E731
RAW = {  # the raw scalar link q (additive, eq. (17)) or gate g (products, eq. (20)), here
    "|z|": abs, "st": lambda z: z, "g_{1/2}": lambda z: _gv(F(1, 2), z),
    "g_{1/3}": lambda z: _gv(F(1, 3), z), "g_{2/3}": lambda z: _gv(F(2, 3), z),
    "GELU(s)t": lambda z: z * mp.ncdf(z), "h_2": lambda z: _h(2, z), "h_3": lambda z: _h(3, z),
    "h_3 + 0.1h_5": lambda z: _h(3, z) + mp.mpf(0.1) * _h(5, z),
    "h_3 + 0.1sin": lambda z: _h(3, z) + mp.mpf(0.1) * mp.sin(z), "h_4": lambda z: _h(4, z),
    "g_1 + g_{1/3}": _gmu(TWO), "h_2(s)t": lambda z: _h(2, z), "ReLU": lambda z: max(z, 0),
    "ReLU(s)t": lambda z: max(z, 0), "Raw additive SiLU": _silu,
    "Centered additive SiLU": _silu, "SiLU(s)t": _silu, "sin z": mp.sin,
    "tanh(s)t": mp.tanh, "Three-scale mixture": _gmu(THREE),
}
GATED = {"st", "GELU(s)t", "h_2(s)t", "ReLU(s)t", "SiLU(s)t", "tanh(s)t"}


def test_table1_labels_and_tables():
    assert list(paper.LABELS) == LABELS
    for label, table in paper.TABLE1:
        assert table["label"] == label and table["normalize"] == "second_moment"
        assert table["kind"] == ("gated" if label in GATED else "additive")
    with pytest.raises(ValueError, match="`label` must be one of"):
        paper.table1_table("h3")


def test_table1_unit_second_moment_and_means_vs_quadrature():
    T = paper.table1_teachers(d=5)
    assert list(T) == LABELS
    X = np.random.default_rng(0).standard_normal((4, 5))
    for label in LABELS:
        t = T[label]
        q = RAW[label]
        e1, e2 = mp.mpf(REFS["raw"][label]["mean"]), mp.mpf(REFS["raw"][label]["second"])
        shift = mp.zero
        if label == "Centered additive SiLU":            # q = SiLU - E SiLU
            e2, e1, shift = e2 - e1 ** 2, mp.zero, e1
        if label in GATED:
            # eq. (20): Y_g = g(S)T / sqrt(E g^2), mean 0
            kappa = float(1 / mp.sqrt(e2))
            assert t.mean == 0.0
            assert t.weights[0] == pytest.approx(kappa, rel=1e-13), label
            y = np.array([float(q(mp.mpf(x[0]))) for x in X]) * X[:, 1] * kappa
        else:
            # eq. (17) / (21): y = sum_i q(X_i) / (sqrt(r) sqrt(E q^2 + (r-1)(E q)^2)), r = 2
            kappa = float(1 / (mp.sqrt(2) * mp.sqrt(e2 + e1 ** 2)))
            np.testing.assert_allclose(t.weights, [kappa, kappa], rtol=1e-13, err_msg=label)
            assert t.mean == pytest.approx(float(2 * kappa * e1), rel=1e-13, abs=1e-15), label
            y = kappa * np.array([float(q(mp.mpf(x[0])) + q(mp.mpf(x[1])) - 2 * shift)
                                  for x in X])
        assert t.second_moment == pytest.approx(1.0, rel=2e-15), label
        np.testing.assert_allclose(t(X), y, rtol=1e-12, atol=1e-14, err_msg=label)
        np.testing.assert_array_equal(t.subspace, np.eye(5)[:2])


@pytest.mark.parametrize("label", ["Three-scale mixture", "SiLU(s)t"])
def test_table1_loss_monte_carlo(label):
    T = paper.table1_teachers(d=6, labels=[label])[label]
    S = popdyn.Student(6, 5, activation="relu")
    p = S.init(7, 0.9, T)
    L = popdyn.population_loss(S, p, T)
    X = np.random.default_rng(11).standard_normal((400_000, 6))
    r2 = (S(p, X) - T(X)) ** 2
    # population_loss is the half MSE of popdyn's convention (tests of popdyn.objective)
    z = (0.5 * r2.mean() - L) / (0.5 * r2.std() / math.sqrt(len(X)))
    assert abs(z) < 5, (label, z)


def test_config_accepts_new_names():
    t = teacher_from_table({"kind": "additive", "link": "g_mu(1/2*g:1/3, 1/2*g:1)", "rank": 2,
                            "normalize": "second_moment"}, 4)
    assert t.second_moment == pytest.approx(1.0, rel=1e-15)
    with pytest.raises(ValueError, match=r"valid: \['id', 'gelu', 'tanh', 'relu', 'silu', 'h2', "
                                         r"'rotation'\]"):
        teacher_from_table({"kind": "gated", "gate": "sigmoid"}, 4)
    with pytest.raises(ValueError, match=r"g:<v>.*g_mu\(<w>\*g:<v>, \.\.\.\)"):
        teacher_from_table({"kind": "additive", "link": "g_half"}, 4)
