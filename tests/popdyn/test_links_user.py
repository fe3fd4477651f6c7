"""User links (popdyn.links_user.from_hermite, from_callable) and signed mixtures.

References: eq. (7) of Kumar (arXiv 2609.39408) implemented by hand below in numpy (``_g_half``)
and compared with the library's closed-form ``g:1/2``; exact polynomial moments written here
(E[g] = c_0, E[g²] = Σc_n², E[g'²] = Σ n c_n²); the probabilists' Hermite recurrence in mpmath
for pointwise values; mpmath quadrature at 30 digits for a signed mixture's energy.
"""
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popdyn
from popdyn.links import N_TAB, g_mixture, get_link, mixture
from popdyn.links_user import from_callable, from_hermite

mp = mpmath.MPContext()
mp.dps = 30


def _He(n, z):
    a, b = mp.one, z
    if n == 0:
        return a
    for k in range(1, n):
        a, b = b, z * b - k * a
    return b


def _g_half(z):
    """The paper's g_{1/2} by hand, eq. (7) at v = 1/2: 2^{7/2}(z³ − 3z/2)exp(−z²/2)."""
    z = np.asarray(z, dtype=float)
    v = 0.5
    return v ** -3.5 * (z ** 3 - 3 * v * z) * np.exp(-(1 / v - 1) * z * z / 2)


# ---------------------------------------------------------------------------------- hermite
def test_from_hermite_is_exact_and_registered():
    c = [0.25, -1.0, 0.0, 1.0, 0.0, 0.1]
    g = from_hermite(c, name="poly_a")
    assert g.name == "user:poly_a" and g.is_polynomial and g.tail_beyond == "zero"
    assert get_link("user:poly_a") is g and from_hermite(c, name="poly_a") is g
    assert np.array_equal(g.coefficients_full(5), c) and g.N_tab == 5
    ex = lambda f: float(f)  # noqa: E731
    sq = sum(Fraction(x) ** 2 for x in c)
    assert mp.mpf(g.second_moment_str) == pytest.approx(mp.mpf(sq.numerator) / sq.denominator,
                                                        rel=1e-29)
    assert g.mean == 0.25
    dsq = sum(n * Fraction(x) ** 2 for n, x in enumerate(c))
    assert g.d_second_moment == ex(dsq)
    for z in (-2.5, 0.0, 0.7, 3.0):
        ref = mp.fsum(mp.mpf(x) * _He(n, mp.mpf(z)) / mp.sqrt(mp.factorial(n))
                      for n, x in enumerate(c))
        assert g(z) == pytest.approx(float(ref), rel=1e-14, abs=1e-15)
        dref = mp.fsum(mp.mpf(x) * n * _He(n - 1, mp.mpf(z)) / mp.sqrt(mp.factorial(n))
                       for n, x in enumerate(c) if n)
        assert g.derivative(z) == pytest.approx(float(dref), rel=1e-14, abs=1e-15)
    with pytest.raises(ValueError, match="already registered"):
        from_hermite([0.0, 1.0], name="poly_a")
    # usable by name in mixtures and teachers
    m = mixture([(2.0, "user:poly_a"), (-1.0, "h3")])
    np.testing.assert_allclose(m.coefficients_full(5), 2 * np.array(c) - np.eye(6)[3])
    T = popdyn.Teacher.additive("user:poly_a", np.eye(4)[:2])
    assert T.describe()["link"] == "user:poly_a"


def test_from_hermite_bad_input():
    with pytest.raises(ValueError, match="`name`"):
        from_hermite([1.0], name="has space")
    with pytest.raises(ValueError, match="`coeffs`\\[1\\] must be finite"):
        from_hermite([1.0, float("nan")], name="bad1")
    with pytest.raises(TypeError, match="`coeffs`\\[0\\]"):
        from_hermite(["1"], name="bad2")
    with pytest.raises(ValueError, match="at least one"):
        from_hermite([], name="bad3")
    with pytest.raises(ValueError, match="no user link 'user:nope'"):
        get_link("user:nope")


# --------------------------------------------------------------------------------- callable
def test_from_callable_reproduces_g_half_and_its_loss():
    u = from_callable(_g_half, name="g_half_by_hand", tol=1e-13)
    ref = get_link("g:1/2")
    M = u.N_tab
    np.testing.assert_allclose(u.coefficients_full(M), ref.coefficients_full(M), rtol=0,
                               atol=1e-12)
    assert u.info["coeff_error"] <= 1e-13 and u.info["degree"] == M
    # what was dropped is what the closed form says is beyond M (to the stated accuracy)
    assert ref.t2[M] <= 1e-24
    assert abs(u.info["parseval_residual"]) <= u.info["parseval_uncertainty"]
    assert u.info["energy"] == pytest.approx(ref.second_moment, rel=1e-13)
    U = np.eye(7)[:2]
    Tu = popdyn.Teacher.additive(u, U).normalized("second_moment")
    Tr = popdyn.Teacher.additive("g:1/2", U).normalized("second_moment")
    S = popdyn.Student(7, 6, activation="relu")
    for seed in (0, 1):
        p = S.init(seed, 0.8, Tr)
        assert abs(popdyn.population_loss(S, p, Tu) - popdyn.population_loss(S, p, Tr)) < 1e-12


def test_from_callable_polynomial_is_exact_to_rounding():
    u = from_callable(lambda z: z ** 3 - 2 * z + 1, name="cubic_fn", tol=1e-13)
    assert u.N_tab == 3
    np.testing.assert_allclose(u.coeffs, [1.0, 1.0, 0.0, math.sqrt(6)], atol=1e-14)


def test_from_callable_refuses_clearly():
    # slow decay: E[e^{2Z} h_n] = e^2 2^n/sqrt(n!) is still ~5e-7 at n = 30
    with pytest.raises(ValueError, match="still above tol"):
        from_callable(lambda z: np.exp(2 * z), name="exp2", tol=1e-10, n_max=30, q_max=512)
    # a kink: the quadrature orders do not agree (coefficients ~ n^{-5/4} and a kink at 0)
    with pytest.raises(ValueError, match="did not agree"):
        from_callable(lambda z: np.abs(z), name="kink", tol=1e-10, n_max=64, q_max=256)
    # energy beyond n_max: the independent Parseval check fails
    h40 = lambda z: np.polynomial.hermite_e.hermeval(z, np.eye(41)[40]) / math.sqrt(  # noqa
        math.factorial(40))
    with pytest.raises(ValueError, match="Parseval check failed"):
        from_callable(h40, name="deg40", tol=1e-8, n_max=20, q_max=256)
    # order doubling cannot converge: a discontinuity
    with pytest.raises(ValueError, match="did not agree"):
        from_callable(lambda z: np.sign(z), name="step", tol=1e-13, n_max=16, q_max=128)
    with pytest.raises(ValueError, match="`tol`"):
        from_callable(_g_half, name="x", tol=0.0)
    with pytest.raises(ValueError, match="`n_max`"):
        from_callable(_g_half, name="x", n_max=2000, q_max=1024)
    with pytest.raises(TypeError, match="`fn`"):
        from_callable(3.0, name="x")


# --------------------------------------------------------------------------- signed mixtures
def test_signed_minkowski_tails_use_absolute_weights():
    m = mixture([(1.0, "tanh"), (-0.5, "sin")])
    ta, sn = get_link("tanh"), get_link("sin")
    assert m.tail_beyond == "minkowski"
    np.testing.assert_allclose(m.coeffs, ta.coeffs - 0.5 * sn.coeffs, rtol=1e-14, atol=1e-300)
    bound = (math.sqrt(ta.t2[N_TAB]) + 0.5 * math.sqrt(sn.t2[N_TAB])) ** 2
    assert m.t2[N_TAB] == pytest.approx(bound, rel=1e-12)
    assert m.l1[N_TAB] == pytest.approx(ta.l1[N_TAB] + 0.5 * sn.l1[N_TAB], rel=1e-12)
    e2 = mp.quad(lambda z: (mp.tanh(z) - mp.sin(z) / 2) ** 2 * mp.npdf(z), [-mp.inf, 0, mp.inf])
    assert abs(mp.mpf(m.second_moment_str) - e2) < 1e-27 * e2
    # Parseval with the stored tails: exact sums + bounds >= the energy
    for N in (0, 20, 200):
        assert math.fsum(m.coeffs[:N + 1] ** 2) + m.t2[N] >= float(e2) * (1 - 1e-14)


def test_signed_gaussian_polynomial_mixture_is_exact():
    m = mixture([(1.0, "h3"), (-0.3, "damped_cubic:0.5")])
    assert m.tail_beyond == "parseval+sobolev"
    e2 = mp.quad(lambda z: (_He(3, z) / mp.sqrt(6) + mp.mpf(-0.3) * z ** 3
                            * mp.exp(-z * z / 4)) ** 2 * mp.npdf(z), [-mp.inf, 0, mp.inf])
    assert abs(mp.mpf(m.second_moment_str) - e2) < 1e-27 * e2


# ----------------------------------------------------------------------------- properties
_V = st.sampled_from([Fraction(1, 3), Fraction(2, 5), Fraction(1, 2), Fraction(3, 5),
                      Fraction(2, 3), Fraction(4, 5), Fraction(1)])


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 9), _V), min_size=1, max_size=3))
def test_g_mixture_is_linear_and_parseval_closes(atoms):
    tot = sum(w for w, _ in atoms)
    meas = [(Fraction(w, tot), v) for w, v in atoms]
    g = g_mixture(meas)
    ref = sum(float(w) * get_link(("g", v)).coefficients_full(40) for w, v in meas)
    np.testing.assert_allclose(g.coefficients_full(40), ref, rtol=1e-13, atol=1e-14)
    assert g.coeffs[:3].tolist() == [0.0, 0.0, 0.0] and g.mean == 0.0
    if not g.is_polynomial:
        for N in (5, 60):
            assert math.fsum(g.coeffs[:N + 1] ** 2) + g.t2[N] == pytest.approx(
                g.second_moment, rel=1e-14)
    assert 6 * (1 - 1e-15) <= g.second_moment < 81
