"""Stored references for tests/certify/test_certify_tiny.py's alignment test with degenerate
units: the matrix B = E[σ'(w_i·x + b_i) σ'(w_j·x + b_j)] of a two-unit student with one tiny /
nearly collinear / far-threshold unit (tests/certify/_ref.py, 2-D Gaussian quadrature, working
precision 65 digits).  The test builds the AGOP M = Wᵀ(aaᵀ∘B)W from it and its spectrum and
alignment score in mpmath at 62 digits, as before.

Until 0.6.0 the test computed B live (``R.moment_matrices``, which also computed the unused C;
about 45 s of the suite's single-core time); it now loads B from
data/refs/alignment_cases_refs.json.

Cases.  Exactly the cases the former hypothesis test checked: its two explicit ``@example``
decorators (seeds 11 and 12) and the example hypothesis 6.170.17 drew under the suite's
derandomized profile (tests/conftest.py), recorded from a run of the former test file.  A draw
is the (W, b) the test's ``np.random.default_rng(seed)`` gave (W ~ 0.6 N(0, 1)^{2×3},
b ~ 0.6 N(0, 1)²; numpy 2.4.6), the mode and the activation; row 1 is rewritten by the mode
(tests/certify/_units.py ``degenerate``), here in plain Python floats (``math.fsum``,
``math.sqrt``: correctly rounded, no BLAS kernel).  Heads a = (0.9, −1.3), c = 0, negative
slope 1/8.  Every float64 input is stored as ``float.hex``; the test feeds exactly those floats
to the code under test.

Method (independent of popdyn and certify): ``R.pair(σ', w_i, b_i, σ', w_j, b_j)`` under
``R.ctx.workdps(65)``, exactly the calls ``R.moment_matrices(S, p, None, dps=50)`` makes for B;
stored with 80 significant digits, which read back under ``workdps(65)`` give exactly the
computed mpf (checked before writing).

Runtime: about 40 s on one core.  Usage: python data/_precompute/alignment_cases_refs.py
"""
from __future__ import annotations

import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "certify"))

import _ref as R  # noqa: E402

PATH = os.path.join(ROOT, "data", "refs", "alignment_cases_refs.json")
WORK_DPS = 65                      # R.moment_matrices(..., dps=50)
DIGITS = 80
SLOPE = 0.125
A = [0.9, -1.3]

# (seed, W, b, mode, activation): the 2 former @examples, then the hypothesis draw (its seed
# was not recorded; its W, b are)
DRAWS = [
    (11, [[0.0205156603519105, 0.815848524185977, 0.7348326471515594],
          [-0.3061842460726005, -0.17878170666386825, -0.3164305158200551]],
     [0.3418358145431761, -0.033638663427370555], "tiny", "relu"),
    (12, [[-0.004096067919313907, 0.6276859753829415, 0.44495305277308966],
          [0.43437392498999433, 0.9712657340004458, -0.7233348855877973]],
     [-0.37617328264582395, -0.7923979269630751], "huge", "leaky_relu"),
    (None, [[0.07543813265603598, -0.07926291797478113, 0.3842535902659692],
            [0.06294007029182382, -0.32140162389666654, 0.21695703294569083]],
     [0.7824000270780823, 0.5682485778775452], "random", "relu"),
]


def _norm(v):
    return math.sqrt(math.fsum(x * x for x in v))


def degenerate(W, b, i, mode):
    """tests/certify/_units.py ``degenerate`` in plain Python floats (new lists)."""
    W = [list(r) for r in W]
    b = list(b)
    w0 = W[0] if i != 0 else W[1]
    n0 = _norm(w0) or 1.0
    sign = 1.0 if b[i] >= 0 else -1.0
    if mode == "tiny":
        W[i] = [1e-9 * x / n0 for x in w0]
        b[i] = 0.6 * sign
    elif mode == "tiny3":
        W[i] = [1e-3 * x / n0 for x in w0]
        b[i] = 0.9 * sign
    elif mode == "collinear":
        W[i] = w0[:-1] + [w0[-1] + 1e-7 * n0]
        b[i] = b[0] if i != 0 else b[1]
    elif mode == "huge":
        b[i] = -1e4 * _norm(W[i])
    elif mode != "random":
        raise ValueError(mode)
    return W, b


def hexs(a):
    if isinstance(a, (list, tuple)):
        return [hexs(v) for v in a]
    return float(a).hex()


def dec(x):
    s = R.ctx.nstr(x, DIGITS, min_fixed=-5, max_fixed=5)
    assert R.ctx.mpf(s) == x, (s, x)
    return s


def one(draw):
    seed, W0, b0, mode, act = draw
    W, b = degenerate(W0, b0, 1, mode)
    dact = R.derivative(R.activation(act, SLOPE))
    with R.ctx.workdps(WORK_DPS):
        B = [[None, None], [None, None]]
        for i in range(2):
            for j in range(i, 2):
                B[i][j] = B[j][i] = R.pair(dact, W[i], b[i], dact, W[j], b[j])
        ref = {"B": [[dec(B[i][j]) for j in range(2)] for i in range(2)]}
    return {"draw": {"seed": seed, "W": hexs(W0), "b": hexs(b0), "mode": mode, "activation": act},
            "inputs": {"a": hexs(A), "W": hexs(W), "b": hexs(b), "c": hexs(0.0)}, "ref": ref}


def main():
    t0 = time.time()
    out = {"generator": "data/_precompute/alignment_cases_refs.py",
           "reference": "tests/certify/_ref.py pair (B of moment_matrices(dps=50))",
           "work_dps": WORK_DPS, "digits": DIGITS, "negative_slope": SLOPE, "cases": []}
    for k, dr in enumerate(DRAWS):
        out["cases"].append(one(dr))
        print(f"case {k} ({dr[3]}, {dr[4]}) {time.time() - t0:.1f} s", flush=True)
    with open(PATH, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"wrote {PATH} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
