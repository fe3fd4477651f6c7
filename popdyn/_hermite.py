"""Hermite coefficients of single units and Mehler moments, with tail and error estimates.

Python drivers around :mod:`popdyn._kernels.hermite` and :mod:`popdyn._kernels.mehler`:
input validation, adaptive truncation order, quadrature-rule caching and tail bookkeeping.

Conventions (docs/design.md §2, §3): normalized probabilists' Hermite basis ``h_n = He_n/sqrt(n!)``;
a unit is ``sigma(alpha z + beta)``, ``alpha >= 0``, with the three sequences ``S[n] =
E[sigma h_n]``, ``Dd[n] = E[sigma' h_n]``, ``Dd2[n] = E[alpha sigma'' h_n]``; Mehler:
``E[F_i G_j] = sum_n F_i[n] G_j[n] rho^n``.  The moment matrices of docs/design.md §3 are
``C = mehler(S, S)``, ``B = mehler(Dd, Dd)``, ``A = mehler(Dd2, S)`` (``E[alpha_i sigma''_i
sigma_j]``), ``D = mehler(Dd, S)``.

Quadrature design (smooth activations)
--------------------------------------
``S[n] = int sigma(alpha z + beta) psi_n(z) (2 pi)^{-1/4} e^{-z^2/4} dz`` with the Hermite
functions ``psi_n = h_n e^{-z^2/4} (2 pi)^{-1/4}``, ``|psi_n| <= 0.6862`` for every ``n``
(Cramér).  Because of the remaining factor ``e^{-z^2/4}`` the integrand is below
``0.44 |sigma| e^{-L^2/4}`` beyond ``|z| = L``; with ``L = 14`` that is ``2e-22 |sigma|`` and the
neglected part is bounded explicitly (``T`` of :func:`~popdyn._kernels.hermite.smooth_energies`,
added to the coefficient error estimate).  On ``[-L, L]`` a composite Gauss-Legendre rule of
``order = 20`` points per panel is used, with panel width::

    h = min(12 / sqrt(N + 1),  0.85 pi / alpha_b,  1)

* ``12/sqrt(N+1)``: the local wavenumber of ``psi_N`` is at most ``sqrt(N + 1/2)``, so a panel
  spans a phase of at most 12 rad (< 2 wavelengths, >= 10 nodes per wavelength); the
  Gauss-Legendre error for ``e^{ikx}`` with ``q`` nodes on a panel of phase ``kh`` behaves like
  ``(e kh / 4q)^{2q}``, i.e. ``1e-16`` here.
* ``0.85 pi / alpha_b``: the nearest complex singularity of ``sigma(alpha z + beta)`` in ``z`` is
  at distance ``pi/(2 alpha)`` for tanh (``pi/alpha`` for silu; erf and gelu are entire with
  ``e^{(alpha Im z)^2}`` growth); with half-width ``<= 0.85 d`` the Bernstein ellipse parameter
  is ``>= 2.5`` and ``2.5^{-40} = 1e-16``.  ``alpha_b = 2^{ceil(2 log2 alpha)/2} >= alpha`` is the
  ``alpha``-bucket (powers of sqrt 2, at least 1), so one cached rule serves all units of a
  bucket.
* ``1``: resolution of the Gaussian factors themselves.

Plain Gauss-Hermite is not used: its weights underflow for large orders and it converges slowly
for steep units such as ``tanh(5 z)`` (pole at distance 0.31 from the real axis).  Measured
against a rule with 4x finer panels the coefficients agree to ``<= 1e-15 ||sigma||`` for all four
activations at ``alpha <= 5``, ``N <= 3000``.  Rules are cached per ``(N, alpha-bucket, L,
order)``.

Adaptive order and tails (smooth)
---------------------------------
``N`` grows geometrically (factor 1.5, multiples of 8) from ``nmin`` to ``nmax``.  At level ``N``
the tail beyond ``N`` of each sequence is *estimated* from the last two dyadic blocks,
``B1 = sum_{N/2 < n <= N} c_n^2`` and ``B0 = sum_{N/4 < n <= N/2} c_n^2``: with ``r = B1/B0 < 1``,
``t2 = B1 r/(1 - r)`` (exact if the block ratios keep decreasing, as they do for the
``exp(-tau sqrt n)`` or faster decay of the activations here; measured 3-10x above the truth),
``l1`` likewise from absolute sums, ``sup = sqrt(t2)``.  If the last block is already at the
coefficient noise level it is itself the estimate.  As a safety net, the Parseval difference
``T = E[sigma^2] - sum_{n<=N} c_n^2`` replaces ``t2`` when it exceeds ``t2`` by more than its
own rounding floor ``4 (N+2) u E[sigma^2]`` (``T`` is a difference of O(1) numbers and cannot
resolve tails below ~``1e-16 E[sigma^2]``; that is why the block estimate is primary).
The order is chosen with these estimates; the tails stored with the final rows (what the error
estimates of every moment use) are then capped by the Parseval difference itself, summed
exactly and widened by what its inputs may be off by (:func:`_parseval_cap`): where the tail is
resolved above the coefficients' errors this measures it instead of extrapolating it, and the
block estimate's overshoot of geometric decay (10²–10⁵ at large weights) no longer reaches the
error estimates.
A row is ``converged`` when the tails of ``S`` and ``Dd`` satisfy ``t2 <= rtol * E`` (energy of
the sequence), i.e. ``sqrt(t2_i t2_j) <= rtol sqrt(E_i E_j)``: the truncation error of ``C`` and
``B`` at ``|rho| <= 1`` is then at most ``rtol`` relative to the Cauchy-Schwarz scale
``sqrt(E_i E_j)``.  The common ``N`` is then trimmed to the smallest order at which every row
still meets the criterion (known coefficients plus the estimated tail).  All smooth-unit tails
are *estimates* (``Tails.status``), not bounds.

Piecewise-linear units
----------------------
Closed form (:func:`~popdyn._kernels.hermite.pl_coeffs`), ``N`` given by the caller.  ``sup`` is
Cramér's bound (analytically rigorous, evaluated in float64); ``t2`` of ``S`` and ``Dd`` is the
Parseval difference with its rounding allowance (an estimate, floor ~``(N+2) 1e-16 E``); the
delta sequence ``Dd2`` is not square-summable (``t2 = inf``); ``l1 = inf`` (Cramér only gives a
``1/k`` envelope).
"""
from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from popdyn._kernels import hermite as _kh
from popdyn._kernels import mehler as _km

__all__ = [
    "SILU", "GELU", "TANH", "ERF",
    "Tails", "UnitCoefficients", "unit_coefficients", "mehler_moment", "quadrature_rule",
]

SILU, GELU, TANH, ERF = _kh.SILU, _kh.GELU, _kh.TANH, _kh.ERF
_CODES = {"silu": SILU, "gelu": GELU, "tanh": TANH, "erf": ERF}
_PL = {"relu": (1.0, 0.0), "abs": (2.0, -1.0), "linear": (0.0, 1.0)}
_U = 2.0 ** -53
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

#: Gauss-Legendre points per panel and half-length of the z-interval of the quadrature.
GL_ORDER = 20
Z_HALF_LENGTH = 14.0


# ------------------------------------------------------------------------------------------
# data types
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Tails:
    """Per-row tail quantities of a coefficient sequence truncated at ``N``.

    Attributes
    ----------
    t2 : (m,) ``sum_{n>N} c_n^2`` (inf: not square-summable / unknown).
    sup : (m,) bound on ``sup_{n>N} |c_n|`` (inf: none).
    l1 : (m,) ``sum_{n>N} |c_n|`` (inf: unknown or divergent).
    err : (m,) estimate of the absolute error of every stored coefficient ``c_0..c_N``.
    status : dict mapping "t2", "sup", "l1", "err" to "rigorous" (a bound from an analytic
        inequality, evaluated in float64), "estimate" (a numerical estimate, usually
        conservative, not a proof), or "exact" (known to be zero).
    """

    t2: np.ndarray
    sup: np.ndarray
    l1: np.ndarray
    err: np.ndarray
    status: dict = field(default_factory=dict)

    @property
    def rigorous(self) -> bool:
        """True iff every tail quantity is a rigorous bound (or exact)."""
        return all(v in ("rigorous", "exact") for k, v in self.status.items() if k != "err")

    @classmethod
    def exact(cls, m: int) -> "Tails":
        """Tails of m sequences that are exactly zero beyond N and stored without error."""
        z = np.zeros(m)
        return cls(z, z.copy(), z.copy(), z.copy(),
                   {"t2": "exact", "sup": "exact", "l1": "exact", "err": "exact"})

    def extend(self, C: np.ndarray, n_new: int) -> "Tails":
        """Tails at the lower truncation order ``n_new`` of the sequences ``C`` (m, N+1).

        The dropped coefficients enter with their error allowance ``|c_n| + err``.
        """
        drop = np.asarray(C)[:, n_new + 1:]
        if drop.shape[1] == 0:
            return self
        a = np.abs(drop) + self.err[:, None]
        return Tails(self.t2 + np.sum(a * a, axis=1), np.maximum(self.sup, a.max(axis=1)),
                     self.l1 + a.sum(axis=1), self.err, dict(self.status))


@dataclass(frozen=True, eq=False)
class UnitCoefficients:
    """Normalized Hermite coefficients of m units (see module docstring).

    Attributes
    ----------
    S, Dd, Dd2 : (m, N+1) arrays of ``E[sigma h_n]``, ``E[sigma' h_n]``, ``E[alpha sigma'' h_n]``.
    N : truncation order.
    tails_S, tails_Dd, tails_Dd2 : :class:`Tails` beyond ``N``.
    energy : (m, 3) ``E[sigma^2], E[sigma'^2], E[(alpha sigma'')^2]`` (inf where infinite).
    converged : (m,) bool, the ``S`` and ``Dd`` tails meet ``t2 <= rtol * energy``.
    kind, code, p, q, al, be, rtol : the request.
    """

    S: np.ndarray
    Dd: np.ndarray
    Dd2: np.ndarray
    N: int
    tails_S: Tails
    tails_Dd: Tails
    tails_Dd2: Tails
    energy: np.ndarray
    converged: np.ndarray
    kind: str
    code: int | None
    p: float | None
    q: float | None
    al: np.ndarray
    be: np.ndarray
    rtol: float

    @property
    def rigorous(self) -> bool:
        """True iff the tails of all three sequences are rigorous bounds (never for smooth)."""
        return self.tails_S.rigorous and self.tails_Dd.rigorous and self.tails_Dd2.rigorous

    def seq(self, name: str):
        """(coefficients, tails) of the sequence ``"S"``, ``"Dd"`` or ``"Dd2"``."""
        if name not in ("S", "Dd", "Dd2"):
            raise ValueError(f"`name` must be 'S', 'Dd' or 'Dd2', got {name!r}")
        return getattr(self, name), getattr(self, "tails_" + name)


# ------------------------------------------------------------------------------------------
# quadrature
# ------------------------------------------------------------------------------------------
def _alpha_bucket(a: float) -> int:
    """k >= 0 with alpha <= 2^(k/2) (powers of sqrt 2)."""
    if a <= 1.0:
        return 0
    k = int(math.ceil(2.0 * math.log2(a)))
    while 2.0 ** (k / 2.0) < a:  # guard against log rounding
        k += 1
    return k


@functools.lru_cache(maxsize=128)
def _rule_cached(N: int, bucket: int, L: float, order: int, h_cap: float = 1.0):
    """Panels of width min(12/√(N+1), 0.85π/α_b, ``h_cap``) with ``order`` Gauss–Legendre
    points each on [−L, L] (α_b = 2^{bucket/2}); read-only arrays."""
    alpha_b = 2.0 ** (bucket / 2.0)
    h = min(12.0 / math.sqrt(N + 1.0), 0.85 * math.pi / alpha_b, h_cap)
    panels = int(math.ceil(2.0 * L / h))
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(-L, L, panels + 1)
    half = 0.5 * (edges[1:] - edges[:-1])
    mid = 0.5 * (edges[1:] + edges[:-1])
    nodes = (mid[:, None] + half[:, None] * x[None, :]).ravel()
    weights = (half[:, None] * w[None, :]).ravel()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def quadrature_rule(N: int, alpha: float, *, L: float = Z_HALF_LENGTH, order: int = GL_ORDER):
    """Cached composite Gauss-Legendre rule (nodes, weights) on [-L, L] for order N, scale alpha.

    See the module docstring for the design.  Arrays are read-only.
    """
    return _rule_cached(int(N), _alpha_bucket(float(alpha)), float(L), int(order))


# ------------------------------------------------------------------------------------------
# input validation
# ------------------------------------------------------------------------------------------
def _as_vec(x, name):
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValueError(f"`{name}` must be a scalar or 1-dimensional, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"`{name}` must be finite")
    return np.ascontiguousarray(a)


def _check_int(x, name, lo):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"`{name}` must be an int, got {type(x).__name__}")
    if x < lo:
        raise ValueError(f"`{name}` must be >= {lo}, got {x}")
    return int(x)


# ------------------------------------------------------------------------------------------
# unit coefficients
# ------------------------------------------------------------------------------------------
def unit_coefficients(kind, al, be, *, p=None, q=None, code=None, n=None, rtol=1e-10,
                      nmin=8, nmax=4096, L=Z_HALF_LENGTH):
    """Normalized Hermite coefficients ``S, Dd, Dd2`` of the units ``sigma(al z + be)``.

    Parameters
    ----------
    kind : ``"pl"`` (``sigma = p relu + q id``, closed form; needs ``p``, ``q`` and ``n``) or
        ``"smooth"`` (needs ``code`` in SILU, GELU, TANH, ERF; adaptive order).  The names
        ``"relu"``, ``"abs"`` (PL) and ``"silu"``, ``"gelu"``, ``"tanh"``, ``"erf"`` (smooth) are
        accepted as shorthands.
    al, be : (m,) or scalar; ``al >= 0`` (``al = 0``: constant unit, exact).
    p, q : float, PL shape (relu (1, 0); leaky slope s: (1-s, s); abs (2, -1)).
    code : int, smooth activation code.
    n : int, truncation order for PL units (>= 1, required); for smooth units an optional
        minimum order (the adaptive order is raised to at least ``n``), used to bring units of
        different activations to a common order before pairing them (see
        :func:`mehler_moment`).
    rtol : target relative accuracy of the Mehler moments (smooth: convergence criterion
        ``t2 <= rtol * E`` for S and Dd; PL: only sets ``converged``).
    nmin, nmax : range of the adaptive order (smooth).
    L : half-length of the z-interval of the quadrature (smooth).

    Returns
    -------
    UnitCoefficients

    Notes
    -----
    Smooth units that do not meet ``rtol`` by ``nmax`` come back with ``converged = False`` and
    the tail estimates reached (possibly inf); nothing is silently truncated.
    """
    if isinstance(kind, str) and kind in _CODES:
        if code is not None and code != _CODES[kind]:
            raise ValueError(f"`code` {code} contradicts `kind`={kind!r}")
        kind, code = "smooth", _CODES[kind]
    elif isinstance(kind, str) and kind in _PL:
        pq = _PL[kind]
        if (p is not None and p != pq[0]) or (q is not None and q != pq[1]):
            raise ValueError(f"`p`, `q` contradict `kind`={kind!r}")
        kind, (p, q) = "pl", pq
    if kind not in ("pl", "smooth"):
        raise ValueError(f"`kind` must be 'pl', 'smooth' or an activation name, got {kind!r}")
    al = _as_vec(al, "al")
    be = _as_vec(be, "be")
    if al.shape != be.shape:
        raise ValueError(f"`al` and `be` must have the same shape, got {al.shape} and {be.shape}")
    if np.any(al < 0):
        raise ValueError("`al` must be >= 0 (alpha is the norm of a weight vector)")
    if not (isinstance(rtol, numbers.Real) and 0 < rtol < 1):
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    if kind == "pl":
        if p is None or q is None:
            raise ValueError("`p` and `q` are required for kind='pl'")
        p, q = float(p), float(q)
        if not (math.isfinite(p) and math.isfinite(q)):
            raise ValueError("`p` and `q` must be finite")
        if n is None:
            raise ValueError("`n` (truncation order) is required for kind='pl'")
        n = _check_int(n, "n", 1)
        return _pl_coefficients(p, q, al, be, n, float(rtol))
    if code not in (SILU, GELU, TANH, ERF):
        raise ValueError(f"`code` must be one of SILU=1, GELU=2, TANH=3, ERF=4, got {code!r}")
    nmin = _check_int(nmin, "nmin", 4)
    nmax = _check_int(nmax, "nmax", nmin)
    nfloor = 0 if n is None else _check_int(n, "n", 0)
    nmax = max(nmax, nfloor)
    if not (isinstance(L, numbers.Real) and 8.0 <= L <= 30.0):
        raise ValueError(f"`L` must be a float in [8, 30], got {L!r}")
    return _smooth_coefficients(int(code), al, be, float(rtol), nmin, nmax, float(L), nfloor)


def _pl_coefficients(p, q, al, be, N, rtol):
    m = al.shape[0]
    S = np.empty((m, N + 1))
    Dd = np.empty((m, N + 1))
    Dd2 = np.empty((m, N + 1))
    _kh.pl_coeffs(p, q, al, be, S, Dd, Dd2)
    E = np.empty((m, 3))
    _kh.pl_energies(p, q, al, be, E)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        b = np.where(al > 0, be / np.where(al > 0, al, 1.0), 0.0)
        env = np.where(al > 0, abs(p) * _kh.CRAMER * _INV_SQRT_2PI * np.exp(-0.25 * b * b), 0.0)
    trivial = (al == 0) | (p == 0.0)  # S[k>=2], Dd[n>=1], Dd2 vanish exactly
    # coefficient error estimate: recurrence and products.  The orders n <= 1 (the affine part,
    # E[sigma] and E[sigma'] from Phi(b), phi(b)) are accurate relative to the largest
    # coefficient; the orders n >= 2 are phi(b) He_{n-2}(b)-type terms bounded by the Cramér
    # envelope env * max(alpha, 1), and the rounding of b = beta/alpha moves them by ~ b^2 u
    # relative to that envelope (the conditioning ``cond``).  So the error is the rounding floor
    # of the largest coefficient plus cond times that of the envelope: for a nearly affine unit
    # (|b| large) env * cond = (1 + b^2) e^{-b^2/4} -> 0 and the estimate stays at rounding
    # (the factor cond must not multiply E[sigma] ~ beta, which is computed to full accuracy).
    # The recurrence error of h_k grows at most linearly, 8(k + 2)u relative to the envelope;
    # S_n = p α φ(b) h_{n-2}/√(n(n−1)) and Dd_n = p φ(b) h_{n-1}/√n carry the decay of their
    # divisors, so their errors are at most 8u·max_n (n + 2)/√(n(n−1)) ≤ 8u·2√2 (S) and
    # 8u·max(3, (N + 2)/√N) (Dd) times the envelope; Dd2_n = p φ(b) h_n keeps 8(N + 2)u.  (The
    # uniform 8(N + 2)u of every row overstated the errors of S by ~10⁵ at N ≈ 2000, measured
    # against the mpmath closed forms: tests/popdyn/test_grad_estimate.py.)
    with np.errstate(over="ignore"):
        cond = 1.0 + np.minimum(b * b, 1e30)
    envs = env * np.maximum(al, 1.0)
    gd = max(3.0, (N + 2.0) / math.sqrt(max(N, 1)))
    err = 8.0 * _U * (4.0 * np.abs(S).max(axis=1) + 2.0 * math.sqrt(2.0) * envs * cond)
    err_d = 8.0 * _U * (4.0 * np.abs(Dd).max(axis=1) + gd * env * cond)
    err_d2 = 8.0 * (N + 2) * _U * env * cond

    def parseval(C, e):
        s = np.sum(C * C, axis=1)
        return np.maximum(e - s, 0.0) + 4.0 * (N + 2) * _U * e

    inf = np.full(m, np.inf)
    st = {"t2": "estimate", "sup": "rigorous", "l1": "unknown", "err": "estimate"}
    tS = Tails(np.where(trivial, 0.0, parseval(S, E[:, 0])),
               np.where(trivial, 0.0, al * env / math.sqrt((N + 1.0) * N)),
               np.where(trivial, 0.0, inf), err, dict(st))
    tD = Tails(np.where(trivial, 0.0, parseval(Dd, E[:, 1])),
               np.where(trivial, 0.0, env / math.sqrt(N + 1.0)),
               np.where(trivial, 0.0, inf), err_d, dict(st))
    tD2 = Tails(np.where(trivial, 0.0, inf), np.where(trivial, 0.0, env),
                np.where(trivial, 0.0, inf), err_d2,
                {"t2": "rigorous", "sup": "rigorous", "l1": "unknown", "err": "estimate"})
    conv = (tS.t2 <= rtol * E[:, 0]) & (tD.t2 <= rtol * E[:, 1])
    return UnitCoefficients(S, Dd, Dd2, N, tS, tD, tD2, E, conv, "pl", None, p, q, al, be, rtol)


def _next_order(N, nmax):
    nn = int(math.ceil(1.5 * N / 8.0)) * 8
    return min(max(nn, N + 8), nmax)


def _block_tails(C, E, nu):
    """(t2, sup, l1) tail estimates beyond N = C.shape[1]-1 from the last two dyadic blocks."""
    m, n1 = C.shape
    N = n1 - 1
    h, qq = N // 2, N // 4
    c2 = C * C
    ac = np.abs(C)
    B1 = c2[:, h + 1:].sum(axis=1)
    B0 = c2[:, qq + 1:h + 1].sum(axis=1)
    A1 = ac[:, h + 1:].sum(axis=1)
    A0 = ac[:, qq + 1:h + 1].sum(axis=1)
    s1 = ac[:, h + 1:].max(axis=1) if N > h else np.zeros(m)
    t2 = np.full(m, np.inf)
    l1 = np.full(m, np.inf)
    sup = np.full(m, np.inf)
    noise = B1 <= (N - h) * (3.0 * nu) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(B0 > 0, B1 / B0, np.inf)
        r1 = np.where(A0 > 0, A1 / A0, np.inf)
    dec = ~noise & (r < 1.0)
    t2[dec] = B1[dec] * r[dec] / (1.0 - r[dec])
    sup[dec] = np.sqrt(t2[dec])
    d1 = dec & (r1 < 1.0)
    l1[d1] = A1[d1] * r1[d1] / (1.0 - r1[d1])
    t2[noise] = B1[noise]
    sup[noise] = s1[noise]
    l1[noise] = A1[noise]
    # Parseval safety net
    T = E - c2.sum(axis=1)
    floor = 4.0 * (N + 2) * _U * E
    big = T - floor > t2
    t2[big] = T[big]
    sup[big] = np.maximum(sup[big], np.sqrt(T[big]))
    return t2, sup, l1


def _smooth_level(code, al, be, N, L):
    """Coefficients, energies and error scales of all rows at order N (rules per bucket)."""
    m = al.shape[0]
    S = np.zeros((m, N + 1))
    Dd = np.zeros((m, N + 1))
    Dd2 = np.zeros((m, N + 1))
    E = np.empty((m, 3))
    nu = np.empty((m, 3))
    buckets = np.array([_alpha_bucket(a) for a in al])
    for bk in np.unique(buckets):
        idx = np.nonzero(buckets == bk)[0]
        nodes, weights = _rule_cached(N, int(bk), L, GL_ORDER)
        a = np.ascontiguousarray(al[idx])
        b = np.ascontiguousarray(be[idx])
        s = np.empty((idx.size, N + 1))
        d = np.empty((idx.size, N + 1))
        d2 = np.empty((idx.size, N + 1))
        _kh.smooth_coeffs(code, a, b, nodes, weights, s, d, d2)
        e = np.empty((idx.size, 3))
        m1 = np.empty((idx.size, 3))
        tr = np.empty((idx.size, 3))
        _kh.smooth_energies(code, a, b, nodes, weights, L, e, m1, tr)
        S[idx], Dd[idx], Dd2[idx], E[idx] = s, d, d2, e
        nu[idx] = 2.0 * math.sqrt(nodes.size) * _U * m1 + tr
    return S, Dd, Dd2, E, nu


def _smooth_coefficients(code, al, be, rtol, nmin, nmax, L, nfloor=0):
    m = al.shape[0]
    const = al == 0.0
    done = const.copy()          # rows finished (converged or exact)
    store = {}                   # row -> (N, S, Dd, Dd2, E, nu, tails3, ntrim)
    N = nmin
    while True:
        act = np.nonzero(~done)[0]
        if act.size == 0:
            break
        S, Dd, Dd2, E, nu = _smooth_level(code, al[act], be[act], N, L)
        tl = [_block_tails(C, E[:, s], nu[:, s]) for s, C in enumerate((S, Dd, Dd2))]
        ok = (tl[0][0] <= rtol * E[:, 0]) & (tl[1][0] <= rtol * E[:, 1])
        last = N >= nmax
        for k, i in enumerate(act):
            if ok[k] or last:
                ntrim = N
                if ok[k]:
                    ntrim = max(_trim(S[k], tl[0][0][k], rtol * E[k, 0]),
                                _trim(Dd[k], tl[1][0][k], rtol * E[k, 1]))
                store[i] = (N, S[k], Dd[k], Dd2[k], E[k], nu[k],
                            [tuple(t[c][k] for c in range(3)) for t in tl], ntrim, bool(ok[k]))
                done[i] = True
        if last:
            break
        N = _next_order(N, nmax)
    # common order
    Nf = max([v[7] for v in store.values()] + [min(nmin, nmax), nfloor])
    redo = [i for i, v in store.items() if v[0] < Nf]
    if redo:
        ridx = np.array(sorted(redo))
        S, Dd, Dd2, E, nu = _smooth_level(code, al[ridx], be[ridx], Nf, L)
        tl = [_block_tails(C, E[:, s], nu[:, s]) for s, C in enumerate((S, Dd, Dd2))]
        for k, i in enumerate(ridx):
            old = store[i][6]
            new = [tuple(min(t[c][k], old[s][c]) for c in range(3)) for s, t in enumerate(tl)]
            store[i] = (Nf, S[k], Dd[k], Dd2[k], E[k], nu[k], new, Nf, store[i][8])
    out = [np.zeros((m, Nf + 1)) for _ in range(3)]
    tails = [[np.zeros(m) for _ in range(4)] for _ in range(3)]  # t2, sup, l1, err
    energy = np.zeros((m, 3))
    conv = np.ones(m, dtype=bool)
    if np.any(const):
        ci = np.nonzero(const)[0]
        s = np.empty((ci.size, Nf + 1))
        d = np.empty((ci.size, Nf + 1))
        d2 = np.empty((ci.size, Nf + 1))
        z = np.zeros(1)
        _kh.smooth_coeffs(code, al[ci], np.ascontiguousarray(be[ci]), z, z, s, d, d2)
        e = np.empty((ci.size, 3))
        _kh.smooth_energies(code, al[ci], np.ascontiguousarray(be[ci]), z, z, L, e,
                            np.empty((ci.size, 3)), np.empty((ci.size, 3)))
        out[0][ci], out[1][ci], out[2][ci], energy[ci] = s, d, d2, e
    for i, v in store.items():
        seqs, E_i, nu_i, tl_i, conv_i = v[1:4], v[4], v[5], v[6], v[8]
        energy[i] = E_i
        conv[i] = conv_i
        for s in range(3):
            C = seqs[s]
            t2, sup, l1 = tl_i[s]
            drop = np.abs(C[Nf + 1:]) + nu_i[s]  # with the coefficient error allowance
            if drop.size:
                t2 = t2 + float(np.sum(drop * drop))
                sup = max(sup, float(drop.max()))
                l1 = l1 + float(drop.sum())
            out[s][i] = C[:Nf + 1]
            cap = _parseval_cap(out[s][i], E_i[s], nu_i[s])
            if cap < t2:
                t2, sup = cap, min(sup, math.sqrt(cap))
            tails[s][0][i], tails[s][1][i], tails[s][2][i], tails[s][3][i] = t2, sup, l1, nu_i[s]
    st = {"t2": "estimate", "sup": "estimate", "l1": "estimate", "err": "estimate"}
    T = [Tails(*tails[s], status=dict(st)) for s in range(3)]
    return UnitCoefficients(out[0], out[1], out[2], Nf, T[0], T[1], T[2], energy, conv,
                            "smooth", code, None, None, al, be, rtol)


def _parseval_cap(c, E, nu):
    """An upper estimate of the tail Σ_{n>N} c_n² of a smooth row from Parseval's identity:
    T = E[f²] − Σ_{n≤N} c_n² (the sum exactly rounded, :func:`math.fsum`) plus what T's inputs
    may be off by — 2‖c‖₂‖δc‖₂ + ‖δc‖₂² for coefficient errors δc, with the row's error scale
    ``nu`` read as ‖δc‖₂ (as the gradient's error estimates read it), ν·√E for the rule's error
    in E, and the rss rounding 4√(N+1)·u·E of the energy's sum.

    The block estimates of :func:`_block_tails` extrapolate the decay of the last blocks and
    overshoot geometric decay by 10²–10⁵ (the next dyadic block decays like the square of the
    last ratio); where the tail is resolved above these uncertainties T measures it directly.
    The order of the series is still chosen by the block estimates: only the error estimates of
    the final rows are capped (inf when E is not finite)."""
    if not (math.isfinite(E) and math.isfinite(nu)):
        return math.inf
    N = c.shape[0] - 1
    T = E - math.fsum((c * c).tolist())
    rE = math.sqrt(max(E, 0.0))
    return max(T, 0.0) + 8.0 * nu * rE + nu * nu + 4.0 * math.sqrt(N + 1.0) * _U * E


def _trim(c, t2N, target):
    """Smallest n' such that sum_{n' < n <= N} c_n^2 + t2N <= target (N if none)."""
    N = c.size - 1
    if not (t2N <= target):
        return N
    tail = np.cumsum((c * c)[::-1])[::-1]  # tail[k] = sum_{n >= k} c_n^2
    tot = np.append(tail[1:], 0.0) + t2N     # tot[n'] = sum_{n > n'} c_n^2 + t2N
    ok = np.nonzero(tot <= target)[0]
    return int(ok[0]) if ok.size else N


# ------------------------------------------------------------------------------------------
# Mehler moments
# ------------------------------------------------------------------------------------------
def _as_tails(t, C, name):
    m = C.shape[0]
    if t is None:
        return Tails.exact(m)
    if isinstance(t, Tails):
        parts = [t.t2, t.sup, t.l1, t.err]
    elif isinstance(t, (tuple, list)) and len(t) in (3, 4):
        parts = list(t) + ([np.zeros(m)] if len(t) == 3 else [])
    else:
        raise TypeError(f"`{name}` must be a Tails, a tuple (t2, sup, l1[, err]) or None")
    arrs = []
    for k, a in zip(("t2", "sup", "l1", "err"), parts):
        a = np.broadcast_to(np.asarray(a, dtype=np.float64), (m,))
        if np.any(np.isnan(a)) or np.any(a < 0):
            raise ValueError(f"`{name}.{k}` must be >= 0 (inf allowed), no nan")
        arrs.append(np.ascontiguousarray(a))
    st = t.status if isinstance(t, Tails) else {}
    return Tails(*arrs, status=dict(st))


def mehler_moment(cx_seq, cy_seq, tails_x, tails_y, R):
    """Mehler moments ``sum_n X[i,n] Y[j,n] R[i,j]^n`` and an entrywise error estimate.

    Parameters
    ----------
    cx_seq, cy_seq : (m1, N1+1), (m2, N2+1) normalized coefficients; the longer one is truncated
        to the common order and its dropped coefficients are added to its tails.
    tails_x, tails_y : :class:`Tails`, a tuple ``(t2, sup, l1[, err])`` or ``None`` (exact: zero
        beyond N and stored without error, e.g. a polynomial link).
    R : (m1, m2) correlations; entries within 1e-12 outside [-1, 1] are clipped.

    Notes
    -----
    The sum runs to the common order ``min(N1, N2)``: a unit computed to a lower order than its
    partner limits the accuracy (its partner's tail beyond that order enters the error).  Bring
    both to a common order first (``unit_coefficients(..., n=max(N1, N2))``); units computed in
    one call share their order.  For a piecewise-linear partner (slowly decaying coefficients)
    near ``|rho| = 1`` the error is about ``sqrt(t2_pl t2_smooth)``, so request the smooth side
    with a smaller ``rtol`` (e.g. 1e-16) when such pairs must meet 1e-10.

    Returns
    -------
    value, error : (m1, m2) arrays; ``error`` is
        :func:`~popdyn._kernels.mehler.mehler_error` (inf where the tails cannot bound the
        truncation), as rigorous as the tails passed in.
    """
    X = np.ascontiguousarray(np.asarray(cx_seq, dtype=np.float64))
    Y = np.ascontiguousarray(np.asarray(cy_seq, dtype=np.float64))
    for nm, A in (("cx_seq", X), ("cy_seq", Y)):
        if A.ndim != 2 or A.shape[1] < 1:
            raise ValueError(f"`{nm}` must be 2-dimensional (m, N+1), got shape {A.shape}")
        if not np.all(np.isfinite(A)):
            raise ValueError(f"`{nm}` must be finite")
    R = np.ascontiguousarray(np.asarray(R, dtype=np.float64))
    if R.shape != (X.shape[0], Y.shape[0]):
        raise ValueError(f"`R` must have shape {(X.shape[0], Y.shape[0])}, got {R.shape}")
    if not np.all(np.isfinite(R)) or np.any(np.abs(R) > 1.0 + 1e-12):
        raise ValueError("`R` must be finite with |R| <= 1")
    R = np.clip(R, -1.0, 1.0)
    tx = _as_tails(tails_x, X, "tails_x")
    ty = _as_tails(tails_y, Y, "tails_y")
    return _mehler_core(cx_seq is cy_seq, X, Y, tx, ty, R, True)


def _internal_tails(t, m: int) -> "Tails":
    """``t`` itself when it is a Tails of float64 (m,) arrays (as built internally), else
    the validated copy of :func:`_as_tails`."""
    if isinstance(t, Tails):
        parts = (t.t2, t.sup, t.l1, t.err)
        if all(isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (m,)
               and a.flags.c_contiguous for a in parts):
            return t
    return _as_tails(t, np.empty((m, 1)), "tails")


def mehler_moment_internal(cx_seq, cy_seq, tails_x, tails_y, R, want_error: bool = True,
                           rss: bool = False, trunc_cap=None):
    """:func:`mehler_moment` without the input checks, for internal callers.

    The inputs must come from :func:`unit_coefficients` / the link tables (finite float64
    coefficients) and from the engine's geometry (|R| ≤ 1 up to rounding; clipped here); the
    result is bit-identical to :func:`mehler_moment`.  With ``want_error=False`` the error
    array is not computed (None is returned in its place).  With ``rss`` the rounding part of
    the error is the root-sum-square estimate 4√(N+1)·u·Σ|X_nY_n|rⁿ of the Horner sum instead
    of the worst-case bound 4(N+1)·u·Σ|X_nY_n|rⁿ (at N in the thousands the bound exceeds the
    rounding actually made by √N, and it grows with every refinement of the order); the
    truncation and coefficient terms are unchanged.  ``trunc_cap`` (with ``rss``): an (m1, m2)
    array of sharper truncation estimates; the truncation term is the smaller of the two.
    """
    X = np.ascontiguousarray(cx_seq, dtype=np.float64)
    Y = X if cy_seq is cx_seq else np.ascontiguousarray(cy_seq, dtype=np.float64)
    R = np.clip(np.asarray(R, dtype=np.float64), -1.0, 1.0)
    tx = _internal_tails(tails_x, X.shape[0])
    ty = tx if (tails_y is tails_x and cy_seq is cx_seq) else _internal_tails(tails_y, Y.shape[0])
    return _mehler_core(cx_seq is cy_seq, X, Y, tx, ty, R, want_error, rss, trunc_cap)


def _mehler_core(same, X, Y, tx, ty, R, want_error, rss=False, trunc_cap=None):
    Nc = min(X.shape[1], Y.shape[1]) - 1
    if X.shape[1] - 1 > Nc:
        tx = tx.extend(X, Nc)
        X = np.ascontiguousarray(X[:, :Nc + 1])
    if Y.shape[1] - 1 > Nc:
        ty = ty.extend(Y, Nc)
        Y = np.ascontiguousarray(Y[:, :Nc + 1])
    val = np.empty(R.shape)
    if same and np.array_equal(R, R.T):
        _km.mehler_sym(X, R, val)
    else:
        _km.mehler(X, Y, R, val)
    if not want_error:
        return val, None
    err = np.empty(R.shape)
    _km.mehler_error(X, Y, R, tx.t2, tx.sup, tx.l1, tx.err, ty.t2, ty.sup, ty.l1, ty.err, err)
    if rss and Nc > 0:
        err = _rss_error(X, Y, R, tx, ty, err, Nc, trunc_cap)
    return val, err


def _rss_error(X, Y, R, tx, ty, err, Nc, trunc_cap=None):
    """The ``rss`` form of the error estimate ``err`` of :func:`mehler_error` (same truncation
    term): Horner's rounding as its root-sum-square size 4√(N+1)·u·Σ|X_nY_n|rⁿ, and the
    coefficient errors by Cauchy–Schwarz, |Σ (δX_n Y_n + X_n δY_n + δX_n δY_n) ρⁿ| ≤
    ‖δX‖₂‖(Y_n rⁿ)‖₂ + ‖(X_n rⁿ)‖₂‖δY‖₂ + ‖δX‖₂‖δY‖₂, with the rows' ``err`` read as estimates
    of the ℓ² norms ‖δX‖₂, ‖δY‖₂ of their coefficient-error vectors (they bound every entry, and
    measured against closed forms they bound the ℓ² norm too: tests/popdyn/test_grad_estimate.py)
    instead of the entrywise bound times the ℓ¹ sums Σ|Y_n|rⁿ, which at |ρ| ≈ 1 and slowly
    decaying coefficients (|w| ≈ 5) overshoot the true error by 10²–10⁴."""
    zx, zy = np.zeros(X.shape[0]), np.zeros(Y.shape[0])
    rnd = np.empty(R.shape)
    _km.mehler_error(X, Y, R, zx, zx, zx, zx, zy, zy, zy, zy, rnd)
    cr = np.empty(R.shape)                      # entrywise coefficient term + rounding
    _km.mehler_error(X, Y, R, zx, zx, zx, tx.err, zy, zy, zy, ty.err, cr)
    trunc = np.maximum(err - cr, 0.0)
    if trunc_cap is not None:
        trunc = np.minimum(trunc, trunc_cap)
    R2 = R * R
    sx2 = np.empty(R.shape)
    sy2 = np.empty(R.shape)
    _km.mehler(np.ascontiguousarray(X * X), np.ones((Y.shape[0], Nc + 1)), R2, sx2)
    _km.mehler(np.ones((X.shape[0], Nc + 1)), np.ascontiguousarray(Y * Y), R2, sy2)
    ex, ey = tx.err[:, None], ty.err[None, :]
    coef = ex * np.sqrt(sy2) + np.sqrt(sx2) * ey + ex * ey
    # never above the entrywise form (ℓ² ≤ ℓ¹ for the same ex, ey)
    coef = np.minimum(coef, np.maximum(cr - rnd, 0.0))
    return trunc + coef + rnd / math.sqrt(Nc + 1.0)
