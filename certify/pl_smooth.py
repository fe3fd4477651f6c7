r"""Certified moments of piecewise-linear students against smooth teacher networks.

A relu / leaky_relu student f(x) = s Σ_j a_j σ(w_j·x + b_j) + c against a teacher network
y = Σ_t v_t τ(u_t·x + c_t) with τ ∈ {tanh, silu, gelu, erf} (biases allowed) needs, besides the
student moments C, μ0 of :mod:`certify.moments` (rigorous closed forms),

* the cross moments Ct_jt = E[σ(w_j·x + b_j) τ(u_t·x + c_t)],
* the teacher moments E[y] = Σ_t v_t E[τ_t] and E[y²] = Σ_{t,l} v_t v_l E[τ_t τ_l].

Both are enclosed in Arb with the machinery that already serves smooth students against PL
teachers (:mod:`certify.smooth`), with the roles exchanged:

* Ct by Mehler's formula, E[σ(α_jZ + β_j) τ(α_tZ′ + c_t)] = Σ_n ĉ_n τ̂_n ρⁿ (corr(Z, Z′) = ρ,
  normalized Hermite coefficients), truncated at the teacher unit's order N and closed by the
  Cauchy–Schwarz tail (T_σ(N) T_τ(N))^{1/2} |ρ|^{N+1} (docs/design.md §6), valid for every |ρ| ≤ 1
  (duplicated and antiparallel directions included).  ĉ_n are the PL unit's closed-form
  coefficients with T_σ(N) = E[σ²] − Σ_{n≤N} ĉ_n² (E[σ²] in closed form,
  :class:`certify.moments._PL`); τ̂_n and T_τ(N) come from :class:`certify.smooth.SmoothUnit`
  (erf / gelu: one Arb power series and closed-form energies; tanh / silu: the trapezoidal
  rule with the Trefethen–Weideman strip bound).  A zero student or teacher row is the
  constant σ(b) or τ(c) (exact).
* E[τ_t τ_l] by :class:`certify.smooth.PairEngine` (closed forms and Price integrals for erf /
  gelu; Mehler sums intersected with the ρ = ±1 trapezoid and its Lipschitz bound for tanh /
  silu), E[τ_t] from the unit.

Near-aligned pairs.  The tail factor is the product of the PL coefficients' algebraic tail
(≈ N^{−3/2}) and the smooth unit's (tanh at α = 1: T_τ(128) ≈ 2e−15), so at |ρ| → 1 the Mehler
enclosure alone is only ~1e−8 wide.  When its radius exceeds 2^{−prec/2−8} of the pair scale, Ct is
intersected with the 1-D integral of :func:`pl_cond_moment`: conditioning on the smooth unit's
variable, E[σ | z] is the textbook Gaussian closed form qμ + p(μΦ(μ/s) + sφ(μ/s)) (entire in z),
integrated by Arb's rigorous ``acb.integral`` on [−L, L] (τ is meromorphic: tanh's poles give
non-finite balls there and the integrator subdivides) plus a Gaussian tail bound beyond L; at
ρ = ±1 exactly the kink is split out.  Both enclosures are rigorous, so their intersection is.

Every rounding is a ball operation and every truncation is bounded, so the moments are
``rigorous``.

References
----------
docs/design.md §3 (Mehler, PL coefficients), §6 (tail bound); :mod:`certify.smooth` (smooth units).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from flint import acb, arb, arb_mat
from popdyn.teachers import NetworkTeacher

from . import _arb as A
from . import moments as MO
from . import smooth as SM

__all__ = ["covers", "pl_smooth_moments"]


def _acb_Phi(x):
    return (-x / acb(2).sqrt()).erfc() / 2


def _acb_phi(x):
    return (-(x * x) / 2).exp() / (2 * acb.pi()).sqrt()


def _smooth_fn(kind):
    """τ(w) on complex balls (meromorphic: a pole inside a ball gives a non-finite ball)."""
    if kind == "tanh":
        return lambda w: w.tanh()
    if kind == "silu":
        return lambda w: w / (1 + (-w).exp())
    if kind == "gelu":
        return lambda w: w * _acb_Phi(w)
    if kind == "erf":
        return lambda w: w.erf()
    raise ValueError(f"smooth kind must be one of {SM.SMOOTH}, got {kind!r}")


def _gauss_tail(c0, c1, c2, L):
    """Upper bound of 2∫_L^∞ (c0 + c1 z + c2 z²)φ(z) dz (c_k >= 0 floats; L > 0 ball)."""
    phL = A.npdf(L)
    QL = (L / arb(2).sqrt()).erfc() / 2
    return A.upper(2 * (arb(c0) * QL + arb(c1) * phL + arb(c2) * (L * phL + QL)))


def pl_cond_moment(u, kind, g_al, g_be, geo, deriv: int, prec: int):
    """E[σ^{(deriv)}(αZ₁ + β) τ(α_tZ + c)] (ball) for a PL unit ``u`` (σ = p relu + q id, with
    a ramp) and a smooth function τ of ``kind`` at (α_t, c), corr(Z₁, Z) = ρ, as the 1-D integral
    over Z of τ(α_tz + c)φ(z) times the conditional mean given Z = z (μ = β + αρz,
    s = α(1 − ρ²)^{1/2}):

        E[σ | z] = qμ + p(μΦ(μ/s) + sφ(μ/s)),   E[σ′ | z] = q + pΦ(μ/s)

    (at ρ = ±1 exactly, s = 0: qμ + p relu(μ) and q + p·1{μ > 0}, integrated on the two sides
    of the kink).  Arb's rigorous ``acb.integral`` on [−L, L] (the integrand is analytic in a
    strip: entire conditional means, meromorphic τ) plus the Gaussian tail beyond L, with
    |τ(w)| ≤ |w| + 1 and |E[σ | z]| ≤ (|p| + |q|)|μ| + |p|α, |E[σ′ | z]| ≤ |p| + |q|.
    ``geo`` = (ρ, 1 − ρ, 1 + ρ, flag).  Returns None when the integral does not converge."""
    rho, om, op, flag = geo
    p, q, al, be = u.p, u.q, u.al, u.be
    tau = _smooth_fn(kind)
    ga, gb = acb(g_al), acb(g_be)
    pa, qa = acb(p), acb(q)
    rc, ac, bc = acb(rho), acb(al), acb(be)
    sd = None if flag else al * (om * op).sqrt()
    L = arb(math.ceil(math.sqrt(2.0 * (prec + 40) * math.log(2.0))) + 1)
    if sd is not None:
        sc = acb(sd)

        def cond(z):
            mu = bc + ac * rc * z
            if deriv:
                return qa + pa * _acb_Phi(mu / sc)
            x = mu / sc
            return qa * mu + pa * (mu * _acb_Phi(x) + sc * _acb_phi(x))

        pieces: list[tuple[Any, Any, Callable[[Any], Any]]] = [(-L, L, cond)]
        extra = arb(0)
    else:
        # kink at z0 = −β/(αρ) (ρ = ±1): integrate each side with its linear piece; the ball
        # z0 around the float split point z̃ adds at most |z̃ − z0|·sup|integrand| there
        z0 = -be / (al * rho)
        zt = arb(A.mid(z0))
        rad = A.upper(abs(z0 - zt))

        def lin(on):
            def f(z):
                mu = bc + ac * rc * z
                if deriv:
                    return qa + pa if on else qa
                return (qa + pa) * mu if on else qa * mu
            return f
        # μ > 0 on the side z > z0 iff αρ > 0
        right_on = A.mid(rho) > 0
        pieces = []
        if zt < L and zt > -L:
            pieces = [(-L, zt, lin(not right_on)), (zt, L, lin(right_on))]
        elif zt >= L:
            pieces = [(-L, L, lin(not right_on))]
        else:
            pieces = [(-L, L, lin(right_on))]
        gsup = A.upper(abs(g_al) * (abs(z0) + rad) + abs(g_be) + 1)
        musup = A.upper(al) * 2 * rad
        hsup = A.upper(abs(p) + abs(q)) * (1.0 if deriv else musup + 1e-300)
        extra = arb(0, A.mul_up(rad, hsup, gsup, 0.4))
    # the goal (not the enclosure: acb.integral's result is rigorous at any goal): 2^−(prec/2+24)
    # relative, which is below every other error of the brackets built from Ct (~1e−16)
    tol = arb(2) ** (-(prec // 2) - 24)
    total = arb(0)
    for lo, hi, cond in pieces:
        # (ignore[misc]: mypy cannot type a lambda whose default parameter binds the loop's cond)
        v = acb.integral(lambda z, _an, cond=cond: _acb_phi(z) * tau(ga * z + gb) * cond(z),  # type: ignore[misc]
                         acb(lo), acb(hi), rel_tol=tol, abs_tol=tol * tol,
                         eval_limit=400000)
        if not v.real.is_finite():
            return None
        total += v.real
    # tails beyond ±L
    gA, gB = A.upper(abs(g_be) + 1), A.upper(abs(g_al))
    pq = A.upper(abs(p) + abs(q))
    if deriv:
        kA, kB = pq, 0.0
    else:
        kA = A.mul_up(pq, A.upper(abs(be))) + A.upper(abs(p) * al)
        kB = A.mul_up(pq, A.upper(al))
    c0 = A.mul_up(gA, kA) * (1 + 2.0 ** -50)
    c1 = (A.mul_up(gA, kB) + A.mul_up(gB, kA)) * (1 + 2.0 ** -50)
    c2 = A.mul_up(gB, kB) * (1 + 2.0 ** -50)
    return total + extra + arb(0, _gauss_tail(c0, c1, c2, L))


def _narrow(x, u, kind, g_al, g_be, geo, deriv, prec, scale=1.0):
    """Intersect a Mehler enclosure x with the 1-D integral when x is wider than
    2^−(prec/2+8) of the pair scale (|ρ| near 1)."""
    if not u.has_ramp:
        return x
    if A.upper(x.rad()) <= 2.0 ** (-(prec // 2) - 8) * max(abs(A.mid(x)), scale, 2.0 ** -60):
        return x
    y = pl_cond_moment(u, kind, g_al, g_be, geo, deriv, prec)
    if y is None:
        return x
    return SM._intersect(x, y)


def covers(student, teacher) -> bool:
    """Whether the pair is a relu / leaky_relu student against a smooth teacher network."""
    return (student.act.kind == "pl" and isinstance(teacher, NetworkTeacher)
            and teacher.activation.kind == "smooth" and teacher.activation.name in SM.SMOOTH)


_CACHE: list = []


def _key(student, params, teacher, prec):
    return (MO._cache_key(student, params, teacher, prec), teacher.activation.name)


def clear_cache():
    _CACHE.clear()
    _TEACHER_CACHE.clear()


MO.CLEAR_HOOKS.append(clear_cache)


#: teacher-side enclosures (units with their series, E[y], E[y²]) by teacher and precision: they
#: do not depend on the student, so every checkpoint of a run shares them
_TEACHER_CACHE: list = []


def _teacher_side(teacher, geo, m, prec):
    """(units, order N, v, E[y], E[y²]) of a smooth teacher network (``geo``: student rows
    first, then the teacher's; only the teacher rows are read)."""
    key = (MO._fingerprint_teacher(teacher), prec)
    for k_, obj in _TEACHER_CACHE:
        if k_ == key:
            return obj
    k = teacher.k
    kind = teacher.activation.name
    tsm = SM.make_units(kind, geo.alpha[m:], teacher.bias, geo.zero[m:])
    N = SM._order_for(tsm, prec)
    teng = SM.PairEngine(kind, tsm, N, prec)
    for u in tsm:
        u.series(N)
    v = [arb(float(x)) for x in teacher.weights]
    ey = arb(0)
    for vt, u in zip(v, tsm):
        ey += vt * u.mu0
    ey2 = arb(0)
    for t in range(k):
        for l in range(t, k):
            if t == l:
                e = teng.diag(tsm[t], True, False)[0]
            else:
                e = teng.pair(tsm[t], tsm[l], geo.pair(m + t, m + l), True, False)[0]
            ey2 += (v[t] * v[l] * e) * (1 if t == l else 2)
    obj = (tsm, N, v, ey, ey2)
    _TEACHER_CACHE.insert(0, (key, obj))
    del _TEACHER_CACHE[4:]
    return obj


def pl_smooth_moments(student, params, teacher, *, prec: int = 128) -> MO.CertMoments:
    """:class:`certify.moments.CertMoments` (C, μ0 from :func:`certify.moments.certified_moments`;
    Ct, v, E[y], E[y²] as in the module docstring) of a PL student against a smooth teacher
    network, all rigorous.

    Parameters
    ----------
    student, params : popdyn.Student, popdyn.Params
        A relu or leaky_relu student (checked by :func:`covers`).
    teacher : popdyn.teachers.NetworkTeacher
        tanh, silu, gelu or erf units, any rows and biases.
    prec : int, keyword-only
        Working precision in bits.
    """
    prec = A.check_prec(prec)
    if not covers(student, teacher):
        raise ValueError("pl_smooth_moments needs a relu / leaky_relu student and a teacher "
                         "network of tanh, silu, gelu or erf units")
    key = _key(student, params, teacher, prec)
    for k, obj in _CACHE:
        if k == key:
            return obj
    CMs = MO.certified_moments(student, params, None, prec=prec, need_B=False)
    m, k = student.m, teacher.k
    kind = teacher.activation.name
    with A.workprec(prec + 16):
        geo = MO._Geometry(np.vstack([params.W, teacher.U]))
        su = MO._student_units(student, params, geo, m)
        tsm, N, v, ey, ey2 = _teacher_side(teacher, geo, m, prec)
        CMt = [u.series(N)[0] for u in tsm]
        CMt = [sum((A.upper(c * c) for c in cs), 0.0) for cs in CMt]   # ≈ E[τ_t²] (scale)
        Ct = arb_mat(m, k)
        for t in range(k):
            ct, _, tct, _ = tsm[t].series(N)
            tau = A.sqrt_up(tct)
            for i in range(m):
                g = geo.pair(i, m + t)
                cu, tcu = su[i].coeffs(len(ct) - 1)
                x = MO._mehler(cu, tcu, ct, tau, g[0], g[3])
                sc = A.sqrt_up(A.mul_up(A.upper(su[i].e2), CMt[t]))
                Ct[i, t] = _narrow(x, su[i], kind, tsm[t].al, tsm[t].be, g, 0, prec, sc)
    out = MO.CertMoments(C=CMs.C, B=CMs.B, mu0=CMs.mu0, Ct=Ct, v=arb_mat(k, 1, v), ey=ey,
                         ey2=ey2, rigorous=CMs.rigorous, notes=list(CMs.notes), prec=prec)
    out.mu1 = CMs.mu1
    out.teacher_rows = teacher.U
    _CACHE.insert(0, (key, out))
    del _CACHE[4:]
    return out
