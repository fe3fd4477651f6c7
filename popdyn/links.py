r"""Teacher links: the scalar functions g in additive teachers y = Σ_k κ_k g(u_k·x).

A link is applied to the *raw* projection z = u·x ~ N(0, 1) and is exactly the function named
(docs/design.md §2): nothing is normalized silently.

Names (``LINK_NAMES``) and meanings
-----------------------------------
``h1`` … ``h6``
    normalized probabilists' Hermite polynomials h_k = He_k / √k!  (``h2`` = (z² − 1)/√2).
``h3+0.3h2``
    the literal sum h_3 + 0.3·h_2 (0.3 is the decimal 3/10).
``relu``, ``abs``, ``tanh``, ``sin``
    max(z, 0), |z|, tanh(z), sin(z).
``silu``, ``silu_centered``
    z·sigmoid(z) and silu(z) − E[silu(Z)].
``gaussian_bump``
    exp(−z²/2).
``damped_cubic:a`` (family, a > 0 finite; also ``get_link(("damped_cubic", a))``)
    z³·exp(−a z²/2), a Gaussian-damped cubic parametrized by its damping rate a. This is **not**
    the central paper's g_v (below): the paper's g_v has an extra linear term, the factor
    v^{−7/2} and a = 1/v − 1, and its subscript is a point-mass location, not a damping rate.
    Kept for compatibility. ``a`` is taken as a float64: ``"damped_cubic:1/3"`` means
    ``a = float(1/3)`` and its canonical name is ``damped_cubic:0.3333333333333333``.
``g:<v>``, ``q:<v>`` (family, v ∈ [1/3, 1] an exact rational; also ``get_link(("g", v))``)
    The damped cubics of Kumar (arXiv 2609.39408), eq. (7):
    g_v(t) = v^{−7/2}(t³ − 3vt)exp(−(1/v − 1)t²/2), and q_v = g_v/N_v with N_v = ‖g_v‖_{L²(γ)}.
    v is read exactly: "1/3", "2/3", "0.5" (= 1/2), "1"; a float is read as the simplest
    rational that rounds to it (popdyn._links_g.simplest_rational). Canonical names ``g:1/3``,
    ``g:1/2``, ``g:1``. g_1 = √6·h_3 (a polynomial).
``g_mu(w1*g:v1, w2*g:v2, ...)``, ``q_mu(...)`` (see :func:`g_mixture`)
    g_μ = ∫ g_v dμ for an atomic probability measure μ on [1/3, 1] (weights ≥ 0, exact
    rationals, summing to 1), and q_μ = g_μ/N_μ. The paper's Table 1 links (g_1 + g_{1/3})/2
    and 0.2g_{0.4} + 0.3g_{0.7} + 0.5g_1 are ``g_mu(1/2*g:1/3, 1/2*g:1)`` and
    ``g_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)``. Coefficients from the exact series
    ⟨g_μ, h_{2j+3}⟩ = (−1)^j √((2j+3)!)/(2^j j!)·∫(1−v)^j dμ (no mean, no degree 1 or 2), the
    energy N_μ² = ∬K((1−v)(1−w))dμdμ, K(t) = 3(2+3t)/(1−t)^{7/2}, in closed form
    (:mod:`popdyn._links_g`).
``g_mu(uniform)``, ``q_mu(uniform)``
    g_μ for μ uniform on [1/3, 1], a measure given by its moments ∫(1−v)^j dμ = (2/3)^j/(j+1):
    coefficients from the same series, N_μ² = Σ_j (2j+3)!/(4^j j!²)·m_j² summed explicitly to
    n = N_tab + 129 with the geometric tail bound beyond; pointwise values by quadrature over v
    (float64: 432 fixed Gauss–Legendre atoms; mpmath: adaptive quadrature).
``mixture([(w1, link1), (w2, link2), …])``
    signed mixtures Σ_l w_l g_l (weights w_l finite and nonzero, of either sign; links by name or
    :class:`Link`). Nested mixtures are flattened (weights multiplied in float64). The canonical
    name is ``mixture(w1*name1, w2*name2, …)``, which :func:`get_link` also accepts. Mixtures of
    ``g``/``q`` links are again g_μ for a (signed) measure and keep the exact closed forms.
``user:<name>`` (see :func:`popdyn.links_user.from_hermite`, :func:`popdyn.links_user.from_callable`)
    a polynomial link a user brings, from a finite Hermite vector (exact) or from a callable
    (Gauss–Hermite quadrature with a stated error bound, :mod:`popdyn.links_user`); registered
    by name in the running process.

Representation
--------------
Every link is written g(z) = p·relu(z) + q·z + H(z): an exactly representable piecewise-linear
(PL) part (relu: (1, 0); abs: (2, −1); h1: (0, 1); otherwise (0, 0); mixtures add) and a
*Hermite part* H given by its normalized coefficients Ĥ_n = E[H(Z) h_n(Z)], n = 0..N_tab
(``coeffs``). N_tab = 512 for non-polynomial H, exactly the degree for polynomial H (N_tab = 0
and ``coeffs = [0.]`` when H = 0, e.g. relu, abs, h1). ``is_polynomial`` refers to H.

Derivative sequence: Ĥ'_n = E[H'(Z) h_n(Z)] = √(n+1)·Ĥ_{n+1}, n = 0..N_tab (``dcoeffs``;
``dcoeffs[N_tab]`` uses Ĥ_{N_tab+1}, which is computed but not stored in ``coeffs``).

Tail tables, indexed by the cut N = 0..N_tab (length N_tab + 1):
``t2[N] = Σ_{n>N} Ĥ_n²``, ``l1[N] = Σ_{n>N} |Ĥ_n|``, ``dt2[N] = Σ_{n>N} Ĥ'_n²``,
``dl1[N] = Σ_{n>N} |Ĥ'_n|``. They include everything beyond N_tab. They are assembled in mpmath
(≥ 40 significant digits; never as float64 differences) and rounded *upward* to float64, so each
stored entry is ≥ the true tail (a float64 tail that underflows is stored as the smallest
subnormal, not 0). The part beyond N_tab (``tail_beyond``) is

* ``"zero"`` — polynomial H: exactly 0 (the stored tails are exact sums);
* ``"parseval+sobolev"`` — for the L² tails the Parseval residual E[H^{(k)}²] − Σ_{n≤M}(n)_k Ĥ_n²
  (k = 0, 1; (n)_k the falling factorial) at a cut M ≥ N_tab + 1, computed in mpmath with
  closed-form (Gaussian-polynomial links, sin) or 120-digit quadrature (tanh, silu) energies, plus
  its error bound; for the ℓ¹ tails the Cauchy–Schwarz/Sobolev bound
  Σ_{m>M}|Ĥ_m| ≤ √(R_2(M)/M) and Σ_{m>M}√m|Ĥ_m| ≤ √(R_3(M)/(M−1)), R_k the residual of
  E[H^{(k)}²]. Tabulated links (tanh, silu, silu_centered) use M = 1024 (coefficients computed
  up to n = 1024 at precompute time, see ``data/_precompute/links.py``); closed-form links use
  M = N_tab + 129 at an adaptive precision of up to 400 digits (below ~1e−390 the residual is
  replaced by its resolution, an upper bound far below the float64 range). So the L² tails
  beyond N_tab are values (to ≥ 30 digits) wherever they are representable, and the ℓ¹ tails are
  the explicit sums up to M plus an upper bound for n > M (for the tails at N ≤ N_tab this
  bound is negligible unless the coefficients decay slowly, e.g. damped cubics with a ≳ 10,
  where it stays within a small factor of the truth).
* ``"closed-form"`` — the paper's g_μ / q_μ: coefficients explicit from the exact series up to
  n = N_tab + 129, beyond that the geometric bound of :mod:`popdyn._links_g` (|∫(1−v)^j dμ| ≤
  Wρ^j, W = Σ|w_l|, ρ = max|1 − v_l| ≤ 2/3): upper bounds, tight to many digits.
* ``"minkowski"`` — mixtures with a non-Gaussian-polynomial component (tanh, silu, sin, …): the
  part beyond N_tab is bounded by Minkowski / the triangle inequality from the components' own
  tails, (Σ_l |w_l| √t2_l[N_tab])² and Σ_l |w_l| l1_l[N_tab] (an upper bound, not a value; the
  absolute weights keep it valid for signed mixtures).
  Mixtures of Gaussian-polynomial links (h_k, h3+0.3h2, gaussian_bump, damped cubics, and PL
  links) are handled exactly as one Gaussian-polynomial function (``"parseval+sobolev"``).

Scalar moments of the whole g — ``mean`` = E[g], ``second_moment`` = E[g²], ``variance``,
``d_second_moment`` = E[g'²] — are computed in mpmath (closed forms, or quadrature at 40 digits;
tabulated links from 40-digit precomputed values) and stored as float64 (round to nearest) and
as 30-significant-digit strings (``mean_str`` …) for certification.

Coefficient sources: polynomials exactly; ``sin`` by E[sin(Z) He_n(Z)] = e^{−1/2} sin(nπ/2);
Gaussian-polynomial links P(z)·exp(−a z²/2) by the generating function
E[exp(−aZ²/2) He_n(Z)] = n!·[t^n] (1+a)^{−1/2} exp(−γt²/2), γ = a/(1+a), followed by the Jacobi
operator (z·f)^_n = √(n+1) f̂_{n+1} + √n f̂_{n−1} in mpmath with guard digits (any a on demand,
well under a second); tanh and silu from the table ``data/links/links.npz`` (Hermite-function
trapezoidal quadrature in 360/400-bit fixed point, two independent schemes agreeing to ~1e−100;
double-double storage, ~32 digits).

Pointwise evaluation (``__call__``, ``derivative``) is float64 numpy; the derivative of relu at 0
is taken as 0 (and of abs as sign(0) = 0).

References
----------
docs/design.md §2–§3; Kumar (arXiv 2609.39408), eq. (7) and App. A (the teacher
links g_v, g_μ, q_μ and the 13 scalar raw links of Table 1).
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
from fractions import Fraction

import mpmath
import numpy as np
from mpmath import libmp
from scipy.special import expit

from . import _links_g as _G

__all__ = ["Link", "get_link", "mixture", "LINK_NAMES", "N_TAB"]

N_TAB = 512
"""Number of tabulated Hermite coefficients (minus one) for non-polynomial Hermite parts."""

LINK_NAMES = (
    "h1", "h2", "h3", "h4", "h5", "h6", "h3+0.3h2",
    "relu", "tanh", "abs", "sin", "silu", "silu_centered", "gaussian_bump",
)
"""Fixed link names. The families ``damped_cubic:<a>`` and ``mixture(...)`` come on top."""

_FAMILIES = ("damped_cubic:<a>", "g:<v>", "q:<v>", "g_mu(<w>*g:<v>, ...)", "q_mu(<w>*g:<v>, ...)",
             "g_mu(uniform)", "q_mu(uniform)", "mixture(<w>*<name>, ...)", "user:<name>")
_TABLE = ("links", "links.npz")   # in the embedded data (popdyn/_paths.py, package popdyn._data)

# A private mpmath context: never touch the global mpmath precision.
_ctx = mpmath.MPContext()
_ctx.dps = 50
_BASE_DPS = 50          # working precision of coefficients / mixtures (digits)
_MAX_DPS = 400          # cap of the adaptive precision of Parseval residuals
_QUAD_DPS = 40          # precision of on-demand moment quadratures
_N_EXT = N_TAB + 129    # closed-form links: explicit coefficients up to this index, then bounds


# --------------------------------------------------------------------------------------------
# float conversion helpers
# --------------------------------------------------------------------------------------------
def _to_float(x) -> float:
    """Round an mpf to the nearest float64."""
    return libmp.to_float(_ctx.mpf(x)._mpf_, rnd=libmp.round_nearest)


def _to_float_up(x) -> float:
    """Smallest float64 ≥ x (x ≥ 0), never 0 for x > 0."""
    m = _ctx.mpf(x)._mpf_
    if m == libmp.fzero:
        return 0.0
    if libmp.mpf_sign(m) < 0:
        raise ArithmeticError("negative tail")
    f = libmp.to_float(m, rnd=libmp.round_nearest)
    if not math.isfinite(f):
        return math.inf
    while libmp.mpf_lt(libmp.from_float(f), m):
        f = math.nextafter(f, math.inf)
    return f


def _mp(v):
    """Exact conversion of a float / Fraction / int / mpf to the private context."""
    if isinstance(v, Fraction):
        return _ctx.mpf(v.numerator) / v.denominator
    return _ctx.mpf(v)


def _nstr(x) -> str:
    return _ctx.nstr(_ctx.mpf(x), 30, min_fixed=-5, max_fixed=5)


# --------------------------------------------------------------------------------------------
# Hermite-part data (internal, mpmath)
# --------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _HData:
    """Hermite part in mpmath: coefficients Ĥ_0..Ĥ_{nt+1}, tails beyond nt, moments of H."""

    coeffs: tuple           # mpf, length nt + 2
    nt: int
    beyond: tuple | None    # (t2, l1, dt2, dl1) sums over n > nt (values or upper bounds); None = 0
    gp: tuple | None        # Gaussian-polynomial atoms, or None if H is not of that class
    tail_beyond: str
    gmu: tuple | None = None  # g_mu atoms ((weight mpf, v Fraction), ...) of eq. (7) links


def hermite_monomials(k):
    """Integer coefficients of the probabilists' Hermite polynomial He_k: {power: coef}."""
    out = {}
    for j in range(k // 2 + 1):
        out[k - 2 * j] = (-1) ** j * math.factorial(k) // (
            math.factorial(j) * math.factorial(k - 2 * j) * 2 ** j)
    return out


_hermite_monomials = hermite_monomials  # the name used inside popdyn


# A Gaussian-polynomial ("GP") function is a sum of atoms (w, kind, k, a) with w, a Fractions:
#   kind "h": w·h_k(z)          (a = 0)
#   kind "m": w·z^k·exp(−a z²/2)
def _gp_groups(atoms):
    """{a (Fraction): {power: mpf}} at the current precision."""
    groups = {}
    for w, kind, k, a in atoms:
        wm = _mp(w)
        g = groups.setdefault(a, {})
        if kind == "h":
            nrm = wm / _ctx.sqrt(_ctx.factorial(k))
            for pw, c in _hermite_monomials(k).items():
                g[pw] = g.get(pw, 0) + nrm * c
        else:
            g[k] = g.get(k, 0) + wm
    return groups


def _gp_derivative(groups):
    out = {}
    for a, poly in groups.items():
        am = _mp(a)
        new = {}
        for pw, c in poly.items():
            if pw > 0:
                new[pw - 1] = new.get(pw - 1, 0) + pw * c
            if a != 0:
                new[pw + 1] = new.get(pw + 1, 0) - am * c
        out[a] = new
    return out


def _gauss_moment(n, b):
    """E[Z^n exp(−b Z²/2)] for b ≥ 0 (mpf)."""
    if n % 2:
        return _ctx.mpf(0)
    m = n // 2
    df = _ctx.mpf(1)
    for j in range(1, 2 * m, 2):
        df *= j
    return df * (1 + b) ** (-(_ctx.mpf(m) + _ctx.mpf(1) / 2))


def _gp_energy(groups):
    """E[G(Z)²] for a GP function given as groups."""
    items = [(a, pw, c) for a, poly in groups.items() for pw, c in poly.items() if c != 0]
    terms = []
    for a1, p1, c1 in items:
        for a2, p2, c2 in items:
            terms.append(c1 * c2 * _gauss_moment(p1 + p2, _mp(a1) + _mp(a2)))
    return _ctx.fsum(terms) if terms else _ctx.mpf(0)


def _bump_coeffs(a, nmax):
    """Normalized coefficients of exp(−a z²/2), n = 0..nmax (mpf)."""
    am = _mp(a)
    gam = am / (1 + am)
    out = [_ctx.mpf(0)] * (nmax + 1)
    out[0] = 1 / _ctx.sqrt(1 + am)
    for m in range(0, nmax // 2):
        n = 2 * m
        if n + 2 > nmax:
            break
        out[n + 2] = out[n] * (-gam / 2) * _ctx.sqrt(_ctx.mpf((n + 1) * (n + 2))) / (m + 1)
    return out


def _jacobi(f, sq):
    """Coefficients of z·f from those of f (one shorter); sq[j] = √j."""
    n = len(f)
    return [sq[j + 1] * f[j + 1] + (sq[j] * f[j - 1] if j > 0 else 0) for j in range(n - 1)]


def _gp_coeffs(atoms, nmax):
    """Normalized Hermite coefficients Ĥ_0..Ĥ_nmax of a GP function (mpf)."""
    out = [_ctx.mpf(0)] * (nmax + 1)
    by_a = {}
    for w, kind, k, a in atoms:
        if kind == "h":
            if k <= nmax:
                out[k] += _mp(w)
        else:
            by_a.setdefault(a, {})
            by_a[a][k] = by_a[a].get(k, 0) + _mp(w)
    for a, poly in by_a.items():
        kmax = max(poly)
        v = _bump_coeffs(a, nmax + kmax)
        sq = [_ctx.sqrt(j) for j in range(nmax + kmax + 2)] if kmax else []
        for k in range(kmax + 1):
            if k:
                v = _jacobi(v, sq)
            c = poly.get(k, 0)
            if c:
                for n in range(nmax + 1):
                    out[n] += c * v[n]
    return out


def _ff(n, k):
    """Falling factorial (n)_k = n(n−1)…(n−k+1) as an exact int."""
    out = 1
    for j in range(k):
        out *= n - j
    return out


def _beyond_from_residuals(c, nt, energies, errs):
    """Tails beyond ``nt`` from coefficients c[0..M] (M ≥ nt + 1) and energies E_k = E[H^(k)²].

    Returns (t2, l1, dt2, dl1) beyond nt: explicit sums over nt < n ≤ M plus the Parseval
    residual R_k(M) (k = 0, 1; made an upper bound by adding its error bound) and the Sobolev
    bounds √(R_2(M)/M), √(R_3(M)/(M−1)) for the ℓ¹ parts.
    """
    M = len(c) - 1
    assert M >= nt + 1 and M >= 3
    sq = [cn * cn for cn in c]
    res = []
    for k in range(4):
        s = _ctx.fsum(_ff(n, k) * sq[n] for n in range(M + 1))
        r = energies[k] - s
        if r < -errs[k]:
            raise ArithmeticError(
                f"Parseval residual of order {k} is negative beyond its error bound "
                f"({_ctx.nstr(r, 5)} < -{_ctx.nstr(errs[k], 5)})")
        res.append(max(r, _ctx.mpf(0)) + errs[k])
    bt2 = _ctx.fsum(sq[nt + 1:]) + res[0]
    bl1 = _ctx.fsum(abs(x) for x in c[nt + 1:]) + _ctx.sqrt(res[2] / M)
    bdt2 = _ctx.fsum(m * sq[m] for m in range(nt + 2, M + 1)) + res[1]
    bdl1 = _ctx.fsum(_ctx.sqrt(m) * abs(c[m]) for m in range(nt + 2, M + 1)) \
        + _ctx.sqrt(res[3] / (M - 1))
    return (bt2, bl1, bdt2, bdl1)


def _adaptive_dps(c, e0):
    """Digits needed to resolve the Parseval residual at the last index of c (capped)."""
    mag = max(abs(x) for x in c[-5:])
    if mag == 0:
        return _MAX_DPS
    digits = float(_ctx.log10(max(e0, _ctx.mpf(1)) / (mag * mag)))
    return int(min(_MAX_DPS, max(_BASE_DPS, 45 + math.ceil(digits))))


def _hdata_gp(atoms):
    """_HData and (mean, E[H²], E[H'²]) of a Gaussian-polynomial Hermite part."""
    atoms = tuple(atoms)
    with _ctx.workdps(_BASE_DPS):
        groups = _gp_groups(atoms)
        poly = all(a == 0 for a in groups)
        if poly:
            deg = 0
            for g in groups.values():
                for pw, cc in g.items():
                    if cc != 0:
                        deg = max(deg, pw)
            c = _gp_coeffs(atoms, deg + 1)
            while deg > 0 and c[deg] == 0:
                deg -= 1
            c = c[:deg + 2]
            # exact for polynomials: E[H] = Ĥ_0, E[H²] = Σ Ĥ_n², E[H'²] = Σ n Ĥ_n²
            moments = (c[0], _ctx.fsum(x * x for x in c),
                       _ctx.fsum(n * x * x for n, x in enumerate(c)))
            return _HData(tuple(c), deg, None, atoms, "zero"), moments
        with _ctx.workdps(30):      # magnitudes only, to choose the working precision
            c30 = _gp_coeffs(atoms, _N_EXT)
        e0 = _gp_energy(groups)
    dps = _adaptive_dps(c30, e0)
    with _ctx.workdps(dps + 25):     # guard digits for the Jacobi recurrences
        c = _gp_coeffs(atoms, _N_EXT)
    with _ctx.workdps(dps):
        c = [+x for x in c]
        groups = _gp_groups(atoms)
        energies, d = [], groups
        for k in range(4):
            energies.append(_gp_energy(d))
            d = _gp_derivative(d)
        eps = _ctx.mpf(10) ** (-(dps - 8))
        errs = [eps * (energies[k] + _ff(_N_EXT, k) * energies[0] + 1) for k in range(4)]
        beyond = _beyond_from_residuals(c, N_TAB, energies, errs)
        moments = (c[0], energies[0], energies[1])      # E[H] = Ĥ_0
    with _ctx.workdps(_BASE_DPS):
        c = tuple(+x for x in c[:N_TAB + 2])
        beyond = tuple(+x for x in beyond)
        moments = tuple(+x for x in moments)
    return _HData(c, N_TAB, beyond, atoms, "parseval+sobolev"), moments


def _hdata_sin():
    with _ctx.workdps(40):
        c40 = _sin_coeffs(_N_EXT)
        e0 = (1 - _ctx.exp(-2)) / 2
    dps = _adaptive_dps(c40, e0)
    with _ctx.workdps(dps):
        c = _sin_coeffs(_N_EXT)
        e0 = (1 - _ctx.exp(-2)) / 2
        e1 = (1 + _ctx.exp(-2)) / 2
        energies = [e0, e1, e0, e1]
        eps = _ctx.mpf(10) ** (-(dps - 8))
        errs = [eps * (energies[k] + _ff(_N_EXT, k) + 1) for k in range(4)]
        beyond = _beyond_from_residuals(c, N_TAB, energies, errs)
    with _ctx.workdps(_BASE_DPS):
        c = tuple(+x for x in c[:N_TAB + 2])
        beyond = tuple(+x for x in beyond)
        moments = (_ctx.mpf(0), (1 - _ctx.exp(-2)) / 2, (1 + _ctx.exp(-2)) / 2)
    return _HData(c, N_TAB, beyond, None, "parseval+sobolev"), moments


def _hdata_gmu(atoms):
    """_HData and (mean, E[H²], E[H'²]) of g_μ = Σ w_l g_{v_l} (eq. (7)), atoms ((w mpf, v)).

    Coefficients from the closed form (popdyn._links_g), explicit up to n = N_tab + 129, then
    the geometric tail bounds; E[H²] = N_μ² from the kernel K (checked against Σ c_n² here).
    """
    with _ctx.workdps(_BASE_DPS):
        atoms = tuple((_ctx.mpf(w), v) for w, v in atoms)
        e0 = _G.energy(_ctx, atoms)
        if all(v == 1 for _, v in atoms):        # μ = W δ_1: g = W √6 h_3 (a polynomial)
            W = _ctx.fsum(w for w, _ in atoms)
            c = (_ctx.mpf(0),) * 3 + (W * _ctx.sqrt(6), _ctx.mpf(0))
            return (_HData(c, 3, None, None, "zero", gmu=atoms),
                    (_ctx.mpf(0), 6 * W * W, 18 * W * W))
        c = _G.coeffs(_ctx, atoms, _N_EXT)
        tb = _G.tail_bounds(_ctx, atoms, _N_EXT)
        sq = [x * x for x in c]
        s0 = _ctx.fsum(sq)
        if abs(e0 - s0) > tb[0] + _ctx.mpf(10) ** -40 * (1 + abs(e0)):
            raise ArithmeticError(f"g_mu: kernel energy {_ctx.nstr(e0, 20)} disagrees with the "
                                  f"Hermite series {_ctx.nstr(s0, 20)}")
        nt = N_TAB
        beyond = (_ctx.fsum(sq[nt + 1:]) + tb[0],
                  _ctx.fsum(abs(x) for x in c[nt + 1:]) + tb[1],
                  _ctx.fsum(m * sq[m] for m in range(nt + 2, _N_EXT + 1)) + tb[2],
                  _ctx.fsum(_ctx.sqrt(m) * abs(c[m]) for m in range(nt + 2, _N_EXT + 1)) + tb[3])
        e1 = _ctx.fsum(n * x for n, x in enumerate(sq))
        return (_HData(tuple(c[:nt + 2]), nt, beyond, None, "closed-form", gmu=atoms),
                (_ctx.mpf(0), e0, e1))


def _gmu_evaluators(atoms):
    """(f_np, df_np, f_mp, df_mp) of g_μ, atoms ((w mpf, v Fraction), ...)."""
    af = tuple((_to_float(w), float(v)) for w, v in atoms)
    return (lambda z: _G.np_eval(af, z), lambda z: _G.np_eval(af, z, deriv=True),
            lambda z: _G.mp_eval(_ctx, atoms, z), lambda z: _G.mp_eval(_ctx, atoms, z, True))


def _hdata_gmu_uniform(scale):
    """_HData and moments of scale·g_μ, μ uniform on [1/3, 1] (given by its moments
    m_j = (2/3)^j/(j+1); energy Σ a_j m_j² summed to N_tab + 129 plus its geometric tail)."""
    with _ctx.workdps(_BASE_DPS):
        jmax = (_N_EXT - 3) // 2
        m = [scale * x for x in _G.uniform_moments(_ctx, jmax)]
        c = _G.coeffs(_ctx, (), _N_EXT, m=m)
        W, rho = abs(scale), _ctx.mpf(2) / 3
        tb = _G.tail_bounds(_ctx, (), _N_EXT, W=W, rho=rho)
        sq = [x * x for x in c]
        nt = N_TAB
        beyond = (_ctx.fsum(sq[nt + 1:]) + tb[0],
                  _ctx.fsum(abs(x) for x in c[nt + 1:]) + tb[1],
                  _ctx.fsum(k * sq[k] for k in range(nt + 2, _N_EXT + 1)) + tb[2],
                  _ctx.fsum(_ctx.sqrt(k) * abs(c[k]) for k in range(nt + 2, _N_EXT + 1)) + tb[3])
        e0 = _ctx.fsum(sq) + tb[0] / 2         # the tail (< 1e-140 relative) at its midpoint
        e1 = _ctx.fsum(n * x for n, x in enumerate(sq)) + tb[2] / 2
        return (_HData(tuple(c[:nt + 2]), nt, beyond, None, "closed-form"),
                (_ctx.mpf(0), e0, e1))


def _build_gmu_uniform(name):
    norm = name.startswith("q")
    with _ctx.workdps(_BASE_DPS):
        scale = _ctx.mpf(1)
        if norm:
            hd, mom = _hdata_gmu_uniform(scale)
            scale = 1 / _ctx.sqrt(mom[1])
    hd, mom = _hdata_gmu_uniform(scale)
    nodes = _G.uniform_nodes()
    sf = _to_float(scale)
    af = tuple((sf * w, v) for w, v in nodes)
    evals = (lambda z: _G.np_eval(af, z), lambda z: _G.np_eval(af, z, deriv=True),
             lambda z: scale * _G.mp_eval_uniform(_ctx, z),
             lambda z: scale * _G.mp_eval_uniform(_ctx, z, True))
    return _assemble(name, 0.0, 0.0, hd, mom, evals)


def _build_gmu(name):
    """Links ``g:<v>``, ``q:<v>``, ``g_mu(...)`` and ``q_mu(...)`` (canonical names)."""
    if name in ("g_mu(uniform)", "q_mu(uniform)"):
        return _build_gmu_uniform(name)
    norm = name.startswith("q")
    if name.startswith(("g:", "q:")):
        pairs = ((Fraction(1), _G.as_rational(name[2:], "spec")),)
    else:
        pairs = _parse_measure_items(name[len("g_mu("):-1], name)
    with _ctx.workdps(_BASE_DPS):
        atoms = tuple((_mp(w), v) for w, v in pairs)
        if norm:
            s = 1 / _ctx.sqrt(_G.energy(_ctx, atoms))
            atoms = tuple((w * s, v) for w, v in atoms)
    hd, mom = _hdata_gmu(atoms)
    return _assemble(name, 0.0, 0.0, hd, mom, _gmu_evaluators(hd.gmu))


def _sin_coeffs(nmax):
    """E[sin(Z) h_n(Z)] = e^{−1/2} sin(nπ/2)/√n!."""
    out = []
    inv = _ctx.exp(-_ctx.mpf(1) / 2)     # e^{-1/2}/sqrt(n!) built incrementally
    for n in range(nmax + 1):
        if n:
            inv /= _ctx.sqrt(n)
        s = (0, 1, 0, -1)[n % 4]
        out.append(inv * s)
    return out


# --------------------------------------------------------------------------------------------
# tabulated links (tanh, silu)
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _tables():
    from ._paths import data_path

    with data_path(*_TABLE).open("rb") as fh, np.load(fh, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _hdata_tab(name):
    tab = _tables()
    hi, lo = tab[f"{name}__coeffs_hi"], tab[f"{name}__coeffs_lo"]
    mom = [str(s) for s in tab[f"{name}__moments"]]
    with _ctx.workdps(_BASE_DPS):
        c = tuple(_ctx.mpf(float(h)) + _ctx.mpf(float(l_)) for h, l_ in zip(hi, lo))
        beyond = tuple(_ctx.mpf(s) for s in (str(x) for x in tab[f"{name}__beyond"]))
        moments = tuple(_ctx.mpf(s) for s in mom[:3])
    nt = len(c) - 2
    return _HData(c, nt, beyond, None, "parseval+sobolev"), moments


# --------------------------------------------------------------------------------------------
# pointwise evaluators (numpy and mpmath)
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _h_poly(k):
    """Monomial coefficients of h_k, highest power first (float64), for np.polyval."""
    c = _hermite_monomials(k)
    nrm = math.sqrt(math.factorial(k))
    return np.array([c.get(p, 0) / nrm for p in range(k, -1, -1)])


def _np_hermite(k, z):
    """h_k(z) by Horner (overflows to ±inf, never inf − inf, for huge |z|)."""
    return np.polyval(_h_poly(k), z) if k else np.ones_like(z)


def _mp_hermite(k, z):
    h0, h1 = _ctx.mpf(1), z
    if k == 0:
        return h0
    for n in range(1, k):
        h0, h1 = h1, (z * h1 - _ctx.sqrt(n) * h0) / _ctx.sqrt(n + 1)
    return h1


def _np_damped(a, z):
    with np.errstate(over="ignore", invalid="ignore"):
        out = z ** 3 * np.exp(-0.5 * a * z * z)
    return np.where(np.isfinite(out), out, 0.0)


def _np_damped_d(a, z):
    with np.errstate(over="ignore", invalid="ignore"):
        z2 = z * z
        out = (3.0 * z2 - a * z2 * z2) * np.exp(-0.5 * a * z2)
    return np.where(np.isfinite(out), out, 0.0)


def _np_silu_d(z):
    s = expit(z)
    return s + z * s * (1.0 - s)


def _mp_silu(z):
    return z / (1 + _ctx.exp(-z))


def _mp_silu_d(z):
    s = 1 / (1 + _ctx.exp(-z))
    return s + z * s * (1 - s)


def _base_evaluators(name, a=None, shift=0.0, mp_shift=None):
    """(f_np, df_np, f_mp, df_mp) of a base link."""
    if name.startswith("h") and name[1:].isdigit():
        k = int(name[1:])
        return (lambda z: _np_hermite(k, z),
                lambda z: math.sqrt(k) * _np_hermite(k - 1, z),
                lambda z: _mp_hermite(k, z),
                lambda z: _ctx.sqrt(k) * _mp_hermite(k - 1, z))
    if name == "h3+0.3h2":
        return (lambda z: np.polyval(_h_poly(3) + 0.3 * np.r_[0.0, _h_poly(2)], z),
                lambda z: np.polyval(math.sqrt(3) * _h_poly(2)
                                     + 0.3 * math.sqrt(2) * np.r_[0.0, 1.0, 0.0], z),
                lambda z: _mp_hermite(3, z) + _ctx.mpf(3) / 10 * _mp_hermite(2, z),
                lambda z: _ctx.sqrt(3) * _mp_hermite(2, z) + _ctx.mpf(3) / 10 * _ctx.sqrt(2) * z)
    if name == "relu":
        return (lambda z: np.maximum(z, 0.0), lambda z: (z > 0).astype(float),
                lambda z: max(z, 0), lambda z: _ctx.mpf(1) if z > 0 else _ctx.mpf(0))
    if name == "abs":
        return (np.abs, np.sign, abs, lambda z: _ctx.sign(z))
    if name == "tanh":
        return (np.tanh, lambda z: 1.0 - np.tanh(z) ** 2,
                _ctx.tanh, lambda z: 1 - _ctx.tanh(z) ** 2)
    if name == "sin":
        return (np.sin, np.cos, _ctx.sin, _ctx.cos)
    if name in ("silu", "silu_centered"):
        return (lambda z: z * expit(z) - shift, _np_silu_d,
                lambda z: _mp_silu(z) - mp_shift, _mp_silu_d)
    if name == "gaussian_bump":
        return (lambda z: np.exp(-0.5 * z * z), lambda z: -z * np.exp(-0.5 * z * z),
                lambda z: _ctx.exp(-z * z / 2), lambda z: -z * _ctx.exp(-z * z / 2))
    if name.startswith("damped_cubic:"):
        am = _mp(a)
        return (lambda z: _np_damped(a, z), lambda z: _np_damped_d(a, z),
                lambda z: z ** 3 * _ctx.exp(-am * z * z / 2),
                lambda z: (3 * z * z - am * z ** 4) * _ctx.exp(-am * z * z / 2))
    raise AssertionError(name)


# --------------------------------------------------------------------------------------------
# the Link dataclass
# --------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Link:
    r"""A teacher link g(z) = p·relu(z) + q·z + H(z) with tabulated Hermite part H.

    Build links with :func:`get_link` or :func:`mixture`, not directly.

    Attributes
    ----------
    name : str
        Canonical name (``get_link(name)`` returns this link).
    p, q : float
        Piecewise-linear part p·relu(z) + q·z, handled by the engine in closed form.
    coeffs : ndarray, shape (N_tab + 1,)
        Ĥ_n = E[H(Z) h_n(Z)], h_n = He_n/√n!.
    is_polynomial : bool
        Whether H is a polynomial (then N_tab is its degree and all tails are exactly 0).
    t2, l1 : ndarray, shape (N_tab + 1,)
        Σ_{n>N} Ĥ_n² and Σ_{n>N} |Ĥ_n| for N = 0..N_tab, including n > N_tab, rounded up.
    dcoeffs, dt2, dl1 : ndarray, shape (N_tab + 1,)
        The same for the derivative sequence Ĥ'_n = E[H'(Z) h_n(Z)] = √(n+1) Ĥ_{n+1}.
    mean, second_moment, variance, d_second_moment : float
        E[g], E[g²], Var g, E[g'²] of the whole link (PL part included).
    mean_str, second_moment_str, variance_str, d_second_moment_str : str
        The same with 30 significant digits.
    h_second_moment, h_d_second_moment : float
        E[H²] and E[H'²] of the Hermite part alone (rounded up; = coeffs[0]² + t2[0] and
        dcoeffs[0]² + dt2[0]).
    tail_beyond : str
        How the tails beyond N_tab were obtained: "zero", "parseval+sobolev" or "minkowski"
        (see the module docstring).
    components : tuple of (float, Link)
        For mixtures, the (flattened) weighted components; empty for base links.
    info : dict or None
        Provenance of user links (:func:`popdyn.links_user.from_hermite`,
        :func:`popdyn.links_user.from_callable`: the stated
        error bounds); None for built-in links.
    """

    name: str
    p: float
    q: float
    coeffs: np.ndarray
    is_polynomial: bool
    t2: np.ndarray
    l1: np.ndarray
    dcoeffs: np.ndarray
    dt2: np.ndarray
    dl1: np.ndarray
    mean: float
    second_moment: float
    variance: float
    d_second_moment: float
    mean_str: str
    second_moment_str: str
    variance_str: str
    d_second_moment_str: str
    tail_beyond: str
    h_second_moment: float
    h_d_second_moment: float
    components: tuple = ()
    _f: object = dataclasses.field(default=None, repr=False)
    _df: object = dataclasses.field(default=None, repr=False)
    _fmp: object = dataclasses.field(default=None, repr=False)
    _dfmp: object = dataclasses.field(default=None, repr=False)
    _hdata: object = dataclasses.field(default=None, repr=False)
    _mp_moments: tuple = dataclasses.field(default=(), repr=False)
    info: object = dataclasses.field(default=None, repr=False)

    # identity is the canonical name
    def __eq__(self, other):
        if not isinstance(other, Link):
            return NotImplemented
        return self.name == other.name

    def __hash__(self):
        return hash(("popdyn.Link", self.name))

    def __repr__(self):
        return (f"Link({self.name!r}, p={self.p!r}, q={self.q!r}, N_tab={self.N_tab}, "
                f"mean={self.mean!r}, second_moment={self.second_moment!r})")

    @property
    def N_tab(self) -> int:
        """Highest tabulated Hermite index of H."""
        return len(self.coeffs) - 1

    def __call__(self, z):
        """g(z), elementwise (float64 numpy)."""
        z_arr = np.asarray(z, dtype=float)
        with np.errstate(over="ignore"):     # e.g. polynomials at huge |z|: ±inf
            out = self._f(z_arr)
        return float(out) if np.ndim(out) == 0 else out

    def derivative(self, z):
        """g'(z), elementwise (float64 numpy; relu'(0) = 0, abs'(0) = 0)."""
        z_arr = np.asarray(z, dtype=float)
        with np.errstate(over="ignore"):
            out = self._df(z_arr)
        return float(out) if np.ndim(out) == 0 else out

    def eval_mp(self, z):
        """g(z) in mpmath (private precision context; for references)."""
        return self._fmp(_ctx.mpf(z))

    def derivative_mp(self, z):
        """g'(z) in mpmath."""
        return self._dfmp(_ctx.mpf(z))

    def coefficients_full(self, N):
        """Normalized Hermite coefficients E[g(Z) h_n(Z)], n = 0..N, of the whole link.

        The relu part uses ĉ_0 = 1/√(2π), ĉ_1 = 1/2, ĉ_n = φ(0) He_{n−2}(0)/√n! (n ≥ 2).
        For a non-polynomial H, ``N`` may not exceed ``N_tab``.
        """
        if isinstance(N, bool) or not isinstance(N, numbers.Integral):
            raise TypeError(f"`N` must be an int, got {type(N).__name__}")
        N = int(N)
        if N < 0:
            raise ValueError(f"`N` must be >= 0, got {N}")
        if not self.is_polynomial and N > self.N_tab:
            raise ValueError(
                f"`N` = {N} exceeds N_tab = {self.N_tab} of link {self.name!r}: coefficients "
                "beyond N_tab are not tabulated (use the tail tables t2/l1 to bound them)")
        out = np.zeros(N + 1)
        m = min(N, self.N_tab)
        out[:m + 1] = self.coeffs[:m + 1]
        if self.p != 0.0:
            out += self.p * _relu_coeffs(N)
        if self.q != 0.0 and N >= 1:
            out[1] += self.q
        return out


@functools.lru_cache(maxsize=16)
def _relu_coeffs(N):
    """Normalized Hermite coefficients of relu, n = 0..N (float64, read-only)."""
    out = np.zeros(N + 1)
    with _ctx.workdps(30):
        phi0 = 1 / _ctx.sqrt(2 * _ctx.pi)
        out[0] = _to_float(phi0)
        if N >= 1:
            out[1] = 0.5
        r = phi0 / _ctx.sqrt(2)
        n = 2
        while n <= N:
            out[n] = _to_float(r)
            r = r * (-(n - 1)) / _ctx.sqrt((n + 1) * (n + 2))
            n += 2
    out.setflags(write=False)
    return out


# --------------------------------------------------------------------------------------------
# building links
# --------------------------------------------------------------------------------------------
def _ro(a):
    a = np.asarray(a, dtype=float)
    a.setflags(write=False)
    return a


def _assemble(name, p, q, hd: _HData, moments_mp, evals, components=()):
    """Build a Link from mpmath Hermite data and moments (mean, E[g²], E[g'²])."""
    nt = hd.nt
    with _ctx.workdps(_BASE_DPS):
        c = list(hd.coeffs[:nt + 2])
        while len(c) < nt + 2:
            c.append(_ctx.mpf(0))
        d = [_ctx.sqrt(n + 1) * c[n + 1] for n in range(nt + 1)]
        if hd.beyond is None:
            b = (_ctx.mpf(0),) * 4
        else:
            b = hd.beyond
        t2, l1, dt2, dl1 = ([0.0] * (nt + 1) for _ in range(4))
        s_t2, s_l1, s_dt2, s_dl1 = b
        # non-polynomial: cover the ~1e-31 relative error of double-double / 50-digit data
        up = 1 if hd.beyond is None else 1 + _ctx.mpf(10) ** -28
        for N in range(nt, -1, -1):
            t2[N], l1[N] = _to_float_up(s_t2 * up), _to_float_up(s_l1 * up)
            dt2[N], dl1[N] = _to_float_up(s_dt2 * up), _to_float_up(s_dl1 * up)
            s_t2 += c[N] ** 2
            s_l1 += abs(c[N])
            s_dt2 += d[N] ** 2
            s_dl1 += abs(d[N])
        mean, second, dsecond = (_ctx.mpf(x) for x in moments_mp)
        var = second - mean ** 2
        f, df, fmp, dfmp = evals
        link = Link(
            name=name, p=float(p), q=float(q),
            coeffs=_ro([_to_float(x) for x in c[:nt + 1]]),
            is_polynomial=hd.beyond is None,
            t2=_ro(t2), l1=_ro(l1),
            dcoeffs=_ro([_to_float(x) for x in d]), dt2=_ro(dt2), dl1=_ro(dl1),
            mean=_to_float(mean), second_moment=_to_float(second), variance=_to_float(var),
            d_second_moment=_to_float(dsecond),
            mean_str=_nstr(mean), second_moment_str=_nstr(second), variance_str=_nstr(var),
            d_second_moment_str=_nstr(dsecond),
            tail_beyond=hd.tail_beyond,
            h_second_moment=_to_float_up(s_t2), h_d_second_moment=_to_float_up(s_dt2),
            components=tuple(components),
            _f=f, _df=df, _fmp=fmp, _dfmp=dfmp, _hdata=hd,
            _mp_moments=(mean, second, dsecond),
        )
    return link


_ZERO_H_ATOMS = ()


def _pl_link(name, p, q, moments):
    hd, _ = _hdata_gp(_ZERO_H_ATOMS)
    return _assemble(name, p, q, hd, moments, _base_evaluators(name))


@functools.lru_cache(maxsize=None)
def _link_from_name(name: str) -> Link:
    """Build the link with canonical name ``name`` (cached)."""
    if name.startswith("mixture("):
        return _build_mixture(name)
    if name.startswith(("g:", "q:", "g_mu(", "q_mu(")):
        return _build_gmu(name)
    if name.startswith("user:"):
        return _USER_LINKS[name]
    with _ctx.workdps(_BASE_DPS):
        pi = _ctx.pi
        if name == "h1":
            return _pl_link(name, 0.0, 1.0, (0, 1, 1))
        if name == "relu":
            return _pl_link(name, 1.0, 0.0,
                            (1 / _ctx.sqrt(2 * pi), _ctx.mpf(1) / 2, _ctx.mpf(1) / 2))
        if name == "abs":
            return _pl_link(name, 2.0, -1.0, (_ctx.sqrt(2 / pi), 1, 1))
    if name.startswith("h") and name[1:].isdigit():
        atoms: tuple[tuple[Fraction, str, int, Fraction], ...] = (
            (Fraction(1), "h", int(name[1:]), Fraction(0)),)
    elif name == "h3+0.3h2":
        atoms = ((Fraction(1), "h", 3, Fraction(0)), (Fraction(3, 10), "h", 2, Fraction(0)))
    elif name == "gaussian_bump":
        atoms = ((Fraction(1), "m", 0, Fraction(1)),)
    elif name.startswith("damped_cubic:"):
        a = float(name.split(":", 1)[1])
        atoms = ((Fraction(1), "m", 3, Fraction(a)),)
        hd, mom = _hdata_gp(atoms)
        return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name, a=a))
    elif name == "sin":
        hd, mom = _hdata_sin()
        return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name))
    elif name == "tanh":
        hd, mom = _hdata_tab("tanh")
        return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name))
    elif name in ("silu", "silu_centered"):
        hd, mom = _hdata_tab("silu")
        mean = mom[0]
        if name == "silu":
            ev = _base_evaluators(name, shift=0.0, mp_shift=_ctx.mpf(0))
        else:
            with _ctx.workdps(_BASE_DPS):
                hd = dataclasses.replace(hd, coeffs=(_ctx.mpf(0),) + hd.coeffs[1:])
                mom = (_ctx.mpf(0), mom[1] - mean ** 2, mom[2])
            ev = _base_evaluators(name, shift=_to_float(mean), mp_shift=mean)
        return _assemble(name, 0.0, 0.0, hd, mom, ev)
    else:
        raise AssertionError(name)
    hd, mom = _hdata_gp(atoms)
    return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name))


def _quad_moments(fmp, dfmp):
    """(E[g²], E[g'²]) by mpmath quadrature at _QUAD_DPS digits (break point at 0)."""
    out = []
    with _ctx.workdps(_QUAD_DPS + 10):
        for f in (fmp, dfmp):
            val, err = _ctx.quad(lambda z: f(z) ** 2 * _ctx.npdf(z), [-_ctx.inf, 0, _ctx.inf],
                                 error=True)
            if err > _ctx.mpf(10) ** (-_QUAD_DPS) * (1 + abs(val)):
                raise ArithmeticError(f"moment quadrature did not converge (error {err})")
            out.append(val)
    return tuple(out)


def _build_mixture(name: str) -> Link:
    comps = _parse_mixture(name)
    p = math.fsum(w * l.p for w, l in comps)
    q = math.fsum(w * l.q for w, l in comps)
    hds = [l._hdata for _, l in comps]

    def f(z):
        return sum(w * l._f(z) for w, l in comps)

    def df(z):
        return sum(w * l._df(z) for w, l in comps)

    def fmp(z):
        return _ctx.fsum(_ctx.mpf(w) * l._fmp(z) for w, l in comps)

    def dfmp(z):
        return _ctx.fsum(_ctx.mpf(w) * l._dfmp(z) for w, l in comps)

    with _ctx.workdps(_BASE_DPS):
        mean = _ctx.fsum(_ctx.mpf(w) * l._mp_moments[0] for w, l in comps)
    if p == 0.0 and q == 0.0 and all(hd.gmu is not None for hd in hds):
        # combinations of eq. (7) links: one (signed) measure, exact closed forms
        with _ctx.workdps(_BASE_DPS):
            atoms: tuple[tuple, ...] = tuple((_ctx.mpf(w) * aw, v) for (w, _), hd in zip(comps, hds)
                          for aw, v in hd.gmu)
        hd, moments = _hdata_gmu(atoms)
        return _assemble(name, 0.0, 0.0, hd, moments, (f, df, fmp, dfmp), comps)
    if all(hd.gp is not None for hd in hds):
        atoms = tuple((Fraction(w) * aw, kind, k, a)
                      for (w, _), hd in zip(comps, hds) for (aw, kind, k, a) in hd.gp)
        hd, (hmean, h2, hd2) = _hdata_gp(atoms)
        if p == 0.0 and q == 0.0:
            moments = (mean, h2, hd2)
        else:
            moments = (mean,) + _quad_moments(fmp, dfmp)
        return _assemble(name, p, q, hd, moments, (f, df, fmp, dfmp), comps)
    # Minkowski path
    nt = max(hd.nt for hd in hds)
    with _ctx.workdps(_BASE_DPS):
        c = [_ctx.mpf(0)] * (nt + 2)
        bt2 = bl1 = bdt2 = bdl1 = _ctx.mpf(0)
        for (w, l), hd in zip(comps, hds):
            wm = _ctx.mpf(w)
            for n, x in enumerate(hd.coeffs[:nt + 2]):
                c[n] += wm * x
            if hd.beyond is not None:
                if hd.nt != nt:
                    raise AssertionError("non-polynomial parts must share N_tab")
                # component tails beyond nt as stored (float64, rounded up)
                # |w|: Minkowski / triangle inequality for signed weights
                bt2 += abs(wm) * _ctx.sqrt(_ctx.mpf(l.t2[nt]))
                bl1 += abs(wm) * _ctx.mpf(l.l1[nt])
                bdt2 += abs(wm) * _ctx.sqrt(_ctx.mpf(l.dt2[nt]))
                bdl1 += abs(wm) * _ctx.mpf(l.dl1[nt])
        hd = _HData(tuple(c), nt, (bt2 ** 2, bl1, bdt2 ** 2, bdl1), None, "minkowski")
    moments = (mean,) + _quad_moments(fmp, dfmp)
    return _assemble(name, p, q, hd, moments, (f, df, fmp, dfmp), comps)


# --------------------------------------------------------------------------------------------
# names, parsing and the public API
# --------------------------------------------------------------------------------------------
def _valid_names_msg():
    return ", ".join(LINK_NAMES + _FAMILIES)


def _check_a(a, argname):
    if isinstance(a, bool) or not isinstance(a, numbers.Real):
        raise TypeError(f"`{argname}` must be a real number, got {type(a).__name__}")
    a = float(a)
    if not math.isfinite(a) or a <= 0:
        raise ValueError(f"`{argname}` (the damping rate of damped_cubic) must be a finite "
                         f"float > 0, got {a!r}")
    return a


def _parse_a(text):
    text = text.strip()
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            a = float(Fraction(int(num.strip()), int(den.strip())))
        else:
            a = float(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"`spec`: cannot read the damping rate a of 'damped_cubic:{text}' "
                         "(expected a float such as 0.5 or a ratio such as 1/3)") from None
    return _check_a(a, "spec")


def _canonical(spec) -> str:
    if isinstance(spec, tuple):
        if len(spec) == 2 and spec[0] in ("g", "q"):
            return f"{spec[0]}:{_G.frac_str(_G.check_v(spec[1], 'spec'))}"
        if len(spec) != 2 or spec[0] != "damped_cubic":
            raise ValueError(f"`spec` as a tuple must be ('damped_cubic', a), ('g', v) or "
                             f"('q', v), got {spec!r}")
        return f"damped_cubic:{_check_a(spec[1], 'spec')!r}"
    if not isinstance(spec, str):
        raise TypeError(f"`spec` must be a link name (str), a Link, ('damped_cubic', a) or "
                        f"('g', v), got {type(spec).__name__}")
    s = spec.strip()
    if s in LINK_NAMES:
        return s
    if s.startswith(("g:", "q:")):
        return f"{s[0]}:{_G.frac_str(_G.check_v(s[2:], 'spec'))}"
    if s in ("g_mu(uniform)", "q_mu(uniform)"):
        return s
    if s.startswith(("g_mu(", "q_mu(")) and s.endswith(")"):
        return _measure_name(s[0], _parse_measure_items(s[5:-1], s))
    if s.startswith("user:"):
        if s not in _USER_LINKS:
            raise ValueError(f"`spec`: no user link {s!r} in this process; build it first with "
                             "popdyn.links_user.from_hermite or popdyn.links_user.from_callable "
                             f"(registered: {sorted(_USER_LINKS) or 'none'})")
        return s
    if s.startswith("damped_cubic:"):
        return f"damped_cubic:{_parse_a(s.split(':', 1)[1])!r}"
    if s.startswith("mixture(") and s.endswith(")"):
        return _mixture_name(_parse_mixture_items(s))
    close = difflib.get_close_matches(s, LINK_NAMES + ("damped_cubic:0.5", "g:1/2"), n=3,
                                      cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"`spec`: unknown link name {spec!r}.{hint} "
                     f"Valid names: {_valid_names_msg()}.")


def _parse_measure_items(body, s):
    """Atoms (w, v) of a probability measure on [1/3, 1] from 'w*g:v, ...' (validated, merged,
    sorted by v, zero weights dropped)."""
    items = []
    for part in body.split(","):
        part = part.strip()
        if "*" not in part or not part.split("*", 1)[1].strip().startswith("g:"):
            raise ValueError(f"`spec`: cannot parse measure atom {part!r} in {s!r} "
                             "(expected 'w*g:v', e.g. '1/2*g:1/3')")
        w, v = part.split("*", 1)
        items.append((w.strip(), v.strip()[2:]))
    return _check_measure(items, "spec")


def _check_measure(pairs, argname):
    """Validated atoms of a probability measure on [1/3, 1]: weights ≥ 0 (exact rationals, see
    :func:`g_mixture`) summing to 1 exactly or within 1e−12; merged by v, sorted, zeros dropped."""
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"`{argname}` must be a sequence of (weight, v) pairs")
    acc = {}
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"`{argname}`: each atom must be a (weight, v) pair, got {pair!r}")
        w = _G.as_rational(pair[0], argname)
        v = _G.check_v(pair[1], argname)
        if w < 0:
            raise ValueError(f"`{argname}`: weights of the measure mu must be >= 0 (a "
                             f"probability measure, eq. (7)), got {_G.frac_str(w)}; use "
                             "popdyn.links.mixture for signed combinations")
        acc[v] = acc.get(v, Fraction(0)) + w
    items = tuple((w, v) for v, w in sorted(acc.items()) if w != 0)
    if not items:
        raise ValueError(f"`{argname}` must contain at least one atom with positive weight")
    tot = sum(w for w, _ in items)
    if tot != 1 and abs(float(tot - 1)) > 1e-12:
        raise ValueError(f"`{argname}`: the weights must sum to 1 (exactly, or within 1e-12), "
                         f"got {float(tot)!r}")
    return items


def _measure_name(prefix, items):
    if len(items) == 1 and items[0][0] == 1:
        return f"{prefix}:{_G.frac_str(items[0][1])}"
    return (f"{prefix}_mu(" + ", ".join(f"{_G.frac_str(w)}*g:{_G.frac_str(v)}" for w, v in items)
            + ")")


def _parse_mixture_items(s):
    body = s[len("mixture("):-1]
    items = []
    for part in body.split(","):
        part = part.strip()
        if "*" not in part:
            raise ValueError(f"`spec`: cannot parse mixture term {part!r} in {s!r} "
                             "(expected 'w*name')")
        w, nm = part.split("*", 1)
        try:
            w = float(w)
        except ValueError:
            raise ValueError(f"`spec`: bad mixture weight {w!r} in {s!r}") from None
        items.append((_check_weight(w, "spec"), get_link(nm.strip())))
    if not items:
        raise ValueError(f"`spec`: empty mixture {s!r}")
    return _flatten(items)


def _check_weight(w, argname):
    if isinstance(w, bool) or not isinstance(w, numbers.Real):
        raise TypeError(f"`{argname}`: mixture weights must be real numbers, "
                        f"got {type(w).__name__}")
    w = float(w)
    if not math.isfinite(w) or w == 0:
        raise ValueError(f"`{argname}`: mixture weights must be finite and nonzero (either "
                         f"sign), got {w!r}")
    return w


def _flatten(items):
    out = []
    for w, l in items:
        if l.components:
            out.extend((w * wl, ll) for wl, ll in l.components)
        else:
            out.append((w, l))
    return tuple(out)


def _mixture_name(items):
    return "mixture(" + ", ".join(f"{w!r}*{l.name}" for w, l in items) + ")"


def _parse_mixture(name):
    return _parse_mixture_items(name)


def get_link(spec) -> Link:
    """Return the link named by ``spec`` (cached).

    Parameters
    ----------
    spec : str, Link or tuple
        A name from ``LINK_NAMES``, ``"damped_cubic:<a>"`` (a float or ratio, a > 0), the
        paper's ``"g:<v>"`` / ``"q:<v>"`` (v ∈ [1/3, 1], exact rational) and
        ``"g_mu(w1*g:v1, ...)"`` / ``"q_mu(...)"``, a mixture name
        ``"mixture(w1*name1, w2*name2, ...)"``, a registered ``"user:<name>"``, a
        :class:`Link` (returned as is), ``("damped_cubic", a)``, ``("g", v)`` or ``("q", v)``.

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid names and a close match), a ≤ 0 or
        non-finite, v outside [1/3, 1], bad mixture or measure weights, unregistered user link.
    TypeError
        ``spec`` of another type.

    Examples
    --------
    >>> g = get_link("h2")
    >>> g.coeffs.tolist(), g.p, g.q
    ([0.0, 0.0, 1.0], 0.0, 0.0)
    >>> get_link(("damped_cubic", 0.5)).name
    'damped_cubic:0.5'
    >>> get_link("g:0.5").name, get_link(("g", 1 / 3)).name
    ('g:1/2', 'g:1/3')
    """
    if isinstance(spec, Link):
        return spec
    return _link_from_name(_canonical(spec))


def mixture(pairs) -> Link:
    """Signed mixture Σ_l w_l g_l of links.

    Parameters
    ----------
    pairs : sequence of (float, str | Link | tuple)
        Weights w_l (finite, nonzero, either sign) and links (any ``get_link`` spec). Nested
        mixtures are flattened (weights multiplied in float64). Tail bounds stay valid for
        negative weights: the Minkowski bounds use |w_l|, Gaussian-polynomial and g_μ
        mixtures are handled exactly.

    Returns
    -------
    Link
        With p = Σ w_l p_l, q = Σ w_l q_l, Ĥ = Σ w_l Ĥ_l, exact moments and tails
        (see the module docstring for how the tails beyond N_tab are obtained).
    """
    if isinstance(pairs, (str, bytes, Link)) or not hasattr(pairs, "__iter__"):
        raise TypeError("`pairs` must be a sequence of (weight, link) pairs")
    items = []
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"`pairs`: each item must be a (weight, link) pair, got {pair!r}")
        w, spec = pair
        items.append((_check_weight(w, "pairs"), get_link(spec)))
    if not items:
        raise ValueError("`pairs` must contain at least one (weight, link) pair")
    return _link_from_name(_mixture_name(_flatten(items)))


def g_mixture(measure, *, normalized: bool = False) -> Link:
    """The paper's link g_μ = ∫ g_v dμ(v) (or q_μ = g_μ/N_μ) for an atomic probability measure μ.

    Kumar (arXiv 2609.39408), eq. (7): g_v(t) = v^{−7/2}(t³ − 3vt)exp(−(1/v − 1)t²/2),
    v ∈ [1/3, 1].

    Parameters
    ----------
    measure : sequence of (weight, v), or "uniform"
        Atoms of μ, or ``"uniform"`` for μ uniform on [1/3, 1] (``g_mu(uniform)``, given by
        its moments (2/3)^j/(j+1)). Weights ≥ 0 and locations v ∈ [1/3, 1] of atoms are read
        as exact rationals: ints, Fractions, strings ("1/3", "0.2" = 1/5 exactly) or floats
        (a float is read as the rational with the smallest denominator that rounds to it:
        0.2 → 1/5, 1/3 → 1/3).
        The weights must sum to 1 exactly or within 1e−12 (they are kept as given, never
        rescaled). Atoms at the same v are merged.
    normalized : bool
        False: g_μ (``g_mu(...)`` / ``g:<v>``). True: q_μ = g_μ/N_μ (``q_mu(...)`` / ``q:<v>``),
        E[q_μ²] = 1.

    Returns
    -------
    Link
        Canonical name ``g_mu(w1*g:v1, w2*g:v2, ...)`` (weights and v as reduced fractions, atoms
        sorted by v), or ``g:<v>`` for a point mass. Its Hermite coefficients are the exact series
        ⟨g_μ, h_{2j+3}⟩ = (−1)^j √((2j+3)!)/(2^j j!)·∫(1 − v)^j dμ (computed at 50 digits), its
        E[g²] = N_μ² = ∬K((1−v)(1−w))dμdμ with K(t) = 3(2+3t)/(1−t)^{7/2}, and its tails beyond
        N_tab are geometric upper bounds (``tail_beyond == "closed-form"``).

    Examples
    --------
    >>> g_mixture([(0.5, 1), (0.5, "1/3")]).name            # paper Table 1, "g_1 + g_{1/3}"
    'g_mu(1/2*g:1/3, 1/2*g:1)'
    >>> g_mixture([(0.2, 0.4), (0.3, 0.7), (0.5, 1)]).name  # "Three-scale mixture"
    'g_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)'
    """
    if not isinstance(normalized, bool):
        raise TypeError(f"`normalized` must be True or False, got {normalized!r}")
    if isinstance(measure, str) and measure == "uniform":
        return get_link(("q" if normalized else "g") + "_mu(uniform)")
    items = _check_measure(measure, "measure")
    return get_link(_measure_name("q" if normalized else "g", items))


#: links registered by from_hermite / from_callable, by canonical name ``user:<name>``
_USER_LINKS: dict = {}


__all__ += ["g_mixture"]
