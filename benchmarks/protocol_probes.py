"""Protocol probes for the seed paper's tables (docs/protocol.md, probes P1-P4).

Short runs, seeds 0-2, one change at a time; printed numbers are the ones quoted in
docs/protocol.md.  Nothing here is tuned: each probe varies one declared reading.

Usage:
    python benchmarks/protocol_probes.py relu SCALING INTERCEPT LR CONVENTION [MAX_UPDATES]
        Table 2 setting (d=64, m=32, s=0.01), the four teachers, seeds 0-2: E under the
        delta=1e-3 and 5% ratio prefixes of MSE/V_Y (and of MSE/E[y^2]); INTERCEPT is
        none | fitted | trained0; CONVENTION norm | entry.
    python benchmarks/protocol_probes.py swiglu SEED SCALE CONVENTION HEAD M CLOCK [MAX_UPDATES]
        h3 rank one at d=16: R_0, A_top(0), t_P (delta=1e-3), t_f, l_f.
"""
import sys
import time

import numpy as np

import popdyn
from popdyn.diagnostics import alignment
from popdyn.plateau import plateau

LINKS = {"raw": "silu", "cen": "silu_centered", "relu": "relu", "sin": "sin"}


def relu_probe(link, seed, scaling, icpt, lr, conv="norm", d=64, m=32, s=0.01, maxu=1500):
    T = popdyn.Teacher.additive(LINKS[link], np.eye(d)[:2]).normalized()
    S = popdyn.Student(d, m, intercept=(icpt != "none"), scaling=scaling)
    p = S.init(seed, s, T if icpt == "fitted" else None, convention=conv)
    tr = popdyn.train(S, p, T, method="gd", lr=lr, max_updates=maxu,
                      schedule=popdyn.Schedule(every=10 ** 9, early=()))
    L = 2 * tr.loss
    V, mu = T.variance, T.mean
    out = {}
    for nm, ell in (("V", L / V), ("Ey2", L / (V + mu ** 2))):
        out[nm + "d3"] = plateau(ell, delta=1e-3).end_n
        out[nm + "r5"] = plateau(ell, ratio=0.05).end_n
    return out, L[-1] / V


def swiglu_probe(seed, scale, conv, head, m=64, d=16, clock="standard", maxu=3000, target=0.5):
    T = popdyn.Teacher.additive("h3", np.eye(d)[:1])
    S = popdyn.SwiGLUStudent(d, m, clock=clock)
    p = S.init(seed, scale, T, convention=conv)
    R0 = popdyn.refit_risk(S, p, T).normalized
    A0 = alignment(popdyn.agop(S, p), T.subspace).a_top
    t0 = time.time()
    tr = popdyn.train(S, p, T, method="flow", eps=0.05, h0=0.05, head_lr_mult=head,
                      max_updates=maxu, loss_target=target,
                      schedule=popdyn.Schedule(every=10 ** 9, early=()))
    ell = tr.normalized_loss
    pl = plateau(ell, delta=1e-3, n=tr.n, t=tr.t)
    print(f"seed {seed} scale {scale} {conv} head {head} m {m} clock {clock}: l0 {ell[0]:.7f} "
          f"R0 {R0:.3f} A0 {A0:.3f} tP {pl.end_t:.1f} (n {pl.end_n}) tf {tr.t[-1]:.1f} "
          f"lf {ell[-1]:.4f} {tr.status} n {tr.n[-1]} [{time.time() - t0:.0f}s]", flush=True)


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "relu":
        scaling, icpt, lr, conv = a[2], a[3], float(a[4]), a[5]
        maxu = int(a[6]) if len(a) > 6 else 1500
        for link in LINKS:
            rows = [relu_probe(link, sd, scaling, icpt, lr, conv, maxu=maxu) for sd in range(3)]
            keys = rows[0][0].keys()
            print(f"{scaling} {icpt} lr={lr} {conv} {link:5s} "
                  + " ".join(f"{k}:{[r[0][k] for r in rows]}" for k in keys)
                  + f" L_end {[round(float(r[1]), 4) for r in rows]}", flush=True)
    else:
        seed, scale, conv, head, m, clock = int(a[2]), float(a[3]), a[4], float(a[5]), int(a[6]), a[7]
        maxu = int(a[8]) if len(a) > 8 else 3000
        swiglu_probe(seed, scale, conv, head, m=m, clock=clock, maxu=maxu,
                     target=0.5 if m == 64 else 0.9)
