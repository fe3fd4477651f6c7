"""Pair moments of a list of pairs at once: the batched evaluation with deferred work.

:func:`_moments_list` takes every pair through the evaluators of
:func:`popdyn._kernels.pl_pair._pair_moments` in the same order, after the branch-free front
(:func:`popdyn._kernels.pl_front._front_rows`).  The three expensive kinds of evaluation are
deferred and done for all deferred pairs together in loops LLVM vectorizes: the Price forms
(:func:`_price_batch` and :func:`_finish_price`, the deferred pairs' columns in the store of
:func:`_pc_store_a`), the remainder sum of Genz's |r| ≥ 0.925 rule in the closed forms
(:func:`_finish_direct`) and Hh₁ of the A terms.  A deferred pair whose estimate then misses
the target continues on the one-pair path (the rest list, :func:`_rest_push`).  Results equal
those of the one-pair path to rounding (tests/popdyn/test_vmath.py, test_plmoments.py).
:func:`_list_scratch` allocates the workspaces of one chunk of pairs.
"""
import math

import numpy as np

from ._jit import jit
from .bvn import (_GL12_U, _GL12_W, _GL20_U, _GL20_W, _GL6_U, _GL6_W, _bvn_err_hi, _bvn_hi_case,
                  _bvn_hi_closed, _bvn_hi_combine, _bvn_hi_rem_batch, hh1_batch)
from .pl_front import (_FR_B, _FR_BIJ, _FR_BJI, _FR_BP, _FR_BR, _FR_BSIJ, _FR_BSJI, _FR_C, _FR_CIJ,
                       _FR_CJI, _FR_DIJ, _FR_DJI, _FR_EMIN, _FR_FB, _FR_FC, _FR_FDIJ, _FR_FDJI,
                       _FR_FIJ, _FR_FJI, _FR_MIJ, _FR_MJI, _FR_N, _FR_NEED, _FR_OM, _FR_OP, _FR_RT,
                       _FR_V, _FR_WIJ, _FR_WJI, _LD, _front_rows, _ramps_need_bf)
from .pl_pair import _ramp_frame, _ramps_need, _ramps_rest_after_direct
from .pl_ramps import (_PRICE_RMAX, _price_assemble, _price_num, _price_num_coeffs, _price_rule,
                       _ramps_direct, _ramps_direct_with)
from .vmath import exp_inline, sin_small as _sin_vec


# ------------------------------------------------------------------ many pairs at once
#: items per block of :func:`_price_batch` (its scratch rows; not 2^k apart, see
#: :data:`pl_front._LD`)
_PB = 256
_PBL = _PB + 8


@jit(error_model="numpy")
def _price_batch(GU, GW, x, y, rt, a0, pw, out):
    """out[p, :] = the 7 sums of :func:`pl_ramps._price_sum` (GU, GW; x[p], y[p], rt[p], a0[p],
    pw[p]) for all p: the same operations in the same order, with the sine in Estrin's
    form (:func:`popdyn._kernels.vmath.sin_small`) and the exponential of
    :func:`popdyn._kernels.vmath.exp_inline` (within 2 ulp; the bits of ``exp_batch``).

    One pass per node over a block of :data:`_PB` items (sine, exponent, exponential and the
    six sums fused): the items' inputs and the sums are rows of two flat arrays with
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
    the order of :func:`pl_ramps._price_sum` (unsigned indices: no wrap-around, which would keep
    LLVM from bounding the accesses)."""
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
    """Pair k's ramp values meet the target (:func:`pl_pair._ramps_need`): write them into out[k];
    otherwise push them on the rest list.  Returns the rest list's length."""
    if _ramps_need(fC, fB, fDij, fDji, c, b, dij, dji, P, Sij, Sji, R,
                   eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol):
        return _rest_push(RK, RV, RD, nr, k, P, Sij, Sji, R, eP, eSij, eSji, eR, done_direct)
    _ramps_add(out, k, c, b, dij, dji, fC, fB, fDij, fDji, P, Sij, Sji, R)
    return nr


@jit(inline="always")
def _pair_at(U1, al1, U2, al2, I, J, RHO, OM, OP, DG, out, k):
    """Pair k of the list of :func:`_moments_list`: the canonical forms (ui, uj) of its units,
    its ramp frame (:func:`pl_pair._ramp_frame`: r̃, 1 − r̃, 1 + r̃, fC, fB, fDij, fDji) and its
    linear parts so far (out[k]: C, B, Dij, Dji), for the deferred evaluations to continue from."""
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


@jit(error_model="numpy")
def _moments_list(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, UA1, UA2, I, J, RHO, OM, OP,
                  DG, rtol, atol, qtol, maxint, out, WS, WI, WB):
    """:func:`pl_pair._pair_moments` for the pairs (U1[I[k]], U2[J[k]]) with ρ, 1 − ρ, 1 + ρ, diag =
    RHO[k], OM[k], OP[k], DG[k]; out[k] = (C, B, Aij, Aji, Dij, Dji).

    The same evaluators in the same order, but three kinds of evaluation are deferred and done for
    all pairs together, vectorized over the pairs: the Price forms (per Gauss–Legendre rule, panels
    as items; :func:`_finish_price`), the closed forms at |r̃| ≥ 0.925 (Genz's remainder sums;
    :func:`_finish_direct`) and Hh₁ of the A terms (``hh1_batch``).  Pairs whose estimate still
    misses the target go on a rest list and continue exactly as in :func:`pl_pair._pair_moments`
    (closed forms if not yet tried, then :func:`pl_pair._ramps_rest_after_direct`), from one call
    site.
    """
    n = I.shape[0]                     # ≤ _CHUNK
    # the scratch, views of the workspaces WS, WI, WB of :func:`_list_scratch` (allocated once
    # per call of :func:`pl_chunks._moments_chunked`, not afresh per chunk)
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
    # (:func:`pl_front._front_rows`), then the choice of the next evaluator and the deferral lists
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
                else:       # 20 points on ⌈V/8⌉ panels (:func:`pl_ramps._price_panels`)
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
    """:func:`_pc_store` from the units' arrays (:func:`pl_front._unit_array`) and the front's
    scratch FR (:func:`pl_front._front_seg`) of pair k = (i, j)."""
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
    """S7[c, d] = the 7 node sums of :func:`pl_ramps._price_sum` of deferred pair d, times the panel
    width for ⌈V/8⌉ panels (:func:`pl_ramps._price_panels`), SC[d] the factor of
    :func:`pl_ramps._price_assemble`: per rule one vectorized call of :func:`_price_batch` over
    (pair, panel) items, the items of all rules laid out in one pass (rule by rule, pairs in
    order)."""
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
    (:func:`_price_node_sums`), then the Price form (:func:`pl_ramps._price_assemble`) and the test
    of its estimate (:func:`pl_pair._ramps_need`) in loops over the pairs' columns (PC,
    :func:`_pc_store`); a pair whose estimate misses the target is pushed on the rest list.  Returns
    its length.

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


@jit
def _list_scratch():
    """The workspaces (float64, int64, bool) of :func:`_moments_list` for chunks of at most
    :data:`pl_front._CHUNK` pairs (its deferral lists, the Price pairs' columns, the rest list, the
    front's scratch)."""
    return (np.empty((39 + _FR_N) * _LD), np.empty(7 * _LD, np.int64),
            np.empty(_LD, np.bool_))
