"""Numba kernels: truncated Mehler sums and their error estimates.

In the normalized Hermite basis (docs/design.md §2, §3), for units i, j on directions with
correlation ``rho``, ``E[F_i G_j] = sum_n F_i[n] G_j[n] rho^n``.  The kernels evaluate the sum
truncated at ``N = X.shape[1] - 1`` by Horner's rule in ``rho`` (no ``pow``), vectorized across
the partner index ``j`` (one independent Horner recurrence per pair, so the order of operations
is that of the textbook scalar Horner loop).

Kernels are pure functions over float64 arrays without input checks; results are written into
``out``.  Inputs are validated by :func:`popdyn._hermite.mehler_moment`.
"""
import math

import numpy as np

from popdyn._kernels._jit import jit
from popdyn._kernels.bvn import norm_pdf
from popdyn._kernels.hermite import CRAMER, pl_coeffs, relu_moments01

_U = 2.0 ** -53  # unit roundoff


@jit
def mehler(X, Y, R, out):
    """out[i, j] = sum_{n=0}^{N} X[i, n] Y[j, n] R[i, j]^n (Horner in R[i, j]).

    X is (m1, N+1), Y is (m2, N+1), R and out are (m1, m2).
    """
    m1 = X.shape[0]
    m2 = Y.shape[0]
    n1 = X.shape[1]
    Yt = np.ascontiguousarray(Y.T)  # (N+1, m2)
    acc = np.empty(m2)
    for i in range(m1):
        Ri = R[i]
        x = X[i, n1 - 1]
        for j in range(m2):
            acc[j] = x * Yt[n1 - 1, j]
        for n in range(n1 - 2, -1, -1):
            x = X[i, n]
            Yn = Yt[n]
            for j in range(m2):
                acc[j] = acc[j] * Ri[j] + x * Yn[j]
        for j in range(m2):
            out[i, j] = acc[j]


@jit
def mehler_sym(X, R, out):
    """out[i, j] = sum_n X[i, n] X[j, n] R[i, j]^n for a symmetric R; fills both triangles.

    Only the upper triangle of R (j >= i) is read; out[j, i] = out[i, j].
    """
    m = X.shape[0]
    n1 = X.shape[1]
    Xt = np.ascontiguousarray(X.T)
    acc = np.empty(m)
    for i in range(m):
        Ri = R[i]
        x = X[i, n1 - 1]
        for j in range(i, m):
            acc[j] = x * Xt[n1 - 1, j]
        for n in range(n1 - 2, -1, -1):
            x = X[i, n]
            Xn = Xt[n]
            for j in range(i, m):
                acc[j] = acc[j] * Ri[j] + x * Xn[j]
        for j in range(i, m):
            out[i, j] = acc[j]
            out[j, i] = acc[j]


@jit
def _prod0(a, b):
    """a * b with 0 * inf = 0 (a zero factor annihilates an unbounded one)."""
    if a == 0.0 or b == 0.0:
        return 0.0
    return a * b


@jit
def mehler_error(X, Y, R, t2x, supx, l1x, ex, t2y, supy, l1y, ey, out):
    """Entrywise estimate of |E[F_i G_j] - mehler(X, Y, R)| (truncation + inputs + rounding).

    With r = |R[i, j]|, N = X.shape[1] - 1 and u = 2^-53::

        out[i, j] = r^(N+1) * min( sqrt(t2x_i) sqrt(t2y_j), supx_i l1y_j, l1x_i supy_j )
                  + sum_{n<=N} (ex_i |Y_jn| + |X_in| ey_j + ex_i ey_j) r^n
                  + 4 (N+1) u sum_{n<=N} |X_in Y_jn| r^n

    Parameters
    ----------
    X, Y : (m1, N+1), (m2, N+1) coefficient arrays (the same N).
    R : (m1, m2) correlations, |R| <= 1.
    t2x, supx, l1x : (m1,) tails of X beyond N: sum_{n>N} X_in^2, a bound on sup_{n>N} |X_in|,
        sum_{n>N} |X_in|; inf when unknown / unbounded.  Likewise t2y, supy, l1y : (m2,).
    ex, ey : (m1,), (m2,) bounds (estimates) on the absolute error of every stored coefficient
        of the row (0 for exact inputs).
    out : (m1, m2), overwritten.

    Notes
    -----
    The first term bounds the truncation error |sum_{n>N} X_in Y_jn rho^n| by Cauchy-Schwarz
    (sqrt(t2x t2y)) or Hölder (sup * l1) and |rho|^n <= |rho|^(N+1); a product with a zero
    factor is 0 even if the other factor is inf (a zero tail, or rho = 0 exactly, makes the
    truncation exact), otherwise an entry whose options are all inf is inf: the caller then
    knows that the series cannot be bounded this way.  The second term propagates coefficient
    errors, the third is Horner's rounding bound (gamma_{2N+2} rounded up).  Errors in R itself
    are not included.  The result is as rigorous as the tails and ex, ey passed in.
    """
    m1 = X.shape[0]
    m2 = Y.shape[0]
    n1 = X.shape[1]
    N = n1 - 1
    aX = np.abs(X)
    aYt = np.ascontiguousarray(np.abs(Y).T)
    A = np.empty(m2)   # sum |X_in Y_jn| r^n
    SY = np.empty(m2)  # sum |Y_jn| r^n
    SX = np.empty(m2)  # sum |X_in| r^n
    G = np.empty(m2)   # sum r^n
    P = np.empty(m2)   # r^(N+1)
    ar = np.empty(m2)
    rnd = 4.0 * (N + 1) * _U
    for i in range(m1):
        for j in range(m2):
            ar[j] = abs(R[i, j])
        x = aX[i, n1 - 1]
        for j in range(m2):
            y = aYt[n1 - 1, j]
            A[j] = x * y
            SY[j] = y
            SX[j] = x
            G[j] = 1.0
            P[j] = ar[j]
        for n in range(n1 - 2, -1, -1):
            x = aX[i, n]
            Yn = aYt[n]
            for j in range(m2):
                r = ar[j]
                A[j] = A[j] * r + x * Yn[j]
                SY[j] = SY[j] * r + Yn[j]
                SX[j] = SX[j] * r + x
                G[j] = G[j] * r + 1.0
                P[j] = P[j] * r
        sx = math.sqrt(t2x[i])
        for j in range(m2):
            tr = _prod0(sx, math.sqrt(t2y[j]))
            o = _prod0(supx[i], l1y[j])
            if o < tr:
                tr = o
            o = _prod0(l1x[i], supy[j])
            if o < tr:
                tr = o
            e = _prod0(P[j], tr)
            e += ex[i] * SY[j] + SX[j] * ey[j] + ex[i] * ey[j] * G[j]
            e += rnd * A[j]
            out[i, j] = e


@jit(error_model="numpy")
def pl_link_sums(p, q, al, be, Rt, H, dH, L1, ttol, grad, Ct, Bt, At, Dt, trunc):
    """Add the Mehler sums of PL student units against the Hermite part (H, dH) of a link.

    The one kernel of these cross moments: the fused GD step
    (:func:`popdyn._kernels.fused.pl_moments`) and the engine
    (:func:`popdyn._moments.cross_moments`) both call it, with the link tables of
    :func:`popdyn._moments.link_tables`, so the two paths agree bit for bit.

    Ct += Σ_n S_i[n] H[n] ρ^n and, when ``grad``, Dt += Σ Dd_i H ρ^n, At += Σ Dd2_i H ρ^n,
    Bt += Σ Dd_i dH ρ^n (closed-form unit coefficients :func:`popdyn._kernels.hermite.pl_coeffs`;
    with ``grad`` False, Bt, At, Dt are not touched and Ct is the same bits).  Each unit's sums
    are truncated at its own order N_i ≤ N: the smallest n ≥ 2 with r^{n+1}·L1[n] ≤ ``ttol``, r
    the unit's largest |ρ| against the teacher units.  Every coefficient of a unit is bounded by
    E_i = max(α_i, 1)·|p|·K·φ(0)·e^{−h_i²/4} (Cramér, K = 1.086435, h_i = β_i/α_i; n ≥ 2), so
    the dropped terms of every sum are at most ``trunc[i]`` = E_i·r^{N_i+1}·L1[N_i] ≤ E_i·ttol
    (0 when N_i = N), written for the error estimate of :func:`popdyn._moments.cross_moments`.
    ``ttol`` = 1e−17·max(1, RMS of the Hermite part and of its derivative) is the level at
    which the link table itself is truncated (:func:`popdyn._moments._link_order`).  Weakly
    correlated units (r ≈ 0.1 at small initialization) need N_i ≈ 17 instead of N ≈ 217 (SiLU).
    Orders below 2 are never cut (the n ≤ 1 terms carry the linear part).

    Units with α > 0 and |β/α| ≤ 37 (no rescaling in :func:`popdyn._kernels.hermite.phi_hermite`)
    are processed together, sorted by N_i, with the loops over the units innermost: the Hermite
    recurrence, the coefficients and the Horner sums run vectorized across units (the
    recurrence's divisions and square roots are otherwise a long latency chain per unit).  The
    operations per unit are those of ``phi_hermite`` / ``pl_coeffs`` / the scalar Horner loop,
    so the results are bit-identical to them; other units take the scalar path.
    """
    m = al.shape[0]
    k = Rt.shape[1]
    N = H.shape[0] - 1
    NI = np.empty(m, np.int64)
    for i in range(m):
        r = 0.0
        for j in range(k):
            x = abs(Rt[i, j])
            if x > r:
                r = min(x, 1.0)
        Ni = N
        pw = r * r * r
        for n in range(2, N):
            if pw * L1[n] <= ttol:
                Ni = n
                break
            pw *= r
        NI[i] = Ni
        trunc[i] = 0.0
        if Ni < N and al[i] > 0.0 and p != 0.0:
            h = be[i] / al[i]
            E = max(al[i], 1.0) * abs(p) * CRAMER * norm_pdf(0.0) * math.exp(-0.25 * h * h)
            trunc[i] = E * r ** (Ni + 1) * L1[Ni]
    # batched units, by decreasing order N_i (each loop over units runs over a prefix)
    vec = np.zeros(m, np.bool_)
    for i in range(m):
        if al[i] > 0.0:
            b = be[i] / al[i]
            vec[i] = abs(b) <= 37.0
    order = np.argsort(-NI, kind="mergesort")
    V = np.empty(m, np.int64)
    nb = 0
    for t in range(m):
        if vec[order[t]]:
            V[nb] = order[t]
            nb += 1
    for i in range(m):
        if not vec[i]:
            _link_sums_unit(p, q, al, be, Rt, H, dH, NI[i], i, grad, Ct, Bt, At, Dt)
    if nb == 0:
        return
    V = V[:nb]
    NV = np.empty(nb, np.int64)
    xb = np.empty(nb)
    for u in range(nb):
        NV[u] = NI[V[u]]
        xb[u] = -(be[V[u]] / al[V[u]])
    Nmax = NV[0]
    # cnt[n]: number of units (a prefix) that need index n, i.e. n ≤ N_u + 1
    cnt = np.zeros(Nmax + 2, np.int64)
    for u in range(nb):
        for n in range(NV[u] + 2):
            cnt[n] += 1
    # phi_hermite: Y[n, u] = φ(b) h_n(−b)
    Y = np.zeros((Nmax + 2, nb))
    for u in range(nb):
        Y[0, u] = norm_pdf(-xb[u])
    Yp = Y[0]
    Yc = Y[1]
    for u in range(cnt[1]):
        Yc[u] = (xb[u] * Yp[u] - 0.0 * 0.0) / 1.0
    for n in range(2, Nmax + 2):
        c1 = math.sqrt(n - 1.0)
        c2 = math.sqrt(1.0 * n)
        Ym = Y[n - 2]
        Yp = Y[n - 1]
        Yc = Y[n]
        for u in range(cnt[n]):
            Yc[u] = (xb[u] * Yp[u] - c1 * Ym[u]) / c2
    # pl_coeffs: S[n, u], Sd[n, u], Sd2[n, u] (n ≤ N_u)
    S = np.zeros((Nmax + 1, nb))
    Sd = np.zeros((Nmax + 1, nb))
    Sd2 = np.zeros((Nmax + 1, nb))
    pa = np.empty(nb)
    for u in range(nb):
        i = V[u]
        a = al[i]
        bb = be[i]
        cdf, m1, _ = relu_moments01(bb / a)
        S[0, u] = p * a * m1 + q * bb
        if NV[u] >= 1:
            S[1, u] = p * a * cdf + q * a
        Sd[0, u] = p * cdf + q
        pa[u] = p * a
    for n in range(2, Nmax + 1):
        c = math.sqrt(n * (n - 1.0))
        Sn = S[n]
        Yn = Y[n - 2]
        for u in range(cnt[n + 1]):
            Sn[u] = pa[u] * Yn[u] / c
    for n in range(1, Nmax + 1):
        c = math.sqrt(1.0 * n)
        Sn = Sd[n]
        Yn = Y[n - 1]
        for u in range(cnt[n + 1]):
            Sn[u] = p * Yn[u] / c
    for n in range(Nmax + 1):
        Sn = Sd2[n]
        Yn = Y[n]
        for u in range(cnt[n + 1]):
            Sn[u] = p * Yn[u]
    # Horner sums Σ_{n ≤ N_u} (·)[n] H[n] ρ^n per teacher unit, c = 0 before each unit's top term
    rho = np.empty(nb)
    c0 = np.empty(nb)
    c1a = np.empty(nb)
    c2a = np.empty(nb)
    c3a = np.empty(nb)
    for j in range(k):
        for u in range(nb):
            rho[u] = min(max(Rt[V[u], j], -1.0), 1.0)
            c0[u] = 0.0
            c1a[u] = 0.0
            c2a[u] = 0.0
            c3a[u] = 0.0
        for n in range(Nmax, -1, -1):
            hn = H[n]
            dhn = dH[n]
            cn = cnt[n + 1]
            Sn = S[n]
            for u in range(cn):
                c0[u] = c0[u] * rho[u] + Sn[u] * hn
            if not grad:
                continue
            Sn = Sd[n]
            for u in range(cn):
                c1a[u] = c1a[u] * rho[u] + Sn[u] * hn
            for u in range(cn):
                c3a[u] = c3a[u] * rho[u] + Sn[u] * dhn
            Sn = Sd2[n]
            for u in range(cn):
                c2a[u] = c2a[u] * rho[u] + Sn[u] * hn
        for u in range(nb):
            i = V[u]
            Ct[i, j] += c0[u]
            if not grad:
                continue
            Dt[i, j] += c1a[u]
            At[i, j] += c2a[u]
            Bt[i, j] += c3a[u]


@jit
def _link_sums_unit(p, q, al, be, Rt, H, dH, Ni, i, grad, Ct, Bt, At, Dt):
    """:func:`pl_link_sums` for unit i alone (scalar path: degenerate or far-tail units)."""
    k = Rt.shape[1]
    S = np.empty((1, Ni + 1))
    Sd = np.empty((1, Ni + 1))
    Sd2 = np.empty((1, Ni + 1))
    pl_coeffs(p, q, al[i:i + 1], be[i:i + 1], S, Sd, Sd2)
    for j in range(k):
        rho = min(max(Rt[i, j], -1.0), 1.0)
        c = S[0, Ni] * H[Ni]
        dd = Sd[0, Ni] * H[Ni]
        aa = Sd2[0, Ni] * H[Ni]
        bb = Sd[0, Ni] * dH[Ni]
        for n in range(Ni - 1, -1, -1):
            c = c * rho + S[0, n] * H[n]
            dd = dd * rho + Sd[0, n] * H[n]
            aa = aa * rho + Sd2[0, n] * H[n]
            bb = bb * rho + Sd[0, n] * dH[n]
        Ct[i, j] += c
        if not grad:
            continue
        Dt[i, j] += dd
        At[i, j] += aa
        Bt[i, j] += bb
