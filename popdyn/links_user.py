r"""Links a user brings: from a finite Hermite vector (exact) or from a callable (quadrature with a
stated error bound).  Both return a *polynomial* :class:`popdyn.links.Link` named
``user:<name>``, registered in this process so that ``get_link("user:<name>")`` (and teacher
tables / configs naming it) find it.

``from_hermite(coeffs, name=...)``
    g = Σ_{n≤N} c_n h_n (h_n = He_n/√n!).  Float coefficients are taken as the exact binary
    rationals they are; moments and tails are exact (the link is a polynomial).

``from_callable(fn, name=..., tol=1e-12)``
    The Hermite truncation P_M ĝ of a function g given by a float64 callable.  What is stated:

    * coefficients ĉ_n = E[g(Z)h_n(Z)] by Gauss–Hermite quadrature at q and 2q nodes
      (probabilists' rule, q = 64, 128, …, ``q_max``); the value kept is the 2q one and its
      error estimate is err_n = |ĉ_n^{(2q)} − ĉ_n^{(q)}| + 16ε‖g‖.  Doubling is accepted
      when max_n err_n ≤ tol.  This is an *estimate* (Gauss–Hermite converges geometrically
      for entire g of Gaussian-dominated growth, and then the difference of two orders bounds
      the error of the finer one with a wide margin); it is not a rigorous bound, and for
      functions with kinks or heavy growth it can be optimistic.
    * degree M: the smallest M with |ĉ_n| ≤ tol for all M < n ≤ N_c, N_c = min(n_max, q) the
      highest coefficient computed.
    * Parseval check, computed independently: E[g²] by adaptive Gauss–Kronrod quadrature
      (scipy.integrate.quad on (−∞, 0] and [0, ∞), its own error estimate e_E), and the
      residual R = E[g²] − Σ_{n≤N_c} ĉ_n², whose uncertainty is
      u = e_E + 2Σ|ĉ_n|err_n + 4(N_c+1)ε E[g²].  |R| ≤ u is required: energy beyond degree N_c
      (or an inaccurate quadrature) makes the call fail.
    * the stated bound ``info["l2_error_bound"]`` on ‖g − P_M ĝ‖_{L²(γ)} is
      √(Σ_{n≤M} err_n² + Σ_{M<n≤N_c} ĉ_n² + max(R, 0) + u).  Its last term cannot be resolved
      below ~1e−8·‖g‖ in float64 (u ≥ 4ε E[g²]): below that level the bound states the float64
      resolution, not the true distance, which is usually far smaller (compare
      ``info["coeff_error"]`` and ``info["dropped_l2"]``).

    When a stage cannot reach ``tol`` (doubling not converged by ``q_max``, coefficients above
    ``tol`` up to ``n_max``, a failed Parseval check, non-finite values) the call raises
    ``ValueError`` saying which stage and the numbers reached.

The link evaluates, differentiates and integrates *the polynomial* P_M ĝ (so y(X) and the
engine's population moments describe one and the same teacher); the user's function is kept in
``link.info["fn"]``.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import re
from fractions import Fraction

import numpy as np

from . import links as _L

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_EPS = np.finfo(float).eps


def _check_name(name):
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"`name` must be a non-empty string of letters, digits, '_', '.' or '-', "
                         f"got {name!r}")
    return f"user:{name}"


def _poly_evaluators(c):
    """(f_np, df_np, f_mp, df_mp) of Σ c_n h_n (three-term recurrence)."""
    c = tuple(float(x) for x in c)
    cm = None

    def f_np(z, deriv=False):
        z = np.asarray(z, dtype=float)
        h0, h1 = np.ones_like(z), z
        acc = np.zeros_like(z)
        coef = [math.sqrt(n + 1) * c[n + 1] for n in range(len(c) - 1)] if deriv else c
        with np.errstate(over="ignore", invalid="ignore"):
            for n, cn in enumerate(coef):
                if n == 0:
                    h = h0
                elif n == 1:
                    h = h1
                else:
                    h0, h1 = h1, (z * h1 - math.sqrt(n - 1) * h0) / math.sqrt(n)
                    h = h1
                if cn:
                    acc = acc + cn * h
        return acc

    def f_mp(z, deriv=False):
        nonlocal cm
        ctx = _L._ctx
        if cm is None:
            cm = [ctx.mpf(x) for x in c]
        z = ctx.mpf(z)
        coef = [ctx.sqrt(n + 1) * cm[n + 1] for n in range(len(cm) - 1)] if deriv else cm
        acc = ctx.mpf(0)
        for n, cn in enumerate(coef):
            if cn:
                acc += cn * _L._mp_hermite(n, z)
        return acc

    return (f_np, lambda z: f_np(z, True), f_mp, lambda z: f_mp(z, True))


def _register(canon, coeffs, info):
    c = np.trim_zeros(np.asarray(coeffs, dtype=float), "b")
    old = _L._USER_LINKS.get(canon)
    if old is not None:
        if np.array_equal(np.trim_zeros(old.coefficients_full(old.N_tab), "b"), c):
            return old
        raise ValueError(f"`name`: {canon!r} is already registered with different coefficients; "
                         "choose another name")
    atoms = tuple((Fraction(float(x)), "h", n, Fraction(0)) for n, x in enumerate(c) if x != 0)
    hd, mom = _L._hdata_gp(atoms)
    link = _L._assemble(canon, 0.0, 0.0, hd, mom, _poly_evaluators(c if c.size else [0.0]))
    link = dataclasses.replace(link, info=info)
    _L._USER_LINKS[canon] = link
    return link


def from_hermite(coeffs, *, name: str):
    """The polynomial link g = Σ_n c_n h_n from its normalized Hermite coefficients (exact).

    Parameters
    ----------
    coeffs : sequence of real numbers
        c_0, c_1, …, c_N (finite floats, ints or Fractions; a Fraction is rounded to the
        nearest float64, which is then taken exactly).
    name : str
        Letters, digits, '_', '.', '-'. The link is named ``user:<name>`` and registered for
        :func:`popdyn.links.get_link` in this process; registering the same name with other
        coefficients raises ``ValueError``.

    Returns
    -------
    Link
        Polynomial (``is_polynomial``, ``tail_beyond == "zero"``), exact moments
        E[g] = c_0, E[g²] = Σc_n², E[g'²] = Σ n c_n².

    Examples
    --------
    >>> g = from_hermite([0.0, 0.0, 0.0, 1.0, 0.0, 0.1], name="h3_plus_tenth_h5")
    >>> g.name, g.second_moment
    ('user:h3_plus_tenth_h5', 1.01)
    """
    canon = _check_name(name)
    if isinstance(coeffs, (str, bytes)) or not hasattr(coeffs, "__iter__"):
        raise TypeError("`coeffs` must be a sequence of real numbers")
    vals = []
    for n, x in enumerate(coeffs):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError(f"`coeffs`[{n}] must be a real number, got {type(x).__name__}")
        xf = float(x)
        if not math.isfinite(xf):
            raise ValueError(f"`coeffs`[{n}] must be finite, got {x!r}")
        vals.append(xf)
    if not vals:
        raise ValueError("`coeffs` must contain at least one coefficient")
    return _register(canon, vals, {"source": "hermite", "exact": True})


def _gh_coeffs(fn, q, nmax):
    """ĉ_n, n = 0..nmax, by the q-node probabilists' Gauss–Hermite rule (stable recurrence of
    √ω_i h_n(x_i))."""
    from scipy.special import roots_hermitenorm

    x, w = roots_hermitenorm(q)
    keep = w > 0                      # far nodes whose weight underflows contribute nothing
    x, w = x[keep], w[keep]
    om = w / math.sqrt(2 * math.pi)
    with np.errstate(all="ignore"):
        g = np.asarray(fn(x), dtype=float)
        if g.shape != x.shape:
            g = np.array([float(fn(float(t))) for t in x])
    if not np.all(np.isfinite(g)):
        raise ValueError("`fn` returned non-finite values at Gauss-Hermite nodes")
    s = np.sqrt(om)
    a = s * g
    out = np.zeros(nmax + 1)
    p0, p1 = s, s * x
    out[0] = a @ p0
    if nmax >= 1:
        out[1] = a @ p1
    for n in range(1, nmax):
        p0, p1 = p1, (x * p1 - math.sqrt(n) * p0) / math.sqrt(n + 1)
        out[n + 1] = a @ p1
    return out


def _energy(fn):
    from scipy import integrate

    def f2(z):
        w = math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        if w == 0.0:          # |z| > 38.6: the Gaussian weight underflows; taken as 0
            return 0.0
        with np.errstate(all="ignore"):
            v = float(fn(z))
        return v * v * w

    tot = err = 0.0
    for lo, hi in ((-math.inf, 0.0), (0.0, math.inf)):
        out = integrate.quad(f2, lo, hi, epsabs=0.0, epsrel=1.2e-14, limit=1000, full_output=1)
        val, e = out[0], out[1]
        if len(out) > 3:       # QUADPACK flagged a problem (e.g. roundoff at this tolerance):
            e = max(e, 1e-13 * abs(val))     # its estimate may be low; floor it
        tot += val
        err += e
    if not (math.isfinite(tot) and math.isfinite(err)):
        raise ValueError("`fn`: E[g(Z)^2] is not finite (adaptive quadrature)")
    return tot, err + 4 * _EPS * tot


def from_callable(fn, *, name: str, tol: float = 1e-12, n_max: int = 256, q_max: int = 1024):
    """The Hermite truncation of a user function g, with a stated error bound (module docstring).

    Parameters
    ----------
    fn : callable
        g(z) for float64 z; vectorized over numpy arrays (preferred) or scalar.
    name : str
        As in :func:`from_hermite` (the link is ``user:<name>``).
    tol : float
        Target for each coefficient's error estimate and for the dropped coefficients (> 0).
    n_max : int
        Highest Hermite degree computed (1 ≤ n_max ≤ q_max).
    q_max : int
        Largest Gauss–Hermite order tried (the doubling stops there).

    Returns
    -------
    Link
        Polynomial P_M ĝ (``is_polynomial``); ``link.info`` holds ``degree`` M,
        ``coeff_error`` (max err_n), ``dropped_l2`` (√Σ_{M<n≤N_c} ĉ_n²), ``parseval_residual``
        R, ``parseval_uncertainty`` u, ``l2_error_bound``, ``energy`` E[g²], ``orders``
        (q, 2q), ``tol`` and ``fn``.

    Raises
    ------
    ValueError
        A stage cannot reach ``tol`` (the message names the stage and the numbers reached), or
        bad arguments.
    """
    canon = _check_name(name)
    if not callable(fn):
        raise TypeError(f"`fn` must be callable, got {type(fn).__name__}")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (0 < tol < 1):
        raise ValueError(f"`tol` must be a float in (0, 1), got {tol!r}")
    for nm, v in (("n_max", n_max), ("q_max", q_max)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"`{nm}` must be an int >= 1, got {v!r}")
    if n_max > q_max:
        raise ValueError(f"`n_max` ({n_max}) must be <= `q_max` ({q_max})")
    tol = float(tol)
    E2, eE = _energy(fn)
    norm = math.sqrt(max(E2, 0.0))
    q, prev, best = 32, None, None
    while q <= q_max:
        nc = min(n_max, q)
        cur = _gh_coeffs(fn, q, nc)
        if prev is not None:
            k = min(prev.size, cur.size) - 1
            err = np.abs(cur[:k + 1] - prev[:k + 1]) + 16 * _EPS * max(norm, 1.0)
            if k == nc and err.max() <= tol:
                best = (cur, err, (q // 2, q))
                break
        prev = cur
        q *= 2
    if best is None:
        raise ValueError(f"`fn`: Gauss-Hermite coefficients up to degree {n_max} did not agree to "
                         f"tol = {tol:g} between orders up to q_max = {q_max} (raise q_max or "
                         "tol, lower n_max, or use from_hermite)")
    c, err, orders = best
    nc = c.size - 1
    big = np.flatnonzero(np.abs(c) > tol)
    M = int(big[-1]) if big.size else 0
    if M >= nc and nc > 0:
        raise ValueError(f"`fn`: the Hermite coefficients are still above tol = {tol:g} at "
                         f"degree n_max = {n_max} (|c_{nc}| = {abs(c[nc]):.3g}); the series "
                         "decays too slowly for a polynomial link at this tol (raise n_max or tol)")
    R = E2 - math.fsum(c * c)
    u = eE + 2 * float(np.sum(np.abs(c) * err)) + 4 * (nc + 1) * _EPS * E2
    if abs(R) > u:
        raise ValueError(f"`fn`: Parseval check failed: E[g^2] - sum c_n^2 (n <= {nc}) = {R:.3g} "
                         f"exceeds its uncertainty {u:.3g} (energy beyond degree {nc}, or the "
                         "quadratures disagree)")
    dropped = math.fsum(c[M + 1:] ** 2)
    bound = math.sqrt(math.fsum(err[:M + 1] ** 2) + dropped + max(R, 0.0) + u)
    u = float(u)
    info = {"source": "callable", "exact": False, "tol": tol, "degree": M,
            "coeff_error": float(err[:M + 1].max()), "dropped_l2": math.sqrt(dropped),
            "parseval_residual": R, "parseval_uncertainty": u, "l2_error_bound": bound,
            "energy": E2, "orders": orders, "fn": fn}
    return _register(canon, c[:M + 1], info)
