"""Neuron geometry (docs/design.md §5; Kumar (arXiv 2609.39408) Figures 1, 2, 14): angles to the
teacher subspace and
to the nearest teacher axis, importance, 5° histograms and the snapping rule of the projected refit."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from popdyn.diagnostics import angle_histogram, neuron_geometry, snap_to_axes


def _params(W, a=None, b=None):
    from popdyn.models import Params

    W = np.asarray(W, dtype=float)
    m = W.shape[0]
    return Params(np.ones(m) if a is None else a, W, np.zeros(m) if b is None else b, 0.0)


def _deg(x):
    return np.radians(x)


def test_hand_built_angles():
    U = np.eye(4)[:2]
    t = _deg(25.0)
    W = np.array([
        [np.cos(t), 0, np.sin(t), 0],                 # 25° off the plane, on axis 1
        [np.cos(_deg(30)), np.sin(_deg(30)), 0, 0],   # in plane, 30° from axis 1
        [-np.cos(_deg(60)), -np.sin(_deg(60)), 0, 0], # in plane, 30° from axis 2 (negative side)
        [0, 0, 1.0, 0],                               # orthogonal to the plane
        [0, 0, 0, 0],                                 # zero neuron
        [2.0, 2.0, 0, 2.0 * np.sqrt(2)],              # 45° off, exactly between the axes
    ])
    g = neuron_geometry(_params(W, a=np.array([1, 2, 3, 4, 5, -6.0])), U)
    np.testing.assert_allclose(g.subspace_angle[[0, 1, 2, 3, 5]], [25, 0, 0, 90, 45], atol=1e-12)
    np.testing.assert_allclose(g.axis_angle[[0, 1, 2, 5]], [0, 30, 30, 45], atol=1e-12)
    np.testing.assert_array_equal(g.axis, [0, 0, 1, -1, -1, 0])
    np.testing.assert_allclose(g.plane_angle[[0, 1, 2, 5]], [0, 30, 60, 45], atol=1e-12)
    assert np.isnan(g.subspace_angle[4]) and np.isnan(g.axis_angle[3]) and np.isnan(g.axis_angle[4])
    assert g.axis_limit == pytest.approx(45.0)
    np.testing.assert_allclose(g.importance, np.abs([1, 2, 3, 4, 5, -6.0]) * np.linalg.norm(W, axis=1))


def test_importance_includes_bias():
    g = neuron_geometry(_params([[3.0, 0.0]], a=np.array([-2.0]), b=np.array([4.0])), np.eye(2)[:1])
    assert g.importance[0] == pytest.approx(10.0)


def test_histograms_normalized_per_seed():
    U = np.eye(3)[:1]
    W = np.array([[1.0, 0, 0], [np.cos(_deg(7)), np.sin(_deg(7)), 0], [0, 1.0, 0], [0, 0, 0]])
    g = neuron_geometry(_params(W, a=np.array([1.0, 3.0, 4.0, 100.0])), U)
    h, edges = g.histogram("subspace")
    assert h.shape == (18,) and edges[0] == 0 and edges[-1] == 90
    assert h.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(h[[0, 1, 17]], [1 / 8, 3 / 8, 4 / 8])   # 90° falls in the last bin
    assert g.weighted_mean("subspace") == pytest.approx((0 + 3 * 7 + 4 * 90) / 8)
    with pytest.raises(ValueError, match="rank-2"):
        g.histogram("plane")
    hn, _ = angle_histogram([np.nan, 10.0], [1.0, 0.0])
    assert np.all(np.isnan(hn))                                        # no mass: undefined


@given(st.integers(1, 5), st.integers(0, 5), st.integers(0, 2 ** 31))
def test_snap_and_axis_limit(r, extra, seed):
    rng = np.random.default_rng(seed)
    d = r + extra
    U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    W = rng.standard_normal((7, d))
    Ws = snap_to_axes(W, U)
    P = U.T @ U
    np.testing.assert_allclose(np.linalg.norm(Ws, axis=1), np.linalg.norm(W, axis=1), rtol=1e-12)
    np.testing.assert_allclose(Ws - Ws @ P, W - W @ P, atol=1e-12)     # outside part kept
    coords = Ws @ U.T
    nz = np.count_nonzero(np.abs(coords) > 1e-12 * np.linalg.norm(W, axis=1)[:, None], axis=1)
    assert np.all(nz <= 1)                                             # on a single axis
    g = neuron_geometry(_params(W), U)
    assert np.all(g.axis_angle <= g.axis_limit + 1e-9)
    gs = neuron_geometry(_params(Ws), U)
    np.testing.assert_allclose(gs.axis_angle, 0.0, atol=1e-6)
    np.testing.assert_allclose(gs.subspace_angle, g.subspace_angle, atol=1e-9)
    np.testing.assert_array_equal(gs.axis, g.axis)


def test_snap_signs_ties_and_out_of_plane_rows():
    U = np.eye(3)[:2]
    W = np.array([[-3.0, 4.0, 1.0], [1.0, -1.0, 0.0], [0.0, 0.0, 2.0]])
    Ws = snap_to_axes(W, U)
    np.testing.assert_allclose(Ws, [[0.0, 5.0, 1.0], [np.sqrt(2), 0.0, 0.0], [0.0, 0.0, 2.0]])
    Ws = snap_to_axes(np.array([[-3.0, 2.0, 0.0]]), U)
    np.testing.assert_allclose(Ws, [[-np.sqrt(13), 0.0, 0.0]])


def test_teacher_frame_of_a_network_teacher():
    import popdyn

    T = popdyn.Teacher.network("relu", [1.0, 1.0], np.array([[2.0, 0.0, 0.0], [1.0, 1.0, 0.0]]))
    W = np.array([[1.0, 0.9, 0.5]])
    g = neuron_geometry(_params(W), T)
    assert g.axis[0] == 1                       # nearest unit direction (1, 1)/√2
    Ws = snap_to_axes(W, T)
    np.testing.assert_allclose(Ws[0, :2], np.hypot(1.0, 0.9) * np.array([1, 1]) / np.sqrt(2))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: neuron_geometry(_params(np.eye(3)), np.ones((1, 3))), ValueError, "`U` must have orthonormal"),
    (lambda: neuron_geometry(_params(np.eye(3)), np.eye(4)[:1]), ValueError, "`U` must have width"),
    (lambda: neuron_geometry(np.eye(3), np.eye(3)[:1]), TypeError, "`params`"),
    (lambda: snap_to_axes(np.eye(3), np.eye(3)[:2], axes=[[0, 0, 1.0]]), ValueError, "`axes` must lie"),
    (lambda: angle_histogram([10.0], [-1.0]), ValueError, "`weights`"),
    (lambda: angle_histogram([100.0]), ValueError, "`angles` must lie"),
    (lambda: angle_histogram([10.0], width=7.0), ValueError, "`width` must divide"),
    (lambda: neuron_geometry(_params(np.eye(2)), np.eye(2)[:1]).histogram("plan"), ValueError, "Did you mean"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
