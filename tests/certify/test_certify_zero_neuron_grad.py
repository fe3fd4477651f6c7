"""certify.loss(grad=True): the gradient entries of a zero neuron (w_j = 0) are rigorous.

For a neuron with w_j = 0 the unit is the constant σ(b_j), so its gradient entries reduce to
one-dimensional Gaussian expectations with closed forms (L = ½E[(f − y)²], f = s Σ a_i σ_i +
v·x + c):

    ∂L/∂b_j = s a_j σ′(b_j) E[f − y],     ∂L/∂a_j = s σ(b_j) E[f − y] + s E[σ′_j] (w_j·v),
    ∂L/∂w_j = s a_j σ′(b_j) E[x (f − y)],  ∂L/∂c = E[f − y],
    E[f − y]   = s Σ_i a_i E[σ(α_i z + b_i)] + c − E[y],
    E[x(f − y)] = s Σ_i a_i E[σ′(α_i z + b_i)] w_i + v − E[y x]     (Stein's lemma),

with E[relu-family] by the textbook ramp formulas, E[erf(αz + β)] = erf(β/√(1 + 2α²)), and for
the teacher y = Σ_t v*_t g(u_t·x) with a raw float64 row u (|u|² ≠ 1 in general):
E[He_n(u·x)] = 0 (n odd), E[He_2(u·x)] = |u|² − 1, E[He_3′(u·x)] = 3(|u|² − 1),
E[relu(u·x)] = |u|/√(2π), E[relu′(u·x)] = ½.  All evaluated in mpmath at 50 digits from the
exact float64 inputs (no popdyn / certify moment code): an independent closed-form reference.

Pinned: cases 100 and 115 of ``benchmarks/soak_certify.py`` at seed 19000 (leaky relu,
mean-field, zero neuron, teachers h2 and h3+0.3h2), whose ∂L/∂b_1 bracket excluded the truth
0.036772185691369162382 by 2.4e−16 (the Arb and mpmath soak references agree): the
constant-unit branch of the polynomial-link gradient moments dropped E[σ′(b) H_t] =
σ′(b)Ĥ_0 and E[σ′(b) H_t′] = σ′(b)Ĥ_1/α_t, which are ~1e−16 (not 0) for a float64 teacher row.
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import certify
import popdyn

from _refdata import unhex

SLOPE = 0.1

# exact float64 inputs (hex) of soak cases 100 and 115 (benchmarks/soak_certify.py draw_skip,
# seed 19000)
CASES = {
    "soak19000_case100": dict(
        act="leaky_relu", scaling="mean_field", link="h2",
        W=[["0x1.6a33cb8228442p-1", "-0x1.1078e2f512527p+0", "0x1.23050b9e0dd40p-2"],
           ["0x0.0p+0", "0x0.0p+0", "0x0.0p+0"],
           ["-0x1.454e7ffe82344p+0", "-0x1.de7c681b11040p-5", "-0x1.b47b3451bc3b2p-3"]],
        a=["-0x1.192ce9ccb08e6p-1", "-0x1.3e8bfa6efbb2ap+0", "0x1.1b1f06fd8df7ap+0"],
        b=["0x1.55c1f7d5d62b0p-4", "0x1.999999999999ap-2", "-0x1.22b43bbcea0ebp-1"],
        v=["0x0.0p+0", "0x0.0p+0", "0x0.0p+0"], c="0x1.999999999999ap-4",
        u=["-0x1.436e62a11a298p-2", "0x1.6f904c01eb4d1p-2", "-0x1.c1af46b73179ap-1"]),
    "soak19000_case115": dict(
        act="leaky_relu", scaling="mean_field", link="h3+0.3h2",
        W=[["-0x1.259ec3cb05f2fp-3", "-0x1.d03c136f25d2cp-1", "-0x1.64aa1fa50755cp-3"],
           ["0x0.0p+0", "0x0.0p+0", "0x0.0p+0"]],
        a=["-0x1.dbc9103559863p-1", "0x1.6470c7b28507ep-1"],
        b=["-0x1.c24a83ec9776fp-6", "-0x1.999999999999ap-2"],
        v=["0x0.0p+0", "0x0.0p+0", "0x0.0p+0"], c="0x1.999999999999ap-4",
        u=["-0x1.68646c7bc1310p-3", "-0x1.ea08bc691c4cap-1", "-0x1.d778f4f94bc36p-3"]),
}


# ------------------------------------------------------------------ closed-form reference
def _act(act):
    """(σ(β), σ′(β), E[σ(αZ + β)], E[σ′(αZ + β)]) closed forms in mpmath (α ≥ 0)."""
    if act == "erf":
        def mean(al, be):
            return mp.erf(be / mp.sqrt(1 + 2 * al * al))

        def dmean(al, be):
            q = 1 + 2 * al * al
            return 2 / mp.sqrt(mp.pi) / mp.sqrt(q) * mp.exp(-be * be / q)
        return (mp.erf, lambda t: 2 / mp.sqrt(mp.pi) * mp.exp(-t * t), mean, dmean)
    p, q = (1, 0) if act == "relu" else (1 - mp.mpf(SLOPE), mp.mpf(SLOPE))

    def sig(t):
        return p * max(t, 0) + q * t

    def dsig(t):                       # relu′(0) = 0 (the float side's convention)
        return p * (1 if t > 0 else 0) + q

    def mean(al, be):
        if al == 0:
            return sig(be)
        h = be / al
        return p * (al * mp.npdf(h) + be * _ncdf(h)) + q * be

    def dmean(al, be):
        return dsig(be) if al == 0 else p * _ncdf(be / al) + q
    return sig, dsig, mean, dmean


def _ncdf(h):
    """Φ(h); beyond |h| = 1e3 by the Mills-ratio series φ(h)/|h|·(1 − h⁻² + 3h⁻⁴) (next term
    15h⁻⁶: far below 50 digits), since mpmath's erfc overflows near |h| = 1e270."""
    if h < -1000:
        return mp.npdf(h) / (-h) * (1 - 1 / h ** 2 + 3 / h ** 4)
    if h > 1000:
        return 1 - mp.npdf(h) / h * (1 - 1 / h ** 2 + 3 / h ** 4)
    return mp.ncdf(h)


def _teacher(link, u):
    """(E[y], E[y x]) of y = g(u·x), u a raw row (mpf list), exactly."""
    n2 = mp.fsum(x * x for x in u)
    if link == "h2":                   # He2/√2
        return (n2 - 1) / mp.sqrt(2), [mp.mpf(0)] * len(u)
    if link == "h3+0.3h2":             # He3/√6 + 0.3 He2/√2; (He3)′ = 3He2
        ey = mp.mpf(3) / 10 * (n2 - 1) / mp.sqrt(2)
        return ey, [3 * (n2 - 1) / mp.sqrt(6) * x for x in u]
    if link == "relu":
        return mp.sqrt(n2) / mp.sqrt(2 * mp.pi), [x / 2 for x in u]
    raise ValueError(link)


def zero_neuron_reference(act, scaling, W, a, b, v, c, link, u):
    """{(name, index): value} of ∂L/∂b_j, ∂L/∂a_j, ∂L/∂w_j of every zero row j and ∂L/∂c."""
    mp.mp.dps = 50
    W = [[mp.mpf(x) for x in r] for r in W]
    a, b, v, u = ([mp.mpf(x) for x in y] for y in (a, b, v, u))
    c = mp.mpf(c)
    m, d = len(W), len(W[0])
    s = mp.mpf(1) if scaling == "standard" else mp.mpf(1) / m
    sig, dsig, mean, dmean = _act(act)
    al = [mp.sqrt(mp.fsum(x * x for x in r)) for r in W]
    ey, eyx = _teacher(link, u)
    e = s * mp.fsum(a[i] * mean(al[i], b[i]) for i in range(m)) + c - ey
    ex = [s * mp.fsum(a[i] * dmean(al[i], b[i]) * W[i][k] for i in range(m)) + v[k] - eyx[k]
          for k in range(d)]
    out = {("c", ()): e}
    for j in range(m):
        if al[j] != 0:
            continue
        out[("b", (j,))] = s * a[j] * dsig(b[j]) * e
        out[("a", (j,))] = s * sig(b[j]) * e                 # w_j·v = 0
        for k in range(d):
            out[("W", (j, k))] = s * a[j] * dsig(b[j]) * ex[k]
    return out


def _build(act, scaling, W, a, b, v, c, link, u, skip=True):
    W = np.array(W, dtype=float)
    S = popdyn.Student(W.shape[1], W.shape[0], activation=act, scaling=scaling,
                       negative_slope=SLOPE, skip=skip)
    kw = dict(v=np.array(v, dtype=float)) if skip else {}
    p = popdyn.Params(np.array(a, dtype=float), W, np.array(b, dtype=float), float(c), **kw)
    T = popdyn.Teacher.additive(link, np.array([u], dtype=float), np.array([1.0]))
    return S, p, T


def _check(S, p, T, ref):
    res = certify.loss(S, p, T, grad=True)
    assert res.provenance == "rigorous"
    for (name, idx), val in ref.items():
        br = res.grad[name]
        lo, hi = (br.lo, br.hi) if name == "c" else (br.lo[idx], br.hi[idx])
        assert mp.mpf(float(lo)) <= val <= mp.mpf(float(hi)), (name, idx, lo, hi, val)
        # the width stays at the rounding level of the moments
        assert float(hi) - float(lo) <= 1e-14 * max(abs(float(val)), 1e-3)


@pytest.mark.parametrize("key", sorted(CASES))
def test_soak_zero_neuron_gradient_bracket(key):
    inp = unhex(CASES[key])
    S, p, T = _build(inp["act"], inp["scaling"], inp["W"], inp["a"], inp["b"], inp["v"],
                     inp["c"], inp["link"], inp["u"])
    assert np.array_equal(T.U[0], np.array(inp["u"]))       # the teacher row is used raw
    ref = zero_neuron_reference(inp["act"], inp["scaling"], inp["W"], inp["a"], inp["b"],
                                inp["v"], inp["c"], inp["link"], inp["u"])
    _check(S, p, T, ref)


def test_soak_case100_truth_pinned():
    """The closed form reproduces the soak's Arb / mpmath truth of ∂L/∂b_1 (case 100)."""
    inp = unhex(CASES["soak19000_case100"])
    ref = zero_neuron_reference(inp["act"], inp["scaling"], inp["W"], inp["a"], inp["b"],
                                inp["v"], inp["c"], inp["link"], inp["u"])
    assert abs(ref[("b", (1,))] - mp.mpf("0.036772185691369162382")) < mp.mpf("1e-21")


_f = st.floats(-1.5, 1.5, allow_nan=False, allow_infinity=False)


@settings(max_examples=30, deadline=None)
@given(act=st.sampled_from(["relu", "leaky_relu", "erf"]),
       scaling=st.sampled_from(["standard", "mean_field"]),
       link=st.sampled_from(["h2", "h3+0.3h2", "relu"]),
       skip=st.booleans(), d=st.integers(2, 4), m=st.integers(2, 3),
       data=st.data())
def test_zero_neuron_gradient_contains_closed_form(act, scaling, link, skip, d, m, data):
    """Property: a zero neuron's gradient brackets contain the closed form, for a teacher row
    normalized in float64 (|u|² − 1 ~ 1e−16, the case that exposed the dropped Ĥ_0, Ĥ_1).
    The erf gradient is certified for skip students only (certify.skip)."""
    skip = skip or act == "erf"
    W = [[data.draw(_f) for _ in range(d)] for _ in range(m)]
    j = data.draw(st.integers(0, m - 1))
    W[j] = [0.0] * d
    a = [data.draw(_f) for _ in range(m)]
    b = [data.draw(_f) for _ in range(m)]
    b[j] = data.draw(st.sampled_from([-0.5, -0.4, 0.3, 0.4, 0.5]))
    v = [data.draw(_f) for _ in range(d)] if skip else [0.0] * d
    u = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).standard_normal(d)
    u = list(u / np.linalg.norm(u))                     # |u|² = 1 ± a few ulps
    c = data.draw(_f)
    S, p, T = _build(act, scaling, W, a, b, v, c, link, u, skip=skip)
    ref = zero_neuron_reference(act, scaling, W, a, b, v, c, link, u)
    _check(S, p, T, ref)


def test_far_threshold_unit_beside_zero_neuron():
    """A unit with |w| = 1.2e−174 and b = 1 (threshold h = 8e173, h²/2 beyond float64) beside
    the zero neuron: Owen's T takes its crude enclosure instead of refusing (found by the soak
    profile: relu, standard scaling, relu link, d = m = 2)."""
    d = 2
    W = [[0.0, 0.0], [0.0, 1.1947180445550066e-174]]
    a, b, v, c = [0.0, 0.0], [-0.5, 1.0], [0.0] * d, 0.0
    u = np.random.default_rng(0).standard_normal(d)
    u = list(u / np.linalg.norm(u))
    S, p, T = _build("relu", "standard", W, a, b, v, c, "relu", u, skip=False)
    ref = zero_neuron_reference("relu", "standard", W, a, b, v, c, "relu", u)
    _check(S, p, T, ref)
    # the far threshold on the other side (b = −1, |w| = 1.4e−272: a unit that is never on)
    W2, b2 = [[0.0, 0.0], [0.0, 1.3682548861692306e-272]], [-0.5, -1.0]
    S, p, T = _build("relu", "standard", W2, a, b2, v, c, "h2", u, skip=False)
    _check(S, p, T, zero_neuron_reference("relu", "standard", W2, a, b2, v, c, "h2", u))
