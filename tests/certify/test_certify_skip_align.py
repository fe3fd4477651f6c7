"""certify.alignment for students with a linear skip (certify.skip.skip_alignment).

References: data/refs/skip_align_refs.json -- the AGOP M = s²Σ a_ia_j E[σ′_iσ′_j] w_iw_jᵀ + vvᵀ
+ qvᵀ + vqᵀ and its scores by pure mpmath at 40 digits (relu / leaky relu orthant
probabilities by quadrature, erf pair moments in closed form; random, mean-field, large-v and
degenerate geometry: duplicated, antiparallel, zero and tiny neurons), inputs as float64 hex
(data/_precompute/skip_align_refs.py), not popdyn code.  Each bracket must contain the reference,
be rigorous and resolved where the reference gap is wide, and be narrow (≤ 1e−8 when the gap
exceeds 1e−6 relative, the issue's width target).  Property: v = 0 gives the plain student's
bracket.
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import certify
import popdyn
from _refdata import load_refs, unhex as _h

_CASES = load_refs("skip_align_refs.json")["cases"]


def _build(inp):
    inp = {k: _h(v) for k, v in inp.items()}
    W = np.array(inp["W"])
    S = popdyn.Student(W.shape[1], W.shape[0], activation=inp["act"], scaling=inp["scaling"],
                       negative_slope=0.1, skip=True)
    p = popdyn.Params(np.array(inp["a"]), W, np.array(inp["b"]), inp["c"], np.array(inp["v"]))
    return S, p, np.array(inp["U"])


@pytest.mark.parametrize("case", _CASES, ids=[c["name"] for c in _CASES])
def test_skip_alignment_contains_mpmath(case):
    mp.mp.dps = 40
    S, p, U = _build(case["inputs"])
    ref = case["ref"]
    res = certify.alignment(S, p, U)
    assert res.provenance == "rigorous"
    lam1 = abs(mp.mpf(ref["lam"][0]))
    # eigenvalue enclosures contain the reference spectrum
    for k, lv in enumerate(ref["lam"]):
        assert mp.mpf(res.eigenvalues.lo[k]) <= mp.mpf(lv) <= mp.mpf(res.eigenvalues.hi[k])
    for name, gap in (("a_top", "gap_top"), ("a_mean", "gap_r"), ("a_min", "gap_r")):
        br = getattr(res, name)
        assert mp.mpf(br.lo) <= mp.mpf(ref[name]) <= mp.mpf(br.hi), (name, br, ref[name])
        if mp.mpf(ref[gap]) > mp.mpf("1e-6") * lam1:
            assert br.resolved, (name, br)
            assert br.width <= 1e-8, (name, br.width)


def test_skip_alignment_float_agrees():
    """popdyn's float64 skip AGOP scores lie within 1e−9 of the certified brackets (relu)."""
    from popdyn.diagnostics.agop import agop
    from popdyn.diagnostics.alignment import alignment
    case = next(c for c in _CASES if c["name"] == "relu_random")
    S, p, U = _build(case["inputs"])
    res = certify.alignment(S, p, U)
    f = alignment(agop(S, p, rtol=1e-12), U)
    for name in ("a_top", "a_mean", "a_min"):
        br = getattr(res, name)
        assert br.lo - 1e-9 <= getattr(f, name) <= br.hi + 1e-9


_PL = st.sampled_from(["relu", "leaky_relu"])
_F = st.floats(-1.5, 1.5, allow_nan=False, allow_subnormal=False)


@settings(max_examples=6, deadline=None)
@given(act=_PL, W=st.lists(_F, min_size=6, max_size=6), a=st.lists(_F, min_size=2, max_size=2),
       b=st.lists(_F, min_size=2, max_size=2))
def test_v_zero_gives_plain_bracket(act, W, a, b):
    """With v = 0 the skip AGOP is the plain AGOP: the brackets coincide."""
    W = np.array(W).reshape(2, 3)
    U = np.eye(3)[:2]
    p = popdyn.Params(np.array(a), W, np.array(b), 0.0, np.zeros(3))
    S = popdyn.Student(3, 2, activation=act, negative_slope=0.1, skip=True)
    P = popdyn.Student(3, 2, activation=act, negative_slope=0.1)
    rs = certify.alignment(S, p, U)
    rp = certify.alignment(P, popdyn.Params(np.array(a), W, np.array(b), 0.0), U)
    for name in ("a_top", "a_mean", "a_min", "gap", "gap_top"):
        x, y = getattr(rs, name), getattr(rp, name)
        assert (x.lo, x.hi, x.status) == (y.lo, y.hi, y.status), name
    assert np.array_equal(rs.eigenvalues.lo, rp.eigenvalues.lo)
    assert np.array_equal(rs.eigenvalues.hi, rp.eigenvalues.hi)


def test_skip_alignment_bad_subspace():
    S = popdyn.Student(3, 2, skip=True)
    p = S.init(0, 1.0)
    with pytest.raises(ValueError, match="U"):
        certify.alignment(S, p, np.ones((1, 4)))
    with pytest.raises(ValueError, match="orthonormal|U"):
        certify.alignment(S, p, np.array([[1.0, 1.0, 0.0]]))

