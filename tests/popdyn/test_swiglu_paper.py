"""The SwiGLU student with gate and value biases (Kumar, arXiv 2609.39408, eq. (71)).

References: data/refs/swiglu_bias_refs.json (data/_precompute/swiglu_bias_refs.py: pure mpmath
at 30 digits, Gaussian conditioning + tensor Gauss–Legendre, the gradient by the chain rule
inside the integrals, no Hermite/Mehler/Stein reduction, no popdyn import) on d = 3, m = 2;
a 30-digit central difference of that reference loss in two bias coordinates; Monte Carlo with
stated z-scores on a d = 16 case; hypothesis properties (sign and permutation symmetries of
f); and the bias-free limit against the unbiased student (itself tested against mpmath in
test_swiglu_refs.py).
"""
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popdyn
from popdyn import SwiGLUStudent, Teacher
from popdyn import swiglu as sw
from popdyn.config import teacher_from_table
from popdyn.families.swiglu import SwiGLUBiasFamily
from popdyn.swiglu import SwiGLUBiasParams

REFS = json.loads((Path(__file__).resolve().parents[2] / "data" / "refs"
                   / "swiglu_bias_refs.json").read_text())
TOL = 1e-10


def ref_teacher(name, d):
    U = np.eye(d)[:1]
    if name == "h3":
        return Teacher.additive("h3", U)
    return Teacher.additive("relu", U, [np.sqrt(2.0)])


def case_params(case):
    f = lambda x: np.array(x, dtype=float)  # noqa: E731  (round-trip decimal strings)
    return SwiGLUBiasParams(f(case["a"]), f(case["G"]), f(case["V"]), f(case["bg"]),
                            f(case["bv"]), float(case["c"]))


def relerr(got, ref):
    ref = np.array(ref, dtype=float)
    return float(np.max(np.abs(np.asarray(got, dtype=float) - ref)) / np.max(np.abs(ref)))


def test_reference_quadrature_converged():
    # L = 9 truncates Gaussian tails of degree-9 integrands at ~1e-13 relative
    assert REFS["quadrature_check"] < 1e-12


@pytest.mark.parametrize("k", range(len(REFS["cases"])))
def test_loss_grad_agop_against_mpmath(k):
    case = REFS["cases"][k]
    d = REFS["d"]
    T = ref_teacher(case["teacher"], d)
    st_ = SwiGLUStudent(d, REFS["m"], biases=True)
    p = case_params(case)
    fam = st_.family
    Mo = fam.moments(p, T)
    assert relerr(fam.loss(p, T, Mo), case["loss"]) < TOL
    g = fam.grad(p, T, Mo)
    for nm in ("a", "G", "V", "bg", "bv"):
        assert relerr(getattr(g, nm), case["grad_" + nm]) < TOL, nm
    assert relerr(g.c, case["grad_c"]) < TOL
    assert relerr(Mo.phibar, case["phibar"]) < TOL
    assert relerr(Mo.Yphi, case["Yphi"]) < TOL
    assert relerr(popdyn.agop(st_, p), case["agop"]) < TOL
    # the public layer gives the same numbers
    assert relerr(popdyn.population_loss(st_, p, T), case["loss"]) < TOL


def test_bias_gradient_against_reference_finite_difference():
    """The reference's own chain-rule gradient agrees with its 30-digit central difference
    (h = 1e-8), and popdyn's bias gradient with both."""
    case = REFS["cases"][0]
    fd = REFS["fd_bias"]
    for nm in ("bg", "bv"):
        ref = float(case["grad_" + nm][0])
        assert abs(float(fd[nm]) - ref) <= 1e-14 * max(1.0, abs(ref))
    T = ref_teacher(case["teacher"], REFS["d"])
    st_ = SwiGLUStudent(REFS["d"], REFS["m"], biases=True)
    g = st_.family.loss_and_grad(case_params(case), T)[1]
    for nm in ("bg", "bv"):
        assert abs(getattr(g, nm)[0] - float(fd[nm])) < TOL * np.max(np.abs(g.flat()))


def test_bias_free_limit_is_the_unbiased_student():
    rng = np.random.default_rng(3)
    d, m = 5, 4
    T = Teacher.additive("relu", np.eye(d)[:2])
    p0 = popdyn.SwiGLUParams(rng.normal(size=m), 0.6 * rng.normal(size=(m, d)),
                             0.6 * rng.normal(size=(m, d)), 0.2)
    pb = SwiGLUBiasParams(p0.a, p0.G, p0.V, np.zeros(m), np.zeros(m), 0.2)
    s0, sb = SwiGLUStudent(d, m), SwiGLUStudent(d, m, biases=True)
    L0, g0 = sw.loss_and_grad(s0, p0, T)
    Lb, gb = sb.family.loss_and_grad(pb, T)
    assert abs(L0 - Lb) <= 1e-15 * abs(L0)
    for nm in ("a", "G", "V"):
        assert np.max(np.abs(getattr(g0, nm) - getattr(gb, nm))) <= 1e-14
    assert np.max(np.abs(popdyn.agop(s0, p0) - popdyn.agop(sb, pb))) <= 1e-14


def _mc_case():
    rng = np.random.default_rng(11)
    d, m = 16, 6
    p = SwiGLUBiasParams(rng.normal(size=m), 0.5 * rng.normal(size=(m, d)),
                         0.5 * rng.normal(size=(m, d)), 0.8 * rng.normal(size=m),
                         0.8 * rng.normal(size=m), -0.1)
    return d, m, p


def test_monte_carlo_d16():
    """Loss, one gradient entry per block and an AGOP entry against 4·10^5 samples:
    |z| < 5 with z = (MC − exact)/SE."""
    d, m, p = _mc_case()
    T = Teacher.additive("relu", np.eye(d)[:1], [np.sqrt(2.0)])
    st_ = SwiGLUStudent(d, m, biases=True)
    L, g = st_.family.loss_and_grad(p, T)
    X = np.random.default_rng(5).standard_normal((400_000, d))
    y = np.sqrt(2.0) * np.maximum(X[:, 0], 0.0)
    u = X @ p.G.T + p.bg
    sig = 1.0 / (1.0 + np.exp(-u))
    S, dS = u * sig, sig + u * sig * (1.0 - sig)
    Uv = X @ p.V.T + p.bv
    r = (S * Uv) @ p.a + p.c - y

    def z(samples, exact):
        return (samples.mean() - exact) / (samples.std() / np.sqrt(samples.size))

    j = 2
    checks = [(0.5 * r * r, L), (r * S[:, j] * Uv[:, j], g.a[j]),
              (p.a[j] * r * S[:, j] * X[:, 3], g.V[j, 3]), (p.a[j] * r * S[:, j], g.bv[j]),
              (p.a[j] * r * dS[:, j] * Uv[:, j] * X[:, 0], g.G[j, 0]),
              (p.a[j] * r * dS[:, j] * Uv[:, j], g.bg[j])]
    grad_x0 = (dS * Uv * p.G[:, 0] + S * p.V[:, 0]) @ p.a
    checks.append((grad_x0 * grad_x0, popdyn.agop(st_, p)[0, 0]))
    for samples, exact in checks:
        assert abs(z(samples, exact)) < 5


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), j=st.integers(0, 3))
def test_sign_and_permutation_symmetry(seed, j):
    """f is unchanged by (a_j, v_j, c_j) → −(a_j, v_j, c_j) and by permuting neurons, so the
    loss is invariant and the gradient transforms covariantly."""
    rng = np.random.default_rng(seed)
    d, m = 4, 4
    T = Teacher.additive("h3", np.eye(d)[:1])
    st_ = SwiGLUStudent(d, m, biases=True)
    p = SwiGLUBiasParams(rng.normal(size=m), 0.7 * rng.normal(size=(m, d)),
                         0.7 * rng.normal(size=(m, d)), rng.normal(size=m), rng.normal(size=m),
                         0.1)
    L, g = st_.family.loss_and_grad(p, T)
    s = np.ones(m)
    s[j] = -1.0
    q = SwiGLUBiasParams(s * p.a, p.G, s[:, None] * p.V, p.bg, s * p.bv, p.c)
    Lq, gq = st_.family.loss_and_grad(q, T)
    assert abs(Lq - L) <= 1e-13 * max(1.0, abs(L))
    assert np.allclose(gq.bg, g.bg, rtol=1e-11, atol=1e-13)
    assert np.allclose(gq.bv, s * g.bv, rtol=1e-11, atol=1e-13)
    perm = rng.permutation(m)
    q = SwiGLUBiasParams(p.a[perm], p.G[perm], p.V[perm], p.bg[perm], p.bv[perm], p.c)
    Lq, gq = st_.family.loss_and_grad(q, T)
    assert abs(Lq - L) <= 1e-13 * max(1.0, abs(L))
    assert np.allclose(gq.G, g.G[perm], rtol=1e-11, atol=1e-13)


def test_paper_init_draws():
    d, m, eps = 5, 7, 0.05
    st_ = SwiGLUStudent(d, m, biases=True, clock="mean_field")
    p = st_.init(4, eps, convention="paper")
    rng = np.random.default_rng(4)
    P = rng.standard_normal((d + 1, m)) * (eps / np.sqrt(d + 1))
    Q = rng.standard_normal((d + 1, m)) * (eps / np.sqrt(d + 1))
    at = rng.standard_normal(m) * eps
    assert np.array_equal(p.a, at / m)
    assert np.array_equal(p.G, P[:d].T) and np.array_equal(p.bg, P[d])
    assert np.array_equal(p.V, Q[:d].T) and np.array_equal(p.bv, Q[d])
    T = Teacher.additive("relu", np.eye(d)[:1], [np.sqrt(2.0)])
    pf = st_.init(4, eps, T, convention="paper")
    assert pf.c == sw.fit_intercept_biased(st_, p, T).c != 0.0


@pytest.mark.parametrize("seed, printed", [(0, 0.128), (1, 0.022), (2, 0.000)])
def test_paper_init_matches_printed_alignments(seed, printed):
    """The paper's draws: A_top(0) of Table 3 (Kumar App. U.7, rank-one cohorts, d = 16,
    m = 64, eps = 0.05) to its three printed decimals.  The neuron-major layout gives
    0.050, 0.008, 0.049."""
    d = 16
    st_ = SwiGLUStudent(d, 64, biases=True, intercept=True, clock="mean_field")
    p = st_.init(seed, 0.05, convention="paper")
    M = st_.family.agop(p, st_.family.moments(p, None, tol=1e-10))
    A = sw.alignment_paper(M, np.eye(d)[:, :1])["A_top"]
    assert round(A, 3) == printed


def test_paper_width256_checkpoint_66():
    """Kumar App. U.7: the width-256 run (h_3, d = 16, eps = 0.1, seed 0) starts at R(0) =
    0.8183, A_top(0) = 0.15, and its update 66 lies at t = 48.834273 with l = 0.999988250 and
    attained eigencutoff risk 0.232107528 (the replayed reference checkpoint, Figure 24).
    The paper's draws (``convention="paper"``) and per-neuron step rule (``rel_norm="neuron"``)
    reproduce every printed digit, and so does the legacy diagnostic (0.232107532) on the
    equilibrated Gram; the references are the paper's printed numbers."""
    d, m = 16, 256
    S = SwiGLUStudent(d, m, biases=True, intercept=True, clock="mean_field")
    T = teacher_from_table({"link": "h3", "rank": 1, "normalize": "second_moment"}, d)
    p0 = S.init(0, 0.1, T, convention="paper")
    Mo = S.family.moments(p0, T, tol=1e-10)
    assert round(sw.refit_paper(S, p0, T, moments_=Mo)["R"], 4) == 0.8183
    assert round(sw.alignment_paper(S.family.agop(p0, Mo), np.eye(d)[:, :1])["A_top"], 2) == 0.15
    tr = sw.train_paper(S, p0, T, n_max=66, loss_stop=0.9)
    assert int(tr.n[-1]) == 66
    assert round(float(tr.t[-1]), 6) == 48.834273
    assert round(float(tr.normalized_loss[-1]), 9) == 0.999988250
    Mo = S.family.moments(tr.final, T, tol=1e-10)
    assert round(sw.refit_paper(S, tr.final, T, moments_=Mo)["R"], 9) == 0.232107528
    # the legacy penalized diagnostic of the replayed reference checkpoint: 0.232107532
    from popdyn.experiments.reproduce import legacy_ridge_risk
    G = Mo.Phi - np.outer(Mo.phibar, Mo.phibar)
    assert round(legacy_ridge_risk(G, Mo.Yphi - Mo.phibar * T.mean, float(T.variance)), 9) \
        == 0.232107532


def test_bad_input_messages():
    with pytest.raises(TypeError, match="`biases` must be a bool"):
        SwiGLUStudent(3, 2, biases=1)
    st_ = SwiGLUStudent(3, 2, biases=True)
    with pytest.raises(ValueError, match="`convention` must be one of"):
        st_.init(0, 0.1, convention="bogus")
    with pytest.raises(TypeError, match="SwiGLUBiasParams"):
        st_.check(popdyn.SwiGLUParams(np.ones(2), np.ones((2, 3)), np.ones((2, 3))))
    with pytest.raises(ValueError, match="`bg` must have shape"):
        SwiGLUBiasParams(np.ones(2), np.ones((2, 3)), np.ones((2, 3)), np.ones(3), np.ones(2))


def test_certify_refuses_the_biased_student():
    import certify
    from certify.errors import CertificationError
    d = 3
    st_ = SwiGLUStudent(d, 2, biases=True)
    p = st_.init(0, 0.3, convention="paper")
    T = Teacher.additive("h3", np.eye(d)[:1])
    for call in (lambda: certify.loss(st_, p, T), lambda: certify.alignment(st_, p, np.eye(d)[:1]),
                 lambda: certify.refit_risk(st_, p, T)):
        with pytest.raises(CertificationError, match="does not enclose the SwiGLU student with "
                           "gate/value biases") as e:
            call()
        assert "\n" not in str(e.value)


def test_config_biased_student_and_paper_init(tmp_path):
    from popdyn import config as C
    from popdyn.experiments import run_one
    text = ('name = "tiny_bias"\n[teacher]\nlink = "relu"\n[student]\nactivation = "swiglu"\n'
            'd = 4\nm = 3\nbiases = true\nclock = "mean_field"\n[init]\nscale = 0.1\n'
            'convention = "paper"\n[train]\nmethod = "gd"\nlr = 0.2\nmax_updates = 3\n'
            '[diagnostics]\ncertify = false\ngeometry = false\n')
    cfg = C.expand(C.loads(text))[0]
    student = C.make_student(cfg["student"])
    assert student.biases and isinstance(student.family, SwiGLUBiasFamily)
    assert run_one(cfg, tmp_path / "s")["status"] == "horizon"
    with pytest.raises(C.ConfigError, match=r"convention must be one of \['norm', 'entry', 'iid'\]"):
        C.expand(C.loads(text.replace("biases = true\n", "")))
