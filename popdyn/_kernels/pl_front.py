"""The pair loop's front: the one-pair arithmetic without branches, vectorized over pairs.

Branch-free twins (``_*_bf``) of :func:`popdyn._kernels.pl_pair._ramps_need`, ``_cond_parts``,
``_pair_linear_parts``, ``_ramp_frame`` and the Price form's log-variation compute both
alternatives of every data-dependent choice and select one (bit for bit the values of the
one-pair forms: tests/popdyn/test_plmoments_front.py).  :func:`_front_seg` runs them over the
consecutive pairs (i, j), (i, j + 1), … of a row, reading the units as a structure of arrays
(:func:`_unit_array`) and writing one column store FR (rows :data:`_FR_C` … of length
:data:`_LD`), a loop LLVM vectorizes; :func:`_front_rows` covers a chunk's pair list.
:data:`_CHUNK` is the number of pairs per chunk of the batched evaluation.
"""
import numpy as np

from ._jit import jit
from .pl_ramps import _HBIG, _ramps_bound


#: pairs per call of :func:`pl_batch._moments_list` (its scratch, ~70 doubles a pair, then stays in
#: the L2 cache and is reused instead of being faulted in afresh; the same bits -- every evaluation
#: is per pair)
_CHUNK = 1024
#: the row length of the scratch of :func:`pl_batch._moments_list` (rows of one column store per
#: quantity): _CHUNK + 8, not 2¹⁰ -- rows 8 KiB apart all map to the same sets of the L1 cache,
#: and the 18 streams of the Price pairs' columns (:func:`pl_batch._pc_store`) would thrash it)
_LD = _CHUNK + 8


# ---------------------------------------------- the pair loop's front, without branches
# Twins of _ramps_need, _cond_mean, _cond_parts, _pair_linear_parts, _ramp_frame and
# _exponent_range for the pair loop of _moments_list: the same operations on the same operands,
# but both alternatives of every data-dependent choice are computed and one is selected
# (``a if c else b`` of two computed values, which LLVM emits as a select): the signs of ρ, of
# the conditional means and of s_i s_j are random across pairs, so the branches of the one-pair
# forms are mispredicted about half the time.  Identical results (the selected value is the
# one the branch computes; tests/popdyn/test_plmoments_front.py).


@jit(inline="always")
def _ramps_need_bf(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R, eP, eSij, eSji, eR,
                   r0i, r0j, r1i, r1j, rtol, atol):
    """:func:`pl_pair._ramps_need` with the four tests all evaluated (no short circuit)."""
    n0 = abs(fC) * eR > rtol * abs(C + fC * R) + atol * r0i * r0j
    n1 = abs(fB) * eP > rtol * abs(B + fB * P) + atol * r1i * r1j
    n2 = abs(fDij) * eSij > rtol * abs(Dij + fDij * Sij) + atol * r1i * r0j
    n3 = abs(fDji) * eSji > rtol * abs(Dji + fDji * Sji) + atol * r1j * r0i
    return (n0 | n1) | (n2 | n3)


@jit(inline="always", error_model="numpy")
def _cond_parts_bf(p, q, b, ah, rho, omr, opr, tau):
    """(base, coef, w) of :func:`pl_pair._cond_parts` (p, q,
    :func:`pl_pair._cond_mean` (b, ah, ρ, 1 − ρ, 1 + ρ), tau), by selects (w = |μ|/τ is
    formed also where it is not used: τ = 0 gives inf or NaN there, never selected)."""
    mp_ = (b + ah) - omr * ah
    mn_ = (b - ah) + opr * ah
    mu = mp_ if rho >= 0.0 else mn_
    pos = mu > 0.0
    bp_ = (p + q) * mu
    bn_ = q * mu
    base = bp_ if pos else bn_
    am = mu if pos else -mu
    lin = (tau == 0.0) | (am > _HBIG * tau)
    ct = p * tau
    wt = am / tau
    coef = 0.0 if lin else ct
    w = 0.0 if lin else wt
    return base, coef, w


@jit(inline="always", error_model="numpy")
def _linear_parts_bf(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """:func:`pl_pair._pair_linear_parts` by selects: (C, B, Dij, Dji, fij, bij, cij, wij, fji, bji,
    cji, wji)."""
    (C, B, Dij, Dji, f1, b1, c1, w1, f2, b2, c2, w2,
     ui_, uj_) = _linear_parts_raw(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag)
    return (C, B, Dij, Dji,
            f1 if ui_ else 0.0, b1 if ui_ else 0.0, c1 if ui_ else 0.0, w1 if ui_ else 0.0,
            f2 if uj_ else 0.0, b2 if uj_ else 0.0, c2 if uj_ else 0.0, w2 if uj_ else 0.0)


@jit(inline="always", error_model="numpy")
def _linear_parts_raw(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """:func:`_linear_parts_bf` before its last selects: the A parts of both sides
    (f, base, coef, w) unmasked and the two masks (whether each A term is formed), so that the
    vectorized front (:func:`_front_seg`) stores them and the scalar pass selects (numba emits
    the eight selects on two conditions as branches, which stop LLVM's vectorizer)."""
    Pi, Qi, si, xi, pdi, H0i, H1i, H2i, phi_, mu0i, mu1i, mu2i, r0i, r1i = ui
    Pj, Qj, sj, xj, pdj, H0j, H1j, H2j, phj, mu0j, mu1j, mu2j, r0j, r1j = uj
    C0 = Qi * (bei * mu0j + ali * alj * rho * mu1j)
    B0 = Qi * mu1j
    Dij0 = Qi * mu0j
    Dji0 = Qj * mu0i
    nli = Pi != 0.0
    C1 = C0 + Pi * ali * Qj * (bej * H1i + alj * si * rho * H0i)
    B1 = B0 + Pi * si * H0i * Qj
    Dij1 = Dij0 + Pi * si * Qj * (bej * H0i + alj * si * rho * phi_)
    Dji1 = Dji0 + Pj * sj * Qi * (bei * H0j + ali * sj * rho * phj)
    C = C1 if nli else C0
    B = B1 if nli else B0
    Dij = Dij1 if nli else Dij0
    Dji = Dji1 if Pj != 0.0 else Dji0
    sg = np.sqrt(omr * opr)
    ui_ = (pdi != 0.0) & (not diag)
    uj_ = (pdj != 0.0) & (not diag)
    b1, c1, w1 = _cond_parts_bf(pj, qj, bej, alj * si * xi, rho, omr, opr, alj * sg)
    b2, c2, w2 = _cond_parts_bf(pi, qi, bei, ali * sj * xj, rho, omr, opr, ali * sg)
    f1 = pdi * phi_
    f2 = pdj * phj
    return C, B, Dij, Dji, f1, b1, c1, w1, f2, b2, c2, w2, ui_, uj_


@jit(inline="always")
def _ramp_frame_bf(Pi, si, Pj, sj, ali, alj, rho, omr, opr, diag):
    """:func:`pl_pair._ramp_frame` by selects."""
    ss = si * sj
    spos = ss > 0.0
    rt0 = rho if spos else -rho
    om0 = omr if spos else opr
    op0 = opr if spos else omr
    rt = 1.0 if diag else rt0
    om = 0.0 if diag else om0
    op = 2.0 if diag else op0
    return (rt, om, op, Pi * Pj * ali * alj, Pi * Pj * ss, Pi * si * Pj * alj,
            Pj * sj * Pi * ali)


@jit(inline="always", error_model="numpy")
def _price_logvar_bf(h, k, r):
    """(V, E_min) of :func:`pl_ramps._price_logvar` (:func:`popdyn._kernels.bvn._exponent_range`) by
    selects; |r| < 0.925 here."""
    hk = h * k
    hs = 0.5 * (h * h + k * k)
    e0 = -hs
    e1 = (r * hk - hs) / ((1.0 - r) * (1.0 + r))
    emax = max(e0, e1)
    emin = min(e0, e1)
    ah = abs(h)
    ak = abs(k)
    ts0 = min(ah, ak) / max(ah, ak)
    ts = -ts0 if hk < 0.0 else ts0
    inside = ((ah > 0.0) & (ak > 0.0)
              & (((r > 0.0) & (0.0 < ts) & (ts < r)) | ((r < 0.0) & (r < ts) & (ts < 0.0))))
    em2 = max(emax, -0.5 * max(ah, ak) ** 2)
    emax = em2 if inside else emax
    return emax - emin, emin


# rows of the front's scratch FR of :func:`pl_batch._moments_list` (:func:`_front_seg`): the linear
# parts and A parts (:func:`_linear_parts_bf`), the ramp frame (:func:`_ramp_frame_bf`), the bound's
# values (:func:`pl_ramps._ramps_bound`; its estimates equal them), the bound's test
# (:func:`_ramps_need_bf`, 1.0 or 0.0), the Price form's log-variation (:func:`_price_logvar_bf`),
# and the masks of the A parts (:func:`_linear_parts_raw`, 1.0 or 0.0; the A parts unmasked)
(_FR_C, _FR_B, _FR_DIJ, _FR_DJI, _FR_FIJ, _FR_BIJ, _FR_CIJ, _FR_WIJ, _FR_FJI, _FR_BJI, _FR_CJI,
 _FR_WJI, _FR_RT, _FR_OM, _FR_OP, _FR_FC, _FR_FB, _FR_FDIJ, _FR_FDJI, _FR_BP, _FR_BSIJ, _FR_BSJI,
 _FR_BR, _FR_NEED, _FR_V, _FR_EMIN, _FR_MIJ, _FR_MJI) = range(28)
_FR_N = 28
# rows of the units' structure of arrays UA (:func:`_unit_array`): the 14 fields of
# :func:`pl_pair._unit`, then p, q, α, β
_UA_N = 18


@jit
def _unit_array(U, p, q, al, be):
    """UA[f, j]: field f of unit j's canonical form U[j] (:func:`pl_pair._unit`, f < 14), and
    p, q, α, β in rows 14–17: the structure of arrays the vectorized front reads
    (:func:`_front_seg`)."""
    m = al.shape[0]
    UA = np.empty((_UA_N, m + 8))     # rows not 2^k apart (cache sets: see _LD)
    for j in range(m):
        u = U[j]
        for f in range(14):
            UA[f, j] = u[f]
        UA[14, j] = p[j]
        UA[15, j] = q[j]
        UA[16, j] = al[j]
        UA[17, j] = be[j]
    return UA


@jit(error_model="numpy")
def _front_seg(UA1, i, UA2, j0, RHO, OM, OP, DG, k0, e0, ne, rtol, atol, FR):
    """FR[f·_LD + e0 + t] (row f of the front's scratch) for the pairs (i, j0 + t) at k0 + t
    of the pair list, t < ne: the linear and A parts, the ramp frame, the bound and its test,
    and the Price form's log-variation, by the branch-free twins of the one-pair forms (the
    same operations on the same operands: the same bits).  Unit i is fixed and unit j runs over
    consecutive columns, so that every load and store is contiguous (or invariant) and LLVM
    vectorizes the loop (AVX2/AVX-512: packed vsqrtpd, vdivpd, blends; checked in
    tests/popdyn/test_plmoments_front.py).  The stores take unsigned indices (numba's
    wrap-around of negative indices leaves LLVM unable to bound them) into one flat array with
    rows of constant length :data:`_LD` (one pointer group for LLVM's run-time alias checks;
    with one array per row the checks were too many and the loop stayed scalar)."""
    ui = (UA1[0, i], UA1[1, i], UA1[2, i], UA1[3, i], UA1[4, i], UA1[5, i], UA1[6, i],
          UA1[7, i], UA1[8, i], UA1[9, i], UA1[10, i], UA1[11, i], UA1[12, i], UA1[13, i])
    pi = UA1[14, i]
    qi = UA1[15, i]
    ali = UA1[16, i]
    bei = UA1[17, i]
    for t in range(ne):
        j = j0 + t
        k = k0 + t
        e = e0 + t
        uj = (UA2[0, j], UA2[1, j], UA2[2, j], UA2[3, j], UA2[4, j], UA2[5, j], UA2[6, j],
              UA2[7, j], UA2[8, j], UA2[9, j], UA2[10, j], UA2[11, j], UA2[12, j], UA2[13, j])
        alj = UA2[16, j]
        rho = RHO[k]
        omr = OM[k]
        opr = OP[k]
        diag = DG[k]
        (c, b, dij, dji, fij, bij, cij, wij, fji, bji, cji, wji,
         mij, mji) = _linear_parts_raw(ui, pi, qi, ali, bei,
                                       uj, UA2[14, j], UA2[15, j], alj, UA2[17, j],
                                       rho, omr, opr, diag)
        rt, om, op, fC, fB, fDij, fDji = _ramp_frame_bf(ui[0], ui[2], uj[0], uj[2],
                                                        ali, alj, rho, omr, opr, diag)
        (P, Sij, Sji, R, eP, eSij, eSji, eR) = _ramps_bound(ui[5], ui[6], ui[7],
                                                            uj[5], uj[6], uj[7])
        need = _ramps_need_bf(fC, fB, fDij, fDji, c, b, dij, dji, P, Sij, Sji, R,
                              eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol)
        V, emin = _price_logvar_bf(ui[3], uj[3], rt)
        FR[np.uint64(_FR_C * _LD + e)] = c
        FR[np.uint64(_FR_B * _LD + e)] = b
        FR[np.uint64(_FR_DIJ * _LD + e)] = dij
        FR[np.uint64(_FR_DJI * _LD + e)] = dji
        FR[np.uint64(_FR_FIJ * _LD + e)] = fij
        FR[np.uint64(_FR_BIJ * _LD + e)] = bij
        FR[np.uint64(_FR_CIJ * _LD + e)] = cij
        FR[np.uint64(_FR_WIJ * _LD + e)] = wij
        FR[np.uint64(_FR_FJI * _LD + e)] = fji
        FR[np.uint64(_FR_BJI * _LD + e)] = bji
        FR[np.uint64(_FR_CJI * _LD + e)] = cji
        FR[np.uint64(_FR_WJI * _LD + e)] = wji
        FR[np.uint64(_FR_RT * _LD + e)] = rt
        FR[np.uint64(_FR_OM * _LD + e)] = om
        FR[np.uint64(_FR_OP * _LD + e)] = op
        FR[np.uint64(_FR_FC * _LD + e)] = fC
        FR[np.uint64(_FR_FB * _LD + e)] = fB
        FR[np.uint64(_FR_FDIJ * _LD + e)] = fDij
        FR[np.uint64(_FR_FDJI * _LD + e)] = fDji
        FR[np.uint64(_FR_BP * _LD + e)] = P
        FR[np.uint64(_FR_BSIJ * _LD + e)] = Sij
        FR[np.uint64(_FR_BSJI * _LD + e)] = Sji
        FR[np.uint64(_FR_BR * _LD + e)] = R
        FR[np.uint64(_FR_NEED * _LD + e)] = 1.0 if need else 0.0
        FR[np.uint64(_FR_V * _LD + e)] = V
        FR[np.uint64(_FR_EMIN * _LD + e)] = emin
        FR[np.uint64(_FR_MIJ * _LD + e)] = 1.0 if mij else 0.0
        FR[np.uint64(_FR_MJI * _LD + e)] = 1.0 if mji else 0.0


@jit
def _front_rows(UA1, UA2, I, J, RHO, OM, OP, DG, rtol, atol, FR):
    """FR[f·_LD + k] for every pair k of the list (I, J, RHO, OM, OP, DG) of
    :func:`pl_batch._moments_list`:
    :func:`_front_seg` on its runs of consecutive pairs (i, j), (i, j + 1), … (the rows of
    :func:`pl_chunks._chunk_index`)."""
    n = I.shape[0]
    k = 0
    while k < n:
        i = I[k]
        j0 = J[k]
        e = k + 1
        while e < n and I[e] == i and J[e] == J[e - 1] + 1:
            e += 1
        _front_seg(UA1, i, UA2, j0, RHO, OM, OP, DG, k, k, e - k, rtol, atol, FR)
        k = e
