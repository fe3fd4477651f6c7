"""AGOP M = E[∇f ∇fᵀ] = s²Wᵀ(aaᵀ∘B)W (docs/design.md §3, §5) against the 30-digit mpmath references
of data/_precompute/diagnostics_refs.py (2-D Gaussian integrals with exact inner conditional
expectations and kink-split tanh–sinh outer quadrature; no popdyn code), including
rank-deficient features (duplicated and antiparallel neurons, zero neurons), and its properties."""
import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import popdyn
from popdyn._moments import moments
from popdyn.diagnostics import agop

try:  # tests/popdyn as a package or on sys.path (pytest's default rootdir mode)
    from ._diagrefs import build, case_ids, cases, f
except ImportError:
    from _diagrefs import build, case_ids, cases, f

REL = 1e-10


def _maxrel(x, ref):
    return float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))


@pytest.mark.parametrize("case", cases(), ids=case_ids())
def test_agop_against_mpmath(case):
    S, p, T = build(case)
    M = agop(S, p)
    ref = f(case["agop"])
    err = _maxrel(M, ref)
    assert err <= REL, f"max |M − M_ref| / max |M_ref| = {err:.3g} ({err / REL:.2f} tolerances)"
    # the engine's derivative moments B that enter it
    B = moments(S, p, None, grad=False, cross=False).B
    assert _maxrel(B, f(case["B"])) <= REL


def _random_state(seed, d=5, m=7, activation="relu", scaling="standard"):
    S = popdyn.Student(d=d, m=m, activation=activation, scaling=scaling)
    rng = np.random.default_rng(seed)
    p = popdyn.Params(rng.standard_normal(m), rng.standard_normal((m, d)) / np.sqrt(d),
                      0.3 * rng.standard_normal(m), 0.0)
    return S, p


@given(st.integers(0, 2 ** 31), st.sampled_from(["relu", "leaky_relu"]), st.floats(-3, 3))
@example(9815580, "leaky_relu", 0.0)       # an entry 1e−7 of max|M|, 2.6e−11 relative off
@example(18851, "leaky_relu", 0.21875)     # an entry 2e−5 of max|M|: 3e−12 under λ-scaling
def test_properties(seed, activation, lam):
    S, p = _random_state(seed, activation=activation)
    M = agop(S, p)
    assert np.array_equal(M, M.T)
    assert np.linalg.eigvalsh(M)[0] >= -1e-12 * np.abs(M).max()
    # homogeneous of degree 2 in the head; invariant under neuron permutations
    # entries far below max|M| (cancellation) are accurate relative to max|M| only
    np.testing.assert_allclose(agop(S, p.replace(a=lam * p.a)), lam ** 2 * M, rtol=1e-12,
                               atol=max(1e-14 * lam ** 2 * np.abs(M).max(), 1e-300))
    perm = np.random.default_rng(seed).permutation(S.m)
    q = popdyn.Params(p.a[perm], p.W[perm], p.b[perm], p.c)
    np.testing.assert_allclose(agop(S, q), M, rtol=1e-12, atol=1e-14 * np.abs(M).max())
    # the intercept does not enter; mean-field scaling divides by m²
    np.testing.assert_array_equal(agop(S, p.replace(c=3.0)), M)
    Smf = S.replace(scaling="mean_field")
    # entries far below max|M| (cancellation) are accurate relative to max|M| only
    np.testing.assert_allclose(agop(Smf, p), M / S.m ** 2, rtol=1e-12,
                               atol=1e-14 * np.abs(M).max() / S.m ** 2)


def test_rank_and_zero_neurons():
    S, p = _random_state(3, d=6, m=4)
    assert np.linalg.matrix_rank(agop(S, p), tol=1e-10) == 4
    W = p.W.copy()
    W[1] = 0.0
    assert np.linalg.matrix_rank(agop(S, p.replace(W=W)), tol=1e-10) == 3
    assert not np.any(agop(S, p.replace(a=np.zeros(4))))


def test_monte_carlo_cross_check():
    """Loose independent check by sampling ∇f (relu: s Σ a_j 1{w_j·x + b_j > 0} w_j)."""
    S, p = _random_state(7, d=3, m=4)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200_000, 3))
    act = (X @ p.W.T + p.b > 0).astype(float)
    grads = (act * p.a) @ p.W
    Mmc = grads.T @ grads / X.shape[0]
    np.testing.assert_allclose(agop(S, p), Mmc, atol=0.02 * np.abs(Mmc).max())


def test_bad_input():
    S, p = _random_state(0)
    with pytest.raises(TypeError, match="`student`"):
        agop("relu", p)
    with pytest.raises(TypeError, match="`params`"):
        agop(S, p.W)
    with pytest.raises(ValueError, match=r"`params.W` must have shape"):
        agop(S, popdyn.Params(p.a[:3], p.W[:3], p.b[:3]))
    with pytest.raises(ValueError, match="`rtol` must be > 0"):
        agop(S, p, rtol=0.0)
