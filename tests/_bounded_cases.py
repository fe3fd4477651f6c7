"""The stored cases of data/refs/bounded_refit_refs.json as popdyn objects, and the exact
feasibility test of a refit head (shared by the float and the certified bounded-refit tests)."""
from fractions import Fraction

import numpy as np

import popdyn


def hx(L):
    """An array from a list of float.hex strings (the stored exact float64 inputs)."""
    return np.array([float.fromhex(x) for x in L])


def exact_feasible(v, a, b) -> bool:
    """‖v‖₂ ≤ a and ‖v‖₁ ≤ b in exact rational arithmetic."""
    q = [Fraction(float(x)) for x in v]
    return sum(x * x for x in q) <= Fraction(a) ** 2 and sum(abs(x) for x in q) <= Fraction(b)


def build(case):
    """(student, params, teacher, l2_cap, l1_cap) of a population reference case."""
    m, d = case["m"], case["d"]
    t = case["teacher"]
    if t["kind"] == "additive":
        T = popdyn.Teacher.additive(t["link"], hx(t["U"]).reshape(2, d), hx(t["kappa"]))
    else:
        T = popdyn.Teacher.network(t["activation"], hx(t["V"]), hx(t["U"]).reshape(2, d),
                                   hx(t["bias"]))
    S = popdyn.Student(d=d, m=m, activation=case["activation"],
                       negative_slope=float.fromhex(case["negative_slope"]))
    p = popdyn.Params(np.ones(m), hx(case["W"]).reshape(m, d), hx(case["b"]))
    return S, p, T, float.fromhex(case["l2_cap"]), float.fromhex(case["l1_cap"])
