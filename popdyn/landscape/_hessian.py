r"""Exact population loss, gradient and Hessian of bias-free piecewise-linear students.

Students: ``popdyn.Student(d, m, activation in {"relu", "leaky_relu"}, bias=False, skip=...,
intercept=..., scaling=...)``, i.e. f(x) = s Σ_j a_j σ(w_j·x) + v·x + c with σ = p·relu + q·id
((p, q) = (1, 0) for relu, (1 − s, s) for leaky relu of slope s); teachers
``popdyn.Teacher.network(relu or leaky_relu, V, U)`` without biases, y = Σ_k v*_k σ*(u_k·x).

Closed forms (x ~ N(0, I_d)).  For two units with weights w_i, w_j ≠ 0, directions θ, angle φ
(ρ = cos φ), the degree-one arc-cosine kernel (Cho & Saul 2009; docs/design.md §3 at zero bias)

    K_relu(w_i, w_j) = E[relu(w_i·x) relu(w_j·x)] = |w_i||w_j| (sin φ + (π − φ) cos φ) / (2π)   (H-1)

and, for σ_i = p_i relu + q_i id, E[relu(w_i·x)(w_j·x)] = w_i·w_j / 2, so

    K_ij = p_i p_j K_relu + λ_ij w_i·w_j,   λ_ij = (p_i q_j + q_i p_j)/2 + q_i q_j,          (H-2)
    μ(w) = E[σ(w·x)] = p|w|/√(2π),   μ1 = E[σ′] = p/2 + q,   E[σ(w·x) x] = μ1 w (Stein).

Derivatives of (H-1), with p_ij = θ_j − ρθ_i (|p_ij| = sin φ):

    ∇_{w_i} K      = (|w_j| sin φ θ_i + (π − φ)|w_j| θ_j) / (2π)                              (H-3)
    ∇²_{w_i w_i} K = |w_j| / (2π|w_i|) · [sin φ (I − θ_iθ_iᵀ) + p_ij p_ijᵀ / sin φ]           (H-4)
    ∇_{w_i}∇_{w_j}ᵀ K = [(π − φ) I + sin φ θ_iθ_jᵀ + p_ij p_jiᵀ / sin φ] / (2π)                 (H-5)

(p p′ᵀ / sin φ = sin φ p̂ p̂′ᵀ → 0 at φ → 0 and φ → π).  K is C² but not C³ at φ ∈ {0, π}
(K_relu = |w_i||w_j|(1/2 − φ²/4 + φ³/(6π) + …)), so (H-4), (H-5) at duplicated (φ = 0) and
antiparallel (φ = π) units are the limits: (H-4) = 0 and (H-5) = I/2 at φ = 0; both 0 at φ = π.
φ is computed as 2 atan2(|θ_i − θ_j|, |θ_i + θ_j|) (accurate near 0 and π).

The loss (docs/design.md §2; popdyn.skip SK-1)

    L = ½ s² aᵀKa − s aᵀK*v* + s c aᵀμ + ½c² − c E[y] + ½E[y²] + s μ1 aᵀWv − v·τ + ½|v|²,
    τ = E[y x] = Σ_k v*_k μ1*_k u_k,

is a polynomial in a, v, c and a sum of the kernels (H-2) in W, so its Hessian is assembled
from (H-3)–(H-5) and the one-unit derivatives ∇μ = pθ/√(2π), ∇²μ = p(I − θθᵀ)/(√(2π)|w|).  It
does not exist at w_j = 0 (|w| is not differentiable there): such states raise ``ValueError``.

Flattening order of the parameter vector (:func:`flatten`, :func:`unflatten`): a (m), W (m·d,
row-major: w_1 first), b (m; bias students only), v (d; skip students only), c (intercept
students only).  Fixed parameters (b of a bias-free student, v of a non-skip student, c of an
intercept-free student) are not coordinates.

References
----------
Cho & Saul (2009), arc-cosine kernels; docs/design.md §3 (Stein's lemma, the zero-bias closed form);
"Removing spurious minima for planar features by skip connections".
"""
from __future__ import annotations

import numpy as np

from ..families import capability
from ..teachers import Teacher
from ..teachers.network import NetworkTeacher
from ._biased import loss_grad_hessian as _biased_lgh
from ._biased import supported as _biased_supported
from ._layout import Layout, flatten, layout, unflatten  # noqa: F401  (re-exported)
from ._smooth import loss_grad_hessian as smooth_lgh
from ._smooth import supported as smooth_supported

_SQ2PI = np.sqrt(2.0 * np.pi)


# ------------------------------------------------------------------------------ kernels
def _geometry(Wi, Wj):
    """Norms, directions, φ, sin φ, cos φ and p_ij = θ_j − ρθ_i for all pairs (i, j)."""
    ni = np.linalg.norm(Wi, axis=1)
    nj = np.linalg.norm(Wj, axis=1)
    Ti = Wi / ni[:, None]
    Tj = Wj / nj[:, None]
    dif = np.linalg.norm(Ti[:, None, :] - Tj[None, :, :], axis=2)
    sm = np.linalg.norm(Ti[:, None, :] + Tj[None, :, :], axis=2)
    phi = 2.0 * np.arctan2(dif, sm)
    sphi, rho = np.sin(phi), np.cos(phi)
    P = Tj[None, :, :] - rho[:, :, None] * Ti[:, None, :]          # p_ij
    return ni, nj, Ti, Tj, phi, sphi, rho, P


def _unit(P):
    n = np.linalg.norm(P, axis=-1, keepdims=True)
    return np.divide(P, n, out=np.zeros_like(P), where=n > 0)


def relu_kernel(Wi, Wj, *, hessian: bool = True):
    """(K, G1, H11, H12) of (H-1), (H-3)–(H-5) for all pairs of rows of ``Wi`` (m, d), ``Wj`` (n, d).

    Returns
    -------
    K : (m, n)
    G1 : (m, n, d)       ∇_{w_i} K(w_i, w_j)
    H11 : (m, n, d, d)   ∇²_{w_i w_i} K
    H12 : (m, n, d, d)   ∇_{w_i} ∇_{w_j}ᵀ K
    """
    ni, nj, Ti, Tj, phi, sphi, rho, P = _geometry(Wi, Wj)
    two_pi = 2.0 * np.pi
    K = np.outer(ni, nj) * (sphi + (np.pi - phi) * rho) / two_pi
    G1 = (nj[None, :, None] * (sphi[:, :, None] * Ti[:, None, :]
                               + (np.pi - phi)[:, :, None] * Tj[None, :, :])) / two_pi
    if not hessian:
        return K, G1, None, None
    d = Wi.shape[1]
    I = np.eye(d)
    Ph = _unit(P)                                  # p̂_ij
    Qh = _unit(Ti[:, None, :] - rho[:, :, None] * Tj[None, :, :])   # p̂_ji
    proj = I[None, :, :] - np.einsum("ia,ib->iab", Ti, Ti)
    H11 = (nj[None, :] / ni[:, None] * sphi / two_pi)[:, :, None, None] * (
        proj[:, None, :, :] + np.einsum("ija,ijb->ijab", Ph, Ph))
    H12 = ((np.pi - phi)[:, :, None, None] * I
           + sphi[:, :, None, None] * (np.einsum("ia,jb->ijab", Ti, Tj)
                                       + np.einsum("ija,ijb->ijab", Ph, Qh))) / two_pi
    return K, G1, H11, H12


def pl_kernel(Wi, pi, qi, Wj, pj, qj, *, hessian: bool = True):
    """(K, G1, H11, H12) of (H-2) for units σ_i = p_i relu + q_i id (scalars p, q per side)."""
    K, G1, H11, H12 = relu_kernel(Wi, Wj, hessian=hessian)
    lam = 0.5 * (pi * qj + qi * pj) + qi * qj
    K = pi * pj * K + lam * (Wi @ Wj.T)
    G1 = pi * pj * G1 + lam * Wj[None, :, :]
    if hessian:
        H11 = pi * pj * H11
        H12 = pi * pj * H12 + lam * np.eye(Wi.shape[1])
    return K, G1, H11, H12


# ------------------------------------------------------------------------------ checks
def supported(student, teacher) -> tuple:
    """(True, "") if the closed forms of this module apply to (student, teacher), else
    (False, reason)."""
    if (getattr(student, "family", None) is not None
            and capability(student.family, "ridge_loss") is None):
        return False, (f"the exact Hessian (popdyn.landscape) covers ridge and skip students; "
                       f"got a {student.family.label} student")
    if getattr(student, "act", None) is not None and student.act.kind == "smooth":
        return smooth_supported(student, teacher)               # smooth students
    if getattr(student, "act", None) is None or student.act.kind != "pl":
        return False, ("the exact Hessian is implemented for relu and leaky_relu students; got "
                       f"activation {getattr(student, 'activation', None)!r}")
    if student.bias:                       # students with biases: popdyn.landscape._biased
        return _biased_supported(student, teacher)
    if not isinstance(teacher, Teacher):
        return False, f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}"
    if not isinstance(teacher, NetworkTeacher) or teacher.activation.kind != "pl":
        return False, ("the exact Hessian needs a relu / leaky_relu network teacher "
                       f"(popdyn.Teacher.network); got a {type(teacher).__name__}")
    if np.any(teacher.bias != 0):          # teachers with biases: popdyn.landscape._biased
        return _biased_supported(student, teacher)
    if teacher.d != student.d:
        raise ValueError(f"`teacher` has input dimension {teacher.d} but the student has "
                         f"d = {student.d}")
    return True, ""


def _require(student, teacher):
    ok, why = supported(student, teacher)
    if not ok:
        raise ValueError(why)


# ------------------------------------------------------------------------------ assembly
def _teacher_terms(teacher):
    """(U (k, d) rows α_kθ_k, v* (k,), p*, q*, E[y], E[y²], τ = E[yx]) of a PL network teacher."""
    U = teacher.theta * teacher.alpha[:, None]
    vs = np.asarray(teacher.weights, dtype=np.float64)
    pt, qt = teacher.activation.p, teacher.activation.q
    nz = teacher.alpha > 0
    Uz = U[nz]
    ey = float(vs[nz] @ (pt * teacher.alpha[nz] / _SQ2PI))
    Kyy = pl_kernel(Uz, pt, qt, Uz, pt, qt, hessian=False)[0] if Uz.size else np.zeros((0, 0))
    ey2 = float(vs[nz] @ Kyy @ vs[nz])
    tau = (pt / 2.0 + qt) * (U.T @ vs)
    return Uz, vs[nz], pt, qt, ey, ey2, tau


def loss_grad_hessian(student, params, teacher, *, hessian: bool = True):
    """Exact L, ∇L and ∇²L of a bias-free relu / leaky-relu student (formulas H-1..H-5).

    Parameters
    ----------
    student : popdyn.Student
        ``activation`` relu or leaky_relu, ``bias=False``; ``skip``, ``intercept`` and
        ``scaling`` free.
    params : popdyn.Params
        The state; every w_j must be nonzero.
    teacher : popdyn.Teacher
        A relu / leaky-relu network teacher without biases.
    hessian : bool
        If False, return (L, ∇L, None).

    Returns
    -------
    L : float
        ½E[(f − y)²] (not normalized).
    g : ndarray (P,)
        ∇L in the order of :class:`Layout`.
    H : ndarray (P, P) or None
        ∇²L (symmetrized: the two halves agree to rounding by construction).

    Raises
    ------
    ValueError
        Unsupported student / teacher (the message names what is supported), or a zero w_j.
    """
    if getattr(student, "act", None) is not None and student.act.kind == "smooth":
        return smooth_lgh(student, params, teacher, hessian=hessian)    # smooth students
    _require(student, teacher)
    if student.bias or np.any(teacher.bias != 0):     # B-1..B-10 of popdyn.landscape._biased
        return _biased_lgh(student, params, teacher, hessian=hessian)
    student.check(params)
    lay = layout(student)
    m, d, s = lay.m, lay.d, student.s
    a, W, v, c = params.a, params.W, params.v, params.c
    nrm = np.linalg.norm(W, axis=1)
    if np.any(nrm == 0):
        j = int(np.flatnonzero(nrm == 0)[0])
        raise ValueError(f"`params.W[{j}]` is zero: the relu loss has no Hessian at w_j = 0 "
                         "(|w| is not differentiable there)")
    p, q = student.act.p, student.act.q
    mu1 = p / 2.0 + q
    U, vs, pt, qt, ey, ey2, tau = _teacher_terms(teacher)
    K, G1, H11, H12 = pl_kernel(W, p, q, W, p, q, hessian=hessian)
    if U.shape[0]:
        Kt, Gt, Ht11, _ = pl_kernel(W, p, q, U, pt, qt, hessian=hessian)
    else:
        Kt, Gt, Ht11 = np.zeros((m, 0)), np.zeros((m, 0, d)), np.zeros((m, 0, d, d))
    Th = W / nrm[:, None]
    mu = p * nrm / _SQ2PI
    dmu = p * Th / _SQ2PI                                       # ∇μ_i (m, d)
    Wv = W @ v
    # loss
    L = (0.5 * s * s * (a @ K @ a) - s * (a @ (Kt @ vs)) + s * c * (a @ mu) + 0.5 * c * c
         - c * ey + 0.5 * ey2 + s * mu1 * (a @ Wv) - v @ tau + 0.5 * (v @ v))
    # gradient
    Sw = np.einsum("j,ija->ia", a, G1)                          # Σ_j a_j ∇_{w_i}K_ij
    St = np.einsum("k,ika->ia", vs, Gt)                         # Σ_k v*_k ∇_{w_i}K*_ik
    inner = s * s * Sw - s * St + s * c * dmu + s * mu1 * v[None, :]
    g = np.zeros(lay.size)
    g[lay.a] = s * s * (K @ a) - s * (Kt @ vs) + s * c * mu + s * mu1 * Wv
    g[lay.W] = (a[:, None] * inner).ravel()
    if lay.skip:
        g[lay.v] = s * mu1 * (W.T @ a) - tau + v
    if lay.intercept:
        g[lay.c] = s * (a @ mu) + c - ey
    if not hessian:
        return float(L), g, None
    Hm = np.zeros((lay.size, lay.size))
    ia = np.arange(m)
    # a–a
    Hm[lay.a, lay.a] = s * s * K
    # a–W: H[a_i, w_l] = s² a_l G1(l, i) + δ_il inner_i
    AW = s * s * (a[None, :, None] * np.transpose(G1, (1, 0, 2)))   # [i, l, :] = s² a_l G1(l,i)
    AW[ia, ia, :] += inner
    Hm[lay.a, lay.W] = AW.reshape(m, m * d)
    # W–W
    WW = s * s * (a[:, None, None, None] * a[None, :, None, None]) * H12      # [l, n]
    diag = (s * s * a[:, None, None] * np.einsum("j,ijab->iab", a, H11)
            + s * s * (a * a)[:, None, None] * H12[ia, ia]
            - s * a[:, None, None] * np.einsum("k,ikab->iab", vs, Ht11))
    if lay.intercept:
        proj = np.eye(d)[None] - np.einsum("ia,ib->iab", Th, Th)
        diag = diag + (s * c * p / _SQ2PI) * (a / nrm)[:, None, None] * proj
    WW[ia, ia] = diag
    Hm[lay.W, lay.W] = WW.transpose(0, 2, 1, 3).reshape(m * d, m * d)
    if lay.skip:
        Hm[lay.v, lay.v] = np.eye(d)
        Hm[lay.a, lay.v] = s * mu1 * W
        Hm[lay.W, lay.v] = (s * mu1 * a[:, None, None] * np.eye(d)[None]).reshape(m * d, d)
    if lay.intercept:
        Hm[lay.c, lay.c] = 1.0
        Hm[lay.a, lay.c] = (s * mu)[:, None]
        Hm[lay.W, lay.c] = (s * a[:, None] * dmu).reshape(m * d, 1)
    # lower triangle of the off-diagonal blocks, then symmetrize the diagonal blocks' rounding
    Hm = np.triu(Hm) + np.triu(Hm, 1).T
    return float(L), g, Hm


def hessian(student, params, teacher) -> np.ndarray:
    """The exact population Hessian ∇²L (flattening order of :class:`Layout`)."""
    return loss_grad_hessian(student, params, teacher)[2]


def spectrum(student, params, teacher) -> np.ndarray:
    """Eigenvalues (ascending) of the exact Hessian :func:`hessian`."""
    return np.linalg.eigvalsh(hessian(student, params, teacher))
