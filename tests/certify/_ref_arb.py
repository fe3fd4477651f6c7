"""A fast independent reference for the soak (benchmarks/soak_certify.py ``--reference arb``):
the 2-D Gaussian integrals of tests/certify/_ref.py, integrated rigorously in Arb (C) instead of
by mpmath's tanh–sinh quadrature.

The method is _ref.py's (its module docstring), only the arithmetic and the quadrature change:
every pair moment is

    E[F(t₁) G(t₂)] = ∫ φ(z) F(α₁z + b₁) · E_W[G(μ(z) + τW)] dz,
    t₁ = α₁Z + b₁,  μ(z) = (w₁·w₂/α₁) z + b₂,  τ² = |w₂|² − (w₁·w₂)²/|w₁|²,

with the geometry exact in rationals (τ = 0 exactly for parallel rows) and the inner factor the
same textbook closed forms (relu: μΦ(μ/τ) + τφ(μ/τ); step: Φ(μ/τ); polynomials by the binomial
theorem; Gaussian-polynomials by completing the square; sin μ e^{−τ²/2}; erf(μ/√(1 + 2τ²));
gelu and Φ by Φ(μ/√(1 + τ²))), all entire in z.  The outer integral is python-flint's
``acb.integral`` (Petras' adaptive Gauss–Legendre with rigorous error bounds, Johansson,
"Numerical integration in arbitrary-precision ball arithmetic", ICMS 2018) on [−L, L], split at
the kinks of F (α₁z + b₁ = 0) and of a τ = 0 inner factor (μ(z) = 0): on each piece a
piecewise-linear or step atom is replaced by its affine branch there (an entire function), so
every integrand is holomorphic or meromorphic (tanh, silu: poles give non-finite balls, which
the integrator subdivides) and the ``analytic`` flag needs no check.  The tails |z| > L are
bounded explicitly (``_tail``) and added to the radius.

Pairs of two tanh / silu functions (no closed conditional mean) with τ > 0 use the nested
trapezoidal rule of ``_ref._nested_trapezoid`` (node spacings from the Trefethen–Weideman
strip bound with the strip bounds of ``_ref._num_strip``), evaluated in Arb, with
tanh(μ + τw) = (T + t_w)/(1 + T t_w) and σ(μ + τw) = 1/(1 + e^{−μ}e^{−τw}) (T = tanh μ per
outer node, t_w = tanh τw and e^{−τw} once per inner node set); the stated bound is added to the
radius.  When that rule would need more than ``TRAP_MAX`` outer × inner nodes (large weights:
the strips narrow as 1/|w|), the pair is integrated by ``acb.integral`` inside ``acb.integral``
instead (``_nested_acb``): the inner integral over w is evaluated for a complex ball z and its
enclosure holds for every z in the ball, so the outer rule's bounds stay rigorous.

Polynomial pairs are exact (rational Gaussian moments), as in _ref.py.

Independence: no popdyn or certify code (no Hermite / Mehler series, no Owen T, no canonical
ramps).  What this reference shares with certify is Arb's elementary functions (exp, erf(c),
tanh); benchmarks/soak_certify.py therefore re-checks every 40th case, and every case whose
reference ball comes within its margin of a bracket end, with the mpmath reference.

The atoms' coefficients are those of _ref.py (mpf at the working precision, e.g. 1/√k! and
2/√π), taken as exact: the balls are rigorous for those coefficients, which are within
10^−(dps+15) relative of the true ones.

Use: ``with installed(dps): smooth_refs.one(...)`` swaps ``_ref.pair`` and ``_ref.mean`` for
:func:`pair` and :func:`mean` (every composite of data/_precompute/*_refs.py goes through
them); :data:`STATS` collects the largest radius seen.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
from fractions import Fraction

from flint import acb, arb, ctx as fctx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for _p in (HERE, os.path.join(ROOT, "data", "_precompute")):
    if _p not in sys.path:
        sys.path.append(_p)

import _ref as R  # noqa: E402

#: digits of the moments (set by :func:`installed`); the target error is 10^−(DPS+3) of
#: max(|value|, 1), _ref.py's tolerance at its working precision DPS + 15
DPS = 20
#: the largest (outer nodes × inner nodes) of a nested trapezoid before ``_nested_acb``
TRAP_MAX = 4_000_000
#: running statistics of the last installed session: largest absolute and relative radius,
#: counts of each method
STATS: dict = {}


# ------------------------------------------------------------------------------ conversions
def _arb(x) -> arb:
    """Exact ball of an int, Fraction, float or mpf (current precision suffices: dyadic)."""
    if isinstance(x, arb):
        return x
    if isinstance(x, int):
        return arb(x)
    if isinstance(x, float):
        x = Fraction(x)
    if isinstance(x, Fraction):
        return arb(x.numerator) / x.denominator if x.denominator != 1 else arb(x.numerator)
    sign, man, exp, _ = x._mpf_            # mpmath mpf
    if man == 0:
        return arb(0)
    v = arb(int(man)) * arb(2) ** int(exp)
    return -v if sign else v


def _to_mpf(b: arb):
    """The midpoint of a real ball as an mpf of _ref's context."""
    return R.ctx.mpf(b.mid())


def _note(ball: arb, what: str):
    rad = float(ball.rad())
    mag = abs(float(ball.mid()))
    STATS["max_rad"] = max(STATS.get("max_rad", 0.0), rad)
    STATS["max_rel_rad"] = max(STATS.get("max_rel_rad", 0.0), rad / max(mag, 1.0))
    STATS[what] = STATS.get(what, 0) + 1


def _npdf(x):
    return (-(x * x) / 2).exp() / (2 * arb.pi()).sqrt()


def _ncdf(x):
    return (-x / arb(2).sqrt()).erfc() / 2


# ------------------------------------------------------------------------------ atoms
def _eval_branch(fn, t, sgn):
    """F(t) for a (possibly complex) ball t, PL / step atoms on their branch sgn = sign(t)
    (sgn ∈ {+1, −1}: the branch of the piece being integrated, so the result is entire)."""
    s = 0
    for at in fn:
        k = at[0]
        if k == "pl":
            s += (_arb(at[1]) * t if sgn > 0 else 0) + _arb(at[2]) * t
        elif k == "step":
            s += (_arb(at[1]) if sgn > 0 else 0) + _arb(at[2])
        elif k == "poly":
            s += sum(_arb(c) * t ** p for p, c in at[1].items())
        elif k == "gp":
            s += sum(_arb(c) * t ** p for p, c in at[2].items()) * (-_arb(at[1]) * t * t / 2).exp()
        elif k == "sin":
            s += _arb(at[1]) * t.sin()
        elif k == "erf":
            s += t.erf()
        elif k == "gelu":
            s += t * _ncdf(t)
        elif k == "ncdf":
            s += _ncdf(t)
        elif k == "num":
            s += _num_eval(at[1], at[2], t)
        else:
            raise ValueError(k)
    return s


def _num_eval(name, deriv, t):
    if name == "tanh":
        th = t.tanh()
        return th if deriv == 0 else 1 - th * th
    sg = 1 / (1 + (-t).exp())
    return t * sg if deriv == 0 else sg + t * sg * (1 - sg)


def _poly_mean(coeffs, mu, tau):
    s = 0
    for n, c in coeffs.items():
        s += _arb(c) * sum(math.comb(n, j) * mu ** (n - j) * tau ** j * R._wmom(j)
                           for j in range(0, n + 1, 2))
    return s


def _inner(fn, mu, tau, tau2, sgn):
    """E[F(μ + τW)] (τ > 0: closed forms, entire in μ; τ = 0: F(μ) on the branch sgn).
    tau2 = τ² (an exact ball)."""
    if tau2 == 0:
        return _eval_branch(fn, mu, sgn)
    s = 0
    for at in fn:
        k = at[0]
        if k == "pl":
            r = mu * _ncdf(mu / tau) + tau * _npdf(mu / tau)
            s += _arb(at[1]) * r + _arb(at[2]) * mu
        elif k == "step":
            s += _arb(at[1]) * _ncdf(mu / tau) + _arb(at[2])
        elif k == "poly":
            s += _poly_mean(at[1], mu, tau)
        elif k == "gp":
            a = _arb(at[1])
            den = 1 + a * tau2
            s += (-a * mu * mu / (2 * den)).exp() / den.sqrt() * _poly_mean(
                at[2], mu / den, tau / den.sqrt())
        elif k == "sin":
            s += _arb(at[1]) * mu.sin() * (-tau2 / 2).exp()
        elif k == "erf":
            s += (mu / (1 + 2 * tau2).sqrt()).erf()
        elif k in ("gelu", "ncdf"):
            sd = (1 + tau2).sqrt()
            if k == "ncdf":
                s += _ncdf(mu / sd)
            else:
                s += mu * _ncdf(mu / sd) + tau2 * _npdf(mu / sd) / sd
        else:
            raise ValueError(f"no closed conditional mean for {at!r}")
    return s


def _has(fn, kinds):
    return any(at[0] in kinds for at in fn)


def _degree(fn):
    """(A, n): |F(t)| <= A(1 + |t|)^n for real t (n >= 1), and E|F(μ + τW)| <=
    A(1 + |μ| + τ)^n · n!! (E(1 + |μ| + τ|W|)^n <= (1 + |μ| + τ)^n E[(1 + |W|)^n] and
    E(1 + |W|)^n <= 2^n E|W|^n ∨ 2^n <= 2^n n!!; the factor is folded into A)."""
    A, n = 0.0, 1
    for at in fn:
        k = at[0]
        if k in ("pl", "step"):
            A += abs(float(at[1])) + abs(float(at[2]))
        elif k == "poly":
            A += sum(abs(float(c)) for c in at[1].values())
            n = max(n, max(at[1]))
        elif k == "gp":
            A += sum(abs(float(c)) for c in at[2].values())
            n = max(n, max(at[2]))
        elif k == "sin":
            A += abs(float(at[1]))
        else:                       # erf, gelu, ncdf, tanh, silu and derivatives: <= 1 + |t|
            A += 1.5
    dfact = 1
    for i in range(n, 0, -2):
        dfact *= i
    return A * 2 ** n * dfact, n


def _tail(fn1, a1, B1, fn2, slope, B2, tau, L):
    """A bound of ∫_{|z|>L} φ(z)|F(a₁z + B₁)||E_W G(μ(z) + τW)| dz (floats, rounded up):
    for |z| >= L >= 1 the integrand is at most A₁A₂ P₁^{n₁} P₂^{n₂} |z|^{n₁+n₂} φ(z),
    P₁ = 1 + |B₁| + a₁, P₂ = 1 + |B₂| + |slope| + τ, and ∫_L^∞ z^k φ <= 2(L^k + 1)φ(L) when
    L² >= 2k (integrate by parts: ∫_L^∞ z^kφ = L^{k−1}φ(L) + (k − 1)∫_L^∞ z^{k−2}φ)."""
    A1, n1 = _degree(fn1)
    A2, n2 = _degree(fn2)
    k = n1 + n2
    assert L * L >= 2 * k and L >= 1
    P1 = 1 + abs(B1) + a1
    P2 = 1 + abs(B2) + abs(slope) + tau
    phiL = math.exp(-L * L / 2) / math.sqrt(2 * math.pi)
    return 2 * 2 * A1 * A2 * P1 ** n1 * P2 ** n2 * (L ** k + 1) * phiL * 1.01


def _choose_L(fn1, a1, B1, fn2, slope, B2, tau, eps):
    L = 8.0
    while _tail(fn1, a1, B1, fn2, slope, B2, tau, L) > eps:
        L += 1.0
    return L


# ------------------------------------------------------------------------------ 1-D pieces
def _integrate(f, lo, hi, eps):
    """∫_lo^hi f (acb.integral, rigorous ball), real part."""
    r = acb.integral(lambda z, analytic: f(z), lo, hi, abs_tol=arb(eps), rel_tol=arb(eps),
                     eval_limit=10 ** 7)
    return r.real


def _pieces_integral(fn1, a1, B1, fn2, slope, B2, tau, tau2, eps, split_extra=()):
    """∫ φ(z) F(a₁z + B₁) E_W[G(slope z + B₂ + τW)] dz over ℝ (the tail bounded)."""
    fa1, fB1, fsl, fB2, ftau = float(a1.mid()), float(B1.mid()), float(slope.mid()), \
        float(B2.mid()), float(tau.mid())
    L = _choose_L(fn1, fa1, fB1, fn2, fsl, fB2, ftau, eps / 4)
    pts = [-L, L]
    k1 = _has(fn1, ("pl", "step"))
    k2 = _has(fn2, ("pl", "step")) and tau2 == 0 and fsl != 0
    kinks = []
    if k1:
        kinks.append(-B1 / a1)
    if k2:
        kinks.append(-B2 / slope)
    for kz in kinks:
        if -L < float(kz.mid()) < L:
            pts.append(kz)
    for p in split_extra:
        if -L < p < L:
            pts.append(p)
    # sort by midpoint; kinks are exact to the working precision (their balls are the
    # endpoints: acb.integral accepts ball endpoints)
    grid = sorted(pts, key=lambda p: float(p.mid()) if isinstance(p, arb) else p)
    total = arb(0)
    for lo, hi in zip(grid[:-1], grid[1:]):
        flo = float(lo.mid()) if isinstance(lo, arb) else lo
        fhi = float(hi.mid()) if isinstance(hi, arb) else hi
        if fhi <= flo:
            continue
        zm = arb((flo + fhi) / 2)
        s1 = 1 if (a1 * zm + B1) > 0 else -1
        s2 = 1 if (slope * zm + B2) > 0 else -1

        def f(z, s1=s1, s2=s2):
            return (-(z * z) / 2).exp() * _eval_branch(fn1, a1 * z + B1, s1) * \
                _inner(fn2, slope * z + B2, tau, tau2, s2)
        total += _integrate(f, _arb(lo) if not isinstance(lo, arb) else lo,
                            _arb(hi) if not isinstance(hi, arb) else hi, eps)
    total = total / (2 * arb.pi()).sqrt()
    tail = _tail(fn1, fa1, fB1, fn2, fsl, fB2, ftau, L)
    return total + arb(0, tail)


def _transition_points(fn1, a1, B1, fn2, slope, B2, tau):
    """Extra split points (floats) at the transitions of smooth units (_ref.pair's grid)."""
    pts = []
    smooth = ("erf", "gelu", "ncdf", "num", "gp")
    if _has(fn1, smooth):
        z1 = -B1 / a1
        pts += [z1 + kk / a1 for kk in (-8, -2, -0.5, 0, 0.5, 2, 8)]
    if _has(fn2, smooth) and slope != 0:
        z2 = -B2 / slope
        wd2 = math.sqrt(1 + tau * tau) / abs(slope)
        pts += [z2 + kk * wd2 for kk in (-8, -2, 0, 2, 8)]
    return pts


# ------------------------------------------------------------------------------ nested rules
def _nested_trapezoid(at1, a1, B1, at2, slope, B2, tau, target):
    """_ref._nested_trapezoid in Arb (its docstring: the bound); returns a ball whose radius
    includes the stated error bound, or None when the node count exceeds TRAP_MAX."""
    mpf = R.ctx.mpf
    dF, KF = R._num_strip(at1)
    dG, KG = R._num_strip(at2)
    fa1, fsl, ftau = mpf(a1.mid()), mpf(slope.mid()), mpf(tau.mid())
    fB1, fB2 = mpf(B1.mid()), mpf(B2.mid())
    # the step computations are floats of mpmath at its precision: any step is valid, the
    # bound uses them exactly (the steps are rounded to dyadic arbs below)
    az = min(dF / fa1, dG / abs(fsl) if fsl != 0 else mpf(3), mpf(3))
    kf = KF(abs(fB1) + fa1)
    kg = KG(abs(fB2) + abs(fsl) + ftau)
    Mz = R.ctx.exp(az * az / 2) * kf * kg
    hz = R._trap_step(az, Mz, target / 4)
    eps = target / (8 * (1 + kf))
    aw = min(dG / ftau, mpf(3))
    ew = R.ctx.exp(aw * aw / 2)
    Lt = max(12, int(R.ctx.ceil(R.ctx.sqrt(2 * (DPS + 15 + 4) * R.ctx.log(10)))) + 1)
    nz = int(R.ctx.ceil(Lt / hz))
    Mw_max = ew * KG(abs(fsl) * Lt + abs(fB2) + ftau)
    hw_min = R._trap_step(aw, Mw_max, eps)
    if (2 * nz + 1) * (2 * int(R.ctx.ceil(Lt / hw_min)) + 1) > TRAP_MAX:
        return None
    tail = 8 * R._phi(mpf(Lt)) * (1 + Lt) ** 2
    name2, d2 = at2[1], at2[2]
    hzb = _arb(mpf(hz))
    cache = {}
    total = arb(0)
    for k in range(-nz, nz + 1):
        z = hzb * k
        mu = slope * z + B2
        Mw = ew * KG(abs(mpf(mu.mid())) + float(tau.mid()))
        key = int(R.ctx.ceil(R.ctx.log(Mw, 2)))
        if key not in cache:
            hw = _arb(mpf(R._trap_step(aw, mpf(2) ** key, eps)))
            nw = int(R.ctx.ceil(Lt / mpf(hw.mid())))
            ws = [hw * j for j in range(-nw, nw + 1)]
            pw = [_npdf(w) for w in ws]
            if name2 == "tanh":
                aux = [(tau * w).tanh() for w in ws]
            else:
                aux = [(-(tau * w)).exp() for w in ws]
            cache[key] = (hw, ws, pw, aux)
        hw, ws, pw, aux = cache[key]
        if name2 == "tanh":
            T = mu.tanh()
            if d2 == 0:
                g = sum(p * (T + t) / (1 + T * t) for p, t in zip(pw, aux))
            else:
                g = sum(p * (1 - ((T + t) / (1 + T * t)) ** 2) for p, t in zip(pw, aux))
        else:
            em = (-mu).exp()
            if d2 == 0:
                g = sum(p * (mu + tau * w) / (1 + em * e) for p, w, e in zip(pw, ws, aux))
            else:
                g = 0
                for p, w, e in zip(pw, ws, aux):
                    sg = 1 / (1 + em * e)
                    g += p * (sg + (mu + tau * w) * sg * (1 - sg))
        total += _npdf(z) * _num_eval(at1[1], at1[2], a1 * z + B1) * hw * g
    val = hzb * total
    bound = target / 4 + 2 * kf * eps + tail * (kf * kg + 1) * 4
    return val + arb(0, float(bound) * 1.01)


def _nested_acb(at1, a1, B1, at2, slope, B2, tau, tau2, target):
    """∫φ(z)F(a₁z + B₁) ∫φ(w)G(μ(z) + τw) dw dz by acb.integral in both variables on
    [−L, L]² (L with φ(L)(1 + L)² below the target), the tails bounded with the strip bounds
    of _ref._num_strip: for |Im μ| <= δ_G, |G(μ + τw)| <= K_G(|Re μ| + τ|w|) (K_G affine), so
    the inner tail is at most 2·2φ(L)(1 + L)K_G(|Re μ| + τ) (L >= 2, E-style bound of
    ``_tail`` with k = 1); for |Im μ| > δ_G the inner value is returned as non-finite (the
    outer integrator then subdivides)."""
    dG, KG = R._num_strip(at2)
    dGf = float(dG)
    dF, KF = R._num_strip(at1)
    L = 8.0
    while 2 * 2 * math.exp(-L * L / 2) / math.sqrt(2 * math.pi) * (1 + L) ** 2 * \
            (1 + abs(float(B1.mid())) + float(a1.mid())) * \
            (1 + abs(float(B2.mid())) + abs(float(slope.mid())) + float(tau.mid()) + 2) * \
            (1 + L) > float(target) / 8:
        L += 1.0
    Lb = arb(L)
    phiL = float(math.exp(-L * L / 2) / math.sqrt(2 * math.pi))
    eps = arb(float(target) / 16)

    def inner(mu):
        im = abs(mu.imag)
        if not (im.upper() < dGf):     # outside the strip: no bound
            return acb("nan")
        w0 = -float(mu.real.mid()) / float(tau.mid())
        pts = [-L] + ([w0] if -L < w0 < L else []) + [L]

        def g(w, analytic):
            return (-(w * w) / 2).exp() * _num_eval(at2[1], at2[2], mu + tau * w)
        val = 0
        for lo, hi in zip(pts[:-1], pts[1:]):
            val += acb.integral(g, lo, hi, abs_tol=eps, rel_tol=eps, eval_limit=10 ** 6)
        val = val / (2 * arb.pi()).sqrt()
        re = float(abs(mu.real).upper())
        tb = 4 * phiL * (1 + L) * float(KG(R.ctx.mpf(re + float(tau.mid()) + 1)))
        return val + acb(arb(0, tb), arb(0, tb))

    def f(z, analytic):
        t = a1 * z + B1
        if analytic and not (abs(t.imag).upper() < float(dF)):
            return acb("nan")
        return (-(z * z) / 2).exp() * _num_eval(at1[1], at1[2], t) * inner(slope * z + B2)

    z1 = -float(B1.mid()) / float(a1.mid())
    pts = sorted(set([-L, L] + [p for p in (z1 + kk / float(a1.mid()) for kk in
                                              (-8, -2, 0, 2, 8)) if -L < p < L]))
    total = acb(0)
    for lo, hi in zip(pts[:-1], pts[1:]):
        total += acb.integral(f, lo, hi, abs_tol=eps, rel_tol=eps, eval_limit=10 ** 6)
    total = total.real / (2 * arb.pi()).sqrt()
    # outer tail: |F| <= K_F(|B₁| + a₁|z|), |inner| <= K_G(|B₂| + |slope||z| + τ) + its tail
    kf = float(KF(R.ctx.mpf(abs(float(B1.mid())) + float(a1.mid()))))
    kg = float(KG(R.ctx.mpf(abs(float(B2.mid())) + abs(float(slope.mid())) + float(tau.mid()))))
    otail = 2 * 2 * phiL * (1 + L) ** 2 * kf * (kg + 1)
    return total + arb(0, otail)


# ------------------------------------------------------------------------------ moments
def _geometry(w1, w2):
    w1 = [R.F(v) for v in w1]
    w2 = [R.F(v) for v in w2]
    n1 = sum(v * v for v in w1)
    n2 = sum(v * v for v in w2)
    c12 = sum(u * v for u, v in zip(w1, w2))
    return n1, n2, c12


def mean_ball(fn, w, b) -> arb:
    n2 = sum(R.F(v) ** 2 for v in w)
    t2 = _arb(n2)
    mu = _arb(R.F(b))
    if n2 == 0:
        return _eval_branch(fn, mu, 1 if R.F(b) > 0 else -1)
    if _has(fn, ("num",)):
        # E[G(b + |w|Z)] = ∫φ(z)G(|w|z + b)dz, a 1-D integral (G outside, 1 inside)
        one = [("poly", {0: 1})]
        return _pieces_integral(fn, t2.sqrt(), mu, one, arb(0), arb(0), arb(0), arb(0),
                                _eps(1), _transition_points(fn, float(t2.sqrt().mid()),
                                                            float(mu.mid()), one, 0, 0, 0))
    return _inner(fn, mu, t2.sqrt(), t2, 1)


def _eps(scale):
    return 10.0 ** (-(DPS + 5)) * max(scale, 1.0)


def pair_ball(fn1, w1, b1, fn2, w2, b2) -> arb:
    """E[F(w₁·x + b₁) G(w₂·x + b₂)] as a rigorous ball (for the atoms as given)."""
    n1, n2, c12 = _geometry(w1, w2)
    b1, b2 = R.F(b1), R.F(b2)
    if n1 == 0 and n2 == 0:
        return _eval_branch(fn1, _arb(b1), 1 if b1 > 0 else -1) * \
            _eval_branch(fn2, _arb(b2), 1 if b2 > 0 else -1)
    if n1 == 0:
        return _eval_branch(fn1, _arb(b1), 1 if b1 > 0 else -1) * mean_ball(fn2, w2, b2)
    if n2 == 0:
        return _eval_branch(fn2, _arb(b2), 1 if b2 > 0 else -1) * mean_ball(fn1, w1, b1)
    if _has(fn2, ("num",)) and not _has(fn1, ("num",)):
        return pair_ball(fn2, w2, b2, fn1, w1, b1)
    a1 = _arb(n1).sqrt()
    slope = _arb(c12) / a1
    tau2q = (n1 * n2 - c12 * c12) / n1
    tau2 = _arb(tau2q)
    tau = tau2.sqrt()
    B1, B2 = _arb(b1), _arb(b2)
    if tau2q > 0 and _has(fn1, ("num",)) and _has(fn2, ("num",)):
        if n2 > n1:
            return pair_ball(fn2, w2, b2, fn1, w1, b1)
        target = R.ctx.mpf(10) ** (-(DPS + 4))
        out = _nested_trapezoid(fn1[0], a1, B1, fn2[0], slope, B2, tau, target)
        if out is not None:
            STATS["nested trapezoid"] = STATS.get("nested trapezoid", 0) + 1
            return out
        STATS["nested acb.integral"] = STATS.get("nested acb.integral", 0) + 1
        return _nested_acb(fn1[0], a1, B1, fn2[0], slope, B2, tau, tau2, target)
    if all(at[0] == "poly" for at in fn1 + fn2):
        return _poly_pair(fn1, a1, B1, fn2, slope, B2, tau2)
    fa1, fsl, ftau = float(a1.mid()), float(slope.mid()), float(tau.mid())
    extra = _transition_points(fn1, fa1, float(B1.mid()), fn2, fsl, float(B2.mid()), ftau)
    return _pieces_integral(fn1, a1, B1, fn2, slope, B2, tau, tau2, _eps(1), extra)


def _poly_pair(fn1, a1, B1, fn2, slope, B2, tau2):
    """Exact Gaussian moments of the product polynomial (in Arb)."""
    def poly_in_z(fn, sl, sh, t2):
        out = [arb(0)]
        for at in fn:
            for n, c in at[1].items():
                if t2 is None:
                    terms = [(n, _arb(c))]
                else:
                    terms = [(n - j, _arb(c) * math.comb(n, j) * t2 ** (j // 2) * R._wmom(j))
                             for j in range(0, n + 1, 2)]
                for k, cc in terms:
                    pk = [arb(1)]
                    for _ in range(k):
                        nxt = [arb(0)] * (len(pk) + 1)
                        for i, v in enumerate(pk):
                            nxt[i] += v * sh
                            nxt[i + 1] += v * sl
                        pk = nxt
                    if len(pk) > len(out):
                        out += [arb(0)] * (len(pk) - len(out))
                    for i, v in enumerate(pk):
                        out[i] += cc * v
        return out
    p = poly_in_z(fn1, a1, B1, None)
    q = poly_in_z(fn2, slope, B2, tau2)
    s = arb(0)
    for i, x in enumerate(p):
        for j, y in enumerate(q):
            s += x * y * R._wmom(i + j)
    return s


# ------------------------------------------------------------------------------ install
#: the radius of the last value returned by :func:`pair` or :func:`mean` (a float, rounded up,
#: including the conversion of the midpoint to an mpf of _ref's working precision)
LAST_RAD = 0.0


def _out(r, what):
    global LAST_RAD
    _note(r, what)
    v = _to_mpf(r)
    LAST_RAD = (float(r.rad()) + abs(float(v)) * 10.0 ** (-(R.ctx.dps - 1))) * 1.001
    return v


def mean(fn, w, b):
    return _out(mean_ball(fn, w, b), "mean")


def pair(fn1, w1, b1, fn2, w2, b2):
    return _out(pair_ball(fn1, w1, b1, fn2, w2, b2), "pair")


@contextlib.contextmanager
def installed(dps: int):
    """Within the block, _ref.pair and _ref.mean are this module's (moments good to about
    10^−(dps+3) of max(|value|, 1)); python-flint's precision is restored afterwards."""
    global DPS
    old = (R.pair, R.mean, fctx.prec, DPS)
    DPS = dps
    STATS.clear()
    fctx.prec = int((dps + 15) * 3.33) + 40
    R.pair, R.mean = pair, mean
    try:
        yield STATS
    finally:
        R.pair, R.mean, fctx.prec, DPS = old


# ------------------------------------------------------------------------------ SwiGLU moments
def _sg_fun(B):
    """The Arb version of a function of data/_precompute/swiglu_gated_refs.py (by identity)."""
    import swiglu_gated_refs as SG
    if B is SG.silu:
        return lambda t: t / (1 + (-t).exp())
    if B is SG.GATES["id"][0] or B is SG.GATES["relu"][0]:
        return lambda t: t
    if B is SG.GATES["gelu"][0]:
        return lambda t: t * _ncdf(t)
    if B is SG._tanh:
        return lambda t: t.tanh()
    raise ValueError(f"no Arb version of {B!r}")


def sg_moment(g, w, B, forms, kink=False, hfac=1.0):
    """swiglu_gated_refs.moment (its docstring: the frame, the Isserlis residuals, the rules)
    evaluated in Arb: the same trapezoidal rules with the same steps for the same digits, and
    acb.integral (rigorous) where that module uses mpmath's tanh–sinh quadrature (the 1-D
    moments without B, and the z₁ integral of the relu gate on [0, L]).  The trapezoid's error
    is that module's (its step is set for its digits; no bound is stated), so these values are
    numerical like the mpmath ones; the soak's re-check compares the two."""
    import swiglu_gated_refs as SG
    mpm = SG.mp
    g = [float(t) for t in g]
    G = [Fraction(t) for t in g]
    ng2 = sum(x * x for x in G)
    if ng2 == 0:
        return mpm.mpf(0)
    gv = [_arb(x) for x in G]
    fv = [[_arb(Fraction(float(t))) for t in l] for l in forms]
    dot = lambda x, y: sum((a * b for a, b in zip(x, y)), arb(0))       # noqa: E731
    Lz = math.sqrt(2 * (mpm.mp.dps + 12) * math.log(10)) + 1
    silu = _sg_fun(SG.silu)
    sq2pi = (2 * arb.pi()).sqrt()

    def iss(avals, C):
        k = len(avals)
        if k == 1:
            return avals[0]
        if k == 2:
            return avals[0] * avals[1] + C[0][1]
        if k == 3:
            a1, a2, a3 = avals
            return a1 * a2 * a3 + a1 * C[1][2] + a2 * C[0][2] + a3 * C[0][1]
        if k == 0:
            return 1
        raise ValueError("at most three forms")
    eps = arb(10.0 ** (-(mpm.mp.dps + 3)))
    if B is None:
        ng = _arb(ng2).sqrt()
        e1 = [t / ng for t in gv]
        la = [dot(l, e1) for l in fv]
        res = [[lk - a * e for lk, e in zip(l, e1)] for l, a in zip(fv, la)]
        C = [[dot(r1, r2) for r2 in res] for r1 in res]

        def f(z, analytic):
            return (-(z * z) / 2).exp() * silu(ng * z) * iss([a * z for a in la], C)
        val = acb.integral(f, -Lz, 0, abs_tol=eps, rel_tol=eps) + \
            acb.integral(f, 0, Lz, abs_tol=eps, rel_tol=eps)
        return mpm.mpf((val.real / sq2pi).mid())
    W = [Fraction(float(t)) for t in w]
    nw2 = sum(x * x for x in W)
    if nw2 == 0:
        return mpm.mpf(0)
    nw = _arb(nw2).sqrt()
    wv = [_arb(x) for x in W]
    e1 = [t / nw for t in wv]
    ga = dot(gv, e1)
    if SG._parallel(g, w):
        s, e2 = arb(0), None
    else:
        gw = sum(a * b for a, b in zip(G, W))
        s2 = ng2 - gw * gw / nw2
        s = _arb(s2).sqrt()
        e2 = [(a - ga * e) / s for a, e in zip(gv, e1)]
    la = [dot(l, e1) for l in fv]
    lb = [dot(l, e2) if e2 is not None else arb(0) for l in fv]
    res = [[lk - a * x - (b * y if e2 is not None else 0) for lk, x, y in
            zip(l, e1, e2 if e2 is not None else e1)] for l, a, b in zip(fv, la, lb)]
    C = [[dot(r1, r2) for r2 in res] for r1 in res]
    Bf = _sg_fun(B)
    if e2 is None:
        def inner(z1):
            return silu(ga * z1) * iss([a * z1 for a in la], C)
    else:
        fs = mpm.mpf(s.mid())
        a_str = min(0.9 * mpm.pi / fs, mpm.mpf(4))
        h = hfac * 2 * mpm.pi * a_str / (mpm.mpf(mpm.mp.dps) * mpm.log(10) + a_str ** 2 / 2 + 12)
        K = int(mpm.ceil(mpm.mpf("13.5") / h))
        hb = _arb(mpm.mpf(h))
        nodes = [hb * k for k in range(-K, K + 1)]
        wts = [hb * (-(z * z) / 2).exp() / sq2pi for z in nodes]
        sz = [s * z for z in nodes]
        lbz = [[b * z for b in lb] for z in nodes]

        def inner(z1):
            acc = 0
            gz = ga * z1
            laz = [a * z1 for a in la]
            for wt, szk, lbk in zip(wts, sz, lbz):
                acc += wt * silu(gz + szk) * iss([x + y for x, y in zip(laz, lbk)], C)
            return acc

    def f(z1):
        return (-(z1 * z1) / 2).exp() / sq2pi * Bf(nw * z1) * inner(z1)
    if kink:
        val = acb.integral(lambda z, analytic: f(z), 0, Lz, abs_tol=eps, rel_tol=eps)
        return mpm.mpf(val.real.mid())
    fga = abs(float(ga.mid()))
    a1 = min(0.9 * mpm.pi / fga if fga != 0 else mpm.mpf(4),
             0.9 * SG.STRIP.get(B, 4) / mpm.mpf(nw.mid()), mpm.mpf(4))
    h1 = hfac * 2 * mpm.pi * a1 / (mpm.mpf(mpm.mp.dps) * mpm.log(10) + a1 ** 2 / 2 + 12)
    K1 = int(mpm.ceil(mpm.mpf("13.5") / h1))
    h1b = _arb(mpm.mpf(h1))
    tot = sum((f(h1b * k) for k in range(-K1, K1 + 1)), arb(0))
    return mpm.mpf((h1b * tot).mid())


@contextlib.contextmanager
def swiglu_installed(dps: int):
    """Within the block, swiglu_gated_refs.moment is :func:`sg_moment` (at dps digits)."""
    import swiglu_gated_refs as SG
    old = (SG.moment, fctx.prec)
    fctx.prec = int((dps + 10) * 3.33) + 40
    SG.moment = sg_moment
    try:
        yield {}
    finally:
        SG.moment, fctx.prec = old
