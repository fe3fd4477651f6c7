r"""Exact population loss, gradient and Hessian of relu / leaky-relu students WITH biases.

Students: ``popdyn.Student(d, m, activation in {"relu", "leaky_relu"}, bias=True, skip=...,
intercept=..., scaling=...)`` (and bias-free students against teachers with biases: the same
formulas at b = 0, the b rows and columns dropped), f(x) = s Σ_j a_j σ(z_j) + v·x + c, z_j = w_j·x + b_j,
σ = p·relu + q·id; teachers ``popdyn.Teacher.network(relu or leaky_relu, V, U, bias)``,
y = Σ_k v*_k σ*(t_k), t_k = u_k·x + β_k, with or without biases.  x ~ N(0, I_d), x̃ = (x, 1),
w̃ = (w, b) (so z = w̃·x̃), g = f − y, 1_j = 1{z_j > 0}, X̃ = E[x̃x̃ᵀ] = I_{d+1}.

The Hessian (docs/design.md §2, §3).  ∂f/∂a_j = sσ_j, ∂f/∂w̃_j = s a_j σ′_j x̃, ∂f/∂v = x, ∂f/∂c = 1,
and the only second derivatives of f are ∂²f/∂a_j∂w̃_j = sσ′_j x̃ and
∂²f/∂w̃_j² = s a_j p δ(z_j) x̃x̃ᵀ, so with ∇²L = E[∇f∇fᵀ] + E[g∇²f]:

    H[a_i, a_l] = s² C_il,     C_il = E[σ_iσ_l]   (the engine's pair moments)          (B-1)
    H[a_i, w̃_l] = s² a_l E[σ_i σ′_l x̃] + δ_il s E[g σ′_i x̃]                           (B-2)
    H[w̃_i, w̃_l] = s² a_i a_l E[σ′_iσ′_l x̃x̃ᵀ] + δ_il s a_i p K_i,
                  K_i = E[g δ(z_i) x̃x̃ᵀ] = φ(h_i)/|w_i| · E[g x̃x̃ᵀ | z_i = 0]            (B-3)
    H[a_i, v] = s E[σ′_i] w_i,  H[w̃_i, v] = s a_i E[σ′_i x̃xᵀ],  H[v, v] = I,
    H[a_i, c] = s E[σ_i],  H[w̃_i, c] = s a_i E[σ′_i x̃],  H[c, c] = 1,  H[v, c] = 0.      (B-4)

Everything reduces to three moments of unit pairs.  Write a unit as n = |w|, θ = w/n,
a = −b/n (so 1{z > 0} = 1{Z > a} with Z = θ·x ~ N(0, 1)), Q(t) = Φ(−t).  For two units 1, 2
with ρ = θ_1·θ_2 = cos ϕ, s_ϕ = sin ϕ (ϕ from 2 atan2(|θ_1 − θ_2|, |θ_1 + θ_2|); 1 ∓ ρ from the
same two norms, never as differences), the event E = {Z_1 > a_1, Z_2 > a_2},

    P = P(E) = Φ₂(−a_1, −a_2; ρ),   t_12 = (a_2 − ρa_1)/s_ϕ,   t_21 = (a_1 − ρa_2)/s_ϕ

(t_12 is the threshold of the second unit on the first one's kink: given Z_1 = a_1,
Z_2 = ρa_1 + s_ϕ ξ with ξ ~ N(0, 1) independent of Z_1; a_2 − ρa_1 is formed as
(a_2 ∓ a_1) ± (1 ∓ ρ)a_1 near ρ = ±1).  Gaussian integration by parts with ONE indicator
differentiated at a time (E[x_k h] = E[∂_k h]; each surface term is a one-dimensional
conditional expectation on one kink, bounded; the Stein/Price terms E[δ_1δ_2] ~ 1/s_ϕ never
appear) gives, with e_1 = θ_1, e_2 = (θ_2 − ρθ_1)/s_ϕ, κ = φ(a_1)φ(t_12) (= s_ϕ φ₂(a_1, a_2; ρ)):

    E[1_1 1_2 x xᵀ] = P I + α_1 θ_1θ_1ᵀ + α_2 θ_2θ_2ᵀ
                      + κ s_ϕ [ρ(e_1e_1ᵀ − e_2e_2ᵀ) + s_ϕ(e_1e_2ᵀ + e_2e_1ᵀ)],             (B-5)
    α_1 = a_1φ(a_1)Q(t_12),  α_2 = a_2φ(a_2)Q(t_21),
    E[1_1 1_2 x] = φ(a_1)Q(t_12) θ_1 + φ(a_2)Q(t_21) θ_2,   E[1_1 1_2] = P,                 (B-6)
    E[relu(z_1) 1_2 x] = n_1 [P θ_1 + φ(a_2) S(a_1 − ρa_2, s_ϕ) θ_2],                      (B-7)
    E[relu(z_1) 1_2]   = n_1 [φ(a_1)Q(t_12) + ρ φ(a_2)Q(t_21) − a_1 P],                     (B-8)

with S(ν, σ) = E[(σξ − ν)_+] = σ Hh_1(ν/σ) (Hh_1(t) = φ(t) − tQ(t), the stable ramp moment of
:func:`popdyn._kernels.bvn.norm_hh`; S(ν, 0) = (−ν)_+).  (B-7) is Stein's identity
E[relu(z_1)1_2 x] = E[1_1 1_2] w_1 + E[relu(z_1) δ(z_2)] w_2 with
E[relu(z_1) | z_2 = 0] = n_1 S(a_1 − ρa_2, s_ϕ); (B-8) is E[Z_1 1_E] − a_1 P with
E[Z_1 1_E] from the same identity.  E[relu(z_1)relu(z_2)] = w̃_2·E[relu(z_1) 1_2 x̃]
(relu(z) = z 1{z > 0}) gives the boundary test of the finder (:func:`new_unit_correlation`).  The frame term of (B-5) is written in
e_1, e_2 so that its coefficient κ s_ϕ is computed bounded; it vanishes like s_ϕ at duplicated
and antiparallel units (where e_2 is undefined it is set to 0), so (B-5)–(B-8) are continuous
there and give the finite limits: duplicated units (s_ϕ = 0, a_1 = a_2) Q(t_12) = Q(t_21) = ½
(t = 0/0 := 0), E = {Z_1 > a_1}; parallel units with different biases, t = ±∞; antiparallel
units, E = {a_1 < Z_1 < −a_2}.  One unit: E[1 x̃x̃ᵀ] = [[Q(a)I + aφ(a)θθᵀ, φ(a)θ], [φ(a)θᵀ,
Q(a)]], E[relu(z) x̃] = (Q(a)w, n Hh_1(a)).

Kink terms (B-3).  Given z_j = 0, x = a_jθ_j + (I − θ_jθ_jᵀ)ξ: mean μ̃ = (a_jθ_j, 1), covariance
Σ̃ = diag(I − θ_jθ_jᵀ, 0); a unit r restricted to the kink is relu(n_r s_ϕ ζ − n_r ν_r) with
ζ ~ N(0, 1) along f = (θ_r − ρθ_j)/s_ϕ and ν_r = a_r − ρa_j (pair (r, j) in the notation above),
so with m_0 = n_r S(ν_r, s_ϕ), f̃ = (f, 0):

    E[relu(z_r) x̃x̃ᵀ | z_j = 0] = m_0(μ̃μ̃ᵀ + Σ̃) + n_r s_ϕ Q(t_rj)(f̃μ̃ᵀ + μ̃f̃ᵀ)
                                   + n_r s_ϕ φ(t_rj) f̃f̃ᵀ,                                  (B-9)
    E[(w̃·x̃) x̃x̃ᵀ | z_j = 0] = (w̃·μ̃)(μ̃μ̃ᵀ + Σ̃) + Σ̃w̃ μ̃ᵀ + μ̃ (Σ̃w̃)ᵀ.                     (B-10)

g = Σ_r c_r relu(z_r) + w̃_L·x̃ with c_r = s a_i p (student units), −v*_k p* (teacher units with
u_k ≠ 0) and w̃_L = Σ_i s a_i q w̃_i + (v, c) − Σ_k v*_k q* ũ_k − (0, Σ_{u_k = 0} v*_k σ*(β_k)),
so E[gσ′_j x̃] and K_j are sums of (B-5)–(B-10).  g is continuous, so K_j is continuous in the
parameters: the Hessian exists and is continuous wherever every w_j ≠ 0 — also where a student
kink coincides with another student's or a teacher's kink (L is C² there but not C³, like the
bias-free K at ϕ ∈ {0, π}); only the third derivatives jump.  At w_j = 0 the formulas (which
divide by |w_j|) do not apply: such states raise ``ValueError`` (at w_j = 0, b_j = 0 the loss
is not twice differentiable; at w_j = 0, b_j ≠ 0 it is, but that limit is not implemented).

Accuracy.  Entries are products and sums of Φ₂ (:func:`popdyn._kernels.bvn.bvn_cdf`), Φ, φ and
Hh_1 (S) without cancellation, except the scalar (B-8), E[(Z_1 − a_1)1_E], which cancels like
the textbook truncated moments for a unit far in its tail (a_1 ≫ 1: relative error of that
small entry ~eps·a_1²).  Against 50-digit mpmath (data/refs/landscape_biased_refs.json: d = 2,
and d = 3 with planar units (the orthogonal-complement terms); duplicated, parallel,
antiparallel and complementary units, |b| ~ 1e−9, |b|/|w| up to 8.5,
a student kink on a teacher kink, leaky relu, skip, mean field) the worst errors are
3e−16 of max|H| normwise and 9e−14 relative entrywise (the tail unit of
|b|/|w| = 8.5; elsewhere ≤ 9e−15) (tests/popdyn/test_landscape_biased.py);
generic d is checked by differences of the engine's gradient (d = 1..3) and, at b = 0, against
the arc-cosine forms.  L, ∇L are the engine's (:func:`popdyn.loss_and_grad`, bit for bit);
:func:`own_gradient` recomputes ∇L from the moments above (a test of (B-6)–(B-8) against the
engine's independent closed forms).  Cost: a few ms to ~20 ms at m ≤ 12
(benchmarks/bench_landscape.py --biased-only), numpy over pairs with one Φ₂ call a pair.

References
----------
docs/design.md §2 (population objective), §3 (Stein's lemma, truncated bivariate moments);
S. Rosenbaum, "Moments of a truncated bivariate normal distribution", J. R. Stat. Soc. B 23
(1961) 405–408; the teacher-learnability paper (students with biases) and
"Removing spurious minima for planar features by skip connections" (the skip).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from .._kernels.bvn import bvn_cdf, norm_hh
from ..teachers import Teacher
from ..teachers.network import NetworkTeacher
from ._layout import Layout

_INV_SQ2PI = 1.0 / math.sqrt(2.0 * math.pi)


# ------------------------------------------------------------------------------ scalars
def _phi(x):
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.isinf(x), 0.0, np.exp(-0.5 * x * x) * _INV_SQ2PI)


def _Q(x):
    return ndtr(-np.asarray(x, dtype=np.float64))


def _hh1(w):
    """Hh_1(w) = E[(Z − w)_+] elementwise (norm_hh: relative accuracy ~1e−15)."""
    w = np.asarray(w, dtype=np.float64)
    out = np.empty(w.shape)
    flat, of = w.ravel(), out.ravel()
    for i in range(flat.size):
        x = flat[i]
        of[i] = 0.0 if x == np.inf else (-x if x == -np.inf else norm_hh(x)[1])
    return out


def _ramp(nu, sig):
    """S(ν, σ) = E[(σZ − ν)_+] for σ ≥ 0 (σ Hh_1(ν/σ); (−ν)_+ at σ = 0)."""
    nu = np.asarray(nu, dtype=np.float64)
    sig = np.asarray(sig, dtype=np.float64)
    out = np.maximum(-nu, 0.0)
    pos = sig > 0
    if np.any(pos):
        r = nu[pos] / sig[pos]
        big = r < -40.0            # Hh_1(r) = −r + O(φ(40)/40²): exactly −r in float64
        val = sig[pos] * _hh1(np.where(big, 0.0, r))
        val = np.where(big, -nu[pos], val)
        val = np.where(r > 40.0, 0.0, val)
        out[pos] = val
    return out


def _ratio(num, sig):
    """num/σ with the limits of σ → 0+: ±∞, and 0 for 0/0 (coincident kinks)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sig > 0, num / np.where(sig > 0, sig, 1.0), np.sign(num) * np.inf)
    return np.where((sig == 0) & (num == 0), 0.0, t)


def _direction(x, y, rho, omr, opr):
    """Unit vector along y − ρx for unit vectors x, y (rows), formed as (y ∓ x) ± (1 ∓ ρ)x;
    0 where that vector vanishes."""
    pos = (rho >= 0)[:, None]
    v = np.where(pos, (y - x) + omr[:, None] * x, (y + x) - opr[:, None] * x)
    n = np.linalg.norm(v, axis=1)
    return np.divide(v, n[:, None], out=np.zeros_like(v), where=n[:, None] > 0)


# ------------------------------------------------------------------------------ pairs
class _Pairs:
    """Pair quantities of (B-5)–(B-9) for unit 1 of (n1, T1, a1) and unit 2 of (n2, T2, a2)
    (arrays over pairs; T rows are unit vectors)."""

    def __init__(self, n1, T1, a1, n2, T2, a2):
        self.n1, self.T1, self.a1, self.n2, self.T2, self.a2 = n1, T1, a1, n2, T2, a2
        dif = np.linalg.norm(T1 - T2, axis=1)
        sm = np.linalg.norm(T1 + T2, axis=1)
        den = dif * dif + sm * sm
        self.omr = 2.0 * dif * dif / den
        self.opr = 2.0 * sm * sm / den
        self.rho = (sm * sm - dif * dif) / den
        self.s = 2.0 * dif * sm / den
        pos = self.rho >= 0
        self.num12 = np.where(pos, (a2 - a1) + self.omr * a1, (a2 + a1) - self.opr * a1)
        self.num21 = np.where(pos, (a1 - a2) + self.omr * a2, (a1 + a2) - self.opr * a2)
        self.t12 = _ratio(self.num12, self.s)
        self.t21 = _ratio(self.num21, self.s)
        self.Q12, self.Q21 = _Q(self.t12), _Q(self.t21)
        self.f1, self.f2 = _phi(a1), _phi(a2)
        self.e2 = _direction(T1, T2, self.rho, self.omr, self.opr)      # ⊥ θ_1, towards θ_2
        self.f = _direction(T2, T1, self.rho, self.omr, self.opr)       # ⊥ θ_2, towards θ_1
        self.P = np.array([bvn_cdf(-x, -y, r, om, op) for x, y, r, om, op in
                           zip(a1, a2, self.rho, self.omr, self.opr)], dtype=np.float64)

    def both(self):
        """E[1_1 1_2 x̃x̃ᵀ] (N, d+1, d+1) by (B-5), (B-6)."""
        N, d = self.T1.shape
        T1, T2, e2, rho, s = self.T1, self.T2, self.e2, self.rho, self.s
        al1 = self.a1 * self.f1 * self.Q12
        al2 = self.a2 * self.f2 * self.Q21
        with np.errstate(over="ignore", invalid="ignore"):
            kap = np.where(np.isinf(self.t12), 0.0,
                           np.exp(-0.5 * (self.a1 ** 2 + np.where(np.isinf(self.t12), 0.0,
                                                                   self.t12) ** 2)) / (2 * np.pi))
        ks = kap * s
        out = np.zeros((N, d + 1, d + 1))
        xx = (self.P[:, None, None] * np.eye(d)[None]
              + al1[:, None, None] * np.einsum("na,nb->nab", T1, T1)
              + al2[:, None, None] * np.einsum("na,nb->nab", T2, T2)
              + (ks * rho)[:, None, None] * (np.einsum("na,nb->nab", T1, T1)
                                             - np.einsum("na,nb->nab", e2, e2))
              + (ks * s)[:, None, None] * (np.einsum("na,nb->nab", T1, e2)
                                           + np.einsum("na,nb->nab", e2, T1)))
        out[:, :d, :d] = 0.5 * (xx + np.transpose(xx, (0, 2, 1)))
        x1 = (self.f1 * self.Q12)[:, None] * T1 + (self.f2 * self.Q21)[:, None] * T2
        out[:, :d, d] = x1
        out[:, d, :d] = x1
        out[:, d, d] = self.P
        return out

    def relu_ind(self):
        """E[relu(z_1) 1_2 x̃] (N, d+1) by (B-7), (B-8)."""
        N, d = self.T1.shape
        out = np.empty((N, d + 1))
        r = _ramp(self.num21, self.s)
        out[:, :d] = self.n1[:, None] * (self.P[:, None] * self.T1
                                         + (self.f2 * r)[:, None] * self.T2)
        out[:, d] = self.n1 * (self.f1 * self.Q12 + self.rho * self.f2 * self.Q21
                               - self.a1 * self.P)
        return out

    def conditional(self):
        """E[relu(z_1) x̃x̃ᵀ | z_2 = 0] (N, d+1, d+1) by (B-9)."""
        N, d = self.T1.shape
        mu = np.concatenate([self.a2[:, None] * self.T2, np.ones((N, 1))], axis=1)
        Sig = np.zeros((N, d + 1, d + 1))
        Sig[:, :d, :d] = np.eye(d)[None] - np.einsum("na,nb->nab", self.T2, self.T2)
        ft = np.concatenate([self.f, np.zeros((N, 1))], axis=1)
        m0 = self.n1 * _ramp(self.num21, self.s)
        c1 = self.n1 * self.s * self.Q21
        c2 = self.n1 * self.s * _phi(self.t21)
        mm = np.einsum("na,nb->nab", mu, mu)
        fm = np.einsum("na,nb->nab", ft, mu)
        return (m0[:, None, None] * (mm + Sig) + c1[:, None, None] * (fm + np.transpose(fm, (0, 2, 1)))
                + c2[:, None, None] * np.einsum("na,nb->nab", ft, ft))


def _single(n, T, a):
    """(E[1 x̃x̃ᵀ] (m, d+1, d+1), E[relu x̃] (m, d+1), E[1] (m,)) of single units."""
    m, d = T.shape
    Q = _Q(a)
    f = _phi(a)
    A = np.zeros((m, d + 1, d + 1))
    A[:, :d, :d] = Q[:, None, None] * np.eye(d)[None] + (a * f)[:, None, None] * np.einsum(
        "na,nb->nab", T, T)
    A[:, :d, d] = f[:, None] * T
    A[:, d, :d] = f[:, None] * T
    A[:, d, d] = Q
    R = np.empty((m, d + 1))
    R[:, :d] = (Q * n)[:, None] * T
    R[:, d] = n * _hh1(a)
    return A, R, Q


def _linear_conditional(wt, n2, T2, a2):
    """E[(w̃·x̃) x̃x̃ᵀ | z_2 = 0] by (B-10) for one w̃ (d+1,) and units 2 (arrays)."""
    N, d = T2.shape
    mu = np.concatenate([a2[:, None] * T2, np.ones((N, 1))], axis=1)
    Sig = np.zeros((N, d + 1, d + 1))
    Sig[:, :d, :d] = np.eye(d)[None] - np.einsum("na,nb->nab", T2, T2)
    lbar = mu @ wt
    Sw = np.einsum("nab,b->na", Sig, wt)
    SwM = np.einsum("na,nb->nab", Sw, mu)
    return (lbar[:, None, None] * (np.einsum("na,nb->nab", mu, mu) + Sig) + SwM
            + np.transpose(SwM, (0, 2, 1)))


# ------------------------------------------------------------------------------ checks
def supported(student, teacher) -> tuple:
    """(True, "") if the formulas of this module apply (a relu / leaky-relu student with biases
    against a relu / leaky-relu network teacher with or without biases), else (False, reason)."""
    if getattr(student, "act", None) is None or student.act.kind != "pl":
        return False, ("the exact Hessian is implemented for relu and leaky_relu students; got "
                       f"activation {getattr(student, 'activation', None)!r}")
    if not isinstance(teacher, Teacher):
        return False, f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}"
    if not isinstance(teacher, NetworkTeacher) or teacher.activation.kind != "pl":
        return False, ("the exact Hessian of students with biases needs a relu / leaky_relu "
                       f"network teacher (popdyn.Teacher.network); got a {type(teacher).__name__}"
                       + ("" if not isinstance(teacher, NetworkTeacher)
                          else f" with activation {teacher.activation.name!r}"))
    if teacher.d != student.d:
        raise ValueError(f"`teacher` has input dimension {teacher.d} but the student has "
                         f"d = {student.d}")
    return True, ""


def _require(student, teacher):
    ok, why = supported(student, teacher)
    if not ok:
        raise ValueError(why)


# ------------------------------------------------------------------------------ assembly
class _Terms:
    """The moments of (B-2)–(B-10) at one state (shared by the gradient and the Hessian)."""

    def __init__(self, student, params, teacher):
        m, d, s = student.m, student.d, student.s
        W, b = params.W, params.b
        n = np.linalg.norm(W, axis=1)
        if np.any(n == 0):
            j = int(np.flatnonzero(n == 0)[0])
            raise ValueError(
                f"`params.W[{j}]` is zero: the exact Hessian of a student with biases needs every "
                "w_j ≠ 0 (at w_j = 0 the kink density φ(b_j/|w_j|)/|w_j| and the unit direction "
                "are undefined; at w_j = 0, b_j = 0 the loss is not twice differentiable)")
        self.m, self.d, self.s = m, d, s
        self.p, self.q = student.act.p, student.act.q
        self.n, self.T, self.al = n, W / n[:, None], -b / n
        self.Wt = np.concatenate([W, b[:, None]], axis=1)              # w̃_i (m, d+1)
        a, v, c = params.a, params.v, params.c
        # teacher units with u_k ≠ 0 are ramps; u_k = 0 units are constants
        pt, qt = teacher.activation.p, teacher.activation.q
        nz = teacher.alpha > 0
        Ut, bt, vt = teacher.theta[nz] * teacher.alpha[nz, None], teacher.bias[nz], teacher.weights[nz]
        self.nt, self.Tt, self.at = teacher.alpha[nz], teacher.theta[nz], -bt / teacher.alpha[nz]
        self.k = int(nz.sum())
        const = teacher.bias[~nz]
        yconst = float(teacher.weights[~nz] @ (pt * np.maximum(const, 0.0) + qt * const))
        # relu coefficients (students, then teachers) and the linear part w̃_L of g
        self.cr = np.concatenate([s * a * self.p, -vt * pt])
        wl = s * self.q * (a @ self.Wt) - qt * (vt @ np.concatenate([Ut, bt[:, None]], axis=1))
        wl[:d] += v
        wl[d] += c - yconst
        self.wl = wl
        # all ramp units (students then teachers)
        self.N = np.concatenate([n, self.nt])
        self.TT = np.concatenate([self.T, self.Tt], axis=0)
        self.AA = np.concatenate([self.al, self.at])
        self.A1, self.R1, self.Q1 = _single(n, self.T, self.al)        # student single units
        _, self.Rall, self.Qall = _single(self.N, self.TT, self.AA)
        I = np.eye(d + 1)
        self.Sd = self.p * self.A1 + self.q * I[None]                  # E[σ′_j x̃x̃ᵀ]
        # pairs (r, j): r over all ramp units, j over students
        M = m + self.k
        rr, jj = np.meshgrid(np.arange(M), np.arange(m), indexing="ij")
        rr, jj = rr.ravel(), jj.ravel()
        off = rr != jj
        self.rr, self.jj, self.off = rr, jj, off
        pr = _Pairs(self.N[rr[off]], self.TT[rr[off]], self.AA[rr[off]],
                    n[jj[off]], self.T[jj[off]], self.al[jj[off]])
        self.pairs = pr
        RB = np.empty((M, m, d + 1))                                   # E[relu_r 1_j x̃]
        RB[rr[off], jj[off]] = pr.relu_ind()
        dg = np.arange(m)
        RB[dg, dg] = self.R1
        self.RB = RB
        BB = np.empty((M, m, d + 1, d + 1))                            # E[1_r 1_j x̃x̃ᵀ]
        BB[rr[off], jj[off]] = pr.both()
        BB[dg, dg] = self.A1
        self.BB = BB[:m]
        CD = np.zeros((M, m, d + 1, d + 1))                            # E[relu_r x̃x̃ᵀ | z_j=0]
        CD[rr[off], jj[off]] = pr.conditional()
        self.CD = CD
        # E[relu_r σ′_j x̃] and E[g σ′_j x̃]
        self.RS = self.p * RB + self.q * self.Rall[:, None, :]
        self.gS = (np.einsum("r,rja->ja", self.cr, self.RS)
                   + np.einsum("jab,b->ja", self.Sd, wl))
        # kink terms K_j
        lin = _linear_conditional(wl, n, self.T, self.al)
        self.K = (_phi(self.al) / n)[:, None, None] * (np.einsum("r,rjab->jab", self.cr, CD)
                                                       + lin)


class _Lay:
    """Index ranges of the flat vector (the order of :class:`popdyn.landscape.Layout`: a, W
    row-major, b, v, c; kept here so that this module does not import :mod:`._hessian`).
    The b block is always present; :meth:`free` drops it for a bias-free student."""

    def __init__(self, student):
        m, d = student.m, student.d
        self.m, self.d, self.skip, self.intercept = m, d, bool(student.skip), bool(student.intercept)
        full = Layout(m, d, True, self.skip, self.intercept)    # the b block always present
        self.a, self.W, self.b, self.v, self.c = full.a, full.W, full.b, full.v, full.c
        self.size = full.size

    def free(self, student):
        """Indices of the student's free coordinates (b dropped when ``bias=False``)."""
        keep = np.ones(self.size, dtype=bool)
        if not student.bias:
            keep[self.b] = False
        return np.flatnonzero(keep)

    def flatten(self, P):
        parts = [P.a, np.asarray(P.W).ravel(), P.b]
        if self.skip:
            parts.append(P.v)
        if self.intercept:
            parts.append([P.c])
        return np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in parts])


def _theta_index(lay):
    """(m, d+1) indices of w̃_i = (W[i, :], b[i]) in the flat vector."""
    m, d = lay.m, lay.d
    idx = np.empty((m, d + 1), dtype=np.int64)
    idx[:, :d] = lay.W.start + np.arange(m)[:, None] * d + np.arange(d)[None, :]
    idx[:, d] = lay.b.start + np.arange(m)
    return idx


def own_gradient(student, params, teacher) -> np.ndarray:
    """∇L from the moments (B-6)–(B-8) of this module (w̃, v and c components; the a components
    are the engine's, which need E[σ_iσ_l]), in the order of :class:`Layout`.

    An independent check of this module's moments against the engine's gradient
    (:func:`popdyn.loss_and_grad`), which uses other closed forms (docs/design.md §3).
    """
    _require(student, teacher)
    student.family.check(params, teacher)
    lay = _Lay(student)
    t = _Terms(student, params, teacher)
    _, gE = student.family.loss_and_grad(params, teacher)
    g = lay.flatten(gE)
    idx = _theta_index(lay)
    g[idx.ravel()] = (student.s * params.a[:, None] * t.gS).ravel()
    if lay.skip:
        # E[g x] = Σ_r c_r E[relu_r x] + w_L
        g[lay.v] = t.cr @ t.Rall[:, :lay.d] + t.wl[:lay.d]
    if lay.intercept:
        g[lay.c] = t.cr @ t.Rall[:, lay.d] + t.wl[lay.d]
    return g[lay.free(student)]


def loss_grad_hessian(student, params, teacher, *, hessian: bool = True):
    """Exact L, ∇L and ∇²L of a relu / leaky-relu student with biases (formulas B-1..B-10).

    Parameters
    ----------
    student : popdyn.Student
        ``activation`` relu or leaky_relu, ``bias=True`` (or ``bias=False`` against a teacher
        with biases); ``skip``, ``intercept`` and ``scaling`` free.
    params : popdyn.Params
        The state; every w_j must be nonzero.
    teacher : popdyn.Teacher
        A relu / leaky-relu network teacher, with or without biases.
    hessian : bool
        If False, return (L, ∇L, None).

    Returns
    -------
    L : float
        ½E[(f − y)²] (the engine's value, as :func:`popdyn.population_loss`).
    g : ndarray (P,)
        ∇L in the order of :class:`Layout` (a, W row-major, b, v, c) — the engine's gradient.
    H : ndarray (P, P) or None
        ∇²L (symmetric).

    Raises
    ------
    ValueError
        Unsupported student / teacher (the message names what is supported), or a zero w_j.
    """
    _require(student, teacher)
    fam = student.family
    fam.check(params, teacher)
    lay = _Lay(student)
    M = fam.moments(params, teacher, need="grad")
    L = float(fam.loss(params, teacher, M))
    free = lay.free(student)
    g = lay.flatten(fam.grad(params, teacher, M))[free]
    if not hessian:
        return L, g, None
    t = _Terms(student, params, teacher)
    m, d, s, p, q = t.m, t.d, t.s, t.p, t.q
    a = params.a
    idx = _theta_index(lay)
    H = np.zeros((lay.size, lay.size))
    ia = np.arange(lay.a.start, lay.a.stop)
    # (B-1)
    H[np.ix_(ia, ia)] = s * s * np.asarray(M.C)
    # (B-2): E[σ_i σ′_l x̃] = p E[relu_i σ′_l x̃] + q E[σ′_l x̃x̃ᵀ] w̃_i
    ES = p * t.RS[:m] + q * np.einsum("lab,ib->ila", t.Sd, t.Wt)          # [i, l, :]
    AW = s * s * a[None, :, None] * ES
    AW[np.arange(m), np.arange(m)] += s * t.gS
    H[ia[:, None, None], idx[None, :, :]] = AW
    # (B-3): E[σ′_iσ′_l x̃x̃ᵀ] = p²E[1_i1_l x̃x̃ᵀ] + pq(A_i + A_l) + q²I  (i ≠ l); p(p+2q)A_i + q²I
    I = np.eye(d + 1)
    SS = (p * p * t.BB + p * q * (t.A1[:, None] + t.A1[None, :]) + q * q * I[None, None])
    dg = np.arange(m)
    SS[dg, dg] = p * (p + 2 * q) * t.A1 + q * q * I[None]
    WW = s * s * (a[:, None] * a[None, :])[:, :, None, None] * SS
    WW[dg, dg] += (s * p * a)[:, None, None] * t.K
    H[idx[:, None, :, None], idx[None, :, None, :]] = WW
    # (B-4)
    if lay.skip:
        iv = np.arange(lay.v.start, lay.v.stop)
        H[np.ix_(iv, iv)] = np.eye(d)
        H[np.ix_(ia, iv)] = s * (p * t.Q1 + q)[:, None] * params.W
        H[idx[:, :, None], iv[None, None, :]] = (s * a)[:, None, None] * t.Sd[:, :, :d]
    if lay.intercept:
        ic = lay.c.start
        H[ic, ic] = 1.0
        H[ia, ic] = s * np.asarray(M.mu0)
        H[idx, ic] = (s * a)[:, None] * t.Sd[:, :, d]
    # the blocks were written above or on the diagonal: mirror the upper triangle
    H = np.triu(H) + np.triu(H, 1).T
    return L, g, H[np.ix_(free, free)]


def new_unit_correlation(student, params, teacher, Wn, bn) -> np.ndarray:
    """E[(f − y) σ(w·x + b)] for each new unit (rows of ``Wn`` (n, d), ``bn`` (n,); w ≠ 0), σ the
    student's activation: the one-sided derivative ∂L/∂t at t = 0 of adding the unit t·σ(w·x + b)
    is s·sign·(this) (the boundary test of :func:`popdyn.landscape.classify`).

    With relu(z_n) = z_n 1_n: E[relu(z_r) relu(z_n)] = w̃_n · E[relu(z_r) 1_n x̃] (B-7, B-8), and
    E[g z_n] = w̃_n · E[g x̃].
    """
    _require(student, teacher)
    t = _Terms(student, params, teacher)
    Wn = np.atleast_2d(np.asarray(Wn, dtype=np.float64))
    bn = np.asarray(bn, dtype=np.float64).reshape(-1)
    nn = np.linalg.norm(Wn, axis=1)
    if np.any(nn == 0):
        raise ValueError("`Wn` has a zero row: a new unit needs w ≠ 0")
    Tn, an = Wn / nn[:, None], -bn / nn
    Wtn = np.concatenate([Wn, bn[:, None]], axis=1)
    M, n, d = t.N.size, Wn.shape[0], t.d
    rr: np.ndarray
    jj: np.ndarray
    rr, jj = np.meshgrid(np.arange(M), np.arange(n), indexing="ij")
    rr, jj = rr.ravel(), jj.ravel()
    pr = _Pairs(t.N[rr], t.TT[rr], t.AA[rr], nn[jj], Tn[jj], an[jj])
    RB = pr.relu_ind().reshape(M, n, d + 1)                           # E[relu_r 1_n x̃]
    _, Rn, _ = _single(nn, Tn, an)                                    # E[relu_n x̃]
    Eg_x = np.concatenate([t.cr @ t.Rall[:, :d], [t.cr @ t.Rall[:, d]]]) + t.wl   # E[g x̃]
    relu_part = (np.einsum("r,rna,na->n", t.cr, RB, Wtn) + Rn @ t.wl)
    return t.p * relu_part + t.q * (Wtn @ Eg_x)
