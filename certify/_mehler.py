r"""Float64 Mehler sums with rigorous error bounds ("compute in float64, verify", docs/design.md §6).

For most pairs of PL units the correlation is moderate, and the Mehler series

    E[σᵢσⱼ] = Σ_n ĉ_n^i ĉ_n^j ρⁿ,      E[σ'ᵢσ'ⱼ] = Σ_n d_n^i d_n^j ρⁿ      (d_n = E[σ' h_n])

truncated at K converges fast.  This kernel evaluates the truncated sums in float64 (numba,
IEEE arithmetic, no fastmath) and bounds, rigorously, everything that separates the float
result from the true moment:

* the truncation tail, |Σ_{n>K}| ≤ (T_i T_j)^{1/2} r^{K+1} (Cauchy–Schwarz; T the tail
  energies enclosed in Arb by Parseval, r ≥ |ρ|);
* the coefficient errors |X − ĉ| ≤ E (the float coefficients are roundings of Arb balls):
  Σ_n (|X_i|E_j + E_i|X_j| + E_iE_j) rⁿ;
* the error of the float correlation ρ̂, |ρ − ρ̂| ≤ δ: Σ_n n (|X_i| + E_i)(|X_j| + E_j) r^{n−1} δ;
* the rounding of Horner's rule, Σ_n γ_{2n+2} |fl(X_iX_j)| |ρ̂|ⁿ (coefficient n passes
  through its own product and 2n further roundings; Higham, Accuracy and Stability of
  Numerical Algorithms, 2nd ed., §5.1), γ_k = ku/(1 − ku), u = 2⁻⁵³;

and the rounding of the bound itself is covered by a factor 1 + 1e−12 (≫ γ_{8K} for K ≤ 1000)
plus an absolute (8K + 32)·2⁻¹⁰⁷⁴(1 + s_i)(1 + s_j)(1 + K) for terms that may underflow.

The correlation: rows are first scaled by powers of two (exact; ρ is scale-free) so that
max|w| ∈ [0.5, 1); dot products and squared norms by the compensated Dot2 algorithm (Ogita,
Rump & Oishi 2005: |ŝ − s| ≤ u|ŝ| + γ_d² Σ|w_ik w_jk|, Dekker's splitting, no FMA needed);
ρ̂ = ŝ/(fl(√q̂_i)·fl(√q̂_j)) and
δ = 1.01(e_s/(n̂_in̂_j) + |ρ̂|(6u + 2γ_d²)) + d·2⁻¹⁰⁷⁰/(n̂_in̂_j) (each norm within 1.6u + γ_d²
relative, their product within 4.3u + 2γ_d², one division; the factor 1.01 absorbs the
second-order terms; the last term covers underflowing products, the error-free
transformations being exact only without underflow).

A pair whose tail exceeds ``tol`` times its Cauchy–Schwarz scale (s_i s_j, s = ‖σ‖ or ‖σ'‖), or
with r ≥ ``rmax``, is returned with ``ok = False`` and is computed by the closed forms in Arb.

References
----------
N. J. Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., SIAM (2002), §3.1, §5.1;
T. Ogita, S. M. Rump, S. Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26 (2005)
1955–1988 (Algorithm 5.3, Proposition 5.5);
docs/design.md §6 ("Per pair in numba: the float Mehler sum plus |ρ|^(K+1)√(T_iT_j) + a rounding
term").
"""
import math

import numpy as np

from popdyn.kernels import jit
from popdyn.kernels import two_prod as _two_prod
from popdyn.kernels import two_sum as _two_sum

__all__ = ["scaled_rows", "mehler_pairs"]

_U = 2.0 ** -53
_TINY = 2.0 ** -1074


def scaled_rows(W: np.ndarray) -> np.ndarray:
    """Rows scaled by exact powers of two so that max|w_ik| ∈ [0.5, 1) (zero rows stay 0)."""
    W = np.asarray(W, dtype=np.float64)
    out = W.copy()
    mx = np.max(np.abs(W), axis=1)
    nz = mx > 0
    _, e = np.frexp(mx[nz])
    out[nz] = np.ldexp(W[nz], -e[:, None])
    return out


@jit
def _gamma(k):
    return k * _U / (1.0 - k * _U)


@jit
def _dot2(x, y):
    """Compensated dot product (Ogita, Rump, Oishi 2005, Algorithm 5.3) and Σ|x_k y_k|.

    |result − x·y| <= u|x·y| + γ_{n}² Σ|x_k y_k| (their Prop. 5.5, with γ_n for n terms;
    valid without underflow -- the caller adds an absolute allowance)."""
    p, s = _two_prod(x[0], y[0])
    a = abs(x[0] * y[0])
    for k in range(1, x.shape[0]):
        h, r = _two_prod(x[k], y[k])
        p, q = _two_sum(p, h)
        s += q + r
        a += abs(x[k] * y[k])
    return p + s, a


@jit
def _series(Xi, Ei, Xj, Ej, rh, r, dl, K):
    """(value, error without tail) of Σ_{n≤K} X_i[n] X_j[n] ρ̂ⁿ (see module docstring)."""
    # Horner for the value; coefficient n passes through 2n + 2 roundings (its product, then
    # n multiplications and n + 1 additions), so the rounding bound is Σ γ_{2n+2}|a_n||ρ̂|ⁿ
    v = 0.0
    for n in range(K, -1, -1):
        v = v * rh + Xi[n] * Xj[n]
    ar = abs(rh)
    absS = 0.0
    coef = 0.0
    dro = 0.0
    pw = 1.0          # |ρ̂|^n
    pr = 1.0          # r^n
    prm = 0.0         # r^(n-1) (0 for n = 0)
    for n in range(K + 1):
        a = abs(Xi[n] * Xj[n])
        absS += _gamma(2 * n + 2) * a * pw
        coef += (abs(Xi[n]) * Ej[n] + Ei[n] * abs(Xj[n]) + Ei[n] * Ej[n]) * pr
        if n > 0:
            dro += n * (abs(Xi[n]) + Ei[n]) * (abs(Xj[n]) + Ej[n]) * prm
        prm = pr
        pw *= ar
        pr *= r
    err = absS + coef + dro * dl
    return v, err, pr       # pr = r^(K+1)


@jit
def mehler_pairs(W1, W2, same, XC1, EC1, TC1, SC1, XD1, ED1, TD1, SD1, ok1,
                 XC2, EC2, TC2, SC2, XD2, ED2, TD2, SD2, ok2, K, tol, rmax,
                 C, eC, B, eB, OK):
    """Fill C, B (values), eC, eB (rigorous absolute error bounds) and OK for all pairs.

    W1, W2: scaled rows (``scaled_rows``); ``same``: the two sets are the same (only j > i is
    computed; the diagonal is left to the caller).  X*, E*: float coefficients and their error
    bounds (rows of length K+1); T*: tail energies beyond K (upper bounds); S*: Cauchy–Schwarz
    scales (upper bounds of ‖σ‖, ‖σ'‖); ok*: units eligible for this path (α > 0).
    """
    n1 = W1.shape[0]
    n2 = W2.shape[0]
    d = W1.shape[1]
    nrm1 = np.empty(n1)
    nrm2 = np.empty(n2)
    g2 = _gamma(d) ** 2
    for i in range(n1):
        q, _ = _dot2(W1[i], W1[i])
        nrm1[i] = math.sqrt(q)
    for j in range(n2):
        q, _ = _dot2(W2[j], W2[j])
        nrm2[j] = math.sqrt(q)
    for i in range(n1):
        j0 = i + 1 if same else 0
        for j in range(j0, n2):
            OK[i, j] = False
            if not (ok1[i] and ok2[j]):
                continue
            dot, adot = _dot2(W1[i], W2[j])
            nn = nrm1[i] * nrm2[j]
            rh = dot / nn
            # |s − w_i·w_j| <= u|s| + γ_d²Σ|w w| (Dot2); the squared norms likewise, so each
            # norm is within (1.6u + γ_d²) relative, their product 4.3u + 2γ_d², plus the
            # division: see the module docstring
            es = _U * abs(dot) + g2 * adot
            dl = 1.01 * (es / nn + abs(rh) * (6.0 * _U + 2.0 * g2)) + d * 2.0 ** -1070 / nn
            r = abs(rh) + dl
            r = r * (1.0 + 4.0 * _U)
            if not (r < rmax) or r >= 1.0:
                continue
            if rh > 1.0:
                rh = 1.0
            elif rh < -1.0:
                rh = -1.0
            # tails first (cheap) to decide the path
            pK = 1.0
            for n in range(K + 1):
                pK *= r
            pK = max(pK * (1.0 + 2.0 * (K + 2) * _U), _TINY)
            tC = math.sqrt(TC1[i] * TC2[j]) * pK
            tB = math.sqrt(TD1[i] * TD2[j]) * pK
            sc = SC1[i] * SC2[j]
            sd = SD1[i] * SD2[j]
            if tC > tol * sc or tB > tol * sd:
                continue
            vC, errC, _ = _series(XC1[i], EC1[i], XC2[j], EC2[j], rh, r, dl, K)
            vB, errB, _ = _series(XD1[i], ED1[i], XD2[j], ED2[j], rh, r, dl, K)
            slack = (8 * K + 32) * _TINY * (1.0 + K)
            C[i, j] = vC
            eC[i, j] = (errC + tC) * (1.0 + 1e-12) + slack * (1.0 + SC1[i]) * (1.0 + SC2[j])
            B[i, j] = vB
            eB[i, j] = (errB + tB) * (1.0 + 1e-12) + slack * (1.0 + SD1[i]) * (1.0 + SD2[j])
            OK[i, j] = True
