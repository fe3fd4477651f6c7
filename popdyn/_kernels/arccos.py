r"""Bias-free PL pair moments in closed form: the arc-cosine kernels.

For PL units σ(t) = p·relu(t) + q·t with *zero* biases, t_i = α_i u, t_j = α_j v, where
(u, v) are standard normals with correlation ρ = θ_i·θ_j, every pair moment the engine needs is
elementary in the angle θ = arccos ρ (Cho & Saul 2009, the first-order arc-cosine kernel; the
others by Stein's lemma and conditioning on u = 0).  With s = √(1 − ρ²), κ = 1/√(2π):

    E[relu(u) relu(v)] = (s + (π − θ) ρ)/(2π),   E[relu(u) v] = ρ/2,        E[uv] = ρ,
    E[1{u>0} 1{v>0}]   = (π − θ)/(2π),           E[1{u>0} v]   = κρ,        E[1{u>0}] = 1/2,
    E[1{u>0} relu(v)]  = κ(1 + ρ)/2,             E[δ(u) relu(v)] = κ² s,    E[δ(u) v] = 0,

so, with the engine's conventions (:func:`popdyn._kernels.plmoments.pl_pair_moments`:
C = E[σᵢσⱼ], B = E[σ'ᵢσ'ⱼ], A = E[αᵢσ''ᵢσⱼ], D = E[σ'ᵢσⱼ]),

    C_ij = αᵢαⱼ [pᵢpⱼ k₁ + (pᵢqⱼ + qᵢpⱼ) ρ/2 + qᵢqⱼ ρ],
    B_ij = pᵢpⱼ (π − θ)/(2π) + (pᵢqⱼ + qᵢpⱼ)/2 + qᵢqⱼ,
    A_ij = pᵢpⱼ αⱼ s/(2π),
    D_ij = αⱼ κ [pᵢpⱼ (1 + ρ)/2 + pᵢqⱼ ρ + qᵢpⱼ].

The angle is formed without cancellation from the engine's 1 ∓ ρ (computed as ½|θᵢ ∓ θⱼ|²):
π − θ = 2 atan2(√(1 + ρ), √(1 − ρ)) and s = √((1 − ρ)(1 + ρ)), so pairs near ρ = ±1 keep their
relative accuracy.  Each entry is a handful of correctly rounded operations and one
first-quadrant atan2 (:func:`atan2q`, within 3 ulp, branch-free); a few ulp in all, against the
general kernels' target of 5e−14 relative.  Used by the ``*_units`` entry of pl_chunks
points when every bias of both sets is exactly 0 and every α > 0 (zero rows keep the general
path).  No per-pair branching: the self moments run row by row in short loops over the pairs
that LLVM vectorizes (AVX2; :func:`self_moments`), bit-identical to the one-pair loop
:func:`self_moments_pairwise`.
"""
import math

import numpy as np

from ._jit import jit

_INV2PI = 1.0 / (2.0 * math.pi)
_KAPPA = 1.0 / math.sqrt(2.0 * math.pi)


# atan(t) = t + t·u·P(u), u = t², |t| <= tan(π/8): P the degree-11 Chebyshev fit of
# (atan(√u) − √u)/u^{3/2} on [0, tan²(π/8)] (mpmath.chebyfit at 40 digits; its error times u
# is 2e−19 relative to atan(t)), highest degree first
_ATAN_P = (float.fromhex("0x1.0ad36a455cafbp-6"), float.fromhex("-0x1.1b33b923aa954p-5"),
           float.fromhex("0x1.74ddd408bb4c1p-5"), float.fromhex("-0x1.ac7a938b69c93p-5"),
           float.fromhex("0x1.e19a13b9fc6dfp-5"), float.fromhex("-0x1.110e880a7a521p-4"),
           float.fromhex("0x1.3b1392d9e785cp-4"), float.fromhex("-0x1.745d165df3f95p-4"),
           float.fromhex("0x1.c71c71c304b68p-4"), float.fromhex("-0x1.249249248d7eep-3"),
           float.fromhex("0x1.9999999999953p-3"), float.fromhex("-0x1.5555555555555p-2"))
_TAN_PI8 = 0.41421356237309503
_PI4 = math.pi / 4.0
_PI2 = math.pi / 2.0


@jit(error_model="numpy")
def atan2q(y, x):
    """atan2(y, x) for x, y >= 0, not both 0 (the first quadrant), branch-free so that loops of
    it vectorize: r = min/max ∈ [0, 1]; above tan(π/8), atan r = π/4 + atan((r − 1)/(r + 1));
    atan t = t + t·u·P(u) (:data:`_ATAN_P`); π/2 − · when y > x.  Error: within 3 ulp of the
    result on [0, π/2] (measured against mpmath: worst 2.58 ulp on 10⁵ random arguments, and the
    boundary cases of tests/popdyn/test_arccos.py;
    the fit's own error is 2e−19 relative)."""
    hi = max(x, y)
    lo = min(x, y)
    r = lo / hi
    big = r > _TAN_PI8
    # both candidates computed, then selected: no branch for the data to mispredict (and no
    # division to speculate), so loops of atan2q vectorize whatever the signs
    tb = (r - 1.0) / (r + 1.0)
    t = tb if big else r
    base = _PI4 if big else 0.0
    u = t * t
    P = _ATAN_P[0]
    P = P * u + _ATAN_P[1]
    P = P * u + _ATAN_P[2]
    P = P * u + _ATAN_P[3]
    P = P * u + _ATAN_P[4]
    P = P * u + _ATAN_P[5]
    P = P * u + _ATAN_P[6]
    P = P * u + _ATAN_P[7]
    P = P * u + _ATAN_P[8]
    P = P * u + _ATAN_P[9]
    P = P * u + _ATAN_P[10]
    P = P * u + _ATAN_P[11]
    a = base + (t + t * u * P)
    b = _PI2 - a
    return b if y > x else a


@jit
def bias_free(be1, al1, be2, al2):
    """Whether both unit sets are bias-free with every α > 0 (the closed forms apply)."""
    for i in range(be1.shape[0]):
        if be1[i] != 0.0 or not al1[i] > 0.0:
            return False
    for j in range(be2.shape[0]):
        if be2[j] != 0.0 or not al2[j] > 0.0:
            return False
    return True


@jit
def _entry(pi, qi, ali, pj, qj, alj, rho, om, op):
    """(C, B, A_ij, A_ji, D_ij, D_ji) of one bias-free pair."""
    som = math.sqrt(max(om, 0.0))
    sop = math.sqrt(max(op, 0.0))
    pmt = 2.0 * atan2q(sop, som)                 # π − θ
    s = som * sop                                # √(1 − ρ²)
    k1 = (s + pmt * rho) * _INV2PI
    pp = pi * pj
    C = ali * alj * (pp * k1 + (pi * qj + qi * pj) * (0.5 * rho) + qi * qj * rho)
    B = pp * (pmt * _INV2PI) + 0.5 * (pi * qj + qi * pj) + qi * qj
    a = pp * s * _INV2PI
    Dij = alj * _KAPPA * (pp * (0.5 * op) + pi * qj * rho + qi * pj)
    Dji = ali * _KAPPA * (pp * (0.5 * op) + pj * qi * rho + qj * pi)
    return C, B, a * alj, a * ali, Dij, Dji


@jit
def self_moments_pairwise(p, q, al, R, OMR, OPR, C, B, A, D):
    """:func:`self_moments` one pair at a time (:func:`_entry` per pair, both triangles stored
    together): the bit-for-bit reference of the row-vectorized :func:`self_moments` in
    tests/popdyn/test_arccos.py."""
    m = al.shape[0]
    for i in range(m):
        for j in range(i, m):
            if i == j:
                rho, om, op = 1.0, 0.0, 2.0
            else:
                rho, om, op = R[i, j], OMR[i, j], OPR[i, j]
            c, b, aij, aji, dij, dji = _entry(p[i], q[i], al[i], p[j], q[j], al[j], rho, om, op)
            C[i, j] = c
            C[j, i] = c
            B[i, j] = b
            B[j, i] = b
            A[i, j] = aij
            A[j, i] = aji
            D[i, j] = dij
            D[j, i] = dji


@jit(error_model="numpy")
def _angles_row(om, op, PMT, S):
    """PMT[j] = π − θ = 2 atan2q(√(1 + ρ), √(1 − ρ)) and S[j] = √(1 − ρ²) (the first lines of
    :func:`_entry`, same operations)."""
    for j in range(om.shape[0]):
        som = math.sqrt(max(om[j], 0.0))
        sop = math.sqrt(max(op[j], 0.0))
        PMT[j] = 2.0 * atan2q(sop, som)
        S[j] = som * sop


@jit
def _uniform(x):
    """Whether every entry of ``x`` equals the first."""
    for e in range(1, x.shape[0]):
        if x[e] != x[0]:
            return False
    return True


@jit(error_model="numpy")
def _row_c(pp, sym, qq, ali, al, R, PMT, S, C):
    for j in range(al.shape[0]):
        k1 = (S[j] + PMT[j] * R[j]) * _INV2PI
        C[j] = ali * al[j] * (pp * k1 + sym * (0.5 * R[j]) + qq * R[j])


@jit(error_model="numpy")
def _row_b(pp, hs, qq, PMT, B):
    for j in range(B.shape[0]):
        B[j] = pp * (PMT[j] * _INV2PI) + hs + qq


@jit(error_model="numpy")
def _row_a(pp, ali, al, S, A, AT):
    for j in range(al.shape[0]):
        A[j] = (pp * S[j] * _INV2PI) * al[j]
    for j in range(al.shape[0]):
        AT[j] = (pp * S[j] * _INV2PI) * ali


@jit(error_model="numpy")
def _row_d(pp, pq, ali, al, R, op, D, DT):
    for j in range(al.shape[0]):
        D[j] = al[j] * _KAPPA * (pp * (0.5 * op[j]) + pq * R[j] + pq)
    for j in range(al.shape[0]):
        DT[j] = ali * _KAPPA * (pp * (0.5 * op[j]) + pq * R[j] + pq)


@jit
def _row(pp, sym, hs, qq, pq, ali, al, R, om, op, PMT, S, C, B, A, AT, D, DT):
    """One row of :func:`self_moments` (pairs (i, j), j over the slices given): the operations
    of :func:`_entry` for a uniform set (pᵢqⱼ = qᵢpⱼ = pq, sym = 2pq, hs = ½sym, qq = q²), one
    short loop per output in its own function (so LLVM vectorizes each: measured ~5× faster
    than the same loops in one function)."""
    _angles_row(om, op, PMT, S)
    _row_c(pp, sym, qq, ali, al, R, PMT, S, C)
    _row_b(pp, hs, qq, PMT[:al.shape[0]], B)
    _row_a(pp, ali, al, S, A, AT)
    _row_d(pp, pq, ali, al, R, op, D, DT)


_BLK = 32


@jit
def self_moments(p, q, al, R, OMR, OPR, C, B, A, D):
    """Bias-free self moments of one set (m×m outputs; the diagonal at ρ = 1 exactly, only the
    upper triangle of R, OMR, OPR read), the layout of ``pl_self_moments``.

    Bit-identical to :func:`self_moments_pairwise` (the operations of :func:`_entry` in the
    same order), organized for speed (at m = 256 the pair loop is bound by its column stores,
    which miss the cache): strips of 32 rows; in a strip, the upper-triangle entries of each row
    by short loops over j that LLVM vectorizes (:func:`_row`), the transposed A_ji, D_ji into a
    strip-sized scratch, then the strip's lower-triangle images written row-wise while the
    strip is in cache (:func:`_mirror_strip`).  Sets whose p, q are not uniform take the pair
    loop."""
    m = al.shape[0]
    if m == 0:
        return
    if not (_uniform(p) and _uniform(q)):
        self_moments_pairwise(p, q, al, R, OMR, OPR, C, B, A, D)
        return
    pi = p[0]
    qi = q[0]
    pp = pi * pi
    pq = pi * qi                 # pᵢqⱼ = qᵢpⱼ for a uniform set
    qq = qi * qi
    sym = pq + pq
    hs = 0.5 * sym
    AT = np.empty((_BLK, m))
    DT = np.empty((_BLK, m))
    PMT = np.empty(m)
    S = np.empty(m)
    for i0 in range(0, m, _BLK):
        i1 = min(i0 + _BLK, m)
        for i in range(i0, i1):
            ali = al[i]
            j0 = i + 1
            t = i - i0
            _row(pp, sym, hs, qq, pq, ali, al[j0:], R[i, j0:], OMR[i, j0:], OPR[i, j0:],
                 PMT, S, C[i, j0:], B[i, j0:], A[i, j0:], AT[t, j0:], D[i, j0:], DT[t, j0:])
            c, b, aij, aji, dij, dji = _entry(pi, qi, ali, pi, qi, ali, 1.0, 0.0, 2.0)
            C[i, i] = c
            B[i, i] = b
            A[i, i] = aij
            D[i, i] = dij
        _mirror_strip(C, C, i0, i1, 0)
        _mirror_strip(B, B, i0, i1, 0)
        _mirror_strip(A, AT, i0, i1, i0)
        _mirror_strip(D, DT, i0, i1, i0)


@jit
def _mirror_strip(X, Y, i0, i1, off):
    """X[j, i] = Y[i − off, j] for i0 <= i < i1 and j > i (rows j of X stored contiguously)."""
    m = X.shape[0]
    for j in range(i0 + 1, m):
        Xj = X[j]
        for i in range(i0, min(i1, j)):
            Xj[i] = Y[i - off, j]


@jit
def pair_moments(p1, q1, al1, p2, q2, al2, R, OMR, OPR, C, B, A, D):
    """Bias-free moments of set 1 against set 2 (m1×m2 outputs), the layout of
    ``pl_pair_moments``."""
    for i in range(al1.shape[0]):
        for j in range(al2.shape[0]):
            c, b, aij, aji, dij, dji = _entry(p1[i], q1[i], al1[i], p2[j], q2[j], al2[j],
                                              R[i, j], OMR[i, j], OPR[i, j])
            C[i, j] = c
            B[i, j] = b
            A[i, j] = aij
            D[i, j] = dij
