"""The tiled evaluation of the fused kernel and the kept scratch of the public loss_and_grad.

* ``popdyn.objective.loss_and_grad`` (relu / leaky-relu students against PL-network and
  additive-link teachers) evaluates through :func:`popdyn._kernels.fused.pl_loss_grad_cached`
  with its scratch kept between calls: the same bits as the engine's moments and assembly
  (``family.loss_and_grad``, unchanged code), on every call.
* Above :data:`popdyn._kernels.fused.TILE` units the step is assembled tile by tile
  (:func:`popdyn._kernels.fused._loss_grad_tiled`): against the independent 30-digit mpmath
  references of data/refs/engine_refs.json with a tile forced down to 1 and 2 units (the
  references are at m = 3, 4), and against the whole-matrix path to rounding (hypothesis
  states with degenerate geometry, every tile size; m = 700 with tile 256).
* Training with tiled steps: FusedGD and Armijo trajectories equal the whole-matrix ones to
  rounding, and the diagnostics at a snapshot (no step moments then) are recomputed.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popdyn
from popdyn._kernels import fused as fk
from popdyn._moments import teacher_tables
from popdyn.diagnostics import recorder
from popdyn.dynamics import _Fused
from popdyn.objective import loss_and_grad
from popdyn.threads import kernel_blas

from _cases import build, load_cases, outputs


def _covered(case):
    student, _, teacher = build(case)
    return _Fused.make(student, teacher) is not None


CASES = [c for c in load_cases()
         if c.get("inputs", c)["activation"] in ("relu", "leaky_relu") and _covered(c)]


def _engine(student, params, teacher):
    """The engine's (L, ∇L): family.loss_and_grad on moments(need="grad")."""
    return student.family.loss_and_grad(params, teacher, tol=1e-10)


def _bytes(L, g):
    return (np.float64(L).tobytes(),) + tuple(np.asarray(getattr(g, f), dtype=float).tobytes()
                                              for f in ("a", "W", "b", "c"))


def _problem(seed, d, m, act="relu", bias=True, teacher="net", scale=0.5, intercept=True):
    U = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0][:2]
    if teacher == "net":
        t = popdyn.Teacher.network("relu", [1.0, -0.7], 1.3 * U, bias=[0.2, -0.4])
    else:
        t = popdyn.Teacher.additive("mixture(0.6*relu, 0.4*sin)", U)
    s = popdyn.Student(d, m, act, negative_slope=0.1, bias=bias, intercept=intercept)
    p = s.init(seed, scale, t)
    return s, p.replace(c=0.2 if intercept else 0.0), t


# ----------------------------------------------------------------- public loss_and_grad bits
@pytest.mark.parametrize("seed,d,m,act,bias,teacher", [
    (0, 5, 7, "relu", True, "net"), (1, 8, 33, "leaky_relu", True, "add"),
    (2, 6, 64, "relu", False, "add"), (3, 10, 130, "relu", True, "net"),
    (4, 4, 300, "leaky_relu", True, "add")])
def test_public_loss_and_grad_same_bits_as_engine_on_every_call(seed, d, m, act, bias, teacher):
    s, p, t = _problem(seed, d, m, act, bias, teacher)
    want = _bytes(*_engine(s, p, t))
    first = _bytes(*loss_and_grad(s, p, t))
    assert first == want
    # a call at another shape in between (another kept workspace), then the same state again
    s2, p2, t2 = _problem(seed + 7, d, m + 3, act, bias, teacher)
    assert _bytes(*loss_and_grad(s2, p2, t2)) == _bytes(*_engine(s2, p2, t2))
    for _ in range(2):
        assert _bytes(*loss_and_grad(s, p, t)) == want


@pytest.mark.parametrize("case", CASES[::3])
def test_public_loss_and_grad_same_bits_as_engine_on_references(case):
    s, p, t = build(case)
    assert _bytes(*loss_and_grad(s, p, t)) == _bytes(*_engine(s, p, t))


def test_public_loss_and_grad_non_finite_state_takes_the_engine_path():
    s, p, t = _problem(0, 4, 5)
    W = p.W.copy()
    W[1, 2] = np.nan
    q = p.replace(W=W)
    L, g = loss_and_grad(s, q, t, check=False)
    L0, g0 = _engine(s, q, t)
    assert _bytes(L, g) == _bytes(L0, g0)


# ------------------------------------------------------------------------------ tiled path
def _args(s, p, t):
    return (float(s.act.p), float(s.act.q), float(s.s), p.a, p.W, p.b, float(p.c),
            bool(s.bias), bool(s.intercept)) + tuple(teacher_tables(t))


def _tiled(s, p, t, tile):
    """The fused kernel called as the library calls it: BLAS on one thread from 128 units on
    (popdyn.threads.kernel_blas; a multi-threaded BLAS gives other bits)."""
    m, d = p.W.shape
    g = [np.empty(m), np.empty((m, d)), np.empty(m)]
    with kernel_blas(m):
        L, gc, C, B, mu0, Ct = fk.pl_loss_grad_values(*_args(s, p, t), *g, tile=tile)
    assert (C is None and B is None) == (0 < tile < m)
    return L, popdyn.Params(g[0], g[1], g[2], float(gc)), mu0, Ct


def _close(L1, g1, L0, g0, rtol):
    """|ΔL| ≤ rtol·(|L| + E[y²]-scale) and per block max|Δ| ≤ rtol·max|block|."""
    assert abs(L1 - L0) <= rtol * max(abs(L0), 1.0)
    for f in ("a", "W", "b"):
        x, y = np.asarray(getattr(g1, f)), np.asarray(getattr(g0, f))
        assert np.max(np.abs(x - y), initial=0.0) <= rtol * max(np.max(np.abs(y), initial=0.0),
                                                                1e-300), f
    assert abs(g1.c - g0.c) <= rtol * max(abs(g0.c), 1.0)


@pytest.mark.parametrize("tile", [1, 2])
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_tiled_against_mpmath_references(case, tile):
    student, params, teacher = build(case)
    L, ga, gW, gb, gc, _, _ = outputs(case)
    got_L, g, _, _ = _tiled(student, params, teacher, tile)
    scale = teacher.second_moment + params.c ** 2
    assert abs(got_L - L) <= 1e-12 * abs(L) + 1e-14 * max(scale, 1.0)
    gscale = (np.sqrt(teacher.second_moment) * (1 + np.abs(params.a).sum())
              * (1 + np.abs(params.W).max()))
    for name, got, want in (("a", g.a, ga), ("W", g.W, gW), ("b", g.b, gb), ("c", g.c, gc)):
        err = np.abs(np.asarray(got) - want)
        assert np.all(err <= 1e-12 * np.abs(want) + 1e-14 * max(gscale, 1.0)), name


def _state(seed, m, d, scale, degenerate):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(m) * scale
    W = rng.standard_normal((m, d)) * scale / np.sqrt(d)
    b = rng.standard_normal(m) * scale
    if degenerate:
        W[0] = 0.0                      # constant neuron (α = 0)
        W[1] = W[2]                     # duplicated direction (ρ = 1), other bias
        W[3] = -2.0 * W[2]              # antiparallel
        b[4] = 40.0 * np.linalg.norm(W[4])   # a neuron deep in its tail (h = 40)
        W[5, :] = 0.0
        W[5, 0] = 1.0                   # exactly on a teacher axis
        W[m - 1] = W[1]                 # ρ = 1 across blocks
    return a, W, b


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 16), st.integers(1, 12), st.sampled_from([0.01, 0.3, 1.5]),
       st.booleans(), st.sampled_from(["relu", "leaky_relu"]), st.booleans(),
       st.sampled_from(["net", "add"]))
def test_tiled_equals_whole_matrix_path_to_rounding(seed, tile, scale, degenerate, act, bias,
                                                    teacher):
    """Any tile, degenerate geometry across blocks, biased (pair lists) and bias-free
    (arc-cosine forms) students: the whole-matrix path to 1e-13 of each block's size."""
    d, m = 6, 13
    U = np.eye(d)
    t = (popdyn.Teacher.network("relu", [1.0, -0.7], 1.3 * U[:2], bias=[0.2, -0.4])
         if teacher == "net" else popdyn.Teacher.additive("mixture(0.6*relu, 0.4*sin)", U[:2]))
    s = popdyn.Student(d, m, act, negative_slope=0.1, bias=bias, intercept=True)
    a, W, b = _state(seed, m, d, scale, degenerate)
    p = popdyn.Params(a, W, b if bias else np.zeros(m), 0.37)
    L0, g0 = _engine(s, p, t)
    L1, g1, mu0, Ct = _tiled(s, p, t, tile)
    _close(L1, g1, L0, g0, 1e-13)
    # the first and cross moments are the whole path's (the same kernels on the same inputs)
    M = popdyn._moments.moments(s, p, t, need="values")
    assert mu0.tobytes() == M.mu0.tobytes() and Ct.tobytes() == M.Ct.tobytes()


@pytest.mark.parametrize("bias", [True, False])
def test_tiled_at_m700_tile256_against_whole_matrix(bias):
    s, p, t = _problem(11, 16, 700, bias=bias, scale=0.6)
    L0, g0 = _engine(s, p, t)
    L1, g1, _, _ = _tiled(s, p, t, 256)
    _close(L1, g1, L0, g0, 1e-13)
    # below the tile the kept-scratch path is the whole-matrix path, bit for bit
    L2, g2, _, _ = _tiled(s, p, t, 700)
    assert _bytes(L2, g2) == _bytes(L0, g0)


def test_public_loss_and_grad_tiles_above_TILE(monkeypatch):
    s, p, t = _problem(5, 6, 40)
    L0, g0 = _engine(s, p, t)
    monkeypatch.setattr(fk, "TILE", 16)
    assert fk.tile_for(40) == 16 and fk.tile_for(16) == 0
    L1, g1 = loss_and_grad(s, p, t)
    _close(L1, g1, L0, g0, 1e-13)
    assert _bytes(*loss_and_grad(s, p, t)) == _bytes(L1, g1)       # deterministic
    L2, g2, _, _ = _tiled(s, p, t, 16)
    assert _bytes(L2, g2) == _bytes(L1, g1)


# --------------------------------------------------------------------------- tiled training
@pytest.mark.parametrize("method", ["gd", "armijo"])
def test_tiled_training_equals_whole_matrix_to_rounding(method, monkeypatch):
    s, p, t = _problem(2, 5, 24, scale=0.4)
    rec = recorder()
    kw = dict(method=method, lr=0.05, max_updates=12, schedule=popdyn.Schedule(every=5, early=()),
              recorder=rec)
    whole = popdyn.train(s, p, t, **kw)
    monkeypatch.setattr(fk, "TILE", 7)
    tiled = popdyn.train(s, p, t, **kw)
    assert tiled.status == whole.status and np.array_equal(tiled.n, whole.n)
    np.testing.assert_allclose(tiled.loss, whole.loss, rtol=1e-12, atol=0)
    for k in ("a", "W", "b"):
        np.testing.assert_allclose(tiled.snapshots[k], whole.snapshots[k], rtol=0,
                                   atol=1e-12 * np.max(np.abs(whole.snapshots[k])))
    # the diagnostics at the snapshots (recomputed from the state: no m×m step moments)
    for r0, r1 in zip(whole.records, tiled.records):
        assert r0["n"] == r1["n"]
        assert r1["normalized_loss"] == pytest.approx(r0["normalized_loss"], rel=1e-12)
        np.testing.assert_allclose(r1["agop_top"], r0["agop_top"], rtol=1e-9,
                                   atol=1e-12 * max(r0["agop_top"]))


def test_tiled_fused_gd_keeps_no_step_moments(monkeypatch):
    s, p, t = _problem(3, 5, 20)
    monkeypatch.setattr(fk, "TILE", 8)
    fz = _Fused.make(s, t)
    assert fz.tile == 8
    fz.evaluate(p)
    assert fz.values is None and fz.moments() is None
    monkeypatch.setattr(fk, "TILE", 512)
    fz.evaluate(p)
    assert fz.tile == 0 and fz.moments().C.shape == (20, 20)
