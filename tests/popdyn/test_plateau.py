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
