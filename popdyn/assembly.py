r"""The assembly of the loss, gradient, AGOP and refit quadratic from the moments, written once
against an array context.

A student's population objective is a small algebra over its moments (docs/design.md §3, §5;
formulas in :mod:`popdyn.objective` and :mod:`popdyn.skip`): with student units
σ_j(w_j·x + b_j), output scale s, head a, intercept c and teacher weights v,

    L     = ½ (s² aᵀCa + 2sc aᵀμ0 + c² − 2(s aᵀ(Ct v) + c E[y]) + E[y²])
    ∂L/∂a = s (s C a + c μ0 − Ct v)             ∂L/∂c = s aᵀμ0 + c − E[y]
    ∂L/∂b = s a ∘ (s D a + c μ1 − Dt v)
    ∂L/∂W = s a ∘ [ θ ∘ (s A a + c μ2 − At v) + s B (a ∘ W) − Bt (v ∘ α*θ*) ]
    AGOP  = s² Wᵀ(aaᵀ ∘ B)W
    refit: G = s²(C − μ0μ0ᵀ), g = s(Ct v − μ0 E[y]), V_Y

and a linear skip v·x adds the terms of :mod:`popdyn.skip` (SK-1 to SK-3).  Each function here
takes an *array context* ``xp`` first, as mpmath writes its functions once against ``ctx``:
:data:`NUMPY` evaluates them in float64 on numpy arrays (the float engine), and certify's Arb
context (:data:`certify.arrays.ARB`) evaluates the same lines in ball arithmetic, every
operation rigorous.  Vectors support ``+``, ``-``, elementwise ``*`` and products with scalars;
matrices support ``+``, ``-`` and products with scalars; every other operation goes through the
context (:class:`ArrayContext`).  The operations of each formula are written in the order the
float engine has always evaluated them, so the float64 results are unchanged bit for bit.

The fused kernels (:func:`popdyn._kernels.fused.ridge_loss`, :func:`~popdyn._kernels.fused.ridge_grad`)
are the compiled float64 specialization of :func:`ridge_loss` and :func:`ridge_grad` that the
ridge family and the fused GD step evaluate (the fused step and the general path must agree bit
for bit).  tests/popdyn/test_assembly.py checks the numpy lines and the kernels against the
formulas written out in exact rational arithmetic, and tests/certify/test_arrays.py that the
Arb lines enclose those exact values.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ArrayContext", "NUMPY", "ridge_loss", "ridge_grad", "agop", "refit_quadratic",
           "feature_loss", "swiglu_gram", "swiglu_agop", "skip_loss", "skip_grad", "skip_agop",
           "skip_refit"]


class ArrayContext:
    """The operations the assembly needs beyond ``+``, ``-`` and elementwise ``*``.

    Vectors are 1-D arrays (length n), matrices 2-D (n × k).  A context implements every
    method; this one is the float64 numpy context (:data:`NUMPY`)."""

    name = "numpy"

    def matvec(self, M, x):
        """M x."""
        return M @ x

    def rmatvec(self, M, x):
        """Mᵀ x."""
        return M.T @ x

    def vdot(self, x, y):
        """x · y (a scalar)."""
        return x @ y

    def vecmat(self, x, M):
        """xᵀ M (a vector)."""
        return x @ M

    def hadamard(self, X, Y):
        """X ∘ Y (entrywise)."""
        return X * Y

    def matmul(self, A, B):
        """A B."""
        return A @ B

    def transpose(self, A):
        """Aᵀ."""
        return A.T

    def outer(self, x, y):
        """x yᵀ."""
        return np.outer(x, y)

    def scale_rows(self, x, M):
        """x_i M_ij (row i of M times x_i)."""
        return x[:, None] * M

    def scale_cols(self, M, x):
        """M_ij x_j (column j of M times x_j)."""
        return M * x[None, :]

    def sym(self, A):
        """½(A + Aᵀ)."""
        return 0.5 * (A + A.T)


#: the float64 context: numpy arrays
NUMPY = ArrayContext()


# ------------------------------------------------------------------------- ridge family
def ridge_loss(xp, s, a, c, C, mu0, Ct, v, ey, ey2):
    """L = ½(E[f²] − 2E[fy] + E[y²]) from the moments (terms grouped as in the module docstring
    to limit cancellation)."""
    ff = s * s * xp.vdot(a, xp.matvec(C, a)) + 2 * s * c * xp.vdot(a, mu0) + c * c
    fy = s * xp.vdot(a, xp.matvec(Ct, v)) + c * ey
    return (ff - 2 * fy + ey2) / 2


def ridge_grad(xp, s, a, W, c, bias, intercept, theta, C, B, A, D, mu0, mu1, mu2, Ct, Bt, At,
               Dt, v, vU, ey):
    """(∂L/∂a, ∂L/∂W, ∂L/∂b, ∂L/∂c) from the moments; ∂L/∂b is None without biases and ∂L/∂c
    None with the intercept fixed.  ``theta`` holds the unit directions θ_j as rows and ``vU``
    the rows v_t α*_t θ*_t of the teacher (Bt has one column per teacher direction)."""
    ga = s * (s * xp.matvec(C, a) + c * mu0 - xp.matvec(Ct, v))
    gc = s * xp.vdot(a, mu0) + c - ey if intercept else None
    gb = s * a * (s * xp.matvec(D, a) + c * mu1 - xp.matvec(Dt, v)) if bias else None
    scal = s * xp.matvec(A, a) + c * mu2 - xp.matvec(At, v)
    rest = s * xp.matmul(B, xp.scale_rows(a, W)) - xp.matmul(Bt, vU)
    gW = xp.scale_rows(s * a, xp.scale_rows(scal, theta) + rest)
    return ga, gW, gb, gc


def agop(xp, s, a, W, B):
    """The AGOP s² Wᵀ(aaᵀ ∘ B)W (symmetrized) from B = E[σ′_iσ′_j]."""
    K = (s * s) * xp.scale_cols(xp.scale_rows(a, B), a)
    return xp.sym(xp.matmul(xp.transpose(W), xp.matmul(K, W)))


def refit_quadratic(xp, s, C, mu0, ysig, ey):
    """(G, g) of the refit of the head and intercept on the frozen features: the risk of a head
    a is V_Y − 2aᵀg + aᵀGa with G = s²(C − μ0μ0ᵀ) (symmetrized) and g = s(E[yσ] − μ0 E[y])
    (``ysig`` = E[y σ_j], for a ridge student Ct v)."""
    G = xp.sym((s * s) * (C - xp.outer(mu0, mu0)))
    g = s * (ysig - mu0 * ey)
    return G, g


def feature_loss(xp, a, c, Phi, phibar, yphi, ey, ey2):
    """L = ½(aᵀΦa + 2c aᵀφ̄ + c² − 2(aᵀE[yφ] + c E[y]) + E[y²]) of a readout f = aᵀφ(x) + c
    from the feature moments Φ = E[φφᵀ], φ̄ = E[φ], E[yφ] (a SwiGLU student's, SG-1)."""
    ff = xp.vdot(xp.vecmat(a, Phi), a) + 2 * c * xp.vdot(a, phibar) + c * c
    fy = xp.vdot(a, yphi) + c * ey
    return (ff - 2 * fy + ey2) / 2


# ------------------------------------------------------------------------------- SwiGLU
def swiglu_gram(xp, VV, GV, dl, M00, M11, M20):
    """Φ = E[φ_iφ_j] (symmetrized) of the SwiGLU features φ_j = SiLU(g_j·x)(v_j·x) (SG-1,
    :mod:`popdyn.swiglu`): VV = (v_i·v_j), GV = (g_i·v_j), dl_j = g_j·v_j and the SiLU pair
    moments M_pq of the unit pairs."""
    GG2 = xp.hadamard(GV, xp.transpose(GV)) + xp.outer(dl, dl)
    dGM = xp.hadamard(xp.scale_rows(dl, GV), M20)
    return xp.sym(xp.hadamard(VV, M00) + dGM + xp.transpose(dGM) + xp.hadamard(GG2, M11))


def swiglu_agop(xp, a, G, V, VV, GV, dl, M00, M11, M20, M22, M31):
    """The AGOP of a SwiGLU student (symmetrized): ∇_x f = Σ_j a_j [SiLU′(g_j·x)(v_j·x) g_j +
    SiLU(g_j·x) v_j], so M = Gᵀ(aaᵀ ∘ Q)G + X + Xᵀ + Vᵀ(aaᵀ ∘ M00)V with X = Gᵀ(aaᵀ ∘ E)V
    (:func:`popdyn.swiglu.agop`; rows g_j of G, v_j of V)."""
    aa = xp.outer(a, a)
    GG2 = xp.hadamard(GV, xp.transpose(GV)) + xp.outer(dl, dl)
    dG = xp.scale_rows(dl, GV)
    Q = (xp.hadamard(VV, M11) + xp.hadamard(dG, M31) + xp.hadamard(GG2, M22)
         + xp.transpose(xp.hadamard(dG, M31)))
    E = xp.scale_rows(dl, M20) + xp.hadamard(xp.transpose(GV), M11)
    Gt = xp.transpose(G)
    X = xp.matmul(Gt, xp.matmul(xp.hadamard(aa, E), V))
    M = (xp.matmul(Gt, xp.matmul(xp.hadamard(aa, Q), G)) + X + xp.transpose(X)
         + xp.matmul(xp.transpose(V), xp.matmul(xp.hadamard(aa, M00), V)))
    return xp.sym(M)


# -------------------------------------------------------------------- the linear skip
def skip_loss(xp, L0, s, a, W, v, mu1, tau):
    """L = L0 + s Σ_j a_j E[σ′_j] w_j·v − v·τ + ½|v|² (SK-1; L0 the loss without the skip,
    μ1_j = E[σ′_j], τ = E[y x])."""
    r = xp.matvec(W, v)
    return L0 + s * xp.vdot(a * mu1, r) - xp.vdot(v, tau) + xp.vdot(v, v) / 2


def skip_grad(xp, g0, s, a, W, v, mu1, rr, e2, e2z, theta, tau, bias):
    """(∂L/∂a, ∂L/∂W, ∂L/∂b, ∂L/∂v) of a skip student (SK-2) from the gradient
    ``g0 = (ga, gW, gb)`` without the skip, μ1_j = E[σ′_j] and τ = E[y x].  The second-order
    terms enter as ``rr_j · e2_j`` = E[σ″_j] w_j·v and ``rr_j · e2z_j`` = E[σ″_j z_j] w_j·v in
    the family's own convention (the float engine: rr = Wv with e2, e2z per unit of w; certify:
    rr = θv with e2, e2z carrying the unit's scale α_j), rows θ_j of ``theta``."""
    ga0, gW0, gb0 = g0
    r = xp.matvec(W, v)
    ga = ga0 + s * mu1 * r
    gb = gb0 + s * a * rr * e2 if bias else gb0
    gW = gW0 + xp.scale_rows(s * a, xp.outer(mu1, v) + xp.scale_rows(rr * e2z, theta))
    gv = s * xp.rmatvec(W, a * mu1) - tau + v
    return ga, gW, gb, gv


def skip_agop(xp, M0, s, a, W, v, mu1):
    """M = M0 + v vᵀ + u vᵀ + v uᵀ (symmetrized) with u = s Wᵀ(a ∘ μ1) (SK-3; M0 the AGOP
    without the skip)."""
    u = s * xp.rmatvec(W, a * mu1)
    return xp.sym(M0 + xp.outer(v, v) + xp.outer(u, v) + xp.outer(v, u))


def skip_refit(xp, g, V, s, W, v, mu1, tau):
    """(g, V) of the refit with the skip frozen: g − s μ1 ∘ (Wv) and V − 2v·τ + |v|² (the
    target is y − v·x)."""
    return g - s * mu1 * xp.matvec(W, v), V - 2 * xp.vdot(v, tau) + xp.vdot(v, v)
