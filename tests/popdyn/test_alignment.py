"""AGOP alignment scores (DESIGN §5) against hand-built matrices with known principal angles and
against scipy.linalg.subspace_angles."""
import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import example, given, strategies as st

from popdyn.diagnostics import alignment


def _rot(t1, t2, d=6):
    """Eigenvectors v1 = cos t1 e1 + sin t1 e3, v2 = cos t2 e2 + sin t2 e4, completed."""
    V = np.zeros((d, d))
    V[0] = [np.cos(t1), 0, np.sin(t1), 0, 0, 0][:d]
    V[1] = [0, np.cos(t2), 0, np.sin(t2), 0, 0][:d]
    V[2] = [-np.sin(t1), 0, np.cos(t1), 0, 0, 0][:d]
    V[3] = [0, -np.sin(t2), 0, np.cos(t2), 0, 0][:d]
    V[4:] = np.eye(d)[4:]
    return V


def test_known_principal_angles():
    t1, t2 = np.radians(20.0), np.radians(65.0)
    V = _rot(t1, t2)
    lam = np.array([5.0, 4.0, 1.0, 0.5, 0.25, 0.0])
    M = V.T @ np.diag(lam) @ V
    U = np.eye(6)[:2]
    al = alignment(M, U)
    assert al.a_top == pytest.approx(np.cos(t1) ** 2, abs=1e-14)
    assert al.a_min == pytest.approx(np.cos(t2) ** 2, abs=1e-14)
    assert al.a_mean == pytest.approx((np.cos(t1) ** 2 + np.cos(t2) ** 2) / 2, abs=1e-14)
    assert al.gap == pytest.approx(3.0, rel=1e-14) and al.resolved
    np.testing.assert_allclose(al.eigenvalues, lam, atol=1e-14)
    np.testing.assert_allclose(al.cosines, [np.cos(t1), np.cos(t2)], atol=1e-14)
    assert al.isotropic == pytest.approx(2 / 6)


def test_leading_direction_outside():
    """Strong leading alignment can coexist with weak recovery of the weakest direction
    (seed paper, Figure 22); and a leading eigenvector orthogonal to U gives A_top = 0."""
    V = _rot(0.0, np.pi / 2)
    M = V.T @ np.diag([3.0, 2.0, 1.0, 0.1, 0.1, 0.1]) @ V
    al = alignment(M, np.eye(6)[:2])
    assert al.a_top == pytest.approx(1.0) and al.a_min == pytest.approx(0.0, abs=1e-30)
    al = alignment(M, np.eye(6)[[1, 3]])
    assert al.a_top == pytest.approx(0.0, abs=1e-30)


def test_rank_one_scores_coincide():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((5, 5))
    M = A @ A.T
    U = np.linalg.qr(rng.standard_normal((5, 1)))[0].T
    al = alignment(M, U)
    assert al.a_top == pytest.approx(al.a_min, rel=1e-13) == pytest.approx(al.a_mean, rel=1e-13)


def test_full_rank_subspace():
    M = np.diag([3.0, 2.0, 1.0])
    al = alignment(M, np.eye(3))
    assert al.gap == np.inf and al.resolved
    assert al.a_min == pytest.approx(1.0) and al.a_mean == pytest.approx(1.0)


def test_ties_are_reported_and_deterministic():
    M = np.diag([2.0, 1.0, 1.0, 0.5])
    U = np.eye(4)[:2]
    a1, a2 = alignment(M, U), alignment(M.copy(), U)
    assert a1.gap == 0.0 and not a1.resolved
    assert (a1.a_top, a1.a_min, a1.a_mean) == (a2.a_top, a2.a_min, a2.a_mean)
    # a rounding-level split is still a tie; a zero AGOP is unresolved
    M2 = M.copy()
    M2[1, 1] += 1e-16
    assert alignment(M2, U).gap == 0.0
    z = alignment(np.zeros((4, 4)), U)
    assert z.gap == 0.0 and not z.resolved


@st.composite
def _problem(draw):
    d = draw(st.integers(2, 7))
    r = draw(st.integers(1, d - 1))
    seed = draw(st.integers(0, 2 ** 31))
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    lam = np.sort(rng.uniform(0, 1, d))[::-1]
    lam[:r] += 0.5                         # separated top-r eigenspace
    M = (Q * lam) @ Q.T
    U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    return M, U, Q[:, :r], lam


@given(_problem())
@example((np.diag([1.0, 0.0]), np.array([[1.0, 0.0]]), np.array([[1.0], [0.0]]), np.array([1.0, 0.0])))
def test_matches_scipy_subspace_angles(prob):
    M, U, Vr, lam = prob
    al = alignment(M, U)
    r = U.shape[0]
    cos = np.sort(np.cos(sl.subspace_angles(U.T, Vr)))[::-1]
    np.testing.assert_allclose(al.cosines, cos, atol=1e-10)
    assert al.a_min == pytest.approx(cos[-1] ** 2, abs=1e-10)
    assert al.a_mean == pytest.approx(np.sum(cos ** 2) / r, abs=1e-10)
    assert al.a_top == pytest.approx(np.sum((U @ Vr[:, 0]) ** 2), abs=1e-10)
    assert al.gap == pytest.approx(lam[r - 1] - lam[r], abs=1e-12)
    assert 0 <= al.a_min <= al.a_mean <= 1
    # invariant under rotations of the basis of span U and under positive scaling of M
    O = np.linalg.qr(np.random.default_rng(0).standard_normal((r, r)))[0]
    al2 = alignment(3.5 * M, O @ U)
    assert (al2.a_top, al2.a_min, al2.a_mean) == pytest.approx((al.a_top, al.a_min, al.a_mean), abs=1e-10)


def test_teacher_as_subspace():
    import popdyn

    T = popdyn.Teacher.additive("h2", np.eye(4)[[0, 2]])
    M = np.diag([1.0, 0.1, 2.0, 0.2])
    al = alignment(M, T)
    assert al.a_min == pytest.approx(1.0) and al.r == 2


@pytest.mark.parametrize("M, U, exc, match", [
    (np.eye(3), np.array([[1.0, 1.0, 0.0]]), ValueError, "`U` must have orthonormal rows"),
    (np.eye(3), np.eye(4)[:2], ValueError, "`U` must have width d = 3"),
    (np.eye(3), np.zeros((0, 3)), ValueError, "`U` must have at least one row"),
    (np.eye(3), np.eye(3)[0], ValueError, "`U` must have shape"),
    (np.eye(3), [["a", "b", "c"]], TypeError, "`U` must be an array"),
    (np.ones((2, 3)), np.eye(3)[:1], ValueError, "`M` must be a non-empty square"),
    (np.triu(np.ones((3, 3))), np.eye(3)[:1], ValueError, "`M` must be symmetric"),
    (np.diag([1.0, np.nan, 1.0]), np.eye(3)[:1], ValueError, "`M` must be finite"),
])
def test_bad_input(M, U, exc, match):
    with pytest.raises(exc, match=match):
        alignment(M, U)
