"""One run of a sweep: train in resumable segments, diagnose, certify at the plateau, store.

A run is integrated in *segments* of ``[store] checkpoint_every`` updates (rounded up to a
multiple of the diagnostic ``every``); after each segment the full state — parameters, clocks,
the flow's next step, every loss and snapshot so far — is checkpointed atomically: the losses,
snapshots and records of the segment as a new part (``part_<i>.npz``), then the state in the
run's ``checkpoint.npz`` (:mod:`popdyn.experiments.store`, checkpoint format 2), so that
nothing computed is written twice.  A run interrupted at any point resumes from its last
checkpoint and the result is bit-identical to an uninterrupted run, because the segmentation is
part of the run's definition (and of its key): every run, resumed or not, is integrated segment
by segment from the same states.

At a segment boundary :func:`popdyn.train` restarts, so for ``method = "flow"`` the step-size
controller restarts from the last accepted step (clipped to [h_min, h_max]) instead of the
controller's proposal; for ``method = "gd"`` segmentation changes nothing (the flow time is
t₀ + local t).  The divergence safeguard keeps the bound explode·max(L₀, V_Y) of the run's
initial loss L₀.

Persistent Armijo runs (``[train] method = "armijo"``) carry their accepted step h from segment
to segment exactly (``info["h"]``, not clipped to [h_min, h_max]), so they too are unchanged by
segmentation; their per-update accepted steps and halvings are stored as the arrays ``step``
and ``backtracks`` (aligned with ``n``; 0 at n = 0).  A schedule with a plateau rule (``[schedule]
kind`` or ``plateau``: :meth:`popdyn.Schedule.named`) has the rule evaluated at every update
across segments (the watch is rebuilt from the stored losses on resume), the states at its
endpoint E and at E + 1 snapshotted, and the rule's prefix stored as ``plateau_event``.

After the last segment the run is summarized: the normalized loss, the δ-prefix plateau
(``[diagnostics] delta``, default 1e−3) on both clocks and the paper's standard prefixes,
the checkpoints init / P (last diagnostic inside the prefix) / final, and — unless
``[diagnostics] certify = false`` — certified brackets (:mod:`certify`) of the AGOP alignment
and of the ``certify_kinds`` refit risks at init and at P.

SwiGLU students (``[student] activation = "swiglu"``) are stored with their own parameter
arrays ``a, G, V, c`` (gates and values) in place of ``a, W, b, c``; their snapshots are
recorded at the exactly fitted intercept.  What :mod:`certify` supports for them is certified:
the AGOP alignment (``certify.alignment``) and the loss (``certify.loss``, stored as
``loss``: the normalized MSE bracket; rigorous for additive polynomial-link teachers,
numerical otherwise, as its provenance says) and the ``certify_kinds`` refit risks
(``certify.refit_risk``).  Every family and teacher goes through the same calls: ridge students
against gated teachers get rigorous brackets (``certify.gated``), skip students refits with v
frozen (``certify.skip``); what certify refuses is recorded as ``<name>_error`` with its message
(absent, never a bracket).  The alignment depends on the teacher only through its subspace.

The SwiGLU protocol of Kumar (arXiv 2609.39408) App. U.6 (``[train] method = "paper_euler"``,
a biased SwiGLU student) runs :func:`popdyn.swiglu.train_paper` segment by segment in the same
way (the adaptive step depends only on the current state, so segmentation changes no update;
the clock is t₀ + local t as for every method).  Its snapshots are recorded by
:func:`paper_recorder` (ℓ, A_top, A_min and the U.8 resolution flags, the equilibrated 1e−12
eigencutoff refit with its 1e−8…1e−14 band), and its summary adds ``paper``: the loss-selected
prefixes |ℓ_n − ℓ_0| ≤ δ for δ = 1e−3 and 1e−4 (:func:`paper_prefix`), the last diagnostic D
and the paper's status ("loss stop", "censored", "failure").  ``certify`` does not cover the
biased student (the configuration must set ``certify = false``).

References
----------
Kumar (arXiv 2609.39408) App. U.6–U.8 (the SwiGLU protocol, Tables 3–7).
Kumar (arXiv 2609.39408), Tables 2–4 (plateau endpoint P, endpoint changes), Table 1 (brackets
with unresolved spectra).
"""
from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np

from ..family import family_of
from ..config import PAPER_EULER, make_student, paper_euler_kwargs, schedule_of, teacher_from_table
from ..diagnostics import recorder
from ..diagnostics.refit import KINDS
from ..dynamics import Schedule, TrainSettings
from ..dynamics import train as _train
from ..plateau import plateau, standard_plateaus
from .. import threads as _kthreads
from ._threads import blas_threads
from .store import CHECKPOINT_FORMAT, SCHEMA, Store, _clean, dumps, run_key

__all__ = ["run_one", "spec_key", "build"]


_RUN_LOCK = threading.RLock()     # one run at a time per process (run_one)


def spec_key(spec: dict) -> str:
    from .. import __version__

    return run_key(_identity(spec), __version__)


def _identity(spec: dict) -> dict:
    """The part of a run spec that defines its result (the declared order index is display
    metadata and does not enter the key).  A run with ``[init] convention = "paper"`` also
    carries the paper convention's draw layout (:data:`popdyn.swiglu.PAPER_DRAW`), so a store
    never hands back a run drawn in another layout."""
    ident = {k: v for k, v in spec.items() if k != "order"}
    init = ident.get("init")
    if isinstance(init, dict) and init.get("convention") == "paper":
        from ..swiglu import PAPER_DRAW

        ident["init"] = {**init, "draw": PAPER_DRAW}
    return ident


def build(spec: dict):
    """(student, teacher, initial params, train kwargs, schedule, recorder) of a run spec."""
    student = make_student(spec["student"])
    teacher = teacher_from_table(spec["teacher"], student.d)
    init = spec["init"]
    # ``convention`` enters the spec (and the run key) only when a config gives it, so the
    # keys of stored runs (the "norm" default) are unchanged
    ikw = {"convention": init["convention"]} if "convention" in init else {}
    p0 = student.init(init["seed"], init["scale"],
                      teacher if init.get("fit_intercept", True) else None, **ikw)
    sc = spec["schedule"]
    if "kind" in sc or "plateau" in sc:
        schedule = schedule_of(sc)
    else:
        schedule = Schedule(every=int(sc["every"]), early=tuple(int(e) for e in sc["early"]))
    dg = spec["diagnostics"]
    if spec["train"].get("method") == PAPER_EULER:
        rec = paper_recorder(teacher.subspace)
    else:
        rec = recorder(teacher.subspace, kinds=tuple(dg["kinds"]), budget=dg["budget"],
                       geometry=bool(dg["geometry"]))
    return student, teacher, p0, dict(spec["train"]), schedule, rec


#: the paper's run statuses (Kumar App. U.7, Table 5) by :func:`popdyn.swiglu.train_paper` status
PAPER_STATUS = {"converged": "loss stop", "horizon": "censored", "diverged": "failure"}
#: the loss-prefix tolerances of the SwiGLU protocol (Kumar App. U.6: primary and stricter)
PAPER_DELTAS = (1e-3, 1e-4)


def paper_recorder(U):
    """The diagnostics of the SwiGLU protocol at a snapshot (Kumar (arXiv 2609.39408) App. U.6,
    U.8), for ``train_paper(..., recorder=...)``: ``n``, ``t``, ``loss`` (L½), ``l`` (=
    ``normalized_loss``, ℓ = L/V_y with L = Var(y − f̃)), ``A_top``, ``A_min``, ``gap``,
    ``gap_r``, ``min_ratio``, ``resolved``, ``resolved_r`` (:func:`popdyn.swiglu.alignment_paper`
    of the full AGOP against the teacher basis ``U``), and the unrestricted refit of
    :func:`popdyn.swiglu.refit_paper`: ``R`` (relative eigencutoff 1e−12 after diagonal
    equilibration), ``R_band`` ([min, max] over the cutoffs 1e−8, 1e−10, 1e−12, 1e−14),
    ``R_cutoffs`` (R at each of those four, in that order), ``refit_rank``,
    ``gram_min_eig_ratio`` and ``gram_asymmetry``.  One moment evaluation per snapshot."""
    from ..swiglu import REFIT_BAND, alignment_paper, refit_paper

    U = np.asarray(U, dtype=np.float64)

    def record(student, params, teacher, *, n, t, loss, **_):
        fam = student.family
        Mo = fam.moments(params, teacher, tol=1e-10)
        al = alignment_paper(fam.agop(params, Mo), U)
        rf = refit_paper(student, params, teacher, moments_=Mo, band=REFIT_BAND)
        ell = 2.0 * float(loss) / float(teacher.variance)
        return {"n": int(n), "t": float(t), "loss": float(loss), "normalized_loss": ell,
                "l": ell, "A_top": al["A_top"], "A_min": al["A_min"], "gap": al["gap"],
                "gap_r": al["gap_r"], "min_ratio": al["min_ratio"],
                "resolved": al["resolved"], "resolved_r": al["resolved_r"],
                "R": rf["R"], "R_band": [float(rf["band"][0]), float(rf["band"][1])],
                "R_cutoffs": [float(rf["by_cutoff"][float(c)]) for c in REFIT_BAND],
                "refit_rank": int(rf["rank"]), "gram_min_eig_ratio": rf["min_eig_ratio"],
                "gram_asymmetry": rf["asymmetry"]}
    return record


def paper_prefix(ell, n, t, snap_n, delta: float) -> dict:
    """The loss-selected plateau of Kumar (arXiv 2609.39408) App. U.6 on stored arrays: the
    maximal initial prefix of recorded updates with |ℓ_n − ℓ_0| ≤ ``delta`` and P, the last
    saved snapshot inside it ("the last saved diagnostic checkpoint inside it").  Returns
    ``n_end``, ``t_end`` (the last update inside the prefix), ``P`` (snapshot index), ``n_P``,
    ``t_P``, ``l_P``, ``l_0`` and ``censored`` (the prefix reaches the last update)."""
    ell = np.asarray(ell, dtype=np.float64)
    out = np.nonzero(~(np.abs(ell - ell[0]) <= delta))[0]
    k = int(out[0] - 1) if out.size else ell.size - 1
    n_end = int(n[k])
    sn = np.asarray(snap_n)
    iP = int(np.searchsorted(sn, n_end, side="right")) - 1
    nP = int(sn[iP])
    j = int(np.searchsorted(n, nP))
    return {"delta": float(delta), "n_end": n_end, "t_end": float(t[k]), "P": iP, "n_P": nP,
            "t_P": float(t[j]), "l_P": float(ell[j]), "l_0": float(ell[0]),
            "censored": not out.size}


#: stored parameter arrays: ordinary students (a, W, b, c), SwiGLU students (a, G, V, c)
ORDINARY_FIELDS = ("a", "W", "b", "c")
SWIGLU_FIELDS = ("a", "G", "V", "c")


def param_fields(student) -> tuple:
    """The names of the stored parameter arrays of ``student``'s family (``family.fields``)."""
    return family_of(student).fields


def params_from(student, arrays, i=None, prefix=""):
    """The family's parameter container from stored arrays (snapshot ``i``, or the ``p_*``
    state)."""
    fam = family_of(student)
    vals = {k: arrays[prefix + k] if i is None else arrays[prefix + k][i] for k in fam.fields}
    vals["c"] = float(vals["c"])
    return fam.params_type(**vals)


def _params_arrays(p, fields):
    return {k: (np.array(p.c) if k == "c" else getattr(p, k)) for k in fields}


class _Acc:
    """Accumulated trajectory (global clocks).  The per-snapshot parameter arrays are named by
    the student family's ``fields`` (a, W, b, c for ridge students; a, G, V, c for SwiGLU; a, W,
    b, v, c with a skip) and shaped by its ``shapes`` (``{field: per-snapshot shape}``)."""

    def __init__(self, fields=ORDINARY_FIELDS, shapes=None):
        self.fields = tuple(fields)
        self.shapes = dict(shapes or {})
        self.n, self.t, self.loss = [], [], []
        self.snap_n, self.snap_t = [], []
        self.snaps = {f: [] for f in self.fields}
        self.records = []
        #: persistent Armijo runs: accepted step and halvings per update (0 at n = 0)
        self.step, self.backtracks = None, None
        # checkpoint parts written (store.write_checkpoint_part) and the number of updates /
        # snapshots they hold
        self.parts, self.saved_n, self.saved_snap = 0, 0, 0

    def add(self, tr, n0, t0, first: bool):
        s = 0 if first else 1
        self.n.extend((tr.n[s:] + n0).tolist())
        self.t.extend((tr.t[s:] + t0).tolist())
        self.loss.extend(tr.loss[s:].tolist())
        if tr.steps is not None:
            if self.step is None:
                self.step, self.backtracks = [], []
            if first:
                self.step.append(0.0); self.backtracks.append(0)
            self.step.extend(tr.steps.tolist()); self.backtracks.extend(tr.backtracks.tolist())
        ss = 0 if first else 1
        for i in range(ss, len(tr.snap_n)):
            self.snap_n.append(int(tr.snap_n[i] + n0))
            self.snap_t.append(float(tr.snap_t[i] + t0))
            for f in self.fields:
                v = tr.snapshots[f][i]
                self.snaps[f].append(float(v) if f == "c" else v)
            self.records.append(tr.records[i])

    def arrays(self, m, d, start_n: int = 0, start_snap: int = 0):
        """The stored arrays (from update entry ``start_n`` and snapshot ``start_snap`` on)."""
        i, j = start_n, start_snap
        out = {"n": np.array(self.n[i:], dtype=np.int64),
               "t": np.array(self.t[i:], dtype=np.float64),
               "loss": np.array(self.loss[i:], dtype=np.float64),
               "snap_n": np.array(self.snap_n[j:], dtype=np.int64),
               "snap_t": np.array(self.snap_t[j:], dtype=np.float64)}
        if self.step is not None:
            out["step"] = np.array(self.step[i:], dtype=np.float64)
            out["backtracks"] = np.array(self.backtracks[i:], dtype=np.int64)
        for f in self.fields:
            shape = (-1,) + tuple(self.shapes.get(f, ()))
            out[f] = np.array(self.snaps[f][j:], dtype=np.float64).reshape(shape)
        return out

    def write_part(self, store, key, m, d):
        """Append what was computed since the last checkpoint part to the store (checkpoint
        format 2: arrays and records, each written once)."""
        j = self.saved_snap
        store.write_checkpoint_part(key, self.parts, self.arrays(m, d, self.saved_n, j),
                                    dumps(self.records[j:]))
        self.parts += 1
        self.saved_n, self.saved_snap = len(self.n), len(self.snap_n)

    @classmethod
    def from_arrays(cls, arrs, records, fields=ORDINARY_FIELDS, shapes=None):
        acc = cls(fields, shapes)
        acc.n = arrs["n"].tolist(); acc.t = arrs["t"].tolist(); acc.loss = arrs["loss"].tolist()
        acc.snap_n = arrs["snap_n"].tolist(); acc.snap_t = arrs["snap_t"].tolist()
        if "step" in arrs:
            acc.step, acc.backtracks = arrs["step"].tolist(), arrs["backtracks"].tolist()
        for f in acc.fields:
            acc.snaps[f] = arrs[f].tolist() if f == "c" else list(arrs[f])
        acc.records = records
        return acc


#: what the recorder returns for a segment's initial state after the first segment
_DUPLICATE = {"duplicate": True}


def _shift_recorder(rec, n0, t0, skip_initial: bool = False):
    """``rec`` on the global clocks.  With ``skip_initial`` the first call (the segment's
    initial state, local n = 0) returns a placeholder instead of diagnosing: that state is the
    previous segment's last snapshot, and :meth:`_Acc.add` drops the segment's first snapshot
    and record."""
    first = [bool(skip_initial)]

    def shifted(student, params, teacher, *, n, t, loss, **kw):
        if first[0]:
            first[0] = False
            if n == 0:
                return dict(_DUPLICATE)
        return rec(student, params, teacher, n=n + n0, t=t + t0, loss=loss, **kw)
    # the step's moments (ignore[attr-defined]: the recorder protocol reads the attribute off
    # the function)
    shifted.takes_moments = getattr(rec, "takes_moments", False)  # type: ignore[attr-defined]
    return shifted


def _roundtrip(records):
    """Records as they will be read back from JSON (so resumed and fresh runs agree).

    That is the JSON-native form of :func:`popdyn.experiments.store._clean` (for which
    ``json.loads(json.dumps(x)) == x``: Python floats survive JSON exactly, non-finite ones
    are stored as strings), so no text round trip is needed.
    """
    return _clean(records)


def run_one(spec: dict, store_root: str, *, threads: int | None = None,
            _stop_after_segments: int | None = None) -> dict:
    """Run (or resume, or skip) one run of a sweep and store it; returns a small summary dict.

    Safe to call in any worker process: everything it needs is in ``spec`` (plain data) and the
    store directory (which must be visible to the worker).  The run uses one BLAS thread
    (:mod:`popdyn.experiments._threads`).  Runs in threads of one process (a thread pool, a dask
    worker with several threads) execute one at a time, under a process-wide lock: the
    precision contexts they use (python-flint's in :mod:`certify`, the private mpmath context
    of :mod:`popdyn.links`) are shared by the threads, and the compiled kernels hold the GIL, so
    threads would not run them in parallel anyway.  This keeps the results identical on every
    executor (tests/popdyn/test_sweep_store.py).  ``threads``: the kernels' thread count for
    this run (:mod:`popdyn.threads`; None: unchanged), which does not change the results.
    """
    with _RUN_LOCK, blas_threads(1), _kthreads.threads(threads):
        return _run_one(spec, store_root, _stop_after_segments)


def _run_one(spec, store_root, _stop_after_segments):
    store = Store(store_root)
    key = spec_key(spec)
    if store.has(key):
        return {"key": key, "status": store.record(key)["status"], "skipped": True,
                "resumed": False, "wall": 0.0}
    wall0 = time.perf_counter()
    student, teacher, p0, train, schedule, rec = build(spec)
    paper = train.get("method") == PAPER_EULER
    if paper:
        # the SwiGLU protocol (Kumar App. U.6): popdyn.swiglu.train_paper
        pkw = paper_euler_kwargs(train)
        kw = {"method": PAPER_EULER, "max_updates": pkw["n_max"], "max_time": pkw["t_max"],
              "explode": pkw["explode"], "h0": 0.0, "h_min": 0.0, "h_max": 0.0}
    else:
        # every train keyword: the table's values over the defaults of the record
        kw = TrainSettings.from_config(train).kwargs()
    every = schedule.every
    K = -(-int(spec["store"]["checkpoint_every"]) // every) * every
    VY = teacher.variance
    max_updates = int(kw["max_updates"])
    max_time = float(kw["max_time"])
    fields = param_fields(student)
    shapes = student.family.shapes()
    armijo = kw["method"] == "armijo"
    rule = schedule.plateau
    ck = store.checkpoint(key)
    if ck is not None and any(f"p_{k}" not in ck[0] for k in fields):
        ck = None                    # not this student family's checkpoint: start over
    resumed = ck is not None
    if ck is None:
        acc, p, n0, t0, h0, L0, forced, ngrad, seg = (_Acc(fields, shapes), p0, 0, 0.0, float(kw["h0"]),
                                                      None, 0, 0, 0)
        status = None
    else:
        arrs, meta = ck
        acc = _Acc.from_arrays(arrs, meta["records"], fields, shapes)
        if meta.get("format", 1) == CHECKPOINT_FORMAT:   # else: nothing is in parts yet
            acc.parts, acc.saved_n, acc.saved_snap = int(meta["parts"]), len(acc.n), len(acc.snap_n)
        p = params_from(student, arrs, prefix="p_")
        n0, t0, h0 = int(meta["n0"]), float(meta["t0"]), float(meta["h0"])
        L0, forced, ngrad, seg = float(meta["L0"]), int(meta["forced"]), int(meta["ngrad"]), int(meta["seg"])
        status = None
    watch, failure = None, None
    if rule is not None:
        # the rule at every update so far (resumed: rebuilt from the stored losses, the values
        # train fed it): units as in popdyn.train
        scale = (lambda L: 2.0 * L) if rule.units == "mse" else (lambda L: 2.0 * L / VY)
        watch = rule.watch().feed_all(scale(L) for L in acc.loss)
    while True:
        if n0 >= max_updates or t0 >= max_time:
            status = "horizon"
            break
        if schedule.dense or rule is not None:
            local = Schedule(every=every, early=schedule.early, dense=schedule.dense,
                             plateau=rule, offset=n0)
        else:
            early = tuple(e - n0 for e in schedule.early if n0 < e <= n0 + K)
            local = Schedule(every=every, early=early)
        skw = dict(kw)
        skw["max_updates"] = min(K, max_updates - n0)
        skw["max_time"] = max_time - t0 if math.isfinite(max_time) else math.inf
        # the persistent Armijo step continues exactly; the flow's is clipped to its bounds
        skw["h0"] = h0 if armijo else min(max(h0, kw["h_min"]), kw["h_max"])
        if watch is not None:
            skw["plateau_watch"] = watch
        if L0 is not None:
            # keep the run's divergence bound explode·max(L0, V_Y) across segments
            Lk = float(acc.loss[-1])
            skw["explode"] = float(kw["explode"]) * max(L0, VY) / max(Lk, VY)
        srec = _shift_recorder(rec, n0, t0, skip_initial=seg > 0)
        if paper:
            from ..swiglu import train_paper

            tr = train_paper(student, p, teacher,
                             **{**pkw, "n_max": skw["max_updates"], "t_max": skw["max_time"],
                                "explode": skw["explode"]},
                             schedule=local, recorder=srec)
        else:
            tr = _train(student, p, teacher, schedule=local, recorder=srec, **skw)
        tr.records[:] = _roundtrip(tr.records)
        acc.add(tr, n0, t0, first=(seg == 0))
        if L0 is None:
            L0 = float(tr.loss[0])
        forced += int(tr.info.get("forced_steps", 0))
        ngrad += int(tr.info["grad_evals"])
        seg += 1
        if armijo:
            h0, failure = float(tr.info["h"]), tr.info["failure"]
        elif paper:
            pass                        # the paper's step depends on the state only
        elif tr.n[-1] >= 1:
            h0 = float(tr.t[-1] - tr.t[-2])
        p = tr.final
        n0 = int(acc.n[-1])
        t0 = float(acc.t[-1])
        if tr.status in ("converged", "diverged"):
            status = tr.status
            break
        if n0 >= max_updates or t0 >= max_time or tr.n[-1] == 0:
            status = "horizon"
            break
        acc.write_part(store, key, student.m, student.d)
        meta = {"schema": SCHEMA, "format": CHECKPOINT_FORMAT, "parts": acc.parts, "n0": n0,
                "t0": t0, "h0": h0, "L0": L0, "forced": forced, "ngrad": ngrad, "seg": seg}
        store.write_checkpoint(key, _identity(spec),
                               {f"p_{k}": v for k, v in _params_arrays(p, param_fields(student)).items()}, meta)
        if _stop_after_segments is not None and seg >= _stop_after_segments:
            return {"key": key, "status": "interrupted", "skipped": False, "resumed": resumed,
                    "wall": time.perf_counter() - wall0}
    arrays = acc.arrays(student.m, student.d)
    record = summarize(spec, student, teacher, arrays, acc.records, status)
    if rule is not None:
        ell = 2.0 * arrays["loss"] if rule.units == "mse" else 2.0 * arrays["loss"] / VY
        pe = rule.apply(ell, n=arrays["n"], t=arrays["t"])
        sn = arrays["snap_n"]
        record["plateau_event"] = {
            **rule.to_dict(), "end_n": pe.end_n, "end_t": pe.end_t, "release_n": pe.release_n,
            "release_t": pe.release_t, "censored": pe.censored,
            # the snapshot index of E and of E + 1 (None when not snapshotted)
            "E_index": _index(sn, pe.end_n), "E1_index": _index(sn, pe.release_n)}
    if armijo:
        record["armijo"] = {"h": h0, "backtracks": int(np.sum(arrays["backtracks"])),
                            "failure": failure}
    record["info"] = {"grad_evals": ngrad, "forced_steps": forced, "segments": seg,
                      "segment_updates": K, "resumed": resumed,
                      "wall_time": time.perf_counter() - wall0}
    store.write_run(key, record, arrays)
    return {"key": key, "status": status, "skipped": False, "resumed": resumed,
            "wall": time.perf_counter() - wall0}


def _index(sn, n):
    """The index of update ``n`` among the snapshots ``sn`` (None if absent or n is None)."""
    if n is None or n < 0:
        return None
    i = int(np.searchsorted(sn, n))
    return i if i < len(sn) and int(sn[i]) == n else None


# ---------------------------------------------------------------------------- summary
_CK_KEYS = ("n", "t", "normalized_loss", "a_top", "a_min", "a_mean", "resolved", "gap",
            # the SwiGLU protocol's records (paper_recorder)
            "A_top", "A_min", "resolved_r", "R", "R_band",
            # SwiGLU gate geometry (absent from ordinary students' records)
            "gate_weighted_angle", "gate_median_angle", "value_weighted_angle",
            "frac_gates_near_axis", "frac_axes_covered")


def _ck_summary(rec: dict) -> dict:
    out = {k: rec[k] for k in _CK_KEYS if k in rec}
    for kind in KINDS:
        for k in (f"refit_{kind}", f"refit_{kind}_lower"):
            if k in rec:
                out[k] = rec[k]
    return out


def summarize(spec, student, teacher, arrays, records, status) -> dict:
    """The stored record of a finished run (without timing info)."""
    from .. import __version__
    VY = float(teacher.variance)
    ell = 2.0 * arrays["loss"] / VY
    delta = float(spec["diagnostics"]["delta"])
    n, t, sn = arrays["n"], arrays["t"], arrays["snap_n"]
    pl = plateau(ell, delta=delta, n=n, t=t)
    iP = int(np.searchsorted(sn, pl.end_n, side="right")) - 1
    idx = {"init": 0, "plateau": iP, "final": len(sn) - 1}
    std = {k: {"end_n": v.end_n, "end_t": v.end_t, "release_n": v.release_n}
           for k, v in standard_plateaus(ell, n=n, t=t).items()}
    ck = {k: _ck_summary(records[i]) for k, i in idx.items()}
    rec = {
        "popdyn": __version__,
        "spec": _identity(spec),
        "order": spec.get("order", [0, 0, 0]),
        "label": spec["teacher"]["label"],
        "setting": spec["setting"],
        "seed": spec["init"]["seed"],
        "status": status,
        "variance": VY,
        "mean": float(teacher.mean),
        "r": int(teacher.subspace.shape[0]),
        "d": int(student.d),
        "n_final": int(n[-1]),
        "t_final": float(t[-1]),
        "loss_final": float(ell[-1]),
        "plateau": {"rule": f"delta={delta:g}", "end_n": pl.end_n, "end_t": pl.end_t,
                    "release_n": pl.release_n, "release_t": pl.release_t, "change": pl.change,
                    "P_n": int(sn[iP]), "P_t": float(arrays["snap_t"][iP]),
                    "P_loss_change": float(ell[sn[iP]] - ell[0])},
        "plateaus": std,
        "index": idx,
        "checkpoints": ck,
        "records": records,
    }
    if spec["train"].get("method") == PAPER_EULER:
        rec["paper"] = {
            "status": PAPER_STATUS[status],
            "prefixes": {f"{d:g}": paper_prefix(ell, n, t, sn, d) for d in PAPER_DELTAS},
            "D": len(sn) - 1}
    if spec["diagnostics"].get("certify", True):
        rec["certified"] = {k: certify_state(student, teacher, arrays, i, spec)
                            for k, i in (("init", 0), ("plateau", iP))}
    return rec


def _b(br) -> dict:
    return {"lo": br.lo, "hi": br.hi, "provenance": br.provenance, "status": br.status}


def certify_state(student, teacher, arrays, i, spec) -> dict:
    """Certified brackets at snapshot ``i``: AGOP alignment (a_top, a_min, a_mean), the
    normalized loss (``loss``, MSE / V_Y) and the ``certify_kinds`` refit risks in units of V_Y,
    for every student family and teacher :mod:`certify` covers (ridge, skip and SwiGLU students;
    additive, network, gated and multi-index teachers; each bracket tagged rigorous or
    numerical by certify).  A failure or refusal to certify is recorded (as ``<name>_error``
    with certify's message), never replaced by a point value."""
    p = params_from(student, arrays, i)
    out: dict[str, Any] = {"n": int(arrays["snap_n"][i])}
    dg = spec["diagnostics"]
    prec = int(dg.get("prec", 128))
    try:
        from ..plugins import load as _service   # provided by certify (popdyn.plugins)

        certify = _service("checkpoint_certifier")
    except Exception as exc:  # pragma: no cover  (certify is part of the distribution)
        return {**out, "error": f"certify unavailable: {exc}"}
    try:
        al = certify.alignment(student, p, teacher.subspace, prec=prec)
        out.update({"a_top": _b(al.a_top), "a_min": _b(al.a_min), "a_mean": _b(al.a_mean)})
    except Exception as exc:
        out["alignment_error"] = f"{type(exc).__name__}: {exc}"
    try:
        out["loss"] = _b(certify.loss(student, p, teacher, prec=prec).normalized)
    except Exception as exc:
        out["loss_error"] = f"{type(exc).__name__}: {exc}"
    for kind in dg.get("certify_kinds", ["same_budget"]):
        try:
            budget = dg.get("budget") if kind in ("bounded", "projected") else None
            rf = certify.refit_risk(student, p, teacher, kind=kind, budget=budget, prec=prec)
            out[f"refit_{kind}"] = _b(rf.normalized)
        except Exception as exc:
            out[f"refit_{kind}_error"] = f"{type(exc).__name__}: {exc}"
    return out


def load_run(store: Store, key: str) -> tuple[dict, dict]:
    """A stored run as (record, arrays)."""
    return store.record(key), store.arrays(key)


