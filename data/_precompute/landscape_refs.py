"""Reference loss, gradient and Hessian of bias-free relu / leaky-relu students by mpmath.

Independent of popdyn (no popdyn import).  Every expectation of the population loss
L = ½E[(f − y)²], f(x) = s Σ_j a_j σ(w_j·x) + v·x + c, y = Σ_k v*_k σ*(u_k·x), reduces, by
positive homogeneity of σ and σ*, to

* pair terms E[σ(p·x) ψ(q·x)] = (1/π) ∫_0^{2π} σ(|p| cos ψ) ψ(|q| cos(ψ − φ)) dψ
  (x in the plane of p, q in polar coordinates, E[R²] = 2; φ the angle between p and q),
  integrated by 24-node Gauss-Legendre quadrature (mpmath's nodes) on the pieces between the kinks ψ = ±π/2,
  φ ± π/2 (the integrand is analytic on each piece);
* one-unit terms E[σ(p·x)] = |p| ∫ σ(z) φ(z) dz and E[(v·x) σ(p·x)] = (v·p) ∫ z σ(z) φ(z) dz
  (tanh-sinh quadrature split at z = 0).

The Hessian is then taken by central finite differences of that loss at ``DPS`` = 45 digits with
step h = 1e−18 (relative error of the second differences ≤ O(h) at the C² but not C³ points
of duplicated / antiparallel units, O(h²) elsewhere; rounding 1e−45 / h² = 1e−15), and the
gradient by central first differences.  Stored: inputs as exact float64 hex strings, the loss,
gradient and Hessian as 30-digit decimal strings.

Parameter vector (the order of ``popdyn.landscape``): a (m), W (m·d, row-major), v (d, skip
students only), c (intercept students only).

Run:  nice -n 10 python data/_precompute/landscape_refs.py  (writes data/refs/landscape_refs.json;
about ten minutes on one core)
"""
import json
import os
import sys
import time

import mpmath as mp

DPS = 45
H = mp.mpf("1e-15")
#: Gauss-Legendre nodes on [-1, 1] (mpmath's own, 3·2^(deg−1) = 24 nodes): exact to far below
#: 1e−45 for the entire integrands σ(|p|cos ψ)ψ(|q|cos(ψ − φ)) on pieces of length ≤ π
_GL = {}


def _gl_nodes():
    key = mp.mp.prec
    if key not in _GL:
        _GL[key] = mp.calculus.quadrature.GaussLegendre(mp.mp).calc_nodes(4, mp.mp.prec + 20)
    return _GL[key]


def gl(f, lo, hi):
    """∫_lo^hi f by 24-node Gauss-Legendre."""
    half, mid = (hi - lo) / 2, (hi + lo) / 2
    return half * mp.fsum(w * f(mid + half * x) for x, w in _gl_nodes())
OUT = os.path.join(os.path.dirname(__file__), "..", "refs", "landscape_refs.json")


_ACT = {}


def act(name, slope):
    key = (name, slope)
    if key not in _ACT:
        if name == "relu":
            _ACT[key] = lambda t: t if t > 0 else mp.mpf(0)
        else:
            sl = mp.mpf(float.fromhex(slope))
            _ACT[key] = lambda t: t if t > 0 else sl * t
    return _ACT[key]


def norm(p):
    return mp.sqrt(mp.fsum(x * x for x in p))


def angle(p, q):
    """Angle between p and q (atan2 of |p∧q| and p·q: accurate near 0 and π)."""
    npn, nq = norm(p), norm(q)
    ph = [x / npn for x in p]
    qh = [x / nq for x in q]
    dif = norm([x - y for x, y in zip(ph, qh)])
    sm = norm([x + y for x, y in zip(ph, qh)])
    return 2 * mp.atan2(dif, sm)


def pair(sig, p, psi, q):
    """E[σ(p·x) ψ(q·x)] by the polar quadrature of the module docstring."""
    a, b = norm(p), norm(q)
    if a == 0 or b == 0:
        return mp.mpf(0)
    phi = angle(p, q)
    two_pi = 2 * mp.pi
    cuts = {mp.mpf(0), two_pi}
    for c in (mp.pi / 2, 3 * mp.pi / 2, phi + mp.pi / 2, phi - mp.pi / 2, phi + 3 * mp.pi / 2):
        c = c % two_pi
        cuts.add(c)
    pts = sorted(cuts)
    f = lambda t: sig(a * mp.cos(t)) * psi(b * mp.cos(t - phi))
    tot = mp.fsum(gl(f, pts[i], pts[i + 1]) for i in range(len(pts) - 1)
                  if pts[i + 1] > pts[i])
    return tot / mp.pi


def gauss(z):
    return mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi)


_ONE = {}


def _one(sig, power):
    """∫ z^power σ(z) φ(z) dz by tanh-sinh quadrature split at the kink (cached per σ)."""
    key = (id(sig), power, mp.mp.prec)
    if key not in _ONE:
        _ONE[key] = mp.quad(lambda z: z ** power * sig(z) * gauss(z), [-mp.inf, 0, mp.inf])
    return _ONE[key]


def mean1(sig, p):
    """E[σ(p·x)] = |p| ∫ σ(z)φ(z)dz (positive homogeneity of σ)."""
    return norm(p) * _one(sig, 0)


def lin1(sig, p, v):
    """E[(v·x) σ(p·x)] = (v·p̂)|p| ∫ z σ(z) φ(z) dz."""
    a = norm(p)
    if a == 0:
        return mp.mpf(0)
    return mp.fsum(x * y for x, y in zip(v, p)) * _one(sig, 1)


def unpack(theta, case):
    m, d = case["m"], case["d"]
    a = theta[:m]
    W = [theta[m + i * d:m + (i + 1) * d] for i in range(m)]
    k = m + m * d
    v = theta[k:k + d] if case["skip"] else [mp.mpf(0)] * d
    k += d if case["skip"] else 0
    c = theta[k] if case["intercept"] else mp.mpf(0)
    return a, W, v, c


def loss(theta, case, T):
    sig = act(case["act"], case["slope"])
    tsig = act(case["teacher_act"], case["teacher_slope"])
    a, W, v, c = unpack(theta, case)
    m = case["m"]
    s = mp.mpf(1) if case["scaling"] == "standard" else mp.mpf(1) / m
    U, Vt = T["U"], T["V"]
    k = len(Vt)
    ff = mp.mpf(0)
    for i in range(m):
        for j in range(i, m):
            e = pair(sig, W[i], sig, W[j])
            ff += (1 if i == j else 2) * s * s * a[i] * a[j] * e
    fy = mp.fsum(s * a[i] * Vt[q] * pair(sig, W[i], tsig, U[q]) for i in range(m) for q in range(k))
    mu = [mean1(sig, W[i]) for i in range(m)]
    ff += 2 * s * c * mp.fsum(a[i] * mu[i] for i in range(m)) + c * c
    ey = mp.fsum(Vt[q] * mean1(tsig, U[q]) for q in range(k))
    fy += c * ey
    # skip: E[(v·x) f_ridge], E[(v·x)²] = |v|², E[(v·x) y]
    ff += 2 * s * mp.fsum(a[i] * lin1(sig, W[i], v) for i in range(m)) + mp.fsum(x * x for x in v)
    fy += mp.fsum(Vt[q] * lin1(tsig, U[q], v) for q in range(k))
    if "yy" not in T:
        yy = mp.mpf(0)
        for q in range(k):
            for r in range(q, k):
                yy += (1 if q == r else 2) * Vt[q] * Vt[r] * pair(tsig, U[q], tsig, U[r])
        T["yy"] = yy
    yy = T["yy"]
    return (ff - 2 * fy + yy) / 2


def hexs(x):
    return float(x).hex()


def reference(case):
    mp.mp.dps = DPS
    theta0 = [mp.mpf(float.fromhex(h)) for h in case["theta"]]
    T = {"U": [[mp.mpf(float.fromhex(h)) for h in row] for row in case["U"]],
         "V": [mp.mpf(float.fromhex(h)) for h in case["V"]]}
    P = len(theta0)
    L0 = loss(theta0, case, T)

    def at(*moves):
        th = list(theta0)
        for idx, step in moves:
            th[idx] += step
        return loss(th, case, T)

    plus = [at((p, H)) for p in range(P)]
    minus = [at((p, -H)) for p in range(P)]
    grad = [(plus[p] - minus[p]) / (2 * H) for p in range(P)]
    Hm = [[None] * P for _ in range(P)]
    for p in range(P):
        Hm[p][p] = (plus[p] - 2 * L0 + minus[p]) / (H * H)
        for q in range(p + 1, P):
            v = (at((p, H), (q, H)) - at((p, H), (q, -H)) - at((p, -H), (q, H))
                 + at((p, -H), (q, -H))) / (4 * H * H)
            Hm[p][q] = Hm[q][p] = v
    out = dict(case)
    out["loss"] = mp.nstr(L0, 30)
    out["grad"] = [mp.nstr(g, 30) for g in grad]
    out["hessian"] = [[mp.nstr(x, 30) for x in row] for row in Hm]
    return out


def hx(vals):
    return [hexs(x) for x in vals]


def cases():
    """Declared reference cases (generic, duplicated, antiparallel, teacher-aligned, leaky)."""
    out = []

    def add(name, act_, slope, m, d, skip, intercept, scaling, a, W, v, c, U, V, tact="relu",
            tslope=0.0):
        theta = list(a) + [x for row in W for x in row]
        if skip:
            theta += list(v)
        if intercept:
            theta += [c]
        out.append({"name": name, "act": act_, "slope": hexs(slope), "teacher_act": tact,
                    "teacher_slope": hexs(tslope), "m": m, "d": d, "skip": skip,
                    "intercept": intercept, "scaling": scaling, "theta": hx(theta),
                    "U": [hx(r) for r in U], "V": hx(V)})

    U3 = [[1.0, 0.0], [-0.5, 0.8660254037844386], [-0.5, -0.8660254037844386]]
    add("generic_skip", "relu", 0.0, 3, 2, True, True, "standard",
        [0.9, 0.6, 1.3], [[0.7, -0.4], [0.2, 1.1], [-0.9, -0.3]], [0.3, -0.2], 0.15,
        U3, [1.0, 0.8, 1.2])
    add("generic_d3", "relu", 0.0, 2, 3, False, True, "standard",
        [0.8, -0.5], [[0.6, -0.3, 0.5], [0.1, 0.9, -0.4]], None, -0.2,
        [[0.8, 0.6, 0.0], [0.0, 0.6, 0.8]], [1.0, 0.7])
    add("duplicated", "relu", 0.0, 3, 2, True, True, "standard",
        [0.7, 0.4, 1.1], [[0.6, 0.8], [1.2, 1.6], [-0.5, 0.25]], [0.1, 0.05], 0.3,
        U3, [1.0, 1.0, 1.0])
    add("antiparallel", "relu", 0.0, 3, 2, True, False, "standard",
        [0.9, 0.5, -0.7], [[0.6, -0.8], [-0.3, 0.4], [0.25, 0.75]], [-0.2, 0.4], 0.0,
        U3, [1.0, 0.5, 0.9])
    add("on_teacher", "relu", 0.0, 2, 2, False, False, "mean_field",
        [1.5, 0.5], [[1.0, 0.0], [-0.5, 0.8660254037844386]], None, 0.0,
        U3, [1.0, 1.0, 1.0])
    add("leaky_skip", "leaky_relu", 0.1, 2, 2, True, True, "standard",
        [0.8, -0.6], [[0.5, 0.7], [-0.8, 0.2]], [0.25, 0.1], 0.05,
        [[1.0, 0.0], [0.0, 1.0]], [1.0, 0.6], "leaky_relu", 0.2)
    add("planar_d4", "relu", 0.0, 2, 4, True, True, "standard",
        [0.9, 0.7], [[0.5, -0.2, 0.3, 0.1], [0.2, 0.6, -0.1, 0.4]], [0.1, 0.0, -0.2, 0.05], 0.1,
        [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]], [1.0, 0.5])
    return out


def main():
    res = []
    for case in cases():
        t0 = time.time()
        res.append(reference(case))
        print(f"{case['name']}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    with open(OUT, "w") as fh:
        json.dump({"note": __doc__.splitlines()[0], "dps": DPS, "h": "1e-15", "cases": res}, fh,
                  indent=1)


if __name__ == "__main__":
    main()
