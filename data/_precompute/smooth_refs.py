"""Reference values for the certified brackets of smooth students
(tests/certify/test_certify_smooth.py).

Independent of popdyn's numerics and of certify: every moment is the 2-D Gaussian integral of
tests/certify/_ref.py (``pair``: an outer mpmath tanh–sinh quadrature of the first function
times the conditional mean of the second; erf, erf′, gelu, gelu′ have textbook conditional
means, tanh and silu an inner mpmath quadrature), at 30+ digits.  No Hermite series, no Price
integrals, no trapezoidal rule.  Inputs are small explicit float64 arrays stored as
``float.hex`` (no BLAS, no random draws); the tests feed exactly those floats.

Outputs per case: loss, E[y], E[y²], C, B, μ0, Ct, the AGOP eigenvalues and alignment scores
for U = the teacher subspace, and the refit optima (unrestricted, same_budget, bounded B = ½),
by the formulas of data/_precompute/certify_refs.py (``trs``).

Runtime: about 20 minutes on one loaded core for the stored set (tanh / silu only with
duplicated, antiparallel and zero units, whose pairs are 1-D); ``--slow`` adds tanh / silu
pairs at general correlation (nested quadrature, about an hour per case on a loaded core).  Usage: python data/_precompute/smooth_refs.py
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
#: digits of the refit's eigenvalue threshold 10^−(TRS_DPS−5)·λ_max (None: DPS); the soak sets
#: it from its moments' accuracy (benchmarks/soak_certify.py)
TRS_DPS = None
PATH = os.path.join(ROOT, "data", "refs", "smooth_refs.json")
ctx = R.ctx


def _h(x):
    return [float(v).hex() for v in x] if isinstance(x, (list, tuple)) else float(x).hex()


def _hm(X):
    return [_h(r) for r in X]


def cases(slow: bool = False):
    """The case list: (name, activation, inputs) with plain float lists (``slow``: also the
    tanh / silu cases with pairs at general correlation)."""
    out = []
    tn = {"kind": "network", "activation": "tanh", "V": [1.0], "U": [[1.0, 0.0]], "bias": [0.0]}
    h2 = {"kind": "additive", "link": "h2", "U": [[1.0, 0.0]], "kappa": [1.0]}
    relu_net = {"kind": "network", "activation": "relu", "V": [0.8, -0.5],
                "U": [[0.6, 0.8], [-0.8, 0.6]], "bias": [0.1, -0.2]}
    for act in ("erf", "gelu"):
        out.append((f"{act}_random", act, {
            "W": [[0.9, -0.4], [0.3, 1.1], [-0.7, 0.2]], "b": [0.26, -0.36, 0.5],
            "a": [0.7, -1.2, 0.4], "c": 0.1, "teacher": h2}))
        out.append((f"{act}_degenerate", act, {
            "W": [[0.9, -0.4], [0.9, -0.4], [-0.9, 0.4], [0.0, 0.0], [1e-7, 2e-7]],
            "b": [0.26, -0.36, 0.1, 0.3, 0.8], "a": [0.7, -1.2, 0.4, 0.5, -0.3], "c": -0.2,
            "teacher": relu_net}))
        out.append((f"{act}_near_aligned", act, {
            "W": [[1.0, 0.5], [1.0, 0.5 + 2.0 ** -20], [-1.0, -0.5 + 2.0 ** -30]],
            "b": [0.1, -0.3, 0.2], "a": [1.0, -0.8, 0.6], "c": 0.0, "teacher": tn}))
    # the large-weight erf case: |w| = 20, biases 0.26, −0.36, tanh teacher
    out.append(("erf_w20_tanh", "erf", {
        "W": [[12.0, 16.0], [16.0, -12.0]], "b": [0.26, -0.36], "a": [0.9, -0.6], "c": 0.05,
        "teacher": tn}))
    out.append(("gelu_w8", "gelu", {
        "W": [[4.8, 6.4], [6.4, -4.8]], "b": [0.26, -0.36], "a": [0.9, -0.6], "c": 0.05,
        "teacher": h2}))
    # an erf student with a huge unit (|w| = 9.35, far from the others) against the abs link:
    # case 5388 of the certify soak (seed 19000); its loss at rtol 1e−12 is exact to 5e−15
    out.append(("erf_huge_abs", "erf", {
        "W": [[-9.165894276603346, -1.863970648577024], [-0.8879865315237047, -0.4294771601315708],
              [0.2488513183781223, 0.03668667644549469]],
        "b": [-5.375620303673453, 4.19421367558165, 2.390121814748714],
        "a": [0.6467144710469961, 1.75645044763229, 0.4568412178267281], "c": -0.07825767482471703,
        "teacher": {"kind": "additive", "link": "abs",
                    "U": [[0.38582011811454886, -0.9225740276303445]], "kappa": [1.0]}}))
    # the same against a unit nearly antiparallel to the link's direction (ρ = −1 + 9e−8):
    # case 8577 of the soak; the series' truncation meets the link's slowly decaying tail
    out.append(("erf_huge_abs_antiparallel", "erf", {
        "W": [[-6.62888927729148, 5.1243990178689725], [0.14085636903124496, 1.538198124504182],
              [0.5926255024572039, 0.6875396218975935]],
        "b": [-8.784546914518572, 1.4927808111366323, -0.6270036177065529],
        "a": [-2.465931389420942, -1.497819972289493, 1.172721192948485], "c": -0.20329079400443892,
        "teacher": {"kind": "additive", "link": "abs",
                    "U": [[0.7909050870092127, -0.6119388395444023]], "kappa": [1.0]}}))
    for act in ("tanh", "silu"):
        out.append((f"{act}_degenerate", act, {
            "W": [[0.9, -0.4], [0.9, -0.4], [-0.9, 0.4], [0.0, 0.0]], "b": [0.26, -0.36, 0.1, 0.3],
            "a": [0.7, -1.2, 0.4, 0.5], "c": -0.2, "teacher": h2}))
    if not slow:
        return out
    # tanh / silu pairs at general correlation: a nested quadrature, about an hour per case
    # on a loaded core (not in the stored set yet; --slow computes them)
    for act in ("tanh", "silu"):
        out.append((f"{act}_random", act, {
            "W": [[0.9, -0.4], [0.3, 1.1]], "b": [0.26, -0.36], "a": [0.7, -1.2], "c": 0.1,
            "teacher": h2}))
    out.append(("tanh_near_aligned", "tanh", {
        "W": [[1.0, 0.5], [1.0, 0.5 + 2.0 ** -20]], "b": [0.1, -0.3], "a": [1.0, -0.8],
        "c": 0.0, "teacher": h2}))
    return out


def to_inputs(inp):
    t = dict(inp["teacher"])
    ti = {"kind": t["kind"], "U": _hm(t["U"])}
    if t["kind"] == "additive":
        ti.update(link=t["link"], kappa=_h(t["kappa"]))
    else:
        ti.update(activation=t["activation"], V=_h(t["V"]), bias=_h(t["bias"]))
    return {"W": _hm(inp["W"]), "b": _h(inp["b"]), "a": _h(inp["a"]), "c": _h(inp["c"]),
            "teacher": ti}


def build(act, inp):
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
    t = inp["teacher"]
    if t["kind"] == "additive":
        T = popdyn.Teacher.additive(t["link"], u(t["U"]), u(t["kappa"]))
    else:
        T = popdyn.Teacher.network(t["activation"], u(t["V"]), u(t["U"]), u(t["bias"]))
    return S, p, T


def s(x):
    return ctx.nstr(x, DPS - 2, min_fixed=-ctx.inf, max_fixed=ctx.inf)


def one(name, act, inp):
    from certify_refs import trs
    S, p, T = build(act, inp)
    m, d = S.m, S.d
    with ctx.workdps(DPS + 10):
        C, B, mu0, Ct = R.moment_matrices(S, p, T, dps=DPS)
        ey, ey2 = R.teacher_moments(S, p, T, dps=DPS)
        a = [R.mpq(R.F(float(x))) for x in p.a]
        cc = R.mpq(R.F(float(p.c)))
        v = [R.mpq(R.F(float(x))) for x in T.weights]
        # loss from the moments
        ff = ctx.fsum(a[i] * a[j] * C[i][j] for i in range(m) for j in range(m))
        ff += 2 * cc * ctx.fsum(a[i] * mu0[i] for i in range(m)) + cc * cc
        fy = ctx.fsum(a[i] * Ct[i][k] * v[k] for i in range(m) for k in range(T.k)) + cc * ey
        L = (ff - 2 * fy + ey2) / 2
        W = [[R.mpq(R.F(float(x))) for x in row] for row in p.W]
        K = [[a[i] * a[j] * B[i][j] for j in range(m)] for i in range(m)]
        M = ctx.matrix(d, d)
        for x in range(d):
            for y in range(d):
                M[x, y] = ctx.fsum(W[i][x] * K[i][j] * W[j][y] for i in range(m) for j in range(m))
        Ev, Q = ctx.eigsy(M)
        order = sorted(range(d), key=lambda i: -Ev[i])
        Uq = [[R.mpq(R.F(float(x))) for x in row] for row in T.subspace]
        r = len(Uq)
        Vr = [[Q[x, order[k]] for x in range(d)] for k in range(r)]
        P = ctx.matrix(r, r)
        for i in range(r):
            for k in range(r):
                P[i, k] = ctx.fsum(Uq[i][x] * Vr[k][x] for x in range(d))
        sv = ctx.svd_r(P, compute_uv=False)
        a_min = min(sv) ** 2
        a_mean = ctx.fsum(P[i, k] ** 2 for i in range(r) for k in range(r)) / r
        a_top = ctx.fsum(ctx.fsum(Uq[i][x] * Vr[0][x] for x in range(d)) ** 2 for i in range(r))
        G = ctx.matrix(m, m)
        for i in range(m):
            for j in range(m):
                G[i, j] = C[i][j] - mu0[i] * mu0[j]
        g = [ctx.fsum(Ct[i][k] * v[k] for k in range(T.k)) - mu0[i] * ey for i in range(m)]
        V = ey2 - ey ** 2
        lamG, QG = ctx.eigsy(G)
        lamG = [lamG[i] for i in range(m)]
        import certify_refs
        certify_refs.DPS = TRS_DPS or DPS
        refit = {"unrestricted": s(trs(QG, lamG, g, V, None)),
                 "same_budget": s(trs(QG, lamG, g, V, ctx.fsum(x * x for x in a))),
                 "bounded_0.5": s(trs(QG, lamG, g, V, ctx.mpf(0.25))),
                 "lambda_min_G": s(min(lamG))}
        return {"name": name, "activation": act, "inputs": inp, "loss": s(L), "mean_y": s(ey),
                "second_y": s(ey2), "C": [[s(x) for x in r_] for r_ in C],
                "B": [[s(x) for x in r_] for r_ in B], "mu0": [s(x) for x in mu0],
                "Ct": [[s(x) for x in r_] for r_ in Ct],
                "agop_eigenvalues": [s(Ev[i]) for i in order],
                "a_top": s(a_top), "a_min": s(a_min), "a_mean": s(a_mean), "refit": refit}


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated case names")
    ap.add_argument("--out", default=PATH, help="output JSON (default data/refs/smooth_refs.json)")
    ap.add_argument("--merge", default=None, help="merge the cases of this JSON into --out")
    ap.add_argument("--slow", action="store_true",
                    help="also the tanh / silu cases at general correlation (hours)")
    args = ap.parse_args(argv)
    path = args.out
    out = []
    done = {}
    if os.path.exists(path):
        with open(path) as fh:
            done = {c["name"]: c for c in json.load(fh)["cases"]}
    if args.merge:
        with open(args.merge) as fh:
            for c in json.load(fh)["cases"]:
                done.setdefault(c["name"], c)
    only = None if args.only is None else set(args.only.split(","))
    t0 = time.time()
    for name, act, raw in cases(args.slow):
        if only is not None and name not in only:
            continue
        inp = to_inputs(raw)
        if name in done and done[name]["inputs"] == inp:
            out.append(done[name])
            if args.merge:
                _save(path, out)
            continue
        t = time.time()
        out.append(one(name, act, inp))
        print(f"{name}: {time.time() - t:.0f} s", flush=True)
        _save(path, out)
    print(f"total {time.time() - t0:.0f} s")


def _save(path, out):
    with open(path + ".tmp", "w") as fh:
        json.dump({"source": "data/_precompute/smooth_refs.py", "dps": DPS, "cases": out},
                  fh, indent=1)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
