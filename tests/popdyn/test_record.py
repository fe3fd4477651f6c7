"""Diagnostics recorded along a run (docs/design.md §4–5): the recorder for popdyn.train, diagnose,
series, at_update; and the plateau helpers added for the central paper's cohort rules."""
import importlib

import numpy as np
import pytest

import popdyn
from popdyn.diagnostics import (agop, alignment, at_update, checkpoints, diagnose, recorder,
                                refit_risk, series)


def _setup(m=6, bias=True):
    T = popdyn.Teacher.additive("h2", np.eye(4)[:2])
    S = popdyn.Student(d=4, m=m, bias=bias)
    return S, S.init(0, 0.3, T), T


def test_diagnose_agrees_with_the_single_functions():
    S, p, T = _setup()
    D = diagnose(S, p, T, kinds=("unrestricted", "same_budget", "bounded", "projected"),
                 budget=0.5, geometry=True)
    np.testing.assert_array_equal(D.agop, agop(S, p))
    al = alignment(agop(S, p), T.subspace)
    assert (D.alignment.a_top, D.alignment.a_min, D.alignment.a_mean, D.alignment.gap) == \
        (al.a_top, al.a_min, al.a_mean, al.gap)
    for kind, b in (("unrestricted", None), ("same_budget", None), ("bounded", 0.5), ("projected", 0.5)):
        r = refit_risk(S, p, T, kind, b)
        assert D.refits[kind].risk == pytest.approx(r.risk, rel=1e-14), kind
    rec = D.as_record()
    assert rec["refit_bounded_budget"] == 0.5
    assert len(rec["hist_subspace"]) == 18 and sum(rec["hist_subspace"]) == pytest.approx(1.0)
    assert "hist_plane" in rec


def test_recorder_stores_and_never_recomputes():
    S, p, T = _setup()
    calls = []
    rec = recorder(kinds=("unrestricted", "same_budget"), geometry=True)

    def counting(*args, **kw):
        calls.append(kw["n"])
        return rec(*args, **kw)

    tr = popdyn.train(S, p, T, method="gd", lr=0.2, max_updates=12,
                      schedule=popdyn.Schedule(every=5, early=(1,)), recorder=counting)
    assert calls == list(tr.snap_n)                     # once per snapshot
    assert len(tr.records) == len(tr)
    a_min = series(tr, "a_min")
    assert a_min.shape == (len(tr),) and np.all((0 <= a_min) & (a_min <= 1))
    np.testing.assert_allclose(series(tr, "normalized_loss"),
                               tr.normalized_loss[tr.snap_n], rtol=1e-14)
    # the stored values are exactly what diagnose gives on the stored snapshots
    for i in (0, len(tr) - 1):
        D = diagnose(S, tr.snapshot(i), T).as_record()
        assert tr.records[i]["a_min"] == D["a_min"]
        assert tr.records[i]["refit_same_budget"] == D["refit_same_budget"]
    assert series(tr, "refit_unrestricted").max() <= 1 + 1e-12
    # the current head is feasible for the same-budget refit, and the unrestricted refit is
    # at least as good: lower ≤ R_unrestricted ≤ R_same ≤ current normalized loss
    ell = series(tr, "normalized_loss")
    same, un = series(tr, "refit_same_budget"), series(tr, "refit_unrestricted")
    assert np.all(same <= ell + 1e-12) and np.all(un <= same + 1e-12)
    assert np.all(series(tr, "refit_same_budget_lower") <= same)
    i = at_update(tr, 7)
    assert tr.snap_n[i] == 5
    cp = checkpoints(tr, delta=1e-3)
    assert cp["index"]["init"] == 0 and cp["index"]["final"] == len(tr) - 1
    assert tr.snap_n[cp["index"]["plateau"]] <= cp["plateau"].end_n
    assert cp["record"]["init"] is tr.records[0]
    with pytest.raises(KeyError, match="recorded keys"):
        series(tr, "A_min")


def test_plateau_helpers_on_both_clocks():
    ell = np.array([1.0, 1.0002, 0.9995, 0.995, 0.9, 0.5])
    t = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 4.0])
    n = np.arange(6) * 10
    ps = importlib.import_module("popdyn.plateau")   # the module (popdyn.plateau is the function)
    std = ps.standard_plateaus(ell, n=n, t=t)
    assert std["delta=0.001"].end_n == 20 and std["delta=0.0001"].end_n == 0
    assert std["ratio=0.05"].end_n == 30 and std["ratio=0.01"].end_n == 30
    assert std["delta=0.001"].release_t == 2.0
    cohort = [popdyn.plateau(ell, delta=1e-3, n=n, t=t),
              popdyn.plateau(ell[[0, 1, 4, 5, 5, 5]], delta=1e-3, n=n, t=t)]
    assert ps.shared_plateau(cohort) == 10 == popdyn.shared_prefix(cohort)
    assert ps.shared_plateau(cohort, clock="t") == 0.5
    with pytest.raises(ValueError, match="`clock`"):
        ps.shared_plateau(cohort, clock="x")
    with pytest.raises(ValueError, match="flow-time"):
        ps.shared_plateau([popdyn.plateau(ell, delta=1e-3)], clock="t")
    with pytest.raises(ValueError, match="non-empty"):
        ps.shared_plateau([])
    for bad in ([], [1.0, np.inf]):
        with pytest.raises(ValueError, match="`losses`"):
            ps.standard_plateaus(bad)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(kinds=("unrestricted", "same_budgte")), ValueError, "Did you mean 'same_budget'"),
    (dict(kinds=("bounded",)), ValueError, "`budget` is required"),
    (dict(kinds=("bounded",), budget=0.0), ValueError, "`budget` must be > 0"),
    (dict(kinds=("unrestricted",), budget=1.0), ValueError, "`budget` is used only"),
    (dict(kinds=("unrestricted", "unrestricted")), ValueError, "duplicates"),
    (dict(kinds=5), TypeError, "`kinds`"),
    (dict(U=np.ones((2, 4))), ValueError, "`U` must have orthonormal rows"),
    (dict(geometry="yes"), TypeError, "`geometry`"),
    (dict(rcond=-1.0), ValueError, "`rcond`"),
])
def test_recorder_bad_input(kw, exc, match):
    with pytest.raises(exc, match=match):
        recorder(**kw)


def test_recorder_wrong_width_u():
    S, p, T = _setup()
    rec = recorder(U=np.eye(5)[:2])
    with pytest.raises(ValueError, match="`U` must have width d = 4"):
        rec(S, p, T, n=0, t=0.0, loss=0.5)


def test_series_and_at_update_bad_input():
    with pytest.raises(ValueError, match="no diagnostic records"):
        series([], "a_min")

    class _T:
        snap_n = np.array([3, 5])

    with pytest.raises(ValueError, match="no snapshot"):
        at_update(_T(), 1)
    with pytest.raises(ValueError, match="`n`"):
        at_update(_T(), -1)


# ------------------------------------------------------------------ fast paths of the recorder
# The recorder evaluates only the moments the diagnostics use and skips re-validating its
# own intermediate results; every stored number must stay bit-identical to the general path.

@pytest.mark.parametrize("link", ["silu", "silu_centered", "relu", "sin", "h2", "abs", "tanh",
                                  "damped_cubic:0.5", "h3+0.3h2", "gaussian_bump", "h1"])
@pytest.mark.parametrize("activation", ["relu", "leaky_relu"])
def test_value_moments_bit_identical(link, activation):
    from popdyn._moments import moments

    d, m = 6, 7
    T = popdyn.Teacher.additive(link, np.eye(d)[:2])
    S = popdyn.Student(d, m, activation=activation, bias=True)
    for seed, scale in ((0, 0.01), (1, 1.0), (2, 3.0)):
        p = S.init(seed, scale, T)
        if seed == 2:                 # degenerate rows: zero, duplicate, antiparallel, on an axis
            W = p.W.copy()
            W[0] = 0.0
            W[1] = W[2]
            W[3] = -W[4]
            W[5] = 2.0 * np.eye(d)[0]
            p = p.replace(W=W)
        full, fast = moments(S, p, T, need="grad"), moments(S, p, T, need="values")
        loss = moments(S, p, T, need="loss")
        for f in ("C", "B", "mu0", "Ct"):
            x, y, z = getattr(full, f), getattr(fast, f), getattr(loss, f)
            assert x.shape == y.shape and x.tobytes() == y.tobytes() == z.tobytes(), f
        assert fast.errCt is None and fast.Bt is None and loss.errCt is not None


def test_value_moments_delegates_other_pairings():
    from popdyn._moments import moments

    U = np.array([[1.0, 0, 0, 0], [0.6, 0.8, 0, 0]])
    cases = ((popdyn.Student(4, 5, activation="silu"), popdyn.Teacher.additive("h2", np.eye(4)[:2])),
             (popdyn.Student(4, 5), popdyn.Teacher.network("relu", [1.0, -0.5], U, [0.1, 0.0])))
    for S, T in cases:
        p = S.init(0, 0.5, T)
        full, fast = moments(S, p, T, grad=False), moments(S, p, T, need="values")
        for f in ("C", "B", "mu0", "Ct"):
            assert getattr(full, f).tobytes() == getattr(fast, f).tobytes(), f


def test_histogram_5_bit_identical_to_angle_histogram():
    from popdyn.diagnostics.geometry import _histogram_5, angle_histogram

    rng = np.random.default_rng(3)
    for trial in range(300):
        n = int(rng.integers(0, 40))
        ang = rng.uniform(0.0, 90.0, n)
        if n and trial % 3 == 0:        # bin edges, ties, both ends, undefined angles
            pick = rng.integers(0, n, size=max(1, n // 3))
            ang[pick] = rng.choice([0.0, 5.0, 45.0, 85.0, 90.0, np.nan], size=pick.size)
        w = rng.exponential(1.0, n)
        if n and trial % 4 == 0:
            w[rng.integers(0, n, size=max(1, n // 4))] = 0.0
        want = angle_histogram(ang, w)[0]
        got = _histogram_5(ang, w)
        assert want.shape == got.shape and want.tobytes() == got.tobytes()
    with pytest.raises(ValueError, match="angles"):
        _histogram_5(np.array([10.0, 91.0]), np.ones(2))
    with pytest.raises(ValueError, match="weights"):
        _histogram_5(np.array([10.0, 20.0]), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="weights"):
        _histogram_5(np.array([10.0, 20.0]), np.array([1.0, np.inf]))


def test_norm_helper_is_numpy_norm():
    from popdyn.diagnostics.refit import _norm

    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 32, 257):
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-150, 150)
        assert _norm(v) == float(np.linalg.norm(v))
        assert _norm(v[::2]) == float(np.linalg.norm(v[::2]))


@pytest.mark.parametrize("teacher", ["additive", "network", "gated"])
def test_recorder_equals_diagnose_bitwise(teacher):
    """The recorder (cached frame, fast paths) stores exactly diagnose(...).as_record()."""
    d = 5
    U = np.array([[1.0, 0, 0, 0, 0], [0.6, 0.8, 0, 0, 0]])
    T = {"additive": popdyn.Teacher.additive("silu", np.eye(d)[:2]),
         "network": popdyn.Teacher.network("relu", [1.0, -0.5], U, [0.1, 0.0]),
         "gated": popdyn.Teacher.gated("gelu", np.eye(d)[:2])}[teacher]
    S = popdyn.Student(d, 6)
    kinds = ("unrestricted", "same_budget", "bounded", "projected")
    for U_ in (None, T.subspace):
        rec = recorder(U_, kinds=kinds, budget=0.7, geometry=True)
        tr = popdyn.train(S, S.init(1, 0.5, T), T, method="gd", lr=0.2, max_updates=6,
                          schedule=popdyn.Schedule(every=3), recorder=rec)
        for i in range(len(tr)):
            want = diagnose(S, tr.snapshot(i), T, U=U_, kinds=kinds, budget=0.7,
                            geometry=True).as_record()
            got = {k: v for k, v in tr.records[i].items()
                   if k not in ("n", "t", "loss", "normalized_loss")}
            assert repr(got) == repr(want)


def test_fused_steps_hand_their_moments_to_the_recorder():
    """Issue 18: at every snapshot of a fused GD run the recorder receives the value moments the
    step computed at that state -- the same bits as evaluating them afresh -- and a recorder
    that does not declare ``takes_moments`` is called as before."""
    from popdyn._moments import moments

    d = 5
    T = popdyn.Teacher.additive("h3+0.3h2", np.eye(d)[:2])
    S = popdyn.Student(d, 6, bias=True)
    seen, plain = [], []

    def spy(student, params, teacher, *, n, t, loss, moments=None):
        seen.append((n, moments, params.replace(a=params.a.copy(), W=params.W.copy(),
                                                b=params.b.copy())))
        return {}
    spy.takes_moments = True

    def old_style(student, params, teacher, *, n, t, loss):
        plain.append(n)
        return {}

    for r in (spy, old_style):
        popdyn.train(S, S.init(2, 0.5, T), T, method="gd", lr=0.1, max_updates=9,
                     schedule=popdyn.Schedule(every=4, early=(1,)), recorder=r)
    assert [n for n, _, _ in seen] == plain == [0, 1, 4, 8, 9]
    for n, M, p in seen:
        F = moments(S, p, T, need="values")
        for f in ("C", "B", "mu0", "Ct"):
            assert getattr(M, f).tobytes() == getattr(F, f).tobytes(), (n, f)
