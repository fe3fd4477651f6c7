"""Tests of popdyn.links against independent mpmath references written here.

References: every link is re-defined below in mpmath (``DEFS``) from its docs/design.md §2 meaning,
and means, second moments, derivative energies and the first Hermite coefficients are recomputed at
30 digits by composite Gauss–Legendre quadrature (48 nodes per unit panel on [−16, 16], kinks on
panel ends; itself checked against ``mpmath.quad`` in ``test_reference_rule``) — a method
independent of the library's (closed forms, Hermite-function trapezoid tables, tanh-sinh for
mixtures). Damped cubics, the Gaussian bump and sin are also checked against closed forms derived
here independently (generating function of He_n, see ``_damped_closed``).
"""
import math

import mpmath
import numpy as np
import pytest

from popdyn.links import LINK_NAMES, N_TAB, Link, get_link, mixture

mp = mpmath.MPContext()
mp.dps = 30
INF = mp.inf


def _relu(z):
    return z if z > 0 else mp.zero


def _step(z):
    return mp.one if z > 0 else mp.zero


def _He(n, z):
    """Probabilists' Hermite polynomial (plain recurrence)."""
    a, b = mp.one, z
    if n == 0:
        return a
    for k in range(1, n):
        a, b = b, z * b - k * a
    return b


def _h(n, z):
    return _He(n, z) / mp.sqrt(mp.factorial(n))


def _sigmoid(z):
    return 1 / (1 + mp.exp(-z))


SILU_MEAN = None  # filled lazily


def _silu_mean():
    global SILU_MEAN
    if SILU_MEAN is None:
        SILU_MEAN = mp.quad(lambda z: z * _sigmoid(z) * mp.npdf(z), [-INF, 0, INF])
    return SILU_MEAN


def _damped(a):
    a = mp.mpf(a)
    return (lambda z: z ** 3 * mp.exp(-a * z * z / 2),
            lambda z: (3 * z * z - a * z ** 4) * mp.exp(-a * z * z / 2))


# name -> (g, g', p, q): independent definitions of docs/design.md §2
DEFS = {
    **{f"h{k}": ((lambda z, k=k: _h(k, z)),
                 (lambda z, k=k: _He(k - 1, z) * k / mp.sqrt(mp.factorial(k))),
                 0.0, 1.0 if k == 1 else 0.0) for k in range(1, 7)},
    "h3+0.3h2": (lambda z: (z ** 3 - 3 * z) / mp.sqrt(6)
                 + mp.mpf(3) / 10 * (z * z - 1) / mp.sqrt(2),
                 lambda z: (3 * z * z - 3) / mp.sqrt(6) + mp.mpf(3) / 10 * 2 * z / mp.sqrt(2),
                 0.0, 0.0),
    "relu": (_relu, _step, 1.0, 0.0),
    "abs": (abs, lambda z: mp.sign(z), 2.0, -1.0),
    "tanh": (mp.tanh, lambda z: mp.sech(z) ** 2, 0.0, 0.0),
    "sin": (mp.sin, mp.cos, 0.0, 0.0),
    "silu": (lambda z: z * _sigmoid(z),
             lambda z: _sigmoid(z) * (1 + z * (1 - _sigmoid(z))), 0.0, 0.0),
    "silu_centered": (lambda z: z * _sigmoid(z) - _silu_mean(),
                      lambda z: _sigmoid(z) * (1 + z * (1 - _sigmoid(z))), 0.0, 0.0),
    "gaussian_bump": (lambda z: mp.exp(-z * z / 2), lambda z: -z * mp.exp(-z * z / 2), 0.0, 0.0),
    "damped_cubic:0.5": _damped(0.5) + (0.0, 0.0),
    "damped_cubic:50.0": _damped(50.0) + (0.0, 0.0),
}
ALL = list(LINK_NAMES) + ["damped_cubic:0.5", "damped_cubic:50.0"]
def _rule():
    gl = mpmath.calculus.quadrature.GaussLegendre(mp)
    with mp.workdps(40):
        base = gl.calc_nodes(5, mp.prec)          # 48 nodes on [−1, 1]
        Z, W = [], []
        for k in range(-16, 16):
            for x, w in base:
                z = k + (1 + x) / 2
                Z.append(+z)
                W.append(w / 2 * mp.npdf(z))
    return Z, W


_Z, _W = _rule()


def E(f):
    """E[f(Z)], Z ~ N(0,1), at 30 digits (composite Gauss–Legendre, see module docstring)."""
    return mp.fsum(w * f(z) for z, w in zip(_Z, _W))


def nodes(f):
    """f at the reference nodes."""
    return [f(z) for z in _Z]


def Ev(*vals):
    """E[Π vals] from values at the reference nodes."""
    if len(vals) == 1:
        return mp.fsum(w * v for w, v in zip(_W, vals[0]))
    return mp.fsum(w * u * v for w, u, v in zip(_W, *vals))


_HN = [nodes(lambda z, n=n: _h(n, z)) for n in range(6)]


def test_reference_rule():
    """The Gauss–Legendre reference agrees with mpmath.quad (tanh-sinh) to 30 digits."""
    for f in (lambda z: mp.tanh(z) * _h(3, z), lambda z: _relu(z) ** 2 * z ** 4,
              lambda z: _damped(50.0)[0](z) * _h(5, z), lambda z: _h(6, z) ** 2):
        ref = mp.quad(lambda z: f(z) * mp.npdf(z), [-INF, -1, 0, 1, INF])
        assert abs(E(f) - ref) < mp.mpf(10) ** -29 * max(1, abs(ref))


def _hermite_part(name):
    g, dg, p, q = DEFS[name]
    return (lambda z: g(z) - p * _relu(z) - q * z), (lambda z: dg(z) - p * _step(z) - q)


def _damped_closed(a, nmax):
    """Ĥ_n of z³exp(−a z²/2), n = 0..nmax, from E[Z³e^{−aZ²/2}e^{tZ−t²/2}]
    = s(3β²t + β³t³)exp(−γt²/2), s = (1+a)^{−1/2}, β = 1/(1+a), γ = a/(1+a)."""
    a = mp.mpf(a)
    s, b, gam = 1 / mp.sqrt(1 + a), 1 / (1 + a), a / (1 + a)
    out = [mp.zero] * (nmax + 1)
    for n in range(1, nmax + 1, 2):
        m = (n - 1) // 2
        t = 3 * b ** 2 * (-gam / 2) ** m / mp.factorial(m)
        if m >= 1:
            t += b ** 3 * (-gam / 2) ** (m - 1) / mp.factorial(m - 1)
        out[n] = s * mp.sqrt(mp.factorial(n)) * t
    return out


# ------------------------------------------------------------------------------------ fields
@pytest.mark.parametrize("name", ALL)
def test_fields_shapes_and_invariants(name):
    g = get_link(name)
    assert isinstance(g, Link) and g.name == name
    nt = g.N_tab
    for arr in (g.coeffs, g.t2, g.l1, g.dcoeffs, g.dt2, g.dl1):
        assert arr.dtype == np.float64 and arr.shape == (nt + 1,)
        assert not arr.flags.writeable
    assert nt == (N_TAB if not g.is_polynomial else nt)
    # dcoeffs[n] = sqrt(n+1) coeffs[n+1]
    n = np.arange(nt)
    np.testing.assert_allclose(g.dcoeffs[:-1], np.sqrt(n + 1) * g.coeffs[1:], rtol=1e-15,
                               atol=1e-300)
    for t2, l1 in ((g.t2, g.l1), (g.dt2, g.dl1)):
        assert np.all(t2 >= 0) and np.all(np.diff(t2) <= 0) and np.all(np.diff(l1) <= 0)
        big = t2 > 1e-290          # (tiny tails are stored as upper bounds, e.g. 5e-324)
        assert np.all(l1[big] * (1 + 1e-14) >= np.sqrt(t2[big]))        # ℓ¹ ≥ ℓ²
    if g.is_polynomial:
        assert g.tail_beyond == "zero"
        assert np.all(g.t2[-1:] == 0) and np.all(g.dl1[-1:] == 0)
    assert math.isclose(g.variance, g.second_moment - g.mean ** 2, rel_tol=1e-14, abs_tol=1e-300)
    for s, v in ((g.mean_str, g.mean), (g.second_moment_str, g.second_moment),
                 (g.variance_str, g.variance), (g.d_second_moment_str, g.d_second_moment)):
        assert float(mpmath.mpf(s)) == v


def test_h_k_coefficients_are_exact_unit_vectors():
    for k in range(1, 7):
        g = get_link(f"h{k}")
        e = np.zeros(9)
        e[k] = 1.0
        assert np.array_equal(g.coefficients_full(8), e)
        if k >= 2:
            assert g.p == g.q == 0.0 and g.is_polynomial and g.N_tab == k
            assert np.array_equal(g.coeffs, e[:k + 1])
    assert get_link("h1").q == 1.0 and np.array_equal(get_link("h1").coeffs, [0.0])
    assert np.array_equal(get_link("h3+0.3h2").coeffs, [0.0, 0.0, 0.3, 1.0])
    assert (get_link("relu").p, get_link("relu").q) == (1.0, 0.0)
    assert (get_link("abs").p, get_link("abs").q) == (2.0, -1.0)


# ------------------------------------------------------------------- moments and coefficients
@pytest.mark.parametrize("name", ALL)
def test_moments_vs_quadrature(name):
    """mean, E[g²], E[g'²] (30-digit strings and float64) vs mpmath.quad at 30 digits."""
    g = get_link(name)
    f, df, _, _ = DEFS[name]
    mean = E(f)
    second = E(lambda z: f(z) ** 2)
    dsecond = E(lambda z: df(z) ** 2)
    for s, ref in ((g.mean_str, mean), (g.second_moment_str, second),
                   (g.d_second_moment_str, dsecond), (g.variance_str, second - mean ** 2)):
        assert abs(mp.mpf(s) - ref) <= mp.mpf(10) ** -27 * max(1, abs(ref)), (s, ref)
    assert g.mean == pytest.approx(float(mean), rel=1e-15, abs=1e-16)
    assert g.second_moment == pytest.approx(float(second), rel=1e-15)
    assert g.d_second_moment == pytest.approx(float(dsecond), rel=1e-15)


@pytest.mark.parametrize("name", ALL)
def test_first_coefficients_vs_quadrature(name):
    """coefficients_full (float64) and the internal mpmath coefficients vs quad, n ≤ 5."""
    g = get_link(name)
    fv = nodes(DEFS[name][0])
    Hv = nodes(_hermite_part(name)[0])
    full = g.coefficients_full(5)
    for n in range(6):
        ref = Ev(fv, _HN[n])
        assert abs(full[n] - float(ref)) <= 2e-16 * max(1.0, abs(float(ref))), (n, full[n], ref)
        if n <= g.N_tab + 1:
            refH = Ev(Hv, _HN[n])
            cm = g._hdata.coeffs[n] if n < len(g._hdata.coeffs) else 0
            assert abs(mp.mpf(cm) - refH) <= mp.mpf(10) ** -27 * max(1, abs(refH)), (n, cm, refH)


@pytest.mark.parametrize("name", ALL)
def test_parseval_tails(name):
    """Σ_{n≤N} Ĥ_n² + t2[N] = E[H²] and the same for H' (E computed independently)."""
    g = get_link(name)
    H, dH = _hermite_part(name)
    e0 = float(E(lambda z: H(z) ** 2))
    e1 = float(E(lambda z: dH(z) ** 2))
    for N in sorted({0, 1, 3, 10, 50, 200, g.N_tab} & set(range(g.N_tab + 1))):
        s0 = math.fsum(g.coeffs[:N + 1] ** 2) + g.t2[N]
        s1 = math.fsum(g.dcoeffs[:N + 1] ** 2) + g.dt2[N]
        assert s0 == pytest.approx(e0, rel=1e-14, abs=1e-28), (N, s0, e0)
        assert s1 == pytest.approx(e1, rel=1e-14, abs=1e-28), (N, s1, e1)
    assert g.h_second_moment == pytest.approx(e0, rel=1e-14, abs=1e-28)
    assert g.h_d_second_moment == pytest.approx(e1, rel=1e-14, abs=1e-28)


@pytest.mark.parametrize("a", [0.5, 1 / 3, 2 / 3, 50.0, 1e-3])
def test_damped_cubic_against_closed_form_including_tails(a):
    """All coefficients and the tails (L² values, ℓ¹ upper bounds) vs an independent closed form
    summed far beyond N_tab."""
    g = get_link(("damped_cubic", a))
    assert g.name == f"damped_cubic:{a!r}" and g.tail_beyond == "parseval+sobolev"
    nmax = 6000 if a > 10 else 1200
    c = _damped_closed(a, nmax)
    cf = np.array([float(x) for x in c[:N_TAB + 1]])
    np.testing.assert_allclose(g.coeffs, cf, rtol=1e-15, atol=1e-30 * np.abs(cf).max())
    for N in (0, 5, 100, 511, 512):
        t2 = mp.fsum(x * x for x in c[N + 1:])
        l1 = mp.fsum(abs(x) for x in c[N + 1:])
        dt2 = mp.fsum(m * c[m] ** 2 for m in range(N + 2, nmax + 1))
        dl1 = mp.fsum(mp.sqrt(m) * abs(c[m]) for m in range(N + 2, nmax + 1))
        if t2 > 1e-290:
            assert g.t2[N] == pytest.approx(float(t2), rel=1e-13)
            assert g.dt2[N] == pytest.approx(float(dt2), rel=1e-13)
        for stored, true in ((g.t2[N], t2), (g.l1[N], l1), (g.dt2[N], dt2), (g.dl1[N], dl1)):
            assert stored >= float(true)                    # upper bounds
        if l1 > 1e-290:
            assert g.l1[N] <= 10 * float(l1) and g.dl1[N] <= 10 * float(dl1)


def test_sin_and_bump_closed_forms():
    s = get_link("sin")
    ref = [float(mp.exp(-0.5) * (0, 1, 0, -1)[n % 4] / mp.sqrt(mp.factorial(n)))
           for n in range(200)]
    np.testing.assert_allclose(s.coeffs[:200], ref, rtol=1e-15, atol=0)
    b = get_link("gaussian_bump")
    ref = [float((-mp.mpf(1) / 4) ** (n // 2) * mp.sqrt(mp.factorial(n)) / mp.factorial(n // 2)
                 / mp.sqrt(2)) if n % 2 == 0 else 0.0 for n in range(513)]
    np.testing.assert_allclose(b.coeffs, ref, rtol=1e-15, atol=0)


def test_tabulated_symmetries_and_centering():
    t, s, sc = get_link("tanh"), get_link("silu"), get_link("silu_centered")
    assert np.all(t.coeffs[0::2] == 0.0) and t.mean == 0.0
    assert s.coeffs[1] == 0.5 and np.all(s.coeffs[3::2] == 0.0)
    assert sc.coeffs[0] == 0.0 and np.array_equal(sc.coeffs[1:], s.coeffs[1:])
    assert np.array_equal(sc.t2, s.t2) and np.array_equal(sc.dl1, s.dl1)
    assert sc.mean_str == "0.0" and sc.variance == s.variance
    assert s.coeffs[0] == pytest.approx(s.mean, rel=1e-16)
    # tails at N_tab are tiny but represented (tanh decays like exp(−(π/2)√n))
    assert 1e-32 < t.t2[-1] < 1e-29 and 1e-16 < t.l1[-1] < 1e-13


def test_coefficients_full_relu_and_limits():
    r = get_link("relu")
    full = r.coefficients_full(40)
    for n in (0, 1, 2, 3, 4, 10, 40):
        ref = E(lambda z: _relu(z) * _h(n, z)) if n <= 10 else (
            mp.npdf(0) * _He(n - 2, mp.zero) / mp.sqrt(mp.factorial(n)))
        assert full[n] == pytest.approx(float(ref), rel=1e-14, abs=1e-17)
    a = get_link("abs").coefficients_full(12)
    np.testing.assert_allclose(a, 2 * r.coefficients_full(12) - np.eye(13)[1], atol=1e-16)
    with pytest.raises(ValueError, match="N_tab"):
        get_link("tanh").coefficients_full(N_TAB + 1)
    assert get_link("h3").coefficients_full(1000).shape == (1001,)
    with pytest.raises(ValueError, match="`N`"):
        r.coefficients_full(-1)
    with pytest.raises(TypeError, match="`N`"):
        r.coefficients_full(2.0)


# ---------------------------------------------------------------------------- evaluation
@pytest.mark.parametrize("name", ALL)
def test_pointwise_evaluation_matches_definition(name):
    g = get_link(name)
    f, df, _, _ = DEFS[name]
    z = np.array([-7.5, -3.0, -1.2, -0.3, 0.25, 0.9, 2.0, 4.4, 8.0])
    ref = np.array([float(f(mp.mpf(x))) for x in z])
    dref = np.array([float(df(mp.mpf(x))) for x in z])
    np.testing.assert_allclose(g(z), ref, rtol=2e-14, atol=1e-15 * max(1, np.abs(ref).max()))
    np.testing.assert_allclose(g.derivative(z), dref, rtol=2e-13,
                               atol=1e-14 * max(1, np.abs(dref).max()))
    assert isinstance(g(0.3), float) and isinstance(g.derivative(0.3), float)
    assert g(np.zeros((2, 3))).shape == (2, 3)
    huge = g(np.array([-1e200, 1e200]))          # no warning, no nan
    assert not np.any(np.isnan(huge)) and not np.any(np.isnan(g.derivative([-1e200, 1e200])))
    if not g.is_polynomial:
        assert np.all(np.isfinite(huge)) or g.p != 0


def test_relu_abs_derivative_at_zero_and_huge_inputs():
    assert get_link("relu").derivative(0.0) == 0.0 and get_link("abs").derivative(0.0) == 0.0
    dc = get_link("damped_cubic:0.5")
    assert np.array_equal(dc(np.array([-1e200, 1e200])), [0.0, 0.0])


# -------------------------------------------------------------------------------- mixtures
def test_mixture_linearity():
    pairs = [(0.5, "tanh"), (0.25, "relu"), (2.0, "damped_cubic:0.5"), (0.7, "h3")]
    m = mixture(pairs)
    links = [get_link(n) for _, n in pairs]
    assert m.tail_beyond == "minkowski" and not m.is_polynomial and m.N_tab == N_TAB
    assert m.p == 0.25 and m.q == 0.0
    ref = np.zeros(N_TAB + 1)
    for w, l in zip((w for w, _ in pairs), links):
        ref[:l.N_tab + 1] += w * l.coeffs
    np.testing.assert_allclose(m.coeffs, ref, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(m.coefficients_full(20),
                               sum(w * l.coefficients_full(20) for (w, _), l in zip(pairs, links)),
                               rtol=1e-14, atol=1e-16)
    z = np.linspace(-4, 4, 17)
    np.testing.assert_allclose(m(z), sum(w * l(z) for (w, _), l in zip(pairs, links)), rtol=1e-15)
    np.testing.assert_allclose(m.derivative(z),
                               sum(w * l.derivative(z) for (w, _), l in zip(pairs, links)),
                               rtol=1e-14, atol=1e-15)
    assert m.mean == pytest.approx(sum(w * l.mean for (w, _), l in zip(pairs, links)), rel=1e-15)
    fs = [DEFS[n][0] for _, n in pairs]
    dfs = [DEFS[n][1] for _, n in pairs]
    second = E(lambda x: mp.fsum(w * f(x) for (w, _), f in zip(pairs, fs)) ** 2)
    dsecond = E(lambda x: mp.fsum(w * f(x) for (w, _), f in zip(pairs, dfs)) ** 2)
    assert abs(mp.mpf(m.second_moment_str) - second) < 1e-27 * second
    assert abs(mp.mpf(m.d_second_moment_str) - dsecond) < 1e-27 * dsecond
    # Minkowski tails are upper bounds and the Parseval identity still holds to 1e-14
    eH = E(lambda x: (mp.fsum(w * f(x) for (w, _), f in zip(pairs, fs))
                      - mp.mpf(0.25) * _relu(x)) ** 2)
    for N in (0, 10, 100, N_TAB):
        assert math.fsum(m.coeffs[:N + 1] ** 2) + m.t2[N] == pytest.approx(float(eH), rel=1e-14)


def test_mixture_of_damped_cubics_is_exact_and_cached():
    ws = [(0.5, "damped_cubic:0.5"), (0.3, "damped_cubic:1/3"), (0.2, ("damped_cubic", 2 / 3))]
    m = mixture(ws)
    assert m.tail_beyond == "parseval+sobolev"
    assert m.name == ("mixture(0.5*damped_cubic:0.5, 0.3*damped_cubic:0.3333333333333333, "
                      "0.2*damped_cubic:0.6666666666666666)")
    assert get_link(m.name) is m and mixture(ws) is m
    cs = [_damped_closed(a, N_TAB + 1) for a in (0.5, 1 / 3, 2 / 3)]
    ref = [mp.fsum(w * c[n] for (w, _), c in zip(ws, cs)) for n in range(N_TAB + 1)]
    np.testing.assert_allclose(m.coeffs, [float(x) for x in ref], rtol=1e-15, atol=1e-300)
    def f(x):
        return mp.fsum(w * _damped(a)[0](x) for (w, _), a in zip(ws, (0.5, 1 / 3, 2 / 3)))

    second = E(lambda x: f(x) ** 2)
    assert abs(mp.mpf(m.second_moment_str) - second) < 1e-27 * second
    # nested mixtures flatten
    mm = mixture([(2.0, m), (1.0, "h2")])
    assert len(mm.components) == 4 and mm.components[0][0] == 1.0
    np.testing.assert_allclose(mm.coeffs, 2 * m.coeffs + np.eye(N_TAB + 1)[2], rtol=1e-15,
                               atol=1e-300)
    # a perturbed cubic h3 + 0.1·g_{1/2} stays on the exact Gaussian-polynomial path
    pc = mixture([(1.0, "h3"), (0.1, "damped_cubic:0.5")])
    assert pc.tail_beyond == "parseval+sobolev" and not pc.is_polynomial
    dc = get_link("damped_cubic:0.5")
    np.testing.assert_allclose(pc.coeffs, 0.1 * dc.coeffs + np.eye(N_TAB + 1)[3], rtol=1e-15,
                               atol=1e-300)
    np.testing.assert_allclose(pc.t2[4:], 0.01 * dc.t2[4:], rtol=1e-14, atol=1e-300)
    second = E(lambda x: (_h(3, x) + mp.mpf(0.1) * _damped(0.5)[0](x)) ** 2)  # float 0.1
    assert abs(mp.mpf(pc.second_moment_str) - second) < 1e-27 * second


def test_polynomial_and_pl_mixtures():
    m = mixture([(1.0, "h2"), (0.5, "h3"), (1.5, "relu"), (1.0, "abs"), (3.0, "h1")])
    assert m.is_polynomial and m.N_tab == 3 and m.tail_beyond == "zero"
    assert np.array_equal(m.coeffs, [0.0, 0.0, 1.0, 0.5])
    assert (m.p, m.q) == (3.5, 2.0)
    assert np.array_equal(m.t2, [1.25, 1.25, 0.25, 0.0]) and m.l1[-1] == m.dl1[-1] == 0.0
    assert np.array_equal(m.dcoeffs, [0.0, 2 ** 0.5, 0.5 * 3 ** 0.5, 0.0])
    assert m.mean == pytest.approx(3.5 / math.sqrt(2 * math.pi), rel=1e-15)
    f = lambda x: (_h(2, x) + _h(3, x) / 2 + mp.mpf(1.5) * _relu(x) + abs(x) + 3 * x)  # noqa
    assert abs(mp.mpf(m.second_moment_str) - E(lambda x: f(x) ** 2)) < 1e-26


# ------------------------------------------------------------------------------ API, errors
def test_get_link_caching_and_specs():
    assert get_link("tanh") is get_link(" tanh ")
    g = get_link("damped_cubic:1/3")
    assert g is get_link(("damped_cubic", 1 / 3)) is get_link("damped_cubic:0.3333333333333333")
    assert get_link(g) is g
    assert get_link("damped_cubic:2") is get_link(("damped_cubic", 2))
    assert get_link("relu") == get_link("relu") and hash(get_link("relu")) == hash(get_link("relu"))


def test_unknown_name_error_lists_names_and_suggests():
    with pytest.raises(ValueError, match="`spec`") as e:
        get_link("rleu")
    msg = str(e.value)
    assert "Did you mean 'relu'" in msg and "gaussian_bump" in msg and "damped_cubic" in msg
    with pytest.raises(ValueError, match="Did you mean 'silu_centered'"):
        get_link("silu_centred")
    with pytest.raises(ValueError, match="`spec`"):
        get_link("h7")
    with pytest.raises(TypeError, match="`spec`"):
        get_link(3)
    with pytest.raises(ValueError, match="`spec`"):
        get_link(("damped", 0.5))


@pytest.mark.parametrize("a", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_damping_rate(a):
    with pytest.raises(ValueError, match="> 0"):
        get_link(("damped_cubic", a))
    with pytest.raises(ValueError, match="> 0"):
        get_link(f"damped_cubic:{a}")


def test_bad_mixtures():
    with pytest.raises(ValueError, match="`spec`"):
        get_link("damped_cubic:abc")
    for w in (0.0, float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="`pairs`.*finite and nonzero"):
            mixture([(1.0, "tanh"), (w, "relu")])
    with pytest.raises(ValueError, match="`pairs`"):
        mixture([])
    with pytest.raises(TypeError, match="`pairs`"):
        mixture([(True, "relu")])
    with pytest.raises(TypeError, match="`pairs`"):
        mixture("relu")
    with pytest.raises(TypeError, match="`pairs`"):
        mixture([("relu",)])
    with pytest.raises(ValueError, match="Did you mean 'tanh'"):
        mixture([(1.0, "tahn")])


def test_link_is_immutable():
    g = get_link("tanh")
    with pytest.raises(Exception):
        g.p = 1.0
    with pytest.raises(ValueError):
        g.coeffs[0] = 1.0
