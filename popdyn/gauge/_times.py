"""Specialization times on both clocks, bracketed (docs/design.md §6 "Timescales", §7).

The specialization time of neuron j for threshold τ ∈ (0, 1) is the first time its input-space
direction's cosine with a teacher feature reaches τ.  From a run's snapshots it is bracketed
between the last snapshot before and the first snapshot at/after the crossing — on the update
clock n and on the flow clock t.  :func:`specialization_time` reruns gradient descent at h/2, h/4,
… and widens the flow-time bracket by the observed change (first-order step refinement); such
brackets are tagged ``numerical`` (certify's timescale bracket will replace the rule once it
exists).

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units"):
specialization time separation; docs/design.md §6–§7.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from ..dynamics import Schedule, train
from ._bracket import NumericalBracket
from ._decompose import _neuron_index
from ._reduced import check_thresholds

__all__ = ["SpecializationTimes", "specialization_times", "RefinedTimes", "specialization_time"]


@dataclass(frozen=True)
class SpecializationTimes:
    """Snapshot brackets of specialization times.

    Arrays have shape (len(neurons), len(thresholds)); thresholds are sorted ascending.
    ``n_lo ≤ n* ≤ n_hi`` and ``t_lo ≤ t* ≤ t_hi`` on the update and flow clocks; a crossing at the
    initial snapshot gives [0, 0]; one not reached by the last snapshot gives [last, inf)
    (``reached`` False).  The arrays are float64 so that inf can mark "not reached".
    ``feature`` holds, per neuron and threshold, the teacher feature whose cosine crossed first
    (−1 if not reached).
    """

    thresholds: np.ndarray
    neurons: np.ndarray
    n_lo: np.ndarray
    n_hi: np.ndarray
    t_lo: np.ndarray
    t_hi: np.ndarray
    reached: np.ndarray
    feature: np.ndarray

    def t_bracket(self, i: int, k: int) -> NumericalBracket:
        """Flow-time bracket of neuron ``neurons[i]`` at ``thresholds[k]``."""
        lo, hi = float(self.t_lo[i, k]), float(self.t_hi[i, k])
        est = 0.5 * (lo + hi) if np.isfinite(hi) else lo
        return NumericalBracket(lo, hi, est, "snapshot grid")


def _cosines(W: np.ndarray, teacher, feature, absolute):
    # W: (S, m, d) -> cos (S, m, k)
    nw = np.linalg.norm(W, axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        th = np.where(nw[..., None] > 0, W / np.where(nw > 0, nw, 1.0)[..., None], 0.0)
    cos = th @ teacher.theta.T
    if absolute:
        cos = np.abs(cos)
    if feature is not None:
        cos = cos[..., [feature]]
    return cos


def specialization_times(trajectory, teacher, thresholds, *, neurons=None, feature=None,
                         absolute: bool = False) -> SpecializationTimes:
    """Bracket the specialization times of a run from its snapshots.

    Parameters
    ----------
    trajectory : Trajectory
        From :func:`popdyn.train` or :func:`popdyn.finite.train_finite`.
    teacher : Teacher
        Its features are the unit directions ``teacher.theta``.
    thresholds : float or sequence of float
        Cosine thresholds, each in the open interval (0, 1).
    neurons : int, sequence, mask or None
        Which neurons (None: all).
    feature : int or None
        Use only this teacher feature; None: the first feature (any) whose cosine reaches τ.
    absolute : bool
        Use |cos| (sign-blind alignment).  Default False: the signed cosine (relu(u·x) and
        relu(−u·x) are different features).

    Returns
    -------
    SpecializationTimes
    """
    thr = check_thresholds(thresholds)
    W = np.asarray(trajectory.snapshots["W"])
    m = W.shape[1]
    idx = _neuron_index(neurons, m)
    if feature is not None:
        feature = V.nonneg_int("feature", feature)
        if feature >= teacher.k:
            raise ValueError(f"`feature` must be < the teacher's {teacher.k} features, got {feature}")
    if teacher.d != W.shape[2]:
        raise ValueError(f"`teacher` has d = {teacher.d} but the trajectory has d = {W.shape[2]}")
    cos = _cosines(W[:, idx], teacher, feature, absolute)     # (S, N, k')
    best = cos.max(axis=2)
    arg = cos.argmax(axis=2)
    if feature is not None:
        arg = np.full_like(arg, feature)
    sn = np.asarray(trajectory.snap_n, dtype=np.float64)
    st = np.asarray(trajectory.snap_t, dtype=np.float64)
    N, T = idx.size, thr.size
    n_lo = np.empty((N, T)); n_hi = np.empty((N, T)); t_lo = np.empty((N, T)); t_hi = np.empty((N, T))
    reached = np.zeros((N, T), dtype=bool)
    feat = np.full((N, T), -1, dtype=np.int64)
    for i in range(N):
        for k, tau in enumerate(thr):
            hit = np.flatnonzero(best[:, i] >= tau)
            if hit.size == 0:
                n_lo[i, k], n_hi[i, k], t_lo[i, k], t_hi[i, k] = sn[-1], np.inf, st[-1], np.inf
                continue
            s = int(hit[0])
            reached[i, k] = True
            feat[i, k] = int(arg[s, i])
            lo = max(s - 1, 0)
            n_lo[i, k], n_hi[i, k], t_lo[i, k], t_hi[i, k] = sn[lo], sn[s], st[lo], st[s]
            if s == 0:
                n_lo[i, k] = n_hi[i, k] = t_lo[i, k] = t_hi[i, k] = 0.0
    return SpecializationTimes(thr, idx, n_lo, n_hi, t_lo, t_hi, reached, feat)


@dataclass(frozen=True)
class RefinedTimes:
    """Specialization times from gradient descent at steps h, h/2, …, h/2^R.

    ``t`` is an (N, T) object array of :class:`NumericalBracket` on the flow clock (the finest
    run's snapshot bracket widened by twice the change of the bracket midpoints between the two
    finest runs — first-order step refinement; ``numerical``).  ``n_lo``/``n_hi`` bracket the
    update count of the *base* run (step h).  ``levels`` holds each run's
    :class:`SpecializationTimes`, ``steps`` the step sizes.
    """

    thresholds: np.ndarray
    neurons: np.ndarray
    t: np.ndarray
    n_lo: np.ndarray
    n_hi: np.ndarray
    steps: tuple
    levels: tuple


def specialization_time(student, params, teacher, thresholds, *, lr: float, max_time: float,
                        refinements: int = 2, every: int = 1, neurons=None, feature=None,
                        absolute: bool = False, **train_kwargs) -> RefinedTimes:
    """Specialization times under population gradient descent, refined in the step size.

    Runs :func:`popdyn.train` with ``method="gd"`` at steps lr, lr/2, …, lr/2^refinements up to
    flow time ``max_time`` with a snapshot every ``every`` updates, brackets each run with
    :func:`specialization_times`, and combines them (see :class:`RefinedTimes`).  Extra keyword
    arguments go to :func:`popdyn.train` (e.g. ``head_lr_mult``).
    """
    thr = check_thresholds(thresholds)
    lr = V.real("lr", lr, positive=True)
    max_time = V.real("max_time", max_time, positive=True)
    refinements = V.positive_int("refinements", refinements)
    every = V.positive_int("every", every)
    for bad in ("method", "schedule", "max_updates"):
        if bad in train_kwargs:
            raise TypeError(f"`{bad}` is set by specialization_time and cannot be passed")
    levels, steps = [], []
    for r in range(refinements + 1):
        h = lr / 2 ** r
        nmax = int(np.ceil(max_time / h * (1 + 1e-12)))
        tr = train(student, params, teacher, method="gd", lr=h, max_updates=nmax,
                   schedule=Schedule(every=every, early=()), **train_kwargs)
        levels.append(specialization_times(tr, teacher, thr, neurons=neurons, feature=feature,
                                           absolute=absolute))
        steps.append(h)
    fine, prev = levels[-1], levels[-2]
    N, T = fine.t_lo.shape
    out = np.empty((N, T), dtype=object)
    for i in range(N):
        for k in range(T):
            if not (fine.reached[i, k] and prev.reached[i, k]):
                lo = max(lv.t_lo[i, k] for lv in levels[-2:])
                out[i, k] = NumericalBracket(lo, np.inf, lo, "not reached at all refinements")
                continue
            e_f = 0.5 * (fine.t_lo[i, k] + fine.t_hi[i, k])
            e_p = 0.5 * (prev.t_lo[i, k] + prev.t_hi[i, k])
            err = 2.0 * abs(e_f - e_p)
            out[i, k] = NumericalBracket(max(fine.t_lo[i, k] - err, 0.0), fine.t_hi[i, k] + err, e_f,
                                         f"snapshot grid at h={steps[-1]:g}, widened by step "
                                         f"refinement (h={steps[-2]:g} → {steps[-1]:g})")
    base = levels[0]
    return RefinedTimes(thr, base.neurons, out, base.n_lo, base.n_hi, tuple(steps), tuple(levels))
