"""Tests of popdyn._kernels.plmoments: pair and first moments of piecewise-linear units.

Reference (from first principles, never calling the kernels): in an orthonormal basis of
span(θᵢ, θⱼ), Z₁ = θᵢ·x and Z₂ = r Z₁ + s W with r = 1 − omr (ρ ≥ 0) or opr − 1 (ρ < 0) and
s = √(omr·opr), the exact binary values of the inputs.  Given Z₁ = z, tᵢ is deterministic and
tⱼ ~ N(αⱼ r z + βⱼ, (αⱼ s)²), so E[σⱼ | z] and E[σ'ⱼ | z] are 1-D Gaussian ramp/step
expectations (written on the tail side of the ramp, without cancellation, at raised precision);
the Z₁ integral is done by global adaptive 24/48-point Gauss–Legendre at 30 digits with
breakpoints at the kink of σᵢ and around the (soft) kink of E[σⱼ | z] (a hard kink at s = 0, i.e.
the 1-D case ρ = ±1).  A_ij = pᵢ φ(hᵢ) E[σⱼ | tᵢ = 0] is the 1-D conditional expectation itself.

The costlier references are precomputed by ``data/_precompute/plmoments_refs.py`` into
``data/refs/plmoments_refs.json`` (key ``pl``: random and pinned edge cases); a few are recomputed
live with hypothesis.

Accuracy asserted for every entry:  |kernel − ref| ≤ 1e−13·|ref| + 1e−15·scale
+ eps·max(hᵢ², hⱼ²)/2·|ref| (+1e−300), where scale is the product of the two units' RMS sizes
(of σ for C, of σ' for B, of σ' and σ for D, and |pᵢ|φ(hᵢ)·RMS(σⱼ | tᵢ = 0) for A), and the third
term is the conditioning of values ∝ e^{−h²/2} with respect to the rounding of h = β/α (only
visible for |h| ≳ 20).
"""
import json
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mpmath.calculus.quadrature import GaussLegendre

from popdyn._kernels.plmoments import pl_first_moments, pl_pair_moments, pl_self_moments

EPS = 2.220446049250313e-16
DATA = Path(__file__).resolve().parents[2] / "data"   # the checkout's data/ (refs are not shipped)
REFS = DATA / "refs" / "plmoments_refs.json"
KEYS = ("C", "B", "Dij", "Dji", "Aij", "Aji")


# ----------------------------------------------------------------------------- mpmath reference
_GL = {}


def _nodes(deg):
    key = (deg, mp.mp.prec)
    if key not in _GL:
        _GL[key] = GaussLegendre(mp.mp).calc_nodes(deg, mp.mp.prec + 20)
    return _GL[key]


def vquad(F, pts, ncomp, rtol=mp.mpf(10) ** -26, maxseg=4000):
    """∫ of the ncomp components of F over [pts[0], pts[-1]] (breakpoints pts).

    Global adaptive: each piece has a 24- and a 48-point Gauss–Legendre value; the piece with the
    largest error relative to ∫|F_c| over the current partition is bisected until every
    component's summed error is ≤ rtol·∫|F_c| + 1e−400."""
    n24, n48 = _nodes(4), _nodes(5)

    def rule(a, b):
        c, hw = (a + b) / 2, (b - a) / 2
        I1 = [mp.mpf(0)] * ncomp
        I2 = [mp.mpf(0)] * ncomp
        Ia = [mp.mpf(0)] * ncomp
        for x, w in n24:
            v = F(c + hw * x)
            for m in range(ncomp):
                I1[m] += w * v[m]
        for x, w in n48:
            v = F(c + hw * x)
            for m in range(ncomp):
                I2[m] += w * v[m]
                Ia[m] += w * abs(v[m])
        return ([hw * v for v in I2], [hw * v for v in Ia],
                [abs(hw * (I2[m] - I1[m])) for m in range(ncomp)])

    segs = [(pts[i], pts[i + 1]) + rule(pts[i], pts[i + 1])
            for i in range(len(pts) - 1) if pts[i + 1] > pts[i]]
    while True:
        Ta = [sum(sg[3][m] for sg in segs) for m in range(ncomp)]
        Te = [sum(sg[4][m] for sg in segs) for m in range(ncomp)]
        if all(Te[m] <= rtol * Ta[m] + mp.mpf(10) ** -400 for m in range(ncomp)):
            break  # (values below 1e−400 are 0 in float64: no need to resolve them)
        if len(segs) >= maxseg:
            raise RuntimeError("vquad: no convergence")
        k = max(range(len(segs)),
                key=lambda i: max((segs[i][4][m] / Ta[m]) if Ta[m] > 0 else 0 for m in range(ncomp)))
        a, b = segs[k][0], segs[k][1]
        c = (a + b) / 2
        segs[k] = (a, c) + rule(a, c)
        segs.append((c, b) + rule(c, b))
    return [sum(sg[2][m] for sg in segs) for m in range(ncomp)]


def _xdig(a):
    return 5 + int(2 * mp.log10(1 + abs(a)))


def _ncdf(x):
    """Φ(x); mpmath's erfc overflows for |x| ≳ 1e150: asymptotic series beyond |x| = 1e5."""
    if x < -1e5:
        return mp.npdf(x) / (-x) * (1 - 1 / (x * x) + 3 / x ** 4)
    if x > 1e5:
        return 1 - _ncdf(-x)
    return mp.ncdf(x)


def _H1(a):
    """E[(W − a)₊], W ~ N(0, 1); φ(a) − aΦ(−a) cancels to ~φ(a)/a² for a ≫ 0: extra digits."""
    if a <= 1:
        return mp.npdf(a) - a * _ncdf(-a)
    if a > 1e5:
        return mp.npdf(a) / (a * a) * (1 - 3 / (a * a) + 15 / a ** 4)
    with mp.extradps(_xdig(a)):
        return +(mp.npdf(a) - a * _ncdf(-a))


def _m(p, q, mu, tau):
    """E[p relu(T) + q T], T ~ N(mu, tau²), the ramp on its tail side."""
    if tau == 0:
        return (p + q) * mu if mu > 0 else q * mu
    if mu > 0:
        return (p + q) * mu + p * tau * _H1(mu / tau)
    return q * mu + p * tau * _H1(-mu / tau)


def _mp(p, q, mu, tau):
    """E[p 1{T > 0} + q]."""
    if tau == 0:
        return (p + q) if mu > 0 else q
    if mu > 0:
        return (p + q) - p * _ncdf(-mu / tau)
    return q + p * _ncdf(mu / tau)


def _t2pos(a, hh):
    """E[t² 1{t > 0}] for t = a(Z + hh), a > 0 (cancels for hh ≪ 0: extra digits)."""
    if hh < -1e5:   # E[(Z + hh)² 1{Z > −hh}] ~ 2φ(hh)/|hh|³
        return a * a * 2 * mp.npdf(hh) / (-hh) ** 3 * (1 - 6 / (hh * hh))
    with mp.extradps(2 * _xdig(hh)):
        return +(a * a * ((1 + hh * hh) * _ncdf(hh) + hh * mp.npdf(hh)))


def _m2(p, q, mu, tau):
    """E[(p relu(T) + q T)²], T ~ N(mu, tau²)."""
    if tau == 0:
        v = (p + q) * mu if mu > 0 else q * mu
        return v * v
    hh = mu / tau
    return (p + q) ** 2 * _t2pos(tau, hh) + q * q * _t2pos(tau, -hh)


def ref_unit(u):
    """(E[σ], E[σ'], E[ασ''], E[σ²], E[σ'²]) of u = (p, q, α, β)."""
    with mp.workdps(30):
        p, q, a, b = (mp.mpf(v) for v in u)
        mu2 = p * mp.npdf(b / a) if a > 0 else mp.mpf(0)
        if a > 0:
            d2 = (p + q) ** 2 * _ncdf(b / a) + q * q * _ncdf(-b / a)
        else:
            d2 = ((p + q) if b > 0 else q) ** 2
        return _m(p, q, b, a), _mp(p, q, b, a), mu2, _m2(p, q, b, a), d2


def ref_pair(ui, uj, rho, omr, opr):
    """Reference moments and scales of the pair (dicts keyed by KEYS)."""
    with mp.workdps(30):
        pi, qi, ai, bi = (mp.mpf(v) for v in ui)
        pj, qj, aj, bj = (mp.mpf(v) for v in uj)
        omr, opr = mp.mpf(omr), mp.mpf(opr)
        r = (1 - omr) if rho >= 0 else (opr - 1)
        s = mp.sqrt(omr * opr)
        zero = mp.mpf(0)

        def F(z):
            ti = ai * z + bi
            si = pi * max(ti, zero) + qi * ti
            dsi = pi * (1 if ti > 0 else 0) + qi
            mu, tau = aj * r * z + bj, aj * s
            mj, mjp = _m(pj, qj, mu, tau), _mp(pj, qj, mu, tau)
            ph = mp.npdf(z)
            return (si * mj * ph, dsi * mjp * ph, dsi * mj * ph, si * mjp * ph)

        L = mp.mpf(45)
        pts = {-L, L}
        if ai > 0 and abs(bi / ai) < L:
            pts.add(-bi / ai)
        if aj > 0 and r != 0 and abs(bj / (aj * r)) < L:
            zj = -bj / (aj * r)
            pts.add(zj)
            if s > 0:
                w = s / abs(r)
                while w < 1:
                    pts.update((zj - w, zj + w))
                    w *= 8
        C, B, Dij, Dji = vquad(F, sorted(pts), 4)
        ref = dict(C=C, B=B, Dij=Dij, Dji=Dji)
        if ai > 0:
            mu, tau = aj * r * (-bi / ai) + bj, aj * s
            ph = mp.npdf(bi / ai)
            ref["Aij"] = pi * ph * _m(pj, qj, mu, tau)
            # the scale includes the conditioning of μ = β_j − α_j r β_i/α_i: an input rounding
            # moves it by u(|β_j| + |α_j r β_i/α_i|), and A by |p_iφ(h_i) E[σ_j']| times that
            scAij = abs(pi) * ph * (mp.sqrt(_m2(pj, qj, mu, tau))
                                    + (abs(pj) + abs(qj)) * (abs(bj) + abs(aj * r * bi / ai)))
        else:
            ref["Aij"] = scAij = zero
        if aj > 0:
            mu, tau = ai * r * (-bj / aj) + bi, ai * s
            ph = mp.npdf(bj / aj)
            ref["Aji"] = pj * ph * _m(pi, qi, mu, tau)
            scAji = abs(pj) * ph * (mp.sqrt(_m2(pi, qi, mu, tau))
                                    + (abs(pi) + abs(qi)) * (abs(bi) + abs(ai * r * bj / aj)))
        else:
            ref["Aji"] = scAji = zero
        fi, fj = ref_unit(ui), ref_unit(uj)
        sc = dict(C=mp.sqrt(fi[3] * fj[3]), B=mp.sqrt(fi[4] * fj[4]), Dij=mp.sqrt(fi[4] * fj[3]),
                  Dji=mp.sqrt(fj[4] * fi[3]), Aij=scAij, Aji=scAji)
        return ref, sc, fi, fj


# --------------------------------------------------------------------------------- helpers
def _arr(*v):
    return [np.array([x], dtype=np.float64) for x in v]


def kernel_pair(ui, uj, rho, omr, opr):
    """The six moments from pl_pair_moments called in both orders, plus the symmetric pair."""
    out = {}
    for a, b, swap in ((ui, uj, False), (uj, ui, True)):
        C, B, A, D = (np.full((1, 1), np.nan) for _ in range(4))
        pl_pair_moments(*_arr(*a), *_arr(*b), np.array([[rho]]), np.array([[omr]]),
                        np.array([[opr]]), C, B, A, D)
        if swap:
            out.update(Aji=A[0, 0], Dji=D[0, 0], C_ji=C[0, 0], B_ji=B[0, 0])
        else:
            out.update(C=C[0, 0], B=B[0, 0], Aij=A[0, 0], Dij=D[0, 0])
    return out


def kernel_first(u):
    m0, m1, m2 = np.empty(1), np.empty(1), np.empty(1)
    pl_first_moments(*_arr(*u), m0, m1, m2)
    return m0[0], m1[0], m2[0]


def _hcond(u):
    p, q, a, b = u
    if a > 0 and abs(b) <= 40 * a:
        return (b / a) ** 2 / 2
    return 0.0


def tol(ref, scale, ui, uj):
    cond = EPS * max(_hcond(ui), _hcond(uj))
    return (1e-13 + cond) * abs(ref) + 1e-15 * scale + mp.mpf(10) ** -300


def check_pair(ui, uj, rho, omr, opr, ref=None, sc=None, fi=None, fj=None):
    """Assert every moment within tolerance; returns the worst error/tolerance ratio."""
    if ref is None:
        ref, sc, fi, fj = ref_pair(ui, uj, rho, omr, opr)
    k = kernel_pair(ui, uj, rho, omr, opr)
    worst = 0.0
    msgs = []
    for key in KEYS:
        e = abs(mp.mpf(k[key]) - ref[key])
        t = tol(ref[key], sc[key], ui, uj)
        worst = max(worst, float(e / t))
        if e > t:
            msgs.append(f"{key}: kernel={k[key]!r} ref={mp.nstr(ref[key], 17)} err/tol={float(e / t):.3g}")
    # the pair in the other order gives the same C and B
    for key in ("C", "B"):
        e = abs(mp.mpf(k[key]) - mp.mpf(k[key + "_ji"]))
        t = tol(ref[key], sc[key], ui, uj)
        worst = max(worst, float(e / t))
        if e > t:
            msgs.append(f"{key} not symmetric: {k[key]!r} vs {k[key + '_ji']!r}")
    for u, f in ((ui, fi), (uj, fj)):
        for name, kv, rv, s in zip(("mu0", "mu1", "mu2"), kernel_first(u), f[:3],
                                   (mp.sqrt(f[3]), mp.sqrt(f[4]), 0)):
            e = abs(mp.mpf(kv) - rv)
            t = tol(rv, s, u, u)
            worst = max(worst, float(e / t))
            if e > t:
                msgs.append(f"{name}{u}: kernel={kv!r} ref={mp.nstr(rv, 17)} err/tol={float(e / t):.3g}")
    assert not msgs, f"units {ui} {uj} rho={rho!r} omr={omr!r} opr={opr!r}:\n" + "\n".join(msgs)
    return worst


def corr_from_angle(phi):
    """(ρ, 1 − ρ, 1 + ρ) from the angle between two unit vectors, as ½|θᵢ ∓ θⱼ|² would give."""
    return math.cos(phi), 2 * math.sin(phi / 2) ** 2, 2 * math.cos(phi / 2) ** 2


# ------------------------------------------------------------------------- against mpmath
def test_precomputed_references():
    """Every precomputed case (random + pinned edge cases) of data/refs/plmoments_refs.json."""
    data = json.loads(REFS.read_text())["pl"]
    assert len(data) >= 200
    worst = 0.0
    for c in data:
        ref = {k: mp.mpf(v) for k, v in c["ref"].items()}
        sc = {k: mp.mpf(v) for k, v in c["scale"].items()}
        fi = [mp.mpf(v) for v in c["first_i"]]
        fj = [mp.mpf(v) for v in c["first_j"]]
        worst = max(worst, check_pair(tuple(c["ui"]), tuple(c["uj"]), c["rho"], c["omr"], c["opr"],
                                      ref, sc, fi, fj))
    assert worst <= 1.0


ACTS = [(1.0, 0.0), (0.99, 0.01), (0.8, 0.2), (2.0, -1.0), (0.0, 1.0), (1.0, -1.0)]


@st.composite
def units(draw):
    p, q = draw(st.sampled_from(ACTS) | st.tuples(st.floats(-2, 2), st.floats(-2, 2)))
    al = draw(st.sampled_from([0.0, 1e-8, 1e-4]) | st.floats(0.2, 3.0))
    h = draw(st.sampled_from([0.0, 10.0, -10.0, 1e8, -1e8, 40.0, -40.0]) | st.floats(-12, 12))
    be = al * h if al > 0 else draw(st.floats(-3, 3))
    return (float(p), float(q), float(al), float(be))


@given(units(), units(),
       st.sampled_from([0.0, math.pi, 1.4142135623730951e-6, math.pi - 1.4142135623730951e-6,
                        math.acos(0.925), math.acos(-0.925)]) | st.floats(0, math.pi))
@settings(max_examples=5, suppress_health_check=[HealthCheck.too_slow])
@example(ui=(1.0, 0.0, 1.0, 0.0), uj=(1.0, 0.0, 1.0, 0.0), phi=1.0)                 # arc-cosine kernel
@example(ui=(1.0, 0.0, 0.0, 0.7), uj=(0.8, 0.2, 1.3, -0.4), phi=0.4)                # α = 0 (constant)
@example(ui=(1.0, 0.0, 1.2, 0.3), uj=(1.0, 0.0, 0.7, -0.2), phi=0.0)                # ρ = 1 exactly
@example(ui=(2.0, -1.0, 1.2, 0.3), uj=(1.0, 0.0, 0.7, 0.5), phi=math.pi)            # ρ = −1 exactly
@example(ui=(1.0, 0.0, 1.0, 0.2), uj=(1.0, 0.0, 1.0, 0.2), phi=1.4142135623730951e-6)  # 1 − ρ = 1e−12
@example(ui=(1.0, 0.0, 1e-8, 1e-7), uj=(1.0, 0.0, 1.0, -0.3), phi=0.8)              # α = 1e−8, h = 10
@example(ui=(1.0, -1.0, 1e-8, -1e-7), uj=(0.99, 0.01, 2.0, 0.3), phi=2.0)           # h = −10, relu(−t)
@example(ui=(1.0, 0.0, 1e-8, 1.0), uj=(1.0, 0.0, 1.0, 0.0), phi=0.3)                # h = 1e8 (linear)
@example(ui=(1.0, 0.0, 1.0, -6.0), uj=(1.0, 0.0, 1.0, -6.0), phi=0.2)               # tails, cancellation
@example(ui=(1.0, 0.0, 0.0195, -0.00218), uj=(1.0, 0.0, 0.0117, 0.3826), phi=2.7386)  # h = 32.7, ρ ≈ −0.92
@example(ui=(1.0, 0.0, 0.744, 0.00423), uj=(1.0, 0.0, 0.00605, 0.1735), phi=2.8)      # h = 28.7 vs h ≈ 0
@example(ui=(1.0, 0.0, 1.0, 5.495500000000001e-244), uj=(1.0, 0.0, 0.75, 4.121625000000001e-244),
         phi=0.0)                                 # μ = β_j − α_jβ_i/α_i = 6.5e−261 rounds to 0
def test_live_mpmath(ui, uj, phi):
    rho, omr, opr = corr_from_angle(phi)
    check_pair(ui, uj, rho, omr, opr)


# ------------------------------------------------------------------- structure (no mpmath)
def _geometry(theta):
    """R, 1 − R, 1 + R from unit rows, the latter two as ½|θᵢ ∓ θⱼ|² (no cancellation)."""
    R = theta @ theta.T
    OMR = 0.5 * ((theta[:, None, :] - theta[None, :, :]) ** 2).sum(-1)
    OPR = 0.5 * ((theta[:, None, :] + theta[None, :, :]) ** 2).sum(-1)
    return R, OMR, OPR


def _random_set(rng, m, d=4):
    """m units of assorted activations, including degenerate geometry: α = 0, tiny α with
    |β| ≤ 10α and huge |β/α|, β = 0, duplicated and antipodal directions (ρ = ±1 exactly)."""
    p = np.empty(m)
    q = np.empty(m)
    for i in range(m):
        p[i], q[i] = ACTS[rng.integers(len(ACTS))]
    al = rng.uniform(0.2, 2.5, m)
    be = rng.normal(0, 1.5, m) * al
    al[0] = 0.0
    be[1] = 0.0
    al[2], be[2] = 1e-8, 7e-8
    al[3], be[3] = 1e-8, 2.0
    be[4] = -30 * al[4]
    th = rng.normal(size=(m, d))
    th[5] = th[6]
    th[7] = -th[8]
    th /= np.linalg.norm(th, axis=1)[:, None]
    return p, q, al, be, th


def _outputs(m1, m2):
    return [np.full((m1, m2), np.nan) for _ in range(4)]


def test_self_equals_pair_and_symmetry():
    rng = np.random.default_rng(11)
    m = 14
    p, q, al, be, th = _random_set(rng, m)
    R, OMR, OPR = _geometry(th)
    C, B, A, D = _outputs(m, m)
    pl_self_moments(p, q, al, be, R, OMR, OPR, C, B, A, D)
    C2, B2, A2, D2 = _outputs(m, m)
    pl_pair_moments(p, q, al, be, p, q, al, be, R, OMR, OPR, C2, B2, A2, D2)
    assert np.array_equal(C, C.T) and np.array_equal(B, B.T)
    assert np.all(np.diag(A) == 0.0)
    rms0 = np.sqrt(np.diag(C))
    rms1 = np.sqrt(np.diag(B))
    for X, Y, s in ((C, C2, np.outer(rms0, rms0)), (B, B2, np.outer(rms1, rms1)),
                    (D, D2, np.outer(rms1, rms0))):
        assert np.all(np.abs(X - Y) <= 1e-14 * np.abs(X) + 1e-15 * s)
    mu2 = np.empty(m)
    pl_first_moments(p, q, al, be, np.empty(m), np.empty(m), mu2)
    sA = np.outer(np.abs(mu2), rms0) * 10.0   # |p φ(h)| · RMS bound of the conditional σ_j
    assert np.all(np.abs(A - A2) <= 1e-14 * np.abs(A) + 1e-15 * sA + 1e-300)
    # Cauchy–Schwarz and positive semi-definiteness of the Gram matrices C, B
    assert np.all(np.abs(C) <= np.outer(rms0, rms0) * (1 + 1e-14))
    assert np.linalg.eigvalsh(C).min() >= -1e-13 * np.abs(C).max()
    assert np.linalg.eigvalsh(B).min() >= -1e-13 * np.abs(B).max()


def test_constant_and_linear_units_exact():
    """α = 0 (σ ≡ c), identity units and |β| > 40α reduce to first moments exactly."""
    rng = np.random.default_rng(5)
    m = 10
    p, q, al, be, th = _random_set(rng, m)
    R, OMR, OPR = _geometry(th)
    mu0, mu1, mu2 = np.empty(m), np.empty(m), np.empty(m)
    pl_first_moments(p, q, al, be, mu0, mu1, mu2)
    # set 1: a constant unit, an identity unit, a unit with β = 50α (exactly linear), β = −50α
    p1 = np.array([1.0, 0.0, 0.8, 2.0])
    q1 = np.array([0.0, 1.0, 0.2, -1.0])
    al1 = np.array([0.0, 1.3, 0.9, 0.9])
    be1 = np.array([0.7, -0.4, 45.0, -45.0])
    th1 = th[:4]
    R1 = th1 @ th.T
    OMR1 = 0.5 * ((th1[:, None] - th[None]) ** 2).sum(-1)
    OPR1 = 0.5 * ((th1[:, None] + th[None]) ** 2).sum(-1)
    C, B, A, D = _outputs(4, m)
    pl_pair_moments(p1, q1, al1, be1, p, q, al, be, R1, OMR1, OPR1, C, B, A, D)
    L = np.array([1.0, 1.0, 1.0, -1.0])        # σ = L·t on the relevant side
    for i in range(4):
        for j in range(m):
            rho = R1[i, j]
            c_exp = L[i] * (be1[i] * mu0[j] + al1[i] * al[j] * rho * mu1[j])
            s = abs(L[i]) * math.hypot(al1[i], be1[i]) * (abs(mu0[j]) + al[j] * abs(mu1[j]) + 1)
            assert abs(C[i, j] - c_exp) <= 1e-14 * s
            assert abs(B[i, j] - L[i] * mu1[j]) <= 1e-15 * (abs(mu1[j]) + 1)
            assert abs(D[i, j] - L[i] * mu0[j]) <= 1e-15 * (abs(mu0[j]) + al[j] + abs(be[j]))
            assert A[i, j] == 0.0
    assert np.all(C[0] == 0.7 * mu0)         # constant unit: E[c σ_j] = c μ0_j


@given(st.floats(0.2, 3), st.floats(-3, 3), st.floats(0.2, 3), st.floats(-3, 3), st.floats(0, math.pi),
       st.floats(0.125, 8))
@settings(max_examples=60)
def test_positive_homogeneity(a1, b1, a2, b2, phi, c):
    """(α, β) → (cα, cβ) for both units scales C by c², D by c, and leaves B, A·... invariant."""
    rho, omr, opr = corr_from_angle(phi)
    args = [np.array([[rho]]), np.array([[omr]]), np.array([[opr]])]
    out = []
    for s in (1.0, c):
        C, B, A, D = _outputs(1, 1)
        pl_pair_moments(*_arr(0.8, 0.2, s * a1, s * b1), *_arr(1.0, 0.0, s * a2, s * b2), *args, C, B, A, D)
        out.append((C[0, 0], B[0, 0], A[0, 0], D[0, 0]))
    (C1, B1, A1, D1), (C2, B2, A2, D2) = out
    assert abs(C2 - c * c * C1) <= 1e-13 * c * c * (abs(C1) + 1e-3 * (a1 + abs(b1)) * (a2 + abs(b2)))
    assert abs(B2 - B1) <= 1e-13
    assert abs(D2 - c * D1) <= 1e-13 * c * (abs(D1) + 1e-3 * (a2 + abs(b2)))
    assert abs(A2 - c * A1) <= 1e-13 * c * (abs(A1) + 1e-3 * (a2 + abs(b2)))


@pytest.mark.parametrize("sign", [1, -1])
def test_limits_at_rho_pm1(sign):
    """ρ = ±(1 − δ) tends to the exact ρ = ±1 values: |ΔC| ≤ δ·max|∂C/∂ρ| = δ·αα'·max|σ'σ'|
    (Price), and B, D change like √δ (∂B/∂ρ = E[σ''σ''] is integrable ~δ^{−1/2})."""
    rng = np.random.default_rng(3)
    m = 9
    p, q, al, be, th = _random_set(rng, m)
    w = np.abs(p) + np.abs(q)                      # bound of |σ'|
    res = {}
    for delta in (0.0, 1e-12, 1e-8):
        R = np.full((m, m), sign * (1.0 - delta))
        OMR = np.full((m, m), delta if sign > 0 else 2.0 - delta)
        OPR = np.full((m, m), 2.0 - delta if sign > 0 else delta)
        C, B, A, D = _outputs(m, m)
        pl_pair_moments(p, q, al, be, p, q, al, be, R, OMR, OPR, C, B, A, D)
        res[delta] = (C, B, D)
    C0, B0, D0 = res[0.0]
    ww = np.outer(w, w)
    for delta in (1e-12, 1e-8):
        C1, B1, D1 = res[delta]
        assert np.all(np.abs(C1 - C0) <= 2 * delta * ww * np.outer(al, al) + 1e-13 * (np.abs(C0) + 1e-300))
        assert np.all(np.abs(B1 - B0) <= 2 * math.sqrt(delta) * ww + 1e-15)
        assert np.all(np.abs(D1 - D0) <= 2 * math.sqrt(delta) * ww * al[None, :] + 1e-13 * np.abs(D0) + 1e-300)
