"""The Bracket type: exact semantics of float inputs, outward conversion of Arb balls, no
truthiness, three-valued comparisons only through explicit methods (STYLE items 6-7)."""
import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb
from hypothesis import given, strategies as st

from certify import Bracket, BracketArray, Undecided
from certify import _arb as A

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


def test_basic_fields_and_exact_float_semantics():
    b = Bracket(0.1, 0.1)
    assert b.contains(0.1)
    assert not b.contains(Fraction(1, 10))          # 0.1 the float is not 1/10
    assert b.width == 0.0 and b.rad == 0.0 and b.mid == 0.1
    c = Bracket.enclosing(Fraction(1, 10))
    assert c.lo < 0.1 <= c.hi or c.lo <= 0.1 < c.hi
    assert c.contains(Fraction(1, 10)) and c.width > 0


def test_no_truth_value_and_no_ordering():
    b = Bracket(0.0, 1.0)
    with pytest.raises(TypeError):
        bool(b)
    with pytest.raises(TypeError):
        b < Bracket(2.0, 3.0)
    with pytest.raises(TypeError):
        if b:
            pass


def test_comparisons():
    a, b, c = Bracket(0.0, 1.0), Bracket(2.0, 3.0), Bracket(0.5, 2.5)
    assert a.certainly_lt(b) and not a.certainly_lt(c) and a.possibly_lt(c)
    assert b.certainly_gt(a) and c.possibly_gt(b) and not c.certainly_gt(b)
    assert a.certainly_le(Bracket(1.0, 2.0)) and not a.certainly_lt(Bracket(1.0, 2.0))
    assert a.decide_lt(b) is True and b.decide_lt(a) is False
    with pytest.raises(Undecided):
        a.decide_lt(c)
    assert a.certainly_lt(1.5) and a.possibly_ge(0.5)


def test_intersection_union_and_empty():
    a, b = Bracket(0.0, 1.0), Bracket(0.5, 2.0, provenance="numerical")
    i = a.intersection(b)
    assert (i.lo, i.hi, i.provenance) == (0.5, 1.0, "numerical")
    assert a.union(b).hi == 2.0
    with pytest.raises(ValueError):
        a.intersection(Bracket(1.5, 2.0))
    with pytest.raises(ValueError):
        Bracket(1.0, 0.0)
    with pytest.raises(ValueError):
        Bracket(math.nan, 1.0)
    with pytest.raises(ValueError):
        Bracket(0.0, 1.0, provenance="proved")


def test_immutable():
    b = Bracket(0.0, 1.0)
    with pytest.raises(Exception):
        b.lo = 0.5
    arr = BracketArray(np.zeros(3), np.ones(3))
    with pytest.raises(AttributeError):
        arr.lo = None
    with pytest.raises(ValueError):
        arr.lo[0] = 1.0


def test_unresolved_whole_range_is_never_a_point():
    u = Bracket.whole(0.0, 1.0, note="gap not certified")
    assert u.status == "unresolved" and u.lo == 0.0 and u.hi == 1.0


@given(finite, st.floats(min_value=0, max_value=1e10))
def test_mid_rad_cover(x, w):
    b = Bracket.enclosing(Fraction(x), Fraction(x) + Fraction(w))
    if math.isinf(b.rad):
        return
    m, r = Fraction(b.mid), Fraction(b.rad)
    assert m - r <= Fraction(b.lo) and Fraction(b.hi) <= m + r


@given(st.integers(min_value=1, max_value=10 ** 12), st.integers(min_value=1, max_value=10 ** 12),
       st.sampled_from([24, 53, 64, 128]))
def test_from_arb_outward(p, q, prec):
    with A.workprec(prec):
        x = arb(p) / q
    b = Bracket.from_arb(x)
    assert b.contains(Fraction(p, q))


def test_from_arb_extreme_exponents():
    with A.workprec(64):
        tiny = (arb(-10) ** 5).exp()            # e^-100000: below the float range
        big = (arb(10) ** 5).exp()
    bt, bb = Bracket.from_arb(tiny), Bracket.from_arb(big)
    assert bt.lo == 0.0 and bt.hi > 0.0
    assert bb.hi == math.inf and bb.lo > 1e300


def test_bracket_array():
    arr = BracketArray([[0.0, 1.0]], [[0.5, 2.0]], provenance="numerical")
    assert arr.contains(np.array([[0.25, 1.5]])) and not arr.contains(np.array([[0.75, 1.5]]))
    assert arr[0, 1].provenance == "numerical" and arr[0, 1].hi == 2.0
    with pytest.raises(TypeError):
        bool(arr)
