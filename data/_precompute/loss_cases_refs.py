"""Stored references for tests/certify/test_certify_loss.py: the loss L = ½E[(f − y)²], E[y]
and E[y²] of its degenerate-geometry cases (tests/certify/_ref.py, 2-D Gaussian quadrature,
working precision 65 digits) and the gradient of its two seeded cases (tests/_mpref.py, the
project's independent loss/gradient reference, 40 digits).

Until 0.6.0 the test computed these references live (about 40 s of the suite's single-core
time); it now loads them from data/refs/loss_cases_refs.json.

Cases.
* ``loss``: exactly the cases the former hypothesis test ``test_loss_encloses_reference``
  checked: its three explicit ``@example`` decorators and the two examples hypothesis 6.170.17
  drew under the suite's derandomized profile (tests/conftest.py), recorded from a run of the
  former test file.  A draw is (W, b, teacher, activation, mode) with W, b as they enter the
  mode's rewrite (after the test's fix of a zero first row; for mode "dup" the second row is
  the copy of the first, whatever was drawn there).  The rewrite (tests/certify/_units.py
  ``degenerate``) is applied here in plain Python floats (``math.fsum``, ``math.sqrt``:
  correctly rounded, no BLAS kernel).  Student heads a = (0.7, −1.1), intercept c = 0.2,
  negative slope 0.1; teachers as the test's ``_teacher`` (u = (0.6, 0, 0.8); "relu_net" =
  1.3·relu(1.1u·x + 0.4), otherwise the additive link with weight 0.9).
* ``gradient``: the test's seeded students (``np.random.default_rng(4)``: a, W, b standard
  normal, c = 0.3, leaky relu with slope 0.2, d = m = 3) against the "relu_net" and "h2"
  teachers; the draws were made once with numpy 2.4.6 and are stored (the test checks that
  its generator still reproduces them).

Every float64 input is stored as ``float.hex``; the test feeds exactly those floats to the code
under test.

Method (independent of popdyn and certify).  Loss: ``R.loss(S, p, T, dps=50)`` of
tests/certify/_ref.py (working precision 65 digits), exactly the call the former live test
made, with plain containers for S, p, T; stored with 80 significant digits, which read back
under ``R.ctx.workdps(65)`` give exactly the computed mpf (checked before writing).  Gradient:
``_mpref.compute`` under ``mp.workdps(40)``, stored with 50 digits (read back exactly under
``workdps(40)``, checked).

Runtime: about 1 minute on one core.  Usage: python data/_precompute/loss_cases_refs.py
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "certify"))
sys.path.append(os.path.join(ROOT, "tests"))

import _ref as R  # noqa: E402
import _mpref  # noqa: E402  (tests/_mpref.py: pure mpmath)

PATH = os.path.join(ROOT, "data", "refs", "loss_cases_refs.json")
LOSS_DPS = 50                      # R.loss(..., dps=50): working precision 65 digits
LOSS_WORK = LOSS_DPS + 15
LOSS_DIGITS = 80
GRAD_DPS = 40
GRAD_DIGITS = 50
A = [0.7, -1.1]
C = 0.2
SLOPE = 0.1
U0 = [0.6, 0.0, 0.8]

# (W, b, teacher, activation, mode): the 3 former @examples, then the 2 hypothesis draws
LOSS_DRAWS = [
    ([[0.5, -0.2, 0.3], [0.5, -0.2, 0.3]], [0.1, 0.1], "relu_net", "leaky_relu", "dup"),
    ([[0.5, -0.2, 0.3], [0.1, 0.4, 0.3]], [0.1, 0.5], "h2", "relu", "tiny"),
    ([[0.5, -0.2, 0.3], [0.1, 0.4, 0.3]], [0.1, -0.5], "relu_net", "leaky_relu", "huge"),
    ([[0.5, 0.0, 0.0], [0.5, 0.0, 0.0]], [0.0, 0.0], "h2", "relu", "dup"),
    ([[-0.9999999999999999, 0.382, 0.7668082360620363],
      [0.25183103218056124, -0.07959085777400898, -0.30467979768463926]],
     [-0.6519987148753685, 0.9999999999999999], "h2", "relu", "huge"),
]

# the seeded gradient cases: np.random.default_rng(4).standard_normal(3), ((3, 3)), (3)
GRAD_A = [-0.6517911526116896, -0.17471729232577715, 1.6637239913911968]
GRAD_W = [[0.659147749832255, -1.6413972945846467, -0.005203264171931977],
          [-0.6234637409883934, 0.14863152325202633, -1.608187784186389],
          [0.2417718768768513, 0.23538091873745476, 1.5756260314314627]]
GRAD_B = [0.3166450164719021, 0.5105466616976417, -1.4931166849642326]
GRAD_C = 0.3
GRAD_SLOPE = 0.2


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


def build_loss_inputs(draw):
    W, b, teacher, act, mode = draw
    if mode == "dup":
        W = [list(W[0]), list(W[0])]
        b = list(b)
    else:
        W, b = degenerate(W, b, 1, mode)
    return W, b


def teacher_ns(kind):
    """The test's ``_teacher(kind, 3)`` as a plain container (what _ref.units reads)."""
    if kind == "relu_net":
        return SimpleNamespace(kind="network", k=1, U=[[1.1 * x for x in U0]], weights=[1.3],
                               bias=[0.4], activation=SimpleNamespace(name="relu",
                                                                      negative_slope=0.0))
    return SimpleNamespace(kind="additive", k=1, U=[list(U0)], weights=[0.9],
                           link=SimpleNamespace(name=kind))


def teacher_dict(kind):
    """The test's ``_case`` teacher entry for tests/_mpref.py."""
    T = teacher_ns(kind)
    t = {"kind": T.kind, "U": T.U}
    if T.kind == "additive":
        t.update(link=T.link.name, kappa=T.weights)
    else:
        t.update(activation="relu", V=T.weights, bias=T.bias, negative_slope=0.0)
    return t


def hexs(a):
    if isinstance(a, (list, tuple)):
        return [hexs(v) for v in a]
    return float(a).hex()


def dec(ctx, x, digits):
    s = ctx.nstr(x, digits, min_fixed=-5, max_fixed=5)
    assert ctx.mpf(s) == x, (s, x)
    return s


def loss_case(draw):
    W, b = build_loss_inputs(draw)
    _, _, teacher, act, mode = draw
    S = SimpleNamespace(m=2, scaling="standard", activation=act, negative_slope=SLOPE, bias=True)
    p = SimpleNamespace(a=list(A), W=W, b=b, c=C)
    L, ey, ey2 = R.loss(S, p, teacher_ns(teacher), dps=LOSS_DPS)
    with R.ctx.workdps(LOSS_WORK):
        ref = {"loss": dec(R.ctx, L, LOSS_DIGITS), "mean_y": dec(R.ctx, ey, LOSS_DIGITS),
               "second_y": dec(R.ctx, ey2, LOSS_DIGITS)}
    return {"draw": {"W": hexs(draw[0]), "b": hexs(draw[1]), "teacher": teacher, "activation": act,
                     "mode": mode},
            "inputs": {"a": hexs(A), "W": hexs(W), "b": hexs(b), "c": hexs(C)}, "ref": ref}


def grad_case(teacher):
    case = {"activation": "leaky_relu", "negative_slope": GRAD_SLOPE, "W": GRAD_W, "a": GRAD_A,
            "b": GRAD_B, "c": GRAD_C, "scaling": "standard", "teacher": teacher_dict(teacher)}
    mp = _mpref.mp
    with mp.workdps(GRAD_DPS):
        g = _mpref.compute(case)["grad"]
        ref = {"a": [dec(mp, g["a"][j], GRAD_DIGITS) for j in range(3)],
               "W": [[dec(mp, g["W"][j][k], GRAD_DIGITS) for k in range(3)] for j in range(3)],
               "b": [dec(mp, g["b"][j], GRAD_DIGITS) for j in range(3)],
               "c": dec(mp, g["c"], GRAD_DIGITS)}
    return {"teacher": teacher, "ref": ref}


def main():
    t0 = time.time()
    out = {"generator": "data/_precompute/loss_cases_refs.py",
           "loss_reference": "tests/certify/_ref.py loss(dps=50)", "loss_work_dps": LOSS_WORK,
           "loss_digits": LOSS_DIGITS, "negative_slope": SLOPE,
           "grad_reference": "tests/_mpref.py compute", "grad_dps": GRAD_DPS,
           "grad_digits": GRAD_DIGITS,
           "grad_inputs": {"a": hexs(GRAD_A), "W": hexs(GRAD_W), "b": hexs(GRAD_B),
                           "c": hexs(GRAD_C), "negative_slope": GRAD_SLOPE, "seed": 4},
           "loss": [], "gradient": []}
    for k, dr in enumerate(LOSS_DRAWS):
        out["loss"].append(loss_case(dr))
        print(f"loss {k} ({dr[2]}, {dr[3]}, {dr[4]}) {time.time() - t0:.1f} s", flush=True)
    for t in ("relu_net", "h2"):
        out["gradient"].append(grad_case(t))
        print(f"gradient {t} {time.time() - t0:.1f} s", flush=True)
    with open(PATH, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"wrote {PATH} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
