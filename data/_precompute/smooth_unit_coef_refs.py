"""Hermite coefficients of single smooth units by direct 1-D quadrature, for
tests/certify/test_certify_smooth.py::test_unit_coefficients_against_quadrature, stored in
data/refs/smooth_unit_coef_refs.json.

For σ ∈ {erf, gelu, tanh, silu}, a unit t = αz + β (z ~ N(0, 1)) and n ∈ {0, 17}:
c_n = E[σ(αz + β) h_n(z)], d_n = E[σ′(αz + β) h_n(z)] with the orthonormal probabilists'
Hermite polynomial h_n(z) = He_n(z)/√(n!) written as 2^(−n/2) H_n(z/√2)/√(n!) (mpmath's
physicists' ``hermite``), by ``mp.quad`` (tanh–sinh) on (−∞, ∞) split at z0 = −β/α and
z0 + k/α, k ∈ {−4, −1, 1, 4}, at 40 digits.  Pure mpmath: no certify or popdyn code.  The
inputs (α, β) are stored as ``float.hex``; values as 35-digit decimals.

Usage: python data/_precompute/smooth_unit_coef_refs.py      (about half a minute on an idle core)
"""
from __future__ import annotations

import json
import os

import mpmath as mp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, "data", "refs", "smooth_unit_coef_refs.json")
SCHEMA = "popdyn.smooth_unit_coef_refs/1"
DPS = 40
UNITS = [("erf", 20.0, -0.36), ("gelu", 6.0, 0.3), ("tanh", 0.9, 0.5), ("silu", 1.2, -0.8)]
ORDERS = (0, 17)


def functions(kind):
    """(σ, σ′) as mpmath functions."""
    sig = {"erf": mp.erf, "gelu": lambda t: t * mp.ncdf(t), "tanh": mp.tanh,
           "silu": lambda t: t / (1 + mp.exp(-t))}[kind]
    dsig = {"erf": lambda t: 2 / mp.sqrt(mp.pi) * mp.exp(-t * t),
            "gelu": lambda t: mp.ncdf(t) + t * mp.npdf(t),
            "tanh": lambda t: 1 - mp.tanh(t) ** 2,
            "silu": lambda t: 1 / (1 + mp.exp(-t)) * (1 + t * (1 - 1 / (1 + mp.exp(-t))))}[kind]
    return sig, dsig


def coefficients(kind, al, be, n, dps=DPS):
    """(c_n, d_n) of the unit σ(αz + β) by mp.quad at ``dps`` digits."""
    sig, dsig = functions(kind)
    with mp.workdps(dps):
        z0 = -mp.mpf(be) / al
        pts = [-mp.inf] + [z0 + mp.mpf(k) / al for k in (-4, -1, 0, 1, 4)] + [mp.inf]
        hn = lambda z: mp.hermite(n, z / mp.sqrt(2)) * mp.mpf(2) ** (-mp.mpf(n) / 2)  # noqa: E731
        norm = mp.sqrt(mp.factorial(n))
        c = mp.quad(lambda z: sig(al * z + be) * hn(z) * mp.npdf(z), pts) / norm
        d = mp.quad(lambda z: dsig(al * z + be) * hn(z) * mp.npdf(z), pts) / norm
        return +c, +d


def main():
    cases = []
    for kind, al, be in UNITS:
        for n in ORDERS:
            c, d = coefficients(kind, al, be, n)
            cases.append({"kind": kind, "alpha": float(al).hex(), "beta": float(be).hex(), "n": n,
                          "c": mp.nstr(c, 35, strip_zeros=False),
                          "d": mp.nstr(d, 35, strip_zeros=False)})
            print(kind, al, be, n, cases[-1]["c"], cases[-1]["d"], flush=True)
    doc = {"schema": SCHEMA, "dps": DPS,
           "about": "Hermite coefficients c_n = E[s(az+b) h_n(z)], d_n = E[s'(az+b) h_n(z)] by "
                    "mp.quad at 40 digits; data/_precompute/smooth_unit_coef_refs.py",
           "cases": cases}
    with open(PATH, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {PATH}")


if __name__ == "__main__":
    main()
