r"""Certified brackets for SwiGLU students: the loss and the AGOP alignment (docs/design.md §6).

A SwiGLU student f(x) = Σ_j a_j SiLU(g_j·x)(v_j·x) + c reduces, like the float64 engine
(:mod:`popdyn.swiglu`, formulas SG-1, SG-2 -- the same formulas are evaluated here in Arb), to
the Mehler sums

    M^{pq}_ij = E[σ^{(p)}(g_i·x) σ^{(q)}(g_j·x)] = Σ_n T^{(p)}_n(α_i) T^{(q)}_n(α_j) ρ_ijⁿ,
    T^{(p)}_n(α) = E[σ^{(p)}(αz) h_n(z)],   σ = SiLU,  α_i = |g_i|,  ρ_ij = θ_i·θ_j.

What is rigorous here, and how
------------------------------
1. **SiLU Hermite coefficients.**  T^{(p)}_n(α) (p ≤ 4, n ≤ N) and the energies
   E[σ^{(p)}σ^{(q)}(αz)] are integrals over ℝ of functions analytic in the strip
   |Im z| < π/α (the poles of the logistic function sit at αz = iπ(2k + 1)).  They are
   computed by the trapezoidal rule h Σ_{|k|≤K} f(kh) in Arb, with two rigorous error terms:

   * discretization (Trefethen & Weideman, SIAM Review 56 (2014), Thm 5.1): for f analytic in
     |Im z| < a with ∫|f(x + iy)|dx ≤ M for |y| < a, |I_h − I| ≤ 2M/(e^{2πa/h} − 1).  We take
     a ≤ π/(2α_max), where the logistic s(w) = 1/(1 + e^{−w}) satisfies |s| ≤ 1 and
     |1 − s| ≤ 1 (Re(1 + e^{−w}) ≥ 1 for |Im w| ≤ π/2), hence |s'| ≤ 1, |s''| ≤ 3,
     |s'''| ≤ 11, |s''''| ≤ 51 and |σ^{(p)}(w)| ≤ A_p + B_p|w| with
     (A_p, B_p) = (0, 1), (1, 1), (2, 3), (9, 11), (44, 51) (σ^{(p)} = w s^{(p)} + p s^{(p−1)}).
     Hermite functions: by Cauchy's estimate on the generating function exp(zt − t²/2) on
     |t| = √n, |He_n(z)|/√n! ≤ (2πn)^{1/4} e^{1/(24n)} e^{|z|√n} (Stirling), and
     |φ(x + iy)| = φ(x) e^{y²/2}.  The resulting M is evaluated in closed form (Gaussian
     integrals of e^{c|x|} and |x|e^{c|x|}) in Arb;
   * truncation of the sum to |k| ≤ K: the neglected terms are bounded by the integral of a
     decreasing majorant beyond Kh (Gaussian tail integrals, erfc in Arb).

   Both bounds are added as radii to every coefficient and energy.
2. **Mehler tails.**  With τ_p(i)² = E[σ^{(p)}(α_i z)²] − Σ_{n≤N} T^{(p)}_n(α_i)² (an upper
   bound from the enclosures), |Σ_{n>N} T^{(p)}_n T^{(q)}_n ρⁿ| ≤ τ_p(i) τ_q(j) |ρ|^{N+1}
   (Cauchy–Schwarz; valid for every |ρ| ≤ 1, so duplicated or antiparallel gates are covered).
   Diagonal moments (ρ = 1, equal α) are the energies themselves.  Off-diagonal pairs with
   |ρ| < 0.9 go through the float64 Mehler kernel with rigorous rounding bounds
   (:func:`certify._mehler.mehler_pairs`); the others are summed in Arb.
3. **Teachers.**  Additive teachers with *polynomial* links (h1 … h6, h3+0.3h2, their
   positive combinations, ``q·z`` linear parts) are exact finite Hermite expansions at the
   actual row norms |u_k| (no orthonormality assumed): E[y], E[y²] and the cross moments
   E[yφ_j] = δ_j E[yσ'_j] + E[σ_j ∂_{v_j}y] (Stein) are finite sums of enclosed terms.
   Gated teachers y = κF(u₁·x)(u₂·x) (gates id, relu, gelu, tanh, rotation) are rigorous too,
   through :mod:`certify.swiglu_gated` (a :class:`certify._families.MomentSource`).
   Every other teacher (non-polynomial links, networks, other multi-index teachers) gives a
   ``numerical`` loss bracket: the float64 engine's value ± twice its error estimate
   (:func:`popdyn.swiglu.population_loss` with ``full_output``) plus 1e−13 of the loss scale.
4. The AGOP M = Gᵀ(aaᵀ∘Q¹¹)G + Gᵀ(aaᵀ∘E)V + Vᵀ(aaᵀ∘Eᵀ)G + Vᵀ(aaᵀ∘M⁰⁰)V (see
   :mod:`popdyn.swiglu`) is assembled in Arb and passed to the certified eigengap and
   Davis–Kahan recipe of :func:`certify.alignment.alignment_from_matrix`.

Limits: the rigorous coefficient step needs gates of moderate size (α_max ≤ 8; the strip
shrinks as π/(2α) and the node count grows like α); larger gates raise
:class:`~certify.CertificationError` with that advice.  Widths are ~1e−14 relative at the
default precision (the float Mehler path); prec > 128 sums every pair in Arb.

References
----------
L. N. Trefethen, J. A. C. Weideman, "The exponentially convergent trapezoidal rule",
SIAM Review 56 (2014) 385–458, Theorem 5.1; Kumar (arXiv 2609.39408) (SwiGLU students);
docs/design.md §3, §6.
"""
from __future__ import annotations

import math
from typing import Any
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, ctx
from popdyn import assembly as _asm
from popdyn import swiglu as sw
from popdyn.families.swiglu import SWIGLU as _SWIGLU_SPEC
from popdyn.swiglu import SwiGLUStudent, silu_coefficients
from popdyn.teachers import AdditiveTeacher, Teacher

from . import _arb as A
from . import _families
from . import _mehler as _mh
from .arrays import ARB, Vec, col, vec
from .alignment import AlignmentBracket, alignment_from_matrix
from .bracket import Bracket
from .errors import CertificationError
from .loss import LossBracket
from .moments import CLEAR_HOOKS as _MO_CLEAR_HOOKS
from .moments import _Geometry

__all__ = ["swiglu_loss", "swiglu_alignment", "silu_hermite_enclosures"]

#: |σ^{(p)}(w)| ≤ A_p + B_p|w| on |Im w| ≤ π/2 (module docstring)
_AB = ((0, 1), (1, 1), (2, 3), (9, 11), (44, 51))
#: σ^{(p)}(0) for SiLU, p = 0..4
_AT0 = (Fraction(0), Fraction(1, 2), Fraction(1, 2), Fraction(0), Fraction(-1, 2))
_PAIRS = ((0, 0), (1, 1), (2, 2), (2, 0), (3, 1), (4, 0))
_ALPHA_MAX = 8.0
_RMAX = 0.9
_TOL_FLOAT = 2.0 ** -44       # float-path eligibility: tail ≤ 2⁻⁴⁴ of the pair's scale
_N_CAP = 128


def _silu_derivs(w):
    """(σ, σ', σ'', σ''', σ'''') of SiLU at the ball w."""
    s = 1 / (1 + (-w).exp())
    s1 = s * (1 - s)
    t = 1 - 2 * s
    s2 = s1 * t
    s3 = s2 * t - 2 * s1 * s1
    s4 = s3 * t - 6 * s1 * s2
    return (w * s, s + w * s1, 2 * s1 + w * s2, 3 * s2 + w * s3, 4 * s3 + w * s4)


def _neg(cv, x, p):
    """σ^(p)(−x) from the values ``cv`` = (σ, σ', σ'', σ''', σ'''') of SiLU at x: the exact
    identities SiLU(−x) = SiLU(x) − x, SiLU'(−x) = 1 − SiLU'(x) and the parities of the higher
    derivatives (even, odd, even), from s(−x) = 1 − s(x)."""
    if p == 0:
        return cv[0] - x
    if p == 1:
        return 1 - cv[1]
    if p == 3:
        return -cv[3]
    return cv[p]


# ------------------------------------------------------------------ trapezoid error bounds
def _Q(t):
    """Gaussian upper tail 1 − Φ(t) as a ball."""
    return (t / arb(2).sqrt()).erfc() / 2


def _coef_M(p, al, a, c, HN):
    """∫|f(x + iy)|dx bound for f = σ^{(p)}(αz) h_n(z) φ(z), n ≤ N (c = √N), |y| ≤ a."""
    Ap, Bp = _AB[p]
    ec = (c * c / 2).exp()
    phi0 = 1 / (2 * arb.pi()).sqrt()
    inner = (Ap + Bp * al * a) * ec + Bp * al * (phi0 + c * ec)
    return 2 * HN * (a * c + a * a / 2).exp() * inner


def _coef_tail(p, al, X, c, HN):
    """2∫_X^∞ (A + Bαx) H_N e^{cx} φ(x) dx (both sides), valid when X ≥ c + 2."""
    Ap, Bp = _AB[p]
    ec = (c * c / 2).exp()
    t = X - c
    phit = (-(t * t) / 2).exp() / (2 * arb.pi()).sqrt()
    return 2 * HN * ec * (Ap * _Q(t) + Bp * al * (phit + c * _Q(t)))


def _uv(p, al, a):
    Ap, Bp = _AB[p]
    return Ap + Bp * al * a, Bp * al


def _energy_M(p, q, al, a):
    up, vp = _uv(p, al, a)
    uq, vq = _uv(q, al, a)
    m1 = (2 / arb.pi()).sqrt()
    return (a * a / 2).exp() * (up * uq + (up * vq + uq * vp) * m1 + vp * vq)


def _energy_tail(p, q, al, X):
    up, vp = _uv(p, al, 0)
    uq, vq = _uv(q, al, 0)
    phiX = (-(X * X) / 2).exp() / (2 * arb.pi()).sqrt()
    QX = _Q(X)
    return 2 * (up * uq * QX + (up * vq + uq * vp) * phiX + vp * vq * (X * phiX + QX))


def _plan(al_max: float, N: int, prec: int):
    """Strip half-width a, step h (dyadic) and node count K for target error 2^{−prec−8}."""
    c = math.sqrt(N)
    lhn = max(0.0, 0.25 * math.log(2 * math.pi * max(N, 1)) + 1 / 24)
    ltol = (prec + 8) * math.log(2.0)
    amax = math.pi / (2 * max(al_max, 1e-300))
    best = None
    # t ≤ 0.95 keeps α·a strictly below π/2 despite the float rounding of π/(2α_max)
    for t in np.linspace(0.05, 0.95, 38):
        a = min(amax * t, 12.0)
        Bp = 51 * max(al_max, 1e-3)
        logM = (math.log(2) + lhn + a * c + a * a / 2 + c * c / 2
                + math.log(44 + Bp * (a + 1.0 + c)))
        h = 2 * math.pi * a / (logM + math.log(2) + ltol)
        if best is None or h > best[1]:
            best = (a, h)
    assert best is not None                  # h > 0 at every t of the grid
    a, h = best
    h = math.ldexp(math.floor(math.ldexp(h, 24)), -24)
    # truncation point: Gaussian tail of e^{c² /2} Q(X − c) below the target (float planning;
    # the bound actually used is evaluated rigorously afterwards)
    X = c + 2.0
    while (c * c / 2 + lhn + math.log(52 * (1 + max(al_max, 1.0) * (X + c)))
           - (X - c) ** 2 / 2) > -ltol - 2:
        X += 0.25
    K = int(math.ceil(X / h))
    return a, h, K


def silu_hermite_enclosures(alphas, N: int, *, prec: int = 128):
    """Rigorous enclosures of T^{(p)}_n(α_j) = E[SiLU^{(p)}(α_j z) h_n(z)] and energies.

    Parameters
    ----------
    alphas : list of arb
        Gate norms α_j ≥ 0 (balls).
    N : int
        Highest Hermite order.
    prec : int, keyword-only
        Working precision (bits); the quadrature targets an error 2^{−prec−8}.

    Returns
    -------
    T : list of 5 arb_mat, each (m, N + 1)
    E : dict {(p, q): list of arb}
        E[σ^{(p)}(α_j z) σ^{(q)}(α_j z)] for (p, q) in (0,0), (1,1), (2,2), (3,3), (4,4),
        (2,0), (3,1), (4,0).
    """
    m = len(alphas)
    al_up = max([A.upper(x) for x in alphas] + [0.0])
    if not al_up <= _ALPHA_MAX:
        raise CertificationError(
            f"a gate norm |g_j| = {al_up:.3g} exceeds {_ALPHA_MAX} (the analyticity strip of "
            "SiLU shrinks like π/|g|)", hint="a numerical bracket (popdyn.swiglu with "
            "full_output) or rescale the gates")
    epairs = ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (2, 0), (3, 1), (4, 0))
    nz = [j for j in range(m) if not (alphas[j] == 0)]
    T = [arb_mat(m, N + 1) for _ in range(5)]
    E = {pq: [arb(0)] * m for pq in epairs}
    for j in range(m):
        if j in nz:
            continue
        for p in range(5):
            v = arb(_AT0[p].numerator) / _AT0[p].denominator
            T[p][j, 0] = v
        for (p, q) in epairs:
            E[(p, q)][j] = T[p][j, 0] * T[q][j, 0]
    if not nz:
        return T, E
    a, h, K = _plan(al_up, N, prec)
    wp = prec + 32
    with A.workprec(wp):
        ab = arb(a)
        hb = arb(h)
        alb = arb(al_up)
        c = arb(N).sqrt()
        HN = max(arb(1), (2 * arb.pi() * max(N, 1)) ** (arb(1) / 4) * (arb(1) / 24).exp())
        X = K * hb
        if not (X >= c + 2):
            raise CertificationError("internal: truncation point below the majorant's mode",
                                     hint="a higher prec")
        dexp = (2 * arb.pi() * ab / hb).exp() - 1
        # the coefficient quadratures taken: σ⁗ on all orders, σ and σ″ at order 0 (the rest
        # follow by the recurrence below)
        err_c = {p: 2 * _coef_M(p, alb, ab, c, HN) / dexp + _coef_tail(p, alb, X, c, HN)
                 for p in (0, 2, 4)}
        err_e = {pq: 2 * _energy_M(pq[0], pq[1], alb, ab) / dexp
                 + _energy_tail(pq[0], pq[1], alb, X) for pq in epairs}
        rc = {p: A.upper(e) for p, e in err_c.items()}
        re_ = {pq: A.upper(e) for pq, e in err_e.items()}
        # Symmetric nodes ±z_k, z_k = k·h (k = 0..K), weights h·φ(z_k) and normalized Hermite
        # values (shared by all units).  Each σ^(p) is split into its even and odd parts:
        #   σ = x/2 + even,  σ' = 1/2 + odd,  σ'' even,  σ''' odd,  σ'''' even
        # (SiLU(x) − x/2 = x(s(x) − 1/2) is even).  The parts x/2 and 1/2 have the exact
        # coefficients α/2·[n = 1] and 1/2·[n = 0]; a part of the other parity has exact zero
        # coefficients; the rest is the trapezoid sum over ±z_k folded onto k ≥ 0 (the same
        # sum as over k = −K..K, so the trapezoid bounds above hold unchanged).
        zs = [k * hb for k in range(K + 1)]
        inv = 1 / (2 * arb.pi()).sqrt()
        wts = [hb * inv * (-(z * z) / 2).exp() for z in zs]
        w2 = [wts[0]] + [2 * w for w in wts[1:]]          # weight of the pair ±z_k
        # The three-term recurrence of h_n in ball arithmetic overestimates its radius by up to
        # ~(2√n)^n/√n! ≈ 2^{1.72n} relative to the true value in the oscillatory region, so
        # the table is built with 2N + 64 guard bits (the products below are then at wp).
        with A.workprec(wp + 2 * N + 64):
            Hw = A.hermite_rows(zs, N)
        # back at wp: the weights multiply in and every entry is rounded to wp bits (short
        # mantissas keep the matrix product fast; the rounding is part of each ball)
        # Only the fourth derivative σ⁗ (even) is expanded by the quadrature on all orders: the
        # lower derivatives follow from the exact recurrence
        #     α T^{(p+1)}_{n−1}(α) = √n T^{(p)}_n(α),   n ≥ 1
        # (Stein's identity E[f′(z) h_{n−1}(z)] = √n E[f(z) h_n(z)] for f(z) = σ^{(p)}(αz)), in
        # ball arithmetic; the orders n = 0 take the quadrature of σ and σ″ (even parts; one
        # column each), σ′ has T_0 = 1/2 (its part 1/2) and σ‴ none (odd).  One ball matrix
        # product then serves all five derivatives.
        even = list(range(0, N + 1, 2))
        Hm = arb_mat([[w * row[n] for n in even] for w, row in zip(w2, Hw)])
        h0 = arb_mat([[w * row[0]] for w, row in zip(w2, Hw)])
        half = arb(1) / 2
        S: dict[int, list[Any]] = {p: [None] * len(nz) for p in (0, 2, 4)}
        D: list[Any] = [None] * len(nz)                              # (x_k, σ^(p)(x_k)) per unit
        for jj, j in enumerate(nz):
            al = alphas[j]
            xs = [al * z for z in zs]
            cols = [_silu_derivs(x) for x in xs]
            D[jj] = (xs, cols)
            S[0][jj] = [cv[0] - x * half for x, cv in zip(xs, cols)]    # σ − x/2: even
            for p in (2, 4):
                S[p][jj] = [cv[p] for cv in cols]
        zero = arb(0)
        for p in range(5):
            for jj, j in enumerate(nz):
                for n in range(N + 1):
                    T[p][j, n] = zero
        T4 = arb_mat(S[4]) * Hm
        rad = arb(0, rc[4])
        for jj, j in enumerate(nz):
            for ci, n in enumerate(even):
                T[4][j, n] = T4[jj, ci] + rad
        T0 = {p: arb_mat(S[p]) * h0 for p in (0, 2)}
        sq = [arb(0)] + [arb(n).sqrt() for n in range(1, N + 1)]
        # the orders that are not 0 by parity: σ‴ odd; σ″ even; σ′ 1/2 + odd; σ x/2 + even
        orders = {3: range(1, N + 1, 2), 2: range(2, N + 1, 2), 1: range(1, N + 1, 2),
                  0: [n for n in range(1, N + 1) if n == 1 or n % 2 == 0]}
        for p in (3, 2, 1, 0):
            for jj, j in enumerate(nz):
                if p in T0:
                    T[p][j, 0] = T0[p][jj, 0] + arb(0, rc[p])
                elif p == 1:
                    T[1][j, 0] = half
                al = alphas[j]
                for n in orders[p]:
                    T[p][j, n] = al * T[p + 1][j, n - 1] / sq[n]
        # E[σ^(p)σ^(q)]: the trapezoid sum over ±z_k, with σ^(p)(−x) from the values at x
        # (:func:`_neg`); the values at ±x of each unit are formed once per p (the same
        # operations in the same order as the sum written term by term)
        for jj, j in enumerate(nz):
            xs, cols = D[jj]
            up = [[cv[p] for cv in cols] for p in range(5)]
            dn = [[_neg(cv, x, p) for cv, x in zip(cols, xs)] for p in range(5)]
            for (p, q) in epairs:
                fp, fq, gp, gq = up[p], up[q], dn[p], dn[q]
                acc = wts[0] * fp[0] * fq[0]
                for k in range(1, len(zs)):
                    acc += wts[k] * (fp[k] * fq[k] + gp[k] * gq[k])
                E[(p, q)][j] = acc + arb(0, re_[(p, q)])
    return T, E


# ------------------------------------------------------------------------- student moments
def _float_coeffs(T, E, m, N):
    """Float coefficient arrays, error bounds, tail energies and scales per p."""
    out = []
    for p in range(5):
        X = np.zeros((m, N + 1))
        Er = np.zeros((m, N + 1))
        tail = np.zeros(m)
        sc = np.zeros(m)
        Tp = T[p].tolist()
        for j in range(m):
            s2 = arb(0)
            Xj, Erj = X[j], Er[j]
            for n, v in enumerate(Tp[j]):
                f = float(v.mid())
                Xj[n] = f
                Erj[n] = A.upper(abs(v - f))
                s2 += v * v
            tail[j] = max(A.upper(E[(p, p)][j] - s2), 0.0)
            sc[j] = math.sqrt(max(A.upper(E[(p, p)][j]), 0.0)) * (1 + 1e-15) + 1e-300
        out.append((X, Er, tail, sc))
    return out


def _student_moments(G, alphas, geo, T, E, N, prec):
    """{(p, q): arb_mat} for the six Mehler pairs of the SwiGLU formulas."""
    m = G.shape[0]
    fc = _float_coeffs(T, E, m, N)
    ok = np.array([not (alphas[j] == 0) for j in range(m)])
    W = _mh.scaled_rows(G)
    out = {pq: arb_mat(m, m) for pq in _PAIRS}
    use_float = prec <= 128
    calls = (((0, 0), (1, 1)), ((2, 2), (2, 0)), ((3, 1), (4, 0)))
    for (pc, pd) in calls:
        vals = {}
        if use_float:
            C = np.zeros((m, m)); eC = np.zeros((m, m))
            B = np.zeros((m, m)); eB = np.zeros((m, m))
            OK = np.zeros((m, m), dtype=np.bool_)
            X1, E1, T1, S1 = fc[pc[0]]
            X2, E2, T2, S2 = fc[pc[1]]
            Y1, F1, U1, R1 = fc[pd[0]]
            Y2, F2, U2, R2 = fc[pd[1]]
            _mh.mehler_pairs(W, W, False, X1, E1, T1, S1, Y1, F1, U1, R1, ok,
                             X2, E2, T2, S2, Y2, F2, U2, R2, ok, N, _TOL_FLOAT, _RMAX,
                             C, eC, B, eB, OK)
            vals = {pc: (C, eC), pd: (B, eB)}
        for pq in (pc, pd):
            p, q = pq
            # the float entries as balls [v ± e] (arb(mid, rad): the radius rounded up), the
            # matrix built from its rows at once
            if use_float:
                V, Ev = vals[pq][0].tolist(), vals[pq][1].tolist()
            rows = []
            for i in range(m):
                row = []
                for j in range(m):
                    if i == j and ok[i]:
                        row.append(E[(p, q)][i])
                    elif use_float and OK[i, j]:
                        row.append(arb(V[i][j], Ev[i][j]))
                    else:
                        row.append(_arb_pair(T, E, fc, geo, i, j, p, q, N, ok))
                rows.append(row)
            out[pq] = arb_mat(rows)
    return out


def _arb_pair(T, E, fc, geo, i, j, p, q, N, ok):
    if not (ok[i] and ok[j]):
        return T[p][i, 0] * T[q][j, 0]
    rho = geo.pair(i, j)[0]
    acc = arb(0)
    pw = arb(1)
    for n in range(N + 1):
        acc += T[p][i, n] * T[q][j, n] * pw
        pw = pw * rho
    r = min(A.upper(abs(rho)), 1.0)
    # float bookkeeping: the factor covers the roundings of the product, sqrt and power;
    # the 1e−300 floor covers underflow
    tail = math.sqrt(fc[p][2][i] * fc[q][2][j]) * r ** (N + 1)
    return acc + arb(0, A.mul_up(tail, 1 + 1e-12) + 1e-300)


# ------------------------------------------------------------------------------- teachers
def _poly_link_monomials_h(link):
    """{power: list of (Fraction coef, k)} meaning Σ coef/√k! z^power, or None."""
    from .moments import hermite_monomials
    out = {}
    q = Fraction(link.q)
    if q != 0:
        out.setdefault(1, []).append((q, 0))
    for w, kind, k, a in link._hdata.gp:
        if a != 0:
            return None
        if kind == "h":
            for pw, cf in hermite_monomials(k).items():
                out.setdefault(pw, []).append((Fraction(w) * cf, k))
        else:
            out.setdefault(k, []).append((Fraction(w), 0))
    return out


def _link_poly(link):
    """Monomial coefficients of a polynomial link as a dict {power: arb}, or None."""
    if link.p != 0.0 or link._hdata.gp is None:
        return None
    mons = _poly_link_monomials_h(link)
    if mons is None:
        return None
    out = {}
    for pw, terms in mons.items():
        v = arb(0)
        for cf, k in terms:
            v += arb(cf.numerator) / cf.denominator / arb(math.factorial(k)).sqrt()
        out[pw] = v
    return out


def _deriv(poly):
    return {k - 1: k * v for k, v in poly.items() if k >= 1}


def _hermite_of_scaled(poly, beta, nmax):
    """Ĝ_n(β) = E[G(βz) h_n(z)], n = 0..nmax, for G = Σ c_k z^k (finite, exact)."""
    out = []
    for n in range(nmax + 1):
        acc = arb(0)
        for k, ck in poly.items():
            if k < n or (k - n) % 2:
                continue
            # E[z^k He_n] = k!/(k − n)! · (k − n − 1)!!
            num = math.factorial(k) // math.factorial(k - n)
            dfac = 1
            for t in range(k - n - 1, 0, -2):
                dfac *= t
            acc += ck * beta ** k * (num * dfac)
        out.append(acc / arb(math.factorial(n)).sqrt())
    return out


def _teacher_poly(teacher):
    if not isinstance(teacher, AdditiveTeacher):
        return None
    poly = _link_poly(teacher.link)
    if poly is None:
        return None
    return poly


# ------------------------------------------------------------------------------ public API
def _check(student, params, prec):
    prec = A.check_prec(prec)
    if not isinstance(student, SwiGLUStudent):
        raise TypeError(f"`student` must be a popdyn.SwiGLUStudent, got {type(student).__name__}")
    if student.biases:
        _refuse_biased(student)
    student.check(params)
    return prec


_BIASED_REFUSAL = ("certify does not enclose the SwiGLU student with gate/value biases "
                   "(SwiGLUStudent(biases=True)): its biased Mehler moments have no Arb bracket")


def _refuse_biased(student, *args, **kw):
    """Certification of the biased SwiGLU student (Kumar eq. (71)) is not provided: one line."""
    raise CertificationError(_BIASED_REFUSAL, hint="use popdyn's float64 values (numerical)")


def _order(student, params):
    al = np.sqrt(np.einsum("ij,ij->i", params.G, params.G))
    _, N, _ = silu_coefficients(al)
    return int(N) + 8


#: the registered name of the SwiGLU family (:mod:`popdyn.families.swiglu`)
SWIGLU_FAMILY = _SWIGLU_SPEC.name
_SETUP_CACHE: list = []


def _teacher_source(student, teacher):
    """The moment source (:class:`certify._families.MomentSource`) that certifies SwiGLU
    students against ``teacher`` beyond the polynomial class (:mod:`certify.swiglu_gated`)."""
    return _families.source(student, teacher)


def _setup(student, params, extra_rows, prec, N=None):
    """Geometry, SiLU enclosures and Mehler moments of one state (the last few cached, so that
    the loss, the refit and the alignment at one checkpoint share them; the key holds every
    input bit and the working precision)."""
    # one working precision for every caller (the loss runs inside a prec + 32 context, the
    # refit and the alignment at prec), so that the three share one computation
    wp = max(ctx.prec, prec + 32)
    key = (params.G.tobytes(), params.G.shape, None if extra_rows is None else
           (extra_rows.tobytes(), extra_rows.shape), prec, N, wp)
    for k, v in _SETUP_CACHE:
        # student-only requests (the AGOP) may use an entry with teacher rows: the student
        # rows come first, so their geometry and moments are the same
        if k == key or (extra_rows is None and k[:2] == key[:2] and k[3:] == key[3:]):
            return v
    with A.workprec(wp):
        out = _setup_compute(student, params, extra_rows, prec, N)
    _SETUP_CACHE.insert(0, (key, out))
    del _SETUP_CACHE[3:]
    return out


def _setup_compute(student, params, extra_rows, prec, N=None):
    G = params.G
    m = student.m
    rows = G if extra_rows is None else np.vstack([G, extra_rows])
    geo = _Geometry(rows)
    alphas = geo.alpha[:m]
    if N is None:
        # the float engine's order (its sequences decayed to 1e−17 of their norm), capped: the
        # Cauchy–Schwarz tails account for whatever lies beyond, and the cost of the
        # enclosures grows like N² (nodes ∝ N)
        N = min(_order(student, params), _N_CAP)
    if prec > 128:
        N = int(N * prec / 128) + 8
    T, E = silu_hermite_enclosures(alphas, N, prec=prec)
    M = _student_moments(G, alphas, geo, T, E, N, prec)
    return geo, T, E, M, N


def _inner(X, Y):
    return A.mat_from_array(X) * A.mat_from_array(Y).transpose()


def _numerical_loss(student, params, teacher, prec, why):
    L, info = sw.population_loss(student, params, teacher, full_output=True)
    Mo = sw.moments(student, params, teacher)
    a, c = np.abs(params.a), abs(params.c)
    size = (a @ np.abs(Mo.Phi) @ a + 2 * c * (a @ np.abs(Mo.phibar)) + c * c
            + 2 * a @ np.abs(Mo.Yphi) + 2 * c * abs(teacher.mean) + teacher.second_moment)
    err = 2.0 * float(info["error"]) + 1e-13 * 0.5 * size
    note = ("float64 SwiGLU engine with its estimated error (" + why + ")")
    Lb = Bracket.enclosing(max(L - err, 0.0), L + err, provenance="numerical", note=note)
    V = teacher.variance
    verr = 1e-13 * max(teacher.second_moment, 1e-300)
    vb = Bracket.enclosing(max(V - verr, 0.0), V + verr, provenance="numerical", note=note)
    mb = Bracket.enclosing(teacher.mean - verr, teacher.mean + verr, provenance="numerical",
                           note=note)
    return _assemble(Lb, vb, mb, "numerical", prec, note)


def _assemble(Lb, vb, mb, prov, prec, note):
    mse = Lb.scale(2.0)
    if vb.lo > 0:
        nb = Bracket.enclosing(mse.lo / vb.hi * (1 - 1e-15), mse.hi / vb.lo * (1 + 1e-15),
                               provenance=prov, note=note)
    else:
        nb = Bracket(0.0, math.inf, provenance=prov, status="unresolved", note=note)
    return LossBracket(Lb, mse, nb, vb, mb, prov, prec, None, (note,) if note else ())


def swiglu_loss(student, params, teacher, *, prec: int = 128) -> LossBracket:
    """Bracket the population loss L = ½E[(f − y)²] of a SwiGLU student (intercept as given).

    Rigorous for additive teachers with polynomial links (module docstring); ``numerical``
    (the float engine's value and error estimate) for every other teacher.  Reached through
    :func:`certify.loss`, which dispatches SwiGLU students here.  When cancellation between the
    terms leaves the rigorous bracket wider than :data:`LOSS_WIDTH` (1e−13) of the loss at a
    working precision of at most 128 bits, the bracket is recomputed once at twice the precision
    (the result's ``prec`` says which was used): a state with duplicated and antiparallel gates
    (tests/certify/test_certify_swiglu.py) gave a relative width 3.0e−12 at 128 bits and
    1.5e−16 at 256.
    """
    prec = _check(student, params, prec)
    if not isinstance(teacher, Teacher):
        raise TypeError(f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}")
    if teacher.d != student.d:
        raise ValueError(f"`teacher` has d = {teacher.d} but the student has d = {student.d}")
    poly = _teacher_poly(teacher)
    ext = _teacher_source(student, teacher) if poly is None else None
    if ext is not None and ext.loss is not None:
        return ext.loss(student, params, teacher, prec)
    if poly is None:
        return _numerical_loss(student, params, teacher, prec,
                               "teacher outside the rigorous class: additive, polynomial link")
    Lb, vb, mb = _rigorous_loss(student, params, teacher, poly, prec)
    if (prec <= _RETRY_PREC and math.isfinite(Lb.hi)
            and Lb.width > LOSS_WIDTH * max(abs(Lb.lo), abs(Lb.hi))):
        # cancellation in the assembly (large heads, duplicated or antiparallel gates) widened
        # the bracket beyond its target: once more at twice the working precision
        prec *= 2
        Lb, vb, mb = _rigorous_loss(student, params, teacher, poly, prec)
    if not (math.isfinite(Lb.lo) and math.isfinite(Lb.hi)):
        raise CertificationError("no finite enclosure of the SwiGLU loss", hint="a higher prec")
    return _assemble(Lb, vb, mb, "rigorous", prec, "")


#: target relative width of a rigorous SwiGLU loss bracket; a wider one computed at a working
#: precision up to :data:`_RETRY_PREC` bits is recomputed once at twice the precision
LOSS_WIDTH = 1e-13
_RETRY_PREC = 128


def _rigorous_loss(student, params, teacher, poly, prec):
    """(L, V_Y, E[y]) brackets of :func:`swiglu_loss` at the working precision ``prec``."""
    with A.workprec(prec + 32):
        Phi, phib, yphi, ey, ey2 = _swiglu_quantities(student, params, teacher, poly, prec)
        return _loss_brackets(params, Phi, phib, yphi, ey, ey2)


def _loss_brackets(params, Phi, phib, yphi, ey, ey2):
    """Rigorous (L, V_Y, E[y]) brackets from enclosures of the SwiGLU quantities (current
    precision): L = ½(aᵀΦa + 2c aᵀφ̄ + c² − 2(aᵀE[yφ] + c E[y]) + E[y²]) by the float engine's
    assembly (:func:`popdyn.assembly.feature_loss`) in the Arb context, V_Y = E[y²] − E[y]²; L
    and V_Y clipped below at 0 (both are nonnegative).  Shared by the additive (here) and gated
    (:mod:`certify.swiglu_gated`) teachers."""
    L = _asm.feature_loss(ARB, vec(params.a), arb(float(params.c)), Phi, Vec(phib), Vec(yphi),
                          ey, ey2)
    Lb = Bracket.from_arb(L, provenance="rigorous")
    if Lb.lo < 0:
        Lb = Bracket(0.0, Lb.hi, provenance="rigorous")
    vb = Bracket.from_arb(ey2 - ey * ey, provenance="rigorous")
    if vb.lo < 0:
        vb = Bracket(0.0, vb.hi, provenance="rigorous")
    return Lb, vb, Bracket.from_arb(ey, provenance="rigorous")


def _student_part(params, T, M):
    """(Φ = E[φ_iφ_j] (arb_mat), φ̄_j = E[φ_j], GV = (g_i·v_j)) of SG-1 in Arb from the SiLU
    coefficient enclosures ``T`` and the Mehler pair moments ``M`` of :func:`_setup` (shared by
    every teacher: additive here, gated in :mod:`certify.swiglu_gated`)."""
    G, Vv = params.G, params.V
    m = G.shape[0]
    GV = _inner(G, Vv)
    VV = _inner(Vv, Vv)
    dl = [GV[j, j] for j in range(m)]
    phib = [dl[i] * T[1][i, 0] for i in range(m)]
    # the float engine's assembly (popdyn.assembly.swiglu_gram) in the Arb context
    Phi = _asm.swiglu_gram(ARB, VV, GV, Vec(dl), M[(0, 0)], M[(1, 1)], M[(2, 0)])
    return Phi, phib, GV


def _refit_quadratic(Phi, phib, yphi, ey):
    """(G, g) of the SwiGLU refit (intercept eliminated): G = Φ − φ̄φ̄ᵀ (symmetrized),
    g = E[yφ] − φ̄E[y], by the float engine's assembly (:func:`popdyn.assembly.refit_quadratic`,
    s = 1) in the Arb context; ``g`` an m×1 ``arb_mat``."""
    G, g = _asm.refit_quadratic(ARB, arb(1), Phi, Vec(phib), Vec(yphi), ey)
    return G, col(g)


def _swiglu_quantities(student, params, teacher, poly, prec):
    """(Φ = E[φ_iφ_j] (arb_mat), φ̄_j = E[φ_j], E[yφ_j], E[y], E[y²]) of a SwiGLU student
    against an additive teacher with a polynomial link (SG-1, SG-2 in Arb; current precision)."""
    m = student.m
    U = teacher.U
    kap = teacher.weights
    geo, T, E, M, N = _setup(student, params, U, prec)
    Phi, phib, GV = _student_part(params, T, M)
    UV = _inner(params.V, U)                 # (m, k): v_j·u_k
    dl = [GV[j, j] for j in range(m)]
    k = U.shape[0]
    deg = max(poly) if poly else 0
    if deg > N:
        raise CertificationError(f"internal: link degree {deg} exceeds the SiLU order {N}",
                                 hint="a higher prec")
    dpoly = _deriv(poly)
    betas = [geo.alpha[m + t] for t in range(k)]
    gh = [_hermite_of_scaled(poly, b, deg) for b in betas]
    dgh = [_hermite_of_scaled(dpoly, b, max(deg - 1, 0)) if dpoly else [arb(0)]
           for b in betas]
    kb = [arb(float(x)) for x in kap]
    ey = arb(0)
    for t in range(k):
        ey += kb[t] * gh[t][0]
    ey2 = arb(0)
    for s_ in range(k):
        for t in range(k):
            rho = geo.pair(m + s_, m + t)[0] if s_ != t else arb(1)
            acc = arb(0)
            for n in range(min(len(gh[s_]), len(gh[t]))):
                acc += gh[s_][n] * gh[t][n] * rho ** n
            ey2 += kb[s_] * kb[t] * acc
    yphi = []
    for j in range(m):
        yp = arb(0)
        for t in range(k):
            rho = geo.pair(j, m + t)[0]
            e1 = arb(0)      # E[σ'_j g(u_t·x)]
            for n in range(len(gh[t])):
                e1 += T[1][j, n] * gh[t][n] * rho ** n
            e0 = arb(0)      # E[σ_j g'(u_t·x)]
            for n in range(len(dgh[t])):
                e0 += T[0][j, n] * dgh[t][n] * rho ** n
            yp += kb[t] * (dl[j] * e1 + UV[j, t] * e0)
        yphi.append(yp)
    return Phi, phib, yphi, ey, ey2


class _SwiGLUCM:
    """What :func:`certify.refit_risk` reads of a moment object (provenance and notes)."""

    rigorous = True
    notes: list = []


def swiglu_refit_problem(student, params, teacher, prec):
    """(G, g, V, info) of the frozen-feature refit of a SwiGLU student (features
    φ_j = SiLU(g_j·x)(v_j·x), intercept eliminated): G = Φ − φ̄φ̄ᵀ, g = E[yφ] − φ̄E[y],
    V = V_Y, enclosed in Arb (rigorous for additive teachers with polynomial links)."""
    prec = _check(student, params, prec)
    if not isinstance(teacher, Teacher):
        raise TypeError(f"`teacher` must be a popdyn.Teacher, got {type(teacher).__name__}")
    if teacher.d != student.d:
        raise ValueError(f"`teacher` has d = {teacher.d} but the student has d = {student.d}")
    poly = _teacher_poly(teacher)
    ext = _teacher_source(student, teacher) if poly is None else None
    if ext is not None and ext.refit is not None:
        return ext.refit(student, params, teacher, prec)
    if poly is None:
        return _numerical_refit_problem(student, params, teacher, prec)
    Phi, phib, yphi, ey, ey2 = _swiglu_quantities(student, params, teacher, poly, prec)
    return (*_refit_quadratic(Phi, phib, yphi, ey), ey2 - ey * ey, _SwiGLUCM())


class _NumericalCM:
    rigorous = False

    def __init__(self, notes):
        self.notes = list(notes)


def _numerical_refit_problem(student, params, teacher, prec):
    """The SwiGLU refit quadratic against a teacher outside the polynomial class (gated,
    multi-index, non-polynomial links, networks): G = Φ − φ̄φ̄ᵀ enclosed in Arb
    (rigorous: student moments only), g = E[yφ] − φ̄E[y] from the float64 engine
    (:func:`popdyn.swiglu.moments` at rtol = 1e−12) as balls of radius
    2·(8(N + 2)u + seq_tol)·(Φ_jj E[y²])^{1/2} + 1e−13·|E[yφ_j]| (the engine's truncation and
    rounding estimate, on the Cauchy–Schwarz scale of the entry), V = V_Y ± 1e−13·E[y²]:
    a ``numerical`` problem (the cross moments' error is an estimate, not a bound)."""
    m = student.m
    geo, T, E, M, N = _setup(student, params, None, prec)
    Phi, phib, _ = _student_part(params, T, M)
    Mo = sw.moments(student, params, teacher, 1e-12)
    yphi = np.asarray(Mo.Yphi, dtype=float)
    ey2f = float(teacher.second_moment)
    rel = 8.0 * (Mo.N + 2) * 2.0 ** -53 + float(Mo.seq_tol)
    if not (np.all(np.isfinite(yphi)) and Mo.converged):
        raise CertificationError("the float64 SwiGLU cross moments did not converge",
                                 hint="popdyn.refit_risk for the float64 value")
    ey = arb(float(teacher.mean), 1e-13 * abs(float(teacher.mean)) + 1e-300)
    ysig = []
    for j in range(m):
        scale = math.sqrt(max(float(Phi[j, j].mid()) + float(Phi[j, j].rad()), 0.0) * ey2f)
        ysig.append(arb(float(yphi[j]), 2.0 * rel * scale + 1e-13 * abs(float(yphi[j]))))
    Gm, g = _refit_quadratic(Phi, phib, ysig, ey)
    V = arb(ey2f, 1e-13 * ey2f) - ey * ey
    note = ("SwiGLU refit against a non-polynomial teacher: E[yφ] from the float64 engine with "
            "twice its estimated error")
    return Gm, g, V, _NumericalCM([note])


def swiglu_agop_enclosure(student, params, *, prec: int = 128) -> arb_mat:
    """The AGOP of a SwiGLU student as a symmetric ball matrix (rigorous)."""
    prec = _check(student, params, prec)
    m = student.m
    with A.workprec(prec + 32):
        geo, T, E, M, N = _setup(student, params, None, prec)
        G, Vv = params.G, params.V
        GV = _inner(G, Vv)
        VV = _inner(Vv, Vv)
        dl = Vec(GV[j, j] for j in range(m))
        # the float engine's assembly (popdyn.assembly.swiglu_agop) in the Arb context
        return _asm.swiglu_agop(ARB, vec(params.a), A.mat_from_array(G), A.mat_from_array(Vv),
                                VV, GV, dl, M[(0, 0)], M[(1, 1)], M[(2, 0)], M[(2, 2)],
                                M[(3, 1)])


def swiglu_alignment(student, params, U, *, prec: int = 128) -> AlignmentBracket:
    """Certified AGOP alignment (A_top, A_min, A_mean) of a SwiGLU student with span(U).

    The AGOP is enclosed rigorously (:func:`swiglu_agop_enclosure`); the eigengap and
    Davis–Kahan steps are those of :func:`certify.alignment.alignment_from_matrix`.
    Reached through :func:`certify.alignment`, which dispatches SwiGLU students here.
    """
    M = swiglu_agop_enclosure(student, params, prec=prec)
    return alignment_from_matrix(M, U, prec=prec, provenance="rigorous")


def swiglu_refit(student, params, teacher):
    """The SwiGLU family's refit builder (:class:`certify._families.Certifier` ``refit``):
    :func:`swiglu_refit_problem`, which checks its own arguments and covers its own teachers."""
    return swiglu_refit_problem


#: the SwiGLU family's certifier (no certified gradient)
SWIGLU = _families.register(_families.Certifier(
    SWIGLU_FAMILY, loss=swiglu_loss, alignment=swiglu_alignment, refit=swiglu_refit))


_MO_CLEAR_HOOKS.append(_SETUP_CACHE.clear)    # certify.moments.clear_cache clears this cache too
