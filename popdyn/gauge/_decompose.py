r"""Reaction–transport decomposition and the scaling gauge (docs/design.md §7).

Conventions (fixed here, used by every function of :mod:`popdyn.gauge`)
-----------------------------------------------------------------------
Student f(x) = s Σ_j a_j σ(w_j·x + b_j) + c with a positively homogeneous σ (``relu`` or
``leaky_relu``: σ(λt) = λσ(t) for λ > 0, hence σ′(t)·t = σ(t) for every t, including t = 0 with
the derivative convention σ′(0) = q of :class:`popdyn.activations.Activation`).

* Augmented weight.  With biases the neuron is homogeneous in (w, b) *jointly*:
  ŵ_j = (w_j, b_j) ∈ R^{d+1} acts on x̂ = (x, 1).  Without biases ŵ_j = w_j ∈ R^d and x̂ = x.
  The coefficient is c_j = a_j |ŵ_j| and the direction θ_j = ŵ_j / |ŵ_j| (in R^{d+1} with
  biases), so that a_j σ(ŵ_j·x̂) = c_j σ(θ_j·x̂).
* G and H *include the output scale* s (s = 1 standard, 1/m mean field):

      G_j = s E[r σ(θ_j·x̂)],     H_j = s E[r σ′(θ_j·x̂) x̂],     r = f − y,

  i.e. G_j = ∂L/∂c_j at fixed directions and c_j H_j = ∂L/∂θ_j.  Then exactly
  ∂L/∂a_j = |ŵ_j| G_j, ∂L/∂ŵ_j = a_j H_j, and θ_j·H_j = G_j (Euler's identity σ′(t)t = σ(t)).
* Clock.  "Gradient flow" is the unpreconditioned flow ȧ = −∂L/∂a, dŵ/dt = −∂L/∂ŵ, which is the
  clock of :func:`popdyn.train` for the standard scaling with unit rate multipliers; train's
  mean-field clock runs κ = m times faster (multiply the rates below by m).  Under this flow

      ċ_j = −(a_j² + |ŵ_j|²) G_j                 (reaction; mobility a² + |ŵ|²)
      θ̇_j = −(a_j/|ŵ_j|) (I − θ_jθ_jᵀ) H_j       (transport; direction speed a/|ŵ|)
      d(a_j² − |ŵ_j|²)/dt = 0
      dL/dt = −‖∇L‖² = −(reaction + transport + intercept + degenerate)

  with reaction = Σ_j (a_j² + |ŵ_j|²) G_j², transport = Σ_j a_j² |(I − θ_jθ_jᵀ) H_j|²,
  intercept = (∂L/∂c)² (0 without a trained intercept) and degenerate = the squared gradient of
  neurons with ŵ_j = 0 (whose direction is undefined; 0 in all but contrived states).

Degenerate neurons (ŵ_j = 0) get c_j = 0, θ_j = 0, G_j = 0, H_j = 0, ċ_j = 0, θ̇_j = 0 and
direction speed 0, and are flagged in ``degenerate``; nothing is divided by zero.  A neuron with
a_j = 0 and ŵ_j ≠ 0 is regular (c_j = 0, G and H well defined, θ̇_j = 0).

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units"):
the exact reaction–transport decomposition; docs/design.md §7.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from .._moments import moments
from ..models import Params, Student
from ..objective import _check, _grad_from, _loss_from

__all__ = [
    "Decomposition", "decompose", "apply", "set_ratio", "conserved", "conserved_drift", "Drift",
    "alignment", "contributions", "group_contribution", "identity_residuals", "require_homogeneous",
]


# ---------------------------------------------------------------------------- input checks
def require_homogeneous(student, name: str = "student") -> Student:
    """Raise unless ``student`` is a :class:`popdyn.Student` with a positively homogeneous
    activation (relu or leaky_relu)."""
    if not isinstance(student, Student):
        raise TypeError(f"`{name}` must be a popdyn.Student, got {type(student).__name__}")
    if not student.act.positively_homogeneous:
        raise ValueError(
            f"`{name}.activation` must be positively homogeneous (relu or leaky_relu) for the "
            f"scaling gauge and the reaction–transport decomposition (docs/design.md §7); got "
            f"{student.activation!r}, for which (a, w, b) → (λa, w/λ, b/λ) changes the function")
    return student


def _neuron_index(neurons, m: int, name: str = "neurons") -> np.ndarray:
    """Normalize ``neurons`` (int, sequence of ints, boolean mask of length m, or None = all)."""
    if neurons is None:
        return np.arange(m)
    if isinstance(neurons, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be an int, a sequence of ints or a boolean mask, got {neurons!r}")
    if isinstance(neurons, numbers.Integral):
        idx = np.array([int(neurons)])
    else:
        arr = np.asarray(neurons)
        if arr.dtype == bool:
            if arr.shape != (m,):
                raise ValueError(f"`{name}` as a boolean mask must have shape ({m},), got {arr.shape}")
            return np.flatnonzero(arr)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise TypeError(f"`{name}` must be an int, a 1-D sequence of ints or a boolean mask, "
                            f"got {neurons!r}")
        idx = arr.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= m):
        raise ValueError(f"`{name}` must be neuron indices in [0, {m}), got {idx.tolist()}")
    if np.unique(idx).size != idx.size:
        raise ValueError(f"`{name}` must not repeat a neuron, got {idx.tolist()}")
    return idx


def _gauge_factors(D, count: int, name: str = "D") -> np.ndarray:
    if isinstance(D, (bool, np.bool_, str, bytes)):
        raise TypeError(f"`{name}` must be a positive finite number or array, got {D!r}")
    try:
        raw = np.asarray(D)
        if raw.dtype.kind not in "iuf":
            raise TypeError
        arr = raw.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a positive finite number or array, got {D!r}") from None
    if arr.ndim == 0:
        arr = np.full(count, float(arr))
    elif arr.shape != (count,):
        raise ValueError(f"`{name}` must be a scalar or have one entry per selected neuron "
                         f"(shape ({count},)), got shape {arr.shape}")
    bad = ~(np.isfinite(arr) & (arr > 0))
    if np.any(bad):
        raise ValueError(f"`{name}` (gauge factor) must be finite and > 0, got {arr[bad][0]!r}")
    return arr


# ---------------------------------------------------------------------------- the gauge
def apply(params: Params, neurons, D, *, student: Student | None = None) -> Params:
    """Apply the scaling gauge (a, w, b) → (D·a, w/D, b/D) to the chosen neurons.

    For a positively homogeneous activation this leaves the student's function — hence the loss
    and the whole population predictor — unchanged (docs/design.md §7).  The ratio a/|ŵ| of a gauged
    neuron is multiplied by D², its coefficient c = a|ŵ| is unchanged.

    Parameters
    ----------
    params : Params
        The state to transform (not modified).
    neurons : int, sequence of int, boolean mask of length m, or None
        The neurons to gauge (None: all).  Indices must be in [0, m) and distinct.
    D : float or array_like
        Gauge factor(s): one positive finite number, or one per selected neuron.
    student : Student, optional
        When given, ``params`` is checked against it and its activation must be positively
        homogeneous (relu, leaky_relu); other activations raise ``ValueError``.  Pass it whenever
        the activation is not known to be homogeneous.

    Returns
    -------
    Params

    Raises
    ------
    ValueError
        ``D`` ≤ 0 or non-finite, bad ``neurons``, or a non-homogeneous ``student.activation``.

    References
    ----------
    The feature-ownership paper (the scaling gauge); docs/design.md §7.
    """
    if not isinstance(params, Params):
        raise TypeError(f"`params` must be a popdyn.Params, got {type(params).__name__}")
    if student is not None:
        require_homogeneous(student)
        student.check(params)
    idx = _neuron_index(neurons, params.m)
    lam = _gauge_factors(D, idx.size)
    a, W, b = params.a.copy(), params.W.copy(), params.b.copy()
    a[idx] *= lam
    W[idx] /= lam[:, None]
    b[idx] /= lam
    return Params(a, W, b, params.c)


def _augmented(params: Params, bias: bool) -> np.ndarray:
    return np.concatenate([params.W, params.b[:, None]], axis=1) if bias else params.W


def set_ratio(params: Params, neurons, D, *, student: Student | None = None) -> Params:
    """Gauge the chosen neurons so that |a_j|/|ŵ_j| = D_j at unchanged coefficient c_j = a_j|ŵ_j|.

    This is the *ratio* parametrization of docs/design.md §7 (D = a/|w| at fixed c0); it equals
    :func:`apply` with factor λ_j = sqrt(D_j |ŵ_j| / |a_j|).  The sign of a_j is kept.  ŵ includes
    the bias when ``student`` has biases (when no student is given, b is included whenever it is
    non-zero — identical, since a bias-free student has b = 0).

    Raises
    ------
    ValueError
        ``D`` ≤ 0 or non-finite, a selected neuron with a_j = 0 or ŵ_j = 0 (no ratio to set),
        or a non-homogeneous ``student.activation``.
    """
    if not isinstance(params, Params):
        raise TypeError(f"`params` must be a popdyn.Params, got {type(params).__name__}")
    if student is not None:
        require_homogeneous(student)
        student.check(params)
    idx = _neuron_index(neurons, params.m)
    ratio = _gauge_factors(D, idx.size)
    norm = np.linalg.norm(_augmented(params, True), axis=1)[idx]
    absa = np.abs(params.a[idx])
    bad = (absa == 0) | (norm == 0)
    if np.any(bad):
        raise ValueError(f"`neurons` {idx[bad].tolist()} have a = 0 or (w, b) = 0: their ratio "
                         "a/|(w, b)| cannot be set by a gauge")
    lam = np.sqrt(ratio * (norm / absa))
    return apply(params, idx, lam)


def conserved(params: Params) -> np.ndarray:
    """The gauge invariants Δ_j = a_j² − |w_j|² − b_j², conserved by gradient flow (docs/design.md §7).

    (For a bias-free student b = 0, so this is a_j² − |w_j|².)  Under gradient descent with step
    h (equal rates on a, W, b) one update changes Δ_j by exactly h²(g_a² − |g_w|² − g_b²) with
    g = ∇L of that neuron, so the drift over a fixed flow time is O(h).
    """
    if not isinstance(params, Params):
        raise TypeError(f"`params` must be a popdyn.Params, got {type(params).__name__}")
    return params.a ** 2 - np.einsum("ij,ij->i", params.W, params.W) - params.b ** 2


@dataclass(frozen=True)
class Drift:
    """Drift of the gauge invariants along a run's snapshots.

    Attributes
    ----------
    n, t : arrays (S,)
        Update count and flow time of the snapshots.
    values : array (S, m)
        Δ_j = a_j² − |w_j|² − b_j² at each snapshot.
    deviation : array (S, m)
        Δ_j(snapshot) − Δ_j(0).
    max_abs : float
        max |deviation|.
    scale : float
        max_j (a_j² + |w_j|² + b_j²) over the snapshots (the size the drift is measured against).
    max_rel : float
        max_abs / scale (0 when scale = 0).
    """

    n: np.ndarray
    t: np.ndarray
    values: np.ndarray
    deviation: np.ndarray
    max_abs: float
    scale: float
    max_rel: float


def conserved_drift(trajectory) -> Drift:
    """Drift of Δ_j = a_j² − |w_j|² − b_j² along the snapshots of a :class:`popdyn.Trajectory`
    (population or finite-sample).  Zero for exact gradient flow; O(step) for gradient descent
    with equal rates on a, W, b (see :func:`conserved`); O(1) when the head rate multiplier ≠ 1."""
    s = trajectory.snapshots
    a, W, b = np.asarray(s["a"]), np.asarray(s["W"]), np.asarray(s["b"])
    sq_w = np.einsum("sij,sij->si", W, W) + b ** 2
    vals = a ** 2 - sq_w
    dev = vals - vals[:1]
    scale = float(np.max(a ** 2 + sq_w)) if vals.size else 0.0
    mx = float(np.max(np.abs(dev))) if dev.size else 0.0
    return Drift(np.asarray(trajectory.snap_n), np.asarray(trajectory.snap_t), vals, dev, mx,
                 scale, mx / scale if scale > 0 else 0.0)


def alignment(params: Params, teacher, *, absolute: bool = False) -> np.ndarray:
    """Cosines cos(w_j, u_k) between the neurons' input-space directions and the teacher
    features, shape (m, k).  Neurons with w_j = 0 get 0.  (The angle is that of w in input space,
    θ_j = w_j/|w_j| of docs/design.md §2, also for students with biases.)  ``absolute`` takes |cos|."""
    if not isinstance(params, Params):
        raise TypeError(f"`params` must be a popdyn.Params, got {type(params).__name__}")
    W = params.W
    nw = np.linalg.norm(W, axis=1)
    th = np.zeros_like(W)
    ok = nw > 0
    th[ok] = W[ok] / nw[ok, None]
    cos = th @ teacher.theta.T
    return np.abs(cos) if absolute else cos


def contributions(student: Student, params: Params) -> np.ndarray:
    """Functional contribution of each neuron: the L²(γ) norm ‖s a_j σ(w_j·x + b_j)‖ (exact,
    from the moment engine's C_jj = E[σ_j²])."""
    M = moments(student, params, None, grad=False, cross=False)
    return student.s * np.abs(params.a) * np.sqrt(np.maximum(np.diag(M.C), 0.0))


def group_contribution(student: Student, params: Params, neurons) -> float:
    """‖s Σ_{j ∈ neurons} a_j σ_j‖ in L²(γ): the joint functional contribution of a group."""
    idx = _neuron_index(neurons, params.m)
    M = moments(student, params, None, grad=False, cross=False)
    a = params.a[idx]
    q = float(a @ M.C[np.ix_(idx, idx)] @ a)
    return student.s * np.sqrt(max(q, 0.0))


# ---------------------------------------------------------------------------- decomposition
@dataclass(frozen=True)
class Decomposition:
    """Per-neuron reaction–transport decomposition at one state (see the module docstring).

    Per-neuron arrays (m,) unless stated: ``c`` (= a|ŵ|), ``theta`` (m, d or d+1), ``G``,
    ``H`` (m, d or d+1), ``c_dot``, ``theta_dot`` (m, d or d+1), ``reaction_mobility``
    (a² + |ŵ|²), ``direction_speed`` (a/|ŵ|), ``reaction`` ((a²+|ŵ|²)G², per neuron),
    ``transport`` (a²|(I−θθᵀ)H|², per neuron), ``conserved`` (a² − |ŵ|²), ``degenerate``
    (bool: ŵ = 0).

    Totals: ``dissipation_reaction`` = Σ reaction, ``dissipation_transport`` = Σ transport,
    ``dissipation_intercept`` = (∂L/∂c)², ``dissipation_degenerate``; ``grad_norm2`` = ‖∇L‖²
    from the engine's gradient, and ``dL_dt`` = −‖∇L‖².  ``loss`` is L = ½E[(f−y)²] (or the
    empirical loss for :func:`popdyn.finite.decompose_empirical`); ``grad`` the gradient.
    ``augmented`` says whether θ, H live in R^{d+1} (student with biases).
    """

    c: np.ndarray
    theta: np.ndarray
    G: np.ndarray
    H: np.ndarray
    c_dot: np.ndarray
    theta_dot: np.ndarray
    reaction_mobility: np.ndarray
    direction_speed: np.ndarray
    reaction: np.ndarray
    transport: np.ndarray
    conserved: np.ndarray
    degenerate: np.ndarray
    dissipation_reaction: float
    dissipation_transport: float
    dissipation_intercept: float
    dissipation_degenerate: float
    grad_norm2: float
    dL_dt: float
    loss: float
    grad: Params
    augmented: bool

    @property
    def dissipation_total(self) -> float:
        """reaction + transport + intercept + degenerate (= ‖∇L‖² to rounding)."""
        return (self.dissipation_reaction + self.dissipation_transport
                + self.dissipation_intercept + self.dissipation_degenerate)


def _assemble(student: Student, params: Params, R0, Rw, Rb, grad: Params, loss: float) -> Decomposition:
    """Build the decomposition from the residual moments R0_j = E[r σ_j], Rw_j = E[r σ′_j x],
    Rb_j = E[r σ′_j] (without s; σ_j = σ(w_j·x + b_j)) and the gradient."""
    s = student.s
    a = params.a
    what = _augmented(params, student.bias)
    norm = np.sqrt(np.einsum("ij,ij->i", what, what))
    reg = norm > 0
    theta = np.zeros_like(what)
    theta[reg] = what[reg] / norm[reg, None]
    G = np.zeros_like(a)
    G[reg] = s * R0[reg] / norm[reg]
    H = s * (np.concatenate([Rw, Rb[:, None]], axis=1) if student.bias else Rw)
    H[~reg] = 0.0
    PH = H - theta * np.einsum("ij,ij->i", theta, H)[:, None]
    mob = a * a + norm * norm
    speed = np.zeros_like(a)
    speed[reg] = a[reg] / norm[reg]
    c_dot = -mob * G
    c_dot[~reg] = 0.0
    theta_dot = -speed[:, None] * PH
    reaction = mob * G * G
    transport = a * a * np.einsum("ij,ij->i", PH, PH)
    reaction[~reg] = 0.0
    transport[~reg] = 0.0
    gw = _augmented(grad, student.bias)
    deg = float(np.sum(grad.a[~reg] ** 2) + np.sum(gw[~reg] ** 2))
    gn2 = float(np.sum(grad.a ** 2) + np.sum(grad.W ** 2) + np.sum(grad.b ** 2) + grad.c ** 2)
    return Decomposition(
        c=a * norm, theta=theta, G=G, H=H, c_dot=c_dot, theta_dot=theta_dot,
        reaction_mobility=mob, direction_speed=speed, reaction=reaction, transport=transport,
        conserved=a * a - norm * norm, degenerate=~reg,
        dissipation_reaction=float(np.sum(reaction)), dissipation_transport=float(np.sum(transport)),
        dissipation_intercept=float(grad.c ** 2) if student.intercept else 0.0,
        dissipation_degenerate=deg, grad_norm2=gn2, dL_dt=-gn2, loss=float(loss), grad=grad,
        augmented=bool(student.bias))


def _residual_moments(student, params, teacher, rtol):
    """(L, ∇L, R0, Rw, Rb) from one moment evaluation.

    Mirrors :func:`popdyn.objective._grad_from` before the final multiplication by s·a (so that
    neurons with a_j = 0 keep their H_j); ``tests/popdyn/test_gauge.py`` checks that
    s·(R0, a∘Rw, a∘Rb) equals :func:`popdyn.population_grad` to rounding.
    """
    M = moments(student, params, teacher, rtol=rtol, grad=True)
    s, a, c, W = student.s, params.a, params.c, params.W
    v = teacher.weights
    R0 = s * (M.C @ a) + c * M.mu0 - M.Ct @ v
    Rb = s * (M.D @ a) + c * M.mu1 - M.Dt @ v
    scal = s * (M.A @ a) + c * M.mu2 - M.At @ v
    UT = teacher.theta * teacher.alpha[:, None]
    Rw = M.theta * scal[:, None] + s * (M.B @ (a[:, None] * W)) - M.Bt @ (v[:, None] * UT)
    return _loss_from(student, params, teacher, M), _grad_from(student, params, teacher, M), R0, Rw, Rb


def decompose(student: Student, params: Params, teacher, *, rtol: float = 1e-10) -> Decomposition:
    """Per-neuron reaction–transport decomposition and the dissipation split at one state.

    Computed from the engine's exact population moments (closed forms for relu / leaky_relu
    students; no Monte Carlo).  For teachers with a truncated Hermite part the result is that of
    the truncated teacher (error ≲ ``rtol``), for which the identities below still hold to
    rounding: Euler's identity holds term by term.  See the module docstring for the conventions: G and H include
    the output scale s, θ is the direction of (w, b) ∈ R^{d+1} for a student with biases, and the
    clock is the unpreconditioned gradient flow.  Then, to rounding,

    * ``c_dot`` = −(a² + |ŵ|²) G equals d(a|ŵ|)/dt computed from ȧ = −∂L/∂a, dŵ/dt = −∂L/∂ŵ;
    * ``theta_dot`` = −(a/|ŵ|)(I − θθᵀ) H equals d(ŵ/|ŵ|)/dt;
    * ``dissipation_reaction + dissipation_transport + dissipation_intercept
      + dissipation_degenerate`` = ‖∇L‖² = −dL/dt.

    Parameters
    ----------
    student : Student
        Must have a positively homogeneous activation (relu, leaky_relu).
    params : Params
    teacher : Teacher
    rtol : float
        Series tolerance for teacher links with a Hermite part (closed forms otherwise).

    Returns
    -------
    Decomposition

    Raises
    ------
    ValueError
        Non-homogeneous activation (names ``student.activation``), or inconsistent inputs.

    References
    ----------
    The feature-ownership paper, the exact reaction–transport decomposition;
    docs/design.md §7.
    """
    require_homogeneous(student)
    _check(student, params, teacher)
    rtol = V.real("rtol", rtol, positive=True)
    L, g, R0, Rw, Rb = _residual_moments(student, params, teacher, rtol)
    return _assemble(student, params, R0, Rw, Rb, g, L)


def identity_residuals(student: Student, params: Params, dec: Decomposition) -> dict:
    """Relative residuals of the exact identities of :func:`decompose`, recomputed from the
    gradient ``dec.grad`` alone (ȧ = −∂L/∂a, dŵ/dt = −∂L/∂ŵ):

    * ``c_dot``: ‖d(a|ŵ|)/dt − c_dot‖_∞ / max_j(|∂_a L||ŵ| + |a||∂_ŵ L|);
    * ``theta_dot``: max_j |(I − θθᵀ)(dŵ/dt)/|ŵ| − θ̇_j| / max_j(|∂_ŵ L|/|ŵ|);
    * ``dissipation``: |reaction + transport + intercept + degenerate − ‖∇L‖²| / ‖∇L‖²;
    * ``conservation``: max_j |a ∂_a L − ŵ·∂_ŵ L| / max_j(|a ∂_a L| + |ŵ||∂_ŵ L|)
      (= the rate of change of a² − |ŵ|², relative).

    Each is 0 in exact arithmetic (0/0 is reported as 0).
    """
    g = dec.grad
    what = _augmented(params, student.bias)
    gw = _augmented(g, student.bias)
    norm = np.linalg.norm(what, axis=1)
    reg = norm > 0
    adot, wdot = -g.a, -gw
    th = dec.theta
    cdot_exact = adot * norm + params.a * np.einsum("ij,ij->i", th, wdot)
    sc = np.abs(g.a) * norm + np.abs(params.a) * np.linalg.norm(gw, axis=1)
    out = {}
    num = np.max(np.abs(cdot_exact - dec.c_dot)[reg], initial=0.0)
    den = np.max(sc[reg], initial=0.0)
    out["c_dot"] = float(num / den) if den > 0 else (np.inf if num > 0 else 0.0)
    td = np.zeros_like(wdot)
    td[reg] = (wdot[reg] - th[reg] * np.einsum("ij,ij->i", th[reg], wdot[reg])[:, None]) / norm[reg, None]
    num = np.max(np.linalg.norm(td - dec.theta_dot, axis=1)[reg], initial=0.0)
    den = np.max((np.linalg.norm(gw, axis=1)[reg] / norm[reg]), initial=0.0)
    out["theta_dot"] = float(num / den) if den > 0 else (np.inf if num > 0 else 0.0)
    gn = dec.grad_norm2
    diff = abs(dec.dissipation_total - gn)
    out["dissipation"] = float(diff / gn) if gn > 0 else (np.inf if diff > 0 else 0.0)
    lhs = params.a * g.a - np.einsum("ij,ij->i", what, gw)
    sc2 = np.abs(params.a * g.a) + norm * np.linalg.norm(gw, axis=1)
    den = np.max(sc2, initial=0.0)
    out["conservation"] = float(np.max(np.abs(lhs), initial=0.0) / den) if den > 0 else 0.0
    return out
