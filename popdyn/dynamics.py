"""Integrators for population gradient dynamics (docs/design.md §4).

Both integrators follow the preconditioned flow

    dθ/dt = −κ · P ∇L(θ),   κ = 1 ("standard") or m ("mean_field": parameter-space lr = m·Δt),

with P the per-group rate multipliers (head ``a``, biases ``b``, intercept ``c``; ``W`` has 1).

* ``method="gd"``: fixed-step gradient descent θ ← θ − Δt κ P ∇L, Δt = ``lr``; the update count
  n and the flow time t = n·Δt are both recorded.
* ``method="armijo"``: persistent Armijo backtracking, Kumar (arXiv 2609.39408) App. A eq. (19)
  (:class:`PersistentArmijo`).  With the trial direction F = −κ P ∇L (so that the trial is
  θ + hF, h on the flow clock) a trial is accepted iff

      MSE(θ + hF) ≤ MSE(θ) − 10⁻⁴ h ⟨∇MSE(θ), −F⟩ + 10⁻¹³ max{1, |MSE(θ)|},   MSE = 2L,

  which for the paper's student (:meth:`popdyn.Student.preset` ``"paper_relu"``: κ = m, P = I)
  is eq. (19) with F = −(m/2)∇MSE and ⟨∇MSE, −F⟩ = (2/m)‖F‖².  Otherwise h is halved, at most
  ``max_halvings`` (40) times per update; the accepted h persists to later updates and never
  increases (start ``h0`` = 0.05).  A rejected trial costs one evaluation, an accepted one
  none beyond its own (its gradient is the next update's).  A run whose line search fails
  ``max_halvings`` times, or whose accepted state has a non-finite gradient, is a recorded
  failure: status ``diverged``, ``info["failure"]`` saying which, the last accepted state kept.
  Per update the accepted step, the number of halvings and t = Σ h are recorded
  (:attr:`Trajectory.steps`, :attr:`Trajectory.backtracks`, :attr:`Trajectory.t`).
* ``method="flow"``: an adaptive Euler approximation of gradient flow with step-doubling error
  control.  From θ₀ one full Euler step of size h and two half steps are taken; the local error
  estimate is e = ‖θ_full − θ_half‖₂, and the step is accepted when e ≤ ε·‖θ_half − θ₀‖₂, i.e.
  when the error is at most a fraction ε of the step's own displacement (scale-free, so it works
  at small initialization).  The accepted state is the two-half-step result; the next step is
  h·clip(0.9·(ε‖Δ‖/e)^{1/2}, 0.2, 2) within [h_min, h_max].  Steps forced at h_min are counted.
  Each accepted step is one update (n += 1) and advances t by h.

Every method is a :class:`Stepper` over one frozen :class:`Problem` (the template of
``scipy.integrate.OdeSolver``): ``step()`` owns n, t, the status and the counters, and
:class:`FixedStepGD`, :class:`AdaptiveEuler`, :class:`FusedGD` (relu / leaky-relu students: the
updates between two snapshots inside numba) and the finite-sample SGD of :mod:`popdyn.finite`
implement ``_step_impl``; :data:`METHODS` maps each ``method`` name to its stepper class, which
declares its options and their defaults (``OPTIONS``) and starts itself (``Stepper.start``).
The options of a run are one frozen :class:`TrainSettings` record (built by :func:`train` from
its keywords, or from a configuration ``[train]`` table by :meth:`TrainSettings.from_config`).

Stopping rules: normalized loss 2L/V_Y ≤ ``loss_target`` → ``converged``; ``max_updates`` or
``max_time`` reached → ``horizon``; a non-finite state or a loss above ``explode`` × max(L₀, V_Y)
→ ``diverged``, keeping the last finite state.  The loss is kept at every update; parameter
snapshots follow a :class:`Schedule` (every N updates, denser early, or the named schedules of
the paper: :meth:`Schedule.named`).  A schedule with a plateau rule
(:class:`popdyn.plateau.PlateauRule`) has the rule evaluated at every update while training,
and the state at its endpoint E and at E + 1 snapshotted (Kumar App. A: "the exact endpoint
state ... the endpoint and its successor are retained").
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Mapping

import numpy as np

from ._kernels import fused as _fk
from ._moments import Moments, teacher_tables
from ._notice import compile_notice
from ._typing import AnyStudent, P
from . import _validate as V
from .families import capability
from .family import family_of
from .models import ParamArrays, Params, Student
from .plateau import BASELINE_RULE, Plateau, PlateauRule, PlateauWatch
from .teachers import Teacher
from .threads import kernel_blas

STATUSES = ("converged", "horizon", "diverged")
#: the named schedules of :meth:`Schedule.named`
SCHEDULE_KINDS = ("baseline", "a2")


@dataclass(frozen=True)
class Schedule:
    """Snapshot schedule: every ``every`` updates, plus the ``early`` update counts, plus every
    ``step`` updates up to ``until`` for each pair of ``dense``, plus -- with a plateau rule
    ``plateau`` (:class:`popdyn.plateau.PlateauRule`) -- the rule's endpoint E and its successor
    E + 1, found while training (:func:`train`).

    The initial state (n = 0) and the final state are always recorded.  ``offset`` shifts the
    update count: a run continued from update n₀ (a segment of a sweep run) uses
    ``replace(schedule, offset=n₀)``, so that its local update n is update n₀ + n of the
    schedule.  The paper's schedules are :meth:`named`.
    """

    every: int = 100
    early: tuple = (1, 2, 5, 10, 20, 50)
    dense: tuple = ()
    plateau: PlateauRule | None = None
    offset: int = 0

    def __post_init__(self):
        V.positive_int("every", self.every)
        for e in self.early:
            V.nonneg_int("early", e)
        dense = []
        for pair in self.dense:
            try:
                until, step = pair
            except (TypeError, ValueError):
                raise TypeError(f"`dense` must hold (until, step) pairs, got {pair!r}") from None
            dense.append((V.positive_int("dense until", until), V.positive_int("dense step", step)))
        object.__setattr__(self, "dense", tuple(dense))
        if self.plateau is not None and not isinstance(self.plateau, PlateauRule):
            raise TypeError("`plateau` must be a popdyn.plateau.PlateauRule or None, got "
                            f"{type(self.plateau).__name__}")
        V.nonneg_int("offset", self.offset)

    def __contains__(self, n: int) -> bool:
        if n == 0:
            return True
        g = n + self.offset
        return (g % self.every == 0 or g in self.early
                or any(g <= u and g % s == 0 for u, s in self.dense))

    def next_after(self, n: int) -> int:
        """The first scheduled update count after ``n`` (not counting plateau events)."""
        g = n + self.offset
        cand = [(g // self.every + 1) * self.every] + [e for e in self.early if e > g]
        for u, s in self.dense:
            k = (g // s + 1) * s
            if k <= u:
                cand.append(k)
        return min(cand) - self.offset

    @classmethod
    def named(cls, kind: str) -> "Schedule":
        """The diagnostic schedules of Kumar (arXiv 2609.39408):

        * ``"baseline"`` (App. A): every 100 updates, plus the exact endpoint E of the baseline
          plateau rule (:data:`popdyn.plateau.BASELINE_RULE`) and its successor E + 1;
        * ``"a2"`` (App. A.2): every 10 updates through 1,000, every 50 through 3,000, every 100
          thereafter, plus E and E + 1 of the same rule.
        """
        V.choice("kind", kind, SCHEDULE_KINDS)
        if kind == "baseline":
            return cls(every=100, early=(), plateau=BASELINE_RULE)
        return cls(every=100, early=(), dense=((1000, 10), (3000, 50)), plateau=BASELINE_RULE)


@dataclass
class Trajectory(Generic[P]):
    """A training run: the loss at every update and parameter snapshots on a schedule.

    Attributes
    ----------
    n, t, loss : arrays
        Update count, flow time and L = ½E[(f − y)²] after every update (index 0 = initial).
        For ``method="armijo"`` t is the cumulative step Σ h (the paper's force time; the raw
        GD time Σ η is (m/2)·t for the paper's student, η = m h / 2).
    snap_n, snap_t : arrays
        Update count and flow time of each snapshot.
    snapshots : dict of arrays
        ``a`` (S, m), ``W`` (S, m, d), ``b`` (S, m), ``c`` (S,).
    status : str
        ``converged``, ``horizon`` or ``diverged``.
    final : Params
        The last finite state (for ``diverged`` runs: the state before the failure).
    variance : float
        V_Y of the teacher, so ``normalized_loss`` = 2·loss/V_Y.
    records : list of dict
        Whatever the ``recorder`` returned at each snapshot (diagnostics), aligned with snap_n.
    info : dict
        Settings, counters (gradient evaluations, forced steps) and wall time; for
        ``method="armijo"`` also the persistent step ``h`` after the run and ``failure`` (None,
        ``"line_search"`` or ``"nonfinite"``); with a plateau rule, ``plateau``.
    steps, backtracks : arrays or None
        ``method="armijo"``: the accepted step h and the number of halvings of every update
        (aligned with ``n[1:]``); None for the other methods.
    plateau : Plateau or None
        With a schedule's plateau rule: the rule's prefix of this run (units of the rule).
    """

    n: np.ndarray
    t: np.ndarray
    loss: np.ndarray
    snap_n: np.ndarray
    snap_t: np.ndarray
    snapshots: dict
    status: str
    final: P
    variance: float
    records: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    #: the parameter container of the snapshots (the student family's ``params_type``)
    # (ignore[assignment]: a default of a generic field; Params is the ridge family's container)
    params_type: type[P] = Params  # type: ignore[assignment]
    steps: np.ndarray | None = None
    backtracks: np.ndarray | None = None
    plateau: Plateau | None = None

    @property
    def normalized_loss(self) -> np.ndarray:
        return 2.0 * self.loss / self.variance

    @property
    def mse(self) -> np.ndarray:
        """The full MSE E[(f − y)²] = 2L after every update (Kumar eq. (2): the paper's loss)."""
        return 2.0 * self.loss

    def snapshot(self, i: int) -> P:
        """The state of snapshot ``i`` (a ``params_type`` built from the snapshot fields)."""
        s = self.snapshots
        return self.params_type(**{k: (float(v[i]) if k == "c" else v[i]) for k, v in s.items()})

    def __len__(self) -> int:
        return self.snap_n.shape[0]


class _Recorder:
    """Snapshots (the parameter fields ``fields``, copied) and recorder output on a schedule."""

    def __init__(self, schedule, recorder, student, teacher, fields=("a", "W", "b", "c")):
        self.schedule, self.recorder, self.student, self.teacher = schedule, recorder, student, teacher
        self.fields = fields
        self.n, self.t, self.records = [], [], []
        self.snaps = {f: [] for f in fields}
        #: set by a stepper that holds the moments of its current state (FusedGD): a callable
        #: returning them, passed on to a recorder that takes them (``takes_moments``)
        self.moments = None

    def add(self, n, t, p, L, moments=None):
        """Snapshot state ``p`` at update ``n`` (once per n); ``moments``: the value moments of
        ``p`` when they are not those of :attr:`moments` (a state before the current one)."""
        if self.n and self.n[-1] == n:
            return
        self.n.append(n); self.t.append(t)
        for f in self.fields:
            v = getattr(p, f)
            self.snaps[f].append(v.copy() if isinstance(v, np.ndarray) else v)
        if self.recorder is not None:
            kw = {}
            if self.moments is not None and getattr(self.recorder, "takes_moments", False):
                kw["moments"] = self.moments() if moments is None else moments
            self.records.append(self.recorder(self.student, p, self.teacher, n=n, t=t, loss=L,
                                              **kw))

    def arrays(self):
        return (np.array(self.n, dtype=np.int64), np.array(self.t),
                {f: np.array(v) for f, v in self.snaps.items()})


#: the options of :func:`train` that every method takes (:class:`TrainSettings`)
COMMON_OPTIONS = ("method", "lr", "rates", "head_lr_mult", "bias_lr_mult", "intercept_lr_mult",
                  "max_updates", "max_time", "loss_target", "explode", "rtol")


@dataclass(frozen=True)
class TrainSettings:
    """The validated options of one :func:`train` run (docs/design.md §4), without the run's
    schedule, recorder and plateau watch.

    Common to every method: ``method``, ``lr`` (the GD step Δt on the flow clock), the rate
    multipliers ``rates`` (as sorted (field, value) pairs, or None) and ``head_lr_mult`` /
    ``bias_lr_mult`` / ``intercept_lr_mult``, the horizon ``max_updates`` / ``max_time``, the
    stopping rules ``loss_target`` / ``explode`` and the series tolerance ``rtol``
    (:data:`COMMON_OPTIONS`).  Per method (the ``OPTIONS`` of its stepper in :data:`METHODS`):
    ``eps``, ``h0``, ``h_min``, ``h_max`` of ``"flow"`` (:class:`AdaptiveEuler`), ``h0`` and
    ``max_halvings`` of ``"armijo"`` (Kumar (arXiv 2609.39408) App. A eq. (19),
    :class:`PersistentArmijo`); ``"gd"`` has none.  The record holds every option (a method
    ignores the others), so that :func:`train`'s ``info`` and a resumed run see the same values.

    Construction validates the values as :func:`train` does (one error naming the option);
    :meth:`of` and :meth:`from_config` also refuse an option that the method does not take.
    The rate groups are the student family's and are checked by :func:`train`
    (:meth:`popdyn.families.BoundFamily.multipliers`).
    """

    method: str = "flow"
    lr: float = 0.05
    #: given as a mapping (or pairs), kept as the sorted (field, value) pairs
    rates: tuple | Mapping[str, float] | None = None
    head_lr_mult: float | None = None
    bias_lr_mult: float | None = None
    intercept_lr_mult: float | None = None
    max_updates: int = 100_000
    max_time: float = np.inf
    loss_target: float = 0.0
    explode: float = 1e6
    rtol: float = 1e-10
    eps: float = 0.05
    h0: float = 0.05
    h_min: float = 1e-6
    h_max: float = 10.0
    max_halvings: int = 40

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        V.choice("method", self.method, METHODS)
        put("lr", V.real("lr", self.lr, positive=True))
        put("eps", V.real("eps", self.eps, positive=True))
        put("h0", V.real("h0", self.h0, positive=True))
        put("h_min", V.real("h_min", self.h_min, positive=True))
        put("h_max", V.real("h_max", self.h_max, positive=True, allow_inf=True))
        put("max_halvings", V.nonneg_int("max_halvings", self.max_halvings))
        # the persistent Armijo step only halves from h0: [h_min, h_max] bound the flow's step
        if self.method != "armijo" and not self.h_min <= self.h0 <= self.h_max:
            raise ValueError(f"need 0 < `h_min` <= `h0` <= `h_max`, got {self.h_min}, "
                             f"{self.h0}, {self.h_max}")
        put("max_updates", V.nonneg_int("max_updates", self.max_updates))
        put("max_time", V.real("max_time", self.max_time, positive=True, allow_inf=True))
        put("loss_target", V.real("loss_target", self.loss_target, nonnegative=True))
        put("explode", V.real("explode", self.explode, positive=True))
        if self.rates is not None:
            put("rates", tuple(sorted(dict(self.rates).items())))

    @classmethod
    def options(cls, method: str) -> tuple:
        """The option names ``method`` takes: :data:`COMMON_OPTIONS` and its stepper's."""
        V.choice("method", method, METHODS)
        return COMMON_OPTIONS + tuple(METHODS[method].OPTIONS)

    @classmethod
    def of(cls, method: str = "flow", **options) -> "TrainSettings":
        """The settings of ``method`` from the options it takes (the others at their
        defaults); an option of another method, or no method's, is one error naming it and
        the options of ``method``."""
        valid = cls.options(method)
        for name in options:
            if name not in valid:
                known = COMMON_OPTIONS + tuple(o for M in METHODS.values() for o in M.OPTIONS)
                what = (f"does not apply to method {method!r}" if name in known
                        else "is not a training option")
                raise ValueError(f"`{name}` {what}; the options of method {method!r} are "
                                 f"{sorted(valid)}")
        return cls(method=method, **options)

    @classmethod
    def from_config(cls, table: dict) -> "TrainSettings":
        """The settings of a configuration ``[train]`` table (:mod:`popdyn.config`; not the
        ``method = "paper_euler"`` protocol of :func:`popdyn.swiglu.train_paper`), strict as
        :meth:`of`; ``method`` defaults to ``"flow"``."""
        table = dict(table)
        return cls.of(table.pop("method", "flow"), **table)

    def kwargs(self) -> dict:
        """Every keyword of :func:`train` but ``schedule``, ``recorder`` and ``plateau_watch``,
        with this record's values."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["rates"] = None if self.rates is None else dict(self.rates)
        return out


def _schedule(schedule) -> Schedule:
    schedule = Schedule() if schedule is None else schedule
    if not isinstance(schedule, Schedule):
        raise TypeError("`schedule` must be a popdyn.Schedule")
    return schedule


@dataclass(frozen=True, eq=False)
class Problem:
    """One training run as a :class:`Stepper` sees it (the role of the problem in
    ``scipy.integrate.OdeSolver``).

    ``evaluate(p) -> (L, ∇L or None, p′)`` (p′ = p, or p with its intercept refitted; a
    stochastic method may return no gradient), ``axpy(p, g, h) -> p − h·κ·(rates ∘ g)`` with h
    on the flow clock, ``diff_norm(p, q)`` the distance of the step-doubling rule; the start
    ``p0``, the teacher variance ``VY`` and the stopping rules (module docstring).
    """

    evaluate: Callable[[Any], tuple[float, Any, Any]]
    axpy: Callable[[Any, Any, float], Any] | None
    diff_norm: Callable[[Any, Any], float]
    p0: ParamArrays
    VY: float
    lr: float
    max_updates: int
    max_time: float
    loss_target: float
    explode: float
    schedule: Schedule


class Stepper:
    """The template of every training loop (``scipy.integrate.OdeSolver``'s): :meth:`step`
    owns the update count n, the flow time t, the status and the counters; a method implements
    :meth:`_step_impl` -- up to ``nmax`` updates -- by default a loop over :meth:`_propose`
    (one proposal (q, Δt), or None) whose proposals are evaluated, checked and accepted here.

    Subclasses: :class:`FixedStepGD`, :class:`AdaptiveEuler`, :class:`FusedGD` (the whole
    segment between two snapshots inside numba) and ``popdyn.finite``'s minibatch SGD / noisy SGD.
    Status: ``running`` until ``converged``, ``horizon`` or ``diverged``.
    """

    #: the per-method options of :class:`TrainSettings` this method takes, with their defaults
    OPTIONS: dict = {}
    #: the name of the method in :data:`METHODS` (:meth:`state`)
    METHOD = ""

    @classmethod
    def start(cls, problem: Problem, recorder, settings: "TrainSettings",
              context: "_Context") -> "Stepper":
        """The stepper of ``settings.method`` at the start of ``problem`` (:func:`train`)."""
        return cls(problem, recorder)

    def report(self) -> tuple[dict, dict]:
        """What the method adds to the trajectory: (``info`` entries, :class:`Trajectory`
        fields)."""
        return {}, {}

    def state(self) -> dict:
        """Everything a run continues from (copies): method, update count n, flow time t,
        status, loss L, state p and its gradient g, the counters, the divergence bound, and
        the method's own state (its step; the fused step's moments).  Not the history (losses,
        snapshots) nor a plateau watch, which the caller keeps."""
        out = {"method": self.METHOD, "n": self.n, "t": self.t, "status": self.status,
               "L": self.L, "p": self.p.copy(), "g": None if self.g is None else self.g.copy(),
               "grad_evals": self.grad_evals, "forced_steps": self.forced_steps,
               "bound": self.bound}
        out.update(self._own_state())
        return out

    def _own_state(self) -> dict:
        return {}

    @classmethod
    def _class_for(cls, context) -> type["Stepper"]:
        return cls

    @classmethod
    def from_state(cls, problem: Problem, recorder, settings: "TrainSettings",
                   context: "_Context", state: dict) -> "Stepper":
        """The stepper continuing ``state`` (:meth:`state`) on ``problem``; no evaluation and
        no snapshot at the restored state (the run it came from recorded it)."""
        klass = cls._class_for(context)
        run = klass.__new__(klass)
        run.problem, run.rec, run.watch, run._units = problem, recorder, None, None
        run.n, run.t, run.status, run.L = state["n"], state["t"], state["status"], state["L"]
        run.p = state["p"].copy()
        run.g = None if state["g"] is None else state["g"].copy()
        run.grad_evals, run.forced_steps = state["grad_evals"], state["forced_steps"]
        run.bound = state["bound"]
        run.losses, run.ns, run.ts = [run.L], [run.n], [run.t]
        run._restore(state, settings, context)
        return run

    def _restore(self, state, settings, context):
        pass

    def __init__(self, problem: Problem, recorder):
        pr = self.problem = problem
        self.rec = recorder
        #: a :class:`popdyn.plateau.PlateauWatch` fed the loss of every update (:meth:`watch`)
        self.watch: PlateauWatch | None = None
        self._units: Callable[[float], float] | None = None
        self.L, self.g, self.p = pr.evaluate(pr.p0)
        self.n, self.t, self.status = 0, 0.0, "running"
        self.grad_evals, self.forced_steps = 1, 0
        self.losses, self.ns, self.ts = [self.L], [0], [0.0]
        self.bound = pr.explode * max(self.L, pr.VY)
        recorder.add(0, 0.0, self.p, self.L)
        if self._converged(self.L):
            self.status = "converged"
        elif not (pr.max_updates > 0 and pr.max_time > 0):
            self.status = "horizon"

    def _converged(self, L) -> bool:
        lt = self.problem.loss_target
        return lt > 0 and 2 * L / self.problem.VY <= lt

    def attach(self, watch: PlateauWatch, units):
        """Evaluate ``watch``'s plateau rule at every update, ``units(L)`` the loss it reads;
        until the rule fails, updates are taken one at a time and the state before each is
        kept, so that the endpoint E and E + 1 are snapshotted exactly.  A fresh watch is fed
        the initial loss; a watch continued from an earlier run already holds it."""
        self.watch, self._units = watch, units
        if watch.count == 0:
            watch.feed(units(self.L))

    def _state_moments(self):
        """The value moments of the current state, when the stepper keeps them (else None)."""
        return self.rec.moments() if self.rec.moments is not None else None

    def step(self) -> str:
        """Updates up to the next snapshot count (or a stop); returns the status."""
        if self.status != "running":
            raise RuntimeError(f"step() on a finished run (status {self.status!r})")
        pr, n = self.problem, self.n
        sch = pr.schedule
        w = self.watch
        if w is not None and not w.done:
            assert self._units is not None           # set with the watch (attach)
            prev = (n, self.t, self.p.copy(), self.L, self._state_moments())
            self._step_impl(1)
            if self.n > n and w.feed(self._units(self.L)):
                self.rec.add(*prev[:4], moments=prev[4])      # E: the state before the failure
                self.rec.add(self.n, self.t, self.p, self.L)  # E + 1
        else:
            nxt = sch.next_after(n)
            self._step_impl(min(nxt, pr.max_updates) - n)
        if self.status == "running":
            if self.n in sch:
                self.rec.add(self.n, self.t, self.p, self.L)
            if not (self.n < pr.max_updates and self.t < pr.max_time):
                self.status = "horizon"
        return self.status

    def run(self) -> "Stepper":
        """Step until the run stops; the last state is always recorded."""
        while self.status == "running":
            self.step()
        self.rec.add(self.n, self.t, self.p, self.L)
        return self

    def _step_impl(self, nmax: int):
        pr = self.problem
        for _ in range(nmax):
            if not self.t < pr.max_time:
                return
            prop = self._propose()
            if prop is None or not prop[0].is_finite():
                self.status = "diverged"
                return
            Lq, gq, q = pr.evaluate(prop[0])
            self.grad_evals += 1
            if not (np.isfinite(Lq) and Lq <= self.bound and (gq is None or gq.is_finite())):
                self.status = "diverged"
                return
            self.p, self.L, self.g = q, Lq, gq
            self.n += 1
            self.t += prop[1]
            self.losses.append(Lq); self.ns.append(self.n); self.ts.append(self.t)
            if self._converged(Lq):
                self.status = "converged"
                return

    def _propose(self):
        raise NotImplementedError


class FixedStepGD(Stepper):
    """θ ← θ − Δt κ P ∇L with Δt = ``lr`` (method ``"gd"``); :class:`FusedGD` where the fused
    kernels apply."""

    METHOD = "gd"

    @classmethod
    def start(cls, problem, recorder, settings, context):
        if context.fused is not None:
            return FusedGD(problem, recorder, context.fused, context.rates, context.kappa)
        return cls(problem, recorder)

    @classmethod
    def _class_for(cls, context):
        return FusedGD if context.fused is not None else cls

    def _propose(self):
        lr = self.problem.lr
        return self.problem.axpy(self.p, self.g, lr), lr


class PersistentArmijo(Stepper):
    """Persistent Armijo backtracking (method ``"armijo"``; Kumar (arXiv 2609.39408) App. A
    eq. (19); module docstring).

    ``slope(g)`` is ⟨∇MSE, −F⟩ = 2⟨∇L, κP∇L⟩ at gradient g (the paper's (2/m)‖F‖²).  With a
    fused evaluator the value moments of the last *accepted* state are what the recorder gets.
    """

    #: sufficient-decrease constant and the relative round-off allowance of eq. (19)
    C1, TOL = 1e-4, 1e-13
    #: the initial force step h (the paper's 0.05) and the halvings allowed per update (40)
    OPTIONS = {"h0": 0.05, "max_halvings": 40}
    METHOD = "armijo"

    def _own_state(self):
        return {"h": self.h, "failure": self.failure, "values":
                None if self._values is None else tuple(v.copy() for v in self._values)}

    def _restore(self, state, settings, context):
        self.h, self.max_halvings, self.slope = state["h"], settings.max_halvings, context.slope()
        self.steps, self.backtracks, self.failure = [], [], state["failure"]
        self._fz, self._values = context.fused, state["values"]
        if self._fz is not None:
            self.rec.moments = self._moments
            self._fz.values = state["values"]

    @classmethod
    def start(cls, problem, recorder, settings, context):
        return cls(problem, recorder, h0=settings.h0, max_halvings=settings.max_halvings,
                   slope=context.slope(), fused=context.fused)

    def report(self):
        return ({"max_halvings": self.max_halvings, "h": self.h, "failure": self.failure},
                {"steps": np.array(self.steps, dtype=np.float64),
                 "backtracks": np.array(self.backtracks, dtype=np.int64)})

    def __init__(self, problem, recorder, *, h0, max_halvings, slope, fused=None):
        self.h, self.max_halvings, self.slope = h0, max_halvings, slope
        self.steps, self.backtracks, self.failure = [], [], None
        self._fz, self._values = fused, None
        if fused is not None:
            recorder.moments = self._moments
        super().__init__(problem, recorder)
        if fused is not None:
            self._values = fused.values

    def _moments(self):
        """The value moments of the last accepted state (None when its step was tiled)."""
        from ._moments import Moments
        if self._fz.tile:
            return None
        C, B, mu0, Ct = self._values if self._values is not None else self._fz.values
        return Moments(C=C, mu0=mu0, Ct=Ct, B=B, need="values")

    def _step_impl(self, nmax):
        pr, C1, TOL = self.problem, self.C1, self.TOL
        for _ in range(nmax):
            if not self.t < pr.max_time:
                return
            p, g = self.p, self.g
            mse = 2.0 * self.L                     # the paper's loss, eq. (2)
            slope = self.slope(g)
            tol = TOL * max(1.0, abs(mse))
            h, k = self.h, 0
            while True:
                q = pr.axpy(p, g, h)
                if q.is_finite():
                    Lq, gq, q = pr.evaluate(q)
                    self.grad_evals += 1
                    if np.isfinite(Lq) and 2.0 * Lq <= mse - C1 * h * slope + tol:
                        break
                if k == self.max_halvings:
                    self.status, self.failure = "diverged", "line_search"
                    return
                h *= 0.5
                k += 1
            if gq is not None and not gq.is_finite():
                self.status, self.failure = "diverged", "nonfinite"
                return
            self.h = h
            self.p, self.L, self.g = q, Lq, gq
            if self._fz is not None:
                self._values = self._fz.values
            self.n += 1
            self.t += h
            self.losses.append(Lq); self.ns.append(self.n); self.ts.append(self.t)
            self.steps.append(h); self.backtracks.append(k)
            if self._converged(Lq):
                self.status = "converged"
                return


class AdaptiveEuler(Stepper):
    """Adaptive Euler with step-doubling error control (method ``"flow"``, module docstring)."""

    #: tolerance ε, initial step and step bounds (0 < h_min ≤ h0 ≤ h_max)
    OPTIONS = {"eps": 0.05, "h0": 0.05, "h_min": 1e-6, "h_max": 10.0}
    METHOD = "flow"

    def _own_state(self):
        return {"h": self.h}

    def _restore(self, state, settings, context):
        self.eps, self.h_min, self.h_max = settings.eps, settings.h_min, settings.h_max
        self.h = state["h"]

    @classmethod
    def start(cls, problem, recorder, settings, context):
        return cls(problem, recorder, eps=settings.eps, h0=settings.h0, h_min=settings.h_min,
                   h_max=settings.h_max)

    def __init__(self, problem, recorder, *, eps, h0, h_min, h_max):
        self.eps, self.h, self.h_min, self.h_max = eps, h0, h_min, h_max
        super().__init__(problem, recorder)

    def _propose(self):
        pr, p, g = self.problem, self.p, self.g
        eps, h_min, h_max = self.eps, self.h_min, self.h_max
        h = min(self.h, h_max)
        while True:
            full = pr.axpy(p, g, h)
            mid = pr.axpy(p, g, 0.5 * h)
            q = None
            if mid.is_finite() and full.is_finite():
                _, gm, mid = pr.evaluate(mid)
                self.grad_evals += 1
                q = pr.axpy(mid, gm, 0.5 * h)
            if q is None or not q.is_finite():
                if h <= h_min:       # non-finite even at the smallest step: diverged
                    self.h = h
                    return None
                h = max(0.2 * h, h_min)
                continue
            disp = pr.diff_norm(q, p)
            err = pr.diff_norm(q, full)
            tol = eps * disp
            if err <= tol or h <= h_min:
                if err > tol:
                    self.forced_steps += 1
                fac = 2.0 if err == 0 else min(2.0, max(0.2, 0.9 * np.sqrt(tol / err)))
                self.h = min(max(h * fac, h_min), h_max)
                return q, h
            h = max(h * min(0.9, max(0.2, 0.9 * np.sqrt(tol / err))), h_min)


#: use the fused kernels (:mod:`popdyn._kernels.fused`) where they apply (tests switch it off to
#: compare with the general path)
_FUSED = True


class _Fused:
    """Loss and gradient of a PL student (relu, leaky relu) against an additive-link or PL-network
    teacher in one compiled call (:func:`popdyn._kernels.fused.pl_loss_grad`), and the tables of
    :class:`FusedGD` (fixed-step GD between snapshots inside numba, :func:`~popdyn._kernels.fused.pl_gd`).  The tables are
    the engine's (:func:`popdyn._moments.teacher_tables`) and the kernel's moments and assembly
    are those of :func:`popdyn.objective.loss_and_grad`: the results agree bit for bit."""

    def __init__(self, student, teacher, tables):
        # pl_gd is looked up at each call (benchmarks/bench_sweep.py wraps it)
        self._fk = _fk
        self.student, self.teacher, self.tables = student, teacher, tables
        self._kernel = _fk.pl_loss_grad_values
        self.values = None       # (C, B, μ0, Ct) of the state last evaluated
        self.p, self.q = float(student.act.p), float(student.act.q)
        self.s = float(student.s)
        # the records of pl_gd: the teacher's tables and the student's constants
        self.record = _fk.Tables(*tables)
        self.unit = _fk.Unit(self.p, self.q, self.s, bool(student.bias), bool(student.intercept))

    @classmethod
    def make(cls, student, teacher):
        """A :class:`_Fused` for (student, teacher), or None when the pair is not covered."""
        if (capability(student.family, "fused_kernel") is not cls
                or not isinstance(teacher, Teacher)):
            return None
        tables = teacher_tables(teacher)
        if tables is None:
            return None
        return cls(student, teacher, tables)

    @property
    def tile(self) -> int:
        """The tile of the evaluation (:func:`popdyn._kernels.fused.tile_for`): 0 for the
        whole-matrix kernels, else the block size of the tiled kernels (students with more
        units than :data:`popdyn._kernels.fused.TILE`), which form no m×m moment matrix."""
        return self._fk.tile_for(self.student.m)

    def moments(self) -> Moments | None:
        """The value moments (C, B, μ0, Ct) of the state last evaluated or accepted, as the step
        computed them: the same bits as ``moments(..., need="values")``, which the
        diagnostics at a snapshot reuse instead of recomputing.  None when the step was
        evaluated tile by tile (:attr:`tile`; C and B were never formed): the diagnostics
        then compute the moments of the state themselves."""
        if self.values is None:
            return None
        C, B, mu0, Ct = self.values
        return Moments(C=C, mu0=mu0, Ct=Ct, B=B, need="values")

    def evaluate(self, q: Params):
        st = self.student
        ga, gW, gb = np.empty(st.m), np.empty((st.m, st.d)), np.empty(st.m)
        with kernel_blas(st.m):
            L, gc, *values = self._kernel(self.p, self.q, self.s, q.a, q.W, q.b, float(q.c),
                                          st.bias, st.intercept, *self.tables, ga, gW, gb)
        self.values = None if values[0] is None else values
        return float(L), Params(ga, gW, gb, float(gc)), q


#: the entry moments passed to a tiled :func:`popdyn._kernels.fused.pl_gd` (not read)
_NO_VALUES = (np.empty((0, 0)), np.empty((0, 0)), np.empty(0), np.empty((0, 0)))


class FusedGD(Stepper):
    """Fixed-step GD of a PL student with the updates between two snapshots in one call of the
    fused kernel (:func:`popdyn._kernels.fused.pl_gd`, the same rules as :class:`FixedStepGD`).

    A student with more units than :data:`popdyn._kernels.fused.TILE` is stepped tile by tile
    (O(m·d + TILE²) memory instead of ~19 m×m arrays; agreement with the whole-matrix step to
    rounding): no step moments are kept then, and the diagnostics at a snapshot compute the
    moments of the state themselves."""

    def __init__(self, problem, recorder, fused: _Fused, rates: dict, kappa: float):
        recorder.moments = fused.moments    # the diagnostics at a snapshot reuse the step's
        super().__init__(problem, recorder)
        self.fz, h = fused, problem.lr * kappa
        self.h = (h, h * rates["a"], h * rates["b"], h * rates["c"])
        g, p = self.g, self.p
        self.p = Params(p.a.copy(), p.W.copy(), p.b.copy(), p.c)      # updated in place
        self.g = Params(g.a.copy(), g.W.copy(), g.b.copy(), g.c)

    METHOD = "gd"

    def _own_state(self):
        v = self.fz.values
        return {"values": None if v is None else tuple(x.copy() for x in v)}

    def _restore(self, state, settings, context):
        self.fz = fz = context.fused
        self.rec.moments = fz.moments
        h = self.problem.lr * context.kappa
        r = context.rates
        self.h = (h, h * r["a"], h * r["b"], h * r["c"])
        fz.values = state["values"]

    def _step_impl(self, nmax):
        fz, pr, st = self.fz, self.problem, self.fz.student
        _fk = fz._fk
        p, g = self.p, self.g
        buf_l, buf_t = np.empty(nmax), np.empty(nmax)
        tile = fz.tile
        # tiled steps form no C, B: empty stand-ins for the entry moments (not read)
        values = fz.values if fz.values is not None else _NO_VALUES
        rule = _fk.GDRule(float(pr.lr), *map(float, self.h), float(pr.max_time),
                          float(self.bound), float(pr.VY), float(pr.loss_target))
        with kernel_blas(st.m):
            done, code, c, L, gc, t, *values = _fk.pl_gd(
                nmax, self.t, rule, fz.unit, fz.record, p.a, p.W, p.b, float(p.c), self.L,
                g.a, g.W, g.b, float(g.c), buf_l, buf_t, *values, tile)
        fz.values = None if tile else values
        self.grad_evals += done + (1 if code == _fk.DIVERGED else 0)
        self.losses.extend(buf_l[:done].tolist())
        self.ts.extend(buf_t[:done].tolist())
        self.ns.extend(range(self.n + 1, self.n + done + 1))
        self.n += done
        self.p, self.g, self.L, self.t = Params(p.a, p.W, p.b, c), Params(g.a, g.W, g.b, gc), L, t
        if code in (_fk.DIVERGED, _fk.DIVERGED_STEP):
            self.status = "diverged"
        elif code == _fk.CONVERGED:
            self.status = "converged"


def train(student: AnyStudent, params: P, teacher: Teacher, *, method: str = "flow",
          lr: float = 0.05, head_lr_mult: float | None = None,
          bias_lr_mult: float | None = None, intercept_lr_mult: float | None = None,
          rates: dict | None = None, eps: float = 0.05, h0: float = 0.05,
          h_min: float = 1e-6, h_max: float = 10.0, max_updates: int = 100_000,
          max_time: float = np.inf, loss_target: float = 0.0, explode: float = 1e6,
          schedule: Schedule | None = None, recorder: Callable[..., dict] | None = None,
          rtol: float = 1e-10,
          max_halvings: int = 40, plateau_watch: PlateauWatch | None = None) -> Trajectory[P]:
    """Train ``student`` from ``params`` on the population loss against ``teacher``.

    Parameters
    ----------
    method : {"flow", "gd", "armijo"}
        Adaptive Euler gradient flow, fixed-step gradient descent or persistent Armijo
        backtracking (Kumar (arXiv 2609.39408) eq. (19); module docstring), the steppers of
        :data:`METHODS`.
    lr : float
        GD step Δt on the flow clock (> 0); parameter-space rate is lr·κ·multiplier.
    rates : dict, optional
        Learning-rate multipliers (≥ 0, default 1) by parameter field, e.g. ``{"a": 2.0}``:
        the keys must be rate groups of the student's family
        (:attr:`popdyn.families.FamilySpec.rate_groups`; ``ValueError`` otherwise).
    head_lr_mult, bias_lr_mult, intercept_lr_mult : float, optional
        The multipliers of fields a, b and c (as ``rates``; refused for a family without that
        trained field, e.g. ``bias_lr_mult`` for SwiGLU students).
    eps, h0, h_min, h_max : float
        Flow tolerance ε (> 0), initial step and step bounds (0 < h_min ≤ h0 ≤ h_max).  For
        ``method="armijo"`` ``h0`` (> 0) is the initial force step h (the paper's 0.05) and
        h_min, h_max do not apply.
    max_halvings : int
        ``method="armijo"``: halvings allowed per update (≥ 0; the paper's 40).
    max_updates, max_time : horizon on the update and flow-time clocks.
    loss_target : float
        Stop with ``converged`` once the normalized loss 2L/V_Y ≤ this (0 disables).
    explode : float
        Divergence safeguard: loss > explode·max(L₀, V_Y) counts as divergence.
    schedule : Schedule
        Snapshot schedule (default: every 100 updates, denser early).
    recorder : callable, optional
        ``recorder(student, params, teacher, n=, t=, loss=) -> dict`` called at each snapshot;
        a recorder with ``takes_moments = True`` (:func:`popdyn.diagnostics.recorder`) also gets
        ``moments=``, the value moments (C, B, μ0, Ct) the fused GD step computed at that state
        (the same bits as recomputing them), when the run has them.
    rtol : float
        Series tolerance for smooth activations.
    plateau_watch : popdyn.plateau.PlateauWatch, optional
        With a schedule that has a plateau rule: the watch to continue (a run resumed from an
        earlier one, whose losses it has been fed); default a fresh watch of the rule.

    Returns
    -------
    Trajectory
        Every student family (:mod:`popdyn.family`) runs through the same integrators: the
        family supplies the evaluation (SwiGLU: at the exactly fitted intercept), the per-field
        rates, the update and the step-doubling norm; snapshots hold the family's ``fields``.
    """
    compile_notice()     # one line on stderr when numba's kernel cache is cold
    fam = family_of(student)
    fam.check(params, teacher)
    kappa, tscale = fam.clock()
    mult = fam.multipliers(rates, head_lr_mult=head_lr_mult, bias_lr_mult=bias_lr_mult,
                           intercept_lr_mult=intercept_lr_mult)
    settings = TrainSettings(method=method, lr=lr, rates=rates, head_lr_mult=head_lr_mult,
                             bias_lr_mult=bias_lr_mult, intercept_lr_mult=intercept_lr_mult,
                             max_updates=max_updates, max_time=max_time,
                             loss_target=loss_target, explode=explode, rtol=rtol, eps=eps,
                             h0=h0, h_min=h_min, h_max=h_max, max_halvings=max_halvings)
    schedule = _schedule(schedule)
    if tscale != 1.0:
        return _train_rescaled(fam, tscale, params, teacher, settings, mult, schedule=schedule,
                               recorder=recorder, plateau_watch=plateau_watch)
    return _train_own_clock(fam, kappa, params, teacher, settings, mult, schedule=schedule,
                  recorder=recorder, plateau_watch=plateau_watch)


def _train_own_clock(fam, kappa, params, teacher, s: TrainSettings, mult, *, schedule, recorder,
                     plateau_watch) -> Trajectory:
    """:func:`train` on the family's own clock, from the validated settings ``s`` and the
    family's rate multipliers ``mult``."""
    method = s.method
    if plateau_watch is not None and not isinstance(plateau_watch, PlateauWatch):
        raise TypeError("`plateau_watch` must be a popdyn.plateau.PlateauWatch or None, got "
                        f"{type(plateau_watch).__name__}")
    problem, rec, context = _setup(fam, kappa, params, teacher, s, mult, schedule, recorder)
    t0 = time.perf_counter()
    VY, rates = problem.VY, context.rates
    run = METHODS[method].start(problem, rec, s, context)
    rule = schedule.plateau
    watch = None
    if rule is not None:
        watch = plateau_watch if plateau_watch is not None else rule.watch()
        if rule.units == "mse":
            def units(L):
                return 2.0 * L
        else:
            def units(L):
                return 2.0 * L / VY
        run.attach(watch, units)
    run.run()
    p, status, ngrad, forced = run.p, run.status, run.grad_evals, run.forced_steps
    losses, ns, ts = run.losses, run.ns, run.ts
    sn, st, snaps = rec.arrays()
    info = dict(method=method, lr=s.lr, **fam.train_info(s, rates), eps=s.eps,
                h0=s.h0, h_min=s.h_min, h_max=s.h_max,
                max_updates=s.max_updates, max_time=s.max_time,
                loss_target=s.loss_target, grad_evals=ngrad, forced_steps=forced,
                wall_time=time.perf_counter() - t0)
    more, extra = run.report()
    info.update(more)
    tr = Trajectory(np.array(ns, dtype=np.int64), np.array(ts), np.array(losses), sn, st, snaps,
                    status, p, VY, rec.records, info, fam.params_type, **extra)
    if watch is not None:
        info["plateau"] = {**rule.to_dict(), "end": watch.end, "censored": not watch.done,
                           "fed": watch.count}
        if plateau_watch is None:
            ell = tr.mse if rule.units == "mse" else tr.normalized_loss
            tr.plateau = rule.apply(ell, n=tr.n, t=tr.t)
    return tr


def _setup(fam, kappa, params, teacher, s: TrainSettings, mult, schedule, recorder):
    """The :class:`Problem`, the recorder and the start context of one run on the family's own
    clock (κ = ``kappa``)."""
    student = fam.student
    rates = fam.rates(mult)
    VY = teacher.variance
    if not VY > 0:
        raise ValueError("`teacher` has zero variance: the normalized loss is undefined")

    fz = _Fused.make(student, teacher) if _FUSED else None
    if fz is not None:
        evaluate = fz.evaluate
    else:
        def evaluate(q):
            return fam.evaluate(q, teacher, s.rtol)

    def axpy(q, g, h):       # h on the flow clock; parameter-space rate h·κ·multiplier
        return fam.axpy(q, g, h * kappa, rates)

    rec = _Recorder(schedule, recorder, student, teacher, fields=fam.fields)
    problem = Problem(evaluate, axpy, fam.diff_norm, params, VY, s.lr, s.max_updates,
                      s.max_time, s.loss_target, s.explode, schedule)
    context = _Context(fused=fz, rates=rates, kappa=kappa,
                       slope=lambda: _slope(params, fam.fields, axpy))
    return problem, rec, context


def stepper(student: AnyStudent, params, teacher: Teacher,
            settings: "TrainSettings | None" = None, *, schedule: Schedule | None = None,
            recorder: Callable[..., dict] | None = None, state: dict | None = None) -> "Stepper":
    """The :class:`Stepper` of one :func:`train` run, to be driven by ``step()`` / ``run()``:
    at ``params`` (update 0), or -- with ``state`` from :meth:`Stepper.state` -- continuing
    that state (its update count, flow time, step and counters), bit for bit as the run it was
    taken from would have continued.

    ``settings`` (default ``TrainSettings()``) must be those of the run the state came from.
    Students whose reported clock is rescaled (SwiGLU ``clock="mean_field"``) are not
    supported here (:func:`train` runs them).
    """
    s = TrainSettings() if settings is None else settings
    if not isinstance(s, TrainSettings):
        raise TypeError("`settings` must be a popdyn.dynamics.TrainSettings or None, got "
                        f"{type(s).__name__}")
    fam = family_of(student)
    fam.check(params, teacher)
    kappa, tscale = fam.clock()
    if tscale != 1.0:
        raise ValueError("`student` reports a rescaled clock (SwiGLU clock='mean_field'): "
                         "use popdyn.train")
    mult = fam.multipliers(None if s.rates is None else dict(s.rates),
                           head_lr_mult=s.head_lr_mult, bias_lr_mult=s.bias_lr_mult,
                           intercept_lr_mult=s.intercept_lr_mult)
    problem, rec, context = _setup(fam, kappa, params, teacher, s, mult, _schedule(schedule),
                                   recorder)
    if state is None:
        return METHODS[s.method].start(problem, rec, s, context)
    if state.get("method") != s.method:
        raise ValueError(f"`state` is of method {state.get('method')!r}, the settings' is "
                         f"{s.method!r}")
    return METHODS[s.method].from_state(problem, rec, s, context, state)


def _slope(p0, fields, axpy):
    """g ↦ ⟨∇MSE, −F⟩ = 2⟨g, κP g⟩ with κP g = −axpy(0, g, 1) (exact: 0 − x = −x): the
    Armijo decrease per unit step (module docstring), (2/m)‖F‖² for the paper's student."""
    import dataclasses

    zero = dataclasses.replace(p0, **{f: (0.0 if f == "c" else np.zeros_like(getattr(p0, f)))
                                      for f in fields})

    def slope(g):
        d = axpy(zero, g, 1.0)
        return -2.0 * sum(float(np.sum(getattr(g, f) * getattr(d, f))) for f in fields)
    return slope


@dataclass(frozen=True)
class _Context:
    """What a method's :meth:`Stepper.start` may use besides the problem and the settings: the
    fused evaluator (or None), the family's per-field rates, the clock factor κ and a factory
    of the Armijo slope (:func:`_slope`)."""

    fused: Any
    rates: dict
    kappa: float
    slope: Callable[[], Callable]


#: the methods of :func:`train`, each a :class:`Stepper` class with its per-method ``OPTIONS``
#: and their defaults (``"gd"`` runs :class:`FusedGD` where the fused kernels apply), as
#: ``scipy.integrate.solve_ivp`` keeps its METHODS
METHODS: dict[str, type[Stepper]] = {"gd": FixedStepGD, "flow": AdaptiveEuler,
                                     "armijo": PersistentArmijo}


def _train_rescaled(fam, m, params, teacher, s: TrainSettings, mult, *, schedule, recorder,
                    plateau_watch=None):
    """:func:`train` for a family whose reported clock t is the integration clock τ = m·t
    divided by ``m`` (SwiGLU ``clock="mean_field"``): the standard-clock flow with lr·m,
    head multiplier (field ``a``) /m² and step bounds and horizon ×m, every time reported as
    t = τ/m."""
    student = fam.student
    head_lr_mult = mult["a"]
    rec = None
    if recorder is not None:
        def rec(st, p, T, *, n, t, loss):
            return recorder(student, p, T, n=n, t=t / m, loss=loss)
    tr = train(fam.standard_clock(), params, teacher, method=s.method, lr=s.lr * m,
               rates={**mult, "a": head_lr_mult / (m * m)}, eps=s.eps, h0=s.h0 * m,
               h_min=s.h_min * m, h_max=s.h_max * m, max_updates=s.max_updates,
               max_time=s.max_time * m, loss_target=s.loss_target, explode=s.explode,
               schedule=schedule, recorder=rec, rtol=s.rtol, max_halvings=s.max_halvings,
               plateau_watch=plateau_watch)
    tr.t = tr.t / m
    tr.snap_t = tr.snap_t / m
    if tr.steps is not None:
        tr.steps = tr.steps / m
        tr.info["h"] = tr.info["h"] / m
    if tr.plateau is not None:           # its flow-time clock, reported as t
        rule = schedule.plateau
        tr.plateau = rule.apply(tr.mse if rule.units == "mse" else tr.normalized_loss,
                                n=tr.n, t=tr.t)
    tr.info.update(clock="mean_field", lr=s.lr, head_lr_mult=head_lr_mult, h0=s.h0,
                   h_min=s.h_min, h_max=s.h_max, max_time=s.max_time)
    return tr
