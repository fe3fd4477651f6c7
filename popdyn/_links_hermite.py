"""Hermite parts of the teacher links, computed in mpmath (:mod:`popdyn.links`, "Representation").

The private mpmath context ``_ctx`` (the global mpmath precision is never touched), the float64
rounding helpers (to nearest, upward), :class:`_HData` (coefficients, the tail beyond N_tab
and how it is bounded) and its sources: Gaussian-polynomial links P(z)·exp(−a z²/2) by the
generating function and the Jacobi operator (:func:`_hdata_gp`), ``sin`` in closed form
(:func:`_hdata_sin`), the paper's g_μ from the exact series of :mod:`popdyn._links_g`
(:func:`_hdata_gmu`, :func:`_hdata_gmu_uniform`) and the tabulated tanh and silu
(:func:`_hdata_tab`, ``data/links/links.npz``).  Tails beyond N_tab come from Parseval
residuals with Sobolev bounds (:func:`_beyond_from_residuals`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import mpmath
import numpy as np
from mpmath import libmp

from . import _links_g as _G


N_TAB = 512
"""Number of tabulated Hermite coefficients (minus one) for non-polynomial Hermite parts."""


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
