r"""Certified population gradient-descent iterates.

Fixed-step population GD is the map F(x) = x − η ∇L(x) on the parameters x = (a, W) of a
bias-free ReLU student f(x) = Σ_j a_j relu(w_j·x) (standard scaling, no intercept) against a
ReLU teacher network y = Σ_t α_t relu(u_t·x), x ~ N(0, I_d), with the population loss
L = ½E[(f − y)²] in closed form (arc-cosine kernel; Cho & Saul 2009):

    E[relu(v·x) relu(w·x)] = ( sqrt(|v|²|w|² − (v·w)²) + (π − θ) v·w ) / (2π),
    θ = arccos( v·w / (|v||w|) ),   E[relu(w·x)²] = |w|²/2,   E[relu(u·x)] = |u|/√(2π).

:func:`certified_gd` propagates the *exact* iterates x_{n+1} = F(x_n) from the exact float start
in ball arithmetic (Arb) with the mean-value form

    F(X_n) ⊆ F(x̂_n) + J_F(X_n)·(X_n − x̂_n),   J_F = I − η ∇²L,

x̂_n the exact (prec-bit) midpoint of the box X_n, F(x̂_n) and the Jacobian enclosed in Arb on the box
(gradient and Hessian by forward-mode hyper-dual numbers over ``arb``: value, gradient and
Hessian carried through +, −, ·, /, sqrt, arccos — every rounding in Arb).  By the mean value
theorem (X_n is convex and contains x̂_n), X_{n+1} := F(x̂_n) + J_F(X_n)(X_n − x̂_n) ∋ F(x) for
every x ∈ X_n, so by induction X_n contains the exact n-th iterate.  Optionally the box is also
made to contain given float iterates (``track=``, e.g. popdyn's own run), so that one enclosure
holds both.  The normalized loss ℓ_n = 2L(x_n)/V_Y (the quantity popdyn records and
:func:`popdyn.plateau.plateau` reads) is enclosed by the mean-value form
ℓ(X) ⊆ ℓ(x̂) + ∇ℓ(X)·(X − x̂), and the AGOP M = Σ_jk a_j a_k w_j w_kᵀ (π − θ_jk)/(2π)
(E[1{w_j·x>0} 1{w_k·x>0}] = (π − θ_jk)/(2π)) by interval evaluation on the box, its alignment
with the teacher subspace by :func:`certify.alignment.alignment_from_matrix`.

The plateau endpoint follows popdyn.plateau's δ rule: the release E is the first update n with
|ℓ_n − ℓ_0| > δ.  It is *certified* when the enclosures give |ℓ_k − ℓ_0| ≤ δ for every k < E
and |ℓ_E − ℓ_0| > δ; otherwise the interval of updates where it cannot be decided is returned.

References
----------
Y. Cho, L. K. Saul, "Kernel methods for deep learning", NIPS 2009 (arc-cosine kernel);
R. E. Moore, "Interval Analysis" (1966) and A. Neumaier, "Interval methods for systems of
equations" (1990), §2 (mean-value form); F. Johansson, Arb (IEEE Trans. Comput. 66, 2017).
docs/design.md §5 (plateau rule), §6.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from flint import arb, arb_mat

from . import _arb as A
from .errors import CertificationError

__all__ = ["HyperDual", "relu_problem_loss", "GDEnclosure", "certified_gd"]

# ------------------------------------------------------------------------- hyper-duals
class HyperDual:
    """value, gradient (object array of arb, length P) and Hessian (P×P object array, or None
    for gradient-only evaluation) of a scalar function of P variables."""

    __slots__ = ("v", "g", "H")

    def __init__(self, v, g, H):
        self.v, self.g, self.H = v, g, H

    @staticmethod
    def variables(x, hessian: bool):
        P = len(x)
        out = []
        for i, xi in enumerate(x):
            g = np.array([arb(0)] * P, dtype=object)
            g[i] = arb(1)
            H = np.full((P, P), arb(0), dtype=object) if hessian else None
            out.append(HyperDual(arb(xi), g, H))
        return out

    def __add__(self, o):
        if not isinstance(o, HyperDual):
            return HyperDual(self.v + o, self.g, self.H)
        return HyperDual(self.v + o.v, self.g + o.g, None if self.H is None else self.H + o.H)

    __radd__ = __add__

    def __neg__(self):
        return HyperDual(-self.v, -self.g, None if self.H is None else -self.H)

    def __sub__(self, o):
        return self + (-o)

    def __rsub__(self, o):
        return (-self) + o

    def __mul__(self, o):
        if not isinstance(o, HyperDual):
            o = arb(o)
            return HyperDual(self.v * o, self.g * o, None if self.H is None else self.H * o)
        H = None
        if self.H is not None:
            H = self.H * o.v + o.H * self.v + np.outer(self.g, o.g) + np.outer(o.g, self.g)
        return HyperDual(self.v * o.v, self.g * o.v + o.g * self.v, H)

    __rmul__ = __mul__

    def apply(self, f0, f1, f2):
        """f(self) given f, f', f'' at the value (chain rule)."""
        H = None
        if self.H is not None:
            H = self.H * f1 + np.outer(self.g, self.g) * f2
        return HyperDual(f0, self.g * f1, H)

    def sqrt(self):
        r = self.v.sqrt()
        return self.apply(r, 1 / (2 * r), -1 / (4 * r * self.v))

    def inv(self):
        iv = 1 / self.v
        return self.apply(iv, -iv * iv, 2 * iv * iv * iv)

    def __truediv__(self, o):
        if not isinstance(o, HyperDual):
            return self * (1 / arb(o))
        return self * o.inv()

    def acos(self):
        c = self.v
        s2 = 1 - c * c
        s = s2.sqrt()
        return self.apply(c.acos(), -1 / s, -c / (s * s2))


def _dot(u, v):
    acc = u[0] * v[0]
    for i in range(1, len(u)):
        acc = acc + u[i] * v[i]
    return acc


def _kernel(nv2, nw2, dot, pi):
    """E[relu(v·x) relu(w·x)] from |v|², |w|², v·w (hyper-duals or arb)."""
    nn2 = nv2 * nw2
    nn = nn2.sqrt()
    sin_part = (nn2 - dot * dot).sqrt()
    theta = (dot / nn).acos()
    return (sin_part + (pi - theta) * dot) / (2 * pi)


def relu_problem_loss(a, W, alpha, U, pi=None):
    """L = ½E[(f − y)²] for the bias-free ReLU student (a, W) (hyper-duals or arb entries)
    against the teacher Σ_t α_t relu(u_t·x) (exact float arrays); returns (L, E[y²], E[y])."""
    pi = arb.pi() if pi is None else pi
    m, d = len(a), len(W[0])
    k = len(alpha)
    ua = [[arb(float(x)) for x in row] for row in U]
    al = [arb(float(x)) for x in alpha]
    n2 = [_dot(W[j], W[j]) for j in range(m)]
    # E[f²]
    ff = None
    for j in range(m):
        t = a[j] * a[j] * n2[j] / 2
        ff = t if ff is None else ff + t
        for l in range(j + 1, m):
            t = 2 * a[j] * a[l] * _kernel(n2[j], n2[l], _dot(W[j], W[l]), pi)
            ff = ff + t
    # E[f y]
    un2 = [_dot(ua[t], ua[t]) for t in range(k)]
    fy = None
    for j in range(m):
        for t in range(k):
            term = a[j] * al[t] * _kernel(n2[j], un2[t], _dot(W[j], ua[t]), pi)
            fy = term if fy is None else fy + term
    # E[y²], E[y]
    yy = arb(0)
    for t in range(k):
        yy = yy + al[t] * al[t] * un2[t] / 2
        for s in range(t + 1, k):
            yy = yy + 2 * al[t] * al[s] * _kernel(un2[t], un2[s], _dot(ua[t], ua[s]), pi)
    ey = arb(0)
    for t in range(k):
        ey = ey + al[t] * un2[t].sqrt() / (2 * pi).sqrt()
    return (ff - 2 * fy + yy) / 2, yy, ey


def _agop(a, W, pi):
    m, d = len(a), len(W[0])
    n2 = [_dot(W[j], W[j]) for j in range(m)]
    M = arb_mat(d, d)
    for j in range(m):
        for l in range(m):
            if j == l:
                B = arb(1) / 2
            else:
                c = _dot(W[j], W[l]) / (n2[j] * n2[l]).sqrt()
                B = (pi - c.acos()) / (2 * pi)
            coef = a[j] * a[l] * B
            for p in range(d):
                for q in range(d):
                    M[p, q] = M[p, q] + coef * W[j][p] * W[l][q]
    return M


# ------------------------------------------------------------------------- the iteration
@dataclass
class GDEnclosure:
    """Enclosures along the exact GD iterates.

    Attributes
    ----------
    loss_lo, loss_hi : ndarray (N+1,)
        Rigorous bounds of the normalized loss ℓ_n = 2L(x_n)/V_Y, n = 0..N.
    width : ndarray (N+1,)
        Max radius of the parameter box X_n (absolute).
    mid : ndarray (N+1, P)
        Box midpoints x̂_n (rounded to float for reporting; the iteration keeps them exact).
    E : dict
        Plateau release for the δ rule: {"delta", "certified" (bool), "E" (int or None),
        "range" (lo, hi): the updates between which the release is not decided}.
    alignment : dict
        n → :class:`certify.alignment.AlignmentBracket` at the requested updates.
    contains_track : bool or None
        Whether the given float iterates were inside every box (by construction with
        ``track``; None without it).
    """

    eta: float
    loss_lo: np.ndarray
    loss_hi: np.ndarray
    width: np.ndarray
    mid: np.ndarray
    E: dict
    alignment: dict = field(default_factory=dict)
    contains_track: bool | None = None
    prec: int = 128


def _release(lo, hi, delta):
    """Certified δ-rule release from loss enclosures (first n with |ℓ_n − ℓ_0| > δ)."""
    l0lo, l0hi = lo[0], hi[0]
    # |ℓ_n − ℓ_0| bounds (outward: the bounds are floats already rounded outward; the
    # differences below are rounded outward with nextafter)
    dmax = np.maximum(np.abs(hi - l0lo), np.abs(l0hi - lo))
    dmax = np.nextafter(dmax, np.inf)
    above = np.where(lo > l0hi, lo - l0hi, np.where(hi < l0lo, l0lo - hi, 0.0))
    above = np.nextafter(above, -np.inf)
    sure_out = np.flatnonzero(above > delta)
    maybe_out = np.flatnonzero(~(dmax <= delta))
    first_maybe = int(maybe_out[0]) if maybe_out.size else None
    first_sure = int(sure_out[0]) if sure_out.size else None
    if first_maybe is None:
        return {"delta": delta, "certified": True, "E": None, "range": None,
                "note": "never released within the horizon (certified)"}
    certified = first_sure is not None and first_sure == first_maybe
    return {"delta": delta, "certified": certified, "E": first_sure if certified else None,
            "range": (first_maybe, first_sure)}


def certified_gd(a0, W0, alpha, U, *, eta: float, n_steps: int, delta: float = 1e-3,
                 prec: int = 128, track=None, align_at=()) -> GDEnclosure:
    """Enclose the exact population GD iterates of the bias-free ReLU student (module
    docstring) from the exact float start (a0, W0).

    Parameters
    ----------
    a0 : (m,) float array
    W0 : (m, d) float array
        Start (exact binary values); m ≤ 8, d ≤ 8.
    alpha : (k,) float array
    U : (k, d) float array
        Teacher Σ_t α_t relu(u_t·x).
    eta : float
        GD step (popdyn's ``lr`` with standard scaling and unit multipliers).
    n_steps : int
        Number of updates N.
    delta : float
        Plateau band of the δ rule (popdyn.plateau).
    prec : int
        Arb precision (bits).
    track : (N+1, P) float array or None
        Float iterates (P = m + m·d, ordered a then W row-major) to be kept inside the boxes.
    align_at : sequence of int
        Updates at which the AGOP alignment is enclosed.

    Returns
    -------
    GDEnclosure

    Raises
    ------
    CertificationError
        When an enclosure stops being finite (e.g. a box reaching a kink of the kernel).
    """
    a0 = np.asarray(a0, dtype=np.float64)
    W0 = np.asarray(W0, dtype=np.float64)
    if a0.ndim != 1 or W0.ndim != 2 or W0.shape[0] != a0.shape[0]:
        raise ValueError(f"`a0` must be (m,) and `W0` (m, d), got {a0.shape} and {W0.shape}")
    m, d = W0.shape
    if not (1 <= m <= 8 and 1 <= d <= 8):
        raise ValueError(f"certified GD is for m <= 8 and d <= 8, got m = {m}, d = {d}")
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    U = np.atleast_2d(np.asarray(U, dtype=np.float64))
    if U.shape != (alpha.shape[0], d):
        raise ValueError(f"`U` must be (k, d) = ({alpha.shape[0]}, {d}), got {U.shape}")
    for name, arr in (("a0", a0), ("W0", W0), ("alpha", alpha), ("U", U)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"`{name}` must be finite")
    eta = float(eta)
    if not eta > 0 or not math.isfinite(eta):
        raise ValueError(f"`eta` must be a positive finite float, got {eta!r}")
    n_steps = int(n_steps)
    if n_steps < 1:
        raise ValueError(f"`n_steps` must be >= 1, got {n_steps}")
    delta = float(delta)
    if not delta > 0:
        raise ValueError(f"`delta` must be > 0, got {delta!r}")
    prec = A.check_prec(prec)
    P = m + m * d
    if track is not None:
        track = np.asarray(track, dtype=np.float64)
        if track.shape != (n_steps + 1, P):
            raise ValueError(f"`track` must have shape (n_steps + 1, P) = ({n_steps + 1}, {P}), "
                             f"got {track.shape}")
    align_at = sorted({int(n) for n in align_at})
    if any(n < 0 or n > n_steps for n in align_at):
        raise ValueError(f"`align_at` must lie in [0, n_steps], got {align_at}")

    lo = np.empty(n_steps + 1)
    hi = np.empty(n_steps + 1)
    width = np.empty(n_steps + 1)
    mids = np.empty((n_steps + 1, P))
    aligns = {}
    contained = None if track is None else True
    with A.workprec(prec):
        pi = arb.pi()
        eta_a = arb(eta)
        x_hat = [arb(float(v)) for v in np.concatenate([a0, W0.ravel()])]   # exact points
        r = [arb(0)] * P                 # X_n = x̂_n + r (r zero-centred balls)
        _, yy, ey = relu_problem_loss([arb(0)] * m, [[arb(0)] * d for _ in range(m)], alpha, U, pi)
        VY = yy - ey * ey
        if not VY > 0:
            raise CertificationError("the teacher's variance is not certainly positive")

        def split(v):
            return list(v[:m]), [list(v[m + j * d: m + (j + 1) * d]) for j in range(m)]

        def loss_hd(vars_):
            aa, WW = split(vars_)
            return relu_problem_loss(aa, WW, alpha, U, pi)[0]

        for n in range(n_steps + 1):
            X = [x_hat[i] + r[i] for i in range(P)]
            # point: L and ∇L at x̂ ; box: ∇L and ∇²L on X
            Lp = loss_hd(HyperDual.variables(x_hat, hessian=False))
            Lb = loss_hd(HyperDual.variables(X, hessian=n < n_steps))
            ell = 2 * (Lp.v + sum((Lb.g[i] * r[i] for i in range(P)), arb(0))) / VY
            if not ell.is_finite():
                raise CertificationError(f"loss enclosure not finite at update {n}",
                                         hint="a smaller step or a start away from the kinks")
            lo[n], hi[n] = A.arb_bounds(ell)
            width[n] = max(A.upper(abs(x)) for x in r) if P else 0.0
            mids[n] = [float(v) for v in x_hat]
            if n in align_at:
                from .alignment import alignment_from_matrix

                aa, WW = split(X)
                M = _agop(aa, WW, pi)
                aligns[n] = alignment_from_matrix(M, U / np.linalg.norm(U, axis=1, keepdims=True)
                                                  if U.shape[0] == 1 else U, prec=prec)
            if n == n_steps:
                break
            g = Lp.g
            H = Lb.H
            Jr = []
            for i in range(P):
                s = r[i]
                for j in range(P):
                    if r[j].rad() > 0 or r[j] != 0:
                        s = s - eta_a * H[i, j] * r[j]
                Jr.append(s)
            Y = [x_hat[i] - eta_a * g[i] + Jr[i] for i in range(P)]
            if not all(y.is_finite() for y in Y):
                raise CertificationError(f"iterate enclosure not finite at update {n + 1}")
            if track is not None:
                Y = [Y[i].union(arb(float(track[n + 1, i]))) for i in range(P)]
            x_hat = [arb(y.mid()) for y in Y]        # exact (prec-bit) midpoints
            r = [Y[i] - x_hat[i] for i in range(P)]
            r = [arb(0, A.upper(abs(v))) for v in r]
    E = _release(lo, hi, delta)
    return GDEnclosure(eta, lo, hi, width, mids, E, aligns, contained, prec)
