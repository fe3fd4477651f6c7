"""The coefficient-error estimates behind the gradient's accuracy contract
(:func:`popdyn._hermite.unit_coefficients` ``Tails.err``, read by the ``rss`` error form of
:func:`popdyn._hermite.mehler_moment_internal` as an estimate of the ℓ² norm of a row's
coefficient-error vector) against independent closed forms in mpmath at 40 digits:

* erf(αz + β): σ′ = (2/√π) e^{−t²} has d_n = (2/√π) a^{−1/2} e^{−β²/a} s^n ĥ_n(X), a = 1 + 2α²,
  s = α√(2/a), X = −√2 β/√a (Gaussian generating function), and ĉ_n = α d_{n−1}/√n,
  ĉ_0 = erf(β/√a);
* p relu(αz + β) + q(αz + β): ĉ_0 = pα(φ(h) + hΦ(h)) + qβ, ĉ_1 = α(pΦ(h) + q),
  ĉ_n = pαφ(h) ĥ_{n−2}(−h)/√(n(n−1)); d_0 = pΦ(h) + q, d_n = pφ(h) ĥ_{n−1}(−h)/√n;
  (ασ″)_n = pφ(h) ĥ_n(−h)  (h = β/α; ĥ_n = He_n/√n!, the three-term recurrence in mpmath).

Both directions: every stored error estimate covers the true ℓ² (hence every entry's) error, and
it is not the old uniform 8(N + 2)u bound of the PL rows (which overstated the errors of ĉ by
~10⁵ at N ≈ 2000 and made the erf gradient warn at rtol 1e−12 with true errors ~1e−15).
"""
import math

import mpmath as mp
import numpy as np
import pytest

import popdyn._hermite as H

N = 1600


def _hnorm(x, K):
    """ĥ_0..ĥ_K(x) in mpmath."""
    h = [mp.mpf(1), x]
    for n in range(1, K):
        h.append((x * h[n] - mp.sqrt(n) * h[n - 1]) / mp.sqrt(n + 1))
    return h[:K + 1]


def _erf_ref(al, be, K):
    al, be = mp.mpf(al), mp.mpf(be)
    a = 1 + 2 * al * al
    s = al * mp.sqrt(2 / a)
    pre = 2 / mp.sqrt(mp.pi) / mp.sqrt(a) * mp.exp(-be * be / a)
    h = _hnorm(-mp.sqrt(2) * be / mp.sqrt(a), K)
    d = [pre * s ** n * h[n] for n in range(K + 1)]
    c = [mp.erf(be / mp.sqrt(a))] + [al * d[n - 1] / mp.sqrt(n) for n in range(1, K + 1)]
    return {"S": c, "Dd": d}


def _pl_ref(p, q, al, be, K):
    p, q, al, be = (mp.mpf(x) for x in (p, q, al, be))
    hh = be / al
    h = _hnorm(-hh, K)
    ph, Ph = mp.npdf(hh), mp.ncdf(hh)
    c = [p * al * (ph + hh * Ph) + q * be, al * (p * Ph + q)] + [
        p * al * ph * h[n - 2] / mp.sqrt(n * (n - 1)) for n in range(2, K + 1)]
    d = [p * Ph + q] + [p * ph * h[n - 1] / mp.sqrt(n) for n in range(1, K + 1)]
    return {"S": c, "Dd": d, "Dd2": [p * ph * h[n] for n in range(K + 1)]}


def _errors(uc, ref, name):
    got = getattr(uc, name)[0]
    return np.array([float(abs(mp.mpf(float(got[n])) - ref[n])) for n in range(len(got))])


def _tails(uc, name):
    return {"S": uc.tails_S, "Dd": uc.tails_Dd, "Dd2": uc.tails_Dd2}[name]


@pytest.mark.parametrize("al,be", [(5.0, 0.7), (4.3, -2.1), (1.0, 0.3), (0.4, 1.9)])
def test_erf_coefficient_errors_within_estimate(al, be):
    mp.mp.dps = 40
    uc = H.unit_coefficients("erf", [al], [be], n=N, nmax=N, rtol=1e-16)
    ref = _erf_ref(al, be, uc.N)
    for name in ("S", "Dd"):
        e = _errors(uc, ref[name], name)
        est = float(_tails(uc, name).err[0])
        assert np.linalg.norm(e) <= est, (name, np.linalg.norm(e), est)
        # not vacuous: the estimate is within 10⁴ of the true ℓ² error
        assert est <= 1e4 * max(np.linalg.norm(e), 2.0 ** -53), (name, est)


@pytest.mark.parametrize("kind,al,be", [("relu", 1.0, 0.0), ("relu", 0.9999999999999999, 0.0),
                                        ("relu", 2.0, 0.5), ("leaky_relu", 0.7, -1.3),
                                        ("relu", 1e-3, 0.9), ("leaky_relu", 3.0, 6.0)])
def test_pl_coefficient_errors_within_estimate(kind, al, be):
    mp.mp.dps = 40
    p, q = (1.0, 0.0) if kind == "relu" else (0.9, 0.1)
    uc = H.unit_coefficients("pl", [al], [be], p=p, q=q, n=N)
    ref = _pl_ref(p, q, al, be, uc.N)
    for name in ("S", "Dd", "Dd2"):
        e = _errors(uc, ref[name], name)
        est = float(_tails(uc, name).err[0])
        assert np.linalg.norm(e) <= est, (name, np.linalg.norm(e), est)
    # the estimate of ĉ no longer grows with the order: at most 64u × the largest coefficient
    # plus the Cramér envelope (it was 8(N + 2)u × those)
    S = uc.S[0]
    assert float(uc.tails_S.err[0]) <= 64 * 2.0 ** -53 * (np.abs(S).max() + max(al, 1.0)
                                                          * (1 + (be / al) ** 2))
