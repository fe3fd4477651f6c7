import numpy as np
import pytest
from hypothesis import given, strategies as st

import popdyn


def test_delta_prefix_by_hand():
    ell = [1.0, 1.0005, 0.9995, 1.0009, 0.998, 0.5]
    p = popdyn.plateau(ell, delta=1e-3)
    assert p.end == 3 and p.release == 4
    assert p.change == pytest.approx(0.0009)


def test_ratio_prefix_and_clocks():
    ell = np.array([2.0, 2.05, 1.95, 2.11, 1.0])
    n = np.array([0, 10, 20, 30, 40])
    t = np.array([0.0, 1.0, 2.5, 3.0, 4.0])
    p = popdyn.plateau(ell, ratio=0.05, n=n, t=t)
    assert (p.end, p.end_n, p.end_t, p.release_n, p.release_t) == (2, 20, 2.5, 30, 3.0)


def test_never_released():
    p = popdyn.plateau([1.0, 1.0, 1.0], delta=1e-4)
    assert p.end == 2 and p.release is None and p.release_n is None


@given(st.lists(st.floats(0.5, 1.5), min_size=1, max_size=40), st.floats(1e-4, 0.3))
def test_prefix_is_maximal(xs, delta):
    p = popdyn.plateau(xs, delta=delta)
    ell = np.asarray(xs)
    assert np.all(np.abs(ell[:p.end + 1] - ell[0]) <= delta)
    if p.release is not None:
        assert abs(ell[p.release] - ell[0]) > delta


def test_shared_prefix():
    ps = [popdyn.plateau([1, 1, 1, 2], delta=0.1), popdyn.plateau([1, 1, 2, 2], delta=0.1)]
    assert popdyn.shared_prefix(ps) == 1


@pytest.mark.parametrize("bad, match", [
    ([], "non-empty"), ([1.0, np.nan], "finite"), ([[1.0]], "1-D"),
])
def test_bad_losses(bad, match):
    with pytest.raises(ValueError, match=match):
        popdyn.plateau(bad, delta=1e-3)


def test_bad_thresholds():
    with pytest.raises(ValueError, match="exactly one"):
        popdyn.plateau([1.0], delta=1e-3, ratio=0.05)
    with pytest.raises(ValueError, match="delta"):
        popdyn.plateau([1.0], delta=-1.0)


# ---------------------------------------------------------------------------- q0 windows, band
from popdyn.plateau import BASELINE_RULE, PlateauRule, window_rules  # noqa: E402


def _brute_end(ell, q0, band):
    """The last n with max_{k≤n} ℓ_k / min_{k≤n} ℓ_k ≤ 1 + q0 (and every ℓ_k in the band), by
    checking every prefix from scratch (−1 if ℓ_0 already fails)."""
    end = -1
    for n in range(len(ell)):
        pre = ell[:n + 1]
        ok = min(pre) > 0 and max(pre) / min(pre) <= 1 + q0
        if band is not None:
            ok = ok and all(band[0] <= x <= band[1] for x in pre)
        if not ok:
            break
        end = n
    return end


losses_near_one = st.lists(st.floats(0.9, 1.1), min_size=1, max_size=60)


@given(losses_near_one, st.sampled_from([0.01, 0.05, 0.2]),
       st.sampled_from([None, (0.95, 1.05), (0.97, 1.0)]))
def test_window_matches_brute_force(xs, q0, band):
    p = popdyn.plateau(xs, q0=q0, band=band)
    end = _brute_end(xs, q0, band)
    assert p.end == end and p.rule == "window" and p.threshold == q0
    assert p.censored == (end == len(xs) - 1)
    assert p.release == (None if p.censored else end + 1)
    # the same rule update by update
    r = PlateauRule("window", q0, band=band)
    w = r.watch().feed_all(xs)
    assert (w.end if w.done else len(xs) - 1) == end and w.done == (not p.censored)
    q = r.apply(xs)
    assert (q.end, q.release, q.censored, q.band) == (p.end, p.release, p.censored, p.band)


@given(st.lists(st.floats(0.9, 1.1), min_size=1, max_size=60))
def test_baseline_rule_is_the_band_and_running_ratio(xs):
    """App. A: E is the last update before the first whose MSE leaves [0.95, 1.05] or whose
    running max/min exceeds 1.05 (checked at every update)."""
    first = next((k for k in range(len(xs))
                  if not 0.95 <= xs[k] <= 1.05 or max(xs[:k + 1]) / min(xs[:k + 1]) > 1.05), None)
    p = BASELINE_RULE.apply(xs)
    assert p.end == (len(xs) - 1 if first is None else first - 1)
    assert p.censored == (first is None)


@given(st.lists(st.floats(0.5, 1.5), min_size=1, max_size=40), st.floats(1e-4, 0.3),
       st.sampled_from(["delta", "ratio"]))
def test_watch_agrees_with_delta_and_ratio(xs, thr, kind):
    p = popdyn.plateau(xs, **{kind: thr})
    w = PlateauRule(kind, thr, units="normalized").watch().feed_all(xs)
    assert (w.end if w.done else len(xs) - 1) == p.end


def test_window_by_hand_and_empty_prefix():
    ell = [1.0, 1.02, 0.99, 1.03, 1.04, 0.98]   # running max/min 1.04/0.99 = 1.0505 at k = 4
    assert popdyn.plateau(ell, q0=0.05).end == 3
    assert popdyn.plateau(ell, q0=0.05, band=(0.95, 1.025)).end == 2
    p = popdyn.plateau([1.2, 1.0], q0=0.05, band=(0.95, 1.05))
    assert (p.end, p.end_n, p.release, p.censored) == (-1, -1, 0, False)
    assert popdyn.plateau([0.0, 0.0], q0=0.05).end == -1       # ratio undefined: fails
    rules = window_rules(band=True)
    assert set(rules) == {"q0=0.05", "q0=0.01"} and rules["q0=0.05"].band == (0.95, 1.05)
    with pytest.raises(ValueError, match="exactly one of `delta`, `ratio` and `q0`"):
        popdyn.plateau([1.0], q0=0.05, delta=1e-3)
    with pytest.raises(ValueError, match="`band` must have lo <= hi"):
        popdyn.plateau([1.0], q0=0.05, band=(1.05, 0.95))
    with pytest.raises(ValueError, match="`kind` must be one of"):
        PlateauRule("band", 0.05)
    with pytest.raises(ValueError, match="`units` must be one of"):
        PlateauRule("window", 0.05, units="raw")


def test_swiglu_prefix_rule_is_the_delta_prefix():
    """U.6's maximal prefix |ℓ − ℓ_0| ≤ δ is :func:`plateau`'s ``delta`` (δ = 1e−3, 1e−4)."""
    from popdyn.plateau import SWIGLU_RULES

    ell = [1.0, 1.00005, 0.9995, 1.0011]
    assert SWIGLU_RULES["delta=0.001"].apply(ell).end == 2
    assert SWIGLU_RULES["delta=0.0001"].apply(ell).end == 1
