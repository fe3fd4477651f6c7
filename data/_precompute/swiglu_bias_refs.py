"""30-digit mpmath references for the biased SwiGLU student → data/refs/swiglu_bias_refs.json.

The student is Kumar (arXiv 2609.39408) eq. (71) with κ = 1 in popdyn's coordinates,
f(x) = Σ_j a_j S(g_j·x + b_j)(v_j·x + c_j) + c, S(t) = t/(1 + e^{−t}).

Independent of popdyn: nothing from ``popdyn`` is imported and no Hermite / Mehler / Stein
reduction is used.  As in data/_precompute/swiglu_refs.py, every expectation is reduced by
*Gaussian conditioning* on the span of the directions that enter non-linearly: Q (r × d, r ≤ 2)
an orthonormal basis of that span (30-digit Gram–Schmidt), ζ = Qx ~ N(0, I_r),
x | ζ ~ N(μ, C), μ = Qᵀζ, C = I − QᵀQ; with the affine value factors U_i = v_i·x + c_i,
m_i = v_i·μ + c_i:

    E[U_i U_j | ζ]   = m_i m_j + v_iᵀ C v_j
    E[x U_i | ζ]     = μ m_i + C v_i
    E[x U_i U_j | ζ] = μ E[U_i U_j | ζ] + C v_i m_j + C v_j m_i.

The remaining r-dimensional integral is a tensor-product composite Gauss–Legendre rule on
[−L, L]^r (unit panels, breakpoints at the integers, so the kink of the relu teacher -- the
first basis vector is the teacher axis e_1 -- is a panel edge), nodes refined by Newton's
method at 30 digits; the Gaussian density is part of the integrand.

From these, by the chain rule *inside* the integrals (r = f − y): L = ½E[r²] at the given
intercept; ∂L/∂a_j = E[rφ_j], ∂L/∂v_j = a_j E[r S_j x], ∂L/∂c_j = a_j E[r S_j],
∂L/∂g_j = a_j E[r S'_j U_j x], ∂L/∂b_j = a_j E[r S'_j U_j], ∂L/∂c = E[r]; the AGOP
E[∇f ∇fᵀ] with ∇f = Σ a_j (S'_j U_j g_j + S_j v_j).  Finite-difference check: the loss is
recomputed at ±h (h = 1e−8) in each bias coordinate b_0, c_0 of case 0 and the central
differences are stored (``fd_bias``) beside the quadrature gradient.

Quadrature check: case 0's loss and gradient are recomputed with 14 nodes per panel and L = 10
(vs 10 and 9); the maximal relative difference is stored as ``quadrature_check``.
Teachers: y = h3(x_1) (E y = 0, E y² = 1) and y = √2·relu(x_1) (E y = 1/√π, E y² = 1).
Usage: python data/_precompute/swiglu_bias_refs.py   (a few minutes on one core)
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import mpmath
import numpy as np

mp = mpmath.mp
mp.dps = 30
OUT = Path(__file__).resolve().parent.parent / "refs" / "swiglu_bias_refs.json"
D = 3


def mpv(x):
    return [mp.mpf(t) for t in x]


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


E1 = [mp.mpf(1)] + [mp.mpf(0)] * (D - 1)
TEACHERS = {
    "h3": ((lambda s: (s ** 3 - 3 * s) / mp.sqrt(6)), mp.mpf(0), mp.mpf(1)),
    "relu": ((lambda s: mp.sqrt(2) * s if s > 0 else mp.mpf(0)), 1 / mp.sqrt(mp.pi), mp.mpf(1)),
}


def case_values(case, L=9, n=10, loss_only=False):
    R = rule(L, n)
    a, c = mpv(case["a"]), mp.mpf(case["c"])
    G = [mpv(r) for r in case["G"]]
    V = [mpv(r) for r in case["V"]]
    bg, bv = mpv(case["bg"]), mpv(case["bv"])
    m = len(a)
    Phi = [[None] * m for _ in range(m)]
    A = [[None] * m for _ in range(m)]     # E[S_iU_i S_j x]
    A0 = [[None] * m for _ in range(m)]    # E[S_iU_i S_j]
    B = [[None] * m for _ in range(m)]     # E[S_iU_i S'_jU_j x]
    B0 = [[None] * m for _ in range(m)]    # E[S_iU_i S'_jU_j]
    S = [[None] * m for _ in range(m)]     # AGOP scalars
    for i in range(m):
        for j in range(i, m):
            Q = gram_schmidt([G[i], G[j]])
            C = cond_cov(Q)
            Cvi, Cvj = matvec(C, V[i]), matvec(C, V[j])
            cij = dot(V[i], Cvj)

            def f(mu, i=i, j=j, Cvi=Cvi, Cvj=Cvj, cij=cij):
                si, dsi = silu2(dot(G[i], mu) + bg[i])
                sj, dsj = silu2(dot(G[j], mu) + bg[j])
                ui, uj = dot(V[i], mu) + bv[i], dot(V[j], mu) + bv[j]
                euu = ui * uj + cij
                ss = si * sj
                if loss_only:
                    return [ss * euu]
                exi = axpy(ui, mu, Cvi)
                exj = axpy(uj, mu, Cvj)
                exuu = [mu[k] * euu + Cvi[k] * uj + Cvj[k] * ui for k in range(D)]
                return ([ss * euu] + scal(ss, exi) + scal(ss, exj) + [ss * ui, ss * uj]
                        + scal(si * dsj, exuu) + scal(sj * dsi, exuu)
                        + [si * dsj * euu, sj * dsi * euu]
                        + [dsi * dsj * euu, dsi * sj * ui, si * dsj * uj, ss])

            out = integrate(Q, f, R)
            Phi[i][j] = Phi[j][i] = out[0]
            if loss_only:
                continue
            k = 1
            A[i][j] = out[k:k + D]; k += D
            A[j][i] = out[k:k + D]; k += D
            A0[i][j], A0[j][i] = out[k], out[k + 1]; k += 2
            B[i][j] = out[k:k + D]; k += D
            B[j][i] = out[k:k + D]; k += D
            B0[i][j], B0[j][i] = out[k], out[k + 1]; k += 2
            s1, s2, s3, s4 = out[k:]
            S[i][j] = (s1, s2, s3, s4)
            S[j][i] = (s1, s3, s2, s4)
    phib, Es, Esx, Espv, Espvx = [], [], [], [], []
    for j in range(m):
        Q = gram_schmidt([G[j]])
        C = cond_cov(Q)
        Cvj = matvec(C, V[j])

        def f1(mu, j=j, Cvj=Cvj):
            sj, dsj = silu2(dot(G[j], mu) + bg[j])
            uj = dot(V[j], mu) + bv[j]
            return [sj * uj, sj, dsj * uj] + scal(sj, mu) + scal(dsj, axpy(uj, mu, Cvj))

        o = integrate(Q, f1, R)
        phib.append(o[0]); Es.append(o[1]); Espv.append(o[2])
        Esx.append(o[3:3 + D]); Espvx.append(o[3 + D:])
    F, ey, ey2 = TEACHERS[case["teacher"]]
    Yphi, Ys, Ysx, Yspv, Yspvx = [], [], [], [], []
    for j in range(m):
        Q = gram_schmidt([E1, G[j]])
        C = cond_cov(Q)
        Cvj = matvec(C, V[j])

        def ft(mu, j=j, Cvj=Cvj):
            sj, dsj = silu2(dot(G[j], mu) + bg[j])
            y = F(mu[0])
            uj = dot(V[j], mu) + bv[j]
            return ([y * sj * uj, y * sj, y * dsj * uj] + scal(y * sj, mu)
                    + scal(y * dsj, axpy(uj, mu, Cvj)))

        o = integrate(Q, ft, R)
        Yphi.append(o[0]); Ys.append(o[1]); Yspv.append(o[2])
        Ysx.append(o[3:3 + D]); Yspvx.append(o[3 + D:])
    aPa = mp.fsum(a[i] * a[j] * Phi[i][j] for i in range(m) for j in range(m))
    aphib = mp.fsum(a[j] * phib[j] for j in range(m))
    aY = mp.fsum(a[j] * Yphi[j] for j in range(m))
    loss = (aPa + 2 * c * aphib + c * c - 2 * aY - 2 * c * ey + ey2) / 2
    if loss_only:
        return loss
    ga = [mp.fsum(a[i] * Phi[i][j] for i in range(m)) + c * phib[j] - Yphi[j] for j in range(m)]
    gc = aphib + c - ey
    gV, gG, gbv, gbg = [], [], [], []
    for j in range(m):
        sv = [mp.fsum(a[i] * A[i][j][k] for i in range(m)) + c * Esx[j][k] - Ysx[j][k]
              for k in range(D)]
        sg = [mp.fsum(a[i] * B[i][j][k] for i in range(m)) + c * Espvx[j][k] - Yspvx[j][k]
              for k in range(D)]
        gV.append(scal(a[j], sv)); gG.append(scal(a[j], sg))
        gbv.append(a[j] * (mp.fsum(a[i] * A0[i][j] for i in range(m)) + c * Es[j] - Ys[j]))
        gbg.append(a[j] * (mp.fsum(a[i] * B0[i][j] for i in range(m)) + c * Espv[j] - Yspv[j]))
    M = [[mp.mpf(0)] * D for _ in range(D)]
    for i in range(m):
        for j in range(m):
            s1, s2, s3, s4 = S[i][j]
            w = a[i] * a[j]
            for k in range(D):
                for l in range(D):
                    M[k][l] += w * (s1 * G[i][k] * G[j][l] + s2 * G[i][k] * V[j][l]
                                    + s3 * V[i][k] * G[j][l] + s4 * V[i][k] * V[j][l])
    return {"loss": loss, "grad_a": ga, "grad_c": gc, "grad_G": gG, "grad_V": gV,
            "grad_bg": gbg, "grad_bv": gbv, "agop": M, "phibar": phib, "Yphi": Yphi}


def to_str(x):
    if isinstance(x, list):
        return [to_str(t) for t in x]
    return mp.nstr(x, 30)


def flat(v):
    out = []
    for x in v.values() if isinstance(v, dict) else v:
        if isinstance(x, list):
            out += flat(x)
        else:
            out.append(x)
    return out


def make_cases():
    rng = np.random.default_rng(20261203)
    cases = []
    for teacher, scale in (("h3", 0.8), ("relu", 0.8), ("relu", 0.15)):
        m = 2
        G = rng.standard_normal((m, D)) * scale
        G[1] = -1.3 * G[0] + 0.2 * rng.standard_normal(D) * scale   # nearly antiparallel gates
        cases.append({"teacher": teacher,
                      "a": [repr(float(t)) for t in rng.standard_normal(m)],
                      "G": [[repr(float(t)) for t in r] for r in G],
                      "V": [[repr(float(t)) for t in r] for r in rng.standard_normal((m, D)) * scale],
                      "bg": [repr(float(t)) for t in rng.standard_normal(m) * scale],
                      "bv": [repr(float(t)) for t in rng.standard_normal(m) * scale],
                      "c": repr(float(0.3 * rng.standard_normal()))})
    return cases


def main():
    t0 = time.time()
    cases = make_cases()
    out = {"d": D, "m": 2, "dps": 30, "cases": []}
    for case in cases:
        vals = case_values(case)
        out["cases"].append({**case, **{k: to_str(v) for k, v in vals.items()}})
        print(case["teacher"], "done", round(time.time() - t0), flush=True)
        if len(out["cases"]) == 1:
            fine = case_values(case, L=10, n=14)
            keys = ["loss", "grad_a", "grad_G", "grad_V", "grad_bg", "grad_bv", "agop"]
            diff = max(abs(x - y) for k in keys for x, y in zip(flat([vals[k]]), flat([fine[k]])))
            scale = max(abs(x) for k in keys for x in flat([vals[k]]))
            out["quadrature_check"] = float(diff / scale)
            h = mp.mpf("1e-8")
            fd = {}
            for nm in ("bg", "bv"):
                cp, cm = dict(case), dict(case)
                bp, bm = list(mpv(case[nm])), list(mpv(case[nm]))
                bp[0] += h; bm[0] -= h
                cp[nm], cm[nm] = bp, bm
                fd[nm] = to_str((case_values(cp, loss_only=True)
                                 - case_values(cm, loss_only=True)) / (2 * h))
            out["fd_bias"] = fd
            print("check done", out["quadrature_check"], round(time.time() - t0), flush=True)
    out["runtime_s"] = round(time.time() - t0)
    OUT.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
