"""Reference AGOPs of smooth students with one steep unit (|w| from 10 to 30), for
tests/popdyn/test_agop_large.py.

Twenty cases (tanh, silu, gelu, erf: five each), m = 2, d = 2 or 3, one unit of |w| in
[10, 30] and one of |w| in [0.3, 1.5], biases in [−3, 3], heads in [−2, 2], drawn once from
numpy's PCG64 (seed 3510) and stored as exact float64 (``float.hex``); the references do not
depend on the draw.  For f(x) = Σ_j a_j σ(w_j·x + b_j) (standard scaling s = 1),

    M = Σ_ij a_i a_j B_ij w_i w_jᵀ,   B_ij = E[σ′(w_i·x + b_i) σ′(w_j·x + b_j)],

with every B_ij computed here without popdyn, by Gauss–Legendre rules whose nodes and weights
come from mpmath at 40 digits and whose sums are evaluated in Arb ball arithmetic
(python-flint, 110 bits; Arb's elementary functions only, no integration routine):

* B_ii = ∫ σ′(α z + β)² φ(z) dz (α = |w_i|) and B_12 = ∫ σ′(α_1u + β_1) G(u) φ(u) du,
  G(u) = ∫ σ′(α_2(ρu + √(1 − ρ²)z) + β_2) φ(z) dz, ρ = w_1·w_2/(α_1α_2), both by composite
  20-point Gauss–Legendre rules on [−12, 12] (φ(12) < 6e−32): panels of width 1 where the
  integrand is analytic in a strip of half-width ≥ 1, and panels of width π/(2α) on the
  window |z − z₀| ≤ c/α around the steep unit's transition z₀ = −β/α, outside of which σ′ is
  constant to 1e−21 (c = 25 tanh, 50 silu, 10 gelu and erf); the rules' error is below 1e−20
  relative (Bernstein ellipses of parameter ≥ 4.2 around every panel);
* ``check``: each activation's first case recomputed with every panel halved (the difference
  is stored; it is the reference's own error estimate).

σ′: tanh sech², silu s(1 + t(1 − s)) (s the logistic function), gelu Φ(t) + tφ(t), erf
(2/√π)e^{−t²}.

Runtime: about ten minutes on a loaded core.  Usage: python data/_precompute/agop_large_refs.py
"""
from __future__ import annotations

import json
import os
import time

import mpmath as mp
import numpy as np
from flint import arb, ctx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PATH = os.path.join(ROOT, "data", "refs", "agop_large_refs.json")
DPS = 30
L = 12
WINDOW = {"tanh": 25, "silu": 50, "gelu": 10, "erf": 10}
PREC = 110


def draw_cases():
    rng = np.random.default_rng(3510)
    cases = []
    for act in ("tanh", "silu", "gelu", "erf"):
        for k in range(5):
            d = 2 + (k % 2)
            big = float(rng.uniform(10.0, 30.0))
            small = float(rng.uniform(0.3, 1.5))
            W = rng.standard_normal((2, d))
            W[0] *= big / np.linalg.norm(W[0])
            W[1] *= small / np.linalg.norm(W[1])
            b = rng.uniform(-3.0, 3.0, 2)
            a = rng.uniform(-2.0, 2.0, 2)
            cases.append((f"{act}_{k}", act, W, b, a))
    return cases


def dsig(act):
    """σ′ on Arb balls."""
    if act == "tanh":
        return lambda t: t.sech() ** 2
    if act == "silu":
        def f(t):
            s = 1 / (1 + (-t).exp())
            return s * (1 + t * (1 - s))
        return f
    if act == "gelu":
        c = 1 / arb.pi().sqrt() / arb(2).sqrt()
        return lambda t: (-t / arb(2).sqrt()).erfc() / 2 + t * c * (-t * t / 2).exp()
    if act == "erf":
        c = 2 / arb.pi().sqrt()
        return lambda t: c * (-t * t).exp()
    raise ValueError(act)


def to_arb(x):
    """An mpmath number as an Arb ball (40 significant digits)."""
    return arb(mp.nstr(x, 40, strip_zeros=False))


_GL = {}


def gl20():
    """20-point Gauss–Legendre nodes and weights on [−1, 1] at the working precision (Newton
    on P_20)."""
    if mp.mp.dps in _GL:
        return _GL[mp.mp.dps]
    n = 20
    xs, ws = [], []
    for i in range(1, n + 1):
        x = mp.cos(mp.pi * (i - mp.mpf(1) / 4) / (n + mp.mpf(1) / 2))
        for _ in range(100):
            p0, p1 = mp.mpf(1), x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            dx = p1 / dp
            x -= dx
            if abs(dx) < mp.mpf(10) ** (-mp.mp.dps - 5):
                break
        p0, p1 = mp.mpf(1), x
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        dp = n * (x * p1 - p0) / (x * x - 1)
        xs.append(x)
        ws.append(2 / ((1 - x * x) * dp * dp))
    _GL[mp.mp.dps] = (xs, ws)
    return xs, ws


def rule(edges):
    """Composite 20-point Gauss–Legendre rule on the panels ``edges`` with the normal density
    in the weights: (nodes, weights) as Arb balls."""
    xs, ws = gl20()
    nodes, weights = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        h, c = (hi - lo) / 2, (hi + lo) / 2
        for x, w in zip(xs, ws):
            z = c + h * x
            nodes.append(to_arb(z))
            weights.append(to_arb(h * w * mp.npdf(z)))
    return nodes, weights


def edges_for(alpha, beta, act, refine):
    """Panel edges on [−L, L]: width 1 (÷refine), and π/(2α) (÷refine) on the window of
    the transition when the unit is steep."""
    coarse = mp.mpf(1) / refine
    pts = [mp.mpf(-L)]
    if alpha * coarse > mp.mpf("0.9"):
        z0 = -beta / alpha
        lo = max(mp.mpf(-L), z0 - WINDOW[act] / alpha)
        hi = min(mp.mpf(L), z0 + WINDOW[act] / alpha)
        fine = mp.pi / (2 * alpha) / refine
    else:
        lo = hi = None
    z = pts[0]
    while z < L:
        if lo is not None and lo <= z < hi:
            z = min(z + fine, hi)
        else:
            step = z + coarse
            if lo is not None and z < lo < step:
                step = lo
            z = min(step, mp.mpf(L))
        pts.append(z)
    return pts


def moments(act, W, b, refine=1):
    """B (2 × 2, Arb balls) and the rows w_i (Arb, exact) of a case."""
    f = dsig(act)
    w = [[arb(float(x)) for x in row] for row in W]
    be = [arb(float(x)) for x in b]
    al = [sum((x * x for x in row), arb(0)).sqrt() for row in w]
    rho = sum((x * y for x, y in zip(w[0], w[1])), arb(0)) / (al[0] * al[1])
    s = (1 - rho * rho).sqrt()
    mpv = lambda x: mp.mpf(x.mid().str(40, radius=False))   # noqa: E731  (panel placement only)
    B = [[None, None], [None, None]]
    for i in range(2):
        z, wt = rule(edges_for(mpv(al[i]), mpv(be[i]), act, refine))
        B[i][i] = sum((wi * f(al[i] * zi + be[i]) ** 2 for zi, wi in zip(z, wt)), arb(0))
    zo, wo = rule(edges_for(mpv(al[0]), mpv(be[0]), act, refine))
    zi_, wi_ = rule(edges_for(mpv(al[1] * s), mp.mpf(0), act, refine))
    sz = [al[1] * s * z for z in zi_]
    tot = arb(0)
    for u, wu in zip(zo, wo):
        c = al[1] * rho * u + be[1]
        G = sum((wz * f(c + t) for t, wz in zip(sz, wi_)), arb(0))
        tot += wu * f(al[0] * u + be[0]) * G
    B[0][1] = B[1][0] = tot
    return w, B


def agop(w, a, B):
    d = len(w[0])
    aa = [arb(float(x)) for x in a]
    return [[sum((aa[i] * aa[j] * B[i][j] * w[i][p] * w[j][q]
                  for i in range(2) for j in range(2)), arb(0)) for q in range(d)]
            for p in range(d)]


def astr(x):
    """An Arb ball's midpoint to 30 significant digits."""
    return x.mid().str(30, radius=False)


def main():
    mp.mp.dps = 40
    ctx.prec = PREC
    t0 = time.time()
    out = []
    for name, act, W, b, a in draw_cases():
        t1 = time.time()
        w, B = moments(act, W, b)
        M = agop(w, a, B)
        Mm = mp.matrix([[mp.mpf(astr(x)) for x in row] for row in M])
        ev = sorted(mp.eigsy(Mm)[0], reverse=True)
        rec = {"name": name, "activation": act,
               "inputs": {"W": [[float(x).hex() for x in row] for row in W],
                          "b": [float(x).hex() for x in b], "a": [float(x).hex() for x in a]},
               "B": [[astr(x) for x in row] for row in B],
               "M": [[astr(x) for x in row] for row in M],
               "eigenvalues": [mp.nstr(x, 30) for x in ev],
               "rounding_radius": mp.nstr(max(mp.mpf(x.rad().str(5, radius=False))
                                              for row in B for x in row), 3)}
        if name.endswith("_0"):
            _, B2 = moments(act, W, b, refine=2)
            rec["check"] = mp.nstr(max(abs(mp.mpf(astr(B[i][j] - B2[i][j])))
                                       / abs(mp.mpf(astr(B[i][i])))
                                       for i in range(2) for j in range(2)), 5)
        out.append(rec)
        print(name, f"{time.time() - t1:.1f}s", rec.get("check", ""), flush=True)
    doc = {"source": "data/_precompute/agop_large_refs.py", "dps": 30, "prec_bits": PREC,
           "runtime_s": round(time.time() - t0), "cases": out}
    with open(PATH, "w") as fh:
        json.dump(doc, fh, indent=1)


if __name__ == "__main__":
    main()
