"""Integrators for population gradient dynamics (DESIGN §4).

Both integrators follow the preconditioned flow

    dθ/dt = −κ · P ∇L(θ),   κ = 1 ("standard") or m ("mean_field": parameter-space lr = m·Δt),

with P the per-group rate multipliers (head ``a``, biases ``b``, intercept ``c``; ``W`` has 1).

* ``method="gd"``: fixed-step gradient descent θ ← θ − Δt κ P ∇L, Δt = ``lr``; the update count
  n and the flow time t = n·Δt are both recorded.
* ``method="flow"``: an adaptive Euler approximation of gradient flow with step-doubling error
  control.  From θ₀ one full Euler step of size h and two half steps are taken; the local error
  estimate is e = ‖θ_full − θ_half‖₂, and the step is accepted when e ≤ ε·‖θ_half − θ₀‖₂, i.e.
  when the error is at most a fraction ε of the step's own displacement (scale-free, so it works
  at small initialization).  The accepted state is the two-half-step result; the next step is
  h·clip(0.9·(ε‖Δ‖/e)^{1/2}, 0.2, 2) within [h_min, h_max].  Steps forced at h_min are counted.
  Each accepted step is one update (n += 1) and advances t by h.

Stopping rules: normalized loss 2L/V_Y ≤ ``loss_target`` → ``converged``; ``max_updates`` or
``max_time`` reached → ``horizon``; a non-finite state or a loss above ``explode`` × max(L₀, V_Y)
→ ``diverged``, keeping the last finite state.  The loss is kept at every update; parameter
snapshots follow a :class:`Schedule` (every N updates, denser early).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ._notice import compile_notice
from . import _validate as V
from ._hermite_bridge import _link_coeffs, _link_order, _link_target
from .family import family_of
from .models import Params, Student
from .teachers import Teacher

METHODS = ("gd", "flow")
STATUSES = ("converged", "horizon", "diverged")


@dataclass(frozen=True)
class Schedule:
    """Snapshot schedule: every ``every`` updates, plus the ``early`` update counts.

    The initial state (n = 0) and the final state are always recorded.
    """

    every: int = 100
    early: tuple = (1, 2, 5, 10, 20, 50)

    def __post_init__(self):
        V.positive_int("every", self.every)
        for e in self.early:
            V.nonneg_int("early", e)

    def __contains__(self, n: int) -> bool:
        return n == 0 or n % self.every == 0 or n in self.early


@dataclass
class Trajectory:
    """A training run: the loss at every update and parameter snapshots on a schedule.

    Attributes
    ----------
    n, t, loss : arrays
        Update count, flow time and L = ½E[(f − y)²] after every update (index 0 = initial).
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
        Settings, counters (gradient evaluations, forced steps) and wall time.
    """

    n: np.ndarray
    t: np.ndarray
    loss: np.ndarray
    snap_n: np.ndarray
    snap_t: np.ndarray
    snapshots: dict
    status: str
    final: Params
    variance: float
    records: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    #: the parameter container of the snapshots (the student family's ``params_type``)
    params_type: type = Params

    @property
    def normalized_loss(self) -> np.ndarray:
        return 2.0 * self.loss / self.variance

    def snapshot(self, i: int):
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

    def add(self, n, t, p, L):
        if self.n and self.n[-1] == n:
            return
        self.n.append(n); self.t.append(t)
        for f in self.fields:
            v = getattr(p, f)
            self.snaps[f].append(v.copy() if isinstance(v, np.ndarray) else v)
        if self.recorder is not None:
            self.records.append(self.recorder(self.student, p, self.teacher, n=n, t=t, loss=L))

    def arrays(self):
        return (np.array(self.n, dtype=np.int64), np.array(self.t),
                {f: np.array(v) for f, v in self.snaps.items()})


def _settings(method, lr, head_lr_mult, bias_lr_mult, intercept_lr_mult, eps, h0, h_min, h_max,
              max_updates, max_time, loss_target, explode, schedule) -> dict:
    """Validated integrator settings of :func:`train` (every student family)."""
    V.choice("method", method, METHODS)
    out = dict(method=method, lr=V.real("lr", lr, positive=True),
               ma=V.real("head_lr_mult", head_lr_mult, nonnegative=True),
               mb=V.real("bias_lr_mult", bias_lr_mult, nonnegative=True),
               mc=V.real("intercept_lr_mult", intercept_lr_mult, nonnegative=True),
               eps=V.real("eps", eps, positive=True), h0=V.real("h0", h0, positive=True),
               h_min=V.real("h_min", h_min, positive=True),
               h_max=V.real("h_max", h_max, positive=True, allow_inf=True))
    if not out["h_min"] <= out["h0"] <= out["h_max"]:
        raise ValueError(f"need 0 < `h_min` <= `h0` <= `h_max`, got {out['h_min']}, "
                         f"{out['h0']}, {out['h_max']}")
    out["max_updates"] = V.nonneg_int("max_updates", max_updates)
    out["max_time"] = V.real("max_time", max_time, positive=True, allow_inf=True)
    out["loss_target"] = V.real("loss_target", loss_target, nonnegative=True)
    out["explode"] = V.real("explode", explode, positive=True)
    schedule = Schedule() if schedule is None else schedule
    if not isinstance(schedule, Schedule):
        raise TypeError("`schedule` must be a popdyn.Schedule")
    out["schedule"] = schedule
    return out


def _integrate(evaluate, step, diff_norm, p, rec, VY, cfg):
    """The GD / adaptive Euler loop (module docstring), shared by every student type.

    ``evaluate(p) -> (L, grad, p')`` (p' = p, or p with its intercept refitted),
    ``step(p, g, h) -> p − h·(rates ∘ g)`` on the flow clock, ``diff_norm(p, q)`` the
    parameter-space distance of the step-doubling rule, ``rec`` a :class:`_Recorder`.
    Returns (p, L, n, t, status, losses, ns, ts, grad_evals, forced_steps).
    """
    method, lr, eps = cfg["method"], cfg["lr"], cfg["eps"]
    h_min, h_max = cfg["h_min"], cfg["h_max"]
    max_updates, max_time = cfg["max_updates"], cfg["max_time"]
    loss_target, schedule = cfg["loss_target"], cfg["schedule"]
    L, g, p = evaluate(p)
    ngrad = 1
    losses, ns, ts = [L], [0], [0.0]
    bound = cfg["explode"] * max(L, VY)
    rec.add(0, 0.0, p, L)
    n, t, h, forced = 0, 0.0, cfg["h0"], 0
    status = "horizon"
    if loss_target > 0 and 2 * L / VY <= loss_target:
        status = "converged"
    else:
        while n < max_updates and t < max_time:
            if method == "gd":
                q = step(p, g, lr)
                dt = lr
            else:
                h = min(h, h_max)
                while True:
                    full = step(p, g, h)
                    mid = step(p, g, 0.5 * h)
                    q = None
                    if mid.is_finite() and full.is_finite():
                        _, gm, mid = evaluate(mid)
                        ngrad += 1
                        q = step(mid, gm, 0.5 * h)
                    if q is None or not q.is_finite():
                        if h <= h_min:       # non-finite even at the smallest step: diverged
                            q = None
                            break
                        h = max(0.2 * h, h_min)
                        continue
                    disp = diff_norm(q, p)
                    err = diff_norm(q, full)
                    tol = eps * disp
                    if err <= tol or h <= h_min:
                        if err > tol:
                            forced += 1
                        dt = h
                        fac = 2.0 if err == 0 else min(2.0, max(0.2, 0.9 * np.sqrt(tol / err)))
                        h = min(max(h * fac, h_min), h_max)
                        break
                    h = max(h * min(0.9, max(0.2, 0.9 * np.sqrt(tol / err))), h_min)
            if q is None or not q.is_finite():
                status = "diverged"
                break
            Lq, gq, q = evaluate(q)
            ngrad += 1
            if not (np.isfinite(Lq) and Lq <= bound and gq.is_finite()):
                status = "diverged"
                break
            p, L, g = q, Lq, gq
            n += 1
            t += dt
            losses.append(L); ns.append(n); ts.append(t)
            if n in schedule:
                rec.add(n, t, p, L)
            if loss_target > 0 and 2 * L / VY <= loss_target:
                status = "converged"
                break
    rec.add(n, t, p, L)
    return p, L, n, t, status, losses, ns, ts, ngrad, forced


#: use the fused kernels (:mod:`popdyn._kernels.fused`) where they apply (tests switch it off to
#: compare with the general path)
_FUSED = True


class _Fused:
    """Loss and gradient of a PL student (relu, leaky relu) against an additive-link or PL-network
    teacher in one compiled call (:func:`popdyn._kernels.fused.pl_loss_grad`), and fixed-step GD
    between snapshots inside numba (:func:`popdyn._kernels.fused.pl_gd`).  Same kernels, orders
    and tolerances as :func:`popdyn.objective.loss_and_grad`; results agree to rounding."""

    def __init__(self, student, teacher, tables):
        # the fused kernels load on first use (CLI start-up), and pl_gd is looked up at each
        # call (benchmarks/bench_sweep.py wraps it)
        from ._kernels import fused as _fk

        self._fk = _fk
        self.student, self.teacher, self.tables = student, teacher, tables
        self._kernel = _fk.pl_loss_grad
        self.p, self.q = float(student.act.p), float(student.act.q)
        self.s = float(student.s)

    @classmethod
    def make(cls, student, teacher):
        """A :class:`_Fused` for (student, teacher), or None when the pair is not covered."""
        if not (student.family.fused and student.act.kind == "pl"
                and isinstance(teacher, Teacher)):
            return None
        k, tu = teacher.k, teacher.units()
        if tu is None:
            return None
        if tu.kind == "link":
            g = tu.link
            tth = np.ascontiguousarray(teacher.U, dtype=np.float64)
            tal, tbe = np.ones(k), np.zeros(k)
            tp, tq = np.full(k, float(g.p)), np.full(k, float(g.q))
            tpl = g.p != 0.0 or g.q != 0.0
            if np.any(g.coeffs != 0.0):
                H, dH, _, _ = _link_coeffs(g, _link_order(g))
            else:
                H = dH = np.zeros(0)
            UT = tth
            big = np.maximum(np.abs(H), np.abs(dH))
            L1 = np.concatenate([np.cumsum(big[::-1])[::-1][1:], [0.0]]) if H.size else H
            ttol = _link_target(g)
        elif tu.kind == "pl":
            tth = np.ascontiguousarray(tu.theta, dtype=np.float64)
            tal = np.ascontiguousarray(tu.al, dtype=np.float64)
            tbe = np.ascontiguousarray(tu.be, dtype=np.float64)
            tp, tq = tu.p.astype(np.float64), tu.q.astype(np.float64)
            tpl = True
            H = dH = L1 = np.zeros(0)
            ttol = 0.0
            UT = np.ascontiguousarray(teacher.theta * teacher.alpha[:, None])
        else:
            return None
        v = np.ascontiguousarray(teacher.weights, dtype=np.float64)
        tables = (tth, tal > 0, tal, tbe, tp, tq, bool(tpl), H, dH, L1, ttol, v, UT,
                  float(teacher.mean), float(teacher.second_moment))
        return cls(student, teacher, tables)

    def evaluate(self, q: Params):
        st = self.student
        ga, gW, gb = np.empty(st.m), np.empty((st.m, st.d)), np.empty(st.m)
        L, gc = self._kernel(self.p, self.q, self.s, q.a, q.W, q.b, float(q.c), st.bias,
                             st.intercept, *self.tables, ga, gW, gb)
        return float(L), Params(ga, gW, gb, float(gc)), q

    def integrate_gd(self, p0: Params, rec, VY, cfg, kappa, ma, mb, mc):
        """:func:`_integrate` for method "gd" with the updates between snapshots in numba."""
        _fk = self._fk
        lr, max_updates, max_time = cfg["lr"], cfg["max_updates"], cfg["max_time"]
        loss_target, schedule = cfg["loss_target"], cfg["schedule"]
        L, g, _ = self.evaluate(p0)
        losses, ns, ts = [L], [0], [0.0]
        bound = cfg["explode"] * max(L, VY)
        rec.add(0, 0.0, p0, L)
        h = lr * kappa
        a, W, b, c = p0.a.copy(), p0.W.copy(), p0.b.copy(), p0.c
        ga, gW, gb, gc = g.a.copy(), g.W.copy(), g.b.copy(), g.c
        n, t, ngrad = 0, 0.0, 1
        status = "horizon"
        st = self.student
        if loss_target > 0 and 2 * L / VY <= loss_target:
            status = "converged"
        else:
            early = sorted(e for e in schedule.early if e > 0)
            while n < max_updates and t < max_time:
                nxt = (n // schedule.every + 1) * schedule.every
                nxt = min([nxt] + [e for e in early if e > n])
                nmax = min(nxt, max_updates) - n
                buf_l, buf_t = np.empty(nmax), np.empty(nmax)
                done, code, c, L, gc, t = _fk.pl_gd(
                    nmax, t, lr, h, h * ma, h * mb, h * mc, max_time, bound, VY, loss_target,
                    self.p, self.q, self.s, a, W, b, float(c), L, st.bias, st.intercept,
                    *self.tables, ga, gW, gb, float(gc), buf_l, buf_t)
                ngrad += done + (1 if code == _fk.DIVERGED else 0)
                losses.extend(buf_l[:done].tolist())
                ts.extend(buf_t[:done].tolist())
                ns.extend(range(n + 1, n + done + 1))
                n += done
                if code in (_fk.DIVERGED, _fk.DIVERGED_STEP):
                    status = "diverged"
                    break
                if n in schedule:
                    rec.add(n, t, Params(a, W, b, c), L)
                if code == _fk.CONVERGED:
                    status = "converged"
                    break
                if done < nmax:          # stopped by max_time
                    break
        p = Params(a, W, b, c)
        rec.add(n, t, p, L)
        return p, L, n, t, status, losses, ns, ts, ngrad, 0


def train(student: Student, params: Params, teacher, *, method: str = "flow",
          lr: float = 0.05, head_lr_mult: float = 1.0, bias_lr_mult: float = 1.0,
          intercept_lr_mult: float = 1.0, eps: float = 0.05, h0: float = 0.05,
          h_min: float = 1e-6, h_max: float = 10.0, max_updates: int = 100_000,
          max_time: float = np.inf, loss_target: float = 0.0, explode: float = 1e6,
          schedule: Schedule | None = None, recorder=None, rtol: float = 1e-10) -> Trajectory:
    """Train ``student`` from ``params`` on the population loss against ``teacher``.

    Parameters
    ----------
    method : {"flow", "gd"}
        Adaptive Euler gradient flow or fixed-step gradient descent (module docstring).
    lr : float
        GD step Δt on the flow clock (> 0); parameter-space rate is lr·κ·multiplier.
    head_lr_mult, bias_lr_mult, intercept_lr_mult : float
        Per-group rate multipliers (≥ 0) for a, b and c.
    eps, h0, h_min, h_max : float
        Flow tolerance ε (> 0), initial step and step bounds (0 < h_min ≤ h0 ≤ h_max).
    max_updates, max_time : horizon on the update and flow-time clocks.
    loss_target : float
        Stop with ``converged`` once the normalized loss 2L/V_Y ≤ this (0 disables).
    explode : float
        Divergence safeguard: loss > explode·max(L₀, V_Y) counts as divergence.
    schedule : Schedule
        Snapshot schedule (default: every 100 updates, denser early).
    recorder : callable, optional
        ``recorder(student, params, teacher, n=, t=, loss=) -> dict`` called at each snapshot.
    rtol : float
        Series tolerance for smooth activations.

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
    if tscale != 1.0:
        return _train_rescaled(fam, tscale, params, teacher, method=method, lr=lr,
                               head_lr_mult=head_lr_mult, bias_lr_mult=bias_lr_mult,
                               intercept_lr_mult=intercept_lr_mult, eps=eps, h0=h0,
                               h_min=h_min, h_max=h_max, max_updates=max_updates,
                               max_time=max_time, loss_target=loss_target, explode=explode,
                               schedule=schedule, recorder=recorder, rtol=rtol)
    cfg = _settings(method, lr, head_lr_mult, bias_lr_mult, intercept_lr_mult, eps, h0, h_min,
                    h_max, max_updates, max_time, loss_target, explode, schedule)
    rates = fam.rates(cfg["ma"], cfg["mb"], cfg["mc"])
    VY = teacher.variance
    if not VY > 0:
        raise ValueError("`teacher` has zero variance: the normalized loss is undefined")

    fz = _Fused.make(student, teacher) if _FUSED else None
    if fz is not None:
        evaluate = fz.evaluate
    else:
        def evaluate(q):
            return fam.evaluate(q, teacher, rtol)

    def step(q, g, h):       # h on the flow clock; parameter-space rate h·κ·multiplier
        return fam.axpy(q, g, h * kappa, rates)

    t0 = time.perf_counter()
    rec = _Recorder(cfg["schedule"], recorder, student, teacher, fields=fam.fields)
    if fz is not None and method == "gd":
        p, L, n, t, status, losses, ns, ts, ngrad, forced = fz.integrate_gd(
            params, rec, VY, cfg, kappa, rates["a"], rates["b"], rates["c"])
    else:
        p, L, n, t, status, losses, ns, ts, ngrad, forced = _integrate(
            evaluate, step, fam.diff_norm, params, rec, VY, cfg)
    sn, st, snaps = rec.arrays()
    info = dict(method=method, lr=cfg["lr"], **fam.train_info(cfg, rates), eps=cfg["eps"],
                h0=cfg["h0"], h_min=cfg["h_min"], h_max=cfg["h_max"],
                max_updates=cfg["max_updates"], max_time=cfg["max_time"],
                loss_target=cfg["loss_target"], grad_evals=ngrad, forced_steps=forced,
                wall_time=time.perf_counter() - t0)
    return Trajectory(np.array(ns, dtype=np.int64), np.array(ts), np.array(losses), sn, st, snaps,
                      status, p, VY, rec.records, info, fam.params_type)


def _train_rescaled(fam, m, params, teacher, *, method, lr, head_lr_mult, h0, h_min, h_max,
                    max_time, recorder, **kw):
    """:func:`train` for a family whose reported clock t is the integration clock τ = m·t
    divided by ``m`` (SwiGLU ``clock="mean_field"``): the standard-clock flow with lr·m,
    head multiplier head_lr_mult/m² and step bounds and horizon ×m, every time reported as
    t = τ/m."""
    student = fam.student
    # validate on the caller's clock first, so errors name the caller's values
    _settings(method, lr, head_lr_mult, kw["bias_lr_mult"], kw["intercept_lr_mult"], kw["eps"],
              h0, h_min, h_max, kw["max_updates"], max_time, kw["loss_target"], kw["explode"],
              kw["schedule"])
    rec = None
    if recorder is not None:
        def rec(st, p, T, *, n, t, loss):
            return recorder(student, p, T, n=n, t=t / m, loss=loss)
    tr = train(fam.standard_clock(), params, teacher, method=method, lr=lr * m,
               head_lr_mult=head_lr_mult / (m * m), h0=h0 * m, h_min=h_min * m,
               h_max=h_max * m, max_time=max_time * m, recorder=rec, **kw)
    tr.t = tr.t / m
    tr.snap_t = tr.snap_t / m
    tr.info.update(clock="mean_field", lr=lr, head_lr_mult=head_lr_mult, h0=h0, h_min=h_min,
                   h_max=h_max, max_time=max_time)
    return tr
