"""Closed-form pair moments of piecewise-linear (PL) units on Gaussian inputs.

A PL unit is σ(t) = p·relu(t) + q·t applied to t = α θ·x + β, x ~ N(0, I_d), α ≥ 0, |θ| = 1.
(relu: (p, q) = (1, 0); leaky_relu with slope s: (1 − s, s); |t|: (2, −1); identity: (0, 1).)
Derivatives are with respect to t: σ'(t) = p·1{t > 0} + q (1{0 > 0} = 0) and ασ'' = p·α·δ(t).
For unit i of set 1 and unit j of set 2, with ρ = θᵢ·θⱼ,

    C_ij = E[σᵢ σⱼ],  B_ij = E[σ'ᵢ σ'ⱼ],  A_ij = E[αᵢ σ''ᵢ σⱼ],  D_ij = E[σ'ᵢ σⱼ]

(A and D are not symmetric).  A_ij = pᵢ φ(βᵢ/αᵢ) E[σⱼ | tᵢ = 0] for αᵢ > 0 and 0 for αᵢ = 0.

Method (all float64, numba)
---------------------------
*Canonical ramps.*  For αᵢ > 0 write h = βᵢ/αᵢ and, with Z̃ = s·θ·x,

    relu(t) = α (Z̃ − x)₊            (h ≤ 1:  s = +1, x = −h)
    relu(t) = t + α (Z̃ − x)₊        (h > 1:  s = −1, x = h),

so every unit is σ = P·α·g + Q·t with a ramp g = (Z̃ − x)₊, x ≥ −1 (P = p; Q = q or p + q):
the ramp left over is the small, tail-side part whenever the unit is far from its kink.
Linear parts are integrated exactly by Stein's lemma (E[t g(·)] = β E[g] + Cov·E[g']), so only
ramp–ramp terms need the bivariate normal: with correlation r̃ = sᵢsⱼρ (1 ∓ r̃ taken from
OMR/OPR, never formed as a difference), σ̃ = √((1−r̃)(1+r̃)),

    P̃ = P(Z̃₁>x, Z̃₂>y) = Φ₂(−x, −y; r̃)
    S̃ᵢⱼ = E[1{Z̃₁>x}(Z̃₂−y)₊] = aⱼ + r̃ aᵢ − y P̃,      aᵢ = φ(x) Φ((r̃x − y)/σ̃)
    R̃ = E[(Z̃₁−x)₊(Z̃₂−y)₊] = (xy + r̃) P̃ − x aⱼ − y aᵢ + σ̃ φ(x) φ((y − r̃x)/σ̃)

(DESIGN §3 with h = −x, k = −y), the exponent written as (x−y)²/σ̃² + 2xy/(1+r̃).  r̃ = 1 gives
the 1-D forms P̃ = Hh₀(M), R̃ = 2Hh₂(M) + |x−y| Hh₁(M) (M = max(x, y)) and r̃ = −1 the forms on
the interval x < Z̃₁ < −y, with Hh_n the stable ramp moments of
:func:`popdyn._kernels.bvn.norm_hh`.  A_ij uses the conditional law tⱼ | tᵢ = 0 ~ N(μ, τ²) and
E[p relu(T) + qT] with the ramp again taken on the tail side of μ.  φ(h) is evaluated with the
exact quotient β/α (error-free transformations), so values ∝ e^{−h²/2} keep ulp accuracy.

*Tails.*  In the tails (x, y ≳ 1) the closed forms for R̃ and S̃ cancel (terms ~x²Φ(−x) for a
value ~φ(x)/x³).  For |r̃| < 0.925 the ramp moments are therefore computed first from Price's
theorem (∂R̃/∂r = P̃, ∂P̃/∂r = φ₂, S̃ij = −∂R̃/∂x), integrated from r̃ = 0 where they are
products of the stable 1-D ramp moments Hh_n (:func:`_ramps_price`):

    R̃ = Hh₁(x)Hh₁(y) + r̃ Hh₀(x)Hh₀(y) + ∫₀^r̃ (r̃ − t) φ₂(x, y; t) dt,   P̃, S̃ alike,

every term positive for r̃ ≥ 0 and x, y ≥ 0, with the t-integrals on the Gauss–Legendre rule of
Genz's Φ₂ (one exponential per node for all four moments: about the cost of one Φ₂).  Each
evaluator returns an error estimate (eps × the terms combined, each with the sensitivity to its
rounded arguments; the rule's error for the Price form); if the estimate could exceed
``rtol``·|moment| + ``atol``·scale (scale = product of the two units' RMS sizes of σ or σ'),
the next evaluator is tried: bound (:func:`_ramps_bound`: a ramp–ramp term below the
tolerance, one unit far in its tail, is the midpoint of [0, Cauchy–Schwarz bound]) → Price form
→ closed forms → (|r̃| > 0.925) the 1-D forms at
r̃ = ±1 with Price-bounded corrections when the thresholds are separated on the scale σ̃
(:func:`_ramps_aligned`) → (|r̃| < 1 − 1e−3) the Price form with an a-posteriori rule
check (:func:`_ramps_price_checked`; below 0.925 it serves some of the moderate
anticorrelations near the kinks, r̃ ≈ −0.85, where R̃ is ~1/25 of its terms and the
pre-validated rule's allowance misses the target by a few tens of percent) → (r̃ < 0,
x + y > 0) the Price form integrated from r' = −1, where all four vanish: positive terms, on
panels graded towards −1 with an a-posteriori check (:func:`_ramps_price_anti`; ~3–9 µs a pair
where the quadrature took ~25) → the four ramp quantities as 1-D integrals of positive
integrands, e.g. R̃ = φ(x) ∫₀^∞ u e^{−xu−u²/2} σ̃ Hh₁((y − r̃(x+u))/σ̃) du, by adaptive
Gauss–Kronrod (7–15) with relative tolerance ``qtol`` (measured accuracy ~1e−14; ~25 µs a pair;
left for nearly aligned units, 1 − r̃ ≲ 5e−3, with close thresholds in the tail, and for the
few anticorrelated pairs that no form above serves).  tests/popdyn/test_plmoments_estimates.py checks every
estimate against the actual error (40-digit mpmath).

*Many pairs at once* (:func:`pl_self_moments`, :func:`pl_pair_moments` through
:func:`_moments_list`, on chunks of 1024 pairs so that its scratch stays in cache,
:func:`_moments_chunked`): every pair
takes the evaluators above in the same order, but the three
expensive kinds of evaluation are deferred and done for all pairs together in loops over the
pairs that LLVM vectorizes (AVX2/AVX-512): the Price forms (per Gauss–Legendre rule, panels
as items; :func:`_price_batch`), the remainder sum of Genz's |r| ≥ 0.925 rule in the closed forms
(:func:`popdyn._kernels.bvn._bvn_hi_rem_batch`), and Hh₁ of the A terms
(:func:`popdyn._kernels.bvn.hh1_batch`), with the exponential and sine of
:mod:`popdyn._kernels.vmath` (≤ 2 ulp, within the estimates' allowance for the exponentials).
A deferred pair whose estimate then misses the target continues exactly as the scalar path
(:func:`_ramps_rest`).  Results agree with the one-pair path :func:`_pair_moments` to rounding
(tests/popdyn/test_vmath.py, test_plmoments.py).  At m = 32 on the states of the sweep
benchmark's trajectories the batched evaluation takes ≈ 1/1.9 of the time of the one-pair loop
:func:`pl_self_moments_pairwise` (benchmarks/bench_pairs.py, both timed in the same run).
The pair loop runs in two passes.  Its arithmetic -- the linear and A parts, the ramp frame,
the bound and its test, the Price form's log-variation -- is one loop over the consecutive
pairs (i, j), (i, j + 1), … of a row (:func:`_front_seg`), reading the units as a structure of
arrays (:func:`_unit_array`) and writing one column store: LLVM vectorizes it (packed
vsqrtpd/vdivpd; tests/popdyn/test_plmoments_front.py inspects the assembly).  Its
data-dependent choices are selects (the branch-free twins ``_*_bf`` of the one-pair forms, bit
for bit the same values: tests/popdyn/test_plmoments_front.py).  A scalar pass then picks each
pair's next evaluator and fills the deferral lists; the deferred Price pairs carry their
columns (:func:`_pc_store_a`) to an assembly over arrays (:func:`_finish_price`), and their
node sums are one fused pass per node (:func:`_price_batch`, the exponential of
:func:`popdyn._kernels.vmath.exp_inline`).  The chunks' pair lists, results and scratch are
allocated once per call (:func:`_moments_chunked`) with rows not 2^k apart (:data:`_LD`).
No call in these loops takes arrays (numba increfs and decrefs every array argument of a call
atomically: ~19% of the time at m = 256 until 0.6.0, measured with perf).  All of it gives the
bits of 0.6.1 (the same operations in the same order, pair by pair).

*Degenerate geometry* is exact: α = 0 (constant unit), |β| > 40α (the ramp part is exactly 0 or
exactly linear in float64: Φ(−40) underflows; h = β/α is never formed when it could overflow),
ρ = ±1 exactly (1-D forms), ρ within 1e−12 of ±1 (through OMR/OPR), β = 0.

Accuracy (tests/popdyn/test_plmoments.py, against 30-digit mpmath): every entry within
1e−13·|value| + 1e−15·scale (+ eps·h²/2·|value| for |h| ≳ 20, the conditioning of e^{−h²/2}).

References
----------
DESIGN.md §2–§3.  S. Rosenbaum, "Moments of a truncated bivariate normal distribution",
J. R. Stat. Soc. B 23 (1961) 405–408 (the truncated moments behind R̃, S̃).
"""
import math

import numpy as np

from ._jit import jit
from . import arccos as _ac
from .bvn import (_GL6_U, _GL6_W, _GL12_U, _GL12_W, _GL20_U, _GL20_W, _bvn_err,
                  _bvn_err_hi, _bvn_hi_case, _bvn_hi_closed, _bvn_hi_combine, _bvn_hi_rem_batch,
                  _exponent_range, _interval_prob, _sin_small, hh1_batch, hh1_pos, mills3,
                  norm_cdf, norm_hh, norm_pdf)
from .eft import two_prod as _two_prod
from .vmath import exp_inline
from .vmath import sin_small as _sin_vec

__all__ = ["pl_pair_moments", "pl_self_moments", "pl_first_moments", "pl_units",
           "pl_pair_moments_units", "pl_self_moments_units", "pl_first_moments_units",
           "pl_pair_moments_ws", "pl_self_moments_ws"]

_EPS = 2.220446049250313e-16
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWOPI = 2.0 * math.pi
# |β| > _HBIG·α: relu(t) is exactly 0 or exactly t in float64 (Φ(−40) underflows)
_HBIG = 40.0
# h > _REFLECT: relu(t) = t + relu(−t), so that the ramp left over is the small (tail) part
_REFLECT = 1.0

# Gauss–Kronrod 7–15 on [−1, 1] (nodes ≥ 0; the last node is 0); Gauss weights at odd indices
_XGK = np.array([0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
                 0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
                 0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
                 0.207784955007898467600689403773245, 0.0])
_WGK = np.array([0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
                 0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
                 0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
                 0.204432940075298892414161999234649, 0.209482141084727828012999174891714])
_WG = np.array([0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
                0.381830050505118944950369775488975, 0.417959183673469387755102040816327])

# default tolerances of the kernels
RTOL = 5e-14       # relative error target of each moment (triggers the quadrature path)
ATOL = 5e-16       # absolute error target in units of the pair's RMS scale
QTOL = 1e-14       # relative tolerance of the adaptive quadrature (GK's estimate is pessimistic)
MAXINT = 200       # maximal number of subintervals of the adaptive quadrature


# ----------------------------------------------------------------------------- single units
@jit
def _h_phi(be, al):
    """h = β/α rounded, and φ(β/α) with the exact quotient: the rounding of h is not amplified
    by the exponent (|h| up to 38: relative error a few ulp instead of h²·eps)."""
    h = be / al
    p, e = _two_prod(h, al)
    d = ((be - p) - e) / al        # β/α = h + d
    s, t = _two_prod(h, h)         # h² = s + t
    # φ = exp(−s/2) · exp(−(t/2 + h d)), s/2 exact
    return h, math.exp(-0.5 * s) * math.exp(-(0.5 * t + h * d)) * _INV_SQRT2PI


@jit
def _unit(p, q, al, be):
    """Canonical form of one unit.

    Returns (P, Q, s, x, pd, H0, H1, H2, ph, mu0, mu1, mu2, rms0, rms1):
    σ = P·α·(Z̃ − x)₊ + Q·t with Z̃ = s·θ·x; pd·φ(x) = E[ασ''] weight (0 for a linear unit);
    Hh_n(x), φ(x); first moments μ0 = E[σ], μ1 = E[σ'], μ2 = E[ασ'']; RMS of σ and σ'.
    Linear units (α = 0, or |β| > 40α, or p = 0) have P = 0, Q = L with σ = L·t exactly.
    """
    if al > 0.0 and abs(be) <= _HBIG * al and p != 0.0:
        h = be / al
        if h <= _REFLECT:
            s = 1.0
            x = -h
            Q = q
        else:
            s = -1.0
            x = h
            Q = p + q
        P = p
        h, ph = _h_phi(be, al)
        if x >= 0.0:
            t0, t1, t2 = mills3(x)
            H0 = ph * t0
            H1 = ph * t1
            H2 = ph * t2
        else:
            H0, H1, H2 = norm_hh(x)
        mu0 = P * al * H1 + Q * be
        mu1 = P * s * H0 + Q
        mu2 = p * ph
        c = P * P + 2.0 * s * P * Q
        rms0 = al * math.sqrt(max(0.0, 2.0 * H2 * c + Q * Q * (1.0 + x * x)))
        rms1 = math.sqrt(max(0.0, H0 * c + Q * Q))
        return P, Q, s, x, p, H0, H1, H2, ph, mu0, mu1, mu2, rms0, rms1
    # linear (or constant) unit: σ = L t, σ' = L
    if be > 0.0:
        L = p + q
    else:
        L = q
    return (0.0, L, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, L * be, L, 0.0,
            abs(L) * math.hypot(al, be), abs(L))


@jit
def pl_units(p, q, al, be):
    """The canonical forms (:func:`_unit`) of the units (p[i], q[i], al[i], be[i]), as a list:
    computed once per set and shared by :func:`pl_self_moments_units`,
    :func:`pl_pair_moments_units` and :func:`pl_first_moments_units` (the fused GD step needs
    all three for the same student units)."""
    return [_unit(p[i], q[i], al[i], be[i]) for i in range(al.shape[0])]


@jit
def pl_first_moments(p, q, al, be, mu0, mu1, mu2):
    """First moments per unit: mu0 = E[σ], mu1 = E[σ'], mu2 = E[ασ''] = p φ(β/α) (0 if α = 0).

    Parameters are float64 arrays of one length m; the results are written into mu0, mu1, mu2.
    Full relative accuracy also in the tails (E[relu] = α Hh₁(|h|) + ... via stable ramp
    moments, not φ(h) + hΦ(h)).
    """
    pl_first_moments_units(pl_units(p, q, al, be), mu0, mu1, mu2)


@jit
def pl_first_moments_units(U, mu0, mu1, mu2):
    """:func:`pl_first_moments` from the units' canonical forms U (:func:`pl_units`)."""
    for i in range(len(U)):
        u = U[i]
        mu0[i] = u[9]
        mu1[i] = u[10]
        mu2[i] = u[11]


# ------------------------------------------------------------------ ramp–ramp, closed forms
@jit
def _ramps_direct(x, y, rt, om, op, phx, phy, H0x, H1x, H2x, H0y, H1y, H2y):
    """Closed-form ramp–ramp moments for thresholds x, y ≥ −1, correlation rt (om = 1 − rt,
    op = 1 + rt).

    Returns (P, Sij, Sji, R, eP, eSij, eSji, eR), the e* being rounding-error estimates.
    """
    if om <= 0.0:  # rt = 1: Z̃₂ = Z̃₁
        if x >= y:
            P = H0x
            Sij = H1x + (x - y) * H0x
            Sji = H1x
            R = 2.0 * H2x + (x - y) * H1x
        else:
            P = H0y
            Sij = H1y
            Sji = H1y + (y - x) * H0y
            R = 2.0 * H2y + (y - x) * H1y
        return P, Sij, Sji, R, _EPS * P, 2 * _EPS * Sij, 2 * _EPS * Sji, 2 * _EPS * R
    if op <= 0.0:  # rt = −1: Z̃₂ = −Z̃₁, both ramps positive only on x < Z̃₁ < −y
        if x + y >= 0.0:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        P = _interval_prob(x, -y)
        dph = phx - phy
        Sij = -y * P - dph
        Sji = dph - x * P
        R = (x * y - 1.0) * P - y * phx - x * phy
        m = P + phx + phy
        return P, Sij, Sji, R, 2 * _EPS * m, 4 * _EPS * m, 4 * _EPS * m, 8 * _EPS * m
    P, eP = _bvn_err(-x, -y, rt, om, op, False)
    return _ramps_direct_with(x, y, rt, om, op, phx, phy, P, eP)


@jit
def _ramps_direct_with(x, y, rt, om, op, phx, phy, P, eP):
    """:func:`_ramps_direct` for −1 < r̃ < 1 given P̃ = Φ₂(−x, −y; r̃) and its error estimate."""
    s2 = om * op
    sig = math.sqrt(s2)
    dyx = y - x
    wi = (dyx + om * x) / sig     # (y − rt x)/σ
    wj = (om * y - dyx) / sig     # (x − rt y)/σ
    ai = phx * norm_cdf(-wi)      # φ(x) Φ((rt x − y)/σ)
    aj = phy * norm_cdf(-wj)
    # E = (x² − 2 r̃ xy + y²)/(2(1 − r̃²)) ≥ 0, as two terms of one sign: (y − x)²/s2 + 2xy/op
    # cancels where r̃ < 0 and xy < 0 (as r̃ → −1 with x ≈ −y, antiparallel units sharing a kink
    # line, both terms grow like 1/op and E formed so came out ≪ 0: exp overflowed, R and the
    # gradient were NaN -- until 0.6.1); there x² − 2r̃xy + y² = (x + y)² − 2·op·xy is used
    if rt < 0.0 and x * y < 0.0:
        dxy = x + y
        t1 = dxy * dxy / s2
        t2 = -2.0 * x * y / om
    else:
        t1 = dyx * dyx / s2
        t2 = 2.0 * x * y / op
    E = 0.5 * (t1 + t2)
    ex = math.exp(-E) / _TWOPI    # φ(x)φ(wi) = φ(y)φ(wj)
    Sij = aj + rt * ai - y * P
    Sji = ai + rt * aj - x * P
    cP = x * y + rt
    R = cP * P - x * aj - y * ai + sig * ex
    # error scales: each factor carries the rounding of its argument, amplified by its
    # sensitivity to the argument (exp(−E): the absolute error of E; φ(x): x²·eps; Φ(−w): the
    # absolute error δw of w times |∂aᵢ/∂w| = φ(x)φ(w) = ex -- exact to first order, and ~0
    # where Φ(−w) → 1 is insensitive to w)
    art = abs(rt)
    dwi = _EPS * (2.0 * (abs(dyx) + abs(om * x)) / sig + 3.0 * abs(wi))
    dwj = _EPS * (2.0 * (abs(om * y) + abs(dyx)) / sig + 3.0 * abs(wj))
    ea = _EPS * (3.0 + x * x) * ai + dwi * ex
    eb = _EPS * (3.0 + y * y) * aj + dwj * ex
    ee = _EPS * (3.0 + 2.0 * (t1 + abs(t2))) * sig * ex
    eSij = eb + art * ea + _EPS * (aj + art * ai + y * P) + abs(y) * eP
    eSji = ea + art * eb + _EPS * (ai + art * aj + x * P) + abs(x) * eP
    eR = (abs(x) * eb + abs(y) * ea + ee + abs(cP) * eP
          + 2.0 * _EPS * (abs(cP) * P + abs(x) * aj + abs(y) * ai + sig * ex))
    return P, Sij, Sji, R, eP, eSij, eSji, eR


# ---------------------------------------------------- ramp–ramp, Price (correlation) integral
# |r̃| below this: the Price form (integral over the correlation from r̃ = 0) is available
_PRICE_RMAX = 0.925
# 1 − |r̃| above this: the checked Price form is tried before the quadrature.  Closer to ±1
# its ⌈V/8⌉ panels do not resolve the integrand's layer at t → r̃: errors 1e−12 to 1e−8
# relative, never within the target, and the a-posteriori difference between n and 2n panels
# can understate them (3× at 1 − r̃ = 1.5e−4, x, y ≈ 0.55; randomized check against 40-digit
# mpmath) -- 1e−4 until 0.3.2
_PRICE_OMMIN = 1e-3


@jit
def _price_num_coeffs(x, y):
    """Per-pair constants (d, |xy|, s) of :func:`_price_num`: s = sign(xy) (1 for xy = 0),
    d = (x − s y)²/2 = (x² + y²)/2 − |xy| ≥ 0."""
    xy = x * y
    sg = 1.0 if xy >= 0.0 else -1.0
    e = x - sg * y
    return 0.5 * (e * e), abs(xy), sg


@jit
def _price_num(dd, axy, sg, t):
    """t·xy − (x² + y²)/2, the numerator of the Price exponent (x, y; t), as
    −((x − s y)²/2 + |xy|·(1 − s t)) with s = sign(xy) (:func:`_price_num_coeffs`): two terms
    ≥ 0 for every t ∈ (−1, 1), so nothing cancels; within 4 unit roundoffs (2 eps) of the
    numerator, and with 1/(1 − t²) the exponent within 4.5 eps·|E|.  Formed as
    t·xy − (x² + y²)/2, its terms cancel where t·xy > 0 as |t| → 1 (x ≈ ±y): an absolute error
    up to 2|xy t|/(1 − t²)·eps in the exponent, beyond the estimates' allowance (checked Price
    form 1.6× short at x ≈ y ≈ 7, r̃ = 0.987, 9e−14 relative; randomized check against 40-digit
    mpmath) -- until 0.3.3."""
    return -(dd + axy * (1.0 - sg * t))


@jit
def _price_sum(U, W, x, y, rt, a0, pw):
    """Σ_i W_i·g_i·(1, rt − t_i, (rt − t_i)(x − t_i y)/(1 − t_i²), (rt − t_i)(y − t_i x)/(1 − t_i²))
    and Σ_i W_i·g_i·|rt − t_i|·(1, |x − t_i y|, |y − t_i x|)/(1 − t_i²) (a 7-tuple), for
    t_i = sin(a0 + pw·U_i), g = exp((t xy − (x² + y²)/2)/(1 − t²)), the exponent's numerator
    formed without cancellation (:func:`_price_num`)."""
    dd, axy, sg = _price_num_coeffs(x, y)
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = 0.0
    for i in range(U.shape[0]):
        t = _sin_small(a0 + pw * U[i])
        ic2 = 1.0 / ((1.0 - t) * (1.0 + t))
        g = W[i] * math.exp(_price_num(dd, axy, sg, t) * ic2)
        gd = g * (rt - t)
        u = (x - t * y) * ic2
        v = (y - t * x) * ic2
        s0 += g
        s1 += gd
        s2 += gd * u
        s3 += gd * v
        agd = abs(gd)
        s4 += agd
        s5 += agd * abs(u)
        s6 += agd * abs(v)
    return s0, s1, s2, s3, s4, s5, s6


@jit(inline="always")
def _price_logvar(x, y, rt):
    """(V, E_min): log-variation and minimum of the exponent of φ₂(x, y; sin θ)·cos θ over
    θ ∈ [0, asin rt] (:func:`popdyn._kernels.bvn._exponent_range`, as in ``_bvn_lo``)."""
    emin, emax = _exponent_range(x, y, rt)
    return emax - emin, emin


@jit
def _price_panels(x, y, rt, asr, npan):
    """The 7 sums of :func:`_price_sum` with 20-point Gauss–Legendre on ``npan`` equal panels of
    [0, asin rt], times the panel width."""
    pw = asr / npan
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = 0.0
    for j in range(npan):
        b0, b1, b2, b3, b4, b5, b6 = _price_sum(_GL20_U, _GL20_W, x, y, rt, j * pw, pw)
        a0 += b0
        a1 += b1
        a2 += b2
        a3 += b3
        a4 += b4
        a5 += b5
        a6 += b6
    return a0 * pw, a1 * pw, a2 * pw, a3 * pw, a4 * pw, a5 * pw, a6 * pw


@jit
def _ramps_price_checked(x, y, rt, phx, phy, H0x, H1x, H0y, H1y):
    """:func:`_ramps_price` with an a-posteriori rule check, |r̃| < 1 (the fallback before the
    quadrature): the rule is not pre-validated for 0.925 ≤ |r̃| < 1, and below 0.925 its
    pre-validated allowance (2e−15 of the terms) can be too coarse when the terms cancel, so the
    integrals are taken with 20-point Gauss–Legendre on n and 2n panels (n from the
    log-variation, ≥ 2) and the difference is added to the estimates (a-posteriori rule error of
    the finer value; pessimistic once the rule converges)."""
    asr = math.asin(rt)
    V, emin = _price_logvar(x, y, rt)
    art = abs(rt)
    n = max(2, int(V / 8.0) + 1)
    c0, c1, c2, c3, c4, c5, c6 = _price_panels(x, y, rt, asr, n)
    a0, a1, a2, a3, a4, a5, a6 = _price_panels(x, y, rt, asr, 2 * n)
    P00 = H0x * H0y
    P = P00 + a0 / _TWOPI
    R = H1x * H1y + rt * P00 + a1 / _TWOPI
    Sij = H0x * H1y + rt * phx * H0y + a2 / _TWOPI
    Sji = H1x * H0y + rt * phy * H0x + a3 / _TWOPI
    ce = (_EPS * (8.0 + 5.0 * abs(emin))) / _TWOPI
    eP = 6.0 * _EPS * P00 + ce * abs(a0) + abs(a0 - c0) / _TWOPI
    eR = 6.0 * _EPS * (H1x * H1y + art * P00) + ce * abs(a4) + abs(a1 - c1) / _TWOPI
    eSij = 6.0 * _EPS * (H0x * H1y + art * phx * H0y) + ce * abs(a5) + abs(a2 - c2) / _TWOPI
    eSji = 6.0 * _EPS * (H1x * H0y + art * phy * H0x) + ce * abs(a6) + abs(a3 - c3) / _TWOPI
    return P, Sij, Sji, R, eP, eSij, eSji, eR


@jit
def _ramps_price(x, y, rt, phx, phy, H0x, H1x, H0y, H1y):
    """(P̃, S̃ij, S̃ji, R̃) and error estimates from Price's theorem, |rt| < 0.925.

    With ∂R̃/∂r = P̃, ∂P̃/∂r = φ₂(x, y; r) (Price) and S̃ij = −∂R̃/∂x, integrated from r = 0
    (where the moments are products of the 1-D ramp moments Hh_n):

        P̃   = Hh₀(x)Hh₀(y) + ∫₀^r̃ φ₂ dt
        R̃   = Hh₁(x)Hh₁(y) + r̃ Hh₀(x)Hh₀(y) + ∫₀^r̃ (r̃ − t) φ₂ dt
        S̃ij = Hh₀(x)Hh₁(y) + r̃ φ(x)Hh₀(y) + ∫₀^r̃ (r̃ − t)(x − t y)/(1 − t²) φ₂ dt

    (S̃ji with x ↔ y), φ₂ = φ₂(x, y; t).  For r̃ > 0 and x, y ≥ 0 every term is positive: no
    cancellation where the closed forms cancel (the tails).  The t-integrals use the substitution
    t = sin θ and the Gauss–Legendre rule of :func:`popdyn._kernels.bvn._bvn_lo` chosen by the
    log-variation V of the integrand (6/12/20 points, 20 points on ⌈V/8⌉ panels for V > 8;
    the 6 points only where the weights of S̃ keep their sign),
    evaluated with one exponential per node for all four moments.
    The estimates are eps × the terms combined (each with its conditioning: 8 + 5|exponent| for
    the exponentials, whose exponent is formed without cancellation: :func:`_price_num`), plus
    2e−15 × Σ|terms| of each integral for the rule (the rule's measured accuracy for Φ₂;
    checked against 40-digit mpmath in tests/popdyn/test_plmoments_estimates.py).
    """
    asr = math.asin(rt)
    V, emin = _price_logvar(x, y, rt)
    if V > 8.0:
        a0, a1, a2, a3, a4, a5, a6 = _price_panels(x, y, rt, asr, int(V / 8.0) + 1)
        sc = 1.0
    else:
        rule = _price_rule(x, y, rt, V)
        if rule == 0:
            a0, a1, a2, a3, a4, a5, a6 = _price_sum(_GL6_U, _GL6_W, x, y, rt, 0.0, asr)
        elif rule == 1:
            a0, a1, a2, a3, a4, a5, a6 = _price_sum(_GL12_U, _GL12_W, x, y, rt, 0.0, asr)
        else:
            a0, a1, a2, a3, a4, a5, a6 = _price_sum(_GL20_U, _GL20_W, x, y, rt, 0.0, asr)
        sc = asr
    return _price_assemble(a0, a1, a2, a3, a4, a5, a6, sc, rt, emin,
                           phx, phy, H0x, H1x, H0y, H1y)


@jit
def _price_rule(x, y, rt, V):
    """Gauss–Legendre rule of the single-panel Price form (V ≤ 8): 0 → 6, 1 → 12, 2 → 20 points.

    Genz's 6-point rule (|r| < 0.3, V < 0.05) only where the weights x − t y, y − t x of S̃ keep
    their sign on [0, r̃]: with a sign change it misses S̃ by up to 1e−14 relative."""
    art = abs(rt)
    if art < 0.3 and V < 0.05 and x * (x - rt * y) > 0.0 and y * (y - rt * x) > 0.0:
        return 0
    if art < 0.75 and V < 1.0:
        return 1
    return 2


@jit(inline="always")
def _price_assemble(a0, a1, a2, a3, a4, a5, a6, sc, rt, emin, phx, phy, H0x, H1x, H0y, H1y):
    """(P̃, S̃ij, S̃ji, R̃, eP, eSij, eSji, eR) of :func:`_ramps_price` from the 7 node sums
    (:func:`_price_sum`) times ``sc`` (the panel width, or asin r̃ for one panel)."""
    art = abs(rt)
    sc = sc / _TWOPI
    asc = abs(sc)
    I0 = a0 * sc
    I1 = a1 * sc
    I2 = a2 * sc
    I3 = a3 * sc
    P00 = H0x * H0y
    P = P00 + I0
    R = H1x * H1y + rt * P00 + I1
    Sij = H0x * H1y + rt * phx * H0y + I2
    Sji = H1x * H0y + rt * phy * H0x + I3
    # rounding: products of 1-D moments (a few ulp each), exponentials (8 + 5|E|: the exponent
    # within 4.5 eps·|E|, _price_num; exp and the weight a few ulp), the rule
    ce = _EPS * (8.0 + 5.0 * abs(emin)) + 2e-15
    eP = 6.0 * _EPS * P00 + ce * abs(I0)
    eR = 6.0 * _EPS * (H1x * H1y + art * P00) + ce * abs(a4) * asc
    eSij = 6.0 * _EPS * (H0x * H1y + art * phx * H0y) + ce * abs(a5) * asc
    eSji = 6.0 * _EPS * (H1x * H0y + art * phy * H0x) + ce * abs(a6) * asc
    return P, Sij, Sji, R, eP, eSij, eSji, eR


# ------------------------------------------------ ramp–ramp, |r̃| → 1 with separated thresholds
@jit
def _ramps_aligned(x, y, rt, om, op, phx, phy, H0x, H1x, H2x, H0y, H1y, H2y):
    """(P̃, S̃ij, S̃ji, R̃, eP, eSij, eSji, eR) for r̃ near ±1 when the thresholds are separated on
    the scale σ̃ = √(1 − r̃²); ``ok`` = False (9th value) when they are not.

    r̃ → 1, x ≥ y (else x ↔ y with S̃ij ↔ S̃ji): Price's theorem from r̃ = 1 (1-D forms),
        P̃ = Hh₀(x) − K,  S̃ij = Hh₁(x) + (x−y)Hh₀(x) − (1−r̃)φ(x) + I₁,  S̃ji = Hh₁(x) − I₂,
        R̃ = 2Hh₂(x) + (x−y)Hh₁(x) − (1−r̃)Hh₀(x) + I₃,
    with K = ∫_r̃^1 φ₂ dt ∈ [0, (1−r̃)B], B = sup φ₂ = min(φ(x)φ(c_A), φ(y)φ(c_B))/σ̃ (φ₂(x,y;t) =
    φ(x)φ(w)/u, u = √(1−t²), w = (y − t x)/u ≤ −c_A σ̃/u; φ(c/u)/u increases in u ≤ c), and
    I₁ ∈ [0, (1−r̃)φ(x)Φ(−c_A)], I₂ ∈ [0, (1−r̃)φ(y)Φ(−c_B)], I₃ ∈ [0, (1−r̃)²B]; c_A, c_B are
    the separations −max over t ∈ [r̃, 1] of (y − t x), (t y − x), over σ̃, required ≥ 1.
    r̃ → −1 with x + y > 0: all four vanish at r̃ = −1 and are bounded by (1+r̃)× the sup of their
    r̃-derivatives (the same bound with the separations min over t ∈ [−1, r̃] of (y − t x),
    (x − t y)).  Each value is the midpoint of its bracket, the estimate its half-width plus
    rounding.
    """
    sig = math.sqrt(om * op)
    if om <= op:
        if x < y:
            P, Sji, Sij, R, eP, eSji, eSij, eR, ok = _ramps_aligned(y, x, rt, om, op, phy, phx,
                                                                    H0y, H1y, H2y, H0x, H1x, H2x)
            return P, Sij, Sji, R, eP, eSij, eSji, eR, ok
        cA = -((y - x) + max(om * x, 0.0)) / sig
        cB = -((y - x) + max(-om * y, 0.0)) / sig
        if not (cA >= 1.0 and cB >= 1.0):
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False
        pA = norm_pdf(cA)
        pB = norm_pdf(cB)
        Bs = min(phx * pA, phy * pB) / sig
        Kb = om * Bs
        b1 = om * phx * min(pA / cA, 0.5)
        b2 = om * phy * min(pB / cB, 0.5)
        dxy = x - y
        P = H0x - 0.5 * Kb
        s1 = H1x + dxy * H0x
        Sij = s1 - om * phx + 0.5 * b1
        Sji = H1x - 0.5 * b2
        r1 = 2.0 * H2x + dxy * H1x
        R = r1 - om * H0x + 0.5 * om * Kb
        eP = 0.5 * Kb + 4.0 * _EPS * H0x
        eSij = 0.5 * b1 + 6.0 * _EPS * (s1 + om * phx)
        eSji = 0.5 * b2 + 4.0 * _EPS * H1x
        eR = 0.5 * om * Kb + 6.0 * _EPS * (r1 + om * H0x)
        return P, Sij, Sji, R, eP, eSij, eSji, eR, True
    # r̃ → −1
    cA = ((x + y) - max(op * x, 0.0)) / sig
    cB = ((x + y) - max(op * y, 0.0)) / sig
    if not (cA >= 1.0 and cB >= 1.0):
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False
    pA = norm_pdf(cA)
    pB = norm_pdf(cB)
    Pb = op * min(phx * pA, phy * pB) / sig
    b1 = op * phx * min(pA / cA, 0.5)
    b2 = op * phy * min(pB / cB, 0.5)
    Rb = op * Pb
    return 0.5 * Pb, 0.5 * b1, 0.5 * b2, 0.5 * Rb, 0.5 * Pb, 0.5 * b1, 0.5 * b2, 0.5 * Rb, True


# ------------------------------------------------- ramp–ramp, anticorrelated: Price from r̃ = −1
# geometric grading of the panels towards r' = −1 (s = 0): each panel below the previous one has
# _ANTI_Q times its length; panels stop once the exponent at their upper end is _ANTI_DROP below
# the largest one and the integrands increase on the rest (:func:`_anti_tail_monotone`), whose
# contribution is then bounded (:func:`_anti_tail`) and added to the estimates -- not bounded
# until 0.3.3
_ANTI_Q = 0.5
_ANTI_DROP = 50.0
_ANTI_MAXPAN = 60


@jit
def _price_sum_anti(U, W, x, y, op, a0, pw):
    """The node sums of the Price form from r' = −1 (:func:`_ramps_price_anti`) in
    s = θ + π/2 ∈ [a0, a0 + pw] (t = sin θ = −cos s): Σ W_i g_i·(1, r̃ − t_i, u_i, v_i) with
    g = exp(E), u = (r̃ − t)(x − t y)/(1 − t²), v = (r̃ − t)(y − t x)/(1 − t²), and for each of
    the four sums its rounding allowance in units of eps (8 values).

    Every quantity is formed from p = 1 + t = 2 sin²(s/2) and 1 − t = 2 cos²(s/2) (half-angle
    sine and cosine) and from x + y, so that nothing cancels as t → −1:

        E = (p·xy − (x + y)²/2)/((1 − t)(1 + t)),   r̃ − t = (1 + r̃) − p,
        x − t y = (x + y) − p·y,                    y − t x = (x + y) − p·x

    (``op`` = 1 + r̃, exact).  Formed from t instead, t·xy − (x² + y²)/2 cancels when
    x ≈ −y (x < 0 < y), and E then carries an absolute error ~eps·x²/(1 − t²): up to 1e−13
    relative error in the moments, 17× the allowance of the former per-node rule (found by a
    randomized check against 40-digit mpmath; tests/popdyn/test_plmoments_estimates.py).
    Here the two terms of E have the same sign for xy ≤ 0 and cancel at most 3-fold for xy > 0
    (p·xy ≤ (x + y)²/4 as p ≤ 1 + r̃ < 1).  The allowances follow the operations: g within
    4 + 4·M_E + 8|E| eps (M_E = (p|xy| + (x + y)²/2)/((1 − t)(1 + t)) ≥ |E| the magnitude
    of E's terms; the half-angle sine and cosine within a few ulp), r̃ − t within
    3p + 0.5|r̃ − t|, x − t y within 3(x + y + p|y|) + 7|x − t y| (relative to 1 − t² alike),
    and 4 eps for each product and sum.
    """
    xy = x * y
    sxy = x + y
    hq = 0.5 * sxy * sxy
    axy = abs(xy)
    ax = abs(x)
    ay = abs(y)
    s0 = s1 = s2 = s3 = 0.0
    e0 = e1 = e2 = e3 = 0.0
    for i in range(U.shape[0]):
        h = 0.5 * (a0 + pw * U[i])
        sn = _sin_small(h)
        cs = _sin_small(0.5 * math.pi - h)
        opt = 2.0 * sn * sn
        omt = 2.0 * cs * cs
        ic2 = 1.0 / (omt * opt)
        E = (opt * xy - hq) * ic2
        g = W[i] * math.exp(E)
        wd = op - opt
        gd = g * wd
        u = (sxy - opt * y) * ic2
        v = (sxy - opt * x) * ic2
        s0 += g
        s1 += gd
        s2 += gd * u
        s3 += gd * v
        dg = 4.0 + 4.0 * (opt * axy + hq) * ic2 + 8.0 * abs(E)
        awd = abs(wd)
        dgd = (dg + 5.0) * awd + 3.0 * opt          # of g·(r̃ − t), relative to g
        au = abs(u)
        av = abs(v)
        e0 += g * dg
        e1 += g * dgd
        e2 += g * ((dgd + 11.0 * awd) * au + 3.0 * awd * (sxy + opt * ay) * ic2)
        e3 += g * ((dgd + 11.0 * awd) * av + 3.0 * awd * (sxy + opt * ax) * ic2)
    return s0, s1, s2, s3, e0, e1, e2, e3


@jit
def _ramps_price_anti(x, y, rt, om, op):
    """(P̃, S̃ij, S̃ji, R̃) and error estimates for r̃ < 0 and x + y > 0 from Price's theorem
    integrated from r' = −1, where all four vanish (both ramps are positive only on
    x < Z̃₁ < −y, an empty interval):

        P̃ = ∫₋₁^r̃ φ₂ dt,   R̃ = ∫₋₁^r̃ (r̃ − t) φ₂ dt,   S̃ij = ∫₋₁^r̃ (r̃ − t)(x − t y)/(1 − t²) φ₂ dt

    (φ₂ = φ₂(x, y; t); S̃ji with x ↔ y).  The integrands of P̃ and R̃ are positive (of S̃ij too
    unless x < 0): no cancellation, unlike the Price form from r' = 0 and the closed forms,
    whose estimates miss the target for moderately anticorrelated units near their kinks
    (x, y ≈ 0–1, r̃ ≈ −0.6 to −0.93, values 1e−7 to 1e−2 of the terms; the cases that otherwise
    reach the adaptive quadrature, ~25 µs a pair, ~3–9 µs here).  In s = θ + π/2 ∈ [0, acos(−r̃)]
    (:func:`_price_sum_anti`, every node quantity formed without cancellation) the integrand is
    flat to all orders at s = 0 but can be steep near it when x + y is small, so 20-point
    Gauss–Legendre runs on panels graded geometrically towards s = 0 (:data:`_ANTI_Q`), each
    also on its two halves: the halves give the value, the difference to the whole panel is
    added to the estimates (a-posteriori rule error, as in :func:`_ramps_price_checked`), with
    the rounding allowances of the node sums.  Checked against 40-digit mpmath in
    tests/popdyn/test_plmoments_estimates.py.
    """
    # the panel range s ∈ [0, acos(−r̃)], from op = 1 + r̃ (exact) as 2 asin(√(op/2)): near
    # r̃ = −1 the rounded r̃ can be −1.0 while op > 0, and acos(−r̃) was then 0 (every node at
    # t = −1: a division by zero, NaN moments -- until 0.6.1)
    S = 2.0 * math.asin(math.sqrt(0.5 * op))
    xy = x * y
    hq = 0.5 * (x + y) * (x + y)
    emax = (op * xy - hq) / (om * op)      # the exponent at s = S (t = r̃), as in the node sums
    c = np.zeros(4)        # whole panels
    a = np.zeros(8)        # halves: the 4 sums and their allowances
    tail = np.zeros(4)     # bounds of the dropped panels [0, hi]
    hi = S
    for k in range(_ANTI_MAXPAN):
        lo = hi * _ANTI_Q if k < _ANTI_MAXPAN - 1 else 0.0
        if k > 0:
            sh = math.sin(0.5 * hi)
            ch = math.cos(0.5 * hi)
            pt = 2.0 * sh * sh
            eh = (pt * xy - hq) / (pt * 2.0 * ch * ch)
            if eh < emax - _ANTI_DROP and _anti_tail_monotone(pt, xy, hq):
                _anti_tail(tail, hi, eh, pt, x, y, op)
                break
        w = hi - lo
        b = _price_sum_anti(_GL20_U, _GL20_W, x, y, op, lo, w)
        for i in range(4):
            c[i] += b[i] * w
        w2 = 0.5 * w
        for j in range(2):
            b = _price_sum_anti(_GL20_U, _GL20_W, x, y, op, lo + j * w2, w2)
            for i in range(8):
                a[i] += b[i] * w2
        hi = lo
    f = _EPS / _TWOPI
    return (a[0] / _TWOPI, a[2] / _TWOPI, a[3] / _TWOPI, a[1] / _TWOPI,
            f * a[4] + (abs(a[0] - c[0]) + tail[0]) / _TWOPI,
            f * a[6] + (abs(a[2] - c[2]) + tail[2]) / _TWOPI,
            f * a[7] + (abs(a[3] - c[3]) + tail[3]) / _TWOPI,
            f * a[5] + (abs(a[1] - c[1]) + tail[1]) / _TWOPI)


@jit
def _anti_tail_monotone(p, xy, hq):
    """True if g = exp(E) and g/p' increase in p' ∈ (0, p] (p' = 1 + t; E as in
    :func:`_price_sum_anti`): then the integrands of the Price form from −1 over the dropped
    panels are bounded by their values at p (:func:`_anti_tail`).

    E = xy/(2 − p) − hq/(p(2 − p)), so d(E − ln p)/dp = N(p)/(p²(2 − p)²) with
    N(p) = xy·p² + 2hq(1 − p) − p(2 − p)² ≥ 2hq(1 − p) − 4p − |xy|p², a lower bound that
    decreases in p: its sign at p decides for all of (0, p] (required above a quarter of the
    first term, a margin for rounding).
    That g itself increases there follows from the drop test (E has at most one stationary
    point in (−1, 1), a maximum, and E(p) < E(r̃) puts it above p)."""
    return 2.0 * hq * (1.0 - p) - 4.0 * p - abs(xy) * p * p > 0.5 * hq * (1.0 - p)


@jit
def _anti_tail(tail, hi, eh, p, x, y, op):
    """Bounds (×2 for rounding) of the dropped part s ∈ [0, hi] of the four integrals of
    :func:`_ramps_price_anti` (order P̃, R̃, S̃ij, S̃ji, times 2π), given that g and g/p increase
    there (:func:`_anti_tail_monotone`): with g ≤ g(hi), 0 ≤ r̃ − t ≤ 1 + r̃ and
    |x − t y|/(1 − t²) = |(x + y) − p y|/(p(2 − p)) ≤ (x + y)/p + |y|,

        ∫ g ≤ hi·g(hi),  ∫ g (r̃ − t) ≤ (1 + r̃)·hi·g(hi),
        ∫ g |(r̃ − t)(x − t y)/(1 − t²)| ≤ (1 + r̃)·hi·g(hi)·((x + y)/p + |y|)."""
    sxy = x + y
    f = (1.0, op, op * (sxy / p + abs(y)), op * (sxy / p + abs(x)))
    for i in range(4):
        # formed as one exponential (no underflow of g alone), at least the least subnormal
        tail[i] = max(math.exp(eh + math.log(2.0 * hi * f[i])), 5e-324)


# ------------------------------------------------------------- ramp–ramp, quadrature path
@jit
def _ramps_integrand(u, x, y, rt, om, sig, f):
    """Integrands (relative to φ(x)) at Z̃₁ = x + u: [P̃, S̃ji, S̃ij, R̃] components."""
    e = math.exp(-u * (x + 0.5 * u))
    w = ((y - x) + om * x - rt * u) / sig      # (y − rt(x+u))/σ
    if w >= 0.0:
        t0, t1, _ = mills3(w)
        pw = norm_pdf(w)
        h0 = pw * t0
        h1 = pw * t1
    else:
        h0 = norm_cdf(-w)
        h1 = norm_pdf(w) - w * h0
    f[0] = e * h0
    f[1] = u * e * h0
    f[2] = e * sig * h1
    f[3] = u * e * sig * h1


@jit
def _gk15(a, b, x, y, rt, om, sig, res, err, f):
    """Gauss–Kronrod 7–15 of the 4 integrands on [a, b] into res[0:4], err[0:4]."""
    c = 0.5 * (a + b)
    hw = 0.5 * (b - a)
    _ramps_integrand(c, x, y, rt, om, sig, f)
    for m in range(4):
        res[m] = _WGK[7] * f[m]
        err[m] = _WG[3] * f[m]
    for i in range(7):
        d = hw * _XGK[i]
        for sgn in range(2):
            _ramps_integrand(c - d if sgn == 0 else c + d, x, y, rt, om, sig, f)
            for m in range(4):
                res[m] += _WGK[i] * f[m]
                if i % 2 == 1:
                    err[m] += _WG[i // 2] * f[m]
    for m in range(4):
        res[m] *= hw
        err[m] = abs(res[m] - err[m] * hw)


@jit
def _ramps_quad(x, y, rt, om, op, phx, qtol, maxint):
    """(P̃, S̃ij, S̃ji, R̃) for x ≥ y (≥ −1) by global adaptive GK15 over Z̃₁ = x + u, u ∈ [0, U].

    The integrands are positive (no cancellation); U solves xU + U²/2 = 80."""
    sig = math.sqrt(om * op)
    U = math.sqrt(x * x + 160.0) - x          # x U + U²/2 = 80
    # initial partition: graded on the decay scale 1/max(x, 1) of e^{−xu−u²/2} near u = 0, and
    # around the turning point of the conditional factor (w = 0 at u_t = y/rt − x) when it is
    # sharper than that scale (width σ/rt)
    pts = np.empty(48)
    npt = 0
    pts[npt] = 0.0
    npt += 1
    pts[npt] = U
    npt += 1
    lsc = 1.0 / max(x, 1.0)
    for c in (0.25, 1.0, 4.0):
        v = c * lsc
        if v < U:
            pts[npt] = v
            npt += 1
    if rt != 0.0:
        ut = (y - x + om * x) / rt
        wdt = sig / abs(rt)
        if ut > 0.0 and ut < U:
            pts[npt] = ut
            npt += 1
        if 0.0 < wdt < 0.5 * lsc:
            d = wdt
            while d < U and npt < 46:
                if ut - d > 0.0 and ut - d < U:
                    pts[npt] = ut - d
                    npt += 1
                if ut + d > 0.0 and ut + d < U:
                    pts[npt] = ut + d
                    npt += 1
                d *= 4.0
    bp = np.sort(pts[:npt])
    # interval store
    A = np.empty(maxint)
    Bnd = np.empty(maxint)
    RES = np.empty((maxint, 4))
    ERR = np.empty((maxint, 4))
    f = np.empty(4)
    res = np.empty(4)
    er = np.empty(4)
    n = 0
    for i in range(npt - 1):
        if bp[i + 1] > bp[i] and n < maxint:
            A[n] = bp[i]
            Bnd[n] = bp[i + 1]
            _gk15(bp[i], bp[i + 1], x, y, rt, om, sig, res, er, f)
            for m in range(4):
                RES[n, m] = res[m]
                ERR[n, m] = er[m]
            n += 1
    tot = np.zeros(4)
    ter = np.zeros(4)
    while True:
        for m in range(4):
            tot[m] = 0.0
            ter[m] = 0.0
        for i in range(n):
            for m in range(4):
                tot[m] += RES[i, m]
                ter[m] += ERR[i, m]
        ok = True
        for m in range(4):
            if ter[m] > qtol * tot[m]:
                ok = False
        if ok or n + 1 >= maxint:
            break
        # bisect the interval with the largest error relative to its component total
        best = -1.0
        ib = 0
        for i in range(n):
            for m in range(4):
                if tot[m] > 0.0:
                    v = ERR[i, m] / tot[m]
                    if v > best:
                        best = v
                        ib = i
        a = A[ib]
        b = Bnd[ib]
        c = 0.5 * (a + b)
        if not (c > a and c < b):
            break
        _gk15(a, c, x, y, rt, om, sig, res, er, f)
        for m in range(4):
            RES[ib, m] = res[m]
            ERR[ib, m] = er[m]
        Bnd[ib] = c
        _gk15(c, b, x, y, rt, om, sig, res, er, f)
        A[n] = c
        Bnd[n] = b
        for m in range(4):
            RES[n, m] = res[m]
            ERR[n, m] = er[m]
        n += 1
    return phx * tot[0], phx * tot[2], phx * tot[1], phx * tot[3]


# ------------------------------------------------------- ramp–ramp, a negligible ramp (bound)
@jit(inline="always")
def _ramps_bound(H0x, H1x, H2x, H0y, H1y, H2y):
    """(P̃, S̃ij, S̃ji, R̃, eP, eSij, eSji, eR) as midpoints of proven brackets [0, bound].

    Each ramp quantity is the expectation of a product of non-negative factors, so it lies in
    [0, b] with the Cauchy–Schwarz (or trivial) bounds

        P̃ ≤ min(Hh₀(x), Hh₀(y)),         R̃ ≤ √(E(Z̃₁−x)₊² E(Z̃₂−y)₊²) = 2√(Hh₂(x)Hh₂(y)),
        S̃ij ≤ min(√(2Hh₀(x)Hh₂(y)), Hh₁(y)),   S̃ji ≤ min(√(2Hh₀(y)Hh₂(x)), Hh₁(x)),

    valid at every correlation.  Returned: b/2 and the error b/2 (times 1 + 32u for the rounding
    of the 1-D moments and the square roots).  Used first, and kept only when the error meets
    the target: when one unit lies so far in its tail that the ramp–ramp term is negligible,
    where the other evaluators would work hard (e.g. the Price form needs ~V/8 panels,
    V ~ x²/(2(1 − r̃²))) for a term far below the tolerance.
    """
    f = 0.5 * (1.0 + 32.0 * _EPS)
    bP = min(H0x, H0y) * f
    bSij = min(np.sqrt(2.0 * H0x * H2y), H1y) * f
    bSji = min(np.sqrt(2.0 * H0y * H2x), H1x) * f
    bR = 2.0 * np.sqrt(H2x * H2y) * f
    return bP, bSij, bSji, bR, bP, bSij, bSji, bR


# --------------------------------------------------------------------------- one pair
@jit
def _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R, eP, eSij, eSji, eR,
                r0i, r0j, r1i, r1j, rtol, atol):
    """True if an estimated ramp error could exceed rtol·|moment| + atol·scale."""
    return (abs(fC) * eR > rtol * abs(C + fC * R) + atol * r0i * r0j
            or abs(fB) * eP > rtol * abs(B + fB * P) + atol * r1i * r1j
            or abs(fDij) * eSij > rtol * abs(Dij + fDij * Sij) + atol * r1i * r0j
            or abs(fDji) * eSji > rtol * abs(Dji + fDji * Sji) + atol * r1j * r0i)


@jit(inline="always")
def _cond_mean(b, ah, rho, omr, opr):
    """b + ρ·ah (ah = α_j·Z₁ at the conditioning point Z₁ = −h_i), as b + ah − (1−ρ)ah for
    ρ ≥ 0 and b − ah + (1+ρ)ah for ρ < 0, so that ρ near ±1 adds no rounding."""
    if rho >= 0.0:
        return (b + ah) - omr * ah
    return (b - ah) + opr * ah


@jit(inline="always")
def _cond_parts(p, q, mu, tau):
    """E[p relu(T) + q T] for T ~ N(mu, tau²) as base + coef·Hh₁(w), the ramp always taken on
    its tail side (w ≥ 0; coef = 0 when the ramp term vanishes in float64)."""
    if mu > 0.0:
        if tau == 0.0 or mu > _HBIG * tau:
            return (p + q) * mu, 0.0, 0.0
        return (p + q) * mu, p * tau, mu / tau
    if tau == 0.0 or -mu > _HBIG * tau:
        return q * mu, 0.0, 0.0
    return q * mu, p * tau, -mu / tau


@jit(inline="always")
def _pair_linear_parts(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """The parts of the pair moments that need no ramp–ramp term: Stein's lemma on the linear
    parts, and A from the conditional law, A = f·(base + coef·Hh₁(w)) (:func:`_cond_parts`).
    Returns (C, B, Dij, Dji, (f, base, coef, w) of Aij, the same of Aji)."""
    Pi, Qi, si, xi, pdi, H0i, H1i, H2i, phi_, mu0i, mu1i, mu2i, r0i, r1i = ui
    Pj, Qj, sj, xj, pdj, H0j, H1j, H2j, phj, mu0j, mu1j, mu2j, r0j, r1j = uj
    # linear parts (Stein): E[t_i g(t_j)] = β_i E[g] + α_i α_j ρ E[g']
    C = Qi * (bei * mu0j + ali * alj * rho * mu1j)
    B = Qi * mu1j
    Dij = Qi * mu0j
    Dji = Qj * mu0i
    fij = bij = cij = wij = 0.0
    fji = bji = cji = wji = 0.0
    if Pi != 0.0:
        C += Pi * ali * Qj * (bej * H1i + alj * si * rho * H0i)
        B += Pi * si * H0i * Qj
        Dij += Pi * si * Qj * (bej * H0i + alj * si * rho * phi_)
    if Pj != 0.0:
        Dji += Pj * sj * Qi * (bei * H0j + ali * sj * rho * phj)
    if not diag and (pdi != 0.0 or pdj != 0.0):
        sg = math.sqrt(omr * opr)
        if pdi != 0.0:   # E[σ_j | t_i = 0]: t_j ~ N(β_j − α_j ρ h_i, (α_j σ)²)
            fij = pdi * phi_
            bij, cij, wij = _cond_parts(pj, qj, _cond_mean(bej, alj * si * xi, rho, omr, opr),
                                        alj * sg)
        if pdj != 0.0:
            fji = pdj * phj
            bji, cji, wji = _cond_parts(pi, qi, _cond_mean(bei, ali * sj * xj, rho, omr, opr),
                                        ali * sg)
    return C, B, Dij, Dji, (fij, bij, cij, wij), (fji, bji, cji, wji)


@jit(inline="always")
def _a_value(a):
    """A = f·(base + coef·Hh₁(w)) from the parts of :func:`_pair_linear_parts`."""
    f, base, coef, w = a
    if coef == 0.0:
        return f * base
    return f * (base + coef * hh1_pos(w))


@jit
def _pair_linear(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """The parts of the pair moments that need no ramp–ramp term (Stein's lemma on the linear
    parts, and A from the conditional law).  Returns (C, B, Aij, Aji, Dij, Dji)."""
    C, B, Dij, Dji, aij, aji = _pair_linear_parts(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej,
                                                  rho, omr, opr, diag)
    return C, B, _a_value(aij), _a_value(aji), Dij, Dji


# ---------------------------------------------- the pair loop's front, without branches
# Twins of _ramps_need, _cond_mean, _cond_parts, _pair_linear_parts, _ramp_frame and
# _exponent_range for the pair loop of _moments_list: the same operations on the same operands,
# but both alternatives of every data-dependent choice are computed and one is selected
# (``a if c else b`` of two computed values, which LLVM emits as a select): the signs of ρ, of
# the conditional means and of s_i s_j are random across pairs, so the branches of the one-pair
# forms are mispredicted about half the time.  Identical results (the selected value is the
# one the branch computes; tests/popdyn/test_plmoments_front.py).


@jit(inline="always")
def _ramps_need_bf(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R, eP, eSij, eSji, eR,
                   r0i, r0j, r1i, r1j, rtol, atol):
    """:func:`_ramps_need` with the four tests all evaluated (no short circuit)."""
    n0 = abs(fC) * eR > rtol * abs(C + fC * R) + atol * r0i * r0j
    n1 = abs(fB) * eP > rtol * abs(B + fB * P) + atol * r1i * r1j
    n2 = abs(fDij) * eSij > rtol * abs(Dij + fDij * Sij) + atol * r1i * r0j
    n3 = abs(fDji) * eSji > rtol * abs(Dji + fDji * Sji) + atol * r1j * r0i
    return (n0 | n1) | (n2 | n3)


@jit(inline="always", error_model="numpy")
def _cond_parts_bf(p, q, b, ah, rho, omr, opr, tau):
    """(base, coef, w) of :func:`_cond_parts` (p, q, :func:`_cond_mean` (b, ah, ρ, 1 − ρ, 1 + ρ),
    tau), by selects (w = |μ|/τ is formed also where it is not used: τ = 0 gives inf or NaN
    there, never selected)."""
    mp_ = (b + ah) - omr * ah
    mn_ = (b - ah) + opr * ah
    mu = mp_ if rho >= 0.0 else mn_
    pos = mu > 0.0
    bp_ = (p + q) * mu
    bn_ = q * mu
    base = bp_ if pos else bn_
    am = mu if pos else -mu
    lin = (tau == 0.0) | (am > _HBIG * tau)
    ct = p * tau
    wt = am / tau
    coef = 0.0 if lin else ct
    w = 0.0 if lin else wt
    return base, coef, w


@jit(inline="always", error_model="numpy")
def _linear_parts_bf(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """:func:`_pair_linear_parts` by selects: (C, B, Dij, Dji, fij, bij, cij, wij, fji, bji,
    cji, wji)."""
    (C, B, Dij, Dji, f1, b1, c1, w1, f2, b2, c2, w2,
     ui_, uj_) = _linear_parts_raw(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag)
    return (C, B, Dij, Dji,
            f1 if ui_ else 0.0, b1 if ui_ else 0.0, c1 if ui_ else 0.0, w1 if ui_ else 0.0,
            f2 if uj_ else 0.0, b2 if uj_ else 0.0, c2 if uj_ else 0.0, w2 if uj_ else 0.0)


@jit(inline="always", error_model="numpy")
def _linear_parts_raw(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """:func:`_linear_parts_bf` before its last selects: the A parts of both sides
    (f, base, coef, w) unmasked and the two masks (whether each A term is formed), so that the
    vectorized front (:func:`_front_seg`) stores them and the scalar pass selects (numba emits
    the eight selects on two conditions as branches, which stop LLVM's vectorizer)."""
    Pi, Qi, si, xi, pdi, H0i, H1i, H2i, phi_, mu0i, mu1i, mu2i, r0i, r1i = ui
    Pj, Qj, sj, xj, pdj, H0j, H1j, H2j, phj, mu0j, mu1j, mu2j, r0j, r1j = uj
    C0 = Qi * (bei * mu0j + ali * alj * rho * mu1j)
    B0 = Qi * mu1j
    Dij0 = Qi * mu0j
    Dji0 = Qj * mu0i
    nli = Pi != 0.0
    C1 = C0 + Pi * ali * Qj * (bej * H1i + alj * si * rho * H0i)
    B1 = B0 + Pi * si * H0i * Qj
    Dij1 = Dij0 + Pi * si * Qj * (bej * H0i + alj * si * rho * phi_)
    Dji1 = Dji0 + Pj * sj * Qi * (bei * H0j + ali * sj * rho * phj)
    C = C1 if nli else C0
    B = B1 if nli else B0
    Dij = Dij1 if nli else Dij0
    Dji = Dji1 if Pj != 0.0 else Dji0
    sg = np.sqrt(omr * opr)
    ui_ = (pdi != 0.0) & (not diag)
    uj_ = (pdj != 0.0) & (not diag)
    b1, c1, w1 = _cond_parts_bf(pj, qj, bej, alj * si * xi, rho, omr, opr, alj * sg)
    b2, c2, w2 = _cond_parts_bf(pi, qi, bei, ali * sj * xj, rho, omr, opr, ali * sg)
    f1 = pdi * phi_
    f2 = pdj * phj
    return C, B, Dij, Dji, f1, b1, c1, w1, f2, b2, c2, w2, ui_, uj_


@jit(inline="always")
def _ramp_frame_bf(Pi, si, Pj, sj, ali, alj, rho, omr, opr, diag):
    """:func:`_ramp_frame` by selects."""
    ss = si * sj
    spos = ss > 0.0
    rt0 = rho if spos else -rho
    om0 = omr if spos else opr
    op0 = opr if spos else omr
    rt = 1.0 if diag else rt0
    om = 0.0 if diag else om0
    op = 2.0 if diag else op0
    return (rt, om, op, Pi * Pj * ali * alj, Pi * Pj * ss, Pi * si * Pj * alj,
            Pj * sj * Pi * ali)


@jit(inline="always", error_model="numpy")
def _price_logvar_bf(h, k, r):
    """(V, E_min) of :func:`_price_logvar` (:func:`popdyn._kernels.bvn._exponent_range`) by
    selects; |r| < 0.925 here."""
    hk = h * k
    hs = 0.5 * (h * h + k * k)
    e0 = -hs
    e1 = (r * hk - hs) / ((1.0 - r) * (1.0 + r))
    emax = max(e0, e1)
    emin = min(e0, e1)
    ah = abs(h)
    ak = abs(k)
    ts0 = min(ah, ak) / max(ah, ak)
    ts = -ts0 if hk < 0.0 else ts0
    inside = ((ah > 0.0) & (ak > 0.0)
              & (((r > 0.0) & (0.0 < ts) & (ts < r)) | ((r < 0.0) & (r < ts) & (ts < 0.0))))
    em2 = max(emax, -0.5 * max(ah, ak) ** 2)
    emax = em2 if inside else emax
    return emax - emin, emin


@jit(inline="always")
def _ramp_frame(ui, uj, ali, alj, rho, omr, opr, diag):
    """(r̃, 1 − r̃, 1 + r̃, fC, fB, fDij, fDji): correlation of the two canonical ramps and the
    factors with which the ramp–ramp terms R̃, P̃, S̃ij, S̃ji enter C, B, Dij, Dji."""
    Pi, si = ui[0], ui[2]
    Pj, sj = uj[0], uj[2]
    ss = si * sj
    if diag:
        rt = 1.0
        om = 0.0
        op = 2.0
    elif ss > 0.0:
        rt = rho
        om = omr
        op = opr
    else:
        rt = -rho
        om = opr
        op = omr
    return (rt, om, op, Pi * Pj * ali * alj, Pi * Pj * ss, Pi * si * Pj * alj,
            Pj * sj * Pi * ali)


@jit
def _ramps_rest(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint):
    """The evaluators after the bound and the Price form, while ``need`` (the estimated error
    of the current values exceeds the target): the closed forms, the separated forms at
    |r̃| → 1, the checked Price form (|r̃| < 1 − 1e−3), the quadrature as the safety net.
    Returns (P̃, S̃ij, S̃ji, R̃)."""
    if need:
        (P, Sij, Sji, R,
         eP, eSij, eSji, eR) = _ramps_direct(ui[3], uj[3], rt, om, op, ui[8], uj[8],
                                            ui[5], ui[6], ui[7], uj[5], uj[6], uj[7])
    return _ramps_rest_after_direct(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                                    fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint)


@jit
def _ramps_rest_after_direct(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                             fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint):
    """:func:`_ramps_rest` after the closed forms (``need``: they were evaluated)."""
    xi, H0i, H1i, H2i, phi_, r0i, r1i = ui[3], ui[5], ui[6], ui[7], ui[8], ui[12], ui[13]
    xj, H0j, H1j, H2j, phj, r0j, r1j = uj[3], uj[5], uj[6], uj[7], uj[8], uj[12], uj[13]
    if om > 0.0 and op > 0.0:
        if need:
            need = _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R,
                               eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol)
        if need and (om < 1.0 - _PRICE_RMAX or op < 1.0 - _PRICE_RMAX):
            (P2, Sij2, Sji2, R2, eP, eSij, eSji, eR,
             ok) = _ramps_aligned(xi, xj, rt, om, op, phi_, phj, H0i, H1i, H2i, H0j, H1j, H2j)
            if ok and not _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P2, Sij2, Sji2, R2,
                                      eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol):
                P, Sij, Sji, R = P2, Sij2, Sji2, R2
                need = False
        if need and min(om, op) > _PRICE_OMMIN:
            (P2, Sij2, Sji2, R2,
             eP, eSij, eSji, eR) = _ramps_price_checked(xi, xj, rt, phi_, phj,
                                                        H0i, H1i, H0j, H1j)
            if not _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P2, Sij2, Sji2, R2,
                               eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol):
                P, Sij, Sji, R = P2, Sij2, Sji2, R2
                need = False
        if need and rt < 0.0 and xi + xj > 0.0:
            (P2, Sij2, Sji2, R2,
             eP, eSij, eSji, eR) = _ramps_price_anti(xi, xj, rt, om, op)
            if not _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P2, Sij2, Sji2, R2,
                               eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol):
                P, Sij, Sji, R = P2, Sij2, Sji2, R2
                need = False
        if need:
            if xi >= xj:
                P, Sij, Sji, R = _ramps_quad(xi, xj, rt, om, op, phi_, qtol, maxint)
            else:
                P, Sji, Sij, R = _ramps_quad(xj, xi, rt, om, op, phj, qtol, maxint)
    return P, Sij, Sji, R


@jit
def _pair_moments(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag,
                  rtol, atol, qtol, maxint):
    """All pair moments of unit i (set 1) and unit j (set 2).  Returns (C, B, Aij, Aji, Dij, Dji).

    ``diag``: the two units are the same unit (ρ = 1 exactly, A = 0).
    A negligible ramp–ramp term is bounded, not computed (:func:`_ramps_bound`); otherwise the
    Price form (|r̃| < 0.925; positive terms in the tails), then :func:`_ramps_rest`.
    """
    C, B, Aij, Aji, Dij, Dji = _pair_linear(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej,
                                            rho, omr, opr, diag)
    if ui[0] != 0.0 and uj[0] != 0.0:
        rt, om, op, fC, fB, fDij, fDji = _ramp_frame(ui, uj, ali, alj, rho, omr, opr, diag)
        (P, Sij, Sji, R, eP, eSij, eSji, eR) = _ramps_bound(ui[5], ui[6], ui[7],
                                                            uj[5], uj[6], uj[7])
        need = _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R,
                           eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol)
        if need and om > 1.0 - _PRICE_RMAX and op > 1.0 - _PRICE_RMAX:
            (P, Sij, Sji, R,
             eP, eSij, eSji, eR) = _ramps_price(ui[3], uj[3], rt, ui[8], uj[8],
                                                ui[5], ui[6], uj[5], uj[6])
            need = _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R,
                               eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol)
        P, Sij, Sji, R = _ramps_rest(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                                     fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint)
        C += fC * R
        B += fB * P
        Dij += fDij * Sij
        Dji += fDji * Sji
    return C, B, Aij, Aji, Dij, Dji


# ------------------------------------------------------------------ many pairs at once
#: items per block of :func:`_price_batch` (its scratch rows; not 2^k apart, see :data:`_LD`)
_PB = 256
_PBL = _PB + 8


@jit(error_model="numpy")
def _price_batch(GU, GW, x, y, rt, a0, pw, out):
    """out[p, :] = the 7 sums of :func:`_price_sum` (GU, GW; x[p], y[p], rt[p], a0[p], pw[p]) for
    all p: the same operations in the same order, with the sine in Estrin's
    form (:func:`popdyn._kernels.vmath.sin_small`) and the exponential of
    :func:`popdyn._kernels.vmath.exp_inline` (within 2 ulp; the bits of ``exp_batch``).

    One pass per node over a block of :data:`_PB` items (sine, exponent, exponential and the
    six sums fused; until 0.6.1 about fifteen passes over node × item arrays, and the
    exponentials in three): the items' inputs and the sums are rows of two flat arrays with
    rows of constant length, so that LLVM's run-time alias checks are two and it vectorizes
    the pass; ``error_model="numpy"`` removes the zero-division branch (1 − t² ≥ 0.14 here)."""
    n = x.shape[0]
    nn = GU.shape[0]
    IN = np.empty(8 * _PBL)     # x, y, r̃, a0, pw, d, |xy|, s of the block's items
    S = np.empty(7 * _PBL)      # the sums
    for p0 in range(0, n, _PB):
        nb = min(_PB, n - p0)
        for p in range(nb):
            q = p0 + p
            IN[p] = x[q]
            IN[_PBL + p] = y[q]
            IN[2 * _PBL + p] = rt[q]
            IN[3 * _PBL + p] = a0[q]
            IN[4 * _PBL + p] = pw[q]
            dd, axy, sg = _price_num_coeffs(x[q], y[q])
            IN[5 * _PBL + p] = dd
            IN[6 * _PBL + p] = axy
            IN[7 * _PBL + p] = sg
        for p in range(7 * _PBL):
            S[p] = 0.0
        for k in range(nn):
            _price_node(GU[k], GW[k], nb, IN, S)
        # Σ|gd| = |Σ gd|: every node t lies between 0 and rt, so all gd share rt's sign (and a
        # sum of terms of one sign rounds symmetrically)
        for p in range(nb):
            S[4 * _PBL + p] = abs(S[_PBL + p])
        for p in range(nb):
            for c in range(7):
                out[p0 + p, c] = S[c * _PBL + p]


@jit(inline="always", error_model="numpy")
def _price_node(u, w, nb, IN, S):
    """The terms of node (u, w) of :func:`_price_batch` added to the sums S of its block, in
    the order of :func:`_price_sum` (unsigned indices: no wrap-around, which would keep LLVM
    from bounding the accesses)."""
    for p in range(nb):
        i = np.uint64(p)
        xp = IN[i]
        yp = IN[_PBL + i]
        t = _sin_vec(IN[3 * _PBL + i] + IN[4 * _PBL + i] * u)
        ic = 1.0 / ((1.0 - t) * (1.0 + t))
        g = w * exp_inline(_price_num(IN[5 * _PBL + i], IN[6 * _PBL + i], IN[7 * _PBL + i], t)
                           * ic)
        gd = g * (IN[2 * _PBL + i] - t)
        uu = (xp - t * yp) * ic
        vv = (yp - t * xp) * ic
        S[i] += g
        S[_PBL + i] += gd
        S[2 * _PBL + i] += gd * uu
        S[3 * _PBL + i] += gd * vv
        S[5 * _PBL + i] += abs(gd) * abs(uu)
        S[6 * _PBL + i] += abs(gd) * abs(vv)


@jit(inline="always")
def _rest_push(RK, RV, RD, nr, k, P, Sij, Sji, R, eP, eSij, eSji, eR, done_direct):
    """Append pair k and its current ramp values and estimates to the rest list of
    :func:`_moments_list` (``done_direct``: the closed forms were the last evaluator)."""
    RK[nr] = k
    RV[nr, 0] = P
    RV[nr, 1] = Sij
    RV[nr, 2] = Sji
    RV[nr, 3] = R
    RV[nr, 4] = eP
    RV[nr, 5] = eSij
    RV[nr, 6] = eSji
    RV[nr, 7] = eR
    RD[nr] = done_direct
    return nr + 1


@jit(inline="always")
def _ramps_add(out, k, c, b, dij, dji, fC, fB, fDij, fDji, P, Sij, Sji, R):
    """out[k] (C, B, ·, ·, Dij, Dji) = the linear parts plus the ramp–ramp terms."""
    out[k, 0] = c + fC * R
    out[k, 1] = b + fB * P
    out[k, 4] = dij + fDij * Sij
    out[k, 5] = dji + fDji * Sji


@jit(inline="always")
def _accept_or_push(out, k, c, b, dij, dji, fC, fB, fDij, fDji, ui, uj,
                    P, Sij, Sji, R, eP, eSij, eSji, eR, rtol, atol, RK, RV, RD, nr, done_direct):
    """Pair k's ramp values meet the target (:func:`_ramps_need`): write them into out[k];
    otherwise push them on the rest list.  Returns the rest list's length."""
    if _ramps_need(fC, fB, fDij, fDji, c, b, dij, dji, P, Sij, Sji, R,
                   eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol):
        return _rest_push(RK, RV, RD, nr, k, P, Sij, Sji, R, eP, eSij, eSji, eR, done_direct)
    _ramps_add(out, k, c, b, dij, dji, fC, fB, fDij, fDji, P, Sij, Sji, R)
    return nr


@jit(inline="always")
def _pair_at(U1, al1, U2, al2, I, J, RHO, OM, OP, DG, out, k):
    """Pair k of the list of :func:`_moments_list`: the canonical forms (ui, uj) of its units,
    its ramp frame (:func:`_ramp_frame`: r̃, 1 − r̃, 1 + r̃, fC, fB, fDij, fDji) and its linear
    parts so far (out[k]: C, B, Dij, Dji), for the deferred evaluations to continue from."""
    i = I[k]
    j = J[k]
    ui = U1[i]
    uj = U2[j]
    return (ui, uj, _ramp_frame(ui, uj, al1[i], al2[j], RHO[k], OM[k], OP[k], DG[k]),
            (out[k, 0], out[k, 1], out[k, 4], out[k, 5]))


@jit
def _finish_direct(U1, al1, U2, al2, I, J, RHO, OM, OP, DG, HK, rtol, atol, out,
                   RK, RV, RD, nr):
    """Complete the pairs HK of :func:`_moments_list` whose next evaluator is the closed form
    with Genz's |r| ≥ 0.925 Φ₂: the remainder sums of :func:`popdyn._kernels.bvn._bvn_hi` for
    all of them in one vectorized call, then the closed forms per pair; a pair whose estimate
    misses the target is pushed on the rest list (RK, RV, RD; :func:`_rest_push`) with the
    closed forms done.  Returns the new length of the rest list."""
    nh = HK.shape[0]
    h = np.empty(nh)
    kk = np.empty(nh)
    a2 = np.empty(nh)
    for e in range(nh):
        ui, uj, (rt, om, op, _, _, _, _), _ = _pair_at(U1, al1, U2, al2, I, J, RHO, OM, OP, DG,
                                                        out, HK[e])
        h[e] = -ui[3]
        kk[e] = -uj[3] if rt > 0.0 else uj[3]
        a2[e] = om * op
    num = np.empty(nh)
    nmag = np.empty(nh)
    _bvn_hi_rem_batch(h, kk, a2, num, nmag)
    for e in range(nh):
        k = HK[e]
        ui, uj, (rt, om, op, fC, fB, fDij, fDji), (c, b, dij, dji) = _pair_at(
            U1, al1, U2, al2, I, J, RHO, OM, OP, DG, out, k)
        cf, mag = _bvn_hi_closed(h[e], kk[e], a2[e])
        K, mag = _bvn_hi_combine(h[e], kk[e], a2[e], cf, mag, num[e], nmag[e])
        P, eP = _bvn_err_hi(h[e], -uj[3], rt, om, op, K, mag, False)
        (P, Sij, Sji, R,
         eP, eSij, eSji, eR) = _ramps_direct_with(ui[3], uj[3], rt, om, op, ui[8], uj[8], P, eP)
        nr = _accept_or_push(out, k, c, b, dij, dji, fC, fB, fDij, fDji, ui, uj,
                             P, Sij, Sji, R, eP, eSij, eSji, eR, rtol, atol,
                             RK, RV, RD, nr, True)
    return nr


# rows of the front's scratch FR of :func:`_moments_list` (:func:`_front_seg`): the linear parts
# and A parts (:func:`_linear_parts_bf`), the ramp frame (:func:`_ramp_frame_bf`), the bound's
# values (:func:`_ramps_bound`; its estimates equal them), the bound's test
# (:func:`_ramps_need_bf`, 1.0 or 0.0), the Price form's log-variation (:func:`_price_logvar_bf`),
# and the masks of the A parts (:func:`_linear_parts_raw`, 1.0 or 0.0; the A parts unmasked)
(_FR_C, _FR_B, _FR_DIJ, _FR_DJI, _FR_FIJ, _FR_BIJ, _FR_CIJ, _FR_WIJ, _FR_FJI, _FR_BJI, _FR_CJI,
 _FR_WJI, _FR_RT, _FR_OM, _FR_OP, _FR_FC, _FR_FB, _FR_FDIJ, _FR_FDJI, _FR_BP, _FR_BSIJ, _FR_BSJI,
 _FR_BR, _FR_NEED, _FR_V, _FR_EMIN, _FR_MIJ, _FR_MJI) = range(28)
_FR_N = 28
# rows of the units' structure of arrays UA (:func:`_unit_array`): the 14 fields of
# :func:`_unit`, then p, q, α, β
_UA_N = 18


@jit
def _unit_array(U, p, q, al, be):
    """UA[f, j]: field f of unit j's canonical form U[j] (:func:`_unit`, f < 14), and
    p, q, α, β in rows 14–17: the structure of arrays the vectorized front reads
    (:func:`_front_seg`)."""
    m = al.shape[0]
    UA = np.empty((_UA_N, m + 8))     # rows not 2^k apart (cache sets: see _LD)
    for j in range(m):
        u = U[j]
        for f in range(14):
            UA[f, j] = u[f]
        UA[14, j] = p[j]
        UA[15, j] = q[j]
        UA[16, j] = al[j]
        UA[17, j] = be[j]
    return UA


@jit(error_model="numpy")
def _front_seg(UA1, i, UA2, j0, RHO, OM, OP, DG, k0, e0, ne, rtol, atol, FR):
    """FR[f·_LD + e0 + t] (row f of the front's scratch) for the pairs (i, j0 + t) at k0 + t
    of the pair list, t < ne: the linear and A parts, the ramp frame, the bound and its test,
    and the Price form's log-variation, by the branch-free twins of the one-pair forms (the
    same operations on the same operands: the same bits).  Unit i is fixed and unit j runs over
    consecutive columns, so that every load and store is contiguous (or invariant) and LLVM
    vectorizes the loop (AVX2/AVX-512: packed vsqrtpd, vdivpd, blends; checked in
    tests/popdyn/test_plmoments_front.py).  The stores take unsigned indices (numba's
    wrap-around of negative indices leaves LLVM unable to bound them) into one flat array with
    rows of constant length :data:`_LD` (one pointer group for LLVM's run-time alias checks;
    with one array per row the checks were too many and the loop stayed scalar)."""
    ui = (UA1[0, i], UA1[1, i], UA1[2, i], UA1[3, i], UA1[4, i], UA1[5, i], UA1[6, i],
          UA1[7, i], UA1[8, i], UA1[9, i], UA1[10, i], UA1[11, i], UA1[12, i], UA1[13, i])
    pi = UA1[14, i]
    qi = UA1[15, i]
    ali = UA1[16, i]
    bei = UA1[17, i]
    for t in range(ne):
        j = j0 + t
        k = k0 + t
        e = e0 + t
        uj = (UA2[0, j], UA2[1, j], UA2[2, j], UA2[3, j], UA2[4, j], UA2[5, j], UA2[6, j],
              UA2[7, j], UA2[8, j], UA2[9, j], UA2[10, j], UA2[11, j], UA2[12, j], UA2[13, j])
        alj = UA2[16, j]
        rho = RHO[k]
        omr = OM[k]
        opr = OP[k]
        diag = DG[k]
        (c, b, dij, dji, fij, bij, cij, wij, fji, bji, cji, wji,
         mij, mji) = _linear_parts_raw(ui, pi, qi, ali, bei,
                                       uj, UA2[14, j], UA2[15, j], alj, UA2[17, j],
                                       rho, omr, opr, diag)
        rt, om, op, fC, fB, fDij, fDji = _ramp_frame_bf(ui[0], ui[2], uj[0], uj[2],
                                                        ali, alj, rho, omr, opr, diag)
        (P, Sij, Sji, R, eP, eSij, eSji, eR) = _ramps_bound(ui[5], ui[6], ui[7],
                                                            uj[5], uj[6], uj[7])
        need = _ramps_need_bf(fC, fB, fDij, fDji, c, b, dij, dji, P, Sij, Sji, R,
                              eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol)
        V, emin = _price_logvar_bf(ui[3], uj[3], rt)
        FR[np.uint64(_FR_C * _LD + e)] = c
        FR[np.uint64(_FR_B * _LD + e)] = b
        FR[np.uint64(_FR_DIJ * _LD + e)] = dij
        FR[np.uint64(_FR_DJI * _LD + e)] = dji
        FR[np.uint64(_FR_FIJ * _LD + e)] = fij
        FR[np.uint64(_FR_BIJ * _LD + e)] = bij
        FR[np.uint64(_FR_CIJ * _LD + e)] = cij
        FR[np.uint64(_FR_WIJ * _LD + e)] = wij
        FR[np.uint64(_FR_FJI * _LD + e)] = fji
        FR[np.uint64(_FR_BJI * _LD + e)] = bji
        FR[np.uint64(_FR_CJI * _LD + e)] = cji
        FR[np.uint64(_FR_WJI * _LD + e)] = wji
        FR[np.uint64(_FR_RT * _LD + e)] = rt
        FR[np.uint64(_FR_OM * _LD + e)] = om
        FR[np.uint64(_FR_OP * _LD + e)] = op
        FR[np.uint64(_FR_FC * _LD + e)] = fC
        FR[np.uint64(_FR_FB * _LD + e)] = fB
        FR[np.uint64(_FR_FDIJ * _LD + e)] = fDij
        FR[np.uint64(_FR_FDJI * _LD + e)] = fDji
        FR[np.uint64(_FR_BP * _LD + e)] = P
        FR[np.uint64(_FR_BSIJ * _LD + e)] = Sij
        FR[np.uint64(_FR_BSJI * _LD + e)] = Sji
        FR[np.uint64(_FR_BR * _LD + e)] = R
        FR[np.uint64(_FR_NEED * _LD + e)] = 1.0 if need else 0.0
        FR[np.uint64(_FR_V * _LD + e)] = V
        FR[np.uint64(_FR_EMIN * _LD + e)] = emin
        FR[np.uint64(_FR_MIJ * _LD + e)] = 1.0 if mij else 0.0
        FR[np.uint64(_FR_MJI * _LD + e)] = 1.0 if mji else 0.0


@jit
def _front_rows(UA1, UA2, I, J, RHO, OM, OP, DG, rtol, atol, FR):
    """FR[f·_LD + k] for every pair k of the list (I, J, RHO, OM, OP, DG) of :func:`_moments_list`:
    :func:`_front_seg` on its runs of consecutive pairs (i, j), (i, j + 1), … (the rows of
    :func:`_chunk_index`)."""
    n = I.shape[0]
    k = 0
    while k < n:
        i = I[k]
        j0 = J[k]
        e = k + 1
        while e < n and I[e] == i and J[e] == J[e - 1] + 1:
            e += 1
        _front_seg(UA1, i, UA2, j0, RHO, OM, OP, DG, k, k, e - k, rtol, atol, FR)
        k = e


@jit(error_model="numpy")
def _moments_list(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, UA1, UA2, I, J, RHO, OM, OP,
                  DG, rtol, atol, qtol, maxint, out, WS, WI, WB):
    """:func:`_pair_moments` for the pairs (U1[I[k]], U2[J[k]]) with ρ, 1 − ρ, 1 + ρ, diag =
    RHO[k], OM[k], OP[k], DG[k]; out[k] = (C, B, Aij, Aji, Dij, Dji).

    The same evaluators in the same order, but three kinds of evaluation are deferred and done
    for all pairs together, vectorized over the pairs: the Price forms (per Gauss–Legendre
    rule, panels as items; :func:`_finish_price`), the closed forms at |r̃| ≥ 0.925 (Genz's
    remainder sums; :func:`_finish_direct`) and Hh₁ of the A terms (``hh1_batch``).  Pairs
    whose estimate still misses the target go on a rest list and continue exactly as in
    :func:`_pair_moments` (closed forms if not yet tried, then :func:`_ramps_rest_after_direct`),
    from one call site.
    """
    n = I.shape[0]                     # ≤ _CHUNK
    # the scratch, views of the workspaces WS, WI, WB of :func:`_list_scratch` (allocated once
    # per call of :func:`_moments_chunked`: fresh arrays of this size per chunk were returned
    # to the system and faulted in again)
    ch = _LD
    nd = 0
    DK = WI[0:ch]                      # pairs deferred to the Price form
    RULE = WI[ch:2 * ch]
    NPAN = WI[2 * ch:3 * ch]
    X = WS[0:ch]
    Y = WS[ch:2 * ch]
    RT = WS[2 * ch:3 * ch]
    ASR = WS[3 * ch:4 * ch]
    EMIN = WS[4 * ch:5 * ch]
    PC = WS[5 * ch:(5 + _PC_N) * ch].reshape((_PC_N, ch))   # their columns (_pc_store)
    nh = 0
    HK = WI[3 * ch:4 * ch]             # deferred closed forms at |r̃| ≥ 0.925
    nr = 0
    RK = WI[4 * ch:5 * ch]             # the rest list: pairs whose estimate misses the target
    RV = WS[23 * ch:31 * ch].reshape((ch, 8))
    RD = WB[0:ch]
    na = 0
    AK = WI[5 * ch:7 * ch]             # deferred Hh₁ of the A terms: out[k, 2 + side]
    AW = WS[31 * ch:33 * ch]
    AF = WS[33 * ch:35 * ch]
    AB = WS[35 * ch:37 * ch]
    AC = WS[37 * ch:39 * ch]
    # the front in two passes: the arithmetic of every pair, vectorized over row segments
    # (:func:`_front_rows`), then the choice of the next evaluator and the deferral lists
    FR = WS[39 * ch:(39 + _FR_N) * ch]
    _front_rows(UA1, UA2, I, J, RHO, OM, OP, DG, rtol, atol, FR)
    for k in range(n):
        i = I[k]
        j = J[k]
        c = FR[_FR_C * _LD + k]
        b = FR[_FR_B * _LD + k]
        dij = FR[_FR_DIJ * _LD + k]
        dji = FR[_FR_DJI * _LD + k]
        mij = FR[_FR_MIJ * _LD + k] != 0.0
        mji = FR[_FR_MJI * _LD + k] != 0.0
        fij = FR[_FR_FIJ * _LD + k] if mij else 0.0
        bij = FR[_FR_BIJ * _LD + k] if mij else 0.0
        cij = FR[_FR_CIJ * _LD + k] if mij else 0.0
        wij = FR[_FR_WIJ * _LD + k] if mij else 0.0
        fji = FR[_FR_FJI * _LD + k] if mji else 0.0
        bji = FR[_FR_BJI * _LD + k] if mji else 0.0
        cji = FR[_FR_CJI * _LD + k] if mji else 0.0
        wji = FR[_FR_WJI * _LD + k] if mji else 0.0
        # A = f·base, or f·(base + coef·Hh₁(w)) with Hh₁ deferred (stored at na, kept if coef ≠ 0)
        aij = fij * bij
        aji = fji * bji
        AK[na] = 2 * k
        AW[na] = wij
        AF[na] = fij
        AB[na] = bij
        AC[na] = cij
        na += cij != 0.0
        AK[na] = 2 * k + 1
        AW[na] = wji
        AF[na] = fji
        AB[na] = bji
        AC[na] = cji
        na += cji != 0.0
        if UA1[0, i] != 0.0 and UA2[0, j] != 0.0:
            rt = FR[_FR_RT * _LD + k]
            om = FR[_FR_OM * _LD + k]
            op = FR[_FR_OP * _LD + k]
            need = FR[_FR_NEED * _LD + k] != 0.0
            deferred = False
            if need and om > 1.0 - _PRICE_RMAX and op > 1.0 - _PRICE_RMAX:
                V = FR[_FR_V * _LD + k]
                deferred = True
                xi = UA1[3, i]
                xj = UA2[3, j]
                DK[nd] = k
                X[nd] = xi
                Y[nd] = xj
                RT[nd] = rt
                ASR[nd] = math.asin(rt)
                EMIN[nd] = FR[_FR_EMIN * _LD + k]
                if V <= 8.0:
                    RULE[nd] = _price_rule(xi, xj, rt, V)
                    NPAN[nd] = 1
                else:       # 20 points on ⌈V/8⌉ panels (:func:`_price_panels`)
                    RULE[nd] = 3
                    NPAN[nd] = int(V / 8.0) + 1
                _pc_store_a(PC, nd, UA1, i, UA2, j, FR, k)
                nd += 1
            if (not deferred and need and om > 0.0 and op > 0.0
                    and _bvn_hi_case(-UA1[3, i], -UA2[3, j], rt, om, op)):
                # closed forms with Genz's |r| ≥ 0.925 Φ₂: its remainder sum is batched
                deferred = True
                HK[nh] = k
                nh += 1
            P = FR[_FR_BP * _LD + k]
            Sij = FR[_FR_BSIJ * _LD + k]
            Sji = FR[_FR_BSJI * _LD + k]
            R = FR[_FR_BR * _LD + k]
            if not deferred and need:
                nr = _rest_push(RK, RV, RD, nr, k, P, Sij, Sji, R, P, Sij, Sji, R, False)
                deferred = True
            if not deferred:
                c += FR[_FR_FC * _LD + k] * R
                b += FR[_FR_FB * _LD + k] * P
                dij += FR[_FR_FDIJ * _LD + k] * Sij
                dji += FR[_FR_FDJI * _LD + k] * Sji
        out[k, 0] = c
        out[k, 1] = b
        out[k, 2] = aij
        out[k, 3] = aji
        out[k, 4] = dij
        out[k, 5] = dji
    if na > 0:
        H = np.empty(na)
        hh1_batch(AW[:na], H)
        for e in range(na):
            out[AK[e] // 2, 2 + AK[e] % 2] = AF[e] * (AB[e] + AC[e] * H[e])
    if nh > 0:
        nr = _finish_direct(U1, al1, U2, al2, I, J, RHO, OM, OP, DG, HK[:nh], rtol, atol, out,
                            RK, RV, RD, nr)
    if nd > 0:
        nr = _finish_price(DK[:nd], X, Y, RT, ASR, EMIN, RULE, NPAN, PC, rtol, atol, out,
                           RK, RV, RD, nr)
    # the rest of the evaluator chain, one call site (it is large: compile time)
    for e in range(nr):
        k = RK[e]
        ui, uj, (rt, om, op, fC, fB, fDij, fDji), (c, b, dij, dji) = _pair_at(
            U1, al1, U2, al2, I, J, RHO, OM, OP, DG, out, k)
        P, Sij, Sji, R, eP, eSij, eSji, eR = (RV[e, 0], RV[e, 1], RV[e, 2], RV[e, 3],
                                              RV[e, 4], RV[e, 5], RV[e, 6], RV[e, 7])
        if not RD[e]:
            (P, Sij, Sji, R,
             eP, eSij, eSji, eR) = _ramps_direct(ui[3], uj[3], rt, om, op, ui[8], uj[8],
                                                ui[5], ui[6], ui[7], uj[5], uj[6], uj[7])
        P, Sij, Sji, R = _ramps_rest_after_direct(True, P, Sij, Sji, R, eP, eSij, eSji, eR,
                                                  ui, uj, rt, om, op, fC, fB, fDij, fDji,
                                                  c, b, dij, dji, rtol, atol, qtol, maxint)
        _ramps_add(out, k, c, b, dij, dji, fC, fB, fDij, fDji, P, Sij, Sji, R)


# rows of the column store PC of the pairs deferred to the Price form (:func:`_pc_store`)
(_PC_PHX, _PC_PHY, _PC_H0X, _PC_H1X, _PC_H0Y, _PC_H1Y, _PC_FC, _PC_FB, _PC_FDIJ, _PC_FDJI,
 _PC_C, _PC_B, _PC_DIJ, _PC_DJI, _PC_R0I, _PC_R0J, _PC_R1I, _PC_R1J) = range(18)
_PC_N = 18


@jit(inline="always")
def _pc_store(PC, d, ui, uj, fC, fB, fDij, fDji, c, b, dij, dji):
    """Column d of PC: what the Price form's assembly and acceptance of a deferred pair read
    (φ, Hh₀, Hh₁ of both units, the ramp factors, the linear parts, the RMS scales), so that
    :func:`_finish_price` runs over arrays, without per-pair calls or list look-ups."""
    PC[_PC_PHX, d] = ui[8]
    PC[_PC_PHY, d] = uj[8]
    PC[_PC_H0X, d] = ui[5]
    PC[_PC_H1X, d] = ui[6]
    PC[_PC_H0Y, d] = uj[5]
    PC[_PC_H1Y, d] = uj[6]
    PC[_PC_FC, d] = fC
    PC[_PC_FB, d] = fB
    PC[_PC_FDIJ, d] = fDij
    PC[_PC_FDJI, d] = fDji
    PC[_PC_C, d] = c
    PC[_PC_B, d] = b
    PC[_PC_DIJ, d] = dij
    PC[_PC_DJI, d] = dji
    PC[_PC_R0I, d] = ui[12]
    PC[_PC_R0J, d] = uj[12]
    PC[_PC_R1I, d] = ui[13]
    PC[_PC_R1J, d] = uj[13]


@jit(inline="always")
def _pc_store_a(PC, d, UA1, i, UA2, j, FR, k):
    """:func:`_pc_store` from the units' arrays (:func:`_unit_array`) and the front's scratch
    FR (:func:`_front_seg`) of pair k = (i, j)."""
    PC[_PC_PHX, d] = UA1[8, i]
    PC[_PC_PHY, d] = UA2[8, j]
    PC[_PC_H0X, d] = UA1[5, i]
    PC[_PC_H1X, d] = UA1[6, i]
    PC[_PC_H0Y, d] = UA2[5, j]
    PC[_PC_H1Y, d] = UA2[6, j]
    PC[_PC_FC, d] = FR[_FR_FC * _LD + k]
    PC[_PC_FB, d] = FR[_FR_FB * _LD + k]
    PC[_PC_FDIJ, d] = FR[_FR_FDIJ * _LD + k]
    PC[_PC_FDJI, d] = FR[_FR_FDJI * _LD + k]
    PC[_PC_C, d] = FR[_FR_C * _LD + k]
    PC[_PC_B, d] = FR[_FR_B * _LD + k]
    PC[_PC_DIJ, d] = FR[_FR_DIJ * _LD + k]
    PC[_PC_DJI, d] = FR[_FR_DJI * _LD + k]
    PC[_PC_R0I, d] = UA1[12, i]
    PC[_PC_R0J, d] = UA2[12, j]
    PC[_PC_R1I, d] = UA1[13, i]
    PC[_PC_R1J, d] = UA2[13, j]


@jit(error_model="numpy")
def _price_node_sums(DK, RT, ASR, RULE, NPAN, X, Y, S7, SC):
    """S7[c, d] = the 7 node sums of :func:`_price_sum` of deferred pair d, times the panel
    width for ⌈V/8⌉ panels (:func:`_price_panels`), SC[d] the factor of :func:`_price_assemble`:
    per rule one vectorized call of :func:`_price_batch` over (pair, panel) items, the items of
    all rules laid out in one pass (rule by rule, pairs in order)."""
    nd = DK.shape[0]
    cnt = np.zeros(5, np.int64)         # items per rule, then the start of each rule's items
    for d in range(nd):
        cnt[RULE[d] + 1] += NPAN[d]
    for r in range(4):
        cnt[r + 1] += cnt[r]
    ni = cnt[4]
    pos = cnt[:4].copy()
    IT = np.empty((5, ni))              # x, y, r̃, panel start, panel width
    first = np.empty(nd, np.int64)
    for d in range(nd):
        rule = RULE[d]
        it = pos[rule]
        first[d] = it
        w = ASR[d] / NPAN[d] if rule == 3 else ASR[d]
        SC[d] = 1.0 if rule == 3 else ASR[d]
        for jp in range(NPAN[d]):
            IT[0, it] = X[d]
            IT[1, it] = Y[d]
            IT[2, it] = RT[d]
            IT[3, it] = jp * w if rule == 3 else 0.0
            IT[4, it] = w
            it += 1
        pos[rule] = it
    part = np.empty((ni, 7))
    for rule in range(4):
        a = cnt[rule]
        b = cnt[rule + 1]
        if b == a:
            continue
        if rule == 0:
            _price_batch(_GL6_U, _GL6_W, IT[0, a:b], IT[1, a:b], IT[2, a:b], IT[3, a:b],
                         IT[4, a:b], part[a:b])
        elif rule == 1:
            _price_batch(_GL12_U, _GL12_W, IT[0, a:b], IT[1, a:b], IT[2, a:b], IT[3, a:b],
                         IT[4, a:b], part[a:b])
        else:
            _price_batch(_GL20_U, _GL20_W, IT[0, a:b], IT[1, a:b], IT[2, a:b], IT[3, a:b],
                         IT[4, a:b], part[a:b])
    for d in range(nd):
        it = first[d]
        if RULE[d] == 3:   # panel sums in order, times the panel width (_price_panels)
            w = ASR[d] / NPAN[d]
            for c in range(7):
                acc = 0.0
                for jp in range(NPAN[d]):
                    acc += part[it + jp, c]
                S7[c, d] = acc * w
        else:
            for c in range(7):
                S7[c, d] = part[it, c]


@jit(error_model="numpy")
def _finish_price(DK, X, Y, RT, ASR, EMIN, RULE, NPAN, PC, rtol, atol, out, RK, RV, RD, nr):
    """Complete the pairs DK of :func:`_moments_list` deferred to the Price form: the node sums
    (:func:`_price_node_sums`), then the Price form (:func:`_price_assemble`) and the test of its
    estimate (:func:`_ramps_need`) in loops over the pairs' columns (PC, :func:`_pc_store`); a
    pair whose estimate misses the target is pushed on the rest list.  Returns its length.

    The same operations in the same order as the one-pair path (the same bits); no per-pair
    calls with array arguments (each would incref/decref them atomically) and no list look-ups."""
    nd = DK.shape[0]
    S7 = np.empty((7, nd))
    SC = np.empty(nd)
    _price_node_sums(DK, RT, ASR, RULE, NPAN, X, Y, S7, SC)
    V8 = np.empty((8, nd))
    NEED = np.empty(nd, np.bool_)
    for d in range(nd):
        (P, Sij, Sji, R,
         eP, eSij, eSji, eR) = _price_assemble(S7[0, d], S7[1, d], S7[2, d], S7[3, d], S7[4, d],
                                               S7[5, d], S7[6, d], SC[d], RT[d], EMIN[d],
                                               PC[_PC_PHX, d], PC[_PC_PHY, d], PC[_PC_H0X, d],
                                               PC[_PC_H1X, d], PC[_PC_H0Y, d], PC[_PC_H1Y, d])
        V8[0, d] = P
        V8[1, d] = Sij
        V8[2, d] = Sji
        V8[3, d] = R
        V8[4, d] = eP
        V8[5, d] = eSij
        V8[6, d] = eSji
        V8[7, d] = eR
        NEED[d] = _ramps_need_bf(PC[_PC_FC, d], PC[_PC_FB, d], PC[_PC_FDIJ, d], PC[_PC_FDJI, d],
                              PC[_PC_C, d], PC[_PC_B, d], PC[_PC_DIJ, d], PC[_PC_DJI, d],
                              P, Sij, Sji, R, eP, eSij, eSji, eR,
                              PC[_PC_R0I, d], PC[_PC_R0J, d], PC[_PC_R1I, d], PC[_PC_R1J, d],
                              rtol, atol)
    for d in range(nd):
        k = DK[d]
        if NEED[d]:
            RK[nr] = k
            for c in range(8):
                RV[nr, c] = V8[c, d]
            RD[nr] = False
            nr += 1
        else:
            out[k, 0] = PC[_PC_C, d] + PC[_PC_FC, d] * V8[3, d]
            out[k, 1] = PC[_PC_B, d] + PC[_PC_FB, d] * V8[0, d]
            out[k, 4] = PC[_PC_DIJ, d] + PC[_PC_FDIJ, d] * V8[1, d]
            out[k, 5] = PC[_PC_DJI, d] + PC[_PC_FDJI, d] * V8[2, d]
    return nr


#: pairs per call of :func:`_moments_list` (its scratch, ~70 doubles a pair, then stays in the
#: L2 cache and is reused instead of being faulted in afresh: 1.8× faster at m = 256, the
#: same bits -- every evaluation is per pair)
_CHUNK = 1024
#: the row length of the scratch of :func:`_moments_list` (rows of one column store per
#: quantity): _CHUNK + 8, not 2¹⁰ -- rows 8 KiB apart all map to the same sets of the L1 cache,
#: and the 18 streams of the Price pairs' columns (:func:`_pc_store`) then thrashed it (~110 ns
#: a pair until 0.6.1)
_LD = _CHUNK + 8


@jit
def _list_scratch():
    """The workspaces (float64, int64, bool) of :func:`_moments_list` for chunks of at most
    :data:`_CHUNK` pairs (its deferral lists, the Price pairs' columns, the rest list, the
    front's scratch)."""
    return (np.empty((39 + _FR_N) * _LD), np.empty(7 * _LD, np.int64),
            np.empty(_LD, np.bool_))


@jit
def _chunk_index(R, OMR, OPR, i, j, m1, m2, upper, I, J, RHO, OM, OP, DG):
    """The next at most :data:`_CHUNK` pairs of the pair list from the pair (i, j) on (the list:
    all (i, j) row by row, or with ``upper`` (one set with itself) the pairs i ≤ j row by row,
    the diagonal as ρ = 1 exactly, 1 − ρ = 0, 1 + ρ = 2), written into I, J, RHO, OM, OP, DG.
    Returns (n, i, j): their number and the pair after them (i = m1 at the end)."""
    n = 0
    while i < m1 and n < _CHUNK:
        I[n] = i
        J[n] = j
        if upper and i == j:
            DG[n] = True
            RHO[n], OM[n], OP[n] = 1.0, 0.0, 2.0
        else:
            DG[n] = False
            RHO[n], OM[n], OP[n] = R[i, j], OMR[i, j], OPR[i, j]
        n += 1
        j += 1
        if j == m2:
            i += 1
            j = i if upper else 0
    return n, i, j


@jit
def _moments_chunked(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, upper,
                     rtol, atol, qtol, maxint, C, B, A, D, AL, DL, WS, WI, WB):
    """C, B, A, D of the pairs of :func:`_chunk_index` (``upper``: one set with itself, pairs
    i ≤ j, C_ji = C_ij etc. filled from the same evaluation) by :func:`_moments_list` on
    consecutive chunks of :data:`_CHUNK` pairs, each scattered into the outputs at once:
    the pair list and the per-pair results never exist for all pairs (at m = 256 they were
    ~3 MB a call, allocated afresh and faulted in page by page: ~10 % of the step in the
    kernel).  Identical results: the evaluations act pair by pair.  The scratch (AL, DL: m1×m2,
    read only with ``upper``; WS, WI, WB of :func:`_list_scratch`) is the caller's, so that a
    GD loop allocates it once (:func:`popdyn._kernels.fused.workspace`).

    With ``upper`` the chunks write the upper triangles only (rows, contiguous), A_ji and D_ji
    into the upper triangles of AL and DL at (i, j); the lower triangles are then
    filled by a tiled transpose (:func:`_fill_lower`).  Until 0.7.0 each chunk wrote them down
    the columns: one cache line per row and array, missed every time
    at m = 256 (~10 % of the biased step).  The same values: only where they are stored
    changed."""
    m1 = al1.shape[0]
    m2 = al2.shape[0]
    if m1 == 0 or m2 == 0:
        return
    UA1 = _unit_array(U1, p1, q1, al1, be1)
    UA2 = _unit_array(U2, p2, q2, al2, be2)
    I = np.empty(_CHUNK, np.int64)
    J = np.empty(_CHUNK, np.int64)
    RHO = np.empty(_CHUNK)
    OM = np.empty(_CHUNK)
    OP = np.empty(_CHUNK)
    DG = np.empty(_CHUNK, np.bool_)
    out = np.empty((_CHUNK, 6))
    i = 0
    j = 0
    while i < m1:
        n, i, j = _chunk_index(R, OMR, OPR, i, j, m1, m2, upper, I, J, RHO, OM, OP, DG)
        _moments_list(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, UA1, UA2, I[:n], J[:n],
                      RHO[:n], OM[:n], OP[:n], DG[:n], rtol, atol, qtol, maxint, out[:n],
                      WS, WI, WB)
        for k in range(n):
            ii = I[k]
            jj = J[k]
            C[ii, jj] = out[k, 0]
            B[ii, jj] = out[k, 1]
            A[ii, jj] = out[k, 2]
            D[ii, jj] = out[k, 4]
        if upper:
            for k in range(n):
                ii = I[k]
                jj = J[k]
                AL[ii, jj] = out[k, 3]
                DL[ii, jj] = out[k, 5]
    if upper:
        _fill_lower(C, B, A, D, AL, DL)


#: tile of the transpose of :func:`_fill_lower` (4 arrays × 2 tiles of 32² doubles: 64 KiB)
_TT = 32


@jit
def _fill_lower(C, B, A, D, AL, DL):
    """The lower triangles (j > i) of :func:`_moments_chunked`'s outputs for one set with
    itself: C_ji = C_ij, B_ji = B_ij, A_ji = AL_ij, D_ji = DL_ij, tile by tile (:data:`_TT`)."""
    m = C.shape[0]
    for i0 in range(0, m, _TT):
        i1 = min(i0 + _TT, m)
        for j0 in range(i0, m, _TT):
            j1 = min(j0 + _TT, m)
            for i in range(i0, i1):
                for j in range(max(j0, i + 1), j1):
                    C[j, i] = C[i, j]
                    B[j, i] = B[i, j]
                    A[j, i] = AL[i, j]
                    D[j, i] = DL[i, j]


@jit
def pl_pair_moments(p1, q1, al1, be1, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                    rtol=RTOL, atol=ATOL, qtol=QTOL, maxint=MAXINT):
    """Pair moments of two sets of PL units: fills the m1×m2 arrays C, B, A, D.

    Parameters
    ----------
    p1, q1, al1, be1 : (m1,) float64
        Set 1: σ = p relu + q id, α = |w| ≥ 0, β = b.
    p2, q2, al2, be2 : (m2,) float64
        Set 2.
    R, OMR, OPR : (m1, m2) float64
        ρ = θᵢ·θⱼ, 1 − ρ and 1 + ρ (the last two computed without cancellation, e.g. as
        ½|θᵢ − θⱼ|², ½|θᵢ + θⱼ|²).  Ignored where αᵢ = 0 or αⱼ = 0.
    C, B, A, D : (m1, m2) float64
        Outputs: E[σᵢσⱼ], E[σ'ᵢσ'ⱼ], E[αᵢσ''ᵢσⱼ], E[σ'ᵢσⱼ].
    rtol, atol : float
        Error targets of the closed forms (relative, and absolute in units of the product of
        the two units' RMS sizes); entries whose estimated error exceeds them are recomputed
        by adaptive quadrature.
    qtol, maxint : float, int
        Relative tolerance and interval cap of that quadrature.
    """
    pl_pair_moments_units(pl_units(p1, q1, al1, be1), p1, q1, al1, be1,
                          pl_units(p2, q2, al2, be2), p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                          rtol, atol, qtol, maxint)


@jit
def pl_pair_moments_units(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                          rtol, atol, qtol, maxint):
    """:func:`pl_pair_moments` given the canonical forms U1, U2 of the two sets
    (:func:`pl_units`).  Bias-free sets (every β = 0, every α > 0): the arc-cosine closed
    forms of :mod:`popdyn._kernels.arccos`."""
    if _ac.bias_free(be1, al1, be2, al2):
        _ac.pair_moments(p1, q1, al1, p2, q2, al2, R, OMR, OPR, C, B, A, D)
        return
    WS, WI, WB = _list_scratch()
    pl_pair_moments_ws(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                       rtol, atol, qtol, maxint, WS, WI, WB)


@jit
def pl_pair_moments_ws(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                       rtol, atol, qtol, maxint, WS, WI, WB):
    """:func:`pl_pair_moments_units` with the caller's scratch WS, WI, WB
    (:func:`_list_scratch`)."""
    if _ac.bias_free(be1, al1, be2, al2):
        _ac.pair_moments(p1, q1, al1, p2, q2, al2, R, OMR, OPR, C, B, A, D)
        return
    E = np.empty((0, 0))
    _moments_chunked(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, False,
                     rtol, atol, qtol, maxint, C, B, A, D, E, E, WS, WI, WB)


@jit
def pl_self_moments_pairwise(p, q, al, be, R, OMR, OPR, C, B, A, D,
                             rtol=RTOL, atol=ATOL, qtol=QTOL, maxint=MAXINT):
    """:func:`pl_self_moments` one pair at a time (:func:`_pair_moments`, scalar evaluators):
    the reference of the batched evaluation in tests/popdyn/test_vmath.py and the baseline of
    benchmarks/bench_pairs.py."""
    m = al.shape[0]
    U = [_unit(p[j], q[j], al[j], be[j]) for j in range(m)]
    for i in range(m):
        for j in range(i, m):
            diag = i == j
            if diag:
                rho, om, op = 1.0, 0.0, 2.0
            else:
                rho, om, op = R[i, j], OMR[i, j], OPR[i, j]
            c, b, aij, aji, dij, dji = _pair_moments(U[i], p[i], q[i], al[i], be[i],
                                                     U[j], p[j], q[j], al[j], be[j],
                                                     rho, om, op, diag,
                                                     rtol, atol, qtol, maxint)
            C[i, j] = c
            C[j, i] = c
            B[i, j] = b
            B[j, i] = b
            A[i, j] = aij
            A[j, i] = aji
            D[i, j] = dij
            D[j, i] = dji


@jit
def pl_self_moments(p, q, al, be, R, OMR, OPR, C, B, A, D,
                    rtol=RTOL, atol=ATOL, qtol=QTOL, maxint=MAXINT):
    """Pair moments of one set of PL units with itself: fills the m×m arrays C, B, A, D.

    Same conventions as :func:`pl_pair_moments`; one evaluation per unordered pair (one Φ₂
    call) fills C_ij = C_ji, B_ij = B_ji, A_ij, A_ji, D_ij, D_ji.  The diagonal uses ρ = 1
    exactly (and A_ii = 0: σᵢ(0) = 0); only the upper triangle (i < j) of R, OMR, OPR is read.
    """
    pl_self_moments_units(pl_units(p, q, al, be), p, q, al, be, R, OMR, OPR, C, B, A, D,
                          rtol, atol, qtol, maxint)


@jit
def pl_self_moments_units(U, p, q, al, be, R, OMR, OPR, C, B, A, D, rtol, atol, qtol, maxint):
    """:func:`pl_self_moments` given the units' canonical forms U (:func:`pl_units`).
    Bias-free sets (every β = 0, every α > 0): the arc-cosine closed forms of
    :mod:`popdyn._kernels.arccos`."""
    if _ac.bias_free(be, al, be, al):
        _ac.self_moments(p, q, al, R, OMR, OPR, C, B, A, D)
        return
    m = al.shape[0]
    WS, WI, WB = _list_scratch()
    pl_self_moments_ws(U, p, q, al, be, R, OMR, OPR, C, B, A, D, rtol, atol, qtol, maxint,
                       np.empty((m, m)), np.empty((m, m)), WS, WI, WB)


@jit
def pl_self_moments_ws(U, p, q, al, be, R, OMR, OPR, C, B, A, D, rtol, atol, qtol, maxint,
                       AL, DL, WS, WI, WB):
    """:func:`pl_self_moments_units` with the caller's scratch: AL, DL (m×m) and WS, WI, WB
    (:func:`_list_scratch`)."""
    if _ac.bias_free(be, al, be, al):
        _ac.self_moments(p, q, al, R, OMR, OPR, C, B, A, D)
        return
    _moments_chunked(U, p, q, al, be, U, p, q, al, be, R, OMR, OPR, True,
                     rtol, atol, qtol, maxint, C, B, A, D, AL, DL, WS, WI, WB)
