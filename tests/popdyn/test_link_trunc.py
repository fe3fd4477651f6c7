"""The block Cauchy–Schwarz truncation estimate of a smooth unit against an additive link
(:func:`popdyn._moments._link_block_trunc`).

The estimate must bound the absolute tail Σ_{n>N} |X_n Y_n| |ρ|ⁿ of the Mehler sum, where X are
the unit's coefficients beyond the order N the engine chose and Y the link's.  The tail of X is
taken from the same unit computed to a much higher order (series tolerance 1e−32), whose own
remaining tail is negligible (the coefficients themselves are checked against mpmath in
test_hermite.py), and the link's coefficients are its closed forms.
"""
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn import _moments as M
from popdyn._hermite import unit_coefficients
from popdyn.activations import SMOOTH_CODES
from popdyn.links import get_link

RHO = np.array([[1.0, -1.0, 0.9999, -0.999, 0.99]])


def _check(name, al, be, link, rtol):
    code = SMOOTH_CODES[name]
    uc = unit_coefficients("smooth", np.array([al]), np.array([be]), code=code, rtol=rtol)
    hi = unit_coefficients("smooth", np.array([al]), np.array([be]), code=code, rtol=1e-32)
    N = uc.N
    if hi.N < N + 64 or not hi.tails_S.t2[0] <= 1e-6 * uc.tails_S.t2[0]:
        return None
    g = get_link(link)
    cap = M._link_block_trunc(uc, g, RHO)
    if cap is None:
        return None
    y = g.coefficients_full(hi.N)
    n = np.arange(N + 1, hi.N + 1)
    ratios = []
    for j, r in enumerate(RHO[0]):
        tail = math.fsum(np.abs(hi.S[0, N + 1:] * y[N + 1:] * abs(r) ** n).tolist())
        assert cap[0, j] >= tail, (name, al, be, link, rtol, r, cap[0, j], tail)
        if tail > 0:
            ratios.append(cap[0, j] / tail)
    return ratios


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["tanh", "silu", "gelu", "erf"]), st.floats(-1.2, 2.4),
       st.floats(-5.0, 5.0), st.sampled_from(["abs", "relu"]),
       st.sampled_from([1e-6, 1e-8, 1e-10, 1e-12]))
def test_block_estimate_bounds_the_tail(name, logal, be, link, rtol):
    _check(name, math.exp(logal), be, link, rtol)


def test_block_estimate_at_the_order_cap():
    # erf at |w| = 8.37, b = −8.78 against abs (the reference case erf_huge_abs_antiparallel of
    # test_accuracy_contract.py): the series stops at the order cap N = 4096 with the link's
    # tail spread far beyond it; the block estimate is below the whole-tail Cauchy–Schwarz
    # product √(t2_X t2_Y) that made the loss's false alarm there
    al = math.hypot(-6.62888927729148, 5.1243990178689725)
    uc = unit_coefficients("smooth", np.array([al]), np.array([-8.784546914518572]),
                           code=SMOOTH_CODES["erf"], rtol=1e-16)
    assert uc.N == 4096
    g = get_link("abs")
    y = g.coefficients_full(uc.N)
    plain = math.sqrt(uc.tails_S.t2[0] * (g.second_moment - math.fsum((y * y).tolist())))
    cap = M._link_block_trunc(uc, g, np.array([[-0.99999991]]))[0, 0]
    assert cap < 0.9 * plain, (cap, plain)
    # where the link's tail is concentrated near N (low orders) the plain product is the
    # smaller one and is kept: the block estimate is then above it
    assert _check("erf", 4.36, 1.54, "abs", 1e-6)
