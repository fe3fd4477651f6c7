r"""Rigorous specialization times of the *stiff* opposite gauges: a verified slow-manifold tube.

For a/|w| = D ≪ 1 the reduced flow (:func:`popdyn.gauge.reduced_rhs`; Δ = a² − |w|² < 0),

    ċ = −S (c/2 − k(φ)),   φ̇ = ρ(c) k'(φ),   S = sqrt(Δ² + 4c²),  ρ(c) = 2c/(S − Δ),

is fast–slow: c relaxes at rate ≈ S/2 ≥ |Δ|/2 while φ moves at rate ρ ≈ c/|Δ|, so an explicit
validated Taylor method (:mod:`certify.ode`) needs ~ |Δ|·T steps (its a-priori Picard box and
its Taylor series both see the fast mode).  Here the fast mode is removed by a *forward-invariant
tube* around an approximate slow manifold instead:

1. **Approximate slow manifold** (float, :func:`popdyn.gauge.slow_manifold`; any method
   will do — nothing below trusts it): a
   Chebyshev polynomial c = h(φ) on [φ_a, φ_b] from the fixed-point form of the invariance
   equation ċ = h'(φ) φ̇, i.e. h = 2k − 2 h' ρ(h) k'/S(h), iterated from h = 2k (an
   asymptotic iteration: the iterate of least float defect is kept), and, when that defect
   stays above 1e−14, replaced by a Chebyshev fit of the invariant curve through its end point
   (dc/dφ = ċ/φ̇ integrated by Radau towards decreasing φ, where the curve attracts).
2. **Invariance of the tube** 𝒯 = {(c, φ): |c − h(φ)| ≤ ε, φ_a ≤ φ ≤ φ_b} (rigorous, Arb).  On
   the boundary c = h(φ) ± ε the normal velocity V_±(φ) = ċ − h'(φ) φ̇ is enclosed over all of
   [φ_a, φ_b] by Taylor expansions in φ with Lagrange remainder (python-flint ``arb_series``:
   coefficients 0..K−1 at an exact centre, coefficient K on the ball of the sub-interval), h and
   h' evaluated exactly (Clenshaw on series); it is verified that V_+ < 0 and V_− > 0.  With
   φ̇ < 0 on 𝒯 (ρ > 0, k' < 0 on (0, π)), a solution in 𝒯 can leave it only through φ = φ_a:
   at a first time with c − h(φ) = ±ε the derivative of c − h(φ) would have the wrong sign.
3. **Entry** (rigorous): the explicit validated integrator carries the initial set through the
   fast transient (a few dozen steps, ~ 30/S in time) until its enclosure box lies in 𝒯; no
   section is crossed during it (checked on every step's a-priori box).
4. **Crossing time** (rigorous): on 𝒯, φ decreases strictly, so the first time with
   cos φ ≥ τ is t_e + ∫_{acos τ}^{φ(t_e)} dψ / |φ̇(c(ψ), ψ)| where c(ψ) is the (unknown) value of c
   when φ = ψ, and c(ψ) ∈ [h(ψ) − ε, h(ψ) + ε].  Since ρ is increasing in c for Δ < 0
   (ρ − 1/ρ = Δ/c), 1/|φ̇| = 2π / (ρ(c) (π − ψ) sin ψ) is decreasing in c, so the integral lies
   between the integrals with c = h ± ε; both are enclosed by Taylor quadrature with Lagrange
   remainder on sub-intervals, and the ball endpoints (acos τ, φ(t_e)) by |endpoint − centre| ·
   sup of the integrand.

Every rounding is in Arb and every truncation is bounded, so the brackets are rigorous; their
relative width is ~ ε/c (ε is chosen as a small multiple of the float defect of h, ~1e−13·c).

References
----------
N. Fenichel, "Geometric singular perturbation theory for ordinary differential equations",
J. Differential Equations 31 (1979) 53–98 (slow manifolds; here only the invariance of an
explicit tube is used, verified directly); C. Jones, "Geometric singular perturbation theory",
LNM 1609 (1995); R. J. Lohner (1987) for the transient.  The feature-ownership paper
(abstract: "Training changes a network's predictions while allocating task-relevant structure
across its internal units"); docs/design.md §7.
"""

from __future__ import annotations

import math

from flint import arb, arb_series, ctx

from popdyn.gauge import slow_manifold

from .. import _arb as A
from ..errors import CertificationError
from ..ode import integrate_until
from ._field import reduced_field

__all__ = ["SlowTube", "slow_tube_times"]


# --------------------------------------------------------------------------- Arb pieces
def _fields(c, ph, D, pi):
    """(ċ, φ̇) on arb or arb_series (Δ < 0 form of ρ)."""
    S = (D * D + 4 * c * c).sqrt()
    rho = 2 * c / (S - D)
    sn, cs = ph.sin_cos()
    pm = pi - ph
    k = (sn + pm * cs) / (2 * pi)
    return -S * (c / 2 - k), -(rho * pm * sn) / (2 * pi)


class TransientSection(CertificationError):
    """A threshold is crossed while the start is still in the fast transient, before the tube
    is entered: the tube method does not apply (``stiff="auto"`` then integrates explicitly)."""


class SlowTube:
    """The tube |c − h(φ)| ≤ ε, φ ∈ [phi_a, phi_b] around the Chebyshev polynomial ``coef``
    (exact float coefficients), with Arb evaluations of h and of the boundary fields."""

    def __init__(self, Delta, coef, phi_a: float, phi_b: float, eps: float, K: int = 14):
        self.D = arb(Delta)
        self.coef = [arb(float(c)) for c in coef]
        self.phi_a, self.phi_b = float(phi_a), float(phi_b)
        self.a, self.b = arb(phi_a), arb(phi_b)
        self.eps = float(eps)
        self.K = int(K)
        self.pi = arb.pi()

    # h as a series in s around the centre (arb point or ball) φ = centre + s
    def h_series(self, centre, L):
        x = arb_series([(2 * centre - (self.a + self.b)) / (self.b - self.a),
                        2 / (self.b - self.a)], prec=L)
        b1 = arb_series([0], prec=L)
        b2 = arb_series([0], prec=L)
        for ck in reversed(self.coef[1:]):
            b1, b2 = 2 * x * b1 - b2 + ck, b1
        return x * b1 - b2 + self.coef[0]

    def h_ball(self, P):
        """An enclosure of h over the ball P (mean-value form)."""
        m = arb(P.mid())
        h0 = self.h_series(m, 1)[0]
        d1 = self.h_series(P, 2)[1]
        return h0 + d1 * (P - m)

    def normal_speed(self, centre, sign, L):
        """Series (length L) of V = ċ − h'(φ) φ̇ on the boundary c = h(φ) + sign·ε."""
        hs = self.h_series(centre, L + 1)
        hp = hs.derivative()
        c = arb_series([hs[i] for i in range(L)], prec=L) + sign * arb(self.eps)
        ph = arb_series([centre, 1], prec=L)
        cdot, phidot = _fields(c, ph, self.D, self.pi)
        return cdot - hp * phidot

    def inv_speed(self, centre, sign, L):
        """Series of 1/|φ̇| = −1/φ̇ on c = h(φ) + sign·ε."""
        hs = self.h_series(centre, L)
        c = hs + sign * arb(self.eps)
        ph = arb_series([centre, 1], prec=L)
        _, phidot = _fields(c, ph, self.D, self.pi)
        return -1 / phidot


def _local(fun, m: float, r: float, K: int):
    """(coefficients 0..K−1 of fun at the exact centre m, |coefficient K| on [m − r, m + r])."""
    try:
        s = fun(arb(m), K)
        cs = [s[i] for i in range(K)]
        sb = fun(arb(m, r), K + 1)
    except (ValueError, ZeroDivisionError):   # a ball too wide for the field (bisect)
        return None
    return cs, abs(sb[K])


def _enclose(fun, lo: float, hi: float, K: int, depth: int = 0, test=None):
    """Verify ``test(enclosure)`` of fun over [lo, hi] by Taylor enclosures on sub-intervals
    (bisecting up to depth 14); returns the number of sub-intervals or raises."""
    m = 0.5 * (lo + hi)
    r = 0.5 * (hi - lo) * (1 + 2 ** -40)
    loc = _local(fun, m, r, K)
    if loc is not None:
        cs, ck = loc
        R = arb(r)
        rad = ck * R ** K
        for i in range(1, K):
            rad = rad + abs(cs[i]) * R ** i
        E = cs[0] + arb(0, _up(rad))
        if test(E):
            return 1
    if depth >= 14:
        raise CertificationError(f"slow-manifold tube: the boundary field is not certainly "
                                 f"inward near φ = {m:.6g}", hint="a larger tube radius")
    return (_enclose(fun, lo, m, K, depth + 1, test) + _enclose(fun, m, hi, K, depth + 1, test))


def _up(x) -> float:
    return A.upper(x)


def _integrate(fun, lo: float, hi: float, K: int, rtol: float, depth: int = 0):
    """Enclosure of ∫_lo^hi fun(ψ) dψ (exact float endpoints) by Taylor quadrature with Lagrange
    remainder on sub-intervals (bisected until the remainder is below rtol of the piece)."""
    m = 0.5 * (lo + hi)
    # the half-width and centre as balls ((hi ± lo)/2 are exact in Arb at prec >= 64)
    R = (arb(hi) - arb(lo)) / 2
    rf = _up(R)
    mid = (arb(hi) + arb(lo)) / 2
    try:
        s = fun(mid, K)
        sb = fun(mid + arb(0, rf), K + 1)
    except (ValueError, ZeroDivisionError):   # a ball too wide for the field (bisect)
        s = None
    if s is not None:
        val = arb(0)
        for i in range(0, K, 2):
            val = val + 2 * s[i] * R ** (i + 1) / (i + 1)
        rem = abs(sb[K]) * 2 * R ** (K + 1) / (K + 1)
        remf = _up(rem)
        if math.isfinite(remf) and (remf <= rtol * abs(float(val.mid())) or depth >= 16):
            return val + arb(0, remf)
    if depth >= 16:
        raise CertificationError("slow-manifold quadrature: remainder not controlled")
    return (_integrate(fun, lo, m, K, rtol, depth + 1) + _integrate(fun, m, hi, K, rtol, depth + 1))


# --------------------------------------------------------------------------- driver
def slow_tube_times(Delta, x0, thresholds, *, prec: int = 128, K: int = 14,
                    transient_steps: int = 2000, eps_factors=(64.0, 1024.0, 16384.0)):
    """Rigorous brackets of the first times with cos φ ≥ τ of the reduced flow with Δ < 0
    (module docstring).

    Parameters
    ----------
    Delta : arb
        The conserved Δ < 0 (an enclosure).
    x0 : (arb, arb)
        Initial (c, φ) (balls allowed).
    thresholds : sorted sequence of float in (0, 1), all with cos φ0 < τ certainly.

    Returns
    -------
    (list of (lo, hi) floats, dict of diagnostics: steps of the transient, sub-intervals, ε)

    Raises
    ------
    certify.CertificationError when the tube or the entry cannot be verified.
    """
    thr = [float(t) for t in thresholds]
    with A.workprec(prec):
        old_cap = ctx.cap
        ctx.cap = max(old_cap, K + 6)
        try:
            D = arb(Delta)
            if not D < 0:
                raise CertificationError("slow-manifold tube needs Δ < 0 certainly")
            Df = float(D.mid())
            c0, p0 = arb(x0[0]), arb(x0[1])
            alphas = [arb(t).acos() for t in thr]
            phi_a = float(A.lower(alphas[-1])) * 0.97
            phi_b = min(float(A.upper(p0)) + 0.02, math.pi - 1e-3)
            coef, defect, hmax = slow_manifold(Df, phi_a, phi_b)
            field_ = reduced_field(D)
            tube: SlowTube | None = None
            last_err: Exception | None = None
            for fac in eps_factors:
                eps = max(fac * 2 * defect / abs(Df), fac * 1e-16 * hmax)
                if not eps <= 1e-6 * hmax:
                    last_err = CertificationError(f"slow manifold too inaccurate (float defect "
                                                  f"{defect:.2g})", hint="the explicit method")
                    break
                cand = SlowTube(D, coef, phi_a, phi_b, eps, K)
                try:
                    # c > 0 on the tube (h − ε > 0), hence ρ > 0 and φ̇ = ρ k' < 0 there
                    n_sub = _enclose(lambda cen, L, t=cand: t.h_series(cen, L) - arb(t.eps),
                                     phi_a, phi_b, K, test=lambda E: E > 0)
                    for sign in (1, -1):
                        test = (lambda E: E < 0) if sign > 0 else (lambda E: E > 0)  # noqa: E731
                        n_sub += _enclose(lambda cen, L, s=sign, t=cand: t.normal_speed(cen, s, L),
                                          phi_a, phi_b, K, test=test)
                except CertificationError as exc:
                    last_err = exc
                    continue
                tube = cand
                break
            if tube is None:
                assert last_err is not None          # eps_factors is not empty
                raise last_err
            # entry through the transient
            specs = [arb(t) for t in thr]

            def inside(st):
                for B in (st.B,):
                    cphi = B[1].cos()
                    if not all(cphi < t for t in specs):
                        raise TransientSection("a section is met during the fast transient",
                                               hint="stiff='explicit'")
                X = st.x_end
                P = X[1]
                if not (P > tube.a and P < tube.b):
                    return False
                dev = X[0] - tube.h_ball(P)
                return bool(dev > -tube.eps and dev < tube.eps)

            flow = integrate_until(field_, [c0, p0], inside, order=20, tol=1e-16,
                                   scale_floor=[float(c0.mid()) / 2, 1.0], prec=prec,
                                   max_steps=transient_steps)
            st = flow.steps[-1]
            t_e = st.t0 + st.h
            Pe = st.x_end[1]
            pe = float(Pe.mid())
            re = _up(abs(Pe - arb(pe)))
            out = []
            for tau, al in zip(thr, alphas):
                if not al < Pe:
                    raise CertificationError("threshold reached before the tube entry")
                a0 = float(al.mid())
                ra = _up(abs(al - arb(a0)))
                Qs = []
                for sign in (1, -1):
                    Q = _integrate(lambda cen, L, s=sign: tube.inv_speed(cen, s, L), a0, pe, K,
                                   1e-17)
                    # endpoint balls: |∫_{pe}^{φe}| ≤ re·sup g, |∫_{a0}^{α}| ≤ ra·sup g
                    Q = Q + arb(0, _up(_sup_g(tube, arb(pe, re), sign) * re)
                                + _up(_sup_g(tube, arb(a0, ra), sign) * ra))
                    Qs.append(Q)
                T_lo = t_e + Qs[0]
                T_hi = t_e + Qs[1]
                lo, hi = A.lower(T_lo), A.upper(T_hi)
                if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                    raise CertificationError("slow-manifold bracket not finite or inverted")
                out.append((lo, hi))
            info = {"transient_steps": len(flow.steps), "subintervals": n_sub, "eps": eps,
                    "defect": defect, "t_entry": (A.lower(t_e), A.upper(t_e))}
            return out, info
        finally:
            ctx.cap = old_cap


def _sup_g(tube, P, sign):
    """Upper bound of |1/φ̇| over φ ∈ P, c ∈ h(P) ± ε (interval evaluation)."""
    c = tube.h_ball(P) + arb(0, tube.eps)
    _, phidot = _fields(c, P, tube.D, tube.pi)
    return abs(1 / phidot)
