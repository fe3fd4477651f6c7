"""30-digit mpmath references for popdyn's Hermite coefficients and Mehler sums.

Writes ``data/refs/hermite_refs.json``, read by ``tests/popdyn/test_hermite.py``.

Independent of popdyn: nothing from ``popdyn`` is imported; the activations, their derivatives
and the normalized Hermite polynomials are re-implemented in mpmath.

* ``coeffs``: S[n] = E[sigma(al z + be) h_n(z)], Dd[n] = E[sigma' h_n], Dd2[n] = E[al sigma'' h_n],
  n = 0..40, for silu, gelu (exact t Phi(t)), tanh, erf(t) at several (al, be) with |al|, |be| <= 5.
  Integrals over z in [-17, 17] (outside, |h_n phi| <= 0.44 e^{-z^2/4} |.| < 1e-31) by a composite
  Gauss-Legendre rule (mpmath's nodes, 24 per panel) whose panel width resolves both sigma's
  complex singularities (distance pi/(2 al) for tanh) and h_n; a second, finer rule (panels x0.75)
  gives the resolution check stored as ``resolution``.  Entries n in {0, 1, 7} are also checked
  against ``mpmath.quad`` (tanh-sinh, split at 0.5-spaced breakpoints) when ``--check-quad``.
* ``pairs``: E[F_i(al_i Z1 + be_i) G_j(al_j Z2 + be_j)] for correlated standard (Z1, Z2) with
  correlation rho in {0, 0.5, -0.9, 0.999, 1}: with Z2 = rho Z1 + s Z3 the inner Z3-integral is
  done by the same composite Gauss-Legendre rule (nested 2-D quadrature, no closed forms) and
  the outer one too; rho = 0 and rho = 1 are 1-D.  F, G are sigma (moment "C"), sigma' ("B"),
  al sigma'' for i with sigma for j ("A").  Again a finer rule gives ``resolution``.

Source: docs/design.md §2, §3.  Runtime: about 35 minutes wall / 17 minutes CPU on one core (mpmath
without gmpy; the nested tanh pairs dominate), the ``--check-quad`` checks included.
Usage: python data/_precompute/hermite_refs.py [--check-quad]
"""
from __future__ import annotations

import json
import os
import sys
import time

import mpmath as mp
from mpmath.calculus.quadrature import GaussLegendre

mp.mp.dps = 30
LZ = mp.mpf(17)  # coefficient integrals
LP = mp.mpf(12)  # pair integrals (integrands of linear growth times phi: phi(12) < 6e-32)
NREF = 40


def act(name, t, d):
    """sigma^(d)(t) for d = 0, 1, 2."""
    if name == "tanh":
        th = mp.tanh(t)
        return (th, 1 - th * th, -2 * th * (1 - th * th))[d]
    if name == "erf":
        g = 2 / mp.sqrt(mp.pi) * mp.exp(-t * t)
        return (mp.erf(t), g, -2 * t * g)[d]
    if name == "gelu":
        P, p = mp.ncdf(t), mp.npdf(t)
        return (t * P, P + t * p, (2 - t * t) * p)[d]
    if name == "silu":
        s = 1 / (1 + mp.exp(-t))
        return (t * s, s * (1 + t * (1 - s)), s * (1 - s) * (2 + t * (1 - 2 * s)))[d]
    raise ValueError(name)


_GL = None


def gl_nodes():
    global _GL
    if _GL is None:
        _GL = GaussLegendre(mp.mp).calc_nodes(4, mp.mp.prec + 20)  # 24 nodes on [-1, 1]
    return _GL


def rule(L, h):
    """Composite GL nodes/weights on [-L, L] with panels of width <= h."""
    P = int(mp.ceil(2 * L / h))
    xs, ws = [], []
    for k in range(P):
        a = -L + 2 * L * k / P
        b = -L + 2 * L * (k + 1) / P
        half, mid = (b - a) / 2, (a + b) / 2
        for x, w in gl_nodes():
            xs.append(mid + half * x)
            ws.append(half * w)
    return xs, ws


def width(scale, n=0, fine=1.0):
    """Panel width resolving a singularity at distance pi/(2 scale) and h_n's oscillation."""
    d = mp.pi / (2 * max(scale, mp.mpf(1) / 4))
    return fine * min(mp.mpf("0.9") * d, 6 / mp.sqrt(n + 1), mp.mpf(1))


def hvec(z, N):
    h = [mp.mpf(1), z]
    for n in range(1, N):
        h.append((z * h[n] - mp.sqrt(n) * h[n - 1]) / mp.sqrt(n + 1))
    return h[:N + 1]


def coeff_ref(name, al, be, N, fine=1.0):
    al, be = mp.mpf(al), mp.mpf(be)
    xs, ws = rule(LZ, width(al, N, fine))
    out = [[mp.mpf(0)] * (N + 1) for _ in range(3)]
    for z, w in zip(xs, ws):
        t = al * z + be
        f = [act(name, t, 0), act(name, t, 1), al * act(name, t, 2)]
        g = w * mp.npdf(z)
        h = hvec(z, N)
        for s in range(3):
            fs = g * f[s]
            row = out[s]
            for n in range(N + 1):
                row[n] += fs * h[n]
    return out


def _inner_table(fj, a, xi, wi):
    """Per-node data of the inner integral over Z3 (nodes xi, weights wi times phi)."""
    wphi = [w * mp.npdf(v) for v, w in zip(xi, wi)]
    if fj == "tanh":
        ev = [mp.exp(-2 * a * v) for v in xi]
    elif fj == "silu":
        ev = [mp.exp(-a * v) for v in xi]
    else:
        ev = None
    return wphi, ev


def _inner(fj, dj, c, a, xi, tab):
    """int phi(v) G(c + a v) dv with G = sigma_j^(dj), by the rule (xi, tab).

    tanh and silu use exp(-k (c + a v)) = exp(-k c) exp(-k a v) (products of tabulated
    exponentials, exact up to working precision: tanh = (1-P)/(1+P), sech^2 = 4P/(1+P)^2,
    silu = t/(1+P)); other activations are evaluated directly.
    """
    wphi, ev = tab
    if fj == "tanh":
        ec = mp.exp(-2 * c)
        if dj == 0:
            return mp.fsum(w * (1 - ec * e) / (1 + ec * e) for w, e in zip(wphi, ev))
        if dj == 1:
            return mp.fsum(w * 4 * ec * e / (1 + ec * e) ** 2 for w, e in zip(wphi, ev))
    if fj == "silu" and dj == 0:
        ec = mp.exp(-c)
        return mp.fsum(w * (c + a * v) / (1 + ec * e) for v, w, e in zip(xi, wphi, ev))
    return mp.fsum(w * act(fj, c + a * v, dj) for v, w in zip(xi, wphi))


def pair_ref(fi, di, ai, bi, fj, dj, aj, bj, rho, fine=1.0):
    """E[F_i G_j] with F_i = (al_i if di == 2 else 1) sigma_i^(di)(al_i Z1 + be_i), G_j likewise."""
    ai, bi, aj, bj, rho = mp.mpf(ai), mp.mpf(bi), mp.mpf(aj), mp.mpf(bj), mp.mpf(rho)
    ci = ai if di == 2 else 1
    cj = aj if dj == 2 else 1
    if rho == 0:
        xs, ws = rule(LP, width(ai, 0, fine))
        Ei = mp.fsum(w * mp.npdf(z) * act(fi, ai * z + bi, di) for z, w in zip(xs, ws))
        xs, ws = rule(LP, width(aj, 0, fine))
        Ej = mp.fsum(w * mp.npdf(z) * act(fj, aj * z + bj, dj) for z, w in zip(xs, ws))
        return ci * cj * Ei * Ej
    if abs(rho) == 1:
        xs, ws = rule(LP, width(max(ai, aj), 0, fine))
        return ci * cj * mp.fsum(w * mp.npdf(z) * act(fi, ai * z + bi, di)
                                 * act(fj, aj * rho * z + bj, dj) for z, w in zip(xs, ws))
    s = mp.sqrt(1 - rho * rho)
    xo, wo = rule(LP, width(max(ai, aj * abs(rho)), 0, fine))
    xi, wi = rule(LP, width(aj * s, 0, fine))
    tab = _inner_table(fj, aj * s, xi, wi)
    tot = mp.mpf(0)
    for z, w in zip(xo, wo):
        inner = _inner(fj, dj, aj * rho * z + bj, aj * s, xi, tab)
        tot += w * mp.npdf(z) * act(fi, ai * z + bi, di) * inner
    return ci * cj * tot


COEFF_CASES = [(name, al, be) for name in ("silu", "gelu", "tanh", "erf")
               for al, be in ((5.0, 0.3), (1.3, -2.0), (0.4, 4.5), (3.0, -5.0))]
PAIR_CASES = [
    # (moment, (f_i, al_i, be_i), (f_j, al_j, be_j))
    ("C", ("tanh", 5.0, 0.3), ("tanh", 4.0, -1.0)),
    ("B", ("tanh", 5.0, 0.3), ("tanh", 4.0, -1.0)),
    ("A", ("tanh", 5.0, 0.3), ("tanh", 4.0, -1.0)),
    ("C", ("gelu", 2.5, 1.5), ("silu", 4.5, -0.7)),
    ("C", ("erf", 3.0, 0.5), ("silu", 1.5, -2.0)),
]
RHOS = (0.0, 0.5, -0.9, 0.999, 1.0)
DERIV = {"C": (0, 0), "B": (1, 1), "A": (2, 0)}


def main(argv):
    t0 = time.time()
    out = {"meta": {"dps": mp.mp.dps, "source": "data/_precompute/hermite_refs.py",
                    "note": "floats are the exact binary inputs; values as 30-digit strings"},
           "coeffs": [], "pairs": []}
    for name, al, be in COEFF_CASES:
        ref = coeff_ref(name, al, be, NREF)
        ref2 = coeff_ref(name, al, be, NREF, fine=0.75)
        res = max(abs(a - b) for s in range(3) for a, b in zip(ref[s], ref2[s]))
        entry = {"act": name, "al": al, "be": be, "N": NREF, "resolution": float(res),
                 "S": [mp.nstr(v, 30) for v in ref[0]], "Dd": [mp.nstr(v, 30) for v in ref[1]],
                 "Dd2": [mp.nstr(v, 30) for v in ref[2]]}
        if "--check-quad" in argv:
            pts = [-mp.inf] + [mp.mpf(k) / 2 for k in range(-24, 25)] + [mp.inf]
            for n in (0, 1, 7):
                q = mp.quad(lambda z: act(name, al * z + be, 0) * hvec(z, n)[n] * mp.npdf(z), pts)
                assert abs(q - ref[0][n]) < mp.mpf(10) ** -22, (name, al, be, n, q, ref[0][n])
        out["coeffs"].append(entry)
        print(f"coeffs {name} {al} {be}: resolution {float(res):.1e}  [{time.time() - t0:.0f}s]",
              flush=True)
    for mom, (fi, ai, bi), (fj, aj, bj) in PAIR_CASES:
        di, dj = DERIV[mom]
        vals, resl = [], []
        for rho in RHOS:
            v = pair_ref(fi, di, ai, bi, fj, dj, aj, bj, rho)
            v2 = pair_ref(fi, di, ai, bi, fj, dj, aj, bj, rho, fine=0.75)
            vals.append(mp.nstr(v, 30))
            resl.append(float(abs(v - v2)))
        out["pairs"].append({"moment": mom, "i": [fi, ai, bi], "j": [fj, aj, bj],
                             "rho": list(RHOS), "value": vals, "resolution": resl})
        print(f"pair {mom} {fi}{(ai, bi)} x {fj}{(aj, bj)}: resolution {max(resl):.1e}"
              f"  [{time.time() - t0:.0f}s]", flush=True)
    out["meta"]["runtime_s"] = round(time.time() - t0)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "refs", "hermite_refs.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main(sys.argv[1:])
