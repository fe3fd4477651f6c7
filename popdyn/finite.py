r"""Finite-sample training of the population engine's students (docs/design.md §4 "Finite-sample mode").

The same :class:`popdyn.Student` is trained on n samples x_i ~ N(0, I_d), y_i = teacher(x_i)
(+ optional Gaussian label noise), minimizing the empirical loss

    L_n = ½ · (1/n) Σ_i (f(x_i) − y_i)²   (+ (λ/2)(|a|² + |W|² + |b|²) with weight decay λ),

so population and finite-sample trajectories can be compared on the same clocks.

Methods (one update = one parameter step; the flow time advances by ``lr`` per update, and, as in
:func:`popdyn.train`, the parameter-space rate is lr·κ·multiplier with κ = m for mean-field):

* ``"gd"`` — full-batch gradient descent;
* ``"sgd"`` — minibatch SGD: each epoch is a fresh random permutation of the samples cut into
  batches of ``batch_size`` (the last batch of an epoch may be smaller);
* ``"noisy_sgd"`` — minibatch SGD plus Gaussian noise: θ ← θ − η_g ĝ + σ √η_g ξ with
  ξ ~ N(0, I) on every trainable parameter (Euler–Maruyama for dθ = −∇L dt + σ dB_t; σ =
  ``noise``, η_g the group's rate).

Randomness is deterministic given ``seed``: ``numpy.random.SeedSequence(seed).spawn(2)`` gives
one PCG64 stream for the data (X, then label noise) and one for training (batches, noise).

The returned :class:`popdyn.Trajectory` has the *empirical* loss L_n (without the weight-decay
penalty) after every update in ``loss``; ``variance`` is the teacher's population V_Y, so
``normalized_loss`` = 2L_n/V_Y.  With ``population=True`` each snapshot's record also holds the
exact population loss (``"population_loss"``) and L_n (``"empirical_loss"``).

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units"):
"population and finite-sample training", small-step full-batch gradient descent; docs/design.md §4.
"""
from __future__ import annotations

import time

import numpy as np

from . import _validate as V
from .families import capability
from .dynamics import FixedStepGD, Problem, Schedule, Trajectory, _Recorder
from .models import Params, Student
from .objective import _check as _check_pop
from .objective import population_loss

METHODS = ("gd", "sgd", "noisy_sgd")

__all__ = ["METHODS", "draw", "empirical_loss", "empirical_loss_and_grad", "decompose_empirical",
           "train_finite"]


def _check_family(student):
    """The student's family must define the finite-sample capability (its own
    ``finite_sample_loss`` hook, :func:`popdyn.families.capability`)."""
    if not isinstance(student, Student):
        raise TypeError(f"`student` must be a popdyn.Student, got {type(student).__name__}")
    if capability(student.family, "finite_sample_loss") is None:
        raise ValueError(f"finite-sample training is implemented for relu-family students "
                         f"without a skip; a {student.family.label} student is not supported")


def _check_student(student, params, name="params"):
    _check_family(student)
    student.check(params, name)


def _check_data(student, X, y):
    X = V.array("X", X, (None, student.d))
    if X.shape[0] == 0:
        raise ValueError("`X` must have at least one row")
    y = V.array("y", y, (X.shape[0],))
    return X, y


def draw(teacher, n: int, seed: int, *, label_noise: float = 0.0):
    """Draw (X, y): X (n, d) ~ N(0, I), y = teacher(X) + label_noise·N(0, 1), from the data stream
    of ``SeedSequence(seed)`` (see the module docstring)."""
    n = V.positive_int("n", n)
    seed = V.nonneg_int("seed", seed)
    label_noise = V.real("label_noise", label_noise, nonnegative=True)
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
    X = rng.standard_normal((n, teacher.d))
    y = teacher(X)
    if label_noise > 0:
        y = y + label_noise * rng.standard_normal(n)
    return X, y


def _forward(student, params, X):
    Z = X @ params.W.T + params.b
    S = student.act(Z)
    f = student.s * (S @ params.a) + params.c
    return Z, S, f


def empirical_loss(student: Student, params: Params, X, y) -> float:
    """L_n = ½ mean (f(x_i) − y_i)²."""
    _check_student(student, params)
    X, y = _check_data(student, X, y)
    r = _forward(student, params, X)[2] - y
    return 0.5 * float(r @ r) / X.shape[0]


def _residual_parts(student, params, X, y):
    Z, S, f = _forward(student, params, X)
    r = f - y
    n = X.shape[0]
    Q = student.act.derivative(Z) * r[:, None]
    R0 = S.T @ r / n
    Rw = Q.T @ X / n
    Rb = Q.sum(axis=0) / n
    L = 0.5 * float(r @ r) / n
    return L, r, R0, Rw, Rb


def _grad_from_parts(student, params, r, R0, Rw, Rb) -> Params:
    s, a = student.s, params.a
    ga = s * R0
    gW = (s * a)[:, None] * Rw
    gb = s * a * Rb if student.bias else np.zeros_like(a)
    gc = float(np.mean(r)) if student.intercept else 0.0
    return Params(ga, gW, gb, gc)


def empirical_loss_and_grad(student: Student, params: Params, X, y):
    """(L_n, ∇L_n) on the samples (X, y) (fixed parameters get a zero gradient)."""
    _check_student(student, params)
    X, y = _check_data(student, X, y)
    L, r, R0, Rw, Rb = _residual_parts(student, params, X, y)
    return L, _grad_from_parts(student, params, r, R0, Rw, Rb)


def decompose_empirical(student: Student, params: Params, X, y):
    """The reaction–transport decomposition of the *empirical* loss L_n (same conventions and
    fields as :func:`popdyn.gauge.decompose`, with E replaced by the sample mean).

    Since σ′(t)t = σ(t) holds pointwise for relu / leaky_relu, θ·H = G holds to rounding here too.
    """
    from .gauge._decompose import _assemble, require_homogeneous

    require_homogeneous(student)
    _check_student(student, params)
    X, y = _check_data(student, X, y)
    L, r, R0, Rw, Rb = _residual_parts(student, params, X, y)
    return _assemble(student, params, R0, Rw, Rb, _grad_from_parts(student, params, r, R0, Rw, Rb), L)


def train_finite(student: Student, params: Params, teacher, *, n_samples: int | None = None,
                 seed: int = 0, X=None, y=None, label_noise: float = 0.0, method: str = "gd",
                 lr: float = 0.05, batch_size: int | None = None, noise: float = 0.0,
                 weight_decay: float = 0.0, head_lr_mult: float = 1.0, bias_lr_mult: float = 1.0,
                 intercept_lr_mult: float = 1.0, max_updates: int = 100_000,
                 max_time: float = np.inf, loss_target: float = 0.0, explode: float = 1e6,
                 schedule: Schedule | None = None, recorder=None,
                 population: bool = True) -> Trajectory:
    """Train ``student`` from ``params`` on n samples of ``teacher`` (see the module docstring).

    Parameters
    ----------
    n_samples : int, optional
        Number of samples to draw with :func:`draw` (``seed``, ``label_noise``).  Give either
        ``n_samples`` or the data ``X`` (n, d) and ``y`` (n,).
    seed : int
        Seed of the data and training streams (deterministic runs).
    method : {"gd", "sgd", "noisy_sgd"}
    lr : float
        Step on the flow clock (> 0).
    batch_size : int, optional
        Minibatch size for sgd / noisy_sgd (1 ≤ batch_size ≤ n; required for those methods).
    noise : float
        σ ≥ 0 of noisy_sgd (must be 0 for the other methods).
    weight_decay : float
        λ ≥ 0: adds λ·(a, W, b) to the gradient (not the intercept).
    head_lr_mult, bias_lr_mult, intercept_lr_mult, max_updates, max_time, loss_target, explode,
    schedule, recorder
        As in :func:`popdyn.train` (loss_target and explode act on the empirical loss).
    population : bool
        Record the exact population loss at each snapshot.

    Returns
    -------
    Trajectory
        ``info`` holds the settings, ``n_samples`` and the wall time.
    """
    _check_pop(student, params, teacher)
    _check_family(student)
    V.choice("method", method, METHODS)
    seed = V.nonneg_int("seed", seed)
    if (X is None) != (y is None):
        raise ValueError("give both `X` and `y`, or neither (then `n_samples` is drawn)")
    if X is None:
        if n_samples is None:
            raise ValueError("give `n_samples` (samples are drawn from the teacher) or `X` and `y`")
        X, y = draw(teacher, n_samples, seed, label_noise=label_noise)
    else:
        if n_samples is not None:
            raise ValueError("give either `n_samples` or (`X`, `y`), not both")
        if label_noise != 0:
            raise ValueError("`label_noise` applies to drawn samples; add noise to `y` yourself")
        X, y = _check_data(student, X, y)
    n = X.shape[0]
    lr = V.real("lr", lr, positive=True)
    noise = V.real("noise", noise, nonnegative=True)
    wd = V.real("weight_decay", weight_decay, nonnegative=True)
    mult = student.family.multipliers(head_lr_mult=head_lr_mult, bias_lr_mult=bias_lr_mult,
                                      intercept_lr_mult=intercept_lr_mult)
    max_updates = V.nonneg_int("max_updates", max_updates)
    max_time = V.real("max_time", max_time, positive=True, allow_inf=True)
    loss_target = V.real("loss_target", loss_target, nonnegative=True)
    explode = V.real("explode", explode, positive=True)
    if method == "gd":
        if batch_size is not None:
            raise ValueError("`batch_size` is only used by method 'sgd' / 'noisy_sgd'")
    else:
        if batch_size is None:
            raise ValueError(f"method {method!r} needs `batch_size`")
        batch_size = V.positive_int("batch_size", batch_size)
        if batch_size > n:
            raise ValueError(f"`batch_size` must be <= the number of samples {n}, got {batch_size}")
    if noise > 0 and method != "noisy_sgd":
        raise ValueError("`noise` > 0 requires method 'noisy_sgd'")
    schedule = Schedule() if schedule is None else schedule
    if not isinstance(schedule, Schedule):
        raise TypeError("`schedule` must be a popdyn.Schedule")
    fam = student.family
    rates = fam.rates(mult)
    kappa, _ = fam.clock()
    VY = teacher.variance
    if not VY > 0:
        raise ValueError("`teacher` has zero variance: the normalized loss is undefined")
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])

    t0 = time.perf_counter()
    rec_fn = None
    if population or recorder is not None:
        def rec_fn(st, p, T, *, n, t, loss):
            out = {}
            if population:
                out["population_loss"] = population_loss(student, p, teacher)
                out["empirical_loss"] = loss
            if recorder is not None:
                out.update(recorder(student, p, teacher, n=n, t=t, loss=loss))
            return out

    def grad_on(p, idx):
        Xb, yb = (X, y) if idx is None else (X[idx], y[idx])
        L, r, R0, Rw, Rb = _residual_parts(student, p, Xb, yb)
        g = _grad_from_parts(student, p, r, R0, Rw, Rb)
        if wd > 0:
            g = Params(g.a + wd * p.a, g.W + wd * p.W, g.b + (wd * p.b if student.bias else 0.0), g.c)
        return L, g

    if method == "gd":
        def evaluate(p):
            return (*grad_on(p, None), p)
    else:
        def evaluate(p):
            r = _forward(student, p, X)[2] - y
            return 0.5 * float(r @ r) / n, None, p

    def axpy(p, g, hh):
        return fam.axpy(p, g, hh * kappa, rates)

    problem = Problem(evaluate, axpy, fam.diff_norm, params, VY, lr, max_updates, max_time,
                      loss_target, explode, schedule)
    rec = _Recorder(schedule, rec_fn, student, teacher)
    if method == "gd":
        run = FixedStepGD(problem, rec)
    else:
        run = MinibatchSGD(problem, rec, grad_on=grad_on, rng=rng, n=n, batch_size=batch_size,
                           noise=noise, h=lr * kappa, rates=rates, student=student)
    run.run()
    sn, st, snaps = rec.arrays()
    info = dict(method=method, lr=lr, n_samples=n, seed=seed, batch_size=batch_size, noise=noise,
                weight_decay=wd, label_noise=label_noise, head_lr_mult=rates["a"],
                bias_lr_mult=rates["b"], intercept_lr_mult=rates["c"], max_updates=max_updates,
                max_time=max_time,
                loss_target=loss_target, wall_time=time.perf_counter() - t0, finite_sample=True)
    return Trajectory(np.array(run.ns, dtype=np.int64), np.array(run.ts), np.array(run.losses),
                      sn, st, snaps, run.status, run.p, VY, rec.records, info)


class MinibatchSGD(FixedStepGD):
    """Minibatch SGD (``noise`` = 0) and noisy SGD (module docstring): each proposal takes the
    gradient on the next batch of a fresh permutation per epoch (the training stream ``rng``),
    plus σ√η_g ξ per group when ``noise`` > 0; the evaluation is the full-sample loss."""

    def __init__(self, problem, recorder, *, grad_on, rng, n, batch_size, noise, h, rates,
                 student):
        super().__init__(problem, recorder)
        self.grad_on, self.rng, self.n_samples, self.batch_size = grad_on, rng, n, batch_size
        self.noise, self.h, self.rates, self.student = noise, h, rates, student
        self.perm, self.pos = None, n

    def _propose(self):
        if self.pos >= self.n_samples:
            self.perm, self.pos = self.rng.permutation(self.n_samples), 0
        idx = self.perm[self.pos:self.pos + self.batch_size]
        self.pos += self.batch_size
        _, g = self.grad_on(self.p, idx)
        q = self.problem.axpy(self.p, g, self.problem.lr)
        if self.noise > 0:
            noise, h, rng, st = self.noise, self.h, self.rng, self.student
            ma, mb, mc = self.rates["a"], self.rates["b"], self.rates["c"]
            q = Params(q.a + noise * np.sqrt(h * ma) * rng.standard_normal(q.a.shape),
                       q.W + noise * np.sqrt(h) * rng.standard_normal(q.W.shape),
                       q.b + (noise * np.sqrt(h * mb) * rng.standard_normal(q.b.shape)
                              if st.bias else 0.0),
                       q.c + (noise * np.sqrt(h * mc) * float(rng.standard_normal())
                              if st.intercept else 0.0))
        return q, self.problem.lr
