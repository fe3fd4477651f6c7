"""Diagnostics recorded along a run (DESIGN §4–5): the recorder for popdyn.train, diagnose, series,
at_update; and the plateau helpers added for the seed paper's cohort rules."""
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
