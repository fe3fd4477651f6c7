"""Build data/refs/grad_contract_refs.json: references for the accuracy contract of the gradient.

What it computes
    The population loss L = ½E[(f − y)²] and its gradient (a, W, b, c) at 30 significant digits
    for two deterministic case sets (x ~ N(0, I_3), conventions of docs/design.md §2 and
    tests/_mpref.py):

    * ``erf``: 20 erf students (m = 3, d = 3, |w_j| uniform in [0.2, 5], b_j uniform in [−5, 5];
      every odd case degenerate: unit 1 parallel to unit 0 up to a factor 1 + 1e−9, or
      antiparallel), against the additive teachers h3, h3+0.3h2, relu and sin in turn (a random
      unit direction).  The float gradient of these students was 1.6e−10 to 2.1e−9 off at the
      default rtol 1e−10 before the gradient had a contract.
    * ``affine``: relu and leaky-relu (slope 0.1) students (m = 3, d = 3) with one nearly affine
      unit (|w_0| = 1e−6 with b_0 = 0.3, or |w_0| = 1e−3 with b_0 = 0.9), against the additive
      teachers h2, h3, h3+0.3h2 and tanh: values that are exact to rounding, on which the loss's
      estimate used to warn ("estimated error 1.65" ... "3.93e+03").

How
    With tests/_mpref.py (pure mpmath, no code from popdyn: Gaussian integrals over the plane of
    every pair of ridge units, 1-D closed forms or a lattice rule inside, tanh–sinh outside).
    Target dps = 30 (working precision 40 digits); every 12th case is recomputed at dps = 40 and
    the build fails unless the two agree to 1e−28 relative to the case's largest output.

Runtime
    About 10 s a case on one core of the 2-core machine (20 erf + 16 affine cases ≈ 6 min).
    Run:  python data/_precompute/grad_contract_refs.py [--set erf] [--set affine]
    (each set is merged into the file as it completes).

Inputs are stored as float64 hex strings (the exact numbers the references were computed for).
This script does not import popdyn.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.append(os.path.join(REPO, "tests"))

import _mpref  # noqa: E402  (the independent reference; never popdyn)
from mpmath import mp, mpf  # noqa: E402

OUT = os.path.join(REPO, "data", "refs", "grad_contract_refs.json")
DPS = 30
CHECK_DPS = 40
SLOPE = 0.1


def _hex(x):
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_hex(v) for v in x]
    return float(x).hex()


def erf_cases():
    out = []
    links = ["h3", "h3+0.3h2", "relu", "sin"]
    for i in range(20):
        rng = np.random.default_rng(1000 + i)
        W = rng.uniform(-1, 1, (3, 3))
        W *= (rng.uniform(0.2, 5.0, 3) / np.linalg.norm(W, axis=1))[:, None]
        b = rng.uniform(-5, 5, 3)
        if i % 2 == 1:
            W[1] = W[0] * (1 + 1e-9) if i % 4 == 1 else -W[0]
        a = rng.normal(size=3)
        U = rng.normal(size=(1, 3))
        U /= np.linalg.norm(U, axis=1)[:, None]
        out.append(dict(id=f"erf{i}", activation="erf", a=a, W=W, b=b, c=0.1,
                        teacher=dict(kind="additive", link=links[i % 4], U=U, kappa=[1.0])))
    return out


def affine_cases():
    out = []
    for act in ("relu", "leaky_relu"):
        for link in ("h2", "h3", "h3+0.3h2", "tanh"):
            for k, (wn, b0) in enumerate(((1e-6, 0.3), (1e-3, 0.9))):
                rng = np.random.default_rng(len(out) + 7)
                W = rng.normal(size=(3, 3)) * 0.7
                b = rng.normal(size=3) * 0.5
                w0 = rng.normal(size=3)
                W[0] = w0 / np.linalg.norm(w0) * wn
                b[0] = b0
                a = rng.normal(size=3)
                U = np.linalg.qr(rng.normal(size=(3, 1)))[0].T
                out.append(dict(id=f"{act}-{link}-{k}", activation=act, a=a, W=W, b=b, c=0.1,
                                teacher=dict(kind="additive", link=link, U=U, kappa=[1.0])))
    return out


def _mp_case(c):
    """The case with its float64 inputs (exactly) in _mpref's format."""
    return {"activation": c["activation"], "negative_slope": SLOPE, "scaling": "standard",
            "a": [float(x) for x in c["a"]], "W": [[float(x) for x in r] for r in c["W"]],
            "b": [float(x) for x in c["b"]], "c": float(c["c"]),
            "teacher": {"kind": "additive", "link": c["teacher"]["link"],
                        "U": [[float(x) for x in r] for r in c["teacher"]["U"]],
                        "kappa": [float(x) for x in c["teacher"]["kappa"]]}}


def _flat(out):
    g = out["grad"]
    return [out["loss"], g["c"]] + list(g["a"]) + list(g["b"]) + [x for r in g["W"] for x in r]


def _row(c, out, seconds):
    with mp.workdps(DPS + 10):
        f = _mpref.format_outputs(out)
    return {"id": c["id"],
            "inputs": {"activation": c["activation"], "a": _hex(c["a"]), "W": _hex(c["W"]),
                       "b": _hex(c["b"]), "c": _hex(c["c"]),
                       "teacher": {"kind": "additive", "link": c["teacher"]["link"],
                                   "U": _hex(c["teacher"]["U"]),
                                   "kappa": _hex(c["teacher"]["kappa"])}},
            "loss": f["loss"], "grad": f["grad"], "seconds": seconds}


SETS = {"erf": erf_cases, "affine": affine_cases}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=sorted(SETS), action="append",
                    help="compute only this set (repeatable) and merge it into the file")
    args = ap.parse_args(argv)
    names = args.set or list(SETS)
    if os.path.exists(OUT):
        with open(OUT) as fh:
            doc = json.load(fh)
    else:
        doc = {"generator": "data/_precompute/grad_contract_refs.py",
               "reference": "tests/_mpref.py reference_mp", "dps": DPS,
               "check_dps": CHECK_DPS, "negative_slope": SLOPE, "sets": {},
               "precision_check": {}}
    for name in names:
        rows, worst = [], mpf(0)
        for k, c in enumerate(SETS[name]()):
            t = time.time()
            mc = _mp_case(c)
            out = _mpref.reference_mp(mc, dps=DPS)
            if k % 12 == 0:
                chk = _mpref.reference_mp(mc, dps=CHECK_DPS)
                v1, v2 = _flat(out), _flat(chk)
                scale = max(abs(x) for x in v2)
                dev = max(abs(x - y) for x, y in zip(v1, v2)) / scale
                worst = max(worst, dev)
                if dev > mpf("1e-28"):
                    raise SystemExit(f"{c['id']}: dps {DPS} and {CHECK_DPS} differ by {dev}")
            rows.append(_row(c, out, round(time.time() - t, 1)))
            print(c["id"], rows[-1]["seconds"], flush=True)
        doc["sets"][name] = rows
        doc["precision_check"][name] = mp.nstr(worst, 3)
        with open(OUT, "w") as fh:
            json.dump(doc, fh, indent=1)
        print("wrote", name, "to", OUT)


if __name__ == "__main__":
    main()
