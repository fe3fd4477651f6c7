"""Pair moments of two sets of PL units: chunking, dispatch and the public entry points.

:func:`pl_pair_moments` (two sets) and :func:`pl_self_moments` (one set with itself, pairs
i ≤ j) dispatch bias-free sets to the arc-cosine closed forms of
:mod:`popdyn._kernels.arccos` and otherwise cut the pair list into chunks of
:data:`popdyn._kernels.pl_front._CHUNK` pairs (:func:`_chunk_index`), evaluate each chunk with
:func:`popdyn._kernels.pl_batch._moments_list` and scatter the results into the m1×m2 outputs
(:func:`_moments_chunked`; for one set the lower triangles by a tiled transpose,
:func:`_fill_lower`).  The ``*_units`` entries take the canonical forms of
:func:`popdyn._kernels.pl_pair.pl_units`, the ``*_ws`` entries the caller's scratch.
"""
import numpy as np
from numba import prange

from . import arccos as _ac
from ._jit import jit
from .pl_batch import _list_scratch, _moments_list
from .pl_front import _CHUNK, _unit_array
from .pl_pair import pl_units
from .pl_ramps import ATOL, MAXINT, QTOL, RTOL


@jit
def _chunk_index(R, OMR, OPR, i, j, i0, i1, j0, j1, upper, I, J, RHO, OM, OP, DG):
    """The next at most :data:`pl_front._CHUNK` pairs of the block of units i0 ≤ i < i1,
    j0 ≤ j < j1 from the pair (i, j) on, row by row (with ``upper``, one set with itself and
    i0 = j0, the pairs i ≤ j, the diagonal as ρ = 1 exactly, 1 − ρ = 0, 1 + ρ = 2), written
    into I, J (unit indices), RHO, OM, OP, DG; R, OMR, OPR hold the block's geometry (entry
    (i − i0, j − j0)).
    Returns (n, i, j): their number and the pair after them (i = i1 at the end)."""
    n = 0
    while i < i1 and n < _CHUNK:
        I[n] = i
        J[n] = j
        if upper and i == j:
            DG[n] = True
            RHO[n], OM[n], OP[n] = 1.0, 0.0, 2.0
        else:
            DG[n] = False
            RHO[n], OM[n], OP[n] = R[i - i0, j - j0], OMR[i - i0, j - j0], OPR[i - i0, j - j0]
        n += 1
        j += 1
        if j == j1:
            i += 1
            j = i if upper else j0
    return n, i, j


@jit
def _moments_chunked(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, upper,
                     rtol, atol, qtol, maxint, C, B, A, D, AL, DL, WS, WI, WB):
    """C, B, A, D of the pairs of :func:`_chunk_index` (``upper``: one set with itself, pairs
    i ≤ j, C_ji = C_ij etc. filled from the same evaluation) by :func:`pl_batch._moments_list` on
    consecutive chunks of :data:`pl_front._CHUNK` pairs, each scattered into the outputs at once:
    the pair list and the per-pair results never exist for all pairs.  Identical results: the
    evaluations act pair by pair.  The scratch (AL, DL: m1×m2, read only with ``upper``; WS, WI, WB
    of :func:`pl_batch._list_scratch`) is the caller's, so that a GD loop allocates it once
    (:func:`popdyn._kernels.fused.workspace`).

    With ``upper`` the chunks write the upper triangles only (rows, contiguous), A_ji and D_ji
    into the upper triangles of AL and DL at (i, j); the lower triangles are then
    filled by a tiled transpose (:func:`_fill_lower`) rather than down the columns chunk by
    chunk (one cache line per row and array)."""
    m1 = al1.shape[0]
    m2 = al2.shape[0]
    if m1 == 0 or m2 == 0:
        return
    CI, CJ = _chunk_starts(m1, m2, upper)
    ng = min(_PAR_GROUPS, CI.shape[0] // _PAR_MIN_CHUNKS)
    if ng >= 2:
        _moments_chunked_par(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, upper,
                             rtol, atol, qtol, maxint, C, B, A, D, AL, DL, CI, CJ, ng)
    else:
        _run_chunks(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2,
                    _unit_array(U1, p1, q1, al1, be1), _unit_array(U2, p2, q2, al2, be2),
                    R, OMR, OPR, upper, rtol, atol, qtol, maxint, C, B, A, D, AL, DL,
                    CI, CJ, 0, CI.shape[0], 1, WS, WI, WB)
    if upper:
        _fill_lower(C, B, A, D, AL, DL)


#: the parallel path of :func:`_moments_chunked`: at most this many groups of consecutive chunks
#: (each with its own scratch), each of at least :data:`_PAR_MIN_CHUNKS` chunks; fewer chunks
#: than two groups' worth take the serial loop.  The grouping does not depend on the number of
#: threads, and neither do the results.
_PAR_GROUPS = 16
_PAR_MIN_CHUNKS = 4


@jit
def _chunk_starts(m1, m2, upper):
    """The first pair (i, j) of every chunk in :func:`_chunk_index`'s row-by-row order (the
    chunks of :func:`_moments_chunked` are its consecutive runs of :data:`pl_front._CHUNK`
    pairs), found in one pass over the rows."""
    npairs = m1 * (m1 + 1) // 2 if upper else m1 * m2
    nch = (npairs + _CHUNK - 1) // _CHUNK
    CI = np.empty(nch, np.int64)
    CJ = np.empty(nch, np.int64)
    c = 0
    done = 0                          # pairs before row i
    for i in range(m1):
        j0 = i if upper else 0
        row = m2 - j0
        while c < nch and c * _CHUNK < done + row:
            CI[c] = i
            CJ[c] = j0 + (c * _CHUNK - done)
            c += 1
        done += row
    return CI, CJ


@jit
def _chunk_arrays():
    """The per-chunk pair lists (I, J, ρ, 1 − ρ, 1 + ρ, diagonal flags) and results of
    :func:`pl_batch._moments_list` for chunks of at most :data:`pl_front._CHUNK` pairs."""
    return (np.empty(_CHUNK, np.int64), np.empty(_CHUNK, np.int64), np.empty(_CHUNK),
            np.empty(_CHUNK), np.empty(_CHUNK), np.empty(_CHUNK, np.bool_),
            np.empty((_CHUNK, 6)))


@jit
def _run_chunks(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, UA1, UA2, R, OMR, OPR, upper,
                rtol, atol, qtol, maxint, C, B, A, D, AL, DL, CI, CJ, c0, c1, cs, WS, WI, WB):
    """Chunks c = c0, c0 + cs, … < c1 (starts CI, CJ of :func:`_chunk_starts`), each evaluated by
    :func:`pl_batch._moments_list` and scattered into C, B, A, D (with ``upper`` also A_ji, D_ji
    into AL, DL at (i, j)), with the scratch WS, WI, WB."""
    m1 = al1.shape[0]
    m2 = al2.shape[0]
    I, J, RHO, OM, OP, DG, out = _chunk_arrays()
    for c in range(c0, c1, cs):
        n, _, _ = _chunk_index(R, OMR, OPR, CI[c], CJ[c], 0, m1, 0, m2, upper, I, J, RHO, OM,
                               OP, DG)
        _moments_list(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, UA1, UA2, I[:n], J[:n],
                      RHO[:n], OM[:n], OP[:n], DG[:n], rtol, atol, qtol, maxint, out[:n],
                      WS, WI, WB)
        for k in range(n):
            ii = I[k]
            jj = J[k]
            C[ii, jj] = out[k, 0]
            B[ii, jj] = out[k, 1]
            A[ii, jj] = out[k, 2]
            D[ii, jj] = out[k, 4]
        if upper:
            for k in range(n):
                ii = I[k]
                jj = J[k]
                AL[ii, jj] = out[k, 3]
                DL[ii, jj] = out[k, 5]


@jit(parallel=True, nogil=True)
def _moments_chunked_par(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, upper,
                         rtol, atol, qtol, maxint, C, B, A, D, AL, DL, CI, CJ, ng):
    """The chunks of :func:`_moments_chunked` (the same pairs, evaluated by the same code,
    :func:`_run_chunks`) in ``ng`` groups run by ``prange`` on numba's threads, each group with
    its own scratch; group g takes the chunks g, g + ng, g + 2ng, … (interleaved, so that the
    static split of the groups among threads gets pairs from every part of the matrix).  Every output entry is written by exactly one chunk and nothing
    is summed across chunks, so the results are the same bits on any number of threads."""
    UA1 = _unit_array(U1, p1, q1, al1, be1)
    UA2 = _unit_array(U2, p2, q2, al2, be2)
    nch = CI.shape[0]
    for g in prange(ng):
        WS, WI, WB = _list_scratch()
        _run_chunks(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, UA1, UA2, R, OMR, OPR, upper,
                    rtol, atol, qtol, maxint, C, B, A, D, AL, DL, CI, CJ, g, nch, ng, WS, WI, WB)


#: tile of the transpose of :func:`_fill_lower` (4 arrays × 2 tiles of 32² doubles: 64 KiB)
_TT = 32


@jit
def _fill_lower(C, B, A, D, AL, DL):
    """The lower triangles (j > i) of :func:`_moments_chunked`'s outputs for one set with
    itself: C_ji = C_ij, B_ji = B_ij, A_ji = AL_ij, D_ji = DL_ij, tile by tile (:data:`_TT`);
    from :data:`_PAR_FILL` units on, the row tiles are copied in parallel
    (:func:`_fill_lower_par`; copies only, the same bits)."""
    m = C.shape[0]
    if m >= _PAR_FILL:
        _fill_lower_par(C, B, A, D, AL, DL)
        return
    for i0 in range(0, m, _TT):
        _fill_row_tile(C, B, A, D, AL, DL, i0)


#: units from which :func:`_fill_lower` copies in parallel
_PAR_FILL = 256


@jit(parallel=True, nogil=True)
def _fill_lower_par(C, B, A, D, AL, DL):
    """:func:`_fill_lower`'s row tiles on numba's threads, the k-th first and the k-th last
    together (the triangle's long and short rows: balanced halves under a static split)."""
    m = C.shape[0]
    nt = (m + _TT - 1) // _TT
    for k in prange((nt + 1) // 2):
        _fill_row_tile(C, B, A, D, AL, DL, k * _TT)
        if nt - 1 - k != k:
            _fill_row_tile(C, B, A, D, AL, DL, (nt - 1 - k) * _TT)


@jit
def _fill_row_tile(C, B, A, D, AL, DL, i0):
    """The copies of :func:`_fill_lower` for the rows i0 ≤ i < i0 + :data:`_TT`, tile by tile."""
    m = C.shape[0]
    i1 = min(i0 + _TT, m)
    for j0 in range(i0, m, _TT):
        j1 = min(j0 + _TT, m)
        for i in range(i0, i1):
            for j in range(max(j0, i + 1), j1):
                C[j, i] = C[i, j]
                B[j, i] = B[i, j]
                A[j, i] = AL[i, j]
                D[j, i] = DL[i, j]


@jit
def pl_pair_moments(p1, q1, al1, be1, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                    rtol=RTOL, atol=ATOL, qtol=QTOL, maxint=MAXINT):
    """Pair moments of two sets of PL units: fills the m1×m2 arrays C, B, A, D.

    Parameters
    ----------
    p1, q1, al1, be1 : (m1,) float64
        Set 1: σ = p relu + q id, α = |w| ≥ 0, β = b.
    p2, q2, al2, be2 : (m2,) float64
        Set 2.
    R, OMR, OPR : (m1, m2) float64
        ρ = θᵢ·θⱼ, 1 − ρ and 1 + ρ (the last two computed without cancellation, e.g. as
        ½|θᵢ − θⱼ|², ½|θᵢ + θⱼ|²).  Ignored where αᵢ = 0 or αⱼ = 0.
    C, B, A, D : (m1, m2) float64
        Outputs: E[σᵢσⱼ], E[σ'ᵢσ'ⱼ], E[αᵢσ''ᵢσⱼ], E[σ'ᵢσⱼ].
    rtol, atol : float
        Error targets of the closed forms (relative, and absolute in units of the product of
        the two units' RMS sizes); entries whose estimated error exceeds them are recomputed
        by adaptive quadrature.
    qtol, maxint : float, int
        Relative tolerance and interval cap of that quadrature.
    """
    pl_pair_moments_units(pl_units(p1, q1, al1, be1), p1, q1, al1, be1,
                          pl_units(p2, q2, al2, be2), p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                          rtol, atol, qtol, maxint)


@jit
def pl_pair_moments_units(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                          rtol, atol, qtol, maxint):
    """:func:`pl_pair_moments` given the canonical forms U1, U2 of the two sets
    (:func:`pl_pair.pl_units`).  Bias-free sets (every β = 0, every α > 0): the arc-cosine closed
    forms of :mod:`popdyn._kernels.arccos`."""
    if _ac.bias_free(be1, al1, be2, al2):
        _ac.pair_moments(p1, q1, al1, p2, q2, al2, R, OMR, OPR, C, B, A, D)
        return
    WS, WI, WB = _list_scratch()
    pl_pair_moments_ws(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                       rtol, atol, qtol, maxint, WS, WI, WB)


@jit
def pl_pair_moments_ws(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, C, B, A, D,
                       rtol, atol, qtol, maxint, WS, WI, WB):
    """:func:`pl_pair_moments_units` with the caller's scratch WS, WI, WB
    (:func:`pl_batch._list_scratch`)."""
    if _ac.bias_free(be1, al1, be2, al2):
        _ac.pair_moments(p1, q1, al1, p2, q2, al2, R, OMR, OPR, C, B, A, D)
        return
    E = np.empty((0, 0))
    _moments_chunked(U1, p1, q1, al1, be1, U2, p2, q2, al2, be2, R, OMR, OPR, False,
                     rtol, atol, qtol, maxint, C, B, A, D, E, E, WS, WI, WB)


@jit
def pl_self_moments(p, q, al, be, R, OMR, OPR, C, B, A, D,
                    rtol=RTOL, atol=ATOL, qtol=QTOL, maxint=MAXINT):
    """Pair moments of one set of PL units with itself: fills the m×m arrays C, B, A, D.

    Same conventions as :func:`pl_pair_moments`; one evaluation per unordered pair (one Φ₂
    call) fills C_ij = C_ji, B_ij = B_ji, A_ij, A_ji, D_ij, D_ji.  The diagonal uses ρ = 1
    exactly (and A_ii = 0: σᵢ(0) = 0); only the upper triangle (i < j) of R, OMR, OPR is read.
    """
    pl_self_moments_units(pl_units(p, q, al, be), p, q, al, be, R, OMR, OPR, C, B, A, D,
                          rtol, atol, qtol, maxint)


@jit
def pl_self_moments_units(U, p, q, al, be, R, OMR, OPR, C, B, A, D, rtol, atol, qtol, maxint):
    """:func:`pl_self_moments` given the units' canonical forms U (:func:`pl_pair.pl_units`).
    Bias-free sets (every β = 0, every α > 0): the arc-cosine closed forms of
    :mod:`popdyn._kernels.arccos`."""
    if _ac.bias_free(be, al, be, al):
        _ac.self_moments(p, q, al, R, OMR, OPR, C, B, A, D)
        return
    m = al.shape[0]
    WS, WI, WB = _list_scratch()
    pl_self_moments_ws(U, p, q, al, be, R, OMR, OPR, C, B, A, D, rtol, atol, qtol, maxint,
                       np.empty((m, m)), np.empty((m, m)), WS, WI, WB)


@jit
def pl_self_moments_ws(U, p, q, al, be, R, OMR, OPR, C, B, A, D, rtol, atol, qtol, maxint,
                       AL, DL, WS, WI, WB):
    """:func:`pl_self_moments_units` with the caller's scratch: AL, DL (m×m) and WS, WI, WB
    (:func:`pl_batch._list_scratch`)."""
    if _ac.bias_free(be, al, be, al):
        _ac.self_moments(p, q, al, R, OMR, OPR, C, B, A, D)
        return
    _moments_chunked(U, p, q, al, be, U, p, q, al, be, R, OMR, OPR, True,
                     rtol, atol, qtol, maxint, C, B, A, D, AL, DL, WS, WI, WB)
