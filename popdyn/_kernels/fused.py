"""Fused loss-and-gradient kernel and fixed-step GD loop for piecewise-linear students.

The experiments spend almost all their time in population gradient descent of relu / leaky-relu
students (with biases) against additive-link or PL-network teachers.  Evaluated through the
general dispatcher (:func:`popdyn.objective.loss_and_grad`), one evaluation at m = 32 costs
≈ 1 ms, most of it Python-level set-up around kernels that take a fraction of that.  This module
evaluates the same formulas with the same kernels in one compiled call, and runs whole stretches
of gradient descent (between two snapshots) inside numba.

Formulas (docs/design.md §3, :mod:`popdyn.objective`): with student units σ_j(α_j θ_j·x + β_j),
teacher units t_k (directions θ*_k, scales α*_k, offsets β*_k, weights v_k; an additive link f is
the unit f(u_k·x) with α* = 1, β* = 0, split into its PL part p relu + q id and its Hermite part)

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
Kumar (arXiv 2609.39408), population objective; docs/design.md §3–§4.
"""
import math
from collections import namedtuple

import numpy as np
from numba import prange

from . import arccos as _ac
from ._jit import jit
from .geometry import geometry_self_rows, pair_geometry, pair_geometry_self
from .mehler import pl_link_sums
from .pl_batch import _list_scratch, _moments_list
from .pl_chunks import (_PAR_GROUPS, _PAR_MIN_CHUNKS, _chunk_arrays, _chunk_index,
                        _chunk_starts, pl_pair_moments_ws, pl_self_moments_ws)
from .pl_front import _unit_array
from .pl_pair import pl_first_moments_units, pl_units
from .pl_ramps import ATOL, MAXINT, QTOL, RTOL

__all__ = ["directions", "pl_student_moments", "pl_moments", "ridge_loss", "ridge_grad",
           "pl_loss_grad", "pl_loss_grad_values", "pl_loss_grad_cached", "pl_gd", "workspace",
           "tile_workspace", "tile_for", "TILE", "Tables", "Unit", "GDRule"]

#: students with more units than this are evaluated tile by tile (:func:`_loss_grad_tiled`):
#: blocks of TILE × TILE unit pairs, so that a step holds O(m·d + TILE²) memory instead of
#: nine m×m arrays; up to TILE units the whole-matrix evaluation (and its bits) is kept
TILE = 512

#: the teacher's tables (:func:`popdyn._moments.teacher_tables`): directions θ*, which units
#: have α* > 0, scales α*, offsets β*, PL slopes p, q, whether the link has a PL part, the
#: link's Hermite tables H, dH, L1 and tolerance, weights v, α*θ*, E[y], E[y²]
Tables = namedtuple("Tables", "tth tok tal tbe tp tq tpl H dH L1 ttol v UT ey ey2")
#: the student's constants: activation slopes p, q (σ = p relu + q id), output scale s, biases
#: and fitted intercept on or off
Unit = namedtuple("Unit", "p q s bias intercept")
#: the rule of :func:`pl_gd`: time per update (lr), the step of each group (W, a, b, c), the
#: time horizon, the divergence bound on L, V_Y and the target 2L/V_Y (0: none)
GDRule = namedtuple("GDRule", "lr hW ha hb hc max_time bound VY loss_target")

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
    if m >= _PAR_GEOM:
        _tile_geometry(th, ok, 0, m, 0, m, R, OMR, OPR)      # the same bits, in parallel
    else:
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
    ridge family's loss (:class:`popdyn.families.ridge.RidgeFamily` and :func:`pl_loss_grad`)."""
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


#: workspaces of :func:`pl_loss_grad_values` and :func:`pl_loss_grad_cached` by
#: (m, d, tile, kind): a few, dropped all at once
_WORKSPACES: dict[tuple, tuple] = {}
_WORKSPACES_MAX = 4


def _cached(m, d, tile, kind):
    """The kept scratch of an (m, d) evaluation: (ws, C, B) with C, B the m×m outputs of the
    whole-matrix path (``kind`` "cached": kept too; "values": None, fresh at each call since
    they are returned) or the tile × tile blocks of :func:`_loss_grad_tiled`."""
    key = (m, d, tile, kind)
    hit = _WORKSPACES.get(key)
    if hit is None:
        if len(_WORKSPACES) >= _WORKSPACES_MAX:
            _WORKSPACES.clear()
        if tile:
            hit = (tile_workspace(m, d, tile), np.empty((tile, tile)), np.empty((tile, tile)))
        elif kind == "cached":
            hit = (workspace(m, d), np.empty((m, m)), np.empty((m, m)))
        else:
            hit = (workspace(m, d), None, None)
        _WORKSPACES[key] = hit
    return hit


def pl_loss_grad_values(p, q, s, a, W, b, c, bias, intercept,
                        tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
                        ga, gW, gb, tile=None):
    """:func:`pl_loss_grad`, returning also the moments the diagnostics read at this state:
    (L, ∂L/∂c, C, B, μ0, Ct), the same bits as ``popdyn._moments.moments(..., need="values")``
    (the diagnostics at a checkpoint reuse the moments of the step that produced it).

    The compiled :func:`_loss_grad_values` with a :func:`workspace` kept per shape (m, d)
    between calls (none of it is returned: C, B, μ0 and Ct are fresh arrays).  A student with
    more units than ``tile`` (default :data:`TILE`, :func:`tile_for`) is evaluated tile by
    tile (:func:`_loss_grad_tiled`): C and B are not formed and are returned as None.  Safe
    across threads: the kernels hold the GIL (no ``nogil``), so two calls never run at once."""
    m, d = W.shape
    t = tile_for(m, tile)
    ws, C, B = _cached(m, d, t, "values")
    if t:
        out = _loss_grad_tiled(p, q, s, a, W, b, c, bias, intercept, tth, tok, tal, tbe, tp,
                               tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2, ga, gW, gb, ws, C, B)
        return out[0], out[1], None, None, out[4], out[5]
    return _loss_grad_values(p, q, s, a, W, b, c, bias, intercept, tth, tok, tal, tbe, tp, tq,
                             tpl, H, dH, L1, ttol, v, UT, ey, ey2, ga, gW, gb, ws,
                             np.empty((m, m)), np.empty((m, m)))


def pl_loss_grad_cached(p, q, s, a, W, b, c, bias, intercept,
                        tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
                        ga, gW, gb, tile=None):
    """(L, ∂L/∂c) of :func:`pl_loss_grad` (ga, gW, gb filled) with all of its scratch kept
    between calls: the workspace and the m×m arrays C, B (not returned), or the tiles of
    :func:`_loss_grad_tiled` above ``tile`` units (:func:`tile_for`).  The evaluation of the
    public :func:`popdyn.objective.loss_and_grad` for these pairs: the same bits as the
    engine's ``moments`` with ``ridge_loss`` and ``ridge_grad`` up to the tile (every entry
    read is written first in each call), nothing of size m×m mapped afresh per call."""
    m, d = W.shape
    t = tile_for(m, tile)
    ws, C, B = _cached(m, d, t, "cached")
    L, gc, _, _, _, _ = _evaluate(p, q, s, a, W, b, c, bias, intercept, tth, tok, tal, tbe, tp,
                                  tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2, ga, gW, gb, ws, C, B)
    return L, gc


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


# ------------------------------------------------------------------------- tiled evaluation
def tile_for(m, tile=None):
    """The tile of an m-unit student: 0 (the whole-matrix evaluation) when m ≤ ``tile``
    (default :data:`TILE`; ``tile`` ≤ 0 never tiles), else ``tile``."""
    t = TILE if tile is None else int(tile)
    return t if 0 < t < m else 0


@jit
def tile_workspace(m, d, tile):
    """The scratch of :func:`_loss_grad_tiled` in the layout of :func:`workspace` (the same
    types, so :func:`pl_gd` takes either): α, θ, ok, a ∘ W, B(a ∘ W), Bᵗ(v ∘ α*θ*) of all m
    units, and tile × tile blocks in place of the m×m arrays (R, 1 − R, 1 + R, A, D and the
    transposed A, D of an off-diagonal block)."""
    WS, WI, WB = _list_scratch()
    t = tile
    return (np.empty(m), np.empty((m, d)), np.empty(m, dtype=np.bool_),
            np.empty((t, t)), np.empty((t, t)), np.empty((t, t)),
            np.empty((t, t)), np.empty((t, t)), np.empty((t, t)), np.empty((t, t)),
            WS, WI, WB, np.empty((m, d)), np.empty((m, d)), np.empty((m, d)))


@jit
def _block(X, ni, nj):
    """The leading ni × nj block of the tile scratch X (C order) as a C-contiguous view."""
    return X.reshape(X.shape[0] * X.shape[1])[:ni * nj].reshape((ni, nj))


@jit
def _tile_moments(U, p, q, al, be, UA, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL,
                  I, J, RHO, OM, OP, DG, out, WS, WI, WB):
    """C, B, A, D of the block (i0:i1) × (j0:j1) of one PL set with itself and the transposed
    AL[i, j] = A_ji, DL[i, j] = D_ji, one evaluation per pair (the batched evaluator
    :func:`popdyn._kernels.plmoments._moments_list` of ``pl_self_moments``, on chunks of
    pairs); a diagonal block fills the upper triangle i ≤ j only (:func:`_mirror_par`).

    The chunks are those of the block's row-by-row walk (:func:`pl_chunks._chunk_starts`);
    with enough of them they run in parallel groups (:func:`_tile_moments_par`, the grouping
    of :func:`pl_chunks._moments_chunked`), else here with the caller's scratch.  Each pair is
    evaluated by the same code whatever its chunk or group, so the bits do not depend on the
    number of threads."""
    CI, CJ = _chunk_starts(i1 - i0, j1 - j0, i0 == j0)
    CI += i0
    CJ += j0
    nch = CI.shape[0]
    ng = min(_PAR_GROUPS, nch // _PAR_MIN_CHUNKS)
    if ng >= 2:
        _tile_moments_par(U, p, q, al, be, UA, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL,
                          CI, CJ, ng)
    else:
        _tile_chunks(U, p, q, al, be, UA, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL,
                     CI, CJ, 0, nch, 1, I, J, RHO, OM, OP, DG, out, WS, WI, WB)


@jit(parallel=True, nogil=True)
def _tile_moments_par(U, p, q, al, be, UA, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL,
                      CI, CJ, ng):
    """The chunks of :func:`_tile_moments` in ``ng`` interleaved groups run by ``prange`` (as
    :func:`pl_chunks._moments_chunked_par`), each group with its own pair lists and scratch;
    every output entry is written by one chunk."""
    nch = CI.shape[0]
    for g in prange(ng):
        WS, WI, WB = _list_scratch()
        I, J, RHO, OM, OP, DG, out = _chunk_arrays()
        _tile_chunks(U, p, q, al, be, UA, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL,
                     CI, CJ, g, nch, ng, I, J, RHO, OM, OP, DG, out, WS, WI, WB)


@jit
def _tile_chunks(U, p, q, al, be, UA, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL,
                 CI, CJ, c0, c1, cs, I, J, RHO, OM, OP, DG, out, WS, WI, WB):
    """Chunks c = c0, c0 + cs, … < c1 of :func:`_tile_moments` (first pairs CI, CJ, unit indices),
    evaluated and scattered into the block's arrays at (i − i0, j − j0)."""
    for c in range(c0, c1, cs):
        n, _, _ = _chunk_index(R, OMR, OPR, CI[c], CJ[c], i0, i1, j0, j1, i0 == j0,
                               I, J, RHO, OM, OP, DG)
        _moments_list(U, p, q, al, be, U, p, q, al, be, UA, UA, I[:n], J[:n],
                      RHO[:n], OM[:n], OP[:n], DG[:n], RTOL, ATOL, QTOL, MAXINT, out[:n],
                      WS, WI, WB)
        for k in range(n):
            li = I[k] - i0
            lj = J[k] - j0
            C[li, lj] = out[k, 0]
            B[li, lj] = out[k, 1]
            A[li, lj] = out[k, 2]
            AL[li, lj] = out[k, 3]
            D[li, lj] = out[k, 4]
            DL[li, lj] = out[k, 5]


@jit
def _tile_moments_free(p, q, al, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL):
    """:func:`_tile_moments` of a bias-free set (every β = 0, α > 0): the arc-cosine closed
    forms pair by pair (:func:`popdyn._kernels.arccos._entry`, the operations of
    ``arccos.self_moments``)."""
    diag = i0 == j0
    for i in range(i0, i1):
        for j in range(i if diag else j0, j1):
            li = i - i0
            lj = j - j0
            if diag and i == j:
                rho, om, op = 1.0, 0.0, 2.0
            else:
                rho, om, op = R[li, lj], OMR[li, lj], OPR[li, lj]
            c, bb, aij, aji, dij, dji = _ac._entry(p[i], q[i], al[i], p[j], q[j], al[j],
                                                   rho, om, op)
            C[li, lj] = c
            B[li, lj] = bb
            A[li, lj] = aij
            AL[li, lj] = aji
            D[li, lj] = dij
            DL[li, lj] = dji


#: units from which the whole-matrix step's geometry runs in parallel (:func:`_tile_geometry`)
_PAR_GEOM = 256
#: rows per block of the tiled step's parallel geometry and mirror (:func:`_tile_geometry`,
#: :func:`_mirror_par`)
_GR = 16


@jit(parallel=True, nogil=True)
def _tile_geometry(th, ok, i0, i1, j0, j1, R, OMR, OPR):
    """The geometry of the block (i0:i1) × (j0:j1) of :func:`_loss_grad_tiled` given R = θ_I θ_Jᵀ
    (BLAS, on entry): :func:`pair_geometry`, or on a diagonal block (i0 = j0) the pairs i < j
    of :func:`pair_geometry_self`, by row blocks of :data:`_GR` rows run by ``prange`` (on a
    diagonal block the k-th first and the k-th last together, so that a static split gets
    balanced halves of the triangle).  Elementwise per row: the same bits on any thread count
    and as the serial forms."""
    ni = i1 - i0
    nb = (ni + _GR - 1) // _GR
    if i0 != j0:
        for t in prange(nb):
            r0 = t * _GR
            r1 = min(ni, r0 + _GR)
            pair_geometry(th[i0 + r0:i0 + r1], ok[i0 + r0:i0 + r1], th[j0:j1], ok[j0:j1],
                          R[r0:r1], OMR[r0:r1], OPR[r0:r1])
        return
    T = th[i0:i1]
    oT = ok[i0:i1]
    for t in prange((nb + 1) // 2):
        J = np.empty(ni, np.int64)
        geometry_self_rows(T, oT, R, OMR, OPR, t * _GR, min(ni, (t + 1) * _GR), J)
        u = nb - 1 - t
        if u != t:
            geometry_self_rows(T, oT, R, OMR, OPR, u * _GR, min(ni, (u + 1) * _GR), J)


@jit(parallel=True, nogil=True)
def _mirror_par(C, B, A, D, AL, DL):
    """The lower triangle of a diagonal block: C_ji = C_ij, B_ji = B_ij, A_ji = AL_ij,
    D_ji = DL_ij (j > i), by row blocks of :data:`_GR` run by ``prange`` (the k-th first and
    the k-th last together; copies only)."""
    n = C.shape[0]
    nb = (n + _GR - 1) // _GR
    for t in prange((nb + 1) // 2):
        _mirror_rows(C, B, A, D, AL, DL, t * _GR, min(n, (t + 1) * _GR))
        u = nb - 1 - t
        if u != t:
            _mirror_rows(C, B, A, D, AL, DL, u * _GR, min(n, (u + 1) * _GR))


@jit
def _mirror_rows(C, B, A, D, AL, DL, r0, r1):
    """The rows r0 ≤ i < r1 of :func:`_mirror_par` (their entries j > i, copied to (j, i))."""
    n = C.shape[0]
    for i in range(r0, r1):
        for j in range(i + 1, n):
            C[j, i] = C[i, j]
            B[j, i] = B[i, j]
            A[j, i] = AL[i, j]
            D[j, i] = DL[i, j]


@jit
def _loss_grad_tiled(p, q, s, a, W, b, c, bias, intercept,
                     tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
                     ga, gW, gb, ws, Cw, Bw):
    """:func:`_loss_grad_values` assembled tile by tile, never forming an m×m array.

    ``ws`` is :func:`tile_workspace` (m, d, T) and Cw, Bw are T×T scratch.  The units are cut
    into row blocks of T; for each pair of blocks I ≤ J the geometry (R = θ_I θ_Jᵀ by BLAS,
    1 ∓ R: :func:`popdyn._kernels.geometry.pair_geometry`, ``pair_geometry_self`` on the
    diagonal) and the moments C, B, A, D of the block and the transposed A, D (one evaluation
    per unordered pair, as ``pl_self_moments``) are computed, then contracted at once into the
    products of the formulas of :mod:`popdyn.objective`:

        (C a)_I += C_IJ a_J,  (C a)_J += C_IJᵀ a_I,   and alike D a, Ã a,
        (B (a∘W))_I += B_IJ (a∘W)_J,  (B (a∘W))_J += B_IJᵀ (a∘W)_I   (BLAS);

    L and ∇L follow with the operations of :func:`ridge_loss` and :func:`_ridge_grad_ws`
    (aᵀCa as a·(C a)).  The student–teacher and first moments are those of
    :func:`_pl_moments_ws` (m × k arrays).  Every moment entry is evaluated as in the
    whole-matrix path; only the order of the sums over the units (and the BLAS blocking of R)
    differs, so the results agree to rounding (tests/popdyn/test_fused_tiled.py).

    Returns (L, ∂L/∂c, Cw, Bw, μ0, Ct) (Cw, Bw: scratch, in the slots of C, B of
    :func:`_loss_grad_values`)."""
    m, d = W.shape
    T = Cw.shape[0]
    al, th, ok, Rw, OMRw, OPRw, Aw, Dw, ALw, DLw, WS, WI, WB, aW, T1, T2 = ws
    _directions(W, al, th, ok)
    be = b.copy() if bias else np.zeros(m)
    pv = np.full(m, p)
    qv = np.full(m, q)
    U = pl_units(pv, qv, al, be)
    mu0 = np.empty(m)
    mu1 = np.empty(m)
    mu2 = np.empty(m)
    pl_first_moments_units(U, mu0, mu1, mu2)
    # student–teacher: the operations of _pl_moments_ws
    k = tth.shape[0]
    Rt = th @ tth.T
    OMRt = np.empty((m, k))
    OPRt = np.empty((m, k))
    pair_geometry(th, ok, tth, tok, Rt, OMRt, OPRt)
    Ct = np.zeros((m, k))
    Bt = np.zeros((m, k))
    At = np.zeros((m, k))
    Dt = np.zeros((m, k))
    if tpl:
        pl_pair_moments_ws(U, pv, qv, al, be, pl_units(tp, tq, tal, tbe), tp, tq, tal, tbe,
                           Rt, OMRt, OPRt, Ct, Bt, At, Dt, RTOL, ATOL, QTOL, MAXINT, WS, WI, WB)
    trunc = np.zeros(m)
    if H.shape[0] > 0:
        pl_link_sums(p, q, al, be, Rt, H, dH, L1, ttol, True, Ct, Bt, At, Dt, trunc)
    # student–student, block by block: C a, D a, Ã a and B (a ∘ W)
    for i in range(m):
        for j in range(d):
            aW[i, j] = a[i] * W[i, j]
    Ca = np.zeros(m)
    Da = np.zeros(m)
    Aa = np.zeros(m)
    T1[:, :] = 0.0
    free = _ac.bias_free(be, al, be, al)
    UA = _unit_array(U, pv, qv, al, be)
    I, J, RHO, OM, OP, DG, out = _chunk_arrays()
    for i0 in range(0, m, T):
        i1 = min(i0 + T, m)
        ni = i1 - i0
        for j0 in range(i0, m, T):
            j1 = min(j0 + T, m)
            nj = j1 - j0
            R = _block(Rw, ni, nj)
            OMR = _block(OMRw, ni, nj)
            OPR = _block(OPRw, ni, nj)
            C = _block(Cw, ni, nj)
            B = _block(Bw, ni, nj)
            A = _block(Aw, ni, nj)
            D = _block(Dw, ni, nj)
            AL = _block(ALw, ni, nj)
            DL = _block(DLw, ni, nj)
            np.dot(th[i0:i1], th[j0:j1].T, R)
            _tile_geometry(th, ok, i0, i1, j0, j1, R, OMR, OPR)
            if free:
                _tile_moments_free(pv, qv, al, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D, AL, DL)
            else:
                _tile_moments(U, pv, qv, al, be, UA, i0, i1, j0, j1, R, OMR, OPR, C, B, A, D,
                              AL, DL, I, J, RHO, OM, OP, DG, out, WS, WI, WB)
            if i0 == j0:
                _mirror_par(C, B, A, D, AL, DL)
            aJ = a[j0:j1]
            Ca[i0:i1] += np.dot(C, aJ)
            Da[i0:i1] += np.dot(D, aJ)
            Aa[i0:i1] += np.dot(A, aJ)
            T1[i0:i1] += np.dot(B, aW[j0:j1])
            if i0 != j0:
                aI = a[i0:i1]
                Ca[j0:j1] += np.dot(C.T, aI)
                Da[j0:j1] += np.dot(DL.T, aI)
                Aa[j0:j1] += np.dot(AL.T, aI)
                T1[j0:j1] += np.dot(B.T, aW[i0:i1])
    # L and ∇L: the operations of ridge_loss and _ridge_grad_ws on these products
    Ctv = Ct @ v
    ff = s * s * (a @ Ca) + 2.0 * s * c * (a @ mu0) + c * c
    fy = s * (a @ Ctv) + c * ey
    L = 0.5 * (ff - 2.0 * fy + ey2)
    for i in range(m):
        ga[i] = s * (s * Ca[i] + c * mu0[i] - Ctv[i])
    gc = s * (a @ mu0) + c - ey if intercept else 0.0
    if bias:
        Dtv = Dt @ v
        for i in range(m):
            gb[i] = s * a[i] * (s * Da[i] + c * mu1[i] - Dtv[i])
    else:
        for i in range(m):
            gb[i] = 0.0
    scal = s * Aa + c * mu2 - At @ v
    kk = UT.shape[0]
    if kk > 0:
        vU = np.empty((kk, d))
        for i in range(kk):
            for j in range(d):
                vU[i, j] = v[i] * UT[i, j]
        np.dot(Bt, vU, T2)
    else:
        T2[:, :] = 0.0
    for i in range(m):
        f = s * a[i]
        for j in range(d):
            gW[i, j] = f * (th[i, j] * scal[i] + (s * T1[i, j] - T2[i, j]))
    return L, gc, Cw, Bw, mu0, Ct


@jit
def _evaluate(p, q, s, a, W, b, c, bias, intercept,
              tth, tok, tal, tbe, tp, tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2,
              ga, gW, gb, ws, C, B):
    """:func:`_loss_grad_values` (C, B m×m) or, when C is a smaller tile, :func:`_loss_grad_tiled`."""
    if C.shape[0] < W.shape[0]:
        return _loss_grad_tiled(p, q, s, a, W, b, c, bias, intercept, tth, tok, tal, tbe, tp,
                                tq, tpl, H, dH, L1, ttol, v, UT, ey, ey2, ga, gW, gb, ws, C, B)
    return _loss_grad_values(p, q, s, a, W, b, c, bias, intercept, tth, tok, tal, tbe, tp, tq,
                             tpl, H, dH, L1, ttol, v, UT, ey, ey2, ga, gW, gb, ws, C, B)


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
def pl_gd(nmax, t0, rule, unit, tab, a, W, b, c, L, ga, gW, gb, gc, losses, times,
          C, B, mu0, Ct, tile=0):
    """Up to ``nmax`` fixed-step GD updates θ ← θ − h ∘ ∇L (h = (ha, hW, hb, hc) per group).

    ``rule`` is a :data:`GDRule`, ``unit`` a :data:`Unit` and ``tab`` the teacher's
    :data:`Tables`; the state (a, W, b, c), its loss L and gradient (ga, gW, gb, gc) and the
    output buffers are passed as they are.

    The ``_step_impl`` of :class:`popdyn.dynamics.FusedGD`, with the rules of
    :class:`popdyn.dynamics.FixedStepGD` exactly: an update is taken while
    t < ``max_time``; a non-finite proposal, a non-finite loss or gradient, or L > ``bound`` ends
    the loop with DIVERGED (DIVERGED_STEP when the proposal was not evaluated) and leaves the last
    accepted state in place; 2L/V_Y ≤ ``loss_target`` (0 disables) ends it with CONVERGED.  The
    state (a, W, b) and gradient (ga, gW, gb) are updated in place; ``losses[i]``, ``times[i]`` receive L and t after the i-th update.
    (C, B, μ0, Ct) are the value moments of the entry state (:func:`pl_loss_grad_values`); those
    of the last accepted state are returned (the diagnostics at a snapshot reuse them).
    With 0 < ``tile`` < m the updates are evaluated tile by tile (:func:`_loss_grad_tiled`,
    O(m·d + tile²) memory): C and B are not formed (the returned ones are scratch; the entry
    C, B are not read).

    Returns (n_done, status, c, L, gc, t, C, B, μ0, Ct).
    """
    lr, hW, ha, hb, hc = rule.lr, rule.hW, rule.ha, rule.hb, rule.hc
    max_time, bound, VY, loss_target = rule.max_time, rule.bound, rule.VY, rule.loss_target
    p, q, s, bias, intercept = unit.p, unit.q, unit.s, unit.bias, unit.intercept
    tth, tok, tal, tbe, tp, tq, tpl = tab.tth, tab.tok, tab.tal, tab.tbe, tab.tp, tab.tq, tab.tpl
    H, dH, L1, ttol, v, UT, ey, ey2 = (tab.H, tab.dH, tab.L1, tab.ttol, tab.v, tab.UT, tab.ey,
                                       tab.ey2)
    m, d = W.shape
    qa = np.empty(m)
    qb = np.empty(m)
    qW = np.empty((m, d))
    fa = np.empty(m)
    fb = np.empty(m)
    fW = np.empty((m, d))
    n_ = tile if 0 < tile < m else m
    ws = tile_workspace(m, d, n_) if n_ < m else workspace(m, d)
    # C, B of the proposal: two buffers, alternating (the accepted state's are returned)
    CB = np.empty((2, n_, n_))
    BB = np.empty((2, n_, n_))
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
        Lq, gcq, Cq, Bq, mu0q, Ctq = _evaluate(
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
