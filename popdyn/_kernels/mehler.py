"""Numba kernels: truncated Mehler sums and their error estimates.

In the normalized Hermite basis (DESIGN §2, §3), for units i, j on directions with correlation
``rho``, ``E[F_i G_j] = sum_n F_i[n] G_j[n] rho^n``.  The kernels evaluate the sum truncated at
``N = X.shape[1] - 1`` by Horner's rule in ``rho`` (no ``pow``), vectorized across the partner
index ``j`` (one independent Horner recurrence per pair, so the order of operations is that of
the textbook scalar Horner loop).

Kernels are pure functions over float64 arrays without input checks; results are written into
``out``.  Inputs are validated by :func:`popdyn._hermite.mehler_moment`.
"""
import math

import numpy as np

from popdyn._kernels._jit import jit

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
