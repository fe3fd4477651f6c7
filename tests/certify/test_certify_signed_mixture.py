"""A signed mixture's certified Hermite tail (certify.moments): the Minkowski bound of the tail
beyond the enclosed order uses the absolute weights, so it bounds the true tail — computed
here from the closed-form coefficients of sin, E[sin(Z)h_n(Z)] = e^{−1/2} sin(nπ/2)/√n!,
in mpmath (independent of popdyn and certify)."""
import mpmath as mp
import pytest
from flint import arb

from certify import moments as CM
from popdyn.links import mixture


def _true_tail(w, K):
    """√(Σ_{n>K} (w·ĉ_n)²) of w·sin at scale α = 1 (h3 has no coefficient beyond 3 < K)."""
    mp.mp.dps = 40
    s = mp.nsum(lambda n: (mp.e ** mp.mpf(-0.5) * mp.sin(n * mp.pi / 2)) ** 2 / mp.factorial(n),
                [K + 1, mp.inf])
    return abs(w) * mp.sqrt(s)


@pytest.mark.parametrize("w", [0.5, -0.5, -2.0])
def test_signed_mixture_tail_bounds_the_true_tail(w):
    K = 12
    link = mixture([(1.0, "h3"), (w, "sin")])
    h = CM._herm_unit(link, arb(1), K, 128)
    assert h is not None
    pos = CM._herm_unit(mixture([(1.0, "h3"), (abs(w), "sin")]), arb(1), K, 128)
    assert h.tau == pos.tau                     # Σ_l |w_l| τ_l, whatever the signs
    assert h.tau >= float(_true_tail(w, K))
