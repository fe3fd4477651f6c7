r"""Finite-sample loss landscapes of two-layer relu networks with weight decay.

Setting
-------
n data points x_i ∈ R^d (rows of X), labels y_i, a bias-free two-layer relu network of width m,
f(x) = Σ_j a_j relu(w_j·x), and the ℓ2-regularized empirical loss

    L(θ) = (1/2n) Σ_i (f(x_i) − y_i)² + (λ/2)(|a|² + |W|²_F),        θ = (a, W).

This is half the objective of Boursier, Bowditch, Englert, Lazić ("Favorability of loss
landscape with weight decay requires both large overparametrization and initialization",
arXiv 2505.22578), (1/n)Σ(f − y)² + λ|θ|² in the authors' public experiment code, with the same
λ: the two have the same critical points, minima and classification.  The network has no
biases (the authors' networks have none); a bias b_j, regularized like the other weights, is the
same problem with a constant 1 appended to every x_i (``with_bias``).

Activation regions
------------------
The pattern of unit j is D_j = diag(1[w_j·x_i > 0]) ∈ {0, 1}^n.  Inside a region (every
w_j·x_i ≠ 0, patterns fixed) relu(Xw_j) = D_j X w_j and L is a polynomial of degree 4 in θ;
with φ_j = D_j X w_j, f = Σ_j a_j φ_j, r = f − y (the residual vector):

    ∂L/∂a_j = φ_j·r/n + λ a_j,               ∂L/∂w_j = a_j (D_j X)ᵀ r/n + λ w_j,
    ∂²L/∂a_j∂a_k = φ_j·φ_k/n + λ δ_jk,
    ∂²L/∂a_j∂w_k = a_k (D_k X)ᵀ φ_j/n + δ_jk (D_j X)ᵀ r/n,
    ∂²L/∂w_j∂w_k = a_j a_k (D_j X)ᵀ(D_k X)/n + λ δ_jk I_d.

At a kink (some w_j·x_i = 0) the loss is not twice differentiable; :func:`loss_grad_hessian`
uses relu'(0) = 0 there (the one-sided formula of the region with x_i inactive).

The convex reformulation
------------------------
By AM–GM, (λ/2)(a_j² + |w_j|²) ≥ λ|a_j||w_j| with equality at balanced units, and f depends on
unit j through u_j = |a_j| w_j and s_j = sgn(a_j) only.  Over the realizable patterns D_k (the
cells of the central hyperplane arrangement {w·x_i = 0}, :func:`activation_patterns`) and both
signs, the global minimum of L over every width m ≥ m* equals (Pilanci & Ergen 2020)

    P = min (1/2n)|Σ_k D_k X(u_k − v_k) − y|² + λ Σ_k (|u_k| + |v_k|),
        s.t. (2D_k − I) X u_k ≥ 0,  (2D_k − I) X v_k ≥ 0,

(multiplying by n gives the issue's group-lasso form ½|…|² + β Σ(|u_k| + |v_k|) with β = nλ;
the authors' form is 2P), m* the number of nonzero groups of a solution.  Every network of every
width is feasible for P after grouping its units by (pattern, sign) (the cones are convex and
|Σu| ≤ Σ|u|), so P is a lower bound on the width-m minimum for every m.  Weak duality gives the
certified lower bound (:func:`global_optimum`): for any z ∈ R^n with
σ_k(z) = max_{u ∈ C_k, |u| ≤ 1} |z·D_k X u| ≤ nλ for every k,

    n P ≥ z·y − |z|²/2;

σ_k(±g) ≤ |g + Aᵀμ| for every μ ≥ 0 (A = (2D_k − I)X, C_k = {Au ≥ 0}; Moreau), μ from
non-negative least squares, the bound evaluated in Arb; z = t(y − f̂) from the solver's
residual, scaled by t ≤ 1 into the dual constraint.  The upper bound is the loss of the explicit
balanced network a_k = ±|u_k|^{1/2}, w_k = u_k/|u_k|^{1/2} read from the solution (Arb).

Critical points in a region
---------------------------
At a critical point every unit is balanced (a_j ∂L/∂a_j − w_j·∂L/∂w_j = λ(a_j² − |w_j|²)), and
two units with the same pattern and the same sign are parallel (w_j ∝ −a_j(D X)ᵀr).  Such
duplicates span a flat segment (mass moves between them) and are merged (:func:`merge_units`)
into one unit u = Σ u_j before certification.  Zero units (a_j = w_j = 0, where L is not
differentiable) are removed; at the merged point θ* with residual r*, they keep θ* a local
minimum when the margin max_k σ_k(r*)/n < λ holds (then the change of L from growing zero
units, (1/n) r·Σ a_j relu(Xw_j) + (λ/2)Σ(a_j² + |w_j|²) ≥ (λ − max σ/n)Σ|a_j||w_j| ≥ 0, is
nonnegative near θ*), and make it a saddle when some u ∈ C_k has |r*·D_k X u| > nλ|u| (then
a = ∓t, w = tu/|u| lowers L at order t²).  :func:`certify_state` proves the merged critical point
with Krawczyk's operator on the polynomial gradient in its region (the pre-activations'
signs certain on the box), the Hessian's eigenvalues bracketed on the whole box (λ_min > 0:
strict local minimum of the merged network; by L(θ) ≥ G(u) -- the convex reduced objective of
the region, equal at balanced points -- every width-m point whose merge and zero units match
is then a local minimum, strict iff no duplicates and no zero units), and the margin above.

References
----------
E. Boursier, M. Bowditch, M. Englert, R. Lazić, arXiv 2505.22578 (abstract; the authors'
public experiment code for the normalization, the data and the initialization); M. Pilanci,
T. Ergen, "Neural networks are convex regularizers", ICML 2020; R. Krawczyk, Computing 4 (1969);
A. Neumaier, "Interval methods for systems of equations" (1990) Thm. 5.1.8.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V

__all__ = ["DATA_KINDS", "Patterns", "GlobalOptimum", "StateCertificate", "make_data",
           "with_bias", "loss", "loss_grad_hessian", "activation_pattern", "activation_patterns",
           "n_cells_general_position", "global_optimum", "restricted_optimum", "init_params",
           "train_gd", "merge_units", "certify_state", "region_candidate", "classify",
           "loss_upper_bound"]

#: data sets: ``gaussian`` (x_i ~ N(0, I_d)), ``orthogonal`` (orthonormal x_i, d ≥ n),
#: ``xhat`` (the three-point construction of the authors' small-initialization experiment)
DATA_KINDS = ("gaussian", "orthogonal", "xhat")


# ============================================================================ data
def make_data(kind: str, n: int, d: int, seed: int, *, teacher_width: int = 3):
    """(X, y): n points in R^d and their labels.

    ``gaussian``: x_i ~ N(0, I_d), y_i = Σ_t α_t relu(z_t·x_i) with α_t ~ N(0, 1), z_t ~ N(0, I_d)
    (``teacher_width`` units; the authors' "teacher" labels).  ``orthogonal``: x_i = e_i, the first n
    standard basis vectors (d ≥ n; L is invariant under rotating X and W together, so every
    orthonormal set is this one; exact zeros make the kinks of its critical points exact), labels
    y_i ~ N(0, 1) (mixed signs; a relu teacher gives exact zero labels, degenerate kinks).  ``xhat`` (n = 3,
    d = 3): x̂₁ = e₁, x̂₂ = (8, −4, 1)/9, x̂₃ = (8, 4, 1)/9, each perturbed by N(0, 10⁻⁶) entries
    and renormalized, y = β·x with β = (4/5, 0, 3/5) (the authors' small-initialization
    experiment, read from their public code).  ``numpy.random.default_rng(seed)`` throughout.
    """
    V.choice("kind", kind, DATA_KINDS)
    n = V.positive_int("n", n)
    d = V.positive_int("d", d)
    rng = np.random.default_rng(V.nonneg_int("seed", seed))
    if kind == "xhat":
        if (n, d) != (3, 3):
            raise ValueError(f"`kind` 'xhat' has n = d = 3, got n = {n}, d = {d}")
        X = np.array([[1.0, 0, 0], [8 / 9, -4 / 9, 1 / 9], [8 / 9, 4 / 9, 1 / 9]])
        X = X + 1e-3 * rng.normal(size=X.shape)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        return X, X @ np.array([0.8, 0.0, 0.6])
    if kind == "orthogonal":
        if d < n:
            raise ValueError(f"`kind` 'orthogonal' needs d >= n, got n = {n}, d = {d}")
        X = np.eye(d)[:n]          # by rotation invariance of L, every orthonormal set is this one
    else:
        X = rng.normal(size=(n, d))
    if kind == "orthogonal":     # Gaussian labels (no exact zero label, mixed signs)
        return X, rng.normal(size=n)
    tw = V.positive_int("teacher_width", teacher_width)
    alpha = rng.normal(size=tw)
    Z = rng.normal(size=(tw, d))
    return X, np.maximum(X @ Z.T, 0.0) @ alpha


def with_bias(X):
    """X with a column of ones appended: a bias b_j regularized like the weights is the
    bias-free problem on these points."""
    X = np.asarray(X, dtype=np.float64)
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _check_problem(X, y, lam):
    X = V.array("X", X, (None, None))
    y = V.array("y", y, (X.shape[0],))
    lam = V.real("lam", lam, positive=True)
    return X, y, lam


# ============================================================================ loss
def activation_pattern(X, W) -> np.ndarray:
    """(m, n) booleans 1[w_j·x_i > 0]."""
    return (np.asarray(W) @ np.asarray(X).T) > 0


def loss(X, y, lam, a, W) -> float:
    """L(θ) = (1/2n)|relu(XWᵀ)a − y|² + (λ/2)(|a|² + |W|²) in float64."""
    r = np.maximum(X @ W.T, 0.0) @ a - y
    return float(r @ r / (2 * len(y)) + 0.5 * lam * (a @ a + np.sum(W * W)))


def loss_grad_hessian(X, y, lam, a, W, *, hess: bool = True):
    """(L, ∇L, ∇²L) of the module docstring in the flattening θ = (a_1..a_m, w_1, …, w_m).

    Parameters
    ----------
    X : (n, d) data, y : (n,) labels, lam : λ > 0.
    a : (m,) output weights, W : (m, d) input weights.
    hess : also return the Hessian (else None).

    Returns
    -------
    (float, ndarray (m(d+1),), ndarray (m(d+1), m(d+1)) or None)
        The Hessian is that of the polynomial of the region the point lies in; at a kink
        (w_j·x_i = 0) the convention relu'(0) = 0 is used.
    """
    X, y, lam = _check_problem(X, y, lam)
    a = V.array("a", a, (None,))
    W = V.array("W", W, (a.shape[0], X.shape[1]))
    return _lgh_float(X, y, lam, a, W, hess)


def _lgh_float(X, y, lam, a, W, hess=True):
    n, d = X.shape
    m = a.shape[0]
    Dm = (W @ X.T > 0).astype(np.float64)            # (m, n)
    Phi = Dm * (W @ X.T)                              # φ_j as rows
    r = a @ Phi - y
    L = float(r @ r / (2 * n) + 0.5 * lam * (a @ a + np.sum(W * W)))
    ga = Phi @ r / n + lam * a
    DX = Dm[:, :, None] * X[None, :, :]               # (m, n, d): D_j X
    gW = a[:, None] * np.einsum("jid,i->jd", DX, r) / n + lam * W
    g = np.concatenate([ga, gW.ravel()])
    if not hess:
        return L, g, None
    P = m * (d + 1)
    H = np.zeros((P, P))
    H[:m, :m] = Phi @ Phi.T / n + lam * np.eye(m)
    # ∂²L/∂a_j∂w_k = a_k (D_k X)ᵀ φ_j / n + δ_jk (D_j X)ᵀ r / n
    AW = a[None, :, None] * np.einsum("kid,ji->jkd", DX, Phi) / n       # (j, k, d)
    DXr = np.einsum("jid,i->jd", DX, r) / n
    for j in range(m):
        AW[j, j] += DXr[j]
    H[:m, m:] = AW.reshape(m, m * d)
    H[m:, :m] = H[:m, m:].T
    WW = np.einsum("jid,kie->jdke", DX, DX) / n * (a[:, None, None, None] * a[None, None, :, None])
    WW = WW.reshape(m * d, m * d) + lam * np.eye(m * d)
    H[m:, m:] = WW
    return L, g, 0.5 * (H + H.T)


# ============================================================================ patterns
def n_cells_general_position(n: int, d: int) -> int:
    """Number of cells of a central arrangement of n hyperplanes in general position in R^d:
    2^n if n ≤ d, else 2 Σ_{i<d} C(n − 1, i) (Cover 1965)."""
    if n <= d:
        return 2 ** n
    return 2 * sum(math.comb(n - 1, i) for i in range(d))


@dataclass(frozen=True)
class Patterns:
    """The realizable activation patterns of X (the cells of the arrangement {w·x_i = 0}).

    Attributes
    ----------
    D : (K, n) bool, one row per cell.
    witness : (K, d) a point strictly inside each cell, checked in exact rational arithmetic.
    complete : bool
        The data are in general position (every min(n, d) points linearly independent, exact
        determinants) and K equals :func:`n_cells_general_position`: the list is every cell.
    """

    D: np.ndarray
    witness: np.ndarray
    complete: bool

    @property
    def K(self) -> int:
        return int(self.D.shape[0])


def _fr_dot(x, w):
    return sum(Fraction(float(p)) * Fraction(float(q)) for p, q in zip(x, w))


def _fr_det(M):
    M = [[Fraction(float(v)) for v in row] for row in M]
    k = len(M)
    det = Fraction(1)
    for c in range(k):
        piv = next((r for r in range(c, k) if M[r][c] != 0), None)
        if piv is None:
            return Fraction(0)
        if piv != c:
            M[c], M[piv] = M[piv], M[c]
            det = -det
        det *= M[c][c]
        for r in range(c + 1, k):
            f = M[r][c] / M[c][c]
            for cc in range(c, k):
                M[r][cc] -= f * M[c][cc]
    return det


def _general_position(X) -> bool:
    n, d = X.shape
    k = min(n, d)
    for S in itertools.combinations(range(n), k):
        sub = X[list(S)]
        if k == d:
            if _fr_det(sub) == 0:
                return False
        else:   # k = n < d: the n rows independent iff the Gram determinant is nonzero
            G = [[_fr_dot(sub[i], sub[j]) for j in range(k)] for i in range(k)]
            if _fr_det(G) == 0:
                return False
    return True


def activation_patterns(X) -> Patterns:
    """Enumerate the cells of the central arrangement {w·x_i = 0} (:class:`Patterns`).

    n ≤ d with independent rows: all 2^n patterns, witness the least-norm w with Xw = 2D − 1.
    n > d: every cell of an essential arrangement in general position is a pointed cone whose
    extreme rays are the lines through d − 1 of the x_i's normals; each ray v (null vector of d − 1
    rows, both signs) touches the cells whose patterns are sign(Xv) with the d − 1 zero entries
    set to every ± choice; the witness v + εw', X_S w' = s, ε small.  Every witness is checked
    exactly ((2D − 1)·Xw > 0 in rationals); completeness by the count (:class:`Patterns`)."""
    X = V.array("X", X, (None, None))
    n, d = X.shape
    found: dict = {}

    def add(w):
        z = X @ w
        if np.any(z == 0):
            return
        key = tuple(bool(t) for t in z > 0)
        if key in found:
            return
        if all((_fr_dot(X[i], w) > 0) == key[i] and _fr_dot(X[i], w) != 0 for i in range(n)):
            found[key] = np.array(w, dtype=np.float64)

    if n <= d and np.linalg.matrix_rank(X) == n:
        pinv = np.linalg.pinv(X)
        for bits in itertools.product((True, False), repeat=n):
            add(pinv @ (2.0 * np.array(bits) - 1.0))
    elif d == 1:
        add(np.array([1.0]))
        add(np.array([-1.0]))
    else:
        for S in itertools.combinations(range(n), d - 1):
            XS = X[list(S)]
            _, _, Vt = np.linalg.svd(XS)
            v0 = Vt[-1]
            pinvS = np.linalg.pinv(XS)
            others = [i for i in range(n) if i not in S]
            for v in (v0, -v0):
                base = X[others] @ v
                for s in itertools.product((1.0, -1.0), repeat=d - 1):
                    wp = pinvS @ np.array(s)
                    dz = X[others] @ wp
                    with np.errstate(divide="ignore"):
                        lim = np.min(np.abs(base) / np.maximum(np.abs(dz), 1e-300)) if others else 1.0
                    eps = min(0.25 * lim, 0.25) / max(1.0, float(np.linalg.norm(wp)))
                    add(v + eps * wp)
    keys = sorted(found)
    D = np.array(keys, dtype=bool).reshape(len(keys), n)
    Wt = np.array([found[k] for k in keys]).reshape(len(keys), d)
    complete = (len(keys) == n_cells_general_position(n, d)) and _general_position(X)
    return Patterns(D, Wt, bool(complete))


# ============================================================================ convex program
@dataclass(frozen=True)
class GlobalOptimum:
    """Result of :func:`global_optimum` (values in the normalization of :func:`loss`).

    Attributes
    ----------
    lower : float
        Certified lower bound on the minimum of L over every width (weak duality, Arb; −inf if
        the pattern list is not complete).
    upper : float
        Certified upper bound: the Arb loss of the network ``a``, ``W`` (width ``groups``).
    value : float
        The solver's primal objective.
    a, W : the balanced network read from the solution (one unit per nonzero group).
    groups : int
        m*: the number of nonzero groups (units of ``a``, ``W``).
    status : str
        Clarabel's status.
    dual_scale : float
        The factor t ≤ 1 that made the solver's residual dual feasible.
    """

    lower: float
    upper: float
    value: float
    a: np.ndarray
    W: np.ndarray
    groups: int
    status: str
    dual_scale: float

    @property
    def gap(self) -> float:
        return self.upper - self.lower


def _solve_group_lasso(X, y, beta, blocks, *, tol=1e-11):
    """min ½|Σ_b s_b D_b X u_b − y|² + β Σ|u_b| s.t. (2D_b − I)Xu_b ≥ 0 (Clarabel).  ``blocks``
    is a list of (D (n,) bool, s ±1).  Returns (U (B, d), objective, status)."""
    import clarabel
    from scipy import sparse

    n, d = X.shape
    B = len(blocks)
    nu, nt = B * d, B
    N = nu + nt + n                     # variables: u (B·d), t (B), e (n)
    P = sparse.csc_matrix((np.ones(n), (np.arange(nu + nt, N), np.arange(nu + nt, N))),
                          shape=(N, N))
    q = np.concatenate([np.zeros(nu), beta * np.ones(nt), np.zeros(n)])
    rows, b_, cones = [], [], []
    # e − Σ s D X u = −y  (zero cone)
    Aeq = np.zeros((n, N))
    Aeq[:, nu + nt:] = np.eye(n)
    for k, (Dk, s) in enumerate(blocks):
        Aeq[:, k * d:(k + 1) * d] = -s * (Dk[:, None] * X)
    rows.append(Aeq)
    b_.append(-y)
    cones.append(clarabel.ZeroConeT(n))
    # (2D − I) X u ≥ 0  ⇔  −(2D − I)X u + slack = 0, slack ≥ 0
    Ain = np.zeros((B * n, N))
    for k, (Dk, s) in enumerate(blocks):
        Ain[k * n:(k + 1) * n, k * d:(k + 1) * d] = -((2.0 * Dk - 1.0)[:, None] * X)
    rows.append(Ain)
    b_.append(np.zeros(B * n))
    cones.append(clarabel.NonnegativeConeT(B * n))
    # (t_k, u_k) ∈ SOC
    for k in range(B):
        Ak = np.zeros((d + 1, N))
        Ak[0, nu + k] = -1.0
        Ak[1:, k * d:(k + 1) * d] = -np.eye(d)
        rows.append(Ak)
        b_.append(np.zeros(d + 1))
        cones.append(clarabel.SecondOrderConeT(d + 1))
    Acsc = sparse.csc_matrix(np.vstack(rows))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = tol
    settings.tol_gap_rel = tol
    settings.tol_feas = tol
    settings.max_iter = 400
    solver = clarabel.DefaultSolver(P, q, Acsc, np.concatenate(b_), cones, settings)
    sol = solver.solve()
    x = np.array(sol.x)
    return x[:nu].reshape(B, d), float(sol.obj_val), str(sol.status)


def _blocks(patterns: Patterns):
    return [(Dk, s) for Dk in patterns.D if Dk.any() for s in (1.0, -1.0)]


def _network_from_groups(U, signs, zero=1e-12):
    norms = np.linalg.norm(U, axis=1)
    keep = norms > zero * max(1.0, float(norms.max(initial=0.0)))
    U, signs, norms = U[keep], np.asarray(signs)[keep], norms[keep]
    sq = np.sqrt(norms)
    return signs * sq, U / sq[:, None]


def loss_upper_bound(X, y, lam, a, W, *, prec: int = 128) -> float:
    """A rigorous upper bound on L(a, W) (Arb evaluation of the exact float inputs)."""
    from flint import arb
    from certify import _arb as A
    with A.workprec(prec):
        return A.upper(_loss_arb(X, y, lam, a, W, arb))


def _loss_arb(X, y, lam, a, W, arb):
    n, d = X.shape
    m = len(a)
    tot = arb(0)
    pen = arb(0)
    for j in range(m):
        pen += arb(float(a[j])) ** 2
        for k in range(d):
            pen += arb(float(W[j, k])) ** 2
    for i in range(n):
        f = arb(0)
        for j in range(m):
            z = sum((arb(float(X[i, k])) * arb(float(W[j, k])) for k in range(d)), arb(0))
            z = z.max(arb(0))                  # relu of a ball: a ball containing it
            f += arb(float(a[j])) * z
        e = f - arb(float(y[i]))
        tot += e * e
    return tot / (2 * n) + arb(float(lam)) * pen / 2


def _sigma_upper(X, Dk, g_arb, arb, A):
    """Upper bound on max_{u ∈ C_k, |u| ≤ 1} |g·u| for g in the Arb vector ``g_arb`` (both signs):
    min over μ ≥ 0 of |±g + Aᵀμ| with μ from NNLS at the midpoint, evaluated in Arb."""
    from scipy.optimize import nnls
    Ak = (2.0 * Dk - 1.0)[:, None] * X                       # (n, d)
    gm = np.array([float(v.mid()) for v in g_arb])
    best = 0.0
    for s in (1.0, -1.0):
        mu, _ = nnls(Ak.T, -s * gm)
        v = [s * g_arb[k] + sum((arb(float(Ak[i, k])) * arb(float(mu[i]))
                                 for i in range(len(mu))), arb(0)) for k in range(X.shape[1])]
        nrm2 = sum((t * t for t in v), arb(0))
        best = max(best, A.upper(nrm2.sqrt()))
    return best


def _sigma_lower(X, Dk, witness, g_float):
    """A float lower estimate of max_{u ∈ C_k, |u| ≤ 1} |g·u| and the maximizing direction (the
    projection of ±g onto the cone, pulled slightly into its interior)."""
    from scipy.optimize import nnls
    Ak = (2.0 * Dk - 1.0)[:, None] * X
    best, arg = 0.0, None
    for s in (1.0, -1.0):
        mu, _ = nnls(Ak.T, -s * g_float)
        p = s * g_float + Ak.T @ mu
        for t in (0.0, 1e-9, 1e-6, 1e-3):
            u = p / max(np.linalg.norm(p), 1e-300) + t * witness / np.linalg.norm(witness)
            if np.all(Ak @ u > 0):
                val = abs(g_float @ u) / np.linalg.norm(u)
                if val > best:
                    best, arg = val, u / np.linalg.norm(u)
                break
    return best, arg


def global_optimum(X, y, lam, patterns: Patterns | None = None, *, tol: float = 1e-11,
                   prec: int = 128) -> GlobalOptimum:
    """The global minimum of L over all widths, certified by the convex reformulation.

    Parameters
    ----------
    X, y, lam : the problem (module docstring).
    patterns : the cells (default :func:`activation_patterns`).
    tol : Clarabel's gap and feasibility tolerances.
    prec : Arb precision (bits) of the bounds.

    Returns
    -------
    GlobalOptimum
        ``lower`` ≤ min L ≤ ``upper`` (rigorous; the lower bound needs ``patterns.complete``,
        else −inf) and the network achieving ``upper`` (width ``groups``).
    """
    X, y, lam = _check_problem(X, y, lam)
    if patterns is None:
        patterns = activation_patterns(X)
    n = X.shape[0]
    blocks = _blocks(patterns)
    U, obj, status = _solve_group_lasso(X, y, n * lam, blocks, tol=tol)
    # the support (groups above 1e−6 of the largest), re-solved alone: a sparse solution
    nrm = np.linalg.norm(U, axis=1)
    keep = np.flatnonzero(nrm > 1e-6 * max(float(nrm.max(initial=0.0)), 1e-300))
    if 0 < len(keep) < len(blocks):
        sub = [blocks[i] for i in keep]
        U2, obj2, status2 = _solve_group_lasso(X, y, n * lam, sub, tol=tol)
        if obj2 <= obj + 1e-9 * max(1.0, abs(obj)):
            blocks, U, obj, status = sub, U2, obj2, status2
    signs = np.array([s for _, s in blocks])
    a, W = _network_from_groups(U, signs, zero=1e-9)
    upper = loss_upper_bound(X, y, lam, a, W, prec=prec)
    fhat = np.sum([s * ((Dk[:, None] * X) @ u) for (Dk, s), u in zip(blocks, U)], axis=0)
    lower, t = _dual_lower(X, y, lam, patterns, y - fhat, prec) if patterns.complete \
        else (-math.inf, 0.0)
    return GlobalOptimum(lower, upper, obj / n, a, W, int(len(a)), status, t)


def _dual_lower(X, y, lam, patterns, z0, prec):
    from flint import arb
    from certify import _arb as A
    n, d = X.shape
    with A.workprec(prec):
        z = [arb(float(v)) for v in z0]
        smax = 0.0
        for Dk in patterns.D:
            if not Dk.any():
                continue
            g = [sum((arb(float(X[i, k])) * z[i] for i in range(n) if Dk[i]), arb(0))
                 for k in range(d)]
            smax = max(smax, _sigma_upper(X, Dk, g, arb, A))
        beta = arb(float(n)) * arb(float(lam))
        t = arb(1) if smax <= A.lower(beta) else beta / arb(smax)
        t = arb(min(1.0, A.lower(t)))               # a float t ≤ the admissible scale
        zy = sum((t * z[i] * arb(float(y[i])) for i in range(n)), arb(0))
        zz = sum((t * t * z[i] * z[i] for i in range(n)), arb(0))
        lb = (zy - zz / 2) / n
        return A.lower(lb), float(t.mid())


def restricted_optimum(X, y, lam, classes, *, tol: float = 1e-10) -> float:
    """min over the closure of an activation region of L (float, Clarabel): the convex program
    restricted to the (pattern, sign) ``classes`` present in the region, a list of
    (D (n,) bool, s ±1).  This is the infimum of L over every network whose units have exactly
    those classes (any number of units per class)."""
    X, y, lam = _check_problem(X, y, lam)
    blocks = [(np.asarray(D, bool), float(s)) for D, s in classes if np.asarray(D).any()]
    if not blocks:
        return float(y @ y / (2 * len(y)))
    _, obj, _ = _solve_group_lasso(X, y, X.shape[0] * lam, blocks, tol=tol)
    return obj / X.shape[0]


# ============================================================================ training
def init_params(m: int, d: int, scale: float, rng):
    """w_j ~ N(0, scale² I_d), a_j = ±|w_j| with a random sign (balanced units: the authors'
    initialization).  ``rng`` a numpy Generator."""
    W = scale * rng.normal(size=(m, d))
    a = rng.choice((-1.0, 1.0), size=m) * np.linalg.norm(W, axis=1)
    return a, W


def train_gd(X, y, lam, a, W, *, lr: float, steps: int, gtol: float = 0.0):
    """Full-batch gradient descent θ ← θ − η∇L (relu'(0) = 0) for ``steps`` updates, monotone:
    an update that would increase L is not taken and η is halved (the paper's analysis is of
    gradient flow; the halving only keeps a too-large step from diverging, and η grows back by
    1% per accepted update up to ``lr``).  Stops early when
    max|∇L| ≤ ``gtol``.  Returns (a, W, updates done, max|∇L| at the end, final η)."""
    a, W = np.array(a, dtype=np.float64), np.array(W, dtype=np.float64)
    n = len(y)
    eta = float(lr)

    def lg(a, W):
        Z = W @ X.T
        Dm = Z > 0
        Phi = np.where(Dm, Z, 0.0)
        r = a @ Phi - y
        L = r @ r / (2 * n) + 0.5 * lam * (a @ a + np.sum(W * W))
        return L, Phi @ r / n + lam * a, (a[:, None] * ((Dm * r[None, :]) @ X)) / n + lam * W

    L, ga, gW = lg(a, W)
    t = 0
    while t < int(steps):
        if gtol > 0 and max(float(np.max(np.abs(ga))), float(np.max(np.abs(gW)))) <= gtol:
            break
        with np.errstate(all="ignore"):
            a1, W1 = a - eta * ga, W - eta * gW
            L1, ga1, gW1 = lg(a1, W1)
        if not (np.isfinite(L1) and L1 <= L):
            eta *= 0.5
            if eta < 1e-12 * lr:
                break
            continue
        a, W, L, ga, gW = a1, W1, L1, ga1, gW1
        eta = min(lr, 1.01 * eta)
        t += 1
    gmax = max(float(np.max(np.abs(ga))), float(np.max(np.abs(gW))))
    return a, W, t, gmax, eta


# ============================================================================ certification
def merge_units(X, a, W, *, zero_tol: float):
    """Merge a float state: units with a_j² + |w_j|² ≤ zero_tol² are zero units; the others are
    grouped by (pattern, sign(a_j)) and each group becomes one balanced unit u = Σ|a_j|w_j.
    Returns (a', W', classes, n_zero, duplicates) with classes a list of (D, s)."""
    size = np.sqrt(a * a + np.sum(W * W, axis=1))
    act = size > zero_tol
    groups: dict = {}
    for j in np.flatnonzero(act):
        key = (tuple(bool(t) for t in X @ W[j] > 0), float(np.sign(a[j])))
        groups.setdefault(key, []).append(j)
    aa, WW, classes = [], [], []
    for (D, s), js in groups.items():
        u = sum(abs(a[j]) * W[j] for j in js)
        nu = math.sqrt(float(np.linalg.norm(u)))
        if nu == 0:
            continue
        aa.append(s * nu)
        WW.append(u / nu)
        classes.append((np.array(D), s))
    dup = int(act.sum()) - len(groups)
    return (np.array(aa), np.array(WW).reshape(len(aa), X.shape[1]), classes,
            int((~act).sum()), dup)


@dataclass(frozen=True)
class StateCertificate:
    """Result of :func:`certify_state`.

    Attributes
    ----------
    verdict : {"local_min", "critical", "saddle", "undecided"}
        ``critical``: a certified critical point of the merged network with zero units whose
        dual margin is not certainly negative (a local minimum iff it is a global one).
    strict : bool
        A strict local minimum of the width-m loss (no duplicates, no zero units).
    loss : (float, float)
        Rigorous bracket of L at the certified critical point (−inf, inf if none).
    reason : str
    classes : int
        Number of (pattern, sign) classes of the merged network.
    zero_units, duplicates : int
    lam_min : (float, float)
        Bracket of the smallest Hessian eigenvalue of the merged network on the box.
    margin : (float, float)
        Bracket of λ − max_k σ_k(r*)/n (> 0: zero units cannot grow; < 0: saddle).
    contraction : float
        Krawczyk's max|K(X) − x̂|/r.
    center : (a, W) of the merged point (float).
    """

    verdict: str
    strict: bool
    loss: tuple
    reason: str
    classes: int
    zero_units: int
    duplicates: int
    lam_min: tuple = (-math.inf, math.inf)
    margin: tuple = (-math.inf, math.inf)
    contraction: float = math.inf
    center: tuple = field(default=(None, None), repr=False)


def _newton(X, y, lam, a, W, steps=30):
    m, d = W.shape
    x = np.concatenate([a, W.ravel()])
    D0 = activation_pattern(X, W)
    for _ in range(steps):
        _, g, H = _lgh_float(X, y, lam, x[:m], x[m:].reshape(m, d))
        try:
            dx = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        xn = x - dx
        if not np.array_equal(activation_pattern(X, xn[m:].reshape(m, d)), D0):
            break
        x = xn
        if np.max(np.abs(dx)) <= 1e-16 * max(1.0, np.max(np.abs(x))):
            break
    return x[:m], x[m:].reshape(m, d)


def _lgh_arb(xs, X, y, lam, Dm, m, d, arb, hess):
    """L, ∇L, ∇²L (lists of arb) on the box ``xs`` for the fixed pattern Dm (m, n)."""
    n = X.shape[0]
    a = xs[:m]
    W = [xs[m + j * d:m + (j + 1) * d] for j in range(m)]
    Xa = [[arb(float(v)) for v in row] for row in X]
    lamb = arb(float(lam))
    DX = [[[Xa[i][k] if Dm[j, i] else arb(0) for k in range(d)] for i in range(n)]
          for j in range(m)]
    Phi = [[sum((DX[j][i][k] * W[j][k] for k in range(d)), arb(0)) for i in range(n)]
           for j in range(m)]
    r = [sum((a[j] * Phi[j][i] for j in range(m)), arb(0)) - arb(float(y[i])) for i in range(n)]
    pen = sum((t * t for t in xs), arb(0))
    L = sum((t * t for t in r), arb(0)) / (2 * n) + lamb * pen / 2
    g = [sum((Phi[j][i] * r[i] for i in range(n)), arb(0)) / n + lamb * a[j] for j in range(m)]
    DXr = [[sum((DX[j][i][k] * r[i] for i in range(n)), arb(0)) / n for k in range(d)]
           for j in range(m)]
    for j in range(m):
        for k in range(d):
            g.append(a[j] * DXr[j][k] + lamb * W[j][k])
    if not hess:
        return L, g, None, r
    P = m * (d + 1)
    H = [[arb(0)] * P for _ in range(P)]
    for j in range(m):
        for k in range(j, m):
            v = sum((Phi[j][i] * Phi[k][i] for i in range(n)), arb(0)) / n
            if j == k:
                v += lamb
            H[j][k] = H[k][j] = v
    for j in range(m):
        for k in range(m):
            for e in range(d):
                v = a[k] * sum((DX[k][i][e] * Phi[j][i] for i in range(n)), arb(0)) / n
                if j == k:
                    v += DXr[j][e]
                H[j][m + k * d + e] = H[m + k * d + e][j] = v
    for j in range(m):
        for k in range(j, m):
            aa = a[j] * a[k]
            for e in range(d):
                for f in range(d):
                    v = aa * sum((DX[j][i][e] * DX[k][i][f] for i in range(n)), arb(0)) / n
                    if j == k and e == f:
                        v += lamb
                    H[m + j * d + e][m + k * d + f] = v
                    H[m + k * d + f][m + j * d + e] = v
    return L, g, H, r


def certify_state(X, y, lam, a, W, *, patterns: Patterns | None = None, zero_tol: float = 1e-6,
                  radius: float | None = None, prec: int = 128,
                  zero_units: int | None = None) -> StateCertificate:
    """Certify the critical point near the float state (a, W) (module docstring).

    Parameters
    ----------
    X, y, lam : the problem.
    a, W : a float state (e.g. the end of :func:`train_gd`).
    patterns : the cells (for the zero-unit margin; default :func:`activation_patterns`).
    zero_tol : units with √(a_j² + |w_j|²) ≤ zero_tol are zero units.
    radius : half-width of the Krawczyk box (default 1e−9·max(1, |x̂|_∞), shrunk 100× on failure).
    prec : Arb precision (bits).
    zero_units : the number of zero units of the width-m point the certificate is about (default:
        those of (a, W) under ``zero_tol``); decides whether the margin matters.

    Returns
    -------
    StateCertificate
    """
    from flint import arb, arb_mat
    from certify import _arb as A

    X, y, lam = _check_problem(X, y, lam)
    a = V.array("a", a, (None,))
    W = V.array("W", W, (a.shape[0], X.shape[1]))
    if patterns is None:
        patterns = activation_patterns(X)
    n, d = X.shape
    am, Wm, classes, nzero, dup = merge_units(X, a, W, zero_tol=zero_tol)
    if zero_units is not None:
        nzero = V.nonneg_int("zero_units", zero_units)
    k = len(am)
    base = dict(classes=k, zero_units=nzero, duplicates=dup)
    if k == 0:
        # θ = 0: L = |y|²/2n; a local minimum iff no unit can grow: margin with r = −y
        return _zero_network(X, y, lam, patterns, prec, base)
    # snap near-kinks (|w_j·x_l| ≤ 1e−5|w_j||x_l|) onto the kink (a solver leaves ~1e−6 there);
    # a wrong snap only makes the certificate below fail (undecided), never pass
    for j in range(k):
        for l in range(n):
            z = float(Wm[j] @ X[l])
            if abs(z) <= 1e-5 * np.linalg.norm(Wm[j]) * np.linalg.norm(X[l]):
                Wm[j] = Wm[j] - (z / float(X[l] @ X[l])) * X[l]
                Wm[j, np.abs(Wm[j]) <= 1e-300] = 0.0
    am, Wm = _newton(X, y, lam, am, Wm)
    xf = np.concatenate([am, Wm.ravel()])
    Dm = activation_pattern(X, Wm)
    # kinks: w_j·x_l = 0 exactly at every critical point of L_D when x_l ⊥ x_i (exact rationals)
    # for every i active for unit j (then λw_j = −(a_j/n)(D_j X)ᵀr is orthogonal to x_l)
    Z = Wm @ X.T
    kinks = []
    for j in range(k):
        for l in range(n):
            if not Dm[j, l] and abs(Z[j, l]) <= 1e-12 * np.linalg.norm(Wm[j]) * np.linalg.norm(X[l]):
                if all(_fr_dot(X[l], X[i]) == 0 for i in range(n) if Dm[j, i]):
                    kinks.append((j, l))
    P = len(xf)
    scale = max(1.0, float(np.max(np.abs(xf))))
    radii = [radius] if radius is not None else [1e-9 * scale, 1e-11 * scale]
    res: Any = None
    for r in radii:
        res = _krawczyk(X, y, lam, xf, Dm, k, d, r, prec, arb, arb_mat, A, kinks)
        if res[0] == "ok":
            break
    if res is None or res[0] != "ok":
        return StateCertificate("undecided", False, (-math.inf, math.inf), res[1],
                                center=(am, Wm), **base)
    _, Lb, eig, contraction, enc, kinks = res
    with A.workprec(prec):
        encb = [A.ball(lo, hi) for lo, hi in enc]
        _, _, _, rr = _lgh_arb(encb, X, y, lam, Dm, k, d, arb, hess=False)
        m_lo, m_hi = _margin(X, lam, patterns, rr, arb, A)
        # a kink pair (j, l): x_l inactive for L_D with w_j·x_l = 0 at x*; L = L_D + (1/n) r_l a_j
        # relu(z) + a_j² relu(z)²/2n ≥ L_D on the box iff r_l a_j ≥ 0 there
        kmin, kmax = math.inf, math.inf
        for j, l in kinks:
            v = rr[l] * encb[j]
            lo_, hi_ = A.arb_bounds(v)
            kmin = min(kmin, lo_)
            kmax = min(kmax, hi_)
    margin = (m_lo, m_hi)
    info = (f"Krawczyk contraction {contraction:.3g}; merged width {k} ({dup} duplicate(s), "
            f"{nzero} zero unit(s), {len(kinks)} kink(s)); Hessian λ_min ∈ [{eig[0]:.4g}, "
            f"{eig[1]:.4g}]; dual margin λ − max σ/n ∈ [{m_lo:.4g}, {m_hi:.4g}]")
    if kinks:
        info += f"; kink factor min r_l a_j ∈ [{kmin:.4g}, ...] (> 0 needed)"
    common = dict(loss=Lb, lam_min=eig, margin=margin, contraction=contraction,
                  center=(am, Wm), **base)
    if eig[1] < 0:
        return StateCertificate("saddle", False, reason="negative Hessian eigenvalue of the "
                                "merged network; " + info, **common)
    if kinks and kmax < 0:
        return StateCertificate("saddle", False, reason="not a local minimum: a unit at a kink "
                                "lowers L at first order by turning towards x_l; " + info,
                                **common)
    if nzero > 0 and m_hi < 0:
        return StateCertificate("saddle", False, reason="a zero unit can grow (dual margin < 0); "
                                + info, **common)
    if kinks and not kmin > 0:
        return StateCertificate("undecided", False, reason="kink factor not certified positive; "
                                + info, **common)
    if eig[0] > 0 and nzero == 0:
        return StateCertificate("local_min", dup == 0,
                                reason="local minimum; " + info, **common)
    if eig[0] > 0:
        return StateCertificate("critical", False, reason="certified critical point of the merged "
                                "network; the zero units' dual margin is not certainly negative "
                                "(a local minimum iff the point is a global minimum); " + info,
                                **common)
    return StateCertificate("undecided", False, reason="eigenvalue bracket contains 0; " + info,
                            **common)


def _margin(X, lam, patterns, rr, arb, A):
    """Bracket of λ − max_k σ_k(r)/n for the residual enclosure ``rr`` (list of arb): the upper
    end from exact directions u ∈ C_k, the lower end from the NNLS bound (module docstring)."""
    n, d = X.shape
    smax_up, smax_lo = 0.0, 0.0
    rf = np.array([float(v.mid()) for v in rr])
    for Dk, wit in zip(patterns.D, patterns.witness):
        if not Dk.any():
            continue
        g = [sum((arb(float(X[i, e])) * rr[i] for i in range(n) if Dk[i]), arb(0))
             for e in range(d)]
        smax_up = max(smax_up, _sigma_upper(X, Dk, g, arb, A))
        _, u = _sigma_lower(X, Dk, wit, (Dk[:, None] * X).T @ rf)
        if u is not None:   # a rigorous lower bound from the exact direction u ∈ C_k
            gu = sum((g[e] * arb(float(u[e])) for e in range(d)), arb(0))
            nu = sum((arb(float(t)) ** 2 for t in u), arb(0)).sqrt()
            smax_lo = max(smax_lo, A.lower(abs(gu) / nu))
    lamb = arb(float(lam))
    return A.lower(lamb - arb(smax_up) / n), A.upper(lamb - arb(smax_lo) / n)


def _zero_network(X, y, lam, patterns, prec, base):
    from flint import arb
    from certify import _arb as A
    n, d = X.shape
    with A.workprec(prec):
        rr = [-arb(float(v)) for v in y]
        m_lo, m_hi = _margin(X, lam, patterns, rr, arb, A)
        L = arb(0)
        for v in y:
            L += arb(float(v)) ** 2
        L = L / (2 * n)
    Lb = (A.lower(L), A.upper(L))
    if m_hi < 0:
        return StateCertificate("saddle", False, Lb, "θ = 0 and a unit can grow (dual margin < 0)",
                                margin=(m_lo, m_hi), **base)
    return StateCertificate("critical", False, Lb, "θ = 0; dual margin not certainly negative",
                            margin=(m_lo, m_hi), **base)


def _krawczyk(X, y, lam, xf, Dm, m, d, r, prec, arb, arb_mat, A, kinks=()):
    n = X.shape[0]
    P = len(xf)
    _, _, Hf = _lgh_float(X, y, lam, xf[:m], xf[m:].reshape(m, d))
    try:
        Yf = np.linalg.inv(Hf)
    except np.linalg.LinAlgError:
        return ("fail", "the Hessian at the centre is singular (degenerate critical point)")
    if not np.all(np.isfinite(Yf)):
        return ("fail", "the Hessian at the centre is singular (degenerate critical point)")
    with A.workprec(prec):
        xh = [arb(float(t)) for t in xf]
        box = [xh[i] + arb(0, r) for i in range(P)]
        # pre-activation signs certain on the box: the loss is the region's polynomial there
        for j in range(m):
            for i in range(n):
                if (j, i) in kinks:
                    continue
                z = sum((arb(float(X[i, e])) * box[m + j * d + e] for e in range(d)), arb(0))
                if z.contains(0):
                    return ("fail", f"refused: the box meets the kink w_{j}·x_{i} = 0 (unit "
                            f"{j} on a region boundary); pre-activation {z}")
                if (z > 0) != bool(Dm[j, i]):
                    return ("fail", "pattern mismatch")
        Lp, gp, _, _ = _lgh_arb(xh, X, y, lam, Dm, m, d, arb, hess=False)
        _, gX, HX, _ = _lgh_arb(box, X, y, lam, Dm, m, d, arb, hess=True)
        nz = [i for i in range(P) if not gX[i].contains(0)]
        if nz:
            return ("fail", f"no critical point in the box: ∂L/∂θ_{nz[0]} ≠ 0 on it "
                    f"({gX[nz[0]]}); the state is not near a critical point")
        Y = A.mat_from_array(Yf)
        HXm = arb_mat(HX)
        gcol = arb_mat([[v] for v in gp])
        Rm = A.mat_from_array(np.eye(P)) - Y * HXm
        dcol = arb_mat([[arb(0, r)] for _ in range(P)])
        Kd = -(Y * gcol) + Rm * dcol
        kmax = max(A.upper(abs(Kd[i, 0])) for i in range(P))
        contraction = kmax / r
        if not contraction < 1.0:
            return ("fail", f"Krawczyk failed: contraction {contraction:.3g} ≥ 1")
        enc = [A.arb_bounds(xh[i] + Kd[i, 0]) for i in range(P)]
        quad = (Kd.transpose() * HXm * Kd)[0, 0]
        Lstar = Lp - quad / 2
        Lb = (A.lower(Lstar), A.upper(Lstar))
        S = arb_mat(P, P)
        for i in range(P):
            for j in range(P):
                S[i, j] = HXm[i, j] if i == j else HXm[i, j].intersection(HXm[j, i])
        lo_e, hi_e, _, _ = A.sym_eig_enclosure(S)
    return ("ok", Lb, (float(lo_e[-1]), float(hi_e[-1])), contraction, enc, list(kinks))


def region_candidate(X, y, lam, a, W, *, zero_tol: float = 1e-6, support_tol: float = 1e-7,
                     tol: float = 1e-11):
    """The minimum of L over the closure of the activation region of the float state (a, W).

    The classes C (pattern, sign) of the units of size > ``zero_tol`` fix the region; L ≥ G (the
    convex reduced objective restricted to C, module docstring) with equality at balanced points,
    so the region's minimum is the restricted convex program's, whose solution (one balanced unit
    per class with |U_k| > ``support_tol``·max|U|) is returned with the number of units of (a, W)
    that vanish in it (zero units, or in a class outside the support).

    Returns
    -------
    (a*, W*, zero_units, value)
    """
    X, y, lam = _check_problem(X, y, lam)
    n, d = X.shape
    size = np.sqrt(a * a + np.sum(W * W, axis=1))
    act = np.flatnonzero(size > zero_tol)
    keys = [(tuple(bool(t) for t in X @ W[j] > 0), float(np.sign(a[j]))) for j in act]
    cls = sorted(set(k for k in keys if any(k[0])))
    if not cls:
        return np.zeros(0), np.zeros((0, d)), len(a), float(y @ y / (2 * n))
    blocks = [(np.array(D), s_) for D, s_ in cls]
    U, obj, _ = _solve_group_lasso(X, y, n * lam, blocks, tol=tol)
    nrm = np.linalg.norm(U, axis=1)
    sup = nrm > support_tol * max(float(nrm.max()), 1e-300)
    a_s = np.array([s_ for (_, s_), k in zip(cls, sup) if k])
    as_, Ws = _network_from_groups(U[sup], a_s, zero=0.0)
    kept = set(c for c, k in zip(cls, sup) if k)
    zero = int(len(a) - sum(1 for kk in keys if kk in kept))
    return as_, Ws, zero, obj / n


#: end-state classes of :func:`classify`
CLASSES = ("global", "spurious", "saddle", "undecided")


def classify(cert: StateCertificate, lower: float, upper_m: float, *, global_tol: float) -> str:
    """``global``: a certified local minimum or critical point (:func:`certify_state`) whose loss
    is ≤ lower + global_tol (the global minimum up to global_tol); ``spurious``: a certified local
    minimum with loss > upper_m (a certified upper bound on the width-m minimum); ``saddle``: not a
    local minimum, certified; ``undecided`` otherwise."""
    if cert.verdict == "saddle":
        return "saddle"
    if cert.verdict not in ("local_min", "critical"):
        return "undecided"
    if cert.loss[1] <= lower + global_tol:
        return "global"
    if cert.verdict == "local_min" and cert.loss[0] > upper_m:
        return "spurious"
    return "undecided"
