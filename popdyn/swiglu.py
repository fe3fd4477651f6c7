r"""SwiGLU students f(x) = Σ_j a_j SiLU(g_j·x)(v_j·x) + c with an exactly fitted intercept.

Every population quantity reduces to bivariate scalar moments of SiLU over the gate pair
(g_i·x, g_j·x) times inner products of gates and values (docs/design.md §3, "SwiGLU student").  With
σ = SiLU, σ_i = σ(g_i·x), α_i = |g_i|, θ_i = g_i/α_i, ρ_ij = θ_i·θ_j and

    M^{pq}_ij = E[σ^{(p)}_i σ^{(q)}_j] = Σ_n T^{(p)}_n(α_i) T^{(q)}_n(α_j) ρ_ij^n,
    T^{(p)}_n(α) = E[σ^{(p)}(αz) h_n(z)]                                   (Mehler, docs/design.md §2)

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

Biased student (``SwiGLUStudent(biases=True)``, :class:`SwiGLUBiasParams`): the student of
Kumar (arXiv 2609.39408) eq. (71) with κ = 1, f = Σ_j a_j S(g_j·x + b_j)(v_j·x + c_j) + c, every
neuron with a trained gate bias b_j and value bias c_j.  A gate bias keeps each gate a ridge
function of θ_j·x, so the pair moments stay Mehler sums of the sequences
T^{(p)}_n(α, b) = E[S^{(p)}(αz + b) h_n(z)]; the value biases enter through Stein's identity on
affine factors (:func:`moments_biased`, :class:`SwiGLUBiasMoments`).  The paper's experimental
protocol (App. U.6) is :func:`train_paper` (L = Var(y − f̃), explicit Euler with one rate mΔt on
the mean-field coordinates, 1% relative-change cap, Δt ≤ 50, stopping rules), with
:func:`loss_prefix` (the |ℓ − ℓ₀| ≤ δ plateau), :func:`refit_paper` (centered features,
equilibrated eigencutoff 1e−12 and the 1e−8…1e−14 band) and :func:`alignment_paper`
(A_top, A_min and the U.8 resolution rule).

References
----------
Kumar (arXiv 2609.39408): SwiGLU students with an exactly
fitted intercept, head-rate multipliers 0.01 / 0.001, leading-AGOP alignment during the
plateau, unrestricted refit (Figures 3, 4, 15–19; Tables 3–5); docs/design.md §3–§5.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from . import _validate as V
from . import assembly as _asm
from . import families as _families
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
    _DIMS = {"a": ("m",), "G": ("m", "d"), "V": ("m", "d")}

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
        clock, whose parameter-space learning rates are m·Δt (Kumar (arXiv 2609.39408), Figure 25,
        lines 165-173: "Parameter-space learning rates are mΔt", "accumulated mean-field
        time").  It is stored in the standard coordinates a = ã/m (the same function, so the
        loss, AGOP, alignment and refits are those of f); :meth:`init` draws ã ~ N(0, s²) and
        stores a = ã/m, and :func:`train` integrates on the clock t with rates m on (G, V) and
        head_lr_mult/m on a (exactly the mean-field flow dã/dt = −m·head_lr_mult·∂L/∂ã,
        dG/dt = −m ∂L/∂G) and reports t.  Note that ``same_budget`` refits then use ‖a‖ = ‖ã‖/m.
    biases : bool
        False (default): the bias-free student above, parameters :class:`SwiGLUParams`.  True:
        the paper's student, Kumar (arXiv 2609.39408) eq. (71) with κ = 1,
        f(x) = Σ_j a_j SiLU(g_j·x + b_j)(v_j·x + c_j) + c, with a trained gate bias b_j and value
        bias c_j per neuron, parameters :class:`SwiGLUBiasParams` (fields ``bg``, ``bv``); its
        moments are those of :func:`moments_biased`.

    Notes
    -----
    SiLU(t) = t·sigmoid(t) (docs/design.md §2).  The moment reduction is described in
    :mod:`popdyn.swiglu`.  ``popdyn.population_loss``, ``population_grad``, ``loss_and_grad``,
    ``fit_intercept``, ``train``, ``agop`` and ``refit_risk`` accept SwiGLU students unchanged.

    References
    ----------
    Kumar (arXiv 2609.39408), SwiGLU students (Figures 3, 4, 15–19); docs/design.md §3.
    """

    d: int
    m: int
    intercept: bool = True
    clock: str = "standard"
    biases: bool = False
    family: Any = field(init=False, repr=False, compare=False)
    _is_popdyn_student = True

    def __post_init__(self) -> None:
        V.positive_int("d", self.d)
        V.positive_int("m", self.m)
        if not isinstance(self.intercept, bool):
            raise TypeError(f"`intercept` must be a bool, got {self.intercept!r}")
        V.choice("clock", self.clock, CLOCKS)
        if not isinstance(self.biases, bool):
            raise TypeError(f"`biases` must be a bool, got {self.biases!r}")
        object.__setattr__(self, "family", _families.get("swiglu").bind(self))

    activation = "swiglu"
    scaling = "standard"
    s = 1.0

    def replace(self, **kw: Any) -> "SwiGLUStudent":
        return replace(self, **kw)

    def check(self, params: SwiGLUParams | SwiGLUBiasParams,
              name: str = "params") -> SwiGLUParams | SwiGLUBiasParams:
        """Validate ``params`` against this student (type, shapes, finiteness, fixed c)."""
        if self.biases:
            return _check_biased(self, params, name)
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

    def init(self, seed: int, scale: float, teacher: Teacher | None = None, *,
             convention: str = "norm") -> SwiGLUParams | SwiGLUBiasParams:
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
        if self.biases:
            return _init_biased(self, seed, scale, teacher, convention)
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

    def __call__(self, params: SwiGLUParams | SwiGLUBiasParams, X: np.ndarray) -> np.ndarray:
        """Evaluate f at the rows of ``X`` (n, d) (Monte Carlo, finite samples)."""
        from scipy.special import expit
        Z = X @ params.G.T
        if self.biases:
            bp = cast(SwiGLUBiasParams, params)
            Z = Z + bp.bg
            return ((Z * expit(Z)) * (X @ params.V.T + bp.bv)) @ params.a + params.c
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
                      nmax: int = _NMAX, n_enough=None, bias=None):
    """T[p, j, n] = E[SiLU^{(p)}(al_j z + bias_j) h_n(z)], p = 0..4, at an adaptive common order N.

    ``bias`` (m,) are gate biases (None: all zero, the bias-free sequences, computed by the
    original kernel).  A bias shifts the argument along the real axis only, so SiLU's poles
    stay at distance π/α from the real z-axis and the same rules and convergence tests apply.

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
    if bias is not None:
        bias = np.ascontiguousarray(bias, dtype=np.float64)
    while True:
        T, K = _silu_level(al, N, amax, bk, bias)
        cut = _smallest_order(T, nmin, seq_tol, pair_tol, K, n_enough)
        if cut is not None or N >= nmax:
            if cut is None:
                return T, N, False
            return np.ascontiguousarray(T[:, :, :cut + 1]), cut, True
        N = min(nmax, int(np.ceil(1.5 * N / 8.0)) * 8)


def _silu_level(al, N, amax, bk, bias=None):
    """Coefficients to order N: Gauss–Hermite with K = 2N + 32 nodes (exact in the Hermite
    basis except for aliasing from degrees ≥ 2K − N = 3N + 64, where the sequences are far below
    their tolerance) for α ≤ 3; the composite Gauss–Legendre rule :func:`_rule` otherwise."""
    m = al.shape[0]
    T = np.empty((5, m, N + 1))
    if amax <= _GH_ALPHA:
        nodes, w = _gh_rule(2 * N + 32)
        dens = False
    else:
        nodes, w = _rule(N, bk)
        dens = True
    if bias is None:
        _ks.silu_coeffs(al, nodes, w, dens, T)
    else:
        _ks.silu_coeffs_biased(al, bias, nodes, w, dens, T)
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
    """(seq_tol, pair_tol) of the SiLU sequences for a requested ``rtol`` (SwiGLU
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
    Phi = _asm.swiglu_gram(_asm.NUMPY, VV, GV, dl, M00, M11, M20)
    mu1 = T[1, :, 0].copy()
    mu3 = T[3, :, 0].copy()
    Mo = SwiGLUMoments(M00, M11, M22, M20, M31, M40, GV, VV, dl, mu1, mu3, Phi, dl * mu1, N, conv)
    Mo.seq_tol = seq_used
    if teacher is not None:
        Mo.Yphi, Mo.Ysx, Mo.Yspvx = _teacher_cross(teacher, T, N, theta, G, Vv, dl)
    return Mo


def _loss_from(params, teacher, Mo) -> float:
    return _asm.feature_loss(_asm.NUMPY, params.a, params.c, Mo.Phi, Mo.phibar, Mo.Yphi,
                             teacher.mean, teacher.second_moment)


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
    return _asm.swiglu_agop(_asm.NUMPY, params.a, params.G, params.V, Mo.VV, Mo.GV, Mo.dl,
                            Mo.M00, Mo.M11, Mo.M20, Mo.M22, Mo.M31)


def agop(student, params, *, rtol: float = 1e-10) -> np.ndarray:
    """AGOP M = E[∇_x f ∇_x fᵀ] of a SwiGLU student (module docstring; docs/design.md §5).

    ∇_x f = Σ_j a_j [SiLU'(g_j·x)(v_j·x) g_j + SiLU(g_j·x) v_j]; the intercept does not enter.
    """
    _check(student, params, need_teacher=False)
    return agop_from_moments(params, moments(student, params, None, rtol))


def refit_problem(Mo: SwiGLUMoments, teacher):
    """The frozen-feature refit problem (features φ_j = SiLU(g_j·x)(v_j·x), intercept refitted)
    from the moments ``Mo`` of a state: centered Gram Φ − φ̄φ̄ᵀ and E[yφ] − φ̄E[y], with units
    whose centered energy is at rounding level dropped."""
    ey = teacher.mean
    Gm, g = _asm.refit_quadratic(_asm.NUMPY, 1.0, Mo.Phi, Mo.phibar, Mo.Yphi, ey)
    dropped = np.diag(Gm) <= 32.0 * _EPS * np.abs(np.diag(Mo.Phi))
    if np.any(dropped):
        Gm[dropped, :] = 0.0
        Gm[:, dropped] = 0.0
        g = np.where(dropped, 0.0, g)
    return _family.RefitProblem(Gm, g, float(teacher.variance), float(ey), Mo.phibar.copy(), 1.0, dropped)




# ============================================================================ biased student
# Kumar (arXiv 2609.39408) eq. (71), κ = 1: f(x) = Σ_j a_j S(g_j·x + b_j)(v_j·x + c_j) + c.
@dataclass(frozen=True)
class SwiGLUBiasParams(ParamArrays):
    """Parameters of a SwiGLU student with gate and value biases (``SwiGLUStudent(biases=True)``):
    head ``a`` (m,), gates ``G`` (m, d), values ``V`` (m, d), gate biases ``bg`` (m,), value
    biases ``bv`` (m,), intercept ``c``.  Also used for gradients.  Arrays are float64 copies."""

    a: np.ndarray
    G: np.ndarray
    V: np.ndarray
    bg: np.ndarray
    bv: np.ndarray
    c: float = 0.0
    _ARRAYS = ("a", "G", "V", "bg", "bv")
    _DIMS = {"a": ("m",), "G": ("m", "d"), "V": ("m", "d"), "bg": ("m",), "bv": ("m",)}

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
        for nm in ("bg", "bv"):
            b = np.array(getattr(self, nm), dtype=np.float64)
            if b.shape != a.shape:
                raise ValueError(f"`{nm}` must have shape (m,) = ({a.shape[0]},), got {b.shape}")
            object.__setattr__(self, nm, b)
        object.__setattr__(self, "c", float(self.c))



def _check_biased(student, params, name="params"):
    if not isinstance(params, SwiGLUBiasParams):
        raise TypeError(f"`{name}` must be a popdyn.swiglu.SwiGLUBiasParams (the student has "
                        f"biases=True), got {type(params).__name__}")
    for nm, arr in (("G", params.G), ("V", params.V)):
        if arr.shape != (student.m, student.d):
            raise ValueError(f"`{name}.{nm}` must have shape (m, d) = ({student.m}, "
                             f"{student.d}), got {arr.shape}")
    for nm in params._ARRAYS:
        if not np.all(np.isfinite(getattr(params, nm))):
            raise ValueError(f"`{name}.{nm}` must be finite (contains NaN or inf)")
    if not np.isfinite(params.c):
        raise ValueError(f"`{name}.c` must be finite, got {params.c}")
    if not student.intercept and params.c != 0:
        raise ValueError(f"`{name}.c` must be 0 for a student with intercept=False")
    return params


#: initialization conventions of the biased student (``init(..., convention=)``)
BIAS_INIT_CONVENTIONS = ("paper", "norm", "entry")
#: the layout in which ``convention="paper"`` fills its blocks from the random stream
#: (:func:`_init_biased`); it enters the run key of every paper-convention run
PAPER_DRAW = "coordinate-major (g, b), (v, c), then head"


def _init_biased(student, seed, scale, teacher, convention):
    """Initialization of the biased student.

    ``convention="paper"`` is Kumar (arXiv 2609.39408) eq. (73) with β₀ = 1, s₀ = 1/√(d+1)
    (App. U.6): the mean-field head ã_j ~ N(0, ε²) and every coordinate of (g_j, b_j) and of
    (v_j, c_j) ~ N(0, ε²/(d+1)), ε = ``scale``; the stored head is a = ã/m (f = (1/m) Σ ã_j φ_j),
    whatever the student's ``clock``.  The draws are the paper's own (:data:`PAPER_DRAW`): from
    ``default_rng(seed)``, the gate block as a (d+1, m) array (row k < d the k-th coordinate
    of every g_j, row d the biases b_j), then the value block (v_j, c_j) the same way, then ã
    (m).  The text states only the distributions; this layout is the one that reproduces the
    paper's printed initial values to every printed digit: A_top(0) = 0.128, 0.022, 0.000 for
    seeds 0, 1, 2 at d = 16, m = 64, ε = 0.05 (Table 3), and A_top(0) = 0.15, R(0) = 0.8183 for
    the width-256 run (ε = 0.1, Table 3 and App. U.7), while the neuron-major layout
    (an (m, d+1) array per block, head first) gives 0.050, 0.008, 0.049 and R(0) = 0.9115.
    ``"norm"`` / ``"entry"``: the bias-free draws of :meth:`SwiGLUStudent.init` (same stream)
    with zero biases.
    """
    V.choice("convention", convention, BIAS_INIT_CONVENTIONS)
    m, d = student.m, student.d
    rng = np.random.default_rng(seed)
    if convention == "paper":
        sd = scale / math.sqrt(d + 1.0)
        P = rng.standard_normal((d + 1, m)) * sd
        Q = rng.standard_normal((d + 1, m)) * sd
        at = rng.standard_normal(m) * scale
        p = SwiGLUBiasParams(at / m, np.ascontiguousarray(P[:d].T), np.ascontiguousarray(Q[:d].T),
                             P[d].copy(), Q[d].copy(), 0.0)
    else:
        w = init_width(convention, scale, d)
        a = rng.standard_normal(m) * scale
        G = rng.standard_normal((m, d)) * w
        Vv = rng.standard_normal((m, d)) * w
        if student.clock == "mean_field":
            a = a / m
        p = SwiGLUBiasParams(a, G, Vv, np.zeros(m), np.zeros(m), 0.0)
    if teacher is not None and student.intercept:
        p = fit_intercept_biased(student, p, teacher)
    return p


@dataclass
class SwiGLUBiasMoments:
    """Moments of a biased SwiGLU state: Mehler pair moments ``Mall[p, q]`` = E[S^{(p)}_i S^{(q)}_j]
    (p + q ≤ 4) of the biased gates, unit means ``mu[p]`` = E[S^{(p)}_j], inner products and the
    Stein-reduced feature moments (:func:`moments_biased`)."""

    Mall: np.ndarray
    mu: np.ndarray
    GV: np.ndarray
    VV: np.ndarray
    dl: np.ndarray
    bv: np.ndarray
    Phi: np.ndarray
    phibar: np.ndarray
    N: int
    converged: bool
    seq_tol: float = _SEQ_TOL
    Yphi: np.ndarray | None = None
    Ysx: np.ndarray | None = None
    Ys: np.ndarray | None = None
    Yspvx: np.ndarray | None = None
    Yspv: np.ndarray | None = None

    # Stein reductions (Kumar eq. (71) student; U_i = v_i·x + c_i, pair (i, j)):
    #   E1i(p,q) = E[S^p_i S^q_j U_i],  E1j(p,q) = E[S^p_i S^q_j U_j],
    #   E2(p,q)  = E[S^p_i S^q_j U_i U_j]  (Stein: E[F (l·x + s)] = s E[F] + E[l·∇F])
    def E1i(self, p, q):
        M = self.Mall
        return self.bv[:, None] * M[p, q] + self.dl[:, None] * M[p + 1, q] + self.GV.T * M[p, q + 1]

    def E1j(self, p, q):
        M = self.Mall
        return self.bv[None, :] * M[p, q] + self.GV * M[p + 1, q] + self.dl[None, :] * M[p, q + 1]

    def E2(self, p, q):
        return (self.bv[:, None] * self.E1j(p, q) + self.dl[:, None] * self.E1j(p + 1, q)
                + self.GV.T * self.E1j(p, q + 1) + self.VV * self.Mall[p, q])


def moments_biased(student, params, teacher=None, rtol: float = 1e-10) -> SwiGLUBiasMoments:
    """All moments of a biased SwiGLU state (teacher terms when ``teacher`` is given); no checks.

    With u_i = g_i·x + b_i = α_i(θ_i·x) + b_i, the pair moments are Mehler sums of the biased
    unit sequences T^{(p)}_n(α, b) = E[S^{(p)}(αz + b) h_n(z)] (:func:`silu_coefficients` with
    ``bias``); the value factors U_i = v_i·x + c_i enter through Stein's identity
    E[F(x)(l·x + s)] = s E[F] + E[l·∇F] (see :class:`SwiGLUBiasMoments`), so that
    E[φ_iφ_j] = E2(0, 0) and E[φ_j] = c_j E[S_j] + (g_j·v_j) E[S'_j].
    """
    G, Vv = params.G, params.V
    m = student.m
    al = np.sqrt(np.einsum("ij,ij->i", G, G))
    theta = np.zeros_like(G)
    nz = al > 0
    theta[nz] = G[nz] / al[nz, None]
    s_tol, p_tol = series_tolerances(rtol)
    if teacher is None:
        T, N, conv = silu_coefficients(al, pair_tol=p_tol, bias=params.bg)
        seq_used = s_tol
    else:
        n_enough, seq_tol = _teacher_needs(teacher)
        seq_used = min(seq_tol, s_tol)
        T, N, conv = silu_coefficients(al, seq_tol=seq_used, pair_tol=p_tol, n_enough=n_enough,
                                       bias=params.bg)
    R = np.clip(theta @ theta.T, -1.0, 1.0)
    R[np.diag_indices(m)] = np.where(nz, 1.0, 0.0)
    Mall = np.zeros((5, 5, m, m))
    _ks.pair_moments_all(np.ascontiguousarray(T), np.ascontiguousarray(R), Mall)
    mu = T[:, :, 0].copy()
    GV = G @ Vv.T
    VV = Vv @ Vv.T
    dl = np.ascontiguousarray(np.diag(GV))
    # Phi and phibar are set below from Mo's own pair moments (empty until then)
    Mo = SwiGLUBiasMoments(Mall, mu, GV, VV, dl, params.bv.copy(), np.empty((0, 0)), np.empty(0),
                           N, conv, seq_used)
    Phi = Mo.E2(0, 0)
    Mo.Phi = 0.5 * (Phi + Phi.T)
    Mo.phibar = params.bv * mu[0] + dl * mu[1]
    if teacher is not None:
        _teacher_cross_biased(teacher, T, N, theta, params, dl, Mo)
    return Mo


def _teacher_cross_biased(teacher, T, N, theta, params, dl, Mo):
    """Teacher vectors of the biased student (Stein on the student side, module docstring):
    Yφ = E[yφ_j], Ysx = E[y S_j x], Ys = E[y S_j], Yspvx = E[y S'_j U_j x], Yspv = E[y S'_j U_j]."""
    G, Vv, cv = params.G, params.V, params.bv
    m, d = G.shape
    Y = np.zeros((4, m))
    Nv = [np.zeros((m, d)) for _ in range(3)]       # E[S^{(p)}_j ∇y], p = 0, 1, 2
    Dv = [np.zeros(m) for _ in range(3)]            # v_j·E[S^{(p)}_j ∇y]
    Hv = np.zeros((m, d))                           # E[S'_j ∇²y] v_j
    T03 = np.ascontiguousarray(T[0:4])
    T02 = np.ascontiguousarray(T[0:3])
    T1 = np.ascontiguousarray(T[1:2])
    for w, B, F, d1, d2 in _teacher_terms(teacher, N):
        xi = theta @ B.T
        VB = Vv @ B.T
        Y += w * F.contract(T03, xi)
        kt = F.k
        E = np.empty((3, m, kt))
        H = np.empty((m, kt, kt))
        for l in range(kt):
            E[:, :, l] = d1[l].contract(T02, xi)
            for l2 in range(l, kt):
                H[:, l, l2] = d2[l][l2].contract(T1, xi)[0]
                H[:, l2, l] = H[:, l, l2]
        for p in range(3):
            Nv[p] += w * (E[p] @ B)
            Dv[p] += w * np.sum(VB * E[p], axis=1)
        Hv += w * (np.einsum("jlk,jk->jl", H, VB) @ B)
    Mo.Yphi = Dv[0] + dl * Y[1] + cv * Y[0]
    Mo.Ysx = Nv[0] + G * Y[1][:, None]
    Mo.Ys = Y[0].copy()
    Mo.Yspvx = (Hv + dl[:, None] * Nv[2] + cv[:, None] * Nv[1]
                + G * (Dv[2] + dl * Y[3] + cv * Y[2])[:, None] + Vv * Y[1][:, None])
    Mo.Yspv = Dv[1] + dl * Y[2] + cv * Y[1]


def _grad_biased(student, params, teacher, Mo) -> SwiGLUBiasParams:
    """Exact gradient of L = ½E[(f − y)²] in (a, G, V, bg, bv, c) from the moments ``Mo``."""
    a, c, G, Vv = params.a, params.c, params.G, params.V
    mu, dl, cv = Mo.mu, Mo.dl, params.bv
    M00 = Mo.Mall[0, 0]
    ga = Mo.Phi @ a + c * Mo.phibar - Mo.Yphi
    gc = a @ Mo.phibar + c - teacher.mean if student.intercept else 0.0
    # values: a_j E[r S_j x];  E[S_iU_i S_j x] = E1i(1,0) g_i + E1i(0,1) g_j + M00 v_i
    E1i10, E1i01, E1i00 = Mo.E1i(1, 0), Mo.E1i(0, 1), Mo.E1i(0, 0)
    aa = a[:, None]
    Sv = (E1i10 * aa).T @ G + (E1i01.T @ a)[:, None] * G + (M00 * aa).T @ Vv
    gV = a[:, None] * (Sv + (c * mu[1])[:, None] * G - Mo.Ysx)
    gbv = a * (E1i00.T @ a + c * mu[0] - Mo.Ys)
    # gates: a_j E[r S'_j U_j x];
    #   E[S_iU_i S'_jU_j x] = E2(1,1) g_i + E2(0,2) g_j + E1j(0,1) v_i + E1i(0,1) v_j
    E211, E202, E201, E1j01 = Mo.E2(1, 1), Mo.E2(0, 2), Mo.E2(0, 1), Mo.E1j(0, 1)
    Sg = ((E211 * aa).T @ G + (E202.T @ a)[:, None] * G + (E1j01 * aa).T @ Vv
          + (E1i01.T @ a)[:, None] * Vv)
    cg = c * ((cv * mu[2] + dl * mu[3])[:, None] * G + mu[1][:, None] * Vv)
    gG = a[:, None] * (Sg + cg - Mo.Yspvx)
    gbg = a * (E201.T @ a + c * (cv * mu[1] + dl * mu[2]) - Mo.Yspv)
    return SwiGLUBiasParams(ga, gG, gV, gbg, gbv, gc)


def agop_biased_from_moments(params, Mo) -> np.ndarray:
    """AGOP of the biased student: ∇_x f = Σ_j a_j [S'_j U_j g_j + S_j v_j], so
    M = Gᵀ(aaᵀ∘E2(1,1))G + X + Xᵀ + Vᵀ(aaᵀ∘M^{00})V with X = Gᵀ(aaᵀ∘E1i(1,0))V (every cross term)."""
    a, G, Vv = params.a, params.G, params.V
    aa = np.outer(a, a)
    X = G.T @ ((aa * Mo.E1i(1, 0)) @ Vv)
    M = G.T @ ((aa * Mo.E2(1, 1)) @ G) + X + X.T + Vv.T @ ((aa * Mo.Mall[0, 0]) @ Vv)
    return 0.5 * (M + M.T)


def fit_intercept_biased(student, params, teacher) -> SwiGLUBiasParams:
    """``params`` with c = E[y] − Σ_j a_j E[φ_j], E[φ_j] = c_j E[S(u_j)] + (g_j·v_j) E[S'(u_j)]."""
    G = params.G
    al = np.sqrt(np.einsum("ij,ij->i", G, G))
    T, _, _ = silu_coefficients(al, pair_tol=1.0, seq_tol=1e-15, bias=params.bg)
    dl = np.einsum("ij,ij->i", G, params.V)
    phibar = params.bv * T[0, :, 0] + dl * T[1, :, 0]
    return params.replace(c=float(teacher.mean - params.a @ phibar))


# ============================================================================ paper protocol
# Kumar (arXiv 2609.39408) App. U.6: L = Var(y − f̃) (no ½) at the exactly fitted intercept,
# force −m∇_θ L on the mean-field coordinates θ_j = (ã_j, g_j, b_j, v_j, c_j), ã_j = m·a_j.
def _paper_speed(p, g, m: int):
    """(‖θ‖, ‖dθ/dt‖) in the paper's coordinates for the force of L = Var(y − f̃) = 2·L½ at the
    fitted intercept, g = ∇L½ in popdyn's coordinates: dã/dt = −2 ∂L½/∂a, dw/dt = −2m ∂L½/∂w
    for every inner block w (gates, values and, when present, both biases)."""
    inner = [f for f in p._ARRAYS if f != "a"]
    th2 = (m * m) * float(np.sum(p.a * p.a)) + sum(float(np.sum(getattr(p, f) ** 2))
                                                     for f in inner)
    v2 = 4.0 * float(np.sum(g.a * g.a)) + (4.0 * m * m) * sum(
        float(np.sum(getattr(g, f) ** 2)) for f in inner)
    return math.sqrt(th2), math.sqrt(v2)


def _paper_axpy(p, g, dt, m: int):
    """One explicit Euler step θ ← θ − mΔt∇_θ L (L = 2L½; paper coordinates, module section)
    written in popdyn's coordinates: a ← a − (2Δt/m) ∂L½/∂a, w ← w − 2mΔt ∂L½/∂w."""
    kw = {f: getattr(p, f) - (2.0 * m * dt) * getattr(g, f) for f in p._ARRAYS if f != "a"}
    return type(p)(a=p.a - (2.0 * dt / m) * g.a, c=p.c, **kw)


#: how the relative parameter change of the adaptive step is measured (:func:`paper_step`)
REL_NORMS = ("neuron", "global", "block")


def _neuron_speed(p, g, m: int):
    """Per neuron j, (‖θ_j‖, ‖dθ_j/dt‖) in the paper's coordinates, θ_j = (ã_j, g_j, b_j, v_j,
    c_j) (the biases when the student has them); the velocities as in :func:`_paper_speed`."""
    inner = [f for f in p._ARRAYS if f != "a"]
    th2 = (m * m) * (p.a * p.a)
    v2 = 4.0 * (g.a * g.a)
    for f in inner:
        x, y = getattr(p, f), getattr(g, f)
        th2 = th2 + (np.sum(x * x, axis=1) if x.ndim == 2 else x * x)
        v2 = v2 + (4.0 * m * m) * (np.sum(y * y, axis=1) if y.ndim == 2 else y * y)
    return np.sqrt(th2), np.sqrt(v2)


def paper_step(p, g, m: int, *, dt=None, rel_change: float = 0.01, dt_max: float = 50.0,
               rel_norm: str = "neuron"):
    """The mean-field step Δt of the paper's Euler rule at state ``p`` with gradient ``g`` (of L½).

    ``dt`` given: that fixed Δt.  Otherwise the adaptive rule of Kumar (arXiv 2609.39408) App.
    U.6 ("Adaptive steps cap the relative parameter change at 0.01 and the mean-field step at
    50"): the largest Δt ≤ ``dt_max`` for which the Euler update changes the trained mean-field
    parameters by at most ``rel_change`` relative to their size, measured by ``rel_norm``:

    * ``"neuron"`` (default, the paper's rule): every neuron's parameter vector θ_j = (ã_j,
      g_j, b_j, v_j, c_j) separately, Δt = min_j ``rel_change``·‖θ_j‖/‖dθ_j/dt‖.  The text
      does not spell out the norm; this one reproduces the paper's width-256 checkpoint to every
      printed digit (update 66 at t = 48.834273, ℓ = 0.999988250, App. U.7, from the paper's
      draws of :func:`_init_biased`), where one Euclidean norm over all parameters reaches
      update 66 at t = 63.87 and the per-block rule at t = 61.23;
    * ``"global"``: one Euclidean norm over every trained block (the fitted intercept excluded);
    * ``"block"``: every block (ã, G, V and, when present, the gate and value biases)
      separately, the reading of the App. B "relative block change" rule.
    """
    if dt is not None:
        return float(dt)
    V.choice("rel_norm", rel_norm, REL_NORMS)
    if rel_norm == "neuron":
        nth_j, nv_j = _neuron_speed(p, g, m)
        moving = nv_j > 0.0
        if not np.any(moving):
            return float(dt_max)
        return float(min(dt_max, float(np.min(rel_change * nth_j[moving] / nv_j[moving]))))
    if rel_norm == "global":
        nth, nv = _paper_speed(p, g, m)
        return float(dt_max) if nv == 0.0 else float(min(dt_max, rel_change * nth / nv))
    h = float(dt_max)
    for f in p._ARRAYS:
        sc = float(m) if f == "a" else 1.0            # ã = m·a
        vs = 2.0 / m if f == "a" else 2.0 * m         # |dθ_B/dt| per unit of ‖∂L½/∂θ_B‖ (stored)
        nth = sc * float(np.linalg.norm(getattr(p, f)))
        nv = sc * vs * float(np.linalg.norm(getattr(g, f)))
        if nv > 0.0:
            h = min(h, rel_change * nth / nv)
    return h


def train_paper(student, params, teacher, *, dt=None, rel_change: float = 0.01,
                dt_max: float = 50.0, rel_norm: str = "neuron", loss_stop: float = 0.0,
                t_max: float = np.inf,
                n_max: int = 20000, explode: float = 1e6, schedule=None, recorder=None,
                rtol: float = 1e-10):
    """Train a SwiGLU student with the experimental protocol of Kumar (arXiv 2609.39408) App. U.6.

    * Loss L = Var(y − f̃) at the exactly fitted intercept b₀ = E[y − f̃] (eq. (72)); it equals
      2·L½ with L½ = ½E[(f − y)²] at that intercept, and so does its gradient.  The reported
      normalized loss ℓ = L/V_y is ``Trajectory.normalized_loss`` (``Trajectory.loss`` holds L½,
      popdyn's convention).
    * Explicit Euler θ_{n+1} = θ_n − mΔt_n∇_θL on the mean-field coordinates (ã_j = m·a_j, every
      inner block including the biases), one learning rate mΔt for all blocks, mean-field clock
      t = Σ Δt_n (``Trajectory.t``).
    * ``dt=None``: the adaptive step of :func:`paper_step` (relative change ≤ ``rel_change``
      measured by ``rel_norm``, Δt ≤ ``dt_max``); a float: fixed Δt (the controls use 0.3,
      0.1, 0.05).  Fixed Δt is also ``popdyn.train(student, ..., method="gd", lr=2Δt,
      head_lr_mult=1)`` for a ``clock="mean_field"`` student (the same updates; there the
      clock is 2t, the clock of L½).
    * Stops at the first update with ℓ ≤ ``loss_stop`` (``converged``; 0 disables), t ≥ ``t_max``
      or n ≥ ``n_max`` (``horizon``), or a non-finite / exploding state (``diverged``, the
      :func:`popdyn.train` safeguard ``explode``).

    The student's ``clock`` only fixes how its head is stored (a = ã/m either way, since
    f = Σ a_j φ_j + c is the function of the paper's f = b₀ + (1/m) Σ ã_j φ_j).
    ``schedule`` / ``recorder`` are those of :func:`popdyn.train`.
    """
    from . import dynamics as _dyn

    if not isinstance(student, SwiGLUStudent):
        raise TypeError(f"`student` must be a popdyn.SwiGLUStudent, got {type(student).__name__}")
    fam = student.family
    fam.check(params, teacher)
    if not student.intercept:
        raise ValueError("`student.intercept` must be True: the paper's protocol profiles the "
                         "intercept (Kumar App. U.6)")
    if dt is not None:
        dt = V.real("dt", dt, positive=True)
    rel_change = V.real("rel_change", rel_change, positive=True)
    dt_max = V.real("dt_max", dt_max, positive=True)
    V.choice("rel_norm", rel_norm, REL_NORMS)
    loss_stop = V.real("loss_stop", loss_stop, nonnegative=True)
    t_max = V.real("t_max", t_max, positive=True, allow_inf=True)
    n_max = V.nonneg_int("n_max", n_max)
    explode = V.real("explode", explode, positive=True)
    schedule = _dyn.Schedule() if schedule is None else schedule
    if not isinstance(schedule, _dyn.Schedule):
        raise TypeError("`schedule` must be a popdyn.Schedule")
    VY = teacher.variance
    if not VY > 0:
        raise ValueError("`teacher` has zero variance: the normalized loss is undefined")
    m = student.m

    def evaluate(q):
        return fam.evaluate(q, teacher, rtol)

    steps = []

    class _PaperEuler(_dyn.Stepper):
        def _propose(self):
            h = paper_step(self.p, self.g, m, dt=dt, rel_change=rel_change, dt_max=dt_max,
                           rel_norm=rel_norm)
            steps.append(h)
            return _paper_axpy(self.p, self.g, h, m), h

    t0 = time.perf_counter()
    rec = _dyn._Recorder(schedule, recorder, student, teacher, fields=fam.fields)
    problem = _dyn.Problem(evaluate, None, fam.diff_norm, params, VY, 0.0 if dt is None else dt,
                           n_max, t_max, loss_stop, explode, schedule)
    run = _PaperEuler(problem, rec).run()
    sn, stt, snaps = rec.arrays()
    info = dict(method="paper_euler", dt="adaptive" if dt is None else dt,
                rel_change=rel_change, dt_max=dt_max, rel_norm=rel_norm, loss_stop=loss_stop,
                t_max=t_max,
                n_max=n_max, clock="mean_field", loss="Var(y - f~)",
                intercept="fitted", grad_evals=run.grad_evals,
                dt_used=np.array(steps), wall_time=time.perf_counter() - t0)
    return _dyn.Trajectory(np.array(run.ns, dtype=np.int64), np.array(run.ts),
                           np.array(run.losses), sn, stt, snaps, run.status, run.p, VY,
                           rec.records, info, fam.params_type)


def loss_prefix(traj, delta: float = 1e-3) -> dict:
    """The loss-selected plateau of Kumar (arXiv 2609.39408) App. U.6: the maximal initial prefix
    of recorded updates with |ℓ_n − ℓ_0| ≤ ``delta`` (ℓ = ``traj.normalized_loss``), and P, the
    last saved snapshot inside it.  Returns ``n_end`` / ``t_end`` (last update in the prefix),
    ``snap`` (index of P in the snapshots), ``n_P``, ``t_P``, ``l_P`` and ``l_0``."""
    delta = V.real("delta", delta, positive=True)
    ell = traj.normalized_loss
    out = np.nonzero(np.abs(ell - ell[0]) > delta)[0]
    k = (out[0] - 1) if out.size else ell.size - 1
    n_end = int(traj.n[k])
    inside = np.nonzero(traj.snap_n <= n_end)[0]
    s = int(inside[-1])
    nP = int(traj.snap_n[s])
    iP = int(np.searchsorted(traj.n, nP))
    return dict(n_end=n_end, t_end=float(traj.t[k]), snap=s, n_P=nP, t_P=float(traj.snap_t[s]),
                l_P=float(ell[iP]), l_0=float(ell[0]))


#: relative eigencutoffs of the paper's refit: primary, then the sensitivity band (App. U.6)
REFIT_CUTOFF = 1e-12
REFIT_BAND = (1e-8, 1e-10, 1e-12, 1e-14)


def refit_eigcut(G, b, vy: float, cutoff: float = REFIT_CUTOFF) -> dict:
    """Attained normalized prediction risk of the equilibrated eigencutoff refit solve of Kumar
    (arXiv 2609.39408) App. U.6.

    With the centered feature Gram G = E[ḡḡᵀ] and b = E[(y − Ey)ḡ], R(w) = (V_y − 2bᵀw + wᵀGw)/V_y.
    The solve uses the symmetric part G_s = (G + Gᵀ)/2, the diagonal equilibration
    D = diag(G_s)^{−1/2} (features with G_jj ≤ 0 get w_j = 0), the eigendecomposition
    D G_s D = QΛQᵀ and keeps the eigenvalues λ_k > ``cutoff``·λ_max: w = D Q_k Λ_k⁻¹ Q_kᵀ D b.
    Returns ``R`` (the attained risk R(w), evaluated with G_s), ``w``, ``rank`` (eigenvalues
    kept), ``min_eig_ratio`` (λ_min/λ_max of the equilibrated Gram) and ``asymmetry``
    (‖G − Gᵀ‖_F/‖G‖_F).
    """
    G = np.asarray(G, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    Gs = 0.5 * (G + G.T)
    nG = float(np.linalg.norm(G))
    asym = float(np.linalg.norm(G - G.T) / nG) if nG > 0 else 0.0
    dg = np.diag(Gs)
    keep = dg > 0
    w = np.zeros(b.shape[0])
    rank, ratio = 0, float("nan")
    if np.any(keep):
        dsc = 1.0 / np.sqrt(dg[keep])
        Ge = dsc[:, None] * Gs[np.ix_(keep, keep)] * dsc[None, :]
        lam, Q = np.linalg.eigh(0.5 * (Ge + Ge.T))
        lmax = float(lam[-1])
        ratio = float(lam[0] / lmax) if lmax > 0 else float("nan")
        sel = lam > cutoff * lmax if lmax > 0 else np.zeros(lam.shape, bool)
        rank = int(np.count_nonzero(sel))
        be = dsc * b[keep]
        Qk = Q[:, sel]
        w[keep] = dsc * (Qk @ ((Qk.T @ be) / lam[sel]))
    R = (vy - 2.0 * float(b @ w) + float(w @ Gs @ w)) / vy
    return dict(R=float(R), w=w, rank=rank, min_eig_ratio=ratio, asymmetry=asym)


def refit_paper(student, params, teacher, *, cutoff: float = REFIT_CUTOFF,
                band=REFIT_BAND, rtol: float = 1e-10, moments_=None) -> dict:
    """The unrestricted numerical refit of Kumar (arXiv 2609.39408) App. U.6 at a frozen state.

    Features g_j = φ_j (the student's neurons), centered: G = E[ḡḡᵀ] = E[φφᵀ] − φ̄φ̄ᵀ,
    b = E[yφ] − φ̄E[y] (exact population moments), solved by :func:`refit_eigcut` at ``cutoff``
    (primary 1e−12) and at every cutoff of ``band``.  Returns ``R`` (primary), ``band``
    ((min, max) over the band cutoffs), ``by_cutoff``, ``rank``, ``min_eig_ratio`` and
    ``asymmetry``.  The risk is attained by a computed head, not a certified infimum.
    """
    _check(student, params, teacher)
    Mo = moments_ if moments_ is not None else student.family.moments(params, teacher, tol=rtol)
    Gm = Mo.Phi - np.outer(Mo.phibar, Mo.phibar)
    b = Mo.Yphi - Mo.phibar * teacher.mean
    vy = float(teacher.variance)
    main = refit_eigcut(Gm, b, vy, cutoff)
    by = {float(cu): refit_eigcut(Gm, b, vy, cu)["R"] for cu in band}
    vals = list(by.values()) + [main["R"]]
    return dict(R=main["R"], band=(min(vals), max(vals)), by_cutoff=by, rank=main["rank"],
                min_eig_ratio=main["min_eig_ratio"], asymmetry=main["asymmetry"])


#: resolution thresholds of the SwiGLU AGOP diagnostics (Kumar App. U.8)
RESOLVE_GAP = 1e-8
RESOLVE_NEG = -1e-8


def alignment_paper(M, U) -> dict:
    """Leading-direction and weakest-direction AGOP alignments of Kumar (arXiv 2609.39408)
    eq. (74) and App. U.6, with the resolution rule of App. U.8.

    ``M`` (d, d) the AGOP, ``U`` (d, r) or (r, d) orthonormal teacher basis.  With the
    eigenvalues λ_1 ≥ … ≥ λ_d of the symmetric part of M:

    * ``A_top`` = min over unit e in the top eigenspace of ‖P_U e‖²; the top eigenspace is taken
      as the eigenvalues with (λ_1 − λ_k)/|λ_1| ≤ 1e−8 (a numerically multiple top eigenvalue),
      and the minimum is λ_min(EᵀP_U E) over its orthonormal basis E (= ‖Uᵀe_1‖² when simple);
    * ``A_min`` = σ_min²(UᵀQ_r), Q_r the top-r eigenvectors;
    * ``resolved``: relative leading gap (λ_1 − λ_2)/|λ_1| > 1e−8 and smallest-eigenvalue
      ratio λ_d/|λ_1| ≥ −1e−8 (a numerical screening rule, not an error bound);
      ``resolved_r``: the same with the top-r gap (λ_r − λ_{r+1})/|λ_1|.
    """
    M = np.asarray(M, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    d = M.shape[0]
    if U.ndim == 1:
        U = U[:, None]
    if U.shape[0] != d:
        U = U.T
    r = U.shape[1]
    lam, Q = np.linalg.eigh(0.5 * (M + M.T))
    lam, Q = lam[::-1], Q[:, ::-1]
    l1 = float(abs(lam[0]))
    if l1 == 0.0:
        return dict(A_top=float("nan"), A_min=float("nan"), resolved=False, resolved_r=False,
                    gap=0.0, gap_r=0.0, min_ratio=float("nan"), eigenvalues=lam)
    k = int(np.count_nonzero((lam[0] - lam) / l1 <= RESOLVE_GAP))
    E = U.T @ Q[:, :k]
    A_top = float(np.linalg.eigvalsh(E.T @ E)[0])
    S = np.linalg.svd(U.T @ Q[:, :r], compute_uv=False)
    A_min = float(S[-1] ** 2) if S.size == r else 0.0
    gap = float((lam[0] - lam[1]) / l1) if d > 1 else np.inf
    gap_r = float((lam[r - 1] - lam[r]) / l1) if d > r else np.inf
    ratio = float(lam[-1] / l1)
    return dict(A_top=A_top, A_min=A_min, gap=gap, gap_r=gap_r, min_ratio=ratio,
                resolved=bool(gap > RESOLVE_GAP and ratio >= RESOLVE_NEG),
                resolved_r=bool(gap_r > RESOLVE_GAP and ratio >= RESOLVE_NEG), eigenvalues=lam)


def paper_diagnostics(student, params, teacher, U, *, rtol: float = 1e-10) -> dict:
    """ℓ, A_top, A_min (:func:`alignment_paper`) and the refit (:func:`refit_paper`) of one state,
    from one moment evaluation (App. U.6 diagnostics)."""
    fam = student.family
    Mo = fam.moments(params, teacher, tol=rtol)
    p = fam.fit_intercept(params, teacher)
    ell = 2.0 * fam.loss(p, teacher, Mo) / teacher.variance
    al = alignment_paper(fam.agop(p, Mo), U)
    rf = refit_paper(student, p, teacher, moments_=Mo)
    return dict(l=ell, A_top=al["A_top"], A_min=al["A_min"], resolved=al["resolved"],
                resolved_r=al["resolved_r"], R=rf["R"], R_band=rf["band"],
                min_eig_ratio=rf["min_eig_ratio"])
