"""Benchmark: one SwiGLU loss+gradient versus a relu Student of the same size.

d = 64, m = 64, the same teacher for both (rank-one additive h3, the paper's SwiGLU teacher,
and a gated GELU(s)·t teacher), at a small and at a unit initialization scale (the SiLU
Hermite order grows with the gate norms).  Each time is the best of 7 repetitions after a
warm-up; the ratio is printed from this one run (goal ≤ 4×).  The machine is shared: run with
one BLAS thread,

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_swiglu.py
"""
import os

import numpy as np

import popdyn
from popdyn.swiglu import moments

from _timing import best_of


def main():
    d = m = 64
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}  d={d} m={m}")
    U = np.eye(d)[:2]
    teachers = {"h3 (rank 1)": popdyn.Teacher.additive("h3", U[:1]),
                "GELU(s)t": popdyn.Teacher.gated("gelu", U)}
    for tname, T in teachers.items():
        for scale in (0.01, 1.0):
            Sw = popdyn.SwiGLUStudent(d, m)
            pw = Sw.init(0, scale, T)
            Sr = popdyn.Student(d, m, activation="relu")
            pr = Sr.init(0, scale, T)
            fw = lambda: popdyn.loss_and_grad(Sw, pw, T)
            fr = lambda: popdyn.loss_and_grad(Sr, pr, T)
            fw(); fr()
            tw, trl = best_of(fw), best_of(fr)
            N = moments(Sw, pw, T).N
            print(f"{tname:12s} scale={scale:5g}: SwiGLU {1e3 * tw:7.2f} ms (SiLU order N={N}), "
                  f"relu Student {1e3 * trl:7.2f} ms, ratio {tw / trl:5.2f}x")


if __name__ == "__main__":
    main()
