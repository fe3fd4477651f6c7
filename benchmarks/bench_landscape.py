"""Costs of popdyn.landscape: exact Hessian and critical-point finder.

For m = 3, 6, 12 in d = 2 and d = 8 (bias-free relu student with the learned skip and an
intercept; teacher: three planar relu features with positive weights, data/configs/landscape
"tri_skew" embedded in span(e1, e2)), prints

* the time of one exact loss + gradient + Hessian (``loss_grad_hessian``) and, as the baseline
  timed in the same run, of one exact loss + gradient of popdyn's moment engine
  (``popdyn.loss_and_grad``), with their ratio;
* the time per start of the critical-point finder (trust-exact + Newton polish) and the number
  of Hessian-size linear solves it implies, over ``--starts`` declared starts;
* if ``certify.critical_point`` exists (:mod:`certify.critical`), the seconds of one
  certification at the same (d, m): the strict global minimum of a width-m student against m
  spread planar features (:func:`spread_teacher`; the census teacher's minima at m > k are
  degenerate and cannot be certified strict), with the verdict reached (otherwise says so).

First, for students WITH biases (relu, skip, intercept; popdyn.landscape._biased, formulas
B-1..B-10) against the same teacher with biases 0.2, −0.3, 0.1 on its units, the time of one
exact loss + gradient + Hessian and of the engine's loss + gradient at the same state (the
baseline, timed in the same run), with their ratio, at m = 3, 6, 12 in d = 2 and d = 8.

Run:  python benchmarks/bench_landscape.py [--starts N] [--biased-only]
"""
import sys
import time

import numpy as np

import popdyn
from popdyn import landscape as ls
from proofs_checks.landscape_checks import (_critical_point_function, declared_starts,
                                            make_teacher)

from _timing import best_of


def spread_teacher(d, k):
    """k planar relu features at angles 300°·j/k with weights 1 + 0.1 j: no two antipodal (with
    the skip, an antipodal pair trades mass along a flat direction, relu(z) − relu(−z) = z), so
    the global minimum of a width-k student is strict and certifiable."""
    ang = np.deg2rad(300.0 * np.arange(k) / k)
    U = np.zeros((k, d))
    U[:, 0], U[:, 1] = np.cos(ang), np.sin(ang)
    return popdyn.Teacher.network("relu", 1.0 + 0.1 * np.arange(k), U)


def _certify_cost(cert, d, m):
    """Seconds of one certify.critical_point call at the (strict) global minimum of a width-m
    student against :func:`spread_teacher` (k = m), found by the finder from a perturbed start."""
    T = spread_teacher(d, m)
    st = popdyn.Student(d, m, "relu", bias=False, skip=True, intercept=True)
    rng = np.random.default_rng(1)
    W = T.U * T.weights[:, None] + 0.05 * rng.standard_normal((m, d))
    p0 = popdyn.Params(np.ones(m), W, np.zeros(m), 0.0, np.zeros(d))
    pts, _ = ls.find_critical_points(st, T, [p0])
    if not pts:
        return "no critical point"
    cp = pts[0]
    t0 = time.perf_counter()
    try:
        v = cert(cp.point.student, cp.point.params(), T, radius=None, prec=128).verdict
    except Exception as exc:  # noqa: BLE001
        v = type(exc).__name__
    return f"{time.perf_counter() - t0:.2f} ({cp.kind} -> {v})"


def biased_costs():
    """The biased-student table (see the module docstring)."""
    print(f"{'d':>3} {'m':>3} {'P':>4} | {'biased L+g+H (ms)':>17} {'engine L+g (ms)':>15} "
          f"{'ratio':>6}")
    for d in (2, 8):
        T0 = make_teacher("tri_skew", d)
        T = popdyn.Teacher.network("relu", T0.weights, T0.U, bias=[0.2, -0.3, 0.1])
        for m in (3, 6, 12):
            st = popdyn.Student(d, m, "relu", bias=True, skip=True, intercept=True)
            p = st.init(0, 1.0)
            P = ls.layout(st).size
            th = best_of(lambda: ls.loss_grad_hessian(st, p, T), reps=5, inner=3)
            te = best_of(lambda: popdyn.loss_and_grad(st, p, T), reps=5, inner=3)
            print(f"{d:3d} {m:3d} {P:4d} | {1e3 * th:17.3f} {1e3 * te:15.3f} {th / te:6.2f}",
                  flush=True)


def main(n_starts: int):
    cert = _critical_point_function()
    print(f"{'d':>3} {'m':>3} {'P':>4} | {'L+g+H (ms)':>11} {'engine L+g (ms)':>15} {'ratio':>6} | "
          f"{'finder s/start':>14} {'kinds':>30} | certify s/point")
    for d in (2, 8):
        T = make_teacher("tri_skew", d)
        for m in (3, 6, 12):
            st = popdyn.Student(d, m, "relu", bias=False, skip=True, intercept=True)
            p = declared_starts(st, [0], 1.0)[0]
            P = ls.layout(st).size
            th = best_of(lambda: ls.loss_grad_hessian(st, p, T), reps=5, inner=3)
            te = best_of(lambda: popdyn.loss_and_grad(st, p, T), reps=5, inner=3)
            starts = declared_starts(st, range(n_starts), 1.0)
            t0 = time.perf_counter()
            pts, fails = ls.find_critical_points(st, T, starts)
            tf = (time.perf_counter() - t0) / n_starts
            kinds = {}
            for cp in pts:
                kinds[cp.kind] = kinds.get(cp.kind, 0) + 1
            ks = ",".join(f"{k[:6]}:{v}" for k, v in sorted(kinds.items())) + f",fail:{len(fails)}"
            if cert is None:
                cs = "n/a (certify.critical_point unavailable)"
            else:
                cs = _certify_cost(cert, d, m)
            print(f"{d:3d} {m:3d} {P:4d} | {1e3 * th:11.3f} {1e3 * te:15.3f} {th / te:6.2f} | "
                  f"{tf:14.3f} {ks:>30} | {cs}", flush=True)


if __name__ == "__main__":
    n = 5
    if "--starts" in sys.argv:
        n = int(sys.argv[sys.argv.index("--starts") + 1])
    biased_costs()
    if "--biased-only" not in sys.argv:
        main(n)
