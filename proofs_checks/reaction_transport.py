"""Check ``reaction_transport``: the exact reaction–transport decomposition (docs/design.md §7).

Claims (each to a declared relative tolerance ``tol`` = 1e−12, on random states of several
student / teacher configurations — relu and leaky_relu, with and without biases and intercept,
standard and mean-field scaling; teachers with closed-form moments, finite Hermite sums, and a
truncated Hermite series (tanh) — Euler's identity holds term by term for the truncated teacher):

* ċ = −(a² + |ŵ|²)G equals d(a|ŵ|)/dt computed from the engine's exact gradient;
* θ̇ = −(a/|ŵ|)(I − θθᵀ)H equals d(ŵ/|ŵ|)/dt;
* reaction + transport + intercept (+ degenerate) = ‖∇L‖² = −dL/dt;
* the gauge (a, w, b) → (λa, w/λ, b/λ) leaves the population loss unchanged;
* the same split holds for the empirical loss on n samples (finite-sample decomposition).

Cross-check (claim with a looser, stated tolerance 1e−6 because it uses finite differences):
−dL/dt along the gradient flow, d/dε L(θ − ε∇L) at ε = 0 by a 4th-order central difference,
equals ‖∇L‖².

Brackets are [0, max measured residual] in float64 (``numerical``: rounding, not interval
arithmetic).

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units");
docs/design.md §7.
"""
from __future__ import annotations

import numpy as np

import popdyn
from popdyn.finite import decompose_empirical, draw
from popdyn.gauge import apply, decompose, group_contribution, identity_residuals

from ._core import make_verdict, register, summary_verdict
from ._states import CONFIGS, random_state

TOL = 1e-12
FD_TOL = 1e-6


def _loss_scale(student, p, teacher):

    fpart = group_contribution(student, p, None)
    L = popdyn.population_loss(student, p, teacher)
    return L, L + 0.5 * (fpart + abs(p.c)) ** 2 + 0.5 * teacher.second_moment


def _fd_dissipation(student, p, teacher, g):

    gn2 = float(g.flat() @ g.flat())
    if gn2 == 0:
        return 0.0
    x0, v = p.flat(), -g.flat()
    m, d = p.m, p.d
    eps = 1e-3 / np.sqrt(gn2)

    def f(e):
        return popdyn.population_loss(student, popdyn.Params.from_flat(x0 + e * v, m, d), teacher)

    fd = (-f(2 * eps) + 8 * f(eps) - 8 * f(-eps) + f(-2 * eps)) / (12 * eps)
    return abs(fd + gn2) / gn2


@register("reaction_transport",
          description="reaction–transport decomposition and dissipation split hold to rounding",
          quick=dict(states=4, m=4, d=5, n_samples=400, seed=0),
          full=dict(states=40, m=6, d=8, n_samples=2000, seed=0))
def check(*, states: int, m: int, d: int, n_samples: int, seed: int):

    rng = np.random.default_rng(seed)
    worst = {"c_dot": 0.0, "theta_dot": 0.0, "dissipation": 0.0, "gauge_loss": 0.0,
             "empirical": 0.0, "fd": 0.0, "conservation": 0.0}
    count = 0
    for ci, cfg in enumerate(CONFIGS):
        for s in range(states):
            st_seed = seed * 100_003 + ci * 1009 + s
            student, p, teacher = random_state(st_seed, cfg, m=m, d=d, zero_head=(s == 0))
            dec = decompose(student, p, teacher)
            res = identity_residuals(student, p, dec)
            for k in ("c_dot", "theta_dot", "dissipation", "conservation"):
                worst[k] = max(worst[k], res[k])
            idx = rng.permutation(m)[: max(1, m // 2)]
            lam = np.exp(rng.uniform(-np.log(10), np.log(10), size=idx.size))
            L, scale = _loss_scale(student, p, teacher)
            L2 = popdyn.population_loss(student, apply(p, idx, lam, student=student), teacher)
            worst["gauge_loss"] = max(worst["gauge_loss"], abs(L2 - L) / scale)
            X, y = draw(teacher, n_samples, st_seed)
            de = decompose_empirical(student, p, X, y)
            r2 = identity_residuals(student, p, de)
            worst["empirical"] = max(worst["empirical"], r2["c_dot"], r2["theta_dot"], r2["dissipation"])
            if s == 1:
                worst["fd"] = max(worst["fd"], _fd_dissipation(student, p, teacher, dec.grad))
            count += 1
    cfgs = [f"{a}/bias={b}/intercept={i}/{sc}/{t}" for a, b, i, sc, t in CONFIGS]
    parts = [
        make_verdict("c_dot = -(a²+|ŵ|²)G", "reaction identity vs d(a|ŵ|)/dt from the exact gradient "
                     "(normwise relative residual)", kind="at_most", constant=TOL,
                     bracket=(0.0, worst["c_dot"]), provenance="numerical"),
        make_verdict("theta_dot = -(a/|ŵ|)(I-θθᵀ)H", "transport identity vs d(ŵ/|ŵ|)/dt from the exact "
                     "gradient (normwise relative residual)", kind="at_most", constant=TOL,
                     bracket=(0.0, worst["theta_dot"]), provenance="numerical"),
        make_verdict("dissipation split", "|reaction + transport + intercept + degenerate − ‖∇L‖²| / ‖∇L‖²",
                     kind="at_most", constant=TOL, bracket=(0.0, worst["dissipation"]),
                     provenance="numerical"),
        make_verdict("d(a²−|ŵ|²)/dt = 0", "|a ∂_aL − ŵ·∂_ŵL| relative to its terms", kind="at_most",
                     constant=TOL, bracket=(0.0, worst["conservation"]), provenance="numerical"),
        make_verdict("gauge invariance of L", "|L(gauged) − L| / (L + ½‖f‖² + ½E[y²]) for random "
                     "factors in [0.1, 10] on half the neurons", kind="at_most", constant=TOL,
                     bracket=(0.0, worst["gauge_loss"]), provenance="numerical"),
        make_verdict("empirical decomposition", "the three identities for the empirical loss on "
                     f"n = {n_samples} samples (max relative residual)", kind="at_most", constant=TOL,
                     bracket=(0.0, worst["empirical"]), provenance="numerical"),
        make_verdict("dL/dt = -‖∇L‖² (finite differences)", "4th-order central difference of "
                     "L(θ − ε∇L) at ε = 0 vs −‖∇L‖² (relative; FD truncation + rounding)",
                     kind="at_most", constant=FD_TOL, bracket=(0.0, worst["fd"]),
                     provenance="numerical"),
    ]
    notes = [f"{count} random states over {len(CONFIGS)} configurations: " + "; ".join(cfgs),
             "each configuration's first state has a_0 = 0 exactly (regular neuron with zero head)"]
    return summary_verdict(
        "reaction_transport",
        "ċ, θ̇ and the dissipation split of docs/design.md §7 hold to rounding (relative residual ≤ 1e-12)",
        parts, notes=notes)
