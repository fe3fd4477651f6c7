"""Random states shared by the checks (deterministic given a seed)."""
from __future__ import annotations

import numpy as np

import popdyn

# (activation, bias, intercept, scaling, teacher) — teachers with closed-form moments, finite Hermite
# sums, and a truncated Hermite series (tanh): the identities hold to rounding for all of them, since
# Euler's identity σ′(t)t = σ(t) holds term by term for the truncated teacher.
CONFIGS = (
    ("relu", False, False, "standard", "relu_network"),
    ("relu", True, True, "standard", "relu_network"),
    ("relu", True, False, "mean_field", "h3+0.3h2"),
    ("leaky_relu", False, True, "standard", "h2"),
    ("leaky_relu", True, True, "mean_field", "relu_network"),
    ("relu", True, True, "standard", "abs"),
    ("leaky_relu", True, False, "standard", "tanh"),
)


def random_state(seed: int, config: tuple[str, bool, bool, str, str], *, m: int = 4, d: int = 5,
                 zero_head: bool = False) -> tuple[popdyn.Student, popdyn.Params, popdyn.Teacher]:
    """(student, params, teacher) for one configuration; ``zero_head`` sets a_0 = 0 exactly."""

    act, bias, intercept, scaling, tk = config
    rng = np.random.default_rng(seed)
    student = popdyn.Student(d, m, act, negative_slope=0.1, bias=bias, intercept=intercept,
                             scaling=scaling)
    a = rng.normal(size=m)
    if zero_head:
        a[0] = 0.0
    W = rng.normal(size=(m, d)) * rng.uniform(0.2, 2.0) / np.sqrt(d)
    b = rng.normal(size=m) * 0.5 if bias else np.zeros(m)
    c = float(rng.normal() * 0.3) if intercept else 0.0
    p = popdyn.Params(a, W, b, c)
    if tk == "relu_network":
        k = 2
        teacher = popdyn.Teacher.network("relu", rng.normal(size=k), rng.normal(size=(k, d)),
                                         rng.normal(size=k) * 0.5)
    else:
        r = 2
        U = np.linalg.qr(rng.normal(size=(d, r)))[0].T
        teacher = popdyn.Teacher.additive(tk, U, rng.uniform(0.5, 1.5, size=r))
    return student, p, teacher
