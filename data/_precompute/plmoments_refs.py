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
* ``ramps``: the four canonical ramp moments of :mod:`popdyn._kernels.plmoments`,
  P̃ = P(Z₁>x, Z₂>y), S̃ij = E[1{Z₁>x}(Z₂−y)₊], S̃ji, R̃ = E[(Z₁−x)₊(Z₂−y)₊] for thresholds
  x, y ≥ −1 and correlations r with 1 ∓ r exact in binary (r = k/2³⁰, or 1 − |r| = 2^−40 ≈ 1e−12,
  2^−27, 2^−14, 2^−7, 0.075, or in [1e−4, 0.075] with close thresholds in the tail; and
  |r| < 0.3 with thresholds in [−1, 2.5]):
  thresholds of units with biases ~α (x ∈ [−1, 3]) and ~3α (up to 9),
  read by ``tests/popdyn/test_plmoments_estimates.py`` (the kernels' error estimates against the
  actual error).  By conditioning on Z₁: 1-D integrals of positive integrands by the global
  adaptive 24/48-point Gauss–Legendre ``vquad`` of tests/popdyn/test_plmoments.py (relative
  tolerance 1e−26), with geometric breakpoints on the integrand's decay scale and around the
  conditional step, at 40 digits.
* ``pl``: the six pair moments C, B, A_ij, A_ji, D_ij, D_ji of two PL units σ = p relu + q id
  (relu, leaky 0.01/0.2, |t|, identity, relu(−t), random (p, q)), α ∈ {0, 1e−8, 1e−4, U(0.3, 3)},
  h = β/α in {0, U(−3, 3), U(−10, 10), U(−40, 40), ±1e3, ±1e8}, ρ from angles
  {0, π, ~1.4e−6 (1 − |ρ| = 1e−12), ~1.4e−4, acos(±0.925), acos(±0.9249), U(0, π)} -- random
  (seed 20240607) -- plus pinned edge cases; with the units' first moments and the scales used
  in the tolerances.  Integrals over Z₁ by global adaptive 24/48-point Gauss–Legendre.

Source: docs/design.md §2–§3 (definitions), the tests' docstrings (method).
Runtime: about 6 minutes on one core (mpmath without gmpy).
Usage: python data/_precompute/plmoments_refs.py [--only-ramps]
(``--only-ramps`` recomputes only the key ``ramps``, about 3 minutes, and keeps the others.)
"""
from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=None)
def _load(name):
    path = os.path.join(ROOT, "tests", "popdyn", name + ".py")
    spec = importlib.util.spec_from_file_location("_ref_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ramps_ref(x, y, om, op, sign, dps=40):
    """(P̃, S̃ij, S̃ji, R̃) at thresholds x, y and correlation r.

    r is 1 − om for sign = +1 and op − 1 for sign = −1 (om, op the exact binary inputs);
    Z₂ | Z₁ = z ~ N(r z, s²), s = √(om·op).  Pure mpmath."""
    with mp.workdps(dps):
        x, y, om, op = mp.mpf(x), mp.mpf(y), mp.mpf(om), mp.mpf(op)
        r = 1 - om if sign > 0 else op - 1
        s = mp.sqrt(om * op)

        def hh0(w):
            return mp.ncdf(-w)

        def hh1(w):
            return mp.npdf(w) - w * mp.ncdf(-w)   # 40 digits: the cancellation costs < 20

        def F(z):
            ph = mp.npdf(z)
            w = (y - r * z) / s
            a0 = ph * hh0(w)
            a1 = ph * s * hh1(w)
            return (a0, a1, (z - x) * a0, (z - x) * a1)

        # breakpoints: geometric from x on the decay scale of the integrand at z = x (the
        # factor φ(z) decays on 1/max(x, 1), the conditional factor Hh((y − r z)/s) on
        # s/(|r| max(w, 1)), w = (y − r x)/s), and around the conditional step z = y/r; the
        # integrand is below 1e−400 beyond x + 45
        sc = 1 / max(x, 1)
        if r != 0:
            sc = min(sc, s / (abs(r) * max((y - r * x) / s, 1)))
        L = x + 45
        pts = {x, L}
        d = sc / 8
        while d < 45:
            pts.add(x + d)
            d *= 2
        if r != 0:
            zt = y / r
            w = s / abs(r)
            for c in (0, 1, -1, 4, -4, 16, -16, 64, -64, 256, -256):
                if x < zt + c * w < L:
                    pts.add(zt + c * w)
        return _load("test_plmoments").vquad(F, sorted(pts), 4)


def ramps_cases(rng):
    """(x, y, om, op, sign): x, y ≥ −1; 1 − r and 1 + r exact in binary."""
    cases = []
    for n in range(150):
        c = n % 3
        if c == 0:      # biases ~α: h ~ N(0, 1)-ish, x ∈ [−1, 3]
            x, y = rng.uniform(-1, 3, 2)
        elif c == 1:    # biases ~3α: thresholds up to 9
            x, y = rng.uniform(-1, 9, 2)
        else:           # one unit in the tail, one near its kink
            x, y = rng.uniform(2, 9), rng.uniform(-1, 1)
        if n % 5 == 4:
            om = float(rng.choice([2.0 ** -40, 2.0 ** -27, 2.0 ** -14, 2.0 ** -7, 0.075]))
            sign = int(rng.choice([1, -1]))
            if sign > 0:
                omr, opr = om, 2.0 - om
            else:
                omr, opr = 2.0 - om, om
        else:
            r = round(float(rng.uniform(-0.93, 0.93)) * 2 ** 30) / 2 ** 30
            omr, opr = 1.0 - r, 1.0 + r
            sign = 1 if r >= 0 else -1
        cases.append((float(x), float(y), omr, opr, sign))
    for n in range(40):
        # small correlations (where Φ₂ alone would take Genz's 6-point rule) with thresholds
        # near the kinks, the zero of the weight x − t y of S̃ inside [0, r]
        x, y = rng.uniform(-1, 2.5, 2)
        r = round(float(rng.uniform(-0.3, 0.3)) * 2 ** 30) / 2 ** 30
        cases.append((float(x), float(y), 1.0 - r, 1.0 + r, 1 if r >= 0 else -1))
    # pinned (found in the benchmark's configuration): |r| < 0.3, V < 0.05, the weight of S̃
    # changes sign inside [0, r] -- Genz's 6-point rule misses S̃ by 1e−14 relative there
    for x, y, r in ((0.269, 1.777, 0.286), (1.614, 0.301, 0.295), (1.623, -0.202, -0.292),
                    (0.241, 1.645, 0.287)):
        r = round(r * 2 ** 30) / 2 ** 30
        cases.append((x, y, 1.0 - r, 1.0 + r, 1 if r >= 0 else -1))
    for n in range(50):
        # nearly aligned units (1 − |r| ∈ [1e−4, 0.075], exact binary) with close thresholds
        # in the tail: neither the Price form from r = 0 nor the separated forms apply
        x = rng.uniform(0, 6)
        y = max(-1.0, x + rng.uniform(-1, 1))
        om = round(10 ** rng.uniform(-4, math.log10(0.075)) * 2 ** 40) / 2 ** 40
        if n % 5 == 4:
            cases.append((float(x), float(y), 2.0 - om, om, -1))
        else:
            cases.append((float(x), float(y), om, 2.0 - om, 1))
    return cases


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


def ramps_all():
    rng = np.random.default_rng(20261129)
    res = []
    for (x, y, omr, opr, sign) in ramps_cases(rng):
        ref = ramps_ref(x, y, omr, opr, sign)
        res.append({"x": x, "y": y, "omr": omr, "opr": opr, "sign": sign,
                    "ref": [mp.nstr(v, 25) for v in ref]})
    return res


def main():
    t0 = time.time()
    if "--only-ramps" in sys.argv:
        # add / replace the key ``ramps`` of the existing file, keep the rest
        with open(OUT) as f:
            out = json.load(f)
        out["ramps"] = ramps_all()
        with open(OUT, "w") as f:
            json.dump(out, f, indent=0)
        print(f"wrote {OUT}: {len(out['ramps'])} ramps cases in {time.time() - t0:.0f} s")
        return 0
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
    out["ramps"] = ramps_all()
    out["meta"]["runtime_s"] = round(time.time() - t0)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=0)
    print(f"wrote {OUT}: {len(bv)} bvn, {len(pl)} pl cases in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
