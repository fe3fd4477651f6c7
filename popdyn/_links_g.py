r"""The central paper's damped cubics g_v and their mixtures g_μ (helpers of :mod:`popdyn.links`).

Kumar (arXiv 2609.39408), eq. (7): for v ∈ [1/3, 1],

    g_v(t) = v^{−7/2} (t³ − 3vt) exp(−(1/v − 1) t²/2),      g_μ = ∫ g_v dμ(v),

N_μ = ‖g_μ‖_{L²(γ)} and q_μ = g_μ/N_μ.  The subscript v is the location of a point mass (it is
*not* the damping rate a of popdyn's older ``damped_cubic:a`` = z³e^{−az²/2}; here a = 1/v − 1).

Exact Hermite series (h_n = He_n/√n!): with m_j = ∫(1 − v)^j dμ,

    ⟨g_μ, h_{2j+3}⟩ = (−1)^j √((2j+3)!)/(2^j j!) · m_j,    all other coefficients 0,

so g_μ has no mean and no degree-1 or degree-2 content, and

    N_μ² = Σ_j (2j+3)!/(4^j j!²) m_j² = ∬ K((1−v)(1−w)) dμ(v)dμ(w),  K(t) = 3(2+3t)/(1−t)^{7/2},

(N_v² = 3{2+3(1−v)²}/[v(2−v)]^{7/2}: 6, 10.5714…, 22.5808…, 78.2445… at v = 1, 2/3, 1/2, 1/3).
Both are derived from the generating function E[e^{−aZ²/2} He_n(Z)] = n![s^n](1+a)^{−1/2}
e^{−γs²/2}, γ = a/(1+a) = 1 − v; they are checked against mpmath quadrature of eq. (7) in
``tests/popdyn/test_paper_teachers.py``.

Tails.  For a finite signed measure Σ_l w_l δ_{v_l} put W = Σ|w_l| and ρ = max|1 − v_l| ≤ 2/3;
then |m_j| ≤ Wρ^j, and every tail Σ_{j>J} (2j+3)_k a_j m_j² (a_j = (2j+3)!/(4^j j!²), k = 0, 1)
and Σ_{j>J} (2j+3)^{k/2} √a_j |m_j| is bounded by its first term over 1 − r, where r < 1 is the
ratio of consecutive terms of the majorant at J + 1 (the ratios decrease in j).  These bounds
are rigorous up to the working precision (50 digits).
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

V_MIN = Fraction(1, 3)
V_MAX = Fraction(1)


def simplest_rational(x: float) -> Fraction:
    """The rational with the smallest denominator (searched over 10, 10², …, 10¹⁷) that rounds
    to the float64 ``x``: 1/3 for ``1/3``, 2/5 for ``0.4``."""
    f = Fraction(x)
    for k in range(1, 18):
        c = f.limit_denominator(10 ** k)
        if float(c) == x:
            return c
    return f


def as_rational(x, argname: str) -> Fraction:
    """An exact rational from an int, a Fraction, a float (via :func:`simplest_rational`) or a
    string "p/q" / decimal ("0.5" is 1/2 exactly)."""
    if isinstance(x, bool):
        raise TypeError(f"`{argname}` must be a number or a string such as '1/3', got bool")
    if isinstance(x, Fraction):
        return x
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if isinstance(x, numbers.Real):
        xf = float(x)
        if not math.isfinite(xf):
            raise ValueError(f"`{argname}` must be finite, got {x!r}")
        return simplest_rational(xf)
    if isinstance(x, str):
        t = x.strip()
        try:
            if "/" in t:
                num, den = t.split("/", 1)
                return Fraction(int(num.strip()), int(den.strip()))
            return Fraction(t)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"`{argname}`: cannot read {x!r} as a rational (expected e.g. '1/3', "
                             "'0.5' or '1')") from None
    raise TypeError(f"`{argname}` must be a number or a string such as '1/3', "
                    f"got {type(x).__name__}")


def check_v(v, argname: str = "v") -> Fraction:
    """v as an exact rational in [1/3, 1] (eq. (7)), or ValueError naming the range."""
    v = as_rational(v, argname)
    if not V_MIN <= v <= V_MAX:
        raise ValueError(f"`{argname}`: the point-mass location v of g_v must lie in [1/3, 1] "
                         f"(Kumar, eq. (7)), got {v}")
    return v


def frac_str(f: Fraction) -> str:
    """Canonical text of a rational: '1', '1/3', '-2/5'."""
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def moments(ctx, atoms, jmax):
    """m_j = Σ_l w_l (1 − v_l)^j, j = 0..jmax (mpf), atoms = ((weight mpf, v Fraction), ...)."""
    out = [ctx.mpf(0)] * (jmax + 1)
    for w, v in atoms:
        x = ctx.mpf(1) - ctx.mpf(v.numerator) / v.denominator
        p = ctx.mpf(w)
        for j in range(jmax + 1):
            out[j] += p
            p *= x
    return out


def uniform_moments(ctx, jmax):
    """m_j = ∫(1 − v)^j dμ for μ uniform on [1/3, 1]: (3/2)∫_0^{2/3} x^j dx = (2/3)^j/(j + 1)."""
    r = ctx.mpf(2) / 3
    return [r ** j / (j + 1) for j in range(jmax + 1)]


def coeffs(ctx, atoms, nmax, m=None):
    """⟨g_μ, h_n⟩, n = 0..nmax (mpf) from the closed form (moments ``m`` given, or from the
    atoms)."""
    jmax = max((nmax - 3) // 2, 0)
    if m is None:
        m = moments(ctx, atoms, jmax)
    out = [ctx.mpf(0)] * (nmax + 1)
    # b_j = √((2j+3)!)/(2^j j!), b_0 = √6, b_{j+1}/b_j = √((2j+4)(2j+5))/(2(j+1))
    b = ctx.sqrt(6)
    for j in range(jmax + 1):
        n = 2 * j + 3
        if n > nmax:
            break
        out[n] = (-1) ** j * b * m[j]
        b = b * ctx.sqrt((2 * j + 4) * (2 * j + 5)) / (2 * (j + 1))
    return out


def kernel(ctx, t):
    """K(t) = 3(2 + 3t)/(1 − t)^{7/2} = Σ_j (2j+3)!/(4^j j!²) t^j, |t| < 1."""
    return 3 * (2 + 3 * t) / (1 - t) ** (ctx.mpf(7) / 2)


def energy(ctx, atoms):
    """N_μ² = ΣΣ w_l w_k K((1 − v_l)(1 − v_k)) (closed form)."""
    terms = []
    for w1, v1 in atoms:
        for w2, v2 in atoms:
            t = (1 - ctx.mpf(v1.numerator) / v1.denominator) * (
                1 - ctx.mpf(v2.numerator) / v2.denominator)
            terms.append(ctx.mpf(w1) * ctx.mpf(w2) * kernel(ctx, t))
    return ctx.fsum(terms)


def _ff(n, k):
    out = 1
    for j in range(k):
        out *= n - j
    return out


def tail_bounds(ctx, atoms, M, W=None, rho=None):
    """Upper bounds of the sums over n > M of (c_n², |c_n|, (n)₁c_n², √n|c_n|) (geometric
    majorant |m_j| ≤ Wρ^j; see the module docstring; W, ρ from the atoms unless given)."""
    if W is None:
        W = ctx.fsum(abs(ctx.mpf(w)) for w, _ in atoms)
        rho = max(abs(1 - ctx.mpf(v.numerator) / v.denominator) for _, v in atoms)
    if rho == 0 or W == 0:
        return (ctx.mpf(0),) * 4
    J = (M - 3) // 2 + 1          # first j with 2j + 3 > M
    while 2 * J + 3 <= M:
        J += 1

    def a(j):                      # (2j+3)!/(4^j j!²)
        return ctx.factorial(2 * j + 3) / (ctx.mpf(4) ** j * ctx.factorial(j) ** 2)

    out = []
    for kind in range(4):
        def term(j):
            n = 2 * j + 3
            if kind == 0:
                return a(j) * W ** 2 * rho ** (2 * j)
            if kind == 1:
                return ctx.sqrt(a(j)) * W * rho ** j
            if kind == 2:
                return n * a(j) * W ** 2 * rho ** (2 * j)
            return ctx.sqrt(n * a(j)) * W * rho ** j
        t0, t1 = term(J), term(J + 1)
        r = t1 / t0
        if r >= 1:
            raise ArithmeticError("geometric tail bound of g_mu does not apply at this cut")
        out.append(t0 / (1 - r))
    return tuple(out)


# ---------------------------------------------------------------------------------- evaluation
def np_eval(atoms_f, z, deriv=False):
    """g_μ(z) (or g_μ'(z)) in float64; atoms_f = ((w float, v float), ...)."""
    z = np.asarray(z, dtype=float)
    out = np.zeros(np.shape(z))
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        z2 = z * z
        for w, v in atoms_f:
            a = (1.0 - v) / v                # 1 − v exact (Sterbenz): one rounding
            e = np.exp(-0.5 * a * z2)
            p = z * (z2 - 3.0 * v)
            if deriv:
                val = (3.0 * z2 - 3.0 * v - a * z * p) * e
            else:
                val = p * e
            val = np.where(np.isfinite(val), val, 0.0)
            out = out + w * v ** -3.5 * val
    return out


def mp_eval(ctx, atoms, z, deriv=False):
    """g_μ(z) (or g_μ'(z)) in mpmath; atoms = ((weight mpf, v Fraction), ...)."""
    z = ctx.mpf(z)
    s = ctx.mpf(0)
    for w, v in atoms:
        vm = ctx.mpf(v.numerator) / v.denominator
        a = 1 / vm - 1
        e = ctx.exp(-a * z * z / 2)
        p = z ** 3 - 3 * vm * z
        val = (3 * z * z - 3 * vm - a * z * p) * e if deriv else p * e
        s += ctx.mpf(w) * vm ** (-ctx.mpf(7) / 2) * val
    return s


def uniform_nodes():
    """Quadrature atoms ((w, v) float64) of μ uniform on [1/3, 1] for pointwise evaluation:
    v = 1/(1 + u), dμ = (3/2)du/(1 + u)², u ∈ [0, 2] split at 2·4^{−k} (k = 1..26) into panels
    of 16 Gauss–Legendre nodes (the factor e^{−ut²/2} of g_v is resolved on every panel for
    |t| ≤ 40; beyond, the panels where it is not are below e^{−40} of the integral)."""
    x, w = np.polynomial.legendre.leggauss(16)
    edges = [2.0 * 4.0 ** -k for k in range(27)] + [0.0]
    us, ws = [], []
    for hi, lo in zip(edges[:-1], edges[1:]):
        us.append(lo + (hi - lo) * (x + 1) / 2)
        ws.append(w * (hi - lo) / 2)
    u, wu = np.concatenate(us), np.concatenate(ws)
    return tuple(zip(1.5 * wu / (1 + u) ** 2, 1.0 / (1.0 + u)))


def mp_eval_uniform(ctx, z, deriv=False):
    """g_μ(z) (or g_μ'(z)) for μ uniform on [1/3, 1], by mpmath quadrature in u = 1/v − 1."""
    z = ctx.mpf(z)

    def f(u):
        v = 1 / (1 + u)
        e = ctx.exp(-u * z * z / 2)
        p = z ** 3 - 3 * v * z
        val = (3 * z * z - 3 * v - u * z * p) * e if deriv else p * e
        return ctx.mpf(3) / 2 * v ** (-ctx.mpf(7) / 2) * val / (1 + u) ** 2

    s = z * z / 2
    inner = [k / s for k in (1, 4, 16) if k < 2 * s]       # where e^{-us} has decayed
    pts = [ctx.mpf(0)] + inner + [ctx.mpf(2)]
    return ctx.quad(f, pts)
