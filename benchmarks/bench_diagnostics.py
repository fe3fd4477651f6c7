"""Cost of the central paper's diagnostics at one checkpoint, relative to one loss + gradient
evaluation, measured in the same run (goal: all diagnostics ≤ 3×).

Setting: d = 64, m = 256, ReLU student with biases, rank-8 additive h2 teacher
y = 8^{-1/2} Σ_i h2(u_i·x) (Kumar (arXiv 2609.39408), Figure 2), a state at initialization scale
0.5. "All diagnostics" = AGOP + alignment, the unrestricted, same-budget, bounded (B = 1) and
projected refits, and the neuron geometry (popdyn.diagnostics.diagnose).

Usage: python benchmarks/bench_diagnostics.py [--reps N] [--blas-threads N|default]
Prints medians (ms) and ratios; it is not a timed test.  BLAS runs single-threaded by default:
on a loaded machine multi-threaded OpenBLAS slowed a 256×256 ``eigh`` from ~10 ms to seconds
(threads spinning against other processes); ``--blas-threads default`` measures that case.
The script prints the load average and the thread settings it ran with.
"""
from __future__ import annotations

import argparse
import inspect
import os
import statistics
import sys
import time

if __name__ == "__main__":
    # BLAS threads must be fixed before numpy loads OpenBLAS: --blas-threads N (default 1;
    # "default" leaves the environment alone)
    _bt = "1"
    if "--blas-threads" in sys.argv:
        _bt = sys.argv[sys.argv.index("--blas-threads") + 1]
    if _bt != "default":
        os.environ["OPENBLAS_NUM_THREADS"] = _bt
        os.environ["OMP_NUM_THREADS"] = _bt

import numpy as np

import popdyn
from popdyn._moments import moments
from popdyn.diagnostics import agop_from_moments, alignment, diagnose, refit_problem
from popdyn.diagnostics.refit import solve_ball, solve_cutoff
from popdyn.objective import loss_and_grad

from _timing import paired


def _time(fn, reps):
    fn()                                        # warm-up (numba compilation, caches)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--blas-threads", default="1",
                    help="OpenBLAS/OpenMP threads (default 1; 'default' = leave the environment)")
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--r", type=int, default=8)
    args = ap.parse_args(argv)
    d, m, r = args.d, args.m, args.r
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    T = popdyn.Teacher.additive("h2", U, np.full(r, r ** -0.5))
    S = popdyn.Student(d=d, m=m, activation="relu", bias=True)
    p = S.init(0, 0.5, T)

    all_kinds = ("unrestricted", "same_budget", "bounded", "projected")
    lg = lambda: loss_and_grad(S, p, T)
    t_lg, t_all, q_all = paired(lg, lambda: diagnose(S, p, T, kinds=all_kinds, budget=1.0,
                                                      geometry=True), args.reps)
    _, t_rec, q_rec = paired(lg, lambda: diagnose(S, p, T), args.reps)
    # in a fused GD run the recorder gets the value moments the step computed at the snapshot
    # state (diagnose's private ``_moments``; older trees have no such path)
    reuse = "_moments" in inspect.signature(diagnose).parameters
    if reuse:
        Mv = moments(S, p, T, need="values")
        _, t_all_r, q_all_r = paired(lg, lambda: diagnose(S, p, T, kinds=all_kinds, budget=1.0,
                                                          geometry=True, _moments=Mv), args.reps)
        _, t_rec_r, q_rec_r = paired(lg, lambda: diagnose(S, p, T, _moments=Mv), args.reps)
    # breakdown
    M = moments(S, p, T, grad=False)
    prob = refit_problem(S, p, T, moments=M)
    parts = {
        "moments (C, B, μ0, Ct)": lambda: moments(S, p, T, grad=False),
        "AGOP + alignment": lambda: alignment(agop_from_moments(S, p, M.B), U),
        "unrestricted solve (equilibrated eigh)": lambda: solve_cutoff(prob),
        "ball solve (eigh + secular equation)": lambda: solve_ball(refit_problem(S, p, T, moments=M), 1.0),
    }
    threads = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                               "NUMBA_NUM_THREADS") if os.environ.get(k)}
    print(f"bench_diagnostics: d={d}, m={m}, r={r}, relu student with biases, h2 teacher; "
          f"medians of {args.reps} interleaved runs")
    print(f"  cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}, thread settings {threads or 'default'}")
    print(f"  one loss+gradient evaluation          {1e3 * t_lg:9.2f} ms   (1.00×)")
    print(f"  all diagnostics (4 refits + geometry) {1e3 * t_all:9.2f} ms   "
          f"(median ratio {q_all:.2f}×)   goal ≤ 3×")
    print(f"  recorder default (unrestricted + same-budget) {1e3 * t_rec:6.2f} ms   "
          f"(median ratio {q_rec:.2f}×)")
    if reuse:
        print(f"  all diagnostics, the step's moments reused {1e3 * t_all_r:6.2f} ms   "
              f"(median ratio {q_all_r:.2f}×)")
        print(f"  recorder default, the step's moments reused {1e3 * t_rec_r:5.2f} ms   "
              f"(median ratio {q_rec_r:.2f}×)")
    print("  breakdown:")
    for name, fn in parts.items():
        t = _time(fn, args.reps)
        print(f"    {name:<40} {1e3 * t:9.2f} ms   ({t / t_lg:.2f}×)")
    return q_all


if __name__ == "__main__":
    main()
