"""A-priori bounds of the discarded Hermite tails of smooth units (silu, gelu, tanh).

A smooth unit's derivative f(z) = σ′(αz + β), z ~ N(0, 1), has the normalized Hermite
coefficients Dd_n = E[f h_n] (h_n = He_n/√n!, docs/design.md §2).  Since h_n′ = √n h_{n−1},

    Σ_n n(n−1)…(n−k+1) Dd_n² = E[(f^{(k)})²] = α^{2k} E[σ^{(k+1)}(αz + β)²]     (k ≥ 1),

and n(n−1)…(n−k+1) increases with n, so for every k ≤ N + 1

    t2(N) = Σ_{n>N} Dd_n² ≤ α^{2k} E[σ^{(k+1)}(αz + β)²] / ((N+1)N…(N−k+2))
          ≤ α^{2k−1} c_{k+1} / (√(2π) (N+1)N…(N−k+2)),

with c_j = ∫ σ^{(j)}(t)² dt (the Gaussian density of αz + β is at most 1/(α√(2π))).  The bound
is the minimum over k = 1 … :data:`K_MAX`; it needs only α, β, N and a table of c_j, so it
costs nothing next to the series.  It sees what the a-posteriori change of a series between two
tolerances cannot: a unit so steep (|w| ≳ 8 for tanh, 15–20 for silu and gelu at the order cap
4096) that its coefficients have not started to decay at the order reached.

The constants c_j are computed once per activation from Plancherel's identity
c_{k+1} = (1/2π)∫ ω^{2(k−1)} |Ĝ(ω)|² dω, Ĝ the Fourier transform of σ″:

* tanh: σ″ = (sech²)′, |Ĝ|² = π²ω⁴/sinh²(πω/2);
* silu: σ″ = 2s′ + t s″ (s the logistic function), Ĝ = π²ω² cosh(πω)/sinh²(πω);
* gelu: σ″ = (2 − t²)φ(t), Ĝ = (1 + ω²)e^{−ω²/2};

evaluated by a composite Gauss–Legendre rule in the log domain (relative accuracy ~1e−13,
enlarged by :data:`SAFETY` so that the table stays an upper bound).  erf is not tabulated: its
B = E[erf′ erf′] has a closed form in the engine.

The module also evaluates the moments themselves by direct quadrature (no series): the diagonal
B_ii = E[σ′(α_i z + β_i)²] (1-D) and an off-diagonal B_ij = E[σ′(α_iU + β_i)σ′(α_jV + β_j)]
with corr(U, V) = ρ (nested 1-D rules), on the engine's composite Gauss–Legendre panels
(panel width ≤ 0.85π/α as in :func:`popdyn._hermite.quadrature_rule`, so the nearest complex
singularity of the integrand stays outside the panels' Bernstein ellipses of parameter ≥ 2.5),
each with the change on a rule √2 finer as its error estimate.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ._hermite import GELU, SILU, TANH, Z_HALF_LENGTH

#: the largest derivative order k of the bound
K_MAX = 240
#: relative enlargement of the tabulated constants (their quadrature error is ~1e−13)
SAFETY = 1.0 + 1e-9
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_NAMES = {SILU: "silu", GELU: "gelu", TANH: "tanh"}


def _log_sinh(x):
    """log sinh(x) for x > 0 without overflow."""
    return x + np.log1p(-np.exp(-2.0 * x)) - math.log(2.0)


def _log_ghat2(code: int, w):
    """log |Ĝ(ω)|², Ĝ the Fourier transform of σ″ (module docstring), ω > 0."""
    lw = np.log(w)
    if code == TANH:
        return 2.0 * math.log(math.pi) + 4.0 * lw - 2.0 * _log_sinh(0.5 * math.pi * w)
    if code == SILU:
        x = math.pi * w
        log_cosh = x + np.log1p(np.exp(-2.0 * x)) - math.log(2.0)
        return 4.0 * math.log(math.pi) + 4.0 * lw + 2.0 * log_cosh - 4.0 * _log_sinh(x)
    if code == GELU:
        return 2.0 * np.log1p(w * w) - w * w
    raise ValueError(f"`code` must be one of SILU={SILU}, GELU={GELU}, TANH={TANH}, got {code!r}")


@functools.lru_cache(maxsize=None)
def log_derivative_norms(code: int) -> np.ndarray:
    """log c_{k+1} = log ∫ σ^{(k+1)}(t)² dt for k = 1 … :data:`K_MAX` (index k − 1).

    Plancherel: c_{k+1} = (1/π)∫_0^∞ ω^{2(k−1)}|Ĝ(ω)|² dω (module docstring), by composite
    Gauss–Legendre (panels of width 0.25 on [0, Ω], Ω past the integrand's peak by 40 e-folds),
    in the log domain.  Read-only.
    """
    x, wts = np.polynomial.legendre.leggauss(20)
    out = np.empty(K_MAX)
    for k in range(1, K_MAX + 1):
        # the peak of ω^{2k+2}e^{−aω} (tanh a = π, silu a = 2π) or ω^{2k+2}e^{−ω²} (gelu)
        peak = {TANH: (2 * k + 2) / math.pi, SILU: (2 * k + 2) / (2 * math.pi),
                GELU: math.sqrt(k + 1.0)}[code]
        top = peak + 40.0 + 10.0 * math.sqrt(peak + 1.0)
        edges = np.arange(0.0, top + 0.25, 0.25)
        mid = 0.5 * (edges[1:] + edges[:-1])
        nodes = (mid[:, None] + 0.125 * x[None, :]).ravel()
        weights = np.tile(0.125 * wts, mid.size)
        lf = 2.0 * (k - 1) * np.log(nodes) + _log_ghat2(code, nodes)
        top_l = float(np.max(lf))
        out[k - 1] = top_l + math.log(float(np.sum(weights * np.exp(lf - top_l)))) - math.log(math.pi)
    out += math.log(SAFETY)
    out.setflags(write=False)
    return out


def derivative_tail_bound(code: int, al, N: int) -> np.ndarray:
    """Upper bound of t2(N) = Σ_{n>N} Dd_n², Dd_n = E[σ′(αz + β) h_n], for each α of ``al``.

    The minimum over k = 1 … min(:data:`K_MAX`, N + 1) of
    α^{2k−1} c_{k+1} / (√(2π) (N+1)N…(N−k+2)) (module docstring); 0 for α = 0 (a constant unit).
    Independent of β (the Gaussian density is bounded by its value at the mode).
    """
    al = np.asarray(al, dtype=np.float64)
    N = int(N)
    kk = min(K_MAX, N + 1)
    lc = log_derivative_norms(int(code))[:kk]
    k = np.arange(1, kk + 1, dtype=np.float64)
    lfall = np.cumsum(np.log(np.arange(N + 1, N + 1 - kk, -1, dtype=np.float64)))
    with np.errstate(divide="ignore"):
        la = np.log(al)
    lb = (2.0 * k[None, :] - 1.0) * la[:, None] + lc[None, :] - _LOG_SQRT_2PI - lfall[None, :]
    out = np.exp(np.min(lb, axis=1))
    return np.where(al > 0, out, 0.0)


def value_tail_bound(code: int, al, N: int) -> np.ndarray:
    """Upper bound of Σ_{n>N} S_n², S_n = E[σ(αz + β) h_n], for each α of ``al``: as
    :func:`derivative_tail_bound` with σ in place of σ′, i.e. the minimum over k = 2 …
    min(:data:`K_MAX`, N + 1) of α^{2k−1} c_k / (√(2π) (N+1)N…(N−k+2)) (k ≥ 2: σ′ of silu and
    gelu is not square integrable)."""
    al = np.asarray(al, dtype=np.float64)
    N = int(N)
    kk = min(K_MAX, N + 1)
    if kk < 2:
        return np.where(al > 0, np.inf, 0.0)
    lc = log_derivative_norms(int(code))[:kk - 1]          # c_2 … c_kk
    k = np.arange(2, kk + 1, dtype=np.float64)
    lfall = np.cumsum(np.log(np.arange(N + 1, N + 1 - kk, -1, dtype=np.float64)))[1:]
    with np.errstate(divide="ignore"):
        la = np.log(al)
    lb = (2.0 * k[None, :] - 1.0) * la[:, None] + lc[None, :] - _LOG_SQRT_2PI - lfall[None, :]
    out = np.exp(np.min(lb, axis=1))
    return np.where(al > 0, out, 0.0)


# ------------------------------------------------------------------------ direct quadrature
def dsigma(code: int, t):
    """σ′(t) of silu, gelu or tanh (float64, overflow-safe)."""
    t = np.asarray(t, dtype=np.float64)
    if code == TANH:
        e = np.exp(-2.0 * np.abs(t))
        return 4.0 * e / (1.0 + e) ** 2
    if code == SILU:
        e = np.exp(-np.abs(t))
        s = np.where(t >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        c = np.where(t >= 0, e / (1.0 + e), 1.0 / (1.0 + e))      # 1 − s without cancellation
        return s * (1.0 + t * c)
    if code == GELU:
        from scipy.special import ndtr
        return ndtr(t) + t * np.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi)
    raise ValueError(f"`code` must be one of SILU={SILU}, GELU={GELU}, TANH={TANH}, got {code!r}")


#: the activations with a tabulated bound (erf's B is a closed form)
CODES = (SILU, GELU, TANH)
#: the most integrand evaluations one 2-D quadrature may take (else it is not attempted)
PAIR_BUDGET = 2.0e7
_X20, _W20 = np.polynomial.legendre.leggauss(20)


@functools.lru_cache(maxsize=64)
def _rule_h(h: float, L: float = Z_HALF_LENGTH):
    """Composite 20-point Gauss–Legendre rule on [−L, L] with panels of width ≤ h and the
    standard normal density folded into the weights (read-only)."""
    panels = int(math.ceil(2.0 * L / h))
    edges = np.linspace(-L, L, panels + 1)
    half = 0.5 * (edges[1:] - edges[:-1])
    mid = 0.5 * (edges[1:] + edges[:-1])
    z = (mid[:, None] + half[:, None] * _X20[None, :]).ravel()
    w = (half[:, None] * _W20[None, :]).ravel() * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    z.setflags(write=False)
    w.setflags(write=False)
    return z, w


def _width(alpha: float, finer: bool = False) -> float:
    """Panel width min(1, 0.85π/α_b) of the engine's rules (α_b the √2-bucket of α,
    :func:`popdyn._hermite.quadrature_rule`), or √2 smaller for the error estimate."""
    k = 0 if alpha <= 1.0 else int(math.ceil(2.0 * math.log2(alpha)))
    while 2.0 ** (k / 2.0) < alpha:
        k += 1
    h = min(1.0, 0.85 * math.pi / 2.0 ** (k / 2.0))
    return h / math.sqrt(2.0) if finer else h


def diag_moment(code: int, al: float, be: float, finer: bool = False) -> float:
    """E[σ′(αz + β)²], z ~ N(0, 1), by the composite rule of width :func:`_width` on [−14, 14]
    (no series; the Gaussian beyond |z| = 14 weighs < 1e−43)."""
    z, w = _rule_h(_width(al, finer))
    f = dsigma(code, al * z + be)
    return float(w @ (f * f))


def diag_moment_est(code: int, al: float, be: float):
    """(value, error estimate): :func:`diag_moment` and its change on a rule √2 finer."""
    v = diag_moment(code, al, be)
    return v, abs(v - diag_moment(code, al, be, True)) + 16 * 2.0 ** -53 * abs(v)


def pair_moment(code: int, al_i: float, be_i: float, al_j: float, be_j: float,
                rho: float, one_minus_rho2: float, finer: bool = False) -> float:
    """E[σ′(α_iU + β_i) σ′(α_jV + β_j)] for standard normal U, V with correlation ρ
    (1 − ρ² passed accurately), by nested rules: V = ρU + √(1 − ρ²) Z, the inner rule in Z at
    the scale α_j√(1 − ρ²), the outer in U at max(α_i, α_j|ρ|) (the inner integral is a
    Gaussian smoothing of σ′ and no steeper than σ′(α_jρu + β_j))."""
    s = math.sqrt(max(one_minus_rho2, 0.0))
    zi, wi = _rule_h(_width(al_j * s, finer))
    zo, wo = _rule_h(_width(max(al_i, al_j * abs(rho)), finer))
    off = be_j + (al_j * s) * zi
    total = 0.0
    step = max(1, int(2.0e6 // max(zi.size, 1)))
    for k0 in range(0, zo.size, step):
        u = zo[k0:k0 + step]
        inner = dsigma(code, (al_j * rho) * u[:, None] + off[None, :]) @ wi
        total += float(wo[k0:k0 + step] @ (dsigma(code, al_i * u + be_i) * inner))
    return total


def pair_cost(al_i, al_j, rho, one_minus_rho2) -> float:
    """Integrand evaluations of :func:`pair_moment` (both rules)."""
    s = math.sqrt(max(one_minus_rho2, 0.0))
    n_in = 2 * 20 * math.ceil(2 * Z_HALF_LENGTH / _width(al_j * s))
    n_out = 2 * 20 * math.ceil(2 * Z_HALF_LENGTH / _width(max(al_i, al_j * abs(rho))))
    return 3.0 * n_in * n_out


def pair_moment_est(code, al_i, be_i, al_j, be_j, rho, one_minus_rho2):
    """(value, error estimate) of :func:`pair_moment` (its change on rules √2 finer), or
    (None, None) when the two rules would take more than :data:`PAIR_BUDGET` evaluations."""
    if pair_cost(al_i, al_j, rho, one_minus_rho2) > PAIR_BUDGET:
        return None, None
    v = pair_moment(code, al_i, be_i, al_j, be_j, rho, one_minus_rho2)
    f = pair_moment(code, al_i, be_i, al_j, be_j, rho, one_minus_rho2, True)
    return v, abs(v - f) + 16 * 2.0 ** -53 * abs(v)
