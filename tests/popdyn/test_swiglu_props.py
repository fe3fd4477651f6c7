"""SwiGLU students: hypothesis properties, Monte Carlo, dynamics, refit and input errors.

Properties: the exact gradient against a 4th-order central difference of the exact loss along
random directions; invariance of loss, gradient and AGOP under neuron permutations; the
rescaling symmetry (a_j, g_j, v_j) → (a_j/λ, g_j, λ v_j) of f; a small GD step decreases the
loss.  The Monte Carlo check states its z-score.
"""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import popdyn
from popdyn import SwiGLUParams, SwiGLUStudent, Teacher

D = 5
TEACHERS = {
    "h3": lambda: Teacher.additive("h3", np.eye(D)[:1]),
    "relu_link": lambda: Teacher.additive("relu", np.eye(D)[1:3]),
    "gelu_gate": lambda: Teacher.gated("gelu", np.eye(D)[:2]),
    "relu_gate": lambda: Teacher.gated("relu", np.eye(D)[[0, 2]]),
    "rotation": lambda: Teacher.gated("rotation", np.eye(D)[:2]),
    "network": lambda: Teacher.network("tanh", [1.0, -0.7], 1.2 * np.eye(D)[:2], [0.3, 0.0]),
}
_CACHE = {}


def teacher(name):
    if name not in _CACHE:
        _CACHE[name] = TEACHERS[name]()
    return _CACHE[name]


def state(seed, m, scale=0.8, parallel=False):
    rng = np.random.default_rng(seed)
    a = rng.normal(0, scale, m)
    G = rng.normal(0, scale / np.sqrt(D), (m, D))
    V = rng.normal(0, scale / np.sqrt(D), (m, D))
    if parallel:
        V[0] = -1.3 * G[0]                 # value ∥ gate
        G[-1] = 0.7 * np.eye(D)[0]          # gate ∥ teacher axis
    return SwiGLUParams(a, G, V, rng.normal(0, 0.1))


names = st.sampled_from(sorted(TEACHERS))


@settings(max_examples=12)
@given(seed=st.integers(0, 10_000), name=names, m=st.integers(1, 4), par=st.booleans())
@example(seed=0, name="relu_gate", m=3, par=True)
def test_gradient_matches_finite_differences(seed, name, m, par):
    T = teacher(name)
    S = SwiGLUStudent(D, m)
    p = state(seed, m, parallel=par)
    g = popdyn.population_grad(S, p, T).flat()
    u = np.random.default_rng(seed + 1).standard_normal(g.size)
    u /= np.linalg.norm(u)
    h = 1e-3
    f = lambda t: popdyn.population_loss(S, SwiGLUParams.from_flat(p.flat() + t * u, m, D), T)
    fd = (-f(2 * h) + 8 * f(h) - 8 * f(-h) + f(-2 * h)) / (12 * h)
    assert abs(fd - g @ u) <= 1e-8 * max(1.0, np.linalg.norm(g))


@settings(max_examples=8)
@given(seed=st.integers(0, 10_000), name=names)
def test_permutation_invariance(seed, name):
    T = teacher(name)
    m = 4
    S = SwiGLUStudent(D, m)
    p = state(seed, m, parallel=True)
    perm = np.random.default_rng(seed).permutation(m)
    q = SwiGLUParams(p.a[perm], p.G[perm], p.V[perm], p.c)
    L1, g1 = popdyn.loss_and_grad(S, p, T)
    L2, g2 = popdyn.loss_and_grad(S, q, T)
    assert L2 == pytest.approx(L1, rel=1e-13, abs=1e-15)
    np.testing.assert_allclose(g2.G, g1.G[perm], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(g2.V, g1.V[perm], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(g2.a, g1.a[perm], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(popdyn.agop(S, q), popdyn.agop(S, p), rtol=1e-10, atol=1e-14)


@settings(max_examples=8)
@given(seed=st.integers(0, 10_000), name=names, lam=st.floats(0.25, 4.0))
def test_rescaling_symmetry(seed, name, lam):
    """(a_j, g_j, v_j) → (a_j/λ, g_j, λ v_j) leaves f, hence L and the AGOP, unchanged; the
    gradient transforms covariantly: ∂L/∂a → λ ∂L/∂a, ∂L/∂v → ∂L/∂v / λ, ∂L/∂g unchanged."""
    T = teacher(name)
    m = 3
    S = SwiGLUStudent(D, m)
    p = state(seed, m)
    lv = np.array([lam, 1.0, 1.0 / lam])
    q = SwiGLUParams(p.a / lv, p.G, p.V * lv[:, None], p.c)
    X = np.random.default_rng(seed).standard_normal((50, D))
    np.testing.assert_allclose(S(q, X), S(p, X), rtol=1e-12, atol=1e-14)
    L1, g1 = popdyn.loss_and_grad(S, p, T)
    L2, g2 = popdyn.loss_and_grad(S, q, T)
    assert L2 == pytest.approx(L1, rel=1e-12)
    np.testing.assert_allclose(g2.a, g1.a * lv, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(g2.V, g1.V / lv[:, None], rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(g2.G, g1.G, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(popdyn.agop(S, q), popdyn.agop(S, p), rtol=1e-10, atol=1e-14)


@settings(max_examples=8)
@given(seed=st.integers(0, 10_000), name=names)
def test_small_gd_step_decreases_loss(seed, name):
    T = teacher(name)
    S = SwiGLUStudent(D, 3)
    p = popdyn.fit_intercept(S, state(seed, 3), T)
    L, g = popdyn.loss_and_grad(S, p, T)
    n2 = float(g.flat() @ g.flat())
    lr = 1e-3 / max(1.0, np.sqrt(n2))
    q = SwiGLUParams.from_flat(p.flat() - lr * g.flat(), 3, D)
    Lq = popdyn.population_loss(S, q, T)
    assert Lq < L
    assert L - Lq == pytest.approx(lr * n2, rel=0.05)


def test_monte_carlo_loss_and_agop():
    """Loss and AGOP against 2·10^5 Monte Carlo samples: |z| < 5 (z = (MC − exact)/SE; the
    same samples enter y and f, so the check is exact in distribution)."""
    T = teacher("gelu_gate")
    S = SwiGLUStudent(D, 4)
    p = state(7, 4, parallel=True)
    X = np.random.default_rng(123).standard_normal((200_000, D))
    r2 = (S(p, X) - T(X)) ** 2
    L = popdyn.population_loss(S, p, T)
    z = (0.5 * r2.mean() - L) / (0.5 * r2.std() / np.sqrt(X.shape[0]))
    assert abs(z) < 5, z
    from scipy.special import expit
    Z = X @ p.G.T
    s = expit(Z)
    grad = (((s + Z * s * (1 - s)) * (X @ p.V.T)) * p.a) @ p.G + ((Z * s) * p.a) @ p.V
    M = popdyn.agop(S, p)
    k = 1                                   # one entry, with its own standard error
    samples = grad[:, k] * grad[:, k]
    z = (samples.mean() - M[k, k]) / (samples.std() / np.sqrt(X.shape[0]))
    assert abs(z) < 5, z


def test_fitted_intercept_and_init():
    T = teacher("h3")
    S = SwiGLUStudent(D, 6)
    p = S.init(0, 0.5, T)
    assert popdyn.population_grad(S, p, T).c == pytest.approx(0.0, abs=1e-15)
    assert 2 * popdyn.population_loss(S, p, T) / T.variance == pytest.approx(1.0, abs=0.05)
    S0 = SwiGLUStudent(D, 6, intercept=False)
    assert S0.init(0, 0.5, T).c == 0.0
    assert popdyn.population_grad(S0, S0.init(0, 0.5, T), T).c == 0.0


def test_train_flow_and_gd():
    T = teacher("h3")
    S = SwiGLUStudent(D, 4)
    p = S.init(1, 0.5, T)
    tr = popdyn.train(S, p, T, method="flow", head_lr_mult=0.01, max_updates=30)
    assert tr.status == "horizon" and tr.n[-1] == 30
    assert tr.loss[-1] < tr.loss[0]
    q = tr.snapshot(len(tr) - 1)
    assert isinstance(q, SwiGLUParams)
    # the intercept is fitted at every state
    assert popdyn.population_grad(S, tr.final, T).c == pytest.approx(0.0, abs=1e-14)
    tg = popdyn.train(S, p, T, method="gd", lr=0.05, head_lr_mult=0.001, max_updates=10)
    assert np.all(np.diff(tg.loss) <= 1e-15)


def test_refit_risk_unrestricted():
    T = teacher("gelu_gate")
    S = SwiGLUStudent(D, 5)
    p = S.init(3, 0.7, T)
    r = popdyn.refit_risk(S, p, T)
    assert 0 <= r.lower <= r.risk <= T.variance * (1 + 1e-12)
    # the refitted head is a least-squares head: its gradient in a vanishes
    g = popdyn.population_grad(S, r.params, T)
    assert np.max(np.abs(g.a)) < 1e-9
    assert popdyn.population_loss(S, r.params, T) == pytest.approx(r.risk / 2, rel=1e-8)
    rb = popdyn.refit_risk(S, p, T, "same_budget")
    assert np.linalg.norm(rb.head) <= np.linalg.norm(p.a) * (1 + 1e-12)
    with pytest.raises(ValueError, match="projected"):
        popdyn.refit_risk(S, p, T, "projected")


def test_gate_geometry():
    from popdyn.diagnostics import gate_geometry
    U = np.eye(D)[:2]
    G = np.array([[1.0, 0.2, 0, 0, 0], [0, 0, 1.0, 0, 0], [0.6, 0.6, 0, 0, 0.1]])
    V = np.array([[0, 1.0, 0, 0, 0], [1.0, 0, 1.0, 0, 0], [0, 0, 0, 1.0, 0]])
    p = SwiGLUParams([1.0, 2.0, 0.5], G, V)
    g = gate_geometry(p, U)
    np.testing.assert_allclose(g.gate_cos2, [1.0, 0.0, 0.72 / 0.73])
    assert g.frac_gates_near_axis == pytest.approx(1 / 3)     # only gate 0 (11.3°)
    assert g.frac_axes_covered == 0.5
    assert g.gate_median_angle == pytest.approx(np.degrees(np.arccos(np.sqrt(0.72 / 0.73))))
    assert gate_geometry(p, U, threshold=46).frac_gates_near_axis == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="threshold"):
        gate_geometry(p, U, threshold=120)


def test_bad_input():
    T = teacher("h3")
    S = SwiGLUStudent(D, 3)
    p = state(0, 3)
    with pytest.raises(ValueError, match="`params.G`"):
        popdyn.population_loss(S, SwiGLUParams(p.a, p.G[:, :3], p.V[:, :3]), T)
    with pytest.raises(ValueError, match="`V`"):
        SwiGLUParams(p.a, p.G, p.V[:2])
    bad = p.V.copy(); bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="`params.V` must be finite"):
        popdyn.population_grad(S, p.replace(V=bad), T)
    with pytest.raises(TypeError, match="SwiGLUParams"):
        popdyn.population_loss(S, popdyn.Params(p.a, p.G, np.zeros(3)), T)
    with pytest.raises(ValueError, match="`m`"):
        SwiGLUStudent(D, 0)
    with pytest.raises(ValueError, match="input dimension"):
        popdyn.population_loss(S, p, Teacher.additive("h3", np.eye(D + 1)[:1]))
    with pytest.raises(ValueError, match="`params.c` must be 0"):
        popdyn.population_loss(SwiGLUStudent(D, 3, intercept=False), p, T)
    with pytest.raises(ValueError, match="`method`"):
        popdyn.train(S, p, T, method="rk4")


def test_silu_coefficients_agree_with_engine_and_stein():
    """T^{(p)} of the SwiGLU kernel against the engine's SiLU coefficients (S, Dd, Dd2 of
    popdyn._hermite) and Stein's relation α T^{(p+1)}_n = √(n+1) T^{(p)}_{n+1}."""
    from popdyn._hermite import unit_coefficients
    from popdyn.swiglu import silu_coefficients

    al = np.array([0.0, 1e-3, 0.3, 1.0, 2.5])
    T, N, ok = silu_coefficients(al)
    assert ok
    uc = unit_coefficients("silu", al, np.zeros(al.size), rtol=1e-14, n=N)
    n = min(N, uc.N) + 1
    np.testing.assert_allclose(T[0, :, :n], uc.S[:, :n], atol=2e-15)
    np.testing.assert_allclose(T[1, :, :n], uc.Dd[:, :n], atol=2e-15)
    np.testing.assert_allclose(al[:, None] * T[2, :, :n], uc.Dd2[:, :n], atol=2e-15)
    k = np.arange(N)
    for p in range(4):
        diff = np.abs(al[2:, None] * T[p + 1, 2:, :-1] - np.sqrt(k + 1.0) * T[p, 2:, 1:])
        assert np.all(diff <= 2e-15 * np.sqrt(k + 1.0)), diff.max()   # quadrature noise × √n


def test_zero_gates_and_single_neuron():
    """Zero gates (SiLU(0)=0: the neuron is off but its gradient in g is not zero) and m = 1."""
    T = teacher("relu_gate")
    S = SwiGLUStudent(D, 3)
    G = np.zeros((3, D)); G[1, :2] = [0.2, 0.1]
    V = np.random.default_rng(0).normal(0, 0.4, (3, D))
    p = SwiGLUParams([0.5, -1.0, 0.3], G, V, 0.1)
    g = popdyn.population_grad(S, p, T)
    assert np.all(g.V[[0, 2]] == 0.0)                       # a_j E[r σ(0) x] = 0
    u = np.random.default_rng(1).standard_normal(g.flat().size); u /= np.linalg.norm(u)
    h = 1e-3
    f = lambda t: popdyn.population_loss(S, SwiGLUParams.from_flat(p.flat() + t * u, 3, D), T)
    fd = (-f(2 * h) + 8 * f(h) - 8 * f(-h) + f(-2 * h)) / (12 * h)
    assert abs(fd - g.flat() @ u) < 1e-10
    S1 = SwiGLUStudent(D, 1)
    p1 = S1.init(0, 0.5, T)
    assert np.isfinite(popdyn.population_loss(S1, p1, T))
    assert popdyn.agop(S1, p1).shape == (D, D)
