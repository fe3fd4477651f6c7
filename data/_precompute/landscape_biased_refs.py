"""Reference loss, gradient and Hessian of relu / leaky-relu students WITH biases by mpmath.

Independent of popdyn (no popdyn import).  d = 2, x ~ N(0, I_2); and d = 3 with every unit in
the x1-x2 plane (x3 independent of every kink: it enters through E[x3²] = 1 only, which tests
the orthogonal-complement terms of the Hessian; the skip's v_3 ≠ 0).  Student
f(x) = s Σ_j a_j σ(w_j·x + b_j) + v·x + c, σ = p relu + q id; teacher y = Σ_k v*_k σ*(u_k·x + β_k).
With g = f − y and x̃ = (x, 1):

    L = ½E[g²],   ∇L = E[g ∇f],   ∇²L = E[∇f ∇fᵀ] + E[g ∇²f],

where ∇²f has the blocks ∂²f/∂a_j∂w̃_j = s σ′(z_j) x̃ (an area term) and
∂²f/∂w̃_j² = s a_j p δ(z_j) x̃x̃ᵀ (a kink term), w̃_j = (w_j, b_j).

*Area terms.*  The kink lines w·x + b = 0 of all units cut the plane into cells; on a cell the
activation pattern is fixed, so ∇f, g are affine in x and every area integrand is a quadratic
polynomial in (x1, x2) times φ(x1)φ(x2).  Per cell we need the six moments ∫ x1^α x2^β φφ
(α + β ≤ 2).  The inner integral over x1 (at fixed x2 = t) is closed form (∫_l^u x^n φ by the
recursion I_n = (n−1)I_{n−2} + l^{n−1}φ(l) − u^{n−1}φ(u)) on the intervals between the kinks;
the outer integral over t ∈ [−T, T] (T = 14: the neglected mass is < 2e−44) is Gauss–Legendre
(mpmath's nodes) on panels of length ≤ 1 between the t-values where two kink lines cross (the
inner integral is analytic in t between them).  Every unit has |w_1| ≥ 0.2|w| (asserted) so no
kink moves faster than 5 in x1 per unit t.  The panel rule is run at 24 nodes (stored) and at 48
nodes; the difference (``quad_err``) is stored.

*Kink terms.*  E[h(x) δ(w·x + b)] = φ(|b|/|w|)/|w| ∫ h(c₀ + τu) φ(τ) dτ (c₀ = −b w/|w|², u ⊥ w
a unit vector); along the line g is piecewise affine in τ and x̃ affine, so the integral is
closed form on the intervals between the other units' kinks (moments I_0..I_3).

*Self-check.*  For the cases marked ``fd``, the Hessian is also taken by central differences
(h = 1e−12) of the mpmath gradient (24-node panels; in d = 3 the columns of the off-plane
W[i, 3] are left out, since the units must stay in the plane); the largest difference relative to max|H| is stored as
``fd_check`` (O(h²) where L is C³, O(h) at the C² but not C³ point of a student kink on a
teacher kink; quadrature error / h ≈ 1e−30).

Stored: inputs as exact float64 hex strings, loss, gradient and Hessian as 40-digit decimals.
Parameter vector (popdyn.landscape order): a (m), W (m·2, row-major), b (m), v (2, skip
students), c (intercept students).

Run:  nice -n 10 python data/_precompute/landscape_biased_refs.py
(writes data/refs/landscape_biased_refs.json; a few minutes on one core)
"""
import json
import os
import sys
import time

import mpmath as mp

DPS = 50
mp.mp.dps = DPS
T = mp.mpf(14)
PANEL = mp.mpf(1)
FD_H = mp.mpf("1e-12")
OUT = os.path.join(os.path.dirname(__file__), "..", "refs", "landscape_biased_refs.json")

_GL = {}


def gl_nodes(degree):
    key = (degree, mp.mp.prec)
    if key not in _GL:
        _GL[key] = mp.calculus.quadrature.GaussLegendre(mp.mp).calc_nodes(degree, mp.mp.prec + 20)
    return _GL[key]


def hexs(x):
    return float(x).hex()


def hx(vals):
    return [hexs(x) for x in vals]


def fh(s):
    return mp.mpf(float.fromhex(s))


def Phi(x):
    if x == mp.inf:
        return mp.mpf(1)
    if x == -mp.inf:
        return mp.mpf(0)
    return mp.ncdf(x)


def phi(x):
    if x in (mp.inf, -mp.inf):
        return mp.mpf(0)
    return mp.npdf(x)


def interval_moments(l, u, nmax):
    """[∫_l^u x^n φ(x) dx for n = 0..nmax] (l, u may be ∓inf)."""
    if l >= 0:                      # upper tail: difference of upper-tail probabilities
        I0 = Phi(-l) - Phi(-u)
    else:
        I0 = Phi(u) - Phi(l)
    pl, pu = phi(l), phi(u)
    out = [I0, pl - pu]
    for n in range(2, nmax + 1):
        tl = 0 if l == -mp.inf else l ** (n - 1) * pl
        tu = 0 if u == mp.inf else u ** (n - 1) * pu
        out.append((n - 1) * out[n - 2] + tl - tu)
    return out


# ------------------------------------------------------------------------------ model
class Model:
    def __init__(self, case):
        self.m, self.d = case["m"], case["d"]
        assert self.d in (2, 3)
        self.skip, self.intercept = case["skip"], case["intercept"]
        self.s = mp.mpf(1) if case["scaling"] == "standard" else mp.mpf(1) / self.m
        self.p, self.q = pq(case["act"], case["slope"])
        self.pt, self.qt = pq(case["teacher_act"], case["teacher_slope"])
        self.U = [[fh(x) for x in r] for r in case["U"]]
        self.beta = [fh(x) for x in case["beta"]]
        self.V = [fh(x) for x in case["V"]]
        self.k = len(self.V)
        self.P = 2 * self.m + self.m * self.d + (self.d if self.skip else 0) + (1 if self.intercept else 0)

    def unpack(self, theta):
        m, d = self.m, self.d
        a = theta[:m]
        W = [theta[m + i * d:m + (i + 1) * d] for i in range(m)]
        b = theta[m + m * d:2 * m + m * d]
        k = 2 * m + m * d
        v = theta[k:k + d] if self.skip else [mp.mpf(0)] * d
        k += d if self.skip else 0
        c = theta[k] if self.intercept else mp.mpf(0)
        return a, W, b, v, c

    def units(self, theta):
        """All ridge units (w, b) — students first, then teachers."""
        a, W, b, v, c = self.unpack(theta)
        out = [(W[i], b[i]) for i in range(self.m)]
        out += [(self.U[k], self.beta[k]) for k in range(self.k)]
        for w, _ in out:
            assert self.d == 2 or w[2] == 0, "d = 3: every unit must lie in the x1-x2 plane"
            assert abs(w[0]) >= mp.mpf("0.2") * mp.sqrt(w[0] ** 2 + w[1] ** 2), "|w_1| too small"
        return out

    def affine(self, theta, pattern):
        """(A0, A1, A2, g0, g1, g2): ∇f = A0 + x1 A1 + x2 A2 and g = g0 + g1 x1 + g2 x2 on the
        cell with activation ``pattern`` (booleans: students then teachers)."""
        m, d, s = self.m, self.d, self.s
        a, W, b, v, c = self.unpack(theta)
        P = self.P
        A = [[mp.mpf(0)] * P for _ in range(d + 1)]
        g = [mp.mpf(0)] * (d + 1)
        for i in range(m):
            sp = self.p * (1 if pattern[i] else 0) + self.q
            A[0][i] = s * sp * b[i]
            for kk in range(d):
                A[1 + kk][i] = s * sp * W[i][kk]
                A[1 + kk][m + i * d + kk] = s * a[i] * sp
                g[1 + kk] += s * a[i] * sp * W[i][kk]
            A[0][m + m * d + i] = s * a[i] * sp
            g[0] += s * a[i] * sp * b[i]
        k0 = 2 * m + m * d
        if self.skip:
            for kk in range(d):
                A[1 + kk][k0 + kk] = mp.mpf(1)
            k0 += d
        for kk in range(d):
            g[1 + kk] += v[kk]
        if self.intercept:
            A[0][k0] = mp.mpf(1)
        g[0] += c
        for k in range(self.k):
            sp = self.pt * (1 if pattern[m + k] else 0) + self.qt
            g[0] -= self.V[k] * sp * self.beta[k]
            for kk in range(d):
                g[1 + kk] -= self.V[k] * sp * self.U[k][kk]
        return A, g


def pq(name, slope):
    if name == "relu":
        return mp.mpf(1), mp.mpf(0)
    sl = fh(slope)
    return 1 - sl, sl


# ------------------------------------------------------------------------------ area moments
def cell_moments(units, degree):
    """{pattern: [μ00, μ10, μ01, μ20, μ11, μ02]} over the cells of the kink-line arrangement."""
    # t-values where two kink lines cross
    bps = [-T, T]
    for i in range(len(units)):
        for j in range(i + 1, len(units)):
            (wi, bi), (wj, bj) = units[i], units[j]
            det = wi[0] * wj[1] - wi[1] * wj[0]
            if det != 0:
                t = (-wi[0] * bj + wj[0] * bi) / det      # x2 of the crossing (Cramer)
                if -T < t < T:
                    bps.append(t)
    bps = sorted(set(bps))
    nodes = gl_nodes(degree)
    mom = {}
    for lo, hi in zip(bps[:-1], bps[1:]):
        n = int(mp.ceil((hi - lo) / PANEL))
        for p_ in range(n):
            a_ = lo + (hi - lo) * p_ / n
            b_ = lo + (hi - lo) * (p_ + 1) / n
            half, mid = (b_ - a_) / 2, (b_ + a_) / 2
            for x, w in nodes:
                t = mid + half * x
                _inner(units, t, half * w * phi(t), mom)
    return mom


def _inner(units, t, wt, mom):
    consts = [w[1] * t + b for w, b in units]
    kinks = sorted(-cst / w[0] for (w, _), cst in zip(units, consts))
    edges = [-mp.inf] + kinks + [mp.inf]
    for l, u in zip(edges[:-1], edges[1:]):
        if not l < u:
            continue
        if l == -mp.inf:
            rep = u - 1
        elif u == mp.inf:
            rep = l + 1
        else:
            rep = (l + u) / 2
        pat = tuple(bool(w[0] * rep + cst > 0) for (w, _), cst in zip(units, consts))
        I = interval_moments(l, u, 2)
        acc = mom.setdefault(pat, [mp.mpf(0)] * 6)
        vals = (I[0], I[1], t * I[0], I[2], t * I[1], t * t * I[0])
        for r in range(6):
            acc[r] += wt * vals[r]


def area_terms(model, theta, degree, hessian=True):
    """(L, grad, H_area) from the cell moments."""
    units = model.units(theta)
    mom = cell_moments(units, degree)
    P = model.P
    L = mp.mpf(0)
    G = [mp.mpf(0)] * P
    H = [[mp.mpf(0)] * P for _ in range(P)] if hessian else None
    mass = mp.fsum(v[0] for v in mom.values())
    # monomials x_i x_j (x_0 = 1) and their cell moments μ00 μ10 μ01 μ20 μ11 μ02; in d = 3 the
    # units lie in the x1-x2 plane, x3 ~ N(0, 1) is independent of the cell: E[x3²·] = μ00 and
    # E[x3 x_i ·] = 0 (i < 3)
    pairs = [(0, 0, 0), (1, 0, 1), (2, 0, 2), (1, 1, 3), (1, 2, 4), (2, 2, 5)]
    if model.d == 3:
        pairs.append((3, 3, 0))
    m_, d_ = model.m, model.d
    for pat, mom_ in mom.items():
        A, g = model.affine(theta, pat)
        for i, j, r in pairs:
            mu = mom_
            f = 1 if i == j else 2
            L += mu[r] * g[i] * g[j] * f / 2
            for q in range(P):
                if i == j:
                    G[q] += mu[r] * g[i] * A[i][q]
                else:
                    G[q] += mu[r] * (g[i] * A[j][q] + g[j] * A[i][q])
            if hessian:
                # E[g ∂²f/∂a_l∂w̃_l] = s σ′_l E[g x̃] on the cell (x̃ = (x1, x2, 1))
                for l in range(model.m):
                    spl = model.s * (model.p * (1 if pat[l] else 0) + model.q)
                    cols = (m_ + l * d_ + (i - 1) if i > 0 else m_ + d_ * m_ + l,
                            m_ + l * d_ + (j - 1) if j > 0 else m_ + d_ * m_ + l)
                    # monomial x_i x_j = g-coefficient of x_i times x̃-entry x_j, and vice versa
                    H[l][cols[1]] += mu[r] * spl * g[i]
                    H[cols[1]][l] += mu[r] * spl * g[i]
                    if i != j:
                        H[l][cols[0]] += mu[r] * spl * g[j]
                        H[cols[0]][l] += mu[r] * spl * g[j]
                Ai, Aj = A[i], A[j]
                for q in range(P):
                    if Ai[q] == 0 and Aj[q] == 0:
                        continue
                    row = H[q]
                    for r2 in range(P):
                        if i == j:
                            row[r2] += mu[r] * Ai[q] * Ai[r2]
                        else:
                            row[r2] += mu[r] * (Ai[q] * Aj[r2] + Aj[q] * Ai[r2])
    return L, G, H, mass


# ------------------------------------------------------------------------------ kink terms
def kink_terms(model, theta):
    """Σ_j s a_j p E[g δ(z_j) x̃x̃ᵀ], added to the (w_j, b_j) blocks (a P×P matrix)."""
    m, d, s = model.m, model.d, model.s
    a, W, b, v, c = model.unpack(theta)
    units = model.units(theta)
    P = model.P
    H = [[mp.mpf(0)] * P for _ in range(P)]
    for j in range(m):
        w, bj = W[j], b[j]
        n2 = w[0] ** 2 + w[1] ** 2
        nw = mp.sqrt(n2)
        c0 = [-bj * w[0] / n2, -bj * w[1] / n2]
        u = [-w[1] / nw, w[0] / nw]
        # z_r(τ) = α_r + β_r τ along the line
        lin = [(wr[0] * c0[0] + wr[1] * c0[1] + br, wr[0] * u[0] + wr[1] * u[1]) for wr, br in units]
        kinks = sorted(-al / be for r, (al, be) in enumerate(lin) if r != j and be != 0)
        edges = [-mp.inf] + kinks + [mp.inf]
        J = [mp.mpf(0)] * 3
        for l, uu in zip(edges[:-1], edges[1:]):
            if not l < uu:
                continue
            rep = uu - 1 if l == -mp.inf else (l + 1 if uu == mp.inf else (l + uu) / 2)
            g0, g1 = c + v[0] * c0[0] + v[1] * c0[1], v[0] * u[0] + v[1] * u[1]
            for r, (al, be) in enumerate(lin):
                if r == j:
                    continue            # z_j ≡ 0 on its own kink line
                act = al + be * rep > 0
                if r < m:
                    coef = s * a[r] * (model.p * (1 if act else 0) + model.q)
                else:
                    coef = -model.V[r - m] * (model.pt * (1 if act else 0) + model.qt)
                g0 += coef * al
                g1 += coef * be
            I = interval_moments(l, uu, 3)
            for n in range(3):
                J[n] += g0 * I[n] + g1 * I[n + 1]
        zero = [mp.mpf(0)] * (d - 2)
        X0 = [c0[0], c0[1]] + zero + [mp.mpf(1)]
        X1 = [u[0], u[1]] + zero + [mp.mpf(0)]
        dens = phi(abs(bj) / nw) / nw
        fac = s * a[j] * model.p * dens
        idx = [m + j * d + k for k in range(d)] + [m + m * d + j]
        for r1 in range(d + 1):
            for r2 in range(d + 1):
                val = (J[0] * X0[r1] * X0[r2] + J[1] * (X0[r1] * X1[r2] + X1[r1] * X0[r2])
                       + J[2] * X1[r1] * X1[r2])
                if d == 3:
                    # x3 ~ N(0, 1) independent of τ: g gains v_3 x3 and x̃ gains x3 e3, so
                    # E[g x̃x̃ᵀ] gains E[g]·e3e3ᵀ + v_3 (e3 E[x̃]ᵀ + E[x̃] e3ᵀ), E[x̃] = X0
                    e3 = [0, 0, 1, 0]
                    val += J[0] * e3[r1] * e3[r2] + v[2] * (e3[r1] * X0[r2] + X0[r1] * e3[r2])
                H[idx[r1]][idx[r2]] += fac * val
    return H


def reference(case):
    model = Model(case)
    theta = [fh(x) for x in case["theta"]]
    L, G, Ha, mass = area_terms(model, theta, 4)
    L4, G4, Ha4, _ = area_terms(model, theta, 5)
    Hk = kink_terms(model, theta)
    P = model.P
    H = [[Ha[i][j] + Hk[i][j] for j in range(P)] for i in range(P)]
    H4 = [[Ha4[i][j] + Hk[i][j] for j in range(P)] for i in range(P)]
    hmax = max(abs(x) for row in H for x in row)
    qerr = max(abs(H[i][j] - H4[i][j]) for i in range(P) for j in range(P)) / hmax
    qerr = max(qerr, max(abs(G[i] - G4[i]) for i in range(P)), abs(L - L4))
    asym = max(abs(H[i][j] - H[j][i]) for i in range(P) for j in range(P)) / hmax
    out = dict(case)
    out.update(loss=mp.nstr(L, 40), grad=[mp.nstr(x, 40) for x in G],
               hessian=[[mp.nstr(x, 40) for x in row] for row in H],
               quad_err=mp.nstr(qerr, 3), mass_err=mp.nstr(abs(mass - 1), 3),
               asymmetry=mp.nstr(asym, 3))
    if case.get("fd"):
        fd = [[mp.mpf(0)] * P for _ in range(P)]
        # d = 3: the off-plane coordinates W[i, 2] are not perturbed (the units must stay in the
        # x1-x2 plane); by symmetry only the W[·, 2] × W[·, 2] block goes unchecked
        off = {model.m + i * 3 + 2 for i in range(model.m)} if model.d == 3 else set()
        cols = [q for q in range(P) if q not in off]
        for q in cols:
            tp = list(theta)
            tm = list(theta)
            tp[q] += FD_H
            tm[q] -= FD_H
            Gp = area_terms(model, tp, 4, hessian=False)[1]
            Gm = area_terms(model, tm, 4, hessian=False)[1]
            for r in range(P):
                fd[r][q] = (Gp[r] - Gm[r]) / (2 * FD_H)
        out["fd_check"] = mp.nstr(max(abs(fd[i][j] - H[i][j]) for i in range(P)
                                      for j in cols) / hmax, 3)
    return out


# ------------------------------------------------------------------------------ cases
def cases():
    """Declared cases: generic, duplicated, parallel with different biases, antiparallel (also
    complementary: one kink line), small |b|, large |b|/|w| (4.6; 8.5 and 7.6 with leaky relu), a
    student kink on a teacher kink, leaky relu with the skip, mean field."""
    out = []

    def add(name, act_, slope, m, skip, intercept, scaling, a, W, b, v, c, U, beta, V,
            tact="relu", tslope=0.0, fd=False, d=2):
        theta = list(a) + [x for row in W for x in row] + list(b)
        if skip:
            theta += list(v)
        if intercept:
            theta += [c]
        out.append({"name": name, "act": act_, "slope": hexs(slope), "teacher_act": tact,
                    "teacher_slope": hexs(tslope), "m": m, "d": d, "skip": skip,
                    "intercept": intercept, "scaling": scaling, "theta": hx(theta),
                    "U": [hx(r) for r in U], "beta": hx(beta), "V": hx(V), "fd": fd})

    U2 = [[1.0, 0.35], [-0.45, 0.9]]
    add("generic", "relu", 0.0, 3, False, True, "standard",
        [0.9, -0.6, 1.3], [[0.7, -0.4], [0.5, 1.1], [-0.9, -0.3]], [0.3, -0.5, 0.2], None,
        0.15, U2, [0.2, -0.3], [1.0, 0.8], fd=True)
    add("duplicated", "relu", 0.0, 3, True, True, "standard",
        [0.7, 0.4, 1.1], [[0.6, 0.8], [0.6, 0.8], [-0.5, 0.25]], [0.25, 0.25, -0.1],
        [0.1, 0.05], 0.3, U2, [0.1, 0.4], [1.0, 1.0])
    add("parallel_bias", "relu", 0.0, 3, False, True, "standard",
        [0.7, -0.4, 1.1], [[0.6, 0.8], [1.2, 1.6], [-0.5, 0.25]], [0.25, -0.7, -0.1], None,
        0.0, U2, [0.1, 0.4], [1.0, 0.7])
    add("antiparallel", "relu", 0.0, 3, True, False, "standard",
        [0.9, 0.5, -0.7], [[0.6, -0.8], [-0.3, 0.4], [0.45, 0.75]], [0.2, 0.35, -0.15],
        [-0.2, 0.4], 0.0, U2, [0.0, 0.3], [1.0, 0.5])
    add("antiparallel_complement", "relu", 0.0, 2, False, True, "standard",
        [0.9, 0.5], [[0.6, -0.8], [-0.6, 0.8]], [0.3, -0.3], None, 0.1,
        U2, [0.3, 0.0], [0.6, 1.0])
    add("small_bias", "relu", 0.0, 3, False, True, "standard",
        [0.8, 0.6, -0.5], [[0.7, 0.3], [-0.4, 0.9], [0.55, -0.8]], [1e-9, -3e-10, 2e-12], None,
        0.05, U2, [0.0, 0.0], [1.0, 0.9])
    add("large_bias", "relu", 0.0, 3, False, True, "standard",
        [0.8, 0.6, 1.2], [[0.7, 0.3], [-0.4, 0.9], [0.55, -0.8]], [3.5, -4.0, 0.1], None,
        0.05, U2, [0.2, -0.1], [1.0, 0.9])
    add("very_large_bias", "leaky_relu", 0.1, 3, True, True, "standard",
        [0.8, 0.6, 1.2], [[0.7, 0.3], [-0.4, 0.9], [0.55, -0.8]], [6.5, -7.5, 0.3],
        [0.2, -0.1], 0.05, U2, [0.2, -0.1], [1.0, 0.9])
    add("planar_d3", "relu", 0.0, 2, True, True, "standard",
        [0.9, -0.6], [[0.7, -0.4, 0.0], [0.5, 1.1, 0.0]], [0.3, -0.5], [0.1, -0.2, 0.35], 0.1,
        [[1.0, 0.35, 0.0], [-0.45, 0.9, 0.0]], [0.2, -0.3], [1.0, 0.8], fd=True, d=3)
    add("on_teacher_kink", "relu", 0.0, 2, False, True, "standard",
        [0.7, 0.9], [[1.0, 0.35], [-0.6, 0.5]], [0.2, 0.1], None, 0.0,
        U2, [0.2, -0.3], [1.0, 0.8], fd=True)
    add("leaky_skip_meanfield", "leaky_relu", 0.2, 2, True, True, "mean_field",
        [0.8, -0.6], [[0.5, 0.7], [-0.8, 0.2]], [0.3, -0.2], [0.25, 0.1], 0.05,
        [[1.0, 0.0], [0.3, 1.0]], [0.1, -0.2], [1.0, 0.6], "leaky_relu", 0.1)
    return out


def main():
    res = []
    for case in cases():
        t0 = time.time()
        r = reference(case)
        res.append(r)
        print(f"{case['name']}: {time.time() - t0:.1f} s  quad_err {r['quad_err']}  mass_err "
              f"{r['mass_err']}  asym {r['asymmetry']}  fd {r.get('fd_check')}",
              file=sys.stderr, flush=True)
    with open(OUT, "w") as fh_:
        json.dump({"note": __doc__.splitlines()[0], "dps": DPS, "cases": res}, fh_, indent=1)


if __name__ == "__main__":
    main()
