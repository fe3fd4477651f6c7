"""numba kernels of the SwiGLU student and of Hermite-tensor teachers (pure array functions).

Conventions (docs/design.md §2-§3): normalized Hermite functions h_n = He_n/sqrt(n!); for a gate
direction theta and scale alpha, ``T[p, j, n] = E[silu^(p)(alpha_j z) h_n(z)]`` (z ~ N(0, 1)),
p = 0..4.  Pair moments ``M^{pq}_ij = E[silu^(p)(g_i.x) silu^(q)(g_j.x)] =
sum_n T[p,i,n] T[q,j,n] rho_ij^n`` (Mehler).  No input checks here (STYLE item 3).
"""
import math

import numpy as np

from ._jit import jit

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@jit
def silu_derivs(t, out):
    """out[p] = silu^(p)(t), p = 0..4 (silu(t) = t*sigmoid(t)); stable for large |t|."""
    if t >= 0.0:
        e = math.exp(-t)
        s = 1.0 / (1.0 + e)
    else:
        e = math.exp(t)
        s = e / (1.0 + e)
    s1 = s * (1.0 - s)                     # sigmoid'
    s2 = -s1 * math.tanh(0.5 * t)          # sigmoid'' (1 - 2s = -tanh(t/2): no cancellation)
    s3 = s1 * (1.0 - 6.0 * s1)
    s4 = s2 * (1.0 - 12.0 * s1)
    out[0] = t * s
    out[1] = s + t * s1
    out[2] = 2.0 * s1 + t * s2
    out[3] = 3.0 * s2 + t * s3
    out[4] = 4.0 * s3 + t * s4


@jit
def silu_coeffs(al, nodes, weights, density, T):
    """T[p, j, n] = sum_k w_k [phi(z_k)] silu^(p)(al_j z_k) h_n(z_k) (T: (5, m, N+1), zeroed here).

    With ``density`` True the rule integrates dz (composite Gauss-Legendre) and the Gaussian
    density is applied here; with False the weights already integrate against N(0, 1)
    (Gauss-Hermite).  Units with al_j = 0 get the exact constants silu^(p)(0) at n = 0.
    """
    P, m, N1 = T.shape
    K = nodes.shape[0]
    d = np.empty(5)
    h = np.empty(N1)
    T[:, :, :] = 0.0
    sq = np.empty(N1 + 1)
    for n in range(N1 + 1):
        sq[n] = math.sqrt(n)
    for k in range(K):
        z = nodes[k]
        wk = weights[k] * _INV_SQRT_2PI * math.exp(-0.5 * z * z) if density else weights[k]
        h[0] = 1.0
        if N1 > 1:
            h[1] = z
        for n in range(1, N1 - 1):
            h[n + 1] = (z * h[n] - sq[n] * h[n - 1]) / sq[n + 1]
        for j in range(m):
            a = al[j]
            if a == 0.0:
                continue
            silu_derivs(a * z, d)
            for p in range(P):
                c = wk * d[p]
                for n in range(N1):
                    T[p, j, n] += c * h[n]
    for j in range(m):
        if al[j] == 0.0:
            silu_derivs(0.0, d)
            for p in range(P):
                T[p, j, 0] = d[p]


@jit
def pair_moments(T, R, M00, M11, M22, M20, M31, M40):
    """Mehler pair moments of the SiLU gates (see module docstring); M_pq[i, j] = M^{pq}_ij."""
    P, m, N1 = T.shape
    for i in range(m):
        for j in range(i, m):
            r = R[i, j]
            pw = 1.0
            s00 = 0.0; s11 = 0.0; s22 = 0.0
            s20 = 0.0; s02 = 0.0; s31 = 0.0; s13 = 0.0; s40 = 0.0; s04 = 0.0
            for n in range(N1):
                t0i = T[0, i, n] * pw; t1i = T[1, i, n] * pw; t2i = T[2, i, n] * pw
                t3i = T[3, i, n] * pw; t4i = T[4, i, n] * pw
                t0j = T[0, j, n]; t1j = T[1, j, n]; t2j = T[2, j, n]
                t3j = T[3, j, n]; t4j = T[4, j, n]
                s00 += t0i * t0j
                s11 += t1i * t1j
                s22 += t2i * t2j
                s20 += t2i * t0j
                s02 += t0i * t2j
                s31 += t3i * t1j
                s13 += t1i * t3j
                s40 += t4i * t0j
                s04 += t0i * t4j
                pw *= r
                if pw == 0.0:
                    break
            M00[i, j] = s00; M00[j, i] = s00
            M11[i, j] = s11; M11[j, i] = s11
            M22[i, j] = s22; M22[j, i] = s22
            M20[i, j] = s20; M20[j, i] = s02
            M31[i, j] = s31; M31[j, i] = s13
            M40[i, j] = s40; M40[j, i] = s04


@jit
def tensor_contract(T, xi, idx, coef, deg, out):
    """out[p, j] = sum_e coef[e] T[p, j, deg[e]] prod_l xi[j, l]^idx[e, l] over deg[e] <= N.

    ``T`` (P, m, N+1) unit coefficient sequences, ``xi`` (m, k) the units' directions in the
    teacher frame, ``idx`` (E, k) multi-indices, ``coef`` (E,) = F_A sqrt(|A|!/A!) and
    ``deg`` (E,) = |A|.  This is E[psi_j(theta_j.x) G(Ux)] for a ridge unit psi_j and a
    multi-index function with normalized Hermite tensor F (docs/design.md §3).
    """
    P, m, N1 = T.shape
    E, k = idx.shape
    dmax = 0
    for e in range(E):
        if deg[e] > dmax:
            dmax = deg[e]
    pw = np.empty((k, dmax + 1))
    for j in range(m):
        for l in range(k):
            pw[l, 0] = 1.0
            for a in range(1, dmax + 1):
                pw[l, a] = pw[l, a - 1] * xi[j, l]
        for p in range(P):
            out[p, j] = 0.0
        for e in range(E):
            n = deg[e]
            if n >= N1:
                continue
            v = coef[e]
            for l in range(k):
                v *= pw[l, idx[e, l]]
            if v == 0.0:
                continue
            for p in range(P):
                out[p, j] += v * T[p, j, n]


@jit
def silu_coeffs_biased(al, bias, nodes, weights, density, T):
    """T[p, j, n] = sum_k w_k [phi(z_k)] silu^(p)(al_j z_k + bias_j) h_n(z_k), p = 0..4.

    The gate-bias version of :func:`silu_coeffs` (same rules and conventions): the sequences of
    the ridge unit z -> silu^(p)(al_j z + bias_j).  Units with al_j = 0 get the exact constants
    silu^(p)(bias_j) at n = 0.
    """
    P, m, N1 = T.shape
    K = nodes.shape[0]
    d = np.empty(5)
    h = np.empty(N1)
    T[:, :, :] = 0.0
    sq = np.empty(N1 + 1)
    for n in range(N1 + 1):
        sq[n] = math.sqrt(n)
    for k in range(K):
        z = nodes[k]
        wk = weights[k] * _INV_SQRT_2PI * math.exp(-0.5 * z * z) if density else weights[k]
        h[0] = 1.0
        if N1 > 1:
            h[1] = z
        for n in range(1, N1 - 1):
            h[n + 1] = (z * h[n] - sq[n] * h[n - 1]) / sq[n + 1]
        for j in range(m):
            a = al[j]
            if a == 0.0:
                continue
            silu_derivs(a * z + bias[j], d)
            for p in range(P):
                c = wk * d[p]
                for n in range(N1):
                    T[p, j, n] += c * h[n]
    for j in range(m):
        if al[j] == 0.0:
            silu_derivs(bias[j], d)
            for p in range(P):
                T[p, j, 0] = d[p]


@jit
def pair_moments_all(T, R, M):
    """M[p, q, i, j] = sum_n T[p, i, n] T[q, j, n] R[i, j]^n for p + q <= 4 (Mehler pair
    moments E[silu^(p)_i silu^(q)_j] of biased gates; entries with p + q > 4 are left zero)."""
    P, m, N1 = T.shape
    s = np.empty((5, 5))
    for i in range(m):
        for j in range(i, m):
            r = R[i, j]
            pw = 1.0
            s[:, :] = 0.0
            for n in range(N1):
                for p in range(5):
                    tp = T[p, i, n] * pw
                    for q in range(5 - p):
                        s[p, q] += tp * T[q, j, n]
                pw *= r
                if pw == 0.0:
                    break
            for p in range(5):
                for q in range(5 - p):
                    M[p, q, i, j] = s[p, q]
                    M[q, p, j, i] = s[p, q]
