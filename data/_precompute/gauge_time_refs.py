"""30-digit reference specialization times of the bias-free single ReLU neuron
(tests/popdyn/test_gauge_rigorous.py), stored in data/refs/gauge_time_refs.json.

Independent of popdyn and certify (pure mpmath): the *unreduced* gradient flow of the neuron in
the plane of (u, θ0), state (a, w1, w2), loss L = ½E[(a relu(w·x) − relu(u·x))²] with
E[relu(w·x)²] = |w|²/2, E[relu(w·x) relu(u·x)] = (|w| sin φ + (π − φ) w1)/(2π) and its gradient
((π − φ) u + sin φ ŵ)/(2π) (arc-cosine kernel; the feature-ownership paper, docs/design.md §7),
integrated by
mpmath.odefun at 30 digits; the time is the root of cos(w, u) = τ on the dense solution
(bracketed, bisected, then the secant method to 10^−56).  The start: a0 = sqrt(c0·ratio),
|w0| = sqrt(c0/ratio), cos(w0, u) = cos0.

The inputs are the exact float64 values the tests pass (stored as ``float.hex``): the fixed
quick-regime points of ``test_rigorous_times_in_the_quick_regimes_and_both_gauges`` and the
examples hypothesis draws for ``test_rigorous_time_contains_independent_reference`` (the
suite's derandomized profile of tests/conftest.py: the draws are a function of the test's
source; this script runs that test once with a recorder to collect them).  Each time is stored
exactly (mpf mantissa and exponent) and as a 30-digit decimal.  A test whose inputs are not in
the file (other draws: another hypothesis version, another rounding of np.exp) computes the
reference itself with :func:`ref_time`, the same function.

Usage: python data/_precompute/gauge_time_refs.py      (about a minute on an idle core)
"""
from __future__ import annotations

import json
import os
import sys

import mpmath as mp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, "data", "refs", "gauge_time_refs.json")
SCHEMA = "popdyn.gauge_time_refs/1"
DPS = 30


def ref_field(a, w1, w2):
    """Right-hand side (ȧ, ẇ1, ẇ2) of the gradient flow (mpf arguments)."""
    nw = mp.sqrt(w1 * w1 + w2 * w2)
    phi = mp.acos(w1 / nw)
    sphi = mp.sin(phi)
    g = (nw * sphi + (mp.pi - phi) * w1) / (2 * mp.pi)
    gw1 = ((mp.pi - phi) + sphi * w1 / nw) / (2 * mp.pi)
    gw2 = (sphi * w2 / nw) / (2 * mp.pi)
    return [-(a * nw * nw / 2 - g), -(a * a * w1 / 2 - a * gw1), -(a * a * w2 / 2 - a * gw2)]


def ref_time(c0, ratio, cos0, tau, dps=DPS):
    """First flow time with cos(w, u) = τ, as an mpf at ``dps`` digits."""
    with mp.workdps(dps):
        a0 = mp.sqrt(mp.mpf(c0) * mp.mpf(ratio))
        wn = mp.sqrt(mp.mpf(c0) / mp.mpf(ratio))
        c = mp.mpf(cos0)
        sol = mp.odefun(lambda t, y: ref_field(*y), 0, [a0, wn * c, wn * mp.sqrt(1 - c * c)])

        def s(t):
            y = sol(t)
            return y[1] / mp.sqrt(y[1] ** 2 + y[2] ** 2) - tau

        lo, hi = mp.mpf(0), mp.mpf("0.01")
        while s(hi) < 0:
            lo, hi = hi, hi * 1.5
        for _ in range(12):           # bisection to a good start, then the secant method
            m = (lo + hi) / 2
            lo, hi = (m, hi) if s(m) < 0 else (lo, m)
        return mp.findroot(s, (lo, hi), solver="secant", tol=mp.mpf(10) ** (-2 * dps + 4))


def key(c0, ratio, cos0, tau):
    """The exact float64 inputs as a tuple of hex strings."""
    return tuple(float(x).hex() for x in (c0, ratio, cos0, tau))


def load():
    """{key: mpf} of the stored times (exact), {} when the file is absent."""
    if not os.path.exists(PATH):
        return {}
    with open(PATH) as fh:
        doc = json.load(fh)
    if doc.get("schema") != SCHEMA or doc.get("dps") != DPS:
        raise ValueError(f"{PATH}: expected schema {SCHEMA!r} at dps {DPS}")
    out = {}
    for c in doc["cases"]:
        i = c["inputs"]
        man, ex = int(c["T_exact"]["man"]), int(c["T_exact"]["exp"])
        with mp.workprec(max(53, man.bit_length() + 1)):
            out[(i["c0"], i["ratio"], i["cos0"], i["tau"])] = mp.ldexp(mp.mpf(man), ex)
    return out


def _inputs():
    """{inputs: time} for the fixed points and the hypothesis draws of
    tests/popdyn/test_gauge_rigorous.py (the draws recorded by running that test once)."""
    import numpy as np

    tests = os.path.join(ROOT, "tests")
    # the checkout's popdyn / certify first (tests/certify must not shadow the package)
    sys.path[:0] = [ROOT, os.path.join(tests, "popdyn"), tests]
    import conftest  # noqa: F401  (the suite's hypothesis profile: derandomized)
    import test_gauge_rigorous as T

    vals = {}

    def record(c0, ratio, cos0, tau):
        k = (c0, ratio, cos0, tau)
        if k not in vals:
            vals[k] = ref_time(c0, ratio, cos0, tau)
            print(key(*k), mp.nstr(vals[k], DPS), flush=True)
        return vals[k]

    for ratio in (16.0, 1 / 16):
        record(1e-5, ratio, 1 / np.sqrt(10), 0.5)
    real = T._ref_time
    T._ref_time = record
    try:
        T.test_rigorous_time_contains_independent_reference()
    finally:
        T._ref_time = real
    return vals


def main():
    cases = []
    for (c0, ratio, cos0, tau), t in _inputs().items():
        man, ex = t.man_exp
        cases.append({"inputs": dict(zip(("c0", "ratio", "cos0", "tau"), key(c0, ratio, cos0, tau))),
                      "T": mp.nstr(t, DPS, strip_zeros=False),
                      "T_exact": {"man": str(int(man)), "exp": int(ex)}})
    doc = {"schema": SCHEMA, "dps": DPS,
           "about": "first flow time with cos(w, u) = tau of the bias-free single relu neuron "
                    "(unreduced flow, mpmath.odefun at 30 digits); "
                    "data/_precompute/gauge_time_refs.py",
           "cases": cases}
    with open(PATH, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(f"wrote {len(cases)} times to {PATH}")


if __name__ == "__main__":
    main()
