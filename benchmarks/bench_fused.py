"""Fused PL-student path (popdyn._kernels.fused) against the general dispatcher, same run.

For the four teachers of ``bench_sweep.py`` (d = 64, m = 32, relu student with biases, init 0.01)
the script times, interleaved in rounds (best of each, this machine is shared and noisy):

* one loss-and-gradient evaluation: ``popdyn.objective.loss_and_grad`` (general path) vs
  ``dynamics._Fused.evaluate`` (one compiled call), at the initial state and after 2,000 GD
  updates (lr 0.05; neurons partly aligned, the costlier pair geometry);
* 300 GD updates with snapshots every 100 (``popdyn.train`` with the fused path switched off vs on).

Printed: milliseconds and the ratio general / fused (> 1: the fused path is faster), and the
share of the fused evaluation spent in the student–student pair moments
(``pl_self_moments``), the part no restructuring removes.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_fused.py
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _timing import best_interleaved  # noqa: E402


def main() -> int:
    import bench_sweep as B

    import popdyn
    from popdyn import config as C
    from popdyn import dynamics
    from popdyn._kernels import plmoments as pl
    from popdyn._moments import geometry, student_units
    from popdyn.experiments import runner
    from popdyn.objective import loss_and_grad

    print(f"bench_fused: d = 64, m = 32, relu student with biases; machine: {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    for spec in C.expand(B.config(1, 10, 100)):
        student, teacher, p0, train, _, _ = runner.build(spec)
        kw = dynamics.TrainSettings.from_config(train).kwargs()
        fz = dynamics._Fused.make(student, teacher)
        warm = popdyn.train(student, p0, teacher, **{**kw, "max_updates": 2000},
                            schedule=popdyn.Schedule(every=10_000, early=()))
        line = [f"  {spec['teacher']['label']:>13}:"]
        for name, p in (("init", p0), ("n=2000", warm.final)):
            su = student_units(student, p)
            R, OMR, OPR = geometry(su, su)
            m = student.m
            out = [np.empty((m, m)) for _ in range(4)]

            def self_only():
                pl.pl_self_moments(su.p, su.q, su.al, su.be, R, OMR, OPR, *out,
                                   pl.RTOL, pl.ATOL, pl.QTOL, pl.MAXINT)

            tg, tf, ts = best_interleaved([lambda: loss_and_grad(student, p, teacher, check=False),
                                lambda: fz.evaluate(p), self_only])
            line.append(f"{name}: general {1e3 * tg:.3f} ms, fused {1e3 * tf:.3f} ms "
                        f"(ratio {tg / tf:.2f}; pair moments {ts / tf:.0%} of fused)")
        sched = popdyn.Schedule(every=100, early=())
        times = {}
        for flag in (False, True, False, True):
            dynamics._FUSED = flag
            t0 = time.perf_counter()
            popdyn.train(student, p0, teacher, **{**kw, "max_updates": 300}, schedule=sched)
            dt = time.perf_counter() - t0
            times[flag] = min(times.get(flag, np.inf), dt)
        dynamics._FUSED = True
        line.append(f"300 GD updates: general {times[False]:.2f} s, fused {times[True]:.2f} s "
                    f"(ratio {times[False] / times[True]:.2f})")
        print(line[0] + " " + line[1] + "\n" + " " * 16 + line[2] + "\n" + " " * 16 + line[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
