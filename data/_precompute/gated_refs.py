"""Reference values for the rigorous brackets against gated teachers
(tests/certify/test_certify_gated_rigorous.py, benchmarks/soak_certify.py).

Independent of popdyn's numerics and of certify: y = κF(s)t with s = u₁·x, t = u₂·x and
u₁·u₂ = 0 exactly (checked in rationals), so Stein's lemma in t gives

    E[σ(w·x + b) F(s) t] = (w·u₂) E[σ′(w·x + b) F(s)],

a 2-D Gaussian integral of tests/certify/_ref.py (outer mpmath quadrature of one function
times the textbook conditional mean of the other; tanh against tanh derivatives by its nested
trapezoid with a stated error bound), with w·u₂ an exact rational; E[y] = 0 and
E[y²] = |u₂|² E[F(s)²] (a 1-D integral).  The rotation control y = κ(s² − t²)/2 needs no
Stein step: E[σ(w·x + b)(u·x)²] by the same 2-D integrals, E[y] and E[y²] from
exact Gaussian moments of the polynomial pairs.  The student side C, μ0 is the 2-D integral of
every pair; the refit optima come from data/_precompute/certify_refs.py (``trs``) on
G = C − μ0μ0ᵀ, g = E[σ y] − μ0E[y], V = E[y²] − E[y]².  No Hermite series, no Price integrals.

Inputs are small explicit float64 arrays stored as ``float.hex`` (no BLAS, no random draws);
the tests feed exactly those floats.  The frame u₁ = (0.6, 0.8, 0), u₂ = (−0.8, 0.6, 0) is
exactly orthogonal in floats (fl(0.6)fl(−0.8) + fl(0.8)fl(0.6) = 0) but |u_l|² ≠ 1 by an ulp,
so the exact-geometry handling of certify is exercised.

Usage: python data/_precompute/gated_refs.py [--only NAMES] [--dps D]   (about 10 minutes on a
loaded core)
"""
from __future__ import annotations

import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.append(os.path.join(ROOT, "tests", "certify"))
sys.path.append(os.path.dirname(os.path.abspath(__file__)))

import _ref as R  # noqa: E402

DPS = 32
PATH = os.path.join(ROOT, "data", "refs", "gated_refs.json")
ctx = R.ctx
GATE_ATOMS = {"tanh": [("num", "tanh", 0)], "relu": [("pl", R.Fraction(1), R.Fraction(0))],
              "gelu": [("gelu",)], "id": [("poly", {1: ctx.mpf(1)})]}


def _h(x):
    return [float(v).hex() for v in x] if isinstance(x, (list, tuple)) else float(x).hex()


def _hm(X):
    return [_h(r) for r in X]


def cases():
    """(name, activation, gate, inputs) with plain float lists."""
    out = []
    U = [[0.6, 0.8, 0.0], [-0.8, 0.6, 0.0]]
    r0 = [0.9, -0.4, 0.3]
    near = [0.6 - 0.8 * 2.0 ** -20, 0.8 + 0.6 * 2.0 ** -20, 0.0]      # ≈ u₁, ρ ≈ 1 − 2^−41
    for act in ("relu", "leaky_relu", "gelu", "erf", "tanh", "silu"):
        for gate in ("id", "relu", "gelu", "tanh", "rotation"):
            W = [r0, r0, [-0.45, 0.2, -0.15], [0.0, 0.0, 0.0]]
            b = [0.26, -0.36, 0.1, 0.3]
            a = [0.7, -1.2, 0.4, 0.5]
            if act in ("relu", "leaky_relu", "gelu", "erf"):
                # a unit nearly along the gate axis and one in the (u₁, u₂) plane (2-D pairs
                # with closed conditional means: cheap)
                W = W + [near, [1.1, -0.3, 0.5]]
                b = b + [-0.2, 0.4]
                a = a + [0.9, -0.6]
            out.append((f"{act}_{gate}", act, gate, {
                "W": W, "b": b, "a": a, "c": 0.15, "U": U, "kappa": 1.5}))
    return out


def to_inputs(raw):
    return {"W": _hm(raw["W"]), "b": _h(raw["b"]), "a": _h(raw["a"]), "c": _h(raw["c"]),
            "U": _hm(raw["U"]), "kappa": _h(raw["kappa"])}


def build(act, gate, inp):
    """(student, params, teacher) from stored hex inputs (popdyn objects only as containers)."""
    import numpy as np
    import popdyn

    def u(x):
        return np.array([[float.fromhex(v) for v in r] for r in x]) if isinstance(x[0], list) \
            else np.array([float.fromhex(v) for v in x])
    W = u(inp["W"])
    m, d = W.shape
    S = popdyn.Student(d=d, m=m, activation=act)
    p = popdyn.Params(u(inp["a"]), W, u(inp["b"]), float.fromhex(inp["c"]))
    T = popdyn.Teacher.gated(gate, u(inp["U"]), float.fromhex(inp["kappa"]))
    return S, p, T


def _dot(x, y):
    return sum(R.F(float(a)) * R.F(float(b)) for a, b in zip(x, y))


def reference(S, p, gate, U, kappa, dps):
    """(loss, E[y], E[y²], Ct (E[σ_j y]), C, μ0, refit optima) of y = κF(s)t or κ(s² − t²)/2."""
    from certify_refs import trs
    import certify_refs
    u1, u2 = [list(map(float, r)) for r in U]
    c12 = _dot(u1, u2)
    kap = R.mpq(R.F(float(kappa)))
    with ctx.workdps(dps + 15):
        C, _, mu0, _ = R.moment_matrices(S, p, None, dps=dps, with_B=False)
        act = R.activation(S.activation, S.negative_slope)
        m = S.m
        sq = [("poly", {2: ctx.mpf(1)})]
        Ct = []
        for j in range(m):
            w, b = list(map(float, p.W[j])), float(p.b[j])
            if gate == "rotation":
                Ct.append((R.pair(act, w, b, sq, u1, 0.0) - R.pair(act, w, b, sq, u2, 0.0)) / 2)
            else:
                if c12 != 0:
                    raise ValueError("the Stein reference needs u1·u2 = 0 exactly")
                wu2 = _dot(w, u2)
                Ct.append(ctx.mpf(0) if wu2 == 0 else
                          R.mpq(wu2) * R.pair(R.derivative(act), w, b, GATE_ATOMS[gate], u1, 0.0))
        if gate == "rotation":
            ey = (R.mean(sq, u1, 0.0) - R.mean(sq, u2, 0.0)) / 2
            ey2 = (R.pair(sq, u1, 0.0, sq, u1, 0.0) - 2 * R.pair(sq, u1, 0.0, sq, u2, 0.0)
                   + R.pair(sq, u2, 0.0, sq, u2, 0.0)) / 4
        else:
            F = GATE_ATOMS[gate]
            ey = ctx.mpf(0)
            ey2 = R.mpq(_dot(u2, u2)) * R.pair(F, u1, 0.0, F, u1, 0.0)
        Ey, Ey2 = kap * ey, kap * kap * ey2
        Cy = [kap * x for x in Ct]
        a = [R.mpq(R.F(float(x))) for x in p.a]
        cc = R.mpq(R.F(float(p.c)))
        ff = ctx.fsum(a[i] * a[j] * C[i][j] for i in range(m) for j in range(m))
        ff += 2 * cc * ctx.fsum(a[i] * mu0[i] for i in range(m)) + cc * cc
        L = (ff - 2 * (ctx.fsum(a[i] * Cy[i] for i in range(m)) + cc * Ey) + Ey2) / 2
        G = ctx.matrix(m, m)
        for i in range(m):
            for j in range(m):
                G[i, j] = C[i][j] - mu0[i] * mu0[j]
        g = [Cy[i] - mu0[i] * Ey for i in range(m)]
        V = Ey2 - Ey * Ey
        lamG, QG = ctx.eigsy(G)
        lamG = [lamG[i] for i in range(m)]
        certify_refs.DPS = dps + 5
        refit = {"unrestricted": trs(QG, lamG, g, V, None),
                 "same_budget": trs(QG, lamG, g, V, ctx.fsum(x * x for x in a)),
                 "bounded_0.5": trs(QG, lamG, g, V, ctx.mpf(0.25))}
        return L, Ey, Ey2, Cy, C, mu0, refit


def s(x, dps=DPS):
    return ctx.nstr(x, dps - 2, min_fixed=-ctx.inf, max_fixed=ctx.inf)


def one(name, act, gate, inp, dps=DPS):
    S, p, T = build(act, gate, inp)
    R.RULE = "trapezoid"
    L, ey, ey2, Ct, C, mu0, refit = reference(S, p, gate, T.U, float(T.weights[0]), dps)
    return {"name": name, "activation": act, "gate": gate, "inputs": inp, "loss": s(L, dps),
            "mean_y": s(ey, dps), "second_y": s(ey2, dps), "Ct": [s(x, dps) for x in Ct],
            "C": [[s(x, dps) for x in r] for r in C], "mu0": [s(x, dps) for x in mu0],
            "refit": {k: s(v, dps) for k, v in refit.items()}}


def main(argv=None):
    import argparse
    global DPS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated case names")
    ap.add_argument("--dps", type=int, default=DPS)
    ap.add_argument("--out", default=PATH)
    args = ap.parse_args(argv)
    DPS = args.dps
    done = {}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            done = {c["name"]: c for c in json.load(fh)["cases"]}
    only = None if args.only is None else set(args.only.split(","))
    out = []
    t0 = time.time()
    for name, act, gate, raw in cases():
        if only is not None and name not in only:
            if name in done:
                out.append(done[name])
            continue
        inp = to_inputs(raw)
        if name in done and done[name]["inputs"] == inp:
            out.append(done[name])
            continue
        t = time.time()
        out.append(one(name, act, gate, inp, DPS))
        print(f"{name}: {time.time() - t:.0f} s", flush=True)
        _save(args.out, out)
    _save(args.out, out)
    print(f"total {time.time() - t0:.0f} s")


def _save(path, out):
    with open(path + ".tmp", "w") as fh:
        json.dump({"source": "data/_precompute/gated_refs.py", "dps": DPS, "cases": out},
                  fh, indent=1)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
