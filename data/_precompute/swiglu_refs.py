"""30-digit mpmath references for SwiGLU students and gated teachers → data/refs/swiglu_refs.json.

Independent of popdyn: nothing from ``popdyn`` is imported, and no Hermite / Mehler / Stein
reduction is used.  Every expectation is reduced by *Gaussian conditioning* on the span of the
directions that enter non-linearly: with Q (r × d, r ≤ 2) an orthonormal basis of that span
(Gram–Schmidt at 30 digits; exactly parallel directions give r = 1), ζ = Qx ~ N(0, I_r),
x | ζ ~ N(Qᵀζ, C), C = I − QᵀQ, and for the polynomial factors (degree ≤ 3 in x)

    E[(a·x)(b·x) | ζ]   = (a·μ)(b·μ) + aᵀCb,            μ = Qᵀζ
    E[x (a·x) | ζ]      = μ(a·μ) + Ca
    E[x (a·x)(b·x) | ζ] = μ E[(a·x)(b·x)|ζ] + Ca (b·μ) + Cb (a·μ).

The remaining r-dimensional integral ∫ h(ζ) E[poly | ζ] dγ(ζ) is a tensor-product composite
Gauss–Legendre rule on [−L, L]^r (panels of width 1 with breakpoints at the integers, so the
kink of a relu gate — the first basis vector is the gate axis u_s — is a panel edge), nodes
refined by Newton's method at 30 digits; the Gaussian density is part of the integrand.
SwiGLU student–student pairs use the span {g_i, g_j}; student–teacher terms the span
{u_s, g_j}, the teacher's linear factor t = u_t·x entering through the conditional moments.
Relu *ordinary* students against gated teachers are done as ``mpmath.quad`` over s (split at
0) of a closed-form inner truncated-Gaussian integral over the second coordinate.

From these: the loss L = ½E[(f − y)²] at the given intercept, its gradient in (a, G, V, c) by
the chain rule (∂L/∂a_j = E[rφ_j], ∂L/∂v_j = a_j E[r σ_j x], ∂L/∂g_j = a_j E[r σ'_j (v_j·x) x]),
the AGOP E[∇f ∇fᵀ] and the cross moments E[y φ_j]; for ordinary relu / silu students the
cross moments E[σ(w_j·x + b_j) y].  The bilinear rotation control (s² − t²)/2 is integrated as
s′t′ with s′ = (u_1 + u_2)/√2 · x, t′ = (u_1 − u_2)/√2 · x.

Quadrature check: case 0 is recomputed with 14 nodes per panel and L = 10 (vs 10 and 9) and the
maximal relative difference is stored as ``quadrature_check`` (must be < 1e−13).
Source: docs/design.md §3; Kumar (arXiv 2609.39408).  Runtime: about 5 minutes on two cores.
Usage: python data/_precompute/swiglu_refs.py
"""
from __future__ import annotations

import json
import multiprocessing as mproc
import sys
import time
from pathlib import Path

import mpmath
import numpy as np

mp = mpmath.mp
mp.dps = 30
OUT = Path(__file__).resolve().parent.parent / "refs" / "swiglu_refs.json"
D = 4


# ------------------------------------------------------------------------------ helpers
def mpv(x):
    return [mp.mpf(float(t)) for t in x]


def dot(a, b):
    return mp.fsum(x * y for x, y in zip(a, b))


def axpy(alpha, x, y):
    return [alpha * xi + yi for xi, yi in zip(x, y)]


def scal(alpha, x):
    return [alpha * xi for xi in x]


def gl_nodes(n):
    xs, _ = np.polynomial.legendre.leggauss(n)
    out = []
    for x0 in xs:
        x = mp.mpf(float(x0))
        for _ in range(6):
            p0, p1 = mp.mpf(1), x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            x = x - p1 / dp
        p0, p1 = mp.mpf(1), x
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        dp = n * (x * p1 - p0) / (x * x - 1)
        out.append((x, 2 / ((1 - x * x) * dp * dp)))
    return out


def rule(L, n):
    base = gl_nodes(n)
    z, w = [], []
    for a in range(-L, L):
        for x, wt in base:
            zz = a + (x + 1) / 2
            z.append(zz)
            w.append(wt / 2 * mp.npdf(zz))
    return z, w


def gram_schmidt(dirs):
    Q = []
    for v in dirs:
        r = list(v)
        for q in Q:
            r = axpy(-dot(q, r), q, r)
        nr = mp.sqrt(dot(r, r))
        if nr > mp.mpf(10) ** -20 * max(mp.sqrt(dot(v, v)), 1):
            Q.append(scal(1 / nr, r))
    return Q


def cond_cov(Q):
    C = [[mp.mpf(int(i == j)) for j in range(D)] for i in range(D)]
    for q in Q:
        for i in range(D):
            for j in range(D):
                C[i][j] -= q[i] * q[j]
    return C


def matvec(C, v):
    return [dot(row, v) for row in C]


def integrate(Q, func, R):
    """Σ over the product rule of func(mu) (a list of mp numbers)."""
    z, w = R
    acc = None
    if len(Q) == 1:
        pts = ((scal(z[k], Q[0]), w[k]) for k in range(len(z)))
    else:
        pts = ((axpy(z[k], Q[0], scal(z[l], Q[1])), w[k] * w[l])
               for k in range(len(z)) for l in range(len(z)))
    for mu, wt in pts:
        vals = func(mu)
        if acc is None:
            acc = [wt * v for v in vals]
        else:
            for i, v in enumerate(vals):
                acc[i] += wt * v
    return acc


def silu2(t):
    s = 1 / (1 + mp.exp(-t))
    return t * s, s + t * s * (1 - s)


GATES = {
    "id": lambda s: s,
    "gelu": lambda s: s * mp.ncdf(s),
    "tanh": mp.tanh,
    "relu": lambda s: s if s > 0 else mp.mpf(0),
}


def teacher_axes(teacher):
    """(F, u_s, u_t): y = F(u_s·x)·(u_t·x); u_t None for additive h3."""
    e1 = [mp.mpf(int(i == 0)) for i in range(D)]
    e2 = [mp.mpf(int(i == 1)) for i in range(D)]
    if teacher == "rotation":
        r = 1 / mp.sqrt(2)
        return GATES["id"], scal(r, axpy(1, e1, e2)), scal(r, axpy(-1, e2, e1))
    if teacher == "h3":
        return (lambda s: (s ** 3 - 3 * s) / mp.sqrt(6)), e1, None
    return GATES[teacher], e1, e2


def teacher_energy(teacher):
    if teacher in ("h3", "id", "rotation"):
        return mp.mpf(1)
    F = GATES[teacher]
    return mp.quad(lambda s: F(s) ** 2 * mp.npdf(s), [-mp.inf, 0, mp.inf])


# ------------------------------------------------------------------------------ SwiGLU case
def swiglu_case(case, L=9, n=10):
    R = rule(L, n)
    a, c = mpv(case["a"]), mp.mpf(case["c"])
    G = [mpv(r) for r in case["G"]]
    V = [mpv(r) for r in case["V"]]
    m = len(a)
    Phi = [[None] * m for _ in range(m)]
    A = [[None] * m for _ in range(m)]     # E[σ_i(v_i·x) σ_j x]
    B = [[None] * m for _ in range(m)]     # E[σ_i(v_i·x) σ'_j(v_j·x) x]
    S = [[None] * m for _ in range(m)]     # AGOP scalars s1..s4
    for i in range(m):
        for j in range(i, m):
            Q = gram_schmidt([G[i], G[j]])
            C = cond_cov(Q)
            Cvi, Cvj = matvec(C, V[i]), matvec(C, V[j])
            cij = dot(V[i], Cvj)

            def f(mu, i=i, j=j, Cvi=Cvi, Cvj=Cvj, cij=cij):
                si, dsi = silu2(dot(G[i], mu))
                sj, dsj = silu2(dot(G[j], mu))
                vi, vj = dot(V[i], mu), dot(V[j], mu)
                evv = vi * vj + cij
                exvi = axpy(vi, mu, Cvi)
                exvj = axpy(vj, mu, Cvj)
                exvv = [mu[k] * evv + Cvi[k] * vj + Cvj[k] * vi for k in range(D)]
                ss = si * sj
                return ([ss * evv] + scal(ss, exvi) + scal(ss, exvj) + scal(si * dsj, exvv)
                        + scal(sj * dsi, exvv) + [dsi * dsj * evv, dsi * sj * vi, si * dsj * vj, ss])

            out = integrate(Q, f, R)
            Phi[i][j] = Phi[j][i] = out[0]
            A[i][j] = out[1:1 + D]
            A[j][i] = out[1 + D:1 + 2 * D]
            B[i][j] = out[1 + 2 * D:1 + 3 * D]
            B[j][i] = out[1 + 3 * D:1 + 4 * D]
            s1, s2, s3, s4 = out[1 + 4 * D:]
            S[i][j] = (s1, s2, s3, s4)
            S[j][i] = (s1, s3, s2, s4)
    # single-neuron moments
    phib, Esx, Espvx = [], [], []
    for j in range(m):
        Q = gram_schmidt([G[j]])
        C = cond_cov(Q)
        Cvj = matvec(C, V[j])

        def f1(mu, j=j, Cvj=Cvj):
            sj, dsj = silu2(dot(G[j], mu))
            vj = dot(V[j], mu)
            return [sj * vj] + scal(sj, mu) + scal(dsj, axpy(vj, mu, Cvj))

        o = integrate(Q, f1, R)
        phib.append(o[0]); Esx.append(o[1:1 + D]); Espvx.append(o[1 + D:])
    # teacher terms
    F, us, ut = teacher_axes(case["teacher"])
    Yphi, Ysx, Yspvx = [], [], []
    for j in range(m):
        Q = gram_schmidt([us, G[j]])
        C = cond_cov(Q)
        Cvj = matvec(C, V[j])
        if ut is not None:
            Cut = matvec(C, ut)
            ctv = dot(ut, Cvj)

        def ft(mu, j=j, Cvj=Cvj):
            sj, dsj = silu2(dot(G[j], mu))
            y = F(dot(us, mu))
            vj = dot(V[j], mu)
            if ut is None:
                return ([y * sj * vj] + scal(y * sj, mu) + scal(y * dsj, axpy(vj, mu, Cvj)))
            tt = dot(ut, mu)
            etv = tt * vj + ctv
            ext = axpy(tt, mu, Cut)
            extv = [mu[k] * etv + Cut[k] * vj + Cvj[k] * tt for k in range(D)]
            return [y * sj * etv] + scal(y * sj, ext) + scal(y * dsj, extv)

        o = integrate(Q, ft, R)
        Yphi.append(o[0]); Ysx.append(o[1:1 + D]); Yspvx.append(o[1 + D:])
    ey2 = teacher_energy(case["teacher"])
    ey = mp.mpf(0)
    # assemble
    aPa = mp.fsum(a[i] * a[j] * Phi[i][j] for i in range(m) for j in range(m))
    aphib = mp.fsum(a[j] * phib[j] for j in range(m))
    aY = mp.fsum(a[j] * Yphi[j] for j in range(m))
    loss = (aPa + 2 * c * aphib + c * c - 2 * aY - 2 * c * ey + ey2) / 2
    ga = [mp.fsum(a[i] * Phi[i][j] for i in range(m)) + c * phib[j] - Yphi[j] for j in range(m)]
    gc = aphib + c - ey
    gV, gG = [], []
    for j in range(m):
        sv = [mp.fsum(a[i] * A[i][j][k] for i in range(m)) + c * Esx[j][k] - Ysx[j][k]
              for k in range(D)]
        sg = [mp.fsum(a[i] * B[i][j][k] for i in range(m)) + c * Espvx[j][k] - Yspvx[j][k]
              for k in range(D)]
        gV.append(scal(a[j], sv)); gG.append(scal(a[j], sg))
    M = [[mp.mpf(0)] * D for _ in range(D)]
    for i in range(m):
        for j in range(m):
            s1, s2, s3, s4 = S[i][j]
            w = a[i] * a[j]
            for k in range(D):
                for l in range(D):
                    M[k][l] += w * (s1 * G[i][k] * G[j][l] + s2 * G[i][k] * V[j][l]
                                    + s3 * V[i][k] * G[j][l] + s4 * V[i][k] * V[j][l])
    s = lambda x: mp.nstr(x, 30)
    return {"loss": s(loss), "grad_a": [s(x) for x in ga], "grad_c": s(gc),
            "grad_G": [[s(x) for x in r] for r in gG], "grad_V": [[s(x) for x in r] for r in gV],
            "agop": [[s(x) for x in r] for r in M], "Yphi": [s(x) for x in Yphi],
            "phibar": [s(x) for x in phib], "Ey2": s(ey2)}


# ------------------------------------------------------------------------------ ordinary students
def relu_inner(A, B, q1, q2, z1):
    """E over Z of relu(A Z + B)·(q1 z1 + q2 Z), Z ~ N(0, 1) (closed form)."""
    if A == 0:
        return (B if B > 0 else mp.mpf(0)) * q1 * z1
    k = -B / A
    phk = mp.npdf(k)
    if A > 0:
        e0 = A * phk + B * mp.ncdf(-k)
        e1 = A * (k * phk + mp.ncdf(-k)) + B * phk
    else:
        e0 = -A * phk + B * mp.ncdf(k)
        e1 = A * (mp.ncdf(k) - k * phk) - B * phk
    return q1 * z1 * e0 + q2 * e1


def ordinary_case(case, L=9, n=10):
    F, us, ut = teacher_axes(case["teacher"])
    W = [mpv(r) for r in case["W"]]
    b = mpv(case["b"])
    out = {}
    # relu students: s outer (mp.quad split at 0), inner closed form
    vals = []
    for j in range(len(b)):
        Q = gram_schmidt([us, W[j]])
        q = [dot(qq, ut) for qq in Q]
        cw = [dot(qq, W[j]) for qq in Q]
        if len(Q) == 1:
            val = mp.quad(lambda z: mp.npdf(z) * F(z) * max(cw[0] * z + b[j], 0) * q[0] * z,
                          [-mp.inf, 0, mp.inf])
        else:
            val = mp.quad(lambda z: mp.npdf(z) * F(z) *
                          relu_inner(cw[1], cw[0] * z + b[j], q[0], q[1], z), [-mp.inf, 0, mp.inf])
        vals.append(mp.nstr(val, 30))
    out["Ct_relu"] = vals
    # silu students: product rule
    R = rule(L, n)
    vals = []
    for j in range(len(b)):
        Q = gram_schmidt([us, W[j]])

        def f(mu, j=j):
            s, _ = silu2(dot(W[j], mu) + b[j])
            return [s * F(dot(us, mu)) * dot(ut, mu)]

        vals.append(mp.nstr(integrate(Q, f, R)[0], 30))
    out["Ct_silu"] = vals
    return out


# ------------------------------------------------------------------------------ cases
def make_cases():
    rng = np.random.default_rng(20261129)
    q = lambda x: np.round(np.asarray(x) * 1024) / 1024        # exact binary inputs
    cases = []
    for k, teacher in enumerate(["id", "gelu", "tanh", "relu", "rotation", "h3"]):
        m = 3
        a = q(rng.normal(0, 0.8, m))
        G = q(rng.normal(0, 0.5, (m, D)))
        Vv = q(rng.normal(0, 0.5, (m, D)))
        Vv[0] = 1.5 * G[0]                      # value ∥ gate
        G[1] = np.array([0.75, 0, 0, 0]) * (1 if k % 2 == 0 else -1)   # gate ∥ teacher axis u_1
        if k in (1, 4):
            G[2] = -1.25 * G[0]                 # antiparallel gates (ρ = −1)
        c = float(q(rng.normal(0, 0.1)))
        W = q(rng.normal(0, 0.6, (3, D)))
        W[0] = np.array([0, 0.875, 0, 0])       # ordinary unit ∥ value axis u_2
        W[1] = q(np.array([0.9, 0.04, 0.1, -0.05]))   # nearly along the gate axis
        bb = q(rng.normal(0, 0.3, 3))
        cases.append({"teacher": teacher, "a": a.tolist(), "G": G.tolist(), "V": Vv.tolist(),
                      "c": c, "W": W.tolist(), "b": bb.tolist()})
    return cases


def run(case):
    t = time.time()
    out = dict(case)
    out["ref"] = swiglu_case(case)
    if case["teacher"] != "h3":
        out["ref"].update(ordinary_case(case))
    out["seconds"] = round(time.time() - t, 1)
    return out


def main():
    t0 = time.time()
    cases = make_cases()
    with mproc.Pool(2) as pool:
        res = pool.map(run, cases)
    # quadrature self-check on case 0
    fine = swiglu_case(cases[0], L=10, n=14)
    coarse = res[0]["ref"]
    diffs = []
    for key in ("loss", "grad_a", "grad_G", "grad_V", "agop", "Yphi"):
        A = np.array(mpmath.matrix(coarse[key]).tolist() if isinstance(coarse[key], list) else
                     [coarse[key]], dtype=object).ravel()
        B = np.array(mpmath.matrix(fine[key]).tolist() if isinstance(fine[key], list) else
                     [fine[key]], dtype=object).ravel()
        scale = max(abs(mp.mpf(x)) for x in B)
        diffs.append(max(abs(mp.mpf(x) - mp.mpf(y)) for x, y in zip(A, B)) / scale)
    qc = float(max(diffs))
    doc = {"source": "data/_precompute/swiglu_refs.py (pure mpmath, 30 digits)",
           "dps": 30, "d": D, "quadrature_check": qc, "cases": res,
           "runtime_seconds": round(time.time() - t0, 1)}
    OUT.write_text(json.dumps(doc, indent=1))
    print(f"wrote {OUT} ({len(res)} cases, quadrature check {qc:.2e}, "
          f"{time.time() - t0:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
