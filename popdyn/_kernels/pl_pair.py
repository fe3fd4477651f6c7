"""Single PL units and the moments of one pair of units.

:func:`_unit` puts a unit σ(t) = p·relu(t) + q·t, t = α θ·x + β, in its canonical form
σ = P·α·g + Q·t with a tail-side ramp g (:mod:`popdyn._kernels.plmoments`); :func:`pl_units`
does so for a set, :func:`pl_first_moments` gives E[σ], E[σ'], E[σ σ].  For one pair,
:func:`_pair_linear_parts` integrates the linear parts exactly (Stein's lemma) and the A terms
through the conditional law tⱼ | tᵢ = 0; :func:`_pair_moments` adds the ramp–ramp part by the
evaluators of :mod:`popdyn._kernels.pl_ramps`, each tried in turn until its error estimate
meets the target (:func:`_ramps_need`, :func:`_ramps_rest`).  :func:`pl_self_moments_pairwise`
runs this one-pair path over all pairs of one set: the reference of the batched evaluation
(:mod:`popdyn._kernels.pl_batch`).
"""
import math

from ._jit import jit
from .bvn import hh1_pos, mills3, norm_hh
from .eft import two_prod as _two_prod
from .pl_ramps import (ATOL, MAXINT, QTOL, RTOL, _HBIG, _INV_SQRT2PI, _PRICE_OMMIN, _PRICE_RMAX,
                       _REFLECT, _ramps_aligned, _ramps_bound, _ramps_direct, _ramps_price,
                       _ramps_price_anti, _ramps_price_checked, _ramps_quad)


# ----------------------------------------------------------------------------- single units
@jit
def _h_phi(be, al):
    """h = β/α rounded, and φ(β/α) with the exact quotient: the rounding of h is not amplified
    by the exponent (|h| up to 38: relative error a few ulp instead of h²·eps)."""
    h = be / al
    p, e = _two_prod(h, al)
    d = ((be - p) - e) / al        # β/α = h + d
    s, t = _two_prod(h, h)         # h² = s + t
    # φ = exp(−s/2) · exp(−(t/2 + h d)), s/2 exact
    return h, math.exp(-0.5 * s) * math.exp(-(0.5 * t + h * d)) * _INV_SQRT2PI


@jit
def _unit(p, q, al, be):
    """Canonical form of one unit.

    Returns (P, Q, s, x, pd, H0, H1, H2, ph, mu0, mu1, mu2, rms0, rms1):
    σ = P·α·(Z̃ − x)₊ + Q·t with Z̃ = s·θ·x; pd·φ(x) = E[ασ''] weight (0 for a linear unit);
    Hh_n(x), φ(x); first moments μ0 = E[σ], μ1 = E[σ'], μ2 = E[ασ'']; RMS of σ and σ'.
    Linear units (α = 0, or |β| > 40α, or p = 0) have P = 0, Q = L with σ = L·t exactly.
    """
    if al > 0.0 and abs(be) <= _HBIG * al and p != 0.0:
        h = be / al
        if h <= _REFLECT:
            s = 1.0
            x = -h
            Q = q
        else:
            s = -1.0
            x = h
            Q = p + q
        P = p
        h, ph = _h_phi(be, al)
        if x >= 0.0:
            t0, t1, t2 = mills3(x)
            H0 = ph * t0
            H1 = ph * t1
            H2 = ph * t2
        else:
            H0, H1, H2 = norm_hh(x)
        mu0 = P * al * H1 + Q * be
        mu1 = P * s * H0 + Q
        mu2 = p * ph
        c = P * P + 2.0 * s * P * Q
        rms0 = al * math.sqrt(max(0.0, 2.0 * H2 * c + Q * Q * (1.0 + x * x)))
        rms1 = math.sqrt(max(0.0, H0 * c + Q * Q))
        return P, Q, s, x, p, H0, H1, H2, ph, mu0, mu1, mu2, rms0, rms1
    # linear (or constant) unit: σ = L t, σ' = L
    if be > 0.0:
        L = p + q
    else:
        L = q
    return (0.0, L, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, L * be, L, 0.0,
            abs(L) * math.hypot(al, be), abs(L))


@jit
def pl_units(p, q, al, be):
    """The canonical forms (:func:`_unit`) of the units (p[i], q[i], al[i], be[i]), as a list:
    computed once per set and shared by :func:`pl_chunks.pl_self_moments_units`,
    :func:`pl_chunks.pl_pair_moments_units` and :func:`pl_first_moments_units` (the fused GD step
    needs all three for the same student units)."""
    return [_unit(p[i], q[i], al[i], be[i]) for i in range(al.shape[0])]


@jit
def pl_first_moments(p, q, al, be, mu0, mu1, mu2):
    """First moments per unit: mu0 = E[σ], mu1 = E[σ'], mu2 = E[ασ''] = p φ(β/α) (0 if α = 0).

    Parameters are float64 arrays of one length m; the results are written into mu0, mu1, mu2.
    Full relative accuracy also in the tails (E[relu] = α Hh₁(|h|) + ... via stable ramp
    moments, not φ(h) + hΦ(h)).
    """
    pl_first_moments_units(pl_units(p, q, al, be), mu0, mu1, mu2)


@jit
def pl_first_moments_units(U, mu0, mu1, mu2):
    """:func:`pl_first_moments` from the units' canonical forms U (:func:`pl_units`)."""
    for i in range(len(U)):
        u = U[i]
        mu0[i] = u[9]
        mu1[i] = u[10]
        mu2[i] = u[11]


# --------------------------------------------------------------------------- one pair
@jit
def _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R, eP, eSij, eSji, eR,
                r0i, r0j, r1i, r1j, rtol, atol):
    """True if an estimated ramp error could exceed rtol·|moment| + atol·scale."""
    return (abs(fC) * eR > rtol * abs(C + fC * R) + atol * r0i * r0j
            or abs(fB) * eP > rtol * abs(B + fB * P) + atol * r1i * r1j
            or abs(fDij) * eSij > rtol * abs(Dij + fDij * Sij) + atol * r1i * r0j
            or abs(fDji) * eSji > rtol * abs(Dji + fDji * Sji) + atol * r1j * r0i)


@jit(inline="always")
def _cond_mean(b, ah, rho, omr, opr):
    """b + ρ·ah (ah = α_j·Z₁ at the conditioning point Z₁ = −h_i), as b + ah − (1−ρ)ah for
    ρ ≥ 0 and b − ah + (1+ρ)ah for ρ < 0, so that ρ near ±1 adds no rounding."""
    if rho >= 0.0:
        return (b + ah) - omr * ah
    return (b - ah) + opr * ah


@jit(inline="always")
def _cond_parts(p, q, mu, tau):
    """E[p relu(T) + q T] for T ~ N(mu, tau²) as base + coef·Hh₁(w), the ramp always taken on
    its tail side (w ≥ 0; coef = 0 when the ramp term vanishes in float64)."""
    if mu > 0.0:
        if tau == 0.0 or mu > _HBIG * tau:
            return (p + q) * mu, 0.0, 0.0
        return (p + q) * mu, p * tau, mu / tau
    if tau == 0.0 or -mu > _HBIG * tau:
        return q * mu, 0.0, 0.0
    return q * mu, p * tau, -mu / tau


@jit(inline="always")
def _pair_linear_parts(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """The parts of the pair moments that need no ramp–ramp term: Stein's lemma on the linear
    parts, and A from the conditional law, A = f·(base + coef·Hh₁(w)) (:func:`_cond_parts`).
    Returns (C, B, Dij, Dji, (f, base, coef, w) of Aij, the same of Aji)."""
    Pi, Qi, si, xi, pdi, H0i, H1i, H2i, phi_, mu0i, mu1i, mu2i, r0i, r1i = ui
    Pj, Qj, sj, xj, pdj, H0j, H1j, H2j, phj, mu0j, mu1j, mu2j, r0j, r1j = uj
    # linear parts (Stein): E[t_i g(t_j)] = β_i E[g] + α_i α_j ρ E[g']
    C = Qi * (bei * mu0j + ali * alj * rho * mu1j)
    B = Qi * mu1j
    Dij = Qi * mu0j
    Dji = Qj * mu0i
    fij = bij = cij = wij = 0.0
    fji = bji = cji = wji = 0.0
    if Pi != 0.0:
        C += Pi * ali * Qj * (bej * H1i + alj * si * rho * H0i)
        B += Pi * si * H0i * Qj
        Dij += Pi * si * Qj * (bej * H0i + alj * si * rho * phi_)
    if Pj != 0.0:
        Dji += Pj * sj * Qi * (bei * H0j + ali * sj * rho * phj)
    if not diag and (pdi != 0.0 or pdj != 0.0):
        sg = math.sqrt(omr * opr)
        if pdi != 0.0:   # E[σ_j | t_i = 0]: t_j ~ N(β_j − α_j ρ h_i, (α_j σ)²)
            fij = pdi * phi_
            bij, cij, wij = _cond_parts(pj, qj, _cond_mean(bej, alj * si * xi, rho, omr, opr),
                                        alj * sg)
        if pdj != 0.0:
            fji = pdj * phj
            bji, cji, wji = _cond_parts(pi, qi, _cond_mean(bei, ali * sj * xj, rho, omr, opr),
                                        ali * sg)
    return C, B, Dij, Dji, (fij, bij, cij, wij), (fji, bji, cji, wji)


@jit(inline="always")
def _a_value(a):
    """A = f·(base + coef·Hh₁(w)) from the parts of :func:`_pair_linear_parts`."""
    f, base, coef, w = a
    if coef == 0.0:
        return f * base
    return f * (base + coef * hh1_pos(w))


@jit
def _pair_linear(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag):
    """The parts of the pair moments that need no ramp–ramp term (Stein's lemma on the linear
    parts, and A from the conditional law).  Returns (C, B, Aij, Aji, Dij, Dji)."""
    C, B, Dij, Dji, aij, aji = _pair_linear_parts(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej,
                                                  rho, omr, opr, diag)
    return C, B, _a_value(aij), _a_value(aji), Dij, Dji


@jit(inline="always")
def _ramp_frame(ui, uj, ali, alj, rho, omr, opr, diag):
    """(r̃, 1 − r̃, 1 + r̃, fC, fB, fDij, fDji): correlation of the two canonical ramps and the
    factors with which the ramp–ramp terms R̃, P̃, S̃ij, S̃ji enter C, B, Dij, Dji."""
    Pi, si = ui[0], ui[2]
    Pj, sj = uj[0], uj[2]
    ss = si * sj
    if diag:
        rt = 1.0
        om = 0.0
        op = 2.0
    elif ss > 0.0:
        rt = rho
        om = omr
        op = opr
    else:
        rt = -rho
        om = opr
        op = omr
    return (rt, om, op, Pi * Pj * ali * alj, Pi * Pj * ss, Pi * si * Pj * alj,
            Pj * sj * Pi * ali)


@jit
def _ramps_rest(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint):
    """The evaluators after the bound and the Price form, while ``need`` (the estimated error
    of the current values exceeds the target): the closed forms, the separated forms at
    |r̃| → 1, the checked Price form (|r̃| < 1 − 1e−3), the quadrature as the safety net.
    Returns (P̃, S̃ij, S̃ji, R̃)."""
    if need:
        (P, Sij, Sji, R,
         eP, eSij, eSji, eR) = _ramps_direct(ui[3], uj[3], rt, om, op, ui[8], uj[8],
                                            ui[5], ui[6], ui[7], uj[5], uj[6], uj[7])
    return _ramps_rest_after_direct(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                                    fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint)


@jit
def _ramps_rest_after_direct(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                             fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint):
    """:func:`_ramps_rest` after the closed forms (``need``: they were evaluated)."""
    xi, H0i, H1i, H2i, phi_, r0i, r1i = ui[3], ui[5], ui[6], ui[7], ui[8], ui[12], ui[13]
    xj, H0j, H1j, H2j, phj, r0j, r1j = uj[3], uj[5], uj[6], uj[7], uj[8], uj[12], uj[13]
    if om > 0.0 and op > 0.0:
        if need:
            need = _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R,
                               eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol)
        if need and (om < 1.0 - _PRICE_RMAX or op < 1.0 - _PRICE_RMAX):
            (P2, Sij2, Sji2, R2, eP, eSij, eSji, eR,
             ok) = _ramps_aligned(xi, xj, rt, om, op, phi_, phj, H0i, H1i, H2i, H0j, H1j, H2j)
            if ok and not _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P2, Sij2, Sji2, R2,
                                      eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol):
                P, Sij, Sji, R = P2, Sij2, Sji2, R2
                need = False
        if need and min(om, op) > _PRICE_OMMIN:
            (P2, Sij2, Sji2, R2,
             eP, eSij, eSji, eR) = _ramps_price_checked(xi, xj, rt, phi_, phj,
                                                        H0i, H1i, H0j, H1j)
            if not _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P2, Sij2, Sji2, R2,
                               eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol):
                P, Sij, Sji, R = P2, Sij2, Sji2, R2
                need = False
        if need and rt < 0.0 and xi + xj > 0.0:
            (P2, Sij2, Sji2, R2,
             eP, eSij, eSji, eR) = _ramps_price_anti(xi, xj, rt, om, op)
            if not _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P2, Sij2, Sji2, R2,
                               eP, eSij, eSji, eR, r0i, r0j, r1i, r1j, rtol, atol):
                P, Sij, Sji, R = P2, Sij2, Sji2, R2
                need = False
        if need:
            if xi >= xj:
                P, Sij, Sji, R = _ramps_quad(xi, xj, rt, om, op, phi_, qtol, maxint)
            else:
                P, Sji, Sij, R = _ramps_quad(xj, xi, rt, om, op, phj, qtol, maxint)
    return P, Sij, Sji, R


@jit
def _pair_moments(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej, rho, omr, opr, diag,
                  rtol, atol, qtol, maxint):
    """All pair moments of unit i (set 1) and unit j (set 2).  Returns (C, B, Aij, Aji, Dij, Dji).

    ``diag``: the two units are the same unit (ρ = 1 exactly, A = 0).  A negligible ramp–ramp term
    is bounded, not computed (:func:`pl_ramps._ramps_bound`); otherwise the Price form (|r̃| <
    0.925; positive terms in the tails), then :func:`_ramps_rest`.
    """
    C, B, Aij, Aji, Dij, Dji = _pair_linear(ui, pi, qi, ali, bei, uj, pj, qj, alj, bej,
                                            rho, omr, opr, diag)
    if ui[0] != 0.0 and uj[0] != 0.0:
        rt, om, op, fC, fB, fDij, fDji = _ramp_frame(ui, uj, ali, alj, rho, omr, opr, diag)
        (P, Sij, Sji, R, eP, eSij, eSji, eR) = _ramps_bound(ui[5], ui[6], ui[7],
                                                            uj[5], uj[6], uj[7])
        need = _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R,
                           eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol)
        if need and om > 1.0 - _PRICE_RMAX and op > 1.0 - _PRICE_RMAX:
            (P, Sij, Sji, R,
             eP, eSij, eSji, eR) = _ramps_price(ui[3], uj[3], rt, ui[8], uj[8],
                                                ui[5], ui[6], uj[5], uj[6])
            need = _ramps_need(fC, fB, fDij, fDji, C, B, Dij, Dji, P, Sij, Sji, R,
                               eP, eSij, eSji, eR, ui[12], uj[12], ui[13], uj[13], rtol, atol)
        P, Sij, Sji, R = _ramps_rest(need, P, Sij, Sji, R, eP, eSij, eSji, eR, ui, uj, rt, om, op,
                                     fC, fB, fDij, fDji, C, B, Dij, Dji, rtol, atol, qtol, maxint)
        C += fC * R
        B += fB * P
        Dij += fDij * Sij
        Dji += fDji * Sji
    return C, B, Aij, Aji, Dij, Dji


@jit
def pl_self_moments_pairwise(p, q, al, be, R, OMR, OPR, C, B, A, D,
                             rtol=RTOL, atol=ATOL, qtol=QTOL, maxint=MAXINT):
    """:func:`pl_chunks.pl_self_moments` one pair at a time (:func:`_pair_moments`, scalar
    evaluators): the reference of the batched evaluation in tests/popdyn/test_vmath.py and the
    baseline of benchmarks/bench_pairs.py."""
    m = al.shape[0]
    U = [_unit(p[j], q[j], al[j], be[j]) for j in range(m)]
    for i in range(m):
        for j in range(i, m):
            diag = i == j
            if diag:
                rho, om, op = 1.0, 0.0, 2.0
            else:
                rho, om, op = R[i, j], OMR[i, j], OPR[i, j]
            c, b, aij, aji, dij, dji = _pair_moments(U[i], p[i], q[i], al[i], be[i],
                                                     U[j], p[j], q[j], al[j], be[j],
                                                     rho, om, op, diag,
                                                     rtol, atol, qtol, maxint)
            C[i, j] = c
            C[j, i] = c
            B[i, j] = b
            B[j, i] = b
            A[i, j] = aij
            A[j, i] = aji
            D[i, j] = dij
            D[j, i] = dji
