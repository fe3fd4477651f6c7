"""Reference values for the skip student family: loss L and ∂L/∂v by mpmath.

Independent of popdyn: every expectation E[φ(p·x + b_p) ψ(q·x + b_q)] over x ~ N(0, I_d) is an
mpmath quadrature over z1 (p·x = |p| z1, split at the relu kink) of φ times the conditional
expectation of ψ given z1 (q·x = (q·p̂) z1 + |q_⊥| Z2): in closed form for the polynomial ψ
(Gaussian moments of m + sZ2), otherwise (smooth ψ) by an inner quadrature, at 35 digits; L = ½(E f² − 2E fy + E y²) is expanded into such
pair terms, and ∂L/∂v_k = E[(f − y) x_k] directly (no differentiation).  Inputs are stored as
exact float64 hex strings.  Student: one neuron, d = 3; teacher y = κ h2(u·x).

``certify_cases`` (for certify.loss of skip students): several neurons, the relu,
leaky relu students (two or three neurons) and tanh, gelu and erf students (one neuron: a
smooth–smooth pair of distinct directions would need a nested 35-digit quadrature of minutes;
certify.smooth's pairs have their own references), additive (h2, h3, relu link) and
relu-network teachers (non-unit rows, biases), both scalings; the loss by the same expansion with every student pair
(j, l), student–teacher pair and teacher pair a term.  Inner conditional expectations are in
closed form for the polynomial and piecewise-linear ψ (E[relu(m + sZ)] = mΦ(m/s) + sφ(m/s)).

Run:  python data/_precompute/skip_refs.py   (writes data/refs/skip_refs.json; a few minutes)
"""
import json
import os

import mpmath as mp

mp.mp.dps = 35
OUT = os.path.join(os.path.dirname(__file__), "..", "refs", "skip_refs.json")


def relu(t):
    return t if t > 0 else mp.mpf(0)


def silu(t):
    return t / (1 + mp.exp(-t))


def h2(t):
    return (t * t - 1) / mp.sqrt(2)


def ident(t):
    return t


def one(t):
    return mp.mpf(1)


def h3(t):
    return (t ** 3 - 3 * t) / mp.sqrt(6)


def tanh(t):
    return mp.tanh(t)


def gelu(t):
    return t * mp.ncdf(t)


def erf(t):
    return mp.erf(t)


SLOPE = mp.mpf(0.1)          # the float64 0.1 exactly (leaky relu's negative_slope)


def lrelu(t):
    return t if t > 0 else SLOPE * t


def _erelu(m, s):
    return m * mp.ncdf(m / s) + s * mp.npdf(m / s)


#: E[ψ(m + sZ)] for the polynomial ψ (Gaussian moments: E[Z] = 0, E[Z²] = 1)
CLOSED = {one: lambda m, s: mp.mpf(1), ident: lambda m, s: m,
          h2: lambda m, s: (m * m + s * s - 1) / mp.sqrt(2),
          h3: lambda m, s: (m ** 3 + 3 * m * s * s - 3 * m) / mp.sqrt(6),
          relu: _erelu,
          lrelu: lambda m, s: (1 - SLOPE) * _erelu(m, s) + SLOPE * m}


def pair(phi, p, bp, kink_phi, psi, q, bq, kink_psi):
    """E[φ(p·x + bp) ψ(q·x + bq)] by nested quadrature (p ≠ 0)."""
    npn = mp.sqrt(mp.fsum(x * x for x in p))
    ph = [x / npn for x in p]
    qp = mp.fsum(a * b for a, b in zip(q, ph))
    qperp2 = mp.fsum(x * x for x in q) - qp * qp
    # the same direction (p ∥ q): the rounding residue of |q|² − (q·p̂)² is ~1e−35
    qperp = mp.sqrt(qperp2) if qperp2 > mp.mpf(10) ** (-28) else mp.mpf(0)
    N = lambda z: mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi)

    def inner(z1):
        m = bq + qp * z1
        if qperp == 0:
            return psi(m)
        if psi in CLOSED:
            return CLOSED[psi](m, qperp)
        pts = [-mp.inf, -m / qperp, mp.inf] if kink_psi else [-mp.inf, mp.inf]
        return mp.quad(lambda z2: psi(m + qperp * z2) * N(z2), pts)

    pts = [-mp.inf, -bp / npn, mp.inf] if kink_phi else [-mp.inf, mp.inf]
    return mp.quad(lambda z1: phi(bp + npn * z1) * inner(z1) * N(z1), pts)


def reference(act, a, w, b, v, c, u, kappa, s=1):
    sig, kink = {"relu": (relu, True), "silu": (silu, False)}[act]
    a, b, c, kappa = map(mp.mpf, (a, b, c, kappa))
    w, v, u = ([mp.mpf(x) for x in y] for y in (w, v, u))
    z0 = mp.mpf(0)
    Ess = pair(sig, w, b, kink, sig, w, b, kink)
    Es = pair(sig, w, b, kink, one, w, z0, False)
    Esv = pair(sig, w, b, kink, ident, v, z0, False)
    Esy = pair(sig, w, b, kink, h2, u, z0, False)
    Evy = pair(h2, u, z0, False, ident, v, z0, False)
    Evv = mp.fsum(x * x for x in v)
    Ey2 = mp.mpf(1)                                  # E[h2(z)²] = 1, E[h2] = 0
    Ef2 = s * s * a * a * Ess + Evv + c * c + 2 * s * a * Esv + 2 * s * a * c * Es
    Efy = s * a * kappa * Esy + kappa * Evy
    L = (Ef2 - 2 * Efy + kappa * kappa * Ey2) / 2
    gv = []
    for k in range(3):
        ek = [mp.mpf(1) if i == k else z0 for i in range(3)]
        Esx = pair(sig, w, b, kink, ident, ek, z0, False)
        Eyx = pair(h2, u, z0, False, ident, ek, z0, False)
        gv.append(s * a * Esx + v[k] - kappa * Eyx)  # E[(v·x) x_k] = v_k, E[c x_k] = 0
    return L, gv


CASES = [
    dict(act="relu", a=0.8, w=[0.9, -0.4, 0.3], b=0.25, v=[0.3, -0.2, 0.5], c=0.1,
         u=[0.6, 0.8, 0.0], kappa=1.3),
    dict(act="silu", a=-0.7, w=[0.5, 0.6, -0.2], b=-0.3, v=[-0.4, 0.1, 0.35], c=-0.05,
         u=[0.0, 0.6, 0.8], kappa=0.9),
]


ACTS = {"relu": (relu, True), "leaky_relu": (lrelu, True), "tanh": (tanh, False),
        "gelu": (gelu, False), "erf": (erf, False), "silu": (silu, False)}
LINKS = {"h2": (h2, False), "h3": (h3, False), "relu": (relu, True)}


def reference_general(cs):
    """L for f = s Σ_j a_j σ(w_j·x + b_j) + v·x + c and y = Σ_k κ_k ψ(u_k·x + β_k)."""
    sig, kink = ACTS[cs["act"]]
    m = len(cs["a"])
    s = mp.mpf(1) if cs["scaling"] == "standard" else mp.mpf(1) / m
    a = [mp.mpf(x) for x in cs["a"]]
    W = [[mp.mpf(x) for x in row] for row in cs["W"]]
    b = [mp.mpf(x) for x in cs["b"]]
    v = [mp.mpf(x) for x in cs["v"]]
    c = mp.mpf(cs["c"])
    t = cs["teacher"]
    psi, tk = (LINKS[t["link"]] if t["kind"] == "additive" else ACTS[t["activation"]])
    U = [[mp.mpf(x) for x in row] for row in t["U"]]
    kap = [mp.mpf(x) for x in t["weights"]]
    beta = [mp.mpf(x) for x in t["bias"]]
    z0 = mp.mpf(0)
    k = len(U)
    Ef2 = mp.fsum(x * x for x in v) + c * c
    for j in range(m):
        for l in range(j, m):
            e = pair(sig, W[j], b[j], kink, sig, W[l], b[l], kink)
            Ef2 += s * s * a[j] * a[l] * e * (1 if j == l else 2)
        Ef2 += 2 * s * a[j] * pair(sig, W[j], b[j], kink, ident, v, z0, False)
        Ef2 += 2 * s * a[j] * c * pair(sig, W[j], b[j], kink, one, W[j], z0, False)
    Efy = mp.mpf(0)
    for q in range(k):
        for j in range(m):
            Efy += s * a[j] * kap[q] * pair(sig, W[j], b[j], kink, psi, U[q], beta[q], tk)
        Efy += kap[q] * pair(psi, U[q], beta[q], tk, ident, v, z0, False)
        Efy += c * kap[q] * pair(psi, U[q], beta[q], tk, one, U[q], z0, False)
    Ey2 = mp.mpf(0)
    for q in range(k):
        for r in range(q, k):
            e = pair(psi, U[q], beta[q], tk, psi, U[r], beta[r], tk)
            Ey2 += kap[q] * kap[r] * e * (1 if q == r else 2)
    return (Ef2 - 2 * Efy + Ey2) / 2


CERTIFY_CASES = [
    dict(act="relu", scaling="standard", a=[0.8, -0.5], W=[[0.9, -0.4, 0.3], [-0.2, 0.7, 0.5]],
         b=[0.25, -0.1], v=[0.3, -0.2, 0.5], c=0.1,
         teacher=dict(kind="additive", link="h2", U=[[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]],
                      weights=[1.3, -0.4], bias=[0.0, 0.0])),
    dict(act="leaky_relu", scaling="standard", a=[0.6, 0.9], W=[[0.5, 0.6, -0.2], [0.3, -0.8, 0.1]],
         b=[-0.3, 0.2], v=[-0.4, 0.1, 0.35], c=-0.05,
         teacher=dict(kind="network", activation="relu", U=[[1.1, 0.2, -0.3], [0.1, -0.7, 0.9]],
                      weights=[0.9, -0.6], bias=[0.2, -0.15])),
    dict(act="relu", scaling="mean_field", a=[1.2, -0.7, 0.4],
         W=[[0.4, 0.1, -0.6], [-0.5, 0.3, 0.2], [0.05, -0.9, 0.3]], b=[0.0, 0.3, -0.2],
         v=[0.2, 0.45, -0.15], c=0.2,
         teacher=dict(kind="additive", link="relu", U=[[0.0, 0.6, 0.8]], weights=[1.1],
                      bias=[0.0])),
    dict(act="tanh", scaling="standard", a=[0.7], W=[[0.8, -0.3, 0.2]],
         b=[0.1], v=[0.25, 0.3, -0.2], c=0.05,
         teacher=dict(kind="additive", link="h3", U=[[0.6, 0.8, 0.0]], weights=[0.8],
                      bias=[0.0])),
    dict(act="gelu", scaling="standard", a=[0.9], W=[[0.6, 0.5, -0.4]], b=[0.2],
         v=[-0.3, 0.2, 0.4], c=-0.1,
         teacher=dict(kind="network", activation="relu", U=[[0.7, -0.2, 0.5]], weights=[1.2],
                      bias=[-0.1])),
    dict(act="erf", scaling="mean_field", a=[-0.6], W=[[0.3, 0.9, 0.1]],
         b=[0.15], v=[0.35, -0.25, 0.1], c=0.0,
         teacher=dict(kind="additive", link="h2", U=[[0.0, 0.0, 1.0]], weights=[0.9],
                      bias=[0.0])),
]


def _hexed(x):
    if isinstance(x, float):
        return x.hex()
    if isinstance(x, list):
        return [_hexed(y) for y in x]
    if isinstance(x, dict):
        return {k: _hexed(y) for k, y in x.items()}
    return x


def main():
    cert = []
    for cs in CERTIFY_CASES:
        L = reference_general(cs)
        cert.append({"inputs": _hexed(cs), "loss": mp.nstr(L, 30)})
        print(cs["act"], cs["teacher"]["kind"], mp.nstr(L, 20), flush=True)
    out = []
    for cs in CASES:
        L, gv = reference(**cs)
        hexed = {k: (float(x).hex() if isinstance(x, float) else
                     [float(y).hex() for y in x] if isinstance(x, list) else x)
                 for k, x in cs.items()}
        out.append({"inputs": hexed, "loss": mp.nstr(L, 30), "grad_v": [mp.nstr(g, 30) for g in gv]})
        print(cs["act"], mp.nstr(L, 20), [mp.nstr(g, 12) for g in gv], flush=True)
    with open(OUT, "w") as fh:
        json.dump({"note": __doc__.splitlines()[0], "dps": mp.mp.dps, "cases": out,
                   "certify_cases": cert}, fh, indent=1)


if __name__ == "__main__":
    main()
