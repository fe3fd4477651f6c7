"""Sweep throughput: 50 seeds × 4 teachers at d = 64, m = 32, 20,000 updates, diagnostics every 100.

The four teachers are the central paper's Table 2 follow-up links (raw and centered additive SiLU,
additive ReLU, additive sine; rank two, normalized to unit variance), ReLU students with biases,
initialization scale 0.01, fixed-step gradient descent (step 0.05).  Reported:

* the single-process time of a run, per teacher, over the first ``--baseline-seeds`` seeds
  (``run_one`` in this process, fresh store; the mean over all of them is the baseline: the cost
  of a run varies with the seed, up to 2.5× for the SiLU teachers, so seed 0 alone would mix
  that variation into the ratio below), and how much of it is spent outside the
  gradient-descent kernel (diagnostics, checkpoints, certification, store: the per-run
  overhead);
* the sweep's wall time on the local process pool, seconds per run, and the ratio
  (wall / runs) / (single-run time) — 1/workers is perfect scaling;
* the goal: the full sweep in at most 250 s on a two-core machine.

Usage::

    python benchmarks/bench_sweep.py                       # full: 200 runs × 20,000 updates
    python benchmarks/bench_sweep.py --seeds 4 --updates 2000   # reduced (say so when reporting)

Certification at the plateau checkpoint is part of every run (as in `popdyn sweep`).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time

TEACHERS = [("raw SiLU", "silu"), ("centered SiLU", "silu_centered"), ("ReLU", "relu"),
            ("sine", "sin")]


def config(seeds: int, updates: int, every: int) -> dict:
    from popdyn import config as C

    return C.validate({
        "name": "bench_sweep",
        "teachers": [{"label": lab, "link": link, "rank": 2, "normalize": True}
                     for lab, link in TEACHERS],
        "student": {"d": 64, "m": 32, "activation": "relu", "bias": True},
        "init": {"scale": 0.01, "seeds": {"start": 0, "count": seeds}},
        "train": {"method": "gd", "lr": 0.05, "max_updates": updates},
        "schedule": {"every": every, "early": [1, 2, 5, 10, 20, 50]},
        "diagnostics": {"kinds": ["unrestricted", "same_budget"], "geometry": True,
                        "certify_kinds": ["same_budget"]},
        "store": {"checkpoint_every": 2000},
    })


def trajectory_states(spec: dict, updates: int, every: int):
    """Run ``spec``'s GD trajectory for ``updates`` updates (no diagnostics) and return
    (student, teacher, states): the initial state and the state after every ``every`` updates
    (the states the other benchmarks time the kernels on)."""
    import popdyn
    from popdyn.dynamics import TrainSettings
    from popdyn.experiments import runner

    student, teacher, p0, train, _, _ = runner.build(spec)
    kw = TrainSettings.from_config(train).kwargs()
    sched = popdyn.Schedule(every=10 ** 9, early=())
    p, states = p0, [p0]
    for _ in range(updates // every):
        p = popdyn.train(student, p, teacher, **{**kw, "max_updates": every},
                         schedule=sched).final
        states.append(p)
    return student, teacher, states


@contextlib.contextmanager
def kernel_timer():
    """Accumulate the time spent in the fused GD kernel (``popdyn._kernels.fused.pl_gd``, looked
    up by the integrator at every call) into the yielded list's first entry; yields None when
    the kernel is not there (nothing is patched then)."""
    from popdyn._kernels import fused

    kernel = getattr(fused, "pl_gd", None)
    if kernel is None:
        yield None
        return
    acc = [0.0]

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return kernel(*args, **kwargs)
        finally:
            acc[0] += time.perf_counter() - t0

    fused.pl_gd = timed
    try:
        yield acc
    finally:
        fused.pl_gd = kernel


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=50)
    p.add_argument("--updates", type=int, default=20_000)
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--baseline-seeds", type=int, default=3)
    args = p.parse_args(argv)
    from popdyn import config as C
    from popdyn.experiments import run_one, sweep

    cfg = config(args.seeds, args.updates, args.every)
    specs = C.expand(cfg)
    n_runs = len(specs)
    nb = max(1, min(args.baseline_seeds, args.seeds))
    firsts = [s for s in specs if s["init"]["seed"] == 0]          # one run per teacher
    base = [[s for s in specs if s["teacher"]["label"] == lab and s["init"]["seed"] < nb]
            for lab, _ in TEACHERS]
    with tempfile.TemporaryDirectory() as warm:
        # warm-up (numba cache load / compile) on short runs, not timed
        for s in firsts:
            run_one({**s, "train": {**s["train"], "max_updates": 5}}, warm)
    times, outside = [], []
    with tempfile.TemporaryDirectory() as one:
        for runs in base:
            t_teacher, o_teacher = [], []
            for s in runs:
                with kernel_timer() as kt:
                    t0 = time.perf_counter()
                    run_one(s, one)
                    t_teacher.append(time.perf_counter() - t0)
                if kt is not None:
                    o_teacher.append(t_teacher[-1] - kt[0])
            times.append(sum(t_teacher) / len(t_teacher))
            if o_teacher:
                outside.append(sum(o_teacher) / len(o_teacher))
    single = sum(times) / len(times)
    print(f"bench_sweep: {n_runs} runs ({len(TEACHERS)} teachers × {args.seeds} seeds), d = 64, "
          f"m = 32, {args.updates} updates, diagnostics every {args.every}; "
          f"{args.workers} worker(s); machine: {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}")
    print(f"  one run, single process (mean over seeds 0–{nb - 1}): " + ", ".join(
        f"{lab} {t:.2f} s" for (lab, _), t in zip(TEACHERS, times)) + f"; mean {single:.2f} s "
        f"({1e3 * single / args.updates:.2f} ms per update incl. diagnostics and certification)")
    if outside:
        mo = sum(outside) / len(outside)
        print("  outside the GD kernel (diagnostics, checkpoints, certification, store): "
              + ", ".join(f"{lab} {t:.2f} s" for (lab, _), t in zip(TEACHERS, outside))
              + f"; mean {mo:.2f} s per run ({100 * mo / single:.0f}% of the run)")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        res = sweep(cfg, d, workers=args.workers, progress=True)
        wall = time.perf_counter() - t0
    per = wall / n_runs
    print(f"  sweep wall time: {wall:.1f} s ({wall / 60:.2f} min) for {res['ran']} runs; "
          f"{per:.2f} s per run; ratio to one single-process run: {per / single:.3f} "
          f"(perfect scaling: {1 / args.workers:.3f})")
    full = args.seeds == 50 and args.updates == 20_000 and args.every == 100
    goal = 250.0
    est = wall if full else per * 200 * (20_000 / args.updates)
    print(f"  goal: full sweep < {goal:.0f} s; " + (f"measured {wall:.0f} s" if full else
          f"REDUCED run; naive extrapolation to the full sweep: ~{est:.0f} s "
          "(linear in runs and updates, not measured)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
