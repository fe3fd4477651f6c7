"""Reference unrestricted refit risks of relu students with one nearly affine unit against tanh
network teachers, for tests/popdyn/test_refit_accuracy.py.

The infimum over (a′, c′) of E[(Σ_j a′_jσ(w_j·x + b_j) + c′ − y)²] is V_c − g_cᵀG_c⁻¹g_c with
the centered moments G_c = C − μμᵀ, g_c = E[σy] − μE[y], V_c = Var(y).  C, μ, E[σy], E[y] and
Var(y) are recovered exactly from tests/_mpref.py (pure mpmath, 2-D Gaussian quadrature, no
popdyn code): its gradient ∂L/∂a_j = E[(f − y)σ_j] is affine in (a, c), so the gradients at
(a, c) = (0, 0), (e_k, 0) and (0, 1) give E[σ_jy], C_jk and μ_j.  The solve runs in mpmath at
the working precision (40 digits; the unit of |w| = 1e−6 makes G_c's condition ~1e12).  Inputs
are fixed decimals (exact float64 values stored as hex).

Runtime: a few minutes.  Usage: python data/_precompute/refit_affine_refs.py
"""
from __future__ import annotations

import json
import os
import sys
import time

import mpmath as mp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import _mpref as R  # noqa: E402  (independent of popdyn)

PATH = os.path.join(ROOT, "data", "refs", "refit_affine_refs.json")
DPS = 40

CASES = [
    ("relu_affine_1e-6_tanh", {
        "W": [[0.8, -0.3, 0.5], [-0.2, 0.9, 0.4], [6e-7, -8e-7, 0.0]],
        "b": [0.2, -0.5, 0.3], "a": [0.7, -0.4, 0.2], "c": 0.0,
        "teacher": {"kind": "network", "activation": "tanh", "U": [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]],
                    "V": [1.0, -0.7], "bias": [0.25, -0.5]}}),
    ("relu_affine_1e-8_tanh", {
        "W": [[0.8, -0.3, 0.5], [3e-9, 4e-9, 0.0], [-0.2, 0.9, 0.4]],
        "b": [0.2, 0.9, -0.5], "a": [0.7, 0.3, -0.4], "c": 0.0,
        "teacher": {"kind": "network", "activation": "tanh", "U": [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]],
                    "V": [1.0, -0.7], "bias": [0.25, -0.5]}}),
]


def grads(inp, a, c):
    case = dict(inp, a=a, c=c, activation="relu")
    out = R.compute(case)
    return out["grad"]["a"], out["grad"]["c"], out["teacher_mean"], out["teacher_variance"]


def infimum(inp):
    m = len(inp["W"])
    with mp.workdps(DPS + 10), R.pair_memo():
        g0, _, Ey, Vy = grads(inp, [0.0] * m, 0.0)           # −E[σ_j y]
        C = [[None] * m for _ in range(m)]
        for k in range(m):
            e = [0.0] * m
            e[k] = 1.0
            gk, _, _, _ = grads(inp, e, 0.0)
            for j in range(m):
                C[j][k] = gk[j] - g0[j]
        g1, _, _, _ = grads(inp, [0.0] * m, 1.0)
        mu = [g1[j] - g0[j] for j in range(m)]
        Gc = mp.matrix(m, m)
        for j in range(m):
            for k in range(m):
                Gc[j, k] = (C[j][k] + C[k][j]) / 2 - mu[j] * mu[k]
        gc = mp.matrix([-g0[j] - mu[j] * Ey for j in range(m)])
        x = mp.lu_solve(Gc, gc)
        inf = Vy - sum(gc[j] * x[j] for j in range(m))
        return inf, Vy


def main():
    t0 = time.time()
    out = []
    for name, inp in CASES:
        inf, Vy = infimum(inp)
        rec = {"name": name, "activation": "relu",
               "inputs": {k: ([[float(v).hex() for v in r] for r in inp[k]] if k == "W" else
                              [float(v).hex() for v in inp[k]]) for k in ("W", "b", "a")},
               "teacher": {"kind": "network", "activation": "tanh",
                           "U": [[float(v).hex() for v in r] for r in inp["teacher"]["U"]],
                           "V": [float(v).hex() for v in inp["teacher"]["V"]],
                           "bias": [float(v).hex() for v in inp["teacher"]["bias"]]},
               "unrestricted": mp.nstr(inf, 30), "variance": mp.nstr(Vy, 30)}
        out.append(rec)
        print(name, rec["unrestricted"], f"{time.time() - t0:.0f}s", flush=True)
    with open(PATH, "w") as fh:
        json.dump({"source": "data/_precompute/refit_affine_refs.py (tests/_mpref.py)",
                   "dps": DPS, "runtime_s": round(time.time() - t0), "cases": out}, fh, indent=1)


if __name__ == "__main__":
    main()
