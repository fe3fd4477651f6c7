r"""Feature-ownership experiments: k initially duplicate neurons, one with the favorable gauge
(docs/design.md §7; the feature-ownership paper's "global selection and functional pruning").

Setting: bias-free ReLU student (standard scaling, no intercept) with k neurons that all share
the direction θ0 (cos(θ0, u) = ``cos0``, default 1/√d) and the coefficient c0/k each, so the
initial function is c0·relu(θ0·x) whatever the gauges; teacher y = relu(u·x), u = e_1.  Neuron 0
gets the favorable ratio a/|w| = D; the others get the opposite ratio 1/D (``others="opposite"``)
or stay balanced, ratio 1 (``others="balanced"``).  Training is population gradient descent
(:func:`popdyn.train`, ``method="gd"``) or finite-sample full-batch gradient descent
(:func:`popdyn.finite.train_finite`) at the same step, so both can be compared.

Reported along the run (at snapshots): coefficients c_j = a_j|w_j|, cosines with u, the exact
population loss (and the empirical loss), each neuron's functional contribution
‖a_jσ(w_j·x)‖_{L²(γ)}, the others' joint contribution ‖Σ_{j≥1} a_jσ_j‖, and the dissipation split
(reaction, transport) of the population loss (and of the empirical loss).  The owner is the
neuron with the largest final coefficient.

docs/design.md §7 regime statement: selection (owner = favorable neuron) in every probe run; pruning of
the others' contribution to 0 only when they carry the opposite gauge with a large imbalance
(c0 = 1: ≈1e−15 by t ≈ 20); balanced others or a small initialization keep a finite aligned
share (c_own/c_j ≈ 0.9·D).

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units");
docs/design.md §7.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as V
from ..dynamics import Schedule, train
from ..finite import decompose_empirical, draw, train_finite
from ..models import Params, Student
from ..teachers import Teacher
from ._decompose import alignment, contributions, decompose, group_contribution
from ._reduced import ratio_start

OTHERS = ("opposite", "balanced")
MODES = ("population", "finite")

__all__ = ["OTHERS", "MODES", "duplicate_start", "OwnershipRun", "ownership"]


def duplicate_start(k: int, *, c0: float, D: float, d: int, others: str = "opposite",
                    cos0: float | None = None):
    """(student, params, teacher) of the duplicate-neuron start (module docstring)."""
    k = V.positive_int("k", k)
    if k < 2:
        raise ValueError(f"`k` must be >= 2 (duplicate neurons), got {k}")
    c0 = V.real("c0", c0, positive=True)
    D = V.real("D", D, positive=True)
    d = V.positive_int("d", d)
    if d < 2:
        raise ValueError(f"`d` must be >= 2, got {d}")
    V.choice("others", others, OTHERS)
    cos0 = 1.0 / np.sqrt(d) if cos0 is None else V.real("cos0", cos0)
    if not -1.0 < cos0 < 1.0:
        raise ValueError(f"`cos0` must lie in (-1, 1), got {cos0!r}")
    th = np.zeros(d)
    th[0] = cos0
    th[1] = np.sqrt(1.0 - cos0 * cos0)
    ratios = [D] + [1.0 / D if others == "opposite" else 1.0] * (k - 1)
    a = np.empty(k)
    W = np.empty((k, d))
    for j, r in enumerate(ratios):
        aj, wj, _ = ratio_start(c0 / k, r)
        a[j] = aj
        W[j] = wj * th
    U = np.zeros((1, d))
    U[0, 0] = 1.0
    student = Student(d, k, "relu", bias=False, intercept=False)
    return student, Params(a, W, np.zeros(k), 0.0), Teacher.network("relu", [1.0], U)


@dataclass(frozen=True)
class OwnershipRun:
    """One ownership experiment (see the module docstring).

    Snapshot arrays: ``t``, ``n`` (S,); ``c``, ``cos``, ``contribution`` (S, k);
    ``others_contribution``, ``loss`` (population L), ``dissipation_reaction``,
    ``dissipation_transport`` (S,); for finite-sample runs also ``empirical_loss``,
    ``empirical_reaction``, ``empirical_transport`` (S,) (None for population runs).
    ``owner`` = argmax of the final c; ``selected`` = (owner == 0, the favorable neuron);
    ``selection_ratio`` = c_0 / max_{j≥1} c_j at the end; ``final_others`` = the others' final
    joint contribution and ``final_others_rel`` the same divided by ‖y‖ = sqrt(E[y²]).
    ``pruning_rate`` is the exponential decay rate of the others' contribution late in the run
    (> 0: exponential pruning at that rate; ≈ 0: a finite share).
    """

    mode: str
    k: int
    c0: float
    D: float
    d: int
    others: str
    settings: dict
    t: np.ndarray
    n: np.ndarray
    c: np.ndarray
    cos: np.ndarray
    contribution: np.ndarray
    others_contribution: np.ndarray
    loss: np.ndarray
    dissipation_reaction: np.ndarray
    dissipation_transport: np.ndarray
    owner: int
    selected: bool
    selection_ratio: float
    final_others: float
    final_others_rel: float
    status: str
    empirical_loss: np.ndarray | None = None
    empirical_reaction: np.ndarray | None = None
    empirical_transport: np.ndarray | None = None
    trajectory: object = field(default=None, repr=False)

    @property
    def pruning_rate(self) -> float:
        """Least-squares slope of −log(others' contribution) against t over the later half of the
        snapshots whose contribution is above 1e−12 × its initial value (below that the
        contribution sits at the rounding floor of the residual moments); nan if < 2 points."""
        y = self.others_contribution
        ok = np.flatnonzero(y > 1e-12 * y[0])
        ok = ok[ok.size // 2:]
        if ok.size < 2:
            return float("nan")
        return float(-np.polyfit(self.t[ok], np.log(y[ok]), 1)[0])

    def summary(self) -> str:
        return (f"{self.mode:<10} k={self.k} c0={self.c0:g} D={self.D:g} d={self.d} others={self.others:<8} "
                f"owner={self.owner} (favorable=0) c_fav/max c_other={self.selection_ratio:.4g} "
                f"others' contribution {self.others_contribution[0]:.3g} → {self.final_others:.3g} "
                f"(rel {self.final_others_rel:.3g}; rate {self.pruning_rate:.3g}) at t={self.t[-1]:g}; loss {self.loss[0]:.3g} → {self.loss[-1]:.3g}")


def ownership(k: int = 3, *, c0: float = 1.0, D: float = 16.0, d: int = 10, others: str = "opposite",
              mode: str = "population", n_samples: int = 4000, seed: int = 0, lr: float = 0.01,
              max_time: float = 30.0, every: int = 20, cos0: float | None = None) -> OwnershipRun:
    """Run one ownership experiment.

    Parameters
    ----------
    k : int
        Number of duplicate neurons (≥ 2).
    c0 : float
        Total initial coefficient (each neuron has c0/k).
    D : float
        Favorable ratio a/|w| of neuron 0 (> 0; > 1 for a favorable gauge); the others get 1/D or 1.
    d : int
        Input dimension.
    others : {"opposite", "balanced"}
    mode : {"population", "finite"}
        Exact population gradient descent, or full-batch gradient descent on ``n_samples``
        samples drawn with ``seed``.
    lr, max_time, every : float, float, int
        Step, flow-time horizon and snapshot spacing (updates).

    Returns
    -------
    OwnershipRun
    """
    V.choice("mode", mode, MODES)
    student, p0, teacher = duplicate_start(k, c0=c0, D=D, d=d, others=others, cos0=cos0)
    lr = V.real("lr", lr, positive=True)
    max_time = V.real("max_time", max_time, positive=True)
    every = V.positive_int("every", every)
    nmax = int(np.ceil(max_time / lr * (1 + 1e-12)))
    others_idx = list(range(1, k))
    data: dict = {}

    def recorder(st, p, te, n, t, loss):
        dec = decompose(st, p, te)
        rec = {"c": dec.c.copy(), "cos": alignment(p, te)[:, 0].copy(),
               "contribution": contributions(st, p), "others": group_contribution(st, p, others_idx),
               "pop_loss": dec.loss, "reaction": dec.dissipation_reaction,
               "transport": dec.dissipation_transport}
        if "X" in data:
            de = decompose_empirical(st, p, data["X"], data["y"])
            rec.update(emp_loss=de.loss, emp_reaction=de.dissipation_reaction,
                       emp_transport=de.dissipation_transport)
        return rec

    sched = Schedule(every=every, early=())
    settings = dict(k=k, c0=c0, D=D, d=d, others=others, mode=mode, lr=lr, max_time=max_time,
                    every=every, cos0=float(1.0 / np.sqrt(d) if cos0 is None else cos0))
    if mode == "population":
        tr = train(student, p0, teacher, method="gd", lr=lr, max_updates=nmax, schedule=sched,
                   recorder=recorder)
    else:
        n_samples = V.positive_int("n_samples", n_samples)
        seed = V.nonneg_int("seed", seed)
        X, y = draw(teacher, n_samples, seed)
        data["X"], data["y"] = X, y
        tr = train_finite(student, p0, teacher, X=X, y=y, seed=seed, method="gd", lr=lr,
                          max_updates=nmax, schedule=sched, recorder=recorder, population=False)
        settings.update(n_samples=n_samples, seed=seed)
    R = tr.records

    def col(key):
        return np.array([r[key] for r in R])

    c = col("c")
    final = c[-1]
    owner = int(np.argmax(final))
    oth = np.max(final[1:])
    ratio = float(final[0] / oth) if oth > 0 else np.inf
    ynorm = float(np.sqrt(teacher.second_moment))
    fo = float(R[-1]["others"])
    return OwnershipRun(
        mode=mode, k=k, c0=c0, D=D, d=d, others=others, settings=settings,
        t=np.asarray(tr.snap_t), n=np.asarray(tr.snap_n), c=c, cos=col("cos"),
        contribution=col("contribution"), others_contribution=col("others"), loss=col("pop_loss"),
        dissipation_reaction=col("reaction"), dissipation_transport=col("transport"),
        owner=owner, selected=owner == 0, selection_ratio=ratio, final_others=fo,
        final_others_rel=fo / ynorm, status=tr.status,
        empirical_loss=col("emp_loss") if mode == "finite" else None,
        empirical_reaction=col("emp_reaction") if mode == "finite" else None,
        empirical_transport=col("emp_transport") if mode == "finite" else None,
        trajectory=tr)
