"""Certified SwiGLU brackets (certify.swiglu): soundness against independent references.

References used (none computed by the code under test):
* SiLU Hermite coefficients and energies: mpmath ``quad`` at 40 digits of sympy's exact
  derivatives of w/(1 + e^{−w}) against mpmath's Hermite polynomials;
* the SwiGLU loss and AGOP: data/refs/swiglu_refs.json (pure-mpmath 2-D quadrature,
  data/_precompute/swiglu_refs.py, quadrature self-check < 1e−15 relative -- so the comparison
  slack is 1e−14 relative, far above that and far below any meaningful error);
* the float64 engine (itself tested against that reference) within its stated error, for
  random configurations (hypothesis).
"""
import json
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
import sympy
from flint import arb
from hypothesis import example, given, settings
from hypothesis import strategies as st

import certify
import popdyn
from certify import _arb as A
from certify.bracket import Bracket
from certify.errors import CertificationError
from certify.swiglu import silu_hermite_enclosures, swiglu_agop_enclosure
from popdyn import SwiGLUParams, SwiGLUStudent, Teacher

REFS = json.loads((Path(__file__).resolve().parents[2] / "data" / "refs"
                   / "swiglu_refs.json").read_text())

_w = sympy.Symbol("w")
_SILU = [sympy.lambdify(_w, sympy.diff(_w / (1 + sympy.exp(-_w)), _w, p), "mpmath")
         for p in range(5)]


def _mp_coeff(p, al, n):
    with mp.workdps(40):
        f = lambda z: (_SILU[p](al * z) * mp.hermite(n, z / mp.sqrt(2)) * mp.mpf(2) ** (-mp.mpf(n) / 2)
                       * mp.npdf(z))
        return mp.quad(f, [-mp.inf, -3, 0, 3, mp.inf]) / mp.sqrt(mp.factorial(n))


def _mp_energy(p, q, al):
    with mp.workdps(40):
        f = lambda z: _SILU[p](al * z) * _SILU[q](al * z) * mp.npdf(z)
        return mp.quad(f, [-mp.inf, -3, 0, 3, mp.inf])


def _inside(ball, ref, slack=mp.mpf(10) ** -32):
    lo, hi = A.arb_bounds(ball)
    return mp.mpf(lo) - slack <= ref <= mp.mpf(hi) + slack


@pytest.mark.parametrize("al", [0.37, 1.9])
def test_silu_coefficients_enclose_mpmath(al):
    N = 24
    T, E = silu_hermite_enclosures([arb(al)], N, prec=128)
    for p in (0, 2, 4):
        for n in (0, 24):
            ref = _mp_coeff(p, mp.mpf(al), n)
            assert _inside(T[p][0, n], ref), (p, n)
            assert A.upper(T[p][0, n].rad()) < 1e-30
    for (p, q) in ((0, 0), (4, 4)):
        ref = _mp_energy(p, q, mp.mpf(al))
        assert _inside(E[(p, q)][0], ref), (p, q)
        assert A.upper(E[(p, q)][0].rad()) < 1e-30


@pytest.mark.parametrize("al", [0.37, 7.5])
def test_every_derivative_and_order_encloses_mpmath(al):
    """σ′ … σ‴ and σ come from σ⁗ through the recurrence α T^{(p+1)}_{n−1} = √n T^{(p)}_n:
    every derivative at low and high orders (both parities, where the recurrence amplifies the
    radius most: α = 7.5 near the cap 8, n = 1 … 4) against 40-digit mpmath, with radii
    < 1e−30, and the orders of the other parity exactly 0."""
    N = 24
    T, _ = silu_hermite_enclosures([arb(al)], N, prec=128)
    even = (0, 2, 4)                 # σ − x/2, σ″, σ⁗ even; σ′ − 1/2, σ‴ odd
    for p in range(5):
        for n in (0, 1, 2, 3, 4, 23, 24):
            zero_by_parity = (n % 2 == 1) if p in even else (n % 2 == 0)
            if zero_by_parity and not (p == 0 and n == 1) and not (p == 1 and n == 0):
                assert T[p][0, n] == 0, (p, n)
                continue
            ref = _mp_coeff(p, mp.mpf(al), n)
            assert _inside(T[p][0, n], ref), (p, n)
            assert A.upper(T[p][0, n].rad()) < 1e-30, (p, n, T[p][0, n].rad())


def test_zero_gate_is_exact():
    T, E = silu_hermite_enclosures([arb(0)], 6)
    assert [float(T[p][0, 0].mid()) for p in range(5)] == [0.0, 0.5, 0.5, 0.0, -0.5]
    assert all(T[p][0, n] == 0 for p in range(5) for n in range(1, 7))


def _case(teacher):
    c = next(c for c in REFS["cases"] if c["teacher"] == teacher)
    U = np.eye(REFS["d"])[:2]
    T = Teacher.additive("h3", U[:1]) if teacher == "h3" else Teacher.gated(teacher, U)
    S = SwiGLUStudent(REFS["d"], len(c["a"]))
    return S, SwiGLUParams(c["a"], c["G"], c["V"], c["c"]), T, c["ref"]


def _near(b: Bracket, ref: str, rel=1e-14):
    v = float(ref)
    e = rel * max(abs(v), 1e-300)
    return b.overlaps(Bracket.enclosing(v - e, v + e))


def test_loss_and_agop_enclose_the_mpmath_reference():
    S, p, T, ref = _case("h3")
    res = certify.loss(S, p, T)
    assert res.provenance == "rigorous"
    assert _near(res.loss, ref["loss"])
    assert res.loss.width <= 1e-13 * res.loss.hi
    assert _near(res.variance, str(float(ref["Ey2"]) - float(T.mean) ** 2))
    M = swiglu_agop_enclosure(S, p)
    R = np.array(ref["agop"], dtype=float)
    scale = np.max(np.abs(R))
    lo, hi = A.mat_bounds(M)
    assert np.all(lo - 1e-14 * scale <= R) and np.all(R <= hi + 1e-14 * scale)
    assert np.max(hi - lo) <= 1e-13 * scale


@pytest.mark.parametrize("gate", ["id", "gelu", "rotation"])
def test_gated_teachers_get_rigorous_brackets(gate):
    """Gated teachers: rigorous (certify.swiglu_gated)."""
    S, p, T, ref = _case(gate)
    res = certify.loss(S, p, T)
    assert res.provenance == "rigorous"
    assert _near(res.loss, ref["loss"])


LINKS = ["h1", "h2", "h3", "h4", "h3+0.3h2"]


@settings(max_examples=8)
@given(st.integers(0, 10 ** 6), st.sampled_from(LINKS), st.sampled_from(["random", "parallel",
                                                                        "duplicate", "zero"]),
       st.floats(0.2, 1.5))
@example(3, "h3+0.3h2", "duplicate", 1.0)
@example(5, "h2", "parallel", 1.3)
@example(1000000, "h1", "duplicate", 1.5)     # cancellation: 3e-12 wide at 128 bits (retried)
def test_loss_contains_engine_value(seed, link, mode, scale):
    rng = np.random.default_rng(seed)
    d, m = 4, 3
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    T = Teacher.additive(link, U, [1.0, 0.5])
    S = SwiGLUStudent(d, m)
    p = S.init(seed, scale, T)
    G, V = p.G.copy(), p.V.copy()
    if mode == "parallel":        # value ∥ gate, and a gate along a teacher axis
        V[0] = 0.75 * G[0]
        G[1] = U[0] * np.linalg.norm(G[1])
    elif mode == "duplicate":     # duplicated and antiparallel gates
        G[1] = G[0]
        G[2] = -0.5 * G[0]
    elif mode == "zero":
        G[2] = 0.0
    p = p.replace(G=G, V=V)
    res = certify.loss(S, p, T)
    L, info = popdyn.population_loss(S, p, T, full_output=True)
    tol = info["error"] + 64 * np.finfo(float).eps * abs(L)
    assert res.provenance == "rigorous"
    assert res.loss.lo - tol <= L <= res.loss.hi + tol
    assert res.loss.width <= 1e-12 * max(res.loss.hi, 1e-300)
    al = certify.alignment(S, p, U)
    fl = popdyn.alignment(popdyn.agop(S, p), U)
    for name in ("a_min", "a_mean", "a_top"):
        b = getattr(al, name)
        if b.status == "resolved":
            assert b.lo - 1e-9 <= getattr(fl, name) <= b.hi + 1e-9, name


def test_brackets_narrow_with_prec():
    S, p, T, _ = _case("h3")
    w64 = certify.loss(S, p, T, prec=64).loss.width
    w192 = certify.loss(S, p, T, prec=192).loss.width
    assert w192 < w64


def test_alignment_contains_float_value_and_bad_input():
    S, p, T, _ = _case("h3")
    U = np.eye(REFS["d"])[:1]
    res = certify.alignment(S, p, U)
    fl = popdyn.alignment(popdyn.agop(S, p), U)
    assert res.provenance == "rigorous"
    assert res.a_top.contains(fl.a_top) or res.a_top.status == "unresolved"
    with pytest.raises(ValueError, match="prec"):
        certify.loss(S, p, T, prec=1)
    with pytest.raises(CertificationError, match="gradient"):
        certify.loss(S, p, T, grad=True)
    bad = p.replace(G=np.where(np.eye(*p.G.shape) > 0, np.nan, p.G))
    with pytest.raises(ValueError, match="finite"):
        certify.loss(S, bad, T)
    big = p.replace(G=p.G * 50.0)
    with pytest.raises(CertificationError, match="gate norm"):
        certify.alignment(S, big, U)


def test_gated_teacher_with_ordinary_student_is_rigorous():
    """Issue 19: rigorous loss / refit brackets (certify.gated; tests/certify/
    test_certify_gated_rigorous.py); the gradient stays refused, naming the teacher kind."""
    U = np.eye(4)[:2]
    T = Teacher.gated("gelu", U)
    S = popdyn.Student(4, 3)
    p = S.init(0, 0.5, T)
    assert certify.loss(S, p, T).provenance == "rigorous"
    with pytest.raises(CertificationError, match="gated"):
        certify.loss(S, p, T, grad=True)
    assert certify.refit_risk(S, p, T).provenance == "rigorous"
    assert certify.alignment(S, p, U).provenance == "rigorous"


def test_loss_retries_at_twice_the_precision_when_cancellation_widens_it():
    """Duplicated and antiparallel gates: the 128-bit bracket is 3e-12 wide (relative), above
    certify.swiglu.LOSS_WIDTH, so it is recomputed at 256 bits; the two brackets overlap."""
    from certify import swiglu as CS

    rng = np.random.default_rng(1000000)
    U = np.linalg.qr(rng.standard_normal((4, 2)))[0].T
    T = Teacher.additive("h1", U, [1.0, 0.5])
    S = SwiGLUStudent(4, 3)
    p = S.init(1000000, 1.5, T)
    G = p.G.copy()
    G[1] = G[0]
    G[2] = -0.5 * G[0]
    p = p.replace(G=G)
    lo_prec = CS._rigorous_loss(S, p, T, CS._teacher_poly(T), 128)[0]
    assert lo_prec.width > CS.LOSS_WIDTH * lo_prec.hi
    res = certify.loss(S, p, T)
    assert res.prec == 256 and res.loss.width <= CS.LOSS_WIDTH * res.loss.hi
    assert res.loss.lo <= lo_prec.hi and lo_prec.lo <= res.loss.hi
    assert certify.loss(S, p, T, prec=512).prec == 512           # no retry above 128 bits
