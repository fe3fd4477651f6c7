"""Reproduce docs/design.md §7's table of gauge-separation regimes and time the gauge tools.

Prints

1. the regime table (quick and full settings of the ``gauge_separation`` check: tail local
   exponent brackets per regime, with the sweeps' ratios);
2. wall times: one ``decompose`` call (m = 64, d = 32, ReLU with biases, ReLU-network teacher)
   against one ``loss_and_grad`` call, one reduced single-neuron specialization time, and the
   engine-field cross-check of the same time.

Run:  python benchmarks/bench_gauge.py [--full]
"""
import sys
import time

import numpy as np

import popdyn
from popdyn import gauge
from proofs_checks.gauge_separation import FULL_REGIMES, QUICK_REGIMES

from _timing import best_of


def main(full: bool):
    regimes = FULL_REGIMES if full else QUICK_REGIMES
    ds = (10, 100, 1000) if full else (10, 100)
    thr = (0.5, 0.7, 0.9) if full else (0.5, 0.9)
    t0 = time.perf_counter()
    res = gauge.regime_table(regimes, ds=ds, thresholds=thr, tail=2)
    el = time.perf_counter() - t0
    print(f"docs/design.md §7 table reproduced ({'full' if full else 'quick'} settings; d ∈ {ds}, "
          f"thresholds {thr}; {el:.1f} s):\n")
    print(gauge.format_regime_table(res))
    for r in res:
        print(f"\n{r.regime.name}: T_fav·(a/|w|) ∈ [{r.fav_times_D.lo:.4g}, {r.fav_times_D.hi:.4g}]")
        for sw in r.sweeps:
            print(sw.table())

    rng = np.random.default_rng(0)
    d, m = 32, 64
    student = popdyn.Student(d, m, "relu")
    p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)) / np.sqrt(d), rng.normal(size=m) * 0.3, 0.1)
    teacher = popdyn.Teacher.network("relu", rng.normal(size=4), rng.normal(size=(4, d)))
    gauge.decompose(student, p, teacher)
    t_dec = best_of(lambda: gauge.decompose(student, p, teacher))
    t_lg = best_of(lambda: popdyn.loss_and_grad(student, p, teacher))
    t_red = best_of(lambda: gauge.reduced_specialization_times(1.0, 1 / 16, 1 / np.sqrt(10), [0.5, 0.9]), 3)
    t_eng = best_of(lambda: gauge.engine_specialization_time(10, 1.0, 1 / 16, 0.5), 1)
    print(f"\ndecompose (m={m}, d={d}): {t_dec * 1e3:.2f} ms vs loss_and_grad {t_lg * 1e3:.2f} ms "
          f"(ratio {t_dec / t_lg:.2f})")
    print(f"reduced specialization times (3 tolerances, D = 1/16): {t_red * 1e3:.1f} ms; "
          f"engine-field cross-check: {t_eng * 1e3:.0f} ms")


if __name__ == "__main__":
    main("--full" in sys.argv[1:])
