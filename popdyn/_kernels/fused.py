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
student units' canonical forms computed once per step); Hermite cross moments:
:func:`popdyn._kernels.mehler.pl_link_sums` on the link tables of
:func:`popdyn._moments.link_tables`.  :func:`pl_moments` is also what the engine
(:func:`popdyn._moments.moments`) evaluates for these pairs, and :func:`ridge_loss` /
:func:`ridge_grad` are what the ridge family assembles L and ∇L with, so the fused and the
general paths agree bit for bit (tests/popdyn/test_fused.py).

References
----------
Central seed paper (../shared/seeds/003_40ccf210d3358dbe.txt), population objective; DESIGN §3–§4.
"""
import math

import numpy as np

from ._jit import jit
from .geometry import pair_geometry, pair_geometry_self
from .mehler import pl_link_sums
from .plmoments import (ATOL, MAXINT, QTOL, RTOL, _list_scratch, pl_first_moments_units,
                        pl_pair_moments_ws, pl_self_moments_ws, pl_units)

__all__ = ["directions", "pl_student_moments", "pl_moments", "ridge_loss", "ridge_grad",
           "pl_loss_grad", "pl_loss_grad_values", "pl_gd", "workspace"]

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


@jit
def directions(W):
    """(α, θ, ok): the norms α_i = |w_i|, directions θ_i = w_i/α_i (0 where α_i = 0) and
    α_i > 0 of the rows of W: the one evaluation of every ridge student's unit geometry
    (:func:`popdyn._moments.student_units` calls it too)."""
    m, d = W.shape
    al = np.empty(m)
    th = np.empty((m, d))
    ok = np.empty(m, dtype=np.bool_)
    _directions(W, al, th, ok)
    return al, th, ok


@jit
def workspace(m, d):
    """The scratch of one loss-and-gradient evaluation of an m-unit student in dimension d
    (:func:`_loss_grad_values`): α, θ, ok; R, 1 − R, 1 + R; A, D; the lower-triangle scratch
    AL, DL and the pair lists' workspaces (WS, WI, WB) of
    :func:`popdyn._kernels.plmoments.pl_self_moments_ws`; a ∘ W, B(a ∘ W), Bᵗ(v ∘ α*θ*).

    None of it is returned by the evaluation, so one workspace serves every step of a GD loop
    (:func:`pl_gd`) and every call of :func:`pl_loss_grad_values` of that shape: at m = 256 the
    m×m arrays were ~2.5 MB a step, freshly mapped and faulted in page by page (~600 page
    faults a step).  Results are unchanged: every entry read is written first in each step."""
    WS, WI, WB = _list_scratch()
    return (np.empty(m), np.empty((m, d)), np.empty(m, dtype=np.bool_),
            np.empty((m, m)), np.empty((m, m)), np.empty((m, m)),
            np.empty((m, m)), np.empty((m, m)), np.empty((m, m)), np.empty((m, m)),
            WS, WI, WB, np.empty((m, d)), np.empty((m, d)), np.empty((m, d)))


@jit
def _student_ws(p, q, W, b, bias, ws, C, B):
    """α, θ, ok, β, p, q, U, A, D, μ0, μ1, μ2 of :func:`_student` with the scratch of
    :func:`workspace` (α, θ, ok, A and D are its arrays) and C, B filled."""
    m = W.shape[0]
    al, th, ok, R, OMR, OPR, A, D, AL, DL, WS, WI, WB = ws[:13]
    _directions(W, al, th, ok)
    be = b.copy() if bias else np.zeros(m)
    pv = np.full(m, p)
    qv = np.full(m, q)
    np.dot(th, th.T, R)
    pair_geometry_self(th, ok, R, OMR, OPR)
    U = pl_units(pv, qv, al, be)        # once for the self, first and PL cross moments
    pl_self_moments_ws(U, pv, qv, al, be, R, OMR, OPR, C, B, A, D, RTOL, ATOL, QTOL, MAXINT,
                       AL, DL, WS, WI, WB)
    mu0 = np.empty(m)
    mu1 = np.empty(m)
    mu2 = np.empty(m)
    pl_first_moments_units(U, mu0, mu1, mu2)
    return al, th, ok, be, pv, qv, U, A, D, mu0, mu1, mu2


@jit
def _student(p, q, W, b, bias):
    m, d = W.shape
    C = np.empty((m, m))
    B = np.empty((m, m))
    al, th, ok, be, pv, qv, U, A, D, mu0, mu1, mu2 = _student_ws(p, q, W, b, bias,
                                                                 workspace(m, d), C, B)
    return al, th, ok, be, pv, qv, U, C, B, A, D, mu0, mu1, mu2


@jit
def pl_student_moments(p, q, W, b, bias):
    """(α, θ, C, B, A, D, μ0, μ1, μ2): the student–student and first moments of a PL student
    (σ = p relu + q id; b read only when ``bias``), those of :func:`pl_moments`."""
    al, th, ok, be, pv, qv, U, C, B, A, D, mu0, mu1, mu2 = _student(p, q, W, b, bias)
    return al, th, C, B, A, D, mu0, mu1, mu2


@jit
def pl_moments(p, q, W, b, bias, tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, grad):
    """Every moment of L and ∇L for a PL student (σ = p relu + q id) against PL / additive
    teacher units: the engine's moments of these pairs (:func:`popdyn._moments.moments` calls
    this kernel too, so the general and the fused paths agree bit for bit).

    Parameters are those of :func:`pl_loss_grad`; ``grad`` False skips the cross sums Bt, At,
    Dt of the Hermite part (left 0).  Returns (α, θ, C, B, A, D, μ0, μ1, μ2, Ct, Bt, At, Dt,
    trunc): ``trunc`` (m,) bounds the per-unit truncation of the Hermite cross sums
    (:func:`popdyn._kernels.mehler.pl_link_sums`).
    """
    m, d = W.shape
    C = np.empty((m, m))
    B = np.empty((m, m))
    return _pl_moments_ws(p, q, W, b, bias, tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol,
                          grad, workspace(m, d), C, B)


@jit
def _pl_moments_ws(p, q, W, b, bias, tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, grad,
                   ws, C, B):
    """:func:`pl_moments` with the scratch of :func:`workspace` (α, θ, A and D are its
    arrays) and C, B the caller's outputs."""
    k = tth.shape[0]
    m = W.shape[0]
    al, th, ok, be, pv, qv, U, A, D, mu0, mu1, mu2 = _student_ws(p, q, W, b, bias, ws, C, B)
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
        WS, WI, WB = ws[10:13]
        pl_pair_moments_ws(U, pv, qv, al, be, pl_units(tp, tq, tal, tbe), tp, tq, tal, tbe,
                           Rt, OMRt, OPRt, Ct, Bt, At, Dt, RTOL, ATOL, QTOL, MAXINT, WS, WI, WB)
    trunc = np.zeros(m)
    if H.shape[0] > 0:
        pl_link_sums(p, q, al, be, Rt, H, dH, L1, ttol, grad, Ct, Bt, At, Dt, trunc)
    return al, th, C, B, A, D, mu0, mu1, mu2, Ct, Bt, At, Dt, trunc


@jit
def ridge_loss(s, a, c, C, mu0, Ct, v, ey, ey2):
    """L = ½(s² aᵀCa + 2sc aᵀμ0 + c² − 2(s aᵀCᵀv + c E[y]) + E[y²]) from the moments (the
    terms grouped as E[f²] − 2E[fy] + E[y²] to limit cancellation): the one evaluation of the
    ridge family's loss (:class:`popdyn.models.RidgeFamily` and :func:`pl_loss_grad`)."""
    ff = s * s * (a @ (C @ a)) + 2.0 * s * c * (a @ mu0) + c * c
    fy = s * (a @ (Ct @ v)) + c * ey
    return 0.5 * (ff - 2.0 * fy + ey2)


@jit
def ridge_grad(s, a, W, c, bias, intercept, th, C, B, A, D, mu0, mu1, mu2, Ct, Bt, At, Dt,
               v, vU, ey, ga, gW, gb):
    """∇L of the ridge family from the moments (formulas of :mod:`popdyn.objective`): fills
    ga, gW, gb and returns ∂L/∂c (0 when the intercept is fixed; gb = 0 without biases).
    ``vU`` = v ∘ α*θ* (rows), the teacher term of ∂L/∂W (a multi-index teacher's Bt has one
    column per index direction, so the caller forms it)."""
    m, d = W.shape
    return _ridge_grad_ws(s, a, W, c, bias, intercept, th, C, B, A, D, mu0, mu1, mu2, Ct, Bt,
                          At, Dt, v, vU, ey, ga, gW, gb, np.empty((m, d)), np.empty((m, d)),
                          np.empty((m, d)))


@jit
def _ridge_grad_ws(s, a, W, c, bias, intercept, th, C, B, A, D, mu0, mu1, mu2, Ct, Bt, At, Dt,
                   v, vU, ey, ga, gW, gb, aW, T1, T2):
    """:func:`ridge_grad` with the scratch aW = a ∘ W, T1 = B(a ∘ W), T2 = Bᵗ(v ∘ α*θ*)
    (m×d each): the same products (BLAS, into the scratch) and the same elementwise
    operations in the same order, s·T1 − T2, as the array expression s (B @ aW) − Bt @ vU."""
    m, d = W.shape
    Ca = C @ a
    Ctv = Ct @ v
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
    for i in range(m):
        for j in range(d):
            aW[i, j] = a[i] * W[i, j]
    np.dot(B, aW, T1)
    if vU.shape[0] > 0:
        np.dot(Bt, vU, T2)
    else:
        T2[:, :] = 0.0
    for i in range(m):
        f = s * a[i]
        for j in range(d):
            gW[i, j] = f * (th[i, j] * scal[i] + (s * T1[i, j] - T2[i, j]))
    return gc


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
        N + 1 = 0 for none), truncated at the link's order (:func:`popdyn._moments.link_tables`).
    L1, ttol : (N+1,), float
        L1[n] = Σ_{n < n' ≤ N} max(|H[n']|, |dH[n']|) and the per-pair truncation target
        (see :func:`popdyn._kernels.mehler.pl_link_sums`).
    v, UT : (k,), (k, d)
        Teacher weights and α*θ* (rows).
    ey, ey2 : float
        E[y] and E[y²].
    ga, gW, gb : outputs, overwritten.

    Returns
    -------
    (L, ∂L/∂c): :func:`ridge_loss` and :func:`ridge_grad` of the moments of :func:`pl_moments`.
    """
    m, d = W.shape
    L, gc, _, _, _, _ = _loss_grad_values(p, q, s, a, W, b, c, bias, intercept, tth, tok, tal,
                                          tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
                                          ga, gW, gb, workspace(m, d), np.empty((m, m)),
                                          np.empty((m, m)))
    return L, gc


#: workspaces of :func:`pl_loss_grad_values` by shape (m, d): a few, dropped all at once
_WORKSPACES: dict[tuple[int, int], tuple] = {}
_WORKSPACES_MAX = 4


def pl_loss_grad_values(p, q, s, a, W, b, c, bias, intercept,
                        tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
                        ga, gW, gb):
    """:func:`pl_loss_grad`, returning also the moments the diagnostics read at this state:
    (L, ∂L/∂c, C, B, μ0, Ct), the same bits as ``popdyn._moments.moments(..., need="values")``
    (issue 18: the diagnostics at a checkpoint reuse the moments of the step that produced it).

    The compiled :func:`_loss_grad_values` with a :func:`workspace` kept per shape (m, d)
    between calls (none of it is returned: C, B, μ0 and Ct are fresh arrays).  Safe across
    threads: the kernels hold the GIL (no ``nogil``), so two calls never run at once."""
    m, d = W.shape
    ws = _WORKSPACES.get((m, d))
    if ws is None:
        if len(_WORKSPACES) >= _WORKSPACES_MAX:
            _WORKSPACES.clear()
        ws = _WORKSPACES[(m, d)] = workspace(m, d)
    return _loss_grad_values(p, q, s, a, W, b, c, bias, intercept, tth, tok, tal, tbe, tp, tq,
                             tpl, H, dH, L1, ttol, v, UT, ey, ey2, ga, gW, gb, ws,
                             np.empty((m, m)), np.empty((m, m)))


@jit
def _loss_grad_values(p, q, s, a, W, b, c, bias, intercept,
                      tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
                      ga, gW, gb, ws, C, B):
    """:func:`pl_loss_grad_values` with the scratch ``ws`` of :func:`workspace` and the m×m
    outputs C, B (returned)."""
    (al, th, C, B, A, D, mu0, mu1, mu2, Ct, Bt, At, Dt, _) = _pl_moments_ws(
        p, q, W, b, bias, tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, True, ws, C, B)
    L = ridge_loss(s, a, c, C, mu0, Ct, v, ey, ey2)
    k, d = UT.shape
    vU = np.empty((k, d))
    for i in range(k):
        for j in range(d):
            vU[i, j] = v[i] * UT[i, j]
    gc = _ridge_grad_ws(s, a, W, c, bias, intercept, th, C, B, A, D, mu0, mu1, mu2, Ct, Bt, At,
                        Dt, v, vU, ey, ga, gW, gb, ws[13], ws[14], ws[15])
    return L, gc, C, B, mu0, Ct


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
          ga, gW, gb, gc, losses, times, C, B, mu0, Ct):
    """Up to ``nmax`` fixed-step GD updates θ ← θ − h ∘ ∇L (h = (ha, hW, hb, hc) per group).

    The ``_step_impl`` of :class:`popdyn.dynamics.FusedGD`, with the rules of
    :class:`popdyn.dynamics.FixedStepGD` exactly: an update is taken while
    t < ``max_time``; a non-finite proposal, a non-finite loss or gradient, or L > ``bound`` ends
    the loop with DIVERGED (DIVERGED_STEP when the proposal was not evaluated) and leaves the last
    accepted state in place; 2L/V_Y ≤ ``loss_target`` (0 disables) ends it with CONVERGED.  The
    state (a, W, b) and gradient (ga, gW, gb) are updated in place; ``losses[i]``, ``times[i]`` receive L and t after the i-th update.
    (C, B, μ0, Ct) are the value moments of the entry state (:func:`pl_loss_grad_values`); those
    of the last accepted state are returned (the diagnostics at a snapshot reuse them).

    Returns (n_done, status, c, L, gc, t, C, B, μ0, Ct).
    """
    m, d = W.shape
    qa = np.empty(m)
    qb = np.empty(m)
    qW = np.empty((m, d))
    fa = np.empty(m)
    fb = np.empty(m)
    fW = np.empty((m, d))
    ws = workspace(m, d)
    # C, B of the proposal: two buffers, alternating (the accepted state's are returned)
    CB = np.empty((2, m, m))
    BB = np.empty((2, m, m))
    nb = 0
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
        Lq, gcq, Cq, Bq, mu0q, Ctq = _loss_grad_values(
            p, q, s, qa, qW, qb, qc, bias, intercept,
            tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2, fa, fW, fb,
            ws, CB[nb], BB[nb])
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
        C, B, mu0, Ct = Cq, Bq, mu0q, Ctq
        nb = 1 - nb
        t += lr
        losses[n] = L
        times[n] = t
        n += 1
        if loss_target > 0.0 and 2.0 * L / VY <= loss_target:
            status = CONVERGED
            break
    return n, status, c, L, gc, t, C, B, mu0, Ct
