"""30-digit mpmath references for the diagnostics (AGOP and refit risks) → data/refs/diagnostics_refs.json.

Independent of popdyn's kernels: nothing from ``popdyn`` is imported.  Every expectation is a
2-D Gaussian integral over the pair (Z1, Z2) = (θ_i·x, θ_j·x) with correlation ρ, written as
Z2 = ρZ1 + sZ3 (s = √(1 − ρ²), Z3 independent):

    E[f(α_i Z1 + β_i) g(α_j Z2 + β_j)] = ∫ φ(z) f(α_i z + β_i) E[g(α_j ρ z + β_j + α_j s Z3)] dz.

The inner (Z3) integral is the Gaussian expectation E[g(μ + τZ)] of a scalar function, done in
closed form for the functions needed here (relu/leaky relu: μΦ(μ/τ) + τφ(μ/τ); their
derivative: Φ(μ/τ); erf: erf(μ/√(1+2τ²)); erf′: 2/√π·exp(−μ²/(1+2τ²))/√(1+2τ²); polynomial links
from the Gaussian moments of μ + τZ); the outer (Z1) integral is ``mpmath.quad`` (tanh–sinh)
split at every kink.  With ``--check-nested`` a few entries are recomputed by nested 2-D
``mpmath.quad`` (inner integral by quadrature too) and must agree to 25 digits.  Pairs of exactly
parallel / antiparallel weight rows (checked in exact rational arithmetic) get ρ = ±1 exactly.

From these moments (all at 30 digits, with the float64 inputs taken as exact binary values):
AGOP M = s²Wᵀ(aaᵀ∘B)W; refit quadratic G = s²(C − μμᵀ), g = s(E[σy] − μE[y]), V = Var(y);
unrestricted refit infimum V − gᵀG⁺g (eigendecomposition, eigenvalues below 1e−24·λ_max
treated as exact zeros — the cases are built so that their rank deficiencies are exact); ball
refits min_{‖a‖≤B} R(a) by the secular equation solved by bisection at 30 digits; the
projected refit after snapping (the snapping rule re-implemented here in exact rationals).

Source: docs/design.md §3, §5; Kumar (arXiv 2609.39408).  Runtime: about 2 minutes (plus about 3
minutes with ``--check-nested``) on one core.
Usage: python data/_precompute/diagnostics_refs.py [--check-nested]
"""
from __future__ import annotations

import json
import sys
import time
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np

ctx = mpmath.MPContext()
ctx.dps = 30
DIGITS = 25
OUT = Path(__file__).resolve().parents[1] / "refs" / "diagnostics_refs.json"


def mpf(x):
    if isinstance(x, Fraction):
        return ctx.mpf(x.numerator) / x.denominator
    return ctx.mpf(x)


def phi(z):
    return ctx.exp(-z * z / 2) / ctx.sqrt(2 * ctx.pi)


def Phi(z):
    return ctx.ncdf(z)


# ---------------------------------------------------------------------------- scalar functions
class PL:
    """p·relu(t) + q·t."""
    kinks = (0,)

    def __init__(self, p, q):
        self.p, self.q = mpf(p), mpf(q)

    def __call__(self, t):
        return self.p * (t if t > 0 else 0) + self.q * t

    def cond(self, mu, tau):
        if tau == 0:
            return self(mu)
        return self.p * (mu * Phi(mu / tau) + tau * phi(mu / tau)) + self.q * mu


class PLDeriv:
    """p·1{t > 0} + q."""
    kinks = (0,)

    def __init__(self, p, q):
        self.p, self.q = mpf(p), mpf(q)

    def __call__(self, t):
        return self.p * (1 if t > 0 else 0) + self.q

    def cond(self, mu, tau):
        if tau == 0:
            return self(mu)
        return self.p * Phi(mu / tau) + self.q


class Erf:
    kinks = ()

    def __call__(self, t):
        return ctx.erf(t)

    def cond(self, mu, tau):
        return ctx.erf(mu / ctx.sqrt(1 + 2 * tau * tau))


class ErfDeriv:
    kinks = ()

    def __call__(self, t):
        return 2 / ctx.sqrt(ctx.pi) * ctx.exp(-t * t)

    def cond(self, mu, tau):
        q = 1 + 2 * tau * tau
        return 2 / ctx.sqrt(ctx.pi) * ctx.exp(-mu * mu / q) / ctx.sqrt(q)


class Poly:
    """Σ_n c_n t^n (monomial coefficients, exact rationals / mpf)."""
    kinks = ()

    def __init__(self, coeffs):
        self.c = [mpf(x) if not isinstance(x, ctx.mpf) else x for x in coeffs]

    def __call__(self, t):
        return sum(c * t ** n for n, c in enumerate(self.c))

    def cond(self, mu, tau):
        # E[(mu + tau Z)^n] = Σ_k C(n,k) mu^(n−k) tau^k E[Z^k],  E[Z^k] = (k−1)!! for even k
        tot = ctx.mpf(0)
        for n, c in enumerate(self.c):
            if c == 0:
                continue
            s = ctx.mpf(0)
            for k in range(0, n + 1, 2):
                s += ctx.binomial(n, k) * mu ** (n - k) * tau ** k * ctx.fac2(k - 1)
            tot += c * s
        return tot


class Sum:
    def __init__(self, *parts):
        self.parts = parts
        self.kinks = tuple(sorted({k for p in parts for k in p.kinks}))

    def __call__(self, t):
        return sum(p(t) for p in self.parts)

    def cond(self, mu, tau):
        return sum(p.cond(mu, tau) for p in self.parts)


SQ2, SQ6 = ctx.sqrt(2), ctx.sqrt(6)
LINKS = {
    "h2": lambda: Poly([-1 / SQ2, 0, 1 / SQ2]),
    "h3": lambda: Poly([0, -3 / SQ6, 0, 1 / SQ6]),
    "h3+0.3h2": lambda: Poly([mpf(Fraction(3, 10)) * (-1 / SQ2), -3 / SQ6,
                              mpf(Fraction(3, 10)) / SQ2, 1 / SQ6]),
    "relu": lambda: PL(1, 0),
}


def activation(name, slope=0.01):
    """(σ, σ′) for a student / teacher-network activation."""
    if name == "relu":
        return PL(1, 0), PLDeriv(1, 0)
    if name == "leaky_relu":
        s = Fraction(slope)
        return PL(1 - s, s), PLDeriv(1 - s, s)
    if name == "erf":
        return Erf(), ErfDeriv()
    raise ValueError(name)


# ---------------------------------------------------------------------------- Gaussian integrals
def _quad(f, pts):
    pts = sorted(set(pts))
    return ctx.quad(f, [-ctx.inf] + pts + [ctx.inf])


def expect1(f, al, be):
    """E[f(αZ + β)] by quadrature split at the kinks."""
    if al == 0:
        return f(be)
    return _quad(lambda z: f(al * z + be) * phi(z), [(k - be) / al for k in f.kinks])


def expect2(f, al1, be1, g, al2, be2, rho, nested=False):
    """E[f(α1 Z1 + β1) g(α2 Z2 + β2)], corr(Z1, Z2) = ρ (module docstring)."""
    if al1 == 0:
        return f(be1) * expect1(g, al2, be2)
    if al2 == 0:
        return g(be2) * expect1(f, al1, be1)
    s = ctx.sqrt(1 - rho * rho) if abs(rho) < 1 else ctx.mpf(0)
    pts = [(k - be1) / al1 for k in f.kinks]
    if rho != 0:
        pts += [(k - be2) / (al2 * rho) for k in g.kinks]
    if nested and s > 0:
        def inner(z):
            ip = [((k - be2) / al2 - rho * z) / s for k in g.kinks]
            return _quad(lambda z3: g(al2 * (rho * z + s * z3) + be2) * phi(z3), ip)
    else:
        def inner(z):
            return g.cond(al2 * rho * z + be2, al2 * s)
    return _quad(lambda z: f(al1 * z + be1) * inner(z) * phi(z), pts)


# ---------------------------------------------------------------------------- units and geometry
class Unit:
    """A ridge unit f(α θ·x + β).  ``w`` float64 values are taken as exact binary numbers
    (``exact=True``) or as mpf values (snapped rows)."""

    def __init__(self, f, w, beta, exact=True):
        self.f = f
        self.wq = [Fraction(float(x)) for x in w] if exact else None
        self.w = [mpf(x) for x in self.wq] if exact else [ctx.mpf(x) for x in w]
        self.al = ctx.sqrt(ctx.fsum(x * x for x in self.w))
        self.th = [x / self.al for x in self.w] if self.al > 0 else None
        self.be = mpf(Fraction(float(beta)))


def corr(u, v):
    """θ_u·θ_v; exactly ±1 for (anti)parallel rows (checked in rationals for exact rows, to
    working precision for mpf rows)."""
    if u.th is None or v.th is None:
        return ctx.mpf(0)
    if u.wq is not None and v.wq is not None:
        a, b = u.wq, v.wq
        d = len(a)
        if all(a[k] * b[l] == a[l] * b[k] for k in range(d) for l in range(k + 1, d)):
            return ctx.mpf(1 if sum(x * y for x, y in zip(a, b)) > 0 else -1)
    r = ctx.fsum(x * y for x, y in zip(u.th, v.th))
    if u.wq is None or v.wq is None:
        if abs(abs(r) - 1) < ctx.mpf(10) ** (-ctx.dps + 3):
            return ctx.mpf(1 if r > 0 else -1)
    return r


def E2(u, fu, v, fv, nested=False):
    return expect2(fu, u.al, u.be, fv, v.al, v.be, corr(u, v), nested)


# ---------------------------------------------------------------------------- the cases
def make_cases():
    rng = np.random.default_rng(20260930)
    cases = []

    def rnd(*shape, scale=1.0):
        # round to 2^-20 so that sums/differences of weights are exact in binary
        return np.round(rng.standard_normal(shape) * scale * 2 ** 20) / 2 ** 20

    # A: generic relu student with biases, rank-2 h2 teacher in a rotated plane
    d, m = 4, 6
    U = np.array([[0.6, 0.8, 0.0, 0.0], [-0.8, 0.6, 0.0, 0.0]])
    cases.append(dict(
        name="relu_bias_h2", student=dict(d=d, m=m, activation="relu", bias=True, scaling="standard"),
        params=dict(a=rnd(m).tolist(), W=rnd(m, d, scale=0.7).tolist(), b=rnd(m, scale=0.5).tolist(), c=0.0),
        teacher=dict(kind="additive", link="h2", U=U.tolist(), kappa=[1.0, 0.5])))

    # B: rank-deficient relu features: duplicate, antiparallel triples with an exact linear
    # dependency, a constant (zero-weight, positive-bias) neuron and a zero neuron
    d = 4
    e1, e2, e3 = np.eye(d)[0], np.eye(d)[1], np.eye(d)[2]
    W = np.array([e1, e1, -e1, e2, -e2, e1 + e2, -(e1 + e2), 0 * e1, 0 * e1, 0.5 * e1 - 0.75 * e3 + 0.25 * np.eye(d)[3]])
    b = np.array([0.25, 0.25, -0.25, 0.0, 0.0, 0.25, -0.25, 0.75, 0.0, -0.125])
    m = W.shape[0]
    cases.append(dict(
        name="relu_rank_deficient", student=dict(d=d, m=m, activation="relu", bias=True, scaling="standard"),
        params=dict(a=rnd(m).tolist(), W=W.tolist(), b=b.tolist(), c=0.0),
        teacher=dict(kind="additive", link="relu", U=[e1.tolist(), e3.tolist()], kappa=[1.0, -0.75])))

    # C: leaky relu, mean-field scaling, relu teacher network (non-orthogonal rows, biases),
    # with a duplicated neuron and an antiparallel pair
    d, m = 5, 7
    W = rnd(m, d, scale=0.8)
    W[3] = W[1]
    W[5] = -W[2]
    b = rnd(m, scale=0.4)
    b[3] = b[1]
    Ut = rnd(3, d)
    cases.append(dict(
        name="leaky_meanfield_network", student=dict(d=d, m=m, activation="leaky_relu", negative_slope=0.125,
                                                    bias=True, scaling="mean_field"),
        params=dict(a=rnd(m, scale=2.0).tolist(), W=W.tolist(), b=b.tolist(), c=0.0),
        teacher=dict(kind="network", activation="relu", V=[1.0, -0.5, 0.75], U=Ut.tolist(),
                     bias=[0.25, 0.0, -0.5])))

    # D: bias-free relu student, rank-2 h2 teacher (the paper's default family), d = 6
    d, m = 6, 8
    cases.append(dict(
        name="relu_nobias_h2", student=dict(d=d, m=m, activation="relu", bias=False, scaling="standard"),
        params=dict(a=rnd(m).tolist(), W=rnd(m, d, scale=0.5).tolist(), b=[0.0] * m, c=0.0),
        teacher=dict(kind="additive", link="h2", U=np.eye(d)[[0, 3]].tolist(), kappa=[1.0, 1.0])))

    # E: smooth student (erf), rank-1 h3+0.3h2 teacher
    d, m = 3, 4
    cases.append(dict(
        name="erf_h3h2", student=dict(d=d, m=m, activation="erf", bias=True, scaling="standard"),
        params=dict(a=rnd(m).tolist(), W=rnd(m, d, scale=0.6).tolist(), b=rnd(m, scale=0.3).tolist(), c=0.0),
        teacher=dict(kind="additive", link="h3+0.3h2", U=[[0.0, 1.0, 0.0]], kappa=[1.0])))
    return cases


def teacher_units(t):
    if t["kind"] == "additive":
        g = LINKS[t["link"]]()
        return [Unit(g, u, 0.0) for u in t["U"]], [mpf(k) for k in t["kappa"]]
    f, _ = activation(t["activation"])
    return [Unit(f, u, bb) for u, bb in zip(t["U"], t["bias"])], [mpf(v) for v in t["V"]]


def snap(W, U):
    """The projected-refit snapping rule, in exact rationals where possible (U orthonormal rows
    with exactly representable entries are required: the reference cases use coordinate axes)."""
    Uq = [[Fraction(float(x)) for x in row] for row in U]
    out = []
    for w in W:
        wq = [Fraction(float(x)) for x in w]
        coords = [sum(u[k] * wq[k] for k in range(len(wq))) for u in Uq]
        inner = [sum(coords[i] * Uq[i][k] for i in range(len(Uq))) for k in range(len(wq))]
        if all(x == 0 for x in coords):
            out.append([mpf(x) for x in wq])
            continue
        i = max(range(len(coords)), key=lambda j: (abs(coords[j]), -j))
        sgn = -1 if coords[i] < 0 else 1
        nrm = ctx.sqrt(mpf(sum(c * c for c in coords)))
        out.append([mpf(wq[k] - inner[k]) + sgn * nrm * mpf(Uq[i][k]) for k in range(len(wq))])
    return out


def moments(case, W=None):
    st, p, t = case["student"], case["params"], case["teacher"]
    sig, dsig = activation(st["activation"], st.get("negative_slope", 0.01))
    exact = W is None
    W = p["W"] if W is None else W
    units = [Unit(sig, w, bb, exact) for w, bb in zip(W, p["b"])]
    m = len(units)
    C = ctx.matrix(m, m)
    B = ctx.matrix(m, m)
    for i in range(m):
        for j in range(i, m):
            C[i, j] = C[j, i] = E2(units[i], sig, units[j], sig)
            B[i, j] = B[j, i] = E2(units[i], dsig, units[j], dsig)
    mu = [expect1(sig, u.al, u.be) for u in units]
    tus, tw = teacher_units(t)
    Ey = ctx.fsum(w * expect1(u.f, u.al, u.be) for u, w in zip(tus, tw))
    Ey2 = ctx.fsum(tw[k] * tw[l] * E2(tus[k], tus[k].f, tus[l], tus[l].f)
                   for k in range(len(tus)) for l in range(len(tus)))
    Esy = [ctx.fsum(w * E2(u, sig, tu, tu.f) for tu, w in zip(tus, tw)) for u in units]
    return dict(C=C, B=B, mu=mu, Ey=Ey, VY=Ey2 - Ey * Ey, Esy=Esy)


def refit_quadratic(case, mo):
    st, p = case["student"], case["params"]
    s = ctx.mpf(1) if st["scaling"] == "standard" else ctx.mpf(1) / st["m"]
    m = len(mo["mu"])
    G = ctx.matrix(m, m)
    for i in range(m):
        for j in range(m):
            G[i, j] = s * s * (mo["C"][i, j] - mo["mu"][i] * mo["mu"][j])
    g = ctx.matrix([s * (mo["Esy"][i] - mo["mu"][i] * mo["Ey"]) for i in range(m)])
    return G, g, mo["VY"]


def eig(G, g):
    lam, Q = ctx.eigsy(G)
    c = Q.T * g
    lmax = max(abs(x) for x in lam)
    return [lam[i] for i in range(len(lam))], [c[i] for i in range(len(lam))], lmax


def unrestricted(G, g, V):
    lam, c, lmax = eig(G, g)
    tot = ctx.mpf(0)
    rank = 0
    for l, ci in zip(lam, c):
        if l > ctx.mpf(10) ** -24 * lmax:
            tot += ci * ci / l
            rank += 1
        else:
            assert abs(ci) < ctx.mpf(10) ** -12 * (1 + lmax), "g has mass in the null space"
    return V - tot, rank


def ball(G, g, V, B):
    lam, c, lmax = eig(G, g)
    tiny = ctx.mpf(10) ** -24 * lmax
    pos = [(l, ci) for l, ci in zip(lam, c) if l > tiny]
    nrm = lambda mu: ctx.sqrt(ctx.fsum(ci * ci / (l + mu) ** 2 for l, ci in pos))
    if nrm(0) <= B:
        return V - ctx.fsum(ci * ci / l for l, ci in pos), ctx.mpf(0)
    lo, hi = ctx.mpf(0), ctx.sqrt(ctx.fsum(ci * ci for _, ci in pos)) / B
    for _ in range(400):                      # bisection to ~1e−120 relative: beyond 30 digits
        mid = (lo + hi) / 2
        if nrm(mid) > B:
            lo = mid
        else:
            hi = mid
    mu = hi
    return V - ctx.fsum(ci * ci / (l + mu) for l, ci in pos) - mu * B * B, mu


def s_(x):
    return ctx.nstr(x, DIGITS, strip_zeros=False)


def run(check_nested=False):
    t0 = time.time()
    out = {"_source": "data/_precompute/diagnostics_refs.py (mpmath, 30 digits)", "cases": []}
    for case in make_cases():
        tc = time.time()
        mo = moments(case)
        st, p = case["student"], case["params"]
        s = ctx.mpf(1) if st["scaling"] == "standard" else ctx.mpf(1) / st["m"]
        m, d = st["m"], st["d"]
        a = [mpf(x) for x in p["a"]]
        W = [[mpf(x) for x in row] for row in p["W"]]
        M = [[ctx.fsum(s * s * a[i] * a[j] * mo["B"][i, j] * W[i][k] * W[j][l]
                       for i in range(m) for j in range(m)) for l in range(d)] for k in range(d)]
        G, g, V = refit_quadratic(case, mo)
        R_un, rank = unrestricted(G, g, V)
        na = ctx.sqrt(ctx.fsum(x * x for x in a))
        R_same, mu_same = ball(G, g, V, na)
        # budgets: one active (boundary) and one inactive (interior) relative to the min-norm head
        lam, c, lmax = eig(G, g)
        nmin = ctx.sqrt(ctx.fsum(ci * ci / l ** 2 for l, ci in zip(lam, c) if l > ctx.mpf(10) ** -24 * lmax))
        budgets = [float(0.25 * nmin), float(2 * nmin)]
        bounded = []
        for Bq in budgets:
            R_b, mu_b = ball(G, g, V, mpf(Bq))
            bounded.append({"budget": Bq, "risk": s_(R_b), "multiplier": s_(mu_b)})
        entry = dict(case)
        entry.update(
            agop=[[s_(x) for x in row] for row in M],
            B=[[s_(mo["B"][i, j]) for j in range(m)] for i in range(m)],
            C=[[s_(mo["C"][i, j]) for j in range(m)] for i in range(m)],
            mu0=[s_(x) for x in mo["mu"]], Esy=[s_(x) for x in mo["Esy"]],
            mean_y=s_(mo["Ey"]), variance=s_(V),
            unrestricted={"risk": s_(R_un), "rank": rank},
            same_budget={"budget": s_(na), "risk": s_(R_same), "multiplier": s_(mu_same)},
            bounded=bounded)
        t = case["teacher"]
        if t["kind"] == "additive" and all(x in (0.0, 1.0) for row in t["U"] for x in row):
            Ws = snap(p["W"], t["U"])
            mo_s = moments(case, W=Ws)
            Gs, gs, Vs = refit_quadratic(case, mo_s)
            R_p, rank_p = unrestricted(Gs, gs, Vs)
            entry["projected"] = {"risk": s_(R_p), "rank": rank_p,
                                  "W": [[s_(x) for x in row] for row in Ws]}
        out["cases"].append(entry)
        print(f"{case['name']}: {time.time() - tc:.1f} s; V_Y = {ctx.nstr(V, 12)}, "
              f"R_unrestricted/V = {ctx.nstr(R_un / V, 12)} (rank {rank}/{m})", flush=True)
    if check_nested:
        _check_nested()
    out["_runtime_s"] = round(time.time() - t0, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"wrote {OUT} in {time.time() - t0:.1f} s")


def _check_nested():
    """Closed-form inner integrals vs nested 2-D quadrature on a few pairs."""
    sig, dsig = activation("relu")
    lsig, ldsig = activation("leaky_relu", 0.125)
    esig, edsig = activation("erf")
    u = Unit(sig, [0.7, -0.2, 0.1], 0.3)
    v = Unit(sig, [0.1, 0.5, -0.4], -0.2)
    h2 = Unit(LINKS["h3+0.3h2"](), [0.0, 1.0, 0.0], 0.0)
    for name, (f1, f2, x, y) in {"relu·relu": (sig, sig, u, v), "relu′·relu′": (dsig, dsig, u, v),
                                 "leaky·(h3+0.3h2)": (lsig, h2.f, u, h2),
                                 "erf′·erf′": (edsig, edsig, u, v)}.items():
        t = time.time()
        a = expect2(f1, x.al, x.be, f2, y.al, y.be, corr(x, y))
        b = expect2(f1, x.al, x.be, f2, y.al, y.be, corr(x, y), nested=True)
        err = abs(a - b) / abs(b)
        print(f"  nested check {name}: rel. diff {ctx.nstr(err, 3)} ({time.time() - t:.0f} s)", flush=True)
        assert err < ctx.mpf(10) ** -25


if __name__ == "__main__":
    run(check_nested="--check-nested" in sys.argv)
