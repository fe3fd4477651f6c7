"""Univariate and bivariate standard normal functions as numba kernels.

All functions are scalar ``@jit`` functions (``numba.njit(cache=True, fastmath=False)``) that
can be called from other kernels or from Python.

* :func:`norm_pdf`, :func:`norm_cdf` -- φ and Φ; Φ is computed from ``math.erfc`` so that it
  keeps full relative accuracy in the lower tail (and 1 − Φ(x) = Φ(−x) in the upper tail).
* :func:`norm_hh` -- the "Hh" functions Hh_n(w) = E[(Z − w)_+^n] / n! for n = 0, 1, 2
  (Hh_0 = Φ(−w)), with full relative accuracy for every w, including the upper tail where the
  textbook forms φ(w) − wΦ(−w) and ((1 + w²)Φ(−w) − wφ(w))/2 cancel catastrophically.
* :func:`mills3` -- the scaled ratios Hh_n(w)/φ(w), n = 0, 1, 2, for w ≥ 0 (no underflow).
* :func:`hh1_pos` -- Hh_1(w) alone for w ≥ 0 (bit-identical to ``norm_hh(w)[1]``, a third
  cheaper: used for the conditional expectations E[relu(T)] of the pair kernels).
* :func:`bvn_cdf` -- Φ₂(h, k; r) = P(Z₁ ≤ h, Z₂ ≤ k) for a standard bivariate normal with
  correlation r, with 1 − r and 1 + r supplied by the caller.

Algorithm of :func:`bvn_cdf`
----------------------------
Genz (2004), after Drezner & Wesolowsky (1990), re-derived here (no code copied):

* |r| < 0.925: Φ₂(h,k;r) = Φ(h)Φ(k) + (1/2π) ∫₀^{asin r} exp(−(h² + k² − 2hk sin θ)/(2cos²θ)) dθ
  by Gauss–Legendre.  Genz's 6/12/20 points (by |r| < 0.3/0.75/0.925) are accurate in
  absolute terms only; the rule is also chosen by the log-variation V of the integrand (6 points
  only for V < 0.05, 12 for V < 1, 20 for V < 8, else 20 points on ⌈V/8⌉ panels), which keeps
  the integral relatively accurate in the tails.
* r ≥ 0.925: Φ₂(h,k;r) = Φ(min(h,k)) − K(h,k) with K = ∫_r^1 φ₂(h,k;t) dt. Substituting
  x = √(1 − t²) ∈ [0, A], A = √(1 − r²), gives
  K = (1/2π) ∫₀^A exp(−(h−k)²/(2x²) − hk/(1+t)) / t dx;
  the factor exp(−hk/(1+t))/t = e^{−hk/2}(1 + c x² + c d x⁴ + O(x⁶)) with c = (4 − hk)/8,
  d = (12 − hk)/16 is integrated in closed form against exp(−(h−k)²/(2x²)) (through the stable
  Mills ratio, so that no 0·inf product can occur), the O(x⁶) remainder by 20-point
  Gauss–Legendre.  r ≤ −0.925 reduces to this by Z₂ → −Z₂; when then Φ₂ = K itself and K's
  integrand is sharply peaked ((h+k)² > 30A²), K is evaluated by 16-point Gauss–Laguerre in
  w = (h+k)²/(2x²) instead (positive terms, full relative accuracy).
* A = √(1 − r²) is formed as √((1 − r)(1 + r)) from the caller's ``omr`` = 1 − r and
  ``opr`` = 1 + r, so r within 1e−12 of ±1 keeps full accuracy; r = ±1 exactly (omr = 0 or
  opr = 0) uses Φ(min(h,k)) and max(0, Φ(h) − Φ(−k)) (taken where it does not cancel).
* The two cases in which the branch formula is a difference much larger than its value -- the
  lower-left tail at r ≥ 0.925 (Φ(min) − K ≪ Φ(min)) and h + k < 0 at r < 0 (Φ(h)Φ(k) − |I|)
  -- are recomputed from the θ-integral started at r' = 0, resp. r' = −1 (positive terms),
  written in ψ = π/2 − θ so that cos²θ = sin²ψ carries no cancellation, with adaptive panels.
* |h| or |k| > 39 (Φ(−39) underflows) and infinite limits are reduced to Φ of the other limit
  or to 0.

Measured (tests/popdyn/test_bvn.py, 30-digit mpmath): absolute error ≤ 2 ulp(1) = 4.4e−16
(values near 1 are sums of O(1) terms, each rounded: 2.3e−16, 2.1 ulp of the value, at
h = k = 1.25, r = −0.9249) and relative error ≤ 2e−14 + 2·eps·|ln Φ₂| (the second term:
conditioning of e^{−E} for tail values).

References
----------
A. Genz, "Numerical computation of rectangular bivariate and trivariate normal and t
probabilities", Statistics and Computing 14 (2004) 251–260.
Z. Drezner, G. O. Wesolowsky, "On the computation of the bivariate normal integral",
J. Statist. Comput. Simul. 35 (1990) 101–107.
"""
import math

import numpy as np

from ._jit import jit
from .vmath import exp_batch, exp_inline

__all__ = ["norm_pdf", "norm_cdf", "norm_hh", "mills3", "hh1_pos", "bvn_cdf"]

_SQRT2 = math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWOPI = 2.0 * math.pi
_EPS = 2.220446049250313e-16
# |x| beyond which Φ(−|x|) underflows to 0 in float64 (Φ(−39) ≈ 1.8e−333).
_BIG = 39.0


def _gl_rule(n):
    """n-point Gauss–Legendre rule mapped to [0, 1] (nodes u, weights summing to 1)."""
    x, w = np.polynomial.legendre.leggauss(n)
    return np.ascontiguousarray(0.5 * (1.0 + x)), np.ascontiguousarray(0.5 * w)


_GL6_U, _GL6_W = _gl_rule(6)
_GL12_U, _GL12_W = _gl_rule(12)
_GL20_U, _GL20_W = _gl_rule(20)
_LAG_X, _LAG_W = (np.ascontiguousarray(a) for a in np.polynomial.laguerre.laggauss(16))

# Hh_n(w)/φ(w) for n = 0, 1, 2 at w = j/8, j = 0..64, from mpmath at 40 digits:
#   P = mp.ncdf(-w); f = mp.npdf(w)
#   (P/f, (f - w*P)/f, ((1 + w*w)*P - w*f)/(2*f))
# (tests/popdyn/test_bvn.py re-checks every row against mpmath).
_MILLS_STEP = 0.125
_MILLS_TAB = np.array([
    (1.2533141373155003, 1.0, 0.6266570686577502),
    (1.1374909212036046, 0.8578136348495494, 0.5151321084237054),
    (1.0378245758537268, 0.7405438560365682, 0.4263443059222924),
    (0.9515271920712067, 0.6431773029732974, 0.3551678517281101),
    (0.8763644564536923, 0.5618177717731538, 0.2977277852835577),
    (0.8105337152790304, 0.493416427950606, 0.2510742239049508),
    (0.7525711790634081, 0.43557161570244396, 0.21294623364328755),
    (0.7012808218544301, 0.3863792808773737, 0.18159947554336403),
    (0.6556795424187984, 0.34432045758120156, 0.15567954241879847),
    (0.6149545961509297, 0.3081760793302041, 0.1341282534522251),
    (0.5784303460476311, 0.27696206744046115, 0.11611388087352732),
    (0.545542135658217, 0.24987956346995174, 0.10097886794351664),
    (0.5158156382179634, 0.22627654267305497, 0.08820041210419045),
    (0.48885044152757373, 0.20561803251769264, 0.0773605693431616),
    (0.4643069280394422, 0.1874628759309762, 0.0681234475801169),
    (0.44189573283260003, 0.17144550093887498, 0.0602177092861047),
    (0.4213692292880545, 0.15726154142389107, 0.05342307322013618),
    (0.4025146181296721, 0.14465643647444684, 0.04755984531073626),
    (0.3851482907984346, 0.1334163457035221, 0.042480756482754956),
    (0.3691112106902634, 0.12336087461062437, 0.03806456674501528),
    (0.35426511132979366, 0.11433722167551583, 0.03421102857050204),
    (0.3404893532870847, 0.10621544762140273, 0.03083690164045126),
    (0.32767831469055203, 0.09888463460098185, 0.027872784768925983),
    (0.31573921586941, 0.09224975437544616, 0.02526058602000116),
    (0.3045902987101033, 0.08622910386969011, 0.02295149355051648),
    (0.2941592970402893, 0.08075219674909588, 0.020904341099682335),
    (0.28438214674849294, 0.075758023067398, 0.01908428588972472),
    (0.27520189415760643, 0.0711936072180782, 0.017461734898296256),
    (0.26656776896822376, 0.06701280861121685, 0.01601146941448239),
    (0.2584343943120385, 0.0631753206188604, 0.014711928534334786),
    (0.250761111443965, 0.05964583208513115, 0.013544620562361607),
    (0.24351140061545598, 0.05639332261510813, 0.01249363774095599),
    (0.23665238291356067, 0.053390468345757315, 0.011545254765265701),
    (0.23015439047880096, 0.05061313927494607, 0.010687595484824218),
    (0.2239905946538288, 0.048039972721227564, 0.009910355294305829),
    (0.21813668336147127, 0.045652010293563174, 0.009204569163566191),
    (0.21257058044203178, 0.04343238801085694, 0.008562417196587771),
    (0.20727220085650105, 0.041366071038682665, 0.007977061151296858),
    (0.20222323663305466, 0.039439625992990404, 0.007442506583175123),
    (0.1974069692375193, 0.03764102496709345, 0.0069534862614693575),
    (0.19280810471531576, 0.03595947642342118, 0.006505361299104943),
    (0.1884126285076003, 0.03438527889854856, 0.00609403707626946),
    (0.1842076773079702, 0.03290969413315648, 0.0057158915544493405),
    (0.18018142571439177, 0.03152483678514423, 0.005367713997120768),
    (0.1763229857571027, 0.030223578335935124, 0.005046652454729764),
    (0.17262231765785055, 0.0289994631745906, 0.0047501686503892224),
    (0.16907015040769408, 0.027846635155759063, 0.004475999131039728),
    (0.16565791094687735, 0.026759773187095652, 0.004222121736345187),
    (0.16237766089686745, 0.02573403461879523, 0.003986726592048044),
    (0.1592220399363674, 0.024765005389749687, 0.0037681909620752778),
    (0.15618421503397592, 0.023848656037650524, 0.003565057399330074),
    (0.15325783485347894, 0.022981302809071846, 0.00337601472282295),
    (0.1504369887362691, 0.022159573214250952, 0.0031998814218189477),
    (0.1477161697413934, 0.02138037546326868, 0.0030355911486192014),
    (0.14509024128913092, 0.020640871298366226, 0.002882180012579449),
    (0.1425544070104023, 0.01993845180348418, 0.0027387754307242737),
    (0.14010418345305023, 0.01927071582864831, 0.00260458632625604),
    (0.13773537533823024, 0.018635450715109494, 0.0024788944965375456),
    (0.13544405309676344, 0.01803061504846504, 0.002361046997695948),
    (0.1332265324471292, 0.01745432320242213, 0.0022504494146330027),
    (0.13107935580449176, 0.016904831466311773, 0.0021465599035767296),
    (0.12899927533433758, 0.016380525575675903, 0.0020488839099044114),
    (0.12698323748543697, 0.015879909487863556, 0.001956969477247203),
    (0.12502836885535037, 0.015401595264115898, 0.0018704030752188347),
    (0.1231319632579323, 0.01494429393654163, 0.0017888058827996293),
])
_MILLS_WMAX = 8.0
_TAYLOR_ORDER = 11
_CF_TERMS = 28
_INV_N = np.array([1.0 / (n + 1) for n in range(_TAYLOR_ORDER)])   # 1/(n+1), as computed inline
# adaptive panels of the positive-term θ-integral (relative accuracy in the tails)
_PSI_RTOL = 1e-15
_PSI_MAXPAN = 256


# Taylor coefficients of sin(x)/x in x²: (−1)^n/(2n+1)!, n = 0..10
(_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8, _S9, _S10) = [
    (-1.0) ** n / math.factorial(2 * n + 1) for n in range(11)]


@jit
def _sin_small(x):
    """sin(x) for |x| ≤ π/2 by its Taylor polynomial of degree 21 (truncation < 2e−18 relative)."""
    x2 = x * x
    return x * (_S0 + x2 * (_S1 + x2 * (_S2 + x2 * (_S3 + x2 * (_S4 + x2 * (
        _S5 + x2 * (_S6 + x2 * (_S7 + x2 * (_S8 + x2 * (_S9 + x2 * _S10))))))))))


@jit
def norm_pdf(x):
    """Standard normal density φ(x)."""
    return math.exp(-0.5 * x * x) * _INV_SQRT2PI


@jit
def norm_cdf(x):
    """Standard normal cdf Φ(x) = erfc(−x/√2)/2 (full relative accuracy for x < 0)."""
    return 0.5 * math.erfc(-x / _SQRT2)


@jit
def mills3(w):
    """Scaled upper-tail ramp moments for w ≥ 0.

    Returns ``(T0, T1, T2)`` with T_n(w) = Hh_n(w)/φ(w), Hh_n(w) = E[(Z − w)_+^n]/n!; T0 is the
    Mills ratio Φ(−w)/φ(w).  For 0 ≤ w ≤ 8: Taylor series (order 11) about the nearest node of
    a table on a 1/8 grid, from the ODEs T_n' = w T_n − T_{n−1} (T_{−1} = 1); for w > 8:
    backward recurrence of the ratios ρ_n = Hh_n/Hh_{n−1}, ρ_{n−1} = 1/(w + n ρ_n) (Laplace's
    continued fraction); for w > 1e4 the asymptotic series.  Relative error a few ulp.
    """
    if w > 1.0e4:
        v = 1.0 / (w * w)
        t0 = (1.0 - v * (1.0 - 3.0 * v)) / w
        t1 = (1.0 - v * (3.0 - 15.0 * v)) * v
        t2 = (1.0 - v * (6.0 - 45.0 * v)) * v / w
        return t0, t1, t2
    if w > _MILLS_WMAX:
        n = _CF_TERMS
        rho = (math.sqrt(w * w + 4.0 * (n + 1)) - w) / (2.0 * (n + 1))
        r1 = 0.0
        r2 = 0.0
        for i in range(n, 0, -1):
            rho = 1.0 / (w + (i + 1) * rho)  # ρ_i
            if i == 2:
                r2 = rho
            elif i == 1:
                r1 = rho
        r0 = 1.0 / (w + r1)
        t1 = r0 * r1
        return r0, t1, t1 * r2
    j = int(w / _MILLS_STEP + 0.5)
    w0 = j * _MILLS_STEP
    u = w - w0
    m_prev = 0.0
    t_prev = 0.0
    s_prev = 0.0
    m = _MILLS_TAB[j, 0]
    t = _MILLS_TAB[j, 1]
    s = _MILLS_TAB[j, 2]
    sm = m
    st = t
    ss = s
    un = 1.0
    for n in range(_TAYLOR_ORDER):
        inv = _INV_N[n]
        m_next = (w0 * m + m_prev - (1.0 if n == 0 else 0.0)) * inv
        t_next = (w0 * t + t_prev - m) * inv
        s_next = (w0 * s + s_prev - t) * inv
        m_prev, m = m, m_next
        t_prev, t = t, t_next
        s_prev, s = s, s_next
        un *= u
        sm += m * un
        st += t * un
        ss += s * un
    return sm, st, ss


@jit
def hh1_pos(w):
    """Hh₁(w) = E[(Z − w)₊] for w ≥ 0 (full relative accuracy): φ(w)·T₁(w) as in :func:`mills3`,
    computing only the two series T₀, T₁ that T₁ needs (bit-identical to ``norm_hh(w)[1]``)."""
    f = norm_pdf(w)
    if w > _MILLS_WMAX:
        return f * mills3(w)[1]
    j = int(w / _MILLS_STEP + 0.5)
    w0 = j * _MILLS_STEP
    return f * _hh1_series(w0, w - w0, _MILLS_TAB[j, 0], _MILLS_TAB[j, 1])


@jit(inline="always")
def _hh1_series(w0, u, m, t):
    """T₁(w0 + u) by its Taylor series about the table node w0 (T₀(w0) = m, T₁(w0) = t), with the
    recurrences of the series coefficients of T₀ and T₁; inlined (numba) so that the loops over
    elements that call it vectorize (:func:`_hh1_taylor_batch`)."""
    m_prev = 0.0
    t_prev = 0.0
    st = t
    un = 1.0
    for n in range(_TAYLOR_ORDER):
        inv = _INV_N[n]
        m_next = (w0 * m + m_prev - (1.0 if n == 0 else 0.0)) * inv
        t_next = (w0 * t + t_prev - m) * inv
        m_prev, m = m, m_next
        t_prev, t = t, t_next
        un *= u
        st += t * un
    return st


@jit(error_model="numpy")
def hh1_batch(w, out):
    """out[i] = Hh₁(w[i]) for w[i] ≥ 0: :func:`hh1_pos` (the same series about the same table
    node for w ≤ 8, the same continued fraction for 8 < w ≤ 1e4, both with the loops
    interchanged so that LLVM vectorizes them over i; φ(w) from
    :func:`popdyn._kernels.vmath.exp_batch`, so within a few ulp of :func:`hh1_pos`; w > 1e4 by
    :func:`hh1_pos` itself).  When every w ≤ 8 (the common case) the series runs on the arrays
    as given, without the gather and scatter (the same values)."""
    n = w.shape[0]
    small = True
    for i in range(n):
        small &= w[i] <= _MILLS_WMAX
    if small:
        _hh1_taylor_batch(w, out)
        return
    it = np.empty(n, np.int64)
    ic = np.empty(n, np.int64)
    nt = 0
    nc = 0
    for i in range(n):
        if w[i] <= _MILLS_WMAX:
            it[nt] = i
            nt += 1
        elif w[i] <= 1.0e4:
            ic[nc] = i
            nc += 1
        else:
            out[i] = hh1_pos(w[i])
    if nt > 0:
        wt = np.empty(nt)
        for e in range(nt):
            wt[e] = w[it[e]]
        ot = np.empty(nt)
        _hh1_taylor_batch(wt, ot)
        for e in range(nt):
            out[it[e]] = ot[e]
    if nc > 0:
        wc = np.empty(nc)
        for e in range(nc):
            wc[e] = w[ic[e]]
        oc = np.empty(nc)
        _hh1_cf_batch(wc, oc)
        for e in range(nc):
            out[ic[e]] = oc[e]


@jit(error_model="numpy")
def _hh1_cf_batch(w, out):
    """Hh₁(w) = φ(w)·T₁(w) for 8 < w ≤ 1e4 by the continued fraction of :func:`mills3`."""
    n = w.shape[0]
    nt = _CF_TERMS
    rho = np.empty(n)
    r1 = np.empty(n)
    f = np.empty(n)
    for i in range(n):
        rho[i] = (math.sqrt(w[i] * w[i] + 4.0 * (nt + 1)) - w[i]) / (2.0 * (nt + 1))
        f[i] = -0.5 * w[i] * w[i]
    for k in range(nt, 0, -1):
        c = k + 1
        for i in range(n):
            rho[i] = 1.0 / (w[i] + c * rho[i])      # ρ_k
    for i in range(n):
        r1[i] = rho[i]
    exp_batch(f, f)
    for i in range(n):
        r0 = 1.0 / (w[i] + r1[i])
        out[i] = (f[i] * _INV_SQRT2PI) * (r0 * r1[i])


@jit(error_model="numpy")
def _hh1_taylor_batch(w, out):
    """Hh₁(w) for 0 ≤ w ≤ 8 by the Taylor series of :func:`hh1_pos` about the table node.

    One loop: the table reads (gathers), φ(w) by :func:`popdyn._kernels.vmath.exp_inline`
    (the bits of ``exp_batch``) and the series (:func:`_hh1_series`, shared with
    :func:`hh1_pos`) per element in registers: its loop over the terms has the constant trip
    count ``_TAYLOR_ORDER``, so LLVM unrolls it and vectorizes the loop over the elements
    (1.7× the speed of rotating the terms through arrays, same bits)."""
    for i in range(w.shape[0]):
        wi = w[i]
        j = int(wi / _MILLS_STEP + 0.5)
        w0 = j * _MILLS_STEP
        f = exp_inline(-0.5 * wi * wi)
        out[i] = (f * _INV_SQRT2PI) * _hh1_series(w0, wi - w0, _MILLS_TAB[j, 0], _MILLS_TAB[j, 1])


@jit
def norm_hh(w):
    """(Hh_0, Hh_1, Hh_2)(w) = (Φ(−w), E[(Z−w)_+], E[(Z−w)_+²]/2), relative accuracy ~1e−15.

    w < 0: the textbook forms (sums of positive terms); w ≥ 0: φ(w)·:func:`mills3`.
    """
    if w < 0.0:
        if w < -_BIG:
            a = -w
            return 1.0, a, 0.5 * (1.0 + a * a)
        P = norm_cdf(-w)
        f = norm_pdf(w)
        return P, f - w * P, 0.5 * ((1.0 + w * w) * P - w * f)
    f = norm_pdf(w)
    t0, t1, t2 = mills3(w)
    return f * t0, f * t1, f * t2


@jit
def _interval_prob(a, b):
    """P(a < Z < b) for a < b, each difference taken where it does not cancel."""
    if a >= b:
        return 0.0
    if a >= 0.0:
        return norm_cdf(-a) - norm_cdf(-b)
    if b <= 0.0:
        return norm_cdf(b) - norm_cdf(a)
    return 1.0 - (norm_cdf(a) + norm_cdf(-b))


@jit
def _bvn_hi(h, k, a2):
    """K(h,k) = ∫_r^1 φ₂(h,k;t) dt for r = √(1 − a2) ≥ 0.925, and its rounding scale.

    Returns (K, mag): mag is the sum of the absolute values of the terms combined, times the
    conditioning 4 + |exponent| of the exponentials.  The closed-form part is
    :func:`_bvn_hi_closed`, the remainder's Gauss–Legendre sum :func:`_bvn_hi_rem`.
    """
    cf, mag = _bvn_hi_closed(h, k, a2)
    num, nmag = _bvn_hi_rem(h, k, a2)
    return _bvn_hi_combine(h, k, a2, cf, mag, num, nmag)


@jit
def _bvn_hi_combine(h, k, a2, cf, mag, num, nmag):
    """(K, mag) of :func:`_bvn_hi` from its two parts."""
    A = math.sqrt(a2)
    hk = h * k
    d_hk = h - k
    bs = d_hk * d_hk
    # rounding of the exponents (≈ (bs/A² + hk)/2 where the integrand lives)
    cond = 4.0 + 0.5 * abs(bs / a2 + hk)
    return (cf + A * num) / _TWOPI, cond * (mag + A * nmag) / _TWOPI


@jit
def _bvn_hi_closed(h, k, a2):
    """Closed-form part of :func:`_bvn_hi` and the sum of its terms' magnitudes."""
    A = math.sqrt(a2)
    hk = h * k
    d_hk = h - k
    bs = d_hk * d_hk
    B = abs(d_hk)
    c = (4.0 - hk) / 8.0
    d = (12.0 - hk) / 16.0
    # closed-form part  e^{-hk/2} ∫_0^A exp(-bs/(2x²)) (1 + c x² + c d x⁴) dx
    # with I_n = ∫_0^A x^{2n} e^{-bs/2x²} dx:  I_0 = A E − B√(2π)Φ(−B/A),
    # I_n = (A^{2n+1} E − bs I_{n−1})/(2n+1),  E = exp(−bs/(2A²)).
    # e^{-hk/2} I_0 = A·EE·T1(B/A) with EE = exp(−hk/2 − bs/(2A²)) ≤ 1 and T1 = Hh_1/φ,
    # so no 0·inf product can occur.
    EE = math.exp(-0.5 * (hk + bs / a2))
    if EE == 0.0:
        return 0.0, 0.0
    _, T1, _ = mills3(B / A)
    i0 = A * EE * T1
    p1 = A * a2 * EE
    i1 = (p1 - bs * i0) / 3.0
    p2 = p1 * a2
    i2 = (p2 - bs * i1) / 5.0
    cf = i0 + c * i1 + c * d * i2
    m1 = (p1 + bs * abs(i0)) / 3.0
    mag = abs(i0) + abs(c) * m1 + abs(c * d) * (p2 + bs * m1) / 5.0
    return cf, mag


@jit
def _bvn_hi_rem(h, k, a2):
    """Remainder of :func:`_bvn_hi`: Σ W_i e_i (ep_i − sp_i) and Σ W_i e_i (|ep_i| + |sp_i|) on
    the 20-point rule, x_i = A·U_i, e = exp(−(bs/x² + hk)/2), ep = exp(−hk x²/(2(1+t)²))/t,
    sp = 1 + c x²(1 + d x²), t = √(1 − x²) (the factor A is applied by the caller)."""
    A = math.sqrt(a2)
    hk = h * k
    d_hk = h - k
    bs = d_hk * d_hk
    c = (4.0 - hk) / 8.0
    d = (12.0 - hk) / 16.0
    num = 0.0
    nmag = 0.0
    for i in range(_GL20_U.shape[0]):
        e, ep, sp = _rem_node(A * _GL20_U[i], bs, hk, c, d)
        num += _GL20_W[i] * e * (ep - sp)
        nmag += _GL20_W[i] * e * (abs(ep) + abs(sp))
    return num, nmag


@jit
def _rem_node(x, bs, hk, c, d):
    """(e, ep, sp) of :func:`_bvn_hi_rem` at the node x (e = 0 below exp's range).  A node
    whose square underflows to 0 (1 − r² below ~1e−319) takes the limit of bs/x²: 0 for
    bs = 0, else +inf."""
    xs = x * x
    if xs == 0.0:
        ex = -0.5 * hk if bs == 0.0 else -math.inf
    else:
        ex = -0.5 * (bs / xs + hk)
    if ex > -745.0:
        t = math.sqrt(1.0 - xs)
        ep = math.exp(-hk * xs / (2.0 * (1.0 + t) * (1.0 + t))) / t
        return math.exp(ex), ep, 1.0 + c * xs * (1.0 + d * xs)
    return 0.0, 0.0, 0.0


# |hk|·(1 − r²) above this: the 20-point remainder rule of K is checked against 2 panels
# (a-posteriori rule error, added to the estimate).  Genz's single panel is accurate in absolute
# terms, but in the joint tail (h, k ≈ ∓7–9, |r| ≈ 0.925–0.95; |hk|·a2 ≳ 5) its relative error
# reached 1e−12 of K, up to 5× the former estimate of Φ₂ (randomized check against 30-digit
# mpmath; the rule difference stayed below 0.6 of the estimate for |hk|·a2 < 5)
_REM_CHECK = 3.0


@jit
def _bvn_hi_rem_n(h, k, a2, n):
    """The sum of :func:`_bvn_hi_rem` with the 20-point rule on ``n`` equal panels of [0, A]."""
    A = math.sqrt(a2)
    hk = h * k
    bs = (h - k) * (h - k)
    c = (4.0 - hk) / 8.0
    d = (12.0 - hk) / 16.0
    num = 0.0
    for j in range(n):
        for i in range(_GL20_U.shape[0]):
            e, ep, sp = _rem_node(A * ((j + _GL20_U[i]) / n), bs, hk, c, d)
            num += (_GL20_W[i] / n) * e * (ep - sp)
    return num


@jit
def _bvn_hi_rem_rule_err(h, k, a2):
    """|rule error| estimate of :func:`_bvn_hi_rem` (times A/2π, as it enters K): twice the
    difference between the 20-point rule on [0, A] and on its two halves (the difference alone
    came within 0.88 of the actual error at h, k ≈ ∓9, |r| ≈ 0.946)."""
    num1, _ = _bvn_hi_rem(h, k, a2)
    return 2.0 * math.sqrt(a2) * abs(num1 - _bvn_hi_rem_n(h, k, a2, 2)) / _TWOPI


@jit
def _bvn_hi_refined(h, k, a2):
    """(K, rule error) of :func:`_bvn_hi` with the remainder on 4 panels, the rule error twice
    the difference to 2 panels (``refine``: where the single panel is not accurate enough)."""
    A = math.sqrt(a2)
    cf, _ = _bvn_hi_closed(h, k, a2)
    n4 = _bvn_hi_rem_n(h, k, a2, 4)
    n2 = _bvn_hi_rem_n(h, k, a2, 2)
    return (cf + A * n4) / _TWOPI, 2.0 * A * abs(n4 - n2) / _TWOPI


#: items per block of :func:`_bvn_hi_rem_batch` (its scratch rows)
_RB = 256


@jit(error_model="numpy")
def _bvn_hi_rem_batch(h, k, a2, num, nmag):
    """:func:`_bvn_hi_rem` for arrays (h, k, a2) of one length n, written into num, nmag: the
    same operations and order per element, with the exponential of
    :func:`popdyn._kernels.vmath.exp_inline` (within 2 ulp; the bits of ``exp_batch``).

    One pass per node over a block of :data:`_RB` items (node, exponents, both exponentials,
    √(1 − x²) once, and both sums fused), in a loop body without calls, which LLVM
    vectorizes."""
    n = h.shape[0]
    nn = _GL20_U.shape[0]
    IN = np.empty(5 * _RB)      # A, hk, bs, c, d of the block's items
    for p0 in range(0, n, _RB):
        nb = min(_RB, n - p0)
        for p in range(nb):
            q = p0 + p
            IN[p] = math.sqrt(a2[q])
            hk = h[q] * k[q]
            IN[_RB + p] = hk
            dd = h[q] - k[q]
            IN[2 * _RB + p] = dd * dd
            IN[3 * _RB + p] = (4.0 - hk) / 8.0
            IN[4 * _RB + p] = (12.0 - hk) / 16.0
        nu = num[p0:p0 + nb]
        nm = nmag[p0:p0 + nb]
        nu[:] = 0.0
        nm[:] = 0.0
        for i in range(nn):
            _rem_node_block(_GL20_U[i], _GL20_W[i], nb, IN, nu, nm)


@jit(inline="always", error_model="numpy")
def _rem_node_block(u, w, nb, IN, num, nmag):
    """The terms of node u (weight w) of :func:`_bvn_hi_rem` added to num, nmag for the items of
    one block of :func:`_bvn_hi_rem_batch` (the operations of :func:`_rem_node`; a node whose
    square underflows to 0 takes the limit of bs/x², e = 0 below exp's range)."""
    for p in range(nb):
        A = IN[p]
        hk = IN[_RB + p]
        bs = IN[2 * _RB + p]
        c = IN[3 * _RB + p]
        d = IN[4 * _RB + p]
        x = A * u
        xs = x * x
        ex = -0.5 * (bs / xs + hk)
        if xs == 0.0:
            ex = -0.5 * hk if bs == 0.0 else -math.inf
        t = math.sqrt(1.0 - xs)
        ep = exp_inline(-hk * xs / (2.0 * (1.0 + t) * (1.0 + t))) / t
        sp = 1.0 + c * xs * (1.0 + d * xs)
        e = exp_inline(ex) if ex > -745.0 else 0.0
        num[p] += w * e * (ep - sp)
        nmag[p] += w * e * (abs(ep) + abs(sp))


@jit
def _lo_sum(U, W, hk, hs, a0, pw):
    """Σ_i W_i g(a0 + pw·U_i), g(θ) = exp((sin θ·hk − hs)/cos²θ)."""
    s = 0.0
    for i in range(U.shape[0]):
        sn = _sin_small(a0 + pw * U[i])
        s += W[i] * math.exp((sn * hk - hs) / ((1.0 - sn) * (1.0 + sn)))
    return s


@jit
def _K_laguerre(h, k, a2):
    """K(h,k) = (1/2π)∫₀^A exp(−(h−k)²/(2x²) − hk/(1+t))/t dx (t = √(1−x²), A² = a2) by
    16-point Gauss–Laguerre after w = (h−k)²/(2x²) = w_A + v, w_A = (h−k)²/(2A²):

        K = A³/(2π (h−k)²) · exp(−w_A − hk/(1+t_A))/t_A · Σ λ_i G(v_i),
        G(v) = exp(hk/(1+t_A) − hk/(1+t)) (t_A/t) (1 + v/w_A)^{−3/2}.

    G is slowly varying when w_A ≳ 15 and t_A ≥ 0.925 (the regime where it is used), and the
    sum has positive terms only, so K keeps full relative accuracy however small it is.
    """
    bs = (h - k) * (h - k)
    hk = h * k
    wA = 0.5 * bs / a2
    tA = math.sqrt(1.0 - a2)
    cA = hk / (1.0 + tA)
    s = 0.0
    for i in range(_LAG_X.shape[0]):
        v = _LAG_X[i]
        w = wA + v
        t = math.sqrt(1.0 - 0.5 * bs / w)
        q = 1.0 + v / wA
        s += _LAG_W[i] * math.exp(cA - hk / (1.0 + t)) * (tA / t) / (q * math.sqrt(q))
    A = math.sqrt(a2)
    return A * a2 / (_TWOPI * bs) * math.exp(-wA - cA) / tA * s


@jit
def _exponent_range(h, k, r):
    """(E_min, E_max) of E(θ) = (hk sin θ − (h²+k²)/2)/cos²θ, the exponent of φ₂(h, k; sin θ)
    (times 2π cos θ), over θ ∈ [0, asin r]: the endpoints and the interior stationary point
    sin θ* = k/h or h/k (E(θ*) = −max(h², k²)/2) when it lies between 0 and r.  Symmetric under
    (h, k) → (−h, −k)."""
    hk = h * k
    hs = 0.5 * (h * h + k * k)
    e0 = -hs
    e1 = (r * hk - hs) / ((1.0 - r) * (1.0 + r))
    emax = max(e0, e1)
    emin = min(e0, e1)
    ah = abs(h)
    ak = abs(k)
    if ah > 0.0 and ak > 0.0:
        ts = min(ah, ak) / max(ah, ak)
        if hk < 0.0:
            ts = -ts
        if (r > 0.0 and 0.0 < ts < r) or (r < 0.0 and r < ts < 0.0):
            emax = max(emax, -0.5 * max(ah, ak) ** 2)
    return emin, emax


@jit
def _bvn_lo(h, k, r):
    """Φ₂(h,k;r), |r| < 0.925, from Φ(h)Φ(k) + (1/2π)∫₀^{asin r} g(θ) dθ; returns (value, base).

    g(θ) = exp(E(θ)), E = (hk sin θ − (h²+k²)/2)/cos²θ.  Genz's rule (6/12/20 points by |r|)
    is accurate in absolute terms only; for relative accuracy of the integral the rule is also
    chosen by the log-variation V of g over the interval (measured against 8-panel 20-point
    values: relative error ≤ 3e−15 for 6 points at |r| < 0.3, V < 0.05; 12 points at
    |r| < 0.75, V < 1; 20 points at V < 8), and for V > 8 the 20-point rule is applied on
    ⌈V/8⌉ panels.  Returns (value, base = Φ(h)Φ(k), rounding-error scale).
    """
    hk = h * k
    hs = 0.5 * (h * h + k * k)
    asr = math.asin(r)
    emin, emax = _exponent_range(h, k, r)
    V = emax - emin
    ar = abs(r)
    if V > 8.0:
        npan = int(V / 8.0) + 1
        pw = asr / npan
        s = 0.0
        for j in range(npan):
            s += _lo_sum(_GL20_U, _GL20_W, hk, hs, j * pw, pw)
        I = s * pw / _TWOPI
    else:
        if ar < 0.3 and V < 0.05:
            s = _lo_sum(_GL6_U, _GL6_W, hk, hs, 0.0, asr)
        elif ar < 0.75 and V < 1.0:
            s = _lo_sum(_GL12_U, _GL12_W, hk, hs, 0.0, asr)
        else:
            s = _lo_sum(_GL20_U, _GL20_W, hk, hs, 0.0, asr)
        I = s * asr / _TWOPI
    base = norm_cdf(h) * norm_cdf(k)
    # rounding: Φ(h) carries the conditioning h²·eps of its rounded argument for h < 0, and the
    # integrand exp(E) the conditioning of its exponent: |E|·eps, plus 2hk·sin θ/cos²θ ≤
    # 2hk·r/(1 − r²) where hk·sin θ > 0 and the two terms of E cancel (in the joint tail at
    # r ≈ 0.8–0.9 the former allowance |E_max|·eps was 1.6× short: randomized check against
    # 40-digit mpmath); plus the rule's own measured relative error (3e−15, above)
    hn = min(h, 0.0)
    kn = min(k, 0.0)
    cx = 2.0 * max(0.0, hk * r) / ((1.0 - r) * (1.0 + r))
    err = (_EPS * (base * (4.0 + hn * hn + kn * kn) + abs(I) * (4.0 + abs(emax) + cx))
           + 3e-15 * abs(I))
    return base + I, base, err


@jit
def _psi_integral(a, b, psi0, psi1, npan):
    """(1/2π) ∫_{ψ0}^{ψ1} exp(−(a−b)²/(2 sin²ψ) − ab/(2 cos²(ψ/2))) dψ, 20-point GL on npan panels.

    With ψ = π/2 − θ this is Genz's integrand exp(−(a² + b² − 2ab sin θ)/(2cos²θ)) written so
    that cos²θ = sin²ψ and 1 + sin θ = 2cos²(ψ/2) carry no cancellation near θ = ±π/2.
    """
    d2 = (a - b) * (a - b)
    ab = a * b
    pw = (psi1 - psi0) / npan
    s = 0.0
    for j in range(npan):
        for i in range(_GL20_U.shape[0]):
            psi = psi0 + pw * (j + _GL20_U[i])
            sp = _sin_small(psi)
            ch = _sin_small(0.5 * (math.pi - psi))  # cos(ψ/2)
            s += _GL20_W[i] * math.exp(-0.5 * d2 / (sp * sp) - 0.5 * ab / (ch * ch))
    return s * pw / _TWOPI


@jit
def _psi_adapt(a, b, psi0, psi1, n0):
    """:func:`_psi_integral` with the panel count doubled until two estimates agree to
    ``_PSI_RTOL`` (relaxed to the rounding level eps·|log value| of the integrand for tiny
    values), starting from ``n0`` panels, at most ``_PSI_MAXPAN``.  Returns (value, converged)."""
    n = n0
    prev = _psi_integral(a, b, psi0, psi1, n)
    while n < _PSI_MAXPAN:
        n *= 2
        cur = _psi_integral(a, b, psi0, psi1, n)
        # the integrand values carry relative rounding ~eps·|exponent|, with |exponent| ≈ −log(value)
        tol = _PSI_RTOL
        if cur > 0.0 and cur < 1.0:
            tol = max(tol, 4.0 * _EPS * (1.0 - math.log(cur)))
        if abs(cur - prev) <= tol * abs(cur):
            return cur, True
        prev = cur
    return prev, False


@jit
def _bvn_err(h, k, r, omr, opr, refine):
    """Φ₂(h,k;r) and an estimate of its rounding error: eps × the terms that were combined, each
    times the conditioning of its argument (h²/2 for Φ(h) in the lower tail, |E| for exp(−E)).

    With ``refine`` set, the two cases in which the formula of the branch is a difference much
    larger than its value -- the lower-left tail at r ≥ 0.925 (Φ(min(h,k)) − K) and h + k < 0
    at r < 0 (Φ(h)Φ(k) − |I|, or K evaluated on a sharp peak) -- are recomputed from a
    representation with positive terms only (the θ-integral from r' = 0, resp. from r' = −1),
    with adaptive panels.  This restores relative accuracy for small values.  In the |r| ≥ 0.925
    branch, where |hk|·(1 − r²) > ``_REM_CHECK``, the remainder rule of K is checked against two
    panels and the difference added to the estimate; with ``refine`` set, K is recomputed with
    the remainder on 4 panels instead (checked against 2).
    """
    if h != h or k != k or r != r:
        return np.nan, np.nan
    if h < -_BIG or k < -_BIG:
        return 0.0, 0.0
    if h > _BIG:
        if k > _BIG:
            return 1.0, 0.0
        v = norm_cdf(k)
        return v, _EPS * v
    if k > _BIG:
        v = norm_cdf(h)
        return v, _EPS * v
    if omr <= 0.0:
        m = min(h, k)
        v = norm_cdf(m)
        return v, _EPS * v * (2.0 + min(m, 0.0) ** 2)
    if opr <= 0.0:
        v = _interval_prob(-k, h)
        return v, 2.0 * _EPS * (v + (1.0 + h * h) * norm_cdf(-abs(h)) + (1.0 + k * k) * norm_cdf(-abs(k)))
    if r == 0.0:
        v = norm_cdf(h) * norm_cdf(k)
        return v, _EPS * v * (4.0 + min(h, 0.0) ** 2 + min(k, 0.0) ** 2)
    if abs(r) < 0.925:
        v, base, e = _bvn_lo(h, k, r)
        if refine and r < 0.0 and h + k < 0.0 and v < 0.25 * base:
            # from r' = −1: Φ₂ = ∫_{−1}^r φ₂ dt = (1/2π)∫_0^{acos(−r)} (ψ-form with k → −k)
            d = h + k
            n0 = 1 + int(d * d / (25.0 * omr * opr))
            w, ok = _psi_adapt(h, -k, 0.0, 2.0 * math.asin(math.sqrt(0.5 * opr)), min(n0, 64))
            if ok:
                v = w
                e = _EPS * w * (8.0 - math.log(max(w, 1e-300)))
        return v, e
    a2 = omr * opr
    K, mag = _bvn_hi(h, k if r > 0.0 else -k, a2)
    return _bvn_err_hi(h, k, r, omr, opr, K, mag, refine)


@jit
def _bvn_hi_case(h, k, r, omr, opr):
    """True when :func:`_bvn_err` takes its |r| ≥ 0.925 branch (K from :func:`_bvn_hi` at
    (h, k) for r > 0, at (h, −k) for r < 0)."""
    return (h == h and k == k and r == r and -_BIG <= h <= _BIG and -_BIG <= k <= _BIG
            and omr > 0.0 and opr > 0.0 and r != 0.0 and abs(r) >= 0.925)


@jit
def _bvn_err_hi(h, k, r, omr, opr, K, mag, refine):
    """The |r| ≥ 0.925 branch of :func:`_bvn_err` given (K, mag) = :func:`_bvn_hi` at (h, ±k)."""
    a2 = omr * opr
    kk = k if r > 0.0 else -k
    # r <= -0.925, h <= -k with the integrand of K sharply peaked at x = A: Gauss–Laguerre
    laguerre = r < 0.0 and h <= -k and (h + k) * (h + k) > 30.0 * a2
    # the remainder rule's error in K, where it can matter (_REM_CHECK); not on the
    # Gauss–Laguerre branch, which does not use K
    ek = 0.0
    if abs(h * kk) * a2 > _REM_CHECK and not laguerre:
        if refine:
            # the value too (bvn_cdf): K with the remainder on 4 panels
            K, ek = _bvn_hi_refined(h, kk, a2)
        else:
            ek = _bvn_hi_rem_rule_err(h, kk, a2)
    if r > 0.0:
        m = min(h, k)
        P = norm_cdf(m)
        v = P - K
        # 8·mag: with 4·mag the joint lower tail (h, k ≈ −8, r ≈ 0.94, v ≈ 1e−16) was 1.3× short
        # (randomized check against 40-digit mpmath, benchmarks/stress_estimates.py)
        e = _EPS * (P * (4.0 + min(m, 0.0) ** 2) + 8.0 * mag) + ek
        if refine and h < 0.0 and k < 0.0 and v < 0.25 * P:
            # from r' = 0: Φ(h)Φ(k) + (1/2π)∫_{acos r}^{π/2} (ψ-form)
            base = norm_cdf(h) * norm_cdf(k)
            hs = 0.5 * (h * h + k * k)
            if max(h, k) > r * min(h, k):  # peak inside: at sin θ = min/max
                emax = -0.5 * min(h, k) ** 2
            else:
                emax = (r * h * k - hs) / a2
            n0 = 1 + int((emax + hs) / 12.0)
            w, ok = _psi_adapt(h, k, 2.0 * math.asin(math.sqrt(0.5 * omr)), 0.5 * math.pi, min(n0, 64))
            if ok:
                v = base + w
                e = _EPS * v * (8.0 - math.log(max(v, 1e-300)))
        if v < 0.0:
            v = 0.0
        return v, e
    # r <= -0.925: Φ₂(h,k;r) = Φ(h) − Φ₂(h,−k;−r) = Φ(h) − Φ(min(h,−k)) + K(h,−k)
    if h <= -k:
        if laguerre:
            # the integrand of K is sharply peaked at x = A (Genz's remainder rule loses
            # relative accuracy): Gauss–Laguerre in w = (h+k)²/(2x²)
            v = _K_laguerre(h, -k, a2)
            # rounding: the exponent w_A + hk/(1 + t_A) of the prefactor, w_A = (h+k)²/(2a2)
            # within 2.5 eps and hk/(1 + t_A) within 2 eps, plus the sum's terms (a randomized
            # check against 40-digit mpmath found 1.4× the former allowance, (w_A + |hk|/2)·eps)
            e = _EPS * v * (8.0 + 1.5 * (h + k) * (h + k) / a2 + 2.0 * abs(h * k))
        else:
            v = K
            e = 4.0 * _EPS * mag + ek
    else:
        L = _interval_prob(-k, h)
        v = L + K
        e = _EPS * (2.0 * L + 2.0 * (1.0 + h * h) * norm_cdf(-abs(h))
                    + 2.0 * (1.0 + k * k) * norm_cdf(-abs(k)) + 4.0 * mag) + ek
    if v < 0.0:
        v = 0.0
    return v, e


@jit
def bvn_cdf(h, k, r, omr, opr):
    """Φ₂(h, k; r) = P(Z₁ ≤ h, Z₂ ≤ k) for a standard bivariate normal with correlation r.

    Parameters
    ----------
    h, k : float
        Upper limits (may be ±inf).
    r : float
        Correlation in [−1, 1].
    omr, opr : float
        1 − r and 1 + r, supplied exactly by the caller (e.g. ½|θᵢ − θⱼ|² and ½|θᵢ + θⱼ|² for
        unit vectors); they replace 1 − r, 1 + r and 1 − r² everywhere.  omr = 0 (opr = 0)
        means r = 1 (r = −1) exactly.

    Returns
    -------
    float
        Absolute error ≤ 2 ulp(1) = 4.4e−16.  Relative error ~1e−14 (times the input conditioning
        ~(h² + k²)·eps in the tails), also for small values in the lower-left tail
        (r > 0) and for h + k < 0 at r < 0, which are recomputed from positive-term
        representations when Genz's formula would cancel (see :func:`_bvn_err`).

    Notes
    -----
    See the module docstring (Genz 2004 / Drezner–Wesolowsky).
    """
    v, _ = _bvn_err(h, k, r, omr, opr, True)
    return v
