"""Timescale and exponent brackets (numerical, by step refinement) on systems with known exact
answers: Euler on dv/dt = −λv crosses the level ℓ at t* = ln(v0/ℓ)/λ; a sweep with
T(D) = c·D² gives an exponent bracket around 2.  Also the real engine: the release time of a
small GD run brackets consistently under refinement."""
import math

import numpy as np
import pytest

import popdyn
import certify
from certify import CertificationError
from certify.timescale import crossing_bracket


def _euler(lam, v0=1.0, T=10.0):
    def run(h):
        n = int(math.ceil(T / h))
        t = np.arange(n + 1) * h
        v = v0 * (1.0 - h * lam) ** np.arange(n + 1)
        return t, v
    return run


@pytest.mark.parametrize("lam,level", [(1.0, 0.1), (0.3, 0.5), (2.0, 1e-3)])
def test_crossing_time_contains_flow_value(lam, level):
    res = certify.timescale(_euler(lam), level, h=0.02)
    exact = math.log(1.0 / level) / lam
    assert res.time.provenance == "numerical"
    assert res.time.contains(exact)
    assert res.time.width < 0.1 * exact


def test_crossing_bracket_exact_for_recorded_process():
    b = crossing_bracket([0.0, 1.0, 2.0, 3.0], [1.0, 0.8, 0.4, 0.1], 0.5)
    assert (b.lo, b.hi) == (1.0, 2.0)
    with pytest.raises(CertificationError, match="longer"):
        crossing_bracket([0.0, 1.0], [1.0, 0.9], 0.5)
    with pytest.raises(ValueError):
        crossing_bracket([0.0, 0.0], [1.0, 0.9], 0.5)


def test_non_converging_refinement_raises():
    def run(h):                       # crossing time jumps around with h: not asymptotic
        t = np.linspace(0, 10, 1001)
        shift = {0.1: 2.0, 0.05: 5.0, 0.025: 1.0}.get(round(h, 6), 0.0)
        return t, np.where(t < 3 + shift, 1.0, 0.0)
    with pytest.raises(CertificationError, match="finer step"):
        certify.timescale(run, 0.5, h=0.1)


def test_scaling_exponent():
    D = np.array([2.0, 4.0, 8.0, 16.0])
    brackets = [certify.Bracket(0.99 * 3 * d ** 2, 1.01 * 3 * d ** 2, provenance="numerical")
                for d in D]
    ex = certify.scaling_exponent(D, brackets)
    assert ex.slope.contains(2.0) and ex.slope.width < 0.05
    assert all(b.contains(2.0) for b in ex.local)
    assert ex.provenance == "numerical"
    with pytest.raises(ValueError):
        certify.scaling_exponent([1.0, 1.0], brackets[:2])


def test_engine_release_time():
    """Crossing of the normalized loss 0.9 by a small GD run (flow time), refined."""
    T = popdyn.Teacher.network("relu", [1.0], np.array([[1.0, 0.0, 0.0]]))
    S = popdyn.Student(d=3, m=2, bias=False, intercept=False)
    p0 = S.init(0, 0.3)

    def run(h):
        tr = popdyn.train(S, p0, T, method="gd", lr=h, max_time=8.0, max_updates=10 ** 6,
                          schedule=popdyn.Schedule(every=10 ** 9))
        return tr.t, tr.normalized_loss

    res = certify.timescale(run, 0.9, h=0.2)
    assert res.time.lo < res.time.hi
    fine = run(0.0125)
    tc = crossing_bracket(*fine, 0.9)
    assert res.time.overlaps(tc)
