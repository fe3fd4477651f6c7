"""Cost of the rigorous (validated Taylor, certify.ode) specialization times against the
numerical (LSODA tolerance refinement) ones, timed in the same run.

    python benchmarks/bench_timescale.py            # per-enclosure seconds and the ratio

Stiff opposite gauges (Δ ≤ −4: a/|w| ≤ 1/10 at c0 = 1) go through the verified slow-manifold
tube (certify.gauge), the others through the explicit Taylor–Lohner integrator; the "path"
column says which.

Each row: one (c0, a/|w|) single-neuron flow with cos0 = 1/√10 and thresholds (0.5, 0.9) (one
integration gives both crossing times); seconds of the rigorous path, of the numerical path,
their ratio, the validated steps and the relative width of the rigorous bracket.  The figures are
best-of-2 on a shared machine (ratios are the meaningful numbers)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of  # noqa: E402

from certify.gauge import rigorous_specialization_times  # noqa: E402
from popdyn.gauge import reduced_specialization_times  # noqa: E402

CASES = [(1e-5, 16.0), (1e-5, 1 / 16), (1e-5, 4096.0), (1e-5, 1 / 4096), (1.0, 10.0), (1.0, 0.1),
         (1.0, 20.0), (1.0, 1 / 20), (1.0, 1 / 40), (1.0, 1 / 80), (1.0, 1 / 160), (10.0, 1 / 32)]


def main():
    cos0 = 1 / np.sqrt(10)
    thr = (0.5, 0.9)
    print(f"{'c0':>7} {'a/|w|':>10} {'rigorous s':>11} {'numerical s':>12} {'ratio':>8} "
          f"{'steps':>6} {'rel width':>10} {'path':>9}")
    tot_r = tot_n = 0.0
    for c0, ratio in CASES:
        out = {}

        def rig():
            out["r"] = rigorous_specialization_times(c0, ratio, cos0, thr)

        tr = best_of(rig, reps=2)
        tn = best_of(lambda: reduced_specialization_times(c0, ratio, cos0, thr), reps=2)
        bs, n = out["r"]
        w = max((b.hi - b.lo) / b.lo for b in bs)
        tot_r += tr
        tot_n += tn
        path = "tube" if "slow-manifold" in bs[-1].method else "explicit"
        print(f"{c0:>7g} {ratio:>10.4g} {tr:>11.3f} {tn:>12.4f} {tr / tn:>8.1f} {n:>6d} {w:>10.2e} "
              f"{path:>9}")
    print(f"total: rigorous {tot_r:.2f} s, numerical {tot_n:.3f} s, ratio {tot_r / tot_n:.1f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"wall {time.perf_counter() - t0:.1f} s")
