"""Cost of certifying one checkpoint relative to its float64 diagnostics for smooth and SwiGLU
students, measured side by side in one run.

Setting: d = 16, m = 64, additive h2 teacher of rank 4 (y = ½ Σ h2(u_i·x)), students with
biases at initialization scale 0.5 (smooth) or SwiGLU at scale 0.5.

* float64: population loss (with its error estimate), AGOP alignment and the unrestricted
  refit (popdyn's engine and diagnostics);
* certified: ``certify.loss`` + ``certify.alignment`` + ``certify.refit_risk("unrestricted")``
  at prec = 128 (moment caches cleared before each repetition).

Interleaved timings (float, certified, …); the median per-pair ratio is printed with the
widths obtained.

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_certify_smooth.py [--reps N]
       [--students silu,erf,tanh,gelu,swiglu] [--d 16] [--m 64]
"""
from __future__ import annotations

import argparse
import os
import warnings

import numpy as np

import certify
import popdyn
from certify.moments import clear_cache
from popdyn import swiglu as sw
from popdyn.diagnostics import agop, alignment, refit_risk

from _timing import paired


def setting(kind, d, m, r=4):
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    T = popdyn.Teacher.additive("h2", U, np.full(r, r ** -0.5))
    if kind == "swiglu":
        S = sw.SwiGLUStudent(d=d, m=m)
    else:
        S = popdyn.Student(d=d, m=m, activation=kind, bias=True)
    return S, S.init(0, 0.5, T), T, U


def float_diag(S, p, T, U):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # every family through the generic API (SwiGLU's own refit was folded into
        # popdyn.diagnostics.refit_risk); agop and population_loss under the rtol contract
        L = popdyn.population_loss(S, p, T, full_output=True)
        al = alignment(agop(S, p), U)
        rf = refit_risk(S, p, T, "unrestricted")
    return L, al, rf


def certified(S, p, T, U, prec=128):
    clear_cache()
    from certify import smooth as SM
    from certify import swiglu as CS
    SM._HTAB.clear()
    CS._SETUP_CACHE.clear()
    return (certify.loss(S, p, T, prec=prec), certify.alignment(S, p, U, prec=prec),
            certify.refit_risk(S, p, T, "unrestricted", prec=prec))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--students", default="silu,swiglu")
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--m", type=int, default=64)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}", flush=True)
    for kind in args.students.split(","):
        S, p, T, U = setting(kind, args.d, args.m)
        tf, tc, q = paired(lambda: float_diag(S, p, T, U), lambda: certified(S, p, T, U),
                           args.reps)
        L, al, rf = certified(S, p, T, U)
        print(f"{kind:7s} d={args.d} m={args.m}: float64 {tf * 1e3:9.1f} ms, certified "
              f"{tc * 1e3:10.1f} ms, ratio {q:7.1f}x", flush=True)
        print(f"    loss {L.loss} rel. width {L.loss.rel_width:.2e} [{L.provenance}]")
        print(f"    A_min {al.a_min} A_mean {al.a_mean} (status {al.status})")
        print(f"    unrestricted refit {rf.risk} ({rf.status}, {rf.provenance})", flush=True)


if __name__ == "__main__":
    main()
