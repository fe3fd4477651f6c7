"""The skip student family: f(x) = s Σ a_j σ(w_j·x + b_j) + v·x + c.

References: data/refs/skip_refs.json (mpmath nested quadrature at 35 digits, inputs as float64
hex; data/_precompute/skip_refs.py) for the loss and ∂L/∂v; finite differences of the exact
loss for every gradient entry (hypothesis); v = 0 equals the plain student bit for bit.
"""
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popdyn

REFS = os.path.join(os.path.dirname(__file__), "..", "..", "data", "refs", "skip_refs.json")


def _h(x):
    return [float.fromhex(y) for y in x] if isinstance(x, list) else float.fromhex(x)


@pytest.mark.parametrize("i", [0, 1])
def test_loss_and_grad_v_against_mpmath(i):
    with open(REFS) as fh:
        case = json.load(fh)["cases"][i]
    inp = case["inputs"]
    act = inp["act"]
    w, v, u = (np.array(_h(inp[k])) for k in ("w", "v", "u"))
    S = popdyn.Student(3, 1, activation=act, skip=True)
    T = popdyn.Teacher.additive("h2", u[None, :], np.array([_h(inp["kappa"])]))
    p = popdyn.Params([_h(inp["a"])], w[None, :], [_h(inp["b"])], _h(inp["c"]), v)
    L, g = popdyn.loss_and_grad(S, p, T)
    tol = 1e-12 if act == "relu" else 1e-10
    Lref = float(case["loss"])
    assert abs(L - Lref) <= tol * abs(Lref)
    gref = np.array([float(x) for x in case["grad_v"]])
    assert np.all(np.abs(g.v - gref) <= tol * np.max(np.abs(gref)))


def _state(seed, act, d=4, m=3):
    rng = np.random.default_rng(seed)
    S = popdyn.Student(d, m, activation=act, skip=True)
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    T = popdyn.Teacher.network("relu", np.array([1.0, -0.6]), U, np.array([0.2, -0.1]))
    p = S.init(seed, 0.7, T).replace(v=0.5 * rng.standard_normal(d))
    return S, p, T


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), act=st.sampled_from(["relu", "leaky_relu", "silu", "tanh"]))
def test_gradient_is_the_derivative_of_the_loss(seed, act):
    S, p, T = _state(seed, act)
    L, g = popdyn.loss_and_grad(S, p, T)
    e = 1e-6
    for f in ("a", "W", "b", "v"):
        x, gx = getattr(p, f), getattr(g, f)
        for idx in list(np.ndindex(x.shape))[:4]:
            hi, lo = x.copy(), x.copy()
            hi[idx] += e
            lo[idx] -= e
            fd = (popdyn.population_loss(S, p.replace(**{f: hi}), T)
                  - popdyn.population_loss(S, p.replace(**{f: lo}), T)) / (2 * e)
            assert abs(fd - gx[idx]) <= 1e-6 * (1 + abs(gx[idx])), (f, idx)


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10_000), act=st.sampled_from(["relu", "silu"]))
def test_v_zero_is_the_plain_student(seed, act):
    S, p, T = _state(seed, act)
    p0 = p.replace(v=np.zeros(S.d))
    plain = S.replace(skip=False)
    assert popdyn.population_loss(S, p0, T) == popdyn.population_loss(plain, p0, T)
    g, g0 = popdyn.population_grad(S, p0, T), popdyn.population_grad(plain, p0, T)
    for f in ("a", "W", "b"):
        np.testing.assert_array_equal(getattr(g, f), getattr(g0, f))
    np.testing.assert_allclose(popdyn.agop(S, p0), popdyn.agop(plain, p0), rtol=0, atol=0)


def test_agop_against_monte_carlo():
    S, p, T = _state(3, "relu")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200_000, S.d))
    Z = X @ p.W.T + p.b
    G = (Z > 0) * p.a * S.s
    grads = G @ p.W + p.v
    M = grads.T @ grads / X.shape[0]
    A = popdyn.agop(S, p)
    se = np.std(np.einsum("ni,nj->nij", grads, grads), axis=0) / np.sqrt(X.shape[0])
    assert np.all(np.abs(A - M) <= 5 * se + 1e-12)


def test_training_learns_a_linear_teacher_part():
    """A teacher with a linear part (relu link: E[y x] ≠ 0) is fitted faster with the skip."""
    d = 4
    T = popdyn.Teacher.additive("relu", np.eye(d)[:1])
    S = popdyn.Student(d, 3, activation="relu", skip=True)
    p = S.init(0, 0.1, T)
    tr = popdyn.train(S, p, T, method="gd", lr=0.1, max_updates=200)
    assert tr.status == "horizon" and np.all(np.isfinite(tr.loss))
    assert tr.loss[-1] < 0.5 * tr.loss[0]
    assert tr.final.v[0] > 0.2 and "v" in tr.snapshots
    assert np.all(np.diff(tr.loss) <= 1e-12)          # GD at a small step: monotone
    r = popdyn.refit_risk(S, tr.final, T)
    assert 0 <= r.risk <= 2 * tr.loss[-1] + 1e-12      # refitting the head cannot do worse


def test_certify_loss_bracket():
    """relu skip student against a relu network: a rigorous bracket (tests/certify/
    test_certify_skip.py checks it against mpmath); against a gated teacher a numerical one."""
    import certify

    S, p, T = _state(1, "relu")
    res = certify.loss(S, p, T)
    assert res.provenance == "rigorous"
    assert res.loss.contains(popdyn.population_loss(S, p, T))
    G = popdyn.Teacher.gated("relu", T.U)
    res = certify.loss(S, p, G)
    assert res.provenance == "numerical"
    assert res.loss.contains(popdyn.population_loss(S, p, G))


def test_bad_skip_argument():
    with pytest.raises(TypeError, match="skip"):
        popdyn.Student(3, 2, skip=1)
    S = popdyn.Student(3, 2)
    p = S.init(0, 0.5)
    with pytest.raises(ValueError, match="skip=False"):
        S.check(p.replace(v=np.ones(3)))


SKIP_CFG = """
name = "skip"
[teacher]
link = "relu"
rank = 1
[student]
d = 4
m = 3
activation = "{act}"
{skip}
[init]
scale = 0.1
seeds = [0]
[train]
method = "gd"
lr = 0.1
max_updates = 30
[schedule]
every = 10
[diagnostics]
certify = false
"""


@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_config_skip_trains_and_records_v(tmp_path, act):
    """``[student] skip = true`` builds the skip student; the sweep stores v at every snapshot,
    and the stored trajectory is the one of popdyn.train on the same student (same numbers)."""
    from popdyn import config as C
    from popdyn.experiments import Store, sweep

    cfg = C.loads(SKIP_CFG.format(act=act, skip="skip = true"))
    (run,) = C.expand(cfg)
    assert run["student"]["skip"] is True
    res = sweep(cfg, tmp_path / "s", workers=1, progress=False)
    (key,) = res["keys"]
    arr = Store(tmp_path / "s").arrays(key)
    assert arr["v"].shape == (4, 4) and np.all(arr["v"][0] == 0.0)
    S = popdyn.Student(4, 3, activation=act, skip=True)
    T = popdyn.Teacher.additive("relu", np.eye(4)[:1])
    tr = popdyn.train(S, S.init(0, 0.1, T), T, method="gd", lr=0.1, max_updates=30)
    np.testing.assert_array_equal(arr["v"][-1], tr.final.v)
    np.testing.assert_array_equal(arr["loss"], tr.loss)
    assert arr["v"][-1][0] > 0.05                  # the linear part of relu is being learned


def test_config_skip_false_keeps_the_run_key():
    from popdyn import config as C
    from popdyn.experiments.runner import spec_key

    plain = C.expand(C.loads(SKIP_CFG.format(act="relu", skip="")))
    off = C.expand(C.loads(SKIP_CFG.format(act="relu", skip="skip = false")))
    on = C.expand(C.loads(SKIP_CFG.format(act="relu", skip="skip = true")))
    assert "skip" not in plain[0]["student"] and "skip" not in off[0]["student"]
    assert spec_key(plain[0]) == spec_key(off[0]) != spec_key(on[0])


@pytest.mark.parametrize("skip, match", [("skip = 1", "skip must be true or false"),
                                         ('skip = "yes"', "skip must be true or false"),
                                         ("skips = true", "Did you mean 'skip'")])
def test_config_bad_skip(skip, match):
    from popdyn import config as C

    with pytest.raises(C.ConfigError, match=match):
        C.expand(C.loads(SKIP_CFG.format(act="relu", skip=skip)))


def test_config_skip_swiglu_refused():
    from popdyn import config as C

    text = SKIP_CFG.format(act="swiglu", skip="skip = true")
    with pytest.raises(C.ConfigError, match="SwiGLU student has no linear skip"):
        C.expand(C.loads(text))


def _mp_skip_increment(S, p, T_y_x):
    """mpmath (30 digits) L(v) − L(0) = s Σ_j a_j E[σ_j v·x] + ½|v|² − E[y v·x], with
    E[σ(w·x + b) v·x] = (θ·v) E[σ(|w| z + b) z] by one quadrature split at the kink, and
    E[y v·x] given (``T_y_x``, an mpf)."""
    import mpmath as mp

    mp.mp.dps = 30
    act = {"relu": lambda t: t if t > 0 else mp.mpf(0),
           "silu": lambda t: t / (1 + mp.exp(-t))}[S.activation]
    v = [mp.mpf(float(x)) for x in p.v]
    tot = mp.mpf(0)
    for j in range(S.m):
        w = [mp.mpf(float(x)) for x in p.W[j]]
        al = mp.sqrt(mp.fsum(x * x for x in w))
        tv = mp.fsum(x * y for x, y in zip(w, v)) / al
        b = mp.mpf(float(p.b[j]))
        E = mp.quad(lambda z: act(al * z + b) * z * mp.npdf(z), [-mp.inf, -b / al, mp.inf])
        tot += mp.mpf(float(p.a[j])) * tv * E
    return S.s * tot + mp.fsum(x * x for x in v) / 2 - T_y_x


@pytest.mark.parametrize("kind", ["gated:relu", "gated:gelu", "gated:tanh", "multi_index"])
def test_multi_index_teachers(kind):
    """Skip × multi-index: τ = E[y x] is the teacher's linear Hermite part (SK-4).  The skip
    terms L(v) − L(0) against mpmath (E[F(Z)] by quadrature; the polynomial tensor exactly),
    ∂L/∂v and ∂L/∂W against central differences."""
    import mpmath as mp

    mp.mp.dps = 30
    d = 4
    rng = np.random.default_rng(7)
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    v = np.array([0.3, -0.2, 0.1, 0.4])
    kappa = 1.3
    u = [[mp.mpf(float(x)) for x in row] for row in U]
    uv = [mp.fsum(a * mp.mpf(float(b)) for a, b in zip(row, v)) for row in u]
    if kind == "multi_index":
        T = popdyn.Teacher.multi_index({(1, 1): 1.0, (1, 0): 0.5, (0, 1): -0.3, (3, 0): 0.2},
                                       U, kappa)
        Eyv = kappa * (mp.mpf(0.5) * uv[0] + mp.mpf(-0.3) * uv[1])
    else:
        gate = kind.split(":")[1]
        T = popdyn.Teacher.gated(gate, U, kappa)
        F = {"relu": lambda z: max(z, 0), "gelu": lambda z: z * mp.ncdf(z),
             "tanh": mp.tanh}[gate]
        EF = mp.quad(lambda z: F(z) * mp.npdf(z), [-mp.inf, 0, mp.inf])
        Eyv = kappa * EF * uv[1]                    # E[F(s) t v·x] = κ E[F] (u_2·v)
    for act in ("relu", "silu") if kind in ("gated:relu", "multi_index") else ("relu",):
        S = popdyn.Student(d, 3, activation=act, skip=True)
        p = S.init(3, 0.6, T).replace(v=v)
        inc = popdyn.population_loss(S, p, T) - popdyn.population_loss(S, p.replace(v=0 * v), T)
        ref = float(_mp_skip_increment(S, p, Eyv))
        assert abs(inc - ref) <= 1e-12 * (1 + abs(ref)), (act, inc, ref)
        g = popdyn.population_grad(S, p, T)
        e = 1e-6
        for f, idx in (("v", (1,)), ("v", (3,)), ("W", (0, 1)), ("a", (2,))):
            x = getattr(p, f)
            hi, lo = x.copy(), x.copy()
            hi[idx] += e
            lo[idx] -= e
            fd = (popdyn.population_loss(S, p.replace(**{f: hi}), T)
                  - popdyn.population_loss(S, p.replace(**{f: lo}), T)) / (2 * e)
            assert abs(fd - getattr(g, f)[idx]) <= 1e-6 * (1 + abs(fd)), (act, f, idx)


def test_multi_index_tail_at_degree_zero_refused():
    T = popdyn.Teacher.multi_index({(0, 0): 1.0}, np.eye(3)[:2], tail2=0.1)
    S = popdyn.Student(3, 2, skip=True)
    with pytest.raises(ValueError, match="linear Hermite part"):
        popdyn.population_loss(S, S.init(0, 0.5).replace(v=np.ones(3)), T)


def test_far_threshold_unit_gradient_within_rtol_without_warning():
    """A relu unit active with probability ~1e−54 (w = −0.069, b = −1.07, kink at x = −15.5) with
    a skip, d = m = 1, against a relu network: ∂L/∂a is 3.9e−56, computed to rounding, and the
    contract neither warns nor misses.  Reference: on x < kink every term is a polynomial times
    φ, so ∂L/∂a = Σ_n A_n ∫_{−∞}^{k} xⁿφ (I₀ = Φ(k), I₁ = −φ(k), I_n = −k^{n−1}φ(k) + (n−1)I_{n−2}),
    at 40 digits."""
    import mpmath as mp

    S = popdyn.Student(1, 1, "relu", bias=True, skip=True, intercept=False)
    a, w, b, v = 0.30527781107155495, -0.06897242963427268, -1.0712309043624957, 0.18807752803419474
    p = popdyn.Params([a], [[w]], [b], 0.0, [v])
    ta, tu = [-1.1750434429900907, -0.3769511857110767], [0.5184318817997823, -1.9154739737101492]
    T = popdyn.Teacher.network("relu", ta, [[tu[0]], [tu[1]]])
    L, g, info = popdyn.loss_and_grad(S, p, T, full_output=True)      # warnings are errors here
    assert info["grad"]["within_rtol"]
    with mp.workdps(40):
        a_, w_, b_, v_ = (mp.mpf(x) for x in (a, w, b, v))
        k = -b_ / w_
        I = [mp.ncdf(k), -mp.npdf(k)]
        for n in range(2, 3):
            I.append(-k ** (n - 1) * mp.npdf(k) + (n - 1) * I[n - 2])
        # x < k < 0: f − y = a(wx + b) + (v − ta₂tu₂)x (the unit with tu₁ > 0 is off)
        c1 = v_ - mp.mpf(ta[1]) * mp.mpf(tu[1])
        ref = (a_ * w_ + c1) * w_ * I[2] + ((a_ * w_ + c1) * b_ + a_ * b_ * w_) * I[1] + a_ * b_ ** 2 * I[0]
        assert abs(g.a[0] - ref) <= 1e-10 * abs(ref)
        assert abs(g.a[0] - ref) <= info["grad"]["entry_error"].a[0]       # the estimate bounds it
