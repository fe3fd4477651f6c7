"""Closed-form pair moments of piecewise-linear (PL) units on Gaussian inputs.

A PL unit is σ(t) = p·relu(t) + q·t applied to t = α θ·x + β, x ~ N(0, I_d), α ≥ 0, |θ| = 1.
(relu: (p, q) = (1, 0); leaky_relu with slope s: (1 − s, s); |t|: (2, −1); identity: (0, 1).)
Derivatives are with respect to t: σ'(t) = p·1{t > 0} + q (1{0 > 0} = 0) and ασ'' = p·α·δ(t).
For unit i of set 1 and unit j of set 2, with ρ = θᵢ·θⱼ,

    C_ij = E[σᵢ σⱼ],  B_ij = E[σ'ᵢ σ'ⱼ],  A_ij = E[αᵢ σ''ᵢ σⱼ],  D_ij = E[σ'ᵢ σⱼ]

(A and D are not symmetric).  A_ij = pᵢ φ(βᵢ/αᵢ) E[σⱼ | tᵢ = 0] for αᵢ > 0 and 0 for αᵢ = 0.

This module is the face of the PL pair-moment kernels; they live in

* :mod:`popdyn._kernels.pl_ramps` -- the ramp–ramp evaluators and the default tolerances,
* :mod:`popdyn._kernels.pl_pair` -- single units, first moments, the moments of one pair,
* :mod:`popdyn._kernels.pl_front` -- the branch-free front of the pair loop,
* :mod:`popdyn._kernels.pl_batch` -- many pairs at once, with deferred work,
* :mod:`popdyn._kernels.pl_chunks` -- chunking, dispatch and the public entry points.

Method (all float64, numba)
---------------------------
*Canonical ramps.*  For αᵢ > 0 write h = βᵢ/αᵢ and, with Z̃ = s·θ·x,

    relu(t) = α (Z̃ − x)₊            (h ≤ 1:  s = +1, x = −h)
    relu(t) = t + α (Z̃ − x)₊        (h > 1:  s = −1, x = h),

so every unit is σ = P·α·g + Q·t with a ramp g = (Z̃ − x)₊, x ≥ −1 (P = p; Q = q or p + q):
the ramp left over is the small, tail-side part whenever the unit is far from its kink.
Linear parts are integrated exactly by Stein's lemma (E[t g(·)] = β E[g] + Cov·E[g']), so only
ramp–ramp terms need the bivariate normal: with correlation r̃ = sᵢsⱼρ (1 ∓ r̃ taken from
OMR/OPR, never formed as a difference), σ̃ = √((1−r̃)(1+r̃)),

    P̃ = P(Z̃₁>x, Z̃₂>y) = Φ₂(−x, −y; r̃)
    S̃ᵢⱼ = E[1{Z̃₁>x}(Z̃₂−y)₊] = aⱼ + r̃ aᵢ − y P̃,      aᵢ = φ(x) Φ((r̃x − y)/σ̃)
    R̃ = E[(Z̃₁−x)₊(Z̃₂−y)₊] = (xy + r̃) P̃ − x aⱼ − y aᵢ + σ̃ φ(x) φ((y − r̃x)/σ̃)

(docs/design.md §3 with h = −x, k = −y), the exponent written as (x−y)²/σ̃² + 2xy/(1+r̃).
r̃ = 1 gives the 1-D forms P̃ = Hh₀(M), R̃ = 2Hh₂(M) + |x−y| Hh₁(M) (M = max(x, y)) and r̃ = −1
the forms on the interval x < Z̃₁ < −y, with Hh_n the stable ramp moments of
:func:`popdyn._kernels.bvn.norm_hh`.  A_ij uses the conditional law tⱼ | tᵢ = 0 ~ N(μ, τ²) and
E[p relu(T) + qT] with the ramp again taken on the tail side of μ.  φ(h) is evaluated with the
exact quotient β/α (error-free transformations), so values ∝ e^{−h²/2} keep ulp accuracy.

*Tails.*  In the tails (x, y ≳ 1) the closed forms for R̃ and S̃ cancel (terms ~x²Φ(−x) for a
value ~φ(x)/x³).  For |r̃| < 0.925 the ramp moments are therefore computed first from Price's
theorem (∂R̃/∂r = P̃, ∂P̃/∂r = φ₂, S̃ij = −∂R̃/∂x), integrated from r̃ = 0 where they are
products of the stable 1-D ramp moments Hh_n (:func:`_ramps_price`):

    R̃ = Hh₁(x)Hh₁(y) + r̃ Hh₀(x)Hh₀(y) + ∫₀^r̃ (r̃ − t) φ₂(x, y; t) dt,   P̃, S̃ alike,

every term positive for r̃ ≥ 0 and x, y ≥ 0, with the t-integrals on the Gauss–Legendre rule of
Genz's Φ₂ (one exponential per node for all four moments).  Each evaluator returns an error
estimate (eps × the terms combined, each with the sensitivity to its rounded arguments; the
rule's error for the Price form); if the estimate could exceed ``rtol``·|moment| +
``atol``·scale (scale = product of the two units' RMS sizes of σ or σ'), the next evaluator is
tried: bound (:func:`_ramps_bound`: a ramp–ramp term below the tolerance, one unit far in its
tail, is the midpoint of [0, Cauchy–Schwarz bound]) → Price form → closed forms →
(|r̃| > 0.925) the 1-D forms at r̃ = ±1 with Price-bounded corrections when the thresholds are
separated on the scale σ̃ (:func:`_ramps_aligned`) → (|r̃| < 1 − 1e−3) the Price form with an
a-posteriori rule check (:func:`_ramps_price_checked`; below 0.925 it serves some of the
moderate anticorrelations near the kinks, r̃ ≈ −0.85, where R̃ is ~1/25 of its terms and the
pre-validated rule's allowance misses the target by a few tens of percent) → (r̃ < 0,
x + y > 0) the Price form integrated from r' = −1, where all four vanish: positive terms, on
panels graded towards −1 with an a-posteriori check (:func:`_ramps_price_anti`) → the four ramp
quantities as 1-D integrals of positive integrands, e.g.
R̃ = φ(x) ∫₀^∞ u e^{−xu−u²/2} σ̃ Hh₁((y − r̃(x+u))/σ̃) du, by adaptive Gauss–Kronrod (7–15)
with relative tolerance ``qtol`` (measured accuracy ~1e−14; left for nearly aligned units,
1 − r̃ ≲ 5e−3, with close thresholds in the tail, and for the few anticorrelated pairs that no
form above serves).  tests/popdyn/test_plmoments_estimates.py checks every estimate against
the actual error (40-digit mpmath).

*Many pairs at once* (:func:`pl_self_moments`, :func:`pl_pair_moments` through
:func:`_moments_list`, on chunks of :data:`_CHUNK` pairs so that its scratch stays in cache,
:func:`_moments_chunked`): every pair takes the evaluators above in the same order, but the
three expensive kinds of evaluation are deferred and done for all pairs together in loops over
the pairs that LLVM vectorizes: the Price forms (per Gauss–Legendre rule, panels as items;
:func:`_price_batch`), the remainder sum of Genz's |r| ≥ 0.925 rule in the closed forms
(:func:`popdyn._kernels.bvn._bvn_hi_rem_batch`), and Hh₁ of the A terms
(:func:`popdyn._kernels.bvn.hh1_batch`), with the exponential and sine of
:mod:`popdyn._kernels.vmath` (≤ 2 ulp, within the estimates' allowance for the exponentials).
A deferred pair whose estimate then misses the target continues exactly as the scalar path
(:func:`_ramps_rest`).  Results agree with the one-pair path :func:`pl_self_moments_pairwise`
to rounding (tests/popdyn/test_vmath.py, test_plmoments.py; benchmarks/bench_pairs.py times
both).  The pair loop runs in two passes.  Its arithmetic -- the linear and A parts, the ramp
frame, the bound and its test, the Price form's log-variation -- is one loop over the
consecutive pairs (i, j), (i, j + 1), … of a row (:func:`_front_seg`), reading the units as a
structure of arrays (:func:`_unit_array`) and writing one column store: LLVM vectorizes it
(tests/popdyn/test_plmoments_front.py inspects the assembly).  Its data-dependent choices are
selects (the branch-free twins ``_*_bf`` of the one-pair forms, bit for bit the same values:
tests/popdyn/test_plmoments_front.py).  A scalar pass then picks each pair's next evaluator
and fills the deferral lists; the deferred Price pairs carry their columns (:func:`_pc_store_a`)
to an assembly over arrays (:func:`_finish_price`), and their node sums are one fused pass per
node (:func:`_price_batch`, the exponential of :func:`popdyn._kernels.vmath.exp_inline`).  The
chunks' pair lists, results and scratch are allocated once per call (:func:`_moments_chunked`)
with rows not 2^k apart (:data:`_LD`).  No call in these loops takes arrays (numba increfs and
decrefs every array argument of a call atomically).  Every evaluation acts pair by pair, so
the chunking and the batching do not change the bits.

*Degenerate geometry* is exact: α = 0 (constant unit), |β| > 40α (the ramp part is exactly 0 or
exactly linear in float64: Φ(−40) underflows; h = β/α is never formed when it could overflow),
ρ = ±1 exactly (1-D forms), ρ within 1e−12 of ±1 (through OMR/OPR), β = 0.

Accuracy (tests/popdyn/test_plmoments.py, against 30-digit mpmath): every entry within
1e−13·|value| + 1e−15·scale (+ eps·h²/2·|value| for |h| ≳ 20, the conditioning of e^{−h²/2}).

References
----------
docs/design.md §2–§3.  S. Rosenbaum, "Moments of a truncated bivariate normal distribution",
J. R. Stat. Soc. B 23 (1961) 405–408 (the truncated moments behind R̃, S̃).
"""
from .bvn import _GL6_U, _GL6_W  # noqa: F401  (the Price rule's nodes, read by the tests)
from .pl_batch import (_PB, _finish_direct, _finish_price, _list_scratch,  # noqa: F401
                       _moments_list, _pc_store, _pc_store_a, _price_batch, _price_node_sums)
from .pl_chunks import (_chunk_index, _fill_lower, _moments_chunked,  # noqa: F401
                        pl_pair_moments, pl_pair_moments_units, pl_pair_moments_ws,
                        pl_self_moments, pl_self_moments_units, pl_self_moments_ws)
from .pl_front import (_CHUNK, _FR_N, _LD, _UA_N, _cond_parts_bf, _front_rows,  # noqa: F401
                       _front_seg, _linear_parts_bf, _linear_parts_raw, _price_logvar_bf,
                       _ramp_frame_bf, _ramps_need_bf, _unit_array)
from .pl_pair import (_a_value, _cond_mean, _cond_parts, _h_phi, _pair_linear,  # noqa: F401
                      _pair_linear_parts, _pair_moments, _ramp_frame, _ramps_need, _ramps_rest,
                      _ramps_rest_after_direct, _unit, pl_first_moments,
                      pl_first_moments_units, pl_self_moments_pairwise, pl_units)
from .pl_ramps import (ATOL, MAXINT, QTOL, RTOL, _ANTI_DROP, _ANTI_MAXPAN,  # noqa: F401
                       _ANTI_Q, _HBIG, _PRICE_OMMIN, _PRICE_RMAX, _anti_tail,
                       _anti_tail_monotone, _price_assemble, _price_logvar, _price_panels,
                       _price_rule, _price_sum, _price_sum_anti, _ramps_aligned, _ramps_bound,
                       _ramps_direct, _ramps_direct_with, _ramps_price, _ramps_price_anti,
                       _ramps_price_checked, _ramps_quad)

__all__ = ["pl_pair_moments", "pl_self_moments", "pl_first_moments", "pl_units",
           "pl_pair_moments_units", "pl_self_moments_units", "pl_first_moments_units",
           "pl_pair_moments_ws", "pl_self_moments_ws"]
