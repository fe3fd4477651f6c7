"""Hermite coefficients of single units and Mehler sums (popdyn._hermite, popdyn._kernels.*).

References are independent of popdyn:
* mpmath at 30 digits evaluated here (closed forms of docs/design.md §3 with mpmath's own normal
  pdf/cdf and an mpmath Hermite recurrence; ``mpmath.quad`` split at the kink; 1-D Gaussian
  integrals by a composite Gauss-Legendre rule built from mpmath's nodes; textbook Gaussian
  smoothing identities E[erf(mu + tau Z)] = erf(mu/sqrt(1 + 2 tau^2)) and
  E[relu(mu + tau Z)] = tau phi(mu/tau) + mu Phi(mu/tau)),
* ``data/refs/hermite_refs.json`` from ``data/_precompute/hermite_refs.py`` (smooth-unit
  coefficients and nested 2-D expectations of tanh/silu/gelu/erf pairs, 30 digits).
Errors are measured in units of the tolerance; every reported error estimate must be >= the
true error.
"""
import json
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mpmath.calculus.quadrature import GaussLegendre

from popdyn import _hermite as H
from popdyn._kernels import hermite as KH
from popdyn._kernels import mehler as KM

REFS = json.loads((Path(__file__).resolve().parents[2] / "data" / "refs" / "hermite_refs.json")
                  .read_text())
NAMES = {"silu": H.SILU, "gelu": H.GELU, "tanh": H.TANH, "erf": H.ERF}
RTOL = 1e-10


# ------------------------------------------------------------------------------------------
# mpmath helpers (independent of popdyn)
# ------------------------------------------------------------------------------------------
def _npdf(x):
    return mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)


def _ncdf(x):
    return mp.erfc(-x / mp.sqrt(2)) / 2


def mp_act(name, t, d=0):
    if name == "tanh":
        th, sh2 = mp.tanh(t), mp.sech(t) ** 2
        return (th, sh2, -2 * th * sh2)[d]
    if name == "erf":
        g = 2 / mp.sqrt(mp.pi) * mp.exp(-t * t)
        return (mp.erf(t), g, -2 * t * g)[d]
    if name == "gelu":
        P, p = _ncdf(t), _npdf(t)
        return (t * P, P + t * p, (2 - t * t) * p)[d]
    if name == "silu":
        s = 1 / (1 + mp.exp(-t))
        return (t * s, s * (1 + t * (1 - s)), s * (1 - s) * (2 + t * (1 - 2 * s)))[d]
    raise ValueError(name)


def mp_pl_coeffs(p, q, al, be, N):
    """docs/design.md §3 closed form, unnormalized He_k by its mpmath recurrence, / sqrt(k!)."""
    al, be, p, q = (mp.mpf(v) for v in (al, be, p, q))
    S, D, D2 = ([mp.mpf(0)] * (N + 1) for _ in range(3))
    if al == 0:
        pos = 1 if be > 0 else 0
        S[0], D[0] = p * be * pos + q * be, p * pos + q
        return S, D, D2
    b = be / al
    x = -b
    He = [mp.mpf(1), x]
    for n in range(1, N + 1):
        He.append(x * He[n] - n * He[n - 1])
    if abs(b) > 10 ** 4:  # phi(b) < exp(-5e7): exactly 0 in any float format
        ph, P = mp.mpf(0), mp.mpf(1 if b > 0 else 0)
    else:
        ph, P = _npdf(b), _ncdf(b)
    S[0] = p * (al * ph + be * P) + q * be
    S[1] = p * al * P + q * al
    for k in range(2, N + 1):
        S[k] = p * al * ph * He[k - 2] / mp.sqrt(mp.factorial(k))
    D[0] = p * P + q
    for n in range(1, N + 1):
        D[n] = p * ph * He[n - 1] / mp.sqrt(mp.factorial(n))
    for n in range(N + 1):
        D2[n] = p * ph * He[n] / mp.sqrt(mp.factorial(n))
    return S, D, D2


_GLN = {}


def _gl_segment(f, a, b, scale):
    """int_a^b f(z) phi(z) dz by composite GL (24 mpmath nodes per panel of width
    <= min(0.9 pi/(2 scale), 1): resolves a complex singularity at distance pi/(2 scale))."""
    if mp.mp.prec not in _GLN:
        _GLN[mp.mp.prec] = GaussLegendre(mp.mp).calc_nodes(4, mp.mp.prec + 20)
    h = min(0.9 * math.pi / (2 * max(scale, 0.25)), 1.0)
    P = max(1, int(math.ceil((b - a) / h)))
    a, b = mp.mpf(a), mp.mpf(b)
    tot = mp.mpf(0)
    for k in range(P):
        lo = a + (b - a) * k / P
        hi = a + (b - a) * (k + 1) / P
        half, mid = (hi - lo) / 2, (lo + hi) / 2
        tot += half * mp.fsum(w * f(mid + half * x) * _npdf(mid + half * x)
                              for x, w in _GLN[mp.mp.prec])
    return tot


def mp_gauss(f, scale, L=12, window=None):
    """int f(z) phi(z) dz over [-L, L]; ``window = (c, w, scale2)`` uses the finer scale2 on
    [c - w, c + w] (a smoothed kink)."""
    if window is None:
        return _gl_segment(f, -L, L, scale)
    c, w, s2 = window
    lo, hi = max(-L, c - w), min(L, c + w)
    if hi <= lo:
        return _gl_segment(f, -L, L, scale)
    return (_gl_segment(f, -L, lo, scale) + _gl_segment(f, lo, hi, s2)
            + _gl_segment(f, hi, L, scale))


def mp_relu_pair(ai, bi, aj, bj, rho):
    """docs/design.md §3 closed form of E[relu(ai Z1 + bi) relu(aj Z2 + bj)], Phi_2 by
    mpmath.quad."""
    ai, bi, aj, bj, rho = (mp.mpf(v) for v in (ai, bi, aj, bj, rho))
    h, k = bi / ai, bj / aj
    s = mp.sqrt(1 - rho * rho)
    phi2 = _ncdf(h) * _ncdf(k) + mp.quad(
        lambda r: mp.exp(-(h * h - 2 * r * h * k + k * k) / (2 * (1 - r * r))) / mp.sqrt(1 - r * r),
        [0, rho]) / (2 * mp.pi)
    val = ((h * k + rho) * phi2 + h * _npdf(k) * _ncdf((h - rho * k) / s)
           + k * _npdf(h) * _ncdf((k - rho * h) / s)
           + s / (2 * mp.pi) * mp.exp(-(h * h - 2 * rho * h * k + k * k) / (2 * s * s)))
    return ai * aj * val


def _rel(x):
    return np.maximum(np.abs(x), 1e-300)


# ------------------------------------------------------------------------------------------
# activations
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NAMES))
def test_activation_values_and_derivatives(name):
    code = NAMES[name]
    with mp.workdps(30):
        for t in (-745.0, -40.0, -7.3, -1.0, -1e-3, 0.0, 0.4, 2.5, 9.0, 40.0, 745.0):
            for d, f in enumerate((KH.act_value, KH.act_d1, KH.act_d2)):
                got = f(code, t)
                ref = mp_act(name, mp.mpf(t), d)
                # condition: rounding of t moves the value by |t sigma^(d+1)(t)| u
                cond = abs(t * mp.diff(lambda x: mp_act(name, x, d), mp.mpf(t)))
                assert math.isfinite(got)
                assert abs(got - float(ref)) <= 4e-16 * float(abs(ref) + cond) + 1e-300, \
                    (t, d, got, ref)


# ------------------------------------------------------------------------------------------
# piecewise-linear units
# ------------------------------------------------------------------------------------------
PL_PINS = [(1, 0, 1.0, 0.0), (1, 0, 0.0, 0.7), (1, 0, 0.0, -0.7), (1, 0, 0.0, 0.0),
           (1, 0, 1e-8, 1e-7), (1, 0, 1e-8, -1e-7), (1, 0, 1e-8, 0.0), (1, 0, 1e-8, 1.0),
           (1, 0, 1e-8, -1.0), (0.9, 0.1, 2.0, -3.0), (2, -1, 0.5, 5.0), (1, 0, 1.0, -10.0),
           (1, 0, 1.0, -30.0), (1, 0, 3.0, 37.0), (0.75, 0.25, 1e-300, -1.0), (1, 0, 1.0, 300.0)]


def _check_pl(p, q, al, be, N=60):
    u = H.unit_coefficients("pl", [al], [be], p=p, q=q, n=N)
    b = be / al if al > 0 else 0.0
    with mp.workdps(30):
        ref = mp_pl_coeffs(p, q, al, be, N)
        # natural absolute scales of the three sequences: the unit's size α+|β| for σ, 1 for σ′
        # (a step) and for ασ″ (a delta of mass ≤ φ(0))
        scales = (abs(p) * (al + abs(be)) + abs(q) * (al + abs(be)), max(abs(p), abs(q)), abs(p))
        for C, R, T, unit in zip((u.S, u.Dd, u.Dd2), ref, (u.tails_S, u.tails_Dd, u.tails_Dd2), scales):
            assert np.all(np.isfinite(C))
            R = np.array([float(r) for r in R])
            err = np.abs(C[0] - R)
            # relative accuracy, conditioned by the rounding of b = beta/alpha (b^2 u), with an
            # absolute floor of 1e-16 of the sequence's natural scale (coefficients 1e-28 below
            # it, e.g. beyond n = 1 at |b| = 11, carry no weight in any moment)
            tol = 3e-14 * (1.0 + min(b * b, 1e6)) * np.abs(R) + 1e-16 * unit + 1e-305
            assert np.all(err <= tol), (np.max(err / tol), p, q, al, be)
            assert np.all(err <= T.err[0] + 1e-305)


@pytest.mark.parametrize("p,q,al,be", PL_PINS)
def test_pl_coefficients_pinned(p, q, al, be):
    _check_pl(p, q, al, be)


@settings(max_examples=8)
@given(st.sampled_from([(1.0, 0.0), (0.9, 0.1), (2.0, -1.0)]),
       st.floats(1e-8, 5.0), st.floats(-12.0, 12.0))
@example((1.0, 0.0), 0.03152483678514423, 11.279296875)   # found by hypothesis 6.170 in CI
def test_pl_coefficients_property(pq, al, b):
    _check_pl(pq[0], pq[1], al, b * al)


def test_pl_against_quadrature():
    """Low orders against mpmath.quad split at the kink (independent of the closed form)."""
    with mp.workdps(30):
        for al, be in ((1.7, -0.4), (0.3, 1.1)):
            u = H.unit_coefficients("relu", [al], [be], n=6)
            kink = mp.mpf(-be) / mp.mpf(al)
            for n in range(5):
                def f(z, n=n):
                    he = [mp.mpf(1), z]
                    for k in range(1, n):
                        he.append(z * he[k] - k * he[k - 1])
                    return max(al * z + be, 0) * he[n] / mp.sqrt(mp.factorial(n)) * _npdf(z)
                ref = mp.quad(f, [-13, kink, 13])  # phi(13) < 1e-37
                assert abs(u.S[0, n] - float(ref)) <= 1e-15


def test_pl_tails_are_honest():
    """Cramér sup bounds the later coefficients; Parseval t2 >= the computed tail mass."""
    al = np.array([1.0, 0.5, 2.0, 1e-3, 0.0])
    be = np.array([0.0, 1.2, -3.0, 2e-3, 1.0])
    N = 40
    u = H.unit_coefficients("pl", al, be, p=0.8, q=0.2, n=N)
    big = H.unit_coefficients("pl", al, be, p=0.8, q=0.2, n=20 * N)
    for C, T in ((big.S, u.tails_S), (big.Dd, u.tails_Dd), (big.Dd2, u.tails_Dd2)):
        later = C[:, N + 1:]
        assert np.all(np.abs(later).max(axis=1) <= T.sup * (1 + 1e-12) + 1e-300)
        assert np.all((later ** 2).sum(axis=1) <= T.t2 * (1 + 1e-12) + 1e-300)
    assert u.tails_S.status["sup"] == "rigorous" and u.tails_S.status["t2"] == "estimate"
    assert not u.rigorous
    # alpha = 0: constant unit, exactly one coefficient, zero tails
    assert u.S[4, 0] == 0.8 * 1.0 + 0.2 * 1.0 and np.all(u.S[4, 1:] == 0) and u.tails_S.t2[4] == 0
    assert np.all(u.Dd2[4] == 0)
    assert np.all(np.isinf(u.tails_Dd2.t2[:4]))


# ------------------------------------------------------------------------------------------
# smooth units: coefficients
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", REFS["coeffs"], ids=lambda c: f"{c['act']}-{c['al']}-{c['be']}")
def test_smooth_coefficients_vs_mpmath(case):
    assert case["resolution"] < 1e-25
    u = H.unit_coefficients(case["act"], [case["al"]], [case["be"]])
    assert u.converged[0]
    n = min(case["N"], u.N)
    for key, T, e in (("S", u.tails_S, 0), ("Dd", u.tails_Dd, 1), ("Dd2", u.tails_Dd2, 2)):
        ref = np.array([float(v) for v in case[key]])
        err = np.abs(getattr(u, key)[0, :n + 1] - ref[:n + 1])
        scale = math.sqrt(u.energy[0, e])
        assert np.all(err <= 2e-15 * scale), (key, err.max() / scale)
        assert np.all(err <= T.err[0])
        # the reference coefficients beyond N lie within the reported tail estimates
        later = ref[u.N + 1:]
        assert np.sum(later ** 2) <= T.t2[0] and np.sum(np.abs(later)) <= T.l1[0]
        assert np.all(np.abs(later) <= T.sup[0])
        # energy by the rule equals Parseval of the reference up to the unresolved tail
        assert np.sum(ref ** 2) <= u.energy[0, e] * (1 + 1e-13)
    # the same unit forced to a higher order: identical leading coefficients, smaller tails
    v = H.unit_coefficients(case["act"], [case["al"]], [case["be"]], n=u.N + 40)
    assert v.N == u.N + 40
    assert np.allclose(v.S[0, :n + 1], u.S[0, :n + 1], rtol=0, atol=4e-15 * scale)
    assert v.tails_S.t2[0] <= u.tails_S.t2[0]


def test_stein_relations_and_constant_units():
    al = np.array([0.0, 0.3, 1.0, 2.5, 4.9])
    be = np.array([0.7, -1.0, 0.2, 3.0, -4.0])
    for name, code in NAMES.items():
        u = H.unit_coefficients("smooth", al, be, code=code)
        n = np.arange(u.N)
        for i in range(1, al.size):
            sc = math.sqrt(u.energy[i, 1])
            # Dd[n] = sqrt(n+1) S[n+1] / alpha,  Dd2[n] = sqrt(n+1) Dd[n+1]
            assert np.allclose(u.Dd[i, :-1], np.sqrt(n + 1) * u.S[i, 1:] / al[i],
                               rtol=0, atol=1e-13 * sc * (1 + 1 / al[i]))
            assert np.allclose(u.Dd2[i, :-1], np.sqrt(n + 1) * u.Dd[i, 1:],
                               rtol=0, atol=1e-12 * math.sqrt(u.energy[i, 2]) + 1e-13 * sc)
        assert u.S[0, 0] == KH.act_value(code, 0.7) and np.all(u.S[0, 1:] == 0)
        assert u.Dd[0, 0] == KH.act_d1(code, 0.7) and np.all(u.Dd2[0] == 0)
        assert u.converged.all()


def test_adaptive_order_reports_non_convergence():
    u = H.unit_coefficients("tanh", [5.0, 0.5], [0.0, 0.0], nmin=8, nmax=64)
    assert u.N == 64
    assert not u.converged[0] and u.converged[1]
    assert u.tails_S.t2[0] > RTOL * u.energy[0, 0]          # the shortfall is visible
    assert u.tails_S.status["t2"] == "estimate" and not u.rigorous


def test_input_validation():
    with pytest.raises(ValueError, match="`al`"):
        H.unit_coefficients("tanh", [-1.0], [0.0])
    with pytest.raises(ValueError, match="`n`"):
        H.unit_coefficients("relu", [1.0], [0.0])
    with pytest.raises(ValueError, match="`code`"):
        H.unit_coefficients("smooth", [1.0], [0.0], code=7)
    with pytest.raises(ValueError, match="`kind`"):
        H.unit_coefficients("swish", [1.0], [0.0])
    with pytest.raises(TypeError, match="`n`"):
        H.unit_coefficients("relu", [1.0], [0.0], n=3.0)
    with pytest.raises(ValueError, match="`R`"):
        H.mehler_moment(np.ones((1, 3)), np.ones((2, 3)), None, None, np.full((1, 2), 1.5))


# ------------------------------------------------------------------------------------------
# Mehler kernels
# ------------------------------------------------------------------------------------------
def test_mehler_kernels_small():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3, 7))
    Y = rng.standard_normal((4, 7))
    R = rng.uniform(-1, 1, (3, 4))
    out = np.empty((3, 4))
    KM.mehler(X, Y, R, out)
    ref = np.einsum("in,jn,ijn->ij", X, Y, R[:, :, None] ** np.arange(7))
    assert np.allclose(out, ref, rtol=1e-14, atol=1e-14)
    Rs = rng.uniform(-1, 1, (3, 3))
    Rs = (Rs + Rs.T) / 2
    o1, o2 = np.empty((3, 3)), np.empty((3, 3))
    KM.mehler_sym(X, Rs, o1)
    KM.mehler(X, X, Rs, o2)
    assert np.array_equal(o1, o2) and np.array_equal(o1, o1.T)
    # error: all options inf -> inf; a zero tail or rho = 0 annihilates an infinite one
    inf, z = np.full(3, np.inf), np.zeros(3)
    e = np.empty((3, 4))
    KM.mehler_error(X, Y, R, inf, inf, inf, z, np.full(4, np.inf), np.full(4, np.inf),
                    np.full(4, np.inf), np.zeros(4), e)
    assert np.all(np.isinf(e))
    KM.mehler_error(X, Y, np.zeros((3, 4)), inf, inf, inf, z, np.full(4, np.inf),
                    np.full(4, np.inf), np.full(4, np.inf), np.zeros(4), e)
    assert np.all(np.isfinite(e)) and np.all(e < 1e-13)
    KM.mehler_error(X, Y, R, inf, inf, inf, z, np.zeros(4), np.zeros(4), np.zeros(4),
                    np.zeros(4), e)
    assert np.all(np.isfinite(e)) and np.all(e < 1e-13)


def _common_order(ci, cj, rtol=RTOL):
    """Two single units brought to a common order (the pair's accuracy needs both tails)."""
    ui = H.unit_coefficients(ci[0], [ci[1]], [ci[2]], rtol=rtol)
    uj = H.unit_coefficients(cj[0], [cj[1]], [cj[2]], rtol=rtol, n=ui.N)
    if uj.N > ui.N:
        ui = H.unit_coefficients(ci[0], [ci[1]], [ci[2]], rtol=rtol, n=uj.N)
    assert ui.N == uj.N and ui.converged[0] and uj.converged[0]
    return ui, uj


def _seq_and_tails(u, key):
    return getattr(u, key), getattr(u, "tails_" + key)


@pytest.mark.parametrize("pair", REFS["pairs"],
                         ids=lambda p: f"{p['moment']}-{p['i'][0]}-{p['j'][0]}")
def test_smooth_pair_moments_vs_2d_mpmath(pair):
    """E[sigma_i sigma_j] (C), E[sigma'_i sigma'_j] (B), E[al_i sigma''_i sigma_j] (A)."""
    (fi, ai, bi), (fj, aj, bj) = pair["i"], pair["j"]
    ui, uj = _common_order((fi, ai, bi), (fj, aj, bj))
    ki, kj, ei, ej = {"C": ("S", "S", 0, 0), "B": ("Dd", "Dd", 1, 1),
                      "A": ("Dd2", "S", 2, 0)}[pair["moment"]]
    Xi, Ti = _seq_and_tails(ui, ki)
    Yj, Tj = _seq_and_tails(uj, kj)
    scale = math.sqrt(ui.energy[0, ei] * uj.energy[0, ej])
    for rho, sref, res in zip(pair["rho"], pair["value"], pair["resolution"]):
        assert res < 1e-22 * max(scale, 1.0)
        ref = float(mp.mpf(sref))
        val, err = H.mehler_moment(Xi, Yj, Ti, Tj, np.array([[rho]]))
        true = abs(val[0, 0] - ref)
        assert err[0, 0] >= true, (rho, err[0, 0], true)
        if pair["moment"] != "A":
            # C and B meet the target; A's tails (Dd2) are not part of the criterion
            assert true <= RTOL * scale, (rho, true / scale)
            assert err[0, 0] <= 1.5 * RTOL * scale
        else:
            assert true <= 1e-8 * scale


@settings(max_examples=5)
@given(st.sampled_from(list(NAMES)), st.floats(0.2, 5.0), st.floats(-5.0, 5.0),
       st.floats(0.2, 5.0), st.floats(-5.0, 5.0), st.floats(-1.0, 1.0))
@example("tanh", 5.0, 0.0, 5.0, 0.0, 1.0)
def test_smooth_times_erf_property(name, ai, bi, aj, bj, rho):
    """C moment of any smooth unit with an erf unit; inner Gaussian smoothing of erf exact."""
    ui, uj = _common_order((name, ai, bi), ("erf", aj, bj))
    val, err = H.mehler_moment(ui.S, uj.S, ui.tails_S, uj.tails_S, np.array([[rho]]))
    with mp.workdps(30):
        r = mp.mpf(rho)
        tau2 = aj * aj * (1 - r * r)
        ref = mp_gauss(lambda z: mp_act(name, ai * z + bi)
                       * mp.erf((aj * r * z + bj) / mp.sqrt(1 + 2 * tau2)), max(ai, aj))
    scale = math.sqrt(ui.energy[0, 0] * uj.energy[0, 0])
    true = abs(val[0, 0] - float(ref))
    assert true <= RTOL * scale
    assert err[0, 0] >= true


@pytest.mark.parametrize("name,ai,bi", [("tanh", 3.0, 0.3), ("silu", 2.0, -1.0),
                                        ("gelu", 3.5, 0.5), ("erf", 1.0, 2.0)])
def test_relu_times_smooth(name, ai, bi):
    """ReLU x smooth unit by Mehler (ReLU coefficients to the smooth unit's order).

    The ReLU tail is large (t2 ~ N^-1/2), so near |rho| = 1 the truncation error is about
    sqrt(t2_relu t2_smooth): the smooth side is requested with rtol = 1e-16 (its tail energy
    below 1e-16 E) to reach 1e-10 at rho = 0.999 and 1.
    """
    aj, bj = 1.3, -0.4
    us = H.unit_coefficients(name, [ai], [bi], rtol=1e-16)
    assert us.converged[0]
    ur = H.unit_coefficients("relu", [aj], [bj], n=us.N)
    scale = math.sqrt(us.energy[0, 0] * ur.energy[0, 0])
    with mp.workdps(30):
        for rho in (0.5, -0.9, 0.999, 1.0):
            r = mp.mpf(rho)
            if rho == 1.0:
                kink = -bj / aj
                ref = mp.quad(lambda z: mp_act(name, ai * z + bi) * max(aj * z + bj, 0)
                              * _npdf(z), [-mp.inf, kink - 1, kink, kink + 1, mp.inf])
            else:
                tau = aj * mp.sqrt(1 - r * r)

                def f(z):
                    mu = aj * r * z + bj
                    return mp_act(name, ai * z + bi) * (tau * _npdf(mu / tau)
                                                        + mu * _ncdf(mu / tau))
                # the smoothed ReLU has a kink of z-width tau / (aj |rho|) at -bj / (aj rho);
                # 12 widths away it equals relu up to exp(-72)
                wz = float(tau) / (aj * abs(rho))
                ref = mp_gauss(f, ai, window=(-bj / (aj * rho), 12 * wz, max(ai, 1 / wz)))
            val, err = H.mehler_moment(ur.S, us.S, ur.tails_S, us.tails_S, np.array([[rho]]))
            true = abs(val[0, 0] - float(ref))
            assert err[0, 0] >= true, (rho, err[0, 0], true)
            assert true <= RTOL * scale, (rho, true / scale)
            assert np.isfinite(err[0, 0])


@pytest.mark.parametrize("rho", [0.0, 0.3, -0.5, 0.5, 0.9, 0.99])
def test_relu_pair_closed_form_vs_mehler(rho):
    al = np.array([1.0, 0.7, 2.0])
    be = np.array([0.0, 0.5, -1.5])
    u = H.unit_coefficients("relu", al, be, n=200)
    R = np.full((3, 3), rho)
    val, err = H.mehler_moment(u.S, u.S, u.tails_S, u.tails_S, R)
    with mp.workdps(30):
        for i in range(3):
            for j in range(3):
                ref = float(mp_relu_pair(al[i], be[i], al[j], be[j], rho))
                true = abs(val[i, j] - ref)
                assert err[i, j] >= true, (i, j, err[i, j], true)
                if rho <= 0.5:
                    assert true <= 1e-13 * abs(ref) + 1e-15 and err[i, j] <= 1e-12
