r"""Exact population loss, gradient and Hessian of smooth-activation students.

Students: ``popdyn.Student(d, m, activation in {"silu", "gelu", "tanh", "erf"}, bias=...,
skip=..., intercept=..., scaling=...)``, i.e. (docs/design.md §2)

    f(x) = s Σ_j a_j σ(z_j) + v·x + c,   z_j = w_j·x + b_j = α_j ξ_j + b_j,   ξ_j = θ_j·x,     (S-1)

against network teachers y = Σ_k v*_k φ_k(u_k·x + β_k) with relu / leaky-relu or smooth units
(any biases) and additive teachers y = Σ_k κ_k g(u_k·x) with any link of :mod:`popdyn.links`
(the teachers the engine supports for smooth students' loss; gated and multi-index teachers are
refused).  With g = f − y and L = ½E[g²],

    ∇L = E[g ∇f],        ∇²L = E[∇f ∇fᵀ] + E[g ∇²f],                                           (S-2)

∂f/∂a_i = sσ_i, ∂f/∂w_i = s a_i σ′_i x, ∂f/∂b_i = s a_i σ′_i, ∂f/∂v = x, ∂f/∂c = 1 and the
nonzero second derivatives ∂²f/∂a_i∂w_i = sσ′_i x, ∂²f/∂a_i∂b_i = sσ′_i, ∂²f/∂w_i∂w_iᵀ =
s a_i σ″_i x xᵀ, ∂²f/∂w_i∂b_i = s a_i σ″_i x, ∂²f/∂b_i² = s a_i σ″_i.

**Stein reduction (docs/design.md §3).**  For h(x) = F(z_i) G(z_j) (z affine in x),
E[h x] = E[∇h] and E[h x xᵀ] = E[h] I + E[∇²h], so

    E[F_i G_j x]   = E[F′_i G_j] w_i + E[F_i G′_j] w_j,                                        (S-3)
    E[F_i G_j xxᵀ] = E[F_iG_j] I + E[F″_iG_j] w_iw_iᵀ + E[F′_iG′_j](w_iw_jᵀ + w_jw_iᵀ)
                     + E[F_iG″_j] w_jw_jᵀ,                                                     (S-4)

e.g. E[σ′_iσ′_j x xᵀ] = E[σ′σ′] I + E[σ‴_iσ′_j] w_iw_iᵀ + E[σ″_iσ″_j](w_iw_jᵀ + w_jw_iᵀ) +
E[σ′_iσ‴_j] w_jw_jᵀ; the third-order identity E[h x_ax_bx_c] = E[∂_abc h] + δ_ab E[∂_c h] +
δ_ac E[∂_b h] + δ_bc E[∂_a h] gives the skip term E[(v·x) σ″_i x xᵀ].  Every block of (S-2) is
therefore a combination of the pair moments E[σ^(p)(z_i) σ^(q)(z_j)] (p + q ≤ 4), the teacher
pair moments E[σ^(p)(z_i) φ_k^(q)] (p ≤ 4, q ≤ 2) and one-unit moments E[σ^(p)(z_i)] (p ≤ 5).

**Derivative Mehler series (docs/design.md §3).**  In the normalized Hermite basis h_n = He_n/√n!,
E[F′ h_n] = √(n+1) E[F h_{n+1}], so the coefficient sequences of the derivatives are shifts of
the engine's sequences (:func:`popdyn._hermite.unit_coefficients`: S = E[σ h_n], Dd = E[σ′ h_n],
Dd2 = E[ασ″ h_n]).  With

    S0 = S,  S1 = Dd,  U2 = Dd2/α = E[σ″ h_n],  U3[n] = √(n+1) U2[n+1] = E[ασ‴ h_n],
    U4[n] = √(n+1) U3[n+1] = E[α²σ⁗ h_n],                                                      (S-5)

each moment is a Mehler sum E[X_i Y_j] = Σ_n X_i[n] Y_j[n] ρ_ij^n and the α-powers of (S-4)
are absorbed: E[σ‴_iσ′_j] α_i² = α_i·Σ U3_i S1_j ρⁿ, E[σ⁗_iσ_j] α_i² = Σ U4_i S0_j ρⁿ, etc.
(U2 = Dd2/α loses nothing: the quadrature error of Dd2 is proportional to α.)  At α_i = 0 the
unit is the constant σ(b_i): U2 = (σ″(b_i), 0, …), U3 = U4 = 0.  Teacher sequences Y0, Y1,
Y2 = E[α_t φ″ h_n] are the engine's (closed forms for relu units, quadrature for smooth ones,
the link tables plus the shifted derivative table √(n+1)·dcoeffs[n+1] for links).

The matrices used (i, j students; k teacher units; all Mehler sums of (S-5)):

    K00 = E[σσ], K10 = E[σ′_iσ_j], K11 = E[σ′σ′], K20 = E[σ″_iσ_j], K21 = E[σ″_iσ′_j],
    K22 = E[σ″σ″], K30 = E[α_iσ‴_iσ_j], K31 = E[α_iσ‴_iσ′_j], K40 = E[α_i²σ⁗_iσ_j],            (S-6)

and T00 … T40 likewise against the teacher (T22 = E[σ″_i α_kφ″_k]).  The Hessian blocks are
(s the output scale, δ_ij Kronecker, ĝ_i(F) := E[g F(z_i)] the residual moments)

    ∂²L/∂a_i∂a_j   = s² K00,
    ∂²L/∂a_i∂w_j   = s² a_j (α_i K11 θ_i + α_j K20_ji θ_j) + δ_ij s ĝ_i(σ′x),
    ∂²L/∂a_i∂b_j   = s² a_j K10_ji + δ_ij s ĝ_i(σ′),
    ∂²L/∂w_i∂w_jᵀ  = s² a_ia_j [K11 I + α_iK31 θ_iθ_iᵀ + α_iα_jK22 (θ_iθ_jᵀ + θ_jθ_iᵀ)
                     + α_jK31_ji θ_jθ_jᵀ] + δ_ij s a_i ĝ_i(σ″xxᵀ),                             (S-7)
    ∂²L/∂w_i∂b_j   = s² a_ia_j (α_iK21 θ_i + α_jK21_ji θ_j) + δ_ij s a_i ĝ_i(σ″x),
    ∂²L/∂b_i∂b_j   = s² a_ia_j K11 + δ_ij s a_i ĝ_i(σ″),
    ∂²L/∂a_i∂v = sμ1_iα_iθ_i, ∂²L/∂w_i∂vᵀ = s a_i(μ1_i I + α_i e3_i θ_iθ_iᵀ),
    ∂²L/∂b_i∂v = s a_iα_i e2_i θ_i, ∂²L/∂v∂vᵀ = I, ∂²L/∂a_i∂c = sμ0_i, ∂²L/∂w_i∂c = s a_iα_ie2_iθ_i,
    ∂²L/∂b_i∂c = s a_iμ1_i, ∂²L/∂c² = 1,

with μ0 = E[σ], μ1 = E[σ′], e2 = E[σ″], e3 = E[ασ‴], e4 = E[α²σ⁗], e5 = E[α³σ⁽⁵⁾]
(= U4[1]), and, by (S-3), (S-4) and the third-order identity,

    ĝ_i(σ″xxᵀ) = s Σ_j a_j [K20 I + K40 θ_iθ_iᵀ + α_jK31 (θ_iθ_jᵀ + θ_jθ_iᵀ) + α_j²K22 θ_jθ_jᵀ]
                 + e5 (θ_i·v) θ_iθ_iᵀ + e3 ((θ_i·v) I + θ_ivᵀ + vθ_iᵀ) + c (e2 I + e4 θ_iθ_iᵀ)
                 − Σ_k v*_k [T20 I + T40 θ_iθ_iᵀ + α_kT31 (θ_iθ_kᵀ + θ_kθ_iᵀ)
                             + α_kT22 θ_kθ_kᵀ]                                       (S-8)

(ĝ_i(σ″x), ĝ_i(σ″), ĝ_i(σ′x), ĝ_i(σ′) likewise from (S-3)).  The loss is the ridge family's
plus the skip terms (popdyn.skip SK-1), the gradient the engine's (popdyn.objective); both are
evaluated here from the same Mehler moments.

**Error estimate and rtol (popdyn.accuracy).**  Each Mehler matrix comes with the engine's
entrywise estimate (:func:`popdyn._kernels.mehler.mehler_error`: truncation from the tails,
coefficient errors, Horner rounding).  Tails of the shifted sequences U2, U3, U4 are the
engine's block estimates (:func:`popdyn._hermite._block_tails`) applied to those sequences; for a
link's shifted derivative table the truncation is bounded by Cauchy–Schwarz with the weight
√(n+1) moved to the student side (Σ_{n>N} (n+1)U2_n² from the block estimate, times the
table's Σ_{n>N+1} dcoeffs_n²).  The estimates are propagated linearly through (S-7), (S-8)
(every term by its absolute value), which gives error estimates of L, ∇L and ∇²L; ``atol`` is
the float64 rounding floor :func:`popdyn.accuracy.rounding_floor` of the terms' sizes.  The
contract: |ΔL| ≤ rtol·(size of the loss's terms, ½Σ|terms| ≥ |L|) + atol (L itself vanishes at a
global minimum, where :func:`popdyn.population_loss`'s rtol·|L| cannot be met), max|Δ∇L| ≤
rtol·(size of the gradient's terms) + atol, max|Δ∇²L| ≤ rtol·max|∇²L| + atol (entrywise
estimates, normwise targets: single entries of ∇L and ∇²L may vanish); otherwise the series
tolerance is tightened (÷100 per step down to :data:`popdyn.accuracy.RTOL_FLOOR`) and the
Hermite order raised ×1.5
per step (the shifted sequences (S-5) decay more slowly than S, Dd, whose tails set the
engine's order) and, when the order cap :data:`popdyn.accuracy.ORDER_CAP` is reached or a step
does not halve the excess (the estimate's floor of coefficient errors and rounding, which grows
with the order, measured at 1e−12 to 1e−11 relative), an :class:`popdyn.AccuracyWarning` names
it (measured: tanh units with |w| = 3 against a relu
teacher reach it at rtol = 1e−10, estimate 2.5e−10).  All smooth tails are estimates, not
bounds (as in the engine), and the teacher's E[y], E[y²] and E[y x] enter without an error
term (closed forms or the engine's teacher moments).

Flattening order: :class:`popdyn.landscape.Layout` (a, W row-major, b, v, c).

References
----------
docs/design.md §2 (conventions, normalized Hermite basis), §3 (Stein's lemma, Mehler series, the moment
matrices); Stein (1981); Mehler's formula; the papers of :mod:`popdyn.landscape`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import accuracy as _acc
from .._hermite import Tails, _block_tails, unit_coefficients
from .._hermite import mehler_moment_internal as _mehler
from .._kernels import hermite as _kh
from .._moments import _link_seqs, geometry, student_units
from ..families import capability
from ..teachers import Teacher
from ..teachers.additive import AdditiveTeacher
from ..teachers.network import NetworkTeacher
from ._layout import layout  # the one Layout (not via ._hessian, which dispatches here)

__all__ = ["supported", "loss_grad_hessian"]

_U = 2.0 ** -53


# ------------------------------------------------------------------------------ checks
def supported(student, teacher) -> tuple:
    """(True, "") if this module applies to (student, teacher), else (False, reason)."""
    if (getattr(student, "family", None) is not None
            and capability(student.family, "ridge_loss") is None):
        return False, (f"the exact Hessian (popdyn.landscape) covers ridge and skip students; "
                       f"got a {student.family.label} student")
    if getattr(student, "act", None) is None or student.act.kind != "smooth":
        return False, ("the smooth-student Hessian needs activation silu, gelu, tanh or erf; got "
                       f"{getattr(student, 'activation', None)!r}")
    if not isinstance(teacher, Teacher):
        return False, f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}"
    if not isinstance(teacher, (NetworkTeacher, AdditiveTeacher)):
        return False, ("the exact Hessian of smooth students needs a network teacher "
                       "(popdyn.Teacher.network, relu / leaky_relu / smooth units) or an additive "
                       f"teacher (popdyn.Teacher.additive); got a {type(teacher).__name__}")
    if teacher.d != student.d:
        raise ValueError(f"`teacher` has input dimension {teacher.d} but the student has "
                         f"d = {student.d}")
    return True, ""


# ------------------------------------------------------------------------------ sequences
def _tails(X, nu):
    """Block tail estimates (engine's estimator) of the rows of X beyond its last order."""
    E = np.sum(X * X, axis=1)
    if X.shape[1] < 4:
        z = np.zeros(X.shape[0])
        return Tails(z, z.copy(), z.copy(), nu.copy(), {})
    t2, sup, l1 = _block_tails(np.ascontiguousarray(X), E, nu)
    return Tails(t2, sup, l1, nu.copy(), {"t2": "estimate", "sup": "estimate", "l1": "estimate",
                                           "err": "estimate"})


def _zero_tails(m):
    return Tails.exact(m)


class _Student:
    """Sequences (S-5) of the student units at a common order M with their tails."""

    def __init__(self, student, params, tol, min_order=0, pl_partner=False):
        su = student_units(student, params)
        self.su = su
        al, be, code = su.al, su.be, su.code
        tol_s = min(tol, 1e-16) if pl_partner else tol
        uc = unit_coefficients("smooth", al, be, code=code, rtol=tol_s)
        M = max(uc.N, int(min_order))
        uc = unit_coefficients("smooth", al, be, code=code, rtol=tol_s, n=M + 2)
        M = uc.N - 2
        self.M, self.order = M, uc.N
        self.converged = bool(np.all(uc.converged))
        m = al.shape[0]
        nz = al > 0
        inv = np.where(nz, 1.0 / np.where(nz, al, 1.0), 0.0)
        S0 = np.ascontiguousarray(uc.S[:, :M + 1])
        S1 = np.ascontiguousarray(uc.Dd[:, :M + 1])
        U2f = uc.Dd2 * inv[:, None]                       # (m, M+3)
        n = np.arange(uc.N + 1, dtype=np.float64)
        U3f = np.sqrt(n[:-1] + 1.0)[None, :] * U2f[:, 1:]  # (m, M+2)
        U4f = np.sqrt(n[:-2] + 1.0)[None, :] * U3f[:, 1:]  # (m, M+1)
        d2 = np.array([_kh.act_d2(code, float(b)) for b in be])
        if np.any(~nz):
            U2f[~nz] = 0.0
            U2f[~nz, 0] = d2[~nz]
            U3f[~nz] = 0.0
            U4f[~nz] = 0.0
        self.S0, self.S1 = S0, S1
        self.U2 = np.ascontiguousarray(U2f[:, :M + 1])
        self.U3 = np.ascontiguousarray(U3f[:, :M + 1])
        self.U4 = np.ascontiguousarray(U4f[:, :M + 1])
        self.e5 = U4f[:, 1].copy() if U4f.shape[1] > 1 else np.zeros(m)
        self.tS0 = uc.tails_S.extend(uc.S, M)
        self.tS1 = uc.tails_Dd.extend(uc.Dd, M)
        nu2 = np.asarray(uc.tails_Dd2.err) * inv
        self.tU2 = _tails(self.U2, nu2)
        self.tU3 = _tails(self.U3, nu2 * math.sqrt(M + 2.0))
        self.tU4 = _tails(self.U4, nu2 * (M + 3.0))
        w = np.sqrt(np.arange(M + 1, dtype=np.float64) + 1.0)
        self.tU2w = _tails(self.U2 * w[None, :], nu2 * math.sqrt(M + 2.0))  # weighted (CS)
        for t in (self.tU2, self.tU3, self.tU4, self.tU2w):
            for arr in (t.t2, t.sup, t.l1, t.err):
                arr[~nz] = 0.0
        self.err1 = np.maximum(np.asarray(uc.tails_S.err), np.asarray(uc.tails_Dd.err))
        self.nu2 = nu2
        self.mu0, self.mu1 = S0[:, 0].copy(), S1[:, 0].copy()
        self.e2, self.e3, self.e4 = self.U2[:, 0].copy(), self.U3[:, 0].copy(), self.U4[:, 0].copy()


class _Teacher:
    """Teacher sequences Y0, Y1, Y2 (= E[α φ″ h_n]) with tails; Y2 split into a part with
    ordinary tails (``Y2``) and a link's shifted derivative table (``Y2w``, CS-weighted tails)."""

    def __init__(self, teacher, tol, N):
        tu = teacher.units()
        self.tu = tu
        self.alpha = np.asarray(tu.al, dtype=np.float64)
        self.theta = np.asarray(tu.theta, dtype=np.float64)
        self.w = np.asarray(teacher.weights, dtype=np.float64)
        k = tu.n
        self.Y2w = None
        if isinstance(teacher, AdditiveTeacher):
            g = tu.link
            S, tS, Dd, tD = _link_seqs(g, k, N, include_pl=True)
            Nl = S.shape[1] - 1
            self.Y0, self.tY0, self.Y1, self.tY1 = S, tS, Dd, tD
            # PL part of φ″: the delta sequence of p·relu (closed form)
            if g.p != 0.0:
                pl = unit_coefficients("pl", np.ones(k), np.zeros(k), p=g.p, q=g.q, n=max(Nl, 1))
                self.Y2, self.tY2 = pl.Dd2[:, :Nl + 1], pl.tails_Dd2.extend(pl.Dd2, Nl)
            else:
                self.Y2, self.tY2 = np.zeros((k, Nl + 1)), _zero_tails(k)
            # Hermite part: α φ″ coefficients √(n+1)·dcoeffs[n+1]
            if np.any(g.coeffs != 0.0):
                Nd = g.dcoeffs.shape[0] - 1
                Nh = Nl if g.is_polynomial else min(Nl, Nd - 1)
                sh = np.zeros(Nh + 1)
                top = min(Nh + 1, Nd)
                nn = np.arange(1, top + 1, dtype=np.float64)
                sh[:top] = np.sqrt(nn) * g.dcoeffs[1:top + 1]
                if g.is_polynomial:
                    t2 = 0.0
                else:
                    t2 = float(g.dt2[min(Nh + 1, Nd)])
                self.Y2w = np.tile(sh, (k, 1))
                self.tY2w = Tails(np.full(k, t2), np.full(k, np.inf if t2 > 0 else 0.0),
                                  np.full(k, np.inf if t2 > 0 else 0.0), np.zeros(k), {})
            self.order = Nl
        else:
            act = teacher.activation
            if act.kind == "pl":
                uc = unit_coefficients("pl", tu.al, tu.be, p=act.p, q=act.q, n=max(N, 1))
            else:
                uc = unit_coefficients("smooth", tu.al, tu.be, code=act.code, rtol=tol, n=N)
            Nt = uc.N
            self.Y0, self.Y1, self.Y2 = uc.S, uc.Dd, uc.Dd2
            self.tY0, self.tY1, self.tY2 = uc.tails_S, uc.tails_Dd, uc.tails_Dd2
            self.order = Nt
        self.tau = (self.w * self.Y1[:, 0] * self.alpha) @ self.theta     # E[y x]


def _teacher_order(teacher, tol):
    """The smooth teacher units' own converged order at ``tol`` (0 otherwise)."""
    if isinstance(teacher, NetworkTeacher) and teacher.activation.kind == "smooth":
        tu = teacher.units()
        return unit_coefficients("smooth", tu.al, tu.be, code=tu.code, rtol=tol).N
    return 0


def _pl_partner(teacher):
    return not (isinstance(teacher, NetworkTeacher) and teacher.activation.kind == "smooth")


# ------------------------------------------------------------------------------ moments
class _Mom:
    """Values and error estimates of the pair moments (S-6) and the teacher moments."""

    def __init__(self, st: _Student, te: _Teacher):
        su = st.su
        R = np.clip(geometry(su, su)[0], -1.0, 1.0)
        R = 0.5 * (R + R.T)
        np.fill_diagonal(R, np.where(su.al > 0, 1.0, 0.0))
        self.R = R
        pairs = {"K00": (st.S0, st.tS0, st.S0, st.tS0), "K10": (st.S1, st.tS1, st.S0, st.tS0),
                 "K11": (st.S1, st.tS1, st.S1, st.tS1), "K20": (st.U2, st.tU2, st.S0, st.tS0),
                 "K21": (st.U2, st.tU2, st.S1, st.tS1), "K22": (st.U2, st.tU2, st.U2, st.tU2),
                 "K30": (st.U3, st.tU3, st.S0, st.tS0), "K31": (st.U3, st.tU3, st.S1, st.tS1),
                 "K40": (st.U4, st.tU4, st.S0, st.tS0)}
        self.v, self.e = {}, {}
        for name, (X, tx, Y, ty) in pairs.items():
            self.v[name], self.e[name] = _mehler(X, Y, tx, ty, R)
        tu = te.tu
        Rt = np.clip(geometry(su, tu)[0], -1.0, 1.0)
        tp = {"T00": (st.S0, st.tS0, te.Y0, te.tY0), "T10": (st.S1, st.tS1, te.Y0, te.tY0),
              "T11": (st.S1, st.tS1, te.Y1, te.tY1), "T20": (st.U2, st.tU2, te.Y0, te.tY0),
              "T21": (st.U2, st.tU2, te.Y1, te.tY1), "T22": (st.U2, st.tU2, te.Y2, te.tY2),
              "T30": (st.U3, st.tU3, te.Y0, te.tY0), "T31": (st.U3, st.tU3, te.Y1, te.tY1),
              "T40": (st.U4, st.tU4, te.Y0, te.tY0)}
        for name, (X, tx, Y, ty) in tp.items():
            self.v[name], self.e[name] = _mehler(X, Y, tx, ty, Rt)
        if te.Y2w is not None:
            # Cauchy–Schwarz with the weight √(n+1) on the student side: pass the weighted
            # student tails as the tails of U2 (the kernel's √(t2x t2y) is then that bound)
            Nh = te.Y2w.shape[1] - 1
            X = np.ascontiguousarray(st.U2[:, :Nh + 1])
            drop = np.abs(st.U2[:, Nh + 1:]) + st.tU2.err[:, None]
            wt = np.arange(Nh + 2, st.M + 2, dtype=np.float64)          # (n + 1), n > Nh
            t2w = st.tU2w.t2 + np.sum(wt[None, :] * drop * drop, axis=1)
            tw = Tails(t2w, np.full(su.n, np.inf), np.full(su.n, np.inf), st.tU2.err, {})
            v2, e2 = _mehler(X, te.Y2w, tw, te.tY2w, Rt)
            self.v["T22"] = self.v["T22"] + v2
            self.e["T22"] = self.e["T22"] + e2
        # one-unit moments and their errors
        self.first = {"mu0": st.mu0, "mu1": st.mu1, "e2": st.e2, "e3": st.e3, "e4": st.e4,
                      "e5": st.e5}
        m = su.n
        nu2 = np.where(np.isfinite(st.nu2), st.nu2, np.inf)
        M = st.M
        self.first_err = {"mu0": np.asarray(st.tS0.err) + 0 * st.mu0,
                          "mu1": np.asarray(st.tS1.err) + 0 * st.mu1,
                          "e2": nu2, "e3": nu2 * 1.0, "e4": nu2 * math.sqrt(2.0),
                          "e5": nu2 * math.sqrt(6.0)}
        assert all(a.shape == (m,) for a in self.first_err.values())


# ------------------------------------------------------------------------------ assembly
def _assemble(lay, s, a, W, al, th, v, c, te_w, te_al, te_th, ey, ey2, tau, K, F, sgn, hessian,
              x=1.0, symmetrize=True):
    """(L, g, H) from moments ``K`` (dict of matrices) and first moments ``F``.

    ``sgn`` = −1 evaluates (S-7)/(S-8); the *bound mode* ``sgn`` = +1 with |inputs| and the
    moments' error estimates in K, F gives the propagated error (every term by its size);
    ``x`` = 0 then drops the terms that hold no moment (c², |v|², the identity blocks).
    ``symmetrize=False`` returns the diagonal blocks as assembled (for the symmetry test)."""
    m, d = lay.m, lay.d
    tv = th @ v                                                    # θ_i·v
    wv = al * tv                                                   # w_i·v
    mu0, mu1, e2, e3, e4, e5 = (F[k] for k in ("mu0", "mu1", "e2", "e3", "e4", "e5"))
    K00, K10, K11, K20, K21, K22, K30, K31, K40 = (K[k] for k in (
        "K00", "K10", "K11", "K20", "K21", "K22", "K30", "K31", "K40"))
    T00, T10, T11, T20, T21, T22, T30, T31, T40 = (K[k] for k in (
        "T00", "T10", "T11", "T20", "T21", "T22", "T30", "T31", "T40"))
    U = te_th * te_al[:, None]                                     # α_kθ_k rows
    sa = s * a
    # residual moments ĝ_i(σ) , ĝ_i(σ′), ĝ_i(σ′x), ĝ_i(σ″), ĝ_i(σ″x)
    g_s = s * (K00 @ a) + mu1 * wv + c * mu0 + sgn * (T00 @ te_w)
    g_1 = s * (K10 @ a) + e2 * wv + c * mu1 + sgn * (T10 @ te_w)
    g_1x = (th * (al * (s * (K20 @ a) + e3 * tv + c * e2 + sgn * (T20 @ te_w)))[:, None]
            + s * (K11 @ (a[:, None] * W)) + mu1[:, None] * v[None, :]
            + sgn * ((T11 * te_w[None, :]) @ U))
    g_2 = s * (K20 @ a) + e3 * tv + c * e2 + sgn * (T20 @ te_w)
    g_2x = (th * (s * (K30 @ a) + e4 * tv + c * e3 + sgn * (T30 @ te_w))[:, None]
            + s * ((K21 * al[None, :]) @ (a[:, None] * th)) + e2[:, None] * v[None, :]
            + sgn * ((T21 * te_w[None, :]) @ U))
    # loss (ridge part as RidgeFamily.loss, skip part as SK-1)
    ff = s * s * (a @ K00 @ a) + 2.0 * s * c * (a @ mu0) + x * c * c
    fy = s * (a @ (T00 @ te_w)) + c * ey
    L = (0.5 * (ff + 2.0 * sgn * fy + ey2) + s * ((a * mu1) @ wv) + sgn * (v @ tau)
         + 0.5 * x * (v @ v))
    gr = np.zeros(lay.size)
    gr[lay.a] = s * g_s
    gr[lay.W] = (sa[:, None] * g_1x).ravel()
    if lay.bias:
        gr[lay.b] = sa * g_1
    if lay.skip:
        gr[lay.v] = s * (W.T @ (a * mu1)) + sgn * tau + x * v
    if lay.intercept:
        gr[lay.c] = s * (a @ mu0) + x * c + sgn * ey
    if not hessian:
        return L, gr, None
    H = np.zeros((lay.size, lay.size))
    I = np.eye(d)
    ia = np.arange(m)
    H[lay.a, lay.a] = s * s * K00
    # a–w: [i, j, :] = s² a_j (α_iK11_ij θ_i + α_j K20_ji θ_j) + δ_ij s ĝ_i(σ′x)
    AW = s * s * a[None, :, None] * ((al[:, None] * K11)[:, :, None] * th[:, None, :]
                                     + (K20.T * al[None, :])[:, :, None] * th[None, :, :])
    AW[ia, ia, :] += s * g_1x
    H[lay.a, lay.W] = AW.reshape(m, m * d)
    # w–w
    aa = s * s * np.outer(a, a)
    TT = np.einsum("ia,jb->ijab", th, th)                          # θ_iθ_jᵀ
    Tii = TT[ia, ia]                                               # θ_iθ_iᵀ
    WW = aa[:, :, None, None] * (K11[:, :, None, None] * I
                                 + (al[:, None] * K31)[:, :, None, None] * Tii[:, None]
                                 + (np.outer(al, al) * K22)[:, :, None, None]
                                 * (TT + TT.transpose(1, 0, 2, 3))
                                 + (al[None, :] * K31.T)[:, :, None, None] * Tii[None, :])
    # ĝ_i(σ″xxᵀ) (S-8)
    alK31 = K31 * al[None, :]
    thj = np.einsum("ij,ja->ia", alK31 * a[None, :], th)          # Σ_j a_j α_jK31 θ_j
    G2 = (s * ((K20 @ a)[:, None, None] * I + (K40 @ a)[:, None, None] * Tii
               + np.einsum("ia,ib->iab", th, thj) + np.einsum("ia,ib->iab", thj, th)
               + np.einsum("ij,ja,jb->iab", K22 * (al * al)[None, :] * a[None, :], th, th)))
    G2 += (e5 * tv)[:, None, None] * Tii + e3[:, None, None] * (
        tv[:, None, None] * I + np.einsum("ia,b->iab", th, v) + np.einsum("a,ib->iab", v, th))
    G2 += c * (e2[:, None, None] * I + e4[:, None, None] * Tii)
    tk = np.einsum("ik,ka->ia", T31 * (te_w * te_al)[None, :], te_th)  # Σ_k v_kα_kT31 θ_k
    G2 += sgn * ((T20 @ te_w)[:, None, None] * I + (T40 @ te_w)[:, None, None] * Tii
                 + np.einsum("ia,ib->iab", th, tk) + np.einsum("ia,ib->iab", tk, th)
                 + np.einsum("ik,ka,kb->iab", T22 * (te_w * te_al)[None, :], te_th, te_th))
    WW[ia, ia] += (sa[:, None, None] * G2)
    H[lay.W, lay.W] = WW.transpose(0, 2, 1, 3).reshape(m * d, m * d)
    if lay.bias:
        AB = s * s * a[None, :] * K10.T
        AB[ia, ia] += s * g_1
        H[lay.a, lay.b] = AB
        WB = aa[:, :, None] * ((al[:, None] * K21)[:, :, None] * th[:, None, :]
                               + (al[None, :] * K21.T)[:, :, None] * th[None, :, :])
        WB[ia, ia, :] += sa[:, None] * g_2x
        H[lay.W, lay.b] = WB.transpose(0, 2, 1).reshape(m * d, m)
        BB = aa * K11
        BB[ia, ia] += sa * g_2
        H[lay.b, lay.b] = BB
    if lay.skip:
        H[lay.v, lay.v] = x * I
        H[lay.a, lay.v] = s * (mu1 * al)[:, None] * th
        H[lay.W, lay.v] = (sa[:, None, None] * (mu1[:, None, None] * I
                                                + (al * e3)[:, None, None] * Tii)).reshape(m * d, d)
        if lay.bias:
            H[lay.b, lay.v] = (sa * al * e2)[:, None] * th
    if lay.intercept:
        H[lay.c, lay.c] = x
        H[lay.a, lay.c] = (s * mu0)[:, None]
        H[lay.W, lay.c] = ((sa * al * e2)[:, None] * th).reshape(m * d, 1)
        if lay.bias:
            H[lay.b, lay.c] = (sa * mu1)[:, None]
    # the cross blocks were filled above the diagonal (layout order a, W, b, v, c): mirror them
    grp = np.concatenate([np.full(sl.stop - sl.start, k) for k, sl in
                          enumerate((lay.a, lay.W, lay.b, lay.v, lay.c))])
    same = grp[:, None] == grp[None, :]
    upper = grp[:, None] < grp[None, :]
    H = np.where(same, H, 0.0) + np.where(upper, H, 0.0) + np.where(upper, H, 0.0).T
    return L, gr, (0.5 * (H + H.T) if symmetrize else H)


def _evaluate(student, params, teacher, tol, hessian, min_order=0):
    lay = layout(student)
    a, W, v, c = params.a, params.W, params.v, float(params.c)
    Nt = _teacher_order(teacher, tol)
    st = _Student(student, params, tol, min_order=max(Nt, min_order),
                  pl_partner=_pl_partner(teacher))
    te = _Teacher(teacher, tol, st.M)
    mo = _Mom(st, te)
    su = st.su
    al, th = su.al, su.theta
    ey, ey2 = float(teacher.mean), float(teacher.second_moment)
    s = student.s
    args = (lay, s)
    L, g, H = _assemble(*args, a, W, al, th, v, c, te.w, te.alpha, te.theta, ey, ey2, te.tau,
                        mo.v, mo.first, -1.0, hessian)
    # bound mode: |inputs|, moment errors
    ab = (np.abs(a), np.abs(W), al, np.abs(th), np.abs(v), abs(c), np.abs(te.w), te.alpha,
          np.abs(te.theta))
    Le, ge, He = _assemble(*args, *ab, 0.0, 0.0, np.zeros_like(te.tau), mo.e, mo.first_err,
                           1.0, hessian, x=0.0)
    # sizes of the terms (rounding floor)
    Kabs = {k: np.abs(x) for k, x in mo.v.items()}
    Fabs = {k: np.abs(x) for k, x in mo.first.items()}
    Ls, gs, Hs = _assemble(*args, *ab, abs(ey), abs(ey2), np.abs(te.tau), Kabs, Fabs, 1.0,
                           hessian)
    info = {"order": st.order, "series_tol": tol, "converged": st.converged,
            "error_loss": float(Le), "error_grad": ge, "error_hessian": He,
            "scale_loss": float(Ls), "scale_grad": gs, "scale_hessian": Hs}
    return float(L), g, H, info


def loss_grad_hessian(student, params, teacher, *, hessian: bool = True, rtol: float = 1e-10,
                      full_output: bool = False):
    """Exact L, ∇L and ∇²L of a smooth-activation student (module docstring, (S-1)–(S-8)).

    Parameters
    ----------
    student : popdyn.Student
        ``activation`` silu, gelu, tanh or erf; ``bias``, ``skip``, ``intercept``, ``scaling``
        free.  Zero first-layer rows are allowed (the unit is the constant σ(b_j)).
    params : popdyn.Params
    teacher : popdyn.Teacher
        A network teacher (relu / leaky-relu / smooth units, any biases) or an additive teacher.
    hessian : bool
        If False, return (L, ∇L, None).
    rtol : float in (0, 1)
        Requested relative accuracy (module docstring: the contract of :mod:`popdyn.accuracy`).
    full_output : bool
        If True, also return ``info``: ``error_loss``, ``error_grad`` (P,), ``error_hessian``
        (P, P) (propagated estimates), ``atol_*`` (rounding floors), ``order`` (Hermite order),
        ``series_tol``, ``within_rtol``, ``rtol``.

    Returns
    -------
    (L, g, H) or (L, g, H, info), in the order of :class:`popdyn.landscape.Layout`.

    Raises
    ------
    ValueError
        Unsupported student / teacher (the message names what is supported), bad ``rtol``.

    Warns
    -----
    popdyn.AccuracyWarning
        When the estimate exceeds the requested accuracy at the series-tolerance floor or the
        Hermite order cap (the message names the cap and the quantity).
    """
    ok, why = supported(student, teacher)
    if not ok:
        raise ValueError(why)
    if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and 0 < rtol < 1):
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    student.family.check(params, teacher)
    n_terms = int(student.m) * (int(student.m) + int(teacher.k) + 4)
    tol = float(rtol)
    min_order = 0
    worst_prev = math.inf
    while True:
        L, g, H, info = _evaluate(student, params, teacher, tol, hessian, min_order)
        atol_L = _acc.rounding_floor(n_terms, info["scale_loss"])
        gsc = float(np.max(info["scale_grad"])) if g.size else 0.0
        atol_g = _acc.rounding_floor(n_terms, gsc)
        eL = _acc.finite_or_inf(info["error_loss"])
        eg = _acc.finite_or_inf(np.max(info["error_grad"])) if g.size else 0.0
        bad = []
        tL = rtol * max(abs(L), info["scale_loss"]) + atol_L
        if not eL <= tL:
            bad.append(("loss", eL, tL))
        if not eg <= rtol * gsc + atol_g:
            bad.append(("gradient", eg, rtol * gsc + atol_g))
        atol_H = 0.0
        if hessian:
            atol_H = _acc.rounding_floor(n_terms, float(np.max(info["scale_hessian"])))
            eH = _acc.finite_or_inf(np.max(info["error_hessian"]))
            tH = rtol * float(np.max(np.abs(H))) + atol_H
            if not eH <= tH:
                bad.append(("Hessian", eH, tH))
        info.update(rtol=float(rtol), atol_loss=atol_L, atol_grad=atol_g, atol_hessian=atol_H,
                    within_rtol=not bad)
        if not bad:
            break
        cap = None
        worst = max(e / t if t > 0 else math.inf for _, e, t in bad)
        if info["order"] >= _acc.ORDER_CAP:
            cap = f"the Hermite order cap {_acc.ORDER_CAP} was reached"
        elif worst > 0.5 * worst_prev:
            cap = (f"the estimate stopped decreasing at Hermite order {info['order']} (its floor: "
                   "coefficient errors and rounding, which grow with the order)")
        worst_prev = worst
        if cap is not None:
            what, err, target = bad[0]
            _acc.warn(f"exact {what} of the smooth {student.activation} student", err, target,
                      rtol, cap, "Check the estimate with popdyn.population_loss / finite "
                      "differences, or use smaller weights.", stacklevel=3)
            break
        # tighter series tolerance and, since the derivative sequences (S-5) decay more slowly
        # than the engine's S, Dd (whose tails set its order), a higher order: ×1.5 per step
        tol = max(tol / _acc.STEP, _acc.RTOL_FLOOR)
        min_order = min(_acc.ORDER_CAP, max(min_order, int(math.ceil(1.5 * info["order"] / 8)) * 8))
    if full_output:
        return L, g, H, info
    return L, g, H
