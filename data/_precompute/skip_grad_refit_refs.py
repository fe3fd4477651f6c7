"""Reference gradients and refit risks of skip students (certify.skip), pure mpmath.

Independent of popdyn and certify: the states are the ``CERTIFY_CASES`` of
``data/_precompute/skip_refs.py`` (float64 inputs, stored here again as exact hex strings) and
every expectation is that script's nested mpmath quadrature ``pair`` (closed-form inner
expectations for polynomial and piecewise-linear factors, kinks split), at 45 digits.

* ``grad``: ∂L/∂W and ∂L/∂b of L = ½E[(f − y)²], f = s Σ_j a_j σ(w_j·x + b_j) + v·x + c, by
  central differences with step h = 1e−12 of the part of the 45-digit quadrature loss that
  depends on (w_j, b_j) (no Stein identity, no formula of the code under test): truncation
  h²|∂³L|/6 ~ 1e−25, quadrature noise ~1e−43/h ~ 1e−31; ∂L/∂a, ∂L/∂c, ∂L/∂v exactly, L being a
  quadratic in (a, c, v) with pair-expectation coefficients (∂L/∂v_k = E[(f − y) x_k]).
* ``refit``: the frozen-feature refit with the skip frozen (target y − v·x; head a′ and
  intercept refitted): G_ij = s²(E[σ_iσ_j] − E[σ_i]E[σ_j]), g_i = s(E[σ_i(y − v·x)] −
  E[σ_i]E[y]), V = Var(y − v·x), each entry a quadrature; ``unrestricted`` = V − gᵀG⁻¹g
  (mpmath LU), ``bounded`` at budget B (stored) = min over ‖a′‖ ≤ B, by the secular equation
  ‖(G + μI)⁻¹g‖ = B (mp.findroot) when ‖G⁻¹g‖ > B; ``same_budget`` the same at B = ‖a‖ (the
  current head's norm, exact in mpmath).

Run:  python data/_precompute/skip_grad_refit_refs.py [--refit-only] [case indices]  (minutes per case;
each case into data/refs/skip_grad_refit_refs.json.part<i>, then ``--merge``).
"""
import copy
import json
import os
import sys

import mpmath as mp

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import skip_refs as R  # noqa: E402  (pure mpmath: the shared quadrature)

mp.mp.dps = 45
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "refs",
                   "skip_grad_refit_refs.json")
H = mp.mpf(10) ** -12
GRAD_CASES = (0, 1, 2, 3, 4, 5)        # every case (relu, leaky relu, tanh, gelu, erf)
BUDGET = 0.25                           # the bounded refit's B (a float64)


def _mp_case(cs):
    out = copy.deepcopy(cs)
    for k in ("a", "b", "v"):
        out[k] = [mp.mpf(x) for x in cs[k]]
    out["W"] = [[mp.mpf(x) for x in row] for row in cs["W"]]
    out["c"] = mp.mpf(cs["c"])
    return out


def _unit_part(cs, j):
    """The part of L that depends on neuron j's (w_j, b_j), with a_j, c, v fixed:
    ½(s²a_j²E[σ_j²] + 2s²a_j Σ_{l≠j} a_l E[σ_jσ_l] + 2s a_j E[σ_j v·x] + 2s a_j c E[σ_j])
    − s a_j Σ_t κ_t E[σ_j y_t]  (every other term of L is constant in (w_j, b_j))."""
    sig, kink, m, s, a, W, b, v, c, psi, tk, U, kap, beta = _setup(cs)
    z0 = mp.mpf(0)
    val = s * s * a[j] * a[j] * R.pair(sig, W[j], b[j], kink, sig, W[j], b[j], kink) / 2
    for l in range(m):
        if l != j:
            val += s * s * a[j] * a[l] * R.pair(sig, W[j], b[j], kink, sig, W[l], b[l], kink)
    val += s * a[j] * R.pair(sig, W[j], b[j], kink, R.ident, v, z0, False)
    val += s * a[j] * c * R.pair(sig, W[j], b[j], kink, R.one, W[j], z0, False)
    for q in range(len(U)):
        val -= s * a[j] * kap[q] * R.pair(sig, W[j], b[j], kink, psi, U[q], beta[q], tk)
    return val


def fd_grad(cs):
    """∂L/∂W and ∂L/∂b by central differences of :func:`_unit_part` (step H); ∂L/∂a, ∂L/∂c,
    ∂L/∂v exactly: L is a quadratic polynomial in (a, c, v) whose coefficients are pair
    expectations, so ∂L/∂a_j = s E[(f − y) σ_j], ∂L/∂c = E[f − y], ∂L/∂v = E[(f − y) x]."""
    sig, kink, m, s, a, W, b, v, c, psi, tk, U, kap, beta = _setup(cs)
    z0 = mp.mpf(0)
    d = len(v)
    base = _mp_case(cs)

    def d_at(j, setter):
        p, q = copy.deepcopy(base), copy.deepcopy(base)
        setter(p, H)
        setter(q, -H)
        return (_unit_part(p, j) - _unit_part(q, j)) / (2 * H)

    def wset(j, i):
        def f(cc, h):
            cc["W"][j][i] += h
        return f

    def bset(j):
        def f(cc, h):
            cc["b"][j] += h
        return f

    gW = [[d_at(j, wset(j, i)) for i in range(d)] for j in range(m)]
    gb = [d_at(j, bset(j)) for j in range(m)]
    Es = [R.pair(sig, W[j], b[j], kink, R.one, W[j], z0, False) for j in range(m)]
    ga = []
    for j in range(m):
        e = s * a[j] * 0
        for l in range(m):
            e += s * a[l] * R.pair(sig, W[j], b[j], kink, sig, W[l], b[l], kink)
        e += R.pair(sig, W[j], b[j], kink, R.ident, v, z0, False) + c * Es[j]
        for q in range(len(U)):
            e -= kap[q] * R.pair(sig, W[j], b[j], kink, psi, U[q], beta[q], tk)
        ga.append(s * e)
    ey = mp.fsum(kap[q] * R.pair(psi, U[q], beta[q], tk, R.one, U[q], z0, False)
                 for q in range(len(U)))
    gc = mp.fsum(s * a[j] * Es[j] for j in range(m)) + c - ey          # E[v·x] = 0
    return {"a": ga, "b": gb, "W": gW, "v": grad_v_direct(cs), "c": gc}


def _setup(cs):
    sig, kink = R.ACTS[cs["act"]]
    m = len(cs["a"])
    s = mp.mpf(1) if cs["scaling"] == "standard" else mp.mpf(1) / m
    a = [mp.mpf(x) for x in cs["a"]]
    W = [[mp.mpf(x) for x in row] for row in cs["W"]]
    b = [mp.mpf(x) for x in cs["b"]]
    v = [mp.mpf(x) for x in cs["v"]]
    c = mp.mpf(cs["c"])
    t = cs["teacher"]
    psi, tk = (R.LINKS[t["link"]] if t["kind"] == "additive" else R.ACTS[t["activation"]])
    U = [[mp.mpf(x) for x in row] for row in t["U"]]
    kap = [mp.mpf(x) for x in t["weights"]]
    beta = [mp.mpf(x) for x in t["bias"]]
    return sig, kink, m, s, a, W, b, v, c, psi, tk, U, kap, beta


def grad_v_direct(cs):
    """∂L/∂v_k = E[(f − y) x_k] (pair quadratures; E[(v·x) x_k] = v_k, E[c x_k] = 0)."""
    sig, kink, m, s, a, W, b, v, c, psi, tk, U, kap, beta = _setup(cs)
    z0 = mp.mpf(0)
    d = len(v)
    out = []
    for k in range(d):
        ek = [mp.mpf(1) if i == k else z0 for i in range(d)]
        val = v[k]
        for j in range(m):
            val += s * a[j] * R.pair(sig, W[j], b[j], kink, R.ident, ek, z0, False)
        for q in range(len(U)):
            val -= kap[q] * R.pair(psi, U[q], beta[q], tk, R.ident, ek, z0, False)
        out.append(val)
    return out


def refit(cs):
    sig, kink, m, s, a, W, b, v, c, psi, tk, U, kap, beta = _setup(cs)
    z0 = mp.mpf(0)
    k = len(U)
    mu = [R.pair(sig, W[j], b[j], kink, R.one, W[j], z0, False) for j in range(m)]
    G = mp.matrix(m, m)
    for i in range(m):
        for j in range(i, m):
            e = R.pair(sig, W[i], b[i], kink, sig, W[j], b[j], kink)
            G[i, j] = G[j, i] = s * s * (e - mu[i] * mu[j])
    ey = mp.fsum(kap[q] * R.pair(psi, U[q], beta[q], tk, R.one, U[q], z0, False)
                 for q in range(k))
    g = mp.matrix(m, 1)
    for i in range(m):
        esy = mp.fsum(kap[q] * R.pair(sig, W[i], b[i], kink, psi, U[q], beta[q], tk)
                      for q in range(k))
        esv = R.pair(sig, W[i], b[i], kink, R.ident, v, z0, False)
        g[i] = s * (esy - esv - mu[i] * ey)
    ey2 = mp.mpf(0)
    for q in range(k):
        for r in range(q, k):
            e = R.pair(psi, U[q], beta[q], tk, psi, U[r], beta[r], tk)
            ey2 += kap[q] * kap[r] * e * (1 if q == r else 2)
    eyv = mp.fsum(kap[q] * R.pair(psi, U[q], beta[q], tk, R.ident, v, z0, False)
                  for q in range(k))
    V = ey2 - ey * ey - 2 * eyv + mp.fsum(x * x for x in v)    # Var(y − v·x), E[v·x] = 0
    astar = mp.lu_solve(G, g)
    unres = V - (g.T * astar)[0, 0]
    nrm = mp.sqrt(mp.fsum(x * x for x in astar))

    def ball(B):
        if nrm <= B:
            return unres

        def phi(lmu):
            ab = mp.lu_solve(G + mp.exp(lmu) * mp.eye(m), g)
            return mp.sqrt(mp.fsum(x * x for x in ab)) - B
        lmu = mp.findroot(phi, (mp.mpf(-80), mp.mpf(80)), solver="illinois")  # φ decreases in μ
        ab = mp.lu_solve(G + mp.exp(lmu) * mp.eye(m), g)
        return (ab.T * G * ab)[0, 0] - 2 * (g.T * ab)[0, 0] + V

    bounded = ball(mp.mpf(BUDGET))
    same = ball(mp.sqrt(mp.fsum(x * x for x in a)))        # B = ‖a‖ of the current head
    return {"unrestricted": mp.nstr(unres, 35), "bounded": mp.nstr(bounded, 35),
            "same_budget": mp.nstr(same, 35),
            "budget": float(BUDGET).hex(), "variance": mp.nstr(V, 35),
            "unrestricted_head_norm": mp.nstr(nrm, 20)}


def _write(cases):
    with open(OUT, "w") as fh:
        json.dump({"note": __doc__.splitlines()[0], "dps": mp.mp.dps, "h": "1e-12",
                   "cases": dict(sorted(cases.items(), key=lambda t: int(t[0])))}, fh, indent=1)


def main():
    """``python skip_grad_refit_refs.py [i ...]`` computes cases into OUT.part<i>;
    ``--merge`` folds the parts into OUT."""
    if sys.argv[1:] == ["--merge"]:
        cur = {}
        if os.path.exists(OUT):
            with open(OUT) as fh:
                cur = json.load(fh)["cases"]
        d = os.path.dirname(OUT)
        for f in sorted(os.listdir(d)):
            if f.startswith(os.path.basename(OUT) + ".part"):
                with open(os.path.join(d, f)) as fh:
                    cur.update(json.load(fh))
                os.remove(os.path.join(d, f))
        _write(cur)
        return
    args = sys.argv[1:]
    refit_only = "--refit-only" in args          # recompute ``refit``, keep the stored ``grad``
    args = [x for x in args if x != "--refit-only"]
    idx = [int(x) for x in args] or list(range(len(R.CERTIFY_CASES)))
    stored = {}
    if refit_only and os.path.exists(OUT):
        with open(OUT) as fh:
            stored = json.load(fh)["cases"]
    for i in idx:
        cs = R.CERTIFY_CASES[i]
        rec = {"inputs": R._hexed(cs), "refit": refit(cs)}
        print(i, cs["act"], rec["refit"], flush=True)
        if refit_only:
            old = stored[str(i)]
            assert old["inputs"] == rec["inputs"]
            rec = {**old, "refit": rec["refit"]}
        elif i in GRAD_CASES:
            g = fd_grad(cs)
            rec["grad"] = {k: (mp.nstr(x, 30) if not isinstance(x, list) else
                               [mp.nstr(y, 30) if not isinstance(y, list)
                                else [mp.nstr(z, 30) for z in y] for y in x])
                           for k, x in g.items()}
            print(i, "grad", rec["grad"], flush=True)
        with open(OUT + f".part{i}", "w") as fh:
            json.dump({str(i): rec}, fh, indent=1)


if __name__ == "__main__":
    main()
