"""Certified population GD iterates (certify.gd).

References, all outside certify.gd: popdyn's float engine (loss, gradient; finite differences of
its gradient for the Hessian), an mpmath GD at 50 digits whose gradient is written out here from
the arc-cosine closed forms (∂/∂v E[relu(v·x) relu(w·x)] = ((π − θ) w + |w| sin θ v̂)/(2π);
Cho & Saul 2009), and popdyn.plateau on popdyn's float run."""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popdyn
from certify.gd import HyperDual, certified_gd, relu_problem_loss
from certify import _arb as A
from flint import arb

M, D = 2, 3


def _problem(scale, seed, d=D, m=M):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((m, d)) * scale
    a = np.abs(rng.standard_normal(m)) * scale
    U = np.zeros((1, d))
    U[0, 0] = 1.0
    return a, W, U


def _popdyn(a, W, U):
    m, d = W.shape
    st_ = popdyn.Student(d, m, "relu", bias=False, intercept=False)
    T = popdyn.Teacher.network("relu", [1.0], U)
    return st_, popdyn.Params(a, W, np.zeros(m), 0.0), T


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10 ** 6), scale=st.floats(0.05, 2.0))
def test_hyperdual_loss_gradient_hessian_match_the_engine(seed, scale):
    a, W, U = _problem(scale, seed)
    st_, p, T = _popdyn(a, W, U)
    L, g = popdyn.loss_and_grad(st_, p, T)
    x = np.concatenate([a, W.ravel()])
    P = x.size
    with A.workprec(128):
        hd = relu_problem_loss(*_split(HyperDual.variables([arb(v) for v in x], True)), [1.0], U)[0]
        assert abs(float(hd.v.mid()) - L) <= 1e-13 * (abs(L) + 1e-3)
        ga = np.array([float(v.mid()) for v in hd.g])
        ge = np.concatenate([g.a, g.W.ravel()])
        assert np.max(np.abs(ga - ge)) <= 1e-12 * (np.max(np.abs(ge)) + 1e-3)
        H = np.array([[float(hd.H[i, j].mid()) for j in range(P)] for i in range(P)])
    # Hessian against central differences of the engine's gradient
    hstep = 1e-5 * max(scale, 1e-2)
    Hfd = np.empty((P, P))
    for j in range(P):
        e = np.zeros(P)
        e[j] = hstep
        gp = _grad_vec(st_, x + e, T)
        gm = _grad_vec(st_, x - e, T)
        Hfd[:, j] = (gp - gm) / (2 * hstep)
    assert np.max(np.abs(H - Hfd)) <= 1e-6 * (np.max(np.abs(H)) + 1e-6)
    assert np.max(np.abs(H - H.T)) <= 1e-12 * np.max(np.abs(H))


def _split(v, m=M, d=D):
    return list(v[:m]), [list(v[m + j * d: m + (j + 1) * d]) for j in range(m)]


def _grad_vec(st_, x, T):
    m, d = st_.m, st_.d
    p = popdyn.Params(x[:m], x[m:].reshape(m, d), np.zeros(m), 0.0)
    _, g = popdyn.loss_and_grad(st_, p, T)
    return np.concatenate([g.a, g.W.ravel()])


# ---------------------------------------------------------------- independent mpmath GD
def _mp_k(v, w):
    nv, nw = mp.sqrt(mp.fsum(x * x for x in v)), mp.sqrt(mp.fsum(x * x for x in w))
    c = mp.fsum(x * y for x, y in zip(v, w)) / (nv * nw)
    th = mp.acos(c)
    return nv * nw * (mp.sin(th) + (mp.pi - th) * c) / (2 * mp.pi), th, nv, nw


def _mp_grad_k(v, w):
    """∂/∂v E[relu(v·x) relu(w·x)] = ((π − θ) w + |w| sin θ v/|v|)/(2π)."""
    _, th, nv, nw = _mp_k(v, w)
    return [((mp.pi - th) * wi + nw * mp.sin(th) * vi / nv) / (2 * mp.pi) for vi, wi in zip(v, w)]


def _mp_loss_grad(a, W, u):
    m = len(a)
    ff = mp.fsum(a[j] ** 2 * mp.fsum(x * x for x in W[j]) / 2 for j in range(m))
    ff += mp.fsum(2 * a[j] * a[l] * _mp_k(W[j], W[l])[0] for j in range(m) for l in range(j + 1, m))
    fy = mp.fsum(a[j] * _mp_k(W[j], u)[0] for j in range(m))
    L = (ff - 2 * fy + mp.mpf(1) / 2) / 2     # E[y²] = |u|²/2
    ga = []
    gW = []
    for j in range(m):
        kj = [W[j][i] * W[j][i] for i in range(len(u))]
        s = a[j] * mp.fsum(kj) / 2
        s += mp.fsum(a[l] * _mp_k(W[j], W[l])[0] for l in range(m) if l != j)
        ga.append(s - _mp_k(W[j], u)[0])
        gw = [a[j] * a[j] * x / 2 for x in W[j]]
        for l in range(m):
            if l != j:
                gk = _mp_grad_k(W[j], W[l])
                gw = [x + a[j] * a[l] * y for x, y in zip(gw, gk)]
        gk = _mp_grad_k(W[j], u)
        gW.append([x - a[j] * y for x, y in zip(gw, gk)])
    return L, ga, gW


def test_enclosures_contain_an_independent_50_digit_gd():
    a0, W0, U = _problem(0.3, 7)
    eta, N = 0.2, 40
    res = certified_gd(a0, W0, [1.0], U, eta=eta, n_steps=N)
    with mp.workdps(50):
        VY = mp.mpf(1) / 2 - 1 / (2 * mp.pi)
        a = [mp.mpf(float(x)) for x in a0]
        W = [[mp.mpf(float(x)) for x in row] for row in W0]
        u = [mp.mpf(1)] + [mp.mpf(0)] * (D - 1)
        for n in range(N + 1):
            L, ga, gW = _mp_loss_grad(a, W, u)
            ell = 2 * L / VY
            assert res.loss_lo[n] <= ell <= res.loss_hi[n], (n, res.loss_lo[n], ell, res.loss_hi[n])
            x = [*a] + [v for row in W for v in row]
            dev = max(abs(x[i] - mp.mpf(float(res.mid[n, i]))) for i in range(len(x)))
            # (mid is the box centre rounded to float: allow its rounding)
            assert dev <= res.width[n] + mp.mpf(2) ** -52 * max(abs(v) for v in x), (n, dev)
            a = [a[j] - eta * ga[j] for j in range(M)]
            W = [[W[j][i] - eta * gW[j][i] for i in range(D)] for j in range(M)]
    assert res.width[N] < 1e-30          # the exact iterates, carried at 128 bits


def test_certified_plateau_release_matches_popdyn_and_tracks_the_float_run():
    # a small-initialization plateau (m = 2, d = 3, scale 1e-3, η = 0.1): release near update 60
    a0, W0, U = _problem(1e-3, 1)
    st_, p, T = _popdyn(a0, W0, U)
    eta, N = 0.1, 150
    tr = popdyn.train(st_, p, T, method="gd", lr=eta, max_updates=N,
                      schedule=popdyn.Schedule(every=1, early=()))
    ell = tr.normalized_loss
    track = np.concatenate([tr.snapshots["a"], tr.snapshots["W"].reshape(N + 1, -1)], axis=1)
    res = certified_gd(a0, W0, [1.0], U, eta=eta, n_steps=N, track=track, delta=1e-3,
                       align_at=(N,))
    rel = popdyn.plateau(ell, delta=1e-3).release
    assert res.E["certified"] and res.E["E"] == rel and 10 < rel < N
    # the float losses lie within a few ulp of the enclosures of the exact losses at boxes that
    # contain both the exact and popdyn's float iterates (their distance is the float
    # evaluation's rounding)
    gap = np.maximum(res.loss_lo - ell, ell - res.loss_hi)
    assert np.all(gap <= 8 * np.spacing(ell)), np.max(gap / np.spacing(ell))
    assert np.all(res.loss_hi - res.loss_lo <= 1e-12 * res.loss_hi)
    al = res.alignment[N]
    assert al.status == "resolved" and al.a_top.hi - al.a_top.lo < 1e-8
    # the certified AGOP alignment against the float recipe on popdyn's last float iterate
    last = tr.snapshot(len(tr.snap_n) - 1)
    Mf = popdyn.agop(st_, last)     # the engine's closed form, not certify.gd's
    top = np.linalg.eigh(Mf)[1][:, -1]
    a_top = float(top[0] ** 2)
    assert al.a_top.lo - 1e-9 <= a_top <= al.a_top.hi + 1e-9


def test_bad_inputs_name_the_argument():
    a0, W0, U = _problem(0.1, 0)
    with pytest.raises(ValueError, match="eta"):
        certified_gd(a0, W0, [1.0], U, eta=-1.0, n_steps=3)
    with pytest.raises(ValueError, match="m <= 8 and d <= 8"):
        certified_gd(np.ones(9), np.ones((9, 2)), [1.0], np.ones((1, 2)), eta=0.1, n_steps=3)
    with pytest.raises(ValueError, match="track"):
        certified_gd(a0, W0, [1.0], U, eta=0.1, n_steps=3, track=np.zeros((2, 2)))
