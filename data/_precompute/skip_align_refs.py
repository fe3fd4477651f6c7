"""Reference AGOP alignment scores of students with a linear skip, by mpmath.

Independent of popdyn.  The student f(x) = s Σ_j a_j σ(w_j·x + b_j) + v·x + c, x ~ N(0, I_d),
has ∇f = v + s Σ_j a_j σ′(w_j·x + b_j) w_j, so its AGOP is

    M = E[∇f ∇fᵀ] = s² Σ_ij a_i a_j E[σ′_i σ′_j] w_i w_jᵀ + v vᵀ + q vᵀ + v qᵀ,
    q = s Σ_j a_j E[σ′_j] w_j.

The pair moments E[σ′_iσ′_j] of (u_i, u_j) = (w_i·x + b_i, w_j·x + b_j) ~ N((b_i, b_j), Σ),
Σ the Gram matrix of the two rows, computed at 40 digits from the exact float64 inputs:

* relu: P(u_i > 0, u_j > 0) = ∫_{−h_i}^∞ φ(z) Φ((h_j + ρz)/√(1 − ρ²)) dz (h = b/|w|, mpmath
  quadrature from max(−h_i, −60), broken at 0, ±2, ±4, ±8 so that the mass of φ is never
  missed when |h_i| is huge, as for tiny neurons, and at z* + k√(1 − ρ²), k = 0, ±1, ±4, ±16,
  ±64, around the step z* = −h_j/ρ of nearly parallel rows); ρ = ±1 (duplicated / antiparallel rows): Φ(min(h_i, h_j)) and
  max(0, Φ(h_i) + Φ(h_j) − 1); zero rows: the indicator of b > 0;
* leaky relu (slope λ = 0.1, the float64 value): σ′ = λ + (1 − λ)1{u > 0}, so
  E[σ′_iσ′_j] = λ² + λ(1 − λ)(Φ(h_i) + Φ(h_j)) + (1 − λ)² P(u_i > 0, u_j > 0);
* erf (σ = erf, σ′(t) = (2/√π)e^{−t²}): the Gaussian integral in closed form,
  E[σ′_iσ′_j] = (4/π) det(I + 2Σ)^{−1/2} exp(−μᵀ(I + 2Σ)^{−1}μ), μ = (b_i, b_j), valid for
  every geometry (duplicated, antiparallel, zero rows); E[σ′_j] = (2/√π)(1 + 2|w_j|²)^{−1/2}
  exp(−b_j²/(1 + 2|w_j|²)).

Scores (Kumar (arXiv 2609.39408); the top-r eigenspace Y_r of M, r = rows of the orthonormal U):
A_top = |U y_1|², A_mean = tr(K)/r, A_min = λ_min(K), K = (U Y_r)(U Y_r)ᵀ, by mpmath's
symmetric eigensolver at 40 digits.  The gaps λ_1 − λ_2 and λ_r − λ_{r+1} are stored so that a
test knows which scores a certified bracket must resolve.  Inputs are stored as float64 hex.

Run:  python data/_precompute/skip_align_refs.py   (writes data/refs/skip_align_refs.json;
a few seconds)
"""
import json
import os

import mpmath as mp

mp.mp.dps = 40
OUT = os.path.join(os.path.dirname(__file__), "..", "refs", "skip_align_refs.json")
SLOPE = mp.mpf(0.1)          # the float64 0.1 exactly


def _dot(x, y):
    return mp.fsum(mp.mpf(p) * mp.mpf(q) for p, q in zip(x, y))


def _orthant(wi, bi, wj, bj):
    """P(w_i·x + b_i > 0, w_j·x + b_j > 0)."""
    ni, nj = mp.sqrt(_dot(wi, wi)), mp.sqrt(_dot(wj, wj))
    if ni == 0 or nj == 0:
        ind_i = (1 if bi > 0 else 0) if ni == 0 else mp.ncdf(mp.mpf(bi) / ni)
        ind_j = (1 if bj > 0 else 0) if nj == 0 else mp.ncdf(mp.mpf(bj) / nj)
        return mp.mpf(ind_i) * ind_j
    hi, hj = mp.mpf(bi) / ni, mp.mpf(bj) / nj
    rho = _dot(wi, wj) / (ni * nj)
    if abs(1 - rho) < mp.mpf(10) ** -30:
        return mp.ncdf(min(hi, hj))
    if abs(1 + rho) < mp.mpf(10) ** -30:
        return max(mp.mpf(0), mp.ncdf(hi) + mp.ncdf(hj) - 1)
    sq = mp.sqrt(1 - rho * rho)
    f = lambda z: mp.npdf(z) * mp.ncdf((hj + rho * z) / sq)
    # the Gaussian's mass sits in |z| < 60 whatever h_i is (a tiny neuron has |h_i| ~ 1e6):
    # start there and break at the points where φ changes scale
    lo = max(-hi, mp.mpf(-60))
    pts = {lo} | {mp.mpf(t) for t in (-8, -4, -2, 0, 2, 4, 8) if t > lo}
    # nearly parallel rows (1 − ρ ~ 1e−6): the integrand steps from 0 to φ(z) over a width
    # √(1 − ρ²) around z* = −h_j/ρ; break there at growing distances, or the rule misses it
    zs = -hj / rho
    pts |= {zs + k * sq for k in (-64, -16, -4, -1, 0, 1, 4, 16, 64) if lo < zs + k * sq < 60}
    return mp.quad(f, sorted(pts) + [mp.inf])


def _phi_h(w, b):
    n = mp.sqrt(_dot(w, w))
    if n == 0:
        return mp.mpf(1 if b > 0 else 0)
    return mp.ncdf(mp.mpf(b) / n)


def _erf_pair(wi, bi, wj, bj):
    s11, s22, s12 = _dot(wi, wi), _dot(wj, wj), _dot(wi, wj)
    A11, A22, A12 = 1 + 2 * s11, 1 + 2 * s22, 2 * s12
    det = A11 * A22 - A12 * A12
    mi, mj = mp.mpf(bi), mp.mpf(bj)
    quad = (A22 * mi * mi - 2 * A12 * mi * mj + A11 * mj * mj) / det
    return 4 / mp.pi / mp.sqrt(det) * mp.exp(-quad)


def pair(act, wi, bi, wj, bj):
    if act == "relu":
        return _orthant(wi, bi, wj, bj)
    if act == "leaky_relu":
        lam = SLOPE
        return (lam * lam + lam * (1 - lam) * (_phi_h(wi, bi) + _phi_h(wj, bj))
                + (1 - lam) ** 2 * _orthant(wi, bi, wj, bj))
    if act == "erf":
        return _erf_pair(wi, bi, wj, bj)
    raise ValueError(act)


def mu1(act, w, b):
    if act == "relu":
        return _phi_h(w, b)
    if act == "leaky_relu":
        return SLOPE + (1 - SLOPE) * _phi_h(w, b)
    if act == "erf":
        q = 1 + 2 * _dot(w, w)
        return 2 / mp.sqrt(mp.pi) / mp.sqrt(q) * mp.exp(-mp.mpf(b) ** 2 / q)
    raise ValueError(act)


def agop(inp):
    act, W, a, b, v = inp["act"], inp["W"], inp["a"], inp["b"], inp["v"]
    m, d = len(W), len(W[0])
    s = mp.mpf(1) if inp["scaling"] == "standard" else mp.mpf(1) / m
    M = mp.matrix(d, d)
    for i in range(m):
        for j in range(m):
            c = s * s * mp.mpf(a[i]) * mp.mpf(a[j]) * pair(act, W[i], b[i], W[j], b[j])
            for k in range(d):
                for l in range(d):
                    M[k, l] += c * mp.mpf(W[i][k]) * mp.mpf(W[j][l])
    q = [mp.fsum(s * mp.mpf(a[j]) * mu1(act, W[j], b[j]) * mp.mpf(W[j][k]) for j in range(m))
         for k in range(d)]
    for k in range(d):
        for l in range(d):
            vk, vl = mp.mpf(v[k]), mp.mpf(v[l])
            M[k, l] += vk * vl + q[k] * vl + vk * q[l]
    return M


def scores(M, U):
    d = M.rows
    r = len(U)
    E, Q = mp.eigsy(M)
    order = sorted(range(d), key=lambda i: -E[i])
    lam = [E[i] for i in order]
    Y = [[Q[k, i] for k in range(d)] for i in order]          # eigenvectors as rows
    UY = mp.matrix(r, r)
    for p in range(r):
        for i in range(r):
            UY[p, i] = mp.fsum(mp.mpf(U[p][k]) * Y[i][k] for k in range(d))
    K = UY * UY.T
    kE, _ = mp.eigsy(K)
    a_top = mp.fsum((mp.fsum(mp.mpf(U[p][k]) * Y[0][k] for k in range(d))) ** 2
                    for p in range(r))
    a_mean = mp.fsum(K[i, i] for i in range(r)) / r
    a_min = min(kE[i] for i in range(r))
    gap_top = lam[0] - lam[1]
    gap_r = lam[r - 1] - lam[r] if r < d else mp.inf
    return dict(a_top=a_top, a_mean=a_mean, a_min=a_min, gap_top=gap_top, gap_r=gap_r,
                lam=lam)


def _hex(x):
    if isinstance(x, list):
        return [_hex(y) for y in x]
    return float(x).hex() if isinstance(x, float) else x


def cases():
    import random
    rnd = random.Random(19)

    def g(sd=1.0):
        return float(rnd.gauss(0.0, sd))

    def base(act, d, m, scaling="standard", sw=0.7, sv=0.4):
        return dict(act=act, scaling=scaling, W=[[g(sw) for _ in range(d)] for _ in range(m)],
                    a=[g() for _ in range(m)], b=[g(0.5) for _ in range(m)],
                    v=[g(sv) for _ in range(d)], c=0.25)

    out = []
    for act in ("relu", "leaky_relu", "erf"):
        c = base(act, 4, 3)
        c["U"] = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
        c["name"] = f"{act}_random"
        out.append(c)
        c = base(act, 5, 4, scaling="mean_field", sv=1.0)
        c["U"] = [[0.0, 0.0, 1.0, 0.0, 0.0]]
        c["name"] = f"{act}_mean_field_large_v"
        out.append(c)
        # degenerate geometry: duplicated, antiparallel, zero and tiny neurons
        c = base(act, 4, 5)
        c["W"][1] = list(c["W"][0])
        c["b"][1] = c["b"][0] if act != "relu" else -0.3
        c["W"][2] = [-x for x in c["W"][0]]
        c["W"][3] = [0.0, 0.0, 0.0, 0.0]
        c["b"][3] = 0.5
        c["W"][4] = [1e-7, -2e-7, 0.0, 5e-8]
        c["b"][4] = -0.3
        c["U"] = [[0.6, 0.8, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
        c["name"] = f"{act}_degenerate"
        out.append(c)
    c = base("relu", 3, 2)
    c["v"] = [0.0, 0.0, 0.0]
    c["U"] = [[0.0, 1.0, 0.0]]
    c["name"] = "relu_v_zero"
    out.append(c)
    c = base("erf", 3, 3, sw=2.5)
    c["U"] = [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    c["name"] = "erf_large_weights"
    out.append(c)
    return out


def main():
    res = []
    for c in cases():
        sc = scores(agop(c), c["U"])
        res.append(dict(name=c["name"], inputs={k: _hex(v) for k, v in c.items() if k != "name"},
                        ref={k: ([mp.nstr(x, 35) for x in v] if isinstance(v, list)
                                 else mp.nstr(v, 35)) for k, v in sc.items()}))
        print(c["name"], mp.nstr(sc["a_top"], 12), mp.nstr(sc["gap_top"], 5),
              mp.nstr(sc["gap_r"], 5))
    with open(OUT, "w") as fh:
        json.dump(dict(dps=40, generator="data/_precompute/skip_align_refs.py", cases=res), fh,
                  indent=1)


if __name__ == "__main__":
    main()
