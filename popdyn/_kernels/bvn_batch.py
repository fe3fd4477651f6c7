"""Φ₂ for many (h, k, r) at once: :func:`bvn_cdf_batch`, the bivariate normal CDF in SIMD lanes.

:func:`popdyn._kernels.bvn.bvn_cdf` evaluates one argument triple at a time, with a branch per
regime and a libm call (``exp``, ``asin``) per Gauss–Legendre node; LLVM cannot put such a
loop into vector registers.  :func:`bvn_cdf_batch` takes arrays and sorts the work by regime:

* |r| < 0.925 with the single-panel rules of :func:`popdyn._kernels.bvn._bvn_lo` (Genz's
  θ-integral Φ₂ = Φ(h)Φ(k) + (1/2π)∫₀^{asin r} exp(E(sin θ)) dθ, 6/12/20 Gauss–Legendre points
  chosen, as there, by |r| and the log-variation V ≤ 8 of the integrand): the items of one rule
  are gathered into contiguous columns and the node sums run node by node over blocks of
  :data:`_BLK` items, a branch-free loop body (sine in Estrin's form, the exponential of
  :func:`popdyn._kernels.vmath.exp_inline`, asin by :func:`popdyn._kernels.vmath.asin_corr`)
  that LLVM vectorizes;
* |r| < 0.925 with V > 8 (joint tails): the 20-point rule on ⌈V/8⌉ panels, each (item, panel)
  an item of the same vectorized node loop, the panel sums added per item in order;
* |r| ≥ 0.925: K's 20-point remainder sums for all such items in one vectorized call
  (:func:`popdyn._kernels.bvn._bvn_hi_rem_batch`), then the closed-form part and the branch
  logic per item, exactly as :func:`bvn_cdf` (including its refinements);
* everything else -- r = 0 or ±1, |h| or |k| > 39, infinite or NaN limits, and the items that
  :func:`bvn_cdf` recomputes from a positive-term form (h + k < 0 at r < 0 with
  Φ₂ < Φ(h)Φ(k)/4) -- by :func:`bvn_cdf` itself.

Every item therefore takes the branch, the rule and the refinements that :func:`bvn_cdf` takes;
the results differ from it only by the rounding of the vectorized exponential, sine and asin
(each ≤ 2 ulp), and carry its stated accuracy: absolute error ≤ 2 ulp(1), relative error
≤ 2e−14 + 2·eps·|ln Φ₂| (tests/popdyn/test_bvn_batch.py: against 30-digit mpmath on the
references of data/refs/plmoments_refs.json, live mpmath at degenerate geometry, and against
:func:`bvn_cdf` under hypothesis).

References
----------
A. Genz, "Numerical computation of rectangular bivariate and trivariate normal and t
probabilities", Statistics and Computing 14 (2004) 251–260.
"""
import numpy as np

from ._jit import jit
from .bvn import (_BIG, _GL12_U, _GL12_W, _GL20_U, _GL20_W, _GL6_U, _GL6_W, _TWOPI, _bvn_err_hi,
                  _bvn_hi_closed, _bvn_hi_combine, _bvn_hi_rem_batch, bvn_cdf, norm_cdf)
from .pl_front import _price_logvar_bf
from .vmath import asin_corr, exp_inline, sin_small

__all__ = ["bvn_cdf_batch"]

#: items per block of the node loop of :func:`_node_sums` (its columns stay in the L1 cache)
_BLK = 256
#: items per piece of :func:`_lo_class` (its scratch: 8 columns of this length, 128 KiB)
_PIECE = 2048
#: the item classes of :func:`_classify`: the three single-panel rules of |r| < 0.925, the
#: |r| ≥ 0.925 branch, the items left to :func:`bvn_cdf`, and the several-panel rule of
#: |r| < 0.925 (V > 8)
_C6, _C12, _C20, _CHI, _CSCALAR, _CPAN = 0, 1, 2, 3, 4, 5


@jit(error_model="numpy")
def _classify(h, k, r, omr, opr, cls):
    """cls[i] = the class of item i: the rule :func:`popdyn._kernels.bvn._bvn_lo` takes (6,
    12 or 20 points on one panel, or 20 points on ⌈V/8⌉ panels when V > 8), the |r| ≥ 0.925
    branch of :func:`popdyn._kernels.bvn._bvn_err`, or :func:`bvn_cdf` (the special cases).
    The conditions are those of ``_bvn_err`` and ``_bvn_lo``, in the same order."""
    for i in range(h.shape[0]):
        hi = h[i]
        ki = k[i]
        ri = r[i]
        c = _CSCALAR
        if (hi == hi and ki == ki and ri == ri and -_BIG <= hi <= _BIG and -_BIG <= ki <= _BIG
                and omr[i] > 0.0 and opr[i] > 0.0 and ri != 0.0):
            ar = abs(ri)
            if ar >= 0.925:
                c = _CHI
            else:
                V, _ = _price_logvar_bf(hi, ki, ri)
                if V <= 8.0:
                    if ar < 0.3 and V < 0.05:
                        c = _C6
                    elif ar < 0.75 and V < 1.0:
                        c = _C12
                    else:
                        c = _C20
                else:
                    c = _CPAN
        cls[i] = c


@jit(error_model="numpy")
def _lo_class(h, k, r, omr, opr, idx, rule, out):
    """out[idx[e]] for the items idx of the single-panel rule class ``rule``, in pieces of
    :data:`_PIECE` items (scratch allocated once, small enough not to be faulted in afresh): the
    gathered columns (hk, (h² + k²)/2, asin r), the node sums (:func:`_node_sums` on one
    panel [0, asin r]: θ = 0 + asin r·u = asin r·u, the nodes of ``_lo_sum``), then
    Φ(h)Φ(k) + I as in :func:`popdyn._kernels.bvn._bvn_lo`.  Items whose value :func:`bvn_cdf`
    would recompute from a positive-term form (r < 0, h + k < 0, Φ₂ < Φ(h)Φ(k)/4) are left to
    :func:`bvn_cdf`."""
    n = idx.shape[0]
    if n == 0:
        return
    W = np.empty(8 * _PIECE)
    HK = W[0:_PIECE]
    HS = W[_PIECE:2 * _PIECE]
    ASR = W[2 * _PIECE:3 * _PIECE]
    RR = W[3 * _PIECE:4 * _PIECE]
    OM = W[4 * _PIECE:5 * _PIECE]
    OP = W[5 * _PIECE:6 * _PIECE]
    S = W[6 * _PIECE:7 * _PIECE]
    Z = W[7 * _PIECE:8 * _PIECE]        # panel starts: 0 (one panel, θ = 0 + asin r·u)
    Z[:] = 0.0
    for e0 in range(0, n, _PIECE):
        m = min(_PIECE, n - e0)
        for e in range(m):                  # gathers
            i = idx[e0 + e]
            hi = h[i]
            ki = k[i]
            HK[e] = hi * ki
            HS[e] = 0.5 * (hi * hi + ki * ki)
            RR[e] = r[i]
            OM[e] = omr[i]
            OP[e] = opr[i]
        for e in range(m):                  # contiguous: vectorized
            ASR[e] = asin_corr(RR[e], OM[e], OP[e])
        if rule == _C6:
            _node_sums(_GL6_U, _GL6_W, HK[:m], HS[:m], Z[:m], ASR[:m], S)
        elif rule == _C12:
            _node_sums(_GL12_U, _GL12_W, HK[:m], HS[:m], Z[:m], ASR[:m], S)
        else:
            _node_sums(_GL20_U, _GL20_W, HK[:m], HS[:m], Z[:m], ASR[:m], S)
        for e in range(m):
            i = idx[e0 + e]
            base = norm_cdf(h[i]) * norm_cdf(k[i])
            v = base + S[e] * ASR[e] / _TWOPI
            if r[i] < 0.0 and h[i] + k[i] < 0.0 and v < 0.25 * base:
                v = bvn_cdf(h[i], k[i], r[i], omr[i], opr[i])
            out[i] = v


@jit(error_model="numpy")
def _node_sums(GU, GW, HK, HS, A0, PW, S):
    """S[p] = Σ_i GW_i exp((sin θ·HK[p] − HS[p])/cos²θ), θ = A0[p] + PW[p]·GU_i: the sum of
    :func:`popdyn._kernels.bvn._lo_sum` on the panel [A0, A0 + PW] (in its order), node by node
    over blocks of :data:`_BLK` items.  A block's columns are rows of one flat array of constant
    row length and are indexed without sign (no wrap-around), so that LLVM bounds the accesses,
    needs one run-time alias check and vectorizes the node loop (:func:`_node_terms`)."""
    n = HK.shape[0]
    nn = GU.shape[0]
    IN = np.empty(4 * _BLK)           # hk, (h² + k²)/2, panel start, panel width
    SB = np.empty(_BLK)
    for p0 in range(0, n, _BLK):
        nb = min(_BLK, n - p0)
        for p in range(nb):
            IN[p] = HK[p0 + p]
            IN[_BLK + p] = HS[p0 + p]
            IN[2 * _BLK + p] = A0[p0 + p]
            IN[3 * _BLK + p] = PW[p0 + p]
            SB[p] = 0.0
        for i in range(nn):
            _node_terms(GU[i], GW[i], nb, IN, SB)
        for p in range(nb):
            S[p0 + p] = SB[p]


@jit(inline="always", error_model="numpy")
def _node_terms(u, w, nb, IN, SB):
    """The terms of node (u, w) of :func:`_node_sums` added to the block's sums SB."""
    for p in range(nb):
        q = np.uint64(p)
        sn = sin_small(IN[2 * _BLK + q] + IN[3 * _BLK + q] * u)
        SB[q] += w * exp_inline((sn * IN[q] - IN[_BLK + q]) / ((1.0 - sn) * (1.0 + sn)))


@jit(error_model="numpy")
def _pan_class(h, k, r, omr, opr, idx, out):
    """out[idx[e]] for the items of |r| < 0.925 whose log-variation V exceeds 8: the 20-point
    rule on ⌈V/8⌉ panels of :func:`popdyn._kernels.bvn._bvn_lo`, each (item, panel) an item of
    the vectorized node loop (:func:`_node_sums`), the panel sums added per item in the panels'
    order; in pieces of at most :data:`_PIECE` panels (an item with more is one piece).  Items
    whose value :func:`bvn_cdf` would recompute from a positive-term form are left to it, as in
    :func:`_lo_class`."""
    n = idx.shape[0]
    if n == 0:
        return
    NP = np.empty(n, np.int64)
    ASR = np.empty(n)
    for e in range(n):
        i = idx[e]
        V, _ = _price_logvar_bf(h[i], k[i], r[i])
        NP[e] = int(V / 8.0) + 1
        ASR[e] = asin_corr(r[i], omr[i], opr[i])
    e0 = 0
    while e0 < n:
        e1 = e0
        tot = 0
        while e1 < n and (e1 == e0 or tot + NP[e1] <= _PIECE):
            tot += NP[e1]
            e1 += 1
        HK = np.empty(tot)
        HS = np.empty(tot)
        A0 = np.empty(tot)
        PW = np.empty(tot)
        it = 0
        for e in range(e0, e1):
            i = idx[e]
            hk = h[i] * k[i]
            hs = 0.5 * (h[i] * h[i] + k[i] * k[i])
            pw = ASR[e] / NP[e]
            for j in range(NP[e]):
                HK[it] = hk
                HS[it] = hs
                A0[it] = j * pw
                PW[it] = pw
                it += 1
        S = np.empty(tot)
        _node_sums(_GL20_U, _GL20_W, HK, HS, A0, PW, S)
        it = 0
        for e in range(e0, e1):
            i = idx[e]
            s = 0.0
            for j in range(NP[e]):
                s += S[it]
                it += 1
            base = norm_cdf(h[i]) * norm_cdf(k[i])
            v = base + s * (ASR[e] / NP[e]) / _TWOPI
            if r[i] < 0.0 and h[i] + k[i] < 0.0 and v < 0.25 * base:
                v = bvn_cdf(h[i], k[i], r[i], omr[i], opr[i])
            out[i] = v
        e0 = e1


@jit(error_model="numpy")
def _hi_class(h, k, r, omr, opr, idx, out):
    """out[idx[e]] for the items of the |r| ≥ 0.925 branch: K's remainder sums for all of them
    by :func:`popdyn._kernels.bvn._bvn_hi_rem_batch`, then per item the closed-form part and the
    branch of :func:`popdyn._kernels.bvn._bvn_err` with the refinements of :func:`bvn_cdf`."""
    n = idx.shape[0]
    if n == 0:
        return
    hh = np.empty(n)
    kk = np.empty(n)
    a2 = np.empty(n)
    for e in range(n):
        i = idx[e]
        hh[e] = h[i]
        kk[e] = k[i] if r[i] > 0.0 else -k[i]
        a2[e] = omr[i] * opr[i]
    num = np.empty(n)
    nmag = np.empty(n)
    _bvn_hi_rem_batch(hh, kk, a2, num, nmag)
    for e in range(n):
        i = idx[e]
        cf, mag = _bvn_hi_closed(hh[e], kk[e], a2[e])
        K, mag = _bvn_hi_combine(hh[e], kk[e], a2[e], cf, mag, num[e], nmag[e])
        v, _ = _bvn_err_hi(h[i], k[i], r[i], omr[i], opr[i], K, mag, True)
        out[i] = v


@jit
def bvn_cdf_batch(h, k, r, omr, opr, out):
    """out[i] = Φ₂(h[i], k[i]; r[i]) for 1-D float64 arrays of one length, vectorized over i.

    Parameters
    ----------
    h, k : ndarray
        Upper limits (may be ±inf or NaN).
    r : ndarray
        Correlations in [−1, 1].
    omr, opr : ndarray
        1 − r and 1 + r, supplied exactly by the caller (as for :func:`bvn_cdf`).
    out : ndarray
        Receives the values (may not alias the inputs).

    Notes
    -----
    Each item takes the branch, Gauss–Legendre rule and refinements of :func:`bvn_cdf`
    (Genz 2004, eq. (3) for |r| < 0.925 and his |r| ≥ 0.925 form); the values agree with it to
    the rounding of the vectorized elementary functions, within its stated accuracy (module
    docstring).  Single-threaded.  On the pairs of a biased ReLU student at initialization
    (single-panel rules) an item costs about half of a :func:`bvn_cdf` call
    (benchmarks/bench_bvn.py); the items left to :func:`bvn_cdf` cost what they cost there.
    """
    n = h.shape[0]
    cls = np.empty(n, np.int64)
    _classify(h, k, r, omr, opr, cls)
    start = np.zeros(7, np.int64)         # counting sort of the items by class
    for i in range(n):
        start[cls[i] + 1] += 1
    for c in range(6):
        start[c + 1] += start[c]
    order = np.empty(n, np.int64)
    pos = start[:6].copy()
    for i in range(n):
        c = cls[i]
        order[pos[c]] = i
        pos[c] += 1
    for c in range(3):
        _lo_class(h, k, r, omr, opr, order[start[c]:start[c + 1]], c, out)
    _hi_class(h, k, r, omr, opr, order[start[_CHI]:start[_CHI + 1]], out)
    _pan_class(h, k, r, omr, opr, order[start[_CPAN]:start[_CPAN + 1]], out)
    for e in range(start[_CSCALAR], start[_CSCALAR + 1]):
        i = order[e]
        out[i] = bvn_cdf(h[i], k[i], r[i], omr[i], opr[i])
