"""SwiGLU students and gated teachers against the independent 30-digit mpmath reference.

The reference (data/refs/swiglu_refs.json) comes from data/_precompute/swiglu_refs.py: pure
mpmath, Gaussian conditioning on the span of the non-linear directions and tensor-product
Gauss–Legendre quadrature (no Hermite series, no Stein reduction, no popdyn import).  The
cases include value ∥ gate (v_0 = 1.5 g_0), gate ∥ teacher axis (g_1 = ±0.75 u_1), antiparallel
gates (g_2 = −1.25 g_0; cases 1 and 4), an ordinary unit ∥ the value axis and one nearly along
the gate axis.  Error is measured relative to the largest reference entry of each quantity.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import popdyn
from popdyn import Student, SwiGLUParams, SwiGLUStudent, Teacher
from popdyn._moments import student_units
from popdyn.swiglu import moments

REFS = json.loads((Path(__file__).resolve().parents[2] / "data" / "refs"
                   / "swiglu_refs.json").read_text())
CASES = REFS["cases"]
TOL = 1e-10


def teacher_of(case):
    U = np.eye(REFS["d"])[:2]
    if case["teacher"] == "h3":
        return Teacher.additive("h3", U[:1])
    return Teacher.gated(case["teacher"], U)


def relerr(got, ref):
    ref = np.array(ref, dtype=float)
    return float(np.max(np.abs(np.asarray(got, dtype=float) - ref)) / np.max(np.abs(ref)))


def test_quadrature_of_the_reference_converged():
    assert REFS["quadrature_check"] < 1e-13


@pytest.mark.parametrize("case", CASES, ids=[c["teacher"] for c in CASES])
def test_swiglu_against_mpmath(case):
    T = teacher_of(case)
    m = len(case["a"])
    S = SwiGLUStudent(REFS["d"], m)
    p = SwiGLUParams(case["a"], case["G"], case["V"], case["c"])
    ref = case["ref"]
    assert T.second_moment == pytest.approx(float(ref["Ey2"]), rel=1e-14)
    L, g = popdyn.loss_and_grad(S, p, T)
    errs = {
        "loss": relerr([L], [ref["loss"]]),
        "grad_a": relerr(g.a, ref["grad_a"]),
        "grad_G": relerr(g.G, ref["grad_G"]),
        "grad_V": relerr(g.V, ref["grad_V"]),
        "grad_c": relerr([g.c], [ref["grad_c"]]),
        "agop": relerr(popdyn.agop(S, p), ref["agop"]),
        "Yphi": relerr(moments(S, p, T).Yphi, ref["Yphi"]),
        "phibar": relerr(moments(S, p, T).phibar, ref["phibar"]),
    }
    assert max(errs.values()) < TOL, errs


GATED = [c for c in CASES if "Ct_relu" in c["ref"]]


@pytest.mark.parametrize("act", ["relu", "silu"])
@pytest.mark.parametrize("case", GATED, ids=[c["teacher"] for c in GATED])
def test_ordinary_cross_moments_against_mpmath(case, act):
    """E[σ(w_j·x + b_j) y] for ordinary students, including a unit along the value axis and
    one nearly along the gate axis (cos = 0.997, where the relu gate's Hermite series would
    converge only algebraically against a relu student: the closed forms are used there)."""
    T = teacher_of(case)
    S = Student(REFS["d"], 3, activation=act)
    p = popdyn.Params(np.ones(3), case["W"], case["b"], 0.0)
    Ct = T.cross(student_units(S, p), 1e-10)[0]
    ref = np.array(case["ref"][f"Ct_{act}"], dtype=float)
    assert relerr(Ct[:, 0], ref) < TOL
