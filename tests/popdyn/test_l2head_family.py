"""A family added from outside popdyn in one module (tests/popdyn/_l2head_family.py): a relu
student with the head penalty λ‖a‖², registered in one line.

It trains through :func:`popdyn.train` and through a configuration, never takes the fused
kernel (which evaluates the unpenalized ridge loss), and is refused by :mod:`certify` in one
line.  References: the loss and gradient against the closed-form relu moments (the arc-cosine
kernel E[relu(w·x) relu(u·x)] = |w||u|(sin θ + (π − θ) cos θ)/(2π)) evaluated in mpmath at 40
digits, the gradient by central finite differences of that closed form; the penalty against
λ‖a‖² added to the unpenalized (ridge) loss of the same state.
"""
import importlib
import sys

import mpmath as mp
import numpy as np
import pytest

import popdyn
from popdyn import dynamics, families, landscape

D, M, K = 3, 3, 2
LAM = 0.37


@pytest.fixture(scope="module")
def fam():
    """The test family's module, registered for this module's tests and removed after."""
    mod = importlib.import_module("_l2head_family")
    yield mod
    families.unregister("l2head")
    sys.modules.pop("_l2head_family", None)


def _state(seed=3):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=M)
    W = rng.normal(size=(M, D))
    v = rng.normal(size=K)
    U = rng.normal(size=(K, D))
    return a, W, v, U


def _mp_relu_kernel(w, u):
    """E[relu(w·x) relu(u·x)], x ~ N(0, I) (arc-cosine kernel of degree 1), in mpmath."""
    nw = mp.sqrt(mp.fsum(x * x for x in w))
    nu = mp.sqrt(mp.fsum(x * x for x in u))
    cos = mp.fsum(x * y for x, y in zip(w, u)) / (nw * nu)
    cos = max(min(cos, mp.mpf(1)), mp.mpf(-1))
    th = mp.acos(cos)
    return nw * nu * (mp.sin(th) + (mp.pi - th) * mp.cos(th)) / (2 * mp.pi)


def _mp_loss(a, W, v, U, lam):
    """½E[(Σ a_j relu(w_j·x) − Σ v_k relu(u_k·x))²] + λ‖a‖², all in mpmath."""
    ss = mp.fsum(a[i] * a[j] * _mp_relu_kernel(W[i], W[j]) for i in range(M) for j in range(M))
    st = mp.fsum(a[i] * v[k] * _mp_relu_kernel(W[i], U[k]) for i in range(M) for k in range(K))
    tt = mp.fsum(v[k] * v[l] * _mp_relu_kernel(U[k], U[l]) for k in range(K) for l in range(K))
    return (ss - 2 * st + tt) / 2 + lam * mp.fsum(x * x for x in a)


def test_registered_in_one_line_without_capabilities(fam):
    assert families.get("l2head") is fam.SPEC and "l2head" in families.names()
    S = fam.SPEC.student(D, M, activation="relu")
    assert isinstance(S.family, fam.L2HeadFamily) and S.family.spec.lam == fam.SPEC.lam
    for hook in ("fused_kernel", "finite_sample_loss", "ridge_units", "ridge_readout",
                 "ridge_loss"):
        assert families.capability(S.family, hook) is None, hook
    # the parent class has them: the hooks exist and would be inherited without the rule
    assert families.capability(popdyn.Student(D, M).family, "fused_kernel") is not None
    with pytest.raises(ValueError, match="finite-sample training is implemented"):
        popdyn.finite.empirical_loss(S, S.init(0, 0.5), np.zeros((4, D)), np.zeros(4))
    T = popdyn.Teacher.network("relu", [1.0], np.eye(D)[:1])
    with pytest.raises(ValueError, match="exact Hessian .* covers ridge and skip students"):
        landscape.loss_grad_hessian(S.replace(bias=False), S.init(0, 0.5), T)


def test_loss_and_grad_against_mpmath_closed_form(fam):
    a, W, v, U = _state()
    S = fam.L2HeadSpec(lam=LAM).student(D, M, activation="relu", bias=False, intercept=False)
    T = popdyn.Teacher.network("relu", v, U)
    p = popdyn.Params(a, W, np.zeros(M), 0.0)
    L, g = popdyn.loss_and_grad(S, p, T)
    mp.mp.dps = 40
    try:
        am = [mp.mpf(float(x)) for x in a]
        Wm = [[mp.mpf(float(x)) for x in row] for row in W]
        vm = [mp.mpf(float(x)) for x in v]
        Um = [[mp.mpf(float(x)) for x in row] for row in U]
        Lref = _mp_loss(am, Wm, vm, Um, mp.mpf(LAM))
        h = mp.mpf("1e-12")
        ga = []
        for i in range(M):
            ap, an = list(am), list(am)
            ap[i] += h
            an[i] -= h
            ga.append((_mp_loss(ap, Wm, vm, Um, LAM) - _mp_loss(an, Wm, vm, Um, LAM)) / (2 * h))
        gW = np.zeros((M, D))
        for i in range(M):
            for k in range(D):
                Wp = [list(r) for r in Wm]
                Wn = [list(r) for r in Wm]
                Wp[i][k] += h
                Wn[i][k] -= h
                gW[i, k] = float((_mp_loss(am, Wp, vm, Um, LAM)
                                  - _mp_loss(am, Wn, vm, Um, LAM)) / (2 * h))
        Lref, ga = float(Lref), np.array([float(x) for x in ga])
    finally:
        mp.mp.dps = 15
    assert abs(L - Lref) <= 1e-13 * abs(Lref)
    assert np.max(np.abs(g.a - ga)) <= 1e-12 * np.max(np.abs(ga))
    assert np.max(np.abs(g.W - gW)) <= 1e-12 * np.max(np.abs(gW))
    assert np.all(g.b == 0) and g.c == 0


def test_penalty_is_lam_norm_a_squared(fam):
    a, W, v, U = _state(5)
    T = popdyn.Teacher.network("relu", v, U)
    p = popdyn.Params(a, W, 0.3 * np.ones(M), 0.2)
    S = fam.L2HeadSpec(lam=LAM).student(D, M, activation="relu")
    R = popdyn.Student(D, M, activation="relu")          # the same state, unpenalized
    L, g = popdyn.loss_and_grad(S, p, T)
    L0, g0 = popdyn.loss_and_grad(R, p, T)
    pen = LAM * float(np.sum(a * a))
    assert abs((L - L0) - pen) <= 4 * np.finfo(float).eps * (abs(L0) + pen)
    assert np.array_equal(g.a, g0.a + 2 * LAM * a)
    assert np.array_equal(g.W, g0.W) and np.array_equal(g.b, g0.b) and g.c == g0.c


def test_trains_without_the_fused_kernel(fam, monkeypatch):
    a, W, v, U = _state(7)
    T = popdyn.Teacher.network("relu", v, U)
    S = fam.L2HeadSpec(lam=LAM).student(D, M, activation="relu")
    R = popdyn.Student(D, M, activation="relu")
    p = popdyn.Params(a, 0.5 * W, np.zeros(M), 0.0)
    assert dynamics._Fused.make(R, T) is not None       # the ridge student takes it here
    assert dynamics._Fused.make(S, T) is None

    def refuse(*args, **kw):
        raise AssertionError("the fused path was taken")

    monkeypatch.setattr(dynamics._Fused, "evaluate", refuse)
    monkeypatch.setattr(dynamics.FusedGD, "__init__", refuse)
    lr = 0.05
    tr = popdyn.train(S, p, T, method="gd", lr=lr, max_updates=1)
    g0 = popdyn.population_grad(R, p, T)
    # one step of the penalized gradient: a − h(∇_a L + 2λa), W − h∇_W L
    assert np.allclose(tr.final.a, a - lr * (g0.a + 2 * LAM * a), rtol=1e-14, atol=1e-15)
    assert np.allclose(tr.final.W, p.W - lr * g0.W, rtol=1e-14, atol=1e-15)
    L0 = popdyn.population_loss(R, p, T) + LAM * float(a @ a)
    assert tr.loss[0] == pytest.approx(L0, rel=1e-14)
    for method in ("gd", "armijo", "flow"):
        tr = popdyn.train(S, p, T, method=method, max_updates=40)
        assert tr.loss[-1] < tr.loss[0]
        q = tr.final
        assert tr.loss[-1] == pytest.approx(popdyn.population_loss(R, q, T)
                                            + LAM * float(q.a @ q.a), rel=1e-13)


CFG = """
[teacher]
link = "h2"
[student]
family = "l2head"
lam = 0.25
d = 3
m = 2
activation = "relu"
[init]
scale = 0.5
seeds = [1]
[train]
method = "gd"
max_updates = 30
"""


def test_trains_through_a_configuration(fam):
    from popdyn import config as C

    runs = C.expand(C.loads(CFG))
    assert len(runs) == 1
    S = C.make_student(runs[0]["student"])
    assert isinstance(S.family, fam.L2HeadFamily) and S.family.spec.lam == 0.25
    T = C.teacher_from_table(runs[0]["teacher"], S.d)
    p = S.init(1, 0.5, T)
    tr = popdyn.train(S, p, T, **C.train_kwargs(C.loads(CFG)))
    assert tr.status == "horizon" and tr.loss[-1] < tr.loss[0]
    R = popdyn.Student(3, 2, activation="relu")
    assert tr.loss[0] == pytest.approx(popdyn.population_loss(R, p, T)
                                       + 0.25 * float(p.a @ p.a), rel=1e-14)
    with pytest.raises(C.ConfigError, match=r"unknown key 'lamda'.*Did you mean 'lam'"):
        C.expand(C.loads(CFG.replace("lam = 0.25", "lamda = 0.25")))
    with pytest.raises(C.ConfigError, match=r"clock applies to SwiGLU students"):
        C.expand(C.loads(CFG.replace("lam = 0.25", 'clock = "standard"')))
    with pytest.raises(C.ConfigError, match=r"`lam` must be a real number >= 0"):
        C.expand(C.loads(CFG.replace("lam = 0.25", "lam = -1.0")))


def test_rates_of_fields_it_does_not_have_are_refused(fam):
    S = fam.SPEC.student(D, M, activation="relu")
    T = popdyn.Teacher.additive("h2", np.eye(D)[:1])
    p = S.init(0, 0.5, T)
    with pytest.raises(ValueError, match=r"`rates\['G'\]` sets a learning rate of field 'G'"):
        popdyn.train(S, p, T, rates={"G": 2.0}, max_updates=1)
    tr = popdyn.train(S, p, T, rates={"a": 0.0}, method="gd", max_updates=3)
    assert np.array_equal(tr.final.a, p.a)


def test_certify_refuses_it_in_one_line(fam):
    certify = pytest.importorskip("certify")
    from certify import CertificationError

    a, W, v, U = _state(9)
    T = popdyn.Teacher.network("relu", v, U)
    S = fam.SPEC.student(D, M, activation="relu")
    p = popdyn.Params(a, W, np.zeros(M), 0.0)
    for call in (lambda: certify.refit_risk(S, p, T),
                 lambda: certify.alignment(S, p, U[:1] / np.linalg.norm(U[0])),
                 lambda: certify.loss(S, p, T, grad=True)):
        with pytest.raises(CertificationError) as exc:
            call()
        msg = str(exc.value)
        assert "\n" not in msg and "l2-head relu-family" in msg
