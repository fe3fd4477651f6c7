r"""Validated integration of small autonomous ODE systems x' = f(x) in Arb.

Every step [t_k, t_k + h] of :func:`integrate` produces a *rigorous* enclosure of the exact flow
of the exact vector field from every initial value of the initial set (ball arithmetic on the
field; every rounding and truncation accounted for):

1. **A-priori enclosure** (Picard–Lindelöf).  For the variational system z = (x, V),
   z' = F(z) = (f(x), Df(x)·V), z(0) ∈ Z0 = (X0, I), a box B is sought with
   Z0 + [0, h]·F(B) ⊆ B (first-order Picard iterates, inflated).  Then z(t) ∈ B for every
   t ∈ [0, h] and every z(0) ∈ Z0: the Picard operator maps continuous functions with values in
   B into themselves and F is locally Lipschitz, so the (unique) solution is its fixed point.
2. **Taylor coefficients** from ball arithmetic on the field: the Taylor coefficients z_k of the
   solution through z(0) are computed by Picard iteration on truncated power series
   (python-flint ``arb_series``: after iteration k, z(0) + ∫ F(z) dt has its coefficients
   0..k exact), so z_k(Z) encloses z_k(z) for every z in a box Z.
3. **Lagrange remainder**: componentwise, x(τ) = Σ_{k≤p} x_k(x0) τ^k + x_{p+1}(x(ξ)) τ^{p+1}
   with ξ ∈ [0, τ], and x(ξ) ∈ B, so the remainder lies in x_{p+1}(B)·[0, τ]^{p+1} (the
   coefficient of order p+1 of the series started at B).  The same holds for V.
4. **Mean-value (Lohner) propagation**: the set is X = x̂ + A·r (x̂ an exact point, A an exact
   float matrix, r a zero-centred box).  With Φ_τ the flow,
   Φ_τ(x0) ∈ Φ_τ(x̂) + DΦ_τ(X0)·(x0 − x̂), DΦ_τ(X0) ⊆ J(τ) = Σ_{k≤p} V_k(X0) τ^k + V_{p+1}(B) τ^{p+1}
   (the segment [x̂, x0] lies in the box X0), so Φ_h(X) ⊆ y + (J·A)·r, y the enclosure of
   Φ_h(x̂).  The new frame is A' = Q from a column-pivoted QR of mid(J·A) (Lohner's QR method,
   which keeps the wrapping effect of rotations bounded); r' = (A'^{-1} J A)·r + A'^{-1}(y − x̂'),
   x̂' = mid(y), with A'^{-1} enclosed by Arb, and r' re-centred to a symmetric box (a superset).
5. **Adaptive step**: h = 0.8·min_i,k (tol·scale_i / |x_{k,i}(x̂)|)^{1/k} over k = p, p+1; the
   step is halved when the a-priori box is not found or the remainder exceeds 100·tol·scale.

Crossing times (:func:`crossing_times`): for a section s with the time derivative
ṡ = ∇s·f (the caller supplies both in Arb), the step is cut into pieces T_i whose enclosures
E_i = x(t_k + T_i) (the Taylor form evaluated on the interval T_i) are tested: no crossing in
the step when s(B) < 0 or s(E_i) < 0 on every piece; from the first piece i0 with s(E_i) not
certainly negative, ṡ(E_i) > 0 must hold on every later piece (else CertificationError), so s
increases there, and the step has no crossing when s(x(t_k + h)) < 0, exactly one when
s(x(t_k + h)) > 0.  That crossing is refined by the interval Newton operator
N(T) = m − s(x(t_k + m))/ṡ(x(t_k + T)) on τ ∈ T ⊆ [T_{i0}, h] (by the mean value theorem N(T)
contains the root), T ← T ∩ N(T) until the width stops shrinking.  Any step where these tests cannot separate the crossing raises
:class:`~certify.CertificationError`.

References
----------
R. J. Lohner, "Enclosing the solutions of ordinary initial and boundary value problems" (1987);
N. S. Nedialkov, K. R. Jackson, G. F. Corliss, "Validated solutions of initial value problems
for ordinary differential equations", Appl. Math. Comput. 105 (1999) 21–68; F. Johansson, Arb
(IEEE Trans. Comput. 66, 2017).  docs/design.md §6 ("Timescales"), §7.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from flint import arb, arb_mat, arb_series, ctx

from . import _arb as A
from .bracket import Bracket
from .errors import CertificationError

__all__ = ["VectorField", "Step", "Flow", "integrate", "integrate_until", "crossing_times",
           "CrossingSpec"]


# ------------------------------------------------------------------------------- field
@dataclass(frozen=True)
class VectorField:
    """An autonomous vector field for validated integration.

    Parameters
    ----------
    f : callable
        ``f(x) -> list`` of the n components of f at ``x`` (a list of n ring elements); must work
        for ``arb`` and ``arb_series`` elements alike (use only +, −, ·, /, and the methods
        ``sqrt``, ``sin``, ``cos``, ``exp``, ``log``, ``atan`` …).
    jac : callable
        ``jac(x) -> list of lists``, the Jacobian Df(x) (row i: ∂f_i/∂x_j), same ring rules.
    dim : int
    name : str
    fjac : callable or None
        Optional ``fjac(x) -> (f(x), Df(x))`` sharing work between the two.
    """

    f: object
    jac: object
    dim: int
    name: str = ""
    fjac: object = None

    def augmented(self, z):
        """F(z) = (f(x), Df(x)·V) for z = (x, vec(V)) (V row-major)."""
        n = self.dim
        x = z[:n]
        if self.fjac is not None:
            fx, J = self.fjac(x)
        else:
            fx = self.f(x)
            J = self.jac(x)
        out = list(fx)
        for i in range(n):
            for j in range(n):
                s = J[i][0] * z[n + j]
                for k in range(1, n):
                    s = s + J[i][k] * z[n + k * n + j]
                out.append(s)
        return out


class _SeriesFailure(ArithmeticError):
    """The field could not be expanded on the box (e.g. a division by a ball containing 0)."""


def _coef(s, k):
    """Coefficient k of a series (or of a constant)."""
    if isinstance(s, arb_series):
        return s[k] if k < s.length() else arb(0)
    return arb(s) if k == 0 else arb(0)


def taylor_coefficients(F, z0, order: int):
    """Taylor coefficients z_0..z_order of the solution of z' = F(z) through z(0) = z0.

    Picard iteration on truncated series: the coefficient k of z is coefficient k − 1 of
    F(z mod t^k) divided by k (exact in ball arithmetic: z0 may be boxes, the coefficients then
    enclose those of every solution from the box).
    """
    n = len(z0)
    co = [[arb(v)] for v in z0]
    for k in range(1, order + 1):
        zs = [arb_series(c, prec=k) for c in co]
        try:
            fz = F(zs)
        except (ZeroDivisionError, ValueError) as e:
            raise _SeriesFailure(str(e)) from e
        for i in range(n):
            co[i].append(_coef(fz[i], k - 1) / k)
    return co


def _horner(cs, tau):
    acc = arb(cs[-1])
    for c in reversed(cs[:-1]):
        acc = acc * tau + c
    return acc


def _box_of(v):
    return [arb(x) for x in v]


def _inflate(z, fac=0.5):
    out = []
    for x in z:
        r = A.upper(abs(x - arb(x.mid()))) if x.rad() > 0 else 0.0
        m = abs(A.mid(x))
        add = fac * r + 1e-30 + 2.0 ** -60 * m
        out.append(x + arb(0, add))
    return out


def _contains(big, small):
    return all(b.contains(s) for b, s in zip(big, small))


def _apriori(F, Z0, h):
    """A box B with Z0 + [0, h]·F(B) ⊆ B, or None."""
    H = arb(h / 2, h / 2)          # ⊇ [0, h] (h/2 exact; the radius rounds up)
    Z = [z0 + H * fz for z0, fz in zip(Z0, F(Z0))]
    for _ in range(10):
        Zi = _inflate(Z)
        if not all(x.is_finite() for x in Zi):
            return None
        try:
            Zn = [z0 + H * fz for z0, fz in zip(Z0, F(Zi))]
        except (ZeroDivisionError, ValueError):
            return None
        if not all(x.is_finite() for x in Zn):
            return None
        if _contains(Zi, Zn):
            return Zi
        Z = Zn
    return None


# ------------------------------------------------------------------------------- steps
@dataclass
class Step:
    """One validated step [t0, t0 + h].

    Attributes
    ----------
    t0 : arb
        Start time (an enclosure; exact sums of float steps in practice).
    h : float
        Step length (exact float).
    x_hat : list of arb
        The exact reference point at t0.
    Amat : arb_mat
        Frame A (exact float entries); the set at t0 is x_hat + Amat·r.
    r : list of arb
        Zero-centred box.
    X0 : list of arb
        Box hull of the set at t0.
    B : list of arb
        A-priori enclosure of x(t) for t ∈ [t0, t0 + h] (all initial values).
    coef, rem : Taylor coefficients 0..p of the solution through x_hat; the order-(p+1)
        coefficient enclosed on B (the Lagrange remainder).
    vcoef, vrem : the same for the variational matrix V (coefficients on X0, remainder on B).
    x_end : list of arb
        Box enclosure of x(t0 + h).
    """

    t0: object
    h: float
    x_hat: list
    Amat: object
    r: list
    X0: list
    B: list
    coef: list
    rem: list
    vcoef: list
    vrem: object
    x_end: list = field(default_factory=list)

    def enclose(self, tau):
        """Box enclosure of x(t0 + τ) for every τ in the ball ``tau`` ⊆ [0, h]."""
        n = len(self.x_hat)
        p = len(self.coef[0]) - 1
        tp = tau ** (p + 1)
        y = [_horner(self.coef[i], tau) + self.rem[i] * tp for i in range(n)]
        tq = tau ** len(self.vcoef)
        J = arb_mat(n, n)
        for i in range(n):
            for j in range(n):
                J[i, j] = _horner([vk[i, j] for vk in self.vcoef], tau) + self.vrem[i, j] * tq
        C = J * self.Amat
        return [y[i] + sum((C[i, j] * self.r[j] for j in range(n)), arb(0)) for i in range(n)]


@dataclass
class Flow:
    """The validated steps of one integration (every step's enclosure kept)."""

    field: VectorField
    steps: list
    prec: int
    order: int

    @property
    def t_end(self):
        s = self.steps[-1]
        return s.t0 + s.h


def _mat_to_list(M, n):
    return [[M[i, j] for j in range(n)] for i in range(n)]


def _step(field_, x_hat, Amat, r, t0, *, order, vorder, tol, scale_floor, h_max, h_min,
          vtol=1e-10):
    n = field_.dim
    F = field_.augmented
    X0 = [x_hat[i] + sum((Amat[i, j] * r[j] for j in range(n)), arb(0)) for i in range(n)]
    cx = taylor_coefficients(field_.f, x_hat, order + 1)
    # step size from the last two coefficients at the reference point
    h = h_max
    for i in range(n):
        sc = max(abs(A.mid(x_hat[i])), scale_floor[i])
        for k in (order, order + 1):
            a = abs(A.mid(cx[i][k]))
            if a > 0:
                h = min(h, 0.8 * (tol * sc / a) ** (1.0 / k))
    h = float(np.float64(h))
    # round h to 20 significant bits so that t0 + h stays exact in Arb for long runs
    mexp = math.frexp(h)
    h = math.ldexp(math.floor(mexp[0] * 2 ** 20) / 2 ** 20, mexp[1])
    eye = [arb(1) if i == j else arb(0) for i in range(n) for j in range(n)]
    Z0 = X0 + eye
    cz = taylor_coefficients(F, Z0, vorder)
    for _attempt in range(40):
        if h < h_min:
            raise CertificationError(f"validated step size fell below {h_min:g} at t ≈ {A.mid(t0):.6g}",
                                     hint="a higher precision or a smaller tolerance")
        B = _apriori(F, Z0, h)
        if B is None:
            h *= 0.5
            continue
        try:
            cbx = taylor_coefficients(field_.f, B[:n], order + 1)
        except _SeriesFailure:
            h *= 0.5
            continue
        hp = arb(h) ** (order + 1)
        ok = True
        for i in range(n):
            sc = max(abs(A.mid(x_hat[i])), scale_floor[i])
            if A.upper(abs(cbx[i][order + 1] * hp)) > 100 * tol * sc:
                ok = False
        if not ok:
            h *= 0.5
            continue
        try:
            cbz = taylor_coefficients(F, B, vorder + 1)
        except _SeriesFailure:
            h *= 0.5
            continue
        # the Jacobian's remainder, in the scaled coordinates x_i / scale_i, must stay below
        # vtol: it multiplies the deviation box r and so sets its growth per step
        hq = arb(h) ** (vorder + 1)
        worst = 0.0
        for i in range(n):
            si = max(abs(A.mid(x_hat[i])), scale_floor[i])
            for j in range(n):
                sj = max(abs(A.mid(x_hat[j])), scale_floor[j])
                w = A.upper(abs(cbz[n + i * n + j][vorder + 1] * hq)) * sj / si
                worst = max(worst, w if w == w else math.inf)
        if worst > vtol:
            h *= 0.5
            continue
        break
    else:
        raise CertificationError("no validated step found", hint="a smaller tolerance")
    coef = [c[: order + 1] for c in cx]
    rem = [cbx[i][order + 1] for i in range(n)]
    vcoef = []
    for k in range(vorder + 1):
        M = arb_mat(n, n)
        for i in range(n):
            for j in range(n):
                M[i, j] = cz[n + i * n + j][k]
        vcoef.append(M)
    vrem = arb_mat(n, n)
    for i in range(n):
        for j in range(n):
            vrem[i, j] = cbz[n + i * n + j][vorder + 1]
    st = Step(t0, h, x_hat, Amat, r, X0, B[:n], coef, rem, vcoef, vrem)
    # propagate to t0 + h
    harb = arb(h)
    hp = harb ** (order + 1)
    y = [_horner(coef[i], harb) + rem[i] * hp for i in range(n)]
    hq = harb ** len(vcoef)
    J = arb_mat(n, n)
    for i in range(n):
        for j in range(n):
            J[i, j] = _horner([vk[i, j] for vk in vcoef], harb) + vrem[i, j] * hq
    C = J * Amat
    # Lohner QR frame: columns sorted by their contribution C[:, j]·rad(r_j)
    Cm = np.array([[A.mid(C[i, j]) for j in range(n)] for i in range(n)])
    rr = np.array([A.upper(abs(x)) for x in r])
    weights = np.linalg.norm(Cm, axis=0) * rr
    perm = np.argsort(-weights, kind="stable")
    if np.all(np.isfinite(Cm)) and np.linalg.matrix_rank(Cm) == n and np.any(rr > 0):
        Q, _ = np.linalg.qr(Cm[:, perm])
    else:
        Q = np.eye(n)
    Anew = arb_mat([[float(Q[i, j]) for j in range(n)] for i in range(n)])
    Qinv = Anew.inv()
    M = Qinv * C
    x_new = [arb(v.mid()) for v in y]
    e = [y[i] - x_new[i] for i in range(n)]
    rn = []
    for i in range(n):
        s = sum((M[i, j] * r[j] for j in range(n)), arb(0))
        s = s + sum((Qinv[i, j] * e[j] for j in range(n)), arb(0))
        rn.append(arb(0, A.upper(abs(s))))
    st.x_end = [x_new[i] + sum((Anew[i, j] * rn[j] for j in range(n)), arb(0)) for i in range(n)]
    return st, x_new, Anew, rn


def _start(x0, n):
    x0 = [arb(v) for v in x0]
    if len(x0) != n:
        raise ValueError(f"`x0` must have {n} components, got {len(x0)}")
    if not all(v.is_finite() for v in x0):
        raise ValueError("`x0` must be finite")
    x_hat = [arb(v.mid()) for v in x0]
    r = [arb(0, A.upper(abs(x0[i] - x_hat[i]))) if x0[i].rad() > 0 else arb(0) for i in range(n)]
    Amat = arb_mat([[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)])
    return x_hat, Amat, r


def _steps(field_, x0, *, order, vorder, tol, scale_floor, h_max, h_min, max_steps):
    n = field_.dim
    x_hat, Amat, r = _start(x0, n)
    t0 = arb(0)
    for _ in range(max_steps):
        st, x_hat, Amat, r = _step(field_, x_hat, Amat, r, t0, order=order, vorder=vorder, tol=tol,
                                   scale_floor=scale_floor, h_max=h_max, h_min=h_min)
        yield st
        t0 = t0 + st.h
    raise CertificationError(f"more than {max_steps} validated steps", hint="a larger max_steps")


def _opts(field_, order, tol, scale_floor, prec):
    if not isinstance(field_, VectorField):
        raise TypeError("`field` must be a certify.ode.VectorField")
    order = int(order)
    if order < 2:
        raise ValueError(f"`order` must be >= 2, got {order}")
    tol = float(tol)
    if not 0 < tol < 1:
        raise ValueError(f"`tol` must be in (0, 1), got {tol}")
    n = field_.dim
    sf = [1.0] * n if scale_floor is None else [float(s) for s in scale_floor]
    if len(sf) != n or any(not s > 0 for s in sf):
        raise ValueError("`scale_floor` must hold one positive number per component")
    return order, tol, sf, A.check_prec(prec)


def integrate(field_, x0, t_end: float, *, order: int = 20, vorder: int = 12, tol: float = 1e-18,
              scale_floor=None, prec: int = 128, h_max: float = math.inf,
              h_min: float = 1e-12, max_steps: int = 100000) -> Flow:
    """Validated enclosure of the flow of ``field_`` from the set ``x0`` over [0, ≥ t_end].

    Parameters
    ----------
    field_ : VectorField
    x0 : sequence of arb or float
        Initial set (balls; floats are exact points).
    t_end : float
        Integrate until the last step ends at or after ``t_end``.
    order : int
        Taylor order p.
    tol : float
        Local error target relative to max(|x_i|, scale_floor_i) (chooses the step; the
        enclosures are rigorous whatever it is).
    scale_floor : sequence of float or None
        Per-component floors of the scale (default 1).
    prec : int
        Arb precision (bits).

    Returns
    -------
    Flow
        ``steps[k].enclose(τ)`` encloses x(t_k + τ) for τ ∈ [0, h_k] (rigorous).
    """
    return integrate_until(field_, x0, lambda st: (st.t0 + st.h) >= t_end, order=order,
                           vorder=vorder, tol=tol, scale_floor=scale_floor, prec=prec,
                           h_max=h_max, h_min=h_min, max_steps=max_steps)


def integrate_until(field_, x0, stop, *, order: int = 20, vorder: int = 12, tol: float = 1e-18,
                    scale_floor=None, prec: int = 128, h_max: float = math.inf,
                    h_min: float = 1e-12, max_steps: int = 100000) -> Flow:
    """Validated steps of ``field_`` from ``x0`` until ``stop(step)`` returns True for a step
    (it sees every :class:`Step`, e.g. to test its end box ``x_end`` or its a-priori box ``B``;
    it may raise).  Other parameters as for :func:`integrate`; CertificationError past
    ``max_steps``."""
    order, tol, sf, prec = _opts(field_, order, tol, scale_floor, prec)
    vorder = int(vorder)
    if not 1 <= vorder <= order:
        raise ValueError(f"`vorder` must be in [1, order], got {vorder}")
    steps = []
    with A.workprec(prec):
        old_cap = ctx.cap
        ctx.cap = max(old_cap, order + 4)
        try:
            for st in _steps(field_, x0, order=order, vorder=vorder, tol=tol, scale_floor=sf,
                             h_max=h_max, h_min=h_min, max_steps=max_steps):
                steps.append(st)
                if stop(st):
                    break
        finally:
            ctx.cap = old_cap
    return Flow(field_, steps, prec, order)


@dataclass(frozen=True)
class CrossingSpec:
    """A section for :func:`crossing_times`: the first time s(x(t)) ≥ 0 is sought.

    ``section(x)`` returns s(x) and ``rate(x)`` returns ṡ = ∇s(x)·f(x), both on lists of
    ``arb``; ``label`` names it.
    """

    section: object
    rate: object
    label: str = ""


def _pieces(st, k):
    """The step [0, h] cut into k pieces: (T_i, enclosure of x over t0 + T_i)."""
    out = []
    for i in range(k):
        T = A.ball(st.h * i / k, st.h * (i + 1) / k) if i < k - 1 else \
            A.ball(st.h * i / k, st.h)
        if i == 0:
            T = arb(0).union(T)
        out.append((T, st.enclose(T)))
    return out


def _locate(st, spec, pieces):
    """None if the step certainly holds no crossing of spec; else the τ-enclosure of the
    (unique) crossing in it; CertificationError when the enclosures cannot separate it."""
    ss = [spec.section(E) for _, E in pieces]
    first = next((i for i, v in enumerate(ss) if not v < 0), None)
    if first is None:
        return None
    rates = [spec.rate(E) for _, E in pieces[first:]]
    if not all(r > 0 for r in rates):
        raise CertificationError(
            f"section {spec.label!r}: the rate is not certainly positive on a step meeting the "
            f"section (t ≈ {A.mid(st.t0):.6g})", hint="a smaller tolerance or h_max")
    se = spec.section(st.x_end)
    if se < 0:
        return None            # increasing from piece `first` on and negative at the end
    if not se > 0:
        raise CertificationError(f"section {spec.label!r}: a step ends on the section "
                                 f"(t ≈ {A.mid(st.t0 + st.h):.6g})", hint="another tolerance")
    rate_hull = rates[0]
    for r in rates[1:]:
        rate_hull = rate_hull.union(r)
    lo = A.lower(pieces[first][0])
    return _newton(st, spec, max(lo, 0.0), rate_hull)


def _newton(st, spec, tau_lo, rate_hull):
    """Enclosure of the unique τ ∈ [0, h] with s(x(t0 + τ)) = 0 in a step where s(x(t0)) < 0,
    s(x(t0 + h)) > 0 and ṡ(B) > 0, by the interval Newton operator
    N(T) = m − s(x(t0 + m)) / ṡ(x(t0 + T)) (it contains the root by the mean value theorem;
    T ← T ∩ N(T) until the width stops shrinking)."""
    T = A.ball(tau_lo, st.h)
    rate_B = rate_hull
    w_old = math.inf
    for _ in range(100):
        m = arb(T.mid())
        g = spec.section(st.enclose(m))
        rate = spec.rate(st.enclose(T))
        if not rate > 0:
            rate = rate_B
        N = m - g / rate
        lo = max(A.lower(T), A.lower(N), 0.0)
        hi = min(A.upper(T), A.upper(N), st.h)
        if lo > hi:
            raise CertificationError("interval Newton found no crossing in the crossing step",
                                     hint="a higher precision")
        T = A.ball(lo, hi)
        w = hi - lo
        if w >= 0.9 * w_old:
            break
        w_old = w
    return T


def crossing_times(field_, x0, specs, *, t_max: float, order: int = 20, vorder: int = 12,
                   tol: float = 1e-18,
                   scale_floor=None, prec: int = 128, h_max: float = math.inf,
                   h_min: float = 1e-12, max_steps: int = 100000, n_pieces: int = 8):
    """Rigorous brackets of the first times t with s_j(x(t)) ≥ 0 for each section.

    Parameters
    ----------
    field_ : VectorField
    x0 : sequence
        Initial set.
    specs : sequence of CrossingSpec
    t_max : float
        Horizon: a section not crossed by then gets the rigorous bracket [t_max, inf).
    order, tol, scale_floor, prec, h_max, h_min, max_steps
        As for :func:`integrate`.

    Returns
    -------
    (list of Bracket, Flow)
        Brackets tagged ``rigorous`` (module docstring); [0, 0] when s(x0) ≥ 0 certainly.

    Raises
    ------
    CertificationError
        When an enclosure cannot separate a crossing (s(x0) straddles 0, the section's rate is
        not certainly positive on a step whose box meets the section, or a step ends with
        s straddling 0).
    """
    order, tol, sf, prec = _opts(field_, order, tol, scale_floor, prec)
    vorder = int(vorder)
    if not 1 <= vorder <= order:
        raise ValueError(f"`vorder` must be in [1, order], got {vorder}")
    specs = list(specs)
    if not specs or not all(isinstance(s, CrossingSpec) for s in specs):
        raise TypeError("`specs` must be a non-empty sequence of CrossingSpec")
    t_max = float(t_max)
    out: list[Bracket | None] = [None] * len(specs)
    steps = []
    with A.workprec(prec):
        old_cap = ctx.cap
        ctx.cap = max(old_cap, order + 4)
        try:
            xs = [arb(v) for v in x0]
            for j, sp in enumerate(specs):
                s0 = sp.section(xs)
                if s0 >= 0:
                    out[j] = Bracket(0.0, 0.0, note="s(x0) >= 0 (exact start)")
                elif not s0 < 0:
                    raise CertificationError(f"section {sp.label!r} straddles 0 at the start",
                                             hint="a start off the section")
            pending = [j for j in range(len(specs)) if out[j] is None]
            if pending:
                for st in _steps(field_, xs, order=order, vorder=vorder, tol=tol, scale_floor=sf, h_max=h_max,
                                 h_min=h_min, max_steps=max_steps):
                    steps.append(st)
                    pieces = None
                    for j in list(pending):
                        sp = specs[j]
                        if sp.section(st.B) < 0:
                            continue
                        if pieces is None:
                            pieces = _pieces(st, n_pieces)
                        T = _locate(st, sp, pieces)
                        if T is None:
                            continue
                        t = st.t0 + T
                        out[j] = Bracket.from_arb(t, note=f"validated Taylor order {order}, "
                                                  f"{len(steps)} steps, prec {prec}")
                        pending.remove(j)
                    if not pending:
                        break
                    if st.t0 + st.h >= t_max:
                        for j in pending:
                            out[j] = Bracket(A.lower(st.t0 + st.h), math.inf,
                                             note="not crossed by the horizon (validated)")
                        break
        finally:
            ctx.cap = old_cap
    return out, Flow(field_, steps, prec, order)
