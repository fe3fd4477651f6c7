"""Tests of the ``linear_target_phases`` check (proofs_checks/linear_target_phases.py).

References are independent of popdyn: the population loss of a bias-free relu network on the
linear target y = β·x in closed form (arc-cosine kernel of degree 1 and Stein's identity
E[relu(w·x) β·x] = ½ w·β) evaluated by mpmath at 40 digits and differentiated twice by central
differences; the Gauss–Newton Hessian at an exact minimizer in closed form; the quadratic model
iterated step by step.
"""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import popdyn
from proofs_checks import VERDICTS, run_check
from proofs_checks import linear_target_phases as LT


# ---------------------------------------------------------------------------- mpmath reference
def _mp_loss(x, m, d, beta):
    """½E[(Σ a_j relu(w_j·x) − β·x)²] in closed form, x = (a, W row-major) as mpf."""
    a = x[:m]
    W = [x[m + j * d:m + (j + 1) * d] for j in range(m)]
    nrm = [mp.sqrt(mp.fsum(w_ * w_ for w_ in w)) for w in W]
    L = mp.mpf(0)
    for j in range(m):
        for k in range(m):
            if j == k:
                K = nrm[j] ** 2 / 2
            else:
                c = mp.fsum(u * v for u, v in zip(W[j], W[k])) / (nrm[j] * nrm[k])
                c = max(min(c, mp.mpf(1)), mp.mpf(-1))
                th = mp.acos(c)
                K = nrm[j] * nrm[k] / (2 * mp.pi) * (mp.sin(th) + (mp.pi - th) * mp.cos(th))
            L += a[j] * a[k] * K / 2
        L -= a[j] * mp.fsum(u * b for u, b in zip(W[j], beta)) / 2
    return L + mp.fsum(b * b for b in beta) / 2


def _mp_hessian(x0, m, d, beta, h=mp.mpf("1e-12")):
    N = len(x0)
    H = np.empty((N, N))
    f = lambda x: _mp_loss(x, m, d, beta)   # noqa: E731
    for i in range(N):
        for j in range(i, N):
            def sh(si, sj):
                x = list(x0)
                x[i] += si * h
                x[j] += sj * h
                return f(x)
            v = (sh(1, 1) - sh(1, -1) - sh(-1, 1) + sh(-1, -1)) / (4 * h * h)
            H[i, j] = H[j, i] = float(v)
    return H


def test_hessian_against_mpmath_closed_form():
    d, m = 2, 2
    st, te, beta = LT.problem(d, m)
    rng = np.random.default_rng(7)
    p = popdyn.Params(rng.standard_normal(m), rng.standard_normal((m, d)), np.zeros(m))
    H = LT.hessian(st, p, te)
    with mp.workdps(40):
        x0 = [mp.mpf(float(v)) for v in np.concatenate([p.a, p.W.ravel()])]
        ref = _mp_hessian(x0, m, d, [mp.mpf(float(b)) for b in beta])
    assert np.max(np.abs(H - ref)) <= 1e-9 * np.max(np.abs(ref))


def test_hessian_at_minimizer_gauss_newton_closed_form():
    # at a_1 w_1 = β, a_2 w_2 = −β (|β| = 1, w_1 = c_1 e_1, w_2 = −c_2 e_1): zero residual, so
    # H = E[J Jᵀ]; per neuron the block [[c²/2, a c e₁ᵀ/2], [a c e₁/2, a² I/2]], disjoint supports
    # -> eigenvalues a_j²/2 (d − 1 times), (a_j² + c_j²)/2 and 0 per neuron.  The two neurons
    # are exactly antipodal: the kernel has a |δ|³ term there, so the difference error is O(h)
    d = 4
    st, te, beta = LT.problem(d, 2)
    a = np.array([1.3, -0.6])
    c = 1.0 / np.abs(a)
    W = np.zeros((2, d))
    W[0, 0], W[1, 0] = c[0], -c[1]
    p = popdyn.Params(a, W, np.zeros(2))
    assert popdyn.population_loss(st, p, te) <= 1e-15
    eig = np.linalg.eigvalsh(LT.hessian(st, p, te, h=1e-6))
    ref = np.sort(np.concatenate([np.repeat(a ** 2 / 2, d - 1), (a ** 2 + c ** 2) / 2, [0, 0]]))
    assert np.max(np.abs(eig - ref)) <= 1e-6
    r = LT.hessian_rate(eig, 0.1, 1e-6)
    assert r["n_zero"] == 2
    assert r["lam_min"] == pytest.approx(0.18, abs=1e-6)
    assert r["q_slow"] == pytest.approx((1 - 0.1 * 0.18) ** 2, abs=1e-6)


@settings(max_examples=20, deadline=None)
@given(hst.integers(0, 10_000), hst.integers(1, 40), hst.floats(0.05, 0.5))
def test_model_decay_equals_iterated_quadratic_model(seed, k, lr):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    lam = np.array([0.0, 0.0, 0.3, 1.0, 2.5])
    H = Q @ np.diag(lam) @ Q.T
    e0 = rng.standard_normal(5)
    e = e0.copy()
    L0 = e @ H @ e
    for _ in range(k):
        e = e - lr * (H @ e)
    ref = math.log((e @ H @ e) / L0)
    assert LT.model_decay(H, e0, lr, k) == pytest.approx(ref, rel=1e-9, abs=1e-9)


def test_measured_rate_geometric_sequence():
    n = np.arange(400)
    loss = 3.0 * 0.83 ** n
    q_lo, q_hi, i0, i1 = LT.measured_rate(n, loss, tail_hi=1e-6, tail_lo=1e-12)
    assert loss[i0] <= 1e-6 < loss[i0 - 1] and loss[i1] <= 1e-12 < loss[i1 - 1]
    assert q_lo == pytest.approx(0.83, rel=1e-12) and q_hi == pytest.approx(0.83, rel=1e-12)
    assert LT.measured_rate(n, loss, tail_hi=1e-6, tail_lo=1e-300) is None


# ---------------------------------------------------------------------------- the phase reader
def _constructed():
    """A hand-built 2-neuron trajectory on β = 2e₁ (d = 2): neuron 1 rotates from e₂ onto e₁
    with a₁ > 0; neuron 2 points along −e₁ with a₂ < 0 except at snapshot 1 (a sign flip);
    the masses grow after the rotation."""
    n = np.array([0, 10, 20, 30, 40, 50])
    ang = np.array([np.pi / 2, np.pi / 4, 0.1, 0.0, 0.0, 0.0])
    r = np.array([1e-3, 1e-3, 1e-3, 0.5, 1.0, 1.0])        # |w_j| = |a_j| = r
    W = np.zeros((6, 2, 2))
    W[:, 0, 0], W[:, 0, 1] = r * np.cos(ang), r * np.sin(ang)
    W[:, 1, 0] = -r
    a = np.stack([r, -r], axis=1)
    a[1, 1] = +r[1]                                          # the flip
    loss = np.array([1.0, 1.0, 0.9999, 0.3, 1e-3, 1e-9])
    return n, a, W, loss, np.array([2.0, 0.0])


def test_read_phases_constructed_trajectory():
    n, a, W, loss, beta = _constructed()
    ph = LT.read_phases(n, a, W, loss, beta, align_thr=0.99, grow_thr=0.1, refine_thr=1e-2)
    # min_j α_j: snapshot 0: min(cos 90°, 1) = 0; 1: neuron 2 flipped: −1; 2: cos 0.1 = 0.995
    assert ph["t_align"] == 20
    # M = Σ|a||w| / (2|β|) = 2 r² / 4: 5e-7, …, 0.125 at n = 30
    assert ph["t_grow"] == 30 and ph["mass0"] == pytest.approx(5e-7)
    assert ph["t_refine"] == 40
    assert ph["flips"] == [0, 1]
    assert ph["align_after"] == pytest.approx(math.cos(0.1))
    assert ph["loss_at_align"] == 0.9999
    assert ph["min_align_final"] == pytest.approx(1.0)
    # mass-weighted reading: snapshot 1 has equal masses, α = (cos 45°, −1): mean < 0.99
    pw = LT.read_phases(n, a, W, loss, beta, align_thr=0.99, grow_thr=0.1, refine_thr=1e-2,
                        weighted=True)
    assert pw["t_align"] == 20
    pw = LT.read_phases(n, a, W, loss, beta, align_thr=0.999, grow_thr=0.1, refine_thr=1e-2)
    assert pw["t_align"] == 30 and pw["t_grow"] == 30


def test_read_phases_never_aligned():
    n, a, W, loss, beta = _constructed()
    ph = LT.read_phases(n, a, W, loss, beta, align_thr=1.5, grow_thr=2.0, refine_thr=1e-12)
    assert ph["t_align"] is None and ph["t_grow"] is None and ph["t_refine"] is None
    assert ph["align_after"] is None and ph["loss_at_align"] is None


def test_alignments_sign_and_zero_vector():
    a = np.array([[1.0, -2.0, 3.0]])
    W = np.array([[[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]])
    al = LT.alignments(a, W, np.array([3.0, 0.0]))
    assert al[0] == pytest.approx([1 / math.sqrt(2), -1.0, 0.0])


# ---------------------------------------------------------------------------- the check
def test_quick_verdict_structure():
    v = run_check("linear_target_phases", quick=True, d=4, updates=700, seeds=1,
                  ratios=(1.0, 4.0), finite_seeds=1, finite_updates=100, over_scales=(1e-3,),
                  over_seeds=1, over_updates=100, m_over=3)
    names = [p.name for p in v.parts]
    assert names[:8] == ["global convergence", "sign pattern kept", "alignment before growth",
                         "alignment preserved", "loss flat during alignment",
                         "rate ≥ Hessian bound", "rate = Hessian model", "finite n"]
    assert all(p.role == "claim" for p in v.parts[:8])
    assert all(p.role == "control" for p in v.parts[8:]) and len(v.parts) == 13
    assert v.verdict in VERDICTS and all(p.verdict in VERDICTS for p in v.parts)
    assert all(p.provenance == "numerical" for p in v.parts)
    assert v.settings["preset"] == "quick" and v.settings["d"] == 4
    assert any("full text not in the store" in n for n in v.notes)
    fin = v.parts[7]
    assert len(fin.notes) == 2 and fin.notes[1].startswith("n/d = 4 (n = 16)")
    # the m = 2 population run converges: the claims read from it are decided
    for p in v.parts[:7]:
        assert p.verdict == "pass", p.report()
    # nothing measured is an undecided bracket, never a NaN (a Verdict rejects NaN brackets)
    assert all(not math.isnan(x) for p in v.parts for x in p.bracket)


def test_init_state_heads_and_bad_input():
    st, te, beta = LT.problem(5, 2)
    p = LT.init_state(st, 3, 1e-3, pattern=True)
    assert p.a[0] > 0 > p.a[1]
    assert np.abs(p.a) == pytest.approx(np.linalg.norm(p.W, axis=1), rel=1e-15)
    q = LT.init_state(st, 3, 1e-3, pattern=True, heads="half_normal")
    assert np.array_equal(np.abs(q.a), np.abs(st.init(3, 1e-3).a)) and q.a[0] > 0 > q.a[1]
    with pytest.raises(ValueError, match="heads"):
        LT.init_state(st, 3, 1e-3, pattern=True, heads="chi2")
    with pytest.raises(ValueError, match="m = 2"):
        LT.init_state(LT.problem(5, 3)[0], 3, 1e-3, pattern=True)
