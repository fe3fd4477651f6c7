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
certified lower bound (:func:`certify.landscape_empirical.global_optimum`): for any z ∈ R^n with
σ_k(z) = max_{u ∈ C_k, |u| ≤ 1} |z·D_k X u| ≤ nλ for every k,

    n P ≥ z·y − |z|²/2;

σ_k(±g) ≤ |g + Aᵀμ| for every μ ≥ 0 (A = (2D_k − I)X, C_k = {Au ≥ 0}; Moreau), μ from
non-negative least squares, the bound evaluated in Arb; z = t(y − f̂) from the solver's
residual, scaled by t ≤ 1 into the dual constraint.  The upper bound is the loss of the explicit
balanced network a_k = ±|u_k|^{1/2}, w_k = u_k/|u_k|^{1/2} read from the solution (Arb).  This
module solves P in float (:func:`convex_network`); the Arb bounds are
:func:`certify.landscape_empirical.global_optimum`.

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
a = ∓t, w = tu/|u| lowers L at order t²).  :func:`certify.landscape_empirical.certify_state`
proves the merged critical point with Krawczyk's operator on the polynomial gradient in its region (the pre-activations'
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
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .. import _validate as V

__all__ = ["CLASSES", "DATA_KINDS", "Patterns", "make_data", "with_bias", "check_problem", "loss",
           "loss_grad_hessian", "activation_pattern", "activation_patterns", "exact_dot",
           "n_cells_general_position", "convex_network", "sigma_lower", "restricted_optimum",
           "init_params", "train_gd", "merge_units", "region_newton", "region_candidate",
           "classify"]

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


def check_problem(X, y, lam):
    """Validated (X (n, d), y (n,), λ > 0) of a problem, as float64 arrays and a float."""
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
    X, y, lam = check_problem(X, y, lam)
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


def exact_dot(x, w):
    """x·w in exact rational arithmetic (a :class:`fractions.Fraction`; floats are dyadic)."""
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
            G = [[exact_dot(sub[i], sub[j]) for j in range(k)] for i in range(k)]
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
        if all((exact_dot(X[i], w) > 0) == key[i] and exact_dot(X[i], w) != 0 for i in range(n)):
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


def sigma_lower(X, Dk, witness, g_float):
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


def convex_network(X, y, lam, patterns: Patterns | None = None, *, tol: float = 1e-11):
    """The float side of the convex reformulation (module docstring): Clarabel's solution of P
    over ``patterns`` (default :func:`activation_patterns`), re-solved on its support (groups
    above 1e−6 of the largest) when that is not worse, and the balanced network read from it.

    Returns
    -------
    (a, W, value, status, residual, patterns)
        The network (one unit per nonzero group), the solver's primal objective in the
        normalization of :func:`loss`, Clarabel's status, y − f̂ (the solution's residual, the
        start of the dual certificate of :func:`certify.landscape_empirical.global_optimum`) and
        the patterns used.
    """
    X, y, lam = check_problem(X, y, lam)
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
    fhat = np.sum([s * ((Dk[:, None] * X) @ u) for (Dk, s), u in zip(blocks, U)], axis=0)
    return a, W, obj / n, status, y - fhat, patterns


def restricted_optimum(X, y, lam, classes, *, tol: float = 1e-10) -> float:
    """min over the closure of an activation region of L (float, Clarabel): the convex program
    restricted to the (pattern, sign) ``classes`` present in the region, a list of
    (D (n,) bool, s ±1).  This is the infimum of L over every network whose units have exactly
    those classes (any number of units per class)."""
    X, y, lam = check_problem(X, y, lam)
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


def region_newton(X, y, lam, a, W, steps=30):
    """Newton's method on ∇L = 0 inside the activation region of (a, W) (float): at most
    ``steps`` steps, stopping before a step that would change the pattern or once the step is
    below 1e−16 of the point; returns (a, W)."""
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
    X, y, lam = check_problem(X, y, lam)
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


def classify(cert, lower: float, upper_m: float, *, global_tol: float) -> str:
    """The end-state class of a certificate ``cert`` (a
    :class:`certify.landscape_empirical.StateCertificate`: its ``verdict`` and ``loss``).

    ``global``: a certified local minimum or critical point
    (:func:`certify.landscape_empirical.certify_state`) whose loss
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
