"""certify.arrays: popdyn.assembly's lines evaluated in ball arithmetic enclose the exact value
of each formula at the exact float64 inputs (written out in exact rationals in
tests/popdyn/test_assembly.py), and the float64 values lie within rounding of the balls."""
import sys
from fractions import Fraction as Fr
from pathlib import Path

import numpy as np
import pytest
from flint import arb
from hypothesis import given, settings
from hypothesis import strategies as st

from certify import _arb as A
from certify.arrays import ARB, Vec, as_vec, col, vec
from popdyn import assembly as asm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "popdyn"))
from test_assembly import exact_grad, exact_loss, random_moments  # noqa: E402


def _contains(ball, q: Fr) -> bool:
    """Whether the ball contains the rational q (exactly: both ends as rationals)."""
    lo, hi = A.arb_bounds(ball)
    return Fr(lo) <= q <= Fr(hi)


def _balls(M):
    out = {}
    for key, x in M.items():
        if isinstance(x, float):
            out[key] = arb(x)
        elif x.ndim == 1:
            out[key] = vec(x)
        else:
            out[key] = A.mat_from_array(x)
    return out


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2 ** 20), st.integers(1, 5), st.integers(1, 4), st.integers(1, 3),
       st.booleans(), st.booleans())
def test_arb_context_encloses_the_exact_formulas(seed, m, d, k, bias, intercept):
    M = random_moments(seed, m, d, k)
    X = _balls(M)
    with A.workprec(128):
        L = asm.ridge_loss(ARB, X["s"], X["a"], X["c"], X["C"], X["mu0"], X["Ct"], X["v"],
                           X["ey"], X["ey2"])
        ga, gW, gb, gc = asm.ridge_grad(
            ARB, X["s"], X["a"], X["W"], X["c"], bias, intercept, X["theta"], X["C"], X["B"],
            X["A"], X["D"], X["mu0"], X["mu1"], X["mu2"], X["Ct"], X["Bt"], X["At"], X["Dt"],
            X["v"], X["vU"], X["ey"])
    assert _contains(L, exact_loss(M))
    ega, egW, egb, egc = exact_grad(M)
    assert all(_contains(x, e) for x, e in zip(ga, ega))
    assert all(_contains(gW[i, j], egW[i, j]) for i in range(m) for j in range(d))
    assert (gb is None) != bias and (gc is None) != intercept
    if bias:
        assert all(_contains(x, e) for x, e in zip(gb, egb))
    if intercept:
        assert _contains(gc, egc)
    # the float64 lines lie within rounding of the balls (the balls are ~2^-120 wide)
    Lf = asm.ridge_loss(asm.NUMPY, M["s"], M["a"], M["c"], M["C"], M["mu0"], M["Ct"], M["v"],
                        M["ey"], M["ey2"])
    assert abs(Lf - float(L.mid())) <= 1e-12 * (1.0 + abs(Lf))


def test_vectors_and_symmetrization():
    x, y = vec([1.0, 2.0]), vec([0.5, -1.0])
    assert [float(u) for u in (x + y)] == [1.5, 1.0]
    assert [float(u) for u in (x * y)] == [0.5, -2.0]
    assert [float(u) for u in (2 * x - y)] == [1.5, 5.0]
    assert [float(u) for u in (x / 2)] == [0.5, 1.0]
    assert float(ARB.vdot(x, y)) == -1.5
    assert [float(u) for u in as_vec(col(x))] == [1.0, 2.0]
    with pytest.raises(ValueError, match="lengths"):
        x + Vec([arb(1)])
    S = A.mat_from_array(np.array([[1.0, 2.0], [4.0, 3.0]]))
    T = ARB.sym(S)
    assert float(T[0, 1]) == float(T[1, 0]) == 3.0
    # an entry whose mirror is the same ball is kept bit for bit (float64 keeps ½(x + x) = x)
    b = arb(1) / 3
    P = A.mat_from_array(np.zeros((2, 2))) + ARB.outer(Vec([arb(1), b]), Vec([arb(1), b]))
    U = ARB.sym(P)
    assert P[0, 1].mid() == P[1, 0].mid() and P[0, 1].rad() == P[1, 0].rad()
    assert U[0, 1].mid() == P[0, 1].mid() and U[0, 1].rad() == P[0, 1].rad()
    Q = (P[0, 1] + P[1, 0]) / 2
    assert Q.rad() > P[0, 1].rad()          # what averaging the same ball would have cost
