"""popdyn.landscape.empirical: the empirical weight-decay loss of two-layer relu networks.

References used here, all independent of popdyn's code:
* the loss written again below in mpmath at 50 digits (``_mp_loss``), differentiated by central
  finite differences (step 1e−15; the loss is a quartic polynomial inside a region, so the
  truncation error is O(h²) ≈ 1e−30 and the rounding error ≈ 1e−50/h² = 1e−20);
* the global optimum against the convex program over patterns enumerated here (a sweep of
  directions) solved by accelerated proximal gradient (``_fista_group_lasso_2d``), and the lower
  bound against a multi-start of L-BFGS-B and random networks on the loss written again in
  numpy (``_np_loss_grad``);
* the activation patterns against a dense sweep of directions in d = 2.
"""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import minimize

from certify import landscape_empirical as CE
from popdyn.landscape import empirical as E


def _mp_loss(X, y, lam, theta, m, d):
    """(1/2n)Σ(Σ_j a_j max(0, w_j·x_i) − y_i)² + (λ/2)|θ|² in mpmath (current precision)."""
    n = len(y)
    a = theta[:m]
    tot = mp.mpf(0)
    for i in range(n):
        f = mp.mpf(0)
        for j in range(m):
            z = mp.fsum(mp.mpf(X[i][k]) * theta[m + j * d + k] for k in range(d))
            f += a[j] * (z if z > 0 else mp.mpf(0))
        tot += (f - mp.mpf(y[i])) ** 2
    return tot / (2 * n) + mp.mpf(lam) * mp.fsum(t * t for t in theta) / 2


def _mp_grad_hess(X, y, lam, a, W, h="1e-15"):
    m, d = W.shape
    P = m * (d + 1)
    with mp.workdps(50):
        h = mp.mpf(h)
        th = [mp.mpf(float(v)) for v in np.concatenate([a, W.ravel()])]

        def L(dv):
            return _mp_loss(X, y, lam, [t + e for t, e in zip(th, dv)], m, d)

        def e(i, s):
            v = [mp.mpf(0)] * P
            v[i] = s
            return v

        def e2(i, si, j, sj):
            v = [mp.mpf(0)] * P
            v[i] += si
            v[j] += sj
            return v

        L0 = L([mp.mpf(0)] * P)
        g = [(L(e(i, h)) - L(e(i, -h))) / (2 * h) for i in range(P)]
        H = [[mp.mpf(0)] * P for _ in range(P)]
        for i in range(P):
            H[i][i] = (L(e(i, h)) - 2 * L0 + L(e(i, -h))) / h ** 2
            for j in range(i + 1, P):
                v = (L(e2(i, h, j, h)) - L(e2(i, h, j, -h)) - L(e2(i, -h, j, h))
                     + L(e2(i, -h, j, -h))) / (4 * h * h)
                H[i][j] = H[j][i] = v
        return (float(L0), np.array([float(t) for t in g]),
                np.array([[float(t) for t in row] for row in H]))


def _near_kink_state(rng, n=5, d=2, m=3, eps=1e-9):
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    a = rng.normal(size=m)
    W = rng.normal(size=(m, d))
    # unit 0 at pre-activation +eps at x_2, unit 1 at −eps at x_3 (tiny but nonzero)
    for j, i, s in ((0, 2, 1.0), (1, 3, -1.0)):
        W[j] += (s * eps - W[j] @ X[i]) / (X[i] @ X[i]) * X[i]
    return X, y, a, W


@pytest.mark.parametrize("seed, eps", [(0, None), (1, 1e-9), (2, 1e-7)])
def test_hessian_against_mpmath_finite_differences(seed, eps):
    rng = np.random.default_rng(seed)
    if eps is None:
        X, y = rng.normal(size=(4, 3)), rng.normal(size=4)
        a, W = rng.normal(size=2), rng.normal(size=(2, 3))
    else:
        X, y, a, W = _near_kink_state(rng, eps=eps)
        z = W @ X.T
        assert 0 < abs(z[0, 2]) < 1e-6 and 0 < abs(z[1, 3]) < 1e-6 and z[0, 2] > 0 > z[1, 3]
    lam = 0.03
    L, g, H = E.loss_grad_hessian(X, y, lam, a, W)
    Lr, gr, Hr = _mp_grad_hess(X, y, lam, a, W)
    assert abs(L - Lr) <= 1e-14 * abs(Lr)
    assert np.max(np.abs(g - gr)) <= 1e-10 * np.max(np.abs(gr))
    assert np.max(np.abs(H - Hr)) <= 1e-10 * np.max(np.abs(Hr))
    # entrywise where the entry is not tiny
    big = np.abs(Hr) > 1e-6 * np.max(np.abs(Hr))
    assert np.all(np.abs(H - Hr)[big] <= 1e-10 * np.abs(Hr)[big])


def _np_loss_grad(z, X, y, lam, m):
    n, d = X.shape
    a, W = z[:m], z[m:].reshape(m, d)
    pre = X @ W.T                     # (n, m)
    act = np.maximum(pre, 0.0)
    r = act @ a - y
    L = r @ r / (2 * n) + lam * (z @ z) / 2
    ga = act.T @ r / n
    gW = ((pre > 0) * np.outer(r, a)).T @ X / n
    return L, np.concatenate([ga, gW.ravel()]) + lam * z


def test_patterns_against_direction_sweep():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 2))
    P = E.activation_patterns(X)
    t = np.linspace(0, 2 * np.pi, 100_001)
    V = np.stack([np.cos(t), np.sin(t)], 1)
    sweep = {tuple(row) for row in (V @ X.T > 0)}
    assert {tuple(r) for r in P.D} == sweep
    assert P.complete and P.K == E.n_cells_general_position(6, 2) == 12
    assert np.all(((2 * P.D - 1) * (P.witness @ X.T)) > 0)
    Po = E.activation_patterns(np.eye(3))
    assert Po.K == 8 and Po.complete


def _fista_group_lasso_2d(X, y, beta, patterns, iters=4000):
    """min ½|Σ_k s_k D_k X u_k − y|² + β Σ|u_k| over u_k ∈ C_k = {(2D_k − 1)Xu ≥ 0} ⊂ R², both
    signs: accelerated proximal gradient written here independently.  In R² each cone is the
    sector between its two extreme rays, Π_C(v) is v, the nearer ray's projection or 0, and the
    prox of β|·| + ι_C is the radial shrinkage of Π_C (C a cone)."""
    n, d = X.shape
    blocks = [(D, s) for D in patterns for s in (1.0, -1.0)]
    B = len(blocks)
    A = np.array([(2 * D - 1)[:, None] * X for D, _ in blocks])          # (B, n, 2)
    rays = []
    for Ak in A:
        cand = [np.array([-a[1], a[0]]) / np.hypot(*a) for a in Ak]
        cand += [-c for c in cand]
        feas = [c for c in cand if np.all(Ak @ c >= -1e-12)]
        # the two extreme rays: the feasible pair with the largest angle between them
        i, j = max(((i, j) for i in range(len(feas)) for j in range(len(feas))),
                   key=lambda ij: -feas[ij[0]] @ feas[ij[1]])
        rays.append((feas[i], feas[j]))
    R1 = np.array([r[0] for r in rays])
    R2 = np.array([r[1] for r in rays])
    M = np.hstack([s * (D[:, None] * X) for D, s in blocks])              # (n, 2B)
    Lip = np.linalg.norm(M, 2) ** 2

    def prox(V, t):
        inside = np.all(np.einsum("bnk,bk->bn", A, V) >= 0, axis=1)
        p1 = np.maximum(np.sum(V * R1, 1), 0)[:, None] * R1
        p2 = np.maximum(np.sum(V * R2, 1), 0)[:, None] * R2
        d1 = np.sum((V - p1) ** 2, 1)
        d2 = np.sum((V - p2) ** 2, 1)
        P = np.where(inside[:, None], V, np.where((d1 <= d2)[:, None], p1, p2))
        nr = np.linalg.norm(P, axis=1)
        return P * np.maximum(0.0, 1 - t / np.maximum(nr, 1e-300))[:, None]

    z = np.zeros(2 * B)
    zo, mom = z.copy(), z.copy()
    tk = 1.0
    for _ in range(iters):
        g = M.T @ (M @ mom - y)
        z = prox((mom - g / Lip).reshape(B, 2), beta / Lip).ravel()
        tn = (1 + math.sqrt(1 + 4 * tk * tk)) / 2
        mom = z + (tk - 1) / tn * (z - zo)
        zo, tk = z, tn
    U = z.reshape(B, 2)
    return 0.5 * np.sum((M @ z - y) ** 2) + beta * np.sum(np.linalg.norm(U, axis=1))


def test_global_optimum_against_independent_enumeration():
    rng = np.random.default_rng(11)
    X, y, lam = rng.normal(size=(4, 2)), rng.normal(size=4), 0.05
    opt = CE.global_optimum(X, y, lam)
    assert opt.status == "Solved" and opt.gap <= 1e-9 and opt.lower <= opt.upper
    # the patterns enumerated here by a sweep of directions, the convex program solved by SLSQP
    t = np.linspace(0, 2 * np.pi, 20_001)
    V = np.stack([np.cos(t), np.sin(t)], 1)
    pats = sorted({tuple(row) for row in (V @ X.T > 0).astype(float)} - {(0.0,) * 4})
    ref = _fista_group_lasso_2d(X, y, len(y) * lam, [np.array(p) for p in pats]) / len(y)
    assert abs(ref - opt.upper) <= 1e-7 * opt.upper
    assert ref >= opt.lower - 1e-9 * opt.upper
    # a multi-start of the nonconvex loss never beats the certified lower bound
    m = len(opt.a) + 2
    for s in range(4):
        r = np.random.default_rng(100 + s)
        res = minimize(_np_loss_grad, r.normal(size=3 * m), args=(X, y, lam, m), jac=True,
                       method="L-BFGS-B", options=dict(maxiter=500))
        assert res.fun >= opt.lower
    # the network read from the solution has the certified loss
    z = np.concatenate([opt.a, opt.W.ravel()])
    Lnet = _np_loss_grad(z, X, y, lam, len(opt.a))[0]
    assert opt.lower <= Lnet <= opt.upper + 1e-15


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6), st.floats(0.01, 3.0))
def test_lower_bound_below_every_network(seed, m, scale):
    X = np.array([[0.3, -1.2], [1.1, 0.4], [-0.7, 0.9], [0.2, 0.5], [-1.0, -0.3]])
    y = np.array([0.5, -0.2, 0.8, 0.1, -0.6])
    opt = _OPT.setdefault("o", CE.global_optimum(X, y, 0.02))
    r = np.random.default_rng(seed)
    z = scale * r.normal(size=3 * m)
    assert _np_loss_grad(z, X, y, 0.02, m)[0] >= opt.lower


_OPT = {}


def test_certify_global_and_spurious():
    lam = 1e-2
    Xg, yg = E.make_data("gaussian", 6, 2, 1)
    Pg = E.activation_patterns(Xg)
    og = CE.global_optimum(Xg, yg, lam, Pg)
    c = CE.certify_state(Xg, yg, lam, og.a, og.W, patterns=Pg)
    assert c.verdict == "local_min" and c.strict, c.reason
    assert E.classify(c, og.lower, og.upper, global_tol=1e-9) == "global"
    assert c.loss[0] <= og.upper and c.loss[1] >= og.lower and c.lam_min[0] > 0
    # the same point with a zero unit added: a critical point, global, not a saddle
    cz = CE.certify_state(Xg, yg, lam, np.append(og.a, 0.0), np.vstack([og.W, np.zeros(2)]),
                         patterns=Pg)
    assert cz.verdict == "critical" and cz.margin[1] >= 0
    assert E.classify(cz, og.lower, og.upper, global_tol=1e-9) == "global"
    X, y = E.make_data("orthogonal", 3, 3, 3)
    P = E.activation_patterns(X)
    opt = CE.global_optimum(X, y, lam, P)
    # one positive unit on the positive labels, the negative label's point at an exact kink
    # (r_l a > 0 there): a local minimum above the global one (which needs a negative unit)
    a, W = np.array([1.0]), np.where(y > 0, 1.0, 0.0)[None, :]
    a, W, _, _, _ = E.train_gd(X, y, lam, a, W, lr=0.5, steps=3000)
    c1 = CE.certify_state(X, y, lam, a, W, patterns=P)
    assert c1.verdict == "local_min", c1.reason
    assert E.classify(c1, opt.lower, opt.upper, global_tol=1e-9) == "spurious"
    # the unit on the largest label alone: the other positive label's point sits at a kink with
    # r_l a < 0 (GD with relu'(0) = 0 stops there): not a local minimum
    a, W = np.array([1.0]), np.eye(3)[[int(np.argmax(y))]]
    a, W, _, _, _ = E.train_gd(X, y, lam, a, W, lr=0.5, steps=3000)
    c2 = CE.certify_state(X, y, lam, a, W, patterns=P)
    assert c2.verdict == "saddle" and "kink" in c2.reason
    # θ = 0 with labels the network can fit is a saddle
    c0 = CE.certify_state(X, y, lam, np.zeros(2), np.zeros((2, 3)), patterns=P)
    assert c0.verdict == "saddle"


def test_bad_input():
    with pytest.raises(ValueError, match="`kind`"):
        E.make_data("uniform", 3, 2, 0)
    with pytest.raises(ValueError, match="`lam`"):
        E.loss_grad_hessian(np.eye(2), np.ones(2), -1.0, np.ones(1), np.ones((1, 2)))
    with pytest.raises(ValueError, match="`W`"):
        E.loss_grad_hessian(np.eye(2), np.ones(2), 1.0, np.ones(2), np.ones((1, 2)))
