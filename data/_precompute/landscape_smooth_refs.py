"""Reference loss, gradient and Hessian of smooth-activation students by mpmath.

Independent of popdyn (no popdyn import, no Hermite or Mehler series, no Stein identity).
Student f(x) = s Σ_j a_j σ(w_j·x + b_j) + v·x + c with σ ∈ {silu, gelu, tanh, erf}; teacher
y = Σ_k t_k φ_k(u_k·x + β_k) (a network: φ = relu / tanh / ..., or an additive teacher: φ the
link, β = 0).  With g = f − y,

    L = ½E[g²],   ∇L = E[g ∇f],   ∇²L = E[∇f ∇fᵀ] + E[g ∇²f]

where ∇f, ∇²f are differentiated by hand below (∂f/∂a_i = sσ_i, ∂f/∂w_i = s a_i σ′_i x,
∂f/∂b_i = s a_i σ′_i, ∂f/∂v = x, ∂f/∂c = 1; ∂²f/∂a_i∂w_i = sσ′_i x, ∂²f/∂w_i∂w_iᵀ =
s a_i σ″_i x xᵀ, ...).  Every expectation is a sum of *pair* terms E[F(p·x + β) G(q·x + β′) M],
M ∈ {1, x, x xᵀ}, computed in the orthonormal frame e1 = p/|p|, e2 ∝ q − (q·e1)e1 of the pair
(x = x1 e1 + x2 e2 + x⊥ with x⊥ independent of (x1, x2)):

    E[FG x]   = E[FG x1] e1 + E[FG x2] e2,
    E[FG xxᵀ] = Σ_{a,b ≤ 2} E[FG x_a x_b] e_a e_bᵀ + E[FG](I − e1e1ᵀ − e2e2ᵀ),

and the 2-D integrals over (x1, x2) ~ N(0, I_2) by a tensor composite Gauss–Legendre rule
(mpmath's 24-point nodes) on [−L, L]², L = 9 (the neglected Gaussian tail, with the polynomial
and linear-growth factors here, is below 1e−17 of the integrals), panels of width ``PANEL`` =
2.25, split at the kink of a piecewise-linear unit (which is always put first,
so that its kink is the line x1 = const; a second PL unit's kink splits the inner rule per x1).
For the smooth units here (|w| ≤ 1.15 for tanh) the nearest complex singularity is at distance
≥ 1.36 from the real axis, so the Bernstein ellipse of a panel has parameter ≥ 2.6 and the
24-point rule errs by ≤ 2.6^−48 ≈ 1e−20 relative per panel (erf, gelu, silu: entire or farther).  Arithmetic at ``DPS`` = 30 digits.
A refinement check (panels of width 1.5, L = 9, case ``CHECK``) is stored as ``check``.

Inputs are stored as exact float64 hex; outputs (loss, gradient, Hessian) as 25-digit strings.
Parameter vector (the order of ``popdyn.landscape``): a (m), W (m·d, row-major), b (bias
students), v (skip students), c (intercept students).

Run:  nice -n 10 python data/_precompute/landscape_smooth_refs.py [--jobs 2]
(writes data/refs/landscape_smooth_refs.json)
"""
import json
import os
import sys
import time

import mpmath as mp

DPS = 30
PANEL = mp.mpf("2.25")
LHALF = 9
#: the case recomputed with panels of width CHECK_PANEL (refinement check, stored as ``check``)
CHECK, CHECK_PANEL = "tanh_skip_nobias", mp.mpf("1.5")
OUT = os.path.join(os.path.dirname(__file__), "..", "refs", "landscape_smooth_refs.json")

_GL = {}


def gl_nodes():
    key = mp.mp.prec
    if key not in _GL:
        _GL[key] = mp.calculus.quadrature.GaussLegendre(mp.mp).calc_nodes(4, mp.mp.prec + 20)
    return _GL[key]


def rule(lo, hi, cuts=(), panel=None):
    """Composite GL nodes and weights (times the N(0,1) density) on [lo, hi] split at cuts."""
    panel = PANEL if panel is None else panel
    pts = [lo] + sorted(c for c in cuts if lo < c < hi) + [hi]
    out = []
    g = gl_nodes()
    for a, b in zip(pts[:-1], pts[1:]):
        n = max(1, int(mp.ceil((b - a) / panel)))
        h = (b - a) / n
        for k in range(n):
            lo_, hi_ = a + k * h, a + (k + 1) * h
            half, mid = (hi_ - lo_) / 2, (hi_ + lo_) / 2
            for x, w in g:
                t = mid + half * x
                out.append((t, half * w * mp.exp(-t * t / 2) / mp.sqrt(2 * mp.pi)))
    return out


# ------------------------------------------------------------------------------ functions
def act(name):
    """name -> f(z, nder) returning [σ(z), σ′(z), ..., σ^(nder)(z)] (nder ≤ 2)."""
    if name == "tanh":
        def f(z, n):
            t = mp.tanh(z)
            d1 = 1 - t * t
            return [t, d1, -2 * t * d1][:n + 1]
    elif name == "silu":
        def f(z, n):
            sg = 1 / (1 + mp.exp(-z))
            return [z * sg, sg * (1 + z * (1 - sg)), sg * (1 - sg) * (2 + z * (1 - 2 * sg))][:n + 1]
    elif name == "gelu":
        def f(z, n):
            ph = mp.npdf(z)
            Ph = mp.ncdf(z)
            return [z * Ph, Ph + z * ph, ph * (2 - z * z)][:n + 1]
    elif name == "erf":
        def f(z, n):
            e = 2 / mp.sqrt(mp.pi) * mp.exp(-z * z)
            return [mp.erf(z), e, -2 * z * e][:n + 1]
    elif name == "relu":
        def f(z, n):
            assert n == 0
            return [z if z > 0 else mp.mpf(0)]
    elif name == "id":
        def f(z, n):
            return [z, mp.mpf(1), mp.mpf(0)][:n + 1]
    elif name == "h3+0.3h2":
        def f(z, n):
            assert n == 0
            return [(z ** 3 - 3 * z) / mp.sqrt(6) + mp.mpf(3) / 10 * (z * z - 1) / mp.sqrt(2)]
    else:
        raise ValueError(name)
    return f


KINKED = ("relu",)


class Unit:
    def __init__(self, name, p, beta):
        self.name, self.f, self.p, self.beta = name, act(name), p, beta
        self.kink = name in KINKED


def dot(x, y):
    return mp.fsum(a * b for a, b in zip(x, y))


def norm(x):
    return mp.sqrt(dot(x, x))


def frame(p, q, d):
    """e1 = p/|p|; e2 ⟂ e1 in span(p, q) (any unit vector ⟂ e1 if q ∥ p); (e1, e2, c1, c2)."""
    e1 = [x / norm(p) for x in p]
    if q is not None:
        c1 = dot(q, e1)
        r = [x - c1 * y for x, y in zip(q, e1)]
        c2 = norm(r)
    else:
        c1, c2, r = mp.mpf(0), mp.mpf(0), None
    if c2 > 0:
        e2 = [x / c2 for x in r]
    else:
        for k in range(d):
            base = [mp.mpf(1 if i == k else 0) for i in range(d)]
            r2 = [x - dot(base, e1) * y for x, y in zip(base, e1)]
            if norm(r2) > mp.mpf("0.5"):
                e2 = [x / norm(r2) for x in r2]
                break
    return e1, e2, c1, c2


def assemble(m2, e1, e2, d):
    """(E[FG], E[FG x], E[FG xxᵀ]) from the frame moments m2[(i, j)] = E[FG x1^i x2^j]."""
    v0 = m2[(0, 0)]
    v1 = [m2[(1, 0)] * e1[a] + m2[(0, 1)] * e2[a] for a in range(d)]
    M = [[None] * d for _ in range(d)]
    for a in range(d):
        for b in range(d):
            P = e1[a] * e1[b] + e2[a] * e2[b]
            M[a][b] = (m2[(2, 0)] * e1[a] * e1[b] + m2[(1, 1)] * (e1[a] * e2[b] + e2[a] * e1[b])
                       + m2[(0, 2)] * e2[a] * e2[b] + v0 * ((1 if a == b else 0) - P))
    return v0, v1, M


IJ = ((0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2))


def pair(A, nA, B, nB, d, panel=None):
    """{(p, q): (E, E x, E xxᵀ)} of A.f^(p)(zA) B.f^(q)(zB), p ≤ nA, q ≤ nB (B None: G = 1)."""
    e1, e2, c1, c2 = frame(A.p, None if B is None else B.p, d)
    aA = norm(A.p)
    cutsA = [-A.beta / aA] if A.kink else []
    outer = rule(mp.mpf(-LHALF), mp.mpf(LHALF), cutsA, panel)
    inner_fixed = None
    if B is not None and c2 > 0 and not B.kink:
        inner_fixed = rule(mp.mpf(-LHALF), mp.mpf(LHALF), (), panel)
    acc = {}
    keysB = range(nB + 1) if B is not None else [0]
    for p in range(nA + 1):
        for q in keysB:
            for ij in IJ:
                acc[(p, q, ij)] = mp.mpf(0)
    for x1, w1 in outer:
        fa = A.f(aA * x1 + A.beta, nA)
        # inner moments S[q][j] = E_x2[G_q(zB) x2^j]
        if B is None:
            S = {0: [mp.mpf(1), mp.mpf(0), mp.mpf(1)]}
        elif c2 == 0:
            gb = B.f(c1 * x1 + B.beta, nB)
            S = {q: [gb[q], mp.mpf(0), gb[q]] for q in keysB}
        else:
            if inner_fixed is None:   # B kinked: split at c1 x1 + c2 x2 + β = 0
                nodes = rule(mp.mpf(-LHALF), mp.mpf(LHALF), [-(B.beta + c1 * x1) / c2], panel)
            else:
                nodes = inner_fixed
            S = {q: [mp.mpf(0)] * 3 for q in keysB}
            base = c1 * x1 + B.beta
            for x2, w2 in nodes:
                gb = B.f(base + c2 * x2, nB)
                w2x = w2 * x2
                w2xx = w2x * x2
                for q in keysB:
                    g = gb[q]
                    Sq = S[q]
                    Sq[0] += w2 * g
                    Sq[1] += w2x * g
                    Sq[2] += w2xx * g
        x1p = (mp.mpf(1), x1, x1 * x1)
        for p in range(nA + 1):
            wf = w1 * fa[p]
            for q in keysB:
                Sq = S[q]
                for (i, j) in IJ:
                    acc[(p, q, (i, j))] += wf * x1p[i] * Sq[j]
    out = {}
    for p in range(nA + 1):
        for q in keysB:
            out[(p, q)] = assemble({ij: acc[(p, q, ij)] for ij in IJ}, e1, e2, d)
    return out


def swap(res):
    """The pair moments with the roles of the two functions exchanged."""
    return {(q, p): v for (p, q), v in res.items()}


# ------------------------------------------------------------------------------ the case
def unpack(theta, case):
    m, d = case["m"], case["d"]
    a = theta[:m]
    W = [theta[m + i * d:m + (i + 1) * d] for i in range(m)]
    k = m + m * d
    if case["bias"]:
        b = theta[k:k + m]
        k += m
    else:
        b = [mp.mpf(0)] * m
    if case["skip"]:
        v = theta[k:k + d]
        k += d
    else:
        v = [mp.mpf(0)] * d
    c = theta[k] if case["intercept"] else mp.mpf(0)
    return a, W, b, v, c


def reference(case, panel=None):
    mp.mp.dps = DPS
    m, d = case["m"], case["d"]
    theta = [mp.mpf(float.fromhex(h)) for h in case["theta"]]
    a, W, b, v, c = unpack(theta, case)
    s = mp.mpf(1) if case["scaling"] == "standard" else mp.mpf(1) / m
    T = case["teacher"]
    U = [[mp.mpf(float.fromhex(h)) for h in row] for row in T["U"]]
    tw = [mp.mpf(float.fromhex(h)) for h in T["w"]]
    tb = [mp.mpf(float.fromhex(h)) for h in T["bias"]]
    k = len(tw)
    stu = [Unit(case["act"], W[i], b[i]) for i in range(m)]
    tea = [Unit(T["fn"], U[q], tb[q]) for q in range(k)]
    has_v = norm(v) > 0
    lin = Unit("id", v, mp.mpf(0)) if has_v else None
    zero_mat = [[mp.mpf(0)] * d for _ in range(d)]
    zero3 = (mp.mpf(0), [mp.mpf(0)] * d, zero_mat)
    # pair moments
    P = {}
    for i in range(m):
        for j in range(m):
            P[i, j] = pair(stu[i], 2, stu[j], 1, d, panel)
    Tm = {}
    for i in range(m):
        for q in range(k):
            if tea[q].kink:
                Tm[i, q] = swap(pair(tea[q], 0, stu[i], 2, d, panel))
            else:
                Tm[i, q] = pair(stu[i], 2, tea[q], 0, d, panel)
    Ln = {i: (pair(stu[i], 2, lin, 0, d, panel) if has_v else {(p, 0): zero3 for p in range(3)})
          for i in range(m)}
    S1 = {i: pair(stu[i], 2, None, 0, d, panel) for i in range(m)}
    Y1 = {q: pair(tea[q], 0, None, 0, d, panel)[(0, 0)] for q in range(k)}
    YY = {}
    for q in range(k):
        for r in range(q, k):
            A, B = tea[q], tea[r]
            if B.kink and not A.kink:
                A, B = B, A
            YY[q, r] = YY[r, q] = pair(A, 0, B, 0, d, panel)[(0, 0)][0]
    Ey = mp.fsum(tw[q] * Y1[q][0] for q in range(k))
    Eyx = [mp.fsum(tw[q] * Y1[q][1][a] for q in range(k)) for a in range(d)]
    Eyy = mp.fsum(tw[q] * tw[r] * YY[q, r] for q in range(k) for r in range(k))

    def madd(terms, kind):
        """Σ coef·X over (coef, X) for X a scalar (kind 0), vector (1) or matrix (2)."""
        if kind == 0:
            return mp.fsum(cf * X for cf, X in terms)
        if kind == 1:
            return [mp.fsum(cf * X[a] for cf, X in terms) for a in range(d)]
        return [[mp.fsum(cf * X[a][bb] for cf, X in terms) for bb in range(d)] for a in range(d)]

    def Eg(i, p, kind):
        """E[g σ_i^(p) M]."""
        terms = [(s * a[j], P[i, j][(p, 0)][kind]) for j in range(m)]
        terms.append((mp.mpf(1), Ln[i][(p, 0)][kind]))
        terms.append((c, S1[i][(p, 0)][kind]))
        terms += [(-tw[q], Tm[i, q][(p, 0)][kind]) for q in range(k)]
        return madd(terms, kind)

    # loss
    ff = mp.fsum(s * s * a[i] * a[j] * P[i, j][(0, 0)][0] for i in range(m) for j in range(m))
    ff += 2 * s * mp.fsum(a[i] * (Ln[i][(0, 0)][0] + c * S1[i][(0, 0)][0]) for i in range(m))
    ff += dot(v, v) + c * c
    fy = mp.fsum(s * a[i] * tw[q] * Tm[i, q][(0, 0)][0] for i in range(m) for q in range(k))
    fy += c * Ey + dot(v, Eyx)
    L = (ff - 2 * fy + Eyy) / 2
    # layout
    idx = {}
    n = 0
    for i in range(m):
        idx["a", i] = n; n += 1
    for i in range(m):
        for t in range(d):
            idx["w", i, t] = n; n += 1
    if case["bias"]:
        for i in range(m):
            idx["b", i] = n; n += 1
    if case["skip"]:
        for t in range(d):
            idx["v", t] = n; n += 1
    if case["intercept"]:
        idx["c"] = n; n += 1
    G = [mp.mpf(0)] * n
    H = [[mp.mpf(0)] * n for _ in range(n)]
    Eg0 = {i: Eg(i, 0, 0) for i in range(m)}
    Eg1 = {i: Eg(i, 1, 1) for i in range(m)}
    Eg1s = {i: Eg(i, 1, 0) for i in range(m)}
    Eg2 = {i: Eg(i, 2, 2) for i in range(m)}
    Eg2v = {i: Eg(i, 2, 1) for i in range(m)}
    Eg2s = {i: Eg(i, 2, 0) for i in range(m)}
    for i in range(m):
        G[idx["a", i]] = s * Eg0[i]
        for t in range(d):
            G[idx["w", i, t]] = s * a[i] * Eg1[i][t]
        if case["bias"]:
            G[idx["b", i]] = s * a[i] * Eg1s[i]
    if case["skip"]:
        for t in range(d):
            G[idx["v", t]] = mp.fsum(s * a[j] * S1[j][(0, 0)][1][t] for j in range(m)) + v[t] - Eyx[t]
    if case["intercept"]:
        G[idx["c"]] = mp.fsum(s * a[j] * S1[j][(0, 0)][0] for j in range(m)) + c - Ey

    def put(r, q, val):
        H[r][q] += val

    for i in range(m):
        for j in range(m):
            Pij = P[i, j]
            put(idx["a", i], idx["a", j], s * s * Pij[(0, 0)][0])
            for t in range(d):
                # a_i – w_j : s² a_j E[σ_i σ′_j x]
                put(idx["a", i], idx["w", j, t], s * s * a[j] * swap(P[j, i])[(0, 1)][1][t])
                for u in range(d):
                    put(idx["w", i, t], idx["w", j, u], s * s * a[i] * a[j] * Pij[(1, 1)][2][t][u])
                if case["bias"]:
                    put(idx["w", i, t], idx["b", j], s * s * a[i] * a[j] * Pij[(1, 1)][1][t])
            if case["bias"]:
                put(idx["a", i], idx["b", j], s * s * a[j] * swap(P[j, i])[(0, 1)][0])
                put(idx["b", i], idx["b", j], s * s * a[i] * a[j] * Pij[(1, 1)][0])
        # residual (diagonal unit) terms
        for t in range(d):
            put(idx["a", i], idx["w", i, t], s * Eg1[i][t])
            for u in range(d):
                put(idx["w", i, t], idx["w", i, u], s * a[i] * Eg2[i][t][u])
            if case["bias"]:
                put(idx["w", i, t], idx["b", i], s * a[i] * Eg2v[i][t])
        if case["bias"]:
            put(idx["a", i], idx["b", i], s * Eg1s[i])
            put(idx["b", i], idx["b", i], s * a[i] * Eg2s[i])
        if case["skip"]:
            for t in range(d):
                put(idx["a", i], idx["v", t], s * S1[i][(0, 0)][1][t])
                for u in range(d):
                    put(idx["w", i, t], idx["v", u], s * a[i] * S1[i][(1, 0)][2][t][u])
                if case["bias"]:
                    put(idx["b", i], idx["v", t], s * a[i] * S1[i][(1, 0)][1][t])
        if case["intercept"]:
            put(idx["a", i], idx["c"], s * S1[i][(0, 0)][0])
            for t in range(d):
                put(idx["w", i, t], idx["c"], s * a[i] * S1[i][(1, 0)][1][t])
            if case["bias"]:
                put(idx["b", i], idx["c"], s * a[i] * S1[i][(1, 0)][0])
    if case["skip"]:
        for t in range(d):
            put(idx["v", t], idx["v", t], mp.mpf(1))
    if case["intercept"]:
        put(idx["c"], idx["c"], mp.mpf(1))
    # the blocks above were filled as upper/both: symmetrize from what was put (r ≤ q order
    # of the layout for the cross blocks; the a–a, w–w, b–b blocks were filled fully)
    full = [[None] * n for _ in range(n)]
    for r in range(n):
        for q in range(n):
            full[r][q] = H[r][q] + (H[q][r] if q != r and _cross(r, q, idx) else 0)
    return L, G, full


def _cross(r, q, idx):
    """True when entry (q, r) was filled for a block that (r, q) mirrors (different groups)."""
    grp = {}
    for key, pos in idx.items():
        grp[pos] = key[0] if isinstance(key, tuple) else key
    return grp[r] != grp[q]


# ------------------------------------------------------------------------------ cases
def hx(vals):
    return [float(x).hex() for x in vals]


def cases():
    out = []

    def add(name, act_, m, d, bias, skip, intercept, scaling, a, W, b, v, c, teacher):
        theta = list(a) + [x for row in W for x in row]
        if bias:
            theta += list(b)
        if skip:
            theta += list(v)
        if intercept:
            theta += [c]
        T = dict(teacher)
        T["U"] = [hx(r) for r in teacher["U"]]
        T["w"] = hx(teacher["w"])
        T["bias"] = hx(teacher.get("bias", [0.0] * len(teacher["w"])))
        out.append({"name": name, "act": act_, "m": m, "d": d, "bias": bias, "skip": skip,
                    "intercept": intercept, "scaling": scaling, "theta": hx(theta),
                    "teacher": T})

    relu_net = {"kind": "network", "fn": "relu", "w": [0.9, -0.6],
                "U": [[0.8, 0.6], [-0.6, 0.8]], "bias": [0.15, -0.25]}
    tanh_net = {"kind": "network", "fn": "tanh", "w": [1.1], "U": [[0.7, -0.9]], "bias": [0.2]}
    h32 = {"kind": "additive", "fn": "h3+0.3h2", "w": [1.0, 0.5],
           "U": [[1.0, 0.0, 0.0], [0.0, 0.6, 0.8]]}
    relu_add = {"kind": "additive", "fn": "relu", "w": [1.0, -0.7],
                "U": [[0.0, 1.0, 0.0], [0.6, 0.0, -0.8]]}
    # generic: two tanh units with biases, intercept, relu teacher with biases
    add("tanh_generic", "tanh", 2, 2, True, False, True, "standard",
        [0.9, -0.7], [[0.6, -0.5], [0.3, 1.1]], [0.2, -0.3], None, 0.12, relu_net)
    # duplicated (same w, different b; and an exact copy) and antiparallel silu units, skip
    add("silu_degenerate", "silu", 4, 2, True, True, True, "standard",
        [0.8, -0.5, 0.4, 0.6], [[0.7, -0.4], [0.7, -0.4], [-0.7, 0.4], [0.7, -0.4]],
        [0.1, -0.35, 0.2, 0.1], [0.3, -0.15], -0.1, tanh_net)
    # near-aligned gelu units (ρ = 1 − O(1e−18)), no bias, mean field, additive polynomial link
    add("gelu_near_aligned", "gelu", 2, 3, False, False, False, "mean_field",
        [1.2, -0.8], [[0.8, -0.3, 0.5], [0.8, -0.3 + 2.0 ** -30, 0.5]], None, None, 0.0, h32)
    # erf with biases and skip: units on both teacher directions, one antiparallel to one
    add("erf_aligned", "erf", 3, 3, True, True, False, "standard",
        [0.7, -0.9, 0.4], [[0.0, 1.1, 0.0], [0.6, 0.0, -0.8], [-0.3, 0.0, 0.4]],
        [0.05, -0.2, 0.3], [0.2, -0.1, 0.15], 0.0, relu_add)
    # tanh without biases against the additive relu link, skip and intercept, d = 3
    add("tanh_skip_nobias", "tanh", 2, 3, False, True, True, "standard",
        [0.6, 1.0], [[0.5, 0.7, -0.2], [-0.5, -0.7, 0.2]], None, [0.1, 0.2, -0.3], 0.05,
        relu_add)
    return out


def run_one(case):
    t0 = time.time()
    L, G, H = reference(case)
    out = dict(case)
    out["loss"] = mp.nstr(L, 25)
    out["grad"] = [mp.nstr(x, 25) for x in G]
    out["hessian"] = [[mp.nstr(x, 25) for x in row] for row in H]
    out["seconds"] = round(time.time() - t0, 1)
    if case["name"] == CHECK:
        L2, G2, H2 = reference(case, panel=CHECK_PANEL)
        scale = max(abs(x) for row in H for x in row)
        out["check"] = {"panel": str(CHECK_PANEL),
                        "max_hessian_diff_rel": mp.nstr(max(abs(x - y) for r1, r2 in zip(H, H2)
                                                            for x, y in zip(r1, r2)) / scale, 3),
                        "loss_diff": mp.nstr(abs(L - L2), 3)}
    print(f"{case['name']}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    return out


def main():
    jobs = 1
    if "--jobs" in sys.argv:
        jobs = int(sys.argv[sys.argv.index("--jobs") + 1])
    cs = cases()
    if "--only" in sys.argv:
        want = sys.argv[sys.argv.index("--only") + 1].split(",")
        cs = [c for c in cs if c["name"] in want]
    if jobs > 1:
        import multiprocessing as mpr
        with mpr.Pool(jobs) as pool:
            res = pool.map(run_one, cs, chunksize=1)
    else:
        res = [run_one(c) for c in cs]
    path = OUT if "--out" not in sys.argv else sys.argv[sys.argv.index("--out") + 1]
    with open(path, "w") as fh:
        json.dump({"note": __doc__.splitlines()[0], "dps": DPS, "panel": str(PANEL),
                   "cases": res}, fh, indent=1)


if __name__ == "__main__":
    main()
