"""Cost of a certified critical point (certify.critical_point).

    python benchmarks/bench_critical.py            # m = 3, 6, 12 in d = 2 and d = 8

Configuration (declared): bias-free relu student, no intercept, standard scaling; teacher
Σ_t relu(z_t·x) with k = m + 1 directions z_t ~ N(0, I_d) (numpy default_rng(seed = m + 100 d)),
output weights 1; start u_j = z_j + 0.3 N(0, I_d) for j < m (all heads +1); L-BFGS-B on the
float closed form in reduced coordinates (gtol 1e−13), then certify.critical_point at its
default radius (1e−8 max(1, |x̂|∞)), prec 128.  Prints per (m, d): the verdict, seconds per
certified point (best of 3), and the ratio against one popdyn.loss_and_grad call at the same
state timed in the same run (the machine is shared: ratios, not seconds, are comparable).
"""
from __future__ import annotations

import sys
import time

import numpy as np
from scipy.optimize import minimize

import popdyn
from certify.critical import _FloatB, _lgh, _problem, critical_point, from_reduced

sys.path.append(__file__.rsplit("/", 1)[0])
from _timing import best_of  # noqa: E402


def _point(m, d):
    rng = np.random.default_rng(m + 100 * d)
    Z = rng.standard_normal((m + 1, d))
    T = popdyn.Teacher.network("relu", np.ones(m + 1), Z)
    S = popdyn.Student(d, m, "relu", bias=False, intercept=False)
    x0 = (Z[:m] + 0.3 * rng.standard_normal((m, d))).ravel()
    prob, _ = _problem(S, from_reduced(S, x0, np.ones(m)), T)

    def fg(x):
        L, G, _ = _lgh(x, prob, _FloatB, hess=False, refuse_coincident=False)
        return float(L), np.asarray(G, dtype=np.float64)

    r = minimize(fg, x0, jac=True, method="L-BFGS-B", options=dict(maxiter=20000, gtol=1e-13,
                                                                    ftol=1e-16))
    return S, from_reduced(S, r.x, np.ones(m)), T


def main():
    print(f"{'m':>3} {'d':>3} {'P':>4} {'verdict':>17} {'s/point':>9} {'ratio':>9}  reason")
    for d in (2, 8):
        for m in (3, 6, 12):
            S, p, T = _point(m, d)
            res = [None]

            def cert():
                res[0] = critical_point(S, p, T)

            t = best_of(cert, reps=3)
            base = best_of(lambda: popdyn.loss_and_grad(S, p, T), reps=5, inner=20)
            c = res[0]
            print(f"{m:>3} {d:>3} {c.box.shape[0] if c.box is not None else m * d:>4} "
                  f"{c.verdict:>17} {t:>9.3f} {t / base:>9.0f}  {c.reason[:70]}", flush=True)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.1f} s")
