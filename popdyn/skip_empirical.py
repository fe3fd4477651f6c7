r"""Finite-sample loss, gradient and gradient descent of the ``skip`` student, and the angular
accuracy of a planar data set (used by the check ``skip_empirical_transfer``).

The student (:mod:`popdyn.skip`) is f(x) = s Σ_j a_j σ(w_j·x + b_j) + v·x + c.  On samples
(X, y), X of shape (n, d), with residuals r_i = f(x_i) − y_i,

    L_n      = ½ (1/n) Σ_i r_i²,
    ∂L_n/∂a_j = s (1/n) Σ_i r_i σ(z_ij),         ∂L_n/∂w_j = s a_j (1/n) Σ_i r_i σ′(z_ij) x_i,
    ∂L_n/∂b_j = s a_j (1/n) Σ_i r_i σ′(z_ij),    ∂L_n/∂c   = (1/n) Σ_i r_i,
    ∂L_n/∂v   = (1/n) Σ_i r_i x_i                 (z_ij = w_j·x_i + b_j),

the sample-mean versions of the population formulas SK-1, SK-2 of :mod:`popdyn.skip` (each is
the mean of n independent per-sample terms whose expectation is the population value, so
E ∇L_n = ∇L and the deviation has covariance Σ/n).  Fixed parameters (b without ``bias``, c
without ``intercept``) get a zero gradient; with ``skip=False`` the skip gradient is zero too.
:mod:`popdyn.finite` trains the ridge family only; these helpers cover the skip family.

Data accuracy (d = 2).  "Removing spurious minima for planar features by skip connections"
(Zimmermann, Grillo, Balakin et al., arXiv 2610.01728; its Lean formalization, definition
``DataAccuracy``) calls inputs x_1..x_N δ-accurate when every continuous, positively 2-homogeneous
H that is L-Lipschitz on the unit ball has

    | d (1/N) Σ_j H(x_j) − R₂ E_γ[H] | ≤ d R₂ L δ,          R₂ = (1/N) Σ_j |x_j|².

Writing H(z) = |z|² h(z/|z|), E_γ[H] = d E_unif[h] and (1/N) Σ H(x_j) = R₂ E_ν[h] with ν the
angular measure of the data weighted by |x_j|²; so the smallest such δ is

    δ̂ = sup_h |E_ν h − E_unif h| / L_H.

In d = 2, |h(a) − h(b)| ≤ L_H·chord ≤ L_H·arc gives δ̂ ≤ W₁(ν, unif) (arc-length metric on the
circle, Kantorovich–Rubinstein), and a 1-Lipschitz Kantorovich potential h*, centred so that
|h*| ≤ π/2, has L_H ≤ sup (4h*² + h*′²)^{1/2} ≤ (1 + π²)^{1/2} (|∇H|² = ρ²(4h² + h′²) in polar
coordinates), so δ̂ ≥ W₁/(1 + π²)^{1/2}.  W₁ on the circle is exact: W₁ = min_α ∫_0^{2π}
|F_ν(θ) − θ/2π − α| dθ (the circle's cumulative-distribution formula); :func:`circle_w1` evaluates
it in closed form per arc between atoms with α the median of the piecewise-uniform values.

References
----------
Zimmermann, Grillo, Balakin et al., "Removing spurious minima for planar features by skip
connections", arXiv 2610.01728 (Lean definitions ``DataAccuracy``, ``DataLoss``); popdyn.skip
(SK-1, SK-2); docs/design.md §4 (finite-sample mode).
"""
from __future__ import annotations

import math

import numpy as np

from . import _validate as V
from .families import capability
from .models import Params, Student

__all__ = ["circle_w1", "data_accuracy", "empirical_loss", "empirical_loss_and_grad",
           "gradient_descent"]


def _check(student, params, X, y):
    if not isinstance(student, Student):
        raise TypeError(f"`student` must be a popdyn.Student, got {type(student).__name__}")
    if capability(student.family, "ridge_loss") is None:
        raise ValueError(f"the sample loss here is that of ridge and skip students; got a "
                         f"{student.family.label} student")
    student.check(params, "params")
    X = V.array("X", X, (None, student.d))
    if X.shape[0] == 0:
        raise ValueError("`X` must have at least one row")
    y = V.array("y", y, (X.shape[0],))
    return X, y


def _parts(student, params, X, y):
    Z = X @ params.W.T + params.b
    S = student.act(Z)
    f = student.s * (S @ params.a) + params.c
    if student.skip:
        f = f + X @ params.v
    return Z, S, f - y


def _loss_grad(student, params, X, y):
    Z, S, r = _parts(student, params, X, y)
    n = X.shape[0]
    s, a = student.s, params.a
    Q = student.act.derivative(Z) * r[:, None]
    ga = s * (S.T @ r) / n
    gW = (s * a)[:, None] * (Q.T @ X) / n
    gb = s * a * Q.sum(axis=0) / n if student.bias else np.zeros_like(a)
    gc = float(r.mean()) if student.intercept else 0.0
    gv = (X.T @ r) / n if student.skip else np.zeros(student.d)
    return 0.5 * float(r @ r) / n, Params(ga, gW, gb, gc, gv)


def empirical_loss(student: Student, params: Params, X, y) -> float:
    """L_n = ½ (1/n) Σ_i (f(x_i) − y_i)² of any relu-family student, with or without the skip."""
    X, y = _check(student, params, X, y)
    r = _parts(student, params, X, y)[2]
    return 0.5 * float(r @ r) / X.shape[0]


def empirical_loss_and_grad(student: Student, params: Params, X, y):
    """(L_n, ∇L_n) on the samples (X, y): the formulas of the module docstring."""
    X, y = _check(student, params, X, y)
    return _loss_grad(student, params, X, y)


def _norm(g: Params) -> float:
    return float(math.sqrt(np.sum(g.a ** 2) + np.sum(g.W ** 2) + np.sum(g.b ** 2) + g.c ** 2
                           + np.sum(g.v ** 2)))


def _gmax(g: Params) -> float:
    return float(max(np.max(np.abs(g.a)), np.max(np.abs(g.W)), np.max(np.abs(g.b), initial=0.0),
                     abs(g.c), np.max(np.abs(g.v), initial=0.0)))


def gradient_descent(student: Student, params: Params, X, y, *, lr: float, max_updates: int,
                     gtol: float = 0.0, loss_floor: float = 0.0, every: int = 100,
                     explode: float = 1e8):
    """Full-batch gradient descent θ ← θ − lr ∇L_n on every trainable field (a, W, b, c, v).

    Stops at the first state with max|∇L_n| ≤ ``gtol`` (status ``"converged"``), with
    L_n ≤ ``loss_floor`` (``"loss_floor"``), with a non-finite or > ``explode`` loss
    (``"diverged"``), or after ``max_updates`` updates (``"max_updates"``).

    Returns
    -------
    dict
        ``params`` (the last state), ``loss`` (its L_n), ``gmax`` (its max|∇L_n|), ``updates``,
        ``status`` and ``snapshots``: (update, Params) every ``every`` updates, the start and
        the last state included.
    """
    X, y = _check(student, params, X, y)
    lr = V.real("lr", lr, positive=True)
    max_updates = V.nonneg_int("max_updates", max_updates)
    every = V.positive_int("every", every)
    gtol = V.real("gtol", gtol, nonnegative=True)
    loss_floor = V.real("loss_floor", loss_floor, nonnegative=True)
    p = params
    snaps = [(0, p)]
    status = "max_updates"
    k = 0
    while True:
        L, g = _loss_grad(student, p, X, y)
        if not (math.isfinite(L) and L <= explode):
            status = "diverged"
            break
        gm = _gmax(g)
        if gm <= gtol:
            status = "converged"
            break
        if L <= loss_floor:
            status = "loss_floor"
            break
        if k >= max_updates:
            break
        p = Params(p.a - lr * g.a, p.W - lr * g.W, p.b - lr * g.b, p.c - lr * g.c,
                   p.v - lr * g.v)
        k += 1
        if k % every == 0:
            snaps.append((k, p))
    if snaps[-1][0] != k:
        snaps.append((k, p))
    return {"params": p, "loss": L, "gmax": gm if math.isfinite(L) else math.inf,
            "updates": k, "status": status, "snapshots": snaps}


# ---------------------------------------------------------------------------- data accuracy
def circle_w1(angles, weights=None) -> float:
    """W₁(ν, uniform) on the unit circle with the arc-length metric (total length 2π), for
    ν = Σ_j p_j δ_{angles_j} (weights normalized to sum 1; equal weights by default).

    W₁ = min_α ∫_0^{2π} |F_ν(θ) − θ/2π − α| dθ: on the arc between consecutive atoms the
    integrand's values are uniform on an interval of length (arc)/2π, so the integral is 2π Σ
    ∫_{lo}^{hi} |s − α| ds in closed form; α is the median of those values (a sweep over the
    sorted interval ends).
    """
    th = np.mod(V.array("angles", angles, (None,)), 2 * math.pi)
    if th.size == 0:
        raise ValueError("`angles` must hold at least one angle")
    if weights is None:
        p = np.full(th.size, 1.0 / th.size)
    else:
        p = V.array("weights", weights, (th.size,))
        if np.any(p < 0) or not p.sum() > 0:
            raise ValueError("`weights` must be non-negative with a positive sum")
        p = p / p.sum()
    o = np.argsort(th, kind="stable")
    th, p = th[o], p[o]
    F = np.concatenate([[0.0], np.cumsum(p)])           # F on [0, th_0), [th_0, th_1), ...
    F[-1] = 1.0
    ends = np.concatenate([[0.0], th, [2 * math.pi]])
    lo = F - ends[1:] / (2 * math.pi)                   # D(θ) = F − θ/2π decreases on each arc
    hi = F - ends[:-1] / (2 * math.pi)
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    # median α: G(α) = Σ clip(α − lo, 0, hi − lo) = ½ (Σ (hi − lo) = 1)
    ev = np.concatenate([lo, hi])
    sl = np.concatenate([np.ones(lo.size), -np.ones(hi.size)])
    o = np.argsort(ev, kind="stable")
    ev, sl = ev[o], sl[o]
    slope = np.cumsum(sl)                                # slope of G just right of ev[i]
    G = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(ev))])
    i = int(np.searchsorted(G, 0.5, side="left"))
    if i == 0:
        alpha = ev[0]
    else:
        i -= 1
        alpha = ev[i] + (0.5 - G[i]) / slope[i] if slope[i] > 0 else ev[i]
    mid, ln = 0.5 * (lo + hi), hi - lo
    inside = ((alpha - lo) ** 2 + (hi - alpha) ** 2) / 2.0
    val = np.where(alpha <= lo, (mid - alpha) * ln, np.where(alpha >= hi, (alpha - mid) * ln,
                                                              inside))
    return float(2 * math.pi * val.sum())


def data_accuracy(X) -> dict:
    """Bracket of the smallest δ with ``DataAccuracy(X, δ)`` for planar inputs X (n, 2) (module
    docstring): ``lo`` = W₁/(1 + π²)^{1/2}, ``hi`` = W₁, W₁ = W₁(ν, uniform) of the |x|²-weighted
    angular measure ν; also ``w1`` and ``R2`` = (1/n) Σ |x_j|²."""
    X = V.array("X", X, (None, 2))
    if X.shape[0] == 0:
        raise ValueError("`X` must have at least one row")
    r2 = np.sum(X * X, axis=1)
    if not r2.sum() > 0:
        raise ValueError("`X` must have a non-zero row (DataAccuracy needs R₂ > 0)")
    w1 = circle_w1(np.arctan2(X[:, 1], X[:, 0]), r2)
    return {"lo": w1 / math.sqrt(1.0 + math.pi ** 2), "hi": w1, "w1": w1,
            "R2": float(r2.mean())}
