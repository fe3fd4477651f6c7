"""Pair geometry of ridge units: correlations ρ = θ_i·θ_j with 1 − ρ and 1 + ρ kept accurate.

Near ρ = ±1 the closed-form moments need 1 ∓ ρ to full relative accuracy; computing it as
``1 - R`` loses all digits when the directions nearly coincide.  We recompute it as
½|θ_i ∓ θ_j|² for pairs with |ρ| > 1/2 (exact up to rounding in the difference).
"""
from ._jit import jit


@jit
def pair_geometry(T1, ok1, T2, ok2, R, OMR, OPR):
    """Fill R = clip(T1 T2ᵀ), OMR = 1 − R, OPR = 1 + R (m1×m2) for unit directions.

    ``T1``, ``T2`` hold unit vectors row-wise; rows with ``ok == False`` are degenerate (α = 0)
    and get ρ = 0, 1 ∓ ρ = 1.  ``R`` must hold T1 T2ᵀ on entry (computed by BLAS).
    """
    m1, d = T1.shape
    m2 = T2.shape[0]
    for i in range(m1):
        for j in range(m2):
            if not (ok1[i] and ok2[j]):
                R[i, j] = 0.0
                OMR[i, j] = 1.0
                OPR[i, j] = 1.0
                continue
            r = R[i, j]
            if r > 1.0:
                r = 1.0
            elif r < -1.0:
                r = -1.0
            if abs(r) > 0.5:
                sm = 0.0
                sp = 0.0
                for k in range(d):
                    dm = T1[i, k] - T2[j, k]
                    dp = T1[i, k] + T2[j, k]
                    sm += dm * dm
                    sp += dp * dp
                omr = 0.5 * sm
                opr = 0.5 * sp
                if omr > 2.0:
                    omr = 2.0
                if opr > 2.0:
                    opr = 2.0
                # keep R consistent with the accurate complement
                if r > 0:
                    r = 1.0 - omr
                    opr = 2.0 - omr
                else:
                    r = opr - 1.0
                    omr = 2.0 - opr
                R[i, j] = r
                OMR[i, j] = omr
                OPR[i, j] = opr
            else:
                R[i, j] = r
                OMR[i, j] = 1.0 - r
                OPR[i, j] = 1.0 + r


@jit
def pair_geometry_self(T, ok, R, OMR, OPR):
    """:func:`pair_geometry` of one set with itself on the upper triangle (i < j) only -- what
    :func:`popdyn._kernels.plmoments.pl_self_moments` reads; the diagonal and the lower
    triangle are left as they are.  Bit-identical to :func:`pair_geometry` there; only the
    complement that is kept (½|θ_i − θ_j|² for ρ > 0, ½|θ_i + θ_j|² for ρ < 0) is summed."""
    m, d = T.shape
    for i in range(m):
        for j in range(i + 1, m):
            if not (ok[i] and ok[j]):
                R[i, j] = 0.0
                OMR[i, j] = 1.0
                OPR[i, j] = 1.0
                continue
            r = R[i, j]
            if r > 1.0:
                r = 1.0
            elif r < -1.0:
                r = -1.0
            if abs(r) > 0.5:
                sg = -1.0 if r > 0 else 1.0
                sm = 0.0
                for k in range(d):
                    dm = T[i, k] + sg * T[j, k]
                    sm += dm * dm
                c = 0.5 * sm
                if c > 2.0:
                    c = 2.0
                if r > 0:
                    R[i, j] = 1.0 - c
                    OMR[i, j] = c
                    OPR[i, j] = 2.0 - c
                else:
                    R[i, j] = c - 1.0
                    OMR[i, j] = 2.0 - c
                    OPR[i, j] = c
            else:
                R[i, j] = r
                OMR[i, j] = 1.0 - r
                OPR[i, j] = 1.0 + r
