"""Ball-arithmetic backend (python-flint / Arb) for the certified layer.

Choice of backend (docs/design.md §6): python-flint's ``arb`` (a ball [m ± r] whose arithmetic and
elementary / special functions -- exp, erfc, atan, sqrt -- carry rigorous error bounds) and
``arb_mat`` (matrix products with rigorous bounds).  mpmath is used only for the independent
references in the tests (``mpmath.iv`` cannot evaluate erf and is ~1000x slower on matrices).

Rules followed everywhere in ``certify``:

* precision is explicit: every entry point takes ``prec`` (bits) and runs inside
  :func:`workprec`, which restores the previous global precision of python-flint and holds a
  process-wide lock (python-flint's precision is process-global: threads certify one at a
  time);
* a float64 input means its exact binary value (``arb(x)`` is exact for a float);
* a ball is converted to float with its exact lower / upper endpoints rounded outward
  (:func:`arb_bounds`), never ``float(ball)`` (the midpoint);
* an Arb comparison that cannot be decided returns False: branch decisions in this package are
  made on midpoints only where *both* branches are exact identities (reflections, series
  choices), never where a wrong branch would change the value.

Special functions implemented here
----------------------------------
Φ(w) = ½ erfc(−w/√2) by Arb's ``erfc`` (one call gives Φ(w) and Φ(−w) without cancellation).

Owen's T function, T(h, a) = (1/2π) ∫₀^a exp(−h²(1+x²)/2)/(1+x²) dx, by Owen's series (T1)

    T(h, a) = (1/2π) [atan a − Σ_{j≥0} (−1)^j Q_j a^{2j+1}/(2j+1)],  Q_j = 1 − e^{−x} Σ_{i≤j} x^i/i!,

x = h²/2, for |a| ≤ 1 (Q_j = P(Poisson(x) > j) ≤ x^{j+1}/(j+1)!, which gives the rigorous tail
bound A^{2J+1} x^{J+1}/(J+1)! / (1 − xA²/(J+2)) with A = max(1, |a|)), and for |a| > 1 by
Owen's reflection T(h, a) = sgn(a)[½Φ(|h|)Φ(−|ah|) + ½Φ(|ah|)Φ(−|h|) − T(|ah|, 1/|a|)].
When e^{−x} atan|a|/2π is below the absolute target the enclosure 0 ≤ |T| ≤ e^{−x} atan|a|/2π
is used instead (the integrand is at most e^{−x}/(1+t²)).

Bivariate normal CDF by Owen (1956), eq. (2.1):

    Φ₂(h, k; ρ) = ½Φ(h) + ½Φ(k) − T(h, a_h) − T(k, a_k) − β,
    a_h = (k − ρh)/(h√(1−ρ²)),  a_k = (h − ρk)/(k√(1−ρ²)),
    β = ½ if hk < 0 or (hk = 0 and h + k < 0), else 0,

with T(0, ±∞) = ±¼ (the sign of a_h taken as that of k − ρh when h = 0) and
Φ₂(0, 0; ρ) = ¼ + asin(ρ)/2π.  The functions take w_h = (k − ρh)/√(1−ρ²) (= a_h h) and
w_k instead of a_h, a_k, so that h = 0 and |a| → ∞ need no division.

References
----------
D. B. Owen, "Tables for computing bivariate normal probabilities", Ann. Math. Statist. 27
(1956) 1075-1090 (eq. (2.1), series T1, reflection); F. Johansson, "Arb: efficient
arbitrary-precision midpoint-radius interval arithmetic", IEEE Trans. Comput. 66 (2017).
"""
from __future__ import annotations

import contextlib
import math
import numbers
import threading
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, ctx, fmpz_mat

from .errors import CertificationError

__all__ = ["check_prec", "workprec", "arb_bounds", "Phi_pair", "npdf", "owen_t", "phi2",
           "exact_gram", "mat_from_array", "mat_mid", "sym_eig_enclosure", "frob_upper",
           "MAX_PREC", "hermite_rows"]

#: largest accepted ``prec`` (bits); larger requests are refused as absurd
MAX_PREC = 1 << 16
_LOG2E = 1.4426950408889634


def check_prec(prec, name: str = "prec") -> int:
    """Validate a precision in bits: an int in [2, MAX_PREC]."""
    if isinstance(prec, bool) or not isinstance(prec, numbers.Integral):
        raise TypeError(f"`{name}` must be an int (bits), got {prec!r}")
    prec = int(prec)
    if prec < 2:
        raise ValueError(f"`{name}` must be >= 2 bits, got {prec}")
    if prec > MAX_PREC:
        raise ValueError(f"`{name}` = {prec} bits is absurd (the limit is {MAX_PREC}); "
                         "1e-12 brackets need about 64 bits, the default is 128")
    return prec


# python-flint's working precision (ctx.prec) and series length (ctx.cap) are process-global:
# a computation in one thread would run at another thread's precision or, worse, truncate its
# series at another thread's cap.  certify's public functions compute inside workprec, which
# holds this (reentrant) lock, so threads of one process certify one at a time (measured before
# the lock: two threads at prec 53 and 200 changed each other's brackets).
_LOCK = threading.RLock()


@contextlib.contextmanager
def workprec(prec: int):
    """Run with python-flint's precision set to ``prec`` bits, restoring it afterwards; holds
    the process-wide certify lock meanwhile (thread safety: see ``_LOCK``)."""
    with _LOCK:
        old = ctx.prec
        ctx.prec = int(prec)
        try:
            yield
        finally:
            ctx.prec = old


# ------------------------------------------------------------------------------- conversion
_TINY = 5e-324
_BIGF = 1.7976931348623157e308


def _exact_to_float(e, up: bool) -> float:
    """Directed rounding of an exact ``arb`` (its midpoint, radius 0) to float64."""
    man, exp = e.man_exp()
    man, exp = int(man), int(exp)
    if man == 0:
        return 0.0
    top = exp + abs(man).bit_length()       # |value| < 2^top, >= 2^(top-1)
    if top < -1080:                          # below half the smallest subnormal
        if man > 0:
            return _TINY if up else 0.0
        return -0.0 if up else -_TINY
    if top > 1030:
        if man > 0:
            return math.inf if up else _BIGF
        return -_BIGF if up else -math.inf
    q = Fraction(man * (1 << exp)) if exp >= 0 else Fraction(man, 1 << (-exp))
    return _frac_up(q) if up else _frac_down(q)


def _frac_down(q: Fraction) -> float:
    try:
        f = float(q)
    except OverflowError:
        return _BIGF if q > 0 else -math.inf
    if Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def _frac_up(q: Fraction) -> float:
    try:
        f = float(q)
    except OverflowError:
        return math.inf if q > 0 else -_BIGF
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def arb_bounds(x) -> tuple[float, float]:
    """(lo, hi) floats with lo <= every point of the ball ``x`` <= hi (outward rounding).

    Returns (nan, nan) for a NaN ball and (−inf, inf) for a ball of infinite radius.
    """
    if not isinstance(x, arb):
        x = arb(x)
    if x.is_nan():
        return math.nan, math.nan
    if not x.is_finite():
        return -math.inf, math.inf
    lo = x.lower()
    hi = x.upper()
    return _exact_to_float(lo, False), _exact_to_float(hi, True)


def upper(x) -> float:
    """A float >= every point of the ball (fast: one ulp looser than :func:`arb_bounds`)."""
    f = float(x.upper())            # faithful (< 1 ulp) rounding of the exact upper endpoint
    if f != f:
        return math.nan
    return math.nextafter(f, math.inf)


def lower(x) -> float:
    """A float <= every point of the ball (fast, one ulp looser than :func:`arb_bounds`)."""
    f = float(x.lower())
    if f != f:
        return math.nan
    return math.nextafter(f, -math.inf)


def mid(x) -> float:
    """Nearest float to the midpoint (for branch decisions between exact identities only)."""
    return float(x.mid())


_TINYF = 5e-324


def mul_up(*xs) -> float:
    """An upper bound on the product of non-negative float upper bounds, safe against
    underflow (a positive product never rounds to 0) and rounding (one ulp up per step)."""
    p = 1.0
    for x in xs:
        if x == 0.0:
            return 0.0
        if not x > 0.0:
            return math.nan if x != x else math.inf
        p = p * x
        if p == math.inf:
            return math.inf
        p = math.nextafter(p, math.inf) if p > 0.0 else _TINYF
    return p


def sqrt_up(x: float) -> float:
    if x <= 0.0:
        return 0.0
    return math.nextafter(math.sqrt(x), math.inf)


def pow_up(r: float, n: int) -> float:
    """Upper bound on r**n for 0 <= r (float upper bound), n >= 0."""
    if n == 0:
        return 1.0
    if r == 0.0:
        return 0.0
    out, base = 1.0, r
    while n:
        if n & 1:
            out = mul_up(out, base)
        n >>= 1
        if n:
            base = mul_up(base, base)
    return out


def mpf_to_arb(x):
    """An mpmath mpf as an exact ball."""
    sign, man, exp, _ = x._mpf_
    if man == 0:
        return arb(0)
    v = arb(int(man)) * arb(2) ** int(exp)
    return -v if sign else v


def ball(lo: float, hi: float):
    """The ball [lo, hi] (floats, exact endpoints)."""
    return arb(lo).union(arb(hi))


# ---------------------------------------------------------------------- special functions
def Phi_pair(w):
    """(Φ(w), Φ(−w)) with one ``erfc`` call and no cancellation in the smaller one."""
    r2 = arb(2).rsqrt()
    if mid(w) >= 0.0:
        c = (w * r2).erfc() / 2          # Φ(−w) = ½ erfc(w/√2)
        return 1 - c, c
    c = (-(w * r2)).erfc() / 2           # Φ(w) = ½ erfc(−w/√2)
    return c, 1 - c


def npdf(x):
    """φ(x) = exp(−x²/2)/√(2π)."""
    return (-(x * x) / 2).exp() * (2 * arb.pi()).rsqrt()


def _t_series(h, a, tol_bits: int):
    """T(h, a) for |a| <= 1 (up to 1.5 allowed) with absolute error target 2^-tol_bits.

    ``h`` and ``a`` are balls; the result is a ball that rigorously contains T over them.
    The truncation bound is evaluated in float64 with upward rounding margins: after the
    terms j <= J, Σ_{j'>J} |Q_j' a^{2j'+1}/(2j'+1)| <= Σ_{j'>J} u_j' <= 2 u_{J+1} once
    J + 3 >= 2xA², with u_j = A^{2j+1} x^{j+1}/(j+1)! (Q_j <= x^{j+1}/(j+1)!, A >= |a|),
    carried as float upper bounds (:func:`mul_up`: one ulp up per product, never underflowing
    to 0; A is raised to at least 2^-60, which keeps it an upper bound).
    """
    x = h * h / 2
    x_lo = lower(x)
    x_hi = upper(x)
    aa = abs(a)
    A = upper(aa)
    # crude enclosure when e^{-x} atan|a| / 2π is below the target (0 ≤ T(h, a)·sgn a ≤ that
    # for every a; checked first, so a threshold h whose h²/2 overflows float64, e.g. a unit
    # with |w| = 1e−174 and b = 1, still gets its ball instead of a refusal)
    if x_lo * _LOG2E > tol_bits + 4:
        bnd = (-x).exp() * aa.atan() / (2 * arb.pi())
        return arb(0, upper(bnd))
    if not (math.isfinite(x_hi) and math.isfinite(A)):
        raise CertificationError("Owen T: non-finite argument", hint="a higher prec")
    if A > 1.5:
        raise CertificationError("Owen T: |a| > 1 in the series branch (internal)",
                                 hint="a higher prec")
    wp = max(ctx.prec, tol_bits + 24)
    tol = 2.0 ** (-tol_bits)
    A = max(A, 2.0 ** -60)          # a larger A keeps the bound valid and avoids underflow
    A2 = mul_up(A, A)
    with workprec(wp):
        ex = (-x).exp()
        a2 = a * a
        term = ex               # e^{-x} x^j / j!
        Q = 1 - ex              # Q_0 = 1 − e^{-x}
        apow = a                # a^{2j+1}
        tot = Q * a
        tf = max(x_hi, _TINYF)  # float upper bound of x^{j+1}/(j+1)!, j = 0
        Apow = A                # float upper bound of A^{2j+1}
        j = 0
        while True:
            j += 1
            term = term * x / j
            Q = Q - term
            apow = apow * a2
            c = Q * apow / (2 * j + 1)
            tot = tot + c if j % 2 == 0 else tot - c
            tf = mul_up(tf, x_hi, 1.0 / (j + 1) * (1 + 2.3e-16))
            Apow = mul_up(Apow, A2)
            if j + 3 >= 2.0 * x_hi * A2:
                # terms j' > j: u_j' = x^{j'+1}/(j'+1)! A^{2j'+1}, ratio <= xA²/(j+3) <= 1/2
                bound = mul_up(2.0, tf, x_hi, 1.0 / (j + 2) * (1 + 2.3e-16), Apow, A2)
                if bound <= tol:
                    break
            if j > 100000:
                raise CertificationError("Owen T series did not converge", hint="a higher prec")
        tot = tot + arb(0, bound)
        res = (a.atan() - tot) / (2 * arb.pi())
    return +res


def owen_t(h, w, Ph, Pw, hsgn: int, tol_bits: int):
    """T(h, w/h) (Owen's T at a = w/h) from h, w = a h and the pairs Ph = (Φ(h), Φ(−h)),
    Pw = (Φ(w), Φ(−w)).  ``hsgn`` is the exact sign of h (0 iff h = 0 exactly; then the
    sign of a is that of w).
    """
    habs, wabs = abs(h), abs(w)
    if hsgn != 0 and mid(wabs) <= mid(habs):
        return _t_series(habs, w / h, tol_bits)
    # reflection
    if w > 0:
        wsg = 1
    elif w < 0:
        wsg = -1
    else:
        if hsgn != 0 and upper(abs(w / h)) <= 1.25:
            return _t_series(habs, w / h, tol_bits)
        raise CertificationError("Owen T: sign of a undecidable", hint="a higher prec")
    sgn = wsg * (hsgn if hsgn != 0 else 1)
    Phh, Phmh = (Ph[0], Ph[1]) if hsgn >= 0 else (Ph[1], Ph[0])   # Φ(|h|), Φ(−|h|)
    Pww, Pwmw = (Pw[0], Pw[1]) if wsg >= 0 else (Pw[1], Pw[0])    # Φ(|w|), Φ(−|w|)
    inner = (Phh * Pwmw + Pww * Phmh) / 2 - _t_series(wabs, habs / wabs, tol_bits)
    return inner if sgn > 0 else -inner


def phi2(h, k, rho, wh, wk, Ph, Pk, Pwh, Pwk, hsgn: int, ksgn: int, tol_bits: int):
    """Φ₂(h, k; ρ) for |ρ| < 1 by Owen's formula (module docstring).

    wh = (k − ρh)/√(1−ρ²), wk = (h − ρk)/√(1−ρ²); Ph = (Φ(h), Φ(−h)) etc.; hsgn, ksgn the
    exact signs of h and k.
    """
    if hsgn == 0 and ksgn == 0:
        return arb(1) / 4 + rho.asin() / (2 * arb.pi())
    Th = owen_t(h, wh, Ph, Pwh, hsgn, tol_bits)
    Tk = owen_t(k, wk, Pk, Pwk, ksgn, tol_bits)
    prod = hsgn * ksgn
    beta = prod < 0 or (prod == 0 and hsgn + ksgn < 0)
    out = (Ph[0] + Pk[0]) / 2 - Th - Tk
    if beta:
        out = out - arb(1) / 2
    return out


# --------------------------------------------------------------------------- exact geometry
def _int_rows(A: np.ndarray):
    """Rows of a float64 matrix as exact integers times a power of two per row.

    Returns (rows_int, exps) with A[i] = rows_int[i] * 2**exps[i] exactly.
    """
    A = np.asarray(A, dtype=np.float64)
    mant, ex = np.frexp(A)
    mi = (mant * (1 << 53)).astype(np.int64)       # exact: |mant| in [0.5, 1)
    ex = ex.astype(np.int64) - 53
    rows, exps = [], []
    for i in range(A.shape[0]):
        nz = mi[i] != 0
        if not np.any(nz):
            rows.append([0] * A.shape[1])
            exps.append(0)
            continue
        e0 = int(ex[i][nz].min())
        sh = np.where(nz, ex[i] - e0, 0)
        if int(sh.max()) <= 9:
            rows.append((mi[i] << sh).tolist())
        else:
            rows.append([int(v) << int(s) for v, s in zip(mi[i].tolist(), sh.tolist())])
        exps.append(e0)
    return rows, exps


def exact_gram(A: np.ndarray):
    """Exact Gram data of the rows of a float64 matrix.

    Returns (G, exps): G an ``fmpz_mat`` with A Aᵀ = diag(2^e) G diag(2^e) exactly.
    """
    rows, exps = _int_rows(A)
    Z = fmpz_mat(rows) if rows else fmpz_mat(0, 0)
    return Z * Z.transpose(), exps


# ------------------------------------------------------------------------------- matrices
def mat_from_array(X) -> arb_mat:
    """An exact ``arb_mat`` from a float64 array (1-D arrays become columns)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    return arb_mat(X.tolist())


def mat_mid(M: arb_mat) -> np.ndarray:
    """Midpoints (nearest floats) of an ``arb_mat``."""
    return np.array([[float(v) for v in row] for row in M.tolist()], dtype=np.float64)


def mat_bounds(M: arb_mat):
    """(lo, hi) float arrays bounding the entries of an ``arb_mat`` (outward)."""
    L = M.tolist()
    lo = np.empty((M.nrows(), M.ncols()))
    hi = np.empty_like(lo)
    for i, row in enumerate(L):
        for j, v in enumerate(row):
            lo[i, j], hi[i, j] = arb_bounds(v)
    return lo, hi


def _sqrt_up(u: float) -> float:
    if u == math.inf:
        return math.inf
    return math.nextafter(math.sqrt(u), math.inf) if u > 0 else 0.0


def frob_upper(M: arb_mat) -> float:
    """An upper bound on the Frobenius norm of every matrix in the ball matrix ``M``.

    ‖M‖_F² = tr(MMᵀ); the Arb product of a ball with itself contains every product of two of
    its points, in particular every square, so the upper end of tr(MMᵀ) bounds ‖M‖_F².
    """
    n, k = M.nrows(), M.ncols()
    s = arb(0)
    if min(n, k) <= 48:
        P = M * M.transpose() if n <= k else M.transpose() * M
        for i in range(P.nrows()):
            s += P[i, i]
    else:                              # large: O(nk) entrywise beats the O(n²k) product
        for row in M.tolist():
            for v in row:
                u = abs(v).upper()
                s += u * u
    return _sqrt_up(upper(s))


def vec_norm_upper(v) -> float:
    """Upper bound on the 2-norm of a vector of balls (list or 1-column arb_mat)."""
    if isinstance(v, arb_mat):
        v = [x for row in v.tolist() for x in row]
    s = arb(0)
    for x in v:
        u = abs(x).upper()
        s += u * u
    return _sqrt_up(upper(s))


def sym_eig_enclosure(M: arb_mat, M_float: np.ndarray | None = None):
    """Rigorous enclosures of the eigenvalues of every symmetric matrix in the ball matrix M.

    Float ``eigh`` of the midpoints gives λ̂ (descending) and V̂; then, in Arb,
    F = V̂ᵀ M V̂ − diag(λ̂) and N = V̂ᵀV̂ − I.  With f = ‖F‖_F and ν = ‖N‖_F < 1:
    λ_i(V̂ᵀMV̂) ∈ λ̂_i ± f (Weyl) and λ_i(V̂ᵀMV̂) = θ_i λ_i(M) with θ_i ∈ [1 − ν, 1 + ν]
    (Ostrowski), so λ_i(M) ∈ [λ̂_i − f, λ̂_i + f] / [1 − ν, 1 + ν].

    Returns (lam_lo, lam_hi, lam_hat, V_hat) with eigenvalues in descending order.
    Symmetry of M is assumed (the caller builds M symmetric).
    """
    n = M.nrows()
    if M_float is None:
        M_float = mat_mid(M)
    Ms = 0.5 * (M_float + M_float.T)
    lam, V = np.linalg.eigh(Ms)
    lam = lam[::-1].copy()
    V = np.ascontiguousarray(V[:, ::-1])
    Va = mat_from_array(V)
    F = Va.transpose() * M * Va - mat_from_array(np.diag(lam))
    N = Va.transpose() * Va - mat_from_array(np.eye(n))
    f = frob_upper(F)
    nu = frob_upper(N)
    if not nu < 0.5:
        raise CertificationError("eigenvector basis too far from orthonormal",
                                 hint="a higher prec (or a better conditioned matrix)")
    # λ(M) = y/θ with y ∈ [λ̂ − f, λ̂ + f] (Weyl) and θ ∈ [1 − ν, 1 + ν] (Ostrowski), in float64
    # with one outward ulp per rounding
    y_lo = np.nextafter(lam - f, -np.inf)
    y_hi = np.nextafter(lam + f, np.inf)
    t_lo = math.nextafter(1.0 - nu, -math.inf)
    t_hi = math.nextafter(1.0 + nu, math.inf)
    lo = np.nextafter(np.where(y_lo >= 0, y_lo / t_hi, y_lo / t_lo), -np.inf)
    hi = np.nextafter(np.where(y_hi >= 0, y_hi / t_lo, y_hi / t_hi), np.inf)
    return lo, hi, lam, V


def hermite_rows(zs, N: int):
    """Rows [h_0(z), …, h_N(z)] of the orthonormal Hermite functions h_n = He_n/√n! at each ball
    ``z`` of ``zs``, by the three-term recurrence h_{n+1} = (z h_n − √n h_{n−1})/√(n+1), at the
    current precision (callers add guard bits: the recurrence loses ~1.72 n bits where |z| is
    large; certify.smooth and certify.swiglu use 2N + 64)."""
    sq = [arb(n).sqrt() for n in range(N + 2)]
    isq = [1 / v for v in sq]
    out = []
    for z in zs:
        row = [arb(1), z]
        for n in range(1, N):
            row.append((z * row[n] - sq[n] * row[n - 1]) * isq[n + 1])
        out.append(row[:N + 1])
    return out
