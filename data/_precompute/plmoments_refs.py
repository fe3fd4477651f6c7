"""30-digit mpmath references for popdyn._kernels.bvn (Φ₂) and popdyn._kernels.plmoments.

Writes ``data/refs/plmoments_refs.json``, read by ``tests/popdyn/test_bvn.py`` (key ``bvn``) and
``tests/popdyn/test_plmoments.py`` (key ``pl``).

The reference functions are the ones written in those two test files (one source): they are
imported from the files by path and use mpmath only -- no popdyn kernel is called.

* ``bvn``: Φ₂(h, k; r) with r defined by the exact binary values of 1 − r and 1 + r: h, k on
  [−9, 9], in the tails down to −12, equal and nearly equal limits; 1 − |r| in
  {1e−300, 1e−16, 1e−12, 1e−8, 1e−4, 0.01, 0.05, 0.075 (|r| = 0.925), 0.0749, 0.0751, 0.2,
  0.25, 0.7, 0.75, 1} on both signs of r.  By conditioning on the more binding variable,
  ``mpmath.quad`` with breakpoints around the mode and the inner step.
* ``pl``: the six pair moments C, B, A_ij, A_ji, D_ij, D_ji of two PL units σ = p relu + q id
  (relu, leaky 0.01/0.2, |t|, identity, relu(−t), random (p, q)), α ∈ {0, 1e−8, 1e−4, U(0.3, 3)},
  h = β/α in {0, U(−3, 3), U(−10, 10), U(−40, 40), ±1e3, ±1e8}, ρ from angles
  {0, π, ~1.4e−6 (1 − |ρ| = 1e−12), ~1.4e−4, acos(±0.925), acos(±0.9249), U(0, π)} -- random
  (seed 20240607) -- plus pinned edge cases; with the units' first moments and the scales used
  in the tolerances.  Integrals over Z₁ by global adaptive 24/48-point Gauss–Legendre.

Source: DESIGN §2–§3 (definitions), the tests' docstrings (method).
Runtime: about 3 minutes on one core (172 s measured; mpmath without gmpy).
Usage: python data/_precompute/plmoments_refs.py
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import time

import mpmath as mp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "data", "refs", "plmoments_refs.json")


def _load(name):
    path = os.path.join(ROOT, "tests", "popdyn", name + ".py")
    spec = importlib.util.spec_from_file_location("_ref_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bvn_cases(rng):
    cases = []
    omrs = [1e-300, 1e-16, 1e-12, 1e-8, 1e-4, 0.01, 0.05, 0.075, 0.0751, 0.0749, 0.2, 0.25, 0.7,
            0.75, 1.0]
    for omr in omrs:
        for sign in (1, -1):
            for kind in range(6):
                h, k = rng.uniform(-8, 8, 2)
                if kind == 0:
                    k = h
                elif kind == 1:
                    k = h + 1e-3
                elif kind == 2:
                    h, k = rng.uniform(-12, 0, 2)
                elif kind == 3:
                    h, k = rng.uniform(-4, 4, 2)
                cases.append((float(h), float(k), omr, sign))
    return cases


ACTS = [(1.0, 0.0), (0.99, 0.01), (0.8, 0.2), (2.0, -1.0), (0.0, 1.0), (1.0, -1.0)]


def rand_unit(rng):
    if rng.random() < 0.7:
        p, q = ACTS[rng.integers(len(ACTS))]
    else:
        p, q = rng.uniform(-2, 2, 2)
    c = rng.integers(6)
    al = [0.0, 1e-8, 1e-4, 1.0, 1.0, 1.0][c] * (1 if c == 0 else rng.uniform(0.3, 3))
    hc = rng.integers(8)
    h = [0.0, rng.uniform(-3, 3), rng.uniform(-3, 3), rng.uniform(-10, 10), rng.uniform(-40, 40),
         rng.choice([-1e3, 1e3]), rng.choice([-1e8, 1e8]), rng.uniform(-1, 1)][hc]
    be = al * h if al > 0 else rng.uniform(-3, 3)
    return (float(p), float(q), float(al), float(be))


def rand_angle(rng):
    c = rng.integers(8)
    if c == 0:
        return 0.0
    if c == 1:
        return math.pi
    if c == 2:
        return float(rng.choice([1e-6 * math.sqrt(2), math.pi - 1e-6 * math.sqrt(2), 1.4e-4,
                                 math.pi - 1.4e-4]))
    if c == 3:
        return math.acos(float(rng.choice([0.925, 0.9249, -0.925, -0.9249, 0.0])))
    return float(rng.uniform(0, math.pi))


PINNED = [
    # (ui, uj, angle)
    ((1.0, 0.0, 1.0, 0.0), (1.0, 0.0, 1.0, 0.0), 1.0),
    ((1.0, 0.0, 1.0, 0.0), (1.0, 0.0, 1.0, 0.0), 0.0),
    ((1.0, 0.0, 1.0, 0.0), (1.0, 0.0, 1.0, 0.0), math.pi),
    ((1.0, 0.0, 1.0, 0.3), (1.0, 0.0, 1.0, 0.3), 1.4142135623730951e-6),
    ((1.0, 0.0, 1.0, -3.0), (1.0, 0.0, 1.0, -3.0), 1.4142135623730951e-6),
    ((1.0, 0.0, 1.0, -10.0), (1.0, 0.0, 1.0, -10.0), 0.14),
    ((1.0, 0.0, 1.0, -10.0), (1.0, 0.0, 1.0, -8.0), 1.05),
    ((1.0, 0.0, 1.0, -20.0), (1.0, 0.0, 1.0, -20.0), 0.05),
    ((1.0, 0.0, 1.0, -35.0), (1.0, 0.0, 1.0, -34.0), 0.02),
    ((1.0, 0.0, 1.0, 5.0), (1.0, 0.0, 1.0, 6.0), 0.14),
    ((1.0, -1.0, 1.0, 5.0), (1.0, -1.0, 1.0, 6.0), 0.14),
    ((1.0, 0.0, 1.0, 0.3), (1.0, 0.0, 2.0, -0.1), math.pi - 1.4142135623730951e-6),
    ((1.0, 0.0, 0.0, 0.5), (1.0, 0.0, 1.0, 0.3), 0.4),
    ((1.0, 0.0, 0.0, -0.5), (0.8, 0.2, 0.0, 0.3), 0.4),
    ((1.0, 0.0, 0.0, 0.0), (2.0, -1.0, 1.0, 0.3), 0.4),
    ((1.0, 0.0, 1e-8, 1e-7), (1.0, 0.0, 1.0, 0.3), 1.37),
    ((1.0, 0.0, 1e-8, -1e-7), (1.0, 0.0, 1.0, -0.3), 0.45),
    ((1.0, 0.0, 1e-8, 1e-7), (1.0, 0.0, 1e-8, 1e-7), 1.4142135623730951e-6),
    ((1.0, 0.0, 1e-8, -1e-7), (1.0, 0.0, 1e-8, -1e-7), 0.0),
    ((1.0, 0.0, 1e-8, 1.0), (1.0, 0.0, 1.0, 0.0), 0.3),
    ((1.0, 0.0, 1e-300, 1.0), (0.8, 0.2, 1.0, -0.4), 0.3),
    ((1.0, 0.0, 1.0, 40.0), (1.0, 0.0, 1.0, -40.0), 2.0),
    ((1.0, 0.0, 1.0, 40.000001), (1.0, 0.0, 1.0, 39.999999), 0.001),
    ((0.99, 0.01, 1.0, -25.0), (0.99, 0.01, 1.0, -25.0), 0.01),
    ((2.0, -1.0, 1.3, 0.0), (2.0, -1.0, 0.7, 0.0), 2.5),
    ((0.0, 1.0, 1.3, 0.4), (2.0, -1.0, 0.7, 0.0), 0.0),
    ((1.0, -1.0, 1.0, 1.0000001), (1.0, 0.0, 1.0, 0.9999999), 0.2),
    ((1.0, 0.0, 1.0, 3.0), (1.0, -1.0, 1.0, 3.0), math.pi - 0.01),
    ((1.0, 0.0, 2.0, -7.0), (0.8, 0.2, 0.5, -2.0), math.acos(0.925)),
    ((1.0, 0.0, 2.0, -7.0), (1.0, 0.0, 0.5, -2.0), math.acos(-0.925)),
    ((1.7, -0.4, 1.1, -2.2), (-0.6, 1.3, 0.9, 1.5), 2.2),
]


def main():
    t0 = time.time()
    tb = _load("test_bvn")
    tp = _load("test_plmoments")
    rng = np.random.default_rng(20240607)
    out = {"meta": {"source": "data/_precompute/plmoments_refs.py", "dps": 30}}
    bv = []
    for (h, k, omr, sign) in bvn_cases(rng):
        _, o1, o2 = tb.corr_triple(omr, sign)
        ref = tb.bvn_ref(h, k, o1, o2, sign)
        bv.append({"h": h, "k": k, "omr": omr, "sign": sign, "ref": mp.nstr(ref, 25)})
    out["bvn"] = bv
    print(f"bvn: {len(bv)} cases, {time.time() - t0:.0f} s", flush=True)
    pairs = [(rand_unit(rng), rand_unit(rng), rand_angle(rng)) for _ in range(230)] + PINNED
    pl = []
    for n, (ui, uj, ang) in enumerate(pairs):
        rho, omr, opr = tp.corr_from_angle(ang)
        ref, sc, fi, fj = tp.ref_pair(ui, uj, rho, omr, opr)
        pl.append({"ui": list(ui), "uj": list(uj), "rho": rho, "omr": omr, "opr": opr,
                   "ref": {k: mp.nstr(v, 25) for k, v in ref.items()},
                   "scale": {k: mp.nstr(v, 10) for k, v in sc.items()},
                   "first_i": [mp.nstr(v, 25) for v in fi],
                   "first_j": [mp.nstr(v, 25) for v in fj]})
        if n % 50 == 0:
            print(f"pl: {n}/{len(pairs)}, {time.time() - t0:.0f} s", flush=True)
    out["pl"] = pl
    out["meta"]["runtime_s"] = round(time.time() - t0)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=0)
    print(f"wrote {OUT}: {len(bv)} bvn, {len(pl)} pl cases in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
