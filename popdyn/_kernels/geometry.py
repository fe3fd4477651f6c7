"""Pair geometry of ridge units: correlations ρ = θ_i·θ_j with 1 − ρ and 1 + ρ kept accurate.

Near ρ = ±1 the closed-form moments need 1 ∓ ρ to full relative accuracy; computing it as
``1 - R`` loses all digits when the directions nearly coincide.  We recompute it as
½|θ_i ∓ θ_j|² for pairs with |ρ| > 1/2 (exact up to rounding in the difference).
"""
import numpy as np

from ._jit import jit


@jit
def _complement(r, sm):
    """(ρ, 1 − ρ, 1 + ρ) for ρ (already clipped), |ρ| > 1/2, from sm = |θ_i ∓ θ_j|² (− for ρ > 0):
    the small complement ½·sm (clipped at 2), the other two from it."""
    c = 0.5 * sm
    if c > 2.0:
        c = 2.0
    if r > 0:
        return 1.0 - c, c, 2.0 - c
    return c - 1.0, 2.0 - c, c


@jit
def _clip(r):
    """ρ from BLAS clipped to [−1, 1]."""
    if r > 1.0:
        return 1.0
    if r < -1.0:
        return -1.0
    return r


@jit
def _entry(T1, i, T2, j, r):
    """(ρ, 1 − ρ, 1 + ρ) of rows i, j given ρ = T1[i]·T2[j] from BLAS: clipped to [−1, 1]; for
    |ρ| > 1/2 the complement that is small is recomputed as ½|θ_i ∓ θ_j|² (clipped at 2) and
    the other two follow from it."""
    r = _clip(r)
    if abs(r) <= 0.5:
        return r, 1.0 - r, 1.0 + r
    sg = -1.0 if r > 0 else 1.0
    sm = 0.0
    for k in range(T1.shape[1]):
        dm = T1[i, k] + sg * T2[j, k]
        sm += dm * dm
    return _complement(r, sm)


@jit
def pair_geometry(T1, ok1, T2, ok2, R, OMR, OPR):
    """Fill R = clip(T1 T2ᵀ), OMR = 1 − R, OPR = 1 + R (m1×m2) for unit directions.

    ``T1``, ``T2`` hold unit vectors row-wise; rows with ``ok == False`` are degenerate (α = 0)
    and get ρ = 0, 1 ∓ ρ = 1.  ``R`` must hold T1 T2ᵀ on entry (computed by BLAS).
    """
    m1 = T1.shape[0]
    m2 = T2.shape[0]
    for i in range(m1):
        for j in range(m2):
            if not (ok1[i] and ok2[j]):
                R[i, j], OMR[i, j], OPR[i, j] = 0.0, 1.0, 1.0
            else:
                R[i, j], OMR[i, j], OPR[i, j] = _entry(T1, i, T2, j, R[i, j])


@jit
def pair_geometry_self(T, ok, R, OMR, OPR):
    """:func:`pair_geometry` of one set with itself on the upper triangle (i < j) only -- what
    :func:`popdyn._kernels.plmoments.pl_self_moments` reads; the diagonal and the lower
    triangle are left as they are.

    Bit-identical to :func:`pair_geometry`; the sums |θ_i ∓ θ_j|² of the pairs with |ρ| > 1/2
    are taken four pairs at a time (four independent chains, each summed over k in the same
    order as :func:`_entry`): one sum alone is a serial chain of additions.
    """
    geometry_self_rows(T, ok, R, OMR, OPR, 0, T.shape[0], np.empty(T.shape[0], np.int64))


@jit
def geometry_self_rows(T, ok, R, OMR, OPR, r0, r1, J):
    """The rows r0 ≤ i < r1 of :func:`pair_geometry_self` (its pairs i < j, the same operations;
    J: scratch of m indices), so that row blocks can be filled in parallel."""
    m, d = T.shape
    for i in range(r0, r1):
        nj = 0
        for j in range(i + 1, m):
            if not (ok[i] and ok[j]):
                R[i, j], OMR[i, j], OPR[i, j] = 0.0, 1.0, 1.0
                continue
            r = _clip(R[i, j])
            R[i, j] = r
            if abs(r) <= 0.5:
                OMR[i, j], OPR[i, j] = 1.0 - r, 1.0 + r
            else:
                J[nj] = j
                nj += 1
        e = 0
        while e + 4 <= nj:
            j0, j1, j2, j3 = J[e], J[e + 1], J[e + 2], J[e + 3]
            g0 = -1.0 if R[i, j0] > 0 else 1.0
            g1 = -1.0 if R[i, j1] > 0 else 1.0
            g2 = -1.0 if R[i, j2] > 0 else 1.0
            g3 = -1.0 if R[i, j3] > 0 else 1.0
            s0 = s1 = s2 = s3 = 0.0
            for k in range(d):
                t = T[i, k]
                d0 = t + g0 * T[j0, k]
                d1 = t + g1 * T[j1, k]
                d2 = t + g2 * T[j2, k]
                d3 = t + g3 * T[j3, k]
                s0 += d0 * d0
                s1 += d1 * d1
                s2 += d2 * d2
                s3 += d3 * d3
            R[i, j0], OMR[i, j0], OPR[i, j0] = _complement(R[i, j0], s0)
            R[i, j1], OMR[i, j1], OPR[i, j1] = _complement(R[i, j1], s1)
            R[i, j2], OMR[i, j2], OPR[i, j2] = _complement(R[i, j2], s2)
            R[i, j3], OMR[i, j3], OPR[i, j3] = _complement(R[i, j3], s3)
            e += 4
        while e < nj:
            j = J[e]
            R[i, j], OMR[i, j], OPR[i, j] = _entry(T, i, T, j, R[i, j])
            e += 1
