"""Student–student pair moments: batched (vectorized) evaluation against one pair at a time.

For the four teachers of ``bench_sweep.py`` (d = 64, m = 32, relu student with biases, init
0.01, GD step 0.05) the script runs each teacher's seed-0 trajectory for ``--updates`` updates,
keeps the states every ``--every`` updates, and times, interleaved in rounds (best of each; this
machine is shared and noisy):

* ``pl_self_moments`` (the batched evaluation the fused GD step uses) and
* ``pl_self_moments_pairwise`` (the same evaluators one pair at a time: the pre-0.3 kernel),

then prints the mean microseconds per evaluation over the states and the ratio
pairwise / batched (> 1: the batched evaluation is faster), per teacher and overall.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pairs.py [--updates 20000] [--every 1000]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _timing import best_interleaved  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=20_000)
    ap.add_argument("--every", type=int, default=1000)
    args = ap.parse_args(argv)
    import bench_sweep as B

    from popdyn import config as C
    from popdyn._kernels import plmoments as pl
    from popdyn._moments import geometry, student_units

    print(f"bench_pairs: d = 64, m = 32, relu student with biases, states every {args.every} of "
          f"{args.updates} GD updates; machine: {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}")
    tot = [0.0, 0.0]
    for spec in C.expand(B.config(1, 10, 100)):
        student, _, states = B.trajectory_states(spec, args.updates, args.every)
        t = [0.0, 0.0]
        for st in states:
            su = student_units(student, st)
            R, OMR, OPR = geometry(su, su)
            m = student.m
            out = [np.empty((m, m)) for _ in range(4)]
            a = (su.p, su.q, su.al, su.be, R, OMR, OPR, *out, pl.RTOL, pl.ATOL, pl.QTOL, pl.MAXINT)
            pl.pl_self_moments(*a), pl.pl_self_moments_pairwise(*a)      # compile / load
            tb, tp = best_interleaved([lambda: pl.pl_self_moments(*a),
                                       lambda: pl.pl_self_moments_pairwise(*a)], rounds=5, inner=20)
            t[0] += tb / len(states)
            t[1] += tp / len(states)
        tot[0] += t[0] / 4
        tot[1] += t[1] / 4
        print(f"  {spec['teacher']['label']:>13}: batched {1e6 * t[0]:7.1f} µs, pairwise "
              f"{1e6 * t[1]:7.1f} µs, ratio {t[1] / t[0]:.2f}")
    print(f"  {'mean':>13}: batched {1e6 * tot[0]:7.1f} µs, pairwise {1e6 * tot[1]:7.1f} µs, "
          f"ratio {tot[1] / tot[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
