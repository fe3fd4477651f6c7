r"""SwiGLU students f(x) = Σ_j a_j SiLU(g_j·x)(v_j·x) + c with an exactly fitted intercept.

Every population quantity reduces to bivariate scalar moments of SiLU over the gate pair
(g_i·x, g_j·x) times inner products of gates and values (DESIGN §3, "SwiGLU student").  With
σ = SiLU, σ_i = σ(g_i·x), α_i = |g_i|, θ_i = g_i/α_i, ρ_ij = θ_i·θ_j and

    M^{pq}_ij = E[σ^{(p)}_i σ^{(q)}_j] = Σ_n T^{(p)}_n(α_i) T^{(q)}_n(α_j) ρ_ij^n,
    T^{(p)}_n(α) = E[σ^{(p)}(αz) h_n(z)]                                   (Mehler, DESIGN §2)

(p + q ≤ 4; the T^{(p)} come from composite Gauss–Legendre quadrature, with the order raised
until the pair sums and, against non-polynomial teachers, the sequences themselves have
converged; see :func:`silu_coefficients`), Stein's identity E[x_a x_b h] = δ_ab E[h] + E[∂_a∂_b h]
gives, with GV_ij = g_i·v_j, δ_i = g_i·v_i, VV_ij = v_i·v_j:

    E[φ_i]       = δ_i M^{10}                                   (φ_i = σ_i (v_i·x))
    Q^{pq}_ij    = E[σ^{(p)}_i σ^{(q)}_j (v_i·x)(v_j·x)]
                 = VV_ij M^{pq} + GV_ij δ_i M^{p+2,q} + (GV_ij GV_ji + δ_iδ_j) M^{p+1,q+1}
                   + δ_j GV_ji M^{p,q+2}                                        (SG-1)
    E[φ_iφ_j]    = Q^{00}_ij
    E[φ_i σ_j x] = g_i(δ_i M^{20} + GV_ji M^{11}) + g_j(δ_i M^{11} + GV_ji M^{02}) + v_i M^{00}
    E[φ_i σ'_j (v_j·x) x] = g_i Q^{11} + g_j Q^{02} + v_i(GV_ij M^{11} + δ_j M^{02})
                            + v_j(δ_i M^{11} + GV_ji M^{02})                    (SG-2)

and the loss L = ½E[(f − y)²], ∂L/∂a_j = E[r φ_j], ∂L/∂v_j = a_j E[r σ_j x],
∂L/∂g_j = a_j E[r σ'_j (v_j·x) x] (r = f − y) are m×m Hadamard products followed by GEMMs.
The AGOP is M = Gᵀ(aaᵀ∘Q^{11})G + Gᵀ(aaᵀ∘E)V + Vᵀ(aaᵀ∘Eᵀ)G + Vᵀ(aaᵀ∘M^{00})V with
E_ij = E[σ'_iσ_j(v_i·x)] = δ_i M^{20}_ij + GV_ji M^{11}_ij.

Teacher terms use Stein on the student side only, so that the teacher enters through
E[σ^{(p)}_j D y] for y, its gradient and its Hessian applied to v_j, each a generalized
Mehler sum (MI-1) of :mod:`popdyn.teachers.multi_index` (additive links, network units and
multi-index tensors alike):

    E[y φ_j]              = E[σ_j ∂_{v_j} y] + δ_j E[y σ'_j]
    E[y σ_j x]            = E[σ_j ∇y] + g_j E[y σ'_j]
    E[y σ'_j (v_j·x) x]   = E[σ'_j ∇∂_{v_j} y] + δ_j E[σ''_j ∇y] + g_j(E[σ''_j ∂_{v_j} y]
                            + δ_j E[y σ'''_j]) + v_j E[y σ'_j].

Intercept: with ``intercept=True`` (the paper's setting) c is *fitted exactly*,
c* = E[y] − Σ_j a_j E[φ_j], by :func:`fit_intercept`, by ``init(..., teacher=...)`` and at every
state visited by :func:`popdyn.train` (the flow of the profiled loss min_c L, whose gradient
in (a, G, V) is the partial gradient at c*).  ``population_loss`` / ``population_grad`` evaluate
at the intercept given (its gradient E[r] vanishes at c*).

References
----------
Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt): SwiGLU students with an exactly
fitted intercept, head-rate multipliers 0.01 / 0.001, leading-AGOP alignment during the
plateau, unrestricted refit (Figures 3, 4, 15–19; Tables 3–5); DESIGN §3–§5.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from . import _validate as V
from . import family as _family
from ._hermite import _rule_cached, unit_coefficients
from ._kernels import swiglu as _ks
from .models import ParamArrays, init_width
from ._moments import teacher_cache
from .teachers import Teacher

_EPS = np.finfo(np.float64).eps
_NMIN, _NMAX = 16, 4096
_SEQ_TOL = 1e-13   # single-sequence tail (p <= 3) against non-polynomial teachers
_PAIR_TOL = 1e-17  # products of the tails of the two sequences of a Mehler pair moment
_PAIRS = ((0, 0), (1, 1), (2, 2), (2, 0), (3, 1), (4, 0))
_L = 13.0          # half-length of the z-interval: the integrand is < 0.44|σ|e^{-L²/4} = 6e-19|σ| beyond
_GL = 20           # Gauss-Legendre points per panel


def _rule(N: int, bucket: int):
    """Composite Gauss–Legendre rule on [−L, L] for orders ≤ N and gate norms α ≤ 2^{bucket/2}.

    Panel width h = min(12/√(N+1), 0.85π/α_b, 2): at most 12 rad of Hermite-function phase per
    panel (≥ 10 nodes per wavelength; the Gauss–Legendre error for e^{ikx} behaves like
    (e·kh/4q)^{2q} ≈ 1e−16 at q = 20) and a Bernstein ellipse parameter ≥ 2.5 around SiLU's
    poles at distance π/α (as in :mod:`popdyn._hermite`, with L = 13 and wider panels allowed
    for the low orders of small gates).
    """
    return _rule_cached(N, bucket, _L, _GL, 2.0)


@functools.lru_cache(maxsize=64)
def _gh_rule(K: int):
    """Gauss–Hermite rule of K nodes for N(0, 1), restricted to |z| ≤ L (weights of the dropped
    nodes are below e^{−L²/2}; with |h_n(z)| e^{−z²/4} ≤ 1.09 their contribution to any
    coefficient is below 1e−18 of it and they would overflow the recurrence)."""
    from scipy.linalg import eigh_tridiagonal

    # nodes: eigenvalues of the Jacobi matrix (Golub–Welsch); weights from the Christoffel
    # function 1/Σ_{n<K} h_n(z)², accurate to full relative precision on |z| ≤ L
    z = eigh_tridiagonal(np.zeros(K), np.sqrt(np.arange(1.0, K)), eigvals_only=True)
    z = np.ascontiguousarray(z[np.abs(z) <= _L])
    for it in range(2):            # Newton on h_K (eigenvalues carry an error ~ u·2√K)
        h0, h1 = np.ones_like(z), z.copy()
        acc = h0 * h0 + h1 * h1
        for n in range(1, K):
            h0, h1 = h1, (z * h1 - math.sqrt(n) * h0) / math.sqrt(n + 1.0)
            if n < K - 1:
                acc += h1 * h1
        if it == 0:
            z = z - h1 / (math.sqrt(K) * h0)     # h_K' = √K h_{K−1}
    return z, np.ascontiguousarray(1.0 / acc)


_GH_ALPHA = 3.0     # Gauss–Hermite for gates up to this norm, composite Gauss–Legendre beyond


def _bucket(a: float) -> int:
    if a <= 1.0:
        return 0
    k = int(math.ceil(2.0 * math.log2(a)))
    while 2.0 ** (k / 2.0) < a:
        k += 1
    return k


# ---------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class SwiGLUParams(ParamArrays):
    """Parameters of a SwiGLU student: head ``a`` (m,), gates ``G`` (m, d), values ``V`` (m, d),
    intercept ``c``.  Also used for gradients.  Arrays are float64 copies (use :meth:`replace`)."""

    a: np.ndarray
    G: np.ndarray
    V: np.ndarray
    c: float = 0.0
    _ARRAYS = ("a", "G", "V")

    def __post_init__(self):
        a = np.array(self.a, dtype=np.float64)
        G = np.array(self.G, dtype=np.float64)
        Vv = np.array(self.V, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"`a` must be 1-dimensional, got shape {a.shape}")
        if G.ndim != 2 or G.shape[0] != a.shape[0]:
            raise ValueError(f"`G` must have shape (m, d) = ({a.shape[0]}, d), got {G.shape}")
        if Vv.shape != G.shape:
            raise ValueError(f"`V` must have the shape of `G` {G.shape}, got {Vv.shape}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "G", G)
        object.__setattr__(self, "V", Vv)
        object.__setattr__(self, "c", float(self.c))

    @classmethod
    def from_flat(cls, v, m: int, d: int) -> "SwiGLUParams":
        v = np.asarray(v, dtype=np.float64)
        k = m * d
        return cls(v[:m], v[m:m + k].reshape(m, d), v[m + k:m + 2 * k].reshape(m, d), float(v[-1]))


#: SwiGLU clocks (:class:`SwiGLUStudent` ``clock``)
CLOCKS = ("standard", "mean_field")


@dataclass(frozen=True)
class SwiGLUStudent:
    """A SwiGLU student ``f(x) = Σ_j a_j SiLU(g_j·x)(v_j·x) + c`` on x ~ N(0, I_d).

    Parameters
    ----------
    d, m : int
        Input dimension and width (> 0).
    intercept : bool
        If True (default, as in the paper) the intercept is fitted exactly at every state
        visited by :func:`popdyn.train` and by ``init(..., teacher=...)``; if False, c ≡ 0.
    clock : {"standard", "mean_field"}
        ``"standard"`` (default): f = Σ_j a_j φ_j + c trained on the clock of the parameters.
        ``"mean_field"``: the mean-field network f = (1/m) Σ_j ã_j φ_j + c on the mean-field
        clock, whose parameter-space learning rates are m·Δt (seed paper 003, Figure 25,
        lines 165-173: "Parameter-space learning rates are mΔt", "accumulated mean-field
        time").  It is stored in the standard coordinates a = ã/m (the same function, so the
        loss, AGOP, alignment and refits are those of f); :meth:`init` draws ã ~ N(0, s²) and
        stores a = ã/m, and :func:`train` integrates on the clock t with rates m on (G, V) and
        head_lr_mult/m on a (exactly the mean-field flow dã/dt = −m·head_lr_mult·∂L/∂ã,
        dG/dt = −m ∂L/∂G) and reports t.  Note that ``same_budget`` refits then use ‖a‖ = ‖ã‖/m.

    Notes
    -----
    SiLU(t) = t·sigmoid(t) (DESIGN §2).  The moment reduction is described in
    :mod:`popdyn.swiglu`.  ``popdyn.population_loss``, ``population_grad``, ``loss_and_grad``,
    ``fit_intercept``, ``train``, ``agop`` and ``refit_risk`` accept SwiGLU students unchanged.

    References
    ----------
    Seed paper 003, SwiGLU students (Figures 3, 4, 15–19); DESIGN §3.
    """

    d: int
    m: int
    intercept: bool = True
    clock: str = "standard"
    family: object = field(init=False, repr=False, compare=False)
    _is_popdyn_student = True

    def __post_init__(self):
        V.positive_int("d", self.d)
        V.positive_int("m", self.m)
        if not isinstance(self.intercept, bool):
            raise TypeError(f"`intercept` must be a bool, got {self.intercept!r}")
        V.choice("clock", self.clock, CLOCKS)
        object.__setattr__(self, "family", SwiGLUFamily(self))

    activation = "swiglu"
    scaling = "standard"
    s = 1.0

    def replace(self, **kw) -> "SwiGLUStudent":
        return replace(self, **kw)

    def check(self, params, name: str = "params") -> SwiGLUParams:
        """Validate ``params`` against this student (type, shapes, finiteness, fixed c)."""
        if not isinstance(params, SwiGLUParams):
            raise TypeError(f"`{name}` must be a popdyn.SwiGLUParams, got {type(params).__name__}")
        for nm, arr in (("G", params.G), ("V", params.V)):
            if arr.shape != (self.m, self.d):
                raise ValueError(f"`{name}.{nm}` must have shape (m, d) = ({self.m}, {self.d}), "
                                 f"got {arr.shape}")
        for nm, arr in (("a", params.a), ("G", params.G), ("V", params.V)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"`{name}.{nm}` must be finite (contains NaN or inf)")
        if not np.isfinite(params.c):
            raise ValueError(f"`{name}.c` must be finite, got {params.c}")
        if not self.intercept and params.c != 0:
            raise ValueError(f"`{name}.c` must be 0 for a student with intercept=False")
        return params

    def init(self, seed: int, scale: float, teacher=None, *,
             convention: str = "norm") -> SwiGLUParams:
        """Deterministic small Gaussian initialization.

        a_j ~ N(0, scale²), G_jk ~ N(0, scale²/d), V_jk ~ N(0, scale²/d) (so |g_j| ≈ |v_j| ≈
        scale), drawn in that order from ``numpy.random.default_rng(seed)``.  With
        ``convention="entry"`` every entry of G and V is N(0, scale²) instead (|g_j| ≈ scale·√d;
        same draws, G and V larger by exactly √d).  With ``clock="mean_field"`` the stored head
        is ã/m (ã ~ N(0, scale²) the mean-field head).  The intercept is 0, or -- when
        ``teacher`` is given and ``intercept`` is True -- fitted exactly.
        """
        seed = V.nonneg_int("seed", seed)
        scale = V.real("scale", scale, positive=True)
        w = init_width(convention, scale, self.d)
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(self.m) * scale
        G = rng.standard_normal((self.m, self.d)) * w
        Vv = rng.standard_normal((self.m, self.d)) * w
        if self.clock == "mean_field":
            a = a / self.m          # stored head a = ã/m of f = (1/m) Σ ã_j φ_j
        p = SwiGLUParams(a, G, Vv, 0.0)
        if teacher is not None and self.intercept:
            p = fit_intercept(self, p, teacher)
        return p

    def __call__(self, params: SwiGLUParams, X: np.ndarray) -> np.ndarray:
        """Evaluate f at the rows of ``X`` (n, d) (Monte Carlo, finite samples)."""
        from scipy.special import expit
        Z = X @ params.G.T
        return ((Z * expit(Z)) * (X @ params.V.T)) @ params.a + params.c


def _check(student, params, teacher=None, need_teacher=True):
    if not isinstance(student, SwiGLUStudent):
        raise TypeError(f"`student` must be a popdyn.SwiGLUStudent, got {type(student).__name__}")
    student.check(params)
    if need_teacher or teacher is not None:
        if not isinstance(teacher, Teacher):
            raise TypeError(f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}")
        if teacher.d != student.d:
            raise ValueError(f"`teacher` has input dimension {teacher.d} but the student has "
                             f"d = {student.d}")


# ---------------------------------------------------------------------------- SiLU coefficients
def silu_coefficients(al, *, seq_tol=_SEQ_TOL, pair_tol=_PAIR_TOL, nmin: int = _NMIN,
                      nmax: int = _NMAX, n_enough=None):
    """T[p, j, n] = E[SiLU^{(p)}(al_j z) h_n(z)], p = 0..4, at an adaptive common order N.

    SiLU is analytic in the strip |Im t| < π, so the coefficients decay like exp(−π√(2n)/α)
    (the higher derivatives later: T^{(p)}_n ~ n^{p/2} T^{(0)}_n / α^p).  With r_p the largest
    ratio (last eight coefficients)/(sequence norm) over the units, the order grows by 1.5×
    from a start level set by α_max alone (≈ 126α², at least ``nmin``; never by earlier calls,
    so results do not depend on the process's history) until

    * pair sums (the Mehler moments M^{pq}, pairs 00, 11, 22, 20, 31, 40): r_p·r_q ≤ ``pair_tol``
      (their truncation error is below that fraction of ‖T^{(p)}‖‖T^{(q)}‖);
    * if ``seq_tol`` is not None (teachers with non-polynomial coefficients, which do not decay
      themselves): r_p ≤ max(``seq_tol``, 4√K·u) for p ≤ 3 (K quadrature nodes, u = 2⁻⁵³: the
      rounding floor of the quadrature sums) -- unless N ≥ ``n_enough`` (a teacher that is a
      polynomial of degree n_enough − 3, up to shells below 1e−17 of its norm).

    Returns ``(T, N, converged)``.
    """
    al = np.ascontiguousarray(al, dtype=np.float64)
    m = al.shape[0]
    amax = float(al.max()) if m else 0.0
    bk = _bucket(amax)
    # The starting level is a function of α_max only (the orders needed grow like ~150α²;
    # start just below): a warm start from an order used earlier in the process would make the
    # quadrature (and the last bits of every moment) depend on the process's history -- a seed
    # must give the same numbers on every worker.
    N = min(nmax, max(nmin, 8 * int(0.9 * 140.0 * amax * amax / 8.0)))
    while True:
        T, K = _silu_level(al, N, amax, bk)
        cut = _smallest_order(T, nmin, seq_tol, pair_tol, K, n_enough)
        if cut is not None or N >= nmax:
            if cut is None:
                return T, N, False
            return np.ascontiguousarray(T[:, :, :cut + 1]), cut, True
        N = min(nmax, int(np.ceil(1.5 * N / 8.0)) * 8)


def _silu_level(al, N, amax, bk):
    """Coefficients to order N: Gauss–Hermite with K = 2N + 32 nodes (exact in the Hermite
    basis except for aliasing from degrees ≥ 2K − N = 3N + 64, where the sequences are far below
    their tolerance) for α ≤ 3; the composite Gauss–Legendre rule :func:`_rule` otherwise."""
    m = al.shape[0]
    T = np.empty((5, m, N + 1))
    if amax <= _GH_ALPHA:
        nodes, w = _gh_rule(2 * N + 32)
        _ks.silu_coeffs(al, nodes, w, False, T)
    else:
        nodes, w = _rule(N, bk)
        _ks.silu_coeffs(al, nodes, w, True, T)
    return T, nodes.size


def _smallest_order(T, nmin, seq_tol, pair_tol, K, n_enough=None):
    """Smallest order N' ≥ nmin (multiple of 8 from the end) meeting the criteria of
    :func:`silu_coefficients` with the block of eight coefficients ending at N'; None if the
    full order does not."""
    N = T.shape[2] - 1
    nrm = np.sqrt(np.sum(T * T, axis=2))
    safe = np.where(nrm > 0, nrm, 1.0)
    floor = None if seq_tol is None else max(seq_tol, 4.0 * math.sqrt(K) * _EPS / 2)

    def ok_at(n):
        last = np.max(np.abs(T[:, :, n - 7:n + 1]), axis=2)
        r = np.where(nrm > 0, last / safe, 0.0).max(axis=1) if T.shape[1] else np.zeros(5)
        good = all(r[p] * r[q] <= pair_tol for p, q in _PAIRS)
        return good and (floor is None or (n_enough is not None and n >= n_enough)
                         or bool(np.all(r[:4] <= floor)))

    if not ok_at(N):
        return None
    best = N
    n = N - 8
    while n >= max(nmin, 8) and ok_at(n):
        best = n
        n -= 8
    return best


def _teacher_needs(teacher):
    """(n_enough, seq_tol) for the SiLU order.  A teacher whose Hermite shells beyond degree D
    are below 1e−17 of its norm (polynomials; GELU gates, silu/bump/sine/damped-cubic links,
    whose coefficients decay fast) is served once N ≥ D + 3 (the truncated sums then miss less
    than 1e−17·‖y‖·‖T^{(p)}‖, Cauchy–Schwarz per shell) or once the SiLU sequences have converged
    to ``seq_tol``, whichever comes first; others (relu/abs/tanh gates and links, network units)
    need the sequences converged."""
    c = teacher_cache(teacher)
    if "swiglu_needs" not in c:
        D = teacher.hermite_degree()
        c["swiglu_needs"] = (None, _SEQ_TOL) if D is None else (D + 3, _SEQ_TOL)
    return c["swiglu_needs"]


# ---------------------------------------------------------------------------- teacher terms
def _teacher_terms(teacher, N):
    """[(weight, B (k_t, d) orthonormal rows, HermiteTensor)]: y = Σ weight·G_t(B x)."""
    c = teacher_cache(teacher)
    key = ("swiglu_terms", N)
    if key in c:
        return c[key]
    terms = teacher.hermite_terms(N)
    out = []
    for w, B, F in terms:
        kt = F.k
        d1 = [F.derivative(l) for l in range(kt)]
        d2 = [[d1[l].derivative(l2) for l2 in range(kt)] for l in range(kt)]
        out.append((w, np.ascontiguousarray(B), F, d1, d2))
    c[key] = out
    return out


def _teacher_cross(teacher, T, N, theta, G, Vv, dl):
    """Teacher vectors of the SwiGLU gradient (module docstring): Yφ (m,), Yσx (m, d),
    Yσ'vx (m, d), Y1 (m,)."""
    m, d = G.shape
    Y = np.zeros((4, m))
    N0 = np.zeros((m, d)); N2 = np.zeros((m, d)); Hv = np.zeros((m, d))
    Dv0 = np.zeros(m); Dv2 = np.zeros(m)
    T03 = np.ascontiguousarray(T[0:4])
    T02 = np.ascontiguousarray(T[[0, 2]])
    T1 = np.ascontiguousarray(T[1:2])
    for w, B, F, d1, d2 in _teacher_terms(teacher, N):
        xi = theta @ B.T
        VB = Vv @ B.T
        Y += w * F.contract(T03, xi)
        kt = F.k
        E0 = np.empty((m, kt)); E2 = np.empty((m, kt))
        H = np.empty((m, kt, kt))
        for l in range(kt):
            e = d1[l].contract(T02, xi)
            E0[:, l], E2[:, l] = e[0], e[1]
            for l2 in range(l, kt):
                H[:, l, l2] = d2[l][l2].contract(T1, xi)[0]
                H[:, l2, l] = H[:, l, l2]
        N0 += w * (E0 @ B)
        N2 += w * (E2 @ B)
        Dv0 += w * np.sum(VB * E0, axis=1)
        Dv2 += w * np.sum(VB * E2, axis=1)
        Hv += w * (np.einsum("jlk,jk->jl", H, VB) @ B)
    Yphi = Dv0 + dl * Y[1]
    Ysx = N0 + G * Y[1][:, None]
    Yspvx = Hv + dl[:, None] * N2 + G * (Dv2 + dl * Y[3])[:, None] + Vv * Y[1][:, None]
    return Yphi, Ysx, Yspvx


# ---------------------------------------------------------------------------- moments
@dataclass
class SwiGLUMoments:
    """Pair moments M^{pq}, inner products and the derived feature moments of a SwiGLU state."""

    M00: np.ndarray
    M11: np.ndarray
    M22: np.ndarray
    M20: np.ndarray
    M31: np.ndarray
    M40: np.ndarray
    GV: np.ndarray
    VV: np.ndarray
    dl: np.ndarray
    mu1: np.ndarray
    mu3: np.ndarray
    Phi: np.ndarray            # E[φ_iφ_j]
    phibar: np.ndarray         # E[φ_j]
    N: int
    converged: bool
    Yphi: np.ndarray | None = None
    Ysx: np.ndarray | None = None
    Yspvx: np.ndarray | None = None
    #: the SiLU sequence tolerance used (error estimate of ``_loss_info``)
    seq_tol: float = _SEQ_TOL


def series_tolerances(rtol: float = 1e-10):
    """(seq_tol, pair_tol) of the SiLU sequences for a requested ``rtol`` (issue 19: SwiGLU
    honours ``rtol``): min(1e−13, 1e−3·rtol) and min(1e−17, 1e−7·rtol), i.e. the fixed
    tolerances of the default rtol = 1e−10 (whose results are unchanged), tightened in
    proportion for smaller ``rtol`` (the sequence tolerance has the rounding floor 4√K·u of
    :func:`silu_coefficients`)."""
    return min(_SEQ_TOL, 1e-3 * float(rtol)), min(_PAIR_TOL, 1e-7 * float(rtol))


def moments(student, params, teacher=None, rtol: float = 1e-10) -> SwiGLUMoments:
    """All SwiGLU moments at ``params`` (teacher terms when ``teacher`` is given); no checks.
    ``rtol`` sets the SiLU series tolerances (:func:`series_tolerances`)."""
    G, Vv = params.G, params.V
    m = student.m
    al = np.sqrt(np.einsum("ij,ij->i", G, G))
    theta = np.zeros_like(G)
    nz = al > 0
    theta[nz] = G[nz] / al[nz, None]
    s_tol, p_tol = series_tolerances(rtol)
    if teacher is None:
        T, N, conv = silu_coefficients(al, pair_tol=p_tol)
        seq_used = s_tol
    else:
        n_enough, seq_tol = _teacher_needs(teacher)
        seq_used = min(seq_tol, s_tol)
        T, N, conv = silu_coefficients(al, seq_tol=seq_used, pair_tol=p_tol, n_enough=n_enough)
    R = np.clip(theta @ theta.T, -1.0, 1.0)
    R[np.diag_indices(m)] = np.where(nz, 1.0, 0.0)
    R = np.ascontiguousarray(R)
    Ms = [np.empty((m, m)) for _ in range(6)]
    _ks.pair_moments(T, R, *Ms)
    M00, M11, M22, M20, M31, M40 = Ms
    GV = G @ Vv.T
    VV = Vv @ Vv.T
    dl = np.ascontiguousarray(np.diag(GV))
    GG2 = GV * GV.T + np.outer(dl, dl)
    Phi = VV * M00 + dl[:, None] * GV * M20 + (dl[:, None] * GV * M20).T + GG2 * M11
    Phi = 0.5 * (Phi + Phi.T)
    mu1 = T[1, :, 0].copy()
    mu3 = T[3, :, 0].copy()
    Mo = SwiGLUMoments(M00, M11, M22, M20, M31, M40, GV, VV, dl, mu1, mu3, Phi, dl * mu1, N, conv)
    Mo.seq_tol = seq_used
    if teacher is not None:
        Mo.Yphi, Mo.Ysx, Mo.Yspvx = _teacher_cross(teacher, T, N, theta, G, Vv, dl)
    return Mo


def _loss_from(params, teacher, Mo) -> float:
    a, c = params.a, params.c
    ff = a @ Mo.Phi @ a + 2.0 * c * (a @ Mo.phibar) + c * c
    fy = a @ Mo.Yphi + c * teacher.mean
    return 0.5 * (ff - 2.0 * fy + teacher.second_moment)


def _grad_from(student, params, teacher, Mo) -> SwiGLUParams:
    a, c, G, Vv = params.a, params.c, params.G, params.V
    M00, M11, M22, M20, M31, M40 = Mo.M00, Mo.M11, Mo.M22, Mo.M20, Mo.M31, Mo.M40
    GV, VV, dl = Mo.GV, Mo.VV, Mo.dl
    ga = Mo.Phi @ a + c * Mo.phibar - Mo.Yphi
    gc = a @ Mo.phibar + c - teacher.mean if student.intercept else 0.0
    # value gradient: a_j E[r σ_j x]
    ad = a * dl
    K1 = ad[None, :] * M20.T + a[None, :] * GV * M11
    s2 = M11 @ ad + (GV * M20) @ a
    Sv = K1 @ G + s2[:, None] * G + (M00 * a[None, :]) @ Vv
    gV = a[:, None] * (Sv + (c * Mo.mu1)[:, None] * G - Mo.Ysx)
    # gate gradient: a_j E[r σ'_j (v_j·x) x]
    GG2 = GV * GV.T + np.outer(dl, dl)
    dG = dl[:, None] * GV
    Q11 = VV * M11 + dG * M31 + GG2 * M22 + (dG * M31).T
    Q02 = VV * M20.T + dG * M22 + GG2 * M31.T + dl[None, :] * GV.T * M40.T
    K3 = a[None, :] * (GV.T * M11 + dl[:, None] * M20)
    Sg = (Q11 * a[None, :]) @ G + G * (Q02.T @ a)[:, None] + K3 @ Vv + Vv * s2[:, None]
    cg = c * ((dl * Mo.mu3)[:, None] * G + Mo.mu1[:, None] * Vv)
    gG = a[:, None] * (Sg + cg - Mo.Yspvx)
    return SwiGLUParams(ga, gG, gV, gc)


# ---------------------------------------------------------------------------- public layer
def population_loss(student, params, teacher, *, rtol: float = 1e-10, full_output: bool = False):
    """L = ½E[(f − y)²] of a SwiGLU student at ``params`` (intercept as given).

    ``full_output`` returns ``(L, info)`` with ``info["order"]`` (Hermite order of the SiLU
    coefficients), ``info["converged"]`` and ``info["error"]``, an *estimate* of the absolute
    error of L: (8(N+2)ε + seq_tol) times half the sum of the absolute values of the terms of L
    (coefficient truncation at ``seq_tol`` of each sequence's norm, plus rounding), with
    ``seq_tol`` from ``rtol`` (:func:`series_tolerances`).  The contract of
    :mod:`popdyn.accuracy` applies: through :func:`popdyn.population_loss` the series are
    refined until the estimate is within rtol·|L| + atol, or an AccuracyWarning names the cap.
    """
    _check(student, params, teacher)
    Mo = moments(student, params, teacher, rtol)
    L = _loss_from(params, teacher, Mo)
    if full_output:
        return L, _loss_info(params, teacher, Mo)
    return L


def _loss_info(params, teacher, Mo) -> dict:
    a, c = np.abs(params.a), abs(params.c)
    size = (a @ np.abs(Mo.Phi) @ a + 2 * c * (a @ np.abs(Mo.phibar)) + c * c
            + 2 * a @ np.abs(Mo.Yphi) + 2 * c * abs(teacher.mean) + teacher.second_moment)
    seq_tol = getattr(Mo, "seq_tol", _SEQ_TOL)
    err = (8.0 * (Mo.N + 2) * _EPS + seq_tol) * 0.5 * size
    return {"error": float(err), "order": Mo.N, "converged": Mo.converged,
            "rounding": float(8.0 * (Mo.N + 2) * _EPS * 0.5 * size),
            "cap": None if Mo.converged else f"SiLU Hermite order cap {_NMAX}"}


def population_grad(student, params, teacher, *, rtol: float = 1e-10) -> SwiGLUParams:
    """Exact gradient of L in (a, G, V, c) as a :class:`SwiGLUParams` (c's entry is E[f − y],
    0 for ``intercept=False``)."""
    _check(student, params, teacher)
    return _grad_from(student, params, teacher, moments(student, params, teacher, rtol))


def loss_and_grad(student, params, teacher, *, rtol: float = 1e-10, check: bool = True):
    """(L, ∇L) from one moment evaluation."""
    if check:
        _check(student, params, teacher)
    Mo = moments(student, params, teacher, rtol)
    return _loss_from(params, teacher, Mo), _grad_from(student, params, teacher, Mo)


def fit_intercept(student, params, teacher) -> SwiGLUParams:
    """``params`` with c = E[y] − Σ_j a_j E[φ_j], E[φ_j] = (g_j·v_j) E[SiLU'(g_j·x)]."""
    _check(student, params.replace(c=0.0) if not student.intercept else params, teacher)
    G = params.G
    al = np.sqrt(np.einsum("ij,ij->i", G, G))
    T, _, _ = silu_coefficients(al, pair_tol=1.0, seq_tol=1e-15)   # only E[SiLU'] is needed
    dl = np.einsum("ij,ij->i", G, params.V)
    return params.replace(c=float(teacher.mean - params.a @ (dl * T[1, :, 0])))


def _profiled(student, p, teacher, rtol: float = 1e-10):
    """(L, grad, p) at the fitted intercept (intercept=True) from one moment evaluation."""
    Mo = moments(student, p, teacher, rtol)
    if student.intercept:
        p = p.replace(c=float(teacher.mean - p.a @ Mo.phibar))
    return _loss_from(p, teacher, Mo), _grad_from(student, p, teacher, Mo), p


def agop_from_moments(params, Mo) -> np.ndarray:
    a, G, Vv = params.a, params.G, params.V
    aa = np.outer(a, a)
    GV, dl, M11, M20 = Mo.GV, Mo.dl, Mo.M11, Mo.M20
    GG2 = GV * GV.T + np.outer(dl, dl)
    dG = dl[:, None] * GV
    Q11 = Mo.VV * M11 + dG * Mo.M31 + GG2 * Mo.M22 + (dG * Mo.M31).T
    E = dl[:, None] * M20 + GV.T * M11
    X = G.T @ ((aa * E) @ Vv)
    M = G.T @ ((aa * Q11) @ G) + X + X.T + Vv.T @ ((aa * Mo.M00) @ Vv)
    return 0.5 * (M + M.T)


def agop(student, params, *, rtol: float = 1e-10) -> np.ndarray:
    """AGOP M = E[∇_x f ∇_x fᵀ] of a SwiGLU student (module docstring; DESIGN §5).

    ∇_x f = Σ_j a_j [SiLU'(g_j·x)(v_j·x) g_j + SiLU(g_j·x) v_j]; the intercept does not enter.
    """
    _check(student, params, need_teacher=False)
    return agop_from_moments(params, moments(student, params, None, rtol))


def refit_problem(Mo: SwiGLUMoments, teacher):
    """The frozen-feature refit problem (features φ_j = SiLU(g_j·x)(v_j·x), intercept refitted)
    from the moments ``Mo`` of a state: centered Gram Φ − φ̄φ̄ᵀ and E[yφ] − φ̄E[y], with units
    whose centered energy is at rounding level dropped."""
    ey = teacher.mean
    Gm = Mo.Phi - np.outer(Mo.phibar, Mo.phibar)
    Gm = 0.5 * (Gm + Gm.T)
    g = Mo.Yphi - Mo.phibar * ey
    dropped = np.diag(Gm) <= 32.0 * _EPS * np.abs(np.diag(Mo.Phi))
    if np.any(dropped):
        Gm[dropped, :] = 0.0
        Gm[:, dropped] = 0.0
        g = np.where(dropped, 0.0, g)
    return _family.RefitProblem(Gm, g, float(teacher.variance), float(ey), Mo.phibar.copy(), 1.0, dropped)


# ---------------------------------------------------------------------------- dynamics
def _axpy(p, g, h, ma):
    return SwiGLUParams(p.a - (h * ma) * g.a, p.G - h * g.G, p.V - h * g.V, p.c)


def _diff_norm(p, q) -> float:
    return float(np.sqrt(np.sum((p.a - q.a) ** 2) + np.sum((p.G - q.G) ** 2)
                         + np.sum((p.V - q.V) ** 2)))


# ---------------------------------------------------------------------------- the family
class SwiGLUFamily:
    """The ``swiglu`` family (:mod:`popdyn.family` protocol) of a :class:`SwiGLUStudent`.

    One moment evaluation (:func:`moments`) serves every quantity.  Training
    (:func:`popdyn.train`) follows the flow of the profiled loss min_c L when the intercept is
    fitted; ``clock="mean_field"`` is integrated on the standard clock τ = m·t with head
    multiplier head_lr_mult/m² and every time reported on the mean-field clock t = τ/m (the
    standard-coordinate flow dG/dt = −m ∂L/∂G, dã/dt = −m·head_lr_mult·∂L/∂ã with a = ã/m).
    """

    name = "swiglu"
    label = "SwiGLU"
    fields = ("a", "G", "V", "c")
    params_type = SwiGLUParams
    #: ``projected`` snaps ridge weights: not defined for SwiGLU students
    refit_kinds = ("unrestricted", "same_budget", "bounded")
    geometry_kind = "gate"
    first_layer = None
    fused = False
    finite_sample = False
    #: the SwiGLU AGOP comes from Hermite series (refined under the rtol contract)
    agop_closed_form = False

    def __init__(self, student):
        self.student = student
        self.fitted_intercept = student.intercept

    def shapes(self) -> dict:
        m, d = self.student.m, self.student.d
        return {"a": (m,), "G": (m, d), "V": (m, d), "c": ()}

    def check(self, params, teacher=_family.NO_TEACHER, *, name: str = "params"):
        if teacher is _family.NO_TEACHER:
            _check(self.student, params, None, need_teacher=False)
        else:
            _check(self.student, params, teacher)
        return params

    def moments(self, params, teacher, *, need: str = "grad", tol: float = 1e-10):
        return moments(self.student, params, teacher, tol)

    def loss(self, params, teacher, M) -> float:
        return _loss_from(params, teacher, M)

    def loss_info(self, params, teacher, M) -> dict:
        return _loss_info(params, teacher, M)

    def loss_error(self, params, teacher, M) -> float:
        return _loss_info(params, teacher, M)["error"]

    def grad(self, params, teacher, M):
        return _grad_from(self.student, params, teacher, M)

    def loss_and_grad(self, params, teacher, *, tol: float = 1e-10):
        M = moments(self.student, params, teacher, tol)
        return _loss_from(params, teacher, M), _grad_from(self.student, params, teacher, M)

    def fit_intercept(self, params, teacher):
        return fit_intercept(self.student, params, teacher)

    def agop(self, params, M) -> np.ndarray:
        return agop_from_moments(params, M)

    def refit_problem(self, params, teacher, M):
        return refit_problem(M, teacher)

    def clock(self):
        return 1.0, (float(self.student.m) if self.student.clock == "mean_field" else 1.0)

    def standard_clock(self):
        """The same student on the standard clock (what the integrators run)."""
        return self.student.replace(clock="standard")

    def rates(self, ma, mb, mc) -> dict:
        return {"a": ma}

    def train_info(self, cfg, rates) -> dict:
        return dict(head_lr_mult=rates["a"],
                    intercept="fitted" if self.student.intercept else "none")

    def evaluate(self, params, teacher, tol):
        return _profiled(self.student, params, teacher, tol)

    def axpy(self, p, g, h, rates):
        return _axpy(p, g, h, rates["a"])

    def diff_norm(self, p, q) -> float:
        return _diff_norm(p, q)


_family.register("swiglu", SwiGLUFamily)
