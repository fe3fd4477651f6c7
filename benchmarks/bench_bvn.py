"""Φ₂ per pair: the vectorized :func:`bvn_cdf_batch` against one :func:`bvn_cdf` call per pair.

The pairs are those of the biased GD step of ``bench_peers.py`` (d = 64, a ReLU student with
biases N(0, 0.1²) at m = ``--m`` against the 4-unit ReLU teacher: the student–student pairs
i ≤ j and the student–teacher pairs whose ramps are both non-trivial, one Φ₂ each,
``bench_peers.ramp_pairs``) and, with ``--sweep``, the pairs of the states that the runs of
``bench_sweep.py`` visit (m = 32, seed 0 of each teacher, states every 2,000 of 20,000
updates): late states have many nearly aligned units, |r| ≥ 0.925.

Timed interleaved in rounds in one process (best of each; this machine is shared and noisy):

* ``scalar`` -- a jitted loop calling :func:`popdyn._kernels.bvn.bvn_cdf` once per pair (the
  baseline);
* ``batch`` -- :func:`popdyn._kernels.bvn_batch.bvn_cdf_batch` on the same arrays;
* ``kernel`` -- what the biased pair kernel evaluates for these pairs at |r| < 0.925: the Price
  node sums of :func:`popdyn._kernels.pl_batch._price_batch` (Genz's θ-integral on the rule
  :func:`popdyn._kernels.pl_ramps._price_rule` chooses, with thresholds x = −h, y = −k; one
  pass gives Φ₂ together with S̃ij, S̃ji and R̃, the other three ramp moments), per rule group,
  on the pairs of the three single-panel classes (the kernel's Φ₂ inside the fused step; the
  pairs at |r| ≥ 0.925 take its closed forms there).

Printed: nanoseconds per pair of each (``kernel``: per pair of the classes it covers), the
ratio scalar/batch, the share of pairs in each class (the
single-panel 6/12/20-point rules at |r| < 0.925, |r| ≥ 0.925, left to ``bvn_cdf``, the
several-panel rule at |r| < 0.925), and the
largest difference between the two (relative to max(Φ₂, 1e−300), and absolute).
Goal: Φ₂ ≤ 40 ns per pair (printed for ``batch`` and for ``kernel``).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_bvn.py [--m 256] [--rounds 9] [--sweep]
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _timing import best_interleaved  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--sweep", action="store_true",
                    help="also the pairs of bench_sweep.py's trajectory states")
    args = ap.parse_args(argv)
    import popdyn
    from bench_peers import ramp_pairs
    from popdyn._kernels._jit import jit
    from popdyn._kernels.bvn import bvn_cdf
    from popdyn._kernels.bvn_batch import _classify, bvn_cdf_batch
    from popdyn._kernels.pl_batch import (_GL6_U, _GL6_W, _GL12_U, _GL12_W, _GL20_U, _GL20_W,
                                          _price_batch)
    from popdyn._kernels.pl_front import _price_logvar_bf
    from popdyn._kernels.pl_ramps import _price_rule

    rules = [(_GL6_U, _GL6_W), (_GL12_U, _GL12_W), (_GL20_U, _GL20_W)]

    def kernel_items(h, k, r, cls):
        """Per kernel rule: the Price items (x, y, r̃, 0, asin r̃, out) of the single-panel
        pairs."""
        sel = np.nonzero(cls <= 2)[0]
        x, y, rt = -h[sel], -k[sel], r[sel]
        rule = np.array([_price_rule(x[i], y[i], rt[i], _price_logvar_bf(x[i], y[i], rt[i])[0])
                         for i in range(sel.shape[0])])
        items = []
        for q in range(3):
            w = rule == q
            if w.any():
                items.append((q, x[w].copy(), y[w].copy(), rt[w].copy(), np.zeros(w.sum()),
                              np.arcsin(rt[w]), np.empty((w.sum(), 7))))
        return sel.shape[0], items

    @jit
    def scalar_loop(h, k, r, om, op, out):
        for i in range(h.shape[0]):
            out[i] = bvn_cdf(h[i], k[i], r[i], om[i], op[i])

    cases = []
    d, m = 64, args.m
    rng = np.random.default_rng(0)
    U = rng.standard_normal((4, d)) / math.sqrt(d)
    T = popdyn.Teacher.network("relu", np.ones(4), U)
    p = popdyn.Student(d, m, bias=False, intercept=False).init(0, 0.5, T)
    b = rng.standard_normal(m) * 0.1
    cases.append((f"biased step, m = {m}", ramp_pairs(p.W, b, T.theta, T.alpha, T.bias)))
    if args.sweep:
        import bench_sweep as B
        from popdyn import config as C
        parts = []
        for spec in C.expand(B.config(1, 10, 100)):
            student, teacher, states = B.trajectory_states(spec, 20_000, 2_000)
            for st in states:
                parts.append(ramp_pairs(st.W, st.b, teacher.theta, teacher.alpha, teacher.bias))
        cases.append(("bench_sweep states, m = 32", tuple(np.concatenate(c) for c in zip(*parts))))
    print(f"bench_bvn: machine {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    ok = [True, True]
    for name, (h, k, r, om, op) in cases:
        n = h.shape[0]
        o1, o2 = np.empty(n), np.empty(n)
        cls = np.empty(n, np.int64)
        _classify(h, k, r, om, op, cls)
        share = np.bincount(cls, minlength=6) / n
        nk, items = kernel_items(h, k, r, cls)

        def kernel():
            for q, *a in items:
                _price_batch(*rules[q], *a)
        fs = [lambda: scalar_loop(h, k, r, om, op, o1), lambda: bvn_cdf_batch(h, k, r, om, op, o2),
              kernel]
        for f in fs:
            f()
        inner = max(1, 200_000 // n)
        ts, tb, tk = best_interleaved(fs, rounds=args.rounds, inner=inner)
        dif = np.abs(o1 - o2)
        print(f"{name}: {n} pairs; classes 6/12/20-point, |r| >= 0.925, scalar, several panels: "
              + " / ".join(f"{100 * s:.1f}%" for s in share))
        print(f"  scalar {ts / n * 1e9:6.1f} ns/pair   batch {tb / n * 1e9:6.1f} ns/pair   "
              f"scalar/batch {ts / tb:5.2f}   kernel {tk / max(nk, 1) * 1e9:6.1f} ns/pair "
              f"(Φ₂, S̃ij, S̃ji, R̃; {nk} pairs)")
        print(f"  batch - scalar: largest difference {dif.max():.1e} abs, "
              f"{(dif / np.maximum(o1, 1e-300)).max():.1e} rel")
        ok[0] &= tb / n * 1e9 <= 40.0
        ok[1] &= tk / max(nk, 1) * 1e9 <= 40.0
    print(f"goal Φ₂ <= 40 ns per pair: batch {'met' if ok[0] else 'NOT met'}; kernel "
          f"{'met' if ok[1] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
