"""Cost of certifying one checkpoint relative to its float64 diagnostics, in one run (goal:
≤ 50× at d = 16, m = 64; d = 64, m = 256 reported too).

Setting (as benchmarks/bench_diagnostics.py): ReLU student with biases at initialization scale
0.5, additive h2 teacher y = r^{-1/2} Σ_i h2(u_i·x) of rank r (r = 4 at d = 16, r = 8 at
d = 64).

* float64: the population loss, the AGOP and its alignment, and the unrestricted refit, from
  one moment evaluation (popdyn's engine and diagnostics, as the recorder does);
* certified: ``certify.loss`` + ``certify.alignment`` + ``certify.refit_risk("unrestricted")``
  at prec = 128, the three calls sharing one moment enclosure (the moment cache is cleared
  before every repetition, so each repetition pays for it once).

Timings are interleaved (float, certified, float, …) and the median of the per-pair ratios is
reported, so that load drift on a shared machine affects both alike.  Also printed: the widths
obtained.

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_certify.py [--reps N] [--sizes 16x64,64x256]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import certify
import popdyn
from certify.moments import clear_cache
from popdyn._moments import moments
from popdyn.diagnostics import agop_from_moments, alignment, refit_problem
from popdyn.diagnostics.refit import solve_cutoff
from popdyn.objective import _loss_from

from _timing import paired


def setting(d, m, r):
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    T = popdyn.Teacher.additive("h2", U, np.full(r, r ** -0.5))
    S = popdyn.Student(d=d, m=m, activation="relu", bias=True)
    return S, S.init(0, 0.5, T), T, U


def float_diag(S, p, T, U):
    M = moments(S, p, T, grad=False)
    L = _loss_from(S, p, T, M)
    al = alignment(agop_from_moments(S, p, M.B), U)
    rf = solve_cutoff(refit_problem(S, p, T, moments=M))
    return L, al, rf


def certified(S, p, T, U, prec=128):
    clear_cache()
    return (certify.loss(S, p, T, prec=prec), certify.alignment(S, p, U, prec=prec),
            certify.refit_risk(S, p, T, "unrestricted", prec=prec))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="16x64,64x256")
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    for spec in args.sizes.split(","):
        d, m = (int(v) for v in spec.split("x"))
        r = 4 if d <= 16 else 8
        S, p, T, U = setting(d, m, r)
        reps = args.reps if m <= 64 else max(1, min(args.reps, 3))
        tf, tc, q = paired(lambda: float_diag(S, p, T, U), lambda: certified(S, p, T, U), reps)
        L, al, rf = certified(S, p, T, U)
        print(f"d={d:3d} m={m:4d} r={r}: float64 {tf * 1e3:8.1f} ms, certified "
              f"{tc * 1e3:9.1f} ms, ratio {q:6.1f}x  (goal at d=16, m=64: <= 50x)")
        print(f"    loss {L.loss} rel. width {L.loss.rel_width:.2e} [{L.provenance}]")
        print(f"    A_min {al.a_min} A_mean {al.a_mean} A_top {al.a_top} (status {al.status}, "
              f"sin-theta bound {al.sin_theta:.2e})")
        print(f"    unrestricted refit {rf.risk} ({rf.status}); normalized {rf.normalized}")


if __name__ == "__main__":
    main()
