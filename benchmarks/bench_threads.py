"""One biased loss-and-gradient evaluation on 1 and on 2 (or more) kernel threads.

The state: a relu student with biases, d = 64 (the paper's width range), m = 1024 by default,
against the paper's h3 teacher on two axes; the evaluation is the fused step of
``popdyn.loss_and_grad`` (the pair moments are the parallel part, :mod:`popdyn.threads`).
Rounds alternate the thread counts (1, T, T, 1, ...) in one process, after an untimed warm-up;
the medians and best times of each and their ratio are printed, with whether the results are
the same bits on every count.  Wall clock: on a shared machine run it when the cores are idle.

Run:  python benchmarks/bench_threads.py [--m 1024] [--d 64] [--threads 2] [--rounds 8]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import popdyn
from popdyn import threads as T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    d, m = args.d, args.m
    S = popdyn.Student(d=d, m=m, activation="relu")
    p = popdyn.Params(rng.standard_normal(m) / m, rng.standard_normal((m, d)) / np.sqrt(d),
                      rng.standard_normal(m) / np.sqrt(d), 0.0)
    Tt = popdyn.Teacher.additive("h3", np.eye(d)[:2]).normalized("second_moment")
    counts = (1, args.threads)
    out, times = {}, {n: [] for n in counts}
    for n in counts:                               # warm-up (loads the kernels), untimed
        with T.threads(n):
            L, g = popdyn.loss_and_grad(S, p, Tt)[:2]
            out[n] = (L, g.a.copy(), g.W.copy(), g.b.copy())
    for r in range(args.rounds):
        order = counts if r % 2 == 0 else counts[::-1]
        for n in order:
            with T.threads(n):
                t0 = time.perf_counter()
                popdyn.loss_and_grad(S, p, Tt)
                times[n].append(time.perf_counter() - t0)
    same = out[1][0] == out[args.threads][0] and all(
        np.array_equal(x, y) for x, y in zip(out[1][1:], out[args.threads][1:]))
    med = {n: statistics.median(v) for n, v in times.items()}
    best = {n: min(v) for n, v in times.items()}
    print(f"biased relu loss_and_grad, d = {d}, m = {m}, {args.rounds} rounds")
    for n in counts:
        print(f"  {n} thread(s): median {med[n] * 1e3:.1f} ms, best {best[n] * 1e3:.1f} ms")
    print(f"  speed-up on {args.threads} threads: median {med[1] / med[args.threads]:.2f}x, "
          f"best {best[1] / best[args.threads]:.2f}x; same bits: {same}")


if __name__ == "__main__":
    main()
