"""popdyn.assembly: the loss, gradient, AGOP and refit lines written once against an array
context.

* In float64 (``NUMPY``) they agree with the compiled kernels the ridge family and the fused GD
  step evaluate (:func:`popdyn._kernels.fused.ridge_loss` / ``ridge_grad``) to rounding.
* They agree with the formulas written out independently here, entry by entry with explicit
  loops in exact rational arithmetic (``fractions.Fraction`` of the float64 inputs), to
  rounding: a reference that shares no line with the module.
* In certify's Arb context (tests/certify/test_arrays.py) they enclose those exact values.
"""
from fractions import Fraction as Fr

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn import assembly as asm
from popdyn._kernels import fused as fk


def random_moments(seed, m, d, k):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, m))
    out = {
        "s": float(rng.choice([1.0, 1.0 / m])),
        "a": rng.normal(size=m), "W": rng.normal(size=(m, d)), "c": float(rng.normal()),
        "C": X @ X.T / m, "B": np.abs(X @ X.T) / m, "A": rng.normal(size=(m, m)),
        "D": rng.normal(size=(m, m)), "mu0": rng.normal(size=m), "mu1": rng.normal(size=m),
        "mu2": rng.normal(size=m), "Ct": rng.normal(size=(m, k)), "Bt": rng.normal(size=(m, k)),
        "At": rng.normal(size=(m, k)), "Dt": rng.normal(size=(m, k)), "v": rng.normal(size=k),
        "vU": rng.normal(size=(k, d)), "ey": float(rng.normal()), "ey2": float(rng.uniform(1, 3)),
    }
    out["theta"] = out["W"] / np.linalg.norm(out["W"], axis=1, keepdims=True)
    return out


def _F(x):
    return np.vectorize(Fr, otypes=[object])(np.asarray(x, dtype=np.float64))


def exact_loss(M):
    """½(s²aᵀCa + 2sc aᵀμ0 + c² − 2s aᵀCt v − 2c E[y] + E[y²]), in exact rationals."""
    s, c, ey, ey2 = Fr(M["s"]), Fr(M["c"]), Fr(M["ey"]), Fr(M["ey2"])
    a, C, mu0, Ct, v = _F(M["a"]), _F(M["C"]), _F(M["mu0"]), _F(M["Ct"]), _F(M["v"])
    m, k = Ct.shape
    aCa = sum(a[i] * C[i, j] * a[j] for i in range(m) for j in range(m))
    aCtv = sum(a[i] * Ct[i, t] * v[t] for i in range(m) for t in range(k))
    amu = sum(a[i] * mu0[i] for i in range(m))
    return (s * s * aCa + 2 * s * c * amu + c * c - 2 * s * aCtv - 2 * c * ey + ey2) / 2


def exact_grad(M):
    """(∂L/∂a, ∂L/∂W, ∂L/∂b, ∂L/∂c) of the module docstring, in exact rationals."""
    s, c, ey = Fr(M["s"]), Fr(M["c"]), Fr(M["ey"])
    F = {k: _F(M[k]) for k in ("a", "W", "theta", "C", "B", "A", "D", "mu0", "mu1", "mu2",
                               "Ct", "Bt", "At", "Dt", "v", "vU")}
    a, W, th, v, vU = F["a"], F["W"], F["theta"], F["v"], F["vU"]
    m, d = W.shape
    k = v.shape[0]
    ga = [s * (s * sum(F["C"][i, j] * a[j] for j in range(m)) + c * F["mu0"][i]
               - sum(F["Ct"][i, t] * v[t] for t in range(k))) for i in range(m)]
    gb = [s * a[i] * (s * sum(F["D"][i, j] * a[j] for j in range(m)) + c * F["mu1"][i]
                      - sum(F["Dt"][i, t] * v[t] for t in range(k))) for i in range(m)]
    gc = s * sum(a[i] * F["mu0"][i] for i in range(m)) + c - ey
    gW = np.empty((m, d), dtype=object)
    for i in range(m):
        scal = (s * sum(F["A"][i, j] * a[j] for j in range(m)) + c * F["mu2"][i]
                - sum(F["At"][i, t] * v[t] for t in range(k)))
        for q in range(d):
            rest = (s * sum(F["B"][i, j] * a[j] * W[j, q] for j in range(m))
                    - sum(F["Bt"][i, t] * vU[t, q] for t in range(k)))
            gW[i, q] = s * a[i] * (th[i, q] * scal + rest)
    return np.array(ga, dtype=object), gW, np.array(gb, dtype=object), gc


def _close(x, exact, scale, ulps=64):
    """|x − exact| ≤ ulps · eps · scale, entrywise (float64 rounding of a short sum)."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    exact = np.atleast_1d(np.asarray(exact, dtype=object))
    scale = np.atleast_1d(np.asarray(scale, dtype=np.float64))
    err = np.array([abs(Fr(float(u)) - e) for u, e in zip(x.ravel(), exact.ravel())],
                   dtype=object)
    return all(float(e) <= ulps * 2.0 ** -52 * max(float(sc), 1e-300)
               for e, sc in zip(err, np.broadcast_to(scale, x.shape).ravel()))


def _scale_of(M):
    """Σ|terms| of the loss (the scale of its rounding)."""
    s, a, C = abs(M["s"]), np.abs(M["a"]), np.abs(M["C"])
    return (s * s * a @ C @ a + 2 * s * abs(M["c"]) * a @ np.abs(M["mu0"]) + M["c"] ** 2
            + 2 * s * a @ np.abs(M["Ct"]) @ np.abs(M["v"]) + 2 * abs(M["c"] * M["ey"]) + M["ey2"])


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2 ** 20), st.integers(1, 6), st.integers(1, 5), st.integers(1, 3),
       st.booleans(), st.booleans())
def test_numpy_context_against_exact_formulas_and_the_kernels(seed, m, d, k, bias, intercept):
    M = random_moments(seed, m, d, k)
    args = (M["s"], M["a"], M["c"], M["C"], M["mu0"], M["Ct"], M["v"], M["ey"], M["ey2"])
    L = asm.ridge_loss(asm.NUMPY, *args)
    Lk = fk.ridge_loss(*args)
    scale = _scale_of(M)
    assert _close(L, exact_loss(M), scale) and _close(Lk, exact_loss(M), scale)

    ga, gW, gb, gc = asm.ridge_grad(
        asm.NUMPY, M["s"], M["a"], M["W"], M["c"], bias, intercept, M["theta"], M["C"], M["B"],
        M["A"], M["D"], M["mu0"], M["mu1"], M["mu2"], M["Ct"], M["Bt"], M["At"], M["Dt"],
        M["v"], M["vU"], M["ey"])
    kga, kgW, kgb = np.empty(m), np.empty((m, d)), np.empty(m)
    kgc = fk.ridge_grad(M["s"], M["a"], M["W"], M["c"], bias, intercept, M["theta"], M["C"],
                        M["B"], M["A"], M["D"], M["mu0"], M["mu1"], M["mu2"], M["Ct"], M["Bt"],
                        M["At"], M["Dt"], M["v"], M["vU"], M["ey"], kga, kgW, kgb)
    ega, egW, egb, egc = exact_grad(M)
    # the scale of each entry: the formula with every input in absolute value
    Ab = {key: np.abs(M[key]) for key in M if isinstance(M[key], np.ndarray)}
    s, c = abs(M["s"]), abs(M["c"])
    sga = s * (s * Ab["C"] @ Ab["a"] + c * Ab["mu0"] + Ab["Ct"] @ Ab["v"])
    sgb = s * Ab["a"] * (s * Ab["D"] @ Ab["a"] + c * Ab["mu1"] + Ab["Dt"] @ Ab["v"])
    sgW = (s * Ab["a"])[:, None] * (
        Ab["theta"] * (s * Ab["A"] @ Ab["a"] + c * Ab["mu2"] + Ab["At"] @ Ab["v"])[:, None]
        + s * Ab["B"] @ (Ab["a"][:, None] * Ab["W"]) + Ab["Bt"] @ Ab["vU"])
    for x in (ga, kga):
        assert _close(x, ega, sga)
    for x in (gW, kgW):
        assert _close(x, egW, sgW)
    if bias:
        assert _close(gb, egb, sgb) and _close(kgb, egb, sgb)
    else:
        assert gb is None and np.all(kgb == 0.0)
    if intercept:
        sgc = s * Ab["a"] @ Ab["mu0"] + c + abs(M["ey"])
        assert _close(gc, egc, sgc) and _close(kgc, egc, sgc)
    else:
        assert gc is None and kgc == 0.0


def test_agop_and_refit_lines_against_exact_formulas():
    M = random_moments(5, 4, 3, 2)
    s, a, W, B = M["s"], M["a"], M["W"], M["B"]
    Ag = asm.agop(asm.NUMPY, s, a, W, B)
    Fa, FW, FB, Fs = _F(a), _F(W), _F(B), Fr(s)
    m, d = W.shape
    exact = np.array([[Fs * Fs * sum(FW[i, p] * Fa[i] * FB[i, j] * Fa[j] * FW[j, q]
                                     for i in range(m) for j in range(m))
                       for q in range(d)] for p in range(d)], dtype=object)
    scale = s * s * np.abs(W).T @ (np.abs(a)[:, None] * B * np.abs(a)[None, :]) @ np.abs(W)
    assert _close(Ag, exact, scale) and np.array_equal(Ag, Ag.T)

    G, g = asm.refit_quadratic(asm.NUMPY, s, M["C"], M["mu0"], M["Ct"] @ M["v"], M["ey"])
    FC, Fmu, FCt, Fv, Fey = _F(M["C"]), _F(M["mu0"]), _F(M["Ct"]), _F(M["v"]), Fr(M["ey"])
    eG = np.array([[Fs * Fs * (FC[i, j] - Fmu[i] * Fmu[j]) for j in range(m)]
                   for i in range(m)], dtype=object)
    eg = np.array([Fs * (sum(FCt[i, t] * Fv[t] for t in range(2)) - Fmu[i] * Fey)
                   for i in range(m)], dtype=object)
    assert _close(G, eG, s * s * (np.abs(M["C"]) + np.outer(np.abs(M["mu0"]), np.abs(M["mu0"]))))
    assert _close(g, eg, s * (np.abs(M["Ct"]) @ np.abs(M["v"]) + np.abs(M["mu0"] * M["ey"])))
    assert np.array_equal(G, G.T)


def test_skip_lines_against_exact_formulas():
    """SK-1 to SK-3 (popdyn.skip) against the formulas written out here."""
    rng = np.random.default_rng(3)
    m, d = 3, 4
    s, a, W, v = 1.0 / 3, rng.normal(size=m), rng.normal(size=(m, d)), rng.normal(size=d)
    mu1, tau, L0 = rng.normal(size=m), rng.normal(size=d), 0.7
    L = asm.skip_loss(asm.NUMPY, L0, s, a, W, v, mu1, tau)
    Fa, FW, Fv, Fmu, Ft, Fs = _F(a), _F(W), _F(v), _F(mu1), _F(tau), Fr(s)
    r = [sum(FW[j, i] * Fv[i] for i in range(d)) for j in range(m)]
    eL = (Fr(L0) + Fs * sum(Fa[j] * Fmu[j] * r[j] for j in range(m))
          - sum(Fv[i] * Ft[i] for i in range(d)) + sum(x * x for x in Fv) / 2)
    assert _close(L, eL, 10.0)
    e2, e2z = rng.normal(size=m), rng.normal(size=m)
    theta = W / np.linalg.norm(W, axis=1, keepdims=True)
    g0 = (rng.normal(size=m), rng.normal(size=(m, d)), rng.normal(size=m))
    rr = W @ v
    ga, gW, gb, gv = asm.skip_grad(asm.NUMPY, g0, s, a, W, v, mu1, rr, e2, e2z, theta, tau,
                                   True)
    Frr, Fth = _F(rr), _F(theta)
    assert _close(ga, [Fr(g0[0][j]) + Fs * Fmu[j] * r[j] for j in range(m)], 10.0)
    assert _close(gb, [Fr(g0[2][j]) + Fs * Fa[j] * Frr[j] * Fr(e2[j]) for j in range(m)], 10.0)
    assert _close(gW, [[Fr(g0[1][j, i]) + Fs * Fa[j] * (Fmu[j] * Fv[i]
                                                         + Frr[j] * Fr(e2z[j]) * Fth[j, i])
                        for i in range(d)] for j in range(m)], 10.0)
    assert _close(gv, [Fs * sum(FW[j, i] * Fa[j] * Fmu[j] for j in range(m)) - Ft[i] + Fv[i]
                       for i in range(d)], 10.0)
    M0 = np.eye(d)
    Ms = asm.skip_agop(asm.NUMPY, M0, s, a, W, v, mu1)
    u = [Fs * sum(FW[j, i] * Fa[j] * Fmu[j] for j in range(m)) for i in range(d)]
    eM = [[Fr(M0[p, q]) + Fv[p] * Fv[q] + u[p] * Fv[q] + Fv[p] * u[q] for q in range(d)]
          for p in range(d)]
    assert _close(Ms, eM, 10.0) and np.array_equal(Ms, Ms.T)
    g2, V2 = asm.skip_refit(asm.NUMPY, np.zeros(m), 1.5, s, W, v, mu1, tau)
    assert _close(g2, [-Fs * Fmu[j] * r[j] for j in range(m)], 10.0)
    assert _close(V2, Fr(1.5) - 2 * sum(Fv[i] * Ft[i] for i in range(d))
                  + sum(x * x for x in Fv), 10.0)
