"""High-precision references for the bounded refit of eq. (6) → data/refs/bounded_refit_refs.json.

Kumar (arXiv 2609.39408), eq. (6): R = inf E[y²] − 2cᵀv + vᵀHv over ‖v‖₂ ≤ a, ‖v‖₁ ≤ b.
Nothing from popdyn's numerics or certify is used:

* ``synthetic`` cases: H, c, E[y²] are float64 arrays (empirical moments of a random design,
  so R ≥ 0), taken as their exact binary values;
* ``population`` cases: relu / leaky relu students with biases against additive and network
  teachers (m = 2–4, d = 2–3); H_ij = E[σ_iσ_j]/(n_in_j), c_i = E[σ_i y]/n_i, E[y²] at 50 digits
  from tests/certify/_ref.py (2-D Gaussian quadrature of the conditional closed forms), with
  n_i = √(‖W_i‖² + B_i²) from the exact rational row;

and the minimum R* with its minimizer v* by the exhaustive KKT enumeration of
tests/_bounded_kkt.py at 40 digits.  Stored: the inputs (float64 as hex), H, c, E[y²], R*, v*
as 30-digit decimal strings.

Source: paper eq. (6), App. A.  Runtime: about 2 minutes on one core.
Usage: python data/_precompute/bounded_refit_refs.py
"""
from __future__ import annotations

import json
import os
import sys
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "certify"))

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

import _ref as R  # noqa: E402
from _bounded_kkt import kkt_minimum  # noqa: E402

OUT = os.path.join(ROOT, "data", "refs", "bounded_refit_refs.json")
DIG = 30


def s30(x):
    return mpmath.nstr(x, DIG, strip_zeros=False)


def hexs(a):
    return [float(x).hex() for x in np.ravel(a)]


def synthetic(seed, m, a, b):
    rng = np.random.default_rng(seed)
    n = m + 3
    X = rng.standard_normal((n, m))
    y = X @ rng.standard_normal(m) + 0.3 * rng.standard_normal(n)
    H = X.T @ X / n
    H = 0.5 * (H + H.T)
    c = X.T @ y / n
    e = float(y @ y / n)
    t = time.time()
    Rs, vs = kkt_minimum(H.tolist(), c.tolist(), e, a, b)
    print(f"synthetic seed {seed} m {m}: R* = {mpmath.nstr(Rs, 12)} ({time.time() - t:.1f} s)")
    return {"name": f"synthetic_{seed}", "m": m, "H": hexs(H), "c": hexs(c), "e": float(e).hex(),
            "l2_cap": float(a).hex(), "l1_cap": float(b).hex(), "R": s30(Rs),
            "v": [s30(x) for x in vs]}


def population(name, seed, m, d, act, slope, teacher, a, b):
    import popdyn   # only for the teacher / student objects _ref reads (no numerics)

    rng = np.random.default_rng(seed)
    W = rng.standard_normal((m, d))
    bias = rng.standard_normal(m)
    if teacher == "h3":
        U = np.eye(d)[:2]
        T = popdyn.Teacher.additive("h3", U, [0.8, 0.6])
    else:
        U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
        T = popdyn.Teacher.network("relu", [1.0, -0.7], U, [0.3, -0.2])
    S = popdyn.Student(d=d, m=m, activation=act, negative_slope=slope)
    p = popdyn.Params(np.ones(m), W, bias)
    t = time.time()
    C, _, _, Ct = R.moment_matrices(S, p, T, dps=50, with_B=False)
    _, ey2 = R.teacher_moments(S, p, T, dps=50)
    ctx = R.ctx
    with ctx.workdps(60):
        n = [ctx.sqrt(R.mpq(sum(Fraction(float(x)) ** 2 for x in W[i]) + Fraction(float(bias[i])) ** 2))
             for i in range(m)]
        wts = [R.mpq(Fraction(float(x))) for x in T.weights]
        H = [[C[i][j] / (n[i] * n[j]) for j in range(m)] for i in range(m)]
        c = [ctx.fsum(Ct[i][k] * wts[k] for k in range(len(wts))) / n[i] for i in range(m)]
    Rs, vs = kkt_minimum([[mpmath.mpf(x) for x in row] for row in H], [mpmath.mpf(x) for x in c],
                         mpmath.mpf(ey2), a, b)
    print(f"{name}: R* = {mpmath.nstr(Rs, 12)} ({time.time() - t:.1f} s)")
    tspec = ({"kind": "additive", "link": "h3", "U": hexs(U), "kappa": hexs([0.8, 0.6])}
             if teacher == "h3" else
             {"kind": "network", "activation": "relu", "V": hexs([1.0, -0.7]), "U": hexs(U),
              "bias": hexs([0.3, -0.2])})
    return {"name": name, "m": m, "d": d, "activation": act, "negative_slope": float(slope).hex(),
            "W": hexs(W), "b": hexs(bias), "teacher": tspec,
            "l2_cap": float(a).hex(), "l1_cap": float(b).hex(),
            "H": [s30(x) for row in H for x in row], "c": [s30(x) for x in c], "e": s30(ey2),
            "R": s30(Rs), "v": [s30(x) for x in vs]}


def main():
    t0 = time.time()
    cases = [synthetic(0, 2, 0.3, 0.4), synthetic(1, 3, 1.0, 1.2), synthetic(3, 2, 0.5, 2.0),
             synthetic(4, 3, 2.0, 0.5), synthetic(5, 4, 0.8, 1.0), synthetic(6, 4, 5.0, 7.0)]
    pops = [population("relu_h3_m2", 11, 2, 2, "relu", 0.01, "h3", 32.0, 64 * 2 ** 0.5),
            population("relu_h3_m3_capped", 12, 3, 3, "relu", 0.01, "h3", 0.05, 0.08),
            population("leaky_net_m3", 13, 3, 3, "leaky_relu", 0.25, "net", 0.6, 0.75),
            population("relu_h3_m4_capped", 14, 4, 3, "relu", 0.01, "h3", 0.07, 0.09)]
    out = {"source": "data/_precompute/bounded_refit_refs.py", "digits": DIG,
           "synthetic": cases, "population": pops}
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"wrote {OUT} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
