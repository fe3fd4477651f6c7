r"""Certified moments of smooth student units -- erf, gelu, tanh, silu -- in Arb.

A smooth unit is σ(T), T = α θ·x + β (α = |w| ≥ 0).  The loss, the AGOP and the refit need
μ0 = E[σ(T)], C_ij = E[σ(T_i)σ(T_j)], B_ij = E[σ'(T_i)σ'(T_j)] and the cross moments with the
teacher units; this module encloses them rigorously (every rounding and truncation bounded).

erf and gelu: closed forms and Price's theorem
----------------------------------------------
For T ~ N(β, α²) and a Gaussian-polynomial g(t) = P(t)e^{−κt²/2}, completing the square gives

    E[g(αZ + β) e^{sZ − s²/2}] = A₀ e^{μs − (1 − ς²)s²/2} Q(s),
    ς² = 1/(1 + κα²),  μ = −καβς²,  A₀ = ς e^{−κβ²ς²/2},  Q(s) = E[P(βς² + ας²s + ας W)],

(W ~ N(0, 1)), whose Taylor coefficients are E[g He_n]/n!.  erf′(t) = (2/√π)e^{−t²} (κ = 2,
P constant) and gelu″(t) = (2 − t²)φ(t) (κ = 1) are of this form, so the normalized Hermite
coefficients of σ′ (erf) or σ″ (gelu) come from one Arb power series, and those of σ, σ′ follow
from E[f(αZ + β)He_n] = αE[f′(αZ + β)He_{n−1}] (Gaussian integration by parts).  The means are
elementary: E[erf(T)] = erf(β/√(1 + 2α²)), E[erf′(T)] = (2/√π)e^{−β²/(1+2α²)}/√(1 + 2α²),
E[gelu(T)] = βΦ(βς₁) + α²ς₁φ(βς₁), E[gelu′(T)] = Φ(βς₁) + βς₁³φ(βς₁) (ς₁² = 1/(1 + α²)).

Pair moments for *every* correlation ρ ∈ [−1, 1] (duplicated, antiparallel, near-aligned units
included, and any weight size) come from the bivariate Gaussian integral of a Gaussian,

    E[P(T_i, T_j) e^{−κ(T_i² + T_j²)/2}] = det(I + κΣ)^{−1/2} e^{−κ mᵀ(I + κΣ)^{−1}m/2} E[P(T′)],
    T′ ~ N((I + κΣ)^{−1}m, Σ(I + κΣ)^{−1}),

(m = (β_i, β_j), Σ the covariance of (T_i, T_j)), which gives B_ij = E[erf′erf′] in closed
form and E[gelu″ gelu″](r) as an elementary function of the correlation r; and Price's
theorem, ∂_ρ E[f(T_i)g(T_j)] = α_iα_j E[f′(T_i)g′(T_j)]:

    erf :  C(ρ) = μ0_iμ0_j + α_iα_j ∫₀^ρ B(r) dr,
    gelu:  B(ρ) = μ1_iμ1_j + α_iα_j ∫₀^ρ E₂(r) dr,
           C(ρ) = μ0_iμ0_j + α_iα_j ρ μ1_iμ1_j + (α_iα_j)² ∫₀^ρ (ρ − r) E₂(r) dr,

integrated rigorously by Arb's ``acb.integral`` (the integrands are analytic on a neighbourhood
of [−1, 1]: det(I + κΣ(r)) ≥ 1 + κα_i² + κα_j² there).  The endpoint ρ is the midpoint of its
ball; the radius is added times a bound of the integrand (|erf′| ≤ 2/√π, |gelu″| ≤ 2φ(0)).

tanh and silu: trapezoidal Hermite coefficients
-----------------------------------------------
The normalized coefficients c_n = E[σ(αZ + β)h_n(Z)], d_n = E[σ′(αZ + β)h_n(Z)] and the
energies E[σ²], E[σ′²] are integrals of functions analytic in the strip |Im z| < a with
a = π/(2α) (silu: the logistic s(w) has its poles at w = iπ(2k + 1)) or a = π/(4α) (tanh(w) =
2s(2w) − 1).  They are computed by the trapezoidal rule with the rigorous discretization bound
of Trefethen & Weideman (SIAM Review 56 (2014), Thm 5.1) and a Gaussian truncation bound, as in
:mod:`certify.swiglu` (whose bounds are reused, with the bias entering through
|w| ≤ |β| + α|z|; for tanh |tanh| ≤ 3, |tanh′| ≤ 4 on the strip).  Pair moments are Mehler
sums with the Cauchy–Schwarz tail √(T_iT_j)|ρ|^{N+1}, T = E[σ²] − Σ_{n≤N} c_n² (valid for
every |ρ| ≤ 1), intersected with the Lipschitz enclosure around ρ = ±1,
|E(ρ) − E(±1)| ≤ (1 ∓ ρ) α_iα_j (E[σ′_i²]E[σ′_j²])^{1/2} (Price), where E(±1) is the 1-D
trapezoidal integral of σ_i(α_iz + β_i)σ_j(±α_jz + β_j).

Cross moments with teacher units (PL units and Hermite link parts of :mod:`certify.moments`)
are Mehler sums of the unit coefficients with the same Cauchy–Schwarz tails.

References
----------
R. Price, "A useful theorem for nonlinear devices having Gaussian inputs", IRE Trans. Inf.
Theory 4 (1958) 69–72; L. N. Trefethen, J. A. C. Weideman, SIAM Review 56 (2014) 385–458;
docs/design.md §3, §6; F. Johansson, "Numerical integration in arbitrary-precision ball arithmetic",
ICMS 2018 (``acb.integral``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from flint import acb, arb, arb_mat, arb_series, ctx
from popdyn.teachers import NetworkTeacher

from . import _arb as A
from . import moments as MO
from .errors import CertificationError

__all__ = ["SMOOTH", "smooth_moments"]

SMOOTH = ("erf", "gelu", "tanh", "silu")
_CLOSED = ("erf", "gelu")
#: largest Hermite order of a smooth unit's series (Mehler sums with teacher units, tanh/silu pairs)
N_MAX = 512


def _Phi(x):
    """Φ(x) = erfc(−x/√2)/2 (ball)."""
    return (-x / arb(2).sqrt()).erfc() / 2


def _phi(x):
    return (-(x * x) / 2).exp() / (2 * arb.pi()).sqrt()


# ============================================================================ unit series
class SmoothUnit:
    """One smooth unit σ(αZ + β) (Z standard): means, energies, Hermite series (balls).

    Attributes: ``mu0`` = E[σ], ``mu1`` = E[σ′], ``e1`` = E[σ′²] (ball), and after
    :meth:`series` the normalized coefficients ``c`` (of σ), ``d`` (of σ′) with upper bounds
    ``tc``, ``td`` of their tail energies beyond the last order.
    """

    def __init__(self, kind: str, al, be: float | arb, zero: bool):
        if kind not in SMOOTH:
            raise ValueError(f"smooth kind must be one of {SMOOTH}, got {kind!r}")
        self.kind = kind
        self.al = arb(0) if zero else al
        self.zero = bool(zero)
        self.bef = float(be)
        self.be = arb(be)
        self._ser: tuple[list[Any], list[Any], Any, Any] | None = None
        self._trap: tuple[list[Any], list[Any], Any, Any] | None = None
        al, be = self.al, self.be
        if kind == "erf":
            s2 = 1 / (1 + 2 * al * al)
            self.mu0 = (be * s2.sqrt()).erf()
            self.mu1 = 2 / arb.pi().sqrt() * s2.sqrt() * (-(be * be) * s2).exp()
            s4 = 1 / (1 + 4 * al * al)
            self.e1 = 4 / arb.pi() * s4.sqrt() * (-2 * be * be * s4).exp()
        elif kind == "gelu":
            s1 = 1 / (1 + al * al)
            r1 = s1.sqrt()
            u = be * r1
            self.mu0 = be * _Phi(u) + al * al * r1 * _phi(u)
            self.mu1 = _Phi(u) + be * s1 * r1 * _phi(u)
            self.e1 = None           # not needed by the closed forms
        else:
            if zero:
                v0, v1, v2 = _sigma_ball(kind, self.be)
                self.mu0, self.mu1, self.e1 = v0, v1, v1 * v1
                self.e2 = v2 * v2
            else:
                self.mu0 = self.mu1 = self.e1 = None    # from the trapezoid (set_trap)

    # -------------------------------------------------------------- closed-form series
    def _gp_series(self, N: int):
        """Normalized coefficients e_0..e_N of g(αZ + β) for g = erf′ (erf) or gelu″ (gelu),
        and the energy E[g(αZ + β)²] (ball)."""
        al, be = self.al, self.be
        kap = 2 if self.kind == "erf" else 1
        s2 = 1 / (1 + kap * al * al)
        mu = -kap * al * be * s2
        A0 = s2.sqrt() * (-kap * be * be * s2 / 2).exp()
        old = ctx.cap
        ctx.cap = N + 1
        try:
            q = arb_series([0, mu, -(kap * al * al * s2) / 2]).exp()
            if self.kind == "erf":
                ser = q * (2 / arb.pi().sqrt())
            else:
                m0 = be * s2
                Q = arb_series([2 - al * al * s2 - m0 * m0, -2 * m0 * al * s2,
                                -(al * s2) * (al * s2)]) / (2 * arb.pi()).sqrt()
                ser = q * Q
            co = ser.coeffs()
        finally:
            ctx.cap = old
        co = co + [arb(0)] * (N + 1 - len(co))
        out = []
        fac = arb(1)
        for n in range(N + 1):
            if n:
                fac = fac * n
            out.append(A0 * co[n] * fac.sqrt())
        # energy E[g(T)²]: κ doubles
        k2 = 2 * kap
        t2 = 1 / (1 + k2 * al * al)
        B0 = t2.sqrt() * (-k2 * be * be * t2 / 2).exp()
        if self.kind == "erf":
            E = B0 * 4 / arb.pi()
        else:
            m = be * t2
            v = al * al * t2
            ex2 = m * m + v
            ex4 = m ** 4 + 6 * m * m * v + 3 * v * v
            E = B0 * (4 - 4 * ex2 + ex4) / (2 * arb.pi())
        return out, E

    def series(self, N: int):
        """(c, d, tc, td): normalized coefficients of σ and σ′ to order N and upper bounds of
        their tail energies Σ_{n>N}."""
        if self._ser is not None and len(self._ser[0]) >= N + 1:
            c, d, _, _ = self._ser
            if len(c) == N + 1:
                return self._ser
        if self.zero:
            z = [arb(0)] * N
            self._ser = ([self.mu0] + z, [self.mu1] + z, 0.0, 0.0)
            return self._ser
        al = self.al
        if self.kind in _CLOSED:
            if self.kind == "erf":
                d, E1 = self._gp_series(N)
                d[0] = self.mu1
                td = _tail(E1, d)
            else:
                e, E2 = self._gp_series(N)
                te = _tail(E2, e)
                d = [self.mu1] + [al * e[n - 1] / _sq(n) for n in range(1, N + 1)]
                td = A.mul_up(A.upper(al * al / (N + 1)), te + A.upper(e[N] * e[N]))
            c = [self.mu0] + [al * d[n - 1] / _sq(n) for n in range(1, N + 1)]
            tc = A.mul_up(A.upper(al * al / (N + 1)), td + A.upper(d[N] * d[N]))
        else:
            assert self._trap is not None        # set by _Trap for the kinds without closed forms
            c, d, E0, E1 = self._trap
            c, d = c[:N + 1], d[:N + 1]
            tc, td = _tail(E0, c), _tail(E1, d)
        self._ser = (c, d, tc, td)
        return self._ser


def _sq(n):
    return arb(n).sqrt()


def _tail(E, c):
    s = arb(0)
    for v in c:
        s += v * v
    return max(A.upper(E - s), 0.0)


def _sigma_ball(kind, w):
    """(σ(w), σ′(w), σ″(w)) at a ball w for tanh / silu."""
    if kind == "tanh":
        t = w.tanh()
        t1 = 1 - t * t
        return t, t1, -2 * t * t1
    s = 1 / (1 + (-w).exp())
    s1 = s * (1 - s)
    return w * s, s + w * s1, 2 * s1 + w * s1 * (1 - 2 * s)


# ======================================================================= closed-form pairs
def _mid_ball(x):
    return arb(x.mid())


def _cov_parts(ui, uj, r):
    """Σ entries (acb) of (T_i, T_j) at correlation r."""
    ai, aj = acb(ui.al), acb(uj.al)
    return ai * ai, aj * aj, ai * aj * r


def _erf_B(ui, uj, r, analytic=False):
    """E[erf′(T_i) erf′(T_j)] at correlation r (acb in, acb out)."""
    sii, sjj, sij = _cov_parts(ui, uj, r)
    a11, a22, a12 = 1 + 2 * sii, 1 + 2 * sjj, 2 * sij
    det = a11 * a22 - a12 * a12
    bi, bj = acb(ui.be), acb(uj.be)
    q = (a22 * bi * bi - 2 * a12 * bi * bj + a11 * bj * bj) / det
    return 4 / acb.pi() * (-q).exp() / det.sqrt(analytic=analytic)


def _gelu_E2(ui, uj, r, analytic=False):
    """E[gelu″(T_i) gelu″(T_j)] at correlation r (acb)."""
    sii, sjj, sij = _cov_parts(ui, uj, r)
    a11, a22, a12 = 1 + sii, 1 + sjj, sij
    det = a11 * a22 - a12 * a12
    bi, bj = acb(ui.be), acb(uj.be)
    # (I + Σ)^{-1} = [[a22, −a12], [−a12, a11]] / det
    mx = (a22 * bi - a12 * bj) / det
    my = (a11 * bj - a12 * bi) / det
    q = bi * mx + bj * my
    vx = 1 - a22 / det
    vy = 1 - a11 / det
    vxy = a12 / det
    ex2 = vx + mx * mx
    ey2 = vy + my * my
    exy2 = ex2 * ey2 + 2 * vxy * vxy + 4 * mx * my * vxy
    P = 4 - 2 * ex2 - 2 * ey2 + exy2
    return P * (-q / 2).exp() / det.sqrt(analytic=analytic) / (2 * acb.pi())


def _integral(f, rho_mid, prec):
    """∫₀^ρ f(r) dr (ρ a float-exact ball midpoint) as an arb ball."""
    if rho_mid == 0:
        return arb(0)
    v = acb.integral(f, acb(0), acb(rho_mid), rel_tol=arb(2) ** (-prec - 4),
                     abs_tol=arb(2) ** (-2 * prec - 20), eval_limit=200000)
    if not v.real.is_finite():
        raise CertificationError("rigorous Price integral did not converge", hint="a higher prec")
    return v.real


def closed_pair(ui: SmoothUnit, uj: SmoothUnit, rho, prec: int, need_C=True, need_B=True):
    """(C, B) of two erf or two gelu units at correlation ρ (ball, any ρ ∈ [−1, 1])."""
    kind = ui.kind
    rm = _mid_ball(rho)
    rad = abs(rho - rm)
    radu = A.upper(rad)
    aa = ui.al * uj.al
    C = B = None
    if kind == "erf":
        if need_B:
            B = _erf_B(ui, uj, acb(rho)).real
        if need_C:
            if ui.zero or uj.zero:
                C = ui.mu0 * uj.mu0
            else:
                I = _integral(lambda r, an: _erf_B(ui, uj, r, an), rm, prec)
                C = ui.mu0 * uj.mu0 + aa * I
                if radu > 0:
                    C = C + arb(0, A.mul_up(A.upper(aa), radu, 4 / math.pi * (1 + 1e-12)))
        return C, B
    # gelu
    if ui.zero or uj.zero:
        return ui.mu0 * uj.mu0, ui.mu1 * uj.mu1
    bnd = 2.0 / (2 * math.pi) * (1 + 1e-12)       # |gelu″| ≤ 2φ(0): |E₂| ≤ 4φ(0)² = 2/π
    if need_B:
        I1 = _integral(lambda r, an: _gelu_E2(ui, uj, r, an), rm, prec)
        B = ui.mu1 * uj.mu1 + aa * I1
        if radu > 0:
            B = B + arb(0, A.mul_up(A.upper(aa), radu, 2 * bnd))
    if need_C:
        I2 = _integral(lambda r, an: (acb(rm) - r) * _gelu_E2(ui, uj, r, an), rm, prec)
        C = ui.mu0 * uj.mu0 + aa * rm * ui.mu1 * uj.mu1 + aa * aa * I2
        if radu > 0:
            # d/dρ of the right side: α_iα_j μ1μ1 + (α_iα_j)² ∫₀^ρ E₂ ≤ ...
            dmax = A.upper(aa * abs(ui.mu1 * uj.mu1)) + A.mul_up(A.upper(aa * aa), 2 * bnd)
            C = C + arb(0, A.mul_up(dmax, radu))
    return C, B


# ==================================================================== trapezoid (tanh, silu)
def _strip_AB(kind, p, beta_abs: float):
    """(A, B) with |σ^{(p)}(αz + β)| ≤ A + Bα(|Re z| + a) on the strip (module docstring):
    silu σ^{(p)} = w s^{(p)} + p s^{(p−1)} with |s| ≤ 1, |s′| ≤ 1, |s″| ≤ 3 on |Im w| ≤ π/2;
    tanh^{(p)}(w) = 2^{p+1} s^{(p)}(2w) on |Im w| ≤ π/4."""
    if kind == "tanh":
        return ((3, 0), (4, 0), (24, 0))[p]
    Ap, Bp = ((0, 1), (1, 1), (2, 3))[p]
    return Ap + Bp * beta_abs, Bp


def _Q(t):
    return (t / arb(2).sqrt()).erfc() / 2


def _coef_M(AB, al, a, c, HN):
    Ap, Bp = AB
    ec = (c * c / 2).exp()
    phi0 = 1 / (2 * arb.pi()).sqrt()
    inner = (Ap + Bp * al * a) * ec + Bp * al * (phi0 + c * ec)
    return 2 * HN * (a * c + a * a / 2).exp() * inner


def _coef_tail(AB, al, X, c, HN):
    Ap, Bp = AB
    ec = (c * c / 2).exp()
    t = X - c
    phit = (-(t * t) / 2).exp() / (2 * arb.pi()).sqrt()
    return 2 * HN * ec * (Ap * _Q(t) + Bp * al * (phit + c * _Q(t)))


def _energy_M(AB1, AB2, al, a):
    up, vp = AB1[0] + AB1[1] * al * a, AB1[1] * al
    uq, vq = AB2[0] + AB2[1] * al * a, AB2[1] * al
    m1 = (2 / arb.pi()).sqrt()
    return (a * a / 2).exp() * (up * uq + (up * vq + uq * vp) * m1 + vp * vq)


def _energy_tail(AB1, AB2, al, X):
    up, vp = AB1[0], AB1[1] * al
    uq, vq = AB2[0], AB2[1] * al
    phiX = (-(X * X) / 2).exp() / (2 * arb.pi()).sqrt()
    QX = _Q(X)
    return 2 * (up * uq * QX + (up * vq + uq * vp) * phiX + vp * vq * (X * phiX + QX))


def _plan(kind, al_max: float, beta_max: float, N: int, prec: int):
    """Strip half-width a, dyadic step h and node count K (float planning; every bound used is
    then evaluated rigorously)."""
    c = math.sqrt(N)
    lhn = max(0.0, 0.25 * math.log(2 * math.pi * max(N, 1)) + 1 / 24)
    ltol = (prec + 8) * math.log(2.0)
    amax = (math.pi / (4 if kind == "tanh" else 2)) / max(al_max, 1e-300)
    big = 8.0 + beta_max + 2.0 * max(al_max, 1e-3)
    best = None
    for t in np.linspace(0.05, 0.95, 38):
        a = min(amax * t, 12.0)
        logM = (math.log(2) + lhn + a * c + a * a / 2 + c * c / 2
                + math.log(big * (a + 1.0 + c)))
        h = 2 * math.pi * a / (logM + math.log(2) + ltol)
        if best is None or h > best[1]:
            best = (a, h)
    assert best is not None                  # h > 0 at every t of the grid
    a, h = best
    h = math.ldexp(math.floor(math.ldexp(h, 24)), -24)
    X = c + 2.0
    while (c * c / 2 + lhn + math.log(big * (1 + max(al_max, 1.0) * (X + c)))
           - (X - c) ** 2 / 2) > -ltol - 2:
        X += 0.25
    K = int(math.ceil(X / h))
    return a, h, K


_HTAB: dict = {}


def _herm_table(h, K, N, wp, zs, wts):
    """The (2K+1)×(N+1) ball matrix of h·φ(z_k)·h_n(z_k) at z_k = kh (cached: the loss, the
    alignment and the refit at one checkpoint share it).  The three-term recurrence in ball
    arithmetic overestimates radii by up to ~2^{1.72n}, hence the 2N + 64 guard bits."""
    key = (h, K, N, wp)
    tab = _HTAB.get(key)
    if tab is not None:
        return tab
    with A.workprec(wp + 2 * N + 64):
        Hw = A.hermite_rows(zs, N)
    tab = arb_mat([[w * v for v in row] for w, row in zip(wts, Hw)])
    if len(_HTAB) > 4:
        _HTAB.clear()
    _HTAB[key] = tab
    return tab


class _Trap:
    """Shared trapezoid nodes of one set of tanh / silu units (for coefficients and the
    ρ = ±1 products)."""

    def __init__(self, kind, units, N, prec):
        self.kind = kind
        nz = [u for u in units if not u.zero]
        self.units = nz
        if not nz:
            return
        al_up = max(A.upper(u.al) for u in nz)
        b_up = max(abs(u.bef) for u in nz)
        a, h, K = _plan(kind, al_up, b_up, N, prec)
        if K > 200000:
            raise CertificationError(
                f"{kind} units with |w| = {al_up:.3g}: the trapezoidal enclosure would need "
                f"{2 * K + 1} nodes", hint="rescale the weights (|w| ≲ 20)")
        self.a, self.h, self.K, self.N = a, h, K, N
        self.alb = arb(al_up)
        self.ab = arb(a)
        hb = arb(h)
        c = arb(N).sqrt()
        self.HN = max(arb(1), (2 * arb.pi() * max(N, 1)) ** (arb(1) / 4) * (arb(1) / 24).exp())
        self.X = K * hb
        if not (self.X >= c + 2):
            raise CertificationError("internal: truncation point below the majorant's mode",
                                     hint="a higher prec")
        self.dexp = (2 * arb.pi() * self.ab / hb).exp() - 1
        self.c = c
        zs = [k * hb for k in range(-K, K + 1)]
        self.zs = zs
        inv = 1 / (2 * arb.pi()).sqrt()
        self.wts = [hb * inv * (-(z * z) / 2).exp() for z in zs]
        Hm = _herm_table(h, K, N, ctx.prec, zs, self.wts)
        self.vals = {}
        S0, S1 = [], []
        for u in nz:
            v0, v1, v2 = zip(*[_sigma_ball(kind, u.al * z + u.be) for z in zs])
            S0.append(list(v0))
            S1.append(list(v1))
            self.vals[id(u)] = (v0, v1, v2)
        T0 = arb_mat(S0) * Hm
        T1 = arb_mat(S1) * Hm
        for jj, u in enumerate(nz):
            ab0 = _strip_AB(kind, 0, abs(u.bef))
            ab1 = _strip_AB(kind, 1, abs(u.bef))
            r0 = A.upper(2 * _coef_M(ab0, self.alb, self.ab, c, self.HN) / self.dexp
                         + _coef_tail(ab0, self.alb, self.X, c, self.HN))
            r1 = A.upper(2 * _coef_M(ab1, self.alb, self.ab, c, self.HN) / self.dexp
                         + _coef_tail(ab1, self.alb, self.X, c, self.HN))
            cc = [T0[jj, n] + arb(0, r0) for n in range(N + 1)]
            dd = [T1[jj, n] + arb(0, r1) for n in range(N + 1)]
            v0, v1, v2 = self.vals[id(u)]
            E0 = self._prod(v0, v0, ab0, ab0)
            E1 = self._prod(v1, v1, ab1, ab1)
            ab2 = _strip_AB(kind, 2, abs(u.bef))
            u.e2 = self._prod(v2, v2, ab2, ab2)
            u._trap = (cc, dd, E0, E1)
            u.mu0, u.mu1, u.e1, u.e0 = cc[0], dd[0], E1, E0

    def _prod(self, f, g, ab1, ab2):
        acc = arb(0)
        for w, x, y in zip(self.wts, f, g):
            acc += w * x * y
        err = 2 * _energy_M(ab1, ab2, self.alb, self.ab) / self.dexp + _energy_tail(
            ab1, ab2, self.alb, self.X)
        return acc + arb(0, A.upper(err))

    def aligned(self, ui, uj, sign: int, deriv: int = 0):
        """E[σ^{(p)}(α_iZ + β_i) σ^{(p)}(±α_jZ + β_j)] (p = ``deriv``) by the trapezoid."""
        f = self.vals[id(ui)][deriv]
        if sign > 0:
            g = self.vals[id(uj)][deriv]
        else:
            g = [_sigma_ball(self.kind, -uj.al * z + uj.be)[deriv] for z in self.zs]
        ab1 = _strip_AB(self.kind, deriv, abs(ui.bef))
        ab2 = _strip_AB(self.kind, deriv, abs(uj.bef))
        return self._prod(f, g, ab1, ab2)


# ============================================================================ moment object
def _mehler(ci, cj, ti: float, tj: float, rho, flag: int):
    """Σ_{n≤N} c_i,n c_j,n ρⁿ + the Cauchy–Schwarz tail √(t_i t_j)|ρ|^{N+1} (ball)."""
    N = min(len(ci), len(cj)) - 1
    acc = arb(0)
    for n in range(N, -1, -1):
        acc = acc * rho + ci[n] * cj[n]
    if ti > 0.0 and tj > 0.0:
        r = 1.0 if flag else min(1.0, A.upper(abs(rho)))
        b = A.mul_up(A.sqrt_up(A.mul_up(ti, tj)), A.pow_up(r, N + 1))
        acc = acc + arb(0, b)
    return acc


def _intersect(x, y):
    """The intersection of two enclosures of one number (the narrower one if Arb cannot
    form it)."""
    try:
        return x.intersection(y)
    except Exception:                          # pragma: no cover - disjoint balls: a bug
        raise CertificationError("internal: disjoint enclosures of one moment",
                                 hint="report this case")


def pick_order(units, prec: int) -> int:
    """Smallest N in 64, 128, … ≤ N_MAX whose tail energies are below 2^{−2prec−16} of the
    energies (closed-form units; tanh / silu use a fixed order from their plan)."""
    N = 64
    target = 2.0 ** (-2 * prec - 16)
    while True:
        ok = True
        for u in units:
            if u.zero or u.kind not in _CLOSED:
                continue
            c, d, tc, td = u.series(N)
            sc = sum(A.upper(v * v) for v in c[:4]) + 1e-300
            sd = sum(A.upper(v * v) for v in d[:4]) + 1e-300
            if tc > target * sc or td > target * sd:
                ok = False
                break
        if ok or N >= N_MAX:
            return N
        N *= 2


def make_units(kind, alphas, betas, zeros):
    return [SmoothUnit(kind, al, float(b), z) for al, b, z in zip(alphas, betas, zeros)]


def trap_order(units, prec):
    """Order N for tanh / silu units: 128 at prec <= 128 (then prec).

    The coefficients decay like exp(−π√(2n)/(2α)) (tanh; silu twice faster), so at |w| ≲ 1
    the Mehler tail at N = 128 is below 1e−22 of the pair scale for every ρ; larger weights
    widen the near-aligned pairs (the ρ = ±1 trapezoid value and the Lipschitz bound take
    over within 1/4 of ±1).  The cost of the enclosures grows like N²·nodes."""
    return 128 if prec <= 128 else int(prec)


def _lip_C(ui, uj, om):
    """Lipschitz radius (1 ∓ ρ)α_iα_j(E[σ′_i²]E[σ′_j²])^{1/2} of C around ρ = ±1."""
    return A.mul_up(A.upper(om), A.upper(ui.al * uj.al),
                    A.sqrt_up(A.mul_up(A.upper(ui.e1), A.upper(uj.e1))))


def _lip_B(ui, uj, om):
    return A.mul_up(A.upper(om), A.upper(ui.al * uj.al),
                    A.sqrt_up(A.mul_up(A.upper(ui.e2), A.upper(uj.e2))))


class PairEngine:
    """Pair moments (C, B) between smooth units of one kind (closed forms or trapezoid)."""

    def __init__(self, kind, units, N, prec):
        self.kind, self.N, self.prec = kind, N, prec
        self.trap = None
        if kind not in _CLOSED and any(not u.zero for u in units):
            self.trap = _Trap(kind, units, N, prec)

    def diag(self, u, need_C=True, need_B=True):
        if u.zero:
            return u.mu0 * u.mu0, u.mu1 * u.mu1
        if self.kind in _CLOSED:
            return closed_pair(u, u, arb(1), self.prec, need_C, need_B)
        return u.e0, u.e1

    def pair(self, ui, uj, geo, need_C=True, need_B=True):
        """(C, B) at the exact geometry geo = (ρ, 1 − ρ, 1 + ρ, flag)."""
        rho, om, op, flag = geo
        if ui.zero or uj.zero:
            return ui.mu0 * uj.mu0, ui.mu1 * uj.mu1
        if self.kind in _CLOSED:
            return closed_pair(ui, uj, rho, self.prec, need_C, need_B)
        N = self.N
        ci, di, tci, tdi = ui.series(N)
        cj, dj, tcj, tdj = uj.series(N)
        C = _mehler(ci, cj, tci, tcj, rho, flag)
        B = _mehler(di, dj, tdi, tdj, rho, flag)
        # near ±1: the 1-D value at ρ = ±1 and the Lipschitz bound in ρ (Price)
        for side, dist in ((1, om), (-1, op)):
            if flag == side or A.upper(dist) < 0.25:
                c1 = self.trap.aligned(ui, uj, side, 0)
                b1 = self.trap.aligned(ui, uj, side, 1)
                C = _intersect(C, c1 + arb(0, _lip_C(ui, uj, dist)))
                B = _intersect(B, b1 + arb(0, _lip_B(ui, uj, dist)))
        return C, B


def _student_kind(student):
    return student.act.name


def smooth_moments(student, params, teacher=None, *, prec: int = 128, need_B: bool = True):
    """:class:`certify.moments.CertMoments` (C, B, μ0 and the teacher part) of a smooth
    student, rigorous except where a tabulated teacher link enters (see certify.moments)."""
    kind = _student_kind(student)
    m = student.m
    rows = [params.W] if teacher is None else [params.W, teacher.U]
    allrows = np.vstack(rows)
    wp = prec + 16
    with A.workprec(wp):
        geo = MO._Geometry(allrows)
        be = params.b if student.bias else np.zeros(m)
        su = make_units(kind, geo.alpha[:m], be, geo.zero[:m])
        tsm = None
        if isinstance(teacher, NetworkTeacher) and teacher.activation.kind == "smooth":
            tsm = make_units(teacher.activation.name, geo.alpha[m:], teacher.bias,
                             geo.zero[m:])
        allunits = su + (tsm if tsm is not None and tsm[0].kind == kind else [])
        N = pick_order(su, prec) if kind in _CLOSED else trap_order(su, prec)
        eng = PairEngine(kind, allunits, N, prec)
        C = arb_mat(m, m)
        B: Any = arb_mat(m, m) if need_B else None
        for i in range(m):
            for j in range(i, m):
                if i == j:
                    c, b = eng.diag(su[i], True, need_B)
                else:
                    c, b = eng.pair(su[i], su[j], geo.pair(i, j), True, need_B)
                C[i, j] = c
                C[j, i] = c
                if need_B:
                    B[i, j] = b
                    B[j, i] = b
        mu0 = arb_mat(m, 1, [u.mu0 for u in su])
        out = MO.CertMoments(C=C, B=B, mu0=mu0, prec=prec)
        out.geo, out.units, out.wprec = geo, su, wp
        if teacher is None:
            return out
        _smooth_teacher_part(out, su, eng, geo, teacher, tsm, m, N, prec)
    return out


def _unit_herm(u, N, energy):
    c, _, tc, _ = u.series(N)
    return MO._Herm(list(c), A.sqrt_up(tc), energy, True)


def _smooth_teacher_part(out, su, eng, geo, teacher, tsm, m, N, prec):
    k = teacher.k
    kind = su[0].kind
    if tsm is None:
        tu = MO._teacher_units(teacher, geo, m, prec)
    else:
        tu = None
        teng = eng if tsm[0].kind == kind else PairEngine(tsm[0].kind, tsm, _order_for(tsm, prec),
                                                          prec)
    if tu is not None:
        for pl, h in tu:
            if h is not None and not h.rigorous:
                out.rigorous = False
                out.notes.append(h.note)
    # student energies (for the Hermite-unit form of a student unit)
    energies = [out.C[i, i] for i in range(m)]
    Ct = arb_mat(m, k)
    for t in range(k):
        for i in range(m):
            g = geo.pair(i, m + t)
            rho, flag = g[0], g[3]
            if tu is not None:
                pl, h = tu[t]
                v = arb(0)
                K = max(N, h.K if h is not None else 0)
                hs = _unit_herm(su[i], N, energies[i])
                if pl is not None:
                    cu, tcu = pl.coeffs(N)
                    v += MO._mehler(cu, tcu, hs.c, hs.tau, rho, flag)
                if h is not None:
                    v += MO._herm_vs_herm(hs, h, rho, flag)
                Ct[i, t] = v
            else:
                ut = tsm[t]
                if ut.kind == kind:
                    Ct[i, t] = eng.pair(su[i], ut, g, True, False)[0]
                else:
                    Nc = min(N, teng.N)
                    ci, _, tci, _ = su[i].series(Nc)
                    ct, _, tct, _ = ut.series(Nc)
                    Ct[i, t] = _mehler(ci, ct, tci, tct, rho, flag)
    out.Ct = Ct
    v = [arb(float(x)) for x in teacher.weights]
    ey = arb(0)
    ey2 = arb(0)
    if tu is not None:
        means = MO.teacher_unit_means(tu)
        for t in range(k):
            for l in range(t, k):
                diag = t == l
                g = (arb(1), arb(0), arb(2), 1) if diag else geo.pair(m + t, m + l)
                (p1, h1), (p2, h2) = tu[t], tu[l]
                e = arb(0)
                if p1 is not None and p2 is not None:
                    e += MO._pl_pair(p1, p2, g, diag, False, prec)[0]
                if p1 is not None and h2 is not None:
                    e += MO._pl_vs_herm(p1, h2, g[0], g[3])
                if h1 is not None and p2 is not None:
                    e += MO._pl_vs_herm(p2, h1, g[0], g[3])
                if h1 is not None and h2 is not None:
                    e += h1.energy if diag else MO._herm_vs_herm(h1, h2, g[0], g[3])
                ey2 += (v[t] * v[l] * e) * (1 if diag else 2)
    else:
        means = [u.mu0 for u in tsm]
        for t in range(k):
            for l in range(t, k):
                if t == l:
                    e = teng.diag(tsm[t], True, False)[0]
                else:
                    e = teng.pair(tsm[t], tsm[l], geo.pair(m + t, m + l), True, False)[0]
                ey2 += (v[t] * v[l] * e) * (1 if t == l else 2)
    for vt, mt in zip(v, means):
        ey += vt * mt
    out.v = arb_mat(k, 1, v)
    out.ey = ey
    out.ey2 = ey2
    out.teacher_rows = teacher.U
    out.teacher_units = tu if tu is not None else tsm


def _order_for(units, prec):
    kind = units[0].kind
    return pick_order(units, prec) if kind in _CLOSED else trap_order(units, prec)


MO.SMOOTH["moments"] = smooth_moments          # certify.moments dispatches smooth students here
MO.CLEAR_HOOKS.append(_HTAB.clear)
