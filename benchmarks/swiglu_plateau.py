"""SwiGLU student on a rank-one cubic teacher: does leading-AGOP alignment rise during the loss
plateau?  (Seed paper 003, Figure 3 and Tables 3–5: d = 16, m = 64, adaptive Euler flow with
ε = 0.05, loss stop at normalized loss 0.5.)

Setting (declared before running; nothing is tuned on the outcome): teacher y = h3(u·x),
u = e_1; SwiGLUStudent(d=16, m=64) with the exactly fitted intercept, init scale 0.05
(a, g, v ~ N(0, s²), N(0, s²/d)), flow ε = 0.05, h0 = 0.05, head-rate multiplier 1 (and 0.01
for seed 0 as the paper's slower-head variant), at most 4000 updates, loss target 0.5.
The plateau is the δ-prefix of popdyn.plateau with δ = 1e−3 (and 1e−4) on the normalized loss
2L/V_Y; P is the last diagnostic (every 10 updates, denser early) inside the prefix.
Printed: A_top = A_min at n = 0 and at P, the unrestricted refit risk R/V_Y at 0 and P, the
prefix endpoint (update, flow time), the final normalized loss and the status.

Usage: python benchmarks/swiglu_plateau.py [seeds...]
"""
import sys
import time

import numpy as np

import popdyn
from popdyn.diagnostics import alignment, gate_geometry
from popdyn.plateau import plateau


def recorder(student, params, teacher, *, n, t, loss):
    M = popdyn.agop(student, params)
    al = alignment(M, teacher.subspace)
    r = popdyn.refit_risk(student, params, teacher)
    gg = gate_geometry(params, teacher)
    return {"n": n, "t": t, "a_top": al.a_top, "resolved": al.resolved,
            "refit": r.normalized, "gate_w": gg.gate_weighted_angle}


def run(seed, head=1.0, d=16, m=64, scale=0.05, max_updates=4000):
    T = popdyn.Teacher.additive("h3", np.eye(d)[:1])
    S = popdyn.SwiGLUStudent(d, m)
    p = S.init(seed, scale, T)
    t0 = time.perf_counter()
    tr = popdyn.train(S, p, T, method="flow", eps=0.05, h0=0.05, head_lr_mult=head,
                      max_updates=max_updates, loss_target=0.5,
                      schedule=popdyn.Schedule(every=10, early=(1, 2, 5)), recorder=recorder)
    wall = time.perf_counter() - t0
    ell = tr.normalized_loss
    out = []
    for delta in (1e-3, 1e-4):
        pl = plateau(ell, delta=delta, n=tr.n, t=tr.t)
        inside = [r for r in tr.records if r["n"] <= pl.end_n]
        P = inside[-1]
        r0 = tr.records[0]
        out.append(f"  delta={delta:g}: prefix end n={pl.end_n} t={pl.end_t:.1f} "
                   f"loss {ell[0]:.6f}->{ell[pl.end]:.6f}; diagnostic P at n={P['n']} "
                   f"(t={P['t']:.1f}): A_top {r0['a_top']:.3f}->{P['a_top']:.3f} "
                   f"(resolved {P['resolved']}), refit R/V_Y {r0['refit']:.3f}->{P['refit']:.3f}, "
                   f"gate angle {r0['gate_w']:.1f}->{P['gate_w']:.1f} deg")
    last = tr.records[-1]
    print(f"seed {seed} head_lr_mult={head}: status {tr.status}, updates {tr.n[-1]}, "
          f"t_f={tr.t[-1]:.1f}, final loss {ell[-1]:.4f}, final A_top {last['a_top']:.3f}, "
          f"final refit {last['refit']:.3f}  [{wall:.0f} s]")
    print("\n".join(out))
    sys.stdout.flush()


def main():
    seeds = [int(s) for s in sys.argv[1:]] or [0, 1, 2]
    for s in seeds:
        run(s)
    run(0, head=0.01)


if __name__ == "__main__":
    main()
