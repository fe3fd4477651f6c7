"""Independent high-precision reference for the population loss and gradient (pure mpmath).

This module is the *reference* the fast engine is tested against, so it deliberately shares no
code and no method with ``popdyn``: it does not import it, it uses no Hermite / Mehler series and
no bivariate-normal closed forms.  Everything is computed from first principles as Gaussian
integrals of pairs of ridge functions, at high precision.

Model (docs/design.md §2).  x ~ N(0, I_d).  Student f(x) = s Σ_j a_j σ(w_j·x + b_j) + c with s = 1
("standard") or 1/m ("mean_field").  Teacher y either additive, y = Σ_k κ_k g(u_k·x), or a
network, y = Σ_k v_k σ*(u_k·x + b*_k).  L = ½ E[(f − y)²].  Gradient:

    ∂L/∂a_j = s E[r σ_j],  ∂L/∂b_j = s a_j E[r σ'_j],  ∂L/∂w_j = s a_j E[r σ'_j x],  ∂L/∂c = E[r],

with r = f − y, σ_j = σ(w_j·x + b_j).  Also E[y] and Var(y).

Method.  Write r = Σ_i λ_i φ_i(w_i·x + b_i) + c over all "units" (student neurons with
λ = s a_j, teacher units with λ = −κ_k or −v_k, additive teacher units having w = u_k, b = 0).
Every quantity is a sum of

    E[F(w_O·x + b_O) G(w_I·x + b_I) · {1, x}],

a Gaussian integral over the (at most) 2-D plane span(w_O, w_I).  In the orthonormal basis
e1 = w_O/|w_O|, e2 = (w_I − (w_I·w_O/|w_O|²) w_O)/q, with z1 = e1·x, z2 = e2·x independent
standard normals,  w_O·x = α z1  and  w_I·x = p z1 + q z2.  Components of x orthogonal to the
plane are independent of the integrand and have mean 0, so

    E[F G x] = e1 E[F G z1] + e2 E[F G z2].

The inner integral over z2 is done first:
    M_G(μ, τ) = E[G(μ + τZ)],   N_G(μ, τ) = E[G(μ + τZ) Z]    (μ = p z1 + b_I, τ = q),
by textbook 1-D Gaussian closed forms where they exist (piecewise-linear functions, polynomials
via the normal-moment recurrence, polynomial × Gaussian by completing the square, Φ, tΦ(t), erf,
sin; each one is checked against mpmath.quad in tests/test_mpref_selfcheck.py).  The remaining
smooth functions (tanh, SiLU and their derivatives: "hard") are smoothed by a trapezoidal rule
on a fixed lattice in the argument s = μ + τZ, with the step chosen from their strip of
analyticity so that the error is below the working precision (see _HardLattice; checked against
mpmath.quad).  The orientation (which unit is outer) is chosen so that the inner function has a
closed form whenever one of the two has.  The outer integral over z1 (weight φ(z1)) is done by a
vector-valued tanh–sinh quadrature (own implementation, nested levels, convergence test per
component) on [−Z, Z], Z = sqrt(2 ln 10 (working dps + 5)) + 2 (the Gaussian tail is far below
the working precision; integrands grow at most polynomially), split at every kink / transition
point of F (z1 = (t0 − b_O)/α) and of G (z1 = (t0 − b_I)/p).  Degenerate geometry is exact, not
approximate:
  * the plane quantities |w_O|², w_I·w_O, the Gram determinant and the orthogonal residual vector
    are computed in exact rational arithmetic (the inputs are float64 numbers, i.e. dyadic
    rationals), so q = 0 exactly for (anti)parallel or duplicated neurons (then the integral is
    1-D, G(p z1 + b_I)), and a correlation within 1e−24 of ±1 keeps its full relative precision;
  * w = 0 gives a 1-D (or 0-D) integral with the constant F(b).
Derivative convention: relu'(0) = 0 (step(0) = 0); leaky_relu'(0) = s (the same convention
applied to (1 − s)·relu + s·t).  The coefficient 0.3 in 'h3+0.3h2' is the exact decimal 3/10; the
parameter a in 'damped_cubic:a' is float(a) (use exactly representable values).

Precision.  All inputs are converted to exact rationals (floats exactly), the computation runs at
dps + 10 decimal digits, quadratures are converged to ~10^-dps relative to the L1 norm of the
integrand; results are reported with 30 significant digits, and outputs below 10^-dps times the
largest output of the case (rounding noise of exact zeros) are reported as "0".  An unconverged
quadrature raises QuadratureError.  data/_precompute/engine_refs.py verifies a subset at
dps = 60.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction

import mpmath
from mpmath import mp, mpf

__all__ = [
    "reference",
    "compute",
    "activation_fns",
    "link_fn",
    "gauss_MN",
    "plane_expect",
    "one_d_expect",
    "DIGITS",
]

DIGITS = 30  # significant digits reported


# ----------------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------------

def to_frac(x) -> Fraction:
    """Exact rational value of a float / int / mpf / decimal string / Fraction."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise TypeError("bool is not a number here")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError("non-finite input")
        return Fraction(x)
    if isinstance(x, str):
        return Fraction(x)
    if isinstance(x, mpmath.mpf):
        man, exp = x.man_exp
        return Fraction(int(man)) * (Fraction(2) ** int(exp))
    raise TypeError(f"cannot convert {type(x)} to an exact rational")


def fmpf(fr: Fraction):
    """mpf of an exact rational (exact when it is dyadic and fits, rounded otherwise)."""
    if fr.denominator == 1:
        return mpf(fr.numerator)
    return mpf(fr.numerator) / mpf(fr.denominator)


_CONST_CACHE: dict = {}


def _consts():
    """(1/sqrt(2π), 1/sqrt(2), 2/sqrt(π)) at the current precision."""
    key = mp.prec
    c = _CONST_CACHE.get(key)
    if c is None:
        c = (1 / mp.sqrt(2 * mp.pi), 1 / mp.sqrt(2), 2 / mp.sqrt(mp.pi))
        _CONST_CACHE[key] = c
    return c


_PHI_MEMO: dict = {}


def _phi(x):
    key = (0, mp.prec, x)
    v = _PHI_MEMO.get(key)
    if v is None:
        if len(_PHI_MEMO) > 256:
            _PHI_MEMO.clear()
        v = _PHI_MEMO[key] = mp.exp(-x * x / 2) * _consts()[0]
    return v


def _Phi(x):
    # Φ(x) = erfc(−x/√2)/2, accurate in both tails (memoised: the same argument recurs in the
    # M and N of relu / step at one quadrature node)
    key = (1, mp.prec, x)
    v = _PHI_MEMO.get(key)
    if v is None:
        if len(_PHI_MEMO) > 256:
            _PHI_MEMO.clear()
        v = _PHI_MEMO[key] = mp.erfc(-x * _consts()[1]) / 2
    return v


def _gauss_moment(k: int):
    """E[Z^k] for a standard normal Z."""
    if k % 2:
        return 0
    r = 1
    for i in range(k - 1, 0, -2):
        r *= i
    return r


# polynomials are lists of coefficients (lowest degree first)

def _num(c):
    """mpf of a coefficient given as a callable, Fraction, int, float or mpf."""
    if callable(c):
        return c()
    if isinstance(c, Fraction):
        return fmpf(c)
    return mpf(c)


def _peval(p, t):
    r = mpf(0)
    for coef in reversed(p):
        r = r * t + coef
    return r


# ----------------------------------------------------------------------------------------------
# atoms: scalar functions with (optionally) closed-form Gaussian expectations
#   M(μ, τ) = E[g(μ + τZ)],  N(μ, τ) = E[g(μ + τZ) Z]     (τ > 0)
# ----------------------------------------------------------------------------------------------

class Atom:
    closed = True
    features = (0,)  # points t where the function has a kink or a transition (quadrature splits)

    def value(self, t):  # pragma: no cover - abstract
        raise NotImplementedError

    def M(self, mu, tau):  # pragma: no cover - abstract
        raise NotImplementedError

    def N(self, mu, tau):  # pragma: no cover - abstract
        raise NotImplementedError

    def MN(self, mu, tau):
        return self.M(mu, tau), self.N(mu, tau)


class Relu(Atom):
    def value(self, t):
        return t if t > 0 else mpf(0)

    def M(self, mu, tau):
        h = mu / tau
        return mu * _Phi(h) + tau * _phi(h)

    def N(self, mu, tau):
        return tau * _Phi(mu / tau)


class Step(Atom):
    """1{t > 0} (value 0 at t = 0)."""

    def value(self, t):
        return mpf(1) if t > 0 else mpf(0)

    def M(self, mu, tau):
        return _Phi(mu / tau)

    def N(self, mu, tau):
        return _phi(mu / tau)


def _normal_moments(mu, tau, n):
    """[E[X^k] for k = 0..n], X ~ N(μ, τ²): E[X^{k+1}] = μ E[X^k] + k τ² E[X^{k−1}]."""
    m = [mpf(1), mu]
    t2 = tau * tau
    for k in range(1, n):
        m.append(mu * m[k] + k * t2 * m[k - 1])
    return m[: n + 1]


def _poly_MN(cs, mu, tau):
    """(E[p(X)], E[p(X) Z]) for X = μ + τZ: E[X^k Z] = k τ E[X^{k−1}] (Gaussian integration by
    parts)."""
    mom = _normal_moments(mu, tau, len(cs))
    M = mpf(0)
    N = mpf(0)
    for k, c in enumerate(cs):
        if c:
            M += c * mom[k]
            if k:
                N += c * k * mom[k - 1]
    return M, N * tau


class Poly(Atom):
    features = ()

    def __init__(self, coeffs):
        self.coeffs = list(coeffs)  # callables or numbers; materialised per precision
        self._cc = {}

    def _c(self):
        cs = self._cc.get(mp.prec)
        if cs is None:
            cs = self._cc[mp.prec] = [_num(c) for c in self.coeffs]
        return cs

    def value(self, t):
        return _peval(self._c(), t)

    def M(self, mu, tau):
        return _poly_MN(self._c(), mu, tau)[0]

    def N(self, mu, tau):
        return _poly_MN(self._c(), mu, tau)[1]

    def MN(self, mu, tau):
        return _poly_MN(self._c(), mu, tau)


class GaussPoly(Atom):
    """p(t) · exp(−γ t²).  Completing the square,
    E[p(μ+τZ) e^{−γ(μ+τZ)²} Z^j] = K · E[p(μ + τ(m + sY)) (m + sY)^j] with A = 1 + 2γτ²,
    K = exp(−γμ²/A)/√A, m = −2γμτ/A, s = 1/√A, Y standard normal."""

    def __init__(self, coeffs, gamma):
        self.coeffs = list(coeffs)
        self.gamma = gamma
        self._cc = {}

    def _c(self):
        cs = self._cc.get(mp.prec)
        if cs is None:
            cs = self._cc[mp.prec] = ([_num(c) for c in self.coeffs], _num(self.gamma))
        return cs

    def value(self, t):
        cs, g = self._c()
        return _peval(cs, t) * mp.exp(-g * t * t)

    def MN(self, mu, tau):
        cs, g = self._c()
        A = 1 + 2 * g * tau * tau
        sA = mp.sqrt(A)
        K = mp.exp(-g * mu * mu / A) / sA
        m = -2 * g * mu * tau / A
        s = 1 / sA
        # X = μ + τ m + τ s Y
        M0, NY = _poly_MN(cs, mu + tau * m, tau * s)  # E[p(X)], E[p(X) Y]
        return K * M0, K * (m * M0 + s * NY)

    def M(self, mu, tau):
        return self.MN(mu, tau)[0]

    def N(self, mu, tau):
        return self.MN(mu, tau)[1]


class PhiAtom(Atom):
    """Φ(t)."""

    def value(self, t):
        return _Phi(t)

    def M(self, mu, tau):
        S = mp.sqrt(1 + tau * tau)
        return _Phi(mu / S)

    def N(self, mu, tau):
        S = mp.sqrt(1 + tau * tau)
        return tau * _phi(mu / S) / S


class TPhi(Atom):
    """t Φ(t) (exact GELU)."""

    def value(self, t):
        return t * _Phi(t)

    def M(self, mu, tau):
        S = mp.sqrt(1 + tau * tau)
        return mu * _Phi(mu / S) + tau * tau * _phi(mu / S) / S

    def N(self, mu, tau):
        S = mp.sqrt(1 + tau * tau)
        return tau * _Phi(mu / S) + mu * tau * _phi(mu / S) / S ** 3


class Erf(Atom):
    def value(self, t):
        return mp.erf(t)

    def M(self, mu, tau):
        A = 1 + 2 * tau * tau
        return mp.erf(mu / mp.sqrt(A))

    def N(self, mu, tau):
        A = 1 + 2 * tau * tau
        return tau * 2 / mp.sqrt(mp.pi) * mp.exp(-mu * mu / A) / mp.sqrt(A)


class Sin(Atom):
    features = ()

    def value(self, t):
        return mp.sin(t)

    def M(self, mu, tau):
        return mp.sin(mu) * mp.exp(-tau * tau / 2)

    def N(self, mu, tau):
        return tau * mp.cos(mu) * mp.exp(-tau * tau / 2)


class Hard(Atom):
    """A smooth function without a closed-form Gaussian expectation (nested quadrature).

    ``strip``: it is analytic in |Im t| < strip; ``bound(X)``: an upper bound of |g(x + i y)| for
    |y| ≤ 0.75·strip and |x| ≤ X (used to choose the trapezoidal step of the lattice rule)."""

    closed = False

    def __init__(self, name, fn, strip, bound):
        self.name = name
        self.fn = fn
        self.strip = strip
        self.bound = bound

    def value(self, t):
        return self.fn(t)


def _sig(t):
    return 1 / (1 + mp.exp(-t))


def _silu(t):
    return t * _sig(t)


def _dsilu(t):
    s = _sig(t)
    return s + t * s * _sig(-t)


def _tanh(t):
    return mp.tanh(t)


def _dtanh(t):
    return 1 / mp.cosh(t) ** 2


RELU, STEP, PHI, TPHI, ERF, SIN = Relu(), Step(), PhiAtom(), TPhi(), Erf(), Sin()
# tanh: poles at iπ(k + 1/2); on |Im t| ≤ 0.75·π/2, |tanh| ≤ 1/cos(0.375π) < 2.62, |sech²| < 7.9.
# silu, silu': sigmoid has poles at iπ(2k + 1); on |Im t| ≤ 0.75π, |sigmoid| ≤ 1/sin(0.25π) < 1.42.
TANH = Hard("tanh", _tanh, math.pi / 2, lambda X: 2.62)
DTANH = Hard("dtanh", _dtanh, math.pi / 2, lambda X: 7.9)
SILU = Hard("silu", _silu, math.pi, lambda X: 1.42 * (X + 3))
DSILU = Hard("dsilu", _dsilu, math.pi, lambda X: 1.42 * (1 + 1.42 * (X + 3)))
ONE = Poly([1])
IDENT = Poly([0, 1])


class Fn:
    """A finite linear combination Σ coef·atom (coefficients may be callables returning mpf, so
    that they are materialised at the current precision; cached per precision)."""

    def __init__(self, terms, name=""):
        self.terms = [(c, a) for c, a in terms]
        self.name = name
        self._cc = {}

    def coefs(self):
        key = mp.prec
        cs = self._cc.get(key)
        if cs is None:
            cs = [_num(c) for c, _ in self.terms]
            self._cc[key] = cs
        return cs

    @property
    def closed(self):
        return all(a.closed for _, a in self.terms)

    @property
    def features(self):
        out = set()
        for _, a in self.terms:
            out.update(a.features)
        return sorted(out)

    @property
    def closed_features(self):
        out = set()
        for _, a in self.terms:
            if a.closed:
                out.update(a.features)
        return sorted(out)

    def value(self, t):
        r = mpf(0)
        for c, (_, a) in zip(self.coefs(), self.terms):
            r += c * a.value(t)
        return r

    def closed_part_MN(self, mu, tau):
        M = mpf(0)
        N = mpf(0)
        for c, (_, a) in zip(self.coefs(), self.terms):
            if a.closed:
                m_, n_ = a.MN(mu, tau)
                M += c * m_
                N += c * n_
        return M, N

    def hard_value(self, t):
        r = mpf(0)
        for c, (_, a) in zip(self.coefs(), self.terms):
            if not a.closed:
                r += c * a.value(t)
        return r

    @property
    def has_hard(self):
        return any(not a.closed for _, a in self.terms)


def _const(v):
    """Coefficient callable for a rational / float constant."""
    fr = to_frac(v) if not callable(v) else None
    if fr is None:
        return v
    return lambda: fmpf(fr)


def activation_fns(name: str, negative_slope=None):
    """(σ, σ') as Fn objects for a student / teacher-network activation name."""
    if name == "relu":
        return Fn([(1, RELU)], "relu"), Fn([(1, STEP)], "relu'")
    if name == "leaky_relu":
        if negative_slope is None:
            raise ValueError("leaky_relu needs negative_slope")
        s = to_frac(negative_slope)
        one_m = _const(1 - s)
        sc = _const(s)
        return (Fn([(one_m, RELU), (sc, IDENT)], "leaky_relu"),
                Fn([(one_m, STEP), (sc, ONE)], "leaky_relu'"))
    if name == "silu":
        return Fn([(1, SILU)], "silu"), Fn([(1, DSILU)], "silu'")
    if name == "gelu":
        inv_sqrt2pi = lambda: 1 / mp.sqrt(2 * mp.pi)  # noqa: E731
        return (Fn([(1, TPHI)], "gelu"),
                Fn([(1, PHI), (inv_sqrt2pi, GaussPoly([0, 1], Fraction(1, 2)))], "gelu'"))
    if name == "tanh":
        return Fn([(1, TANH)], "tanh"), Fn([(1, DTANH)], "tanh'")
    if name == "erf":
        two_over_sqrtpi = lambda: 2 / mp.sqrt(mp.pi)  # noqa: E731
        return Fn([(1, ERF)], "erf"), Fn([(two_over_sqrtpi, GaussPoly([1], 1))], "erf'")
    raise ValueError(f"unknown activation {name!r}")


def _hermite_int(k: int):
    """Integer coefficients of the probabilists' Hermite polynomial He_k."""
    p0, p1 = [1], [0, 1]
    if k == 0:
        return p0
    for n in range(1, k):
        # He_{n+1} = t He_n − n He_{n−1}
        nxt = [0] + p1
        for i, c in enumerate(p0):
            nxt[i] -= n * c
        p0, p1 = p1, nxt
    return p1


def _hk_coeffs(k: int, weight=Fraction(1)):
    ints = _hermite_int(k)
    fk = math.factorial(k)
    return [(lambda c=c: fmpf(weight * c) / mp.sqrt(fk)) for c in ints]


_SILU_MEAN_CACHE: dict = {}


def _silu_mean():
    key = mp.prec
    if key not in _SILU_MEAN_CACHE:
        Z = _zmax()
        val = _ts_integrate(lambda z: [_silu(z) * _phi(z)], [-Z, mpf(0), Z], 1)[0]
        _SILU_MEAN_CACHE[key] = val
    return _SILU_MEAN_CACHE[key]


def _single_link_terms(name: str, weight=Fraction(1)):
    wc = _const(weight)
    if name.startswith("h") and name[1:].isdigit():
        k = int(name[1:])
        return [(1, Poly(_hk_coeffs(k, weight)))]
    if name == "h3+0.3h2":
        c3 = _hermite_int(3)
        c2 = _hermite_int(2)
        f3, f2 = math.factorial(3), math.factorial(2)
        coeffs = []
        for i in range(4):
            a = c3[i] if i < len(c3) else 0
            b = c2[i] if i < len(c2) else 0
            coeffs.append(lambda a=a, b=b: fmpf(weight) * (
                a / mp.sqrt(f3) + fmpf(Fraction(3, 10)) * b / mp.sqrt(f2)))
        return [(1, Poly(coeffs))]
    if name == "relu":
        return [(wc, RELU)]
    if name == "tanh":
        return [(wc, TANH)]
    if name == "abs":
        return [(lambda: 2 * fmpf(to_frac(weight)), RELU), (lambda: -fmpf(to_frac(weight)), IDENT)]
    if name == "sin":
        return [(wc, SIN)]
    if name == "silu":
        return [(wc, SILU)]
    if name == "silu_centered":
        return [(wc, SILU), (lambda: -fmpf(to_frac(weight)) * _silu_mean(), ONE)]
    if name == "gaussian_bump":
        return [(wc, GaussPoly([1], Fraction(1, 2)))]
    if name.startswith("damped_cubic:"):
        a = to_frac(float(name.split(":", 1)[1]))
        if a <= 0:
            raise ValueError("damped_cubic needs a > 0")
        return [(wc, GaussPoly([0, 0, 0, 1], a / 2))]
    raise ValueError(f"unknown link {name!r}")


def link_fn(link) -> Fn:
    """Teacher link as an Fn: a name, or a positive mixture [[weight, name], ...]."""
    if isinstance(link, str):
        return Fn(_single_link_terms(link), link)
    terms = []
    for weight, name in link:
        wf = to_frac(weight)
        if wf < 0:
            raise ValueError("mixture weights must be positive")
        terms += _single_link_terms(name, wf)
    return Fn(terms, repr(link))


# ----------------------------------------------------------------------------------------------
# vector tanh–sinh quadrature
# ----------------------------------------------------------------------------------------------

_NODE_CACHE: dict = {}
_MAX_LEVEL = 12


def _zmax():
    """Truncation of the Gaussian integrals: e^{-Z^2/2} ≈ 10^-(dps+15) · e^{-2Z}: negligible
    against integrands of at most polynomial growth (working dps = target + 10)."""
    return mp.sqrt(2 * mp.log(10) * (mp.dps + 5)) + 2


def _level_nodes(level: int):
    """Tanh–sinh abscissae t ≥ 0 new at this level, as (δ, w) with δ = 1 − tanh(u),
    u = (π/2) sinh t, w = (π/2) cosh t / cosh² u.  Level 0: t = 0, 1, 2, ...;
    level k ≥ 1: odd multiples of 2^-k."""
    key = (mp.prec, level)
    if key in _NODE_CACHE:
        return _NODE_CACHE[key]
    eps = mpf(2) ** (-mp.prec - 40)
    h = mpf(2) ** (-level)
    out = []
    j = 0 if level == 0 else 1
    step = 1 if level == 0 else 2
    pi2 = mp.pi / 2
    while True:
        t = j * h
        u = pi2 * mp.sinh(t)
        e2u = mp.exp(2 * u)
        delta = 2 / (e2u + 1)
        w = pi2 * mp.cosh(t) * 4 * e2u / (e2u + 1) ** 2
        if w < eps and j > 0:
            break
        out.append((delta, w, j == 0))
        j += step
    _NODE_CACHE[key] = out
    return out


class QuadratureError(RuntimeError):
    pass


def _ts_interval(f, a, b, ncomp, tol_digits, abs_floor=None):
    """∫_a^b f for a vector-valued f (list of ncomp mpf), tanh–sinh with nested levels.

    Convergence test per component, relative to the L1 norm of that component (floored at
    10^-(tol+10) of the largest one): accept level k when the level difference d_k is below
    10^-tol, or, once in the asymptotic regime (d_{k-1} ≤ 1e-3 and d_k ≤ d_{k-1}², i.e. the
    digits at least double per level), when the standard extrapolation (Bailey–Borwein–
    Girgensohn, as in mpmath.quad) log10 err_k ≈ (log10 d_k)² / log10 d_{k-1} is below
    −(tol + 3)."""
    half = (b - a) / 2
    mid = (a + b) / 2
    R = [mpf(0)] * ncomp
    L1 = [mpf(0)] * ncomp
    prev = None
    prev_d = None
    tol_full = mpf(10) ** (-tol_digits)
    for level in range(_MAX_LEVEL + 1):
        for delta, w, is_zero in _level_nodes(level):
            if is_zero:
                xs = (mid,)
            else:
                hd = half * delta
                xs = (b - hd, a + hd)
            for x in xs:
                if not a < x < b:
                    # the node rounds onto an endpoint (weight below the working precision):
                    # never evaluate there, it may be the wrong side of a kink / jump
                    continue
                v = f(x)
                for c in range(ncomp):
                    vc = w * v[c]
                    R[c] += vc
                    L1[c] += abs(vc)
        hh = half * mpf(2) ** (-level)
        S = [hh * r for r in R]
        if prev is not None:
            Lmax = max(L1) * hh
            floor = Lmax * mpf(10) ** (-(tol_digits + 10))
            d = mpf(0)
            for c in range(ncomp):
                scale = max(hh * L1[c], floor)
                if abs_floor is not None:
                    scale = max(scale, abs_floor[c])
                if scale > 0:
                    d = max(d, abs(S[c] - prev[c]) / scale)
            ok = d <= tol_full
            if not ok and level >= 3 and prev_d is not None and 0 < d < prev_d <= mpf("1e-3"):
                D1 = mp.log10(d)
                D2 = mp.log10(prev_d)
                # only in the asymptotic regime: at least quadratic convergence observed
                ok = D1 <= 2 * D2 and D1 * D1 / D2 <= -(tol_digits + 3)
            if ok:
                return S
            prev_d = d
        prev = S
    raise QuadratureError(f"tanh-sinh did not converge on [{mp.nstr(a, 8)}, {mp.nstr(b, 8)}]")


def _ts_integrate(f, pts, ncomp, tol_digits=None):
    """Σ over the intervals of pts.  A cheap pre-pass (level-0 nodes of every interval) estimates
    the L1 norm of each component over the whole range; it is a floor of the scale of the
    convergence test on every interval (so the error of each piece is ≤ 10^-tol of the L1 norm of
    the whole integrand, and an interval where the integrand is essentially zero, e.g. rounding
    noise next to a kink whose computed position is off by an ulp, need not converge in relative
    terms)."""
    if tol_digits is None:
        tol_digits = mp.dps - 10  # working dps = requested dps + 10
    ivals = [(a, b) for a, b in zip(pts[:-1], pts[1:]) if b > a]
    est = [mpf(0)] * ncomp
    for a, b in ivals:
        half = (b - a) / 2
        mid = (a + b) / 2
        for delta, w, is_zero in _level_nodes(0):
            xs = (mid,) if is_zero else (b - half * delta, a + half * delta)
            for x in xs:
                if not a < x < b:
                    continue
                v = f(x)
                for c in range(ncomp):
                    est[c] += half * w * abs(v[c])
    abs_floor = est
    out = [mpf(0)] * ncomp
    for a, b in ivals:
        S = _ts_interval(f, a, b, ncomp, tol_digits, abs_floor)
        for c in range(ncomp):
            out[c] += S[c]
    return out


def _breakpoints(extra):
    """Sorted split points in [−Z, Z]; points closer than 10^-(dps−5) are merged (they are one
    kink computed by two roundings; the dropped sliver contributes below the working precision)."""
    Z = _zmax()
    eps = mpf(10) ** (-(mp.dps - 5))
    pts = [-Z]
    for x in sorted(x for x in extra if -Z < x < Z):
        if x - pts[-1] > eps * max(1, abs(x)):
            pts.append(x)
    if Z - pts[-1] <= eps * Z:
        pts.pop()
    pts.append(Z)
    return pts


# ----------------------------------------------------------------------------------------------
# 1-D Gaussian expectations
# ----------------------------------------------------------------------------------------------

class _HardLattice:
    """Gaussian smoothing of the smooth ("hard") parts of several functions by the trapezoidal
    rule on a fixed lattice s_n = n h in the argument s = μ + τZ:

        E[g(μ + τZ)] = ∫ g(s) exp(−(s−μ)²/(2τ²)) ds / (τ√(2π)) ≈ h/(τ√(2π)) Σ_n g(s_n) E_n(μ).

    The integrand is analytic in the strip |Im s| < a (a ≤ 0.75 · the analyticity strip of g) with
    |integrand(s ± ia)| ≤ B·Gaussian·exp(a²/(2τ²)), so the trapezoidal error is
    ≤ 2B·exp(a²/(2τ²))/(exp(2πa/h) − 1); h is chosen to make this < 10^-(working dps + 5).  The
    lattice values g(s_n) are computed once per plane integral and reused for every outer node;
    the Gaussian weights E_n are generated from the lattice point nearest μ outward by exact
    multiplicative recurrences in fixed-point integer arithmetic (2^-(prec+64) units), all factors
    ≤ 1, so no exp per node.  The window is |s − μ| ≤ Z_k τ with exp(−Z_k²/2) < 10^-(dps+10)."""

    def __init__(self, fns, tau):
        self.fns = fns
        self.tau = tau = mpf(tau)
        strips = [a.strip for fn in fns for _, a in fn.terms if not a.closed]
        a_max = 0.75 * min(strips)
        self.P = mp.prec + 64
        self.Zk = mp.sqrt(2 * mp.log(10) * (mp.dps + 10))
        self.cache = {}
        self.bscale = None
        self._setup(a_max)

    def _setup(self, a_max, X=None):
        tau = self.tau
        B = 1.0
        for fn in self.fns:
            for c, (_, a) in zip(fn.coefs(), fn.terms):
                if not a.closed:
                    B += abs(float(c)) * a.bound(1e3 if X is None else X)
        C = mpf(math.log(2 * B)) + (mp.dps + 5) * mp.log(10)
        a = min(mpf(a_max), tau * mp.sqrt(2 * C))
        self.h = h = 2 * mp.pi * a / (C + a * a / (2 * tau * tau))
        self.K = int(mp.ceil(self.Zk * tau / h)) + 2
        P = self.P
        self.c_int = int(mp.ldexp(mp.exp(-h * h / (tau * tau)), P))
        self.norm = h / (tau * mp.sqrt(2 * mp.pi))

    def _g(self, n):
        v = self.cache.get(n)
        if v is None:
            s = n * self.h
            P = self.P
            v = [int(mp.ldexp(fn.hard_value(s), P)) for fn in self.fns]
            self.cache[n] = v
        return v

    def MN(self, mu):
        """[(M_hard, N_hard) for each fn] at μ."""
        h, tau, P = self.h, self.tau, self.P
        nc = int(mp.nint(mu / h))
        d0 = nc * h - mu  # |d0| ≤ h/2
        t2 = 2 * tau * tau
        E0 = int(mp.ldexp(mp.exp(-d0 * d0 / t2), P))
        r0 = int(mp.ldexp(mp.exp(-(2 * d0 * h + h * h) / t2), P))
        l0 = int(mp.ldexp(mp.exp((2 * d0 * h - h * h) / t2), P))
        c = self.c_int
        nf = len(self.fns)
        acc0 = [0] * nf
        acc1 = [0] * nf
        g = self._g
        # right: n = nc, nc+1, ...
        E, r = E0, r0
        for k in range(0, self.K + 1):
            gv = g(nc + k)
            for f in range(nf):
                t = gv[f] * E
                acc0[f] += t
                acc1[f] += k * t
            E = (E * r) >> P
            r = (r * c) >> P
            if E == 0:
                break
        # left: n = nc−1, nc−2, ...
        E, l = (E0 * l0) >> P, (l0 * c) >> P
        for k in range(1, self.K + 1):
            gv = g(nc - k)
            for f in range(nf):
                t = gv[f] * E
                acc0[f] += t
                acc1[f] -= k * t
            E = (E * l) >> P
            l = (l * c) >> P
            if E == 0:
                break
        out = []
        for f in range(nf):
            S0 = mp.ldexp(mpf(acc0[f]), -2 * P)
            S1 = mp.ldexp(mpf(acc1[f]), -2 * P)
            M = self.norm * S0
            # Z = (s_n − μ)/τ = ((n − nc) h + d0)/τ
            N = self.norm * (h * S1 + d0 * S0) / tau
            out.append((M, N))
        return out


def gauss_MN_multi(fns, mu, tau, lattice=None):
    """[(E[g(μ + τZ)], E[g(μ + τZ) Z]) for g in fns], τ ≥ 0: closed forms where available; the
    remaining smooth terms by the lattice rule (if given: it must hold exactly the functions of
    fns that have hard terms, in order) or else one shared tanh–sinh quadrature over Z."""
    if tau == 0:
        return [(g.value(mu), mpf(0)) for g in fns]
    out = [list(g.closed_part_MN(mu, tau)) for g in fns]
    hard = [i for i, g in enumerate(fns) if g.has_hard]
    if hard and lattice is not None:
        for i, (hM, hN) in zip(hard, lattice.MN(mu)):
            out[i][0] += hM
            out[i][1] += hN
    elif hard:
        feats = set()
        for i in hard:
            feats.update(fns[i].features)
        zs = [(mpf(t0) - mu) / tau for t0 in sorted(feats)]
        c0 = _consts()[0]
        hfns = [fns[i] for i in hard]

        def g(z):
            w = mp.exp(-z * z / 2) * c0
            t = mu + tau * z
            vals = []
            for fn in hfns:
                v = fn.hard_value(t) * w
                vals.append(v)
                vals.append(v * z)
            return vals

        res = _ts_integrate(g, _breakpoints(zs), 2 * len(hard))
        for n, i in enumerate(hard):
            out[i][0] += res[2 * n]
            out[i][1] += res[2 * n + 1]
    return [tuple(o) for o in out]


def gauss_MN(fn: Fn, mu, tau):
    """(E[fn(μ + τZ)], E[fn(μ + τZ) Z]) with τ ≥ 0."""
    return gauss_MN_multi([fn], mu, tau)[0]


def one_d_expect(fn: Fn, alpha, beta):
    """(E[fn(αZ + β)], E[fn(αZ + β) Z]) for α ≥ 0."""
    return gauss_MN(fn, beta, alpha)


# ----------------------------------------------------------------------------------------------
# plane expectations
# ----------------------------------------------------------------------------------------------

class Unit:
    """A ridge unit w·x + b with exact rational w, b and the list of functions applied to it."""

    def __init__(self, w_frac, b_frac, fns):
        self.wf = list(w_frac)
        self.bf = b_frac
        self.fns = list(fns)
        self.n2 = sum(x * x for x in self.wf)  # exact |w|²

    @property
    def zero(self):
        return self.n2 == 0

    def alpha(self):
        return mp.sqrt(fmpf(self.n2))

    def b(self):
        return fmpf(self.bf)

    def theta(self):
        al = self.alpha()
        return [fmpf(x) / al for x in self.wf]


_PAIR_MEMO = None  # a dict while pair_memo() is active


def _atom_key(a):
    """What determines an atom at the current precision: its class, and its materialised
    coefficients (Poly, GaussPoly) or its name (Hard); other atoms have no parameters."""
    if isinstance(a, GaussPoly):
        cs, g = a._c()
        return ("GaussPoly", tuple(cs), g)
    if isinstance(a, Poly):
        return ("Poly", tuple(a._c()))
    if isinstance(a, Hard):
        return ("Hard", a.name)
    return (type(a).__name__,)


def _unit_key(U: Unit):
    """The exact inputs of a unit: w and b as rationals and every function's materialised
    coefficients and atoms."""
    return (tuple(U.wf), U.bf,
            tuple((tuple(f.coefs()), tuple(_atom_key(a) for _, a in f.terms)) for f in U.fns))


@contextmanager
def pair_memo():
    """Within the block, :func:`plane_expect` called again with the same exact inputs (the units'
    rational w, b and functions, the products asked for, the working precision) returns the
    result of the first call instead of integrating again.  The quadrature is deterministic, so
    every value is bit-identical to a recomputation; finite differences (tests/
    test_mpref_selfcheck.py) perturb one parameter at a time and leave most pairs unchanged."""
    global _PAIR_MEMO
    outer = _PAIR_MEMO
    _PAIR_MEMO = {} if outer is None else outer
    try:
        yield
    finally:
        _PAIR_MEMO = outer


def plane_expect(U1: Unit, U2: Unit, products):
    """For each (k, l, want_vec) in products: E[U1.fns[k] · U2.fns[l]] and, if want_vec, the
    d-vector E[U1.fns[k] · U2.fns[l] · x].  Returns a list of (E, vec or None)."""
    if _PAIR_MEMO is None:
        return _plane_expect(U1, U2, products)
    key = (_unit_key(U1), _unit_key(U2), tuple(tuple(p) for p in products), mp.prec)
    hit = _PAIR_MEMO.get(key)
    if hit is None:
        hit = _PAIR_MEMO[key] = _plane_expect(U1, U2, products)
    return [(e, None if v is None else list(v)) for e, v in hit]


def _plane_expect(U1: Unit, U2: Unit, products):
    d = len(U1.wf)
    zero_vec = lambda: [mpf(0)] * d  # noqa: E731
    # --- degenerate: zero weight vectors ----------------------------------------------------
    if U1.zero and U2.zero:
        out = []
        for k, l, wv in products:
            E = U1.fns[k].value(U1.b()) * U2.fns[l].value(U2.b())
            out.append((E, zero_vec() if wv else None))
        return out
    if U1.zero or U2.zero:
        Z_, NZ = (U1, U2) if U1.zero else (U2, U1)
        al, be, th = NZ.alpha(), NZ.b(), NZ.theta()
        cache = {}
        out = []
        for k, l, wv in products:
            fz, fn = (U1.fns[k], U2.fns[l]) if U1.zero else (U2.fns[l], U1.fns[k])
            key = id(fn)
            if key not in cache:
                cache[key] = one_d_expect(fn, al, be)
            M, N = cache[key]
            cz = fz.value(Z_.b())
            E = cz * M
            vec = [cz * N * t for t in th] if wv else None
            out.append((E, vec))
        return out
    # --- orientation: inner functions should have closed forms --------------------------------
    inner_closed_2 = all(U2.fns[l].closed for _, l, _ in products)
    inner_closed_1 = all(U1.fns[k].closed for k, _, _ in products)
    if inner_closed_2 or not inner_closed_1:
        O, I = U1, U2
        prods = [(k, l, wv) for k, l, wv in products]
    else:
        O, I = U2, U1
        prods = [(l, k, wv) for k, l, wv in products]
    # --- exact plane geometry -------------------------------------------------------------------
    dotf = sum(x * y for x, y in zip(O.wf, I.wf))
    detf = O.n2 * I.n2 - dotf * dotf  # ≥ 0 exactly
    alpha = mp.sqrt(fmpf(O.n2))
    p = fmpf(dotf) / alpha
    q = mp.sqrt(fmpf(detf)) / alpha if detf != 0 else mpf(0)
    bO, bI = O.b(), I.b()
    e1 = [fmpf(x) / alpha for x in O.wf]
    if detf != 0:
        ratio = dotf / O.n2
        vperp = [wi - ratio * wo for wi, wo in zip(I.wf, O.wf)]
        qq = mp.sqrt(fmpf(sum(v * v for v in vperp)))  # = q (exact rational inside)
        e2 = [fmpf(v) / qq for v in vperp]
    else:
        e2 = None
    # breakpoints
    feats = []
    for k, l, _ in prods:
        for t0 in O.fns[k].features:
            feats.append((mpf(t0) - bO) / alpha)
        if p != 0:
            # kinks of the inner function stay (nearly) kinks of M(p z1 + b_I, q) when q is small;
            # a Gaussian-smoothed smooth (hard) term needs no split unless q = 0
            fl = I.fns[l].features if q == 0 else I.fns[l].closed_features
            for t0 in fl:
                feats.append((mpf(t0) - bI) / p)
    pts = _breakpoints(feats)
    # integrand components
    inner_ids = sorted({l for _, l, _ in prods})
    outer_ids = sorted({k for k, _, _ in prods})
    layout = []  # (prod index, kind) kind in {"E", "z1", "z2"}
    for idx, (k, l, wv) in enumerate(prods):
        layout.append((idx, "E"))
        if wv:
            layout.append((idx, "z1"))
            if q != 0:
                layout.append((idx, "z2"))
    ncomp = len(layout)

    inner_fns = [I.fns[l] for l in inner_ids]
    const_MN = None
    lattice = None
    if p == 0:  # orthogonal directions: the inner expectations do not depend on z1
        const_MN = dict(zip(inner_ids, gauss_MN_multi(inner_fns, bI, q)))
    elif q != 0 and any(fn.has_hard for fn in inner_fns):
        lattice = _HardLattice([fn for fn in inner_fns if fn.has_hard], q)

    def integrand(z):
        w = _phi(z)
        Fo = {k: O.fns[k].value(alpha * z + bO) for k in outer_ids}
        if const_MN is not None:
            MN = const_MN
        else:
            MN = dict(zip(inner_ids, gauss_MN_multi(inner_fns, p * z + bI, q, lattice)))
        vals = []
        for idx, kind in layout:
            k, l, _ = prods[idx]
            M, N = MN[l]
            if kind == "E":
                vals.append(w * Fo[k] * M)
            elif kind == "z1":
                vals.append(w * Fo[k] * z * M)
            else:
                vals.append(w * Fo[k] * N)
        return vals

    res = _ts_integrate(integrand, pts, ncomp)
    out = [[None, None] for _ in prods]
    T1 = {}
    T2 = {}
    for (idx, kind), val in zip(layout, res):
        if kind == "E":
            out[idx][0] = val
        elif kind == "z1":
            T1[idx] = val
        else:
            T2[idx] = val
    for idx, (k, l, wv) in enumerate(prods):
        if wv:
            vec = [e1[i] * T1[idx] for i in range(d)]
            if e2 is not None:
                vec = [vec[i] + e2[i] * T2[idx] for i in range(d)]
            out[idx][1] = vec
    return [tuple(o) for o in out]


# ----------------------------------------------------------------------------------------------
# loss and gradient
# ----------------------------------------------------------------------------------------------

def _teacher_units(teacher, d):
    kind = teacher["kind"]
    units, lam = [], []
    if kind == "additive":
        fn = link_fn(teacher["link"])
        U = teacher["U"]
        kappa = teacher["kappa"]
        if len(U) != len(kappa):
            raise ValueError("U and kappa sizes differ")
        for u, k in zip(U, kappa):
            if len(u) != d:
                raise ValueError("teacher direction has the wrong dimension")
            units.append(Unit([to_frac(x) for x in u], Fraction(0), [fn]))
            lam.append(to_frac(k))
    elif kind == "network":
        sig, _ = activation_fns(teacher["activation"], teacher.get("negative_slope"))
        U, V = teacher["U"], teacher["V"]
        bias = teacher.get("bias")
        if bias is None:
            bias = [0.0] * len(V)
        for u, v, bb in zip(U, V, bias):
            if len(u) != d:
                raise ValueError("teacher direction has the wrong dimension")
            units.append(Unit([to_frac(x) for x in u], to_frac(bb), [sig]))
            lam.append(to_frac(v))
        if not (len(U) == len(V) == len(bias)):
            raise ValueError("teacher network sizes differ")
    else:
        raise ValueError(f"unknown teacher kind {kind!r}")
    return units, lam


_TEACHER_CACHE: dict = {}


def _teacher_moments(teacher, tunits):
    """(E[g_k], E[g_k g_l]) of the teacher units; they do not depend on the student, so they are
    cached per (teacher spec, precision) (finite differences recompute the loss many times)."""
    key = (repr(teacher), mp.prec)
    hit = _TEACHER_CACHE.get(key)
    if hit is not None:
        return hit
    Et = []
    for U in tunits:
        fn = U.fns[0]
        Et.append(fn.value(U.b()) if U.zero else one_d_expect(fn, U.alpha(), U.b())[0])
    nt = len(tunits)
    TT = [[None] * nt for _ in range(nt)]
    for k in range(nt):
        for l in range(k, nt):
            (e, _), = plane_expect(tunits[k], tunits[l], [(0, 0, False)])
            TT[k][l] = TT[l][k] = e
    if len(_TEACHER_CACHE) > 32:
        _TEACHER_CACHE.clear()
    _TEACHER_CACHE[key] = (Et, TT)
    return Et, TT


def _residual_moments(allu, P, c, Es, Eds, Edsx, m, d):
    """G_j = E[r σ_j], H_j = E[r σ'_j], K_j = E[r σ'_j x] with r = Σ_i λ_i φ_i + c."""
    G = [mp.fsum([lam * P[i][j][0] for i, (_, lam) in enumerate(allu)] + [c * Es[j]])
         for j in range(m)]
    H = [mp.fsum([lam * P[i][j][1] for i, (_, lam) in enumerate(allu)] + [c * Eds[j]])
         for j in range(m)]
    K = []
    for j in range(m):
        K.append([mp.fsum([lam * P[i][j][2][r] for i, (_, lam) in enumerate(allu)]
                          + [c * Edsx[j][r]]) for r in range(d)])
    return G, H, K


def compute(case: dict, need_grad: bool = True) -> dict:
    """Loss, gradient, E[y], Var(y) as mpf at the *current* mp precision (inputs may be floats,
    ints, decimal strings, Fractions or mpf; they are used exactly).  need_grad=False computes
    only the loss and the teacher moments (grad is None): fewer integrands, used for finite
    differences."""
    act = case["activation"]
    sig, dsig = activation_fns(act, case.get("negative_slope"))
    W = case["W"]
    a = [to_frac(x) for x in case["a"]]
    m = len(a)
    d = len(W[0])
    b = [to_frac(x) for x in case["b"]] if case.get("b") is not None else [Fraction(0)] * m
    cf = to_frac(case.get("c", 0.0))
    if len(W) != m or len(b) != m or any(len(row) != d for row in W):
        raise ValueError("inconsistent student sizes")
    scaling = case.get("scaling", "standard")
    if scaling == "standard":
        sf = Fraction(1)
    elif scaling == "mean_field":
        sf = Fraction(1, m)
    else:
        raise ValueError(f"unknown scaling {scaling!r}")
    students = [Unit([to_frac(x) for x in W[j]], b[j], [sig, dsig]) for j in range(m)]
    tunits, tlam = _teacher_units(case["teacher"], d)
    s = fmpf(sf)
    c = fmpf(cf)
    lam_s = [fmpf(sf * aj) for aj in a]
    lam_t = [-fmpf(x) for x in tlam]

    # 1-D moments with the constant unit
    Es, Eds, Edsx = [], [], []
    for U in students:
        if U.zero:
            Es.append(sig.value(U.b()))
            Eds.append(dsig.value(U.b()))
            Edsx.append([mpf(0)] * d)
        else:
            M0, _ = one_d_expect(sig, U.alpha(), U.b())
            Es.append(M0)
            if need_grad:
                M1, N1 = one_d_expect(dsig, U.alpha(), U.b())
                Eds.append(M1)
                th = U.theta()
                Edsx.append([N1 * t for t in th])
    Et, TT = _teacher_moments(case["teacher"], tunits)

    # pair moments with student neuron j (list side: [σ_j, σ'_j])
    allu = ([(U, lam_s[i]) for i, U in enumerate(students)]
            + [(U, lam_t[k]) for k, U in enumerate(tunits)])
    nunits = len(allu)
    # P[i][j] = (E[φ_i σ_j], E[φ_i σ'_j], E[φ_i σ'_j x])
    P = [[None] * m for _ in range(nunits)]
    for j, Uj in enumerate(students):
        if not need_grad:
            for i in range(j, m):
                (e0, _), = plane_expect(Uj, students[i], [(0, 0, False)])
                P[i][j] = P[j][i] = (e0, None, None)
            for k, Ui in enumerate(tunits):
                (e0, _), = plane_expect(Uj, Ui, [(0, 0, False)])
                P[m + k][j] = (e0, None, None)
            continue
        for i in range(j, m):  # student pairs: both orders from one plane integral
            Ui = students[i]
            if i == j:
                (e0, _), (e1, v1) = plane_expect(Uj, Ui, [(0, 0, False), (1, 0, True)])
                P[i][j] = (e0, e1, v1)
            else:
                (e0, _), (e1, v1), (e2, v2) = plane_expect(
                    Uj, Ui, [(0, 0, False), (1, 0, True), (0, 1, True)])
                P[i][j] = (e0, e1, v1)  # E[σ_i σ_j], E[σ_i σ'_j], E[σ_i σ'_j x]
                P[j][i] = (e0, e2, v2)  # E[σ_j σ_i], E[σ_j σ'_i], E[σ_j σ'_i x]
        for k, Ui in enumerate(tunits):
            (e0, _), (e1, v1) = plane_expect(Uj, Ui, [(0, 0, False), (1, 0, True)])
            P[m + k][j] = (e0, e1, v1)
    nt = len(tunits)

    # residual moments
    if not need_grad:
        G = H = K = None
    else:
        G, H, K = _residual_moments(allu, P, c, Es, Eds, Edsx, m, d)
    Er = mp.fsum([lam_s[j] * Es[j] for j in range(m)] + [lam_t[k] * Et[k] for k in range(nt)] + [c])
    # E[r²] = Σ_{i,i'} λλ' E[φφ'] + 2c Σ λ E[φ] + c²
    terms = []
    for i, (_, lam) in enumerate(allu):
        for j in range(m):  # partner is student j (P[i][j][0] = E[φ_i σ_j])
            terms.append(lam * lam_s[j] * P[i][j][0])
    # the (teacher i, student j) terms were counted once above: add the (student, teacher) ones
    for k in range(nt):
        for j in range(m):
            terms.append(lam_t[k] * lam_s[j] * P[m + k][j][0])
        for l in range(nt):
            terms.append(lam_t[k] * lam_t[l] * TT[k][l])
    for j in range(m):
        terms.append(2 * c * lam_s[j] * Es[j])
    for k in range(nt):
        terms.append(2 * c * lam_t[k] * Et[k])
    terms.append(c * c)
    loss = mp.fsum(terms) / 2

    tl = [fmpf(x) for x in tlam]
    Ey = mp.fsum(tl[k] * Et[k] for k in range(nt))
    Ey2 = mp.fsum(tl[k] * tl[l] * TT[k][l] for k in range(nt) for l in range(nt))
    if need_grad:
        grad = {"a": [s * G[j] for j in range(m)],
                "W": [[s * fmpf(a[j]) * K[j][r] for r in range(d)] for j in range(m)],
                "b": [s * fmpf(a[j]) * H[j] for j in range(m)],
                "c": Er}
    else:
        grad = None
    return {
        "loss": loss,
        "grad": grad,
        "teacher_mean": Ey,
        "teacher_variance": Ey2 - Ey * Ey,
    }


def _fmt_raw(x) -> str:
    if x == 0:
        return "0"
    return mpmath.nstr(x, DIGITS, strip_zeros=False, min_fixed=-4, max_fixed=6)


def _all_values(out):
    g = out["grad"]
    return ([out["loss"], g["c"], out["teacher_mean"], out["teacher_variance"]] + list(g["a"])
            + list(g["b"]) + [x for row in g["W"] for x in row])


def format_outputs(out: dict, zero_below=None) -> dict:
    """30-digit decimal strings.  Values below zero_below · (largest |output| of the case)
    (default 10^-(dps−10), i.e. 1e-40 at the default working precision) are rounding noise of
    exact zeros (e.g. E[h4(u·x)]) and are reported as "0"."""
    if zero_below is None:
        zero_below = mpf(10) ** (-(mp.dps - 10))
    scale = max(abs(x) for x in _all_values(out))
    thr = scale * zero_below

    def _fmt(x):
        if abs(x) <= thr:
            return "0"
        return _fmt_raw(x)

    g = out["grad"]
    return {
        "loss": _fmt(out["loss"]),
        "grad": {
            "a": [_fmt(x) for x in g["a"]],
            "W": [[_fmt(x) for x in row] for row in g["W"]],
            "b": [_fmt(x) for x in g["b"]],
            "c": _fmt(g["c"]),
        },
        "teacher_mean": _fmt(out["teacher_mean"]),
        "teacher_variance": _fmt(out["teacher_variance"]),
    }


def reference(case: dict, dps: int = 40) -> dict:
    """Reference outputs for a case (same format as the 'outputs' entry of
    data/refs/engine_refs.json): decimal strings with 30 significant digits.  dps ≥ 40 is the
    target precision; the computation runs at dps + 10 digits."""
    with mp.workdps(dps + 10):
        out = compute(case)
        return format_outputs(out)


def reference_mp(case: dict, dps: int = 40) -> dict:
    """Like :func:`reference` but returns mpf values (at precision dps + 10)."""
    with mp.workdps(dps + 10):
        return compute(case)
