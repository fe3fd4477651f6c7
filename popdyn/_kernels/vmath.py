"""Vectorizable exponential and sine for batches of float64 arguments.

``math.exp`` in a numba loop is a call into libm, which LLVM cannot vectorize (numba uses SVML
only when Intel's runtime is installed, and then with its own rounding).  The kernels that sum
many exponentials over independent pairs (:mod:`popdyn._kernels.plmoments`, Price integrals on
Gauss–Legendre nodes) evaluate them here, in loops of plain arithmetic that LLVM compiles to
AVX2 vector code, and that give the same bits on every machine.

Method: x is clamped to [−1400, 709]; k = rint(x·log₂e) by the 1.5·2⁵² shift, r = x − k ln 2 with
Cody–Waite's two-part ln 2 (k·LN2_HI exact for |k| < 2²⁰), e^r by its Taylor polynomial of degree
13 in Estrin's scheme (|r| ≤ ln2/2 + 1e−13: truncation < 4e−18 relative), and 2^k as the product
of two powers of two built from the exponent bits (k split in halves: no overflow of the biased
exponent for k down to −2020, and a correctly rounded subnormal when the result is one).
Accuracy: ≤ 2 ulp against 40-digit mpmath over the whole range (tests/popdyn/test_vexp.py);
results below 2⁻¹⁰⁷⁴ are 0 (x < −745.13), as for libm.

References
----------
W. J. Cody, W. Waite, *Software Manual for the Elementary Functions* (1980), ch. 6;
J.-M. Muller, *Elementary Functions*, 3rd ed. (2016), §5.3 (Estrin) and §11 (range reduction).
"""
import math
from fractions import Fraction

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._jit import jit

__all__ = ["asin_corr", "exp_batch", "exp_inline", "sin_small"]

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01    # 32 significant bits: k·_LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0             # 1.5·2⁵²: x + _SHIFT rounds x to an integer
_SHIFT_BITS = int(np.array([_SHIFT]).view(np.int64)[0])
(_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13) = [
    1.0 / math.factorial(n) for n in range(14)]
# Taylor coefficients of sin(x)/x in x²: (−1)^n/(2n+1)!, n = 0..10 (as popdyn._kernels.bvn)
(_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8, _S9, _S10) = [
    (-1.0) ** n / math.factorial(2 * n + 1) for n in range(11)]


@jit
def sin_small(x):
    """sin(x) for |x| ≤ π/2: the degree-21 Taylor polynomial of
    :func:`popdyn._kernels.bvn._sin_small` (truncation < 2e−18 relative) in Estrin's scheme,
    whose short dependency chains let vectorized loops run at throughput; ≤ 1 ulp from the
    Horner form."""
    z = x * x
    z2 = z * z
    z4 = z2 * z2
    a = (_S0 + _S1 * z) + (_S2 + _S3 * z) * z2
    b = (_S4 + _S5 * z) + (_S6 + _S7 * z) * z2
    c = (_S8 + _S9 * z) + _S10 * z2
    return x * ((a + b * z4) + c * (z4 * z4))


# Taylor coefficients of (asin(s) − s)/s³ in z = s²: C(2n, n)/(4ⁿ(2n + 1)), n = 1..24 (the
# float64 nearest each exact rational; the series' tail beyond n = 24 is < 3e−18 of asin(s)/s
# for z ≤ 1/4)
_AS = tuple(float(Fraction(math.comb(2 * n, n), 4 ** n * (2 * n + 1))) for n in range(1, 25))
(_A0, _A1, _A2, _A3, _A4, _A5, _A6, _A7, _A8, _A9, _A10, _A11, _A12, _A13, _A14, _A15, _A16, _A17,
 _A18, _A19, _A20, _A21, _A22, _A23) = _AS
_PIO2_HI = 1.5707963267948966            # π/2 = _PIO2_HI + _PIO2_LO to 1e−33
_PIO2_LO = 6.123233995736766e-17


@jit(inline="always")
def asin_corr(r, omr, opr):
    """asin(r) for a correlation r ∈ [−1, 1] given 1 − r and 1 + r exactly (``omr``, ``opr``),
    in plain arithmetic that LLVM vectorizes (``math.asin`` is a libm call).

    |r| ≤ 1/2: s = |r|, z = s²; else s = √z with z = (1 − |r|)/2 (exact from omr or opr) and
    asin|r| = π/2 − 2 asin(s) (Cody–Waite).  asin(s) = s + s·z·Q(z) with Q the Taylor series of
    (asin s − s)/s³ to z²³ in Estrin's form (z ≤ 1/4: truncation < 3e−18 relative).  One
    polynomial for both ranges (the choice of s and z is a select).  Accuracy ≤ 2 ulp against
    40-digit mpmath (tests/popdyn/test_vmath.py)."""
    ar = abs(r)
    big = ar > 0.5
    z = (0.5 * (omr if r > 0.0 else opr)) if big else ar * ar
    s = math.sqrt(z) if big else ar
    z2 = z * z
    z4 = z2 * z2
    z8 = z4 * z4
    q0 = ((_A0 + _A1 * z) + (_A2 + _A3 * z) * z2) + ((_A4 + _A5 * z) + (_A6 + _A7 * z) * z2) * z4
    q1 = (((_A8 + _A9 * z) + (_A10 + _A11 * z) * z2)
          + ((_A12 + _A13 * z) + (_A14 + _A15 * z) * z2) * z4)
    q2 = (((_A16 + _A17 * z) + (_A18 + _A19 * z) * z2)
          + ((_A20 + _A21 * z) + (_A22 + _A23 * z) * z2) * z4)
    Q = q0 + (q1 + q2 * z8) * z8
    a = s + s * (z * Q)
    v = ((_PIO2_HI - 2.0 * a) + _PIO2_LO) if big else a
    return -v if r < 0.0 else v


# 2^n for n = −1010 … 512 (exact): the two factors 2^⌊k/2⌋, 2^(k − ⌊k/2⌋) of exp_batch for
# k = rint(x·log₂e), x ∈ [−1400, 709] (k ∈ [−2020, 1023]); tests/popdyn/test_vmath.py checks
# :func:`_pow2` of exp_inline against it
_POW2_OFF = 1010
_POW2 = np.array([2.0 ** n for n in range(-_POW2_OFF, 513)])


@intrinsic
def _bits_f64_llvm(typingctx, x):
    """The float64 whose bits are the int64 ``x`` (an LLVM bitcast: no memory, no call)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return sig, codegen


def _bits_f64_py(x):
    """The float64 whose bits are the int64 ``x`` (plain Python: NUMBA_DISABLE_JIT=1, where an
    intrinsic cannot run; the same bits)."""
    return float(np.array(x, dtype=np.int64).view(np.float64))


_bits_f64 = _bits_f64_py if numba.config.DISABLE_JIT else _bits_f64_llvm


@jit(inline="always")
def _pow2(n):
    """2^n, exact, for an integer −1022 ≤ n ≤ 1023 (a normal float64 built from its exponent
    bits, as :func:`_scales`): equal to _POW2[n + _POW2_OFF] for −1010 ≤ n ≤ 512."""
    return _bits_f64((n + 1023) << 52)


@jit(inline="always", error_model="numpy")
def exp_inline(E):
    """exp(E) for one float64, bit for bit :func:`exp_batch` (the same reduction, polynomial and
    product (P·2^⌊k/2⌋)·2^(k − ⌊k/2⌋)), with the two powers of two built from their exponent
    bits in registers (:func:`_pow2`) instead of through integer views of arrays: a scalar
    form that numba inlines into loops over pairs, which LLVM vectorizes.  The powers are not
    read from a table (_POW2, the same values): such reads become gathers, which LLVM's cost
    model for AMD Zen deems too costly, so that the Price node loops
    (:func:`popdyn._kernels.pl_batch._price_batch`) would stay scalar there.
    Accuracy that of :func:`exp_batch`: ≤ 2 ulp (tests/popdyn/test_vmath.py checks it against
    40-digit mpmath and bit for bit against :func:`exp_batch`)."""
    x = min(max(E, -1400.0), 709.0)
    t = x * _LOG2E + _SHIFT
    kf = t - _SHIFT
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    r2 = r * r
    r4 = r2 * r2
    q0 = (_C0 + _C1 * r) + (_C2 + _C3 * r) * r2
    q1 = (_C4 + _C5 * r) + (_C6 + _C7 * r) * r2
    q2 = (_C8 + _C9 * r) + (_C10 + _C11 * r) * r2
    q3 = _C12 + _C13 * r
    P = (q0 + q1 * r4) + (q2 + q3 * r4) * (r4 * r4)
    k = np.int64(kf)
    k1 = k >> 1
    return (P * _pow2(k1)) * _pow2(k - k1)


@jit(error_model="numpy")
def _reduce(E, F, P):
    """P = e^r (polynomial), F = x·log₂e + 1.5·2⁵² (k in its low bits)."""
    for i in range(E.shape[0]):
        x = min(max(E[i], -1400.0), 709.0)
        t = x * _LOG2E + _SHIFT
        F[i] = t
        kf = t - _SHIFT
        r = (x - kf * _LN2_HI) - kf * _LN2_LO
        r2 = r * r
        r4 = r2 * r2
        q0 = (_C0 + _C1 * r) + (_C2 + _C3 * r) * r2
        q1 = (_C4 + _C5 * r) + (_C6 + _C7 * r) * r2
        q2 = (_C8 + _C9 * r) + (_C10 + _C11 * r) * r2
        q3 = _C12 + _C13 * r
        P[i] = (q0 + q1 * r4) + (q2 + q3 * r4) * (r4 * r4)


@jit(error_model="numpy")
def _scales(Fi, Si):
    """From the shifted k in Fi: Si = bits of 2^⌊k/2⌋, Fi = bits of 2^(k − ⌊k/2⌋)."""
    for i in range(Fi.shape[0]):
        k = Fi[i] - _SHIFT_BITS
        k1 = k >> 1
        Si[i] = (k1 + 1023) << 52
        Fi[i] = ((k - k1) + 1023) << 52


@jit(error_model="numpy")
def _combine(P, S, F, out):
    for i in range(P.shape[0]):
        out[i] = (P[i] * S[i]) * F[i]


@jit(error_model="numpy")
def exp_batch(E, out):
    """out[i] = exp(E[i]) for 1-D contiguous float64 arrays (``out`` may be ``E``).

    NaN arguments give NaN only if they reach the polynomial; callers pass finite values.
    """
    n = E.shape[0]
    F = np.empty(n)
    P = np.empty(n)
    _reduce(E, F, P)
    S = np.empty(n)
    _scales(F.view(np.int64), S.view(np.int64))
    _combine(P, S, F, out)
