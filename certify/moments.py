r"""Certified population moments in ball arithmetic (docs/design.md §3, §6).

Everything the loss, the AGOP and the refit need reduces to pair moments of *ridge units*
φ(α θ·x + β), x ~ N(0, I_d) (see :mod:`popdyn._moments`).  This module encloses them in Arb.

Units
-----
* **PL units** σ(t) = p·relu(t) + q·t (student neurons of relu / leaky_relu, relu / leaky_relu
  teacher networks, and the piecewise-linear part of a teacher link).  Pair moments by the
  closed forms of :mod:`popdyn._kernels.plmoments` -- the *same formulas*, evaluated here in
  Arb: canonical tail-side ramps σ = P·α·(Z̃ − x)₊ + Q·t, linear parts by Stein's lemma, and
  the ramp–ramp quantities

      P̃ = Φ₂(−x, −y; r̃),  S̃ᵢⱼ = aⱼ + r̃ aᵢ − y P̃,  S̃ⱼᵢ = aᵢ + r̃ aⱼ − x P̃,
      R̃ = (xy + r̃) P̃ − x aⱼ − y aᵢ + σ̃ φ(x) φ((y − r̃x)/σ̃),   aᵢ = φ(x) Φ((r̃x − y)/σ̃),

  with Φ₂ from Owen's T function (:mod:`certify._arb`), r̃ = ±1 by the 1-D forms.  Unlike the
  float kernels no threshold is "large enough to be zero": every unit keeps its ramp.
* **Hermite units**: the non-PL part H of an additive teacher's link g = p·relu + q·id + H,
  applied to z = u·x with α = |u| (the raw row, not assumed unit).  Its normalized Hermite
  coefficients Ĥ_n(α) of H(αz) are computed in Arb (working precision 2·prec + 64) and come
  with a rigorous bound τ(K) ≥ (Σ_{n>K} Ĥ_n²)^{1/2}:

  - polynomial H (h1 … h6, h3+0.3h2): exact finite expansion, τ = 0;
  - Gaussian-polynomial H (gaussian_bump, damped_cubic:a and their mixtures): the generating
    function of exp(−a'z²/2), a' = aα², and the Jacobi operator z·f, as in
    :mod:`popdyn.links`; τ² = E[H(αZ)²] − Σ_{n≤K} Ĥ_n² with the energy in closed form
    (Parseval, evaluated in Arb: a rigorous tail);
  - sin: Ĥ_n = e^{−α²/2} αⁿ sin(nπ/2)/√n!, E[sin²(αZ)] = (1 − e^{−2α²})/2;
  - mixtures of the above: coefficients add, τ ≤ Σ_l w_l τ_l (Minkowski);
  - tanh, silu, silu_centered (and mixtures containing them): coefficients from the
    precomputed 50-digit tables of :mod:`popdyn.links` and the tabulated tails; these are
    quadrature values, not enclosures, so every moment that uses them is tagged
    ``numerical``; α ≠ 1 is covered by the estimate |α − 1|·4(E[H'²] + 1)^{1/2}.

  A PL unit against a Hermite unit uses Mehler's formula with the PL unit's coefficients
  ĉ_0 = E[σ], ĉ_1 = αE[σ'], ĉ_n = p α φ(h) ĥ_{n−2}(−h)/√(n(n−1)) (n ≥ 2, h = β/α; docs/design.md §3)
  and the rigorous tail (docs/design.md §6)

      |Σ_{n>K} ĉ_n Ĥ_n ρⁿ| ≤ (T_c(K))^{1/2} τ(K) |ρ|^{K+1},   T_c(K) = E[σ²] − Σ_{n≤K} ĉ_n²,

  E[σ²] in closed form.  Two Hermite units likewise; a Hermite unit with itself uses its
  energy.

Two evaluation paths for PL pairs
---------------------------------
Both rigorous.  (i) The Arb closed forms above, for every pair when the gradient is requested
or prec > ``FLOAT_PATH_MAX_PREC`` (128), and otherwise for the diagonal, for exactly
(anti)parallel or strongly correlated pairs, and for constant units.  (ii) For the other
pairs (|ρ| moderate) the float64 Mehler path of :mod:`certify._mehler`: truncated Mehler sums at K = 64 in float64 with a rigorous bound on
the truncation tail (Parseval energies from Arb), on the coefficient conversion errors, on the
error of the float correlation and on all roundings; a pair goes there only if its tail bound is
below 2⁻⁵² of its Cauchy–Schwarz scale.  The per-unit coefficient vectors come from one Arb power
series, exp(tz − z²/2) = Σ He_k(t) z^k/k!.  Path (ii) is what makes a checkpoint cheap; its
entries are accurate to a few ulp of the pair scale instead of 2^{−prec}, so brackets built
from it have widths ~1e−14 relative (still far below the 1e−12 target) and stop narrowing
beyond prec ≈ 53 -- ask for prec > 128 to get full ball arithmetic (slower) and brackets that
keep narrowing.

Geometry is exact: the Gram matrix of all rows (student W, teacher U) is computed in integers
(every float64 is a dyadic rational), so ρ = ±1 is detected exactly (duplicated or antiparallel
neurons) and 1 − ρ² = (GᵢᵢGⱼⱼ − Gᵢⱼ²)/(GᵢᵢGⱼⱼ) keeps its full relative accuracy for ρ within
1e−12 of ±1.  A neuron with w = 0 is the constant σ(b).

Accuracy target.  Each ramp–ramp evaluation targets an absolute error 2^{−prec} relative to the
pair's Cauchy–Schwarz scale (so tail units with thresholds far out keep their relative accuracy
where it is representable), with the working precision raised accordingly.

References
----------
docs/design.md §3, §6; :mod:`popdyn._kernels.plmoments` (the closed forms, Rosenbaum 1961);
D. B. Owen, Ann. Math. Statist. 27 (1956) 1075–1090.
"""
from __future__ import annotations

import math
from typing import Any
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, arb_series, ctx

from popdyn.links import hermite_monomials  # exact integer coefficients of He_k
from popdyn.teachers import AdditiveTeacher, NetworkTeacher

from . import _arb as A
from . import _mehler as _mh
from .errors import CertificationError

__all__ = ["CertMoments", "certified_moments", "teacher_supported", "student_supported"]

_RIGOROUS_BASE = ("h1", "h2", "h3", "h4", "h5", "h6", "h3+0.3h2", "relu", "abs", "sin",
                  "gaussian_bump")
_TABLE_LIPSCHITZ = {"tanh": 1.0, "silu": 1.1, "silu_centered": 1.1}


# =============================================================================== PL units
class _PL:
    """A PL unit σ(t) = p relu(t) + q t, t = α θ·x + β, in canonical form (all balls)."""

    __slots__ = ("p", "q", "al", "be", "const", "P", "Q", "s", "x", "xsgn", "H0", "Phix", "H1",
                 "H2", "ph", "mu0", "mu1", "mu2", "e2", "e2d", "rms0", "rms1", "_coef",
                 "pf", "qf")

    def __init__(self, pq, al, be: float, al_zero: bool):
        """``pq`` = (p, q) as exact balls with float approximations: ((p, q), (pf, qf));
        pf == 0.0 iff p = 0 exactly."""
        (p, q), (self.pf, self.qf) = pq
        self.p, self.q = p, q
        self.al = al
        self.be = arb(be)
        self._coef: tuple[list[Any], None] | None = None
        one = arb(1)
        if al_zero or self.pf == 0.0:
            # constant unit (α = 0): σ(β) = Lβ with L = p + q (β > 0) or q;
            # linear unit (p = 0): σ = q t
            L = (p + q if be > 0.0 else q) if al_zero else q
            self.const = bool(al_zero)
            self.P, self.Q, self.s = arb(0), L, 1
            self.x = arb(0)
            self.xsgn = 0
            z = arb(0)
            self.H0 = self.Phix = self.H1 = self.H2 = self.ph = z
            self.mu0 = L * self.be
            self.mu1 = L
            self.mu2 = z
            t2 = (al * al if not al_zero else z) + self.be * self.be
            self.e2 = L * L * t2
            self.e2d = L * L
        else:
            self.const = False
            h = self.be / al
            if A.mid(h) <= 1.0:        # both branches are exact identities
                self.s, self.x, self.Q = 1, -h, q
                self.xsgn = 0 if be == 0.0 else (-1 if be > 0.0 else 1)
            else:
                self.s, self.x, self.Q = -1, h, p + q
                self.xsgn = 1
            self.P = p
            x = self.x
            Phix, H0 = A.Phi_pair(x)           # Φ(x), Φ(−x)
            ph = A.npdf(x)
            self.H0, self.Phix, self.ph = H0, Phix, ph
            self.H1 = ph - x * H0
            self.H2 = ((one + x * x) * H0 - x * ph) / 2
            P, Q, s = self.P, self.Q, self.s
            self.mu0 = P * al * self.H1 + Q * self.be
            self.mu1 = P * s * H0 + Q
            self.mu2 = self.p * ph
            # E[σ²] = 2P²α²H2 + 2PQα(βH1 + αsH0) + Q²(α² + β²);  E[σ'²] = P²H0 + 2sPQH0 + Q²
            self.e2 = (2 * P * P * al * al * self.H2 + 2 * P * Q * al * (self.be * self.H1 + al * s * H0)
                       + Q * Q * (al * al + self.be * self.be))
            self.e2d = (P * P + 2 * s * P * Q) * H0 + Q * Q
        self.rms0 = A.sqrt_up(A.upper(self.e2))
        self.rms1 = A.sqrt_up(A.upper(self.e2d))

    @property
    def has_ramp(self) -> bool:
        return not self.const and self.pf != 0.0

    def coeffs(self, K: int):
        """(ĉ_0..ĉ_K, T_c(K) upper float) of the unit in its own standard variable."""
        if self._coef is not None and len(self._coef[0]) > K:
            c, _ = self._coef
            return c[:K + 1], self._tail(c[:K + 1])
        c = [self.mu0]
        if K >= 1:
            c.append(self.al * self.mu1 if not self.const else arb(0))
        if K >= 2:
            if not self.has_ramp:
                c.extend([arb(0)] * (K - 1))
            else:
                pre = self.p * self.al * self.ph               # p α φ(h)
                hs = _hnorm(self.x if self.s == 1 else -self.x, K - 2)   # ĥ_k(−h)
                sq2 = _sqrt_pairs(K)                            # √n·√(n−1)
                for n in range(2, K + 1):
                    c.append(pre * hs[n - 2] / sq2[n])
        self._coef = (c, None)
        return c, self._tail(c)

    def series(self, K: int):
        """(ĉ_0..ĉ_K, d_0..d_K, T_c, T_d): coefficients of σ and σ' (d_n = E[σ' h_n]) with
        upper bounds of their tail energies beyond K."""
        c, tc = self.coeffs(K)
        d = [self.mu1]
        if not self.has_ramp:
            d.extend([arb(0)] * K)
            return c, d, tc, 0.0
        pre = self.p * self.ph                              # p φ(h)
        hs = _hnorm(self.x if self.s == 1 else -self.x, K - 1)
        for n in range(1, K + 1):                           # d_n = p φ(h) ĥ_{n-1}(−h)/√n
            d.append(pre * hs[n - 1] / _sqrt(n))
        sd = arb(0)
        for v in d:
            sd += v * v
        td = max(A.upper(self.e2d - sd), 0.0)
        return c, d, tc, td

    def _tail(self, c):
        if not self.has_ramp:
            return 0.0
        s = arb(0)
        for v in c:
            s += v * v
        return max(A.upper(self.e2 - s), 0.0)


_SQRT_TABLES: dict = {}
_SQRT_PAIR_TABLES: dict = {}


def _sqrt_table(n: int) -> list:
    """The cached table [√0, √1, …] (balls at the current precision), at least up to √n."""
    prec = ctx.prec
    tab = _SQRT_TABLES.get(prec)
    if tab is None:
        if len(_SQRT_TABLES) > 8:
            _SQRT_TABLES.clear()
        tab = _SQRT_TABLES[prec] = []
    if n >= len(tab):
        tab.extend(arb(k).sqrt() for k in range(len(tab), max(n + 1, 2 * len(tab), 256)))
    return tab


def _sqrt(n: int):
    """√n as a ball at the current precision (cached table)."""
    return _sqrt_table(n)[n]


def _sqrt_pairs(n: int) -> list:
    """The cached table of the balls √k·√(k−1) (k ≥ 2; entries 0, 1 unused), at least up to
    k = n, each the product of the cached √k and √(k−1) at the current precision -- the same
    ball as multiplying them at the point of use."""
    prec = ctx.prec
    tab = _SQRT_PAIR_TABLES.get(prec)
    if tab is None:
        if len(_SQRT_PAIR_TABLES) > 8:
            _SQRT_PAIR_TABLES.clear()
        tab = _SQRT_PAIR_TABLES[prec] = [arb(0), arb(0)]
    if n >= len(tab):
        sq = _sqrt_table(n)
        tab.extend(sq[k] * sq[k - 1] for k in range(len(tab), n + 1))
    return tab


def _hnorm(t, K):
    """[ĥ_0(t), …, ĥ_K(t)] (balls): normalized Hermite polynomials ĥ_k = He_k/√k! by the
    recurrence ĥ_k = (t ĥ_{k−1} − √(k−1) ĥ_{k−2})/√k (empty for K < 0)."""
    out = []
    if K < 0:
        return out
    sq = _sqrt_table(K)
    h0, h1 = arb(1), t
    out.append(h0)
    if K >= 1:
        out.append(h1)
    for k in range(2, K + 1):
        h0, h1 = h1, (t * h1 - sq[k - 1] * h0) / sq[k]
        out.append(h1)
    return out


def _hh1(z):
    """Hh₁(z) = E[(Z − z)₊] = φ(z) − zΦ(−z)."""
    _, Pm = A.Phi_pair(z)
    return A.npdf(z) - z * Pm


def _cond_sigma(p, q, pf, mu, tau, tau_zero: bool):
    """E[p relu(T) + q T] for T ~ N(μ, τ²) (balls; τ = 0 exactly if tau_zero)."""
    if pf == 0.0:
        return q * mu
    if tau_zero:
        return p * mu.max(arb(0)) + q * mu
    if A.mid(mu) > 0.0:    # relu(T) = T + relu(−T): both identities exact
        return (p + q) * mu + p * tau * _hh1(mu / tau)
    return q * mu + p * tau * _hh1(-mu / tau)


# ----------------------------------------------------------------------------- ramp–ramp
def _ramps(ui: _PL, uj: _PL, rt, om, op, flag: int, prec: int):
    """(P̃, S̃ij, S̃ji, R̃) for the canonical ramps of ui, uj with correlation r̃."""
    x, y = ui.x, uj.x
    if flag == 1:                      # r̃ = 1 exactly: Z̃₂ = Z̃₁
        def br(xx, yy, a, b):          # formulas for xx >= yy, a = unit at xx
            d = xx - yy
            return a.H0, a.H1 + d * a.H0, a.H1, 2 * a.H2 + d * a.H1
        if ui is uj:
            return br(x, y, ui, uj)
        r1 = br(x, y, ui, uj)
        b2 = br(y, x, uj, ui)
        r2 = (b2[0], b2[2], b2[1], b2[3])
        if x >= y:
            return r1
        if x < y:
            return r2
        return tuple(u.union(v) for u, v in zip(r1, r2))
    if flag == -1:                     # r̃ = −1 exactly: Z̃₂ = −Z̃₁, ramps on x < Z̃₁ < −y
        z = arb(0)
        Pint = uj.H0 - ui.Phix          # Φ(−y) − Φ(x)
        dph = ui.ph - uj.ph
        r = (Pint, -y * Pint - dph, dph - x * Pint, (x * y - 1) * Pint - y * ui.ph - x * uj.ph)
        sxy = x + y
        if sxy >= 0:
            return (z, z, z, z)
        if sxy < 0:
            return r
        return tuple(v.union(z) for v in r)
    s2 = om * op
    sig = s2.sqrt()
    dyx = y - x
    wi = (dyx + om * x) / sig          # (y − r̃x)/σ̃
    wj = (om * y - dyx) / sig          # (x − r̃y)/σ̃
    Pwi = A.Phi_pair(wi)               # (Φ(wi), Φ(−wi))
    Pwj = A.Phi_pair(wj)
    ai = ui.ph * Pwi[1]
    aj = uj.ph * Pwj[1]
    # absolute target 2^-prec relative to sqrt(Φ(−x)Φ(−y)), with polynomial factors
    l0 = -0.5 * (math.log2(max(A.lower(ui.H0), 1e-300)) + math.log2(max(A.lower(uj.H0), 1e-300)))
    extra = l0 + 2.0 * math.log2(2.0 + abs(A.mid(x)) + abs(A.mid(y))) + 8.0
    tol_bits = int(prec + min(extra, 4000.0))
    P = A.phi2(-x, -y, rt, -wi, -wj, (ui.H0, ui.Phix), (uj.H0, uj.Phix),
               (Pwi[1], Pwi[0]), (Pwj[1], Pwj[0]), -ui.xsgn, -uj.xsgn, tol_bits)
    ex = (-(dyx * dyx / s2 + 2 * x * y / op) / 2).exp() / (2 * arb.pi())
    Sij = aj + rt * ai - y * P
    Sji = ai + rt * aj - x * P
    R = (x * y + rt) * P - x * aj - y * ai + sig * ex
    return P, Sij, Sji, R


def _pl_pair(ui: _PL, uj: _PL, geo, diag: bool, grad: bool, prec: int):
    """(C, B, Aij, Aji, Dij, Dji) of two PL units (balls); ``geo`` = (ρ, 1−ρ, 1+ρ, flag)."""
    rho, omr, opr, flag = geo
    ali, alj = ui.al, uj.al
    Pi, Qi, si = ui.P, ui.Q, ui.s
    Pj, Qj, sj = uj.P, uj.Q, uj.s
    C = Qi * (ui.be * uj.mu0 + ali * alj * rho * uj.mu1)
    B = Qi * uj.mu1
    Dij = Qi * uj.mu0
    Dji = Qj * ui.mu0
    z = arb(0)
    Aij = Aji = z
    if ui.has_ramp:
        C += Pi * ali * Qj * (uj.be * ui.H1 + alj * si * rho * ui.H0)
        B += Pi * si * ui.H0 * Qj
        Dij += Pi * si * Qj * (uj.be * ui.H0 + alj * si * rho * ui.ph)
    if uj.has_ramp:
        Dji += Pj * sj * Qi * (ui.be * uj.H0 + ali * sj * rho * uj.ph)
    if grad and not diag and (ui.has_ramp or uj.has_ramp):
        tau_zero = flag != 0
        sg = arb(0) if tau_zero else (omr * opr).sqrt()
        if ui.has_ramp and not uj.const:
            mu = uj.be + alj * rho * (si * ui.x)        # β_j + α_j ρ (−h_i), −h_i = s_i x_i
            Aij = ui.p * ui.ph * _cond_sigma(uj.p, uj.q, uj.pf, mu, alj * sg, tau_zero)
        elif ui.has_ramp and uj.const:
            Aij = ui.p * ui.ph * uj.mu0
        if uj.has_ramp and not ui.const:
            mu = ui.be + ali * rho * (sj * uj.x)
            Aji = uj.p * uj.ph * _cond_sigma(ui.p, ui.q, ui.pf, mu, ali * sg, tau_zero)
        elif uj.has_ramp and ui.const:
            Aji = uj.p * uj.ph * ui.mu0
    if ui.has_ramp and uj.has_ramp:
        ss = si * sj
        if diag:
            rt, om, op, fl = arb(1), arb(0), arb(2), 1
        elif ss > 0:
            rt, om, op, fl = rho, omr, opr, flag
        else:
            rt, om, op, fl = -rho, opr, omr, -flag
        P, Sij, Sji, R = _ramps(ui, uj, rt, om, op, fl, prec)
        C += Pi * Pj * ali * alj * R
        B += Pi * Pj * ss * P
        Dij += Pi * si * Pj * alj * Sij
        Dji += Pj * sj * Pi * ali * Sji
    return C, B, Aij, Aji, Dij, Dji


# ============================================================================ Hermite units
@dataclass
class _Herm:
    """Hermite part H(α z) of a link unit: coefficients (balls) Ĥ_0..Ĥ_K, a tail bound
    τ ≥ (Σ_{n>K} Ĥ_n²)^{1/2}, the energy E[H(αZ)²] (ball), the extra absolute error ``dal``
    per unit of ‖σ‖ (numerical α ≠ 1 allowance), and the provenance."""

    c: list
    tau: float
    energy: object
    rigorous: bool
    dal: float = 0.0
    note: str = ""

    @property
    def K(self) -> int:
        return len(self.c) - 1


def _fr(x: Fraction):
    return arb(x.numerator) / x.denominator


def _gp_groups(atoms, al):
    """{a (Fraction): (a' = aα² ball, {power: coef ball})} of H(αz) for GP atoms."""
    groups = {}
    for w, kind, k, a in atoms:
        wa = _fr(Fraction(w))
        if kind == "h":
            g = groups.setdefault(Fraction(0), [arb(0), {}])
            nrm = wa / arb(math.factorial(k)).sqrt()
            for pw, cc in hermite_monomials(k).items():
                g[1][pw] = g[1].get(pw, arb(0)) + nrm * cc * al ** pw
        else:
            af = Fraction(a)
            g = groups.setdefault(af, [_fr(af) * al * al, {}])
            g[1][k] = g[1].get(k, arb(0)) + wa * al ** k
    return groups


def _bump(ap, nmax):
    """Normalized coefficients of exp(−a' z²/2), n = 0..nmax (a' ball >= 0)."""
    out = [arb(0)] * (nmax + 1)
    gam = ap / (1 + ap)
    out[0] = (1 + ap).rsqrt()
    n = 0
    while n + 2 <= nmax:
        m = n // 2
        out[n + 2] = out[n] * (-gam / 2) * (arb((n + 1) * (n + 2)).sqrt()) / (m + 1)
        n += 2
    return out


def _jacobi(f):
    """Coefficients of z·f from those of f (one shorter)."""
    n = len(f)
    return [_sqrt(j + 1) * f[j + 1] + (_sqrt(j) * f[j - 1] if j > 0 else 0) for j in range(n - 1)]


def _gauss_moment(n, b):
    """E[Z^n exp(−bZ²/2)] (b ball >= 0)."""
    if n % 2:
        return arb(0)
    df = 1
    for j in range(1, n, 2):
        df *= j
    return arb(df) * (1 + b) ** (-(arb(n) + 1) / 2)


def _gp_herm(atoms, al, K):
    groups = _gp_groups(atoms, al)
    poly = all(a == 0 for a in groups)
    deg = 0
    if poly:
        for _, (_, pw) in groups.items():
            deg = max([deg] + list(pw.keys()))
        K = deg
    out = [arb(0)] * (K + 1)
    for a, (ap, powers) in groups.items():
        kmax = max(powers) if powers else 0
        v = _bump(ap, K + kmax) if a != 0 else ([arb(1)] + [arb(0)] * (K + kmax))
        for k in range(kmax + 1):
            if k:
                v = _jacobi(v)
            cc = powers.get(k)
            if cc is not None:
                for n in range(K + 1):
                    out[n] = out[n] + cc * v[n]
    items = [(ap, pw, cc) for (ap, powers) in groups.values() for pw, cc in powers.items()]
    E = arb(0)
    for a1, p1, c1 in items:
        for a2, p2, c2 in items:
            E += c1 * c2 * _gauss_moment(p1 + p2, a1 + a2)
    if poly:
        return out, 0.0, E
    return out, None, E


def _parseval_tau(c, E):
    """Upper bound of (E − Σ c_n²)^{1/2} (the Parseval tail)."""
    s = arb(0)
    for v in c:
        s += v * v
    return A.sqrt_up(A.upper(E - s))


def _sin_herm(al, K):
    pref = (-(al * al) / 2).exp()
    out = []
    apow = arb(1)
    fact = arb(1)
    for n in range(K + 1):
        if n:
            apow = apow * al
            fact = fact * n
        sgn = (0, 1, 0, -1)[n % 4]
        out.append(pref * apow * sgn / fact.sqrt() if sgn else arb(0))
    E = (1 - (-2 * al * al).exp()) / 2
    return out, E


def _link_kind(link) -> str:
    """'gp' (Gaussian-polynomial incl. polynomial / zero), 'sin', 'sum' (mixture of
    rigorous parts), or 'table' (tabulated tanh/silu involved)."""
    hd = link._hdata
    if hd.gp is not None:
        return "gp"
    if link.name == "sin":
        return "sin"
    if link.components:
        kinds = [_link_kind(l) for _, l in link.components]
        return "table" if "table" in kinds else "sum"
    return "table"


def _herm_unit(link, al, K, prec) -> _Herm | None:
    """The Hermite part of ``link`` at scale α (ball), to order K (polynomials: their degree)."""
    kind = _link_kind(link)
    wp = 2 * prec + 64
    with A.workprec(wp):
        if kind == "gp":
            atoms = link._hdata.gp
            if not atoms:
                return None
            c, tau, E = _gp_herm(atoms, al, K)
            if tau is None:
                tau = _parseval_tau(c, E)
            return _Herm(c, tau, E, True)
        if kind == "sin":
            c, E = _sin_herm(al, K)
            return _Herm(c, _parseval_tau(c, E), E, True)
        if kind == "sum":
            c = [arb(0)] * (K + 1)
            tau = 0.0
            for w, l in link.components:
                h = _herm_unit(l, al, K, prec)
                if h is None:
                    continue
                wa = arb(w)
                for n in range(min(K, h.K) + 1):
                    c[n] = c[n] + wa * h.c[n]
                tau = A.upper(arb(tau) + arb(A.mul_up(abs(float(w)), h.tau)))
            s = arb(0)
            for v in c:
                s += v * v
            E = s.union(s + arb(tau * tau * (1 + 1e-14)))     # Σ_{n≤K} + [0, τ²]
            return _Herm(c, tau, E, True)
        # tabulated (numerical)
        hd = link._hdata
        Kt = min(K, hd.nt)
        c = [A.mpf_to_arb(v) for v in hd.coeffs[:Kt + 1]]
        t2 = float(link.t2[Kt])
        tau = A.sqrt_up(t2)
        s = arb(0)
        for v in c:
            s += v * v
        E = s.union(s + arb(t2 * (1 + 1e-14)))
        dal = 4.0 * A.sqrt_up(float(link.h_d_second_moment) + 1.0)
        dev = A.upper(abs(al - 1))
        return _Herm(c, tau, E, False, dal=A.mul_up(dev, dal),
                     note=f"link {link.name!r}: tabulated Hermite coefficients (numerical)")


def _link_order(link, prec) -> int:
    """Truncation order for a link's Hermite part."""
    kind = _link_kind(link)
    if kind == "gp" and link._hdata.gp is not None and link.is_polynomial:
        return max(len(link.coeffs) - 1, 0)
    # tabulated tails give a good guide for every kind: Σ_{n>N} Ĥ_n² at α = 1
    t2 = np.asarray(link.t2, dtype=float)
    target = (2.0 ** (-prec - 8)) ** 2 * max(float(link.h_second_moment), 1e-300)
    ok = np.flatnonzero(t2 <= target)
    if ok.size:
        return int(ok[0]) + 8
    # slow decay: extrapolate geometrically from the table, capped
    N = len(t2) - 1
    if t2[N] > 0 and t2[N // 2] > t2[N]:
        rate = (math.log(t2[N // 2]) - math.log(t2[N])) / (N - N // 2)
        need = N + (math.log(t2[N]) - math.log(target)) / max(rate, 1e-6)
        return int(min(max(need, N), 2048))
    return N


# ================================================================================ geometry
class _Geometry:
    """Exact pairwise geometry of a stack of rows (student rows first, then teacher rows)."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows
        G, exps = A.exact_gram(rows)
        n = rows.shape[0]
        self.n = n
        self.G = G
        self.exps = exps
        self.gd = [G[i, i] for i in range(n)]
        self.zero = [g == 0 for g in self.gd]
        self.nrm = [arb(g).sqrt() for g in self.gd]
        self.alpha = [self.nrm[i] * arb(2) ** exps[i] if not self.zero[i] else arb(0)
                      for i in range(n)]

    def pair(self, i: int, j: int):
        """(ρ, 1 − ρ, 1 + ρ, flag) for rows i, j (flag = ±1 iff ρ = ±1 exactly)."""
        if self.zero[i] or self.zero[j]:
            z = arb(0)
            return z, arb(1), arb(1), 0
        gij = self.G[i, j]
        gi, gj = self.gd[i], self.gd[j]
        D = gi * gj - gij * gij
        if D == 0:
            if gij > 0:
                return arb(1), arb(0), arb(2), 1
            return arb(-1), arb(2), arb(0), -1
        rho = arb(gij) / (self.nrm[i] * self.nrm[j])
        s2 = arb(D) / (arb(gi) * arb(gj))
        if gij >= 0:
            op = 1 + rho
            om = s2 / op
        else:
            om = 1 - rho
            op = s2 / om
        return rho, om, op, 0

    def theta(self, i: int, row: np.ndarray):
        """θ_i = w_i/|w_i| as a list of balls (zeros for w = 0)."""
        if self.zero[i]:
            return [arb(0)] * row.shape[0]
        inv = 1 / self.alpha[i]
        return [arb(float(v)) * inv for v in row]


# ============================================================================ moment object
@dataclass
class CertMoments:
    """Enclosures of the moments the objective, the AGOP and the refit need.

    All matrices are python-flint ``arb_mat`` (balls).  ``C``, ``B`` (m×m), ``mu0`` (m×1);
    ``Ct`` (m×k) against the teacher units, whose weights are ``v`` (k×1) and whose moments
    are ``ey`` = E[y], ``ey2`` = E[y²]; with ``grad`` also ``A``, ``D``, ``mu1``, ``mu2``,
    ``At``, ``Bt``, ``Dt``.  ``rigorous`` is False when a tabulated (numerical) Hermite part
    entered; ``notes`` says which.  ``geo``, ``units``, ``teacher_units`` and ``wprec`` are
    the records the enclosures were built from (the exact geometry, the student and teacher
    unit objects, the working precision), for per-unit moments a caller derives from them.
    """

    C: arb_mat
    B: arb_mat | None
    mu0: arb_mat
    Ct: arb_mat | None = None
    v: arb_mat | None = None
    ey: object = None
    ey2: object = None
    A: arb_mat | None = None
    D: arb_mat | None = None
    mu1: arb_mat | None = None
    mu2: arb_mat | None = None
    At: arb_mat | None = None
    Bt: arb_mat | None = None
    Dt: arb_mat | None = None
    theta: list | None = None
    teacher_rows: np.ndarray | None = None
    geo: object = None
    units: list | None = None
    teacher_units: list | None = None
    wprec: int | None = None
    rigorous: bool = True
    notes: list = field(default_factory=list)
    prec: int = 128


def student_supported(student) -> bool:
    """Whether the certified (Arb) path covers the student's activation: relu, leaky_relu
    (:mod:`certify.moments`) and the smooth silu, gelu, tanh, erf (:mod:`certify.smooth`)."""
    return student.act.kind in ("pl", "smooth")


def pair_supported(student, teacher) -> tuple[bool, bool]:
    """(covered, rigorous) for a student–teacher pair (gated / multi-index teachers: not
    covered here)."""
    if student.act.kind == "smooth":
        if not isinstance(teacher, (NetworkTeacher, AdditiveTeacher)):
            return False, False
        if isinstance(teacher, NetworkTeacher):
            return True, True
        return True, _link_kind(teacher.link) != "table"
    return teacher_supported(teacher)


def teacher_supported(teacher) -> tuple[bool, bool]:
    """(covered, rigorous): whether the Arb path covers the teacher, and rigorously."""
    if not isinstance(teacher, (NetworkTeacher, AdditiveTeacher)):   # multi-index / gated
        return False, False
    if isinstance(teacher, NetworkTeacher):
        ok = teacher.activation.kind == "pl"
        return ok, ok
    kind = _link_kind(teacher.link)
    return True, kind != "table"


def _act_pq(act):
    """Exact (p, q) of a PL activation: relu (1, 0); leaky_relu max(t, st) = (1 − s) relu + s t
    with s the exact float64 slope (not the float64 rounding of 1 − s)."""
    if act.name == "relu":
        return (arb(1), arb(0)), (1.0, 0.0)
    s = float(act.negative_slope)
    return (arb(1) - arb(s), arb(s)), (1.0 - s, s)


def _link_pq(link):
    """Exact (p, q) of a link's PL part (mixtures: Σ w_l (p_l, q_l) in Arb)."""
    if link.components:
        p, q = arb(0), arb(0)
        for w, l in link.components:
            (pl, ql), _ = _link_pq(l)
            p += arb(float(w)) * pl
            q += arb(float(w)) * ql
        return (p, q), (float(link.p), float(link.q))
    return (arb(float(link.p)), arb(float(link.q))), (float(link.p), float(link.q))


#: the float64 Mehler path is used at prec <= FLOAT_PATH_MAX_PREC (default 128); above it every
#: pair is computed in Arb, so brackets keep narrowing as prec grows
FLOAT_PATH_MAX_PREC = 128
# float64 Mehler path (certify._mehler): truncation order, tail tolerance relative to the
# Cauchy–Schwarz scale of the pair, and the largest |ρ| bound sent to it
_K_FLOAT = 64
_TOL_FLOAT = 2.0 ** -52
_RMAX_FLOAT = 0.9
# units with Var σ < _VAR_FLOAT·E[σ²] (|w| ≲ 4e−3 |b|, b > 0) are kept off the float path: its
# few-ulp error relative to E[σ²] would be a relative error ≳ 1e−11 of their covariances, which
# the refit quadratic G = C − μ0μ0ᵀ needs (a head of size 1/|w| multiplies it)
_VAR_FLOAT = 2.0 ** -16


_WEIGHTS: dict = {}


def _weights(K):
    """Float arrays (wc, ewc, wd, ewd): wc_n = (n−2)!/√(n!) (n >= 2), wd_n = (n−1)!/√(n!)
    (n >= 1), with rigorous absolute error bounds of the float values (cached per K)."""
    w = _WEIGHTS.get(K)
    if w is not None:
        return w
    wc = np.zeros(K + 1); ewc = np.zeros(K + 1); wd = np.zeros(K + 1); ewd = np.zeros(K + 1)
    with A.workprec(128):
        for n in range(1, K + 1):
            sq = arb(n).fac().sqrt()
            vd = arb(n - 1).fac() / sq
            wd[n] = float(vd.mid())
            ewd[n] = A.upper(abs(vd - wd[n]))
            if n >= 2:
                vc = arb(n - 2).fac() / sq
                wc[n] = float(vc.mid())
                ewc[n] = A.upper(abs(vc - wc[n]))
    _WEIGHTS[K] = w = (wc, ewc, wd, ewd)
    return w


def _f_err(x):
    """(float nearest to the midpoint, rigorous bound on |x − float|) of a ball."""
    f = float(x.mid())
    return f, A.upper(abs(x - f))


_EPS_REL = 2.0 ** -50          # margin factor for float bookkeeping of products


def _float_series(units, K):
    """Float coefficient arrays of PL units for the float Mehler path, with rigorous bounds.

    The Hermite polynomial values g_k = He_k(t)/k! (t = −h) come from one Arb power series,
    exp(tz − z²/2) = Σ_k He_k(t) z^k/k!; then ĉ_n = [pαφ(h)] g_{n−2} wc_n and
    d_n = [pφ(h)] g_{n−1} wd_n (n ≥ 1), ĉ_0 = E[σ], ĉ_1 = αE[σ'], d_0 = E[σ']; the products
    [pαφ(h)]·g_k and [pφ(h)]·g_k are formed in Arb (g_k alone overflows float64 for far
    thresholds), the products with the weights in float64 with their error bounds propagated
    (every rounding and every input's error, times 1 + 2⁻⁵⁰).  A unit with any non-finite
    float coefficient or bound is marked ineligible (``ok`` False; its pairs are computed by the
    Arb closed forms) before any arithmetic on it.  The tail energies beyond K are
    E[σ²] − Σ ĉ_n² and E[σ'²] − Σ d_n² with the sums bounded from below.
    """
    n = len(units)
    XC = np.zeros((n, K + 1)); EC = np.zeros((n, K + 1))
    XD = np.zeros((n, K + 1)); ED = np.zeros((n, K + 1))
    TC = np.zeros(n); TD = np.zeros(n); SC = np.zeros(n); SD = np.zeros(n)
    ok = np.zeros(n, dtype=np.bool_)
    wc, ewc, wd, ewd = _weights(K)
    old_cap = ctx.cap
    ctx.cap = K + 1
    try:
        for u_i, u in enumerate(units):
            if u is None or u.const:
                continue
            if A.upper(u.e2 - u.mu0 * u.mu0) < _VAR_FLOAT * A.lower(u.e2):
                # near-constant unit (|w| << b > 0): its covariances are far below the pair's
                # Cauchy–Schwarz scale, which bounds the float path's error; Arb keeps them
                continue
            XC[u_i, 0], EC[u_i, 0] = _f_err(u.mu0)
            XD[u_i, 0], ED[u_i, 0] = _f_err(u.mu1)
            if K >= 1:
                XC[u_i, 1], EC[u_i, 1] = _f_err(u.al * u.mu1)
            if u.has_ramp and K >= 1:
                t = u.x if u.s == 1 else -u.x
                gs = arb_series([0, t, arb(-1) / 2]).exp().coeffs()
                gs = gs + [arb(0)] * (K + 1 - len(gs))
                # the products P·g_k in Arb, then to float: far thresholds (|t| ~ 1e8) make
                # g_k overflow float64 while P = pαφ(h) underflows, so a float product P·g_k
                # would be 0·inf = NaN; in Arb it is the tiny, finite coefficient it is
                Pc = u.p * u.al * u.ph
                Pd = u.p * u.ph
                _prod2(XC[u_i], EC[u_i], 2, [Pc * v for v in gs[:K - 1]], wc[2:], ewc[2:])
                _prod2(XD[u_i], ED[u_i], 1, [Pd * v for v in gs[:K]], wd[1:], ewd[1:])
            if not (np.all(np.isfinite(XC[u_i])) and np.all(np.isfinite(EC[u_i]))
                    and np.all(np.isfinite(XD[u_i])) and np.all(np.isfinite(ED[u_i]))):
                # not representable in float64: the unit's pairs go to the Arb closed forms
                XC[u_i] = EC[u_i] = XD[u_i] = ED[u_i] = 0.0
                continue
            lowC = np.maximum(np.abs(XC[u_i]) - EC[u_i], 0.0)
            lowD = np.maximum(np.abs(XD[u_i]) - ED[u_i], 0.0)
            sC = float(np.sum(lowC * lowC)) * (1.0 - 1e-12)
            sD = float(np.sum(lowD * lowD)) * (1.0 - 1e-12)
            TC[u_i] = max(A.upper(u.e2 - arb(sC)), 0.0)
            TD[u_i] = max(A.upper(u.e2d - arb(sD)), 0.0)
            SC[u_i], SD[u_i] = u.rms0, u.rms1
            ok[u_i] = bool(math.isfinite(TC[u_i]) and math.isfinite(TD[u_i])
                           and math.isfinite(SC[u_i]) and math.isfinite(SD[u_i]))
    finally:
        ctx.cap = old_cap
    return XC, EC, TC, SC, XD, ED, TD, SD, ok


def _prod2(X, E, start, pg, w, ew):
    """X[start:] = fl(p̂g·ŵ), E[start:] = a rigorous bound on |pg_true·w_true − X|.

    ``pg`` is a list of balls (the exact products P·g_k enclosed in Arb), ``w`` float weights
    with |w − w_true| <= ``ew``.  With p̂g the float nearest to a ball's midpoint and
    e = |pg − p̂g| (an Arb upper bound):
    |pg·w − fl(p̂g ŵ)| <= e·(|ŵ| + ew) + |p̂g|·ew + u|x| (one rounding), plus 2⁻¹⁰⁷⁴ for a
    product in the subnormal range; the sum is inflated by 1 + 2⁻⁵⁰ for its own roundings.
    A ball whose float is not finite leaves a non-finite entry (the caller marks the unit
    ineligible for the float path) without any arithmetic on it.
    """
    k = len(pg)
    w = w[:k]
    ew = ew[:k]
    g = np.empty(k)
    eg = np.empty(k)
    for i, v in enumerate(pg):
        g[i], eg[i] = _f_err(v)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(eg))):
        X[start:start + k] = np.inf
        E[start:start + k] = np.inf
        return
    x = g * w
    err = eg * (np.abs(w) + ew) + np.abs(g) * ew + 1.2e-16 * np.abs(x)
    err = err * (1.0 + _EPS_REL) + 2.0 ** -1074
    X[start:start + k] = x
    E[start:start + k] = err


def _fast_pairs(W1, W2, same, s1, s2):
    n1, n2 = W1.shape[0], W2.shape[0]
    C = np.zeros((n1, n2)); eC = np.zeros((n1, n2))
    B = np.zeros((n1, n2)); eB = np.zeros((n1, n2))
    OK = np.zeros((n1, n2), dtype=np.bool_)
    _mh.mehler_pairs(np.ascontiguousarray(W1), np.ascontiguousarray(W2), same,
                     s1[0], s1[1], s1[2], s1[3], s1[4], s1[5], s1[6], s1[7], s1[8],
                     s2[0], s2[1], s2[2], s2[3], s2[4], s2[5], s2[6], s2[7], s2[8],
                     _K_FLOAT, _TOL_FLOAT, _RMAX_FLOAT, C, eC, B, eB, OK)
    return C, eC, B, eB, OK


def _sym(X):
    """Upper triangle mirrored (the kernel fills j > i)."""
    return np.triu(X, 1) + np.triu(X, 1).T


def _ball_mat(mid, rad):
    """arb_mat with entries [mid ± rad] (floats; rad rounded up by Arb)."""
    M = A.mat_from_array(mid)
    if np.any(rad > 0):
        M = M + A.mat_from_array(rad) * arb(0, 1)
    return M


def out_rows_student(geo, m):
    return geo.rows[:m]


def _student_units(student, params, geo, m):
    pq = _act_pq(student.act)
    be = params.b if student.bias else np.zeros(m)
    return [_PL(pq, geo.alpha[i], float(be[i]), geo.zero[i]) for i in range(m)]


def _teacher_units(teacher, geo, m, prec):
    """Per teacher unit: (PL part or None, Hermite part or None)."""
    k = teacher.k
    out = []
    if isinstance(teacher, NetworkTeacher):
        pq = _act_pq(teacher.activation)
        for t in range(k):
            out.append((_PL(pq, geo.alpha[m + t], float(teacher.bias[t]),
                            geo.zero[m + t]), None))
        return out
    g = teacher.link
    K = _link_order(g, prec)
    for t in range(k):
        al = geo.alpha[m + t]
        pl = None
        if g.p != 0.0 or g.q != 0.0:
            pl = _PL(_link_pq(g), al, 0.0, geo.zero[m + t])
        h = _herm_unit(g, al, K, prec)
        out.append((pl, h))
    return out


def _mehler(cu, tc, hc, tau, rho, flag):
    """Σ_{n≤K} cu_n hc_n ρⁿ + tail ball; cu, hc lists of balls (same length K+1)."""
    K = len(hc) - 1
    acc = arb(0)
    for n in range(K, -1, -1):
        acc = acc * rho + cu[n] * hc[n]
    if tau > 0.0 and tc > 0.0:
        r = 1.0 if flag else min(1.0, A.upper(abs(rho)))
        bound = A.mul_up(A.sqrt_up(tc), tau, A.pow_up(r, K + 1))
        acc = acc + arb(0, bound)
    return acc


def _pl_vs_herm(u: _PL, h: _Herm, rho, flag):
    cu, tc = u.coeffs(h.K)
    v = _mehler(cu, tc, h.c, h.tau, rho, flag)
    if h.dal > 0.0:
        v = v + arb(0, A.mul_up(u.rms0, h.dal))
    return v


def _herm_vs_herm(h1: _Herm, h2: _Herm, rho, flag):
    K = min(h1.K, h2.K)
    c1, c2 = h1.c[:K + 1], h2.c[:K + 1]
    # tails after cutting the longer one: τ² + Σ_{K<n≤K_l} c_n²
    def cut_tau(h):
        extra = arb(0)
        for v in h.c[K + 1:]:
            extra += v * v
        return A.sqrt_up(A.upper(arb(h.tau) * arb(h.tau) + extra))
    t1, t2 = cut_tau(h1), cut_tau(h2)
    acc = arb(0)
    for n in range(K, -1, -1):
        acc = acc * rho + c1[n] * c2[n]
    r = 1.0 if flag else min(1.0, A.upper(abs(rho)))
    # |Σ_{n>K}| <= t1 t2 |ρ|^{K+1}
    bound = arb(A.mul_up(t1, t2, A.pow_up(r, K + 1)))
    e1 = A.sqrt_up(A.upper(h1.energy))
    e2 = A.sqrt_up(A.upper(h2.energy))
    bound += arb(A.mul_up(h1.dal, e2)) + arb(A.mul_up(h2.dal, e1)) + arb(A.mul_up(h1.dal, h2.dal))
    bu = A.upper(bound)
    return acc + arb(0, bu) if bu > 0 else acc


def certified_moments(student, params, teacher=None, *, prec: int = 128, grad: bool = False,
                      need_B: bool = True, exact_pairs: bool = False) -> CertMoments:
    """Enclose the student (and student–teacher, teacher) moments in Arb at ``prec`` bits.

    Parameters
    ----------
    student, params : popdyn.Student, popdyn.Params
        A relu or leaky_relu student (checked by the caller).
    teacher : popdyn.Teacher or None
        Without a teacher only C, B, μ0 (and A, D, μ1, μ2 with ``grad``) are computed.
    prec : int
        Working precision in bits.
    grad : bool
        Also the moments of the gradient (supported for PL teachers and links whose
        Hermite part is a polynomial).
    need_B : bool
        Whether B = E[σ'σ'] is needed (the AGOP, the gradient).
    exact_pairs : bool
        Compute every pair by the Arb closed forms (no float64 Mehler path), so that the
        entries are accurate to 2^{−prec} (used by :func:`certify.alignment` when the float
        path's few-ulp entries limit the eigenspace bound).

    Raises
    ------
    CertificationError
        If a quantity cannot be enclosed (the message says what to try).
    """
    prec = A.check_prec(prec)
    smooth = student.act.kind == "smooth"
    if smooth and grad:
        raise CertificationError("the certified gradient covers relu / leaky_relu students",
                                 hint="certify the loss only (grad=False)")
    exact = bool(exact_pairs or grad or prec > FLOAT_PATH_MAX_PREC or smooth)
    key = _cache_key(student, params, teacher, prec)
    hit = _cache_get(key, grad, need_B, exact)
    if hit is not None:
        return hit
    if smooth:
        out = SMOOTH["moments"](student, params, teacher, prec=prec, need_B=need_B)
    else:
        out = _compute(student, params, teacher, prec, grad, need_B, exact)
    _cache_put(key, out, grad, need_B or grad, exact)
    return out


# a small cache so that loss, alignment and refit at one checkpoint share the moments
_CACHE: list = []
_CACHE_SIZE = 4


def _fingerprint_teacher(teacher):
    if teacher is None:
        return None
    tag = teacher.link.name if isinstance(teacher, AdditiveTeacher) else (
        teacher.activation.name, float(teacher.activation.negative_slope))
    return (type(teacher), tag, teacher.U.tobytes(), teacher.U.shape,
            np.asarray(teacher.weights).tobytes(), np.asarray(teacher.bias).tobytes())


def _cache_key(student, params, teacher, prec):
    skey = (student.d, student.m, student.activation, float(student.negative_slope),
            student.bias, params.W.tobytes(), params.b.tobytes(), prec)
    return skey, _fingerprint_teacher(teacher)


def _cache_get(key, grad, need_B, exact):
    skey, tkey = key
    for (k, obj, g, b, ex) in _CACHE:
        if k[0] != skey or (grad and not g) or (need_B and not b) or (exact and not ex):
            continue
        if k[1] == tkey:
            return obj
        if tkey is None and not grad:
            # student-only request served by a full entry
            return obj
    return None


#: Providers registered at import by the modules above this one (no import back, so no cycle):
#: ``SMOOTH["moments"]`` is :func:`certify.smooth.smooth_moments` (smooth students).
SMOOTH: dict = {}
#: Cache-clearing callables of certify.smooth and certify.swiglu, run by :func:`clear_cache`.
CLEAR_HOOKS: list = []


def _cache_put(key, obj, grad, hasB, exact):
    _CACHE.insert(0, (key, obj, grad, hasB, exact))
    del _CACHE[_CACHE_SIZE:]


def clear_cache():
    """Forget cached moment enclosures (also those of certify.smooth and certify.swiglu)."""
    _CACHE.clear()
    for hook in CLEAR_HOOKS:
        hook()


def _compute(student, params, teacher, prec, grad, need_B, exact):
    m = student.m
    rows = [params.W]
    if teacher is not None:
        rows.append(teacher.U)
    allrows = np.vstack(rows)
    with A.workprec(prec):
        geo = _Geometry(allrows)
        su = _student_units(student, params, geo, m)
        C = arb_mat(m, m)
        B = arb_mat(m, m) if (need_B or grad) else None
        Am = arb_mat(m, m) if grad else None
        Dm = arb_mat(m, m) if grad else None
        fast = None
        if not exact and m > 1:
            ser = _float_series(su, _K_FLOAT)
            Ws = _mh.scaled_rows(params.W)
            fast = _fast_pairs(Ws, Ws, True, ser, ser)
            OK = fast[4]
            OK = OK | OK.T
            C = _ball_mat(_sym(fast[0]), _sym(fast[1]))
            B = _ball_mat(_sym(fast[2]), _sym(fast[3]))
        for i in range(m):
            for j in range(i, m):
                diag = i == j
                if fast is not None and not diag and OK[i, j]:
                    continue
                g = (arb(1), arb(0), arb(2), 1) if diag else geo.pair(i, j)
                c, b, aij, aji, dij, dji = _pl_pair(su[i], su[j], g, diag, grad, prec)
                C[i, j] = c
                C[j, i] = c
                if B is not None:
                    B[i, j] = b
                    B[j, i] = b
                if grad:
                    Am[i, j] = aij
                    Am[j, i] = aji
                    Dm[i, j] = dij
                    Dm[j, i] = dji
        mu0 = arb_mat(m, 1, [u.mu0 for u in su])
        out = CertMoments(C=C, B=B, mu0=mu0, A=Am, D=Dm, prec=prec)
        out.geo, out.units, out.wprec = geo, su, prec
        if grad:
            out.mu1 = arb_mat(m, 1, [u.mu1 for u in su])
            out.mu2 = arb_mat(m, 1, [u.mu2 for u in su])
            out.theta = [geo.theta(i, params.W[i]) for i in range(m)]
        if teacher is None:
            return out
        _teacher_part(out, su, geo, student, teacher, m, prec, grad, exact)
    return out


def _teacher_part(out, su, geo, student, teacher, m, prec, grad, exact):
    k = teacher.k
    tu = _teacher_units(teacher, geo, m, prec)
    for pl, h in tu:
        if h is not None and not h.rigorous:
            out.rigorous = False
            out.notes.append(h.note)
    if grad:
        for pl, h in tu:
            if h is not None and not (h.tau == 0.0 and h.rigorous):
                raise CertificationError(
                    "the certified gradient supports PL teachers and links whose Hermite part "
                    "is a polynomial", hint="certify the loss only (grad=False)")
    Ct = arb_mat(m, k)
    if grad:
        Bt, At, Dt = arb_mat(m, k), arb_mat(m, k), arb_mat(m, k)
    fast = None
    if not exact and isinstance(teacher, NetworkTeacher):
        ser1 = _float_series(su, _K_FLOAT)
        ser2 = _float_series([pl for pl, _ in tu], _K_FLOAT)
        fast = _fast_pairs(_mh.scaled_rows(out_rows_student(geo, m)), _mh.scaled_rows(teacher.U),
                           False, ser1, ser2)
    if fast is not None:
        Ct = _ball_mat(fast[0], fast[1])
    for i in range(m):
        for t in range(k):
            if fast is not None and fast[4][i, t]:
                continue
            g = geo.pair(i, m + t)
            pl, h = tu[t]
            c = arb(0)
            if pl is not None:
                cc, bb, aij, aji, dij, dji = _pl_pair(su[i], pl, g, False, grad, prec)
                c += cc
                if grad:
                    Bt[i, t] += bb
                    At[i, t] += aij
                    Dt[i, t] += dij
            if h is not None:
                c += _pl_vs_herm(su[i], h, g[0], g[3])
                if grad:
                    b2, a2, d2 = _grad_herm(su[i], h, g[0], geo.alpha[m + t])
                    Bt[i, t] += b2
                    At[i, t] += a2
                    Dt[i, t] += d2
            Ct[i, t] = c
    out.Ct = Ct
    if grad:
        out.Bt, out.At, out.Dt = Bt, At, Dt
    # teacher self moments
    v = [arb(float(x)) for x in teacher.weights]
    means = teacher_unit_means(tu)
    ey = arb(0)
    for vt, mt in zip(v, means):
        ey += vt * mt
    ey2 = arb(0)
    for t in range(k):
        for l in range(t, k):
            diag = t == l
            g = (arb(1), arb(0), arb(2), 1) if diag else geo.pair(m + t, m + l)
            (p1, h1), (p2, h2) = tu[t], tu[l]
            e = arb(0)
            if p1 is not None and p2 is not None:
                e += _pl_pair(p1, p2, g, diag, False, prec)[0]
            if p1 is not None and h2 is not None:
                e += _pl_vs_herm(p1, h2, g[0], g[3])
            if h1 is not None and p2 is not None:
                e += _pl_vs_herm(p2, h1, g[0], g[3])
            if h1 is not None and h2 is not None:
                e += h1.energy if diag else _herm_vs_herm(h1, h2, g[0], g[3])
            ey2 += (v[t] * v[l] * e) * (1 if diag else 2)
    out.v = arb_mat(k, 1, v)
    out.ey = ey
    out.ey2 = ey2
    out.teacher_rows = teacher.U
    out.teacher_units = tu


def _grad_herm(u: _PL, h: _Herm, rho, al_t):
    """(Bt, At, Dt) contributions of a polynomial Hermite part (finite sums, exact)."""
    K = h.K
    # E[σ' h_n] = √(n+1) ĉ_{n+1}/α,  E[ασ'' h_n] = √((n+1)(n+2)) ĉ_{n+2}/α,
    # E[H'(αz) h_n] = √(n+1) Ĥ_{n+1}/α_t  (derivatives w.r.t. the pre-activations)
    if u.const:
        # w = 0: σ′ is the constant σ′(β) = μ1 (ασ″ = 0), so E[σ′ H(α_t z)] = μ1 Ĥ_0 and
        # E[σ′ H′(α_t z)] = μ1 Ĥ_1/α_t (Stein).  Ĥ_0, Ĥ_1 need not vanish: a float64 row
        # has α_t ≠ 1, e.g. E[He_2(α_t z)] = α_t² − 1.
        hd0 = h.c[1] / al_t if K >= 1 and al_t != 0 else arb(0)
        return u.mu1 * hd0, arb(0), u.mu1 * h.c[0]
    cu, _ = u.coeffs(K + 2)
    al = u.al
    d1 = [_sqrt(n + 1) * cu[n + 1] / al for n in range(K + 1)]
    d2 = [_sqrt(n + 1) * _sqrt(n + 2) * cu[n + 2] / al for n in range(K + 1)]
    hd = [_sqrt(n + 1) * h.c[n + 1] / al_t for n in range(K)] + [arb(0)]
    Dt = Bt = At = arb(0)
    for n in range(K, -1, -1):
        Dt = Dt * rho + d1[n] * h.c[n]
        At = At * rho + d2[n] * h.c[n]
        Bt = Bt * rho + d1[n] * hd[n]
    return Bt, At, Dt


def teacher_unit_means(tu):
    """E[σ_t(u_t·x + b_t)] of each teacher unit, as balls: the PL part's μ0 plus the zeroth
    Hermite coefficient of the link part (either may be absent)."""
    means = []
    for pl, h in tu:
        mval = arb(0)
        if pl is not None:
            mval += pl.mu0
        if h is not None:
            mval += h.c[0]
        means.append(mval)
    return means
