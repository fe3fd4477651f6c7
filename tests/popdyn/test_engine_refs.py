"""Loss, gradient and teacher moments against the independent 30-digit mpmath reference.

The reference values were computed by tests/_mpref.py (pure mpmath, 2-D Gaussian quadrature over
the plane of each pair of ridge units; it does not import popdyn) via
data/_precompute/engine_refs.py into data/refs/engine_refs.json.

Tolerances (issue "Exact population engine"): relu and leaky_relu students 1e−12 relative,
1e−14 absolute near zero (absolute scale: the size of the terms that cancel); smooth activations
and non-polynomial links through Hermite series: 1e−10 relative, and the engine's own error
estimate must cover the observed error.
"""
import numpy as np
import pytest

import popdyn
from popdyn.objective import population_loss

from _cases import build, load_cases, outputs

CASES = load_cases()
IDS = [c.get("name", f"case{i}") for i, c in enumerate(CASES)]


def _is_pl(case):
    inp = case.get("inputs", case)
    return inp["activation"] in ("relu", "leaky_relu")


def _tol(case):
    return (1e-12, 1e-14) if _is_pl(case) else (1e-10, 1e-10)


def _close(got, want, rtol, atol, scale):
    err = np.abs(np.asarray(got) - np.asarray(want))
    bound = rtol * np.abs(want) + atol * max(scale, 1.0)
    return err, bound


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_loss_and_teacher_moments(case):
    student, params, teacher = build(case)
    L, ga, gW, gb, gc, ey, vy = outputs(case)
    rtol, atol = _tol(case)
    assert teacher.mean == pytest.approx(ey, rel=1e-13, abs=1e-14)
    assert teacher.variance == pytest.approx(vy, rel=1e-13, abs=1e-14)
    got, info = population_loss(student, params, teacher, full_output=True)
    scale = teacher.second_moment + params.c ** 2
    err, bound = _close(got, L, rtol, atol, scale)
    assert err <= bound, f"loss {got!r} vs {L!r}: error {err:.3g} > {bound:.3g}"
    if not _is_pl(case):
        assert err <= max(info["error"] * 1.0, 0) + 4e-16 * scale * 10, "error estimate does not cover the error"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient(case):
    student, params, teacher = build(case)
    L, ga, gW, gb, gc, ey, vy = outputs(case)
    rtol, atol = _tol(case)
    g = popdyn.population_grad(student, params, teacher)
    scale = np.sqrt(teacher.second_moment) * (1 + np.abs(params.a).sum()) * (1 + np.abs(params.W).max())
    for name, got, want in (("a", g.a, ga), ("W", g.W, gW), ("b", g.b, gb), ("c", g.c, gc)):
        err, bound = _close(got, want, rtol, atol, scale)
        worst = np.unravel_index(np.argmax(err - bound), np.shape(err)) if np.ndim(err) else ()
        assert np.all(err <= bound), (
            f"grad {name}{worst}: {np.asarray(got)[worst]!r} vs {np.asarray(want)[worst]!r}")
