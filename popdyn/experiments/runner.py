"""One run of a sweep: train in resumable segments, diagnose, certify at the plateau, store.

A run is integrated in *segments* of ``[store] checkpoint_every`` updates (rounded up to a
multiple of the diagnostic ``every``); after each segment the full state — parameters, clocks,
the flow's next step, every loss and snapshot so far — is written atomically to the run's
``checkpoint.npz``.  A run interrupted at any point resumes from its last checkpoint and the
result is bit-identical to an uninterrupted run, because the segmentation is part of the run's
definition (and of its key): every run, resumed or not, is integrated segment by segment from
the same states.

At a segment boundary :func:`popdyn.train` restarts, so for ``method = "flow"`` the step-size
controller restarts from the last accepted step (clipped to [h_min, h_max]) instead of the
controller's proposal; for ``method = "gd"`` segmentation changes nothing (the flow time is
t₀ + local t).  The divergence safeguard keeps the bound explode·max(L₀, V_Y) of the run's
initial loss L₀.

After the last segment the run is summarized: the normalized loss, the δ-prefix plateau
(``[diagnostics] delta``, default 1e−3) on both clocks and the seed paper's standard prefixes,
the checkpoints init / P (last diagnostic inside the prefix) / final, and — unless
``[diagnostics] certify = false`` — certified brackets (:mod:`certify`) of the AGOP alignment
and of the ``certify_kinds`` refit risks at init and at P.

References
----------
Seed paper 003: Tables 2–4 (plateau endpoint P, endpoint changes), Table 1 (brackets with
unresolved spectra).
"""
from __future__ import annotations

import json
import math
import time

import numpy as np

from .store import SCHEMA, Store, run_key

__all__ = ["run_one", "spec_key", "build"]


def spec_key(spec: dict) -> str:
    from .. import __version__

    return run_key(_identity(spec), __version__)


def _identity(spec: dict) -> dict:
    """The part of a run spec that defines its result (the declared order index is display
    metadata and does not enter the key)."""
    return {k: v for k, v in spec.items() if k != "order"}


def build(spec: dict):
    """(student, teacher, initial params, train kwargs, schedule, recorder) of a run spec."""
    from ..config import teacher_from_table
    from ..diagnostics import recorder
    from ..dynamics import Schedule
    from ..models import Student

    student = Student(**spec["student"])
    teacher = teacher_from_table(spec["teacher"], student.d)
    init = spec["init"]
    p0 = student.init(init["seed"], init["scale"],
                      teacher if init.get("fit_intercept", True) else None)
    sc = spec["schedule"]
    schedule = Schedule(every=int(sc["every"]), early=tuple(int(e) for e in sc["early"]))
    dg = spec["diagnostics"]
    rec = recorder(teacher.subspace, kinds=tuple(dg["kinds"]), budget=dg["budget"],
                   geometry=bool(dg["geometry"]))
    return student, teacher, p0, dict(spec["train"]), schedule, rec


def _defaults(train: dict) -> dict:
    import inspect

    from ..dynamics import train as _train

    sig = inspect.signature(_train)
    out = {k: p.default for k, p in sig.parameters.items()
           if p.kind == p.KEYWORD_ONLY and k not in ("schedule", "recorder")}
    out.update(train)
    return out


def _params_arrays(p):
    return {"a": p.a, "W": p.W, "b": p.b, "c": np.array(p.c)}


class _Acc:
    """Accumulated trajectory (global clocks)."""

    def __init__(self):
        self.n, self.t, self.loss = [], [], []
        self.snap_n, self.snap_t, self.a, self.W, self.b, self.c = [], [], [], [], [], []
        self.records = []

    def add(self, tr, n0, t0, first: bool):
        s = 0 if first else 1
        self.n.extend((tr.n[s:] + n0).tolist())
        self.t.extend((tr.t[s:] + t0).tolist())
        self.loss.extend(tr.loss[s:].tolist())
        ss = 0 if first else 1
        for i in range(ss, len(tr.snap_n)):
            self.snap_n.append(int(tr.snap_n[i] + n0))
            self.snap_t.append(float(tr.snap_t[i] + t0))
            self.a.append(tr.snapshots["a"][i]); self.W.append(tr.snapshots["W"][i])
            self.b.append(tr.snapshots["b"][i]); self.c.append(float(tr.snapshots["c"][i]))
            self.records.append(tr.records[i])

    def arrays(self, m, d):
        return {"n": np.array(self.n, dtype=np.int64), "t": np.array(self.t, dtype=np.float64),
                "loss": np.array(self.loss, dtype=np.float64),
                "snap_n": np.array(self.snap_n, dtype=np.int64),
                "snap_t": np.array(self.snap_t, dtype=np.float64),
                "a": np.array(self.a, dtype=np.float64).reshape(-1, m),
                "W": np.array(self.W, dtype=np.float64).reshape(-1, m, d),
                "b": np.array(self.b, dtype=np.float64).reshape(-1, m),
                "c": np.array(self.c, dtype=np.float64)}

    @classmethod
    def from_arrays(cls, arrs, records):
        acc = cls()
        acc.n = arrs["n"].tolist(); acc.t = arrs["t"].tolist(); acc.loss = arrs["loss"].tolist()
        acc.snap_n = arrs["snap_n"].tolist(); acc.snap_t = arrs["snap_t"].tolist()
        acc.a = list(arrs["a"]); acc.W = list(arrs["W"]); acc.b = list(arrs["b"])
        acc.c = arrs["c"].tolist()
        acc.records = records
        return acc


def _shift_recorder(rec, n0, t0):
    def shifted(student, params, teacher, *, n, t, loss):
        return rec(student, params, teacher, n=n + n0, t=t + t0, loss=loss)
    return shifted


def _roundtrip(records):
    """Records as they will be read back from JSON (so resumed and fresh runs agree)."""
    from .store import _clean
    return json.loads(json.dumps(_clean(records), allow_nan=False))


def run_one(spec: dict, store_root: str, *, _stop_after_segments: int | None = None) -> dict:
    """Run (or resume, or skip) one run of a sweep and store it; returns a small summary dict.

    Safe to call in any worker process: everything it needs is in ``spec`` (plain data) and the
    store directory (which must be visible to the worker).  The run uses one BLAS thread
    (:mod:`popdyn.experiments._threads`).
    """
    from ._threads import blas_threads

    with blas_threads(1):
        return _run_one(spec, store_root, _stop_after_segments)


def _run_one(spec, store_root, _stop_after_segments):
    from ..dynamics import Schedule
    from ..dynamics import train as _train
    from ..models import Params

    store = Store(store_root)
    key = spec_key(spec)
    if store.has(key):
        return {"key": key, "status": store.record(key)["status"], "skipped": True,
                "resumed": False, "wall": 0.0}
    wall0 = time.perf_counter()
    student, teacher, p0, train, schedule, rec = build(spec)
    kw = _defaults(train)
    every = schedule.every
    K = -(-int(spec["store"]["checkpoint_every"]) // every) * every
    VY = teacher.variance
    max_updates = int(kw["max_updates"])
    max_time = float(kw["max_time"])
    ck = store.checkpoint(key)
    resumed = ck is not None
    if ck is None:
        acc, p, n0, t0, h0, L0, forced, ngrad, seg = _Acc(), p0, 0, 0.0, float(kw["h0"]), None, 0, 0, 0
        status = None
    else:
        arrs, meta = ck
        acc = _Acc.from_arrays(arrs, meta["records"])
        p = Params(arrs["p_a"], arrs["p_W"], arrs["p_b"], float(arrs["p_c"]))
        n0, t0, h0 = int(meta["n0"]), float(meta["t0"]), float(meta["h0"])
        L0, forced, ngrad, seg = float(meta["L0"]), int(meta["forced"]), int(meta["ngrad"]), int(meta["seg"])
        status = None
    while True:
        if n0 >= max_updates or t0 >= max_time:
            status = "horizon"
            break
        early = tuple(e - n0 for e in schedule.early if n0 < e <= n0 + K)
        local = Schedule(every=every, early=early)
        skw = dict(kw)
        skw["max_updates"] = min(K, max_updates - n0)
        skw["max_time"] = max_time - t0 if math.isfinite(max_time) else math.inf
        skw["h0"] = min(max(h0, kw["h_min"]), kw["h_max"])
        if L0 is not None:
            # keep the run's divergence bound explode·max(L0, V_Y) across segments
            Lk = float(acc.loss[-1])
            skw["explode"] = float(kw["explode"]) * max(L0, VY) / max(Lk, VY)
        tr = _train(student, p, teacher, schedule=local, recorder=_shift_recorder(rec, n0, t0), **skw)
        tr.records[:] = _roundtrip(tr.records)
        acc.add(tr, n0, t0, first=(seg == 0))
        if L0 is None:
            L0 = float(tr.loss[0])
        forced += int(tr.info["forced_steps"])
        ngrad += int(tr.info["grad_evals"])
        seg += 1
        if tr.n[-1] >= 1:
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
        meta = {"schema": SCHEMA, "n0": n0, "t0": t0, "h0": h0, "L0": L0, "forced": forced,
                "ngrad": ngrad, "seg": seg, "records": acc.records}
        arrs = acc.arrays(student.m, student.d)
        arrs.update({f"p_{k}": v for k, v in _params_arrays(p).items()})
        store.write_checkpoint(key, _identity(spec), arrs, meta)
        if _stop_after_segments is not None and seg >= _stop_after_segments:
            return {"key": key, "status": "interrupted", "skipped": False, "resumed": resumed,
                    "wall": time.perf_counter() - wall0}
    arrays = acc.arrays(student.m, student.d)
    record = summarize(spec, student, teacher, arrays, acc.records, status)
    record["info"] = {"grad_evals": ngrad, "forced_steps": forced, "segments": seg,
                      "segment_updates": K, "resumed": resumed,
                      "wall_time": time.perf_counter() - wall0}
    store.write_run(key, record, arrays)
    return {"key": key, "status": status, "skipped": False, "resumed": resumed,
            "wall": time.perf_counter() - wall0}


# ---------------------------------------------------------------------------- summary
_CK_KEYS = ("n", "t", "normalized_loss", "a_top", "a_min", "a_mean", "resolved", "gap")


def _ck_summary(rec: dict) -> dict:
    out = {k: rec[k] for k in _CK_KEYS if k in rec}
    from ..diagnostics.refit import KINDS

    for kind in KINDS:
        for k in (f"refit_{kind}", f"refit_{kind}_lower"):
            if k in rec:
                out[k] = rec[k]
    return out


def summarize(spec, student, teacher, arrays, records, status) -> dict:
    """The stored record of a finished run (without timing info)."""
    from .. import __version__
    from ..plateau import plateau, standard_plateaus

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
    if spec["diagnostics"].get("certify", True):
        rec["certified"] = {k: certify_state(student, teacher, arrays, i, spec)
                            for k, i in (("init", 0), ("plateau", iP))}
    return rec


def _b(br) -> dict:
    return {"lo": br.lo, "hi": br.hi, "provenance": br.provenance, "status": br.status}


def certify_state(student, teacher, arrays, i, spec) -> dict:
    """Certified brackets at snapshot ``i``: AGOP alignment (a_top, a_min, a_mean) and the
    ``certify_kinds`` refit risks in units of V_Y.  A failure to certify is recorded (as
    ``error``), never replaced by a point value."""
    from ..models import Params

    p = Params(arrays["a"][i], arrays["W"][i], arrays["b"][i], float(arrays["c"][i]))
    out = {"n": int(arrays["snap_n"][i])}
    dg = spec["diagnostics"]
    prec = int(dg.get("prec", 128))
    try:
        import certify
    except Exception as exc:  # pragma: no cover  (certify is part of the distribution)
        return {**out, "error": f"certify unavailable: {exc}"}
    try:
        al = certify.alignment(student, p, teacher.subspace, prec=prec)
        out.update({"a_top": _b(al.a_top), "a_min": _b(al.a_min), "a_mean": _b(al.a_mean)})
    except Exception as exc:
        out["alignment_error"] = f"{type(exc).__name__}: {exc}"
    for kind in dg.get("certify_kinds", ["same_budget"]):
        try:
            budget = dg.get("budget") if kind in ("bounded", "projected") else None
            rf = certify.refit_risk(student, p, teacher, kind=kind, budget=budget, prec=prec)
            out[f"refit_{kind}"] = _b(rf.normalized)
        except Exception as exc:
            out[f"refit_{kind}_error"] = f"{type(exc).__name__}: {exc}"
    return out


def load_run(store: Store, key: str) -> dict:
    """A stored run as (record, arrays)."""
    return store.record(key), store.arrays(key)


