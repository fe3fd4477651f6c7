"""Pointwise evaluators of the teacher links: float64 numpy and mpmath, value and derivative.

:func:`_base_evaluators` returns (g, g′) in float64 and in mpmath for a fixed link name (the
derivative of relu at 0 is 0, of abs sign(0) = 0); the Hermite polynomials in both
arithmetics (:func:`_np_hermite`, :func:`_mp_hermite`).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import expit

from ._links_hermite import _ctx, _hermite_monomials, _mp


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
