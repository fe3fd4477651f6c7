"""Agreement across methods (STYLE item 10b): the closed-form ReLU pair moments (bivariate normal
CDF) against the ReLU Hermite (Mehler) series where the series converges (|ρ| ≤ 1/2), with the
error measured in units of the series' own error estimate."""
import numpy as np
from hypothesis import given, settings, strategies as st

from popdyn import _moments as M
from popdyn._hermite import mehler_moment, unit_coefficients


def _units(seed, m, p, q):
    rng = np.random.default_rng(seed)
    d = 3
    # directions with pairwise |ρ| ≤ 1/2: perturb orthogonal axes mildly
    W = rng.normal(size=(m, d)) * 0.3 + np.eye(d)[:m] * 2.0
    al = np.linalg.norm(W, axis=1)
    th = W / al[:, None]
    be = rng.normal(size=m)
    return M.UnitSet("pl", al, be, th, np.full(m, p), np.full(m, q))


@settings(max_examples=15)
@given(st.integers(0, 1000), st.sampled_from([(1.0, 0.0), (0.9, 0.1), (2.0, -1.0)]))
def test_closed_form_equals_mehler_series(seed, pq):
    u = _units(seed, 3, *pq)
    R = M.geometry(u, u)[0]
    off = ~np.eye(3, dtype=bool)
    if np.max(np.abs(R[off])) > 0.5:
        return
    C, B, A, D, mu0, mu1, mu2 = M._pl_self(u)
    uc = unit_coefficients("pl", u.al, u.be, p=pq[0], q=pq[1], n=400)
    for got, (X, tx), (Y, ty) in (
        (C, uc.seq("S"), uc.seq("S")),
        (B, uc.seq("Dd"), uc.seq("Dd")),
        (D, uc.seq("Dd"), uc.seq("S")),
        (A, uc.seq("Dd2"), uc.seq("S")),
    ):
        val, err = mehler_moment(X, Y, tx, ty, R)
        if not np.all(np.isfinite(err[off])):
            # Dd2 (a delta) is not square-summable: bound the tail by sup|Dd2_n| times the
            # Cauchy–Schwarz bound Σ_{n>N}|Y_n||ρ|^n ≤ √t2_Y |ρ|^{N+1}/√(1−ρ²)
            N = X.shape[1] - 1
            r = np.abs(R)
            cs = np.sqrt(ty.t2)[None, :] * r ** (N + 1) / np.sqrt(1 - np.minimum(r, 0.5) ** 2)
            err = np.where(np.isfinite(err), err, tx.sup[:, None] * cs + 1e-15)
        dev = np.abs(got - val)[off]
        assert np.all(np.isfinite(err[off]))
        assert np.all(dev <= err[off] + 1e-14 * np.abs(val[off]) + 1e-15), (dev, err[off])
    np.testing.assert_allclose(mu0, uc.S[:, 0], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(mu1, uc.Dd[:, 0], rtol=1e-14, atol=1e-15)
