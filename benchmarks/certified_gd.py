"""Certified population GD iterates (certify.gd): one small configuration end to end.

    python benchmarks/certified_gd.py [N]        # N updates (default 2000)

Configuration (declared): bias-free ReLU student, m = 2, d = 4, standard scaling, no intercept;
teacher relu(e_1·x); start a, W ~ 1e-3·N(0, 1) from numpy's default_rng(1) (both a_j > 0);
fixed-step GD with η = lr = 0.01; plateau rule δ = 1e−3 on the normalized loss 2L/V_Y
(popdyn.plateau).  Prints the certified release E next to popdyn.plateau's release on popdyn's
float run, the enclosure widths after 100, 1000 and N updates (of the exact iterates; and of
boxes that also hold popdyn's float iterates), the float losses' distance to the enclosures in
ulp, the certified AGOP alignment at N, and the cost (seconds per update, against popdyn's
float run timed in the same process)."""
from __future__ import annotations

import sys
import time

import numpy as np

import popdyn
from certify.gd import certified_gd


def main(N=2000):
    m, d, eta = 2, 4, 0.01
    rng = np.random.default_rng(1)
    W = rng.standard_normal((m, d)) * 1e-3
    a = rng.standard_normal(m) * 1e-3
    U = np.zeros((1, d))
    U[0, 0] = 1.0
    st = popdyn.Student(d, m, "relu", bias=False, intercept=False)
    T = popdyn.Teacher.network("relu", [1.0], U)
    t0 = time.perf_counter()
    tr = popdyn.train(st, popdyn.Params(a, W, np.zeros(m), 0.0), T, method="gd", lr=eta,
                      max_updates=N, schedule=popdyn.Schedule(every=1, early=()))
    t_float = time.perf_counter() - t0
    ell = tr.normalized_loss
    rel = popdyn.plateau(ell, delta=1e-3).release
    track = np.concatenate([tr.snapshots["a"], tr.snapshots["W"].reshape(N + 1, -1)], axis=1)
    t0 = time.perf_counter()
    ex = certified_gd(a, W, [1.0], U, eta=eta, n_steps=N, align_at=(N,))
    t_ex = time.perf_counter() - t0
    t0 = time.perf_counter()
    tk = certified_gd(a, W, [1.0], U, eta=eta, n_steps=N, track=track)
    t_tk = time.perf_counter() - t0
    print(f"configuration: m = {m}, d = {d}, eta = {eta}, N = {N}, start scale 1e-3 (rng 1)")
    print(f"plateau release (delta = 1e-3): certified {ex.E}; popdyn.plateau on the float run: {rel}")
    print(f"{'n':>6} {'loss enclosure (exact iterates)':>46} {'rel width':>10} {'box radius':>11} "
          f"{'box radius with float iterates':>31}")
    for n in sorted({0, 100, 1000, N} & set(range(N + 1))):
        w = (ex.loss_hi[n] - ex.loss_lo[n]) / ex.loss_hi[n]
        print(f"{n:>6} [{ex.loss_lo[n]:.17g}, {ex.loss_hi[n]:.17g}] {w:>10.2e} {ex.width[n]:>11.2e} "
              f"{tk.width[n]:>31.2e}")
    gap = np.maximum(tk.loss_lo - ell, ell - tk.loss_hi)
    inside = int(np.sum(gap <= 0))
    print(f"float losses inside the enclosure at their own (tracked) boxes: {inside} of {N + 1}; "
          f"largest distance outside {np.max(gap / np.spacing(ell)):.2f} ulp")
    al = ex.alignment[N]
    print(f"AGOP alignment at n = {N}: a_top [{al.a_top.lo:.12f}, {al.a_top.hi:.12f}] ({al.status})")
    print(f"cost: certified {t_ex:.1f} s ({1e3 * t_ex / N:.1f} ms/update), tracked {t_tk:.1f} s, "
          f"float run {t_float:.2f} s; ratio certified/float {t_ex / t_float:.0f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
