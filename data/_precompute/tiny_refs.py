"""Reference values for certified brackets at tiny, nearly constant units
(tests/certify/test_certify_tiny.py).

Cases.  200 random students (d = 3, m = 3 or 4, relu or leaky_relu with slope 1/8) with one unit
of ordinary size (w ~ N(0, 0.64/d), b ~ N(0, 0.64)) and two or three *tiny* units: |w| log-uniform
in [1e−12, 1e−3] in a random direction, |b| uniform in [0.25, 1.5] with a random sign; heads
a ~ N(0, 1) scaled up to 1/|w| on some units, intercept c ~ N(0, 0.25).  Case 0 is the reported
case.  Four fixed teachers (additive relu with that case's three rows; additive h2 with two
orthonormal rows; a relu network with biases; additive relu with two random orthonormal
rows).  Every input is stored as its exact float64 (``float.hex``) and the test feeds exactly those floats to the code
under test: nothing is rebuilt on the testing machine (no BLAS, no random draws).

Method (independent of popdyn and certify; mpmath at 62 digits, stored with 50).  A tiny unit
σ(w·x + b) with |b|/|w| ≥ 250 is affine: σ = ℓ·(w·x + b) with ℓ = 1 (b > 0), ℓ = 0 (relu, b < 0)
or ℓ = s (leaky relu, b < 0), except on the event {sign(w·x + b) ≠ sign b} of probability
Φ(−|b|/|w|) < 10^−13000; by Cauchy–Schwarz every moment changes by less than 10^−6000 there, far
below the 50 stored digits.  Hence, exactly (rational arithmetic on the float inputs):

* E[σ_i] = ℓ_i b_i, E[σ_i σ_j] = ℓ_i ℓ_j (w_i·w_j + b_i b_j), E[σ'_i σ'_j] = ℓ_i ℓ_j for tiny i, j;
* E[σ_i F(v·x + e)] = ℓ_i (b_i E[F(v·x + e)] + (w_i·v) E[F'(v·x + e)]) (Stein's lemma) and
  E[σ'_i G(v·x + e)] = ℓ_i E[G(v·x + e)] against the ordinary unit and the teacher units, with
  the 1-D Gaussian closed forms of tests/certify/_ref.py (``mean``);
* the ordinary unit with itself and with the teacher units, and the teacher units among
  themselves: the 2-D Gaussian quadrature of tests/certify/_ref.py (``pair``).

From these: the loss L = ½E[(f − y)²], E[y], E[y²], the refit optima (unrestricted: the
pseudo-inverse on the exact null space; same_budget; bounded with B = 1/2), λ_min(G), and the
AGOP M = Wᵀ(aaᵀ∘B)W with its alignment scores (a_top, a_min, a_mean) for the exact subspace
U = (e1, e2).  The formulas for the refit and the alignment are those of
data/_precompute/certify_refs.py (imported: ``trs``).

Case 0 is also checked against a second, fully closed-form reference (relu teacher: the
arc-cosine kernel; the ordinary student unit against a relu teacher row by a 1-D mpmath
quadrature of the conditional expectation; see tests/certify/test_certify_tiny.py).

Runtime: about 15 minutes on one core.  Usage: python data/_precompute/tiny_refs.py
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "certify"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import _ref as R  # noqa: E402
from certify_refs import trs  # noqa: E402

DPS = 50
WORK = 62
N_CASES = 200
SLOPE = 0.125
ctx = R.ctx

ISSUE_CASE = {
    "activation": "relu", "teacher": 0,
    "a": [-0.07242837283026464, 0.11606597320610852, 2.037011340212865],
    "W": [[-1.665772363292982e-09, 9.96353295995204e-10, 1.1306461972435394e-09],
          [-6.852619106103291e-07, -2.634670097971875e-07, 5.685390748908348e-07],
          [0.6109356307105015, 0.790803738668289, 1.5013682838108964]],
    "b": [0.2534507202099443, 1.0257355803285528, 0.23016070675903988],
    "c": 0.23282164604521352,
}
ISSUE_U = [[0.28392671027413274, 0.9297944660556051, 0.23423892521372483],
           [-0.8961785951936911, 0.3441972249432424, -0.279986063685379],
           [0.34095388061960946, 0.13042438895292258, -0.9309886841722008]]


def s50(x):
    return ctx.nstr(x, DPS, min_fixed=-5, max_fixed=5)


def hexs(a):
    """Nested lists of floats as float.hex strings (exact)."""
    if isinstance(a, (list, tuple, np.ndarray)):
        return [hexs(v) for v in a]
    return float(a).hex()


def _orthonormal(X):
    """Gram–Schmidt in Python floats (no BLAS): rows orthonormal up to rounding, as the
    additive teachers require; the stored floats are what every machine uses."""
    out = []
    for row in X:
        v = [float(x) for x in row]
        for u in out:
            c = math.fsum(a * b for a, b in zip(v, u))
            v = [a - c * b for a, b in zip(v, u)]
        n = math.sqrt(math.fsum(a * a for a in v))
        out.append([a / n for a in v])
    return out


def teachers():
    rng = np.random.default_rng(23)
    U1 = _orthonormal(rng.standard_normal((2, 3)))
    U2 = [[float(x) for x in r] for r in rng.standard_normal((2, 3)) * 0.8]
    U3 = _orthonormal(rng.standard_normal((2, 3)))
    return [
        {"kind": "additive", "link": "relu", "U": ISSUE_U, "kappa": [1.0, 1.0, 1.0]},
        {"kind": "additive", "link": "h2", "U": U1, "kappa": [1.0, 0.625]},
        {"kind": "network", "activation": "relu", "U": U2, "V": [1.25, -0.75],
         "bias": [0.375, -0.25]},
        {"kind": "additive", "link": "relu", "U": U3, "kappa": [0.75, 0.5]},
    ]


def cases():
    rng = np.random.default_rng(2023)
    out = [dict(ISSUE_CASE)]
    while len(out) < N_CASES:
        m = int(rng.integers(3, 5))
        ntiny = m - 1
        W = np.empty((m, 3))
        b = np.empty(m)
        a = rng.standard_normal(m)
        for i in range(ntiny):
            v = rng.standard_normal(3)
            v /= np.sqrt(v @ v)
            W[i] = v * 10.0 ** rng.uniform(-12, -3)
            b[i] = rng.uniform(0.25, 1.5) * (1 if rng.random() < 0.7 else -1)
            if rng.random() < 0.5:                  # heads of the size of the refit's
                a[i] /= float(np.sqrt(W[i] @ W[i]))
        W[-1] = rng.standard_normal(3) * (0.8 / np.sqrt(3))
        b[-1] = rng.standard_normal() * 0.8
        perm = rng.permutation(m)
        out.append({"activation": "relu" if rng.random() < 0.6 else "leaky_relu",
                    "teacher": int(rng.integers(0, 4)),
                    "a": list(a[perm]), "W": [list(W[i]) for i in perm], "b": list(b[perm]),
                    "c": float(rng.standard_normal() * 0.5)})
    return out


# ------------------------------------------------------------------------------ moments
def _dfn(fn):
    """Derivative of a function given as _ref atoms (pl -> step, poly -> poly)."""
    out = []
    for at in fn:
        if at[0] == "pl":
            out.extend(R.derivative([at]))
        elif at[0] == "poly":
            out.append(("poly", {k - 1: k * c for k, c in at[1].items() if k >= 1}))
        else:
            raise ValueError(at[0])
    return out


def _dot(u, v):
    return sum(Fraction(x) * Fraction(y) for x, y in zip(u, v))


def _ell(act, b):
    if b > 0:
        return Fraction(1)
    return Fraction(0) if act == "relu" else Fraction(SLOPE)


def teacher_units(T):
    """[(λ, fn, u, e)] of y = Σ λ F(u·x + e)."""
    if T["kind"] == "additive":
        fn = R.link(T["link"])
        return [(Fraction(k), fn, u, 0.0) for k, u in zip(T["kappa"], T["U"])]
    fn = R.activation(T["activation"])
    return [(Fraction(v), fn, u, e) for v, u, e in zip(T["V"], T["U"], T["bias"])]


def teacher_part(T):
    """(E[y], E[y²]) and the unit list."""
    tu = teacher_units(T)
    mus = [R.mean(fn, u, e) for _, fn, u, e in tu]
    ey = ctx.fsum(R.mpq(l) * mu for (l, _, _, _), mu in zip(tu, mus))
    E = {}
    for i in range(len(tu)):
        for j in range(i, len(tu)):
            E[i, j] = E[j, i] = R.pair(tu[i][1], tu[i][2], tu[i][3], tu[j][1], tu[j][2], tu[j][3])
    ey2 = ctx.fsum(R.mpq(tu[i][0]) * R.mpq(tu[j][0]) * E[i, j]
                   for i in range(len(tu)) for j in range(len(tu)))
    return tu, mus, E, ey, ey2


def one(case, T, tpart):
    act = case["activation"]
    fa = R.activation(act, SLOPE)
    fd = R.derivative(fa)
    W, b = case["W"], case["b"]
    m = len(W)
    tiny = [math.sqrt(float(_dot(w, w))) < 1.01e-3 for w in W]
    for i in range(m):
        if tiny[i]:
            assert abs(b[i]) >= 250 * math.sqrt(float(_dot(W[i], W[i])))
    tu, tmus, TT, ey, ey2 = tpart
    k = len(tu)
    ell = [_ell(act, b[i]) if tiny[i] else None for i in range(m)]
    # E[F], E[F'] for the ordinary units and the teacher units
    C = [[None] * m for _ in range(m)]
    B = [[None] * m for _ in range(m)]
    Ct = [[None] * k for _ in range(m)]
    mu0 = [R.mpq(ell[i] * Fraction(b[i])) if tiny[i] else R.mean(fa, W[i], b[i]) for i in range(m)]
    mu1 = [R.mpq(ell[i]) if tiny[i] else R.mean(fd, W[i], b[i]) for i in range(m)]
    for i in range(m):
        for j in range(i, m):
            if tiny[i] and tiny[j]:
                c = R.mpq(ell[i] * ell[j] * (_dot(W[i], W[j]) + Fraction(b[i]) * Fraction(b[j])))
                bb = R.mpq(ell[i] * ell[j])
            elif tiny[i] or tiny[j]:
                t, o = (i, j) if tiny[i] else (j, i)
                c = R.mpq(ell[t]) * (R.mpq(Fraction(b[t])) * mu0[o]
                                     + R.mpq(_dot(W[t], W[o])) * mu1[o])
                bb = R.mpq(ell[t]) * mu1[o]
            else:
                c = R.pair(fa, W[i], b[i], fa, W[j], b[j])
                bb = R.pair(fd, W[i], b[i], fd, W[j], b[j])
            C[i][j] = C[j][i] = c
            B[i][j] = B[j][i] = bb
        for q, (_, fn, u, e) in enumerate(tu):
            if tiny[i]:
                dmean = R.mean(_dfn(fn), u, e)
                Ct[i][q] = R.mpq(ell[i]) * (R.mpq(Fraction(b[i])) * tmus[q]
                                            + R.mpq(_dot(W[i], u)) * dmean)
            else:
                Ct[i][q] = R.pair(fa, W[i], b[i], fn, u, e)
    # loss
    a = [R.mpq(Fraction(x)) for x in case["a"]]
    cc = R.mpq(Fraction(case["c"]))
    lam_t = [R.mpq(t[0]) for t in tu]
    ff = ctx.fsum(a[i] * a[j] * C[i][j] for i in range(m) for j in range(m))
    fy = ctx.fsum(a[i] * lam_t[q] * Ct[i][q] for i in range(m) for q in range(k))
    fm = ctx.fsum(a[i] * mu0[i] for i in range(m))
    L = (ff - 2 * fy + ey2 + 2 * cc * (fm - ey) + cc * cc) / 2
    # refit quadratic
    G = ctx.matrix(m, m)
    for i in range(m):
        for j in range(m):
            G[i, j] = C[i][j] - mu0[i] * mu0[j]
    g = [ctx.fsum(Ct[i][q] * lam_t[q] for q in range(k)) - mu0[i] * ey for i in range(m)]
    V = ey2 - ey * ey
    lamG, QG = ctx.eigsy(G)
    lamG = [lamG[i] for i in range(m)]
    refit = {
        "unrestricted": s50(trs(QG, lamG, g, V, None)),
        "same_budget": s50(trs(QG, lamG, g, V, ctx.fsum(x * x for x in a))),
        "bounded_0.5": s50(trs(QG, lamG, g, V, ctx.mpf(0.25))),
        "lambda_min_G": s50(min(lamG)),
    }
    # AGOP and alignment with U = (e1, e2)
    Wm = [[R.mpq(Fraction(x)) for x in row] for row in W]
    K = [[a[i] * a[j] * B[i][j] for j in range(m)] for i in range(m)]
    M = ctx.matrix(3, 3)
    for u in range(3):
        for v in range(3):
            M[u, v] = ctx.fsum(Wm[i][u] * K[i][j] * Wm[j][v] for i in range(m) for j in range(m))
    Ev, Q = ctx.eigsy(M)
    order = sorted(range(3), key=lambda i: -Ev[i])
    r = 2
    P = ctx.matrix(r, r)
    for i in range(r):
        for q in range(r):
            P[i, q] = Q[i, order[q]]                  # (e_i · v_q)
    sv = ctx.svd_r(P, compute_uv=False)
    align = {"a_min": s50(min(sv) ** 2),
             "a_mean": s50(ctx.fsum(P[i, q] ** 2 for i in range(r) for q in range(r)) / r),
             "a_top": s50(ctx.fsum(Q[i, order[0]] ** 2 for i in range(r))),
             "eigenvalues": [s50(Ev[i]) for i in order]}
    return {"loss": s50(L), "mean_y": s50(ey), "second_y": s50(ey2),
            "mu0": [s50(x) for x in mu0], "C": [[s50(x) for x in row] for row in C],
            "refit": refit, "alignment": align}


def main():
    t0 = time.time()
    Ts = teachers()
    out = []
    with ctx.workdps(WORK):
        tparts = [teacher_part(T) for T in Ts]
        for n, case in enumerate(cases()):
            ref = one(case, Ts[case["teacher"]], tparts[case["teacher"]])
            out.append({"inputs": {"activation": case["activation"], "teacher": case["teacher"],
                                   "a": hexs(case["a"]), "W": hexs(case["W"]),
                                   "b": hexs(case["b"]), "c": hexs(case["c"])},
                        "ref": ref})
            if n % 20 == 0:
                print(f"{n}: {time.time() - t0:.0f} s", flush=True)
    teach = []
    for T in Ts:
        t = dict(T)
        t["U"] = hexs(T["U"])
        for key in ("kappa", "V", "bias"):
            if key in t:
                t[key] = hexs(t[key])
        teach.append(t)
    meta = {"source": "data/_precompute/tiny_refs.py (tests/certify/_ref.py, mpmath)",
            "dps": DPS, "slope": SLOPE, "alignment_U": "e1, e2",
            "runtime_s": round(time.time() - t0), "teachers": teach, "cases": out}
    path = os.path.join(ROOT, "data", "refs", "tiny_refs.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(meta, fh, indent=0)
    os.replace(tmp, path)
    print("wrote", path, f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
