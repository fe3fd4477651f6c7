"""Reference values for the central paper's teacher links and Table 1 teachers
(tests/popdyn/test_paper_teachers.py).

Kumar (arXiv 2609.39408), eq. (7): g_v(t) = v^{-7/2}(t^3 - 3vt)exp(-(1/v - 1)t^2/2), g_mu =
sum_l w_l g_{v_l}; App. A: the 13 scalar raw links of Table 1 and the six product gates.
Everything here is mpmath quadrature at DPS digits of the defining integrals (tanh-sinh over
(-inf, -3], [-3, 0], [0, 3], [3, inf), plus the kink at 0), with the functions written in this
file from the paper's definitions and He_n from mpmath's physicists' ``hermite``
(He_n(z) = 2^{-n/2} H_n(z/sqrt 2)). No popdyn code is imported. Inputs are exact rationals
(v, weights) or decimal strings; outputs are 32-significant-digit strings.

Stored:
* ``gv``: for v in {1/3, 1/2, 2/3, 1, 2/5, 7/10}: <g_v, h_n> (n = 0..9), E[g_v^2],
  E[g_v'^2] (derivative by mpmath.diff), g_v(z) at a few points;
* ``gmu``: the Table 1 mixtures (g_1 + g_{1/3})/2 and 0.2g_{0.4} + 0.3g_{0.7} + 0.5g_1, and the
  signed combination g_{1/2} - g_{1/3}/2: E[g^2], E[g], <g, h_n> (n = 0..7);
* ``raw``: for each Table 1 label, E[q] and E[q^2] of its raw link q (additive) or gate g
  (products);
* ``uniform``: g_mu for mu uniform on [1/3, 1]: E[g^2] = (3/2)^2 double integral of
  K((1-v)(1-w)) = 3(2+3t)/(1-t)^{7/2} over [1/3, 1]^2, <g, h_n> (n = 3, 5, 7) as the v-integral
  of the t-quadratures <g_v, h_n> (nested quadrature, 24 digits), g(z) as a v-integral.

Usage: python data/_precompute/paper_links_refs.py   (about 5 minutes on a loaded core)
"""
from __future__ import annotations

import json
import os
import time

import mpmath

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, "data", "refs", "paper_links_refs.json")
DPS = 34
mp = mpmath.MPContext()
mp.dps = DPS


def h(n, z):
    return mp.hermite(n, z / mp.sqrt(2)) / mp.sqrt(mp.mpf(2) ** n * mp.factorial(n))


def rat(s):
    if "/" in s:
        a, b = s.split("/")
        return mp.mpf(int(a)) / int(b)
    return mp.mpf(s)


def gv(v):
    vm = rat(v) if isinstance(v, str) else mp.mpf(v)
    return lambda t: (vm ** (-mp.mpf(7) / 2) * (t ** 3 - 3 * vm * t)
                      * mp.exp(-(1 / vm - 1) * t * t / 2))


def gmu(atoms):
    fs = [(rat(w), gv(v)) for w, v in atoms]
    return lambda t: mp.fsum(w * f(t) for w, f in fs)


def E(f):
    return mp.quad(lambda z: f(z) * mp.npdf(z), [-mp.inf, -3, 0, 3, mp.inf])


def s(x):
    return mp.nstr(x, 32, min_fixed=-mp.inf, max_fixed=mp.inf) if x != 0 else "0"


TWO = [("1/2", "1/3"), ("1/2", "1")]
THREE = [("1/5", "2/5"), ("3/10", "7/10"), ("1/2", "1")]
SIGNED = [("1", "1/2"), ("-1/2", "1/3")]
silu = lambda z: z / (1 + mp.exp(-z))  # noqa: E731
RAW = {
    "|z|": abs, "st": lambda z: z, "g_{1/2}": gv("1/2"), "g_{1/3}": gv("1/3"),
    "g_{2/3}": gv("2/3"), "GELU(s)t": lambda z: z * mp.ncdf(z), "h_2": lambda z: h(2, z),
    "h_3": lambda z: h(3, z), "h_3 + 0.1h_5": lambda z: h(3, z) + mp.mpf(0.1) * h(5, z),
    "h_3 + 0.1sin": lambda z: h(3, z) + mp.mpf(0.1) * mp.sin(z), "h_4": lambda z: h(4, z),
    "g_1 + g_{1/3}": gmu(TWO), "h_2(s)t": lambda z: h(2, z), "ReLU": lambda z: max(z, 0),
    "ReLU(s)t": lambda z: max(z, 0), "Raw additive SiLU": silu, "Centered additive SiLU": silu,
    "SiLU(s)t": silu, "sin z": mp.sin, "tanh(s)t": mp.tanh, "Three-scale mixture": gmu(THREE),
}
POINTS = ["-3.125", "-0.375", "0", "0.875", "2.5"]


def main():
    t0 = time.time()
    out = {"dps": DPS, "note": "tests/popdyn/test_paper_teachers.py; "
                               "data/_precompute/paper_links_refs.py", "gv": {}, "gmu": {},
           "raw": {}}
    for v in ["1/3", "1/2", "2/3", "1", "2/5", "7/10"]:
        f = gv(v)
        out["gv"][v] = {
            "coeffs": [s(E(lambda t: f(t) * h(n, t))) for n in range(10)],
            "second": s(E(lambda t: f(t) ** 2)),
            "dsecond": s(E(lambda t: mp.diff(f, t) ** 2)),
            "values": {z: s(f(mp.mpf(z))) for z in POINTS},
        }
        print(v, time.time() - t0, flush=True)
    for key, atoms in (("two", TWO), ("three", THREE), ("signed", SIGNED)):
        f = gmu(atoms)
        out["gmu"][key] = {"atoms": atoms, "second": s(E(lambda t: f(t) ** 2)), "mean": s(E(f)),
                           "coeffs": [s(E(lambda t: f(t) * h(n, t))) for n in range(8)]}
        print(key, time.time() - t0, flush=True)
    for label, q in RAW.items():
        out["raw"][label] = {"mean": s(E(q)), "second": s(E(lambda z: q(z) ** 2))}
    print("raw", time.time() - t0, flush=True)
    K = lambda t: 3 * (2 + 3 * t) / (1 - t) ** (mp.mpf(7) / 2)  # noqa: E731
    third = mp.mpf(1) / 3
    e2 = mp.quad(lambda v, w: K((1 - v) * (1 - w)), [third, 1], [third, 1]) * mp.mpf(9) / 4
    gu = lambda t: mp.quad(lambda v: gv(v)(t), [third, 1]) * mp.mpf(3) / 2  # noqa
    uni = {"second": s(e2), "values": {z: s(gu(mp.mpf(z))) for z in POINTS}, "coeffs": {}}
    with mp.workdps(24):
        for n in (3, 5, 7):
            cn = mp.quad(lambda v: E(lambda t: gv(v)(t) * h(n, t)), [third, 1])
            uni["coeffs"][str(n)] = s(cn * mp.mpf(3) / 2)
    out["uniform"] = uni
    print("uniform", time.time() - t0, flush=True)
    with open(PATH, "w") as fh:
        json.dump(out, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


if __name__ == "__main__":
    main()
