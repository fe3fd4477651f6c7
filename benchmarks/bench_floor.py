"""What the sweep benchmark costs at least: the GD step alone, and its pair moments alone.

``bench_sweep.py`` times the whole sweep (50 seeds × 4 teachers at d = 64, m = 32, 20,000 GD
updates; goal 250 s on two cores).  This script measures the parts that bound it from below, on
the states the runs actually visit: for each teacher of ``bench_sweep.py`` and seeds
0 … ``--seeds``−1 it runs the trajectory (20,000 updates, states every ``--every``) and times,
interleaved in rounds on every state (best of each; this machine is shared and noisy):

* one fused loss-and-gradient evaluation (``dynamics._Fused.evaluate``: what one GD update
  costs, diagnostics excluded);
* the student–student pair moments alone (``pl_self_moments``) at the kernels' tolerances
  (rtol 5e−14, atol 5e−16) and, for comparison only, at relaxed tolerances (rtol 1e−10 and
  1e−8): the evaluators' choices (rules, panels) follow the geometry of the pair, so relaxing
  the target removes little work.

Printed per teacher: microseconds per evaluation (means over states and seeds) and the pair
moments' share of the step; then the implied sweep time of each part,
runs × updates × (mean time) / workers, against the goal.  These are lower bounds of the sweep
(no diagnostics, certification, store or start-up; perfect scaling over the workers), not
predictions of it.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_floor.py [--seeds 3] [--every 2000]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _timing import best_interleaved  # noqa: E402

TOLS = [(5e-14, 5e-16), (1e-10, 1e-12), (1e-8, 1e-10)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--updates", type=int, default=20_000)
    ap.add_argument("--every", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    args = ap.parse_args(argv)
    import bench_sweep as B

    from popdyn import config as C
    from popdyn import dynamics
    from popdyn._kernels import plmoments as pl
    from popdyn._moments import geometry, student_units

    assert (pl.RTOL, pl.ATOL) == TOLS[0], "update TOLS[0] to the kernels' tolerances"
    print(f"bench_floor: d = 64, m = 32, relu student with biases, seeds 0–{args.seeds - 1}, "
          f"states every {args.every} of {args.updates} GD updates; machine: {os.cpu_count()} "
          f"cores, load {os.getloadavg()[0]:.2f}")
    means = []
    for lab, _ in B.TEACHERS:
        acc = np.zeros(1 + len(TOLS))
        ns = 0
        for spec in C.expand(B.config(args.seeds, 10, 100)):
            if spec["teacher"]["label"] != lab:
                continue
            student, teacher, states = B.trajectory_states(spec, args.updates, args.every)
            fz = dynamics._Fused.make(student, teacher)
            for st in states:
                su = student_units(student, st)
                R, OMR, OPR = geometry(su, su)
                out = [np.empty((student.m, student.m)) for _ in range(4)]

                def pairs(rtol, atol, su=su, R=R, OMR=OMR, OPR=OPR, out=out):
                    pl.pl_self_moments(su.p, su.q, su.al, su.be, R, OMR, OPR, *out,
                                       rtol, atol, pl.QTOL, pl.MAXINT)

                fns = [lambda st=st: fz.evaluate(st)] + [
                    lambda r=r, a=a, f=pairs: f(r, a) for r, a in TOLS]
                for f in fns:
                    f()                                   # compile / load
                acc += best_interleaved(fns, rounds=3, inner=10)
                ns += 1
        acc /= ns
        means.append(acc)
        print(f"  {lab:>13}: GD step {1e6 * acc[0]:6.1f} µs; pair moments "
              + ", ".join(f"rtol {r:.0e} {1e6 * t:6.1f} µs" for (r, _), t in zip(TOLS, acc[1:]))
              + f" ({acc[1] / acc[0]:.0%} of the step at the kernels' rtol)")
    mean = np.mean(means, axis=0)
    runs = 200
    scale = runs * 20_000 / args.workers
    print(f"  implied sweep time ({runs} runs × 20,000 updates / {args.workers} workers; "
          "lower bounds, goal 250 s):")
    print(f"    GD steps alone:                 {scale * mean[0]:6.0f} s")
    for (r, _), t in zip(TOLS, mean[1:]):
        print(f"    pair moments alone, rtol {r:.0e}: {scale * t:6.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
