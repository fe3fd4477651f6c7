"""Reference values for the rigorous refits of relu / leaky_relu students against smooth teacher
networks (tests/certify/test_certify_pl_smooth.py).

Independent of popdyn's numerics and of certify: every moment is the 2-D Gaussian integral of
tests/certify/_ref.py (an outer mpmath quadrature of the smooth teacher unit times the textbook
conditional mean of the PL unit, E[relu(μ + τW)] = μΦ(μ/τ) + τφ(μ/τ)), at 32 digits, through
``smooth_refs.one`` (loss, E[y], E[y²], C, μ0, Ct, the AGOP eigenvalues and alignment scores,
and the refit optima of data/_precompute/certify_refs.py ``trs``).  No Hermite series, no
Mehler sums, no trapezoidal rule.

Geometry: a random unit, its duplicate, an antiparallel multiple, a zero unit, a unit exactly
along the first teacher row (ρ = 1: the Mehler tail at |ρ| = 1), one within 2^−20 of it and a
tiny unit (|w| ≈ 1e−7 with bias 0.5).  tanh / silu teachers have a second row −u₁/2 (exactly
antiparallel: their pair is a 1-D integral); gelu / erf teachers a general second row.

Inputs are explicit float64 lists stored as ``float.hex`` (no BLAS, no random draws).
Usage: python data/_precompute/pl_smooth_refs.py [--only NAMES]   (a few minutes)
"""
from __future__ import annotations

import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.append(os.path.join(ROOT, "tests", "certify"))
sys.path.append(os.path.dirname(os.path.abspath(__file__)))

import smooth_refs as SR  # noqa: E402

PATH = os.path.join(ROOT, "data", "refs", "pl_smooth_refs.json")


def cases():
    out = []
    u1 = [0.6, -0.8, 0.5]
    r0 = [0.9, -0.4, 0.3]
    near = [0.6 + 2.0 ** -20, -0.8, 0.5 - 2.0 ** -21]
    for act in ("relu", "leaky_relu"):
        for tact in ("tanh", "silu", "gelu", "erf"):
            u2 = [-0.3, -0.4, -0.25] if tact in ("tanh", "silu") else [-0.3, 0.4, 0.9]
            W = [r0, r0, [-0.45, 0.2, -0.15], [0.0, 0.0, 0.0], [1.2, -1.6, 1.0], near,
                 [1e-7, -2e-7, 0.5e-7]]
            out.append((f"{act}_{tact}", act, {
                "W": W, "b": [0.26, -0.36, 0.1, 0.3, -0.2, 0.15, 0.5],
                "a": [0.7, -1.2, 0.4, 0.5, 0.9, -0.6, 0.3], "c": 0.1,
                "teacher": {"kind": "network", "activation": tact, "V": [0.8, -0.5],
                            "U": [u1, u2], "bias": [0.2, -0.3]}}))
    return out


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None)
    ap.add_argument("--out", default=PATH)
    args = ap.parse_args(argv)
    done = {}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            done = {c["name"]: c for c in json.load(fh)["cases"]}
    only = None if args.only is None else set(args.only.split(","))
    out = []
    t0 = time.time()
    SR.R.RULE = "trapezoid"
    for name, act, raw in cases():
        inp = SR.to_inputs(raw)
        if (only is not None and name not in only) or (name in done
                                                       and done[name]["inputs"] == inp):
            if name in done:
                out.append(done[name])
            continue
        t = time.time()
        out.append(SR.one(name, act, inp))
        print(f"{name}: {time.time() - t:.0f} s", flush=True)
        _save(args.out, out)
    _save(args.out, out)
    print(f"total {time.time() - t0:.0f} s")


def _save(path, out):
    with open(path + ".tmp", "w") as fh:
        json.dump({"source": "data/_precompute/pl_smooth_refs.py", "dps": SR.DPS,
                   "cases": out}, fh, indent=1)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
