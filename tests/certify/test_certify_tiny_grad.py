"""certify.loss(grad=True) at tiny units (|w_j| ~ 1e−8 … 1e−6 beside biases |b_j| ≥ 0.3).

A relu or leaky relu unit (σ(z) = z for z > 0, αz for z < 0) with |w_j| ≪ |b_j| is affine,
σ(w_j·x + b_j) = λ_j (w_j·x + b_j) with λ_j = 1 (b_j > 0) or α (b_j < 0), except where |w_j·x| > |b_j|: a set
of probability below e^(−(|b_j|/|w_j|)²/2) < 10^(−10⁹) here, far below any bracket width.  When
every unit is tiny, f = s Σ a_j σ_j + c is the affine function β·x + β₀ (β = s Σ a_j λ_j w_j,
β₀ = s Σ a_j λ_j b_j + c), and with L = ½E[(f − y)²]

    ∂L/∂a_j = s λ_j (w_j·E[(f − y)x] + b_j E[f − y]),   ∂L/∂b_j = s a_j λ_j E[f − y],
    ∂L/∂W_j = s a_j λ_j E[(f − y)x],                     ∂L/∂c = E[f − y],
    E[f − y] = β₀ − E[y],   E[(f − y)x] = β − E[yx],

with, for y = g(u·x) and the float64 row u (|u|² = 1 only up to rounding; the difference
matters at the brackets' width): E[He₂(u·x)] = |u|² − 1, E[He₃(u·x)] = 0 and by Stein
E[x g(u·x)] = E[g′(u·x)] u, E[He₂′(u·x)] = 0, E[He₃′(u·x)] = 3(|u|² − 1), E[relu(u·x)] =
|u|/√(2π), E[relu′(u·x)] = ½ (h2 = He₂/√2, h3 = He₃/√6).  Evaluated in mpmath at 50
digits from the exact float64 inputs: an independent closed-form reference (no popdyn or certify
moment code).  Every rigorous bracket must contain it.
"""
import mpmath as mp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import certify
import popdyn

LINKS = ("h2", "h3+0.3h2", "relu")


def _reference(alpha, s, a, W, b, c, u, link):
    """The gradient {a, b, W, c} of the all-tiny affine student (module docstring) at 50 digits;
    ``alpha`` the negative slope (0 for relu): σ(z) = z for z > 0 and αz for z < 0, so λ_j = 1
    or α exactly (not the rounded p + q of the float representation p·relu + q·id)."""
    with mp.workdps(50):
        m, d = len(a), len(u)
        lam = [mp.mpf(1) if b[j] > 0 else mp.mpf(alpha) for j in range(m)]
        beta = [s * mp.fsum(mp.mpf(a[j]) * lam[j] * mp.mpf(W[j][i]) for j in range(m))
                for i in range(d)]
        beta0 = s * mp.fsum(mp.mpf(a[j]) * lam[j] * mp.mpf(b[j]) for j in range(m)) + mp.mpf(c)
        uu = mp.fsum(mp.mpf(ui) ** 2 for ui in u)         # |u|² of the float64 row, not 1
        if link == "relu":
            ey, eyx = mp.sqrt(uu) / mp.sqrt(2 * mp.pi), [mp.mpf(ui) / 2 for ui in u]
        elif link == "h2":
            ey, eyx = (uu - 1) / mp.sqrt(2), [mp.mpf(0)] * d
        else:                                               # h3 + 0.3 h2
            ey = 0.3 * (uu - 1) / mp.sqrt(2)
            eyx = [3 * (uu - 1) / mp.sqrt(6) * mp.mpf(ui) for ui in u]
        r0 = beta0 - ey
        rx = [beta[i] - eyx[i] for i in range(d)]
        ga = [s * lam[j] * (mp.fsum(mp.mpf(W[j][i]) * rx[i] for i in range(d))
                            + mp.mpf(b[j]) * r0) for j in range(m)]
        gb = [s * mp.mpf(a[j]) * lam[j] * r0 for j in range(m)]
        gW = [[s * mp.mpf(a[j]) * lam[j] * rx[i] for i in range(d)] for j in range(m)]
        return {"a": ga, "b": gb, "W": gW, "c": r0}


def _inside(lo, hi, v):
    return mp.mpf(float(lo)) <= v <= mp.mpf(float(hi))


@settings(max_examples=25, deadline=None)
@given(act=st.sampled_from(("relu", "leaky_relu")), m=st.integers(1, 3),
       link=st.sampled_from(LINKS), seed=st.integers(0, 2 ** 32 - 1),
       log_w=st.floats(-8.0, -6.0))
def test_tiny_unit_gradient_brackets_contain_the_affine_closed_form(act, m, link, seed, log_w):
    rng = np.random.default_rng(seed)
    d = 3
    W = rng.normal(size=(m, d))
    W *= 10.0 ** log_w / np.linalg.norm(W, axis=1, keepdims=True)
    b = rng.choice([-1.0, 1.0], size=m) * rng.uniform(0.3, 1.0, size=m)
    a = rng.normal(size=m)
    c = float(rng.normal() * 0.5)
    u = np.linalg.qr(rng.normal(size=(d, 1)))[0][:, 0]
    S = popdyn.Student(d, m, act, bias=True)
    p = popdyn.Params(a, W, b, c)
    T = popdyn.Teacher.additive(link, u[None, :])
    alpha = S.negative_slope if act == "leaky_relu" else 0.0
    ref = _reference(alpha, float(S.s), a.tolist(), W.tolist(), b.tolist(), c, T.U[0].tolist(),
                     link)
    g = certify.loss(S, p, T, grad=True).grad
    for f in ("a", "b"):
        assert g[f].provenance == "rigorous"
        for j in range(m):
            assert _inside(g[f].lo[j], g[f].hi[j], ref[f][j]), (f, j)
    for j in range(m):
        for i in range(d):
            assert _inside(g["W"].lo[j][i], g["W"].hi[j][i], ref["W"][j][i]), ("W", j, i)
    assert _inside(g["c"].lo, g["c"].hi, ref["c"])
