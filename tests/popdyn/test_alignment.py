"""AGOP alignment scores (docs/design.md §5) against hand-built matrices with known principal angles
and against scipy.linalg.subspace_angles."""
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
    (Kumar (arXiv 2609.39408), Figure 22); and a leading eigenvector orthogonal to U gives A_top =
    0."""
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
    # A_min ≤ A_mean exactly; the two floats come from the singular values and from ‖P‖²_F,
    # each rounded on its own, so the order holds to their rounding (r = 1: one ulp apart)
    assert 0 <= al.a_min <= al.a_mean * (1 + 8 * np.finfo(float).eps) and al.a_mean <= 1
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


# ---------------------------------------------------------------------------- resolution rule
# Kumar (arXiv 2609.39408), App. A: resolved iff λ_r/λ_1 > 1e−9 and (λ_r − λ_{r+1})/λ_1 > 1e−9;
# an unresolved score enters averages as [0, 1].
from popdyn.diagnostics import a_sub, gain_interval, interval_mean, paper_resolved, score_interval


@pytest.mark.parametrize("lam, r, expected", [
    ([1.0, 0.5, 0.1, 0.0], 2, True),
    ([1.0, 2e-9, 0.0, 0.0], 2, True),        # λ_r/λ_1 = 2e−9 > 1e−9, gap 2e−9
    ([1.0, 1e-9, 0.0, 0.0], 2, False),       # λ_r/λ_1 = 1e−9: not >
    ([1.0, 0.5, 0.5 - 2e-9, 0.0], 2, True),  # gap 2e−9 (binary: just above 1e−9)
    ([1.0, 0.5, 0.5, 0.0], 2, False),        # exact tie
    ([4.0, 2.0, 2.0 - 3e-9, 0.0], 2, False),  # gap/λ_1 = 7.5e−10 ≤ 1e−9
    ([4.0, 2.0, 2.0 - 5e-9, 0.0], 2, True),   # gap/λ_1 = 1.25e−9
    ([0.0, 0.0, 0.0], 1, False),             # zero AGOP
    ([3.0, 2.0, 1.0], 3, True),              # r = d: λ_{d+1} := 0
    ([3.0, 2.0, 0.0], 3, False),             # r = d with a null direction
])
def test_resolution_rule_at_the_thresholds(lam, r, expected):
    assert paper_resolved(lam, r) is expected
    assert paper_resolved(np.array(lam)[::-1], r) is expected      # any order
    # the same spectrum as an AGOP in a rotated basis: the Alignment property agrees
    d = len(lam)
    Q = np.linalg.qr(np.random.default_rng(d).standard_normal((d, d)))[0]
    if max(lam) > 0 and all(lam[i] - lam[i + 1] > 1e-6 or lam[i] == lam[i + 1]
                            for i in range(d - 1)):
        al = alignment((Q * np.array(lam)) @ Q.T, np.eye(d)[:r])
        assert al.spectrum_resolved is expected


def test_threshold_scale_invariance_and_exact_boundary():
    """The rule is relative: scaling M leaves it unchanged; a ratio exactly at 1e−9 is not
    resolved (strict inequalities); the next float above is."""
    for s in (1e-30, 1.0, 1e30):
        lam = s * np.array([1.0, 0.3, 0.2])
        assert paper_resolved(lam, 1) and paper_resolved(lam, 2)
    x = 1e-9
    assert not paper_resolved([1.0, x, 0.0], 2)
    assert paper_resolved([1.0, np.nextafter(x, 1), 0.0], 2)
    # gaps 2⁻³⁰ ≈ 9.3e−10 (below) and 2⁻²⁹ ≈ 1.9e−9 (above), exact in binary
    assert not paper_resolved([1.0, 0.5, 0.5 - 2.0 ** -30], 2)
    assert paper_resolved([1.0, 0.5, 0.5 - 2.0 ** -29], 2)
    with pytest.raises(ValueError, match="`r` must be at most d"):
        paper_resolved([1.0, 0.5], 3)
    with pytest.raises(ValueError, match="`r` must be a positive int"):
        paper_resolved([1.0, 0.5], 0)


def test_unresolved_alignment_intervals_keep_existing_fields():
    M = np.diag([2.0, 1.0, 1.0, 0.5])                 # tie at r = 2
    al = alignment(M, np.eye(4)[:2])
    assert not al.spectrum_resolved
    assert al.a_min_interval == (0.0, 1.0) and al.a_mean_interval == (0.0, 1.0)
    assert 0.0 <= al.a_min <= 1.0                       # the existing value is still reported
    V = _rot(np.radians(20.0), np.radians(65.0))
    al = alignment(V.T @ np.diag([5.0, 4.0, 1.0, 0.5, 0.25, 0.0]) @ V, np.eye(6)[:2])
    assert al.spectrum_resolved and al.resolved
    assert al.a_min_interval == (al.a_min, al.a_min)
    assert al.a_mean_interval == (al.a_mean, al.a_mean)
    assert al.a_min == pytest.approx(np.cos(np.radians(65.0)) ** 2, abs=1e-14)


_score = st.one_of(st.floats(0, 1), st.none(),
                   st.tuples(st.floats(0, 1), st.floats(0, 1)).map(lambda t: tuple(sorted(t))))


def _iv(x):
    return (0.0, 1.0) if x is None else (x, x) if isinstance(x, float) else x


@given(st.lists(_score, min_size=1, max_size=30))
def test_interval_mean_properties(scores):
    lo, hi = interval_mean(scores)
    iv = [_iv(x) for x in scores]
    n = len(iv)
    assert lo == pytest.approx(sum(a for a, _ in iv) / n, abs=1e-15)
    assert hi == pytest.approx(sum(b for _, b in iv) / n, abs=1e-15)
    assert 0.0 <= lo <= hi <= 1.0
    # every selection of values inside the intervals averages into [lo, hi]
    rng = np.random.default_rng(n)
    for _ in range(20):
        vals = [a + (b - a) * rng.uniform() for a, b in iv]
        assert lo - 1e-15 <= sum(vals) / n <= hi + 1e-15
    # an unresolved score widens the mean by exactly 1/(n+1) of [0, 1]-membership; never dropped
    lo2, hi2 = interval_mean(list(scores) + [None])
    assert lo2 == pytest.approx(lo * n / (n + 1), abs=1e-15)
    assert hi2 == pytest.approx((hi * n + 1) / (n + 1), abs=1e-15)
    # all resolved: a point, the ordinary mean
    pts = [a for a, _ in iv]
    assert interval_mean(pts) == pytest.approx((np.mean(pts), np.mean(pts)), abs=1e-15)


@given(st.lists(st.tuples(_score, _score), min_size=1, max_size=20))
def test_gain_interval_properties(pairs):
    gains = [gain_interval(e, z) for e, z in pairs]
    for (e, z), (glo, ghi) in zip(pairs, gains):
        (el, eh), (zl, zh) = _iv(e), _iv(z)
        assert (glo, ghi) == (el - zh, eh - zl)
        assert -1.0 <= glo <= ghi <= 1.0
    # the mean gain interval is the difference of the mean intervals
    mlo, mhi = interval_mean(gains)
    elo, ehi = interval_mean([e for e, _ in pairs])
    zlo, zhi = interval_mean([z for _, z in pairs])
    assert mlo == pytest.approx(elo - zhi, abs=1e-14) and mhi == pytest.approx(ehi - zlo, abs=1e-14)
    assert gain_interval(0.9, 0.1) == pytest.approx((0.8, 0.8))
    assert gain_interval(0.9, None) == pytest.approx((-0.1, 0.9))


def test_interval_helpers_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        interval_mean([])
    with pytest.raises(ValueError, match="lo <= hi"):
        interval_mean([(0.6, 0.2)])
    with pytest.raises(TypeError, match="resolved"):
        score_interval(0.5, 1)
    assert score_interval(0.3, False) == (0.0, 1.0) and score_interval(0.3, True) == (0.3, 0.3)


@given(st.integers(0, 10 ** 6), st.integers(2, 8), st.integers(1, 6))
def test_a_sub(seed, d, m):
    rng = np.random.default_rng(seed)
    r = int(rng.integers(1, d))
    U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    W = rng.standard_normal((m, d))
    # direct formula with the projector UᵀU, independently of the implementation's W Uᵀ
    P = U.T @ U
    ref = sum(np.linalg.norm(P @ w) ** 2 for w in W) / np.sum(W ** 2)
    assert a_sub(W, U) == pytest.approx(ref, rel=1e-12)
    assert 0.0 <= a_sub(W, U) <= 1.0
    O = np.linalg.qr(rng.standard_normal((r, r)))[0]
    assert a_sub(W, O @ U) == pytest.approx(a_sub(W, U), rel=1e-12)     # basis of span U
    assert a_sub(3.0 * W, U) == pytest.approx(a_sub(W, U), rel=1e-12)
    assert a_sub(rng.standard_normal((m, r)) @ U, U) == pytest.approx(1.0, rel=1e-12)


def test_a_sub_undefined_for_zero_weights():
    assert np.isnan(a_sub(np.zeros((3, 4)), np.eye(4)[:2]))
    with pytest.raises(ValueError, match="`U` must have width"):
        a_sub(np.ones((3, 4)), np.eye(5)[:2])


def test_rank_one_a_min_and_a_mean_agree_to_rounding():
    """r = 1: A_min = cos² from the singular value and A_mean = ‖P‖²_F are the same number
    rounded two ways; found by the soak profile, the 3098th draw below gives A_min one ulp above
    A_mean.  Both stay within a few ulps of cos² of scipy's subspace angle."""
    rng = np.random.default_rng(0)
    for _ in range(3098):
        A = rng.standard_normal((5, 5))
        M = A @ A.T / 5
        u = rng.standard_normal(5)
        u /= np.linalg.norm(u)
    al = alignment(M, u[None, :])
    assert al.a_min != al.a_mean                    # the case: rounded two ways
    assert abs(al.a_min - al.a_mean) <= 4 * np.finfo(float).eps * al.a_mean
    Vr = np.linalg.eigh(M)[1][:, -1:]
    c2 = np.cos(sl.subspace_angles(u[:, None], Vr))[0] ** 2
    assert al.a_min == pytest.approx(c2, rel=1e-12) and al.a_mean == pytest.approx(c2, rel=1e-12)
