"""Timing helpers of the benchmark scripts (the machine is shared and noisy: every figure is a
ratio against a baseline timed in the same run, interleaved where it matters)."""
from __future__ import annotations

import statistics
import time


def best_of(f, reps=7, inner=1, clock=time.perf_counter):
    """Smallest mean time of ``inner`` calls of ``f`` over ``reps`` repetitions (seconds).

    ``clock``: wall time by default; ``time.process_time`` measures the CPU time of the process
    (all its threads), which a loaded machine inflates far less than the wall time."""
    ts = []
    for _ in range(reps):
        t0 = clock()
        for _ in range(inner):
            f()
        ts.append((clock() - t0) / inner)
    return min(ts)


def best_interleaved(fns, rounds=5, inner=20, clock=time.perf_counter):
    """:func:`best_of` for several functions, timed in interleaved rounds (f₁, f₂, …, f₁, …) so
    that load drift affects all alike; one time per function."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for k, f in enumerate(fns):
            best[k] = min(best[k], best_of(f, reps=1, inner=inner, clock=clock))
    return best


def paired(f_ref, f_test, reps):
    """Interleaved timing (ref, test, ref, test, …): medians of the two times and of the per-pair
    ratios test/ref."""
    f_ref(), f_test()
    r, t, q = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        f_ref()
        t1 = time.perf_counter()
        f_test()
        t2 = time.perf_counter()
        r.append(t1 - t0)
        t.append(t2 - t1)
        q.append((t2 - t1) / (t1 - t0))
    return statistics.median(r), statistics.median(t), statistics.median(q)
