"""Reference values for the tiny-neuron tanh / silu cases of the certify soak
(tests/certify/test_certify_smooth_tiny.py).

The soak (benchmarks/soak_certify.py, seed 19000) reported 12 bracket "violations" in its cases
39 (silu, abs teacher), 75 (tanh, relu teacher) and 76 (silu, h3+0.3h2 teacher), each with one
neuron of |w| = 1e−7 and bias ±½.  The cause was the reference, not certify: the inner 1-D
quadrature of tests/certify/_ref.py (``inner`` for tanh / silu atoms) split only at the
transition w = −μ/τ = ∓5e6 and missed the Gaussian's mass, so E[σ(w·x + b)] of the tiny neuron
came out ~1e−1341051072608 instead of ≈ σ(b) (now ``_ref._num_inner``, split at 0, ±2, ±8 and
error-checked).  This script stores the corrected references of the three cases (exact float64
inputs as ``float.hex``, copied from the soak's draws; no random draws here), by
data/_precompute/smooth_refs.py ``one`` on tests/certify/_ref.py with the nested trapezoidal
rule for tanh / silu pairs, at the soak's tiny-neuron precision (30 digits, refit threshold 35).

Runtime: about a minute on a loaded core.  Usage: python data/_precompute/smooth_tiny_refs.py
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.append(os.path.join(ROOT, "tests", "certify"))
sys.path.append(HERE)

import smooth_refs as SR  # noqa: E402

PATH = os.path.join(ROOT, "data", "refs", "smooth_tiny_refs.json")
DPS = 30

CASES = [
    ("case39:silu:abs:tiny", "silu", {
        "W": [["0x1.4fffc3fe2e22bp+0", "0x1.4a5b1dadbba33p-6"],
              ["0x1.761e85327b3fep-26", "-0x1.a33071d408667p-24"],
              ["0x1.26ece96bad52ap-4", "0x1.84cb04d0b0984p-1"]],
        "b": ["-0x1.7a896025a3e9cp-1", "0x1.0000000000000p-1", "-0x1.1a698020454dap-1"],
        "a": ["0x1.c56af1525376dp+0", "-0x1.a84c7f895545fp-4", "0x1.bf7e0250a7606p-4"],
        "c": "0x1.59d2224135affp-3",
        "teacher": {"kind": "additive", "U": [["-0x1.09a888a8be373p-1", "0x1.b5afcbb000e67p-1"]],
                    "link": "abs", "kappa": ["0x1.0000000000000p+0"]}}),
    ("case75:tanh:relu:tiny", "tanh", {
        "W": [["0x1.20659d4854d13p+0", "0x1.d6bd88da5a3b2p+0"],
              ["0x1.c76c644f3151ap-25", "0x1.6c29c61e12287p-24"]],
        "b": ["-0x1.ff9fada892d75p-2", "-0x1.0000000000000p-1"],
        "a": ["-0x1.45ffd344bd8e2p-2", "0x1.3573f8a78c1d3p+0"],
        "c": "0x1.2b5716b2b0b14p-2",
        "teacher": {"kind": "additive", "U": [["0x1.8fc7994fb1af7p-3", "-0x1.f6267fdeb37c1p-1"]],
                    "link": "relu", "kappa": ["0x1.0000000000000p+0"]}}),
    ("case76:silu:h3+0.3h2:tiny", "silu", {
        "W": [["-0x1.0318215786901p+0", "0x1.360fad9b6db8fp+1"],
              ["-0x1.207dff825426cp-25", "-0x1.948cbce78a440p-24"],
              ["0x1.acff673a90bb4p-2", "0x1.90791630ac5a4p-2"]],
        "b": ["0x1.e906709b9625bp-3", "0x1.0000000000000p-1", "0x1.3b7fc33e7af66p-1"],
        "a": ["0x1.21f2afd9ce4c8p-2", "0x1.9b9e841ea84dfp-4", "0x1.dfeb942bcb225p-3"],
        "c": "-0x1.4b99310768f93p-1",
        "teacher": {"kind": "additive", "U": [["-0x1.59361b7108f83p-1", "0x1.7a1e2c5ff0174p-1"]],
                    "link": "h3+0.3h2", "kappa": ["0x1.0000000000000p+0"]}}),
]


def main():
    SR.DPS = DPS
    SR.TRS_DPS = DPS + 5
    SR.R.RULE = "trapezoid"
    SR.s = lambda x: SR.ctx.nstr(x, DPS + 10)
    out = []
    t0 = time.time()
    for name, act, inp in CASES:
        t = time.time()
        out.append(SR.one(name, act, inp))
        print(f"{name}: {time.time() - t:.0f} s", flush=True)
    with open(PATH + ".tmp", "w") as fh:
        json.dump({"source": "data/_precompute/smooth_tiny_refs.py", "dps": DPS,
                   "rule": "trapezoid", "runtime_s": round(time.time() - t0), "cases": out},
                  fh, indent=1)
    os.replace(PATH + ".tmp", PATH)


if __name__ == "__main__":
    main()
