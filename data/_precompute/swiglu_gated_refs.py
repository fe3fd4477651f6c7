"""Reference moments, loss and refit risk of SwiGLU students against gated teachers.

Independent of popdyn and of certify's formulas (no Stein identities, no Hermite series): every
moment is the direct Gaussian integral

    E[SiLU(g·x) B(w·x) Π_k (l_k·x)],   x ~ N(0, I_d),

in the orthonormal frame e₁ = w/|w|, e₂ ∝ the part of g orthogonal to e₁ (z₁ = e₁·x, z₂ = e₂·x):
the parts of the linear forms l_k outside span(e₁, e₂) are Gaussian residuals independent of
(z₁, z₂), integrated exactly (Isserlis: E[Π(a_k + r_k)] for up to three forms); the integral over
z₂ is the trapezoidal rule on [−13.5, 13.5] with a step set for 35 digits from the strip of
analyticity of SiLU (|Im| < π/|g_⊥|); the integral over z₁ is the same trapezoidal rule (strip of B and SiLU)
or, for the relu gate and its step derivative (kink at z₁ = 0 in this frame), mpmath's
tanh–sinh quadrature (``mp.quad``) on [0, ∞).  The truncation to |z| ≤ 13.5 drops a Gaussian
mass below 1e−40.  Parallel rows (g ∥ w, decided exactly in rationals) have no z₂.
Without B the frame is e₁ = g/|g| and the integral is one-dimensional.  SiLU(0) = 0 and
F(0) = 0, so zero rows give exact zeros.

Cases (d = 4, m = 2; inputs stored as float64 hex): gates id, relu, gelu, tanh and the rotation
control, random geometry with rows orthonormalized in float64 (u₁·u₂ ≠ 0 at rounding level) and
degenerate geometry with exact axes: g_j parallel and antiparallel to u₁, v_j ⟂ u₂, g_j ∥ u₂,
zero neurons (g = 0, v = 0).  Stored: E[yφ_j], Φ = E[φ_iφ_j], φ̄_j = E[φ_j], E[y], E[y²]; the
loss L = ½E[(f − y)²] and the unrestricted refit risk min_{a′, c′} E[(Σ a′_jφ_j + c′ − y)²]
= V_Y − gᵀG⁻¹g (G = Φ − φ̄φ̄ᵀ, g = E[yφ] − φ̄E[y]; identically zero features dropped).  The
teacher moments: E[y] = κE[F(s)t] and E[y²] = κ²E[F(s)²t²] by one-dimensional quadrature in s
(t = (c/β²)s + residual); rotation by Isserlis.  Every quantity is recomputed with a trapezoid
step 0.8 times as large at 45 digits and the two must agree to 1e−30 relative.

Run:  python data/_precompute/swiglu_gated_refs.py   (writes data/refs/swiglu_gated_refs.json;
~15 minutes on one core; or ``--part 0/2`` and ``--part 1/2`` in two processes, then
``--merge 2``)
"""
import json
import os
import random
import sys
from fractions import Fraction

import mpmath as mp

OUT = os.path.join(os.path.dirname(__file__), "..", "refs", "swiglu_gated_refs.json")
DPS = 40


def silu(t):
    return t / (1 + mp.exp(-t))


def _tanh(q):
    return mp.tanh(q)


def _dtanh(q):
    return 1 - mp.tanh(q) ** 2


GATES = {
    "id": (lambda q: q, lambda q: mp.mpf(1), False),
    "relu": (lambda q: q, lambda q: mp.mpf(1), True),      # on q > 0 only (kink at 0)
    "gelu": (lambda q: q * mp.ncdf(q), lambda q: mp.ncdf(q) + q * mp.npdf(q), False),
    "tanh": (_tanh, _dtanh, False),
}
#: half-widths of the strips |Im q| < a where the functions are analytic (SiLU: poles at iπ;
#: tanh: iπ/2; id, gelu entire: capped at 4 by the rule's planning)
STRIP = {silu: mp.pi, _tanh: mp.pi / 2, _dtanh: mp.pi / 2}


def _v(x):
    return [mp.mpf(t) for t in x]


def _dot(x, y):
    return mp.fsum(a * b for a, b in zip(x, y))


def _fr(x):
    return [Fraction(t) for t in x]


def _parallel(g, w):
    """Exactly parallel (or antiparallel): every 2×2 minor vanishes (rationals)."""
    G, W = _fr(g), _fr(w)
    n = len(G)
    return all(G[i] * W[j] - G[j] * W[i] == 0 for i in range(n) for j in range(i + 1, n))


def _isserlis(avals, C):
    k = len(avals)
    if k == 0:
        return mp.mpf(1)
    if k == 1:
        return avals[0]
    if k == 2:
        return avals[0] * avals[1] + C[0][1]
    if k == 3:
        a1, a2, a3 = avals
        return a1 * a2 * a3 + a1 * C[1][2] + a2 * C[0][2] + a3 * C[0][1]
    raise ValueError("at most three forms")


def moment(g, w, B, forms, kink=False, hfac=1.0):
    """E[SiLU(g·x) B(w·x) Π forms] (module docstring); B None: no second function."""
    g = [float(t) for t in g]
    gv = _v(g)
    ng2 = _dot(gv, gv)
    if ng2 == 0:
        return mp.mpf(0)
    fv = [_v(l) for l in forms]
    if B is None:
        ng = mp.sqrt(ng2)
        e1 = [t / ng for t in gv]
        la = [_dot(l, e1) for l in fv]
        res = [[lk - a * e for lk, e in zip(l, e1)] for l, a in zip(fv, la)]
        C = [[_dot(r1, r2) for r2 in res] for r1 in res]
        f = lambda z: mp.npdf(z) * silu(ng * z) * _isserlis([a * z for a in la], C)
        return mp.quad(f, [-mp.inf, 0, mp.inf])
    wv = _v([float(t) for t in w])
    nw2 = _dot(wv, wv)
    if nw2 == 0:
        return mp.mpf(0)
    nw = mp.sqrt(nw2)
    e1 = [t / nw for t in wv]
    ga = _dot(gv, e1)                       # g = ga e1 + s e2
    if _parallel(g, w):
        s, e2 = mp.mpf(0), None
    else:
        G, W = _fr(g), _fr([float(t) for t in w])
        gw = sum(a * b for a, b in zip(G, W))
        s2 = sum(a * a for a in G) - gw * gw / sum(b * b for b in W)
        s = mp.sqrt(mp.mpf(s2.numerator) / s2.denominator)
        e2 = [(a - ga * e) / s for a, e in zip(gv, e1)]
    la = [_dot(l, e1) for l in fv]
    lb = [_dot(l, e2) if e2 is not None else mp.mpf(0) for l in fv]
    res = [[lk - a * x - (b * y if e2 is not None else 0) for lk, x, y in
            zip(l, e1, e2 if e2 is not None else e1)] for l, a, b in zip(fv, la, lb)]
    C = [[_dot(r1, r2) for r2 in res] for r1 in res]
    if e2 is None:
        inner = lambda z1: silu(ga * z1) * _isserlis([a * z1 for a in la], C)
    else:
        a_str = min(0.9 * mp.pi / s, mp.mpf(4))
        h = hfac * 2 * mp.pi * a_str / (mp.mpf(mp.mp.dps) * mp.log(10) + a_str ** 2 / 2 + 12)
        K = int(mp.ceil(mp.mpf("13.5") / h))
        nodes = [k * h for k in range(-K, K + 1)]
        wts = [h * mp.npdf(z) for z in nodes]

        def inner(z1):
            acc = mp.mpf(0)
            for z2, wt in zip(nodes, wts):
                acc += wt * silu(ga * z1 + s * z2) * _isserlis(
                    [a * z1 + b * z2 for a, b in zip(la, lb)], C)
            return acc
    f = lambda z1: mp.npdf(z1) * B(nw * z1) * inner(z1)
    if kink:
        return mp.quad(f, [0, mp.inf])
    # smooth B: the trapezoidal rule in z1 too, on the strip where B(|w| z1) and
    # SiLU(ga z1 + s z2) are analytic (B's own strip half-width STRIP[B] / |w|)
    a1 = min(0.9 * mp.pi / abs(ga) if ga != 0 else mp.mpf(4), 0.9 * STRIP.get(B, 4) / nw,
             mp.mpf(4))
    h1 = hfac * 2 * mp.pi * a1 / (mp.mpf(mp.mp.dps) * mp.log(10) + a1 ** 2 / 2 + 12)
    K1 = int(mp.ceil(mp.mpf("13.5") / h1))
    return h1 * mp.fsum(f(k * h1) for k in range(-K1, K1 + 1))


def _q(x):
    return mp.mpf(x.numerator) / x.denominator


def teacher_moments(gate, U, kap):
    # a, b, c exactly in rationals: rows orthonormalized in float64 make a − b and c ~1e−16,
    # which a 25-digit sum would leave with 9 correct digits
    F1, F2 = _fr(U[0]), _fr(U[1])
    aq = sum(x * x for x in F1)
    bq = sum(x * x for x in F2)
    cq = sum(x * y for x, y in zip(F1, F2))
    a, b, c = _q(aq), _q(bq), _q(cq)
    kap = mp.mpf(kap)
    if gate == "rotation":
        ey = kap * _q(aq - bq) / 2
        ey2 = kap * kap * _q(3 * aq * aq - 2 * (aq * bq + 2 * cq * cq) + 3 * bq * bq) / 4
        return ey, ey2
    F, _, kink = GATES[gate]
    if gate == "relu":
        F = lambda q: q if q > 0 else mp.mpf(0)
    be = mp.sqrt(a)
    cr, vr = c / be, _q(bq - cq * cq / aq)   # t = cr z + residual (variance vr), s = be z
    iv = [-mp.inf, 0, mp.inf]
    ey = kap * mp.quad(lambda z: mp.npdf(z) * F(be * z) * cr * z, iv)
    ey2 = kap * kap * mp.quad(lambda z: mp.npdf(z) * F(be * z) ** 2 * (cr * cr * z * z + vr), iv)
    return ey, ey2


def quantities(inp, hfac=1.0):
    gate, U, kap = inp["gate"], inp["U"], mp.mpf(inp["kappa"])
    G, V = inp["G"], inp["V"]
    m = len(G)
    Phi = [[moment(G[i], G[j], silu, [V[i], V[j]], hfac=hfac) if j >= i else None
            for j in range(m)] for i in range(m)]
    for i in range(m):
        for j in range(i):
            Phi[i][j] = Phi[j][i]
    phib = [moment(G[j], None, None, [V[j]], hfac=hfac) for j in range(m)]
    yphi = []
    for j in range(m):
        if gate == "rotation":
            q1 = moment(G[j], None, None, [V[j], U[0], U[0]], hfac=hfac)
            q2 = moment(G[j], None, None, [V[j], U[1], U[1]], hfac=hfac)
            yphi.append(kap * (q1 - q2) / 2)
        else:
            F, _, kink = GATES[gate]
            yphi.append(kap * moment(G[j], U[0], F, [V[j], U[1]], kink=kink, hfac=hfac))
    ey, ey2 = teacher_moments(gate, U, inp["kappa"])
    return Phi, phib, yphi, ey, ey2


def loss_and_refit(inp, Q):
    Phi, phib, yphi, ey, ey2 = Q
    a = _v(inp["a"])
    c = mp.mpf(inp["c"])
    m = len(a)
    ff = c * c + mp.fsum(2 * c * a[i] * phib[i] for i in range(m)) + mp.fsum(
        a[i] * a[j] * Phi[i][j] for i in range(m) for j in range(m))
    fy = c * ey + mp.fsum(a[j] * yphi[j] for j in range(m))
    L = (ff - 2 * fy + ey2) / 2
    keep = [j for j in range(m) if Phi[j][j] != 0]
    V = ey2 - ey * ey
    if keep:
        Gm = mp.matrix([[Phi[i][j] - phib[i] * phib[j] for j in keep] for i in keep])
        gv = mp.matrix([yphi[j] - phib[j] * ey for j in keep])
        R = V - (gv.T * mp.lu_solve(Gm, gv))[0]
    else:
        R = V
    return L, R


def _axes(d):
    return [[1.0 if i == k else 0.0 for i in range(d)] for k in range(d)]


def _qr2(rnd, d):
    """Two rows orthonormalized in float64 (Gram–Schmidt; u₁·u₂ ≠ 0 at rounding level)."""
    import math
    x = [rnd.gauss(0, 1) for _ in range(d)]
    nx = math.sqrt(sum(t * t for t in x))
    u1 = [t / nx for t in x]
    y = [rnd.gauss(0, 1) for _ in range(d)]
    p = sum(a * b for a, b in zip(u1, y))
    y = [b - p * a for a, b in zip(u1, y)]
    ny = math.sqrt(sum(t * t for t in y))
    return [u1, [t / ny for t in y]]


def cases():
    rnd = random.Random(1919)
    d = 4
    g = lambda sd=1.0: float(rnd.gauss(0, sd))
    out = []
    for gate in ("id", "relu", "gelu", "tanh", "rotation"):
        out.append(dict(name=f"{gate}_random", gate=gate, U=_qr2(rnd, d), kappa=1.25,
                        G=[[g(0.8) for _ in range(d)] for _ in range(2)],
                        V=[[g(0.8) for _ in range(d)] for _ in range(2)],
                        a=[g(), g()], c=0.1))
    E = _axes(d)
    # degenerate geometry on exact axes u1 = e0, u2 = e1
    for gate in ("relu", "tanh", "gelu", "id"):
        G1 = [0.7, 0.0, 0.0, 0.0] if gate != "tanh" else [-1.3, 0.0, 0.0, 0.0]   # ∥ / anti ∥ u1
        V1 = [0.3, 0.0, 0.5, -0.2]                                   # ⟂ u2
        G2 = [0.0, 0.0, 0.0, 0.0] if gate in ("relu", "id") else [0.0, 0.9, 0.0, 0.0]
        V2 = [0.4, 0.6, -0.3, 0.1] if gate != "tanh" else [0.0, 0.0, 0.0, 0.0]
        out.append(dict(name=f"{gate}_degenerate", gate=gate, U=[E[0], E[1]], kappa=-0.8,
                        G=[G1, G2], V=[V1, V2], a=[0.9, -0.6], c=-0.05))
    out.append(dict(name="rotation_degenerate", gate="rotation", U=[E[0], E[1]], kappa=1.0,
                    G=[[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]],
                    V=[[0.0, 1.0, 0.0, 0.0], [0.2, 0.1, 0.0, 0.3]], a=[1.0, 0.5], c=0.0))
    return out


def _hex(x):
    if isinstance(x, list):
        return [_hex(y) for y in x]
    return float(x).hex() if isinstance(x, float) else x


def main():
    """``python swiglu_gated_refs.py [--part K/N | --merge N] [names...]``: ``--part`` computes every
    N-th case from K into a part file (to share the work between processes), ``--merge`` joins
    the N part files into the reference file."""
    args = sys.argv[1:]
    out, part = OUT, None
    if args and args[0] == "--merge":
        n = int(args[1])
        res = []
        for k in range(n):
            with open(f"{OUT}.part{k}") as fh:
                res += json.load(fh)["cases"]
        order = [c["name"] for c in cases()]
        res.sort(key=lambda c: order.index(c["name"]))
        with open(OUT, "w") as fh:
            json.dump(dict(dps=DPS, generator="data/_precompute/swiglu_gated_refs.py",
                           cases=res), fh, indent=1)
        return
    if args and args[0] == "--part":
        k, n = map(int, args[1].split("/"))
        part, out, args = (k, n), f"{OUT}.part{k}", args[2:]
    only = args
    res = []
    for idx, cs in enumerate(cases()):
        if only and cs["name"] not in only:
            continue
        if part is not None and idx % part[1] != part[0]:
            continue
        mp.mp.dps = DPS
        Q = quantities(cs)
        L, R = loss_and_refit(cs, Q)
        mp.mp.dps = DPS + 5                                   # the check: finer and wider
        Q2 = quantities(cs, hfac=0.8)
        L2, R2 = loss_and_refit(cs, Q2)
        flat = lambda q: [q[0][0][0], q[0][0][1], q[0][1][1]] + q[1] + q[2] + [q[3], q[4]]
        for x, y in zip(flat(Q) + [L, R], flat(Q2) + [L2, R2]):
            assert abs(x - y) <= mp.mpf(10) ** -30 * (1 + abs(y)), (cs["name"], x, y)
        mp.mp.dps = DPS
        Phi, phib, yphi, ey, ey2 = Q
        s = lambda x: mp.nstr(x, 35)
        res.append(dict(name=cs["name"],
                        inputs={k: _hex(v) for k, v in cs.items() if k != "name"},
                        ref=dict(yphi=[s(x) for x in yphi], phib=[s(x) for x in phib],
                                 Phi=[[s(x) for x in r] for r in Phi], ey=s(ey), ey2=s(ey2),
                                 loss=s(L), refit_unrestricted=s(R))))
        print(cs["name"], mp.nstr(L, 15), mp.nstr(R, 15), flush=True)
    with open(out, "w") as fh:
        json.dump(dict(dps=DPS, generator="data/_precompute/swiglu_gated_refs.py", cases=res),
                  fh, indent=1)


if __name__ == "__main__":
    main()
