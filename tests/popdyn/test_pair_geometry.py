"""popdyn._kernels.geometry: ρ, 1 − ρ, 1 + ρ of unit directions.

For |ρ| > 1/2 the small complement is ½|θ_i ∓ θ_j|², checked against 40-digit mpmath on the same
float64 rows; ``pair_geometry_self`` (four sums at a time, upper triangle) must equal
``pair_geometry`` bit for bit.
"""
import mpmath as mp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn._kernels.geometry import pair_geometry, pair_geometry_self


def _rows(seed, kind, m=11, d=7):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((m, d))
    if kind in ("aligned", "mixed"):
        W[1:6] = W[0] + 10.0 ** rng.uniform(-12, -1, (5, 1)) * rng.standard_normal((5, d))
    if kind in ("anti", "mixed"):
        W[6:10] = -W[0] + 10.0 ** rng.uniform(-12, -1, (4, 1)) * rng.standard_normal((4, d))
    W[m - 1] = 0.0                          # a degenerate unit (α = 0)
    al = np.linalg.norm(W, axis=1)
    ok = al > 0
    th = W / np.where(ok, al, 1.0)[:, None]
    return th, ok


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["random", "aligned", "anti", "mixed"]))
@settings(max_examples=40, deadline=None)
def test_self_equals_full_bit_for_bit(seed, kind):
    th, ok = _rows(seed, kind)
    m = th.shape[0]
    R1 = th @ th.T
    R2 = R1.copy()
    O1, P1 = np.full((m, m), 7.0), np.full((m, m), 7.0)
    O2, P2 = O1.copy(), P1.copy()
    pair_geometry(th, ok, th, ok, R1, O1, P1)
    pair_geometry_self(th, ok, R2, O2, P2)
    iu = np.triu_indices(m, 1)
    for X, Y in ((R1, R2), (O1, O2), (P1, P2)):
        assert np.array_equal(X[iu], Y[iu])


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["aligned", "anti", "mixed"]))
@settings(max_examples=15, deadline=None)
def test_complements_against_mpmath(seed, kind):
    """1 ∓ ρ to relative 1e−14 of ½|θ_i ∓ θ_j|² (exact in mpmath) where |ρ| > 1/2, and
    ρ = θ_i·θ_j to 1e−15 absolute elsewhere."""
    th, ok = _rows(seed, kind)
    m, d = th.shape
    R = th @ th.T
    OMR, OPR = np.empty((m, m)), np.empty((m, m))
    pair_geometry_self(th, ok, R, OMR, OPR)
    mp.mp.dps = 40
    for i in range(m - 1):
        for j in range(i + 1, m - 1):          # the last row is degenerate
            rho = mp.fsum(mp.mpf(th[i, k]) * mp.mpf(th[j, k]) for k in range(d))
            if abs(rho) <= 0.5:
                assert abs(R[i, j] - float(rho)) <= 1e-15
                continue
            sg = -1 if rho > 0 else 1
            c = mp.fsum((mp.mpf(th[i, k]) + sg * mp.mpf(th[j, k])) ** 2 for k in range(d)) / 2
            small = OMR[i, j] if rho > 0 else OPR[i, j]
            assert abs(small - float(c)) <= 1e-14 * float(c) + 1e-300
            big = OPR[i, j] if rho > 0 else OMR[i, j]
            assert abs(big - (2 - float(c))) <= 4e-16 * 2
    assert np.all(R[:m - 1, m - 1] == 0.0) and np.all(OMR[:m - 1, m - 1] == 1.0)
