"""Gated / multi-index teachers (popdyn.teachers.multi_index, popdyn.teachers.gated): moments, API, ordinary students, errors."""
import mpmath
import numpy as np
import pytest

import popdyn
from popdyn import Student, Teacher
from popdyn.teachers import GATES

D = 5
Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((D, D)))
U = Q[:2]


@pytest.mark.parametrize("gate", GATES)
def test_mean_variance_and_evaluation(gate):
    T = Teacher.gated(gate, U)
    ctx = mpmath.MPContext(); ctx.dps = 20
    F = {"id": lambda s: s, "gelu": lambda s: s * ctx.ncdf(s), "tanh": ctx.tanh,
         "relu": lambda s: max(s, 0), "silu": lambda s: s / (1 + ctx.exp(-s)),
         "h2": lambda s: (s * s - 1) / ctx.sqrt(2)}
    if gate == "rotation":
        e2 = 1.0
    else:
        e2 = float(ctx.quad(lambda s: F[gate](s) ** 2 * ctx.npdf(s), [-ctx.inf, 0, ctx.inf]))
    assert T.mean == 0.0
    assert T.variance == pytest.approx(e2, rel=1e-13)
    X = np.random.default_rng(1).standard_normal((7, D))
    s, t = X @ U[0], X @ U[1]
    want = {"id": s * t, "gelu": None, "tanh": np.tanh(s) * t, "relu": np.maximum(s, 0) * t,
            "silu": s / (1 + np.exp(-s)) * t, "h2": (s * s - 1) / np.sqrt(2) * t,
            "rotation": 0.5 * (s * s - t * t)}[gate]
    if want is not None:
        np.testing.assert_allclose(T(X), want, rtol=1e-14)
    np.testing.assert_allclose(T.subspace, U)
    Tn = T.normalized()
    assert Tn.variance == pytest.approx(1.0, rel=1e-12)
    assert T.describe()["function"] == f"gated:{gate}"


def test_multi_index_api_equivalences():
    st = Teacher.multi_index({(1, 1): 1.0}, U)
    arr = np.zeros((2, 2)); arr[1, 1] = 1.0
    st2 = Teacher.multi_index(arr, U)
    gated = Teacher.gated("id", U)
    S = Student(D, 4, activation="relu")
    p = S.init(0, 0.7, gated)
    L = [popdyn.population_loss(S, p, T) for T in (st, st2, gated)]
    assert L[0] == L[1] == pytest.approx(L[2], rel=1e-15)
    # a rank-1 multi-index tensor reproduces the additive h3 teacher
    h3 = Teacher.multi_index({(3,): 1.0}, U[:1])
    add = Teacher.additive("h3", U[:1])
    X = np.random.default_rng(2).standard_normal((5, D))
    np.testing.assert_allclose(h3(X), add(X), rtol=1e-13)
    for act in ("relu", "silu"):
        S = Student(D, 3, activation=act)
        p = S.init(1, 0.9, add)
        La, ga = popdyn.loss_and_grad(S, p, add)
        Lm, gm = popdyn.loss_and_grad(S, p, h3)
        assert Lm == pytest.approx(La, rel=1e-11)
        np.testing.assert_allclose(gm.flat(), ga.flat(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("act", ["relu", "leaky_relu", "tanh"])
def test_ordinary_students_gradient(gate, act):
    T = Teacher.gated(gate, U)
    S = Student(D, 3, activation=act)
    p = S.init(4, 0.8, T)
    g = popdyn.population_grad(S, p, T).flat()
    u = np.random.default_rng(5).standard_normal(g.size); u /= np.linalg.norm(u)
    h = 1e-3
    f = lambda t: popdyn.population_loss(S, popdyn.Params.from_flat(p.flat() + t * u, 3, D), T)
    fd = (-f(2 * h) + 8 * f(h) - 8 * f(-h) + f(-2 * h)) / (12 * h)
    assert abs(fd - g @ u) <= 1e-8 * max(1.0, np.linalg.norm(g))


def test_ordinary_monte_carlo_and_refit():
    T = Teacher.gated("tanh", U)
    S = Student(D, 6, activation="relu")
    p = S.init(2, 1.0, T)
    X = np.random.default_rng(9).standard_normal((200_000, D))
    r2 = (S(p, X) - T(X)) ** 2
    z = (0.5 * r2.mean() - popdyn.population_loss(S, p, T)) / (0.5 * r2.std() / np.sqrt(len(X)))
    assert abs(z) < 5, z
    r = popdyn.refit_risk(S, p, T)
    assert 0 <= r.lower <= r.risk <= T.variance * (1 + 1e-12)
    rp = popdyn.refit_risk(S, p, T, "projected")
    assert 0 <= rp.risk <= T.variance * (1 + 1e-12)
    tr = popdyn.train(S, p, T, max_updates=5)
    assert tr.loss[-1] <= tr.loss[0]


def test_bad_input():
    with pytest.raises(ValueError, match=r"`gate` must be one of \['gelu', 'h2', 'id', 'relu', "
                                         r"'rotation', 'silu', 'tanh'\]"):
        Teacher.gated("sigmoid", U)
    with pytest.raises(ValueError, match="orthonormal"):
        Teacher.gated("id", 2 * U)
    with pytest.raises(ValueError, match=r"`U` must have shape \(2, any\)"):
        Teacher.gated("id", Q[:3])
    with pytest.raises(ValueError, match="`U` must be finite"):
        Teacher.gated("id", np.full((2, D), np.nan))
    with pytest.raises(ValueError, match="2 rows"):
        Teacher.multi_index({(1, 1, 0): 1.0}, U)
    with pytest.raises(ValueError, match="non-negative"):
        Teacher.multi_index({(1, -1): 1.0}, U)
    with pytest.raises(ValueError, match="`tail2`"):
        Teacher.multi_index({(1, 1): 1.0}, U, tail2=-1.0)
