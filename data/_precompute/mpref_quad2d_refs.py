"""Plain 2-D quadrature reference of one smooth pair moment for the self-check of the mpmath
reference (tests/test_mpref_selfcheck.py::test_smooth_pair_against_plain_2d_quadrature),
stored in data/refs/mpref_quad2d_refs.json.

The moment E[tanh′(w1·x + b1) SiLU(w2·x + b2)], x ~ N(0, I_2), as mpmath's own 2-D tanh–sinh
quadrature (``mp.quad`` over [−10, 0, 10]², Gaussian tails beyond |x_i| = 10 below 1e−22) of
the integrand in the original coordinates at 15 digits — no lattice rule, no plane reduction,
nothing of tests/_mpref.py.  The inputs are stored as ``float.hex`` and the test checks that
they are the floats it uses; the value exactly (mpf mantissa and exponent) and as a decimal.

Usage: python data/_precompute/mpref_quad2d_refs.py      (about ten seconds on an idle core)
"""
from __future__ import annotations

import json
import os

import mpmath as mp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, "data", "refs", "mpref_quad2d_refs.json")
SCHEMA = "popdyn.mpref_quad2d_refs/1"
DPS = 15
CASE = {"w1": [1.3, 0.4], "b1": 0.7, "w2": [-0.5, 2.1], "b2": -0.3}


def quad2d(w1, b1, w2, b2, dps=DPS):
    """E[tanh′(w1·x + b1) · SiLU(w2·x + b2)] by mp.quad in 2-D at ``dps`` digits."""
    with mp.workdps(dps):
        def f(x, y):
            u1 = w1[0] * x + w1[1] * y + b1
            u2 = w2[0] * x + w2[1] * y + b2
            return (1 - mp.tanh(u1) ** 2) * u2 / (1 + mp.exp(-u2)) * mp.npdf(x) * mp.npdf(y)

        return mp.quad(f, [-10, 0, 10], [-10, 0, 10])


def _hex(x):
    return [float(v).hex() for v in x] if isinstance(x, list) else float(x).hex()


def main():
    q = quad2d(**CASE)
    man, ex = q.man_exp
    doc = {"schema": SCHEMA, "dps": DPS,
           "about": "E[tanh'(w1.x + b1) silu(w2.x + b2)] by mp.quad over [-10, 0, 10]^2 at 15 "
                    "digits; data/_precompute/mpref_quad2d_refs.py",
           "cases": [{"name": "tanh'-silu", "inputs": {k: _hex(v) for k, v in CASE.items()},
                      "value": mp.nstr(q, 20, strip_zeros=False),
                      "value_exact": {"man": str(int(man)), "exp": int(ex)}}]}
    with open(PATH, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(f"wrote {PATH}: {doc['cases'][0]['value']}")


if __name__ == "__main__":
    main()
