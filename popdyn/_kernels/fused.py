"""Fused loss-and-gradient kernel and fixed-step GD loop for piecewise-linear students.

The experiments spend almost all their time in population gradient descent of relu / leaky-relu
students (with biases) against additive-link or PL-network teachers.  Evaluated through the
general dispatcher (:func:`popdyn.objective.loss_and_grad`), one evaluation at m = 32 costs
≈ 1 ms, most of it Python-level set-up around kernels that take a fraction of that.  This module
evaluates the same formulas with the same kernels in one compiled call, and runs whole stretches
of gradient descent (between two snapshots) inside numba.

Formulas (DESIGN §3, :mod:`popdyn.objective`): with student units σ_j(α_j θ_j·x + β_j), teacher
units t_k (directions θ*_k, scales α*_k, offsets β*_k, weights v_k; an additive link f is the
unit f(u_k·x) with α* = 1, β* = 0, split into its PL part p relu + q id and its Hermite part)

    L      = ½ (s² aᵀCa + 2sc aᵀμ0 + c² − 2(s aᵀCᵀv + c E[y]) + E[y²])
    ∂L/∂a  = s (s C a + c μ0 − Cᵀ v)            ∂L/∂c = s aᵀμ0 + c − E[y]
    ∂L/∂b  = s a ∘ (s D a + c μ1 − Dᵀ v)
    ∂L/∂W  = s a ∘ [ θ ∘ (s Ã a + c μ2 − Ãᵀ v) + s B (a ∘ W) − Bᵀ (v ∘ α*θ*) ]

Student–student moments: :func:`popdyn._kernels.plmoments.pl_self_moments`; PL cross moments:
:func:`~popdyn._kernels.plmoments.pl_pair_moments` (both, and the first moments, from the
student units' canonical forms computed once per step); Hermite cross moments: the closed-form unit
coefficients :func:`popdyn._kernels.hermite.pl_coeffs` to the link's order N and the Mehler
sums :func:`popdyn._kernels.mehler.mehler` — exactly the kernels, orders and tolerances of the
general path (:mod:`popdyn._moments`), so the two agree to
rounding (tests/popdyn/test_fused.py compares them, and the integrators' trajectories).

References
----------
Central seed paper (../shared/seeds/003_40ccf210d3358dbe.txt), population objective; DESIGN §3–§4.
"""
import math

import numpy as np

from ._jit import jit
from .geometry import pair_geometry, pair_geometry_self
from .bvn import norm_pdf
from .hermite import pl_coeffs, relu_moments01
from .plmoments import (ATOL, MAXINT, QTOL, RTOL, pl_first_moments_units,
                        pl_pair_moments_units, pl_self_moments_units, pl_units)

__all__ = ["pl_loss_grad", "pl_gd"]

# status codes of pl_gd
# (DIVERGED_STEP: the proposal itself was not finite, so it was not evaluated)
RUNNING, CONVERGED, DIVERGED, DIVERGED_STEP = 0, 1, 2, 3


@jit
def _directions(W, al, th, ok):
    m, d = W.shape
    for i in range(m):
        s = 0.0
        for k in range(d):
            s += W[i, k] * W[i, k]
        a = math.sqrt(s)
        al[i] = a
        ok[i] = a > 0.0
        for k in range(d):
            th[i, k] = W[i, k] / a if a > 0.0 else 0.0


@jit(error_model="numpy")
def _hermite_cross(p, q, al, be, Rt, H, dH, L1, ttol, Ct, Bt, At, Dt):
    """Add the Mehler sums of PL student units against the Hermite part (H, dH) of a link.

    Ct += Σ_n S_i[n] H[n] ρ^n, Dt += Σ Dd_i H ρ^n, At += Σ Dd2_i H ρ^n, Bt += Σ Dd_i dH ρ^n
    (closed-form unit coefficients :func:`popdyn._kernels.hermite.pl_coeffs`), each unit's sums
    truncated at its own order N_i ≤ N: the smallest n with r^{n+1}·L1[n] ≤ ``ttol``, r the
    unit's largest |ρ| against the teacher units.  Every coefficient of a unit is bounded by
    E_i = max(α_i, 1)·|p|·K·φ(0)·e^{−h_i²/4} (Cramér, K = 1.086435; n ≥ 2), so the terms dropped
    are at most E_i·ttol — with ``ttol`` = 1e−17·max(1, RMS of the Hermite part and of its
    derivative), the level at which the general path truncates the link table itself (at r = 1,
    N_i = N).  Weakly correlated units (r ≈ 0.1 at small initialization) need N_i ≈ 17 instead
    of N ≈ 217 (SiLU).  Orders below 2 are never cut (the n ≤ 1 terms carry the linear part).

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
            _hermite_cross_unit(p, q, al, be, Rt, H, dH, NI[i], i, Ct, Bt, At, Dt)
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
            Dt[i, j] += c1a[u]
            At[i, j] += c2a[u]
            Bt[i, j] += c3a[u]


@jit
def _hermite_cross_unit(p, q, al, be, Rt, H, dH, Ni, i, Ct, Bt, At, Dt):
    """:func:`_hermite_cross` for unit i alone (scalar path: degenerate or far-tail units)."""
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
        Dt[i, j] += dd
        At[i, j] += aa
        Bt[i, j] += bb


@jit
def pl_loss_grad(p, q, s, a, W, b, c, bias, intercept,
                 tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
                 ga, gW, gb):
    """L and its gradient for a PL student (σ = p relu + q id) against PL / additive teacher units.

    Parameters
    ----------
    p, q, s : float
        Student activation shape and output scale.
    a, W, b, c : (m,), (m, d), (m,), float
        Student parameters (b is read only when ``bias``).
    bias, intercept : bool
        Whether b and c are trainable (otherwise their gradient is 0).
    tth, tok, tal, tbe : (k, d), (k,) bool, (k,), (k,)
        Teacher unit directions, non-degeneracy flags, scales α* and offsets β*.
    tp, tq : (k,)
        PL shape of the teacher units (the link's PL part for an additive teacher).
    tpl : bool
        Whether the teacher units have a PL part at all.
    H, dH : (N+1,)
        Hermite part of an additive link and of its derivative (normalized coefficients;
        N + 1 = 0 for none), already truncated at the general path's order.
    L1, ttol : (N+1,), float
        L1[n] = Σ_{n < n' ≤ N} max(|H[n']|, |dH[n']|) and the per-pair truncation target
        (see :func:`_hermite_cross`).
    v, UT : (k,), (k, d)
        Teacher weights and α*θ* (rows).
    ey, ey2 : float
        E[y] and E[y²].
    ga, gW, gb : outputs, overwritten.

    Returns
    -------
    (L, ∂L/∂c)
    """
    m, d = W.shape
    k = tth.shape[0]
    al = np.empty(m)
    th = np.empty((m, d))
    ok = np.empty(m, dtype=np.bool_)
    _directions(W, al, th, ok)
    be = b.copy() if bias else np.zeros(m)
    pv = np.full(m, p)
    qv = np.full(m, q)
    # student–student
    R = th @ th.T
    OMR = np.empty((m, m))
    OPR = np.empty((m, m))
    pair_geometry_self(th, ok, R, OMR, OPR)
    C = np.empty((m, m))
    B = np.empty((m, m))
    A = np.empty((m, m))
    D = np.empty((m, m))
    U = pl_units(pv, qv, al, be)        # once for the self, first and PL cross moments
    pl_self_moments_units(U, pv, qv, al, be, R, OMR, OPR, C, B, A, D, RTOL, ATOL, QTOL, MAXINT)
    mu0 = np.empty(m)
    mu1 = np.empty(m)
    mu2 = np.empty(m)
    pl_first_moments_units(U, mu0, mu1, mu2)
    # student–teacher
    Rt = th @ tth.T
    OMRt = np.empty((m, k))
    OPRt = np.empty((m, k))
    pair_geometry(th, ok, tth, tok, Rt, OMRt, OPRt)
    Ct = np.zeros((m, k))
    Bt = np.zeros((m, k))
    At = np.zeros((m, k))
    Dt = np.zeros((m, k))
    if tpl:
        pl_pair_moments_units(U, pv, qv, al, be, pl_units(tp, tq, tal, tbe), tp, tq, tal, tbe,
                              Rt, OMRt, OPRt, Ct, Bt, At, Dt, RTOL, ATOL, QTOL, MAXINT)
    if H.shape[0] > 0:
        _hermite_cross(p, q, al, be, Rt, H, dH, L1, ttol, Ct, Bt, At, Dt)
    # loss (terms grouped as in popdyn.objective._loss_from)
    Ca = C @ a
    ff = s * s * (a @ Ca) + 2.0 * s * c * (a @ mu0) + c * c
    Ctv = Ct @ v
    fy = s * (a @ Ctv) + c * ey
    L = 0.5 * (ff - 2.0 * fy + ey2)
    # gradient
    for i in range(m):
        ga[i] = s * (s * Ca[i] + c * mu0[i] - Ctv[i])
    gc = s * (a @ mu0) + c - ey if intercept else 0.0
    if bias:
        Da = D @ a
        Dtv = Dt @ v
        for i in range(m):
            gb[i] = s * a[i] * (s * Da[i] + c * mu1[i] - Dtv[i])
    else:
        for i in range(m):
            gb[i] = 0.0
    scal = s * (A @ a) + c * mu2 - At @ v
    aW = np.empty((m, d))
    for i in range(m):
        for j in range(d):
            aW[i, j] = a[i] * W[i, j]
    vU = np.empty((k, d))
    for i in range(k):
        for j in range(d):
            vU[i, j] = v[i] * UT[i, j]
    inner = s * (B @ aW) - Bt @ vU
    for i in range(m):
        f = s * a[i]
        for j in range(d):
            gW[i, j] = f * (th[i, j] * scal[i] + inner[i, j])
    return L, gc


@jit
def _finite(a, W, b, c):
    if not math.isfinite(c):
        return False
    for x in a:
        if not math.isfinite(x):
            return False
    for x in b:
        if not math.isfinite(x):
            return False
    for x in W.ravel():
        if not math.isfinite(x):
            return False
    return True


@jit
def pl_gd(nmax, t0, lr, hW, ha, hb, hc, max_time, bound, VY, loss_target,
          p, q, s, a, W, b, c, L, bias, intercept,
          tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
          ga, gW, gb, gc, losses, times):
    """Up to ``nmax`` fixed-step GD updates θ ← θ − h ∘ ∇L (h = (ha, hW, hb, hc) per group).

    The ``_step_impl`` of :class:`popdyn.dynamics.FusedGD`, with the rules of
    :class:`popdyn.dynamics.FixedStepGD` exactly: an update is taken while
    t < ``max_time``; a non-finite proposal, a non-finite loss or gradient, or L > ``bound`` ends
    the loop with DIVERGED (DIVERGED_STEP when the proposal was not evaluated) and leaves the last
    accepted state in place; 2L/V_Y ≤ ``loss_target`` (0 disables) ends it with CONVERGED.  The
    state (a, W, b) and gradient (ga, gW, gb) are updated in place; ``losses[i]``, ``times[i]`` receive L and t after the i-th update.

    Returns (n_done, status, c, L, gc, t).
    """
    m, d = W.shape
    qa = np.empty(m)
    qb = np.empty(m)
    qW = np.empty((m, d))
    fa = np.empty(m)
    fb = np.empty(m)
    fW = np.empty((m, d))
    n = 0
    t = t0
    status = RUNNING
    while n < nmax and t < max_time:
        for i in range(m):
            qa[i] = a[i] - ha * ga[i]
            qb[i] = b[i] - hb * gb[i]
            for j in range(d):
                qW[i, j] = W[i, j] - hW * gW[i, j]
        qc = c - hc * gc
        if not _finite(qa, qW, qb, qc):
            status = DIVERGED_STEP
            break
        Lq, gcq = pl_loss_grad(p, q, s, qa, qW, qb, qc, bias, intercept,
                               tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2, fa, fW, fb)
        if not (math.isfinite(Lq) and Lq <= bound and _finite(fa, fW, fb, gcq)):
            status = DIVERGED
            break
        a[:] = qa
        b[:] = qb
        W[:, :] = qW
        c = qc
        ga[:] = fa
        gb[:] = fb
        gW[:, :] = fW
        gc = gcq
        L = Lq
        t += lr
        losses[n] = L
        times[n] = t
        n += 1
        if loss_target > 0.0 and 2.0 * L / VY <= loss_target:
            status = CONVERGED
            break
    return n, status, c, L, gc, t
